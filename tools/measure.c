/* Timing a family's algorithms side by side; measure.h has the method. */
#include "tools/measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int meas_init(meas_t *m, size_t max_bytes)
{
  memset(m, 0, sizeof *m);
  m->comm = rondo_world();
  m->max_count = max_bytes / sizeof(float);
  m->in = malloc(m->max_count * sizeof *m->in + 1);
  m->out = malloc(m->max_count * sizeof *m->out + 1);
  int ok = m->in != NULL && m->out != NULL, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (!ok)
      fprintf(stderr, "out of memory: two buffers of %zu bytes\n", max_bytes);
    free(m->in);
    free(m->out);
    return -1;
  }
  int rank = meas_rank(m->comm);
  for (size_t i = 0; i < m->max_count; i++)
    m->in[i] = (float)((rank + 1) * (int)(i % 17));
  MPI_Comm_dup(MPI_COMM_WORLD, &m->base);
  return 0;
}

void meas_free(meas_t *m)
{
  MPI_Comm_free(&m->base);
  free(m->in);
  free(m->out);
}

/* MPI's own call for m->coll. */
static void run_mpi(meas_t *m, size_t count)
{
  int c = (int)count;
  switch (m->coll) {
  case RONDO_COLL_REDUCE_SCATTER:
    MPI_Reduce_scatter_block(m->in, m->out, c, MPI_FLOAT, MPI_SUM, m->base);
    break;
  case RONDO_COLL_ALLGATHER:
    MPI_Allgather(m->in, c, MPI_FLOAT, m->out, c, MPI_FLOAT, m->base);
    break;
  default:
    MPI_Allreduce(m->in, m->out, c, MPI_FLOAT, MPI_SUM, m->base);
    break;
  }
}

/* rondo's call of m->coll with algo. */
static rondo_status_t run_rondo(meas_t *m, rondo_algo_t algo, size_t count)
{
  switch (m->coll) {
  case RONDO_COLL_REDUCE_SCATTER:
    return rondo_reduce_scatter_algo(m->comm, m->in, m->out, count, RONDO_FLOAT32, RONDO_SUM,
                                     algo);
  case RONDO_COLL_ALLGATHER:
    return rondo_allgather_algo(m->comm, m->in, m->out, count, RONDO_FLOAT32, algo);
  default:
    return rondo_allreduce_algo(m->comm, m->in, m->out, count, RONDO_FLOAT32, RONDO_SUM, algo);
  }
}

