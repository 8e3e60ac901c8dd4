/*
 * test_nomem: rondo_comm_create when memory runs out on one rank. The last
 * rank makes its k-th allocation inside librondo fail (malloc and calloc
 * are interposed here, and fail only for callers in librondo while armed),
 * for k = 1, 2, ... until a creation makes fewer allocations than k. Each
 * time, every rank must return: either the comm is made everywhere (rondo
 * did without that memory) and works, or the creation fails everywhere,
 * with RONDO_ERR_NO_MEMORY on the last rank and RONDO_ERR_PEER on the
 * others. A rank that gave up alone would leave the others waiting in the
 * next collective step: the run's timeout fails that.
 * Skipped under AddressSanitizer, whose allocator this file cannot
 * interpose.
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
#else
#define NOMEM_SANITIZED 0
#endif

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);

static int armed;        /* the allocation number that fails; 0: none */
static int seen;         /* librondo's allocations since arming */
static int fired;        /* the failure happened */
static void *rondo_base; /* where librondo is loaded */

/* Whether the code at addr belongs to librondo. */
static int in_rondo(void *addr)
{
  Dl_info info;
  return dladdr(addr, &info) != 0 && info.dli_fbase == rondo_base;
}

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

static int should_fail(void *caller)
{
  if (armed == 0 || fired || !in_rondo(caller))
    return 0;
  if (++seen < armed)
    return 0;
  fired = 1;
  return 1;
}

#if !NOMEM_SANITIZED /* a sanitizer's allocator must stay the only one */
__attribute__((visibility("default"))) void *malloc(size_t size)
{
  return should_fail(__builtin_return_address(0)) ? NULL : __libc_malloc(size);
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

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
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
  int last = mt.rank == mt.size - 1, k, made = 0, failed = 0;
  for (k = 1; k <= 1000; k++) {
    mt_where("allocation %d of rondo_comm_create fails on rank %d", k, mt.size - 1);
    seen = fired = 0;
    armed = last ? k : 0;
    rondo_comm_t c = NULL;
    rondo_status_t st = rondo_comm_create(MPI_COMM_WORLD, &c);
    armed = 0;
    int hit = fired, any = 0;
    MPI_Allreduce(&hit, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int ok = st == RONDO_SUCCESS, all_ok = 0, some_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&ok, &some_ok, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MT_CHECK(all_ok == some_ok, "made on some ranks only (this rank: %s)", mt_status_name(st));
    if (ok) {
      made += any;
      works(c);
      MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
    } else {
      failed++;
      MT_EQ_STATUS(st, last ? RONDO_ERR_NO_MEMORY : RONDO_ERR_PEER);
      MT_CHECK(c == NULL, "a failed creation leaves *comm NULL");
    }
    if (!any)
      break; /* fewer than k allocations: every one has failed once */
  }
  if (mt.rank == 0)
    printf("test_nomem: %d allocations; %d failures made the creation fail everywhere, %d "
           "were done without\n",
           k - 1, failed, made);
  MT_CHECK(k > 1 && k <= 1000, "allocations found: %d", k - 1);
  MT_CHECK(failed > 0, "some failure fails the creation");
  rondo_finalize();
  int rc = mt_finish();
  MPI_Finalize();
  return rc;
}
