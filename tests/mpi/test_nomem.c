/*
 * test_nomem: rondo when memory runs out on one rank. That rank (the last,
 * then rank 0) makes its k-th allocation inside librondo fail (malloc and
 * calloc are interposed here, and fail only for callers in librondo while
 * armed), for k = 1, 2, ... until the call makes fewer allocations than k:
 *   - rondo_comm_create: the comm is made everywhere (rondo did without
 *     that memory) and works, or the creation fails everywhere, with
 *     RONDO_ERR_NO_MEMORY on that rank and RONDO_ERR_PEER on the others;
 *   - on one node, the comm's first all-reduce, which makes the shared
 *     window: the same, and a right result where it works.
 * A rank that gave up alone would leave the others waiting in the next
 * collective step: the run's timeout fails that. Then:
 *   - a fused batch of asynchronous all-reduces whose fusion buffer the
 *     victim cannot get (allocations of 256 KiB or more fail there): every
 *     rank fails the batch's requests (RONDO_ERR_NO_MEMORY on the victim,
 *     RONDO_ERR_PEER on the others), and the same batch runs right once
 *     memory is back;
 *   - on one node, a later reduce-scatter and all-gather, whose check rides
 *     in shm's first round: the same.
 * Not covered: allocations while data moves (scratch across nodes) and the
 * engine's negotiation cycles, where one rank's failure is its own
 * (docs/api.md).
 * Skipped under sanitizers, whose allocator this file cannot interpose.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NOMEM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NOMEM_SANITIZED 1
#endif
#endif
#ifndef NOMEM_SANITIZED
#define NOMEM_SANITIZED 0
#endif

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);

static int armed;        /* the allocation number that fails; 0: none */
static int seen;         /* librondo's allocations since arming */
static int fired;        /* the failure happened */
static void *rondo_base; /* where librondo is loaded */
static size_t armed_big; /* every allocation of this many bytes or more fails; 0: none */


/* librondo's shared object, found by name among the loaded ones. */
static int find_rondo(struct dl_phdr_info *info, size_t size, void *data)
{
  (void)size;
  (void)data;
  if (strstr(info->dlpi_name, "/librondo.so") == NULL)
    return 0;
  Dl_info d;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_LOAD &&
        dladdr((void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr), &d) != 0) {
      rondo_base = d.dli_fbase;
      return 1;
    }
  return 0;
}

#if !NOMEM_SANITIZED /* a sanitizer's allocator must stay the only one */
/* Whether the code at addr belongs to librondo. */
static int in_rondo(void *addr)
{
  Dl_info info;
  return dladdr(addr, &info) != 0 && info.dli_fbase == rondo_base;
}

static int should_fail(void *caller)
{
  if (armed_big > 0)
    return 0; /* (should_fail_big) */
  if (armed == 0 || fired || !in_rondo(caller))
    return 0;
  if (++seen < armed)
    return 0;
  fired = 1;
  return 1;
}

/* Big allocations while armed_big (from any thread of the process: the
 * engine's allocates its fusion buffer). */
static int should_fail_big(void *caller, size_t size)
{
  return __atomic_load_n(&armed_big, __ATOMIC_RELAXED) > 0 &&
         size >= __atomic_load_n(&armed_big, __ATOMIC_RELAXED) && in_rondo(caller);
}

__attribute__((visibility("default"))) void *malloc(size_t size)
{
  void *caller = __builtin_return_address(0);
  return should_fail(caller) || should_fail_big(caller, size) ? NULL : __libc_malloc(size);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t size)
{
  return should_fail_big(__builtin_return_address(0), size) ? NULL : __libc_realloc(p, size);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size)
{
  return should_fail(__builtin_return_address(0)) ? NULL : __libc_calloc(n, size);
}
#endif

/* An all-reduce on c is right on every rank. */
static void works(rondo_comm_t c)
{
  int x[3] = {mt.rank + 1, 1, -mt.rank};
  if (MT_EQ_STATUS(rondo_allreduce(c, x, x, 3, RONDO_INT32, RONDO_SUM), RONDO_SUCCESS))
    MT_CHECK(x[0] == mt.size * (mt.size + 1) / 2 && x[1] == mt.size &&
                 x[2] == -mt.size * (mt.size - 1) / 2,
             "sums %d %d %d", x[0], x[1], x[2]);
}

/* Whether st is the same kind of outcome on every rank: success
 * everywhere, or failure everywhere (the victim's own status, the others
 * RONDO_ERR_PEER where peer_only). */
static int agreed(rondo_status_t st, int victim, int peer_only)
{
  int ok = st == RONDO_SUCCESS, all_ok = 0, some_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&ok, &some_ok, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MT_CHECK(all_ok == some_ok, "succeeded on some ranks only (this rank: %s)", mt_status_name(st));
  if (!ok && peer_only) {
    if (mt.rank == victim)
      MT_EQ_STATUS(st, RONDO_ERR_NO_MEMORY);
    else
      MT_EQ_STATUS(st, RONDO_ERR_PEER);
  }
  return all_ok;
}