static void run(meas_t *m, const rondo_algo_t *algos, int a, size_t count, int iters)
{
  for (int i = 0; i < iters; i++) {
    if (a == MEAS_RAW_MPI) {
      run_mpi(m, count);
    } else if (run_rondo(m, algos[a], count) != RONDO_SUCCESS) {
      fprintf(stderr, "%s %s: %s\n", rondo_coll_name(m->coll), rondo_algo_name(algos[a]),
              rondo_last_error());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
}

/* Floats in the result of a call with this count. */
static size_t out_count(const meas_t *m, size_t count)
{
  return m->coll == RONDO_COLL_ALLGATHER ? count * (size_t)meas_size(m->comm) : count;
}

/* The input of rank r at i is (r + 1) x (i % 17) (meas_init): a sum over
 * the ranks is n(n + 1)/2 x (i % 17); a gathered block q is rank q's.
 * Wrong elements count for algo (AUTO: MPI's own call). */
static void check(meas_t *m, rondo_algo_t algo, size_t count)
{
  long before = m->wrong;
  int size = meas_size(m->comm), rank = meas_rank(m->comm);
  for (size_t i = 0; i < out_count(m, count); i++) {
    float want;
    if (m->coll == RONDO_COLL_ALLGATHER)
      want = (float)((int)(i / count + 1) * (int)(i % count % 17));
    else if (m->coll == RONDO_COLL_REDUCE_SCATTER) /* block `rank` of the sum */
      want = (float)((size * (size + 1) / 2) * (int)(((size_t)rank * count + i) % 17));
    else
      want = (float)((size * (size + 1) / 2) * (int)(i % 17));
    m->wrong += m->out[i] != want;
  }
  m->wrong_by[algo] += m->wrong - before;
}

/* The slowest rank's mean seconds per call over iters calls. */
static double timed(meas_t *m, const rondo_algo_t *algos, int a, size_t count, int iters)
{
  memset(m->out, 0xff, out_count(m, count) * sizeof *m->out); /* a no-op fails the check */
  MPI_Barrier(m->base);
  double t0 = MPI_Wtime();
  run(m, algos, a, count, iters);
  double t = (MPI_Wtime() - t0) / iters, tmax;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, m->base);
  check(m, a == MEAS_RAW_MPI ? RONDO_ALGO_AUTO : algos[a], count);
  return tmax;
}

void meas_rounds(meas_t *m, const rondo_algo_t *algos, int nalgos, int with_mpi,
                 size_t count, int first, int last, double t[][MEAS_MAX_ROUNDS])
{
  int lo = with_mpi ? MEAS_RAW_MPI : 0, n = nalgos - lo;
  if (first == 0) /* warm up, and size each algorithm's rounds to ~20 ms */
    for (int a = lo; a < nalgos; a++) {
      run(m, algos, a, count, 1);
      double once = timed(m, algos, a, count, 2);
      double it = MEAS_ROUND_SECONDS / (once > 0 ? once : 1e-9);
      m->iters[a + 1] = it < 3 ? 3 : it > 2000 ? 2000 : (int)it;
    }
  for (int r = first; r < last && r < MEAS_MAX_ROUNDS; r++)
    for (int k = 0; k < n; k++) {
      int a = lo + (r + k) % n; /* round r starts with a different algorithm */
      t[a + 1][r] = timed(m, algos, a, count, m->iters[a + 1]);
    }
}

int meas_algos(rondo_comm_t comm, const char *prog, const char *list, int with_auto,
               rondo_algo_t *out)
{
  const size_t count = (size_t)1 << 20; /* large: every rule of the table applies */
  int n = 0;
  if (list == NULL) {
    for (int a = RONDO_ALGO_AUTO + 1; a < RONDO_ALGO_COUNT; a++) {
      const char *why = NULL;
      if (rondo_algo_available(comm, (rondo_algo_t)a, count, RONDO_FLOAT32, RONDO_SUM, &why) ==
              RONDO_SUCCESS &&
          why == NULL)
        out[n++] = (rondo_algo_t)a;
    }
    if (with_auto)
      out[n++] = RONDO_ALGO_AUTO;
    return n;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
    if (n == RONDO_ALGO_COUNT || rondo_algo_from_name(tok, &out[n]) != RONDO_SUCCESS ||
        (out[n] == RONDO_ALGO_AUTO && !with_auto))
      return -1;
    if (out[n] != RONDO_ALGO_AUTO &&
        rondo_algo_available(comm, out[n], count, RONDO_FLOAT32, RONDO_SUM, NULL) !=
            RONDO_SUCCESS) {
      if (meas_rank(comm) == 0)
        fprintf(stderr, "%s: -a %s: %s\n", prog, tok, rondo_last_error());
      return -1;
    }
    n++;
  }
  return n > 0 ? n : -1;
}

static int cmp_double(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The value of rank k (0-based) in v[0..n) sorted, and with mid the mean of
 * ranks k-1 and k; sorts a copy. */
static double sorted_at(const double *v, int n, int k, int mid)
{
  double small[MEAS_MAX_ROUNDS], *s = n <= MEAS_MAX_ROUNDS ? small : malloc((size_t)n * sizeof *s);
  if (s == NULL) {
    fprintf(stderr, "out of memory for sorting %d values\n", n);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  double x = mid ? (s[k - 1] + s[k]) / 2 : s[k];
  if (s != small)
    free(s);
  return x;
}

double meas_median(const double *v, int n)
{
  return n < 1 ? 0 : sorted_at(v, n, n / 2, n % 2 == 0);
}

double meas_percentile(const double *v, int n, int p)
{
  return n < 1 ? 0 : sorted_at(v, n, n * p / 100 < n ? n * p / 100 : n - 1, 0);
}

/* A comm query's value, -1 if it fails (the query sets that itself). */
static int query(rondo_status_t (*q)(rondo_comm_t, int *), rondo_comm_t comm)
{
  int v = -1;
  q(comm, &v);
  return v;
}

int meas_rank(rondo_comm_t comm) { return query(rondo_comm_rank, comm); }
int meas_size(rondo_comm_t comm) { return query(rondo_comm_size, comm); }
int meas_nodes(rondo_comm_t comm) { return query(rondo_comm_node_count, comm); }

long meas_wrong_total(const meas_t *m)
{
  long all = 0;
  MPI_Allreduce(&m->wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return all;
}
