/*
 * The blocks of a reduce-scatter or an all-gather, as their algorithms
 * (lib/algo/reduce_scatter/, lib/algo/allgather/) get them from their
 * dispatch, and the family machinery both dispatches share (family.c):
 * the menus, the knob that forces a member, the choice and its cache.
 * Internal.
 *
 * Contract for every member of the two families:
 *  - The arguments were validated and agreed on by every rank (lib/api),
 *    but for shm, which agrees in its first round when a->agree is set.
 *  - Any block counts (zero included, uneven), total >= 1, any comm size.
 *  - Host members (mem HOST) get host buffers; the nccl and staged
 *    members device buffers, from the device dispatch, which hands them
 *    the caller's op (AVG too) and in-place forms as they are.
 *  - reduce-scatter: op is SUM, MIN, MAX or PROD (AVG arrives as SUM and
 *    the dispatch divides); recvbuf never overlaps sendbuf (the dispatch
 *    reduces into scratch for the in-place forms and copies), but for a
 *    member with blocks_in_place, which may get recvbuf at this rank's
 *    block of sendbuf (shm).
 *  - all-gather: sendbuf may be this rank's block of recvbuf (in place);
 *    every rank ends with the same bytes in every block (they are copies).
 *  - Traffic goes over the comm's private duplicate.
 */
#ifndef RONDO_ALGO_BLOCKS_H
#define RONDO_ALGO_BLOCKS_H

#include "algo/algo.h"

struct algo_blocks_args {
  rondo_comm_t comm;
  /* reduce-scatter: every rank's block, packed in rank order (displs);
   * all-gather: this rank's block */
  const void *sendbuf;
  /* reduce-scatter: this rank's block; all-gather: every block, at displs */
  void *recvbuf;
  const size_t *counts; /* [p] elements of each rank's block */
  /* [p + 1] element offsets of the blocks: packed for a reduce-scatter's
   * input (displs[p] = total), the caller's layout for an all-gather's
   * output (displs[p] = the end of the furthest block) */
  const size_t *displs;
  size_t total;         /* elements of all blocks */
  int packed;           /* displs are the packed prefix sums of counts */
  rondo_dtype_t dtype;
  rondo_op_t op;        /* reduce-scatter only */
  size_t esize;
  const agree_sig_t *agree; /* shm agrees on this in its first round, or NULL */
  /* The staged members' host part: the family's own run of these blocks
   * on host buffers (the device dispatch sets it; a pointer, since the
   * dispatch reads the table that lists staged). */
  rondo_status_t (*host)(const algo_blocks_args_t *a, const void *sendbuf, void *recvbuf);
};

/* Element offset e of buf, in bytes of a. */
static inline char *blocks_at(const algo_blocks_args_t *a, const void *buf, size_t e)
{
  return (char *)buf + e * a->esize;
}

/* The largest block's elements. */
static inline size_t blocks_max(const algo_blocks_args_t *a)
{
  size_t most = 0;
  for (int i = 0; i < a->comm->size; i++)
    most = a->counts[i] > most ? a->counts[i] : most;
  return most;
}

/* ---- cost-model terms the members share (each in its member's file) -----------
 * n: the bytes of all blocks; in: the call (in->ranks, nodes, ...). */
double algo_rs_halving_time(const select_params_t *prm, const select_input_t *in, double n);
double algo_rs_pairwise_time(const select_params_t *prm, const select_input_t *in, double n);
double algo_ag_ring_time(const select_params_t *prm, const select_input_t *in, double n);
double algo_ag_rd_time(const select_params_t *prm, const select_input_t *in, double n);
double algo_ag_bruck_time(const select_params_t *prm, const select_input_t *in, double n);

/* The cross-node phase of a hierarchical member (rs_hier.c, ag_hier.c) as
 * the model sees it: in's nodes as ranks, one per node, on bytes; and the
 * parameters where the node's L local ranks cross at once, sharing its
 * link (beta x L). */
