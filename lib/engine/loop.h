/*
 * The engine's loop: the thread that takes submissions, negotiates, runs
 * what is ready and sleeps between cycles, and the helpers (threads in
 * rondo_wait that run the cycles of their own request).
 */
#ifndef RONDO_ENGINE_LOOP_H
#define RONDO_ENGINE_LOOP_H

#include "base/base.h"

struct engine;
struct rondo_request;

/* Starts the engine thread if it is not running. Under e->sync.lock. */
rondo_status_t eng_start_locked(struct engine *e);
/* rondo_wait's help: a thread about to sleep until req (a host request of
 * e) completes runs e's cycles itself while e can spare them, which saves
 * two thread hand-overs per blocking request. begin: under the handles'
 * lock (request.h), with req not released (so e is alive); 1 if the caller
 * may help (it must then call eng_help, without that lock). eng_help
 * returns when req is complete or when the engine thread must take over. */
int eng_help_begin(struct engine *e, const struct rondo_request *req);
void eng_help(struct engine *e, struct rondo_request *req);

#endif /* RONDO_ENGINE_LOOP_H */
