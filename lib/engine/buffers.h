/*
 * What running a cycle needs, reserved before any rank enters a collective:
 * the arrays of a cycle's items (grown with the pending list, so the fast
 * path never allocates), the per-rank counts of the collectives (made at
 * startup), and the fusion buffer, which every rank grows alike and agrees
 * on, so that no rank lacks memory alone in the middle of a collective.
 */
#ifndef RONDO_ENGINE_BUFFERS_H
#define RONDO_ENGINE_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "engine/responses.h"

typedef struct {
  size_t cap;                       /* of each array below */
  eng_item_t *items, *kind_items, *batch;
  struct rondo_request **found;     /* this rank's request for each response */
  struct rondo_request **reqs;      /* one batch's requests */
  char *taken;                      /* items already in a batch */
  size_t *order, *ends, *open;      /* a fusion plan (plan.h) */
  size_t *counts;                   /* one batch's per request counts: Adasum's tensor
                                       sizes, where each request is in a fused
                                       reduce-scatter's or allgather's blocks */
  uint64_t *rows;                   /* [rows_cap]: all-to-all counts, the allgathers'
                                       rows of every rank (grown alike on every rank) */
  size_t rows_cap, rows_held;       /* entries: every rank holds / this rank holds */
  size_t *sizes;                    /* [2 * ranks] */
  void *fusion;                     /* the fusion buffer (grown alike on every rank) */
  size_t fusion_bytes, fusion_held; /* every rank holds / this rank holds */
  void *scratch;                    /* this rank's scratch (a stand-in's data, scaling) */
  size_t scratch_bytes;
} eng_buffers_t;

/* At startup: the per-rank counts (rows: 2 * ranks entries). */
rondo_status_t eng_buffers_init(eng_buffers_t *b, int ranks);
void eng_buffers_free(eng_buffers_t *b);
/* Room for n items in each array (this rank alone). */
rondo_status_t eng_buffers_reserve(eng_buffers_t *b, size_t n);
/* The fusion buffer holds at least bytes on every rank, or on none: called
 * by every rank of comm with the same bytes (a batch's size, which every
 * rank computes alike), it agrees on the outcome when it must grow. */
rondo_status_t eng_fusion_reserve(eng_buffers_t *b, MPI_Comm comm, size_t bytes);
/* The same in two halves, for a caller that agrees on more in one
 * agreement (the allgathers' results): hold makes this rank's buffer hold
 * bytes, without a message; agreed records a size every rank holds, once
 * the caller's agreement said so. */
rondo_status_t eng_fusion_hold(eng_buffers_t *b, size_t bytes);
void eng_fusion_agreed(eng_buffers_t *b, size_t bytes);
/* rows holds at least entries on every rank, or on none: as
 * eng_fusion_reserve. */
rondo_status_t eng_rows_reserve(eng_buffers_t *b, MPI_Comm comm, size_t entries);
/* The scratch buffer holds at least bytes (this rank alone). */
rondo_status_t eng_scratch_reserve(eng_buffers_t *b, size_t bytes);

#endif /* RONDO_ENGINE_BUFFERS_H */
