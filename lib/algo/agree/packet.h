/*
 * The argument check's packet across nodes (packet.c): what one
 * rank sends in each step of the check's exchange (exchange.c), how
 * two packets combine, and how much inline data it has room for.
 * across.c fills and reads it. Internal (prefix agree_packet_).
 */
#ifndef RONDO_ALGO_AGREE_PACKET_H
#define RONDO_ALGO_AGREE_PACKET_H

#include <stdint.h>

#include "algo/agree/agree.h"

/* The header, 64 bytes. A call is told by sig, signature.c's 64-bit sum of
 * its collective and every field (what the board inside a node compares
 * too): combined by MAX with its complement, so sig == ~not_sig after the
 * exchange says every rank made the same call, and a mismatch is then told
 * in detail by one more all-reduce (across.c). An all-reduce's count, dtype,
 * op and algorithm are here in the clear, since the inline data is reduced
 * by them. Ranks are encoded as size - rank, 0 for none, so MAX finds the
 * lowest. Then room bytes of inline data. */
typedef struct {
  uint64_t sig;     /* the call's sum; 0 where the arguments were bad: MAX */
  uint64_t not_sig; /* ~sig: MAX */
  int64_t count;    /* an all-reduce's count, else 0: MAX */
  int32_t coll;     /* agree_coll_t: MAX */
  int32_t dtype, op, algo; /* an all-reduce's, else 0: MAX */
  int32_t failed;   /* size - the lowest rank whose arguments were bad, or 0: MAX */
  int32_t leaving;  /* size - the lowest rank destroying the comm, or 0: MAX */
  int32_t first;    /* the lowest rank whose data the packet holds: MIN */
  int32_t rides;    /* every rank's all-reduce sends its own data in the
                       exchange's steps (exchange.h): MIN */
  int32_t room;     /* bytes of data after the header: equal on every rank */
  int32_t rider_inline; /* in one step's message only: 1 where the rider's
                           data follows the header (exchange.c); 0 in a
                           packet that is held or combined */
} agree_packet_t;
/* Room for the largest packet, header included (a caller's buffer). */
#define AGREE_PACKET_MAX_BYTES (sizeof(agree_packet_t) + AGREE_INLINE_BYTES)

static inline unsigned char *agree_packet_data(agree_packet_t *p)
{
  return (unsigned char *)(p + 1);
}

/* Whether every rank whose packet p combines made the same call, and no
 * rank's arguments were bad. */
static inline int agree_packet_agrees(const agree_packet_t *p)
{
  return p->failed == 0 && p->sig != 0 && p->sig == ~p->not_sig;
}

/* The rooms a packet can have: 0, then 64 B to AGREE_INLINE_BYTES in
 * powers of two; room's class, 0..AGREE_PACKET_ROOMS-1 (the exchange's MPI
 * datatype per class). */
enum { AGREE_PACKET_ROOMS = 10 };
int agree_packet_room_class(size_t room);
/* The bytes of a packet with comm's present room: what a receive takes. */
size_t agree_packet_recv_bytes(rondo_comm_t comm);
/* The bytes of p worth sending: its header and the data it carries, if
 * any (the room beyond stays home; a receive of agree_packet_recv_bytes
 * takes the shorter message, and agree_packet_combine reads only data
 * that was sent). */
size_t agree_packet_sent_bytes(const agree_packet_t *p);
/* The inline data p carries: an agreed all-reduce's bytes, or 0. */
size_t agree_packet_data_bytes(const agree_packet_t *p);
/* inout = the combination of in and inout (the same in either order): the
 * header's fields by MAX and MIN, and the inline data reduced when both
 * carry the same all-reduce. */
void agree_packet_combine(const agree_packet_t *in, agree_packet_t *inout);
/* The same for the headers alone: inout's data stays as it is. */
void agree_packet_combine_header(const agree_packet_t *in, agree_packet_t *inout);
/* Whether packets a and b each agree (agree_packet_agrees) on the same call. */
int agree_packet_same_call(const agree_packet_t *a, const agree_packet_t *b);
/* Whether every rank whose packet p combines made the same valid call and
 * sends its own data after its packet (p->rides): then so does the rank
 * that sent p, in this step of the exchange. */
int agree_packet_rides(const agree_packet_t *p);
/* After every rank's packets were reduced into all: the room of comm's next
 * packet, computed from all alone, so equal on every rank. */
void agree_packet_next_room(rondo_comm_t comm, const agree_packet_t *all);

#endif /* RONDO_ALGO_AGREE_PACKET_H */
