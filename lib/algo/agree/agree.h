/*
 * Collective argument agreement (lib/algo/agree/): a small collective of
 * its own.
 * Every blocking entry point fills a signature of the arguments that must be
 * equal on every rank; agree_call() checks local validity and equality on
 * all ranks before any data moves: in shared memory on a one-node comm (the
 * comm's board), with an exchange of small packets across nodes
 * (exchange.c). The shm all-reduce folds the board into its first
 * round (shm.c), Rabenseifner's halving carries the exchange where it is
 * rondo's own (agree_call_riding). Internal (prefix agree_).
 *
 * lib/algo/agree/ holds the whole agreement, bottom up: signature.c (a
 * call's sum and names), packet.c (the packet), exchange.c
 * (its exchange), board.c (the check on one node), across.c (across
 * nodes), agree.c (which one a call takes; the leave step). The words its
 * files use:
 *   signature  the fields of one call that must be equal on every rank
 *              (agree_sig_t), summed to 64 bits to compare them at once
 *   board      a one-node comm's agreement: a shared-memory page where each
 *              rank posts its call's sum and reads the others' (no message)
 *   packet     what a rank sends in each step of the agreement across
 *              nodes: a 64-byte header (the sums, who failed, who leaves)
 *              and room for inline data
 *   exchange   how the packets cross: rondo's own recursive doubling over
 *              point-to-point messages, or one MPI all-reduce (chosen once
 *              per comm: algo_check_by_exchange)
 *   room       how many bytes of inline data a packet carries, equal on
 *              every rank, grown and shrunk by the calls before
 *              (agree_packet_next_room)
 *   inline     a small all-reduce whose data travels in the packet itself:
 *              the check and the reduction are one exchange (agree_inline)
 *   rider      a larger collective (Rabenseifner's halving, the all-gather's
 *              doubling) that sends its own data in the exchange's steps,
 *              so the check costs no round of its own (agree_call_riding)
 *   home_from  the size above which, where nodes are blocks of ranks, one
 *              rank a node carries the inline data across nodes
 *              (agree_leaders_carry, algo_check_home_from)
 *   leave      the agreement of rondo_comm_destroy: a rank that leaves makes
 *              the others' next call fail instead of hang (agree_leave)
 *   state      a comm's agreement (comm->agree): its board, the exchange
 *              chosen, the room and the count of exchanges; made and freed
 *              with the comm, rewritten by every agreed call, its fields
 *              seen by this folder alone (signature.h)
 */
#ifndef RONDO_ALGO_AGREE_H
#define RONDO_ALGO_AGREE_H

#include "base/comm.h"

/* The collectives a signature can name (compared too). */
typedef enum {
  AGREE_ALLREDUCE = 0,
  AGREE_BROADCAST,
  AGREE_ALLGATHER,
  AGREE_ALLGATHERV,
  AGREE_REDUCE_SCATTER,
  AGREE_ALLTOALL,
  AGREE_BARRIER,
  AGREE_COMM_SPLIT,
  AGREE_MEM_ALLOC,
  AGREE_MEM_FREE,
  AGREE_COMM_DESTROY, /* agree_leave: the largest, so the check's MAX shows it */
  AGREE_COLLS
} agree_coll_t;

#define AGREE_SIG_MAX 7 /* the board's payload line holds 7 (board.c) */
typedef struct agree_rider agree_rider_t; /* exchange.h */

typedef struct {
  agree_coll_t coll;
  int n;                            /* fields used */
  const char *field[AGREE_SIG_MAX];
  int64_t value[AGREE_SIG_MAX];
} agree_sig_t;

void agree_sig_add(agree_sig_t *sig, const char *field, int64_t value);
/* The value of sig's field of that name (sig may be NULL), or absent. */
int64_t agree_sig_find(const agree_sig_t *sig, const char *field, int64_t absent);
/* The field of a call that may take device buffers: 0 host, 1 device. A
 * mismatch in it is reported before the others (it makes them differ). */
#define AGREE_MEMORY_FIELD "memory (0 host, 1 device)"
/* "rondo_allreduce", for messages. */
const char *agree_coll_name(agree_coll_t coll);
/* local: this rank's argument check result. Returns local if it failed,
 * RONDO_ERR_PEER if another rank's failed, RONDO_ERR_MISMATCH if a field
 * differs across ranks, else RONDO_SUCCESS. Collective. */
rondo_status_t agree_call(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig);
/* agree_call, and on RONDO_ERR_MISMATCH *same_call: whether every rank
 * called this collective (then only its arguments differ, and every rank
 * knows it: they may exchange more to say which). */
