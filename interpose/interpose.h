/*
 * librondo-mpi (docs/mpi.md): rondo's collectives under MPI's names, through
 * the MPI profiling interface. It uses rondo's public API only (rondo.h) and
 * calls MPI by its PMPI_ names where it defines the MPI_ ones. Files:
 *   calls.c  the MPI_ entry points: each decides whether rondo takes the
 *            call over or MPI_'s own PMPI_ version runs it, unchanged
 *   setup.c  the configuration (RONDO_MPI_INTERCEPT, agreed by every rank at
 *            MPI_Init), the records of communicators (their rondo comm,
 *            made at the first call rondo takes over, freed with them),
 *            the counts, the log, the teardown at MPI_Finalize
 * Internal prefix: ip_.
 *
 * Every decision depends only on what MPI requires to be the same on every
 * rank (the call, the communicator, count and datatype of a reduction, the
 * recvcounts of MPI_Reduce_scatter, the bytes of a broadcast or of each
 * rank's block of an allgather, the op) and on the configuration every
 * rank agreed on: so every rank takes the same path, and no rank waits in
 * rondo for a rank that went to MPI.
 */
#ifndef RONDO_INTERPOSE_H
#define RONDO_INTERPOSE_H

#include <stddef.h>
#include <stdint.h>

#include "rondo-mpi.h"
#include "rondo.h"

/* Why a call went to MPI. */
typedef enum {
  IP_PASS_INACTIVE = 0, /* librondo-mpi is not active (MPI_Init did not come
                           through it, the ranks disagreed, MPI_Finalize) */
  IP_PASS_OFF,          /* not in RONDO_MPI_INTERCEPT */
  IP_PASS_WINDOW,       /* its bytes are outside the call's window */
  IP_PASS_EMPTY,        /* count 0: nothing to move */
  IP_PASS_ONE_RANK,     /* a communicator of one rank: MPI's copy is all */
  IP_PASS_INTER,        /* an intercommunicator */
  IP_PASS_DTYPE,        /* a datatype rondo has no exact reduction for */
  IP_PASS_OP,           /* an op rondo does not have (MINLOC, BAND, user ops...) */
  IP_PASS_ARGS,         /* arguments MPI must judge (MPI_COMM_NULL, a negative count) */
  IP_PASS_THREADS,      /* iallreduce needs MPI_THREAD_MULTIPLE (rondo's engine) */
  IP_PASS_NO_COMM,      /* rondo could not make a comm for this communicator */
  IP_PASS_NOT_YET,      /* iallreduce before rondo made the communicator's comm */
  IP_PASS_REASONS
} ip_pass_t;

/* The configuration: per call, on or off and its window in bytes. */
typedef struct {
  int on[RONDO_MPI_CALLS];
  size_t min[RONDO_MPI_CALLS], max[RONDO_MPI_CALLS];
} ip_config_t;

/* A communicator as librondo-mpi knows it (cached as an MPI attribute). */
typedef struct ip_comm {
  MPI_Comm comm;          /* the application's */
  int id;                 /* this process's number for it (log lines) */
  char label[64];         /* "MPI_COMM_WORLD", "communicator 3" */
  int size, rank, inter;
  rondo_comm_t rc;        /* made at the first call rondo takes over */
  int failed;             /* rondo_comm_create failed: MPI serves it */
  uint64_t order;         /* the same on every member: teardown order */
  uint64_t iallreduce_seq; /* names of its engine requests */
  long taken[RONDO_MPI_CALLS];
  long passed[RONDO_MPI_CALLS][IP_PASS_REASONS];
  unsigned logged[RONDO_MPI_CALLS]; /* bit per outcome: said once at info */
  void *scratch[3];                 /* packed data; [2]: per-rank counts (the v calls) */
  size_t scratch_bytes[3];
  struct ip_comm *next;   /* the registry (setup.c) */
} ip_comm_t;

/* The state calls.c reads on every call. */
extern int ip_active;            /* take calls over at all */
extern int ip_thread_level;      /* MPI's provided level */
extern ip_config_t ip_config;

/* MPI_Init's second half (after PMPI_Init*): reads and agrees on the
 * configuration over MPI_COMM_WORLD; on any disagreement or a malformed
 * knob, logs why on every rank and stays inactive. */
void ip_setup(int provided);
/* MPI_Finalize's first half: the summary at RONDO_LOG=info, every rondo
 * comm destroyed (in an order every rank shares), rondo finalized. */
void ip_teardown(void);

/* comm's record (made at its first call), or NULL where MPI must judge the
 * communicator (MPI_COMM_NULL, or one MPI refuses). */
ip_comm_t *ip_record(MPI_Comm comm);
/* Its rondo comm, made now if need be (collective: every member makes the
 * same call); NULL if rondo could not make one (then MPI serves the
 * communicator from now on, and the log says why once). */
rondo_comm_t ip_rondo(ip_comm_t *r);
/* Counts the call (r may be NULL) and says at RONDO_LOG=info, once per
 * communicator, call and outcome, what happened to it. */
void ip_count_taken(ip_comm_t *r, rondo_mpi_call_t call, size_t bytes);
void ip_count_passed(ip_comm_t *r, rondo_mpi_call_t call, ip_pass_t why, size_t bytes);
/* The MPI error class of a rondo failure; the communicator's error handler
 * is called with it (MPI_ERRORS_ARE_FATAL aborts, MPI_ERRORS_RETURN returns
 * it). rondo has already logged what failed. */
int ip_fail(MPI_Comm comm, rondo_status_t st);
/* A scratch buffer of r (grown to bytes), or NULL when out of memory. */
void *ip_scratch(ip_comm_t *r, int which, size_t bytes);
/* The call's name in messages ("MPI_Allreduce"). */
const char *ip_call_name(rondo_mpi_call_t call);
/* Log lines in rondo's form, at RONDO_LOG's level. */
void ip_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
enum { IP_ERROR = 1, IP_WARN = 2, IP_INFO = 3, IP_DEBUG = 4 };

#endif /* RONDO_INTERPOSE_H */
