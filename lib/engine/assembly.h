/*
 * struct engine: the objects one comm's engine is assembled from, private
 * to the files that assemble it (engine.c, loop.c; tests/check-layers.sh
 * checks that no other file includes this). Every file below them takes
 * the object it needs, not the engine: the in-flight table, queue and
 * pending list (inflight.c), join (join.c), the rendezvous (handshake.c),
 * the stall inspector (stall.c), how threads wait and the lock (nap.c),
 * the runners' context (eng_run_t, fusion.h), the negotiation's
 * (eng_negotiator_t, negotiate.h). engine.h lists the files bottom up.
 *
 * Threads: application threads submit and wait; one engine thread per comm
 * negotiates and runs. They share the in-flight table, the submission queue
 * and the join/stop flags under lock; what is marked "cycles only" belongs
 * to whoever holds run (the engine thread, or a helper).
 */
#ifndef RONDO_ENGINE_ASSEMBLY_H
#define RONDO_ENGINE_ASSEMBLY_H

#include <pthread.h>
#include <stdint.h>

#include "base/comm.h"
#include "engine/buffers.h"
#include "engine/cache.h"
#include "engine/fusion.h"
#include "engine/groups.h"
#include "engine/handshake.h"
#include "engine/inflight.h"
#include "engine/join.h"
#include "engine/nap.h"
#include "engine/negotiate.h"
#include "engine/packet.h"
#include "engine/request.h"
#include "engine/stall.h"
#include "engine/timeline.h"

struct engine {
  MPI_Comm mpi;               /* negotiation traffic (a dup of the comm's) */
  rondo_comm_t owner;         /* the user comm this engine serves (its knobs: owner->cfg) */
  int rank, size;
  double created;             /* rondo__now() at eng_create: the timeline's zero */
  pthread_t thread;
  int started;                /* the thread exists */
  int pinned_cpu;             /* the core the thread is pinned to, or -1 */
  eng_hello_t hello;          /* the rendezvous (handshake.c) */

  /* The cycle token: whoever holds it runs cycles and owns what is marked
   * "cycles only" below: the engine thread, or a thread in rondo_wait that
   * runs the cycles for its own request instead of sleeping while the
   * engine thread does (eng_help). Taken before sync.lock, never inside it. */
  pthread_mutex_t run;
  eng_sync_t sync;            /* lock; work: submissions, join, stop -> engine thread;
                                 done: join finished -> rondo_join; a helper left */
  eng_nap_t nap;              /* how its threads wait (nap.c; idle is cycles only) */
  /* under sync.lock: */
  eng_flight_t flight;        /* in-flight table and queue under lock, pending list
                                 cycles only (inflight.c) */
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
  eng_cache_t cache;
  eng_packet_t packet;        /* packet.c */
  uint64_t cycle;
  eng_stall_t stall;          /* stall.c */
  eng_failed_groups_t failed; /* groups.c */
  eng_buffers_t buf;          /* buffers.c */
  eng_device_batches_t dev;   /* fusion_device.c */
  eng_trace_t trace;          /* timeline.c (its own lock) */
  eng_run_t ctx;              /* the runners' view of all this (fusion.h); ctx.exec:
                                 the comm the requests run on, built over mpi */
  eng_negotiator_t neg;       /* the negotiation's (negotiate.h) */
};

#endif /* RONDO_ENGINE_ASSEMBLY_H */