rondo_status_t agree_call_detail(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                                 int *same_call);
/* A rank destroying comms[0..n) (rondo_comm_destroy: one; rondo_finalize:
 * every live one, at once): takes part in the others' checks on each until
 * every rank of it destroys it too. A blocking collective that meets it
 * fails with RONDO_ERR_SHUT_DOWN on its rank ("rank 1 is destroying this
 * comm") instead of waiting forever for this rank, on whichever of the
 * comms it waits. On a comm with a board the answers never wait, so every
 * such comm is answered at once; on another, a round of the exchange
 * across nodes waits for every rank's next check on it. poll(comm) runs for each comm
 * not left yet between rounds (see agree_leave_polls), so that the
 * engine's rendezvous can progress. Returns the first failure, after
 * leaving the other comms. Collective over each comm. */
rondo_status_t agree_leave(rondo_comm_t *comms, int n, void (*poll)(rondo_comm_t));
/* Whether agree_leave's wait polls (the board, or the exchange across
 * nodes where some rank yields); else it blocks in MPI (MPI_Allreduce, or
 * algo_waitall on the exchange's messages). */
int agree_leave_polls(rondo_comm_t comm);
/* A comm's agreement state (comm->agree, whose fields only lib/algo/agree/
 * sees): made with the comm before anything reads it (lib/comm: the first
 * room, no board, MPI's all-reduce until agree_choose_exchange), freed
 * with it, its board first (no MPI calls unless mpi_usable). Free takes a
 * comm whose state was never made too. */
rondo_status_t agree_state_create(rondo_comm_t comm);
void agree_state_free(rondo_comm_t comm, int mpi_usable);
/* The shared-memory board of a one-node comm (none elsewhere): made when a
 * user comm is created (lib/comm), freed by agree_state_free. */
rondo_status_t agree_board_create(rondo_comm_t comm);
int agree_board_active(rondo_comm_t comm);
/* agree_call in two halves, on a comm with a board: post this rank's
 * signature, then wait for every rank's and compare. The shm all-reduce
 * posts after copying its first round in, so the board's wait is also the
 * wait for everyone's data (shm.c). */
void agree_post(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig);
rondo_status_t agree_finish(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig);
/* Across nodes, the check's packet carries the data of a small call of the
 * mpi algorithm (an all-reduce, reduce-scatter or all-gather):
 * AGREE_INLINE_BYTES at most, and at most the room the calls before gave
 * it (packet.c). */
#ifdef OPEN_MPI
#define AGREE_INLINE_BYTES 8192 /* see packet.c */
#else
#define AGREE_INLINE_BYTES 16384
#endif
/* The room of a new comm's packet. */
#define AGREE_FIRST_ROOM 1024
/* Whether a valid call of count elements (bytes: the data that would ride,
 * every rank's) by algo takes its check with agree_inline: its data then
 * travels in the packet where the room holds it. Equal on every rank that
 * calls alike. */
int agree_inline_fits(rondo_comm_t comm, rondo_algo_t algo, size_t count, size_t bytes);
/* The data a call sends inside the check's packet: count elements of
 * dtype, every rank's combined by op (AVG as SUM), as an all-reduce
 * combines them. This rank's in_bytes bytes of in go at byte at of it, the
 * rest is zeros: an all-reduce sends its whole input, a reduce-scatter
 * too (each rank keeps its block of the result), an all-gather its block
 * at its offset, summed as uint8 with every other rank's zeros. out gets
 * the combined count elements. */
typedef struct {
  size_t count;
  rondo_dtype_t dtype;
  rondo_op_t op;
  const void *in;
  size_t at, in_bytes;
  void *out;
} agree_inline_t;
/* The check, and the data of d in the same exchange where comm's room
 * holds it (valid local arguments; sig names the call, with
 * RONDO_ALGO_MPI; agree_inline_fits). *rode: whether d->out got the
 * combination; if not, the check passed and the caller moves the data
 * (the packet told its size: the next such call rides). Fails as
 * agree_call would. Collective. */
rondo_status_t agree_inline(rondo_comm_t comm, const agree_sig_t *sig, const agree_inline_t *d,
                            int *rode);
/* Whether a valid call of count elements by a member whose steps carry
 * the check (its descriptor's carries_check: Rabenseifner's halving, the
 * all-gather's recursive doubling, the reduce-scatter's recursive halving,
 * their riders) sends its data in the steps of the check across nodes on
 * comm. Equal on every rank that calls alike. */
int agree_rider_fits(rondo_comm_t comm, int carries_check, size_t count);
/* agree_call across nodes with this rank's data riding in the exchange
 * (rider: exchange.h; NULL where local failed). On success every
 * step carried the data; on failure the data that moved is to be thrown
 * away. Collective. */
rondo_status_t agree_call_riding(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                                 agree_rider_t *rider);
/* The size of the check's packet across nodes without data (the cost model
 * prices it: the room a call carries for nothing is at most a sixteenth of
 * its own bytes). */
size_t agree_packet_bytes(void);
/* Frees the check's MPI datatypes and op, made at their first use
 * (rondo_finalize, while MPI is usable). */
void agree_packet_free(void);
/* bench/agree_cost only: 1 skips the agreement, to time a call without it. */
extern int agree_skip;

#endif /* RONDO_ALGO_AGREE_H */
