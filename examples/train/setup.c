/*
 * Everything before the first step: the checkpoint's configuration (when
 * resuming), the data, the model and its mirrored start, the choices the
 * header reports (the all-reduce algorithm, prefetch), and the input
 * pipeline. Every step that can fail on one rank ends in trainer_agree(), so
 * all ranks stop together with the same message.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "config.h"
#include "examples/train/trainer.h"

#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
#include <cblas.h>
#endif

enum { EVAL_ROWS = 256 };

/* ---- the checkpoint's configuration ------------------------------------------------ */

/* Rank 0 reads the checkpoint; every rank gets its header (or rank 0's
 * error). Rank 0 keeps the variables in *params and *velocity. */
static int read_checkpoint(trainer_t *t, ckpt_header_t *h, float **params, float **velocity)
{
  char err[1024] = "";
  int ok = t->rank != 0 || ckpt_load(t->o.resume, h, params, velocity, err, sizeof err) == 0;
  if (trainer_agree(t, ok, err, sizeof err) != 0)
    return -1;
  /* Plain data, and every rank runs this same binary. */
  TRAINER_CHECK(t, rondo_broadcast(t->comm, h, sizeof *h, RONDO_UINT8, 0));
  return 0;
}

/* --resume F with --checkpoint F, where F does not exist yet: the first
 * attempt of a job that is restarted with the same command line (torchrun
 * --max-restarts, a scheduler's requeue; Keras' BackupAndRestore) starts
 * fresh. Rank 0 looks and every rank hears. Any other missing --resume
 * file, and a file that exists but cannot be read, still fails. */
static int fresh_start(trainer_t *t)
{
  if (t->o.resume == NULL || t->o.checkpoint == NULL || strcmp(t->o.resume, t->o.checkpoint) != 0)
    return 0;
  struct stat st;
  int missing = t->rank == 0 && stat(t->o.resume, &st) != 0 && errno == ENOENT;
  TRAINER_CHECK(t, rondo_broadcast(t->comm, &missing, 1, RONDO_INT32, 0));
  if (missing) {
    t->fresh = 1;
    t->o.resume = NULL;
  }
  return 0;
}

/* The command line wins where it set an option; the checkpoint fills in the
 * rest. What cannot change (the data and its order, the model) is refused;
 * a change that only makes the run differ from an uninterrupted one is
 * noted by rank 0. */
static int apply_checkpoint(trainer_t *t, const ckpt_header_t *h, char *err, size_t len)
{
  train_opts_t *o = &t->o;
  char noted[512] = "";
  size_t used = 0;
#define NOTE(fmt, ...)                                                                     \
  if (used < sizeof noted)                                                                  \
  used += (size_t)snprintf(noted + used, sizeof noted - used, " " fmt, __VA_ARGS__)
  if ((o->set & SET_DATASET) && strcmp(o->dataset, h->dataset) != 0)
    return train_error(err, len, "cannot resume from %s: it was trained on %s, not %s",
                       o->resume, h->dataset, o->dataset);
  if ((o->set & SET_SEED) && o->seed != h->seed)
    return train_error(err, len,
                       "cannot resume from %s: it was trained with --seed %llu, this run has "
                       "--seed %llu (the seed fixes the data order and the synthetic data)",
                       o->resume, (unsigned long long)h->seed, (unsigned long long)o->seed);
  snprintf(o->dataset, sizeof o->dataset, "%s", h->dataset);
  o->seed = h->seed;
  if (!(o->set & SET_HIDDEN)) {
    o->nhidden = h->nsizes - 2;
    for (int i = 0; i < o->nhidden; i++)
      o->hidden[i] = h->sizes[i + 1];
  }
  if (strcmp(o->dataset, "synthetic") == 0) {
    o->samples = o->set & SET_SAMPLES ? o->samples : h->train_samples;
    o->features = o->set & SET_FEATURES ? o->features : h->sizes[0];
    o->classes = o->set & SET_CLASSES ? o->classes : h->sizes[h->nsizes - 1];
  }
#define RESTORE(bit, field, flag, fmt)                                                      \
  if (!(o->set & (bit)))                                                                    \
    o->field = h->field;                                                                    \
  else if (o->field != h->field)                                                            \
  NOTE("--" flag " " fmt " (was " fmt ")", o->field, h->field)
  RESTORE(SET_BATCH, batch, "batch", "%zu");
  RESTORE(SET_EPOCHS, epochs, "epochs", "%d");
  RESTORE(SET_LR, lr, "lr", "%g");
  RESTORE(SET_MOMENTUM, momentum, "momentum", "%g");
  RESTORE(SET_WEIGHT_DECAY, weight_decay, "weight-decay", "%g");
  RESTORE(SET_WARMUP, warmup_epochs, "warmup-epochs", "%g");
  RESTORE(SET_STEP_EPOCHS, step_epochs, "step-epochs", "%g");
  RESTORE(SET_GAMMA, gamma, "gamma", "%g");
  if (!(o->set & SET_SCHEDULE))
    o->schedule = h->schedule;
  else if (o->schedule != h->schedule)
    NOTE("--schedule %s (was %s)", train_schedule_name(o->schedule),
         train_schedule_name(h->schedule));
#undef RESTORE
#undef NOTE
  if (t->rank == 0 && noted[0] != '\0')
    fprintf(stderr, "rondo-train: note: resuming with%s: the run will not match an "
                    "uninterrupted one\n", noted);
  if (t->rank == 0 && h->epoch >= o->epochs)
    fprintf(stderr, "rondo-train: note: %s ends epoch %lld of %d: nothing is left to train "
                    "(--epochs trains longer)\n", o->resume, h->epoch, o->epochs);
  return 0;
}

