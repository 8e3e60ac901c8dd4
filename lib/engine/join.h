/*
 * rondo_join: a rank with no more work joins, and serves the others'
 * all-reduces with the identity (stand-ins, execute.c) until every rank
 * has joined. The engine thread's side; eng_join (engine.c) is the caller's.
 */
#ifndef RONDO_ENGINE_JOIN_H
#define RONDO_ENGINE_JOIN_H

#include <stdint.h>

#include "base/base.h"

struct engine;

typedef struct {
  /* under e->lock: */
  int wanted;           /* rondo_join called and not yet done */
  int done, last;       /* result for rondo_join (done -1: the engine stopped,
                           -2: a rank left, see why) */
  char why[128];        /* done -2: which ranks */
  /* cycles only: */
  int joined;           /* this rank has joined */
  uint64_t cycle;       /* the cycle it joined in */
} eng_join_t;

/* The caller's side (engine.c's eng_join), under e->lock, the engine
 * started: asks the engine thread to join and waits until it has, every
 * rank having joined (*last_rank: the last one), or fails. */
rondo_status_t eng_join_wait_locked(struct engine *e, int *last_rank);
/* Cycles only: this rank, which has nothing pending, joins now. */
void eng_join_enter(struct engine *e);
/* Everyone has joined: agree on the last one and release rondo_join. */
rondo_status_t eng_join_finish(struct engine *e);
/* Ranks (bits of stopping) shut down while this one has joined: they will
 * never join, so rondo_join fails, naming them. */
void eng_join_leave(struct engine *e, uint64_t stopping);
/* The engine stopped: a waiting rondo_join fails. Under e->lock. */
void eng_join_abandon_locked(struct engine *e);

#endif /* RONDO_ENGINE_JOIN_H */
