/*
 * rondo-train: synchronous data-parallel SGD with mirrored variables.
 *
 *   mpiexec -n 2 rondo-train                       digits, the defaults
 *   mpiexec -n 4 rondo-train --dataset fashion-mnist --hidden 512,256 --epochs 30
 *
 * Every rank holds the same variables (rank 0's initial values are
 * broadcast), trains on its share of each global batch, and submits each
 * layer's gradients to the engine as soon as backward has them, so their
 * all-reduce overlaps the rest of backward. The step waits only before the
 * update; the summed gradient is divided by the true number of samples in
 * the global batch, and every rank applies the same update. N ranks
 * therefore train like one rank with the global batch, up to the order of
 * float32 sums (docs/train.md states the bound the tests assert).
 *
 * That is the default strategy, mirrored (mirrored.c). The others are rows
 * of strategy.c's table: central.c stores the variables once per node with
 * the same step, sharded.c keeps 1/N of the state per rank (ZeRO), and
 * ps.c runs the parameter-server strategy's epochs (docs/train.md,
 * "Strategies").
 *
 * This file is the loop; setup.c is everything before the first step,
 * state.c the whole variables (mirror checks, checkpoints) and epoch.c an
 * epoch's numbers.
 * Failures are collective: a rank that cannot load a file or write a
 * checkpoint tells the others (trainer_agree()), and every rank stops with
 * the same message. So does a bad command line, on any rank: every rank
 * exits with status 2 (tools/launch_env.h).
 */
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "examples/train/trainer.h"
#include "tools/launch_env.h"

void trainer_die(const trainer_t *t, const char *fmt, ...)
{
  va_list ap;
  char head[64];
  snprintf(head, sizeof head, "rondo-train: rank %d: ", t->rank);
  va_start(ap, fmt);
  tool_vsay(head, "\n", fmt, ap);
  va_end(ap);
  MPI_Abort(MPI_COMM_WORLD, TRAIN_EXIT_ERROR);
  exit(TRAIN_EXIT_ERROR);
}

int trainer_agree(trainer_t *t, int ok, char *msg, size_t len)
{
  int32_t mine = ok ? t->size : t->rank, first;
  TRAINER_CHECK(t, rondo_allreduce(t->comm, &mine, &first, 1, RONDO_INT32, RONDO_MIN));
  if (first == t->size)
    return 0;
  TRAINER_CHECK(t, rondo_broadcast(t->comm, msg, len, RONDO_INT8, first));
  msg[len - 1] = '\0';
  if (first == t->rank)
    fprintf(stderr, "rondo-train: rank %d: %s\n", t->rank, msg);
  else
    fprintf(stderr, "rondo-train: rank %d: stopping: rank %d reports: %s\n", t->rank, first, msg);
  fflush(stderr);
  return -1;
}

/* Called by backward as soon as layer l's dW and db are final. */
static void on_grad_ready(int layer, void *user)
{
  trainer_t *t = user;
  t->strategy->grads_ready(t, layer);
}

/* ---- one step -------------------------------------------------------------------- */

/* The step's phases in the engine's timeline, while one runs (RONDO_TIMELINE;
 * bench/step_breakdown.py reads them): "step" (forward begins), "backward",
 * "gradients ready" (backward's compute is done), "gradients reduced" (the
 * last all-reduce waited for), "updated" (the optimizer is done). */
static int train_step(trainer_t *t, const batch_t *b, acc_t *acc)
{
  double loss = 0;
  size_t correct = 0;
  train_straggle(&t->o, t->rank);
  rondo_timeline_mark(t->comm, "step");
  /* also without rows: stage 3 of sharded gathers each layer's weights there */
  mlp_forward(&t->m, b->x, b->local);
  mlp_loss(&t->m, b->y, b->local, &loss, &correct);
  t->ropts.postscale = 1.0 / (double)b->global;
  rondo_timeline_mark(t->comm, "backward");
  if (t->o.overlap) {
    mlp_backward(&t->m, b->local, on_grad_ready, t);
  } else { /* --no-overlap: every gradient after backward, last layer first */
    mlp_backward(&t->m, b->local, NULL, NULL);
    for (int l = t->m.nlayers; l >= 1; l--)
      on_grad_ready(l, t);
  }
  rondo_timeline_mark(t->comm, "gradients ready");
  double waited = t->strategy->wait_grads(t);
  if (waited < 0)
    return -1;
  rondo_timeline_mark(t->comm, "gradients reduced");
  double last_done = t->first_submit;
  for (int i = 0; i < t->m.nvars && t->size > 1; i++)
    last_done = t->done_at[i] > last_done ? t->done_at[i] : last_done;
  double epochs_seen = (double)b->epoch + (double)(b->offset + b->global) / (double)t->data.train.n;
  double lr = optim_lr(&t->o, epochs_seen);
  t->strategy->update(t, (float)lr);
  rondo_timeline_mark(t->comm, "updated");
  acc->loss += loss;
  acc->correct += (double)correct;
  acc->samples += (double)b->local;
  acc->comm_wait += waited;
  acc->comm_window += last_done - t->first_submit;
  acc->steps += 1;
  t->last.lr = lr;
  return 0;
}

