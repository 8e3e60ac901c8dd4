/*
 * The all-gather dispatch: the comm's choice among the family's members
 * (family.c), then the run through the member's descriptor. lib/api's
 * blocking calls (equal blocks and allgatherv's layouts), lib/engine's
 * fused requests and the device path's host part all come through here.
 *
 * Device buffers take algo_allgather_device: the family's nccl and staged
 * members.
 *
 * An all-gather moves bytes and never looks at them, so the members get
 * the blocks in bytes (esize 1) whatever the caller's element size; one
 * rank copies its block.
 */
#include "algo/common/blocks.h"
#include "algo/common/shared_alloc.h"

#include <stdlib.h>
#include <string.h>

rondo_status_t algo_allgather_run(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                  const size_t *counts, const size_t *displs, size_t esize,
                                  rondo_algo_t algo, const agree_sig_t *agree)
{
  int p = comm->size, r = comm->rank;
  size_t *c = malloc((2 * (size_t)p + 1) * sizeof *c);
  if (c == NULL)
    return algo_family_refuse(
        comm, rondo__fail(RONDO_ERR_NO_MEMORY, "all-gather: %d offsets", p), agree);
  size_t *d = c + p, end = 0, total = 0;
  int packed = 1;
  for (int i = 0; i < p; i++) {
    c[i] = counts[i] * esize;
    d[i] = displs != NULL ? displs[i] * esize : total;
    packed = packed && d[i] == total;
    total += c[i];
    end = d[i] + c[i] > end ? d[i] + c[i] : end;
  }
  d[p] = end;
  select_input_t in = algo_family_input(comm, RONDO_COLL_ALLGATHER, c, 0, RONDO_UINT8, RONDO_SUM);
  rondo_status_t st = algo_family_refuse(comm, algo_family_resolve(comm, &in, &algo), agree);
  if (st == RONDO_SUCCESS && total > 0) {
    algo_blocks_args_t a = {.comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf, .counts = c,
                            .displs = d, .total = total, .packed = packed,
                            .dtype = RONDO_UINT8, .op = RONDO_SUM, .esize = 1, .agree = agree};
    LOG_DEBUG("allgather %zu bytes: %s", total, rondo_algo_name(algo));
    char *own = (char *)recvbuf + d[r];
    if (p == 1) {
      if (own != (const char *)sendbuf && c[r] > 0)
        memmove(own, sendbuf, c[r]);
    } else {
      st = algo_family_find(RONDO_COLL_ALLGATHER, algo)->blocks(&a);
    }
  }
  free(c);
  return st;
}

rondo_status_t algo_allgatherv(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                               const size_t *counts, const size_t *displs, size_t esize)
{
  return algo_allgather_run(comm, sendbuf, recvbuf, counts, displs, esize, RONDO_ALGO_AUTO,
                            NULL);
}

rondo_status_t algo_allgather_block(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    size_t count, size_t esize, rondo_algo_t algo,
                                    const agree_sig_t *agree)
{
  size_t *counts = malloc((size_t)comm->size * sizeof *counts);
  if (counts == NULL)
    return algo_family_refuse(
        comm, rondo__fail(RONDO_ERR_NO_MEMORY, "all-gather: %d counts", comm->size), agree);
  for (int i = 0; i < comm->size; i++)
    counts[i] = count;
  rondo_status_t st =
      algo_allgather_run(comm, sendbuf, recvbuf, counts, NULL, esize, algo, agree);
  free(counts);
  return st;
}

rondo_status_t algo_allgather_checked(rondo_comm_t comm, rondo_status_t local, agree_sig_t *sig,
                                      const void *sendbuf, void *recvbuf, size_t bytes,
                                      rondo_algo_t algo)
{
  rondo_status_t st = local;
  if (st == RONDO_SUCCESS && bytes > 0) {
    select_input_t in = algo_family_input(comm, RONDO_COLL_ALLGATHER, NULL, bytes, RONDO_UINT8,
                                          RONDO_SUM);
    st = algo_family_resolve(comm, &in, &algo);
  }
  agree_sig_add(sig, "algorithm", st == RONDO_SUCCESS ? algo : RONDO_ALGO_AUTO);
  agree_sig_add(sig, AGREE_MEMORY_FIELD, 0);
  shalloc_sig_add(comm, sig, algo, sendbuf, st == RONDO_SUCCESS ? bytes : 0,
                  bytes * (size_t)comm->size);
  if (st == RONDO_SUCCESS && algo_family_folds_check(comm, RONDO_COLL_ALLGATHER, algo, bytes,
                                                     bytes * (size_t)comm->size))
    return algo_allgather_block(comm, sendbuf, recvbuf, bytes, 1, algo, sig);
  RONDO_CHECK(agree_call(comm, st, sig));
  if (bytes == 0)
    return RONDO_SUCCESS;
  return algo_allgather_block(comm, sendbuf, recvbuf, bytes, 1, algo, NULL);
}

/* The staged member's host part (algo_blocks_args_t.host). */
static rondo_status_t host_run(const algo_blocks_args_t *a, const void *sendbuf, void *recvbuf)
{
  return algo_allgather_run(a->comm, sendbuf, recvbuf, a->counts, a->displs, 1, RONDO_ALGO_AUTO,
                            NULL);
}

rondo_status_t algo_allgather_device(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                     size_t bytes, rondo_algo_t algo)
{
  int p = comm->size;
  size_t *c = malloc((2 * (size_t)p + 1) * sizeof *c);
  if (c == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "all-gather: %d offsets", p);
  size_t *d = c + p;
  for (int i = 0; i <= p; i++) {
    if (i < p)
      c[i] = bytes;
    d[i] = (size_t)i * bytes;
  }
  select_input_t in = algo_family_input_mem(comm, RONDO_COLL_ALLGATHER, NULL, bytes, RONDO_UINT8,
                                            RONDO_SUM, SELECT_MEM_DEVICE);
  rondo_status_t st = algo_family_resolve(comm, &in, &algo);
  if (st == RONDO_SUCCESS) {
    algo_blocks_args_t a = {.comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf, .counts = c,
                            .displs = d, .total = in.count, .packed = 1,
                            .dtype = RONDO_UINT8, .op = RONDO_SUM, .esize = 1,
                            .host = host_run};
    LOG_DEBUG("allgather %zu bytes on device buffers: %s", in.count, rondo_algo_name(algo));
    st = algo_family_find(RONDO_COLL_ALLGATHER, algo)->blocks(&a);
  }
  free(c);
  return st;
}
