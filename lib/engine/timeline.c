/*
 * The timeline (RONDO_TIMELINE=path): a Chrome trace, one JSON array of
 * events, that chrome://tracing and Perfetto open. Rank 0 writes it; each
 * tensor name is a track (a "thread") with its spans: QUEUE_WAIT (submission
 * until the engine thread takes it), NEGOTIATE (until it is ready on every
 * rank), MEMCPY_IN_FUSION_BUFFER, ALLREDUCE (with the
 * algorithm, the fused count and bytes), REDUCESCATTER and ALLGATHER (the
 * fused count and bytes), MEMCPY_OUT_FUSION_BUFFER, BROADCAST, ALLTOALL;
 * track 0 has a "cycle" mark for every cycle that ran something.
 *
 * The file is valid JSON at every moment: it starts as "[\n]\n", and each
 * event is written, together with a new closing bracket, over the previous
 * closing bracket in one pwrite(). A run killed midway leaves a file that
 * parses. The engine never waits for the disk: events go to a queue that a
 * writer thread drains; if the queue is full, events are dropped and
 * counted (the count is the last event written).
 */
#include "engine/timeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QUEUE_MAX 65536

typedef struct {
  char ph;           /* 'X' span, 'i' mark */
  char *track, *what, *args;
  double begin, end;
} event_t;

struct eng_timeline {
  int fd;
  off_t pos;          /* where the next event starts (the closing bracket) */
  int first;
  double origin;
  pthread_t writer;
  pthread_mutex_t lock;
  pthread_cond_t more;
  event_t *q;
  size_t head, count;
  int closing;
  unsigned long dropped;
  /* writer thread only: track name -> tid */
  char **tracks;
  size_t ntracks;
};

/* Appends s as a JSON string body (escaped) to out (bounded). */
static size_t json_escape(char *out, size_t len, const char *s)
{
  size_t k = 0;
  for (; *s && k + 7 < len; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[k++] = '\\';
      out[k++] = (char)c;
    } else if (c < 0x20) {
      k += (size_t)snprintf(out + k, len - k, "\\u%04x", c);
    } else {
      out[k++] = (char)c;
    }
  }
  out[k] = '\0';
  return k;
}

static void emit(eng_timeline_t *t, const char *json)
{
  char *text = malloc(strlen(json) + 8);
  if (text == NULL)
    return;
  size_t n = (size_t)sprintf(text, "%s%s\n]\n", t->first ? "" : ",\n", json);
  if (pwrite(t->fd, text, n, t->pos) == (ssize_t)n) {
    t->pos += (off_t)(n - 3); /* the next event overwrites "\n]\n" */
    t->first = 0;
  }
  free(text);
}

static long tid_of(eng_timeline_t *t, const char *track)
{
  for (size_t i = 0; i < t->ntracks; i++)
    if (strcmp(t->tracks[i], track) == 0)
      return (long)i + 1;
  char **p = realloc(t->tracks, (t->ntracks + 1) * sizeof *p);
  if (p == NULL)
    return 0;
  t->tracks = p;
  if ((t->tracks[t->ntracks] = strdup(track)) == NULL)
    return 0;
  long tid = (long)++t->ntracks;
  char name[600], json[800];
  json_escape(name, sizeof name, track);
  snprintf(json, sizeof json,
           "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%ld,\"args\":{\"name\":\"%s\"}}",
           tid, name);
  emit(t, json);
  return tid;
}

