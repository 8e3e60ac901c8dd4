/*
 * The comm object: the one struct every layer reads (docs/architecture.md).
 * Each group of fields belongs to one layer, which alone writes it; the
 * types of the upper layers' parts are only named here (pointers), so this
 * header includes nothing above base. lib/comm builds a comm, lib/api
 * registers it and gives the handle to users (rondo_comm_t).
 */
#ifndef RONDO_BASE_COMM_H
#define RONDO_BASE_COMM_H

#include "base/base.h"

struct topo;
struct shm_state;
struct shalloc_table;
struct agree_state;
struct select_table;
struct engine;
struct gpu_state;

struct rondo_comm {
  /* lib/comm: set once when the comm is built, then read-only */
  MPI_Comm mpi;      /* private duplicate of the user's communicator */
  int rank, size;
  int local_rank, local_size, node_count;
  int node_id;       /* 0..node_count-1, ordered by the node's lowest rank */
  int pof2;          /* largest power of two <= size */
  double link_beta;  /* seconds per byte one stream of a ring over this comm
                        gets through a node's link: the measured network's,
                        in a cross comm shared by the node's slices; 0 when
                        the comm lies within one node (algo_ring_chunk) */
  rondo__knobs_t cfg; /* the knobs, read when the comm was made, equal on
                         every rank where they must be (knobs.c) */
  double request_timeout; /* seconds the engine's requests wait for another
                         rank before they fail: cfg.stall_abort_sec, or
                         what rondo_comm_set_timeout set since (read it with
                         comm_request_timeout(); 0: never) */
  rondo_algo_t forced_algo;   /* cfg.allreduce_algo resolved (AUTO: none) */
  rondo_algo_t forced_family[RONDO_COLL_COUNT]; /* the same per collective:
                        [RONDO_COLL_ALLREDUCE] is forced_algo, the others
                        cfg.reduce_scatter_algo and cfg.allgather_algo */
  struct select_table *tuning; /* cfg.tuning_file's rules, or NULL */
  int owns_tuning;   /* this comm loaded tuning (an internal comm borrows its
                        parent's) */
  struct topo *topo; /* nodes, cross communicators, hwloc (lib/topo) */
  struct rondo_comm **cross;  /* [topo->slices]: comms over topo->cross[g], or NULL */
  int yield_waits;   /* the node is oversubscribed: point-to-point waits poll
                        and yield the core (algo_waitall) instead of MPI_Wait,
                        which spins for a whole time slice */
  int yield_any;     /* some rank of the comm has yield_waits: MPI collectives
                        that every rank must enter alike (the argument
                        check's all-reduce, the mpi algorithm, the barrier)
                        are nonblocking, so that those ranks can yield, and
                        leaving a comm polls */
  int thread_level_max; /* the highest MPI thread level among the ranks */

  /* lib/algo/agree: the argument agreement's own state (agree.h's
   * glossary), opaque here. The pointer is set once when the comm is built
   * (agree_state_create, from lib/comm) and freed with the comm; what it
   * points to is not read-only: the agreement sets its board and exchange
   * while the comm is built, then rewrites the rest (the packet's room, the
   * count of exchanges) in every agreed call, alike on every rank. */
  struct agree_state *agree;

  /* lib/algo: made on first use, by the thread running the collective */
  struct shm_state *shm;      /* the node's shared window */
  /* rondo_mem_alloc's allocations (shared_alloc.c): made and freed by
   * those calls on the user's thread, read by the calls on the comm */
  struct shalloc_table *shalloc;
  void *scratch;     /* per-comm scratch, grown on demand (algo_scratch) */
  size_t scratch_bytes;
  void *result;      /* an in-place call's result before it is copied over the
                        input (algo_result_scratch): kept, not freed per call */
  size_t result_bytes;
  /* The last AUTO decision: repeated calls of one size (a training loop)
   * skip the cost model. The comm's knobs and tuning table never change. */
  size_t last_count;
  rondo_dtype_t last_dtype;
  rondo_op_t last_op;
  int last_mem;               /* select_mem_t */
  rondo_algo_t last_forced;   /* the forced algorithm it was chosen under */
  rondo_algo_t last_algo;     /* RONDO_ALGO_AUTO: none yet */
  /* The same for reduce-scatter and all-gather (family.c), per collective:
   * a training step's sharded calls repeat their sizes too. */
  struct comm_last_choice {
    size_t count, block_max;
    rondo_dtype_t dtype;
    rondo_op_t op;
    int blocks_equal;
    int mem;                  /* select_mem_t: host and device calls choose apart */
    rondo_algo_t algo;        /* RONDO_ALGO_AUTO: none yet */
  } last_family[RONDO_COLL_COUNT];
  struct gpu_state *gpu;      /* device buffers' state (lib/algo/common/gpu.c), or NULL */

  /* lib/engine: the asynchronous engine, or NULL */
  struct engine *engine;

  /* lib/api: registry of live comms */
  struct rondo_comm *next;
};

/* c->request_timeout, which rondo_comm_set_timeout may change while the
 * comm's engine runs. */
static inline double comm_request_timeout(const struct rondo_comm *c)
{
  double v;
  __atomic_load(&c->request_timeout, &v, __ATOMIC_RELAXED);
  return v;
}

#endif /* RONDO_BASE_COMM_H */
