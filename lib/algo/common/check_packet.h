/*
 * The argument check's packet across nodes (check_packet.c): what one
 * rank sends in each step of the check's exchange (check_exchange.c), how
 * two packets combine, and how much inline data it has room for. agree.c
 * fills and reads it. Internal (prefix packet_).
 */
#ifndef RONDO_ALGO_CHECK_PACKET_H
#define RONDO_ALGO_CHECK_PACKET_H

#include "algo/common/agree.h"

/* The header: [failed, -lowest failed rank, then for the collective and
 * each field: value, ~value], combined by MAX; the lowest rank whose data
 * the packet holds (MIN); -the lowest rank destroying the comm, or -size
 * (MAX); whether every rank's all-reduce sends its own data in the
 * exchange's steps (MIN; check_exchange.h); the room. Then room bytes of
 * inline data. */
enum { PACKET_WORDS = 2 + 2 * (AGREE_SIG_MAX + 1) };
typedef struct {
  int64_t v[PACKET_WORDS];
  int64_t first;
  int64_t leaving;
  int64_t rides;
  int64_t room; /* bytes of data after the header: equal on every rank */
} packet_t;

/* Room for the largest packet, header included (a caller's buffer). */
#define PACKET_MAX_BYTES (sizeof(packet_t) + AGREE_INLINE_BYTES)

static inline unsigned char *packet_data(packet_t *p) { return (unsigned char *)(p + 1); }

/* Field i of a packet (0: the collective; for an all-reduce 1 count,
 * 2 dtype, 3 op, 4 algorithm: rondo_allreduce_algo's order). */
static inline int64_t packet_field(const packet_t *p, int i) { return p->v[2 + 2 * i]; }

/* The rooms a packet can have: 0, then 64 B to AGREE_INLINE_BYTES in
 * powers of two; room's class, 0..PACKET_ROOMS-1 (the exchange's MPI
 * datatype per class). */
enum { PACKET_ROOMS = 10 };
int packet_room_class(size_t room);
/* The bytes of a packet with comm's present room. */
size_t packet_bytes(rondo_comm_t comm);
/* inout = the combination of in and inout (the same in either order): the
 * header's words by MAX and MIN, and the inline data reduced when both
 * carry the same all-reduce. */
void packet_combine(const packet_t *in, packet_t *inout);
/* Whether every rank whose packet p combines made the same valid call and
 * sends its own data after its packet (p->rides): then so does the rank
 * that sent p, in this step of the exchange. */
int packet_rides(const packet_t *p);
/* After every rank's packets were reduced into all: the room of comm's next
 * packet, computed from all alone, so equal on every rank. */
void packet_next_room(rondo_comm_t comm, const packet_t *all);

#endif /* RONDO_ALGO_CHECK_PACKET_H */
