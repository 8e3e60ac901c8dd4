/*
 * Point-to-point transfers (rondo_isend, rondo_irecv, rondo_p2p_wait): for
 * bindings whose framework has send and receive (torch.distributed). They
 * travel on the comm's private MPI communicator with tags above
 * P2P_TAG_BASE, which rondo's own messages (tags below it) never use, so
 * they match only each other.
 *
 * A receive of the wrong count must fail with both counts, not abort the
 * job: MPICH reports a truncated receive through MPI_COMM_WORLD's error
 * handler, which is fatal by default. So a receive is not posted with
 * MPI_Irecv; it waits in a list, in the order the receives were started,
 * and is matched with MPI_Improbe, which tells the message's size before
 * any byte lands: the right size is received into the caller's buffer
 * (MPI_Imrecv), another is drained into scratch memory and the receive
 * fails. A receive is matched only after every earlier receive that could
 * take the same message (same comm and tag, same source or either
 * RONDO_ANY_SOURCE), so messages of one tag between two ranks still arrive
 * in order. Every test and wait (of a send too) advances the list.
 *
 * Waits poll and sleep (20 us doubling to 1 ms) after a few yields: a rank
 * waiting for a late sender costs no core.
 *
 * A wait gives up after the comm's timeout (rondo_comm_set_timeout, else
 * RONDO_STALL_ABORT_SEC; 0: never) with RONDO_ERR_STALLED. A receive not
 * matched yet is withdrawn from the list: nothing of the late message is
 * lost, it goes to the next receive that matches it. A send cannot be
 * withdrawn (MPICH ignores MPI_Cancel on a send that started), so a send
 * that timed out stays open: the caller may wait on it again, and its
 * buffer stays MPI's until it completes. A receive already matched is
 * landing and is waited for.
 */
#include "api/api.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define P2P_TAG_BASE 16384 /* RONDO_TAG_MAX + 1; MPI guarantees tags up to 32767 */
_Static_assert(P2P_TAG_BASE + RONDO_TAG_MAX <= 32767, "p2p tags must fit MPI's minimum");

typedef enum {
  P2P_POSTED,   /* req is an MPI request (a send, or a matched receive) */
  P2P_MATCHING, /* a receive in the list, not matched yet */
  P2P_FAILED    /* a receive matched with a message of another size, drained */
} p2p_state_t;

struct rondo_p2p {
  p2p_state_t state;
  int send;
  MPI_Request req;
  MPI_Comm mpi;
  int peer;           /* the destination, the source asked for, then the sender */
  int tag;            /* the MPI tag */
  void *buf;
  size_t bytes;       /* the count's bytes */
  size_t esize;
  long got;           /* P2P_FAILED: the message's bytes */
  double timeout;     /* the comm's timeout when the transfer started (0: none) */
  struct rondo_p2p *next; /* the matching list */
};

/* Receives not matched yet, oldest first. */
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rondo_p2p *list_head;

static int may_take_same(const struct rondo_p2p *a, const struct rondo_p2p *b)
{
  return a->mpi == b->mpi && a->tag == b->tag &&
         (a->peer == b->peer || a->peer == RONDO_ANY_SOURCE || b->peer == RONDO_ANY_SOURCE);
}

/* Matches what can be matched, oldest first (list_lock held). A failure of
 * MPI is returned; the receive it concerned fails at its wait. */
