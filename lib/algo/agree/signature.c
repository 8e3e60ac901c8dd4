/*
 * What the agreement's files share (signature.h): the collectives' names,
 * a signature's fields and 64-bit sum, the order in which differing fields
 * are reported, and the error of a call that met a rank destroying the
 * comm.
 */
#include "algo/agree/signature.h"

#include <stdio.h>
#include <string.h>

int agree_skip;
_Thread_local int agree_mismatch_same_call;

static const char *const colls[AGREE_COLLS] = {
    "rondo_allreduce", "rondo_broadcast", "rondo_allgather", "rondo_allgatherv",
    "rondo_reduce_scatter", "rondo_alltoall", "rondo_barrier", "rondo_comm_split",
    "rondo_mem_alloc", "rondo_mem_free", "rondo_comm_destroy"};

const char *agree_coll_name(agree_coll_t coll)
{
  return (unsigned)coll < AGREE_COLLS ? colls[coll] : "?";
}

void agree_sig_add(agree_sig_t *sig, const char *field, int64_t value)
{
  if (sig->n < AGREE_SIG_MAX) {
    sig->field[sig->n] = field;
    sig->value[sig->n] = value;
    sig->n++;
  }
}

int64_t agree_sig_find(const agree_sig_t *sig, const char *field, int64_t absent)
{
  for (int i = 0; sig != NULL && i < sig->n; i++)
    if (strcmp(sig->field[i], field) == 0)
      return sig->value[i];
  return absent;
}

/* The field to report k-th when fields differ: a memory-kind field first
 * (host buffers on one rank and device buffers on another also make the
 * algorithm differ, and the memory is the cause), then the others in
 * order. The signature's own order is fixed: the packet's inline path
 * reads the all-reduce's fields by position (carries()). */
int agree_report_order(const agree_sig_t *sig, int k)
{
  int mem = -1;
  for (int i = 0; i < sig->n; i++)
    if (strcmp(sig->field[i], AGREE_MEMORY_FIELD) == 0)
      mem = i;
  if (mem < 0)
    return k;
  if (k == 0)
    return mem;
  return k <= mem ? k - 1 : k;
}

uint64_t agree_sig_sum(const agree_sig_t *sig)
{
  /* (One collective always has the same fields: n needs no mixing.) */
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)sig->coll;
  for (int i = 0; i < sig->n; i++) {
    h = (h ^ (uint64_t)sig->value[i]) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return h != 0 ? h : 1;
}

/* A field that is a hash of several values (its value means nothing to a
 * reader): named "... (hash)". */
int agree_field_is_hash(const char *field)
{
  size_t n = strlen(field);
  return n >= 6 && strcmp(field + n - 6, "(hash)") == 0;
}

/* A call that met a rank destroying the comm. */
rondo_status_t agree_left(rondo_comm_t comm, const agree_sig_t *sig, int rank)
{
  /* A comm of part of the world: its rank in MPI_COMM_WORLD too. */
  char world[64] = "";
  MPI_Group mine, all;
  int w = -1, wsize = 0;
  if (MPI_Comm_size(MPI_COMM_WORLD, &wsize) == MPI_SUCCESS && wsize != comm->size &&
      MPI_Comm_group(comm->mpi, &mine) == MPI_SUCCESS) {
    if (MPI_Comm_group(MPI_COMM_WORLD, &all) == MPI_SUCCESS) {
      if (MPI_Group_translate_ranks(mine, 1, &rank, all, &w) == MPI_SUCCESS && w >= 0)
        snprintf(world, sizeof world, " (rank %d of MPI_COMM_WORLD)", w);
      MPI_Group_free(&all);
    }
    MPI_Group_free(&mine);
  }
  return rondo__fail(RONDO_ERR_SHUT_DOWN,
                     "%s: rank %d%s is destroying this comm (rondo_comm_destroy or "
                     "rondo_finalize); the collective cannot complete",
                     agree_coll_name(sig->coll), rank, world);
}

