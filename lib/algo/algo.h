/*
 * The collective algorithms (one file each), their table, the dispatch and
 * the point-to-point helpers they share. Internal to librondo (prefix
 * algo_). docs/architecture.md has the layers; DEVELOPERS.md says how to add
 * an algorithm: one file with its descriptor, one row in table.c.
 *
 * Contract for every all-reduce algorithm:
 *  - The arguments were validated and agreed on by every rank (lib/api),
 *    but for shm, which agrees in its first round (agree below).
 *  - op is SUM, MIN, MAX or PROD; for a host algorithm AVG arrives as SUM
 *    and the caller finishes, a device algorithm (nccl, staged) gets AVG and
 *    finishes it itself (its recvbuf is device memory). ADASUM reaches the
 *    adasum algorithm only (the selector's rule).
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

#include "base/comm.h"
#include "algo/agree/agree.h"
#include "select/select.h"

/* The dispatch's host all-reduce (dispatch.c), handed to a device
 * algorithm that reduces through host memory (staged) in its arguments.
 * Handed, not called by name: the table lists staged and the dispatch
 * reads the table, so calls by name would run in a circle. */
typedef struct {
  /* The comm's choice among host algorithms for count elements, honouring
   * RONDO_ALLREDUCE_ALGO only when it names a host algorithm. */
  rondo_status_t (*resolve)(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                            rondo_op_t op, rondo_algo_t *algo);
  /* Runs it: algo_allreduce_run. */
  rondo_status_t (*run)(rondo_comm_t comm, const void *sendbuf, void *recvbuf, size_t count,
                        rondo_dtype_t dtype, rondo_op_t op, rondo_algo_t algo,
                        const agree_sig_t *agree);
} algo_host_path_t;

typedef struct {
  rondo_comm_t comm;
  const void *sendbuf; /* == recvbuf for in place */
  void *recvbuf;
  size_t count;
  rondo_dtype_t dtype;
  rondo_op_t op;       /* SUM, MIN, MAX or PROD */
  size_t esize;        /* bytes per element */
  /* The call's signature, not yet agreed on, for the two algorithms that
   * fold the check into their data: shm's first round posts it to the
   * comm's argument board (shm.c), and mpi sends a small call across nodes
   * inside the check's packet (agree.c). NULL: agreed before the call. */
  const agree_sig_t *agree;
  /* ADASUM: the buffer holds nsegments tensors of segments[i] elements,
   * each combined with coefficients of its own (the engine's fused
   * buffers); NULL: one tensor. Other ops ignore it. */
  const size_t *segments;
  size_t nsegments;
  const algo_host_path_t *host; /* set by the dispatch (algo_host_path_t) */
} algo_allreduce_args_t;

typedef rondo_status_t (*algo_allreduce_fn)(const algo_allreduce_args_t *a);

/* ---- descriptors (one per algorithm, in its file) and the table (table.c) ----
 * Everything rondo knows about an algorithm is in its descriptor: the
 * selector's view (id, name, memory kind, when it cannot run, when it
 * should not be chosen, its cost-model terms), the collectives it serves
 * and the function that runs it. table.c lists the descriptors; the
 * selector, the tuning parser, the knob RONDO_ALLREDUCE_ALGO, the names of
 * rondo_algo_name() and rondo_algo_available() all read that list. */

/* The collectives an algorithm serves (bits of algo_desc_t.collectives). */
enum {
  ALGO_SERVES_ALLREDUCE = 1u << 0,
  ALGO_SERVES_REDUCE_SCATTER = 1u << 1,
  ALGO_SERVES_ALLGATHER = 1u << 2
};

/* A reduce-scatter's or all-gather's blocks (lib/algo/common/blocks.h). */
typedef struct algo_blocks_args algo_blocks_args_t;
typedef rondo_status_t (*algo_blocks_fn)(const algo_blocks_args_t *a);

/* One descriptor per algorithm and collective: all-reduce's in
 * lib/algo/allreduce/, reduce-scatter's in lib/algo/reduce_scatter/,
 * all-gather's in lib/algo/allgather/, each family's table listing its own
 * (an id names the same idea in every family: ring is a ring everywhere). */