static rondo_status_t match_locked(void)
{
  rondo_status_t st = RONDO_SUCCESS;
  for (struct rondo_p2p **pp = &list_head; *pp != NULL;) {
    struct rondo_p2p *r = *pp;
    int blocked = 0;
    for (const struct rondo_p2p *q = list_head; q != r && !blocked; q = q->next)
      blocked = may_take_same(q, r);
    int found = 0;
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status status;
    if (!blocked)
      MPI_CHECK_GOTO(MPI_Improbe(r->peer == RONDO_ANY_SOURCE ? MPI_ANY_SOURCE : r->peer, r->tag,
                                 r->mpi, &found, &msg, &status),
                     st, out);
    if (!found) {
      pp = &r->next;
      continue;
    }
    int bytes = 0;
    MPI_CHECK_GOTO(MPI_Get_count(&status, MPI_BYTE, &bytes), st, out);
    r->peer = status.MPI_SOURCE;
    *pp = r->next;
    r->next = NULL;
    if ((size_t)bytes == r->bytes) {
      r->state = P2P_POSTED;
      MPI_CHECK_GOTO(MPI_Imrecv(r->buf, bytes, MPI_BYTE, &msg, &r->req), st, out);
    } else {
      r->state = P2P_FAILED;
      r->got = bytes;
      void *scratch = malloc(bytes > 0 ? (size_t)bytes : 1);
      if (scratch == NULL) {
        st = rondo__fail(RONDO_ERR_NO_MEMORY, "rondo_p2p_wait: no memory to drain a message");
        goto out;
      }
      int rc = MPI_Mrecv(scratch, bytes, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
      free(scratch);
      if (rc != MPI_SUCCESS) {
        st = rondo__mpi_fail(rc, "MPI_Mrecv", __FILE__, __LINE__);
        goto out;
      }
    }
  }
out:
  return st;
}

static rondo_status_t start(const char *fn, rondo_comm_t comm, const void *buf, size_t count,
                            rondo_dtype_t dtype, int peer, int tag, int send,
                            rondo_p2p_t *out)
{
  if (out == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "%s: req is NULL", fn);
  *out = NULL;
  RONDO_CHECK(api_enter(comm));
  RONDO_CHECK(api_check_dtype(dtype));
  int any = !send && peer == RONDO_ANY_SOURCE;
  if (!any && (peer < 0 || peer >= comm->size))
    return rondo__fail(RONDO_ERR_INVALID_ARG, "%s: rank %d is not a rank of this comm (0..%d)%s",
                       fn, peer, comm->size - 1, send ? "" : " nor RONDO_ANY_SOURCE");
  if (tag < 0 || tag > RONDO_TAG_MAX)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "%s: tag %d is outside 0..%d", fn, tag,
                       RONDO_TAG_MAX);
  size_t esize = rondo_dtype_size(dtype), bytes;
  RONDO_CHECK(api_bytes(count, esize, &bytes));
  if (bytes > (size_t)INT32_MAX)
    return rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "%s: %zu bytes in one message; at most 2 GiB - 1 in this release", fn,
                       bytes);
  RONDO_CHECK(api_check_buffer(buf, count, "buf"));
  RONDO_CHECK(api_host_only(fn, buf, "buf"));
  struct rondo_p2p *p = calloc(1, sizeof *p);
  if (p == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "%s: no memory", fn);
  p->mpi = comm->mpi;
  p->peer = peer;
  p->tag = P2P_TAG_BASE + tag;
  p->buf = (void *)buf;
  p->bytes = bytes;
  p->esize = esize;
  p->req = MPI_REQUEST_NULL;
  p->timeout = comm_request_timeout(comm);
  p->send = send;
  if (send) {
    p->state = P2P_POSTED;
    int rc = MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, p->tag, comm->mpi, &p->req);
    if (rc != MPI_SUCCESS) {
      free(p);
      return rondo__mpi_fail(rc, "MPI_Isend", __FILE__, __LINE__);
    }
  } else {
    p->state = P2P_MATCHING;
    pthread_mutex_lock(&list_lock);
    struct rondo_p2p **tail = &list_head;
    while (*tail != NULL)
      tail = &(*tail)->next;
    *tail = p;
    rondo_status_t st = match_locked();
    pthread_mutex_unlock(&list_lock);
    if (st != RONDO_SUCCESS)
      LOG_ERROR("%s", rondo_last_error()); /* reported again at the wait */
  }
  *out = p;
  return RONDO_SUCCESS;
}

rondo_status_t rondo_isend(rondo_comm_t comm, const void *buf, size_t count, rondo_dtype_t dtype,
                           int dest, int tag, rondo_p2p_t *req)
{
  return start("rondo_isend", comm, buf, count, dtype, dest, tag, 1, req);
}

rondo_status_t rondo_irecv(rondo_comm_t comm, void *buf, size_t count, rondo_dtype_t dtype,
                           int source, int tag, rondo_p2p_t *req)
{
  return start("rondo_irecv", comm, buf, count, dtype, source, tag, 0, req);
}

