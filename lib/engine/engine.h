/*
 * The asynchronous engine: named requests, negotiated across ranks by a
 * background thread per comm, fused and reduced. docs/engine.md explains
 * the design. Internal; every name starts with eng_. This header is what
 * lib/api uses; struct engine is private to the files that assemble it
 * (assembly.h). The files, bottom up (none calls or includes a file above
 * it; tests/check-layers.sh checks both):
 *   signature.c  what must be equal on every rank for a name
 *   request.c    requests, their handles, completion state, queues
 *   responses.c  a cycle's responses
 *   buffers.c    what running a cycle needs, reserved before it runs
 *   cache.c      the response cache (name + signature -> bit)
 *   coordinator.c rank 0's decision on the slow path (pure)
 *   wire.c       the slow path's messages as bytes
 *   packet.c     the packet every cycle all-reduces, and its MPI operation
 *   plan.c       fusion planning: items and limits in, batches out (pure)
 *   timeline.c   the Chrome trace (RONDO_TIMELINE)
 *   nap.c        how its threads nap and poll, and which one runs cycles;
 *                the engine's lock (eng_sync_t)
 *   inflight.c   the in-flight table, the queue, the pending list, completion
 *   groups.c     groups: announced together, failed together
 *   stall.c      the stall inspector
 *   join.c       rondo_join on the engine thread
 *   handshake.c  the rendezvous of every rank's engine
 *   fusion.c, fusion_device.c  fused all-reduces (host, GPU), the batching rule
 *   collectives.c fused allgathers and reduce-scatters; broadcast, all-to-all
 *   execute.c    a cycle's work: a table of runners by kind
 *   negotiate.c  one negotiation: the fast path, the slow path
 *   loop.c       the engine thread and rondo_wait's helpers
 *   engine.c     the comm's side (this header's functions)
 *   caller.c     the caller's side: rondo_test, rondo_wait, rondo_request_result
 */
#ifndef RONDO_ENGINE_H
#define RONDO_ENGINE_H

#include "base/base.h"
#include "engine/request.h" /* eng_submit takes a request that its caller fills */

/* At rondo_comm_create: the engine's communicators (collective, cheap); the
 * thread starts with the first request. */
rondo_status_t eng_create(rondo_comm_t comm);
/* At rondo_comm_destroy / rondo_finalize (collective): a running engine
 * shuts down on every rank, pending requests fail with RONDO_ERR_SHUT_DOWN. */
void eng_destroy(rondo_comm_t comm, int mpi_usable);
/* Its first half, before the rank waits for the others to destroy the comm
 * too (agree_leave): the engine stops, so that the others' requests and
 * joins fail instead of waiting for this rank. A rank that never started
 * its engine meets the others' (the rendezvous): at once, or, with
 * can_poll, posted here and completed by eng_leave_poll. */
void eng_leave_begin(rondo_comm_t comm, int can_poll);
void eng_leave_poll(rondo_comm_t comm);
/* Takes a filled request (name, sig, buffers, callback, group); the engine
 * owns it until rondo_wait(). */
rondo_status_t eng_submit(rondo_comm_t comm, struct rondo_request *req);
rondo_status_t eng_join(rondo_comm_t comm, int *last_rank);
/* rondo_timeline_start (path) and rondo_timeline_stop (NULL). */
rondo_status_t eng_timeline(rondo_comm_t comm, const char *path, int marks);
/* rondo_timeline_mark: the application's mark, now. */
rondo_status_t eng_timeline_mark(rondo_comm_t comm, const char *what);
/* A device request's device: the engine's first one sets it; another
 * fails (RONDO_ERR_INVALID_ARG): one fusion buffer, one device. */
rondo_status_t eng_device(rondo_comm_t comm, int device);

#endif /* RONDO_ENGINE_H */