static void write_event(eng_timeline_t *t, const event_t *ev)
{
  char what[256], json[1200];
  json_escape(what, sizeof what, ev->what);
  double ts = (ev->begin - t->origin) * 1e6;
  if (ev->ph == 'X') {
    long tid = tid_of(t, ev->track);
    snprintf(json, sizeof json,
             "{\"name\":\"%s\",\"cat\":\"rondo\",\"ph\":\"X\",\"pid\":0,\"tid\":%ld,"
             "\"ts\":%.3f,\"dur\":%.3f%s%s}",
             what, tid, ts, (ev->end - ev->begin) * 1e6, ev->args ? ",\"args\":" : "",
             ev->args ? ev->args : "");
  } else { /* a cycle's mark (track 0) or the application's (its own track) */
    int app = ev->track != NULL;
    snprintf(json, sizeof json,
             "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"i\",\"s\":\"%c\",\"pid\":0,"
             "\"tid\":%ld,\"ts\":%.3f}",
             what, app ? "app" : "rondo", app ? 't' : 'p', app ? tid_of(t, ev->track) : 0L, ts);
  }
  emit(t, json);
}

static void *writer_main(void *arg)
{
  eng_timeline_t *t = arg;
  pthread_mutex_lock(&t->lock);
  for (;;) {
    while (t->count == 0 && !t->closing)
      pthread_cond_wait(&t->more, &t->lock);
    if (t->count == 0 && t->closing)
      break;
    event_t ev = t->q[t->head];
    t->head = (t->head + 1) % QUEUE_MAX;
    t->count--;
    pthread_mutex_unlock(&t->lock);
    write_event(t, &ev);
    free(ev.track);
    free(ev.what);
    free(ev.args);
    pthread_mutex_lock(&t->lock);
  }
  unsigned long dropped = t->dropped;
  pthread_mutex_unlock(&t->lock);
  if (dropped > 0) {
    char json[200];
    snprintf(json, sizeof json,
             "{\"name\":\"dropped %lu events (queue full)\",\"ph\":\"i\",\"s\":\"g\",\"pid\":0,"
             "\"tid\":0,\"ts\":0}",
             dropped);
    emit(t, json);
  }
  return NULL;
}

rondo_status_t eng_timeline_open(const char *path, int rank, double origin,
                                 eng_timeline_t **out)
{
  *out = NULL;
  if (rank != 0)
    return RONDO_SUCCESS;
  eng_timeline_t *t = calloc(1, sizeof *t);
  if (t == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "the timeline");
  t->q = calloc(QUEUE_MAX, sizeof *t->q);
  char why[128] = "";
  t->fd = -1;
  if (t->q == NULL)
    snprintf(why, sizeof why, "out of memory");
  else if ((t->fd = rondo__open_regular(path, O_WRONLY | O_CREAT | O_TRUNC, why, sizeof why)) >=
               0 &&
           pwrite(t->fd, "[\n]\n", 4, 0) != 4)
    snprintf(why, sizeof why, "%s", strerror(errno));
  if (why[0] != '\0') {
    rondo_status_t st = rondo__fail(RONDO_ERR_IO, "timeline %s: cannot write it: %s", path, why);
    if (t->fd >= 0)
      close(t->fd);
    free(t->q);
    free(t);
    return st;
  }
  t->pos = 2;
  t->first = 1;
  t->origin = origin;
  int rc = pthread_mutex_init(&t->lock, NULL);
  if (rc == 0 && (rc = pthread_cond_init(&t->more, NULL)) != 0)
    pthread_mutex_destroy(&t->lock);
  if (rc == 0 && (rc = pthread_create(&t->writer, NULL, writer_main, t)) != 0) {
    pthread_cond_destroy(&t->more);
    pthread_mutex_destroy(&t->lock);
  }
  if (rc != 0) {
    rondo_status_t st = rondo__pthread_fail(rc, "the timeline's writer thread", __FILE__, __LINE__);
    close(t->fd);
    free(t->q);
    free(t);
    return st;
  }
  *out = t;
  return RONDO_SUCCESS;
}

static void push(eng_timeline_t *t, char ph, const char *track, const char *what, double begin,
                 double end, const char *args)
{
  event_t ev = {ph, track ? strdup(track) : NULL, strdup(what), args ? strdup(args) : NULL,
                begin, end};
  pthread_mutex_lock(&t->lock);
  if (t->count == QUEUE_MAX || ev.what == NULL || (track && !ev.track)) {
    t->dropped++;
    pthread_mutex_unlock(&t->lock);
    free(ev.track);
    free(ev.what);
    free(ev.args);
    return;
  }
  t->q[(t->head + t->count) % QUEUE_MAX] = ev;
  t->count++;
  pthread_cond_signal(&t->more);
  pthread_mutex_unlock(&t->lock);
}


