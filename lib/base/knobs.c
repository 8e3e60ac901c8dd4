/*
 * The environment knob table: the one place that names, types, defaults and
 * documents every knob. Every comm reads them when it is made (lib/comm);
 * a malformed value is an error naming the knob and the value, never a
 * silent default. docs/knobs.md mirrors this table and `rondo-info` prints
 * it.
 */
#include "base/base.h"
#include "base/numbers.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* KNOB_NAME: a name checked by the layer that owns the list (the algorithm
 * of RONDO_ALLREDUCE_ALGO, against lib/algo's table when a comm is made);
 * here only its length. KNOB_SUBSYS: a list of log subsystems (log.c's
 * grammar), parsed into a mask. */
typedef enum {
  KNOB_ENUM,
  KNOB_SIZE,
  KNOB_INT,
  KNOB_STRING,
  KNOB_DOUBLE,
  KNOB_NAME,
  KNOB_SUBSYS
} knob_type_t;

static const char *const log_choices[] = {"off", "error", "warn", "info", "debug", NULL};
static const char *const onoff_choices[] = {"off", "on", NULL};
static const char *const check_exchange_choices[] = {"auto", "rondo", "mpi", NULL};
static const char *const rab_radix_choices[] = {"auto", "2", "4", "8", NULL}; /* 2^index */

typedef struct {
  const char *name;
  knob_type_t type;
  const char *def;
  const char *doc;
  size_t offset;                /* field in rondo__knobs_t */
  const char *const *choices;   /* KNOB_ENUM: value = index */
  size_t min, max;              /* KNOB_SIZE (bytes), KNOB_INT and KNOB_DOUBLE bounds */
  int same_everywhere;          /* must be equal on every rank of a comm */
  const char *fallback;         /* read when the knob is unset (Horovod's name) */
} knob_def_t;

#define FIELD(f) offsetof(rondo__knobs_t, f)

