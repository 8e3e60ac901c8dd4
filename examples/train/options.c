/* rondo-train's command line. Every rank reads its own; main.c agrees on the
 * outcome, so a typo on any rank exits every rank with status 2
 * (docs/train.md lists every flag). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "examples/train/train.h"
#include "tools/launch_env.h"

void train_usage(FILE *f)
{
  fprintf(f,
    "usage: mpiexec -n N rondo-train [OPTIONS]\n"
    "\n"
    "Trains an MLP by data-parallel SGD. Synchronous by default: every rank trains\n"
    "on its share of each global batch, and the all-reduced gradient updates the\n"
    "variables, which every rank holds (mirrored) or each node holds once\n"
    "(central-storage): N ranks train exactly like one rank with the global batch.\n"
    "With parameter-server, servers hold the variables and workers update them\n"
    "asynchronously (or synchronously with --staleness 0).\n"
    "\n"
    "data:\n"
    "  --dataset NAME          digits (UCI 8x8, shipped; default), fashion-mnist, synthetic\n"
    "  --data-dir DIR          where the dataset's files are (default: the shipped digits\n"
    "                          files; /usr/share/datasets/fashion-mnist)\n"
    "  --samples N             synthetic: training samples (default 20000; test: N/5)\n"
    "  --features F            synthetic: features per sample (default 256)\n"
    "  --classes C             synthetic: classes (default 10)\n"
    "model:\n"
    "  --hidden LIST           hidden layer widths, e.g. 256,128 (default); none for none\n"
    "  --seed S                initialization, shuffles, synthetic data (default 1)\n"
    "optimization:\n"
    "  --epochs N              epochs (default 20)\n"
    "  --batch B               global batch, split across ranks (default 64)\n"
    "  --lr X                  peak learning rate (default 0.05)\n"
    "  --momentum X            SGD momentum (default 0.9)\n"
    "  --weight-decay X        L2 penalty on weights, not biases (default 0.0005)\n"
    "  --schedule S            cosine (default), step or constant, after the warm-up\n"
    "  --warmup-epochs X       linear warm-up from 0 (default 1)\n"
    "  --step-epochs X         step: multiply the rate by --gamma every X epochs (default 10)\n"
    "  --gamma X               step: the factor (default 0.1)\n"
    "  --max-steps K           stop when the global step count reaches K\n"
    "communication:\n"
    "  --strategy NAME         mirrored (default: the variables on every rank),\n"
    "                          central-storage (one copy per node, updated once) or\n"
    "                          parameter-server (servers hold the variables; workers\n"
    "                          push gradients and get the variables back) or sharded\n"
    "                          (ZeRO: each rank keeps 1/N of the state, see --stage)\n"
    "  --stage S               sharded: 1 shards the momentum, 2 (default) the summed\n"
    "                          gradients too (reduce-scatter), 3 the variables too\n"
    "                          (each layer all-gathered before its use)\n"
    "  --servers K             parameter-server: the last K ranks serve (default: one\n"
    "                          per 5 ranks, at least 1)\n"
    "  --staleness S           parameter-server: a worker may run S steps ahead of the\n"
    "                          slowest; 0 is synchronous SGD; async (default): no bound\n"
    "  --allreduce ALGO        deterministic (default: bitwise-reproducible sums), auto,\n"
    "                          mpi, ring, recursive_doubling, rabenseifner, shm, hierarchical\n"
    "  --no-overlap            submit the gradients after backward, not during it\n"
    "  --prefetch MODE         prepare the next batch on a second thread: auto (when\n"
    "                          the node has a spare core per rank; default), on, off\n"
    "  --check-every K         compare the variables across ranks every K steps\n"
    "                          (default: at the end of every epoch)\n"
    "checkpoints:\n"
    "  --checkpoint FILE       rank 0 writes checkpoints to FILE\n"
    "  --checkpoint-every K    every K steps (default: every epoch), and at the end\n"
    "  --resume FILE           continue from a checkpoint, with any number of ranks\n"
    "  --inspect FILE          check a checkpoint and print its header, then exit\n"
    "output:\n"
    "  --json FILE             a JSON record per epoch and a final one (JSON lines)\n"
    "  --save-weights FILE     every variable at the end, little-endian float32\n"
    "  --progress MODE         auto (a bar when the terminal shows it), bar, none\n"
    "  -q, --quiet             only the final line\n"
    "  -h, --help              this text\n"
    "tests:\n"
    "  --debug-perturb R:K     after step K, rank R changes fc1.bias (the mirror check\n"
    "                          must stop the run)\n"
    "  --debug-slow R:MS       rank R sleeps MS milliseconds before each step (a\n"
    "                          straggler)\n"
    "\n"
    "Exit status: 0 done, 1 an error (every rank reports it), 2 bad usage,\n"
    "3 the variables diverged across ranks. docs/train.md has the details.\n");
}

static int bad(int print, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(int print, const char *fmt, ...)
{
  if (print) {
    va_list ap;
    va_start(ap, fmt);
    tool_vsay("rondo-train: ", "\n(rondo-train --help lists the options)\n", fmt, ap);
    va_end(ap);
  }
  return TRAIN_EXIT_USAGE;
}

/* A whole decimal integer in [lo, hi]. */
static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* A finite decimal number in [lo, hi]. */
static int parse_real(const char *s, double lo, double hi, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* The index of s in names[0..n), or -1. */
static int parse_word(const char *s, const char *const *names, int n)
{
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0)
      return i;
  return -1;
}