/* ---- the loop ------------------------------------------------------------------ */

static int end_epoch(trainer_t *t, acc_t *acc, acc_t *total, double t_start, long long epoch,
                     int partial)
{
  double waited = 0, prepared = 0;
  if (t->loader != NULL) /* parameter-server's workers have none */
    loader_times(t->loader, &waited, &prepared);
  acc->input_wait = waited - t->seen_wait;
  acc->input_prep = prepared - t->seen_prep;
  t->seen_wait = waited;
  t->seen_prep = prepared;
  trainer_reduce_epoch(t, acc, train_now() - t_start, partial, epoch, &t->last);
  t->train_seconds += t->last.seconds;
  char err[1024] = "";
  int ok = report_epoch(t->rep, &t->last, err, sizeof err) == 0;
  if (trainer_agree(t, ok, err, sizeof err) != 0)
    return TRAIN_EXIT_ERROR;
  trainer_acc_add(total, acc);
  memset(acc, 0, sizeof *acc);
  if (!partial && t->o.check_every == 0 && trainer_mirror_check(t) != 0)
    return TRAIN_EXIT_DIVERGED;
  if (!partial && t->o.checkpoint != NULL && t->o.checkpoint_every == 0 &&
      trainer_save_checkpoint(t) != 0)
    return TRAIN_EXIT_ERROR;
  return 0;
}

static int train_loop(trainer_t *t, acc_t *total)
{
  acc_t acc = {0};
  double t_start = 0;
  size_t n = t->data.train.n, steps_per_epoch = (n + t->o.batch - 1) / t->o.batch;
  const batch_t *b;
  int rc;
  while (!(t->o.max_steps > 0 && t->step >= t->o.max_steps)) {
    double t0 = train_now();
    if ((b = loader_next(t->loader)) == NULL)
      break;
    if (acc.steps == 0)
      t_start = t0;
    if (train_step(t, b, &acc) != 0)
      return TRAIN_EXIT_ERROR;
    acc.step_time += train_now() - t0;
    t->step++;
    t->epoch = b->last ? b->epoch + 1 : b->epoch;
    t->offset = b->last ? 0 : b->offset + b->global;
    if (t->o.perturb_step == t->step && t->o.perturb_rank == t->rank)
      t->m.b[0][0] += 1e-3f;
    if (t->o.check_every > 0 && t->step % t->o.check_every == 0 && trainer_mirror_check(t) != 0)
      return TRAIN_EXIT_DIVERGED;
    if (t->o.checkpoint_every > 0 && t->step % t->o.checkpoint_every == 0 &&
        trainer_save_checkpoint(t) != 0)
      return TRAIN_EXIT_ERROR;
    int stop = t->o.max_steps > 0 && t->step >= t->o.max_steps;
    if (b->last || stop) {
      if ((rc = end_epoch(t, &acc, total, t_start, b->epoch, !b->last)) != 0)
        return rc;
    } else {
      size_t done = b->offset / t->o.batch + 1;
      report_progress(t->rep, b->epoch + 1, done, steps_per_epoch,
                      acc.samples > 0 ? acc.loss / acc.samples : 0);
    }
  }
  return 0;
}

/* A strategy that runs whole epochs its own way (parameter-server: the
 * workers and servers, ps.c): every rank meets at each epoch's end. */
static int train_loop_epochs(trainer_t *t, acc_t *total)
{
  int rc;
  while (t->epoch < t->o.epochs && !(t->o.max_steps > 0 && t->step >= t->o.max_steps)) {
    acc_t acc = {0};
    long long epoch = t->epoch;
    int partial;
    double t0 = train_now();
    t->strategy->epoch(t, &acc, &partial);
    if ((rc = end_epoch(t, &acc, total, t0, epoch, partial)) != 0)
      return rc;
  }
  return 0;
}

