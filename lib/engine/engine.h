/*
 * The asynchronous engine: named requests, negotiated across ranks by a
 * background thread per comm, fused and reduced. Internal (prefix engine_,
 * and eng_ for the pieces shared by its files). docs/engine.md explains the
 * design; the files are
 *   engine.c     the thread, the submission queue, requests, join, shutdown
 *   negotiate.c  one cycle: the bit-vector fast path, the coordinator's slow
 *                path, mismatch and stall checks
 *   cache.c      the response cache (name + signature -> bit)
 *   fusion.c     running ready requests: fusion buffers, scaling, join's
 *                identity contributions, broadcast and allgather
 *   timeline.c   the Chrome trace (RONDO_TIMELINE)
 */
#ifndef RONDO_ENGINE_H
#define RONDO_ENGINE_H

#include <pthread.h>
#include <stdint.h>

#include "base/comm.h"

/* ENG_REFUSED: rondo_refuse_async; it fails on every rank once matched. */
typedef enum {
  ENG_ALLREDUCE = 0,
  ENG_BROADCAST = 1,
  ENG_ALLGATHER = 2,
  ENG_REDUCE_SCATTER = 3,
  ENG_ALLTOALL = 4,
  ENG_REFUSED = 5,
  ENG_KINDS = 6
} eng_kind_t;

/* The collective's name in messages ("allreduce", ...). */
const char *eng_kind_name(int kind);

/* What must be equal on every rank for a name. */
typedef struct {
  int32_t kind, dtype, op, algo, root;
  int32_t mem;         /* 0: host buffers, 1: device buffers */
  uint64_t count;      /* allreduce, broadcast: elements; allgather, reduce-scatter,
                          all-to-all: elements per row */
  uint64_t rows;       /* reduce-scatter: the rows (equal everywhere); else 0 */
  double prescale, postscale;
  uint64_t tag;        /* hash of the caller's tag (rondo_async_opts_t), 0: none */
  uint64_t group;      /* hash of the group's name, 0: no group */
  uint32_t flags;      /* RONDO_ASYNC_* */
  uint32_t group_size; /* the group's size (0: no group) */
} eng_sig_t;            /* (no padding: it is compared and sent) */

struct rondo_request {
  struct engine *eng;
  rondo_request_t handle;     /* what the caller holds (request.c) */
  char *name;
  eng_sig_t sig;
  uint64_t rows;              /* allgather: this rank's rows */
  const void *sendbuf;
  void *recvbuf;
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
  double t_taken;             /* when the engine thread took it from the queue */
  int announced;              /* part of the negotiation */
  int wait_now;               /* RONDO_ASYNC_WAIT_NOW: its waiter runs it (engine_help) */
  int phantom;                /* made for a joined rank: no caller */
  int detached;               /* a refusal made for a bad argument (async.c):
                                 no caller, no handle; freed when complete */
  long pidx;                  /* index in e->pending, or -1 (engine thread) */
  /* completion (request.c's lock): done = result final, released = the engine
   * is finished with it; waiting = a thread is in rondo_wait */
  int done, released, waiting;
  rondo_status_t status;
  char *message;
  void *result;               /* allgather output, until rondo_request_result() */
  size_t result_count;
  struct rondo_request *hnext; /* in-flight table chain */
  struct rondo_request *qnext; /* submission queue */
};

/* A decision of one cycle, identical on every rank. */
typedef enum { RESP_OK = 0, RESP_ERROR = 1 } eng_resp_type_t;
typedef struct {
  int type;                   /* eng_resp_type_t */
  rondo_status_t status;      /* RESP_ERROR: the failure */
  int cache_id;               /* RESP_OK: the cache bit, or -1 */
  eng_sig_t sig;
  char *name;                 /* owned, or the cache's (name_borrowed) */
  int name_borrowed;          /* fast path: the cache entry's name, not freed */
  struct rondo_request *req;  /* fast path: this rank's request (NULL: look it up) */
  char *message;              /* RESP_ERROR */
} eng_resp_t;

/* The response cache: the same on every rank, because every rank applies
 * the same responses in the same order. */
typedef struct {
  int capacity;
  struct eng_cache_entry *entries; /* [capacity] */
  int *buckets;                    /* name hash -> entry index chains */
  int nbuckets;
  uint64_t clock;                  /* LRU clock (rank 0 picks victims) */
} eng_cache_t;

typedef struct eng_timeline eng_timeline_t;

/* A group that failed on this rank: its members submitted later (a rank
 * still submitting the group when it failed) fail at once with it. */
typedef struct {
  uint64_t group;          /* the group's hash (eng_sig_t.group) */
  int left;                /* this rank's members not failed yet */
  rondo_status_t status;
  char *message;
} eng_failed_group_t;
#define ENG_FAILED_GROUPS 16

