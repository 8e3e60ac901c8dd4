/*
 * rondo-train: data-parallel SGD, the variables mirrored on every rank,
 * stored once per node, or on parameter servers (docs/train.md). One header
 * for the trainer's parts:
 *
 *   options.c     the command line (every rank reads it; main.c agrees on it)
 *   data.c        datasets: UCI digits (shipped), Fashion-MNIST (IDX), synthetic
 *   loader.c      each epoch's shuffled order, this rank's slice of every global
 *                 batch, normalized on a prefetch thread
 *   model.c       the MLP: forward, softmax cross-entropy, backward (CBLAS)
 *   optim.c       SGD with momentum and weight decay, learning-rate schedules
 *   central.c     --strategy central-storage: one copy of the variables per node
 *   ps.c          --strategy parameter-server: servers hold the variables, workers push
 *   sharded.c     --strategy sharded: ZeRO's stages 1-3, each rank holds 1/N
 *   mirrored.c    --strategy mirrored's gradients and update (the default)
 *   strategy.c    the table of strategies: what each does where they differ
 *   checkpoint.c  atomic checkpoints with a checksum, and the weight file
 *   state.c       the whole variables: the mirror check, checkpoints, weights
 *   epoch.c       evaluation and an epoch's numbers, reduced across ranks
 *   report.c      epoch lines, the progress bar, JSON records
 *   main.c        the distributed loop: the step, epochs' ends, the run's end
 */
#ifndef RONDO_TRAIN_H
#define RONDO_TRAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rondo.h"

enum { TRAIN_MAX_HIDDEN = 8, TRAIN_MAX_LAYERS = TRAIN_MAX_HIDDEN + 1 };

/* Exit statuses (docs/train.md). */
enum {
  TRAIN_EXIT_OK = 0,
  TRAIN_EXIT_ERROR = 1,    /* a failed call, a bad file, a dataset that cannot load */
  TRAIN_EXIT_USAGE = 2,    /* a bad flag or value (on any rank) */
  TRAIN_EXIT_DIVERGED = 3, /* the mirrored variables differ across ranks */
};

typedef enum { SCHEDULE_COSINE, SCHEDULE_STEP, SCHEDULE_CONSTANT } schedule_t;
typedef enum { PROGRESS_AUTO, PROGRESS_BAR, PROGRESS_NONE } progress_t;
/* tf.distribute's names: MultiWorkerMirroredStrategy, CentralStorageStrategy,
 * ParameterServerStrategy */
typedef enum {
  STRATEGY_MIRRORED,
  STRATEGY_CENTRAL_STORAGE,
  STRATEGY_PARAMETER_SERVER,
  STRATEGY_SHARDED, /* ZeRO / FSDP: no tf.distribute counterpart */
  STRATEGY_COUNT
} strategy_t;
enum { PREFETCH_OFF, PREFETCH_ON, PREFETCH_AUTO };

/* Which options the command line set (train_opts_t.set): --resume takes the
 * others from the checkpoint. */
enum {
  SET_DATASET = 1 << 0, SET_SAMPLES = 1 << 1, SET_FEATURES = 1 << 2, SET_CLASSES = 1 << 3,
  SET_HIDDEN = 1 << 4, SET_SEED = 1 << 5, SET_EPOCHS = 1 << 6, SET_BATCH = 1 << 7,
  SET_LR = 1 << 8, SET_MOMENTUM = 1 << 9, SET_WEIGHT_DECAY = 1 << 10, SET_SCHEDULE = 1 << 11,
  SET_WARMUP = 1 << 12, SET_STEP_EPOCHS = 1 << 13, SET_GAMMA = 1 << 14,
  SET_STALENESS = 1 << 15, SET_STAGE = 1 << 16,
};