static const char *const datasets[] = {"digits", "fashion-mnist", "synthetic"};
/* In the order of schedule_t, progress_t and the PREFETCH_ values. */
static const char *const schedules[] = {"cosine", "step", "constant"};
static const char *const progresses[] = {"auto", "bar", "none"};
static const char *const prefetches[] = {"off", "on", "auto"};
static const char *const strategies[STRATEGY_COUNT] = {"mirrored", "central-storage",
                                                       "parameter-server", "sharded"};

const char *train_schedule_name(schedule_t s) { return schedules[s]; }
const char *train_strategy_name(strategy_t s) { return strategies[s]; }

static int parse_hidden(const char *s, train_opts_t *o)
{
  o->nhidden = 0;
  if (strcmp(s, "none") == 0)
    return 0;
  char buf[256];
  if (strlen(s) >= sizeof buf)
    return -1;
  strcpy(buf, s);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    long long w;
    if (o->nhidden == TRAIN_MAX_HIDDEN || parse_int(tok, 1, 1 << 20, &w) != 0)
      return -1;
    o->hidden[o->nhidden++] = (size_t)w;
  }
  /* "256,,128" and "256," leave empty tokens that strtok skips. */
  if (o->nhidden == 0 || strstr(s, ",,") != NULL || s[0] == ',' || s[strlen(s) - 1] == ',')
    return -1;
  return 0;
}

static int parse_algo(const char *s, train_opts_t *o)
{
  if (strcmp(s, "deterministic") == 0) {
    o->algo_deterministic = 1;
    o->algo = RONDO_ALGO_AUTO;
    return 0;
  }
  rondo_algo_t a;
  if (rondo_algo_from_name(s, &a) != RONDO_SUCCESS)
    return -1; /* whether it can run here is asked once the comm exists (setup.c) */
  o->algo_deterministic = 0;
  o->algo = a;
  return 0;
}

static void defaults(train_opts_t *o)
{
  memset(o, 0, sizeof *o);
  strcpy(o->dataset, "digits");
  o->samples = 20000;
  o->features = 256;
  o->classes = 10;
  o->hidden[0] = 256;
  o->hidden[1] = 128;
  o->nhidden = 2;
  o->seed = 1;
  o->epochs = 20;
  o->batch = 64;
  o->lr = 0.05;
  o->momentum = 0.9;
  o->weight_decay = 5e-4;
  o->schedule = SCHEDULE_COSINE;
  o->warmup_epochs = 1;
  o->step_epochs = 10;
  o->gamma = 0.1;
  o->algo_deterministic = 1;
  o->prefetch = PREFETCH_AUTO;
  o->overlap = 1;
  o->progress = PROGRESS_AUTO;
  o->perturb_rank = -1;
  o->slow_rank = -1;
  o->stage = 2;
  o->staleness = -1;
}

enum {
  OPT_DATASET = 256, OPT_DATA_DIR, OPT_SAMPLES, OPT_FEATURES, OPT_CLASSES, OPT_HIDDEN,
  OPT_SEED, OPT_EPOCHS, OPT_BATCH, OPT_LR, OPT_MOMENTUM, OPT_WD, OPT_SCHEDULE, OPT_WARMUP,
  OPT_STEP_EPOCHS, OPT_GAMMA, OPT_MAX_STEPS, OPT_STRATEGY, OPT_SERVERS, OPT_STALENESS, OPT_STAGE,
  OPT_ALLREDUCE, OPT_NO_OVERLAP, OPT_PREFETCH,
  OPT_CHECK_EVERY,
  OPT_CHECKPOINT, OPT_CHECKPOINT_EVERY, OPT_RESUME, OPT_INSPECT, OPT_JSON, OPT_SAVE_WEIGHTS,
  OPT_PROGRESS, OPT_PERTURB, OPT_SLOW,
};