/* What one cycle leaves for the decision on when to run the next. */
typedef struct {
  int busy;           /* this rank has requests waiting for other ranks (or joined) */
  int progress;       /* the cycle ran something */
  int anyone;         /* some rank has requests in flight */
  int all_stopping;   /* every rank shuts down: the loop ends */
  size_t device_busy; /* device batches still in flight */
} eng_cycle_out_t;

/* A batch of device all-reduces whose GPU work is queued: its requests
 * complete when its event does (fusion.c, polled by the engine loop). */
typedef struct {
  struct rondo_request **reqs;
  size_t n;
  struct dev_event *event;
  double since;               /* rondo__now() when it was queued */
  double t0;                  /* engine clock, for the timeline */
  char args[160];             /* the timeline span's arguments */
} eng_inflight_t;

struct engine {
  MPI_Comm mpi;               /* negotiation traffic (a dup of the comm's) */
  rondo_comm_t owner;         /* the user comm this engine serves (its knobs: owner->cfg) */
  rondo_comm_t exec;          /* the comm the requests run on, built over mpi */
  int rank, size;
  double created;             /* rondo__now() at engine_create: the timeline's zero */
  pthread_t thread;
  int started;                /* the thread exists */
  int follow;                 /* no spare core: the thread follows the submitter */
  int crowded;                /* more ranks than cores on this node: shorter spins */
  int pinned_cpu;             /* the core the thread is pinned to, or -1 (engine.c) */
  int met;                    /* the rendezvous is done (engine.c) */
  MPI_Request *hello_reqs;    /* the rendezvous' requests and (rank 0) who */
  int hello_posted;           /* its requests are posted (not yet all done) */
  int hello_working, hello_anyone; /* its reduction's buffers */
  char *hello_arrived;        /* arrived: made with the engine, so that no rank
                                 finds itself short of memory alone then */

  /* The cycle token: whoever holds it runs cycles and owns what is marked
   * "cycles only" below: the engine thread, or a thread in rondo_wait that
   * runs the cycles for its own request instead of sleeping while the
   * engine thread does (engine_help). Taken before lock, never inside it. */
  pthread_mutex_t run;
  pthread_mutex_t lock;
  pthread_cond_t work;        /* submissions, join, stop -> engine thread */
  pthread_cond_t done;        /* join finished -> rondo_join; a helper left */
  /* under lock: */
  struct rondo_request **table; /* in-flight names: hash chains */
  size_t table_size, in_flight;
  struct rondo_request *queue_head, *queue_tail; /* submitted, not yet seen */
  int stop;                   /* rondo_comm_destroy: shut down */
  int join_wanted;            /* rondo_join called and not yet done */
  int join_done, join_last;   /* result for rondo_join (join_done -2: a rank left) */
  char join_why[128];         /* join_done -2: which ranks */
  int exited;                 /* the thread finished (shut down or failed) */
  rondo_status_t fatal;       /* why the engine stopped, if it failed */
  int ready;                  /* startup is done: cycles may run on any thread */
  int helpers;                /* threads inside engine_help */
  int broken;                 /* a helper's cycle failed or saw every rank stop: the
                                 thread winds down (with broken_st) */
  rondo_status_t broken_st;

  /* cycles only (the holder of run): */
  struct rondo_request **pending; /* seen, not complete, in submission order */
  size_t npending, cap_pending;
  eng_cache_t cache;
  /* The negotiation's packets (negotiate.c): this rank's and their
   * reduction, each packet_bytes, reduced as the MPI datatype packet */
  unsigned char *packets;
  size_t packet_bytes, inline_bytes;
  MPI_Datatype packet;
  struct rondo_request **by_id; /* [cache capacity]: the request behind each of
                                   this cycle's cache bits */
  uint64_t cycle;
  int joined;                 /* this rank has joined */
  int idle;                   /* the last cycle found no work on any rank */
  uint64_t join_cycle;
  double last_full;           /* time of the last forced slow path */
  double last_hold_check;     /* ... forced for an incomplete group (negotiate.c) */
  eng_failed_group_t failed_groups[ENG_FAILED_GROUPS]; /* (cycles only) */
  int nfailed_groups;
  double last_stall_warn;
  void *fusion;               /* fusion buffer */
  size_t fusion_bytes;
  void *identity;             /* join: identity contributions */
  size_t identity_bytes;
  int device;                 /* under lock: the device of this rank's device
                                 requests (the first one's), or -1 */
  void *dfusion;              /* device fusion buffer (on exec's GPU), or NULL */
  size_t dfusion_bytes;
  eng_inflight_t *inflight;   /* device batches whose GPU work is queued */
  size_t ninflight, cap_inflight;
  /* The timeline: set by the engine thread (RONDO_TIMELINE, at startup) or
   * by rondo_timeline_start/stop on any thread, used by the engine thread;
   * under tl_lock, which nothing else nests in. */
  pthread_mutex_t tl_lock;
  eng_timeline_t *timeline;
  int tl_marks;               /* a mark per cycle that ran something */
  int tl_user;                /* rondo_timeline_start/stop decided: RONDO_TIMELINE no longer */
};

