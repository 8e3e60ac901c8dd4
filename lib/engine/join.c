/*
 * rondo_join on the engine thread (join.h).
 */
#include "engine/join.h"

#include "engine/responses.h"
#include "engine/nap.h"

#include <stdio.h>

rondo_status_t eng_join_wait_locked(eng_join_t *j, eng_sync_t *s, int *last_rank)
{
  rondo_status_t st = RONDO_SUCCESS;
  j->wanted = 1;
  j->done = 0;
  pthread_cond_signal(&s->work);
  while (j->done == 0)
    pthread_cond_wait(&s->done, &s->lock);
  if (j->done == -2)
    st = rondo__fail(RONDO_ERR_SHUT_DOWN,
                     "rondo_join: rank(s) %s destroyed the comm (or finalized rondo) while "
                     "this rank had joined: they will not join",
                     j->why);
  else if (j->done < 0)
    st = rondo__fail(RONDO_ERR_SHUT_DOWN, "rondo_join: the engine shut down first");
  else if (last_rank != NULL)
    *last_rank = j->last;
  j->done = 0;
  return st;
}

void eng_join_enter(eng_join_t *j, uint64_t cycle)
{
  j->joined = 1;
  j->cycle = cycle;
}

rondo_status_t eng_join_finish(eng_join_t *j, eng_nap_t *n, MPI_Comm mpi, int rank, int size)
{
  int64_t mine = j->joined ? (int64_t)j->cycle * size + rank : -1, last = -1;
  MPI_Request req;
  MPI_CHECK(MPI_Iallreduce(&mine, &last, 1, MPI_INT64_T, MPI_MAX, mpi, &req));
  RONDO_CHECK(eng_wait(n, &req));
  eng_sync_t *s = n->sync;
  j->joined = 0;
  pthread_mutex_lock(&s->lock);
  j->wanted = 0;
  j->done = 1;
  j->last = (int)(last % size);
  pthread_cond_broadcast(&s->done);
  pthread_mutex_unlock(&s->lock);
  return RONDO_SUCCESS;
}

void eng_join_leave(eng_join_t *j, eng_sync_t *s, int size, uint64_t stopping)
{
  j->joined = 0;
  pthread_mutex_lock(&s->lock);
  size_t used = 0;
  int shown = 0;
  for (int r = 0; r <= ENG_STOP_RANKS && used + 24 < sizeof j->why; r++)
    if (stopping >> r & 1)
      used += (size_t)snprintf(j->why + used, sizeof j->why - used, "%s%d%s",
                               shown++ ? "," : "", r,
                               r == ENG_STOP_RANKS && size > r + 1 ? " or later" : "");
  j->wanted = 0;
  j->done = -2;
  pthread_cond_broadcast(&s->done);
  pthread_mutex_unlock(&s->lock);
}

void eng_join_abandon_locked(eng_join_t *j)
{
  if (j->wanted) {
    j->wanted = 0;
    j->done = -1;
  }
}
