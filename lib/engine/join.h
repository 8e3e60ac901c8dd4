/*
 * rondo_join: a rank with no more work joins, and serves the others'
 * all-reduces with the identity (stand-ins, execute.c) until every rank
 * has joined. The engine thread's side; eng_join (engine.c) is the caller's.
 */
#ifndef RONDO_ENGINE_JOIN_H
#define RONDO_ENGINE_JOIN_H

#include <stdint.h>

#include "base/base.h"
#include "engine/nap.h"

typedef struct {
  /* under the engine's lock (eng_sync_t): */
  int wanted;           /* rondo_join called and not yet done */
  int done, last;       /* result for rondo_join (done -1: the engine stopped,
                           -2: a rank left, see why) */
  char why[128];        /* done -2: which ranks */
  /* cycles only: */
  int joined;           /* this rank has joined */
  uint64_t cycle;       /* the cycle it joined in */
} eng_join_t;

/* The caller's side (engine.c's eng_join), under s->lock, the engine
 * started: asks the engine thread to join and waits until it has, every
 * rank having joined (*last_rank: the last one), or fails. */
rondo_status_t eng_join_wait_locked(eng_join_t *j, eng_sync_t *s, int *last_rank);
/* Cycles only: this rank, which has nothing pending, joins now (in cycle). */
void eng_join_enter(eng_join_t *j, uint64_t cycle);
/* Everyone has joined: agree on the last one over mpi (rank of size,
 * waiting as n says) and release rondo_join. */
rondo_status_t eng_join_finish(eng_join_t *j, eng_nap_t *n, MPI_Comm mpi, int rank, int size);
/* Ranks (bits of stopping, of size) shut down while this one has joined:
 * they will never join, so rondo_join fails, naming them. */
void eng_join_leave(eng_join_t *j, eng_sync_t *s, int size, uint64_t stopping);
/* The engine stopped: a waiting rondo_join fails. Under the lock. */
void eng_join_abandon_locked(eng_join_t *j);

#endif /* RONDO_ENGINE_JOIN_H */
