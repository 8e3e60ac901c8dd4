/*
 * The negotiation's packet: what every rank contributes to a cycle's one
 * all-reduce. [inline header][inline data][words: the flags, then one bit
 * per cache entry]; its MPI operation ANDs the words and reduces the inline
 * data (a small all-reduce that rides along) with rondo's kernels.
 */
#ifndef RONDO_ENGINE_PACKET_H
#define RONDO_ENGINE_PACKET_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "engine/signature.h"

struct engine;
struct rondo_request;

typedef struct {
  unsigned char *bufs;        /* this rank's packet, then the reduced one */
  size_t bytes;               /* of one packet */
  size_t inline_bytes;        /* data capacity (the same on every rank) */
  MPI_Datatype type;          /* one packet */
  struct rondo_request **by_id; /* [cache capacity]: the request behind each of
                                   this cycle's cache bits */
} eng_packet_t;

/* The inline part's header. */
typedef struct {
  uint64_t head;    /* 0: no data; else what the data is (eng_inline_head) */
  int64_t first;    /* the lowest rank whose data the partial result holds */
  uint64_t cap;     /* inline bytes in the packet (the same everywhere) */
  uint64_t words;   /* words after them */
  unsigned char data[];
} eng_inline_t;

/* At startup (equal on every rank of the comm: node_count decides the
 * inline capacity; bit_words the words) and at the end (mpi_usable: MPI
 * may be called). */
rondo_status_t eng_packet_create(eng_packet_t *p, int node_count, int bit_words, int cache_capacity);
void eng_packet_free(eng_packet_t *p, int mpi_usable);
/* The MPI operation that reduces packets. */
rondo_status_t eng_packet_op(MPI_Op *op);
/* The words of packet p (after its inline data). */
uint64_t *eng_packet_words(unsigned char *p);
/* What the inline data of a request with cache entry id holds. */
uint64_t eng_inline_head(int cache_id, const eng_sig_t *sig);

#endif /* RONDO_ENGINE_PACKET_H */
