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

typedef struct {
  rondo_comm_t comm;
  int rank, size, nodes;
  train_opts_t o;
  rondo_algo_t algo;
  const char *algo_why, *input_why; /* for the header */
  int fresh;                        /* --resume F = --checkpoint F did not exist yet */
  dataset_t data;
  mlp_t m;
  report_t *rep;
  loader_t *loader;
  central_t central;
  ps_t ps;
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
} trainer_t;

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

/* setup.c: loads the data, builds and mirrors the model, resumes from a
 * checkpoint, prints the header and starts the input pipeline. 0, or the
 * exit status (TRAIN_EXIT_USAGE for an --allreduce algorithm that cannot
 * run on these ranks, TRAIN_EXIT_ERROR otherwise) after every rank learned
 * why. */
int trainer_setup(trainer_t *t);
/* The configuration as a JSON object's text. */
void trainer_config_json(const trainer_t *t, char *buf, size_t len);

/* central.c. central_create moves the variables and the momentum (already
 * the same on every rank) into the node's shared copy: 0, or -1 after every
 * rank learned why. Collective. */
int central_create(trainer_t *t);
/* The optimizer on this rank's slice of the copy, then central_sync. */
void central_update(trainer_t *t, float lr);
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
void ps_destroy(trainer_t *t);

#endif
