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
 *   auth.c        the job's key and the challenge-response it proves
 *   endpoint.c    where the rendezvous is served: a Unix-domain socket for a
 *                 job on one host, TCP otherwise; listening and connecting
 *   rendezvous.c  the client: connect, prove the key, say hello, hand the
 *                 socket to MPI
 *   pmi_server.c  rank 0's server: admission, the node map, PMI-1
 *   watch.c       every rank ends when the job breaks (a rank left early)
 *   launch.c      the three steps rondo_init and rondo_finalize call
 */
#ifndef RONDO_LAUNCH_LAUNCH_H
#define RONDO_LAUNCH_LAUNCH_H

#include <stddef.h>

#include "base/base.h"

enum { LAUNCH_HOST_MAX = 256, LAUNCH_PATH_MAX = 108, LAUNCH_HEX_LEN = 64 };

/* What the environment says about the job. */
typedef struct {
  const char *mpi_launcher; /* the variable that shows an MPI launcher, or NULL */
  const char *source;       /* "RANK/WORLD_SIZE", "SLURM_PROCID/SLURM_NTASKS" or NULL */
  int rank, size;           /* from source; 0 and 1 when source is NULL */
  int rank_set, size_set;   /* whether source's variables hold them (under an MPI
                               launcher either may be missing) */
  const char *rank_var, *size_var, *local_var; /* the variables' names, or NULL */
  int local_rank;           /* LOCAL_RANK (or SLURM_LOCALID), -1 when unset */
  char host[LAUNCH_HOST_MAX]; /* the rendezvous: where rank 0 listens */
  int port;
  const char *address_from; /* the variables the address came from */
  char run_id[128];         /* one attempt of one job: TORCHELASTIC_RUN_ID and
                               TORCHELASTIC_RESTART_COUNT, or "" */
  double timeout_sec;       /* RONDO_RENDEZVOUS_TIMEOUT_SEC */
  /* Where and how the rendezvous is served (launch_endpoint_decide): */
  int keyed;                /* the job has a key: TCP with the challenge-response */
  int local;                /* no key, every rank on this host: a Unix-domain socket */
  char path[LAUNCH_PATH_MAX]; /* that socket's path, when local */
} launch_vars_t;

/* Reads the variables (docs/launching.md has the order). A malformed or
 * contradictory value fails with RONDO_ERR_LAUNCH and a message naming it. */
rondo_status_t launch_read(launch_vars_t *v);
/* The rendezvous address into v->host, v->port and v->address_from, for a
 * job that forms through rondo's rendezvous; fails when none is set. */
rondo_status_t launch_read_address(launch_vars_t *v);

/* ---- the key (auth.c) ---- */

/* Reads the job's key once (RONDO_RENDEZVOUS_KEY or RONDO_RENDEZVOUS_KEY_FILE)
 * and takes RONDO_RENDEZVOUS_KEY out of the environment; *keyed says
 * whether there is one. A key that cannot be used fails with
 * RONDO_ERR_LAUNCH, every later call too. */
rondo_status_t launch_key_read(int *keyed);
/* Wipes the key from memory once the world has formed. */
void launch_key_forget(void);
/* 32 fresh random bytes as hex into hex; -1 when there is no randomness. */
int launch_auth_nonce(char hex[LAUNCH_HEX_LEN + 1]);
/* Whether text is exactly LAUNCH_HEX_LEN lowercase hex digits. */
int launch_auth_is_hex(const char *text);
/* HMAC-SHA256 under the key of "rondo rendezvous ROLE SERVER_NONCE
 * CLIENT_NONCE" as hex (role: "client" or "server"); -1 without a key. */
int launch_auth_mac(const char *role, const char *server_nonce, const char *client_nonce,
                    char hex[LAUNCH_HEX_LEN + 1]);
/* a == b, both LAUNCH_HEX_LEN long, compared in constant time. */
int launch_auth_equal(const char *a, const char *b);

/* ---- where the rendezvous is served (endpoint.c) ---- */

/* Fills v->keyed, v->local and v->path from the key and the variables
 * (docs/launching.md#who-can-join); v's address is read already. */
rondo_status_t launch_endpoint_decide(launch_vars_t *v);
/* rank 0: a listening socket for v's endpoint, into *fd. */
rondo_status_t launch_endpoint_listen(const launch_vars_t *v, int *fd);
/* Closes rank 0's listening socket (and removes a Unix socket's file). */
void launch_endpoint_close(const launch_vars_t *v, int fd);
/* One connection to v's endpoint, retried (rank 0 may not listen yet)
 * until deadline, into *fd. */
rondo_status_t launch_endpoint_connect(const launch_vars_t *v, double deadline, int *fd);
/* The endpoint as people read it: "127.0.0.1:29501" or "unix:/tmp/...". */
const char *launch_endpoint_name(const launch_vars_t *v, char *buf, size_t len);
/* Who is at the other end of an accepted connection, into buf: its
 * address and port, or the uid of a Unix-domain peer. Returns 0 when the
 * peer may connect at all: a Unix-domain peer must be this user. */
int launch_endpoint_peer(const launch_vars_t *v, int fd, char *buf, size_t len);

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
