/*
 * The argument check's exchange across nodes (exchange.c): every
 * rank's packet combined into every rank's, by rondo's own recursive
 * doubling over point-to-point messages, where an all-reduce may send its
 * own data in the same steps (a rider) and, where nodes are blocks of
 * several ranks, larger inline data crosses from one rank a node, or by
 * one MPI all-reduce, which MPICH makes node-aware where nodes hold
 * several ranks; chosen once per comm (algo_check_by_exchange).
 * across.c runs it. Internal (prefix agree_).
 */
#ifndef RONDO_ALGO_AGREE_EXCHANGE_H
#define RONDO_ALGO_AGREE_EXCHANGE_H

#include "algo/agree/packet.h"

/* The most data of one step that travels in the packet's message: as much
 * as the packet's own room (16 KiB, 8 KiB under Open MPI), so a packet's
 * receive holds either. */
#define AGREE_RIDER_INLINE_BYTES AGREE_INLINE_BYTES

/* A collective whose data rides in the exchange (Rabenseifner's halving,
 * the reduce-scatter's recursive halving, the all-gather's recursive
 * doubling; "reduce" places what came).
 * step is the exchange's: 0 the fold of a rank below 2 (size - pof2) onto
 * its odd neighbour, then 1, 2, 4 .. pof2/2, the distance in new ranks.
 * The exchange asks for buffers only while this rank's packet says the
 * data rides (agree_packet_rides): what to send, where the peer's data
 * goes (the receive is posted before the peer's packet is in, so the data
 * need not wait for it), and, once the peer's packet showed the same call, to
 * reduce what came. A step's data of at most AGREE_RIDER_INLINE_BYTES
 * travels in the packet's own message, after its header (one message a
 * step); larger data is a second message. A rider that sent but did not
 * receive in a step is out of step, and so is the whole check: it fails. */
struct agree_rider {
  void (*send_buf)(agree_rider_t *r, int step, const void **buf, size_t *bytes);
  void (*recv_buf)(agree_rider_t *r, int step, void **buf, size_t *bytes);
  void (*reduce)(agree_rider_t *r, int step, int peer);
};

/* Whether comm's check is rondo's own exchange, where data can ride, not an
 * MPI all-reduce (algo_check_by_exchange chose it). Equal on every rank. */
int agree_by_exchange(rondo_comm_t comm);
/* In rondo's exchange where a node's first rank carries the inline data
 * across (agree_leaders_carry), the bytes above which it does
 * (algo_check_home_from); SIZE_MAX where it never does. Equal on every
 * rank. */
size_t agree_home_from(rondo_comm_t comm);
/* Sets the two above, once the comm knows its topology (lib/comm, from
 * algo_check_by_exchange and algo_check_home_from; a cross comm's: 1 and
 * SIZE_MAX). Equal on every rank. */
void agree_choose_exchange(rondo_comm_t comm, int by_exchange, size_t home_from);

/* Whether rondo's exchange on comm sends the inline data across nodes from
 * each node's first rank alone: nodes of several ranks that are blocks of
 * consecutive ranks (topo->blocks), their size and number powers of two.
 * Equal on every rank. */
int agree_leaders_carry(rondo_comm_t comm);

/* How comm's packets cross nodes, in words for the topology line and the
 * log: "rondo's exchange, inline data above N B across from one rank a
 * node", "rondo's exchange" or "MPI's all-reduce". */
void agree_exchange_describe(rondo_comm_t comm, char *buf, size_t len);

/* Combines every rank's packet into *mine (agree_packet_recv_bytes(comm)
 * bytes; the same result on every rank). rider: this rank's data rides
 * (only where agree_by_exchange), or NULL.
 * poll: called between the tests of a wait that naps (agree_leave), or
 * NULL to wait in algo_waitall. Collective. */
rondo_status_t agree_exchange(rondo_comm_t comm, agree_packet_t *mine, agree_rider_t *rider,
                              void (*poll)(rondo_comm_t));

/* Frees the packets' MPI datatypes and op (rondo_finalize, while MPI is
 * usable). */
void agree_exchange_free(void);

/* A nap between the polls of a wait that may be long (another rank still
 * busy elsewhere): from 20 us, doubling up to 1 ms, never spinning. */
void agree_nap(double *nap);

#endif /* RONDO_ALGO_AGREE_EXCHANGE_H */
