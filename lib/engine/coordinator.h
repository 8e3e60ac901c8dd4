/*
 * The coordinator: rank 0's decision on a slow-path cycle. A pure function
 * of every rank's records (and the response cache, which it updates): which
 * names run, in which order, under which cache bit, and which fail and why
 * (mismatch, refusal, a joined or departed rank, a stall). No MPI, no
 * engine: tests/unit/test_coordinator.c drives it with hand-made records.
 */
#ifndef RONDO_ENGINE_COORDINATOR_H
#define RONDO_ENGINE_COORDINATOR_H

#include <stdint.h>

#include "base/base.h"
#include "engine/cache.h"
#include "engine/responses.h"
#include "engine/signature.h"

/* One request a rank has pending, as it tells rank 0. */
typedef struct {
  char *name;
  eng_sig_t sig;
  double age;        /* seconds since it was submitted */
  char *text;        /* its tag, or a refusal's reason; NULL or "": none */
  char *group;       /* its group's name; NULL or "": none */
  uint32_t held;     /* held back with its incomplete group, of which this rank
                        has held requests; 0: announced */
} eng_record_t;

typedef struct {
  int size;                           /* ranks */
  const eng_record_t *const *records; /* [size]: each rank's records */
  const uint32_t *nrecords;           /* [size] */
  const int *joined;                  /* [size]: the rank has joined (rondo_join) */
  const int *stopping;                /* [size]: the rank is shutting down */
  double warn_sec;                    /* RONDO_STALL_WARN_SEC (0: off) */
  double abort_sec;                   /* the comm's request timeout (0: none) */
} eng_coord_in_t;

/* Names that waited past warn_sec for ranks that have not submitted them:
 * how many, and a line naming the first few (for rank 0's warning). */
typedef struct {
  int stalled;
  char line[1024];
} eng_stalls_t;

/* Appends the cycle's responses to out (cache: the engine's, whose entries
 * it assigns). Fails only when out of memory. */
rondo_status_t eng_coordinate(const eng_coord_in_t *in, eng_cache_t *cache, eng_cycle_t *out,
                              eng_stalls_t *stalls);

#endif /* RONDO_ENGINE_COORDINATOR_H */
