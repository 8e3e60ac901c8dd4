/*
 * How an engine's threads wait: naps and deadlines, the poll of an MPI
 * request (yield a little, then sleep, longer and longer), and which thread
 * runs cycles now (the engine thread, or a helper in rondo_wait).
 */
#ifndef RONDO_ENGINE_NAP_H
#define RONDO_ENGINE_NAP_H

#include <time.h>

#include "base/base.h"

struct engine;

/* Poll intervals shared by the loop and the rendezvous. */
#define ENG_IDLE_POLL_MAX_S 0.01  /* an idle engine's longest sleep between polls */
#define ENG_RETRY_MIN_S 50e-6     /* first pause before negotiating again for late ranks */

void eng_sleep(double s);
/* pthread_cond_timedwait's deadline, s seconds from now. */
struct timespec eng_deadline(double s);
/* An idle engine's nap: s seconds, or until something is submitted (or stop
 * or join). Returns 1 if work arrived. */
int eng_idle_nap(struct engine *e, double s);
/* Waits for an MPI request, sleeping between polls (no spinning on an idle
 * core); the policy depends on e's state and on which thread waits. */
rondo_status_t eng_wait(struct engine *e, MPI_Request *req);

/* Which thread runs an engine's cycles: ENG_THREAD_ENGINE always, a helper
 * (ENG_THREAD_HELPER) while it helps, 0 any other. Callbacks run there,
 * where rondo_wait must refuse. */
enum { ENG_THREAD_ENGINE = 1, ENG_THREAD_HELPER = 2 };
void eng_set_in_cycle(int who);
int eng_in_cycle(void);

#endif /* RONDO_ENGINE_NAP_H */
