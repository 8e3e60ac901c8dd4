/* rondo-bench's output: the header on stdout, --json and --csv records,
 * progress on stderr (only the first rank writes), and bench_die, the last
 * word of any rank: every file of the tool may call it, and it calls none
 * of theirs. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/bench.h"
#include "tools/launch_env.h"
#include "tools/measure.h"
#include "tools/terminal.h"

void bench_die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  tool_vsay("rondo-bench: ", "\n", fmt, ap);
  va_end(ap);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

enum { MAX_FIELDS = 40 };

typedef struct {
  char key[48];
  int is_str;
  double num;
  char str[128];
} field_t;

static struct {
  int writer;             /* this rank writes */
  FILE *json, *csv;
  const char *json_path, *csv_path;
  field_t f[MAX_FIELDS];
  int nf;
  int rows;               /* records written */
  int csv_header;         /* the CSV header is written */
  int in_summary;
  double t0;
} out;

static void json_string(FILE *f, const char *s)
{
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", f);
    else if (c == '\t')
      fputs("\\t", f);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void json_number(FILE *f, double v)
{
  if (isnan(v) || isinf(v))
    fputs("null", f);
  else if (v == floor(v) && fabs(v) < 1e15)
    fprintf(f, "%.0f", v);
  else
    fprintf(f, "%.6g", v);
}

static void csv_string(FILE *f, const char *s)
{
  if (strpbrk(s, ",\"\n") == NULL) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

const char *out_bytes(size_t bytes, char *buf, size_t len)
{
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 4 && fmod(v, 1024) == 0) {
    v /= 1024;
    u++;
  }
  snprintf(buf, len, "%.0f %s", v, unit[u]);
  return buf;
}

/* ---- the header ------------------------------------------------------------- */

static void command_line(const bench_opts_t *o, char *buf, size_t len)
{
  size_t k = (size_t)snprintf(buf, len, "rondo-bench");
  for (int i = 1; i < o->argc && k < len; i++)
    k += (size_t)snprintf(buf + k, len - k, " %s", o->argv[i]);
}

static void json_header_pair(const char *key, const char *value)
{
  fprintf(out.json, "  ");
  json_string(out.json, key);
  fprintf(out.json, ": ");
  json_string(out.json, value);
  fprintf(out.json, ",\n");
}

static void json_header_num(const char *key, double value)
{
  fprintf(out.json, "  ");
  json_string(out.json, key);
  fprintf(out.json, ": ");
  json_number(out.json, value);
  fprintf(out.json, ",\n");
}

int out_start(const bench_opts_t *o, rondo_comm_t comm, const char *title)
{
  memset(&out, 0, sizeof out);
  out.writer = meas_rank(comm) == 0;
  out.t0 = MPI_Wtime();
  int ok = 1;
  if (out.writer) {
    if (o->json_path != NULL && (out.json = fopen(o->json_path, "w")) == NULL) {
      fprintf(stderr, "rondo-bench: --json %s: cannot write it\n", o->json_path);
      ok = 0;
    }
    if (o->csv_path != NULL && (out.csv = fopen(o->csv_path, "w")) == NULL) {
      fprintf(stderr, "rondo-bench: --csv %s: cannot write it\n", o->csv_path);
      ok = 0;
    }
    out.json_path = o->json_path;
    out.csv_path = o->csv_path;
  }
  MPI_Comm mpi = MPI_COMM_WORLD;
  rondo_comm_mpi(comm, &mpi);
  MPI_Bcast(&ok, 1, MPI_INT, 0, mpi);
  if (!ok) {
    if (out.json != NULL)
      fclose(out.json);
    if (out.csv != NULL)
      fclose(out.csv);
    out.json = out.csv = NULL;
    return -1;
  }
  if (!out.writer)
    return 0;

  char cmd[1024], lib[MPI_MAX_LIBRARY_VERSION_STRING], topo[1024], when[64];
  int len;
  command_line(o, cmd, sizeof cmd);
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, "\n")] = '\0';
  for (char *p = lib; *p; p++)
    if (*p == '\t')
      *p = ' ';
  rondo_comm_topology(comm, topo, sizeof topo, NULL);
  time_t now = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime(&now));
  int ranks = meas_size(comm), nodes = meas_nodes(comm), local = -1;
  rondo_comm_local_size(comm, &local);

  printf("# rondo-bench %s: %s\n", rondo_version_string(), title);
  printf("# command: %s\n", cmd);
  printf("# %s, %d rank%s, %d node%s, %d per node; %s\n", when, ranks, ranks == 1 ? "" : "s",
         nodes, nodes == 1 ? "" : "s", local, lib);
  printf("# topology: %s\n", topo);
  int line = printf("# knobs:");
  for (int i = 0; i < rondo_knob_count(); i++) {
    rondo_knob_info_t k;
    if (rondo_knob_get(i, &k) != RONDO_SUCCESS)
      continue;
    int w = (int)(strlen(k.name) + strlen(k.current) + 2);
    if (line + w > 100)
      line = printf("\n#       ");
    line += printf(" %s=%s", k.name, k.current[0] ? k.current : "\"\"");
  }
  printf("\n");
  fflush(stdout);

  if (out.json != NULL) {
    fprintf(out.json, "{\n");
    json_header_pair("tool", "rondo-bench");
    json_header_pair("version", rondo_version_string());
    json_header_pair("command", cmd);
    json_header_pair("collective", bench_cmd_name(o->cmd));
    json_header_pair("date", when);
    json_header_num("ranks", ranks);
    json_header_num("nodes", nodes);
    json_header_num("local_size", local);
    json_header_pair("mpi_library", lib);
    json_header_pair("topology", topo);
    fprintf(out.json, "  \"knobs\": {");
    for (int i = 0; i < rondo_knob_count(); i++) {
      rondo_knob_info_t k;
      if (rondo_knob_get(i, &k) != RONDO_SUCCESS)
        continue;
      fprintf(out.json, "%s\n    ", i ? "," : "");
      json_string(out.json, k.name);
      fprintf(out.json, ": ");
      json_string(out.json, k.current);
    }
    fprintf(out.json, "\n  },\n  \"options\": {\"minbytes\": %zu, \"maxbytes\": %zu, "
            "\"stepfactor\": %zu, \"stepbytes\": %zu, \"iters\": %d, \"warmup\": %d, "
            "\"inplace\": %s, \"check\": %s},\n  \"rows\": [",
            o->minbytes, o->maxbytes, o->stepbytes ? 0 : o->factor, o->stepbytes, o->iters,
            o->warmup, o->inplace ? "true" : "false", o->check ? "true" : "false");
  }
  return 0;
}

