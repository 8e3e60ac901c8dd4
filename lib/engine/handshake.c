/*
 * The rendezvous of every rank's engine (handshake.h): made by the engine
 * thread when it starts, or by a rank that destroys the comm without ever
 * having started its engine (which may have posted it already:
 * eng_leave_begin).
 */
#include "engine/handshake.h"

#include "engine/engine.h"
#include "engine/inflight.h"
#include "engine/stall.h"
#include "engine/nap.h"

#include <stdio.h>
#include <stdlib.h>

enum { TAG_HELLO = 1 };

static int hello_count(const struct engine *e)
{
  return e->rank == 0 ? e->size : 2; /* rank 0: the hellos + the reduction */
}

rondo_status_t eng_hello_init(struct engine *e)
{
  e->hello.reqs = malloc((size_t)hello_count(e) * sizeof *e->hello.reqs);
  e->hello.arrived = e->rank == 0 ? calloc((size_t)e->size, 1) : NULL;
  if (e->hello.reqs == NULL || (e->rank == 0 && e->hello.arrived == NULL)) {
    eng_hello_free(e);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: rendezvous");
  }
  return RONDO_SUCCESS;
}

void eng_hello_free(struct engine *e)
{
  free(e->hello.reqs);
  free(e->hello.arrived);
  e->hello.reqs = NULL;
  e->hello.arrived = NULL;
}

rondo_status_t eng_hello_post(struct engine *e, int working)
{
  int n = hello_count(e);
  MPI_Request *reqs = e->hello.reqs;
  for (int i = 0; i < n; i++)
    reqs[i] = MPI_REQUEST_NULL;
  e->hello.posted = 1;
  e->hello.working = working;
  e->hello.anyone = 0;
  if (e->rank == 0)
    for (int r = 1; r < e->size; r++)
      MPI_CHECK(MPI_Irecv(NULL, 0, MPI_BYTE, r, TAG_HELLO, e->mpi, &reqs[r - 1]));
  else
    MPI_CHECK(MPI_Isend(NULL, 0, MPI_BYTE, 0, TAG_HELLO, e->mpi, &reqs[0]));
  MPI_CHECK(MPI_Iallreduce(&e->hello.working, &e->hello.anyone, 1, MPI_INT, MPI_MAX, e->mpi,
                           &reqs[n - 1]));
  return RONDO_SUCCESS;
}

rondo_status_t eng_hello_test(struct engine *e, int *all)
{
  int n = hello_count(e);
  *all = 1;
  for (int i = 0; i < n; i++) {
    int done = 0;
    MPI_CHECK(MPI_Test(&e->hello.reqs[i], &done, MPI_STATUS_IGNORE));
    if (done && e->hello.arrived != NULL && i < n - 1)
      e->hello.arrived[i + 1] = 1;
    *all &= done;
  }
  return RONDO_SUCCESS;
}

void eng_hello_skip(struct engine *e) { e->hello.done = 1; }

void eng_hello_end(struct engine *e, rondo_status_t st)
{
  for (int i = 0; e->hello.posted && st != RONDO_SUCCESS && i < hello_count(e); i++)
    if (e->hello.reqs[i] != MPI_REQUEST_NULL)
      MPI_CHECK_LOG(MPI_Request_free(&e->hello.reqs[i]));
  eng_hello_free(e);
  e->hello.posted = 0;
  e->hello.done = 1;
}

/* Waiting for the rendezvous on the engine thread: requests keep arriving and
 * age. Past RONDO_STALL_WARN_SEC rank 0 names the ranks it has not heard
 * from (arrived: its list, or NULL); past RONDO_STALL_ABORT_SEC every rank
 * fails its waiting requests with RONDO_ERR_STALLED (the stall inspector
 * says when). The rendezvous itself goes on: the missing ranks join it
 * when they first use the engine or destroy the comm. */
static void stalled_rendezvous(struct engine *e, const char *arrived)
{
  eng_stall_limits_t lim = eng_stall_limits(e->owner);
  double now = rondo__now(), oldest = 0;
  for (size_t i = 0; i < e->npending; i++)
    if (e->pending[i] != NULL && now - e->pending[i]->t_submit > oldest)
      oldest = now - e->pending[i]->t_submit;
  int abort_now = eng_stall_abort_due(lim, oldest);
  int warn_now = !abort_now && e->rank == 0 && eng_stall_warn_due(&e->stall, lim, now, oldest);
  if (!abort_now && !warn_now)
    return; /* the usual nap: nothing to name */
  char missing[128] = "the other ranks";
  if (arrived != NULL) {
    size_t used = (size_t)snprintf(missing, sizeof missing, "rank(s) ");
    for (int r = 1, shown = 0; r < e->size && used + 16 < sizeof missing; r++)
      if (!arrived[r])
        used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%d",
                                 shown++ ? "," : "", r);
  }
  if (abort_now) {
    char msg[512];
    for (size_t i = 0; i < e->npending; i++) {
      struct rondo_request *r = e->pending[i];
      if (r == NULL || !eng_stall_abort_due(lim, now - r->t_submit))
        continue;
      snprintf(msg, sizeof msg,
               "'%s' stalled: %s did not start this comm's engine (no request, no join) "
               "within the comm's timeout of %g s (RONDO_STALL_ABORT_SEC, "
               "rondo_comm_set_timeout)",
               r->name, missing, lim.abort);
      eng_complete(e, r, RONDO_ERR_STALLED, msg);
    }
  } else {
    LOG_WARN("stall: request(s) waited %.0f s: %s did not start this comm's engine (they "
             "submitted no request and did not join). Every rank must submit the same names; "
             "set RONDO_STALL_ABORT_SEC to fail them instead of waiting",
             oldest, missing);
  }
}

rondo_status_t eng_rendezvous(struct engine *e, int working, int on_thread, int *anyone)
{
  rondo_status_t st = e->hello.posted ? RONDO_SUCCESS : eng_hello_post(e, working);
  double nap = 20e-6;
  while (st == RONDO_SUCCESS) {
    int all = 0;
    st = eng_hello_test(e, &all);
    if (st != RONDO_SUCCESS || all)
      break;
    if (on_thread) {
      eng_take_queue(e);
      stalled_rendezvous(e, e->hello.arrived);
      eng_prune_pending(e);
      eng_idle_nap(e, nap);
    } else {
      eng_sleep(nap);
    }
    nap = nap * 2 < ENG_IDLE_POLL_MAX_S ? nap * 2 : ENG_IDLE_POLL_MAX_S;
  }
  *anyone = e->hello.anyone;
  eng_hello_end(e, st);
  return st;
}

