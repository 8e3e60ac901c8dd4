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
  uint64_t rows;       /* reduce-scatter: the rows (equal everywhere); else 0 */
  double prescale, postscale;
  uint64_t tag;        /* hash of the caller's tag (rondo_async_opts_t), 0: none */
  uint64_t group;      /* hash of the group's name, 0: no group */
  uint32_t flags;      /* RONDO_ASYNC_* */
  uint32_t group_size; /* the group's size (0: no group) */
} eng_sig_t;            /* (no padding: it is compared and sent) */

/* The collective's name in messages ("allreduce", ...). */
const char *eng_kind_name(int kind);
int eng_sig_equal(const eng_sig_t *a, const eng_sig_t *b);

#endif /* RONDO_ENGINE_SIGNATURE_H */
