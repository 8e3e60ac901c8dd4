/*
 * The size sweeps' shared state (sweep.c runs them, rows.c says which rows
 * run). Internal to rondo-bench's sweep.
 */
#ifndef RONDO_BENCH_SWEEP_H
#define RONDO_BENCH_SWEEP_H

#include "tools/bench/bench.h"

#define MAX_VARIANTS (RONDO_ALGO_COUNT + 2) /* the algorithms, MPI's call, the floor */

/* What a row runs. */
typedef enum {
  V_RONDO = 0,        /* rondo_*_algo (auto: the plain call) / the collective */
  V_MPI,              /* the MPI counterpart (host memory) */
  V_NCCL,             /* --memory device: raw ncclAllReduce */
  V_HOST_COPIES,      /* --memory device: copy down, rondo on the host, copy up */
  V_FLOOR             /* reduce_scatter, allgather: the memory floor, one memcpy
                         per rank (all at once) of the bytes the collective must
                         at least read and write (sweep.c's floor_bytes) */
} variant_kind_t;

typedef struct {
  char label[32];
  rondo_algo_t algo;
  int mpi;            /* the baseline ("vs MPI"): MPI's counterpart, or with
                         --memory device ncclAllReduce, else host+copies */
  variant_kind_t kind;
} variant_t;

typedef struct {
  const bench_opts_t *o;
  int family;         /* allreduce, reduce_scatter, allgather: rows per algorithm */
  rondo_coll_t coll;  /* then the family */
  rondo_comm_t comm;
  MPI_Comm mpi;       /* the baseline's communicator (a dup of the world's) */
  int rank, size;
  char *send, *recv, *expect;
  size_t cap;         /* bytes of each buffer */
  char *dsend, *drecv, *pin; /* --memory device: device buffers, a pinned one */
  variant_t v[MAX_VARIANTS];
  int nv;
  double *t;          /* [nv][iters] seconds */
  /* the current case */
  rondo_dtype_t dtype;
  rondo_op_t op;
  size_t esize, count; /* count: elements per call argument (see geometry()) */
  size_t sendn, recvn; /* elements in the send and receive buffers */
  size_t bytes;        /* the reported size */
  /* totals */
  long wrong_total, rows_wrong, rows;
  double busbw_sum, busbw_by[MAX_VARIANTS]; /* busbw_sum: the collectives' rows */
  long busbw_rows;
  int busbw_n[MAX_VARIANTS];
  char failed[6][64];  /* the first distinct "algorithm type op" with wrong rows */
  int nfailed;
  /* MPI's own uint8 min and max are wrong (mpi_minmax_u8_wrong), or its
   * sums of 8- and 16-bit integers saturate (mpi_small_sum_wrong): those
   * MPI rows are marked, and their wrong elements are not rondo's failures */
  int mpi_u8_wrong, mpi_sum_wrong;
  long mpi_wrong_total, mpi_rows_wrong;
  /* auto's quality (a family on host buffers): the cases with auto and a
   * forced algorithm, and those where auto was within 10% of the fastest */
  int auto_cases, auto_within;
  int auto_miss;       /* the current case's */
} sweep_t;

/* The rows of an allreduce, reduce_scatter or allgather run on host
 * buffers: --algo's names in order, or for "all" auto, every algorithm of
 * the family this comm can run, and MPI's own call. note (a line for the
 * header): for "all", the family's algorithms left out, and why. Returns
 * the count, or -1 (with a message) for a named algorithm that cannot run
 * on this comm. */
int sweep_rows_family(sweep_t *s, char *note, size_t len);
/* The rows of an allreduce on device buffers and their baselines; why: a
 * line for the header. Returns the count, or -1 for a named row that
 * cannot run. Collective (trial calls). */
int sweep_rows_device(sweep_t *s, char *why, size_t len);

#endif