static int finish(trainer_t *t, acc_t *total)
{
  /* The last epoch's end may have done both already. */
  int rc = t->checked_at != t->step && trainer_mirror_check(t) != 0 ? TRAIN_EXIT_DIVERGED : 0;
  if (rc == 0 && t->o.checkpoint != NULL && t->saved_at != t->step && trainer_save_checkpoint(t) != 0)
    rc = TRAIN_EXIT_ERROR;
  if (rc == 0 && t->o.save_weights != NULL && trainer_save_weights(t) != 0)
    rc = TRAIN_EXIT_ERROR;
  if (rc != 0)
    return rc;
  epoch_stats_t run;
  trainer_reduce_epoch(t, total, t->train_seconds, 0, 0, &run);
  run.step = t->step;
  double mem[3], most[3], sum;
  train_memory(&mem[0], &mem[1]);
  mem[2] = -mem[1]; /* its maximum: minus the least */
  TRAINER_CHECK(t, rondo_allreduce(t->comm, mem, most, 3, RONDO_FLOAT64, RONDO_MAX));
  TRAINER_CHECK(t, rondo_allreduce(t->comm, &mem[1], &sum, 1, RONDO_FLOAT64, RONDO_SUM));
  int unknown = -most[2] < 0; /* -1 on some rank */
  run.rss_max = most[0];
  run.pss_max = unknown ? -1 : most[1];
  run.pss_total = unknown ? -1 : sum;
  char config[2048], extra[4096] = "";
  trainer_config_json(t, config, sizeof config);
  if (t->strategy->final_json != NULL) /* parameter-server: how the units fell */
    t->strategy->final_json(t, extra, sizeof extra);
  char err[1024] = "";
  int ok = report_final(t->rep, &run, config, extra, err, sizeof err) == 0;
  return trainer_agree(t, ok, err, sizeof err) != 0 ? TRAIN_EXIT_ERROR : 0;
}

static int train(trainer_t *t)
{
  acc_t total = {0};
  int rc = trainer_setup(t);
  rondo_async_opts_t ro = RONDO_ASYNC_OPTS_INIT;
  t->ropts = ro;
  t->ropts.callback = trainer_on_done;
  t->ropts.algo = t->algo;
  if (rc == 0)
    rc = t->strategy->epoch != NULL ? train_loop_epochs(t, &total) : train_loop(t, &total);
  if (rc == 0)
    rc = finish(t, &total);
  loader_destroy(t->loader);
  report_destroy(t->rep);
  if (t->strategy->destroy != NULL)
    t->strategy->destroy(t);
  mlp_destroy(&t->m);
  data_free(&t->data);
  free(t->ex);
  free(t->ey);
  free(t->eidx);
  return rc;
}

/* --inspect: rank 0 prints a checkpoint's header, a user's way to see where a
 * run stopped; every rank exits with its outcome. */
static int inspect(trainer_t *t)
{
  ckpt_header_t h;
  char err[1024] = "", shape[128];
  int ok = t->rank != 0 || ckpt_load(t->o.inspect, &h, NULL, NULL, err, sizeof err) == 0;
  if (trainer_agree(t, ok, err, sizeof err) != 0)
    return TRAIN_EXIT_ERROR;
  if (t->rank != 0)
    return TRAIN_EXIT_OK;
  mlp_shape(h.sizes, h.nsizes, shape, sizeof shape);
  printf("%s: rondo-train checkpoint, checksum ok\n"
         "  step %lld, epoch %lld, %zu samples into it\n"
         "  model %s on %s (%zu training samples), seed %llu, global batch %zu\n"
         "  lr %g, momentum %g, weight decay %g\n",
         t->o.inspect, h.step, h.epoch + 1, h.offset, shape, h.dataset, h.train_samples,
         (unsigned long long)h.seed, h.batch, h.lr, h.momentum, h.weight_decay);
  return TRAIN_EXIT_OK;
}

int main(int argc, char **argv)
{
  trainer_t t;
  memset(&t, 0, sizeof t);
#ifdef M_MMAP_THRESHOLD
  /* Arrays from 128 KiB are mapped and given back when freed: glibc would
   * otherwise raise the threshold after the first such free (sharded.c's
   * whole arrays), and the memory figures would keep what was freed. */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
  t.checked_at = t.saved_at = t.evaluated_at = -1;
  /* Read quietly: only the lowest rank that failed prints why (below). */
  int status = train_parse(argc, argv, &t.o, 0), print;
  t.strategy = strategy_row(t.o.strategy);
  if (tool_init("rondo-train", &argc, &argv) != 0)
    return TRAIN_EXIT_ERROR;
  t.comm = rondo_world();
  if (rondo_comm_rank(t.comm, &t.rank) != RONDO_SUCCESS ||
      rondo_comm_size(t.comm, &t.size) != RONDO_SUCCESS ||
      rondo_comm_node_count(t.comm, &t.nodes) != RONDO_SUCCESS) {
    fprintf(stderr, "rondo-train: %s\n", rondo_last_error());
    rondo_finalize();
    return TRAIN_EXIT_ERROR;
  }
  /* Every rank must do the same: train, print the usage, or inspect. */
  uint32_t mode = t.o.help ? 1 : t.o.inspect != NULL ? 2 : 0;
  int rc = tool_agree("rondo-train", status, mode, &print);
  if (rc != 0) {
    if (print)
      train_parse(argc, argv, &t.o, 1);
  } else if (t.o.help) {
    if (t.rank == 0)
      train_usage(stdout);
  } else if (t.o.inspect != NULL) {
    rc = inspect(&t);
  } else {
    rc = train(&t);
  }
  fflush(stdout);
  rondo_finalize();
  return rc;
}
