/*
 * The argument check's packet across nodes. The check's exchange
 * (exchange.c) combines every rank's packet into every rank's: the
 * header's words by MAX, and when both packets carry the same valid
 * signature of an all-reduce run by the mpi algorithm, the data that rides
 * after the header too. So a small all-reduce and its check cost one
 * exchange instead of two.
 *
 * The room for that data follows the calls. Every rank must receive the
 * same packet shape whatever its call (a mismatch is then still reported,
 * never a hang or a truncation), so the room cannot depend on this call's
 * arguments; it depends
 * on the calls before, through what every rank got back from the last
 * check, which is the same bytes everywhere (agree_packet_next_room):
 *   - an mpi all-reduce of B <= AGREE_INLINE_BYTES bytes grows the room to
 *     B's class at once (64 B to 16 KiB, powers of two), so the next call
 *     of that size rides; a smaller one lowers it only after 8 calls in a
 *     row, to the largest of them (a loop of two sizes keeps both riding);
 *   - any other all-reduce of B bytes lowers the room to at most B/16, so
 *     the room it carries for nothing costs at most a sixteenth of its own
 *     traffic;
 *   - other collectives, failed or mismatched calls leave it as it is.
 * The first call of a new small size, and the first after a larger
 * all-reduce, takes two exchanges (the check, then the data). A rank's
 * own exchange sends only the header and the data a packet carries
 * (agree_packet_sent_bytes): 16 B ride in 176 B, not in a 64 B room's 224 (in
 * SimGrid's dragonfly, where small messages' bytes cost 5x the link's rate
 * through contention, the padding was a quarter of what separated small
 * mpi calls from MPI_Allreduce); MPI's all-reduce of packets sends them
 * whole.
 *
 * The exchange is recursive doubling (rondo's own, or MPI's all-reduce of
 * one packet element: MPICH's for any size of one element), so the data
 * that rides is reduced as recursive doubling reduces it: up to
 * AGREE_INLINE_BYTES (16 KiB) the check and the data together took less
 * than the check and Rabenseifner when Rabenseifner still paid the check
 * (where the check is MPI's all-reduce it does). Open MPI's all-reduce turns into a
 * reduce and a broadcast above 10000 bytes, so there AGREE_INLINE_BYTES is
 * 8 KiB.
 */
#include "algo/agree/packet.h"

#include <string.h>

#include "algo/agree/signature.h"
#include "algo/algo.h"
#include "reduce/reduce.h"

#define ROOM_MIN 64 /* the smallest room that is not 0 */
#define SHRINK_AFTER 8

_Static_assert((ROOM_MIN << (AGREE_PACKET_ROOMS - 2)) >= AGREE_INLINE_BYTES,
               "a room class for every room up to AGREE_INLINE_BYTES");

int agree_packet_room_class(size_t room)
{
  int k = 0;
  for (size_t r = ROOM_MIN; room != 0 && r <= room; r <<= 1)
    k++;
  return k;
}

/* The smallest class that holds bytes (<= AGREE_INLINE_BYTES). */
static size_t room_ceil(size_t bytes)
{
  size_t r = ROOM_MIN;
  while (r < bytes)
    r <<= 1;
  return r;
}

/* The largest class of at most bytes, or 0. */
static size_t room_floor(size_t bytes)
{
  if (bytes < ROOM_MIN)
    return 0;
  size_t r = ROOM_MIN;
  while (r * 2 <= bytes && r < AGREE_INLINE_BYTES)
    r <<= 1;
  return r;
}

/* Whether p is the packet of a valid call that sizes the room (an
 * all-reduce, or a reduce-scatter or all-gather whose data it carries) on
 * which every rank so far agrees (every rank, once reduced), and its
 * bytes and algorithm. */