typedef struct algo_desc {
  select_algo_t select;   /* first: the table hands &desc.select to the selector */
  unsigned collectives;   /* ALGO_SERVES_*: the one this descriptor runs */
  algo_allreduce_fn allreduce;
  algo_blocks_fn blocks;  /* reduce-scatter or all-gather */
  int blocks_in_place;    /* a reduce-scatter that takes recvbuf at this rank's block
                             of sendbuf itself (else the dispatch gives it scratch) */
} algo_desc_t;

extern const algo_desc_t algo_mpi, algo_ring, algo_recursive_doubling, algo_rabenseifner,
    algo_shm, algo_hierarchical, algo_nccl, algo_staged, algo_hierarchical_nccl, algo_adasum;

/* Recursive doubling's run (allreduce_rd.c): adasum runs the same exchange
 * with its own combination (algo_reduce_ordered). */
rondo_status_t algo_rd_allreduce(const algo_allreduce_args_t *a);

/* The descriptor of an id, or NULL (AUTO and values outside the table). */
const algo_desc_t *algo_find(rondo_algo_t id);
/* The descriptor of a name, or NULL. */
const algo_desc_t *algo_find_name(const char *name);
/* Every algorithm, for the selector and the tuning parser. */
const select_menu_t *algo_menu(void);
/* "mpi, ring, ...": every name of the table, for error messages. */
const char *algo_names(void);

/* The time of a call of the mpi algorithm whose data rides in the argument
 * check's packet across nodes (in->mpi_check, in->bytes at most
 * AGREE_INLINE_BYTES): an all-reduce, a reduce-scatter (the whole input
 * reduced, each rank keeping its block) or an all-gather (the blocks at
 * their offsets, summed with zeros) all cost one exchange of in->bytes
 * more (allreduce_mpi.c). */
double algo_inline_time(const select_params_t *prm, const select_input_t *in);
/* Cost-model terms the algorithms share (each in its algorithm's file):
 * n bytes over in's ranks and nodes (rd, rab), or over p ranks at level lv
 * (ring); copy = seconds per byte of the input copy (0 in place), chunk =
 * the ring's pipeline chunk (0: its default), which algo_ring_chunk turns
 * into whole segments where lv is a slow node link (across: lv is the link
 * between nodes, not a level within one); radix = Rabenseifner's doubling's
 * (2 for MPI's and the hierarchical cross phase's, which are radix 2). */
double algo_rd_time(const select_params_t *prm, const select_input_t *in, double n,
                    double copy);
double algo_rab_time(const select_params_t *prm, const select_input_t *in, double n,
                     double copy, int radix);
double algo_ring_time(const select_level_t *lv, double n, int p, size_t chunk, int across);
/* The radix of Rabenseifner's doubling (allreduce_rabenseifner.c): prm's
 * (RONDO_RAB_RADIX) where set; else below p' elements, where its steps
 * are latency, the one of 2 .. ALGO_RAB_RADIX_MAX the model prices
 * lowest, and 2 from p' elements. Equal on every rank (prm and in are). */
enum { ALGO_RAB_RADIX_MAX = 8 };
int algo_rab_radix(const select_params_t *prm, const select_input_t *in);
/* One line for rondo_explain: the radix of Rabenseifner's doubling for in
 * on comm, and why. Returns what snprintf returns. */
int algo_rab_describe(rondo_comm_t comm, const select_input_t *in, char *buf, size_t len);
/* The ring's pipeline chunk (bytes): chunk (RONDO_RING_CHUNK_BYTES, 0: its
 * default), or 1 GiB (each segment whole, in messages of at most 1 GiB)
 * where the ring crosses a node link of link_beta seconds per byte per
 * stream that takes over 1 ms to carry one chunk; link_beta 0: the ring
 * stays within a node. */
size_t algo_ring_chunk(size_t chunk, double link_beta);
/* One line for rondo_explain: whether the ring pipelines across a node link
 * of link_beta (algo_ring_chunk). Returns what snprintf returns. */
int algo_ring_describe(size_t chunk, double link_beta, char *buf, size_t len);

/* ---- dispatch (selector_input.c, dispatch.c) ----------------------------------
 * For lib/api's blocking calls and lib/engine's fused buffers. */

/* What the selector knows about an all-reduce of count elements on comm,
 * in host memory (algo_input) or in mem (for device memory: whether there
 * is NCCL and whether ranks share a GPU, from the comm's GPU state). */