/* After the data and the model exist: they must be the checkpoint's. */
static int check_checkpoint(const trainer_t *t, const ckpt_header_t *h, char *err, size_t len)
{
  char have[128], want[128];
  mlp_shape(h->sizes, h->nsizes, have, sizeof have);
  mlp_shape(t->m.sizes, t->m.nlayers + 1, want, sizeof want);
  if (strcmp(have, want) != 0)
    return train_error(err, len,
                       "cannot resume from %s: its model is %s, this run's is %s (check "
                       "--hidden, --features and --classes)",
                       t->o.resume, have, want);
  if (h->train_samples != t->data.train.n)
    return train_error(err, len,
                       "cannot resume from %s: it was trained on %zu samples of %s, this run "
                       "has %zu",
                       t->o.resume, h->train_samples, h->dataset, t->data.train.n);
  return 0;
}

/* ---- the strategy ------------------------------------------------------------------- */

/* Every rank must run the same strategy, with the same parameter-server
 * layout or sharded stage: they communicate differently. */
static int strategy_agree(trainer_t *t)
{
  const train_opts_t *o = &t->o;
  int ps = o->strategy == STRATEGY_PARAMETER_SERVER;
  /* the minimum and the negated maximum of each, in one all-reduce */
  int64_t mine[4] = {o->strategy, ps ? ps_servers(t) : 0, ps ? o->staleness : 0,
                     o->strategy == STRATEGY_SHARDED ? o->stage : 0},
          v[8];
  for (int i = 0; i < 4; i++) {
    v[i] = mine[i];
    v[4 + i] = -mine[i];
  }
  TRAINER_CHECK(t, rondo_allreduce(t->comm, v, v, 8, RONDO_INT64, RONDO_MIN));
  char err[1024] = "";
  if (v[0] != -v[4])
    snprintf(err, sizeof err,
             "the ranks were given different strategies (%s on some, %s on others): give "
             "every rank the same --strategy",
             train_strategy_name((strategy_t)v[0]), train_strategy_name((strategy_t)-v[4]));
  else if (v[1] != -v[5])
    snprintf(err, sizeof err,
             "the ranks were given different --servers (%lld on some, %lld on others): give "
             "every rank the same",
             (long long)v[1], (long long)-v[5]);
  else if (v[2] != -v[6])
    snprintf(err, sizeof err,
             "the ranks were given different --staleness (%lld on some, %lld on others; -1 "
             "is async): give every rank the same",
             (long long)v[2], (long long)-v[6]);
  else if (v[3] != -v[7])
    snprintf(err, sizeof err,
             "the ranks were given different --stage (%lld on some, %lld on others): give "
             "every rank the same",
             (long long)v[3], (long long)-v[7]);
  return trainer_agree(t, err[0] == '\0', err, sizeof err);
}

