/*
 * The caller's side of a request: rondo_test, rondo_wait (which frees it)
 * and rondo_request_result. A thread that waits for a request alone in
 * flight runs the engine's cycles itself (eng_help, loop.c).
 */
#ifndef RONDO_ENGINE_CALLER_H
#define RONDO_ENGINE_CALLER_H

#include "base/base.h"

rondo_status_t eng_request_test(rondo_request_t h, int *done);
rondo_status_t eng_request_wait(rondo_request_t h, int *freed);
/* The same, handing the result over into *buf and *count (NULL: keep it). */
rondo_status_t eng_request_wait_result(rondo_request_t h, int *freed, void **buf, size_t *count);
rondo_status_t eng_request_result(rondo_request_t h, void **buf, size_t *count);

#endif /* RONDO_ENGINE_CALLER_H */
