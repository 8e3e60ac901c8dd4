/*
 * One negotiation cycle: which names every rank has submitted, in one order
 * that is the same on every rank (the fast path of cache bits, or the slow
 * path through rank 0's coordinator).
 */
#ifndef RONDO_ENGINE_NEGOTIATE_H
#define RONDO_ENGINE_NEGOTIATE_H

#include "base/base.h"
#include "engine/responses.h"

struct engine;

/* Words of one cycle's bit vector: the flags, then one bit per cache entry. */
int eng_bit_words(int cache_capacity);
/* One negotiation, collective over e->mpi. */
rondo_status_t eng_negotiate(struct engine *e, int stopping, eng_cycle_t *out);

#endif /* RONDO_ENGINE_NEGOTIATE_H */
