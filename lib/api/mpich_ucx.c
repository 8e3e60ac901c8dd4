/*
 * A workaround for MPICH 4.0.2's hang in MPI_Finalize over UCX on TCP
 * (Debian 12's MPICH; pmodels/mpich#6596, fixed in 4.2.0), on jobs that
 * span nodes.
 *
 * MPICH's finalize closes every UCX endpoint with ucp_disconnect_nb, which
 * flushes: the close completes once the peer has answered. It progresses
 * UCX until all its closes completed, then waits in a PMI barrier that no
 * longer progresses UCX. A rank that finished its closes first sits in that
 * barrier, and a peer whose close still waits for its answer waits for
 * good: on the 2-host test bed (2 ranks per host) rondo-bench hung at exit
 * in about one run in three, also after an MPI_Barrier and a pause.
 *
 * librondo defines ucp_disconnect_nb: MPICH's call binds to it, because
 * librondo comes before libucp in the lookup order of every program that
 * links it (and of the Python bindings' dlopen). While rondo finalizes MPI
 * on a job that spans nodes, it answers UCS_OK without closing anything:
 * MPICH goes on to its PMI barrier, which every rank reaches only after
 * rondo's MPI_Barrier on MPI_COMM_WORLD (so every message of the job has
 * been received), and then destroys its UCX worker, which closes the
 * endpoints and their connections. (UCX's forced close is refused on
 * MPICH's endpoints: they are not made for peer failures.) Any other call
 * goes to UCX's own ucp_disconnect_nb unchanged, found with dlsym: nothing
 * here needs UCX at build time.
 *
 * MPICH only: built against another MPI library (mpi.h defines MPICH for
 * MPICH and its derivatives), librondo defines no ucp_disconnect_nb, so
 * Open MPI's own UCX layer (pml ucx) never meets it, and finalize goes
 * straight to PMPI_Finalize.
 */
#define _GNU_SOURCE
#include "api/api.h"

#include <dlfcn.h>

/* UCX's types, as ucp/api/ucp.h defines them; UCS_OK is the NULL pointer. */
typedef void *rondo_ucs_status_ptr_t;
typedef struct ucp_ep *rondo_ucp_ep_h;

#if defined(MPICH)

int api_mpich_ucx_workaround(void) { return 1; }

static volatile int skip_close; /* set by api_mpich_skip_close (lifecycle.c) */

void api_mpich_skip_close(int on)
{
  skip_close = on;
}

RONDO_API rondo_ucs_status_ptr_t ucp_disconnect_nb(rondo_ucp_ep_h ep);

RONDO_API rondo_ucs_status_ptr_t ucp_disconnect_nb(rondo_ucp_ep_h ep)
{
  typedef rondo_ucs_status_ptr_t (*disconnect_fn)(rondo_ucp_ep_h);
  if (skip_close)
    return NULL; /* UCS_OK: done */
  disconnect_fn next = (disconnect_fn)dlsym(RTLD_NEXT, "ucp_disconnect_nb");
  /* (no next: UCX is not loaded, so only a mistaken call can come here) */
  return next != NULL ? next(ep) : NULL;
}

#else /* not MPICH */

int api_mpich_ucx_workaround(void) { return 0; }

void api_mpich_skip_close(int on) { (void)on; }

#endif