/* The ranks a global batch is split among: every rank, or parameter-server's
 * workers (at least 1 here: ps_create refuses a layout without one). */
static int batch_shares(const trainer_t *t)
{
  if (t->o.strategy != STRATEGY_PARAMETER_SERVER)
    return t->size;
  return t->size > ps_servers(t) ? t->size - ps_servers(t) : 1;
}

/* ---- data, model, mirrored start ---------------------------------------------------- */

/* Every rank must hold the same data: a CRC-32 of both splits, their sizes and
 * the normalization, compared across ranks. */
static int data_agree(trainer_t *t)
{
  const dataset_t *d = &t->data;
  const split_t *s[2] = {&d->train, &d->test};
  uLong crc = crc32_z(0L, Z_NULL, 0);
  for (int i = 0; i < 2; i++) {
    uint64_t dims[2] = {s[i]->n, s[i]->features};
    crc = crc32_z(crc, (const Bytef *)dims, sizeof dims);
    crc = crc32_z(crc, s[i]->x, s[i]->n * s[i]->features);
    crc = crc32_z(crc, (const Bytef *)s[i]->y, s[i]->n * sizeof *s[i]->y);
  }
  crc = crc32_z(crc, (const Bytef *)d->mean, d->features * sizeof *d->mean);
  int64_t v[2] = {(int64_t)crc, ~(int64_t)crc};
  TRAINER_CHECK(t, rondo_allreduce(t->comm, v, v, 2, RONDO_INT64, RONDO_MAX));
  char err[1024];
  snprintf(err, sizeof err,
           "the ranks loaded different %s data (rank 0: %zu training and %zu test samples of "
           "%zu features): give every rank the same files (--data-dir)",
           d->name, d->train.n, d->test.n, d->features);
  return trainer_agree(t, v[0] == ~v[1], err, sizeof err);
}

static int build_model(trainer_t *t)
{
  char err[1024] = "";
  size_t sizes[TRAIN_MAX_LAYERS + 1];
  int nsizes = 0, ok;
  sizes[nsizes++] = t->data.features;
  for (int i = 0; i < t->o.nhidden; i++)
    sizes[nsizes++] = t->o.hidden[i];
  sizes[nsizes++] = t->data.classes;
  /* the most rows a rank trains on: its share of the global batch */
  size_t shares = (size_t)batch_shares(t), rows = (t->o.batch + shares - 1) / shares;
  rows = rows > EVAL_ROWS ? rows : EVAL_ROWS;
  ok = mlp_create(&t->m, sizes, nsizes, rows, t->o.seed) == 0;
  t->ex = malloc(rows * t->data.features * sizeof *t->ex);
  t->ey = malloc(rows * sizeof *t->ey);
  t->eidx = malloc(rows * sizeof *t->eidx);
  if (!ok || t->ex == NULL || t->ey == NULL || t->eidx == NULL) {
    ok = 0;
    snprintf(err, sizeof err, "no memory for a %zu-row model of %d layers", rows, nsizes - 1);
  }
  if (ok && report_create(&t->o, t->rank == 0, &t->rep, err, sizeof err) != 0)
    ok = 0;
  if (trainer_agree(t, ok, err, sizeof err) != 0)
    return -1;
  return 0;
}

/* Every rank starts from rank 0's variables: its initialization, or the
 * checkpoint it read (with the momentum and the position). */
static void mirror_start(trainer_t *t, const ckpt_header_t *h, const float *params,
                         const float *velocity)
{
  if (t->o.resume != NULL) {
    if (t->rank == 0) {
      memcpy(t->m.params, params, t->m.nparams * sizeof(float));
      memcpy(t->m.velocity, velocity, t->m.nparams * sizeof(float));
    }
    TRAINER_CHECK(t, rondo_broadcast(t->comm, t->m.velocity, t->m.nparams, RONDO_FLOAT32, 0));
    t->step = h->step;
    t->epoch = h->epoch;
    t->offset = h->offset;
  }
  TRAINER_CHECK(t, rondo_broadcast(t->comm, t->m.params, t->m.nparams, RONDO_FLOAT32, 0));
}

