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
#include "engine/wait.h"

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

void eng_hello_end(struct engine *e, rondo_status_t st)
{
  for (int i = 0; e->hello.posted && st != RONDO_SUCCESS && i < hello_count(e); i++)
    if (e->hello.reqs[i] != MPI_REQUEST_NULL)
      MPI_CHECK_LOG(MPI_Request_free(&e->hello.reqs[i]));
  eng_hello_free(e);
  e->hello.posted = 0;
  e->hello.done = 1;
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
      eng_stall_rendezvous(e, e->hello.arrived);
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