select_input_t algo_input(rondo_comm_t comm, size_t count, rondo_dtype_t dtype, rondo_op_t op);
select_input_t algo_input_mem(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                              rondo_op_t op, select_mem_t mem);
/* The cost model's parameters for comm: the defaults, with the comm's
 * RONDO_RING_CHUNK_BYTES and RONDO_HIER_CHUNK_BYTES and, on several nodes,
 * the network its topology measured (lib/topo/net.c). */
select_params_t algo_params(rondo_comm_t comm);
/* How comm's argument check should cross nodes, chosen once its topology
 * is known (equal on every rank): 1 rondo's own exchange, 0 MPI's
 * all-reduce (exchange.c). RONDO_CHECK_EXCHANGE, else rondo's own
 * wherever MPI's all-reduce is not node-aware (select_mpi_node_aware on
 * algo_params, whose MPI all-reduce is flat where some rank yields: the
 * check then runs MPI's nonblocking one) and wherever one rank a node can
 * carry the inline data across (agree_leaders_carry). */
int algo_check_by_exchange(rondo_comm_t comm);
/* Where a node's first rank can carry the check's inline data across
 * (agree_leaders_carry) in rondo's exchange (by_exchange: what
 * algo_check_by_exchange chose): the bytes above which it does, the others
 * leaving theirs home; SIZE_MAX elsewhere. The model's break-even: from
 * there the L - 1 more copies that would cross each node's link in each
 * of the lg N steps take longer than the lg L steps that bring the data
 * from the first rank. Equal on every rank (the network's measurement is). */
size_t algo_check_home_from(rondo_comm_t comm, int by_exchange);
/* The comm's choice: its RONDO_ALLREDUCE_ALGO, then its tuning table, then
 * the cost model (algo_params). */
rondo_algo_t algo_choose(rondo_comm_t comm, const select_input_t *in, select_result_t *res);
/* Quiet (logs nothing): RONDO_SUCCESS if algo can run this call, with *why
 * NULL, or why the selector would not choose it (hierarchical on one
 * node); else RONDO_ERR_UNSUPPORTED (RONDO_ERR_INVALID_ALGO for a value
 * outside the table) with the reason in *why and in rondo_last_error(). why
 * may be NULL; the strings are static. Local: every rank of the comm gets
 * the same answer for the same call. */
rondo_status_t algo_check(rondo_comm_t comm, rondo_algo_t algo, const select_input_t *in,
                          const char **why);
/* AUTO becomes the comm's choice (cached for repeated sizes); any algorithm
 * is then checked with algo_check. Local, same outcome on every rank. */
rondo_status_t algo_allreduce_resolve(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                                      rondo_op_t op, rondo_algo_t *algo);
/* The same for buffers in mem. */
rondo_status_t algo_allreduce_resolve_mem(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                                          rondo_op_t op, select_mem_t mem, rondo_algo_t *algo);
/* Runs a resolved all-reduce: count 0 does nothing, AVG is SUM then a
 * division by the comm size. agree: the signature shm agrees on in its
 * first round, or NULL (agreed before). */
rondo_status_t algo_allreduce_run(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                  size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                  rondo_algo_t algo, const agree_sig_t *agree);
/* Resolve, then run, for arguments agreed before (the engine). */
rondo_status_t algo_allreduce(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                              size_t count, rondo_dtype_t dtype, rondo_op_t op,
                              rondo_algo_t algo);
/* The same for the engine's fused buffer of n tensors of counts[i]
 * elements: op ADASUM combines each with coefficients of its own; the
 * other ops ignore the split. */
rondo_status_t algo_allreduce_fused(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    const size_t *counts, size_t n, rondo_dtype_t dtype,
                                    rondo_op_t op, rondo_algo_t algo);

/* How many stripes the hierarchical pipeline cuts bytes into, chunk
 * (RONDO_HIER_CHUNK_BYTES) bytes being the unit, on a slow link (a chunk
 * takes over 2 ms to cross) or not; 0: none (allreduce_hier.c). */
size_t algo_hier_stripes(double bytes, double chunk, int slow);

/* One line for rondo_explain: whether the hierarchical all-reduce of in on
 * comm pipelines, in how many stripes and why (algo_hier_stripes). Returns
 * what snprintf returns. */
int algo_hier_describe(rondo_comm_t comm, const select_input_t *in, char *buf, size_t len);

