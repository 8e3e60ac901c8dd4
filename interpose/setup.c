/*
 * librondo-mpi's state: the configuration every rank agreed on, the records
 * of the communicators it has seen, the counts and the log, the teardown
 * (interpose.h says what each is for).
 */
#include "interpose.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/numbers.h"

int ip_active;
int ip_thread_level = MPI_THREAD_SINGLE;
ip_config_t ip_config;

static int log_level = IP_WARN;
static int log_shown = 1;            /* RONDO_LOG_SUBSYS shows "interpose" */
static int world_rank = -1;
static int keyval = MPI_KEYVAL_INVALID;
static int finished;                 /* ip_teardown ran: records only free */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ip_comm_t *registry;          /* every live record */
static int next_id;
static uint64_t roots;               /* rondo comms this rank made as rank 0 */
static int rondo_used;               /* a rondo comm was made (or tried): finalize rondo */

static const char *const call_names[RONDO_MPI_CALLS] = {
    "allreduce", "iallreduce", "reduce_scatter_block", "allgather",
    "bcast",     "barrier",    "reduce_scatter",       "allgatherv"};
static const char *const mpi_names[RONDO_MPI_CALLS] = {
    "MPI_Allreduce", "MPI_Iallreduce", "MPI_Reduce_scatter_block", "MPI_Allgather",
    "MPI_Bcast",     "MPI_Barrier",    "MPI_Reduce_scatter",       "MPI_Allgatherv"};
static const char *const pass_text[IP_PASS_REASONS] = {
    "librondo-mpi is not active",
    "not in RONDO_MPI_INTERCEPT",
    "its size is outside the call's window in RONDO_MPI_INTERCEPT",
    "count 0",
    "a communicator of one rank",
    "an intercommunicator",
    "a datatype rondo has no exact reduction for (derived, unsigned, complex, "
    "long double, pair types...)",
    "an op rondo does not have (MINLOC, MAXLOC, logical or bitwise, user-defined)",
    "arguments MPI judges (MPI_COMM_NULL, a negative count)",
    "MPI_Iallreduce needs MPI_THREAD_MULTIPLE (rondo's engine thread)",
    "rondo could not make a comm for this communicator (see the error above)",
    "MPI_Iallreduce before rondo made the communicator's comm (a blocking call that rondo "
    "takes over makes it; MPI_COMM_WORLD's is made at MPI_Init)"};

/* What RONDO_MPI_INTERCEPT=default means: the calls measured faster than
 * MPICH's at 2 ranks on one node (docs/PERFORMANCE.md, "librondo-mpi"). */
static const char default_intercept[] =
    "allreduce,barrier,reduce_scatter_block,reduce_scatter,allgather:16384-,allgatherv:16384-";

const char *ip_call_name(rondo_mpi_call_t call)
{
  return (unsigned)call < RONDO_MPI_CALLS ? mpi_names[call] : "?";
}

void ip_log(int level, const char *fmt, ...)
{
  static const char *const names[] = {"", "ERROR", "WARN", "INFO", "DEBUG"};
  if (level > log_level || (level > IP_WARN && !log_shown))
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[rondo %d] %s librondo-mpi: %s\n", world_rank, names[level], line);
}

/* ---- the configuration -------------------------------------------------------------- */

/* The current value of a knob (rondo's table, docs/knobs.md), or NULL when
 * some knob is malformed (*why then says which). */
static const char *knob(const char *name, char *why, size_t len)
{
  for (int i = 0; i < rondo_knob_count(); i++) {
    rondo_knob_info_t info;
    if (rondo_knob_get(i, &info) != RONDO_SUCCESS) {
      snprintf(why, len, "%s", rondo_last_error());
      return NULL;
    }
    if (strcmp(info.name, name) == 0)
      return info.current;
  }
  snprintf(why, len, "this librondo has no knob %s (an older version?)", name);
  return NULL;
}

