/*
 * Forming the world when no MPI launcher started the process
 * (docs/launching.md).
 *
 * Under mpiexec or srun --mpi=pmi2, MPI finds its peers itself and this
 * layer only checks that the launcher variables (RANK, WORLD_SIZE) do not
 * contradict MPI's world. Under torchrun, torch.multiprocessing.spawn or any
 * launcher that sets RANK and WORLD_SIZE, rank 0 serves the process-manager
 * interface MPICH speaks (PMI-1) on a TCP port, every rank connects to it,
 * and MPI_Init forms the world through it. MPI still carries all the data;
 * the server only answers MPI's start-up and shut-down questions.
 *
 *   variables.c   which launcher started the process, and what it said
 *   rendezvous.c  the client: connect, say hello, hand the socket to MPI
 *   pmi_server.c  rank 0's server: the hello, the node map, PMI-1
 *   watch.c       every rank ends when the job breaks (a rank left early)
 *   launch.c      the three steps rondo_init and rondo_finalize call
 */
#ifndef RONDO_LAUNCH_LAUNCH_H
#define RONDO_LAUNCH_LAUNCH_H

#include <stddef.h>

#include "base/base.h"

enum { LAUNCH_HOST_MAX = 256 };

/* What the environment says about the job. */
typedef struct {
  const char *mpi_launcher; /* the variable that shows an MPI launcher, or NULL */
  const char *source;       /* "RANK/WORLD_SIZE", "SLURM_PROCID/SLURM_NTASKS" or NULL */
  int rank, size;           /* from source; 0 and 1 when source is NULL */
  int local_rank;           /* LOCAL_RANK (or SLURM_LOCALID), -1 when unset */
  char host[LAUNCH_HOST_MAX]; /* the rendezvous: where rank 0 listens */
  int port;
  const char *address_from; /* the variables the address came from */
  char run_id[128];         /* one attempt of one job: TORCHELASTIC_RUN_ID and
                               TORCHELASTIC_RESTART_COUNT, or "" */
  double timeout_sec;       /* RONDO_RENDEZVOUS_TIMEOUT_SEC */
} launch_vars_t;

/* Reads the variables (docs/launching.md has the order). A malformed or
 * contradictory value fails with RONDO_ERR_LAUNCH and a message naming it. */
rondo_status_t launch_read(launch_vars_t *v);
/* The rendezvous address into v->host, v->port and v->address_from, for a
 * job that forms through rondo's rendezvous; fails when none is set. */
rondo_status_t launch_read_address(launch_vars_t *v);

/* rank 0: starts the server on v->port (listening before it returns, so a
 * port that is taken fails here). */
rondo_status_t launch_serve(const launch_vars_t *v);
/* Waits for the server to finish (every rank finalized, or the job broke):
 * at most timeout_sec. Returns 0, or -1 when it had to give up. */
int launch_serve_join(double timeout_sec);
/* Why rank 0's server saw the job break, into why ("" when it did not, or
 * on any other rank), for this process's watcher; returns the exit status
 * to end with (0: the watcher's default, 75). */
int launch_serve_why(char *why, size_t len);

/* Every rank: connects to the rendezvous, says hello, waits for the whole
 * job, and leaves the socket in the environment for MPI_Init (PMI_FD,
 * PMI_RANK, PMI_SIZE) and in *fd. */
rondo_status_t launch_join(const launch_vars_t *v, int *fd);
/* After MPI_Init: takes PMI_FD, PMI_RANK and PMI_SIZE out of the
 * environment again, so a child process does not take them for its own. */
void launch_forget_env(void);

/* Every rank of a rendezvous: a thread watches the connection fd (not
 * reading it); when it closes before launch_finalizing, the process says
 * why and ends (watch.c). */
rondo_status_t launch_watch_start(int fd, int rank);
/* MPI_Finalize begins: from now on the connection closing is the job's end. */
void launch_finalizing(void);
/* Ends the watcher thread (after MPI_Finalize). */
void launch_watch_stop(void);

/* ---- what rondo_init and rondo_finalize call (launch.c) ---- */

/* Before MPI_Init: forms the world through the rendezvous where no MPI
 * launcher did and the variables describe more than one process; fails on
 * an MPI library that cannot be started that way. */
rondo_status_t launch_before_mpi(void);
/* After MPI is up: RANK and WORLD_SIZE, where set, must be MPI's.
 * collective: called on every rank of MPI_COMM_WORLD (rondo_init), and every
 * rank learns whether any disagrees; otherwise this process alone. */
rondo_status_t launch_check_world(int collective);
/* After MPI_Finalize: rank 0 waits for its server; nothing is left behind. */
void launch_after_mpi(void);
/* How this process's world was formed, for rondo-info and the log. */
const char *launch_describe(void);

#endif