void eng_timeline_close(eng_timeline_t *t)
{
  pthread_mutex_lock(&t->lock);
  t->closing = 1;
  pthread_cond_signal(&t->more);
  pthread_mutex_unlock(&t->lock);
  PT_CHECK_LOG(pthread_join(t->writer, NULL));
  close(t->fd);
  for (size_t i = 0; i < t->ntracks; i++)
    free(t->tracks[i]);
  free(t->tracks);
  free(t->q);
  pthread_mutex_destroy(&t->lock);
  pthread_cond_destroy(&t->more);
  free(t);
}

/* ---- the engine's side ---------------------------------------------------------- */

/* Without a timeline (the usual case) the engine's calls cost one atomic
 * load; the pointer is written under the trace's lock with an atomic store. */
int eng_tl_on(eng_trace_t *tr)
{
  return __atomic_load_n(&tr->file, __ATOMIC_ACQUIRE) != NULL;
}

/* Queues an event on the open file, if any (a cycle's mark only when the
 * timeline marks cycles). */
static void record(eng_trace_t *tr, int cycle, char ph, const char *track, const char *what,
                   double begin, double end, const char *args)
{
  if (!eng_tl_on(tr))
    return;
  pthread_mutex_lock(&tr->lock);
  if (tr->file != NULL && (!cycle || tr->marks))
    push(tr->file, ph, track, what, begin, end, args);
  pthread_mutex_unlock(&tr->lock);
}

void eng_tl_span(eng_trace_t *tr, const char *track, const char *what, double begin,
                 double end, const char *args)
{
  record(tr, 0, 'X', track, what, begin, end, args);
}

void eng_tl_cycle(eng_trace_t *tr, double at)
{
  record(tr, 1, 'i', NULL, "cycle", at, at, NULL);
}

void eng_tl_mark(eng_trace_t *tr, const char *what, double at)
{
  record(tr, 0, 'i', ENG_TL_MARKS, what, at, at, NULL);
}

void eng_tl_set(eng_trace_t *tr, eng_timeline_t *t, int marks, int user)
{
  pthread_mutex_lock(&tr->lock);
  eng_timeline_t *old = tr->file;
  __atomic_store_n(&tr->file, t, __ATOMIC_RELEASE);
  tr->marks = marks;
  tr->user |= user;
  pthread_mutex_unlock(&tr->lock);
  if (old != NULL)
    eng_timeline_close(old); /* joins its writer: outside the lock */
}

rondo_status_t eng_tl_startup(eng_trace_t *tr, const char *path, int rank, double origin)
{
  pthread_mutex_lock(&tr->lock);
  int user = tr->user;
  pthread_mutex_unlock(&tr->lock);
  if (user || path[0] == '\0' || strcmp(path, RONDO__TIMELINE_DYNAMIC) == 0 || rank != 0)
    return RONDO_SUCCESS;
  eng_timeline_t *t = NULL;
  if (eng_timeline_open(path, rank, origin, &t) != RONDO_SUCCESS)
    return rondo__fail(RONDO_ERR_IO, "RONDO_TIMELINE=%s: cannot write the timeline", path);
  pthread_mutex_lock(&tr->lock);
  if (tr->user) { /* rondo_timeline_start/stop came meanwhile: theirs wins */
    pthread_mutex_unlock(&tr->lock);
    eng_timeline_close(t);
    return RONDO_SUCCESS;
  }
  __atomic_store_n(&tr->file, t, __ATOMIC_RELEASE);
  tr->marks = 1;
  pthread_mutex_unlock(&tr->lock);
  return RONDO_SUCCESS;
}