static int data_call_of(const agree_packet_t *p, size_t *bytes, int64_t *algo)
{
  if (!agree_packet_agrees(p) || p->dtype < 0 || p->dtype >= RONDO_DTYPE_COUNT || p->count <= 0)
    return 0;
  if (p->coll != AGREE_ALLREDUCE && p->coll != AGREE_REDUCE_SCATTER &&
      p->coll != AGREE_ALLGATHER)
    return 0;
  *bytes = (size_t)p->count * rondo_dtype_size((rondo_dtype_t)p->dtype);
  *algo = p->algo;
  return 1;
}

/* Whether p carries inline data, and its length. */
static int carries(const agree_packet_t *p, size_t *bytes)
{
  int64_t algo;
  return data_call_of(p, bytes, &algo) && algo == RONDO_ALGO_MPI && *bytes <= (size_t)p->room;
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* The data reduced with rondo's kernels when both packets carry the same
 * inline all-reduce, the partial result of the lower ranks first (as
 * reduce_ordered does), so two partners combining the same two partials
 * get the same bytes even where operand order shows (NaN payloads). */
void agree_packet_combine(const agree_packet_t *a, agree_packet_t *b)
{
  size_t na, nb;
  if (carries(a, &na) && carries(b, &nb) && agree_packet_same_call(a, b)) {
    const unsigned char *lo =
        a->first < b->first ? agree_packet_data((agree_packet_t *)a) : agree_packet_data(b);
    const unsigned char *hi =
        a->first < b->first ? agree_packet_data(b) : agree_packet_data((agree_packet_t *)a);
    rondo_op_t op = (rondo_op_t)a->op;
    reduce_apply(agree_packet_data(b), lo, hi, (size_t)a->count, (rondo_dtype_t)a->dtype,
                 op == RONDO_AVG ? RONDO_SUM : op);
  }
  agree_packet_combine_header(a, b);
}

void agree_packet_combine_header(const agree_packet_t *a, agree_packet_t *b)
{
  b->sig = MAX(a->sig, b->sig);
  b->not_sig = MAX(a->not_sig, b->not_sig);
  b->count = MAX(a->count, b->count);
  b->coll = MAX(a->coll, b->coll);
  b->dtype = MAX(a->dtype, b->dtype);
  b->op = MAX(a->op, b->op);
  b->algo = MAX(a->algo, b->algo);
  b->failed = MAX(a->failed, b->failed);
  b->leaving = MAX(a->leaving, b->leaving);
  b->first = MIN(a->first, b->first);
  b->rides = MIN(a->rides, b->rides);
}

int agree_packet_same_call(const agree_packet_t *a, const agree_packet_t *b)
{
  return agree_packet_agrees(a) && agree_packet_agrees(b) && a->sig == b->sig;
}

int agree_packet_rides(const agree_packet_t *p) { return p->rides && agree_packet_agrees(p); }

size_t agree_packet_recv_bytes(rondo_comm_t comm)
{
  return sizeof(agree_packet_t) + comm->agree->room;
}

size_t agree_packet_data_bytes(const agree_packet_t *p)
{
  size_t n;
  return carries(p, &n) ? n : 0;
}

size_t agree_packet_sent_bytes(const agree_packet_t *p)
{
  return sizeof(agree_packet_t) + agree_packet_data_bytes(p);
}

void agree_packet_next_room(rondo_comm_t comm, const agree_packet_t *all)
{
  size_t bytes, room = comm->agree->room;
  int64_t algo;
  if (!data_call_of(all, &bytes, &algo))
    return;
  if (algo == RONDO_ALGO_MPI && bytes <= AGREE_INLINE_BYTES) {
    size_t c = room_ceil(bytes);
    if (c >= room) {
      room = c;
    } else {
      comm->agree->recent = c > comm->agree->recent ? c : comm->agree->recent;
      if (++comm->agree->smaller < SHRINK_AFTER)
        return;
      room = comm->agree->recent;
    }
  } else {
    size_t cap = room_floor(bytes / 16);
    if (room <= cap)
      return;
    room = cap;
  }
  comm->agree->room = room;
  comm->agree->smaller = 0;
  comm->agree->recent = 0;
}
