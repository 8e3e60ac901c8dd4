/*
 * Building and freeing comms (lib/comm): the private duplicate, the comm's
 * configuration (the knobs, read and agreed once), the topology with its
 * cross-node comms, and the argument board. Above lib/algo, below the
 * engine, which builds its own comms here, and the API, which registers
 * user comms. Internal (prefix comm_).
 */
#ifndef RONDO_COMM_H
#define RONDO_COMM_H

#include "base/comm.h"

/* Collective over mpi_comm (duplicated): a new comm in *out.
 *  - parent NULL: a user comm. Its configuration is read from the
 *    environment now (knobs, RONDO_ALLREDUCE_ALGO checked against the
 *    algorithm table, the tuning file loaded, the timeline path tried on
 *    rank 0).
 *  - parent set: an internal comm (the engine's) with the parent's
 *    configuration and tuning table (borrowed: free it before the parent).
 * Either gets an argument board on one node.
 * yield: its waits yield the core at once, as on an oversubscribed node.
 * local: this rank's setup status so far (the library's). A failure on any
 * rank fails the call on every rank: the failing rank returns its status,
 * the others RONDO_ERR_PEER with its message. */
rondo_status_t comm_build(MPI_Comm mpi_comm, const struct rondo_comm *parent, int yield,
                          rondo_status_t local, rondo_comm_t *out);
/* A setup failure on some rank reaches every rank of comm: the lowest
 * failing rank returns its status (and logs it), the others RONDO_ERR_PEER
 * with its message. Collective. */
rondo_status_t comm_agree_status(rondo_comm_t comm, rondo_status_t local);
/* Frees everything comm_build made (the engine must be gone). mpi_usable: 0
 * after MPI_Finalize, when only memory is freed. */
void comm_free(rondo_comm_t comm, int mpi_usable);

#endif /* RONDO_COMM_H */
