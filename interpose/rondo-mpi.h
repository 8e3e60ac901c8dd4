/*
 * librondo-mpi: rondo's collectives under MPI's own names, for MPI programs
 * that were not written for rondo (docs/mpi.md). Link it before the MPI
 * library, or load it with LD_PRELOAD at launch time; the program needs no
 * change. This header is for programs and tests that want to see what the
 * library did; nothing else needs it.
 */
#ifndef RONDO_MPI_H
#define RONDO_MPI_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The calls librondo-mpi can take over (RONDO_MPI_INTERCEPT's names). */
typedef enum {
  RONDO_MPI_ALLREDUCE = 0,            /* "allreduce" */
  RONDO_MPI_IALLREDUCE = 1,           /* "iallreduce" */
  RONDO_MPI_REDUCE_SCATTER_BLOCK = 2, /* "reduce_scatter_block" */
  RONDO_MPI_ALLGATHER = 3,            /* "allgather" */
  RONDO_MPI_BCAST = 4,                /* "bcast" */
  RONDO_MPI_BARRIER = 5,              /* "barrier" */
  RONDO_MPI_REDUCE_SCATTER = 6,       /* "reduce_scatter" */
  RONDO_MPI_ALLGATHERV = 7,           /* "allgatherv" */
  RONDO_MPI_CALLS = 8                 /* grows when a release adds a call */
} rondo_mpi_call_t;

/* 1 if librondo-mpi is taking calls over in this process: MPI was
 * initialized through it and every rank agreed on RONDO_MPI_INTERCEPT;
 * else 0 (everything goes to MPI). */
int rondo_mpi_active(void);

/* How many of this rank's calls of one kind on comm rondo took over and
 * how many went to MPI unchanged, since MPI_Init. Both 0 for a
 * communicator that saw no such call. MPI_SUCCESS, or MPI_ERR_ARG for an
 * unknown call or NULL pointers. Local. */
int rondo_mpi_counts(MPI_Comm comm, rondo_mpi_call_t call, long *taken, long *passed);

#ifdef __cplusplus
}
#endif
#endif /* RONDO_MPI_H */
