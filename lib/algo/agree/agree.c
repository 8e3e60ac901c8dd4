/*
 * Argument agreement. Every rank of a blocking collective must call the same
 * collective with the same count, dtype, op, algorithm and root, and valid
 * arguments, or the data movement would hang or go wrong. rondo checks it at
 * every call, on every rank, before any data moves; a mismatch fails the call
 * everywhere with RONDO_ERR_MISMATCH, a local error with its own status on
 * its rank and RONDO_ERR_PEER on the others.
 *
 * The folder's files, bottom up (agree.h's glossary says what the words
 * mean): signature.c (a signature's sum, names, the error for a rank that
 * left), board.c (the check on one node), across.c (the check across
 * nodes: packets through exchange.c), and this file, which picks one
 * of the two for a call (agree_call) and runs the leave step
 * (agree_leave) over both, and makes and frees a comm's state. They
 * share one signature format and one rule for what a mismatch reports
 * (signature.c), and the state's fields (signature.h).
 */
#include "algo/agree/agree.h"

#include <stdint.h>
#include <stdlib.h>

#include "algo/agree/across.h"
#include "algo/agree/board.h"
#include "algo/agree/exchange.h"
#include "algo/agree/signature.h"

rondo_status_t agree_state_create(rondo_comm_t comm)
{
  struct agree_state *a = calloc(1, sizeof *a);
  if (a == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "the comm's argument agreement");
  a->room = AGREE_FIRST_ROOM;
  a->home_from = SIZE_MAX; /* agree_choose_exchange sets both */
  comm->agree = a;
  return RONDO_SUCCESS;
}

void agree_state_free(rondo_comm_t comm, int mpi_usable)
{
  if (comm->agree == NULL)
    return;
  agree_board_free(comm, mpi_usable);
  free(comm->agree);
  comm->agree = NULL;
}

rondo_status_t agree_call_detail(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                                 int *same_call)
{
  agree_mismatch_same_call = 0;
  rondo_status_t st = agree_call(comm, local, sig);
  *same_call = st == RONDO_ERR_MISMATCH && agree_mismatch_same_call;
  return st;
}

rondo_status_t agree_call(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig)
{
  if (comm->size == 1 || agree_skip)
    return local;
  if (comm->agree->board == NULL)
    return agree_across(comm, local, sig, NULL, NULL, NULL);
  agree_post(comm, local, sig);
  return agree_finish(comm, local, sig);
}

/* ---- leaving ------------------------------------------------------------------------------ */

int agree_leave_polls(rondo_comm_t comm)
{
  return comm->agree->board != NULL || comm->yield_any;
}

/* One step of comm's leave: a look at the board, or a round of the MPI
 * check. */
static rondo_status_t leave_step(rondo_comm_t comm, agree_leave_t *st, void (*poll)(rondo_comm_t))
{
  agree_sig_t sig = {.coll = AGREE_COMM_DESTROY};
  if (comm->size == 1 || agree_skip) {
    st->done = 1;
    return RONDO_SUCCESS;
  }
  if (comm->agree->board != NULL) {
    agree_board_leave_step(comm, st, &sig);
    return RONDO_SUCCESS;
  }
  return agree_across_leave(comm, &sig, poll, &st->done);
}

rondo_status_t agree_leave(rondo_comm_t *comms, int n, void (*poll)(rondo_comm_t))
{
  agree_leave_t one = {0}, *st = n == 1 ? &one : calloc((size_t)n, sizeof *st);
  rondo_status_t first = RONDO_SUCCESS;
  if (st == NULL) { /* no memory: one comm after the other */
    for (int i = 0; i < n; i++) {
      rondo_status_t s = agree_leave(&comms[i], 1, poll);
      if (first == RONDO_SUCCESS)
        first = s;
    }
    return first;
  }
  double nap = 20e-6;
  for (int left = n; left > 0;) {
    int waiting = 0; /* a board round is open */
    left = 0;
    for (int i = 0; i < n; i++) {
      if (st[i].done)
        continue;
      rondo_status_t s = leave_step(comms[i], &st[i], poll);
      if (s != RONDO_SUCCESS) {
        st[i].done = 1;
        if (first == RONDO_SUCCESS)
          first = s;
        else
          LOG_ERROR("leaving a comm: %s", rondo_last_error());
      }
      left += !st[i].done;
      waiting |= !st[i].done && st[i].open;
    }
    if (!waiting)
      continue;
    for (int i = 0; i < n; i++)
      if (!st[i].done && poll != NULL)
        poll(comms[i]);
    agree_nap(&nap);
  }
  if (st != &one)
    free(st);
  return first;
}