/* ---- engine.c --------------------------------------------------------------- */

/* At rondo_comm_create: the engine's communicators (collective, cheap); the
 * thread starts with the first request. */
rondo_status_t engine_create(rondo_comm_t comm);
/* At rondo_comm_destroy / rondo_finalize (collective): a running engine
 * shuts down on every rank, pending requests fail with RONDO_ERR_SHUT_DOWN. */
void engine_destroy(rondo_comm_t comm, int mpi_usable);
/* Its first half, before the rank waits for the others to destroy the comm
 * too (agree_leave): the engine stops, so that the others' requests and
 * joins fail instead of waiting for this rank. A rank that never started
 * its engine meets the others' (the rendezvous): at once, or, with
 * can_poll, posted here and completed by engine_leave_poll. */
void engine_leave_begin(rondo_comm_t comm, int can_poll);
void engine_leave_poll(rondo_comm_t comm);
/* Takes a filled request (name, sig, buffers, callback, group); the engine
 * owns it until rondo_wait(). */
rondo_status_t engine_submit(rondo_comm_t comm, struct rondo_request *req);
rondo_status_t engine_join(rondo_comm_t comm, int *last_rank);
/* rondo_timeline_start (path) and rondo_timeline_stop (NULL). */
rondo_status_t engine_timeline(rondo_comm_t comm, const char *path, int marks);
/* A device request's device: the engine's first one sets it; another
 * fails (RONDO_ERR_INVALID_ARG): one fusion buffer, one device. */
rondo_status_t engine_device(rondo_comm_t comm, int device);
/* req, a member of a group, fails (st, message) on this rank: the group's
 * later members fail with it (engine.c). Before req is completed. */
void eng_group_failed(struct engine *e, const struct rondo_request *req, rondo_status_t st,
                      const char *message);
/* Marks req complete: status, message (copied; NULL for none). Takes the
 * lock; runs the callback after releasing it. */
void eng_complete(struct engine *e, struct rondo_request *req, rondo_status_t st,
                  const char *message);
/* The engine's clock: seconds since an arbitrary start. */
/* The same for n requests at once: one lock round and one wake-up. */
void eng_complete_many(struct engine *e, struct rondo_request **reqs, size_t n,
                       rondo_status_t st, const char *message);
/* rondo_wait's help: a thread about to sleep until req (a host request of
 * e) completes runs e's cycles itself while e can spare them, which saves
 * two thread hand-overs per blocking request. begin: under request.c's
 * lock, with req not released (so e is alive); 1 if the caller may help
 * (it must then call engine_help, without that lock). engine_help returns
 * when req is released or when the engine thread must take over again. */
int engine_help_begin(struct engine *e, const struct rondo_request *req);
void engine_help(struct engine *e, struct rondo_request *req);
/* Whether this thread is running an engine's cycle (callbacks run there:
 * rondo_wait must refuse). */
int eng_in_cycle(void);
/* Waits for an MPI request, sleeping between polls (no spinning on an idle
 * core). */
rondo_status_t eng_wait(struct engine *e, MPI_Request *req);
/* found[i] = this rank's pending request named by response i of c, or NULL.
 * Engine thread. */
struct eng_cycle;
void eng_find_pending(struct engine *e, const struct eng_cycle *c, struct rondo_request **found);

/* ---- request.c ---------------------------------------------------------------- */

/* Gives r a handle (r->handle). */
rondo_status_t eng_request_register(struct rondo_request *r);
/* Takes back the handle of a request that was never submitted. */
void eng_request_forget(struct rondo_request *r);
/* Frees a request and what it owns (its result, if not handed over). */
void eng_request_free(struct rondo_request *r);
/* Completion, in two steps around the callbacks (phantoms and NULLs are
 * skipped): the results are final; the engine is finished with them. */
void eng_request_mark_done(struct rondo_request **reqs, size_t n);
void eng_request_release(struct rondo_request **reqs, size_t n);
/* Whether req was released (engine_help's loop; its waiter calls it). */
int eng_request_released(struct rondo_request *req);
/* rondo_test, rondo_wait (frees the request) and rondo_request_result. */
rondo_status_t eng_request_test(rondo_request_t h, int *done);
rondo_status_t eng_request_wait(rondo_request_t h, int *freed);
/* The same, handing the result over into *buf and *count (NULL: keep it). */
rondo_status_t eng_request_wait_result(rondo_request_t h, int *freed, void **buf, size_t *count);
rondo_status_t eng_request_result(rondo_request_t h, void **buf, size_t *count);
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

