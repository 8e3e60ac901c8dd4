/*
 * The shared-memory engine under allreduce_shm.c and allreduce_hier.c: one
 * MPI-3 shared window per comm's node, made on first use and kept until the
 * comm is destroyed. Internal (prefix shm_).
 *
 * Each local rank owns a segment of the window: three flag words and the
 * offset of its input when the others read it in place (a reduce-scatter
 * or all-gather on rondo_mem_alloc memory: shm.c), each on its own cache
 * line, then SHM_SLOTS slots of RONDO_SHM_CHUNK_BYTES. A buffer
 * is cut into G slices (topo_slice; local rank r owns slices r, r+L, ...,
 * see topo.h) and processed in rounds: round k moves piece k of every slice
 * (piece = slot / G elements). Every round has a sequence number s, the same
 * on all ranks, and uses slot s % SHM_SLOTS. A rank
 *   - copies its pieces of round k into its slot and publishes posted = s
 *     (in a reduction, only the pieces other ranks own: its own it reduces
 *     straight from sendbuf; in place, a local rank from 2 on copies those
 *     too, shm.c says why),
 *   - reduces each piece it owns across all ranks' inputs, in rank order,
 *     into its recvbuf and, for an all-reduce, copies the result into its
 *     slot; then publishes reduced = s,
 *   - copies the reduced pieces out of their owners' slots, and publishes
 *     done = s when it will not read round k's slots again.
 * A slot is rewritten only after every rank's done reached s - SHM_SLOTS:
 * the copy-in of the next rounds overlaps the others' reductions and
 * copy-outs, and ranks never meet at a barrier.
 */
#ifndef RONDO_SHM_H
#define RONDO_SHM_H

#include "algo/algo.h"

typedef enum {
  SHM_ALLREDUCE,      /* recvbuf = the node's reduction */
  SHM_REDUCE_SCATTER, /* recvbuf's owned slices = the node's reduction of them */
  SHM_ALLGATHER       /* each owned slice of recvbuf is copied to every rank */
} shm_mode_t;

/* Runs one node-level phase over the comm's node. sendbuf is read in
 * SHM_ALLREDUCE and SHM_REDUCE_SCATTER (may equal recvbuf); SHM_ALLGATHER
 * reads the owned slices of recvbuf. Collective over the node. */
rondo_status_t shm_run(const algo_allreduce_args_t *a, shm_mode_t mode);
/* The same, calling progress(arg) after every round and while waiting for
 * the other ranks: the hierarchical pipeline keeps its cross-node requests
 * moving with it (MPI progresses them only inside MPI calls). */
typedef void (*shm_progress_t)(void *arg);
rondo_status_t shm_run_with(const algo_allreduce_args_t *a, shm_mode_t mode,
                            shm_progress_t progress, void *arg);

/* A reduce-scatter's or all-gather's blocks (blocks.h) over the comm's
 * node, the comm's ranks in blocks of the node size L (topo->blocks; one
 * node: any comm): slice g is block g, owned by local rank g % L, which
 * holds it at place[g] elements into its own buffer (place NULL: one
 * node, where a rank owns one block, at the start of its buffer). SHM_REDUCE_SCATTER
 * reduces each owned block across the node into recvbuf; SHM_ALLGATHER
 * copies each owned block from sendbuf into every rank's recvbuf at
 * displs[g] (this rank's own too, unless it lies there already). */
rondo_status_t shm_run_blocks(const algo_blocks_args_t *b, shm_mode_t mode,
                              const size_t *place);

/* Small all-reduces skip a step: every rank reduces the whole buffer from
 * every slot in rank order (identical bytes everywhere) right after the
 * data is posted, instead of reducing its slice, publishing it and copying
 * the others' slices out. That saves the second wait, which is most of a
 * small call. Two things bound it: the extra reduction, (L-1) n instead of
 * (L-1) n / L (bytes x L at most SHM_WHOLE_BYTES), and the cache lines
 * every rank now reads from the others, one per non-empty slice and rank:
 * at most SHM_WHOLE_LINES. Measured on 16 cores (docs/PERFORMANCE.md): at
 * 16 ranks a 64 B call, 16 slices x 16 ranks, took 9.4 us this way against
 * 6 us the usual way; 1 slice x 16 ranks took 2.5 us. */
#define SHM_WHOLE_BYTES 8192
#define SHM_WHOLE_LINES 32
static inline int shm_reduces_whole(size_t count, size_t bytes, int local_size)
{
  size_t slices = count < (size_t)local_size ? count : (size_t)local_size;
  return bytes * (size_t)local_size <= SHM_WHOLE_BYTES &&
         slices * (size_t)local_size <= SHM_WHOLE_LINES;
}

/* Frees the comm's window (rondo_comm_destroy). */
void shm_free(rondo_comm_t comm);

#endif /* RONDO_SHM_H */
