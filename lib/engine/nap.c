/*
 * How an engine's threads wait (nap.h).
 */
#include "engine/nap.h"

#include "topo/topo.h"

#include <sched.h>

/* Polls of a busy engine: it yields SPIN_S (or SPIN_POLLS times), then
 * sleeps 20 us at a time for BUSY_FINE_S, then longer, up to
 * POLL_SLEEP_MAX_S. An idle engine sleeps from IDLE_POLL_S up to
 * ENG_IDLE_POLL_MAX_S. */
#define SPIN_S 100e-6
#define SPIN_POLLS 64
#define POLL_SLEEP_MAX_S 0.002
#define BUSY_FINE_S 0.002
#define IDLE_POLL_S 0.0005

/* This thread runs an engine's cycles (ENG_THREAD_*). */
static _Thread_local int in_cycle;

void eng_set_in_cycle(int who) { in_cycle = who; }
int eng_in_cycle(void) { return in_cycle; }

void eng_sleep(double s)
{
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

struct timespec eng_deadline(double s)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)s;
  ts.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

int eng_idle_nap(eng_nap_t *n, double s)
{
  struct timespec ts = eng_deadline(s);
  pthread_mutex_lock(&n->sync->lock);
  if (!n->news_locked(n->arg))
    pthread_cond_timedwait(&n->sync->work, &n->sync->lock, &ts);
  int woke = n->news_locked(n->arg);
  pthread_mutex_unlock(&n->sync->lock);
  return woke;
}

/* A busy engine expects the others within microseconds: it yields a while,
 * then sleeps 20 us at a time for the first 2 ms (a peer that is running
 * arrives within that), then longer, doubling up to 2 ms. A helper (the
 * application's thread, blocked in rondo_wait as in a blocking call) spins
 * instead of yielding, as the blocking calls do: on a virtual machine a
 * sched_yield is a system call of about 1 us at every poll (a 1 MiB
 * all-gather took 58-60 us through the engine against 39 blocking; 31-45
 * spinning). How long it waits so depends on whose core it is on:
 *   - a helper and an engine thread with a core of its own poll for
 *     SPIN_S (the helper spinning, the engine thread yielding), counted in
 *     time: two ranks that poll back-to-back collectives with a few yields
 *     and then a sleep fall into step with each other's sleeps (each waits
 *     out the other's nap: 60-110 us per collective instead of 4, measured
 *     with MPICH's nonblocking all-reduce);
 *   - an engine thread that shares the application's core (n->pin_to_submitter) and
 *     any thread on a node with more ranks than cores yield SPIN_POLLS
 *     times: each yield hands the core to the application (submitting a
 *     burst, say) and back, and the others need the core more than this
 *     rank needs a quick answer.
 * An idle engine (the last cycle found no work anywhere) is waiting for
 * ranks that sleep too: it sleeps from the start, 0.5 ms doubling up to
 * 10 ms. */
rondo_status_t eng_wait(eng_nap_t *n, MPI_Request *req)
{
  int idle = n->idle;
  double nap = idle ? IDLE_POLL_S : 20e-6, most = idle ? ENG_IDLE_POLL_MAX_S : POLL_SLEEP_MAX_S;
  double start = rondo__now();
  int by_time = !n->oversubscribed && (in_cycle == ENG_THREAD_HELPER || !n->pin_to_submitter);
  for (unsigned polls = 0;; polls++) {
    int done = 0;
    MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (done)
      return RONDO_SUCCESS;
    double now = rondo__now();
    if (!idle && (by_time ? now - start < SPIN_S : polls < SPIN_POLLS)) {
      if (in_cycle == ENG_THREAD_HELPER && !n->oversubscribed)
        topo_pause();
      else
        sched_yield();
      continue;
    }
    if (idle && eng_idle_nap(n, nap)) {
      /* local work arrived: the other ranks are probably busy too */
      idle = 0;
      nap = 20e-6;
      most = POLL_SLEEP_MAX_S;
      start = rondo__now();
      continue;
    }
    if (!idle)
      eng_sleep(nap);
    if (idle || now - start > BUSY_FINE_S)
      nap = nap * 2 < most ? nap * 2 : most;
  }
}

