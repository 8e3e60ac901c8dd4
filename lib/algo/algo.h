/*
 * The collective algorithms (one file each) and the point-to-point helpers
 * they share. Internal to librondo (prefix algo_).
 *
 * Contract for every all-reduce algorithm:
 *  - The arguments were validated and agreed on by every rank (lib/core),
 *    but for shm, which agrees in its first round (agree below).
 *  - op is SUM, MIN, MAX or PROD; AVG arrives as SUM and the caller finishes.
 *  - Any count >= 1 (count 0 never reaches an algorithm), any comm size,
 *    sendbuf == recvbuf for in place.
 *  - Every rank ends with identical bytes in recvbuf: each element's final
 *    value is either computed once and distributed, or computed by every rank
 *    with the same operands in the same order.
 *  - Traffic goes over the comm's private duplicate, so it never matches an
 *    application message.
 */
#ifndef RONDO_ALGO_H
#define RONDO_ALGO_H

#include "core/internal.h"

typedef struct {
  rondo_comm_t comm;
  const void *sendbuf; /* == recvbuf for in place */
  void *recvbuf;
  size_t count;
  rondo_dtype_t dtype;
  rondo_op_t op;       /* SUM, MIN, MAX or PROD */
  size_t esize;        /* bytes per element */
  /* shm only: the call's signature, not yet agreed on; the first round
   * posts it to the comm's argument board with its data (shm.c). NULL:
   * agreed before the call. */
  const rondo__sig_t *agree;
} algo_allreduce_args_t;

rondo_status_t algo_allreduce_mpi(const algo_allreduce_args_t *a);
rondo_status_t algo_allreduce_rd(const algo_allreduce_args_t *a);
rondo_status_t algo_allreduce_rabenseifner(const algo_allreduce_args_t *a);
rondo_status_t algo_allreduce_ring(const algo_allreduce_args_t *a);
rondo_status_t algo_allreduce_shm(const algo_allreduce_args_t *a);
rondo_status_t algo_allreduce_hier(const algo_allreduce_args_t *a);

/* Data movement and the other reductions (MPI-backed; see each file). */
rondo_status_t algo_broadcast(rondo_comm_t comm, void *buf, size_t bytes, int root);
rondo_status_t algo_allgather(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                              size_t bytes);
rondo_status_t algo_allgatherv(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                               const size_t *counts, const size_t *displs, size_t esize);
rondo_status_t algo_reduce_scatter(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                   size_t recvcount, rondo_dtype_t dtype, rondo_op_t op);
rondo_status_t algo_alltoall(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                             size_t bytes);
rondo_status_t algo_barrier(rondo_comm_t comm);

/* ---- helpers (lib/algo/p2p.c) ------------------------------------------------ */

/* The MPI datatype and op that compute rondo's semantics for (dtype, op):
 * built-ins where they match, user-defined ops over rondo's kernels for
 * float16/bfloat16, floating MIN/MAX (NaN and -0.0 rules) and uint8 MIN/MAX
 * (MPICH 4.0 compares MPI_UINT8_T as signed there). */
rondo_status_t algo_mpi_op(rondo_dtype_t dtype, rondo_op_t op, MPI_Datatype *mtype,
                           MPI_Op *mop);
/* Frees what algo_mpi_op created (called by rondo_finalize). */
void algo_mpi_op_free(void);

/* Byte messages on the comm's private communicator: any size with an MPI-4
 * library, up to INT_MAX bytes with MPI-3. An algorithm whose largest
 * message may not fit calls algo_check_message() before its first message,
 * so every rank (same count) fails the same way instead of some hanging. */
rondo_status_t algo_check_message(size_t bytes);
rondo_status_t algo_isend(rondo_comm_t comm, const void *buf, size_t bytes, int peer,
                          MPI_Request *req);
rondo_status_t algo_irecv(rondo_comm_t comm, void *buf, size_t bytes, int peer,
                          MPI_Request *req);
rondo_status_t algo_sendrecv(rondo_comm_t comm, const void *sbuf, size_t sbytes,
                             int dest, void *rbuf, size_t rbytes, int src);
/* Waits for n requests; yields the core between polls when the comm's node
 * is oversubscribed (comm->yield_waits). */
rondo_status_t algo_waitall(rondo_comm_t comm, int n, MPI_Request *reqs);

/* dst = lower-ranked data (op) higher-ranked data, so both partners of an
 * exchange compute the same bytes. mine/theirs are element buffers. */
void algo_reduce_ordered(void *dst, const void *mine, const void *theirs, size_t count,
                         const algo_allreduce_args_t *a, int peer);

/* Copies sendbuf to recvbuf unless in place. */
void algo_copy_input(const algo_allreduce_args_t *a);

/* ---- non-power-of-two folding (lib/algo/fold.c) -------------------------------
 * With rem = size - pof2, ranks below 2*rem pair up: the even rank sends its
 * whole buffer to the odd one and sits out; the odd one reduces. The pof2
 * remaining ranks get new ranks 0..pof2-1. fold_out returns the result to
 * the ranks that sat out. */
rondo_status_t algo_fold_in(const algo_allreduce_args_t *a, void *buf, void *tmp,
                            int *newrank);
rondo_status_t algo_fold_out(const algo_allreduce_args_t *a, void *buf, int newrank);
/* The real rank of new rank nr. */
int algo_fold_rank(const algo_allreduce_args_t *a, int nr);

#endif /* RONDO_ALGO_H */
