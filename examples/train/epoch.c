/*
 * An epoch's numbers: the test set evaluated (every rank its share), and
 * every rank's sums reduced into the epoch's line (or the run's final one).
 */
#include <string.h>

#include "examples/train/trainer.h"

/* Every rank runs as many forward passes as the largest share needs (some
 * without rows): under sharded's stage 3 each one gathers the weights. */
static void evaluate(trainer_t *t, double *correct, double *loss, double *n)
{
  const split_t *s = &t->data.test;
  size_t first, count, most = (s->n + (size_t)t->size - 1) / (size_t)t->size;
  loader_split(s->n, t->rank, t->size, &first, &count);
  *correct = *loss = 0;
  *n = (double)count;
  for (size_t done = 0; done < most; done += t->m.max_rows) {
    size_t left = count > done ? count - done : 0;
    size_t rows = left < t->m.max_rows ? left : t->m.max_rows;
    for (size_t i = 0; i < rows; i++)
      t->eidx[i] = (uint32_t)(first + done + i);
    data_gather(&t->data, s, t->eidx, rows, t->ex, t->ey);
    mlp_forward(&t->m, t->ex, rows);
    double l;
    size_t c;
    mlp_loss(&t->m, t->ey, rows, &l, &c);
    *loss += l;
    *correct += (double)c;
  }
}

void trainer_reduce_epoch(trainer_t *t, acc_t *acc, double seconds, int partial, long long epoch,
                         epoch_stats_t *s)
{
  /* The test set is evaluated once per step: the final summary, right after
   * the last epoch's end, reuses that epoch's numbers. */
  int fresh = t->evaluated_at != t->step;
  double tc = 0, tl = 0, tn = 0, test_acc = t->last.test_acc, test_loss = t->last.test_loss;
  if (fresh)
    evaluate(t, &tc, &tl, &tn);
  double v[] = {acc->loss, acc->correct, acc->samples, acc->step_time, acc->comm_wait,
                acc->comm_window, acc->input_wait, acc->input_prep, acc->steps, tc, tl, tn};
  TRAINER_CHECK(t, rondo_allreduce(t->comm, v, v, sizeof v / sizeof v[0], RONDO_FLOAT64, RONDO_SUM));
  TRAINER_CHECK(t, rondo_allreduce(t->comm, &seconds, &seconds, 1, RONDO_FLOAT64, RONDO_MAX));
  size_t n = t->data.train.n, B = t->o.batch;
  double steps = v[8] / t->size, lr = t->last.lr; /* every rank counted every step */
  memset(s, 0, sizeof *s);
  s->epoch = epoch + 1;
  s->epochs = t->o.epochs;
  s->partial = partial;
  s->step = t->step;
  s->steps_in_epoch = (n + B - 1) / B;
  s->steps_done = (size_t)steps;
  s->loss = v[2] > 0 ? v[0] / v[2] : 0;
  s->train_acc = v[2] > 0 ? v[1] / v[2] : 0;
  s->test_acc = !fresh ? test_acc : v[11] > 0 ? v[9] / v[11] : 0;
  s->test_loss = !fresh ? test_loss : v[11] > 0 ? v[10] / v[11] : 0;
  t->evaluated_at = t->step;
  s->seconds = seconds;
  s->samples = v[2];
  s->comm_wait = v[3] > 0 ? v[4] / v[3] : 0;
  s->comm_hidden = v[5] > 0 ? 1 - v[4] / v[5] : 0;
  s->comm_hidden = s->comm_hidden < 0 ? 0 : s->comm_hidden;
  s->input_wait = v[3] > 0 ? v[6] / v[3] : 0;
  s->input_wait_ms = steps > 0 ? 1e3 * v[6] / v[8] : 0;
  s->input_prep_ms = steps > 0 ? 1e3 * v[7] / v[8] : 0;
  s->lr = lr;
  s->size = t->size;
}

void trainer_acc_add(acc_t *to, const acc_t *from)
{
  to->loss += from->loss;
  to->correct += from->correct;
  to->samples += from->samples;
  to->step_time += from->step_time;
  to->comm_wait += from->comm_wait;
  to->comm_window += from->comm_window;
  to->input_wait += from->input_wait;
  to->input_prep += from->input_prep;
  to->steps += from->steps;
}
