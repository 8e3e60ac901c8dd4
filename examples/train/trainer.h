/*
 * The trainer's state, shared by setup.c (everything before the first step:
 * data, model, checkpoint, configuration) and main.c (the loop). train.h
 * declares the building blocks both use.
 */
#ifndef RONDO_TRAINER_H
#define RONDO_TRAINER_H

#include "examples/train/train.h"

/* Sums over an epoch (or the run), per rank until reduced. steps: every
 * rank counts every global step. */
typedef struct {
  double loss, correct, samples;
  double step_time, comm_wait, comm_window, input_wait, input_prep;
  double steps;
} acc_t;

/* --strategy central-storage's shared copy (central.c) */
typedef struct {
  rondo_comm_t node;  /* this node's ranks (virtual nodes included) */
  MPI_Comm mpi;       /* the same ranks, for the window */
  MPI_Win win;        /* the variables, then the momentum; MPI_WIN_NULL: none */
  int locked;         /* MPI_Win_lock_all holds the window */
  int local_size;
  size_t lo, hi;      /* the elements this rank updates */
} central_t;

/* --strategy parameter-server's roles and state (ps.c) */
typedef struct {
  int servers, workers;      /* the last `servers` ranks serve, the others work */
  int server;                /* this rank's server number, or -1 on a worker */
  size_t *lo;                /* [servers + 1]: server s holds elements [lo[s], lo[s + 1]) */
  MPI_Comm mpi;              /* our own duplicate of the comm's */
  float *shard, *velocity;   /* a server's range of the variables, its momentum */
  float *sum, *in;           /* a server's sum of the step, one push */
  uint32_t *perm;            /* a worker's order of the epoch */
  long long perm_epoch;
  int64_t units;             /* the units this worker trained on, all epochs */
} ps_t;

/* --strategy sharded's shards and buffers (sharded.c). Variable i's shard
 * on rank r is elements [lo, lo + len) of it, split as the engine's
 * reduce-scatter splits count rows: count / N each, one more for the first
 * count % N ranks. A rank's shards of all variables lie one after another
 * in its shard arrays, variable i's from at[i]. */
typedef struct {
  int stage;                       /* 1, 2 or 3 */
  size_t lo[2 * TRAIN_MAX_LAYERS], len[2 * TRAIN_MAX_LAYERS], at[2 * TRAIN_MAX_LAYERS];
  size_t total;                    /* this rank's elements, all shards */
  float *velocity;                 /* the momentum's shards (every stage) */
  float *params;                   /* the variables' shards (stage 3) */
  float *layer[2];                 /* stage 3: a layer's gathered W then b, two layers */
  int held[2];                     /* the layer each holds, 0: none */
  rondo_request_t pending[2][2];   /* its gathers in flight */
} sharded_t;

typedef struct trainer trainer_t;

/* One row per strategy (strategy.c): whatever differs between them. A NULL
 * entry does mirrored's thing, or nothing. */
typedef struct {
  strategy_t id;
  /* After the mirrored start: the strategy's own state. 0, or the exit
   * status after every rank learned why. Collective. */
  int (*create)(trainer_t *t);
  /* A whole epoch in the strategy's own way (parameter-server): as
   * ps_epoch. NULL: main.c's steps, with the three hooks below. */
  void (*epoch)(trainer_t *t, acc_t *acc, int *partial);
  /* Backward has layer's gradients (1-based): start their reduction. */
  void (*grads_ready)(trainer_t *t, int layer);
  /* The step's reductions are done: seconds blocked, or -1 after printing
   * why (the engine fails them on every rank). */
  double (*wait_grads)(trainer_t *t);
  /* The optimizer at learning rate lr; the step's variables are ready for
   * the next forward when it returns. */
  void (*update)(trainer_t *t, float lr);
  /* The whole variables (velocity 0) or momentum (1), nparams floats, on
   * every rank: the model's own array, or one malloc'ed that the caller
   * frees. NULL: the model's own arrays hold both. Collective. */
  float *(*whole)(trainer_t *t, int velocity);
  /* The header's strategy line, after "strategy   ". */
  void (*describe)(const trainer_t *t, char *buf, size_t len);
  /* More members of the final JSON record ("" for none). Collective. */
  void (*final_json)(trainer_t *t, char *buf, size_t len);
  /* Frees what create made, also after it failed. */
  void (*destroy)(trainer_t *t);
} strategy_ops_t;

/* The row of a strategy. */
const strategy_ops_t *strategy_row(strategy_t id);

struct trainer {
  rondo_comm_t comm;
  int rank, size, nodes;
  train_opts_t o;
  const strategy_ops_t *strategy;
  rondo_algo_t algo;                /* the gradients' all-reduce */
  rondo_algo_t rs_algo;             /* sharded's reduce-scatter of them (setup.c) */
  const char *algo_why, *input_why; /* for the header */
  int fresh;                        /* --resume F = --checkpoint F did not exist yet */
  dataset_t data;
  mlp_t m;
  report_t *rep;
  loader_t *loader;
  central_t central;
  ps_t ps;
  sharded_t sharded;
  /* the step in flight */
  rondo_async_opts_t ropts;
  rondo_request_t req[2 * TRAIN_MAX_LAYERS];
  double done_at[2 * TRAIN_MAX_LAYERS];
  double first_submit;
  int nreq;
  /* evaluation buffers */
  float *ex;
  uint16_t *ey;
  uint32_t *eidx;
  /* where training is: steps done, and the next batch's (epoch, offset) */
  long long step, epoch;
  size_t offset;
  epoch_stats_t last;
  double seen_wait, seen_prep; /* the loader's running totals at the last epoch end */
  double train_seconds;        /* the epochs' step time, without evaluation */
  long long checked_at, saved_at; /* the step of the last mirror check and checkpoint */
  long long evaluated_at;         /* the step of the last test-set evaluation */
};

