/*
 * Timing all-reduce algorithms side by side (or those of the reduce-scatter
 * or all-gather family), shared by rondo-bench (tools/bench) and the
 * programs of bench/. Not part of the library.
 *
 * Method: for one message size, the algorithms (and raw MPI_Allreduce, the
 * baseline, or MPI_Reduce_scatter_block / MPI_Allgather) take turns for r rounds, each round starting with a different
 * algorithm, so a noisy moment of a shared machine hits all of them alike.
 * A round runs enough calls for about 20 ms (3 to 2000; the count comes
 * from a timed warm-up and is the same on every rank), between barriers; the time of a round is the slowest rank's mean per
 * call. Callers take the median over rounds. Every round's result is
 * checked: the inputs, (rank + 1) x (i % 17), make the float sum exact in
 * any order (an all-gather's result is every rank's input).
 */
#ifndef RONDO_TOOLS_MEASURE_H
#define RONDO_TOOLS_MEASURE_H

#include <stddef.h>

#include "rondo.h"

#define MEAS_MAX_ROUNDS 31
#define MEAS_RAW_MPI (-1) /* "algorithm" index of raw MPI_Allreduce */
#define MEAS_ROUND_SECONDS 0.02

typedef struct {
  rondo_comm_t comm;
  MPI_Comm base;  /* a dup of MPI_COMM_WORLD for raw MPI_Allreduce */
  float *in, *out;
  size_t max_count;
  long wrong;     /* wrong elements seen on this rank so far */
  long wrong_by[RONDO_ALGO_COUNT]; /* of them, by algorithm id (0: MPI's own call) */
  int iters[RONDO_ALGO_COUNT + 1]; /* calls per round, by list index + 1 */
  rondo_coll_t coll; /* what is timed: RONDO_COLL_ALLREDUCE (meas_init's), or
                        set to RONDO_COLL_REDUCE_SCATTER / RONDO_COLL_ALLGATHER
                        before meas_rounds, whose count is then one rank's
                        block (size x count floats must fit max_bytes) */
} meas_t;

/* Collective over MPI_COMM_WORLD (= rondo_world()). Returns 0, or -1 with a
 * message on stderr when the buffers cannot be allocated. */
int meas_init(meas_t *m, size_t max_bytes);
void meas_free(meas_t *m);

/* Runs rounds [first, last) of the size `count` floats (the call's count
 * argument): algorithm a of the list (MEAS_RAW_MPI for MPI's own call,
 * included when with_mpi) gets
 * t[a + 1][r] in seconds. A warm-up precedes round 0. Aborts the job with
 * rondo's message when a call fails. */
void meas_rounds(meas_t *m, const rondo_algo_t *algos, int nalgos, int with_mpi,
                 size_t count, int first, int last, double t[][MEAS_MAX_ROUNDS]);

/* The algorithms to measure, into out[RONDO_ALGO_COUNT]: the comma-separated
 * names of list, or (list NULL) every algorithm of the library's table that
 * rondo_algo_available() says runs on this comm and the selector would
 * consider for a large float32 sum (shm on one node, hierarchical across
 * nodes), followed by auto when with_auto. auto is accepted in a list only
 * when with_auto; an algorithm that cannot run on the comm never (rank 0
 * prints "PROG: -a NAME: why"). Returns the count, or -1 for a bad list. */
int meas_algos(rondo_comm_t comm, const char *prog, const char *list, int with_auto,
               rondo_algo_t *out);

/* The median of v[0..n) (sorts a copy; v is left as it is). */
double meas_median(const double *v, int n);
/* The value below which p percent of v[0..n) lie (index n * p / 100 of a
 * sorted copy). */
double meas_percentile(const double *v, int n, int p);

/* Rank, size and node count of a comm the tool made (the queries cannot
 * fail on it; -1 if they do). */
int meas_rank(rondo_comm_t comm);
int meas_size(rondo_comm_t comm);
int meas_nodes(rondo_comm_t comm);

/* Wrong elements summed over all ranks; collective. */
long meas_wrong_total(const meas_t *m);

#endif
