/*
 * A request as the engine holds it, its handle (rondo_request_t), and its
 * completion state: done (the result is final) and released (the engine is
 * finished with it), and completion queues (rondo_queue_t). The waiting side
 * (rondo_test, rondo_wait) is caller.c.
 */
#ifndef RONDO_ENGINE_REQUEST_H
#define RONDO_ENGINE_REQUEST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "engine/signature.h"

struct engine;
struct rondo_queue;

struct rondo_request {
  struct engine *eng;
  rondo_request_t handle;     /* what the caller holds */
  char *name;
  eng_sig_t sig;
  uint64_t rows;              /* allgather: this rank's rows */
  const void *sendbuf;
  void *recvbuf;              /* allgather: NULL (rondo allocates the result), or the
                                 caller's (rondo_allgather_into_async) */
  uint64_t recv_rows;         /* allgather into recvbuf: the rows it holds */
  char *tag;                  /* the caller's tag text, or NULL */
  char *reason;               /* ENG_REFUSED: why this rank refused */
  size_t *sendcounts;         /* all-to-all: rows to each rank (a copy) */
  size_t *recvcounts;         /* all-to-all: the caller's, rows from each rank */
  int device;                 /* the buffers' device, or -1 (host memory) */
  rondo_callback_t callback;
  void *user;
  struct rondo_queue *queue;  /* where it goes when released, or NULL */
  char *group;                /* NULL, or announced only with its whole group */
  int group_size;
  double t_submit;            /* engine clock (s) */
  double t_taken;             /* when the engine took it from the submission queue */
  int announced;              /* part of the negotiation */
  int wait_now;               /* RONDO_ASYNC_WAIT_NOW: its submitter, waiting, runs it (eng_help) */
  pthread_t submitter;        /* the thread that submitted it */
  int stand_in;               /* made by a joined rank for a name it does not have:
                                 no caller, contributes the identity (execute.c) */
  int detached;               /* a refusal made for a bad argument (async.c):
                                 no caller, no handle; freed when complete */
  int completed;              /* the engine completed it (cycles only: whoever
                                 holds the engine's run lock reads it) */
  long pidx;                  /* index in the pending list, or -1 (cycles only) */
  /* completion (this file's lock): done = result final, released = the engine
   * is finished with it; waiting = a thread is in rondo_wait */
  int done, released, waiting;
  rondo_status_t status;
  char *message;
  void *result;               /* allgather output, until rondo_request_result() */
  size_t result_count;
  struct rondo_request *hnext; /* in-flight table chain */
  struct rondo_request *qnext; /* submission queue */
};

/* Gives r a handle (r->handle). */
rondo_status_t eng_request_register(struct rondo_request *r);
/* Takes back the handle of a request that was never submitted. */
void eng_request_forget(struct rondo_request *r);
/* Frees a request and what it owns (its result, if not handed over). */
void eng_request_free(struct rondo_request *r);
/* Completion, in two steps around the callbacks (stand-ins and NULLs are
 * skipped): the results are final; the engine is finished with them. */
void eng_request_mark_done(struct rondo_request **reqs, size_t n);
void eng_request_release(struct rondo_request **reqs, size_t n);

/* For caller.c: the handle table's lock, under which a handle is
 * looked up (NULL: stale) and a request's done/released/waiting change. */
void eng_handles_lock(void);
void eng_handles_unlock(void);
struct rondo_request *eng_handle_lookup(rondo_request_t h);
/* Sleeps (under the lock) until some request is released. */
void eng_handles_wait_released(void);
/* Frees r's handle; under the lock. */
void eng_handle_unregister(struct rondo_request *r);
/* The error for a handle that is not a live request, from call fn. */
rondo_status_t eng_handle_stale(const char *fn);

/* Completion queues (rondo_queue_*): a request submitted with one is
 * attached (it reserves its place) before it is registered, and put on the
 * queue when released; detach undoes an attach whose submission failed. */
rondo_status_t eng_queue_create(struct rondo_queue **q);
rondo_status_t eng_queue_attach(struct rondo_queue *q);
/* rondo_queue_add: attaches a request in flight (put at once if released). */
rondo_status_t eng_queue_add(struct rondo_queue *q, rondo_request_t h);
void eng_queue_detach(struct rondo_queue *q);
rondo_status_t eng_queue_wait(struct rondo_queue *q, double timeout, rondo_request_t *req);
void eng_queue_close(struct rondo_queue *q);
rondo_status_t eng_queue_destroy(struct rondo_queue *q);

#endif /* RONDO_ENGINE_REQUEST_H */
