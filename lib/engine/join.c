/*
 * rondo_join on the engine thread (join.h).
 */
#include "engine/join.h"

#include "engine/engine.h"
#include "engine/responses.h"
#include "engine/nap.h"

#include <stdio.h>

rondo_status_t eng_join_wait_locked(struct engine *e, int *last_rank)
{
  rondo_status_t st = RONDO_SUCCESS;
  e->join.wanted = 1;
  e->join.done = 0;
  pthread_cond_signal(&e->work);
  while (e->join.done == 0)
    pthread_cond_wait(&e->done, &e->lock);
  if (e->join.done == -2)
    st = rondo__fail(RONDO_ERR_SHUT_DOWN,
                     "rondo_join: rank(s) %s destroyed the comm (or finalized rondo) while "
                     "this rank had joined: they will not join",
                     e->join.why);
  else if (e->join.done < 0)
    st = rondo__fail(RONDO_ERR_SHUT_DOWN, "rondo_join: the engine shut down first");
  else if (last_rank != NULL)
    *last_rank = e->join.last;
  e->join.done = 0;
  return st;
}

void eng_join_enter(struct engine *e)
{
  e->join.joined = 1;
  e->join.cycle = e->cycle;
}

rondo_status_t eng_join_finish(struct engine *e)
{
  int64_t mine = e->join.joined ? (int64_t)e->join.cycle * e->size + e->rank : -1, last = -1;
  MPI_Request req;
  MPI_CHECK(MPI_Iallreduce(&mine, &last, 1, MPI_INT64_T, MPI_MAX, e->mpi, &req));
  RONDO_CHECK(eng_wait(e, &req));
  e->join.joined = 0;
  pthread_mutex_lock(&e->lock);
  e->join.wanted = 0;
  e->join.done = 1;
  e->join.last = (int)(last % e->size);
  pthread_cond_broadcast(&e->done);
  pthread_mutex_unlock(&e->lock);
  return RONDO_SUCCESS;
}

void eng_join_leave(struct engine *e, uint64_t stopping)
{
  e->join.joined = 0;
  pthread_mutex_lock(&e->lock);
  size_t used = 0;
  int shown = 0;
  for (int r = 0; r <= ENG_STOP_RANKS && used + 24 < sizeof e->join.why; r++)
    if (stopping >> r & 1)
      used += (size_t)snprintf(e->join.why + used, sizeof e->join.why - used, "%s%d%s",
                               shown++ ? "," : "", r,
                               r == ENG_STOP_RANKS && e->size > r + 1 ? " or later" : "");
  e->join.wanted = 0;
  e->join.done = -2;
  pthread_cond_broadcast(&e->done);
  pthread_mutex_unlock(&e->lock);
}

void eng_join_abandon_locked(struct engine *e)
{
  if (e->join.wanted) {
    e->join.wanted = 0;
    e->join.done = -1;
  }
}