/* ---- choices the header reports ----------------------------------------------------- */

/* The all-reduce of the gradients; -1 (every rank: the answer is the same
 * everywhere) when the one asked for cannot run on this comm. */
static int choose_algo(trainer_t *t)
{
  /* The gradients' reduce-scatter (sharded.c, stages 2-3) follows the same
   * rule; across nodes pairwise adds each block in a fixed order of ranks,
   * which is not recursive doubling's: rounding apart (docs/train.md). */
  t->rs_algo = !t->o.algo_deterministic || t->size <= 2 ? RONDO_ALGO_AUTO
               : t->nodes == 1                        ? RONDO_ALGO_SHM
                                                      : RONDO_ALGO_PAIRWISE;
  if (!t->o.algo_deterministic) {
    t->algo = t->o.algo;
    t->algo_why = "as asked (--allreduce)";
  } else if (t->size <= 2) {
    /* Sums of two values are the same in either order, so at 1-2 ranks every
     * algorithm gives the same bits. At more, the algorithm must reduce every
     * element in the same order wherever the engine's fusion puts it. */
    t->algo = RONDO_ALGO_AUTO;
    t->algo_why = "deterministic: at 1-2 ranks every algorithm sums in the same order";
  } else if (t->nodes == 1) {
    t->algo = RONDO_ALGO_SHM;
    t->algo_why = "deterministic: shm reduces every element in rank order";
  } else {
    t->algo = RONDO_ALGO_RECURSIVE_DOUBLING;
    t->algo_why = "deterministic: recursive doubling sums every element in the same order";
  }
  if (t->algo != RONDO_ALGO_AUTO &&
      rondo_algo_available(t->comm, t->algo, t->m.nparams, RONDO_FLOAT32, RONDO_SUM, NULL) !=
          RONDO_SUCCESS) {
    if (t->rank == 0)
      fprintf(stderr, "rondo-train: --allreduce %s: %s\n", rondo_algo_name(t->algo),
              rondo_last_error());
    return -1;
  }
  return 0;
}

/* Cores the ranks of this node may run on between them (the union of their
 * affinity masks), and the number of those ranks. */
