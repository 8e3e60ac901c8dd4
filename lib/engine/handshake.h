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
#include "engine/inflight.h"
#include "engine/nap.h"
#include "engine/stall.h"

typedef struct {
  MPI_Comm mpi;       /* the engine's (set by eng_hello_init) */
  int rank, size;
  MPI_Request *reqs;  /* rank 0: the hellos + the reduction; others: hello + reduction */
  int posted;         /* its requests are posted (not yet all done) */
  int working, anyone; /* its reduction's buffers: this rank / some rank has work */
  char *arrived;      /* rank 0: who said hello; made with the engine, so that no
                         rank finds itself short of memory alone then */
  int done;           /* the rendezvous is over */
} eng_hello_t;

/* With the engine (its requests' arrays, over mpi, this rank of size) and
 * after it. */
rondo_status_t eng_hello_init(eng_hello_t *h, MPI_Comm mpi, int rank, int size);
void eng_hello_free(eng_hello_t *h);
/* Its first half: this rank's hello and its part of the reduction. */
rondo_status_t eng_hello_post(eng_hello_t *h, int working);
/* Whether it is complete (*all), without waiting. */
rondo_status_t eng_hello_test(eng_hello_t *h, int *all);
/* No rank can start an engine: no rendezvous is needed. */
void eng_hello_skip(eng_hello_t *h);
/* It is over (st: how): its requests and tables go. */
void eng_hello_end(eng_hello_t *h, rondo_status_t st);

/* What the engine thread waits with: its requests keep arriving and may
 * stall meanwhile (stall.c). */
typedef struct {
  eng_flight_t *flight;
  eng_nap_t *nap;
  eng_stall_t *stall;
  const struct rondo_comm *owner; /* its limits (eng_stall_limits) */
} eng_hello_wait_t;

/* The whole rendezvous, waiting. on_thread: the engine thread's (NULL
 * elsewhere: it sleeps). *anyone: some rank has work. */
rondo_status_t eng_rendezvous(eng_hello_t *h, int working, const eng_hello_wait_t *on_thread,
                              int *anyone);

#endif /* RONDO_ENGINE_HANDSHAKE_H */
