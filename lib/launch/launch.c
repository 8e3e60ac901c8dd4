/*
 * The three moments of a process's life where the launcher matters, as
 * rondo_init and rondo_finalize call them (docs/launching.md):
 *   before MPI_Init   form the world through rondo's rendezvous where no
 *                     MPI launcher did (launch_before_mpi);
 *   MPI is up         the launcher variables must describe MPI's world
 *                     (launch_check_world), on every path to a first comm;
 *   MPI_Finalize begins  the rendezvous closing is no longer a rank lost
 *                     (launch_finalizing, watch.c);
 *   after MPI_Finalize  rank 0's server waits for the last rank to finalize
 *                     (launch_after_mpi).
 */
#include "launch/launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static launch_vars_t formed;   /* the variables the rendezvous used */
static int by_rendezvous;      /* this process's world came from rondo's rendezvous */
static char description[512] = "not started";

/* The MPI library: MPICH and its derivatives read PMI_FD; Open MPI needs
 * PMIx from its own launchers. */
static const char *mpi_without_pmi1(void)
{
#if defined(OPEN_MPI) && OPEN_MPI
  return "Open MPI";
#else
  return NULL;
#endif
}

rondo_status_t launch_before_mpi(void)
{
  launch_vars_t v;
  RONDO_CHECK(launch_read(&v));
  if (v.mpi_launcher != NULL) {
    snprintf(description, sizeof description, "an MPI launcher (%s is set)", v.mpi_launcher);
    return RONDO_SUCCESS;
  }
  if (v.size == 1) {
    snprintf(description, sizeof description, "one process, no launcher%s",
             v.source != NULL ? " variables beyond RANK=0, WORLD_SIZE=1" : "");
    return RONDO_SUCCESS;
  }
  /* The log speaks from here on (lib/api reads RONDO_LOG again once MPI is up). */
  rondo__log_from_env();
  rondo__log_set_rank(v.rank);
  const char *other = mpi_without_pmi1();
  if (other != NULL)
    return rondo__fail(RONDO_ERR_LAUNCH,
                       "%s describes a job of %d processes, but this rondo is built on %s, "
                       "which forms a job only under its own launchers: start it with mpiexec "
                       "(or srun --mpi=pmix). Under torchrun and other launchers, use rondo "
                       "built on MPICH (docs/launching.md)",
                       v.source, v.size, other);
  RONDO_CHECK(launch_read_address(&v));
  RONDO_CHECK(launch_endpoint_decide(&v));
  if (v.rank == 0)
    RONDO_CHECK(launch_serve(&v));
  int fd = -1;
  rondo_status_t st = launch_join(&v, &fd);
  if (st == RONDO_SUCCESS && (st = launch_watch_start(fd, v.rank)) != RONDO_SUCCESS) {
    launch_forget_env();
    close(fd);
  }
  if (st != RONDO_SUCCESS) {
    if (v.rank == 0)
      launch_serve_join(0);
    launch_key_forget(); /* after the server, which may still check a key */
    return st;
  }
  launch_key_forget(); /* the world has formed: no more handshakes */
  formed = v;
  by_rendezvous = 1;
  char where[LAUNCH_HOST_MAX + LAUNCH_PATH_MAX];
  snprintf(description, sizeof description, "%s, through rondo's rendezvous at %s (from %s; %s)",
           v.source, launch_endpoint_name(&v, where, sizeof where), v.address_from,
           v.keyed  ? "the job's key proven"
           : v.local ? "this user's processes only"
                     : "unauthenticated");
  return RONDO_SUCCESS;
}

/* This process's rank among the processes MPI puts on its node.
 * Collective over MPI_COMM_WORLD. */
static rondo_status_t mpi_local_rank(int *local, int *local_size)
{
  MPI_Comm node;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int a = MPI_Comm_rank(node, local), b = MPI_Comm_size(node, local_size);
  MPI_Comm_free(&node);
  MPI_CHECK(a);
  MPI_CHECK(b);
  return RONDO_SUCCESS;
}

/* Into why (len bytes): how the launcher's variables in v contradict MPI's
 * rank and size, or "" when they do not. Only the variables present are
 * compared: under an MPI launcher MPI is the authority. */
