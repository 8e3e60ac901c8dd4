/*
 * The asynchronous engine: named requests, negotiated across ranks by a
 * background thread per comm, fused and reduced. docs/engine.md explains
 * the design. Internal; every name starts with eng_. The files, bottom up
 * (none calls a file above it; tests/check-layers.sh checks):
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
 *   nap.c        how its threads nap and poll, and which one runs cycles
 *   inflight.c   the in-flight table, the pending list, completion
 *   groups.c     groups: announced together, failed together
 *   stall.c      the stall inspector
 *   join.c       rondo_join on the engine thread
 *   handshake.c  the rendezvous of every rank's engine
 *   negotiate.c  one negotiation: the fast path, the slow path
 *   fusion.c, fusion_device.c  fused all-reduces (host, GPU), the batching rule
 *   collectives.c fused allgathers and reduce-scatters; broadcast, all-to-all
 *   execute.c    a cycle's work: a table of runners by kind
 *   loop.c       the engine thread and rondo_wait's helpers
 *   engine.c     the comm's side (this header's functions)
 *   caller.c     the caller's side: rondo_test, rondo_wait, rondo_request_result
 *
 * Threads: application threads submit and wait; one engine thread per comm
 * negotiates and runs. They share the in-flight table, the submission queue
 * and the join/stop flags under lock; what is marked "cycles only" belongs
 * to whoever holds run (the engine thread, or a helper).
 */
#ifndef RONDO_ENGINE_H
#define RONDO_ENGINE_H

#include <pthread.h>
#include <stdint.h>

#include "base/comm.h"
#include "engine/buffers.h"
#include "engine/cache.h"
#include "engine/fusion.h"
#include "engine/groups.h"
#include "engine/handshake.h"
#include "engine/join.h"
#include "engine/packet.h"
#include "engine/request.h"
#include "engine/stall.h"
#include "engine/timeline.h"

struct engine {
  MPI_Comm mpi;               /* negotiation traffic (a dup of the comm's) */
  rondo_comm_t owner;         /* the user comm this engine serves (its knobs: owner->cfg) */
  rondo_comm_t exec;          /* the comm the requests run on, built over mpi */
  int rank, size;
  double created;             /* rondo__now() at eng_create: the timeline's zero */
  pthread_t thread;
  int started;                /* the thread exists */
  int pin_to_submitter;       /* no spare core: the thread follows the submitter */
  int oversubscribed;         /* more ranks than cores on this node: shorter spins */
  int pinned_cpu;             /* the core the thread is pinned to, or -1 */
  eng_hello_t hello;          /* the rendezvous (handshake.c) */

  /* The cycle token: whoever holds it runs cycles and owns what is marked
   * "cycles only" below: the engine thread, or a thread in rondo_wait that
   * runs the cycles for its own request instead of sleeping while the
   * engine thread does (eng_help). Taken before lock, never inside it. */
  pthread_mutex_t run;
  pthread_mutex_t lock;
  pthread_cond_t work;        /* submissions, join, stop -> engine thread */
  pthread_cond_t done;        /* join finished -> rondo_join; a helper left */
  /* under lock: */
  struct rondo_request **table; /* in-flight names: hash chains (inflight.c) */
  size_t table_size, in_flight;
  struct rondo_request *queue_head, *queue_tail; /* submitted, not yet taken */
  int stop;                   /* rondo_comm_destroy: shut down */
  eng_join_t join;            /* rondo_join (join.c; partly cycles only) */
  int exited;                 /* the thread finished (shut down or failed) */
  rondo_status_t fatal;       /* why the engine stopped, if it failed */
  int ready;                  /* startup is done: cycles may run on any thread */
  int helpers;                /* threads inside eng_help */
  int broken;                 /* a helper's cycle failed or saw every rank stop: the
                                 thread winds down (with broken_st) */
  rondo_status_t broken_st;
  int device;                 /* the device of this rank's device requests (the
                                 first one's), or -1 */

  /* cycles only (the holder of run): */
  struct rondo_request **pending; /* taken, not complete, in submission order */
  size_t npending, cap_pending;
  eng_cache_t cache;
  eng_packet_t packet;        /* packet.c */
  uint64_t cycle;
  int idle;                   /* the last cycle found no work on any rank */
  eng_stall_t stall;          /* stall.c */
  eng_failed_groups_t failed; /* groups.c */
  eng_buffers_t buf;          /* buffers.c */
  eng_device_batches_t dev;   /* fusion_device.c */
  eng_trace_t trace;          /* timeline.c (its own lock) */
};

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
