/*
 * rondo's own MPI traffic goes to MPI's profiling names (PMPI_*) for every
 * call that an interposer may define: librondo-mpi (docs/mpi.md) defines
 * MPI_Allreduce and its neighbours, and rondo's internal all-reduces,
 * broadcasts and barriers must reach MPI, not come back into rondo (nor
 * into another tool's wrapper, which would count rondo's traffic as the
 * application's). Included by base.h, after mpi.h, so every file of the
 * library compiles these names to PMPI_*; tests/check-exports.sh checks that
 * librondo.so references none of them. MPI_Finalize is not here: rondo
 * defines it (lib/api/lifecycle.c) and calls PMPI_Finalize itself.
 */
#ifndef RONDO_BASE_PMPI_H
#define RONDO_BASE_PMPI_H

#define MPI_Init PMPI_Init
#define MPI_Init_thread PMPI_Init_thread
#define MPI_Allreduce PMPI_Allreduce
#define MPI_Iallreduce PMPI_Iallreduce
#define MPI_Reduce PMPI_Reduce
#define MPI_Reduce_scatter_block PMPI_Reduce_scatter_block
#define MPI_Reduce_scatter PMPI_Reduce_scatter
#define MPI_Bcast PMPI_Bcast
#define MPI_Ibcast PMPI_Ibcast
#define MPI_Barrier PMPI_Barrier
#define MPI_Ibarrier PMPI_Ibarrier
#define MPI_Allgather PMPI_Allgather
#define MPI_Iallgather PMPI_Iallgather
#define MPI_Allgatherv PMPI_Allgatherv
#define MPI_Alltoall PMPI_Alltoall
#define MPI_Alltoallv PMPI_Alltoallv

#endif /* RONDO_BASE_PMPI_H */
