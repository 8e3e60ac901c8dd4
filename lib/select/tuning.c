/*
 * Tuning tables: rules that override the cost model for given message
 * sizes, comm sizes, node counts and memory kinds (RONDO_TUNING_FILE,
 * written by rondo-bench tune). The grammar is in select.h. A malformed
 * line is an error naming the source and the line, never a skipped rule:
 * a tuning file that silently does nothing is worse than none.
 */
#include "select/select.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "base/numbers.h"

#define FIELDS 6
#define MAX_FILE_BYTES ((size_t)4 << 20)
#define MEM_ANY (-1)

typedef struct {
  size_t bytes_lo, bytes_hi; /* inclusive */
  int ranks_lo, ranks_hi;    /* inclusive */
  int nodes_lo, nodes_hi;    /* inclusive */
  int mem;                   /* select_mem_t or MEM_ANY */
  rondo_algo_t algo;
  const char *name;          /* the algorithm's, from the menu given to the parser */
  rondo_coll_t coll;         /* the collective it chooses for */
  int line;
} rule_t;

struct select_table {
  char *source;
  rule_t *rules;
  size_t n, cap;
};

/* ---- numbers and ranges --------------------------------------------------- */

typedef struct {
  const char *what; /* "byte", "rank", "node" */
  int bytes;        /* suffixes allowed, upper bound exclusive */
  uint64_t max;
} range_kind_t;

static const range_kind_t BYTES = {"byte", 1, SIZE_MAX};
static const range_kind_t RANKS = {"rank", 0, INT_MAX};
static const range_kind_t NODES = {"node", 0, INT_MAX};

/* "N", "N-M", "N-" or "*" into the inclusive [*lo, *hi]. */
static rondo_status_t parse_range(const char *tok, const range_kind_t *k,
                                  const char *source, int line, uint64_t *lo,
                                  uint64_t *hi)
{
  if (strcmp(tok, "*") == 0) {
    *lo = 0;
    *hi = k->max;
    return RONDO_SUCCESS;
  }
  const char *end = tok + strlen(tok);
  const char *dash = strchr(tok, '-');
  rondo__num_t st = rondo__parse_number(tok, dash ? dash : end, k->bytes, k->max, lo);
  if (st == RONDO__NUM_OK && dash == NULL)
    *hi = *lo;
  else if (st == RONDO__NUM_OK && dash + 1 == end)
    *hi = k->max;
  else if (st == RONDO__NUM_OK)
    st = rondo__parse_number(dash + 1, end, k->bytes, k->max, hi);
  if (st == RONDO__NUM_TOO_BIG)
    return rondo__fail_quiet(RONDO_ERR_INVALID_ARG,
                             "%s line %d: %s range '%s': number too large (at most "
                             "%llu)",
                             source, line, k->what, tok, (unsigned long long)k->max);
  if (st == RONDO__NUM_BAD)
    return rondo__fail_quiet(RONDO_ERR_INVALID_ARG,
                             "%s line %d: bad %s range '%s': expected N, N-M, N- or "
                             "*%s",
                             source, line, k->what, tok,
                             k->bytes ? " (sizes take K, M, G, T suffixes)"
                                      : " with N, M whole numbers");
  if (dash && dash + 1 != end) {
    /* byte ranges are half-open: N-M needs M > N and holds up to M-1 */
    if (*hi < *lo)
      return rondo__fail_quiet(RONDO_ERR_INVALID_ARG,
                               "%s line %d: %s range '%s' is reversed: the upper "
                               "bound is below the lower",
                               source, line, k->what, tok);
    if (k->bytes && *hi == *lo)
      return rondo__fail_quiet(RONDO_ERR_INVALID_ARG,
                               "%s line %d: byte range '%s' is empty: the upper bound "
                               "is exclusive (write '%.*s' for exactly that size)",
                               source, line, tok, (int)(dash - tok), tok);
    if (k->bytes)
      (*hi)--;
  }
  return RONDO_SUCCESS;
}

/* ---- rules ------------------------------------------------------------------ */

static rondo_status_t parse_mem(const char *tok, const char *source, int line, int *mem)
{
  if (strcmp(tok, "host") == 0)
    *mem = SELECT_MEM_HOST;
  else if (strcmp(tok, "device") == 0)
    *mem = SELECT_MEM_DEVICE;
  else if (strcmp(tok, "*") == 0)
    *mem = MEM_ANY;
  else
    return rondo__fail_quiet(RONDO_ERR_INVALID_ARG,
                             "%s line %d: unknown memory kind '%s': expected host, "
                             "device or *",
                             source, line, tok);
  return RONDO_SUCCESS;
}

