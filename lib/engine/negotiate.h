/*
 * One negotiation cycle: which names every rank has submitted, in one order
 * that is the same on every rank (the fast path of cache bits, or the slow
 * path through rank 0's coordinator).
 */
#ifndef RONDO_ENGINE_NEGOTIATE_H
#define RONDO_ENGINE_NEGOTIATE_H

#include "base/base.h"
#include "engine/cache.h"
#include "engine/fusion.h"
#include "engine/packet.h"
#include "engine/responses.h"
#include "engine/stall.h"

/* What a negotiation works with: the runners' context (the comms, this
 * rank's place, the in-flight requests, join, waits, the trace) and the
 * three objects only the negotiation uses (cycles only). */
typedef struct {
  eng_run_t *run;
  eng_cache_t *cache;         /* cache.c */
  eng_packet_t *packet;       /* packet.c */
  eng_stall_t *stall;         /* stall.c */
} eng_negotiator_t;

/* Words of one cycle's bit vector: the flags, then one bit per cache entry. */
int eng_bit_words(int cache_capacity);
/* One negotiation, collective over n->run->mpi. */
rondo_status_t eng_negotiate(eng_negotiator_t *n, int stopping, eng_cycle_t *out);

#endif /* RONDO_ENGINE_NEGOTIATE_H */