/* An error this rank cannot share with the others: ends the whole job. */
void trainer_die(const trainer_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#define TRAINER_CHECK(t, call)                                                             \
  do {                                                                                     \
    if ((call) != RONDO_SUCCESS)                                                           \
      trainer_die(t, "%s failed: %s", #call, rondo_last_error());                          \
  } while (0)

/* Every rank says whether its part worked (ok). If any failed, every rank
 * gets the message of the lowest failing rank in msg, prints it and returns
 * -1; otherwise 0. */
int trainer_agree(trainer_t *t, int ok, char *msg, size_t len);

/* state.c: the variables compared across ranks (-1 after every rank
 * printed which differ), a checkpoint written by rank 0 and the weight
 * file (0, or -1 after every rank learned why). Collective. */
int trainer_mirror_check(trainer_t *t);
int trainer_save_checkpoint(trainer_t *t);
int trainer_save_weights(trainer_t *t);

/* epoch.c: the test set evaluated (unless this step's numbers are fresh)
 * and every rank's sums in acc reduced into s: an epoch's line, or with
 * the run's totals the final one. Collective. */
void trainer_reduce_epoch(trainer_t *t, acc_t *acc, double seconds, int partial,
                          long long epoch, epoch_stats_t *s);
void trainer_acc_add(acc_t *to, const acc_t *from);

/* setup.c: loads the data, builds and mirrors the model, resumes from a
 * checkpoint, prints the header and starts the input pipeline. 0, or the
 * exit status (TRAIN_EXIT_USAGE for an --allreduce algorithm that cannot
 * run on these ranks, TRAIN_EXIT_ERROR otherwise) after every rank learned
 * why. */
int trainer_setup(trainer_t *t);
/* The configuration as a JSON object's text. */
void trainer_config_json(const trainer_t *t, char *buf, size_t len);

/* mirrored.c: mirrored's gradients (one all-reduce request per variable,
 * submitted as backward produces it) and update; central-storage reuses
 * the first two. */
void mirrored_grads_ready(trainer_t *t, int layer);
double mirrored_wait_grads(trainer_t *t);
void mirrored_update(trainer_t *t, float lr);
void mirrored_describe(const trainer_t *t, char *buf, size_t len);
/* Waits for n requests: seconds blocked, or -1 after printing the first
 * failure (what names the step and says which collective). */
double trainer_wait(trainer_t *t, rondo_request_t *req, int n, const char *what);
/* The engine callback that stamps the completion time into *user. */
void trainer_on_done(rondo_request_t req, rondo_status_t st, void *user);

/* sharded.c. sharded_create cuts every variable's momentum (and at stage
 * 3 the variable) into this rank's shard and frees the rest: 0, or
 * TRAIN_EXIT_USAGE after every rank learned why (a variable with fewer
 * elements than ranks). Collective. */
int sharded_create(trainer_t *t);
void sharded_grads_ready(trainer_t *t, int layer);
double sharded_wait_grads(trainer_t *t);
void sharded_update(trainer_t *t, float lr);
float *sharded_whole(trainer_t *t, int velocity);
void sharded_describe(const trainer_t *t, char *buf, size_t len);
void sharded_destroy(trainer_t *t);

/* central.c. central_create moves the variables and the momentum (already
 * the same on every rank) into the node's shared copy: 0, or -1 after every
 * rank learned why. Collective. */
int central_create(trainer_t *t);
/* The optimizer on this rank's slice of the copy, then central_sync. */
void central_update(trainer_t *t, float lr);
void central_describe(const trainer_t *t, char *buf, size_t len);
/* Every rank of the node has written what it writes and sees the others'. */
void central_sync(trainer_t *t);
void central_destroy(trainer_t *t);

/* ps.c. The number of server ranks (--servers, or the default). */
int ps_servers(const trainer_t *t);
/* ps_create gives each server its range of the variables and momentum
 * (already the same on every rank): 0, or the exit status after every rank
 * learned why (TRAIN_EXIT_USAGE for a layout with no worker). Collective. */
int ps_create(trainer_t *t);
/* One epoch from (t->epoch, t->offset), or up to --max-steps: the workers
 * train and push, the servers apply; then every rank holds the variables,
 * and rank 0 the momentum. Sums this rank's numbers into acc and advances
 * t->step, t->epoch and t->offset; *partial: stopped by --max-steps inside
 * the epoch. Collective at its end. */
void ps_epoch(trainer_t *t, acc_t *acc, int *partial);
/* For the header: the roles, in a sentence. */
void ps_describe(const trainer_t *t, char *buf, size_t len);
/* "units_per_rank":[...]: each rank's units of work (servers: 0). */
void ps_final_json(trainer_t *t, char *buf, size_t len);
void ps_destroy(trainer_t *t);

#endif