typedef struct {
  unsigned set;               /* SET_ bits */
  /* data */
  char dataset[16];           /* "digits", "fashion-mnist", "synthetic" */
  const char *data_dir;       /* NULL: the dataset's default place */
  size_t samples, features, classes; /* synthetic */
  /* model */
  size_t hidden[TRAIN_MAX_HIDDEN];
  int nhidden;
  uint64_t seed;
  /* optimization */
  int epochs;
  size_t batch;               /* global batch, split across ranks */
  double lr, momentum, weight_decay;
  schedule_t schedule;
  double warmup_epochs;
  double step_epochs, gamma;  /* step schedule: x gamma every step_epochs */
  long long max_steps;        /* 0: no limit */
  /* communication */
  strategy_t strategy;
  int servers;                /* parameter-server: server ranks; 0: the default */
  long long staleness;        /* parameter-server: steps a worker may lead; -1: unbounded */
  int stage;                  /* sharded: ZeRO's stage, 1-3 */
  int algo_deterministic;     /* --allreduce deterministic (the default) */
  rondo_algo_t algo;          /* otherwise the algorithm asked for */
  int prefetch;                /* PREFETCH_AUTO, _ON or _OFF; main.c resolves AUTO */
  int overlap;                /* submit each layer's gradients during backward */
  long long check_every;      /* steps between mirror checks; 0: every epoch */
  /* checkpoints and output */
  const char *checkpoint, *resume, *json, *save_weights;
  long long checkpoint_every;
  const char *inspect;        /* --inspect: print this checkpoint's header instead */
  progress_t progress;
  int quiet;
  int help;                   /* -h: print the usage instead */
  /* tests only (docs/train.md): perturb one variable on one rank */
  int perturb_rank;
  long long perturb_step;     /* 0: never */
  /* benchmarks and tests: rank slow_rank sleeps slow_ms before each step */
  int slow_rank;
  double slow_ms;
} train_opts_t;

/* Parses argv into *o: 0, or TRAIN_EXIT_USAGE after printing why (when
 * print is set). -h and --inspect only set o->help and o->inspect. */
int train_parse(int argc, char **argv, train_opts_t *o, int print);
void train_usage(FILE *f);
/* "cosine", "step", "constant" */
const char *train_schedule_name(schedule_t s);
/* "mirrored", "central-storage", "parameter-server", "sharded" */
const char *train_strategy_name(strategy_t s);

/* ---- data ---------------------------------------------------------------------- */

typedef struct {
  size_t n, features;
  uint8_t *x;   /* n x features raw values */
  uint16_t *y;  /* n labels < classes */
} split_t;

typedef struct {
  char name[16];
  size_t features, classes;
  split_t train, test;
  float *mean, *inv_std; /* per feature, from the training split */
  char source[256];      /* where it came from, for the header */
} dataset_t;

/* Loads the dataset named in o. On failure returns -1 with a message in err
 * that names the file and what is wrong. */
int data_load(const train_opts_t *o, dataset_t *d, char *err, size_t errlen);
void data_free(dataset_t *d);
/* Rows idx[0..n) of s, normalized, into x (n x features) and y. */
void data_gather(const dataset_t *d, const split_t *s, const uint32_t *idx, size_t n, float *x,
                 uint16_t *y);
/* The identity permutation shuffled for one epoch: the same on every rank. */
void data_shuffle(uint64_t seed, long long epoch, uint32_t *perm, size_t n);

/* ---- the loader: this rank's slice of each global batch -------------------------- */

typedef struct {
  long long epoch;   /* 0-based */
  size_t offset;     /* first sample of the batch in the epoch's order */
  size_t global;     /* samples in the global batch (short at the epoch's end) */
  size_t local;      /* this rank's share (may be 0) */
  size_t last;       /* 1 if this batch ends the epoch */
  float *x;          /* local x features, normalized */
  uint16_t *y;
} batch_t;

typedef struct loader loader_t;

/* Batches from (epoch, offset) to the end of epoch `epochs`, each split as
 * global / size rows, the first global % size ranks one more. With prefetch
 * the next batch is prepared on a second thread. */
int loader_create(const dataset_t *d, const train_opts_t *o, int rank, int size,
                  long long epoch, size_t offset, loader_t **out);
/* The next batch, or NULL at the end. Valid until the next call. */
const batch_t *loader_next(loader_t *l);
/* Seconds the caller waited in loader_next, and seconds spent preparing. */
void loader_times(loader_t *l, double *waited, double *prepared);
void loader_destroy(loader_t *l);
/* The split of a global batch: this rank's first row and row count. */
void loader_split(size_t global, int rank, int size, size_t *first, size_t *count);

