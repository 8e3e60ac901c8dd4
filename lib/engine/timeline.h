/*
 * The Chrome trace of an engine (RONDO_TIMELINE, rondo_timeline_start):
 * a file written by a thread of its own, and the engine's side of it, which
 * never waits for the disk.
 */
#ifndef RONDO_ENGINE_TIMELINE_H
#define RONDO_ENGINE_TIMELINE_H

#include <pthread.h>

#include "base/base.h"

typedef struct eng_timeline eng_timeline_t;

/* An engine's trace: the file, set by the engine thread (RONDO_TIMELINE, at
 * startup) or by rondo_timeline_start/stop on any thread, under lock, which
 * nothing else nests in. */
typedef struct {
  pthread_mutex_t lock;
  eng_timeline_t *file;
  int marks;                  /* a mark per cycle that ran something */
  int user;                   /* rondo_timeline_start/stop decided: RONDO_TIMELINE no longer */
} eng_trace_t;

/* Times in the file count from origin (engine seconds). *out is NULL on
 * ranks but 0, and on failure (RONDO_ERR_IO: the file cannot be written). */
rondo_status_t eng_timeline_open(const char *path, int rank, double origin,
                                 eng_timeline_t **out);
void eng_timeline_close(eng_timeline_t *t);

/* The engine's side (any thread; no-ops without a file; never block on
 * I/O): whether one is running (to skip formatting arguments), a complete
 * span ("X" event) on a track (a tensor's name) with begin and end in
 * engine seconds and args (JSON, or NULL), and a cycle's mark. */
int eng_tl_on(eng_trace_t *tr);
void eng_tl_span(eng_trace_t *tr, const char *track, const char *what, double begin,
                 double end, const char *args);
void eng_tl_cycle(eng_trace_t *tr, double at);
/* The application's mark (rondo_timeline_mark) at engine time at, on the
 * track ENG_TL_MARKS. */
#define ENG_TL_MARKS "marks"
void eng_tl_mark(eng_trace_t *tr, const char *what, double at);
/* Installs t (NULL: none) with its cycle marks, closing the one before.
 * user: rondo_timeline_start/stop, which RONDO_TIMELINE does not undo. */
void eng_tl_set(eng_trace_t *tr, eng_timeline_t *t, int marks, int user);
/* At startup (engine thread): RONDO_TIMELINE's file (path), unless it is
 * DYNAMIC or rondo_timeline_start/stop came first; only rank 0 writes. */
rondo_status_t eng_tl_startup(eng_trace_t *tr, const char *path, int rank, double origin);

#endif /* RONDO_ENGINE_TIMELINE_H */
