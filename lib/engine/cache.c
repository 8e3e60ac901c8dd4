/*
 * The response cache. A name that became ready once gets a cache entry (a
 * bit), assigned by rank 0 and announced in the response, so every rank
 * stores it at the same index. From then on a rank that has the name
 * pending with the same signature sets its bit, and one bitwise-AND
 * all-reduce tells every rank which cached names are ready everywhere: no
 * names travel in the steady state of a training loop. Rank 0 picks
 * victims by least recent use; the others follow its choice.
 */
#include "engine/cache.h"

#include <stdlib.h>
#include <string.h>

struct eng_cache_entry {
  char *name;            /* NULL: free */
  eng_sig_t sig;
  uint64_t used;         /* LRU clock value of the last use */
  int next;              /* bucket chain, -1 ends */
};

static unsigned bucket_of(const eng_cache_t *c, const char *name)
{
  return (unsigned)(rondo__hash_str(name) % (uint64_t)c->nbuckets);
}

rondo_status_t eng_cache_init(eng_cache_t *c, int capacity)
{
  memset(c, 0, sizeof *c);
  c->capacity = capacity;
  if (capacity == 0)
    return RONDO_SUCCESS;
  c->nbuckets = 2 * capacity + 1;
  c->entries = calloc((size_t)capacity, sizeof *c->entries);
  c->buckets = malloc((size_t)c->nbuckets * sizeof *c->buckets);
  if (c->entries == NULL || c->buckets == NULL) {
    eng_cache_free(c);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: response cache of %d entries", capacity);
  }
  for (int i = 0; i < c->nbuckets; i++)
    c->buckets[i] = -1;
  for (int i = 0; i < capacity; i++)
    c->entries[i].next = -1;
  return RONDO_SUCCESS;
}

void eng_cache_free(eng_cache_t *c)
{
  for (int i = 0; c->entries != NULL && i < c->capacity; i++)
    free(c->entries[i].name);
  free(c->entries);
  free(c->buckets);
  memset(c, 0, sizeof *c);
}

int eng_cache_find_name(const eng_cache_t *c, const char *name)
{
  if (c->capacity == 0)
    return -1;
  for (int i = c->buckets[bucket_of(c, name)]; i >= 0; i = c->entries[i].next)
    if (strcmp(c->entries[i].name, name) == 0)
      return i;
  return -1;
}

int eng_cache_find(const eng_cache_t *c, const char *name, const eng_sig_t *sig)
{
  int i = eng_cache_find_name(c, name);
  return i >= 0 && eng_sig_serves(&c->entries[i].sig, sig) ? i : -1;
}

int eng_cache_victim(const eng_cache_t *c)
{
  int best = -1;
  for (int i = 0; i < c->capacity; i++) {
    if (c->entries[i].name == NULL)
      return i;
    if (best < 0 || c->entries[i].used < c->entries[best].used)
      best = i;
  }
  return best;
}

static void unlink_entry(eng_cache_t *c, int id)
{
  int *p = &c->buckets[bucket_of(c, c->entries[id].name)];
  while (*p != id)
    p = &c->entries[*p].next;
  *p = c->entries[id].next;
  c->entries[id].next = -1;
  free(c->entries[id].name);
  c->entries[id].name = NULL;
}

rondo_status_t eng_cache_set(eng_cache_t *c, int id, const char *name, const eng_sig_t *sig)
{
  if (id < 0 || id >= c->capacity)
    return rondo__fail(RONDO_ERR_INTERNAL, "engine: cache id %d out of range", id);
  struct eng_cache_entry *e = &c->entries[id];
  if (e->name != NULL && strcmp(e->name, name) == 0) {
    e->sig = *sig;
    eng_cache_touch(c, id);
    return RONDO_SUCCESS;
  }
  int old = eng_cache_find_name(c, name); /* a name lives in one entry only */
  if (old >= 0)
    unlink_entry(c, old);
  if (e->name != NULL)
    unlink_entry(c, id);
  if ((e->name = strdup(name)) == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: cache entry");
  e->sig = *sig;
  unsigned b = bucket_of(c, name);
  e->next = c->buckets[b];
  c->buckets[b] = id;
  eng_cache_touch(c, id);
  return RONDO_SUCCESS;
}

void eng_cache_touch(eng_cache_t *c, int id) { c->entries[id].used = ++c->clock; }

const char *eng_cache_name(const eng_cache_t *c, int id) { return c->entries[id].name; }

const eng_sig_t *eng_cache_sig(const eng_cache_t *c, int id) { return &c->entries[id].sig; }