/* Reduce-scatter and all-gather (lib/algo/reduce_scatter/dispatch.c,
 * lib/algo/allgather/dispatch.c): the comm's choice among the family's
 * algorithms (forced: its RONDO_*_ALGO knob, then its tuning table, then
 * the cost model) unless algo names one, run on arguments every rank
 * agreed on (agree: the signature the shm member agrees on in its first
 * round, or NULL). A reduce-scatter's recvcounts[i] elements go to rank i
 * (0 allowed; recvbuf may then be NULL), sendbuf holds the blocks packed
 * in rank order; in place, recvbuf is sendbuf or this rank's block of it;
 * op: any but ADASUM (AVG: a SUM divided by the comm size). */
rondo_status_t algo_reduce_scatter_run(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                       const size_t *recvcounts, rondo_dtype_t dtype,
                                       rondo_op_t op, rondo_algo_t algo,
                                       const agree_sig_t *agree);
/* The same with p equal blocks of count elements (the calls without v). */
rondo_status_t algo_reduce_scatter_block(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                         size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                         rondo_algo_t algo, const agree_sig_t *agree);
/* counts[i] elements (esize bytes each) from rank i, placed at displs[i]
 * elements into recvbuf (displs NULL: packed). In place: sendbuf is this
 * rank's block of recvbuf. */
rondo_status_t algo_allgatherv(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                               const size_t *counts, const size_t *displs, size_t esize);
rondo_status_t algo_allgather_run(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                  const size_t *counts, const size_t *displs, size_t esize,
                                  rondo_algo_t algo, const agree_sig_t *agree);
rondo_status_t algo_allgather_block(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    size_t count, size_t esize, rondo_algo_t algo,
                                    const agree_sig_t *agree);
/* An all-gather of bytes from every rank with its argument check: local
 * is this rank's own verdict on its arguments, sig names the call (the
 * algorithm and the memory kind are added). The comm's choice (or algo),
 * then the check inside the run where the member takes it
 * (algo_family_folds_check), else first. Fails on every rank where any
 * rank's local did, recvbuf untouched. Collective. */
rondo_status_t algo_allgather_checked(rondo_comm_t comm, rondo_status_t local, agree_sig_t *sig,
                                      const void *sendbuf, void *recvbuf, size_t bytes,
                                      rondo_algo_t algo);

/* The same on device buffers, after the call was agreed on and the comm's
 * GPU state attached: the family's nccl or staged member (algo AUTO: the
 * comm's choice; a host member is refused), equal blocks of count
 * elements (reduce-scatter; any op, AVG too) or bytes (all-gather). In
 * place as above. */
rondo_status_t algo_reduce_scatter_device(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                          size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                          rondo_algo_t algo);
rondo_status_t algo_allgather_device(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                     size_t bytes, rondo_algo_t algo);

/* Data movement and the other collectives (MPI-backed; see each file). */
rondo_status_t algo_broadcast(rondo_comm_t comm, void *buf, size_t bytes, int root);
rondo_status_t algo_alltoall(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                             size_t bytes);
/* sendbytes[i] bytes to rank i, recvbytes[i] from it, packed in rank order. */
rondo_status_t algo_alltoallv(rondo_comm_t comm, const void *sendbuf, const size_t *sendbytes,
                              void *recvbuf, const size_t *recvbytes);
rondo_status_t algo_barrier(rondo_comm_t comm);

/* ---- helpers (lib/algo/common/p2p.c) ------------------------------------------------ */

/* A scratch buffer of the comm of at least bytes (valid until the next call). */
rondo_status_t algo_scratch(rondo_comm_t comm, size_t bytes, void **buf);
/* A second one, for the result of an in-place call while the algorithm
 * uses algo_scratch (reduce_scatter/dispatch.c). Kept between calls: a
 * fresh allocation per call costs its page faults every time (11 ms for
 * 2 MiB where malloc maps it). */
rondo_status_t algo_result_scratch(rondo_comm_t comm, size_t bytes, void **buf);

/* The MPI datatype and op that compute rondo's semantics for (dtype, op):
 * built-ins where they match, user-defined ops over rondo's kernels for
 * float16/bfloat16, floating MIN/MAX (NaN and -0.0 rules) and uint8 MIN/MAX
 * (MPICH 4.0 compares MPI_UINT8_T as signed there). */