static rondo_status_t parse_algo(const char *tok, const select_menu_t *menu,
                                 const char *source, int line, rondo_algo_t *algo,
                                 const char **name)
{
  char names[256] = "";
  for (int i = 0; i < menu->n; i++) {
    if (strcmp(tok, menu->algo[i]->name) == 0) {
      *algo = menu->algo[i]->id;
      *name = menu->algo[i]->name;
      return RONDO_SUCCESS;
    }
    size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", menu->algo[i]->name);
  }
  return rondo__fail_quiet(RONDO_ERR_INVALID_ARG,
                           "%s line %d: unknown algorithm '%s': expected one of %s", source,
                           line, tok, names);
}

static rondo_status_t parse_rule(char **tok, const select_menu_t *menu, const char *source,
                                 int line, rule_t *r)
{
  uint64_t lo, hi;
  char colls[96] = "";
  for (const select_menu_t *m = menu; m != NULL; m = m->next) {
    size_t used = strlen(colls);
    snprintf(colls + used, sizeof colls - used, "%s%s", m == menu ? "" : ", ",
             rondo_coll_name(m->coll));
  }
  while (menu != NULL && strcmp(tok[0], rondo_coll_name(menu->coll)) != 0)
    menu = menu->next;
  if (menu == NULL)
    return rondo__fail_quiet(RONDO_ERR_INVALID_ARG,
                             "%s line %d: unknown collective '%s': expected %s", source, line,
                             tok[0], colls);
  r->coll = menu->coll;
  RONDO_CHECK(parse_range(tok[1], &BYTES, source, line, &lo, &hi));
  r->bytes_lo = (size_t)lo;
  r->bytes_hi = (size_t)hi;
  RONDO_CHECK(parse_range(tok[2], &RANKS, source, line, &lo, &hi));
  r->ranks_lo = (int)lo;
  r->ranks_hi = (int)hi;
  RONDO_CHECK(parse_range(tok[3], &NODES, source, line, &lo, &hi));
  r->nodes_lo = (int)lo;
  r->nodes_hi = (int)hi;
  RONDO_CHECK(parse_mem(tok[4], source, line, &r->mem));
  RONDO_CHECK(parse_algo(tok[5], menu, source, line, &r->algo, &r->name));
  r->line = line;
  return RONDO_SUCCESS;
}

static rondo_status_t append(select_table_t *t, const rule_t *r)
{
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 16;
    rule_t *grown = realloc(t->rules, cap * sizeof *grown);
    if (grown == NULL)
      return rondo__fail(RONDO_ERR_NO_MEMORY, "no memory for %zu tuning rules", cap);
    t->rules = grown;
    t->cap = cap;
  }
  t->rules[t->n++] = *r;
  return RONDO_SUCCESS;
}

/* One line (NUL-terminated, modified in place): a comment, blank, or a rule. */
static rondo_status_t parse_line(select_table_t *t, const select_menu_t *menu, char *text,
                                 int line)
{
  static const char *const space = " \t\r\v\f";
  char *hash = strchr(text, '#');
  if (hash)
    *hash = '\0';
  char *tok[FIELDS], *save = NULL;
  int n = 0;
  for (char *w = strtok_r(text, space, &save); w; w = strtok_r(NULL, space, &save)) {
    if (n < FIELDS)
      tok[n] = w;
    n++;
  }
  if (n == 0)
    return RONDO_SUCCESS;
  if (n != FIELDS)
    return rondo__fail_quiet(RONDO_ERR_INVALID_ARG,
                             "%s line %d: %s fields (%d): expected 6, '<collective> "
                             "<bytes> <ranks> <nodes> <mem> <algorithm>'",
                             t->source, line, n < FIELDS ? "too few" : "too many", n);
  rule_t r;
  RONDO_CHECK(parse_rule(tok, menu, t->source, line, &r));
  return append(t, &r);
}

void select_table_free(select_table_t *table)
{
  if (table == NULL)
    return;
  free(table->rules);
  free(table->source);
  free(table);
}

rondo_status_t select_table_parse(const char *text, const char *source,
                                  const select_menu_t *menu, select_table_t **out)
{
  rondo_status_t st = RONDO_SUCCESS;
  *out = NULL;
  if (source == NULL)
    source = "(tuning table)";
  if (text == NULL)
    return rondo__fail_quiet(RONDO_ERR_INVALID_ARG, "%s: no text to parse", source);
  select_table_t *t = calloc(1, sizeof *t);
  char *copy = strdup(text);
  if (t == NULL || copy == NULL || (t->source = strdup(source)) == NULL) {
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "no memory to parse tuning table %s", source);
    goto free_table;
  }
  int line = 1;
  for (char *p = copy; p != NULL; line++) {
    char *nl = strchr(p, '\n');
    if (nl)
      *nl = '\0';
    RONDO_CHECK_GOTO(parse_line(t, menu, p, line), st, free_table);
    p = nl ? nl + 1 : NULL;
  }
  free(copy);
  *out = t;
  return RONDO_SUCCESS;

free_table:
  free(copy);
  select_table_free(t);
  return st;
}

