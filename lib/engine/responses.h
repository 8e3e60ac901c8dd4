/*
 * One cycle's outcome: the responses, identical on every rank, and what the
 * cycle's flag word said. Made by the negotiation (negotiate.c), decided on
 * the slow path by the coordinator (coordinator.c), run by execute.c.
 */
#ifndef RONDO_ENGINE_RESPONSES_H
#define RONDO_ENGINE_RESPONSES_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "engine/signature.h"

struct rondo_request;

/* Ranks with a "shutting down" bit of their own in a cycle's flag word. */
#define ENG_STOP_RANKS 55

typedef enum { RESP_OK = 0, RESP_ERROR = 1 } eng_resp_type_t;

/* A decision of one cycle, identical on every rank. */
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

typedef struct eng_cycle {
  int anyone_pending;         /* some rank has requests in flight */
  int anyone_joined;          /* some rank has joined (stand-ins run this cycle) */
  int all_joined;
  int all_stopping;
  uint64_t stopping;          /* bit r: rank r shuts down (r < ENG_STOP_RANKS; bit
                                 ENG_STOP_RANKS: that rank or a later one) */
  int slow_path;              /* names went to rank 0 this cycle */
  eng_resp_t *resp;
  size_t nresp, cap;
  size_t inline_done;         /* requests whose data rode in the negotiation: done */
} eng_cycle_t;

/* One ready response and this rank's request for it (or a stand-in), and
 * what its kind's runner works out for it before the batches form (they
 * travel with the item into its batch). */
typedef struct {
  struct rondo_request *req;
  const eng_resp_t *resp;
  size_t elems;               /* its elements in a fusion buffer: all-reduce: count;
                                 reduce-scatter: rows x count (its input);
                                 allgather: every rank's rows x count (its result) */
  size_t col;                 /* allgather: its column in the cycle's rows of every
                                 rank, or SIZE_MAX: known from the negotiation */
  void *out;                  /* allgather: its result, allocated before the data moves */
} eng_item_t;

/* A zeroed response at the end of c, not yet counted (the caller fills it
 * and increments c->nresp), or NULL when out of memory. */
eng_resp_t *eng_resp_new(eng_cycle_t *c);
/* Appends a response with copies of name and message (NULL: none). */
rondo_status_t eng_resp_add(eng_cycle_t *c, int type, rondo_status_t st, int cache_id,
                            const eng_sig_t *sig, const char *name, const char *message);
void eng_cycle_free(eng_cycle_t *c);

#endif /* RONDO_ENGINE_RESPONSES_H */