/* Arms the k-th allocation on the victim; returns whether any rank's
 * armed allocation failed once disarmed (*any, collective). */
static void arm(int victim, int k)
{
  seen = fired = 0;
  armed = mt.rank == victim ? k : 0;
}

static int disarm(void)
{
  armed = 0;
  int hit = fired, any = 0;
  MPI_Allreduce(&hit, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}

/* Phase 1: rondo_comm_create. Returns the allocations it made. */
static int creation(int victim)
{
  int k, made = 0, failed = 0;
  for (k = 1; k <= 1000; k++) {
    mt_where("allocation %d of rondo_comm_create fails on rank %d", k, victim);
    arm(victim, k);
    rondo_comm_t c = NULL;
    rondo_status_t st = rondo_comm_create(MPI_COMM_WORLD, &c);
    int any = disarm();
    if (agreed(st, victim, 1)) {
      made += any;
      works(c);
      MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
    } else {
      failed++;
      MT_CHECK(c == NULL, "a failed creation leaves *comm NULL");
    }
    if (!any)
      break; /* fewer than k allocations: every one has failed once */
  }
  if (mt.rank == 0)
    printf("test_nomem: rondo_comm_create, rank %d: %d allocations; %d failures failed it "
           "everywhere, %d were done without\n",
           victim, k - 1, failed, made);
  MT_CHECK(k > 1 && k <= 1000, "allocations found: %d", k - 1);
  MT_CHECK(failed > 0, "some failure fails the creation");
  return k - 1;
}

/* Phase 2, on one node: a comm's first blocking all-reduce, which makes
 * the shared-memory window (before any data moves). It returns alike on
 * every rank, and where it succeeded its result is right. (Across nodes the
 * first call allocates scratch while data moves: a failure there is one
 * rank's, as docs/api.md says.) */
static void first_call(int victim)
{
  enum { N = 4099 };
  int *x = mt_alloc(N * sizeof *x), k;
  for (k = 1; k <= 1000; k++) {
    mt_where("allocation %d of the first all-reduce fails on rank %d", k, victim);
    rondo_comm_t c = NULL;
    if (!MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS))
      break;
    for (int i = 0; i < N; i++)
      x[i] = mt.rank + i % 5;
    arm(victim, k);
    rondo_status_t st = rondo_allreduce(c, x, x, N, RONDO_INT32, RONDO_SUM);
    int any = disarm();
    if (agreed(st, victim, 1)) {
      long wrong = 0;
      for (int i = 0; i < N; i++)
        wrong += x[i] != mt.size * (mt.size - 1) / 2 + mt.size * (i % 5);
      MT_EQ_INT(wrong, 0);
    }
    if (!any)
      MT_EQ_STATUS(st, RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
    if (!any)
      break;
  }
  if (mt.rank == 0)
    printf("test_nomem: first all-reduce, rank %d: %d allocations\n", victim, k - 1);
  MT_CHECK(k > 1 && k <= 1000, "allocations found: %d", k - 1);
  free(x);
}


/* Phase 3: a fused batch of asynchronous all-reduces (a group of 8, so one
 * batch) whose fusion buffer the victim cannot get: the batch fails on
 * every rank, none waits for another, and it runs right afterwards. */
static void fused_batch(int victim)
{
  enum { TENSORS = 8, N = 16384 }; /* 64 KiB each: fused, 512 KiB together */
  mt_where("a fused batch whose fusion buffer rank %d cannot get", victim);
  rondo_comm_t c = NULL;
  if (!MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS))
    return;
  float *x = mt_alloc(TENSORS * N * sizeof *x);
  for (int round = 0; round < 3; round++) {
    /* round 0: the algorithm's own memory, unarmed, one tensor alone (no
     * fusion buffer); round 1: armed; round 2: memory is back */
    int tensors = round == 0 ? 1 : TENSORS;
    size_t count = round == 0 ? (size_t)TENSORS * N : N;
    for (size_t i = 0; i < (size_t)TENSORS * N; i++)
      x[i] = (float)(mt.rank + (int)(i % 7));
    if (round == 1 && mt.rank == victim)
      __atomic_store_n(&armed_big, (size_t)256 << 10, __ATOMIC_RELAXED);
    rondo_request_t req[TENSORS];
    rondo_async_opts_t opts = RONDO_ASYNC_OPTS_INIT;
    opts.group = round == 0 ? NULL : "batch";
    opts.group_size = tensors;
    char name[32];
    for (int t = 0; t < tensors; t++) {
      snprintf(name, sizeof name, "r%d.t%d", round, t);
      MT_EQ_STATUS(rondo_allreduce_async(c, name, x + (size_t)t * N, x + (size_t)t * N, count,
                                         RONDO_FLOAT32, RONDO_SUM, &opts, &req[t]),
                   RONDO_SUCCESS);
    }
    rondo_status_t st[TENSORS];
    for (int t = 0; t < tensors; t++)
      st[t] = rondo_wait(&req[t]);
    __atomic_store_n(&armed_big, 0, __ATOMIC_RELAXED);
    for (int t = 0; t < tensors; t++) {
      if (round == 1)
        MT_EQ_STATUS(st[t], mt.rank == victim ? RONDO_ERR_NO_MEMORY : RONDO_ERR_PEER);
      else
        MT_EQ_STATUS(st[t], RONDO_SUCCESS);
    }
    if (round != 1) {
      long wrong = 0;
      for (size_t i = 0; i < (size_t)tensors * count; i++)
        wrong += x[i] != (float)(mt.size * (mt.size - 1) / 2 + mt.size * (int)(i % 7));
      MT_EQ_INT(wrong, 0);
    }
  }
  free(x);
  MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
}

