/*
 * What a request is, as the ranks compare it: its kind of collective and
 * the signature that must be equal on every rank for one name.
 */
#ifndef RONDO_ENGINE_SIGNATURE_H
#define RONDO_ENGINE_SIGNATURE_H

#include <stdint.h>

/* ENG_REFUSED: rondo_refuse_async, or a request this rank cannot run (no
 * memory); it fails on every rank once matched. */
typedef enum {
  ENG_ALLREDUCE = 0,
  ENG_BROADCAST = 1,
  ENG_ALLGATHER = 2,
  ENG_REDUCE_SCATTER = 3,
  ENG_ALLTOALL = 4,
  ENG_REFUSED = 5,
  ENG_KINDS = 6
} eng_kind_t;

/* What must be equal on every rank for a name. */
typedef struct {
  int32_t kind, dtype, op, algo, root;
  int32_t mem;         /* 0: host buffers, 1: device buffers */
  uint64_t count;      /* allreduce, broadcast: elements; allgather, reduce-scatter,
                          all-to-all: elements per row */
  uint64_t rows;       /* reduce-scatter: the rows (equal everywhere); allgather: in a
                          request this rank's rows, in a response (and the cache)
                          every rank's rows where they are equal, else
                          ENG_ROWS_DIFFER (eng_sig_match); else 0 */
  double prescale, postscale;
  uint64_t tag;        /* hash of the caller's tag (rondo_async_opts_t), 0: none */
  uint64_t group;      /* hash of the group's name, 0: no group */
  uint32_t flags;      /* RONDO_ASYNC_* */
  uint32_t group_size; /* the group's size (0: no group) */
} eng_sig_t;            /* (no padding: it is compared and sent) */

/* An allgather's rows in a response: they differ across ranks (or a
 * joined rank's stand-in gives none), so the ranks exchange them before the
 * data (collectives.c). */
#define ENG_ROWS_DIFFER UINT64_MAX

/* The collective's name in messages ("allreduce", ...). */
const char *eng_kind_name(int kind);
/* Every field equal. */
int eng_sig_equal(const eng_sig_t *a, const eng_sig_t *b);
/* What the ranks must agree on for a name: every field but an allgather's
 * rows, which are each rank's own (rows may differ per rank). */
int eng_sig_match(const eng_sig_t *a, const eng_sig_t *b);
/* Whether a decided signature (a response's, a cache entry's) serves a
 * rank's request mine: they match, and for an allgather the decided rows
 * are mine or ENG_ROWS_DIFFER. So a cache bit set on every rank for an
 * allgather decided with equal rows proves every rank still has those rows:
 * the fast path then knows every rank's rows without a message. */
int eng_sig_serves(const eng_sig_t *decided, const eng_sig_t *mine);

#endif /* RONDO_ENGINE_SIGNATURE_H */