/* The whole file, NUL-terminated, into *text (caller frees). */
static rondo_status_t read_file(const char *path, char **text)
{
  rondo_status_t st = RONDO_SUCCESS;
  size_t used = 0, cap = 4096;
  char *buf = malloc(cap);
  char why[128];
  int fd = rondo__open_regular(path, O_RDONLY, why, sizeof why);
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (fd >= 0 && f == NULL) {
    snprintf(why, sizeof why, "%s", strerror(errno));
    close(fd);
  }
  if (buf == NULL) {
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "no memory to read tuning file %s", path);
    goto fail_read;
  }
  if (f == NULL) {
    st = rondo__fail_quiet(RONDO_ERR_IO,
                           "cannot open tuning file %s: %s (check RONDO_TUNING_FILE)", path,
                           why);
    goto fail_read;
  }
  for (;;) {
    used += fread(buf + used, 1, cap - 1 - used, f);
    if (ferror(f)) {
      st = rondo__fail_quiet(RONDO_ERR_IO, "cannot read tuning file %s: %s", path,
                             strerror(errno));
      goto fail_read;
    }
    if (feof(f))
      break;
    if (cap >= MAX_FILE_BYTES) {
      st = rondo__fail_quiet(RONDO_ERR_IO,
                             "tuning file %s is larger than %zu MiB: not a tuning table",
                             path, MAX_FILE_BYTES >> 20);
      goto fail_read;
    }
    char *grown = realloc(buf, 2 * cap);
    if (grown == NULL) {
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "no memory to read tuning file %s", path);
      goto fail_read;
    }
    buf = grown;
    cap *= 2;
  }
  buf[used] = '\0';
  if (strlen(buf) != used) {
    st = rondo__fail_quiet(RONDO_ERR_INVALID_ARG,
                           "%s: contains a NUL byte at offset %zu: not a text file",
                           path, strlen(buf));
    goto fail_read;
  }
  fclose(f);
  *text = buf;
  return RONDO_SUCCESS;

fail_read:
  if (f)
    fclose(f);
  free(buf);
  return st;
}

rondo_status_t select_table_load(const char *path, const select_menu_t *menu,
                                 select_table_t **out)
{
  char *text = NULL;
  *out = NULL;
  if (path == NULL)
    return rondo__fail_quiet(RONDO_ERR_INVALID_ARG, "no tuning file path");
  RONDO_CHECK(read_file(path, &text));
  rondo_status_t st = select_table_parse(text, path, menu, out);
  free(text);
  return st;
}

/* ---- lookup ------------------------------------------------------------------ */

static int in_range(long long v, long long lo, long long hi) { return lo <= v && v <= hi; }

static int matches(const rule_t *r, const select_input_t *in)
{
  return r->bytes_lo <= in->bytes && in->bytes <= r->bytes_hi &&
         in_range(in->ranks, r->ranks_lo, r->ranks_hi) &&
         in_range(in->nodes, r->nodes_lo, r->nodes_hi) &&
         (r->mem == MEM_ANY || r->mem == (int)in->mem) && r->coll == in->coll;
}

rondo_algo_t select_table_lookup_among(const select_table_t *table,
                                       const select_input_t *in, unsigned allowed,
                                       int *line)
{
  if (line)
    *line = 0;
  if (table == NULL)
    return RONDO_ALGO_AUTO;
  for (size_t i = 0; i < table->n; i++) {
    const rule_t *r = &table->rules[i];
    if ((allowed & (1u << r->algo)) && matches(r, in)) {
      if (line)
        *line = r->line;
      return r->algo;
    }
  }
  return RONDO_ALGO_AUTO;
}

rondo_algo_t select_table_lookup(const select_table_t *table, const select_input_t *in,
                                 int *line)
{
  return select_table_lookup_among(table, in, ~0u, line);
}

const char *select_table_rule_algo(const select_table_t *table, int line)
{
  for (size_t i = 0; table != NULL && i < table->n; i++)
    if (table->rules[i].line == line)
      return table->rules[i].name;
  return NULL;
}

const char *select_table_source(const select_table_t *table)
{
  return table ? table->source : NULL;
}

size_t select_table_rules(const select_table_t *table) { return table ? table->n : 0; }

uint64_t select_table_hash(const select_table_t *table)
{
  uint64_t h = RONDO__FNV_INIT;
  for (size_t i = 0; table != NULL && i < table->n; i++) {
    const rule_t *r = &table->rules[i];
    int64_t v[10] = {(int64_t)r->bytes_lo, (int64_t)r->bytes_hi, r->ranks_lo, r->ranks_hi,
                     r->nodes_lo,          r->nodes_hi,          r->mem,      (int64_t)r->algo,
                     (int64_t)i,           (int64_t)r->coll};
    h = rondo__fnv(h, v, sizeof v);
  }
  return h;
}