/* ---- the model ------------------------------------------------------------------- */

/* One variable: its name ("fc2.weight") and where it is. */
typedef struct {
  char name[32];
  size_t offset, count; /* in floats, into params/grads/velocity */
  int is_weight;
} var_t;

typedef struct {
  int nlayers;                       /* fc1 .. fcL */
  size_t sizes[TRAIN_MAX_LAYERS + 1]; /* input, hidden..., classes */
  size_t nparams;
  float *params, *grads, *velocity;  /* nparams each; W1 b1 W2 b2 ... */
  float *W[TRAIN_MAX_LAYERS], *b[TRAIN_MAX_LAYERS];   /* views into params */
  float *dW[TRAIN_MAX_LAYERS], *db[TRAIN_MAX_LAYERS]; /* views into grads */
  size_t max_rows;
  float *act[TRAIN_MAX_LAYERS + 1];  /* act[0] = input, act[l] = layer l output */
  float *delta[2];                   /* gradients w.r.t. pre-activations */
  int nvars;                         /* 2 nlayers: fc1.weight, fc1.bias, ... */
  var_t vars[2 * TRAIN_MAX_LAYERS];
  int adopted;                       /* params and velocity are another's (mlp_adopt) */
  /* NULL, or called before layer l's forward (backward 0) and before its
   * backward (1): sharded.c's stage 3 points W[l-1] and b[l-1] at the
   * gathered weights there */
  void (*layer_hook)(int layer, int backward, void *user);
  void *hook_user;
} mlp_t;

int mlp_create(mlp_t *m, const size_t *sizes, int nsizes, size_t max_rows, uint64_t seed);
void mlp_destroy(mlp_t *m);
/* Logits of n rows of x (n <= max_rows); returns act[nlayers]. */
const float *mlp_forward(mlp_t *m, const float *x, size_t n);
/* Softmax cross-entropy of the last forward: sum of losses and correct
 * predictions over the n rows; the loss gradient goes to delta (summed over
 * rows, not averaged). */
void mlp_loss(mlp_t *m, const uint16_t *y, size_t n, double *loss_sum, size_t *correct);
/* Backward over the last forward's n rows, from the last layer to the
 * first. grad_ready(layer, user) runs as soon as a layer's dW and db are
 * final, so their all-reduce overlaps the rest of backward (NULL: no
 * call). n = 0 gives zero gradients. */
void mlp_backward(mlp_t *m, size_t n, void (*grad_ready)(int layer, void *user), void *user);
/* Moves the variables and the momentum to params and velocity (nparams
 * each, owned by the caller, which has filled them), freeing the model's
 * own: central.c's shared copy. */
void mlp_adopt(mlp_t *m, float *params, float *velocity);
/* "64-256-128-10" */
void mlp_shape(const size_t *sizes, int nsizes, char *buf, size_t len);

/* ---- the optimizer --------------------------------------------------------------- */

/* Learning rate at a point of training, in epochs (2.5 = halfway through the
 * third epoch): linear warm-up, then the schedule. */
double optim_lr(const train_opts_t *o, double epochs_done);
/* One SGD step on every variable: g = grad (+ weight_decay * w for weights),
 * v = momentum * v + g, w -= lr * v. */
void optim_step(mlp_t *m, float lr, float momentum, float weight_decay);
/* Where slice i of `parts` begins when n variables are updated in slices
 * (central storage's ranks, the parameter servers): slice i is
 * [optim_slice_start(n, i, parts), optim_slice_start(n, i + 1, parts)).
 * Slices start on a cache line (16 floats) and may be empty when n is
 * small. */
enum { OPTIM_SLICE_ALIGN = 16 };
size_t optim_slice_start(size_t n, int i, int parts);
/* The same step on the elements [lo, hi) of params only. */
void optim_step_range(mlp_t *m, float lr, float momentum, float weight_decay, size_t lo,
                      size_t hi);
/* The same step on the elements [lo, hi) of the model's variables, held
 * elsewhere: w, vel and g start at element lo (a parameter server's shard).
 * m gives only the layout (which elements are weights). */
void optim_step_slice(const mlp_t *m, float *w, float *vel, const float *g, size_t lo,
                      size_t hi, float lr, float momentum, float weight_decay);