/* ---- records ------------------------------------------------------------------ */

static field_t *next_field(const char *key)
{
  if (!out.writer || out.nf == MAX_FIELDS)
    return NULL;
  field_t *f = &out.f[out.nf++];
  memset(f, 0, sizeof *f);
  snprintf(f->key, sizeof f->key, "%s", key);
  return f;
}

void out_str(const char *key, const char *value)
{
  field_t *f = next_field(key);
  if (f != NULL) {
    f->is_str = 1;
    snprintf(f->str, sizeof f->str, "%s", value);
  }
}

void out_num(const char *key, double value)
{
  field_t *f = next_field(key);
  if (f != NULL)
    f->num = value;
}

void out_int(const char *key, long long value) { out_num(key, (double)value); }

static void json_object(void)
{
  fprintf(out.json, "{");
  for (int i = 0; i < out.nf; i++) {
    fprintf(out.json, "%s", i ? ", " : "");
    json_string(out.json, out.f[i].key);
    fprintf(out.json, ": ");
    if (out.f[i].is_str)
      json_string(out.json, out.f[i].str);
    else
      json_number(out.json, out.f[i].num);
  }
  fprintf(out.json, "}");
}

void out_row_end(void)
{
  if (!out.writer)
    return;
  if (out.json != NULL) {
    fprintf(out.json, "%s\n    ", out.rows ? "," : "");
    json_object();
  }
  if (out.csv != NULL) {
    if (!out.csv_header) {
      for (int i = 0; i < out.nf; i++)
        fprintf(out.csv, "%s%s", i ? "," : "", out.f[i].key);
      fprintf(out.csv, "\n");
      out.csv_header = 1;
    }
    for (int i = 0; i < out.nf; i++) {
      fprintf(out.csv, "%s", i ? "," : "");
      if (out.f[i].is_str)
        csv_string(out.csv, out.f[i].str);
      else if (!isnan(out.f[i].num))
        json_number(out.csv, out.f[i].num);
    }
    fprintf(out.csv, "\n");
  }
  out.rows++;
  out.nf = 0;
}

void out_summary_begin(void)
{
  out.in_summary = 1;
  out.nf = 0;
}

int out_finish(void)
{
  if (!out.writer)
    return 0;
  int ok = 1;
  if (out.json != NULL) {
    fprintf(out.json, "\n  ],\n  \"summary\": ");
    json_object();
    fprintf(out.json, "\n}\n");
    if (ferror(out.json) | (fclose(out.json) != 0)) {
      fprintf(stderr, "rondo-bench: --json %s: write failed\n", out.json_path);
      ok = 0;
    }
  }
  if (out.csv != NULL && (ferror(out.csv) | (fclose(out.csv) != 0))) {
    fprintf(stderr, "rondo-bench: --csv %s: write failed\n", out.csv_path);
    ok = 0;
  }
  out.json = out.csv = NULL;
  out.nf = 0;
  return ok ? 0 : -1;
}

/* ---- progress ------------------------------------------------------------------ */

void out_progress(const bench_opts_t *o, int done, int total, const char *what)
{
  if (!out.writer || o->quiet)
    return;
  double t = MPI_Wtime() - out.t0;
  if (term_shows(STDERR_FILENO)) {
    enum { WIDTH = 30 };
    int fill = total > 0 ? done * WIDTH / total : WIDTH;
    fprintf(stderr, "\r[%.*s%*s] %d/%d %-10s %6.1f s", fill,
            "==============================", WIDTH - fill, "", done, total, what, t);
    if (done == total)
      fprintf(stderr, "\n");
  } else {
    fprintf(stderr, "# rondo-bench: %d/%d done (%s), %.1f s\n", done, total, what, t);
  }
  fflush(stderr);
}