static void node_cores(trainer_t *t, int *cores, int *ranks)
{
  cpu_set_t mine, all;
  MPI_Comm node;
  CPU_ZERO(&mine);
  *cores = sched_getaffinity(0, sizeof mine, &mine) == 0 ? CPU_COUNT(&mine) : 1;
  *ranks = 1;
  MPI_Comm mpi;
  if (rondo_comm_mpi(t->comm, &mpi) != RONDO_SUCCESS ||
      MPI_Comm_split_type(mpi, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return;
  if (MPI_Allreduce(&mine, &all, (int)sizeof mine, MPI_BYTE, MPI_BOR, node) == MPI_SUCCESS &&
      MPI_Comm_size(node, ranks) == MPI_SUCCESS)
    *cores = CPU_COUNT(&all);
  MPI_Comm_free(&node);
}

/* --prefetch auto: a prefetch thread pays when it has a core to run on. With
 * every core busy training it only takes turns with the training thread
 * (measured: 5-15% slower on Fashion-MNIST, 2 ranks on 2 cores). Collective. */
static void choose_prefetch(trainer_t *t)
{
  if (t->o.prefetch == PREFETCH_ON) {
    t->input_why = "prefetched on a second thread (--prefetch on)";
  } else if (t->o.prefetch == PREFETCH_OFF) {
    t->input_why = "prepared on the training thread (--prefetch off)";
  } else {
    int cores, ranks;
    node_cores(t, &cores, &ranks); /* collective: every rank has the same --prefetch */
    int spare = cores >= 2 * ranks;
    t->o.prefetch = spare ? PREFETCH_ON : PREFETCH_OFF;
    t->input_why = spare
                       ? "prefetched on a second thread (auto: the node has a spare core per rank)"
                       : "prepared on the training thread (auto: no spare core per rank on the node)";
  }
}

static const char *blas_setup(void)
{
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
  /* One BLAS thread per rank: the ranks already fill the cores. */
  openblas_set_num_threads(1);
  return openblas_get_config();
#else
  return "CBLAS (single-threaded)";
#endif
}

/* ---- what the run is ---------------------------------------------------------------- */

void trainer_config_json(const trainer_t *t, char *buf, size_t len)
{
  char hidden[256] = "", shape[128];
  size_t used = 0;
  for (int i = 0; i < t->o.nhidden; i++)
    used += (size_t)snprintf(hidden + used, sizeof hidden - used, "%s%zu", i ? "," : "",
                             t->o.hidden[i]);
  mlp_shape(t->m.sizes, t->m.nlayers + 1, shape, sizeof shape);
  char staleness[32] = "null";
  if (t->o.strategy == STRATEGY_PARAMETER_SERVER && t->o.staleness < 0)
    snprintf(staleness, sizeof staleness, "\"async\"");
  else if (t->o.strategy == STRATEGY_PARAMETER_SERVER)
    snprintf(staleness, sizeof staleness, "%lld", t->o.staleness);
  snprintf(buf, len,
           "{\"dataset\":\"%s\",\"train_samples\":%zu,\"test_samples\":%zu,\"features\":%zu,"
           "\"classes\":%zu,\"hidden\":[%s],\"shape\":\"%s\",\"variables\":%zu,\"seed\":%llu,"
           "\"epochs\":%d,\"batch\":%zu,\"lr\":%g,\"momentum\":%g,\"weight_decay\":%g,"
           "\"schedule\":\"%s\",\"warmup_epochs\":%g,\"step_epochs\":%g,\"gamma\":%g,"
           "\"max_steps\":%lld,\"strategy\":\"%s\",\"servers\":%d,\"staleness\":%s,"
           "\"stage\":%d,"
           "\"allreduce\":\"%s\",\"deterministic\":%s,\"overlap\":%s,"
           "\"prefetch\":%s,\"ranks\":%d,\"nodes\":%d,\"resumed\":%s}",
           t->data.name, t->data.train.n, t->data.test.n, t->data.features, t->data.classes,
           hidden, shape, t->m.nparams, (unsigned long long)t->o.seed, t->o.epochs, t->o.batch,
           t->o.lr, t->o.momentum, t->o.weight_decay, train_schedule_name(t->o.schedule),
           t->o.warmup_epochs, t->o.step_epochs, t->o.gamma, t->o.max_steps,
           train_strategy_name(t->o.strategy), t->ps.servers, staleness,
           t->o.strategy == STRATEGY_SHARDED ? t->o.stage : 0, rondo_algo_name(t->algo),
           t->o.algo_deterministic ? "true" : "false",
           t->o.overlap ? "true" : "false", t->o.prefetch == PREFETCH_ON ? "true" : "false",
           t->size, t->nodes, t->o.resume != NULL ? "true" : "false");
}

static void print_header(trainer_t *t, const char *blas)
{
  const train_opts_t *o = &t->o;
  size_t n = t->data.train.n, B = o->batch, first, mine, tail = n % B;
  char shape[128], topo[1024], last[64] = "", allreduce[256];
  mlp_shape(t->m.sizes, t->m.nlayers + 1, shape, sizeof shape);
  if (tail != 0 && n > B)
    snprintf(last, sizeof last, ", the last with %zu samples", tail);
  loader_split(B < n ? B : n, 0, batch_shares(t), &first, &mine);
  if (rondo_comm_topology(t->comm, topo, sizeof topo, NULL) != RONDO_SUCCESS)
    snprintf(topo, sizeof topo, "?");
  if (t->size == 1)
    snprintf(allreduce, sizeof allreduce, "none: one rank (the gradient sums are local)");
  else if (o->strategy == STRATEGY_PARAMETER_SERVER)
    snprintf(allreduce, sizeof allreduce,
             "none for the gradients: the workers push them to the servers");
  else
    snprintf(allreduce, sizeof allreduce,
             "one request per variable %s, through the engine; algorithm %s (%s)",
             o->overlap ? "as backward produces it" : "after backward (--no-overlap)",
             rondo_algo_name(t->algo), t->algo_why);
  report_header(t->rep,
                "rondo-train %s on %s\n"
                "data       %s: %zu training and %zu test samples, %zu features, %zu classes "
                "(%s)\n"
                "model      MLP %s, ReLU, softmax cross-entropy: %zu variables in %d tensors, "
                "seed %llu\n"
                "batch      %zu global, rank 0 takes %zu; %zu steps per epoch%s\n",
                rondo_version_string(), topo, t->data.name, n, t->data.test.n,
                t->data.features, t->data.classes, t->data.source, shape, t->m.nparams,
                t->m.nvars, (unsigned long long)o->seed, B, mine, (n + B - 1) / B, last);
  char line[512];
  t->strategy->describe(t, line, sizeof line);
  report_header(t->rep, "strategy   %s\n", line);
  report_header(t->rep,
                "optimizer  SGD, lr %g (%s, %g warm-up epochs), momentum %g, weight decay %g, "
                "%d epochs%s\n"
                "all-reduce %s\n"
                "input      %s; BLAS %s, 1 thread\n",
                o->lr, train_schedule_name(o->schedule), o->warmup_epochs, o->momentum,
                o->weight_decay, o->epochs, o->max_steps ? ", stopping at --max-steps" : "",
                allreduce, t->input_why, blas);
  if (o->resume != NULL)
    report_header(t->rep, "resumed    from %s at step %lld (epoch %lld, sample %zu)\n",
                  o->resume, t->step, t->epoch + 1, t->offset);
  if (t->fresh)
    report_header(t->rep, "resumed    nothing: %s does not exist yet, starting fresh\n",
                  o->checkpoint);
  if (o->checkpoint != NULL)
    report_header(t->rep, "checkpoint %s, every %s\n", o->checkpoint,
                  o->checkpoint_every ? "--checkpoint-every steps" : "epoch");
}

/* ---- all of it ------------------------------------------------------------------------ */

int trainer_setup(trainer_t *t)
{
  char err[1024] = "";
  ckpt_header_t h;
  float *params = NULL, *velocity = NULL; /* rank 0's copy of the checkpoint */
  int rc = TRAIN_EXIT_ERROR;
  memset(&h, 0, sizeof h);
  t->central.win = MPI_WIN_NULL;
  t->central.mpi = MPI_COMM_NULL;
  t->ps.mpi = MPI_COMM_NULL;
  if (strategy_agree(t) != 0) {
    rc = TRAIN_EXIT_USAGE;
    goto out;
  }
  if (fresh_start(t) != 0)
    goto out;
  if (t->o.resume != NULL) {
    if (read_checkpoint(t, &h, &params, &velocity) != 0)
      goto out;
    int ok = apply_checkpoint(t, &h, err, sizeof err) == 0;
    if (trainer_agree(t, ok, err, sizeof err) != 0)
      goto out;
  }
  int ok = data_load(&t->o, &t->data, err, sizeof err) == 0;
  if (trainer_agree(t, ok, err, sizeof err) != 0 || data_agree(t) != 0 || build_model(t) != 0)
    goto out;
  ok = t->o.resume == NULL || check_checkpoint(t, &h, err, sizeof err) == 0;
  if (trainer_agree(t, ok, err, sizeof err) != 0)
    goto out;
  mirror_start(t, &h, params, velocity);
  if (t->strategy->create != NULL && (rc = t->strategy->create(t)) != 0)
    goto out;
  rc = TRAIN_EXIT_ERROR;
  if (choose_algo(t) != 0) {
    rc = TRAIN_EXIT_USAGE;
    goto out;
  }
  if (t->o.strategy == STRATEGY_PARAMETER_SERVER) {
    t->o.prefetch = PREFETCH_OFF;
    t->input_why = "prepared by each worker before its step (parameter-server)";
  } else {
    choose_prefetch(t);
  }
  const char *blas = blas_setup(); /* one BLAS thread per rank, before any BLAS call */
  print_header(t, blas);
  /* parameter-server's workers take their own units (ps.c) */
  ok = t->o.strategy == STRATEGY_PARAMETER_SERVER ||
       loader_create(&t->data, &t->o, t->rank, t->size, t->epoch, t->offset, &t->loader) == 0;
  snprintf(err, sizeof err, "cannot start the input pipeline (no memory or no thread)");
  rc = trainer_agree(t, ok, err, sizeof err) != 0 ? TRAIN_EXIT_ERROR : 0;
out:
  free(params);
  free(velocity);
  return rc;
}