static const knob_def_t knob_table[] = {
    {"RONDO_LOG", KNOB_ENUM, "warn",
     "log level: off, error, warn, info or debug; lines go to stderr prefixed "
     "with the rank",
     FIELD(log_level), log_choices, 0, 0, 0, NULL},
    {"RONDO_LOG_SUBSYS", KNOB_SUBSYS, "all",
     "the subsystems whose info and debug lines are logged (errors and warnings "
     "always are): all, a list of lib/'s folders and interpose (engine,algo), or "
     "^ and a list (all but those); lines then name their subsystem",
     FIELD(log_subsys), NULL, 0, 0, 0, NULL},
    {"RONDO_ALLREDUCE_ALGO", KNOB_NAME, "auto",
     "force the algorithm rondo_allreduce() runs: auto (rondo chooses) or a name "
     "of rondo-info's algorithm table",
     FIELD(allreduce_algo), NULL, 0, 0, 1, NULL},
    {"RONDO_REDUCE_SCATTER_ALGO", KNOB_NAME, "auto",
     "force the algorithm rondo_reduce_scatter() and the engine's reduce-scatters "
     "run: auto or a name of rondo-info's reduce-scatter table",
     FIELD(reduce_scatter_algo), NULL, 0, 0, 1, NULL},
    {"RONDO_ALLGATHER_ALGO", KNOB_NAME, "auto",
     "force the algorithm rondo_allgather(), rondo_allgatherv() and the engine's "
     "all-gathers run: auto or a name of rondo-info's all-gather table",
     FIELD(allgather_algo), NULL, 0, 0, 1, NULL},
    {"RONDO_RING_CHUNK_BYTES", KNOB_SIZE, "256K",
     "ring all-reduce pipeline chunk: each ring step is sent in chunks of this "
     "size so reduction overlaps communication",
     FIELD(ring_chunk), NULL, 64, (size_t)1 << 30, 1, NULL},
    {"RONDO_TUNING_FILE", KNOB_STRING, "",
     "a tuning table (written by rondo-bench tune) whose rules choose the all-reduce "
     "algorithm before the cost model; empty: the cost model alone",
     FIELD(tuning_file), NULL, 0, 0, 1, NULL},
    {"RONDO_NODE_SIZE", KNOB_INT, "0",
     "0: nodes are the ranks that share memory; k > 0: cut each node into runs "
     "of k consecutive ranks (virtual nodes, to test or tune hierarchical code on "
     "one host)",
     FIELD(node_size), NULL, 0, 1 << 20, 1, NULL},
    {"RONDO_SHM_CHUNK_BYTES", KNOB_SIZE, "256K",
     "shared-memory slot per rank and pipeline chunk of the shm and hierarchical "
     "all-reduce (the window holds 4 slots per rank)",
     FIELD(shm_chunk), NULL, 4096, (size_t)1 << 30, 1, NULL},
    {"RONDO_FUSION_THRESHOLD", KNOB_SIZE, "64M",
     "the engine packs ready all-reduces into fusion buffers of at most this "
     "many bytes; 0 disables fusion (fallback: HOROVOD_FUSION_THRESHOLD)",
     FIELD(fusion_threshold), NULL, 0, (size_t)1 << 40, 1, "HOROVOD_FUSION_THRESHOLD"},
    {"RONDO_CYCLE_TIME_MS", KNOB_DOUBLE, "1",
     "longest pause in milliseconds between engine cycles while requests wait "
     "for other ranks (it starts at 50 us and doubles); the idle engine sleeps "
     "(fallback: HOROVOD_CYCLE_TIME)",
     FIELD(cycle_time_ms), NULL, 0, 10000, 0, "HOROVOD_CYCLE_TIME"},
    {"RONDO_CACHE_CAPACITY", KNOB_INT, "1024",
     "entries of the engine's response cache: requests seen before are agreed "
     "on by one bit-vector all-reduce; 0 disables the cache",
     FIELD(cache_capacity), NULL, 0, 1 << 20, 1, NULL},
    {"RONDO_TIMELINE", KNOB_STRING, "",
     "path of a Chrome trace (JSON) of the engine's work, written by rank 0; "
     "empty: none; DYNAMIC: none until rondo_timeline_start() (fallback: HOROVOD_TIMELINE)",
     FIELD(timeline), NULL, 0, 0, 0, "HOROVOD_TIMELINE"},
    {"RONDO_STALL_WARN_SEC", KNOB_DOUBLE, "60",
     "seconds after which rank 0 logs which ranks have not submitted which "
     "pending names; 0 disables the warning",
     FIELD(stall_warn_sec), NULL, 0, 1000000, 0, NULL},
    {"RONDO_STALL_ABORT_SEC", KNOB_DOUBLE, "0",
     "seconds after which stalled requests fail with RONDO_ERR_STALLED on every "
     "rank that submitted them; 0: never",
     FIELD(stall_abort_sec), NULL, 0, 1000000, 0, NULL},
    {"RONDO_NET_CALIBRATE", KNOB_ENUM, "on",
     "on: a comm that spans nodes measures the network between them when it is "
     "made (a few milliseconds; docs/multinode.md); off: the knobs below or the "
     "model's guesses (5 us, 10 GB/s)",
     FIELD(net_calibrate), onoff_choices, 0, 0, 1, NULL},
    {"RONDO_NET_LATENCY_US", KNOB_DOUBLE, "0",
     "latency of one message step between nodes in microseconds, for the cost "
     "model; 0: measure it",
     FIELD(net_latency_us), NULL, 0, 1000000, 1, NULL},
    {"RONDO_NET_GBITS", KNOB_DOUBLE, "0",
     "bandwidth of one node's network link in Gbit/s (each way), for the cost "
     "model; 0: measure it",
     FIELD(net_gbits), NULL, 0, 1000000, 1, NULL},
    {"RONDO_CHECK_EXCHANGE", KNOB_ENUM, "auto",
     "how the argument check's packets cross nodes: rondo (rondo's own recursive "
     "doubling, whose steps Rabenseifner's carry; where nodes are equal blocks of "
     "consecutive ranks, a power of two of them and of ranks in each, inline data "
     "crosses from one rank a node), mpi (MPI's all-reduce of them) or auto (rondo "
     "wherever MPI's all-reduce is flat, nodes of one rank, Open MPI, ranks that "
     "yield, or nodes are such blocks; mpi elsewhere, where MPICH's is node-aware)",
     FIELD(check_exchange), check_exchange_choices, 0, 0, 1, NULL},
    {"RONDO_HIER_CHUNK_BYTES", KNOB_SIZE, "1M",
     "chunk of the hierarchical all-reduce's pipeline: above one chunk the node "
     "reduce-scatter of one stripe overlaps the cross-node exchange of the one "
     "before; stripes of a chunk on a fast link, of 1-16 chunks on a slow one",
     FIELD(hier_chunk), NULL, 4096, (size_t)1 << 30, 1, NULL},
    {"RONDO_RAB_RADIX", KNOB_ENUM, "auto",
     "radix of the doubling of Rabenseifner's all-reduce: 2, 4 or 8 (each step "
     "swaps with radix - 1 ranks at once, lg radix of radix 2's steps in one), "
     "or auto (the cost model's choice below p' elements, the largest power of "
     "two <= ranks, where the steps are latency; 2 from there)",
     FIELD(rab_radix), rab_radix_choices, 0, 0, 1, NULL},
    {"RONDO_STAGE_CHUNK_BYTES", KNOB_SIZE, "1M",
     "pipeline chunk of the staged all-reduce of device buffers: the copies of "
     "one chunk to and from pinned host memory overlap the host all-reduce of "
     "another",
     FIELD(stage_chunk), NULL, 256, (size_t)1 << 30, 1, NULL},
    {"RONDO_DEVICE_TIMEOUT_SEC", KNOB_DOUBLE, "300",
     "seconds a call on device buffers waits for its GPU work (a copy, NCCL's "
     "initialization or collective) before it fails on every rank and aborts "
     "the comm's NCCL communicator; 0: never",
     FIELD(device_timeout_sec), NULL, 0, 1000000, 0, NULL},
    {"RONDO_MPI_INTERCEPT", KNOB_STRING, "default",
     "librondo-mpi: the MPI calls rondo takes over, each with an optional size "
     "window (allreduce,iallreduce:1M-); default: those measured faster than MPI; "
     "none; all (docs/mpi.md)",
     FIELD(mpi_intercept), NULL, 0, 0, 0, NULL}, /* librondo-mpi agrees on it itself */
    {"RONDO_RENDEZVOUS", KNOB_STRING, "",
     "without an MPI launcher (torchrun, any launcher that sets RANK and WORLD_SIZE): "
     "HOST:PORT where rank 0 serves the rendezvous MPI starts through; empty: "
     "MASTER_ADDR and MASTER_PORT + 1 (docs/launching.md)",
     FIELD(rendezvous), NULL, 0, 0, 0, NULL}, /* read before MPI starts */
    {"RONDO_RENDEZVOUS_TIMEOUT_SEC", KNOB_DOUBLE, "300",
     "seconds the ranks wait at the rendezvous for every rank to arrive before they "
     "fail, naming the ranks that did not",
     FIELD(rendezvous_timeout_sec), NULL, 1, 1000000, 0, NULL},
    {"RONDO_RENDEZVOUS_KEY_FILE", KNOB_STRING, "",
     "a file (mode 600) whose first line is the job's secret, the same on every rank: "
     "each connection to the rendezvous proves it (HMAC-SHA256); or the secret itself "
     "in RONDO_RENDEZVOUS_KEY, which is never shown (docs/launching.md#who-can-join)",
     FIELD(rendezvous_key_file), NULL, 0, 0, 0, NULL}, /* read before MPI starts */
    {"RONDO_RENDEZVOUS_OPEN", KNOB_ENUM, "off",
     "on: a job across hosts without a key accepts its unauthenticated rendezvous "
     "without rank 0's warning",
     FIELD(rendezvous_open), onoff_choices, 0, 0, 0, NULL}, /* read before MPI starts */
};

