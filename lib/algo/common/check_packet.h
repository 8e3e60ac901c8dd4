/*
 * The argument check's packet across nodes (check_packet.c): what one
 * rank's MPI all-reduce of the check carries, its MPI datatype and op, and
 * how much inline data it has room for. agree.c fills and reads it.
 * Internal (prefix packet_).
 */
#ifndef RONDO_ALGO_CHECK_PACKET_H
#define RONDO_ALGO_CHECK_PACKET_H

#include "algo/common/agree.h"

/* The header: [failed, -lowest failed rank, then for the collective and
 * each field: value, ~value], reduced by MAX; the lowest rank whose data
 * the packet holds (MIN); -the lowest rank destroying the comm, or -size
 * (MAX); the room. Then room bytes of inline data. */
enum { PACKET_WORDS = 2 + 2 * (AGREE_SIG_MAX + 1) };
typedef struct {
  int64_t v[PACKET_WORDS];
  int64_t first;
  int64_t leaving;
  int64_t room; /* bytes of data after the header: equal on every rank */
} packet_t;

/* Room for the largest packet, header included (a caller's buffer). */
#define PACKET_MAX_BYTES (sizeof(packet_t) + AGREE_INLINE_BYTES)

static inline unsigned char *packet_data(packet_t *p) { return (unsigned char *)(p + 1); }

/* Field i of a packet (0: the collective; for an all-reduce 1 count,
 * 2 dtype, 3 op, 4 algorithm: rondo_allreduce_algo's order). */
static inline int64_t packet_field(const packet_t *p, int i) { return p->v[2 + 2 * i]; }

/* The MPI datatype of a packet with comm's present room, and the op. */
rondo_status_t packet_mpi(rondo_comm_t comm, MPI_Datatype *type, MPI_Op *op);
/* After every rank's packets were reduced into all: the room of comm's next
 * packet, computed from all alone, so equal on every rank. */
void packet_next_room(rondo_comm_t comm, const packet_t *all);
/* Frees the datatypes and the op (rondo_finalize, while MPI is usable). */
void packet_free(void);

#endif /* RONDO_ALGO_CHECK_PACKET_H */
