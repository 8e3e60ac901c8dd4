/*
 * The rendezvous of every rank's engine (handshake.h): made by the engine
 * thread when it starts, or by a rank that destroys the comm without ever
 * having started its engine (which may have posted it already:
 * eng_leave_begin).
 */
#include "engine/handshake.h"

#include "engine/request.h"

#include <stdio.h>
#include <stdlib.h>

enum { TAG_HELLO = 1 };

static int hello_count(const eng_hello_t *h)
{
  return h->rank == 0 ? h->size : 2; /* rank 0: the hellos + the reduction */
}

rondo_status_t eng_hello_init(eng_hello_t *h, MPI_Comm mpi, int rank, int size)
{
  h->mpi = mpi;
  h->rank = rank;
  h->size = size;
  h->reqs = malloc((size_t)hello_count(h) * sizeof *h->reqs);
  h->arrived = h->rank == 0 ? calloc((size_t)h->size, 1) : NULL;
  if (h->reqs == NULL || (h->rank == 0 && h->arrived == NULL)) {
    eng_hello_free(h);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: rendezvous");
  }
  return RONDO_SUCCESS;
}

void eng_hello_free(eng_hello_t *h)
{
  free(h->reqs);
  free(h->arrived);
  h->reqs = NULL;
  h->arrived = NULL;
}

rondo_status_t eng_hello_post(eng_hello_t *h, int working)
{
  int n = hello_count(h);
  MPI_Request *reqs = h->reqs;
  for (int i = 0; i < n; i++)
    reqs[i] = MPI_REQUEST_NULL;
  h->posted = 1;
  h->working = working;
  h->anyone = 0;
  if (h->rank == 0)
    for (int r = 1; r < h->size; r++)
      MPI_CHECK(MPI_Irecv(NULL, 0, MPI_BYTE, r, TAG_HELLO, h->mpi, &reqs[r - 1]));
  else
    MPI_CHECK(MPI_Isend(NULL, 0, MPI_BYTE, 0, TAG_HELLO, h->mpi, &reqs[0]));
  MPI_CHECK(MPI_Iallreduce(&h->working, &h->anyone, 1, MPI_INT, MPI_MAX, h->mpi,
                           &reqs[n - 1]));
  return RONDO_SUCCESS;
}

rondo_status_t eng_hello_test(eng_hello_t *h, int *all)
{
  int n = hello_count(h);
  *all = 1;
  for (int i = 0; i < n; i++) {
    int done = 0;
    MPI_CHECK(MPI_Test(&h->reqs[i], &done, MPI_STATUS_IGNORE));
    if (done && h->arrived != NULL && i < n - 1)
      h->arrived[i + 1] = 1;
    *all &= done;
  }
  return RONDO_SUCCESS;
}

void eng_hello_skip(eng_hello_t *h) { h->done = 1; }

void eng_hello_end(eng_hello_t *h, rondo_status_t st)
{
  for (int i = 0; h->posted && st != RONDO_SUCCESS && i < hello_count(h); i++)
    if (h->reqs[i] != MPI_REQUEST_NULL)
      MPI_CHECK_LOG(MPI_Request_free(&h->reqs[i]));
  eng_hello_free(h);
  h->posted = 0;
  h->done = 1;
}

/* Waiting for the rendezvous on the engine thread: requests keep arriving and
 * age. Past RONDO_STALL_WARN_SEC rank 0 names the ranks it has not heard
 * from (arrived: its list, or NULL); past RONDO_STALL_ABORT_SEC every rank
 * fails its waiting requests with RONDO_ERR_STALLED (the stall inspector
 * says when). The rendezvous itself goes on: the missing ranks join it
 * when they first use the engine or destroy the comm. */
static void stalled_rendezvous(const eng_hello_t *h, const eng_hello_wait_t *w,
                               const char *arrived)
{
  eng_stall_limits_t lim = eng_stall_limits(w->owner);
  double now = rondo__now(), oldest = 0;
  for (size_t i = 0; i < eng_pending_count(w->flight); i++) {
    struct rondo_request *r = eng_pending_at(w->flight, i);
    if (r != NULL && now - r->t_submit > oldest)
      oldest = now - r->t_submit;
  }
  int abort_now = eng_stall_abort_due(lim, oldest);
  int warn_now = !abort_now && h->rank == 0 && eng_stall_warn_due(w->stall, lim, now, oldest);
  if (!abort_now && !warn_now)
    return; /* the usual nap: nothing to name */
  char missing[128] = "the other ranks";
  if (arrived != NULL) {
    size_t used = (size_t)snprintf(missing, sizeof missing, "rank(s) ");
    for (int r = 1, shown = 0; r < h->size && used + 16 < sizeof missing; r++)
      if (!arrived[r])
        used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%d",
                                 shown++ ? "," : "", r);
  }
  if (abort_now) {
    char msg[512];
    for (size_t i = 0; i < eng_pending_count(w->flight); i++) {
      struct rondo_request *r = eng_pending_at(w->flight, i);
      if (r == NULL || !eng_stall_abort_due(lim, now - r->t_submit))
        continue;
      snprintf(msg, sizeof msg,
               "'%s' stalled: %s did not start this comm's engine (no request, no join) "
               "within the comm's timeout of %g s (RONDO_STALL_ABORT_SEC, "
               "rondo_comm_set_timeout)",
               r->name, missing, lim.abort);
      eng_complete(w->flight, r, RONDO_ERR_STALLED, msg);
    }
  } else {
    LOG_WARN("stall: request(s) waited %.0f s: %s did not start this comm's engine (they "
             "submitted no request and did not join). Every rank must submit the same names; "
             "set RONDO_STALL_ABORT_SEC to fail them instead of waiting",
             oldest, missing);
  }
}

rondo_status_t eng_rendezvous(eng_hello_t *h, int working, const eng_hello_wait_t *on_thread,
                              int *anyone)
{
  rondo_status_t st = h->posted ? RONDO_SUCCESS : eng_hello_post(h, working);
  double nap = 20e-6;
  while (st == RONDO_SUCCESS) {
    int all = 0;
    st = eng_hello_test(h, &all);
    if (st != RONDO_SUCCESS || all)
      break;
    if (on_thread != NULL) {
      eng_take_queue(on_thread->flight);
      stalled_rendezvous(h, on_thread, h->arrived);
      eng_prune_pending(on_thread->flight);
      eng_idle_nap(on_thread->nap, nap);
    } else {
      eng_sleep(nap);
    }
    nap = nap * 2 < ENG_IDLE_POLL_MAX_S ? nap * 2 : ENG_IDLE_POLL_MAX_S;
  }
  *anyone = h->anyone;
  eng_hello_end(h, st);
  return st;
}