enum { KNOB_COUNT = sizeof knob_table / sizeof knob_table[0] };

static const knob_def_t *find_knob(const char *name)
{
  for (int i = 0; i < KNOB_COUNT; i++)
    if (strcmp(knob_table[i].name, name) == 0)
      return &knob_table[i];
  return NULL;
}

static void choices_list(const char *const *choices, char *buf, size_t len)
{
  buf[0] = '\0';
  for (int i = 0; choices[i]; i++) {
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s", i ? ", " : "", choices[i]);
  }
}

/* Parses text into k's field of out. Returns 0, or -1 with what is wrong
 * in why ("is not valid: expected ..."), to follow "NAME='text' ". */
static int parse_one(const knob_def_t *k, const char *text, rondo__knobs_t *out, char *why,
                     size_t len)
{
  char *field = (char *)out + k->offset;
  switch (k->type) {
  case KNOB_ENUM:
    for (int i = 0; k->choices[i]; i++) {
      if (strcasecmp(text, k->choices[i]) == 0) {
        *(int *)field = i;
        return 0;
      }
    }
    {
      char list[256];
      choices_list(k->choices, list, sizeof list);
      snprintf(why, len, "is not valid: expected one of %s", list);
      return -1;
    }
  case KNOB_STRING:
    if (strlen(text) >= RONDO__KNOB_STRING_MAX) {
      snprintf(why, len, "is too long (at most %d bytes)", RONDO__KNOB_STRING_MAX - 1);
      return -1;
    }
    snprintf(field, RONDO__KNOB_STRING_MAX, "%s", text);
    return 0;
  case KNOB_NAME: {
    /* lower case, so "RING" and "ring" agree across ranks */
    size_t n = strlen(text);
    if (n == 0 || n >= RONDO__KNOB_NAME_MAX) {
      snprintf(why, len, "is not a name (1 to %d characters)", RONDO__KNOB_NAME_MAX - 1);
      return -1;
    }
    for (size_t i = 0; i <= n; i++)
      field[i] = (char)tolower((unsigned char)text[i]);
    return 0;
  }
  case KNOB_SUBSYS:
    return rondo__log_subsys_parse(text, (unsigned *)field, why, len);
  case KNOB_DOUBLE: {
    char *end;
    errno = 0;
    /* Decimal only: strtod would also take hex ("0x10"), infinities and NaNs. */
    int decimal = strpbrk(text, "xXnNiI") == NULL;
    double v = strtod(text, &end);
    while (isspace((unsigned char)*end))
      end++;
    if (!decimal || errno == ERANGE || end == text || *end != '\0' || !(v >= (double)k->min) ||
        !(v <= (double)k->max)) {
      snprintf(why, len, "is not valid: expected a decimal number in [%zu, %zu]", k->min, k->max);
      return -1;
    }
    *(double *)field = v;
    return 0;
  }
  case KNOB_INT: {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    while (isspace((unsigned char)*end))
      end++;
    if (errno == ERANGE || end == text || *end != '\0' || v < (long)k->min ||
        (unsigned long)v > k->max) {
      snprintf(why, len, "is not valid: expected an integer in [%zu, %zu]", k->min, k->max);
      return -1;
    }
    *(int *)field = (int)v;
    return 0;
  }
  case KNOB_SIZE: {
    size_t v;
    if (rondo__parse_size(text, &v) != 0) {
      snprintf(why, len, "is not valid: expected a byte count such as 4096, 64K, 16M or 1G");
      return -1;
    }
    if (v < k->min || v > k->max) {
      snprintf(why, len, "is out of range [%zu, %zu] bytes", k->min, k->max);
      return -1;
    }
    *(size_t *)field = v;
    return 0;
  }
  }
  snprintf(why, len, "has no type (internal error)");
  return -1;
}