/* "MIN-MAX", either side may be empty. 0 on success. */
static int parse_window(const char *text, size_t *min, size_t *max)
{
  const char *dash = strchr(text, '-');
  if (dash == NULL)
    return -1;
  char lo[64], hi[64];
  size_t n = (size_t)(dash - text);
  if (n >= sizeof lo || strlen(dash + 1) >= sizeof hi)
    return -1;
  memcpy(lo, text, n);
  lo[n] = '\0';
  snprintf(hi, sizeof hi, "%s", dash + 1);
  *min = 0;
  *max = SIZE_MAX;
  if (lo[0] != '\0' && rondo__parse_size(lo, min) != 0)
    return -1;
  if (hi[0] != '\0' && rondo__parse_size(hi, max) != 0)
    return -1;
  return *min <= *max ? 0 : -1;
}

/* RONDO_MPI_INTERCEPT into *c. 0, or -1 with *why. */
static int parse_intercept(const char *text, ip_config_t *c, char *why, size_t len)
{
  memset(c, 0, sizeof *c);
  for (int k = 0; k < RONDO_MPI_CALLS; k++)
    c->max[k] = SIZE_MAX;
  if (strcmp(text, "none") == 0)
    return 0;
  if (strcmp(text, "all") == 0) {
    for (int k = 0; k < RONDO_MPI_CALLS; k++)
      c->on[k] = 1;
    return 0;
  }
  if (strcmp(text, "default") == 0 || text[0] == '\0')
    text = default_intercept;
  char list[512];
  snprintf(list, sizeof list, "%s", text);
  for (char *save = NULL, *item = strtok_r(list, ",", &save); item != NULL;
       item = strtok_r(NULL, ",", &save)) {
    while (*item == ' ')
      item++;
    char *colon = strchr(item, ':');
    if (colon != NULL)
      *colon = '\0';
    int k = 0;
    while (k < RONDO_MPI_CALLS && strcmp(item, call_names[k]) != 0)
      k++;
    if (k == RONDO_MPI_CALLS) {
      snprintf(why, len,
               "RONDO_MPI_INTERCEPT='%s': '%s' is not a call librondo-mpi takes over "
               "(allreduce, iallreduce, reduce_scatter_block, reduce_scatter, allgather, "
               "allgatherv, bcast, barrier; or default, all, none)",
               text, item);
      return -1;
    }
    c->on[k] = 1;
    if (colon != NULL && parse_window(colon + 1, &c->min[k], &c->max[k]) != 0) {
      snprintf(why, len,
               "RONDO_MPI_INTERCEPT='%s': '%s' is not a size window (MIN-MAX, either side "
               "may be empty: 1M-, -64K, 4K-16M)",
               text, colon + 1);
      return -1;
    }
  }
  return 0;
}