/* One step of progress on p: *done once it completed (or failed). */
static rondo_status_t step(struct rondo_p2p *p, int *done)
{
  *done = p->state == P2P_POSTED && p->req == MPI_REQUEST_NULL; /* completed by an earlier test */
  if (*done)
    return RONDO_SUCCESS;
  /* Every step advances the whole list: a send to a receive of this
   * process (to itself, or from another thread) needs it matched. */
  pthread_mutex_lock(&list_lock);
  rondo_status_t st = list_head != NULL ? match_locked() : RONDO_SUCCESS;
  pthread_mutex_unlock(&list_lock);
  if (st != RONDO_SUCCESS && p->state == P2P_MATCHING)
    return st;
  if (p->state == P2P_FAILED) {
    *done = 1;
    return RONDO_SUCCESS;
  }
  if (p->state == P2P_POSTED)
    MPI_CHECK(MPI_Test(&p->req, done, MPI_STATUS_IGNORE));
  return RONDO_SUCCESS;
}

rondo_status_t rondo_p2p_test(rondo_p2p_t req, int *done)
{
  if (req == NULL || done == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_p2p_test: req and done must not be NULL");
  return step(req, done);
}

/* Takes a receive still in the list out of it. */
static void unlink_receive(struct rondo_p2p *p)
{
  pthread_mutex_lock(&list_lock);
  for (struct rondo_p2p **pp = &list_head; *pp != NULL; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  pthread_mutex_unlock(&list_lock);
}

rondo_status_t rondo_p2p_wait(rondo_p2p_t *reqp, int *source)
{
  if (reqp == NULL || *reqp == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_p2p_wait: no request (NULL)");
  struct rondo_p2p *p = *reqp;
  rondo_status_t st = RONDO_SUCCESS;
  long nap_ns = 20000;
  double started = rondo__now();
  for (unsigned polls = 0;; polls++) {
    int done = 0;
    if ((st = step(p, &done)) != RONDO_SUCCESS)
      break;
    if (done)
      break;
    if (p->timeout > 0 && rondo__now() - started > p->timeout) {
      if (p->send)
        return rondo__fail(RONDO_ERR_STALLED,
                           "rondo_p2p_wait: rank %d has not received the message with tag %d "
                           "within the comm's timeout of %g s (RONDO_STALL_ABORT_SEC, "
                           "rondo_comm_set_timeout); MPI cannot withdraw a send that started, "
                           "so the request stays open: wait on it again, and keep its buffer "
                           "unchanged until it completes",
                           p->peer, p->tag - P2P_TAG_BASE, p->timeout);
      if (p->state == P2P_MATCHING) {
        unlink_receive(p);
        char from[32] = "any rank";
        if (p->peer != RONDO_ANY_SOURCE)
          snprintf(from, sizeof from, "rank %d", p->peer);
        st = rondo__fail(RONDO_ERR_STALLED,
                         "rondo_p2p_wait: no message from %s with tag %d within the comm's "
                         "timeout of %g s (RONDO_STALL_ABORT_SEC, rondo_comm_set_timeout); the "
                         "receive was withdrawn, and a message that comes later goes to the next "
                         "receive that matches it",
                         from, p->tag - P2P_TAG_BASE, p->timeout);
        break;
      } /* a matched receive is landing: wait for it */
    }
    if (polls < 64) {
      sched_yield();
      continue;
    }
    struct timespec ts = {0, nap_ns};
    nanosleep(&ts, NULL);
    nap_ns = nap_ns * 2 < 1000000 ? nap_ns * 2 : 1000000;
  }
  if (st != RONDO_SUCCESS && p->state == P2P_MATCHING)
    unlink_receive(p);
  if (st == RONDO_SUCCESS && p->state == P2P_FAILED)
    st = rondo__fail(p->got > (long)p->bytes ? RONDO_ERR_TRUNCATED : RONDO_ERR_MISMATCH,
                     "rondo_p2p_wait: rank %d sent %ld bytes (%.1f elements of this dtype), this "
                     "receive expected %zu elements (%zu bytes); the message was dropped",
                     p->peer, p->got, (double)p->got / (double)p->esize, p->bytes / p->esize,
                     p->bytes);
  if (source != NULL)
    *source = p->peer;
  free(p);
  *reqp = NULL;
  return st;
}
