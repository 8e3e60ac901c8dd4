/*
 * How an engine's threads wait: naps and deadlines, the poll of an MPI
 * request (yield a little, then sleep, longer and longer), and which thread
 * runs cycles now (the engine thread, or a helper in rondo_wait).
 */
#ifndef RONDO_ENGINE_NAP_H
#define RONDO_ENGINE_NAP_H

#include <pthread.h>
#include <time.h>

#include "base/base.h"

/* The engine's lock and its two signals, shared by the objects it guards
 * (the in-flight table and queue, join, the engine's flags; which fields
 * are under it is written beside each). Whoever takes run (the cycle
 * token, assembly.h) takes it first: run is never taken under this lock. */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t work;        /* submissions, join, stop -> engine thread */
  pthread_cond_t done;        /* join finished -> rondo_join; a helper left */
} eng_sync_t;

/* How one engine's threads wait: what they need to know of it. */
typedef struct {
  eng_sync_t *sync;
  /* Under sync->lock: whether there is news for the engine thread (a
   * submission, stop or join); the engine that assembles this says. */
  int (*news_locked)(void *arg);
  void *arg;
  int pin_to_submitter;       /* no spare core: the thread follows the submitter */
  int oversubscribed;         /* more ranks than cores on this node: shorter spins */
  int idle;                   /* cycles only: the last cycle found no work on any rank */
} eng_nap_t;

/* Poll intervals shared by the loop and the rendezvous. */
#define ENG_IDLE_POLL_MAX_S 0.01  /* an idle engine's longest sleep between polls */
#define ENG_RETRY_MIN_S 50e-6     /* first pause before negotiating again for late ranks */

void eng_sleep(double s);
/* pthread_cond_timedwait's deadline, s seconds from now. */
struct timespec eng_deadline(double s);
/* An idle engine's nap: s seconds, or until something is submitted (or stop
 * or join). Returns 1 if work arrived. */
int eng_idle_nap(eng_nap_t *n, double s);
/* Waits for an MPI request, sleeping between polls (no spinning on an idle
 * core); the policy depends on n's state and on which thread waits. */
rondo_status_t eng_wait(eng_nap_t *n, MPI_Request *req);

/* Which thread runs an engine's cycles: ENG_THREAD_ENGINE always, a helper
 * (ENG_THREAD_HELPER) while it helps, 0 any other. Callbacks run there,
 * where rondo_wait must refuse. */
enum { ENG_THREAD_ENGINE = 1, ENG_THREAD_HELPER = 2 };
void eng_set_in_cycle(int who);
int eng_in_cycle(void);

#endif /* RONDO_ENGINE_NAP_H */