select_input_t algo_family_cross_input(const select_input_t *in, size_t bytes);
select_params_t algo_family_cross_params(const select_params_t *prm, int local);
/* The cross phase's run on cross (a comm of one rank per node, without a
 * topology: point-to-point members only): counts[j] elements from node j's
 * rank, at displs[j] (NULL: packed) of the output (reduce-scatter: packed
 * input). The member is the cheapest of menu for in (the whole call's
 * input) on the comm's measured network. */
rondo_status_t algo_family_cross_run(rondo_comm_t comm, rondo_comm_t cross,
                                     const select_menu_t *menu, const select_input_t *in,
                                     const algo_blocks_args_t *shape);

/* The hierarchical members' rules (rs_hier.c, ag_hier.c): they need nodes
 * of equal size with the ranks in blocks, and one node (shm) or one rank a
 * node (the cross phase alone) leaves them nothing to gain. */
const char *algo_hier_blocks_cannot_run(const select_input_t *in);
const char *algo_hier_blocks_not_chosen(const select_input_t *in);

/* ---- the families (family.c) ----------------------------------------------------- */

/* The menus of reduce-scatter's and all-gather's tables
 * (lib/algo/reduce_scatter/table.c, lib/algo/allgather/table.c). */
const select_menu_t *algo_rs_menu(void);
const select_menu_t *algo_ag_menu(void);

/* coll's descriptor of algorithm id, or NULL when coll has no such member. */
const algo_desc_t *algo_family_find(rondo_coll_t coll, rondo_algo_t id);
/* coll's member called name, or NULL. */
const algo_desc_t *algo_family_find_name(rondo_coll_t coll, const char *name);
/* "mpi, ring, ...": coll's members, for messages. */
const char *algo_family_names(rondo_coll_t coll);

/* What the selector knows about a reduce-scatter or all-gather on comm of
 * these blocks: count and bytes are the whole buffer's (every block).
 * counts NULL: p equal blocks of block elements. */
select_input_t algo_family_input(rondo_comm_t comm, rondo_coll_t coll, const size_t *counts,
                                 size_t block, rondo_dtype_t dtype, rondo_op_t op);
/* The same for buffers in mem (device: the nccl and staged members). */
select_input_t algo_family_input_mem(rondo_comm_t comm, rondo_coll_t coll, const size_t *counts,
                                     size_t block, rondo_dtype_t dtype, rondo_op_t op,
                                     select_mem_t mem);
/* A rank that fails (st) before a member with the check folded into it
 * (agree set) runs: the others wait for it in that check, so it takes its
 * part with the failure and they fail too. Returns st (or the check's
 * answer); st unchanged where agree is NULL or st is RONDO_SUCCESS. */
rondo_status_t algo_family_refuse(rondo_comm_t comm, rondo_status_t st,
                                  const agree_sig_t *agree);
/* The comm's choice: its knob, its tuning table, the cost model. */
rondo_algo_t algo_family_choose(rondo_comm_t comm, const select_input_t *in,
                                select_result_t *res);
/* algo_check for coll's members. */
rondo_status_t algo_family_check(rondo_comm_t comm, rondo_algo_t algo, const select_input_t *in,
                                 const char **why);
/* AUTO becomes the comm's choice (cached for repeated calls), then any
 * algorithm is checked. Local; the same outcome on every rank. */
rondo_status_t algo_family_resolve(rondo_comm_t comm, const select_input_t *in,
                                   rondo_algo_t *algo);
/* Whether a valid call of coll's member algo takes the argument check in
 * its own run rather than before it: shm agrees in its first round (once
 * the comm's window exists), a small mpi call across nodes rides in the
 * check's packet, a member whose steps carry the check does so across
 * nodes. count: the call's elements (any measure that is 0 only for an
 * empty call), bytes: every rank's data. Equal on every rank that calls
 * alike. */
int algo_family_folds_check(rondo_comm_t comm, rondo_coll_t coll, rondo_algo_t algo,
                            size_t count, size_t bytes);

#endif /* RONDO_ALGO_BLOCKS_H */
