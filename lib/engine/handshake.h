/*
 * The rendezvous: the first exchange of every rank's engine, before the
 * first negotiation. Every rank says hello to rank 0 (which can then name
 * the missing ones), and all learn whether any rank started its engine for
 * work. A rank that destroys the comm without ever starting its engine
 * meets the others here too.
 */
#ifndef RONDO_ENGINE_HANDSHAKE_H
#define RONDO_ENGINE_HANDSHAKE_H

#include "base/base.h"

struct engine;

typedef struct {
  MPI_Request *reqs;  /* rank 0: the hellos + the reduction; others: hello + reduction */
  int posted;         /* its requests are posted (not yet all done) */
  int working, anyone; /* its reduction's buffers: this rank / some rank has work */
  char *arrived;      /* rank 0: who said hello; made with the engine, so that no
                         rank finds itself short of memory alone then */
  int done;           /* the rendezvous is over */
} eng_hello_t;

/* With the engine (its requests' arrays) and after it. */
rondo_status_t eng_hello_init(struct engine *e);
void eng_hello_free(struct engine *e);
/* Its first half: this rank's hello and its part of the reduction. */
rondo_status_t eng_hello_post(struct engine *e, int working);
/* Whether it is complete (*all), without waiting. */
rondo_status_t eng_hello_test(struct engine *e, int *all);
/* No rank can start an engine: no rendezvous is needed. */
void eng_hello_skip(struct engine *e);
/* It is over (st: how): its requests and tables go. */
void eng_hello_end(struct engine *e, rondo_status_t st);
/* The whole rendezvous, waiting. on_thread: the engine thread, whose waiting
 * requests may stall meanwhile (stall.c). *anyone: some rank has work. */
rondo_status_t eng_rendezvous(struct engine *e, int working, int on_thread, int *anyone);

#endif /* RONDO_ENGINE_HANDSHAKE_H */
