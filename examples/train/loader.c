/*
 * The input pipeline. Each epoch has one shuffled order of the training set,
 * derived from (seed, epoch), so every rank computes the same order without
 * talking. A global batch is the next `batch` samples of that order (fewer
 * at the end of an epoch); rank r takes its contiguous share: global / size
 * rows, and one more on the first global % size ranks. A rank may get none.
 *
 * With prefetch, a second thread gathers and normalizes batch k+1 into the
 * other of two buffers while the training thread computes batch k; the
 * training thread only waits when that thread is behind. Both threads sleep
 * on a condition variable, never spin.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "examples/train/train.h"

struct loader {
  const dataset_t *d;
  uint64_t seed;
  size_t batch;
  long long epochs;
  int rank, size;
  /* the producer's position: the next batch starts at (epoch, offset) */
  long long epoch;
  size_t offset;
  uint32_t *perm;
  long long perm_epoch;
  /* two buffers, filled in turn */
  batch_t slot[2];
  int full[2], end[2];
  int fill_next, take_next, taken; /* taken: the slot the consumer holds, or -1 */
  int stop, threaded;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  double waited, prepared;
};

void loader_split(size_t global, int rank, int size, size_t *first, size_t *count)
{
  size_t base = global / (size_t)size, extra = global % (size_t)size, r = (size_t)rank;
  *count = base + (r < extra ? 1 : 0);
  *first = r * base + (r < extra ? r : extra);
}

/* Prepares the producer's next batch in slot s; returns 1 at the end.
 * *seconds gets the time it took. */
static int produce(loader_t *l, int s, double *seconds)
{
  double t0 = train_now();
  *seconds = 0;
  batch_t *b = &l->slot[s];
  size_t n = l->d->train.n, first;
  if (l->epoch >= l->epochs)
    return 1;
  if (l->perm_epoch != l->epoch) {
    data_shuffle(l->seed, l->epoch, l->perm, n);
    l->perm_epoch = l->epoch;
  }
  b->epoch = l->epoch;
  b->offset = l->offset;
  b->global = n - l->offset < l->batch ? n - l->offset : l->batch;
  loader_split(b->global, l->rank, l->size, &first, &b->local);
  data_gather(l->d, &l->d->train, l->perm + l->offset + first, b->local, b->x, b->y);
  l->offset += b->global;
  b->last = l->offset == n;
  if (b->last) {
    l->epoch++;
    l->offset = 0;
  }
  *seconds = train_now() - t0;
  return 0;
}

static void *prefetch_main(void *arg)
{
  loader_t *l = arg;
  pthread_mutex_lock(&l->lock);
  for (;;) {
    int s = l->fill_next;
    while (l->full[s] && !l->stop)
      pthread_cond_wait(&l->cond, &l->lock);
    if (l->stop)
      break;
    pthread_mutex_unlock(&l->lock);
    double seconds;
    int end = produce(l, s, &seconds);
    pthread_mutex_lock(&l->lock);
    l->prepared += seconds;
    l->end[s] = end;
    l->full[s] = 1;
    l->fill_next = !s;
    pthread_cond_broadcast(&l->cond);
    if (end)
      break;
  }
  pthread_mutex_unlock(&l->lock);
  return NULL;
}

int loader_create(const dataset_t *d, const train_opts_t *o, int rank, int size,
                  long long epoch, size_t offset, loader_t **out)
{
  loader_t *l = calloc(1, sizeof *l);
  if (l == NULL)
    return -1;
  size_t rows = (o->batch + (size_t)size - 1) / (size_t)size;
  l->d = d;
  l->seed = o->seed;
  l->batch = o->batch;
  l->epochs = o->epochs;
  l->rank = rank;
  l->size = size;
  l->epoch = epoch;
  l->offset = offset;
  l->perm_epoch = -1;
  l->taken = -1;
  l->perm = malloc(d->train.n * sizeof *l->perm);
  int ok = l->perm != NULL;
  for (int s = 0; s < 2; s++) {
    l->slot[s].x = malloc((rows > 0 ? rows : 1) * d->features * sizeof(float));
    l->slot[s].y = malloc((rows > 0 ? rows : 1) * sizeof(uint16_t));
    ok = ok && l->slot[s].x != NULL && l->slot[s].y != NULL;
  }
  if (!ok || pthread_mutex_init(&l->lock, NULL) != 0) {
    loader_destroy(l);
    return -1;
  }
  if (pthread_cond_init(&l->cond, NULL) != 0) {
    pthread_mutex_destroy(&l->lock);
    loader_destroy(l);
    return -1;
  }
  l->threaded = 1; /* the lock and condition exist from here on */
  if (o->prefetch == PREFETCH_ON && pthread_create(&l->thread, NULL, prefetch_main, l) != 0) {
    loader_destroy(l);
    return -1;
  }
  l->threaded = o->prefetch == PREFETCH_ON ? 2 : 1;
  *out = l;
  return 0;
}

const batch_t *loader_next(loader_t *l)
{
  double t0 = train_now();
  if (l->threaded < 2) {
    double seconds;
    int end = produce(l, 0, &seconds);
    l->prepared += seconds;
    l->waited += train_now() - t0;
    return end ? NULL : &l->slot[0];
  }
  pthread_mutex_lock(&l->lock);
  if (l->taken >= 0) {
    l->full[l->taken] = 0;
    l->taken = -1;
    pthread_cond_broadcast(&l->cond);
  }
  int s = l->take_next;
  while (!l->full[s])
    pthread_cond_wait(&l->cond, &l->lock);
  int end = l->end[s];
  if (!end) {
    l->taken = s;
    l->take_next = !s;
  }
  pthread_mutex_unlock(&l->lock);
  l->waited += train_now() - t0;
  return end ? NULL : &l->slot[s];
}

void loader_times(loader_t *l, double *waited, double *prepared)
{
  if (l->threaded == 2)
    pthread_mutex_lock(&l->lock);
  *waited = l->waited;
  *prepared = l->prepared;
  if (l->threaded == 2)
    pthread_mutex_unlock(&l->lock);
}

void loader_destroy(loader_t *l)
{
  if (l == NULL)
    return;
  if (l->threaded == 2) {
    pthread_mutex_lock(&l->lock);
    l->stop = 1;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
  }
  if (l->threaded >= 1) {
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
  }
  for (int s = 0; s < 2; s++) {
    free(l->slot[s].x);
    free(l->slot[s].y);
  }
  free(l->perm);
  free(l);
}