/* ---- checkpoints ------------------------------------------------------------------ */

typedef struct {
  long long step;      /* global steps done */
  long long epoch;     /* epoch in progress */
  size_t offset;       /* samples of that epoch already used */
  uint64_t seed;       /* the RNG: shuffles are derived from (seed, epoch) */
  char dataset[16];
  size_t train_samples;
  int nsizes;
  size_t sizes[TRAIN_MAX_LAYERS + 1];
  /* the training configuration: --resume takes what the command line does
   * not set from here */
  size_t batch;
  int epochs;
  schedule_t schedule;
  double lr, momentum, weight_decay, warmup_epochs, step_epochs, gamma;
} ckpt_header_t;

/* Writes header + params + velocity to path atomically (a temporary file in
 * the same directory, fsync, rename, fsync of the directory). */
int ckpt_save(const char *path, const ckpt_header_t *h, const float *params,
              const float *velocity, size_t nparams, char *err, size_t errlen);
/* Reads and validates path (size, magic, version, checksum, sizes that agree
 * with each other). With params/velocity NULL only the header is returned;
 * otherwise they get malloc'ed copies of the variables and momentum. */
int ckpt_load(const char *path, ckpt_header_t *h, float **params, float **velocity,
              char *err, size_t errlen);
/* Opens path for reading if it is a regular file, without blocking on a
 * FIFO: the descriptor, or -1 with a message in err. */
int train_open_regular(const char *path, char *err, size_t errlen);
/* The whole of a regular file, NUL-terminated (malloc'ed; *len: its size),
 * or NULL with a message in err. */
unsigned char *train_slurp(const char *path, size_t *len, char *err, size_t errlen);
/* The variables as little-endian float32, layer by layer, W then b. */
int weights_save(const char *path, const float *params, size_t nparams, char *err,
                 size_t errlen);

/* ---- output ----------------------------------------------------------------------- */

typedef struct {
  long long epoch;            /* 1-based, for printing */
  int epochs;                 /* --epochs */
  int partial;                /* stopped by --max-steps inside the epoch */
  long long step;             /* global steps done */
  size_t steps_in_epoch, steps_done;
  double loss, train_acc, test_acc, test_loss;
  double seconds;             /* wall time of the epoch's steps */
  double samples;             /* trained this epoch, all ranks */
  double comm_wait;           /* share of step time blocked in rondo_wait (mean over ranks) */
  double comm_hidden;         /* share of all-reduce time overlapped with backward */
  double input_wait;          /* share of step time waiting for the next batch */
  double input_wait_ms, input_prep_ms; /* per step, mean over ranks */
  double lr;
  int size;
  /* the final record only: memory at the end of the run, in MiB */
  double rss_max, pss_max, pss_total; /* most of any rank, and all ranks' sum */
} epoch_stats_t;

typedef struct report report_t;

/* rank 0 writes; the others get a report that prints nothing. */
int report_create(const train_opts_t *o, int writer, report_t **out, char *err, size_t errlen);
void report_header(report_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void report_progress(report_t *r, long long epoch, size_t done, size_t total, double loss);
/* An epoch's line and JSON record: 0, or -1 with why the JSON record could
 * not be written in err. */
int report_epoch(report_t *r, const epoch_stats_t *s, char *err, size_t errlen);
/* The final line and JSON record: run holds the whole run's numbers (its
 * epoch field counts epochs), config is a JSON object's text, extra more
 * members of the record ("" for none). 0 or -1, as report_epoch. */
int report_final(report_t *r, const epoch_stats_t *run, const char *config_json,
                 const char *extra, char *err, size_t errlen);
void report_destroy(report_t *r);

/* This process's resident and proportional set sizes in MiB (shared pages
 * count in full in the first, divided among their users in the second);
 * -1 where /proc does not say. */
void train_memory(double *rss_mib, double *pss_mib);
/* Seconds on a monotonic clock. */
double train_now(void);
/* --debug-slow R:MS: on rank R, sleeps MS milliseconds (a straggler's
 * step); elsewhere returns at once. */
void train_straggle(const train_opts_t *o, int rank);
/* Formats an error message into err; returns -1 (the failure value). */
int train_error(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
