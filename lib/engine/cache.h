/*
 * The response cache (name + signature -> bit), the same on every rank
 * because every rank applies the same responses in the same order.
 */
#ifndef RONDO_ENGINE_CACHE_H
#define RONDO_ENGINE_CACHE_H

#include <stdint.h>

#include "base/base.h"
#include "engine/signature.h"

typedef struct {
  int capacity;
  struct eng_cache_entry *entries; /* [capacity] */
  int *buckets;                    /* name hash -> entry index chains */
  int nbuckets;
  uint64_t clock;                  /* LRU clock (rank 0 picks victims) */
} eng_cache_t;

rondo_status_t eng_cache_init(eng_cache_t *c, int capacity);
void eng_cache_free(eng_cache_t *c);
/* The entry holding name with a signature that serves sig (a request's:
 * eng_sig_serves), or -1. */
int eng_cache_find(const eng_cache_t *c, const char *name, const eng_sig_t *sig);
/* The entry holding name (any signature), or -1. */
int eng_cache_find_name(const eng_cache_t *c, const char *name);
/* Rank 0: the entry a new name goes to (a free one, else the least recently
 * used). */
int eng_cache_victim(const eng_cache_t *c);
/* Every rank: entry id now holds name / sig, and was used now. */
rondo_status_t eng_cache_set(eng_cache_t *c, int id, const char *name, const eng_sig_t *sig);
void eng_cache_touch(eng_cache_t *c, int id);
const char *eng_cache_name(const eng_cache_t *c, int id);
const eng_sig_t *eng_cache_sig(const eng_cache_t *c, int id);

#endif /* RONDO_ENGINE_CACHE_H */