static void contradiction(const launch_vars_t *v, int rank, int size, char *why, size_t len)
{
  why[0] = '\0';
  int rank_off = v->rank_set && v->rank != rank, size_off = v->size_set && v->size != size;
  /* srun --mpi=pmix under an MPI that speaks no PMIx: every process is a
   * singleton. */
  int pmix_alone = size == 1 && v->mpi_launcher != NULL &&
                   strcmp(v->mpi_launcher, "PMIX_RANK") == 0 && mpi_without_pmi1() == NULL;
  if (v->rank_set && v->size_set && (rank_off || size_off))
    snprintf(why, len, "%s says rank %d of %d, but MPI made this process rank %d of %d%s",
             v->source, v->rank, v->size, rank, size,
             pmix_alone ? ": a PMIx launcher (srun --mpi=pmix) started it, and this rondo's "
                          "MPI (MPICH) speaks PMI-1 and PMI-2, not PMIx: use srun --mpi=pmi2, "
                          "or mpiexec"
             : size == 1 ? ": MPI was started without rondo's rendezvous (call rondo_init() "
                           "before MPI_Init(), or launch with mpiexec)"
                         : ": unset the variables, or make them MPI's");
  else if (size_off)
    snprintf(why, len, "%s=%d, but MPI's world has %d processes: unset it, or make it MPI's",
             v->size_var, v->size, size);
  else if (rank_off)
    snprintf(why, len, "%s=%d, but MPI made this process rank %d of %d: unset it, or make it "
             "MPI's", v->rank_var, v->rank, rank, size);
}

rondo_status_t launch_check_world(int collective)
{
  if (by_rendezvous)
    launch_forget_env();
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  launch_vars_t v;
  char why[512] = "";
  rondo_status_t st = launch_read(&v);
  if (st != RONDO_SUCCESS)
    snprintf(why, sizeof why, "%s", rondo_last_error());
  else
    contradiction(&v, rank, size, why, sizeof why);
  if (strcmp(description, "not started") == 0)
    snprintf(description, sizeof description, "MPI was initialized by the application");
  /* Every rank learns whether any rank disagrees. */
  int bad = why[0] != '\0', first = bad ? rank : size;
  if (!collective && size > 1)
    return bad ? rondo__fail(RONDO_ERR_LAUNCH, "%s", why) : RONDO_SUCCESS;
  if (size > 1) {
    /* Under an MPI launcher, LOCAL_RANK (SLURM_LOCALID) against MPI's
     * node. The split is collective, and on an oversubscribed node costs
     * a scheduler slice or more a step: it runs only where some rank has
     * such a variable, which the same all-reduce tells every rank. Not
     * through the rendezvous: torchrun's LOCAL_RANK counts an agent's
     * workers, and two agents may share a host. */
    int want = !by_rendezvous && !bad && v.mpi_launcher != NULL && v.local_rank >= 0;
    int in[2] = {first, -want}, out[2];
    MPI_CHECK(MPI_Allreduce(in, out, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    first = out[0];
    if (out[1] < 0) {
      int local = 0, local_size = 1;
      RONDO_CHECK(mpi_local_rank(&local, &local_size));
      if (want && v.local_rank != local) {
        snprintf(why, sizeof why,
                 "%s=%d, but this process is rank %d of the %d processes MPI puts on its node: "
                 "unset it, or make it MPI's",
                 v.local_var, v.local_rank, local, local_size);
        bad = 1;
      }
      int mine = bad ? rank : size;
      MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    }
  }
  if (first == size)
    return RONDO_SUCCESS;
  if (bad)
    return rondo__fail(RONDO_ERR_LAUNCH, "%s", why);
  return rondo__fail(RONDO_ERR_LAUNCH,
                     "rank %d's launcher variables contradict MPI's world (its "
                     "rondo_last_error() says how)",
                     first);
}

void launch_after_mpi(void)
{
  if (!by_rendezvous)
    return;
  launch_watch_stop();
  if (formed.rank == 0 && launch_serve_join(formed.timeout_sec) != 0)
    LOG_WARN("rank 0 stopped waiting after %g s for the other ranks to finalize MPI",
             formed.timeout_sec);
  by_rendezvous = 0;
}

const char *launch_describe(void) { return description; }