rondo_status_t algo_mpi_op(rondo_dtype_t dtype, rondo_op_t op, MPI_Datatype *mtype,
                           MPI_Op *mop);
/* Frees what algo_mpi_op created (rondo_finalize). */
void algo_mpi_op_free(void);

/* Byte messages on the comm's private communicator: any size with an MPI-4
 * library, up to INT_MAX bytes with MPI-3. An algorithm whose largest
 * message may not fit calls algo_check_message() before its first message,
 * so every rank (same count) fails the same way instead of some hanging. */
rondo_status_t algo_check_message(size_t bytes);
/* Tags on the comm's private communicator: the algorithms' messages
 * (hierarchical's cross-node steps number theirs from 1, on their own
 * communicators), and the argument check's exchange (exchange.c):
 * its packets, and the data that rides with them, from ALGO_TAG_CHECK_WIDE
 * where MPI's tags reach that far, else ALGO_TAG_CHECK_DATA plus less than
 * ALGO_TAG_CHECK_DATAS. The p2p API's tags are 16384-32767
 * (lib/api/p2p.c). */
enum {
  ALGO_TAG = 0,
  ALGO_TAG_CHECK_DATA = 8192,
  ALGO_TAG_CHECK_DATAS = 8190,
  ALGO_TAG_CHECK = 16382,
  ALGO_TAG_CHECK_WIDE = 32768
};
rondo_status_t algo_isend_tag(rondo_comm_t comm, const void *buf, size_t bytes, int peer,
                              int tag, MPI_Request *req);
rondo_status_t algo_irecv_tag(rondo_comm_t comm, void *buf, size_t bytes, int peer, int tag,
                              MPI_Request *req);
/* With ALGO_TAG. */
rondo_status_t algo_isend(rondo_comm_t comm, const void *buf, size_t bytes, int peer,
                          MPI_Request *req);
rondo_status_t algo_irecv(rondo_comm_t comm, void *buf, size_t bytes, int peer,
                          MPI_Request *req);
rondo_status_t algo_sendrecv(rondo_comm_t comm, const void *sbuf, size_t sbytes,
                             int dest, void *rbuf, size_t rbytes, int src);
/* Waits for n requests; yields the core between polls when the comm's node
 * is oversubscribed (comm->yield_waits). */
rondo_status_t algo_waitall(rondo_comm_t comm, int n, MPI_Request *reqs);
/* The same for one request, with its status (or MPI_STATUS_IGNORE). */
rondo_status_t algo_wait(rondo_comm_t comm, MPI_Request *req, MPI_Status *status);
/* After a failure midway: the posted receives cancelled and completed, so
 * that none writes into its buffer later, and the sends let go
 * (MPI_Request_free: MPI cannot cancel them). Null requests are skipped;
 * errors are logged, not returned (the caller already fails). */
void algo_abandon(int nrecv, MPI_Request *recvs, int nsend, MPI_Request *sends);

/* dst = lower-ranked data (op) higher-ranked data, so both partners of an
 * exchange compute the same bytes. mine/theirs are element buffers. ADASUM
 * (count is the whole call's then): Adasum's combination of each segment,
 * the lower-ranked data as its first gradient. */
void algo_reduce_ordered(void *dst, const void *mine, const void *theirs, size_t count,
                         const algo_allreduce_args_t *a, int peer);

/* Copies sendbuf to recvbuf unless in place. */
void algo_copy_input(const algo_allreduce_args_t *a);

/* ---- non-power-of-two folding (lib/algo/common/fold.c) -------------------------------
 * With rem = size - pof2, ranks below 2*rem pair up: the even rank sends its
 * whole buffer to the odd one and sits out; the odd one reduces. The pof2
 * remaining ranks get new ranks 0..pof2-1. fold_out returns the result to
 * the ranks that sat out. */
rondo_status_t algo_fold_in(const algo_allreduce_args_t *a, void *buf, void *tmp,
                            int *newrank);
rondo_status_t algo_fold_out(const algo_allreduce_args_t *a, void *buf, int newrank);
/* The real rank of new rank nr; this rank's new rank (-1: it sits out). */
int algo_fold_rank(rondo_comm_t comm, int nr);
int algo_fold_newrank(rondo_comm_t comm);

#endif /* RONDO_ALGO_H */