static const struct option long_opts[] = {
  {"dataset", required_argument, NULL, OPT_DATASET},
  {"data-dir", required_argument, NULL, OPT_DATA_DIR},
  {"samples", required_argument, NULL, OPT_SAMPLES},
  {"features", required_argument, NULL, OPT_FEATURES},
  {"classes", required_argument, NULL, OPT_CLASSES},
  {"hidden", required_argument, NULL, OPT_HIDDEN},
  {"seed", required_argument, NULL, OPT_SEED},
  {"epochs", required_argument, NULL, OPT_EPOCHS},
  {"batch", required_argument, NULL, OPT_BATCH},
  {"lr", required_argument, NULL, OPT_LR},
  {"momentum", required_argument, NULL, OPT_MOMENTUM},
  {"weight-decay", required_argument, NULL, OPT_WD},
  {"schedule", required_argument, NULL, OPT_SCHEDULE},
  {"warmup-epochs", required_argument, NULL, OPT_WARMUP},
  {"step-epochs", required_argument, NULL, OPT_STEP_EPOCHS},
  {"gamma", required_argument, NULL, OPT_GAMMA},
  {"max-steps", required_argument, NULL, OPT_MAX_STEPS},
  {"strategy", required_argument, NULL, OPT_STRATEGY},
  {"servers", required_argument, NULL, OPT_SERVERS},
  {"staleness", required_argument, NULL, OPT_STALENESS},
  {"stage", required_argument, NULL, OPT_STAGE},
  {"allreduce", required_argument, NULL, OPT_ALLREDUCE},
  {"no-overlap", no_argument, NULL, OPT_NO_OVERLAP},
  {"prefetch", required_argument, NULL, OPT_PREFETCH},
  {"check-every", required_argument, NULL, OPT_CHECK_EVERY},
  {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
  {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
  {"resume", required_argument, NULL, OPT_RESUME},
  {"inspect", required_argument, NULL, OPT_INSPECT},
  {"json", required_argument, NULL, OPT_JSON},
  {"save-weights", required_argument, NULL, OPT_SAVE_WEIGHTS},
  {"progress", required_argument, NULL, OPT_PROGRESS},
  {"quiet", no_argument, NULL, 'q'},
  {"help", no_argument, NULL, 'h'},
  {"debug-perturb", required_argument, NULL, OPT_PERTURB},
  {"debug-slow", required_argument, NULL, OPT_SLOW},
  {NULL, 0, NULL, 0},
};

/* Checks that need several flags at once. */
static int check_combination(const train_opts_t *o, int print)
{
  /* (Resuming a synthetic run takes --dataset from the checkpoint.) */
  if ((o->set & (SET_SAMPLES | SET_FEATURES | SET_CLASSES)) &&
      strcmp(o->dataset, "synthetic") != 0 &&
      (o->resume == NULL || (o->set & SET_DATASET)))
    return bad(print, "--samples, --features and --classes are for --dataset synthetic");
  if (o->checkpoint_every > 0 && o->checkpoint == NULL)
    return bad(print, "--checkpoint-every needs --checkpoint FILE");
  if (o->strategy != STRATEGY_PARAMETER_SERVER && (o->servers > 0 || (o->set & SET_STALENESS)))
    return bad(print, "--servers and --staleness are for --strategy parameter-server");
  if (o->strategy != STRATEGY_SHARDED && (o->set & SET_STAGE))
    return bad(print, "--stage is for --strategy sharded");
  if (o->strategy == STRATEGY_PARAMETER_SERVER) {
    /* The workers do not meet between the epochs' ends (docs/train.md). */
    if (o->checkpoint_every > 0)
      return bad(print, "--checkpoint-every: parameter-server checkpoints at the end of "
                        "each epoch only");
    if (o->check_every > 0)
      return bad(print, "--check-every: parameter-server compares the variables at the end "
                        "of each epoch only");
  }
  /* Under central storage a node's ranks share the variables, so the
   * mirror check would not see a change on one node. */
  if (o->perturb_step > 0 && o->strategy != STRATEGY_MIRRORED)
    return bad(print, "--debug-perturb is for --strategy mirrored");
  return 0;
}

int train_parse(int argc, char **argv, train_opts_t *o, int print)
{
  defaults(o);
  long long v;
  double d;
  int c, w;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":qh", long_opts, NULL)) != -1) {
    const char *arg = optarg;
    switch (c) {
    case OPT_DATASET:
      o->set |= SET_DATASET;
      if (parse_word(arg, datasets, 3) < 0)
        return bad(print, "--dataset: '%s' is not digits, fashion-mnist or synthetic", arg);
      strcpy(o->dataset, arg);
      break;
    case OPT_DATA_DIR: o->data_dir = arg; break;
    case OPT_SAMPLES:
      o->set |= SET_SAMPLES;
      if (parse_int(arg, 1, 1LL << 31, &v) != 0)
        return bad(print, "--samples: '%s' is not a count from 1 to 2^31", arg);
      o->samples = (size_t)v;
      break;
    case OPT_FEATURES:
      o->set |= SET_FEATURES;
      if (parse_int(arg, 1, 1 << 20, &v) != 0)
        return bad(print, "--features: '%s' is not a count from 1 to 2^20", arg);
      o->features = (size_t)v;
      break;
    case OPT_CLASSES:
      o->set |= SET_CLASSES;
      if (parse_int(arg, 2, 65535, &v) != 0)
        return bad(print, "--classes: '%s' is not a count from 2 to 65535", arg);
      o->classes = (size_t)v;
      break;
    case OPT_HIDDEN:
      o->set |= SET_HIDDEN;
      if (parse_hidden(arg, o) != 0)
        return bad(print,
                   "--hidden: '%s' is not a comma-separated list of 1 to %d widths "
                   "(each 1 to 2^20), or none",
                   arg, TRAIN_MAX_HIDDEN);
      break;
    case OPT_SEED:
      o->set |= SET_SEED;
      if (parse_int(arg, 0, INT64_MAX, &v) != 0)
        return bad(print, "--seed: '%s' is not a non-negative integer", arg);
      o->seed = (uint64_t)v;
      break;
    case OPT_EPOCHS:
      o->set |= SET_EPOCHS;
      if (parse_int(arg, 1, 1000000, &v) != 0)
        return bad(print, "--epochs: '%s' is not a count from 1 to 1000000", arg);
      o->epochs = (int)v;
      break;
    case OPT_BATCH:
      o->set |= SET_BATCH;
      if (parse_int(arg, 1, 1 << 24, &v) != 0)
        return bad(print, "--batch: '%s' is not a count from 1 to 2^24", arg);
      o->batch = (size_t)v;
      break;
    case OPT_LR:
      o->set |= SET_LR;
      if (parse_real(arg, 0, 1e6, &d) != 0 || d <= 0)
        return bad(print, "--lr: '%s' is not a positive number", arg);
      o->lr = d;
      break;
    case OPT_MOMENTUM:
      o->set |= SET_MOMENTUM;
      if (parse_real(arg, 0, 1, &d) != 0 || d >= 1)
        return bad(print, "--momentum: '%s' is not a number in [0, 1)", arg);
      o->momentum = d;
      break;
    case OPT_WD:
      o->set |= SET_WEIGHT_DECAY;
      if (parse_real(arg, 0, 1, &d) != 0)
        return bad(print, "--weight-decay: '%s' is not a number in [0, 1]", arg);
      o->weight_decay = d;
      break;
    case OPT_SCHEDULE:
      o->set |= SET_SCHEDULE;
      if ((w = parse_word(arg, schedules, 3)) < 0)
        return bad(print, "--schedule: '%s' is not cosine, step or constant", arg);
      o->schedule = (schedule_t)w;
      break;
    case OPT_WARMUP:
      o->set |= SET_WARMUP;
      if (parse_real(arg, 0, 1e6, &d) != 0)
        return bad(print, "--warmup-epochs: '%s' is not a non-negative number", arg);
      o->warmup_epochs = d;
      break;
    case OPT_STEP_EPOCHS:
      o->set |= SET_STEP_EPOCHS;
      if (parse_real(arg, 0, 1e6, &d) != 0 || d <= 0)
        return bad(print, "--step-epochs: '%s' is not a positive number", arg);
      o->step_epochs = d;
      break;
    case OPT_GAMMA:
      o->set |= SET_GAMMA;
      if (parse_real(arg, 0, 1, &d) != 0 || d <= 0)
        return bad(print, "--gamma: '%s' is not a number in (0, 1]", arg);
      o->gamma = d;
      break;
    case OPT_MAX_STEPS:
      if (parse_int(arg, 1, INT64_MAX, &v) != 0)
        return bad(print, "--max-steps: '%s' is not a positive integer", arg);
      o->max_steps = v;
      break;
    case OPT_STRATEGY:
      if ((w = parse_word(arg, strategies, STRATEGY_COUNT)) < 0)
        return bad(print,
                   "--strategy: '%s' is not mirrored, central-storage, parameter-server or "
                   "sharded", arg);
      o->strategy = (strategy_t)w;
      break;
    case OPT_STAGE:
      if (parse_int(arg, 1, 3, &v) != 0)
        return bad(print, "--stage: '%s' is not 1, 2 or 3 (ZeRO's stages)", arg);
      o->set |= SET_STAGE;
      o->stage = (int)v;
      break;
    case OPT_SERVERS:
      if (parse_int(arg, 1, 1 << 20, &v) != 0)
        return bad(print, "--servers: '%s' is not a count from 1", arg);
      o->servers = (int)v;
      break;
    case OPT_STALENESS:
      if (strcmp(arg, "async") == 0)
        o->staleness = -1;
      else if (parse_int(arg, 0, 1 << 30, &v) == 0)
        o->staleness = v;
      else
        return bad(print, "--staleness: '%s' is not a number of steps from 0, or async", arg);
      o->set |= SET_STALENESS;
      break;
    case OPT_ALLREDUCE:
      if (parse_algo(arg, o) != 0)
        return bad(print,
                   "--allreduce: '%s' is not deterministic, auto or an algorithm "
                   "(rondo-info lists them)",
                   arg);
      break;
    case OPT_NO_OVERLAP: o->overlap = 0; break;
    case OPT_PREFETCH:
      if ((o->prefetch = parse_word(arg, prefetches, 3)) < 0)
        return bad(print, "--prefetch: '%s' is not auto, on or off", arg);
      break;
    case OPT_CHECK_EVERY:
      if (parse_int(arg, 1, INT64_MAX, &v) != 0)
        return bad(print, "--check-every: '%s' is not a positive number of steps", arg);
      o->check_every = v;
      break;
    case OPT_CHECKPOINT: o->checkpoint = arg; break;
    case OPT_CHECKPOINT_EVERY:
      if (parse_int(arg, 1, INT64_MAX, &v) != 0)
        return bad(print, "--checkpoint-every: '%s' is not a positive number of steps", arg);
      o->checkpoint_every = v;
      break;
    case OPT_RESUME: o->resume = arg; break;
    case OPT_INSPECT: o->inspect = arg; break;
    case OPT_JSON: o->json = arg; break;
    case OPT_SAVE_WEIGHTS: o->save_weights = arg; break;
    case OPT_PROGRESS:
      if ((w = parse_word(arg, progresses, 3)) < 0)
        return bad(print, "--progress: '%s' is not auto, bar or none", arg);
      o->progress = (progress_t)w;
      break;
    case 'q': o->quiet = 1; break;
    case 'h':
      o->help = 1;
      return 0;
    case OPT_PERTURB: {
      long long r, k;
      char buf[64], *colon;
      if (strlen(arg) >= sizeof buf || (colon = strchr(strcpy(buf, arg), ':')) == NULL)
        return bad(print, "--debug-perturb: '%s' is not RANK:STEP", arg);
      *colon = '\0';
      if (parse_int(buf, 0, 1 << 30, &r) != 0 || parse_int(colon + 1, 1, INT64_MAX, &k) != 0)
        return bad(print, "--debug-perturb: '%s' is not RANK:STEP", arg);
      o->perturb_rank = (int)r;
      o->perturb_step = k;
      break;
    }
    case OPT_SLOW: {
      long long r;
      char buf[64], *colon;
      if (strlen(arg) >= sizeof buf || (colon = strchr(strcpy(buf, arg), ':')) == NULL)
        return bad(print, "--debug-slow: '%s' is not RANK:MILLISECONDS", arg);
      *colon = '\0';
      if (parse_int(buf, 0, 1 << 30, &r) != 0 || parse_real(colon + 1, 0, 1e6, &d) != 0)
        return bad(print, "--debug-slow: '%s' is not RANK:MILLISECONDS", arg);
      o->slow_rank = (int)r;
      o->slow_ms = d;
      break;
    }
    case ':': return bad(print, "%s needs a value", argv[optind - 1]);
    default: return bad(print, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return bad(print, "unexpected argument '%s'", argv[optind]);
  return check_combination(o, print);
}