/* Whether every rank has the same words: one MPI_MAX of (v, ~v). */
static int same_everywhere(const uint64_t *v, int n)
{
  uint64_t mine[2 * (3 * RONDO_MPI_CALLS + 1)], all[2 * (3 * RONDO_MPI_CALLS + 1)];
  for (int i = 0; i < n; i++) {
    mine[i] = v[i];
    mine[n + i] = ~v[i];
  }
  if (PMPI_Allreduce(mine, all, 2 * n, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    return 0;
  for (int i = 0; i < n; i++)
    if (all[i] != ~all[n + i])
      return 0;
  return 1;
}

/* Every rank's RONDO_MPI_INTERCEPT, said by rank 0 (the ranks disagree). */
static void tell_values(const char *mine)
{
  int size = 1;
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  enum { W = 128 };
  char text[W] = {0};
  snprintf(text, sizeof text, "%s", mine != NULL ? mine : "(malformed knobs)");
  char *all = world_rank == 0 ? calloc((size_t)size, W) : NULL;
  PMPI_Gather(text, W, MPI_CHAR, all, W, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (all == NULL)
    return;
  char list[1024] = "";
  for (int r = 0; r < size && strlen(list) + W + 16 < sizeof list; r++) {
    size_t used = strlen(list);
    snprintf(list + used, sizeof list - used, "%srank %d '%s'", r ? ", " : "", r,
             all + (size_t)r * W);
  }
  ip_log(IP_WARN, "RONDO_MPI_INTERCEPT per rank: %s", list);
  free(all);
}

static int on_comm_free(MPI_Comm comm, int kv, void *value, void *extra);
static void summary(const ip_comm_t *r);

void ip_setup(int provided)
{
  ip_thread_level = provided;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  char why[512] = "";
  const char *level = knob("RONDO_LOG", why, sizeof why);
  static const char *const levels[] = {"off", "error", "warn", "info", "debug"};
  for (int i = 0; level != NULL && i < 5; i++)
    if (strcmp(level, levels[i]) == 0)
      log_level = i;
  /* RONDO_LOG_SUBSYS's value now: "all", or the subsystems it shows */
  const char *subsys = level != NULL ? knob("RONDO_LOG_SUBSYS", why, sizeof why) : NULL;
  if (subsys != NULL && strcmp(subsys, "all") != 0) {
    char list[256];
    snprintf(list, sizeof list, ",%s,", subsys);
    log_shown = strstr(list, ",interpose,") != NULL;
  }
  const char *text = level != NULL ? knob("RONDO_MPI_INTERCEPT", why, sizeof why) : NULL;
  ip_config_t c;
  int ok = text != NULL && parse_intercept(text, &c, why, sizeof why) == 0;
  /* What every rank must agree on: whether its knobs parse, and the result. */
  uint64_t words[3 * RONDO_MPI_CALLS + 1] = {(uint64_t)ok};
  for (int k = 0; ok && k < RONDO_MPI_CALLS; k++) {
    words[1 + 3 * k] = (uint64_t)c.on[k];
    words[2 + 3 * k] = c.min[k];
    words[3 + 3 * k] = c.max[k];
  }
  int agreed = same_everywhere(words, 3 * RONDO_MPI_CALLS + 1);
  if (!ok) {
    ip_log(IP_WARN, "%s; every call goes to MPI unchanged", why);
  } else if (!agreed) {
    ip_log(IP_WARN, "the ranks disagree on RONDO_MPI_INTERCEPT (or on whether their knobs "
                    "are valid): every call goes to MPI unchanged, on every rank");
  }
  if (!agreed)
    tell_values(text);
  if (!ok || !agreed)
    return;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_comm_free, &keyval, NULL) !=
      MPI_SUCCESS) {
    ip_log(IP_INFO, "MPI_Comm_create_keyval failed: every call goes to MPI unchanged");
    return;
  }
  ip_config = c;
  ip_active = 1;
  if (world_rank == 0) {
    char list[512] = "";
    for (int k = 0; k < RONDO_MPI_CALLS; k++) {
      if (!c.on[k])
        continue;
      size_t used = strlen(list);
      snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", mpi_names[k]);
      used = strlen(list);
      if (c.min[k] > 0 && c.max[k] < SIZE_MAX)
        snprintf(list + used, sizeof list - used, " (%zu to %zu bytes)", c.min[k], c.max[k]);
      else if (c.min[k] > 0)
        snprintf(list + used, sizeof list - used, " (from %zu bytes)", c.min[k]);
      else if (c.max[k] < SIZE_MAX)
        snprintf(list + used, sizeof list - used, " (up to %zu bytes)", c.max[k]);
    }
    static const char *const thread_levels[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED",
                                                "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"};
    ip_log(IP_INFO, "active (RONDO_MPI_INTERCEPT=%s): rondo takes over %s; MPI provides %s",
           text, list[0] ? list : "nothing",
           provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE
               ? thread_levels[provided - MPI_THREAD_SINGLE] : "an unknown thread level");
  }
}

/* ---- communicators -------------------------------------------------------------------- */

static void registry_remove(ip_comm_t *r)
{
  pthread_mutex_lock(&registry_lock);
  for (ip_comm_t **p = &registry; *p != NULL; p = &(*p)->next)
    if (*p == r) {
      *p = r->next;
      break;
    }
  pthread_mutex_unlock(&registry_lock);
}

/* The last record each thread looked up: the attribute lookup is most of
 * what a call that goes to MPI costs. A freed communicator's handle may
 * come back for a new one, so every free bumps the generation and drops
 * every thread's entry. */
static unsigned record_gen;
static _Thread_local struct {
  MPI_Comm comm;
  ip_comm_t *r;
  unsigned gen;
} last;

ip_comm_t *ip_record(MPI_Comm comm)
{
  if (comm == MPI_COMM_NULL || keyval == MPI_KEYVAL_INVALID)
    return NULL;
  unsigned gen = __atomic_load_n(&record_gen, __ATOMIC_ACQUIRE);
  if (last.r != NULL && last.comm == comm && last.gen == gen)
    return last.r;
  void *value = NULL;
  int flag = 0;
  if (MPI_Comm_get_attr(comm, keyval, &value, &flag) != MPI_SUCCESS)
    return NULL;
  if (flag) {
    last.comm = comm;
    last.r = value;
    last.gen = gen;
    return value;
  }
  ip_comm_t *r = calloc(1, sizeof *r);
  if (r == NULL)
    return NULL;
  r->comm = comm;
  PMPI_Comm_test_inter(comm, &r->inter);
  PMPI_Comm_size(comm, &r->size);
  PMPI_Comm_rank(comm, &r->rank);
  char name[MPI_MAX_OBJECT_NAME] = "";
  int n = 0;
  PMPI_Comm_get_name(comm, name, &n);
  pthread_mutex_lock(&registry_lock);
  r->id = next_id++;
  r->next = registry;
  registry = r;
  pthread_mutex_unlock(&registry_lock);
  if (name[0] != '\0')
    snprintf(r->label, sizeof r->label, "%s", name);
  else
    snprintf(r->label, sizeof r->label, "communicator %d", r->id);
  if (MPI_Comm_set_attr(comm, keyval, r) != MPI_SUCCESS) {
    registry_remove(r);
    free(r);
    return NULL;
  }
  return r;
}

rondo_comm_t ip_rondo(ip_comm_t *r)
{
  if (r->rc != NULL || r->failed)
    return r->rc;
  /* Collective: every member got here for the same call (interpose.h). */
  __atomic_store_n(&rondo_used, 1, __ATOMIC_RELAXED);
  rondo_status_t st = rondo_comm_create(r->comm, &r->rc);
  if (st != RONDO_SUCCESS) {
    r->failed = 1;
    r->rc = NULL;
    if (r->rank == 0)
      ip_log(IP_WARN, "%s (%d ranks): rondo could not make its comm (%s: %s); MPI serves "
                      "every call on it from now on",
             r->label, r->size, rondo_status_name(st), rondo_last_error());
    return NULL;
  }
  /* The teardown order: unique, and the same on every member (its rank 0's
   * world rank and how many comms that rank has made so far). */
  uint64_t order = 0;
  if (r->rank == 0)
    order = (uint64_t)world_rank << 32 | __atomic_fetch_add(&roots, 1, __ATOMIC_RELAXED);
  MPI_Comm dup;
  if (rondo_comm_mpi(r->rc, &dup) == RONDO_SUCCESS)
    PMPI_Bcast(&order, 1, MPI_UINT64_T, 0, dup);
  r->order = order;
  return r->rc;
}

/* MPI_Comm_free (and MPI_Finalize for the predefined ones): the rondo comm
 * goes with it. Collective, as MPI_Comm_free is. */
static int on_comm_free(MPI_Comm comm, int kv, void *value, void *extra)
{
  (void)comm;
  (void)kv;
  (void)extra;
  ip_comm_t *r = value;
  __atomic_add_fetch(&record_gen, 1, __ATOMIC_RELEASE);
  if (!finished)
    summary(r);
  if (!finished && r->rc != NULL && rondo_comm_destroy(&r->rc) != RONDO_SUCCESS)
    ip_log(IP_WARN, "%s: rondo_comm_destroy: %s", r->label, rondo_last_error());
  registry_remove(r);
  for (int k = 0; k < 3; k++)
    free(r->scratch[k]);
  free(r);
  return MPI_SUCCESS;
}

void *ip_scratch(ip_comm_t *r, int which, size_t bytes)
{
  if (r->scratch_bytes[which] < bytes) {
    void *p = realloc(r->scratch[which], bytes);
    if (p == NULL)
      return NULL;
    r->scratch[which] = p;
    r->scratch_bytes[which] = bytes;
  }
  return r->scratch[which] != NULL ? r->scratch[which] : (void *)r; /* bytes 0: any address */
}

/* ---- counts and the log ----------------------------------------------------------------- */

static long unattributed[RONDO_MPI_CALLS]; /* passed before a record existed */

/* " (the first such call: N bytes)", or "" when the call moves none. */
static const char *size_text(size_t bytes)
{
  static _Thread_local char text[64];
  if (bytes == 0)
    return "";
  snprintf(text, sizeof text, " (the first such call: %zu bytes)", bytes);
  return text;
}

void ip_count_taken(ip_comm_t *r, rondo_mpi_call_t call, size_t bytes)
{
  /* one thread at a time per communicator (MPI's rule for collectives):
   * no locked add, only tear-free for rondo_mpi_counts on another thread */
  __atomic_store_n(&r->taken[call], __atomic_load_n(&r->taken[call], __ATOMIC_RELAXED) + 1,
                   __ATOMIC_RELAXED);
  if (!(__atomic_load_n(&r->logged[call], __ATOMIC_RELAXED) & 1u) &&
      !(__atomic_fetch_or(&r->logged[call], 1u, __ATOMIC_RELAXED) & 1u) && r->rank == 0)
    ip_log(IP_INFO, "%s on %s (%d ranks): rondo takes it over%s", mpi_names[call], r->label,
           r->size, size_text(bytes));
}

void ip_count_passed(ip_comm_t *r, rondo_mpi_call_t call, ip_pass_t why, size_t bytes)
{
  if (r == NULL) {
    __atomic_fetch_add(&unattributed[call], 1, __ATOMIC_RELAXED);
    return;
  }
  __atomic_store_n(&r->passed[call][why],
                   __atomic_load_n(&r->passed[call][why], __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
  unsigned bit = 2u << why;
  if (!(__atomic_load_n(&r->logged[call], __ATOMIC_RELAXED) & bit) &&
      !(__atomic_fetch_or(&r->logged[call], bit, __ATOMIC_RELAXED) & bit) && r->rank == 0 &&
      why != IP_PASS_INACTIVE)
    ip_log(IP_INFO, "%s on %s (%d ranks): passed to MPI: %s%s", mpi_names[call], r->label,
           r->size, pass_text[why], size_text(bytes));
}

RONDO_API int rondo_mpi_active(void)
{
  return ip_active;
}

RONDO_API int rondo_mpi_counts(MPI_Comm comm, rondo_mpi_call_t call, long *taken, long *passed)
{
  if ((unsigned)call >= RONDO_MPI_CALLS || taken == NULL || passed == NULL)
    return MPI_ERR_ARG;
  *taken = *passed = 0;
  if (keyval == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL)
    return MPI_SUCCESS;
  void *value = NULL;
  int flag = 0;
  if (MPI_Comm_get_attr(comm, keyval, &value, &flag) != MPI_SUCCESS)
    return MPI_ERR_COMM;
  if (!flag)
    return MPI_SUCCESS;
  ip_comm_t *r = value;
  *taken = __atomic_load_n(&r->taken[call], __ATOMIC_RELAXED);
  for (int w = 0; w < IP_PASS_REASONS; w++)
    *passed += __atomic_load_n(&r->passed[call][w], __ATOMIC_RELAXED);
  return MPI_SUCCESS;
}

int ip_fail(MPI_Comm comm, rondo_status_t st)
{
  int cls;
  switch (st) {
  case RONDO_ERR_INVALID_ARG: cls = MPI_ERR_ARG; break;
  case RONDO_ERR_INVALID_DTYPE: cls = MPI_ERR_TYPE; break;
  case RONDO_ERR_INVALID_OP: cls = MPI_ERR_OP; break;
  case RONDO_ERR_INVALID_COMM: cls = MPI_ERR_COMM; break;
  case RONDO_ERR_NO_MEMORY: cls = MPI_ERR_NO_MEM; break;
  case RONDO_ERR_MISMATCH: cls = MPI_ERR_ARG; break; /* the ranks passed different counts... */
  default: cls = MPI_ERR_OTHER; break;
  }
  /* Quiet (RONDO_LOG unset or off), rondo logged nothing: where the error
   * handler is not MPI_ERRORS_RETURN it may end the program, so say why
   * first; MPI's own message names only the class. */
  MPI_Errhandler h = MPI_ERRHANDLER_NULL;
  if (log_level < IP_ERROR && PMPI_Comm_get_errhandler(comm, &h) == MPI_SUCCESS) {
    if (h != MPI_ERRORS_RETURN)
      fprintf(stderr, "[rondo %d] ERROR librondo-mpi: %s\n", world_rank, rondo_last_error());
    PMPI_Errhandler_free(&h);
  }
  MPI_Comm_call_errhandler(comm, cls);
  return cls;
}

/* One line per communicator and call, said by the communicator's rank 0. */
static void summary(const ip_comm_t *r)
{
  if (r->rank != 0 || log_level < IP_INFO)
    return;
  for (int k = 0; k < RONDO_MPI_CALLS; k++) {
    long passed = 0;
    char why[512] = "";
    for (int w = 0; w < IP_PASS_REASONS; w++) {
      if (r->passed[k][w] == 0)
        continue;
      passed += r->passed[k][w];
      size_t used = strlen(why);
      snprintf(why + used, sizeof why - used, "%s%ld %s", used ? "; " : "", r->passed[k][w],
               pass_text[w]);
    }
    if (r->taken[k] == 0 && passed == 0)
      continue;
    ip_log(IP_INFO, "%s (%d ranks): %s: %ld taken over by rondo, %ld passed to MPI%s%s%s",
           r->label, r->size, mpi_names[k], r->taken[k], passed, passed ? " (" : "", why,
           passed ? ")" : "");
  }
}

static int by_order(const void *a, const void *b)
{
  uint64_t x = (*(ip_comm_t *const *)a)->order, y = (*(ip_comm_t *const *)b)->order;
  return x < y ? -1 : x > y;
}

void ip_teardown(void)
{
  if (!ip_active)
    return;
  ip_active = 0;
  pthread_mutex_lock(&registry_lock);
  size_t n = 0;
  for (ip_comm_t *r = registry; r != NULL; r = r->next)
    n++;
  ip_comm_t **all = calloc(n ? n : 1, sizeof *all);
  n = 0;
  for (ip_comm_t *r = registry; all != NULL && r != NULL; r = r->next)
    all[n++] = r;
  pthread_mutex_unlock(&registry_lock);
  if (all == NULL)
    return;
  for (size_t i = 0; i < n; i++)
    summary(all[i]);
  for (int k = 0; k < RONDO_MPI_CALLS && world_rank == 0; k++)
    if (unattributed[k] > 0)
      ip_log(IP_INFO, "%s: %ld calls passed to MPI on MPI_COMM_NULL or an invalid communicator",
             mpi_names[k], unattributed[k]);
  /* Every rank destroys its rondo comms in one order: no two ranks wait in
   * each other's destroy (interpose.h). */
  qsort(all, n, sizeof *all, by_order);
  for (size_t i = 0; i < n; i++) {
    if (all[i]->rc == NULL)
      continue;
    if (rondo_comm_destroy(&all[i]->rc) != RONDO_SUCCESS)
      ip_log(IP_WARN, "%s: rondo_comm_destroy: %s", all[i]->label, rondo_last_error());
  }
  free(all);
  finished = 1;
  if (__atomic_load_n(&rondo_used, __ATOMIC_RELAXED) && rondo_finalize() != RONDO_SUCCESS)
    ip_log(IP_WARN, "rondo_finalize: %s", rondo_last_error());
}