/* Parses k's value text, which came from the environment variable `from`
 * when that is not k's own name (a fallback), or is k's default (NULL). */
static rondo_status_t parse_knob(const knob_def_t *k, const char *text, const char *from,
                                 rondo__knobs_t *out)
{
  char why[320];
  if (parse_one(k, text, out, why, sizeof why) == 0)
    return RONDO_SUCCESS;
  if (from != NULL && strcmp(from, k->name) != 0)
    return rondo__fail_quiet(RONDO_ERR_INVALID_KNOB,
                             "%s='%s' %s (the value of %s, read because %s is unset)", k->name,
                             text, why, from, k->name);
  return rondo__fail_quiet(RONDO_ERR_INVALID_KNOB, "%s='%s' %s", k->name, text, why);
}

rondo_status_t rondo__knob_parse(const char *name, const char *text,
                                 rondo__knobs_t *out)
{
  const knob_def_t *k = find_knob(name);
  if (k == NULL)
    return rondo__fail_quiet(RONDO_ERR_INVALID_ARG, "no knob is named %s", name);
  if (text == NULL)
    text = k->def;
  return parse_knob(k, text, NULL, out);
}

rondo_status_t rondo__knobs_load(rondo__knobs_t *out)
{
  rondo__knobs_t tmp;
  memset(&tmp, 0, sizeof tmp);
  static int warned;
  if (getenv("RONDO_CHECK_ARGS") != NULL && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    LOG_WARN("RONDO_CHECK_ARGS is ignored: since rondo 0.2 the argument check always runs "
             "(in shared memory on one node, where it costs nothing measurable)");
  for (int i = 0; i < KNOB_COUNT; i++) {
    const char *from = knob_table[i].name, *env = getenv(from);
    if (env == NULL && knob_table[i].fallback != NULL)
      env = getenv(from = knob_table[i].fallback);
    rondo_status_t st =
        parse_knob(&knob_table[i], env ? env : knob_table[i].def, env ? from : NULL, &tmp);
    if (st != RONDO_SUCCESS)
      return st;
  }
  *out = tmp;
  return RONDO_SUCCESS;
}

/* The index in knob_table of the j-th knob that must be equal everywhere. */
static int shared_index(int j)
{
  for (int i = 0; i < KNOB_COUNT; i++)
    if (knob_table[i].same_everywhere && j-- == 0)
      return i;
  return -1;
}

int rondo__knobs_shared_count(void)
{
  int n = 0;
  for (int i = 0; i < KNOB_COUNT; i++)
    n += knob_table[i].same_everywhere;
  return n;
}

const char *rondo__knob_shared_name(int j)
{
  int i = shared_index(j);
  return i >= 0 ? knob_table[i].name : "?";
}

uint64_t rondo__knob_shared_hash(const rondo__knobs_t *k, int j)
{
  int i = shared_index(j);
  if (i < 0)
    return 0;
  const char *p = (const char *)k + knob_table[i].offset;
  knob_type_t t = knob_table[i].type;
  size_t n = t == KNOB_SIZE                      ? sizeof(size_t)
             : t == KNOB_STRING || t == KNOB_NAME ? strlen(p)
             : t == KNOB_DOUBLE                    ? sizeof(double)
                                                 : sizeof(int);
  return rondo__fnv(RONDO__FNV_INIT, p, n);
}

/* A subsystem mask as text: "all", or the names it shows. */
static void subsys_text(unsigned mask, char *buf, size_t len)
{
  if (mask == RONDO__SUBSYS_ALL) {
    snprintf(buf, len, "all");
    return;
  }
  buf[0] = '\0';
  for (int s = 0; s < RONDO__SUBSYS_COUNT; s++) {
    size_t used = strlen(buf);
    if (mask >> s & 1u)
      snprintf(buf + used, len - used, "%s%s", used ? "," : "", rondo__log_subsys_name(s));
  }
}

/* A knob's value in *k as text. */
static void knob_text(const knob_def_t *d, const rondo__knobs_t *k, char *buf, size_t len)
{
  const char *field = (const char *)k + d->offset;
  switch (d->type) {
  case KNOB_ENUM:
    snprintf(buf, len, "%s", d->choices[*(const int *)field]);
    break;
  case KNOB_INT:
    snprintf(buf, len, "%d", *(const int *)field);
    break;
  case KNOB_STRING:
  case KNOB_NAME:
    snprintf(buf, len, "%s", field);
    break;
  case KNOB_SIZE:
    snprintf(buf, len, "%zu", *(const size_t *)field);
    break;
  case KNOB_DOUBLE:
    snprintf(buf, len, "%g", *(const double *)field);
    break;
  case KNOB_SUBSYS:
    subsys_text(*(const unsigned *)field, buf, len);
    break;
  }
}

void rondo__knob_shared_text(const rondo__knobs_t *k, int j, char *buf, size_t len)
{
  int i = shared_index(j);
  if (i >= 0)
    knob_text(&knob_table[i], k, buf, len);
  else
    snprintf(buf, len, "?");
}

/* ---- public introspection ------------------------------------------------- */

static const char *const type_names[] = {"enum",   "size", "int",  "string",
                                         "number", "name", "list"};
static char current_text[KNOB_COUNT][512];

int rondo_knob_count(void) { return KNOB_COUNT; }

rondo_status_t rondo_knob_get(int i, rondo_knob_info_t *info)
{
  if (info == NULL)
    return rondo__fail_quiet(RONDO_ERR_INVALID_ARG, "rondo_knob_get: info is NULL");
  if (i < 0 || i >= KNOB_COUNT)
    return rondo__fail_quiet(RONDO_ERR_INVALID_ARG,
                             "knob index %d out of range [0, %d)", i, KNOB_COUNT);
  const knob_def_t *k = &knob_table[i];
  /* The environment now: what the next comm made will read. */
  rondo__knobs_t now;
  if (rondo__knobs_load(&now) != RONDO_SUCCESS)
    return RONDO_ERR_INVALID_KNOB;
  knob_text(k, &now, current_text[i], sizeof current_text[i]);
  info->name = k->name;
  info->type = type_names[k->type];
  info->default_value = k->def;
  info->current = current_text[i];
  info->doc = k->doc;
  return RONDO_SUCCESS;
}

/* The log's knobs (RONDO_LOG, RONDO_LOG_SUBSYS) into log.c's state: here,
 * not in log.c, which the knob parser itself logs through. */
void rondo__log_from_env(void)
{
  rondo__knobs_t k;
  if (rondo__knob_parse("RONDO_LOG", getenv("RONDO_LOG"), &k) == RONDO_SUCCESS)
    rondo__log_level = k.log_level;
  if (rondo__knob_parse("RONDO_LOG_SUBSYS", getenv("RONDO_LOG_SUBSYS"), &k) == RONDO_SUCCESS)
    rondo__log_set_subsys(k.log_subsys);
}
