/*
 * --strategy central-storage: tf.distribute's CentralStorageStrategy across
 * MPI nodes. The variables and their momentum are stored once per node, in
 * a window the node's ranks share (MPI_Win_allocate_shared), instead of once
 * per rank as under mirrored.
 *
 * A step is mirrored's, but for the update:
 *   - every rank reads the node's copy in forward and backward, and computes
 *     the gradient of its share of the batch into its own buffer;
 *   - the gradients are all-reduced as under mirrored: the same requests and
 *     the same algorithm, so every rank gets the same bytes (within a node
 *     rondo's all-reduce sums them through the node's shared memory);
 *   - each of the node's L ranks then applies the optimizer to its 1/L of the
 *     node's copy, so the update is applied once per node, in 1/L of the time;
 *   - a barrier of the node's ranks ends the step: nobody reads the copy
 *     while a part of it is being updated.
 * The arithmetic per element is mirrored's, so the variables are the same
 * bits as mirrored's at any rank count (tests/train/central.sh).
 *
 * Why nobody still reads the copy when the update starts: a rank's
 * all-reduce of fc1's gradient completes only when every rank has submitted
 * it, and backward submits fc1's gradient after its last read of the
 * variables (mlp_backward). Evaluation and checkpoints read the copy after
 * the barrier.
 */
#include <string.h>

#include "examples/train/trainer.h"

int central_create(trainer_t *t)
{
  central_t *c = &t->central;
  size_t n = t->m.nparams;
  int node_id, L, l;
  MPI_Comm mpi;
  TRAINER_CHECK(t, rondo_comm_node_id(t->comm, &node_id));
  TRAINER_CHECK(t, rondo_comm_mpi(t->comm, &mpi));
  /* The node's ranks as rondo counts them (virtual nodes included): a rondo
   * comm for the barrier, which yields the core on an oversubscribed node,
   * and an MPI comm of our own for the window. */
  TRAINER_CHECK(t, rondo_comm_split(t->comm, node_id, t->rank, &c->node));
  if (MPI_Comm_split(mpi, node_id, t->rank, &c->mpi) != MPI_SUCCESS)
    trainer_die(t, "central-storage: MPI_Comm_split of the node failed");
  MPI_Comm_rank(c->mpi, &l);
  MPI_Comm_size(c->mpi, &L);
  /* Local rank 0 allocates both arrays, the momentum from the next cache
   * line after the variables; the others map its memory. */
  size_t at = (n + OPTIM_SLICE_ALIGN - 1) / OPTIM_SLICE_ALIGN * OPTIM_SLICE_ALIGN;
  float *base = NULL;
  MPI_Aint total = (MPI_Aint)((at + n) * sizeof(float)), bytes = l == 0 ? total : 0;
  int ok = MPI_Win_allocate_shared(bytes, sizeof(float), MPI_INFO_NULL, c->mpi, &base,
                                   &c->win) == MPI_SUCCESS;
  MPI_Aint got = 0;
  int unit;
  ok = ok && MPI_Win_shared_query(c->win, 0, &got, &unit, &base) == MPI_SUCCESS &&
       got == total;
  char err[1024];
  snprintf(err, sizeof err,
           "central-storage: cannot share %zu MiB of variables and momentum among the node's "
           "%d ranks (MPI_Win_allocate_shared)",
           2 * n * sizeof(float) >> 20, L);
  if (trainer_agree(t, ok, err, sizeof err) != 0) {
    central_destroy(t);
    return TRAIN_EXIT_ERROR;
  }
  /* A window's errors are fatal by default: the synchronisation calls on it
   * are not checked one by one. */
  MPI_Win_lock_all(MPI_MODE_NOCHECK, c->win);
  c->locked = 1;
  if (l == 0) { /* the variables every rank already holds (mirror_start) */
    memcpy(base, t->m.params, n * sizeof(float));
    memcpy(base + at, t->m.velocity, n * sizeof(float));
  }
  mlp_adopt(&t->m, base, base + at);
  c->lo = optim_slice_start(n, l, L);
  c->hi = optim_slice_start(n, l + 1, L);
  c->local_size = L;
  central_sync(t);
  return 0;
}

void central_sync(trainer_t *t)
{
  central_t *c = &t->central;
  if (c->local_size < 2)
    return;
  MPI_Win_sync(c->win); /* this rank's stores before the barrier */
  TRAINER_CHECK(t, rondo_barrier(c->node));
  MPI_Win_sync(c->win); /* the others' after it */
}

void central_update(trainer_t *t, float lr)
{
  central_t *c = &t->central;
  optim_step_range(&t->m, lr, (float)t->o.momentum, (float)t->o.weight_decay, c->lo, c->hi);
  central_sync(t);
}

void central_describe(const trainer_t *t, char *buf, size_t len)
{
  double mib = (double)(2 * t->m.nparams * sizeof(float)) / (1 << 20);
  snprintf(buf, len,
           "central-storage: the variables and momentum (%.1f MiB) once per node, %d node%s; "
           "the node's ranks update it in slices, rank 0's %d ranks 1/%d each",
           mib, t->nodes, t->nodes == 1 ? "" : "s", t->central.local_size,
           t->central.local_size);
}

/* After mlp_destroy or before: the model does not free what it adopted.
 * Frees whatever central_create made, also after it failed. */
void central_destroy(trainer_t *t)
{
  central_t *c = &t->central;
  if (c->locked)
    MPI_Win_unlock_all(c->win);
  c->locked = 0;
  if (c->win != MPI_WIN_NULL)
    MPI_Win_free(&c->win);
  if (c->mpi != MPI_COMM_NULL)
    MPI_Comm_free(&c->mpi);
  if (c->node != NULL)
    rondo_comm_destroy(&c->node);
}
