/*
 * Waiting for a request (caller.h), above the handle table (request.c) and
 * the engine's loop (loop.c), which it uses and which do not use it.
 */
#include "engine/caller.h"

#include "engine/loop.h"
#include "engine/request.h"
#include "engine/nap.h"

rondo_status_t eng_request_test(rondo_request_t h, int *done)
{
  eng_handles_lock();
  struct rondo_request *r = eng_handle_lookup(h);
  if (r != NULL)
    *done = r->done;
  eng_handles_unlock();
  return r != NULL ? RONDO_SUCCESS : eng_handle_stale("rondo_test");
}

rondo_status_t eng_request_wait(rondo_request_t h, int *freed)
{
  return eng_request_wait_result(h, freed, NULL, NULL);
}

rondo_status_t eng_request_wait_result(rondo_request_t h, int *freed, void **buf, size_t *count)
{
  *freed = 0;
  eng_handles_lock();
  struct rondo_request *r = eng_handle_lookup(h);
  if (r == NULL) {
    eng_handles_unlock();
    return eng_handle_stale("rondo_wait");
  }
  /* A callback first: its thread may be the one that waits for r (a
   * waiting thread runs the engine's cycles, and so the callbacks). */
  if ((!r->released || r->waiting) && eng_in_cycle()) {
    eng_handles_unlock();
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_wait: '%s' waited for inside a completion callback, which would "
                       "never return (wait from another thread)",
                       r->name);
  }
  if (r->waiting) {
    eng_handles_unlock();
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_wait: another thread is already waiting for '%s'", r->name);
  }
  r->waiting = 1;
  /* Rather than sleep while the engine thread runs the request, this thread
   * runs the engine's cycles itself where it can (eng_help). Asked under
   * the handles' lock, with r not released: the engine is still alive. */
  int asked = 0;
  while (!r->released) {
    if (!asked) {
      asked = 1;
      struct engine *e = r->eng;
      if (eng_help_begin(e, r)) {
        eng_handles_unlock();
        eng_help(e, r);
        eng_handles_lock();
        continue;
      }
    }
    eng_handles_wait_released();
  }
  eng_handle_unregister(r);
  eng_handles_unlock();
  *freed = 1;
  rondo_status_t st = r->status;
  if (st != RONDO_SUCCESS)
    rondo__fail_quiet(st, "%s", r->message != NULL ? r->message : rondo_status_string(st));
  if (buf != NULL && st == RONDO_SUCCESS) {
    *buf = r->result;
    *count = r->result_count;
    r->result = NULL;
  }
  eng_request_free(r);
  return st;
}

rondo_status_t eng_request_result(rondo_request_t h, void **buf, size_t *count)
{
  eng_handles_lock();
  struct rondo_request *r = eng_handle_lookup(h);
  rondo_status_t st = RONDO_SUCCESS;
  if (r == NULL) {
    st = eng_handle_stale("rondo_request_result");
  } else if (!r->done) {
    st = rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_request_result: '%s' has not completed",
                     r->name);
  } else {
    *buf = r->result;
    *count = r->result_count;
    r->result = NULL;
    r->result_count = 0;
  }
  eng_handles_unlock();
  return st;
}