/* Phase 4, on one node: a reduce-scatter (in place at the start, which
 * needs a result buffer) and an all-gather after the comm's first call,
 * whose check rides in shm's first round: a rank that cannot get the
 * call's offsets or result buffer fails it on every rank instead of
 * leaving the others waiting on the argument board. */
static void folded_calls(int victim)
{
  enum { N = 4096 };
  rondo_comm_t c = NULL;
  if (!MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS))
    return;
  int p = mt.size, me = mt.rank;
  float *x = mt_alloc((size_t)p * N * sizeof *x), *all = mt_alloc((size_t)p * N * sizeof *all);
  /* the shared window, and each call's choice, made: the checks ride in
   * shm's first round from here on */
  for (int j = 0; j < p * N; j++)
    x[j] = 1;
  MT_EQ_STATUS(rondo_reduce_scatter(c, x, all, N, RONDO_FLOAT32, RONDO_SUM), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_allgather(c, x, all, N, RONDO_FLOAT32), RONDO_SUCCESS);
  for (int which = 0; which < 2; which++) {
    int k;
    for (k = 1; k <= 1000; k++) {
      mt_where("allocation %d of a later %s fails on rank %d", k,
               which ? "all-gather" : "reduce-scatter in place", victim);
      for (int j = 0; j < p * N; j++)
        x[j] = (float)(me + 1 + j % 3);
      arm(victim, k);
      rondo_status_t st = which ? rondo_allgather(c, x, all, N, RONDO_FLOAT32)
                                : rondo_reduce_scatter(c, x, x, N, RONDO_FLOAT32, RONDO_SUM);
      int any = disarm();
      if (getenv("DBG")) fprintf(stderr, "rank %d which %d k %d st %d fired %d any %d\n", me, which, k, st, fired, any);
      if (agreed(st, victim, 1)) {
        long wrong = 0;
        for (int i = 0; i < (which ? p * N : N); i++) {
          float want = which ? (float)(i / N + 1 + (i % N) % 3)
                             : (float)(p * (p + 1) / 2 + p * ((me * N + i) % 3));
          wrong += (which ? all[i] : x[i]) != want;
        }
        MT_EQ_INT(wrong, 0);
      }
      if (!any)
        break;
    }
    MT_CHECK(k > 1 && k <= 1000, "allocations found: %d", k - 1);
  }
  free(x);
  free(all);
  MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
}

int main(int argc, char **argv)
{
  int provided = 0; /* asynchronous requests (phase 3) need threads */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  mt_start("test_nomem");
  if (NOMEM_SANITIZED) {
    int rc = mt_skip("a sanitizer's allocator cannot be interposed");
    MPI_Finalize();
    return rc;
  }
  dl_iterate_phdr(find_rondo, NULL);
  if (rondo_base == NULL) {
    int rc = mt_skip("librondo is not a shared object here (a static link)");
    MPI_Finalize();
    return rc;
  }
  rondo_comm_t probe = NULL;
  int nodes = 0;
  if (MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &probe), RONDO_SUCCESS)) {
    nodes = MT_QUERY(rondo_comm_node_count, probe);
    MT_EQ_STATUS(rondo_comm_destroy(&probe), RONDO_SUCCESS);
  }
  /* The last rank, and rank 0, which allocates for the others at times. */
  for (int v = 0; v < (mt.size > 1 ? 2 : 1); v++) {
    int victim = v == 0 ? mt.size - 1 : 0;
    creation(victim);
    if (nodes == 1 && mt.size > 1) { /* one rank: the call copies, nothing to make */
      first_call(victim);
      folded_calls(victim);
    }
    if (mt.size > 1)
      fused_batch(victim);
  }
  rondo_finalize();
  int rc = mt_finish();
  MPI_Finalize();
  return rc;
}