/* ---- negotiate.c -------------------------------------------------------------- */

/* Ranks with a "shutting down" bit of their own in a cycle's flag word. */
#define ENG_STOP_RANKS 55

typedef struct eng_cycle {
  int anyone_pending;         /* some rank has requests in flight */
  int all_joined;
  int all_stopping;
  uint64_t stopping;          /* bit r: rank r shuts down (r < ENG_STOP_RANKS; bit
                                 ENG_STOP_RANKS: that rank or a later one) */
  int slow_path;              /* names went to rank 0 this cycle */
  eng_resp_t *resp;
  size_t nresp;
  size_t inline_done;         /* requests whose data rode in the negotiation: done */
} eng_cycle_t;

/* One negotiation, collective over e->mpi. */
rondo_status_t eng_negotiate(struct engine *e, int stopping, eng_cycle_t *out);
/* The negotiation's packets and their MPI datatype (at startup; equal on
 * every rank of the comm), and their release (mpi_usable: MPI may be
 * called). */
rondo_status_t eng_packets_create(struct engine *e);
void eng_packets_free(struct engine *e, int mpi_usable);
/* Words of one cycle's bit vector: the flags, then one bit per cache entry. */
static inline int eng_bit_words(const struct engine *e) { return 1 + (e->cache.capacity + 63) / 64; }
void eng_cycle_free(eng_cycle_t *c);
int eng_sig_equal(const eng_sig_t *a, const eng_sig_t *b);

/* ---- cache.c -------------------------------------------------------------------- */

rondo_status_t eng_cache_init(eng_cache_t *c, int capacity);
void eng_cache_free(eng_cache_t *c);
/* The entry holding name with this signature, or -1. */
int eng_cache_find(const eng_cache_t *c, const char *name, const eng_sig_t *sig);
/* The entry holding name (any signature), or -1. */
int eng_cache_find_name(const eng_cache_t *c, const char *name);
/* Rank 0: the entry a new name goes to (a free one, else the least recently
 * used). */
int eng_cache_victim(const eng_cache_t *c);
/* Every rank: entry id now holds name / sig, and was used now. */
rondo_status_t eng_cache_set(eng_cache_t *c, int id, const char *name, const eng_sig_t *sig);
void eng_cache_touch(eng_cache_t *c, int id);
const char *eng_cache_name(const eng_cache_t *c, int id);
const eng_sig_t *eng_cache_sig(const eng_cache_t *c, int id);

/* ---- fusion.c -------------------------------------------------------------------- */

/* Runs the ready responses of one cycle, in an order that is the same on
 * every rank, and completes their requests (device batches: once their GPU
 * work is done, see eng_poll_device). */
void eng_execute(struct engine *e, const eng_cycle_t *cycle);
/* Completes the device batches whose GPU work is done (or failed, or timed
 * out). Never blocks. Returns how many are still in flight. */
size_t eng_poll_device(struct engine *e);
/* At shutdown: waits for every device batch (polling, within the device
 * timeout), then frees the device fusion buffer. */
void eng_drain_device(struct engine *e);

/* ---- timeline.c ------------------------------------------------------------------- */

/* Times in the file count from origin (engine seconds). *out is NULL on
 * ranks but 0, and on failure (RONDO_ERR_IO: the file cannot be written). */
rondo_status_t eng_timeline_open(const char *path, int rank, double origin,
                                 eng_timeline_t **out);
void eng_timeline_close(eng_timeline_t *t);
/* The engine's side (any thread; no-ops without a timeline; never block on
 * I/O): whether one is running (to skip formatting arguments), a complete
 * span ("X" event) on a track (a tensor's name) with begin and end in
 * engine seconds and args (JSON, or NULL), and a cycle's mark. */
int eng_tl_on(struct engine *e);
void eng_tl_span(struct engine *e, const char *track, const char *what, double begin,
                 double end, const char *args);
void eng_tl_cycle(struct engine *e, double at);
/* Installs t (NULL: none) with its cycle marks, closing the one before.
 * user: rondo_timeline_start/stop, which RONDO_TIMELINE does not undo. */
void eng_tl_set(struct engine *e, eng_timeline_t *t, int marks, int user);
/* At startup (engine thread): RONDO_TIMELINE's file, unless it is DYNAMIC
 * or rondo_timeline_start/stop came first. */
rondo_status_t eng_tl_startup(struct engine *e);

#endif /* RONDO_ENGINE_H */
