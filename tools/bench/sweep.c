/*
 * The size sweeps of rondo-bench: allreduce, reduce_scatter and allgather
 * (every algorithm of the family, auto, and MPI's own call), broadcast and
 * alltoall (rondo and the MPI counterpart).
 *
 * Per size, per dtype and op:
 *   1. the inputs are written and every variant (algorithm) runs its
 *      warm-up iterations;
 *   2. the timed iterations are split into --rounds rounds (default 5, at
 *      most one per iteration); in each round
 *      every variant runs its share, each round in a different order (the
 *      variant before each one changes), so a noisy moment of a shared
 *      machine, or a spinning variant, hits every variant alike. Each
 *      share starts with a rondo barrier (its waits
 *      yield the core) and one untimed call, so what the previous variant
 *      left behind is not charged to the next: ranks leaving it at
 *      different times, or on an oversubscribed node the peers of a
 *      spinning MPI_Allreduce still descheduled (2 emulated hosts x 2 ranks
 *      on 2 cores: the variant after it measured 1.2-1.6x its time when run
 *      elsewhere in the order). Each call is timed on its own, on every
 *      rank;
 *   3. a row's time is the mean over its calls, averaged over the ranks
 *      (min and max: the fastest and slowest rank's mean); the median is
 *      per rank, averaged likewise;
 *   4. with -c 1 every variant runs once more on fresh inputs and every
 *      element is compared with the expected result (data.c).
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"
#include "tools/bench/sweep.h"
#include "tools/measure.h"

#define POISON 0xA5

/* nccl-tests' bus bandwidth factors: what each rank's links carry (size is
 * the whole buffer: allgather's receive, reduce_scatter's send buffer). */
static double bus_factor(bench_cmd_t cmd, int n)
{
  switch (cmd) {
  case CMD_ALLREDUCE: return 2.0 * (n - 1) / n;
  case CMD_BROADCAST: return 1.0;
  default: return (double)(n - 1) / n;
  }
}

static int reduces(bench_cmd_t cmd) { return cmd == CMD_ALLREDUCE || cmd == CMD_REDUCE_SCATTER; }

/* The case for a requested size: counts rounded down to whole elements (and
 * whole blocks per rank). Returns 0 when nothing is left. */
static int geometry(sweep_t *s, size_t want)
{
  size_t n = (size_t)s->size, e = s->esize;
  switch (s->o->cmd) {
  case CMD_ALLREDUCE:
  case CMD_BROADCAST:
    s->count = want / e;
    s->sendn = s->recvn = s->count;
    break;
  case CMD_ALLGATHER:
    s->count = want / (e * n);
    s->sendn = s->count;
    s->recvn = n * s->count;
    break;
  case CMD_REDUCE_SCATTER:
    s->count = want / (e * n);
    s->sendn = n * s->count;
    s->recvn = s->count;
    break;
  default: /* alltoall */
    s->count = want / (e * n);
    s->sendn = s->recvn = n * s->count;
    break;
  }
  s->bytes = (s->sendn > s->recvn ? s->sendn : s->recvn) * e;
  return s->count > 0;
}

/* Whether this MPI's uint8 MIN and MAX are wrong: MPICH 4.0.2 compares
 * MPI_UINT8_T and MPI_UNSIGNED_CHAR as signed bytes (200 < 10), so its
 * baseline rows disagree with the reference, not rondo. One allreduce
 * each of 200 (rank 0) and 10 (the others). Collective on comm. */
static int mpi_minmax_u8_wrong(MPI_Comm comm, int rank, int size)
{
  uint8_t mine = rank == 0 ? 200 : 10, lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_UINT8_T, MPI_MIN, comm);
  MPI_Allreduce(&mine, &hi, 1, MPI_UINT8_T, MPI_MAX, comm);
  return lo != (size > 1 ? 10 : 200) || hi != 200;
}

/* Whether this MPI's sums of 8- and 16-bit integers saturate instead of
 * wrapping around: Open MPI 4.1's op/avx component gives 255 for uint8 200
 * + 100 (open-mpi/ompi#8045). MPI_Reduce_local on a vector (its SIMD
 * path), nothing sent. */
static int mpi_small_sum_wrong(void)
{
  enum { N = 256 };
  uint8_t a[N], b[N];
  memset(a, 200, sizeof a);
  memset(b, 100, sizeof b);
  MPI_Reduce_local(a, b, N, MPI_UINT8_T, MPI_SUM);
  return b[0] != 44 || b[N - 1] != 44;
}

/* A row whose wrong results are MPI's bug, not rondo's. */
static int mpi_bug_row(const sweep_t *s, int k)
{
  if (s->v[k].kind != V_MPI)
    return 0;
  int small = s->dtype == RONDO_UINT8 || s->dtype == RONDO_INT8 || s->dtype == RONDO_INT16;
  return (s->mpi_u8_wrong && s->dtype == RONDO_UINT8 &&
          (s->op == RONDO_MIN || s->op == RONDO_MAX)) ||
         (s->mpi_sum_wrong && small && (s->op == RONDO_SUM || s->op == RONDO_AVG));
}

static int mpi_usable(const sweep_t *s)
{
  if (s->count > INT_MAX)
    return 0;
  if (!reduces(s->o->cmd))
    return 1;
  return data_mpi_type(s->dtype, 1) != MPI_DATATYPE_NULL && data_mpi_op(s->op) != MPI_OP_NULL;
}

static void *sendbuf(const sweep_t *s) { return s->o->inplace ? s->recv : s->send; }

/* One device call of variant k (--memory device): the collective by
 * rondo, NCCL's own call, or host+copies (the whole input down into pinned
 * memory, rondo's host call there in place, the output up). */
static void call_device(sweep_t *s, const variant_t *v)
{
  void *sb = s->o->inplace ? s->drecv : s->dsend;
  size_t es = s->esize, in = s->sendn * es, out = s->recvn * es, n = s->count;
  char *pin = s->pin, *mine = pin + (size_t)s->rank * n * es; /* this rank's block */
  rondo_status_t st = RONDO_SUCCESS;
  switch (s->o->cmd) {
  case CMD_REDUCE_SCATTER:
    if (v->kind == V_NCCL) {
      bdev_nccl_reduce_scatter(sb, s->drecv, n, s->dtype, s->op);
    } else if (v->kind == V_HOST_COPIES) {
      bdev_copy(pin, sb, in);
      st = rondo_reduce_scatter(s->comm, pin, mine, n, s->dtype, s->op);
      bdev_copy(s->drecv, mine, out);
    } else if (v->algo == RONDO_ALGO_AUTO) {
      st = rondo_reduce_scatter(s->comm, sb, s->drecv, n, s->dtype, s->op);
    } else {
      st = rondo_reduce_scatter_algo(s->comm, sb, s->drecv, n, s->dtype, s->op, v->algo);
    }
    break;
  case CMD_ALLGATHER:
    if (v->kind == V_NCCL) {
      bdev_nccl_allgather(sb, s->drecv, n * es);
    } else if (v->kind == V_HOST_COPIES) {
      bdev_copy(mine, sb, in);
      st = rondo_allgather(s->comm, mine, pin, n, s->dtype);
      bdev_copy(s->drecv, pin, out);
    } else if (v->algo == RONDO_ALGO_AUTO) {
      st = rondo_allgather(s->comm, sb, s->drecv, n, s->dtype);
    } else {
      st = rondo_allgather_algo(s->comm, sb, s->drecv, n, s->dtype, v->algo);
    }
    break;
  default:
    if (v->kind == V_NCCL) {
      bdev_nccl_allreduce(sb, s->drecv, n, s->dtype, s->op);
    } else if (v->kind == V_HOST_COPIES) {
      bdev_copy(pin, sb, in);
      st = rondo_allreduce(s->comm, pin, pin, n, s->dtype, s->op);
      bdev_copy(s->drecv, pin, out);
    } else {
      st = rondo_allreduce_algo(s->comm, sb, s->drecv, n, s->dtype, s->op, v->algo);
    }
    break;
  }
  if (st != RONDO_SUCCESS)
    bench_die("%s %s on device buffers, %zu elements of %s: %s", bench_cmd_name(s->o->cmd),
              v->label, n, rondo_dtype_name(s->dtype), rondo_last_error());
}

/* The memory floor's copy: a reduce-scatter of n bytes over p ranks reads
 * at least n bytes on each rank (p blocks of its own block's range) and
 * writes n/p; an all-gather reads n (p blocks) and writes n. A memcpy of
 * m bytes reads m and writes m, so the floor is a memcpy of half the
 * bytes read and written, on every rank at once (they share the node's
 * memory bandwidth, as the collective's ranks do). */
static size_t floor_bytes(const sweep_t *s)
{
  size_t n = s->bytes, p = (size_t)s->size;
  return s->o->cmd == CMD_REDUCE_SCATTER ? (n + n / p) / 2 : n;
}

/* One call of variant k. */
static void call(sweep_t *s, int k)
{
  const variant_t *v = &s->v[k];
  if (v->kind == V_FLOOR) { /* from the send buffer to expect (unused until the check) */
    memcpy(s->expect, s->send, floor_bytes(s));
    return;
  }
  if (s->o->device) {
    call_device(s, v);
    return;
  }
  rondo_status_t st = RONDO_SUCCESS;
  int rc = MPI_SUCCESS, c = (int)s->count;
  MPI_Datatype t = data_mpi_type(s->dtype, reduces(s->o->cmd));
  void *sb = sendbuf(s);
  switch (s->o->cmd) {
  case CMD_ALLREDUCE:
    if (v->mpi)
      rc = MPI_Allreduce(s->o->inplace ? MPI_IN_PLACE : sb, s->recv, c, t, data_mpi_op(s->op),
                         s->mpi);
    else
      st = rondo_allreduce_algo(s->comm, sb, s->recv, s->count, s->dtype, s->op, v->algo);
    break;
  case CMD_ALLGATHER: /* auto's row is the plain call, as programs make it */
    if (v->mpi)
      rc = MPI_Allgather(sb, c, t, s->recv, c, t, s->mpi);
    else if (v->algo == RONDO_ALGO_AUTO)
      st = rondo_allgather(s->comm, sb, s->recv, s->count, s->dtype);
    else
      st = rondo_allgather_algo(s->comm, sb, s->recv, s->count, s->dtype, v->algo);
    break;
  case CMD_BROADCAST:
    if (v->mpi)
      rc = MPI_Bcast(s->recv, c, t, s->o->root, s->mpi);
    else
      st = rondo_broadcast(s->comm, s->recv, s->count, s->dtype, s->o->root);
    break;
  case CMD_REDUCE_SCATTER:
    if (v->mpi)
      rc = MPI_Reduce_scatter_block(sb, s->recv, c, t, data_mpi_op(s->op), s->mpi);
    else if (v->algo == RONDO_ALGO_AUTO)
      st = rondo_reduce_scatter(s->comm, sb, s->recv, s->count, s->dtype, s->op);
    else
      st = rondo_reduce_scatter_algo(s->comm, sb, s->recv, s->count, s->dtype, s->op, v->algo);
    break;
  default:
    if (v->mpi)
      rc = MPI_Alltoall(sb, c, t, s->recv, c, t, s->mpi);
    else
      st = rondo_alltoall(s->comm, sb, s->recv, s->count, s->dtype);
    break;
  }
  if (st != RONDO_SUCCESS)
    bench_die("%s %s, %zu elements of %s: %s", bench_cmd_name(s->o->cmd), v->label, s->count,
              rondo_dtype_name(s->dtype), rondo_last_error());
  if (rc != MPI_SUCCESS)
    bench_die("%s failed (MPI error %d)", bench_mpi_name(s->o->cmd), rc);
}

/* Writes this rank's inputs (and, for broadcast, poisons the receivers). */
static void fill(sweep_t *s)
{
  char *in = sendbuf(s);
  size_t n = (size_t)s->size, cnt = s->count;
  switch (s->o->cmd) {
  case CMD_ALLREDUCE:
  case CMD_REDUCE_SCATTER:
    for (size_t i = 0; i < s->sendn; i++)
      data_store(in, s->dtype, i, data_reduce_input(s->rank, i, s->op, s->size));
    break;
  case CMD_ALLGATHER:
    for (size_t i = 0; i < cnt; i++)
      data_store(in, s->dtype, i, data_move_input(s->rank, 0, i));
    break;
  case CMD_BROADCAST:
    if (s->rank == s->o->root)
      for (size_t i = 0; i < cnt; i++)
        data_store(s->recv, s->dtype, i, data_move_input(s->o->root, 0, i));
    else
      memset(s->recv, POISON, cnt * s->esize);
    break;
  default:
    for (size_t b = 0; b < n; b++)
      for (size_t i = 0; i < cnt; i++)
        data_store(in, s->dtype, b * cnt + i, data_move_input(s->rank, (int)b, i));
    break;
  }
  if (s->o->device) /* the input goes to the device buffer the calls read */
    bdev_copy(s->o->inplace ? s->drecv : s->dsend, in, s->sendn * s->esize);
}

/* The expected receive buffer of this rank, into s->expect. */
static void expected(sweep_t *s)
{
  size_t n = (size_t)s->size, cnt = s->count;
  switch (s->o->cmd) {
  case CMD_ALLREDUCE:
    for (size_t i = 0; i < cnt; i++)
      data_expect_reduce(s->expect, i, s->dtype, s->op, i, s->size);
    break;
  case CMD_REDUCE_SCATTER:
    for (size_t i = 0; i < cnt; i++)
      data_expect_reduce(s->expect, i, s->dtype, s->op, (size_t)s->rank * cnt + i, s->size);
    break;
  case CMD_ALLGATHER:
    for (size_t q = 0; q < n; q++)
      for (size_t i = 0; i < cnt; i++)
        data_store(s->expect, s->dtype, q * cnt + i, data_move_input((int)q, 0, i));
    break;
  case CMD_BROADCAST:
    for (size_t i = 0; i < cnt; i++)
      data_store(s->expect, s->dtype, i, data_move_input(s->o->root, 0, i));
    break;
  default:
    for (size_t q = 0; q < n; q++)
      for (size_t i = 0; i < cnt; i++)
        data_store(s->expect, s->dtype, q * cnt + i, data_move_input((int)q, s->rank, i));
    break;
  }
}

/* Wrong elements of variant k on this rank: fresh inputs, one call, every
 * element compared. */
static long check(sweep_t *s, int k)
{
  if (s->o->cmd != CMD_BROADCAST)
    memset(s->recv, POISON, s->recvn * s->esize);
  if (s->o->device)
    bdev_copy(s->drecv, s->recv, s->recvn * s->esize);
  fill(s);
  call(s, k);
  if (s->o->device)
    bdev_copy(s->recv, s->drecv, s->recvn * s->esize);
  if (s->o->break_algo != NULL && strcmp(s->o->break_algo, s->v[k].label) == 0 &&
      s->rank == s->size - 1) /* --break-algo: this variant pretends to be broken */
    s->recv[(s->recvn / 2) * s->esize] ^= 0x5a;
  long wrong = 0;
  for (size_t i = 0; i < s->recvn; i++)
    wrong += memcmp(s->recv + i * s->esize, s->expect + i * s->esize, s->esize) != 0;
  return wrong;
}

static int gcd(int a, int b)
{
  while (b != 0) {
    int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Steps 1-2 of the header: t[k][0..iters) for every usable variant. */
static void timed_rounds(sweep_t *s, const int *use)
{
  int iters = s->o->iters, rounds = iters < s->o->rounds ? iters : s->o->rounds;
  fill(s);
  MPI_Barrier(s->mpi);
  for (int k = 0; k < s->nv; k++)
    for (int i = 0; use[k] && i < s->o->warmup; i++)
      call(s, k);
  /* Round r runs the rows in the order k = r + j x stride (mod nv), the
   * strides taken in turn from those coprime to nv, so the row before each
   * row changes from round to round (all 5 rounds differ where nv has 5
   * such strides, as 7 has; 6 has only 1 and 5: forward, backward). A
   * plain rotation (stride 1) kept the cycle, and the same row always ran
   * right after MPI_Allreduce. */
  int strides[MAX_VARIANTS], nstrides = 0;
  for (int d = 1; d < s->nv; d++)
    if (gcd(d, s->nv) == 1)
      strides[nstrides++] = d;
  if (nstrides == 0)
    strides[nstrides++] = 1;
  int done[MAX_VARIANTS] = {0};
  for (int r = 0; r < rounds; r++) {
    int share = iters / rounds + (r < iters % rounds);
    int stride = strides[r % nstrides];
    for (int j = 0; j < s->nv; j++) {
      int k = (r + j * stride) % s->nv;
      if (!use[k])
        continue;
      double *t = s->t + (size_t)k * (size_t)iters;
      if (rondo_barrier(s->comm) != RONDO_SUCCESS) /* share >= 1: rounds <= iters */
        bench_die("rondo_barrier between rows: %s", rondo_last_error());
      call(s, k);
      for (int i = 0; i < share; i++) {
        double t0 = MPI_Wtime();
        call(s, k);
        t[done[k]++] = MPI_Wtime() - t0;
      }
    }
  }
}

static void print_columns(const bench_opts_t *o)
{
  printf("#\n# %12s %12s %9s %6s %-24s %9s %9s", "size", "count", "type", "redop", "algorithm",
         "time", "median");
  if (o->full)
    printf(" %9s %9s", "min", "max");
  printf(" %8s %8s %7s %7s\n", "algbw", "busbw", "#wrong", o->device ? "vs base" : "vs MPI");
  printf("# %12s %12s %9s %6s %-24s %9s %9s", "(B)", "(elements)", "", "", "", "(us)", "(us)");
  if (o->full)
    printf(" %9s %9s", "(us)", "(us)");
  printf(" %8s %8s %7s %7s\n", "(GB/s)", "(GB/s)", "", "(x)");
}

/* What auto runs in this case: the family's choice (host buffers), or
 * AUTO where there is nothing to judge (other collectives, device
 * buffers, a failed query). Local. */
static rondo_algo_t auto_choice(const sweep_t *s)
{
  rondo_algo_t choice = RONDO_ALGO_AUTO;
  if (!s->family || s->o->device ||
      rondo_coll_choice(s->comm, s->coll, s->count, s->dtype, s->op, &choice) != RONDO_SUCCESS)
    return RONDO_ALGO_AUTO;
  return choice;
}

/* auto's row of a family's case (rank 0), or -1 when the case has no
 * auto row or no forced algorithm to compare it with. Counts the case
 * into auto's quality: whether auto was within 10% of the fastest forced
 * algorithm; a miss sets s->auto_miss. */
static int auto_row(sweep_t *s, const int *use, const double *mean)
{
  int auto_at = -1, best = -1;
  for (int k = 0; k < s->nv; k++) {
    if (!use[k] || s->v[k].kind != V_RONDO)
      continue;
    if (s->v[k].algo == RONDO_ALGO_AUTO)
      auto_at = k;
    else if (best < 0 || mean[k] < mean[best])
      best = k;
  }
  if (auto_at < 0 || best < 0)
    return -1;
  s->auto_miss = mean[auto_at] > 1.10 * mean[best];
  s->auto_cases++;
  s->auto_within += !s->auto_miss;
  return auto_at;
}

/* Steps 3-4 for one case, and its rows. */
static void run_case(sweep_t *s)
{
  const bench_opts_t *o = s->o;
  int use[MAX_VARIANTS], iters = o->iters, mpi_at = -1;
  for (int k = 0; k < s->nv; k++) {
    use[k] = s->v[k].kind != V_MPI || mpi_usable(s);
    if (s->v[k].mpi && use[k])
      mpi_at = k;
  }
  timed_rounds(s, use);
  if (o->check)
    expected(s);
  double mean[MAX_VARIANTS], med[MAX_VARIANTS], lo[MAX_VARIANTS], hi[MAX_VARIANTS];
  long wrong[MAX_VARIANTS];
  for (int k = 0; k < s->nv; k++) {
    if (!use[k])
      continue;
    double *t = s->t + (size_t)k * (size_t)iters, sum = 0;
    for (int i = 0; i < iters; i++)
      sum += t[i];
    double mine[2] = {sum / iters, meas_median(t, iters)}, tot[2], mx, mn;
    MPI_Reduce(mine, tot, 2, MPI_DOUBLE, MPI_SUM, 0, s->mpi);
    MPI_Reduce(&mine[0], &mx, 1, MPI_DOUBLE, MPI_MAX, 0, s->mpi);
    MPI_Reduce(&mine[0], &mn, 1, MPI_DOUBLE, MPI_MIN, 0, s->mpi);
    mean[k] = tot[0] / s->size;
    med[k] = tot[1] / s->size;
    lo[k] = mn;
    hi[k] = mx;
    long w = o->check && s->v[k].kind != V_FLOOR ? check(s, k) : 0;
    MPI_Reduce(&w, &wrong[k], 1, MPI_LONG, MPI_SUM, 0, s->mpi);
  }
  rondo_algo_t choice = auto_choice(s);
  if (s->rank != 0)
    return;
  int auto_at = choice == RONDO_ALGO_AUTO ? -1 : auto_row(s, use, mean);
  for (int k = 0; k < s->nv; k++) {
    if (!use[k])
      continue;
    double algbw = (double)s->bytes / mean[k] / 1e9, busbw = algbw * bus_factor(o->cmd, s->size);
    double speedup = mpi_at >= 0 ? mean[mpi_at] / mean[k] : NAN;
    const char *opname = reduces(o->cmd) ? rondo_op_name(s->op) : "-";
    printf("  %12zu %12zu %9s %6s %-24s %9.2f %9.2f", s->bytes, s->count,
           rondo_dtype_name(s->dtype), opname, s->v[k].label, mean[k] * 1e6, med[k] * 1e6);
    if (o->full)
      printf(" %9.2f %9.2f", lo[k] * 1e6, hi[k] * 1e6);
    printf(" %8.3f %8.3f %7ld", algbw, busbw, wrong[k]);
    if (isnan(speedup))
      printf(" %7s", "-");
    else
      printf(" %7.2f", speedup);
    printf("%s", wrong[k] != 0 && mpi_bug_row(s, k) ? "  MPI wrong (not rondo; see below)" : "");
    if (k == auto_at) /* what auto ran, and "(miss)" where it lost by over 10% */
      printf("  -> %s%s", rondo_algo_name(choice), s->auto_miss ? " (miss)" : "");
    printf("\n");
    out_int("size", (long long)s->bytes);
    out_int("count", (long long)s->count);
    out_str("type", rondo_dtype_name(s->dtype));
    out_str("op", opname);
    out_str("algo", s->v[k].label);
    out_int("inplace", o->inplace);
    out_str("memory", o->device ? "device" : o->shared ? "shared" : "host");
    if (o->cmd == CMD_BROADCAST)
      out_int("root", o->root);
    out_num("time_us", mean[k] * 1e6);
    out_num("median_us", med[k] * 1e6);
    out_num("min_us", lo[k] * 1e6);
    out_num("max_us", hi[k] * 1e6);
    out_num("algbw_gbps", algbw);
    out_num("busbw_gbps", busbw);
    out_int("wrong", wrong[k]);
    out_num("speedup_vs_mpi", speedup);
    out_row_end();
    s->rows++;
    if (wrong[k] != 0 && mpi_bug_row(s, k)) {
      s->mpi_wrong_total += wrong[k];
      s->mpi_rows_wrong++;
      continue;
    }
    if (wrong[k] != 0) {
      char what[64];
      snprintf(what, sizeof what, "%s %s %s", s->v[k].label, rondo_dtype_name(s->dtype), opname);
      int seen = 0;
      for (int i = 0; i < s->nfailed; i++)
        seen |= strcmp(s->failed[i], what) == 0;
      if (!seen && s->nfailed < 6)
        snprintf(s->failed[s->nfailed++], sizeof s->failed[0], "%s", what);
    }
    s->wrong_total += wrong[k];
    s->rows_wrong += wrong[k] != 0;
    s->busbw_by[k] += busbw;
    s->busbw_n[k]++;
    if (s->v[k].kind != V_FLOOR) { /* the floor is no collective: out of the average */
      s->busbw_sum += busbw;
      s->busbw_rows++;
    }
  }
  fflush(stdout);
}

/* The rows to measure (s->v): the family's members and MPI's call, the
 * device rows, or rondo's call and MPI's. extra: a line for under the
 * header (device buffers, rows left out). Returns 0, or the exit code
 * (2: bad rows, 77: no device). */
static int choose_rows(sweep_t *s, char *extra, size_t len)
{
  const bench_opts_t *o = s->o;
  extra[0] = '\0';
  if (o->device) {
    char why[160];
    int local = 0;
    rondo_comm_local_rank(s->comm, &local);
    int ok = bdev_start(local, why, sizeof why) == 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
      if (s->rank == 0)
        printf("rondo-bench: --memory device: skipped: %s\n",
               ok ? "some rank has no CUDA device" : why);
      return 77;
    }
    snprintf(extra, len, "# memory: device (rank 0: %s)", why);
    s->dsend = bdev_alloc(o->maxbytes + 64);
    s->drecv = bdev_alloc(o->maxbytes + 64);
    s->pin = bdev_alloc_pinned(o->maxbytes + 64);
    MPI_Comm_dup(MPI_COMM_WORLD, &s->mpi);
    char rows_why[400];
    if (sweep_rows_device(s, rows_why, sizeof rows_why) < 0)
      return 2;
    MPI_Comm_free(&s->mpi);
    if (rows_why[0])
      snprintf(extra + strlen(extra), len - strlen(extra), "\n# %s", rows_why);
  } else if (s->family) {
    char note[600];
    if (sweep_rows_family(s, note, sizeof note) < 0)
      return 2;
    if (note[0])
      snprintf(extra, len, "# not measured: %s", note);
  } else {
    s->v[0] = (variant_t){"rondo", RONDO_ALGO_AUTO, 0, V_RONDO};
    s->v[1] = (variant_t){"", RONDO_ALGO_AUTO, 1, V_MPI};
    snprintf(s->v[1].label, sizeof s->v[1].label, "%s", bench_mpi_name(o->cmd));
    s->nv = 2;
  }
  return 0;
}

static void free_buffers(sweep_t *s)
{
  if (s->o->shared) { /* collective: every rank has them (alloc_buffers) */
    rondo_mem_free(s->comm, s->send);
    rondo_mem_free(s->comm, s->recv);
  } else {
    free(s->send);
    free(s->recv);
  }
  free(s->expect);
  free(s->t);
}

/* The host buffers of the largest size and the timings, on every rank or
 * on none. */
static int alloc_buffers(sweep_t *s)
{
  s->cap = s->o->maxbytes + 64;
  if (s->o->shared) { /* collective, and fails on every rank or none */
    void *send = NULL, *recv = NULL;
    if (rondo_mem_alloc(s->comm, s->cap, &send) != RONDO_SUCCESS) {
      if (s->rank == 0)
        fprintf(stderr, "rondo-bench: --memory shared: %s\n", rondo_last_error());
      return -1;
    }
    if (rondo_mem_alloc(s->comm, s->cap, &recv) != RONDO_SUCCESS) {
      if (s->rank == 0)
        fprintf(stderr, "rondo-bench: --memory shared: %s\n", rondo_last_error());
      rondo_mem_free(s->comm, send);
      return -1;
    }
    s->send = send;
    s->recv = recv;
  } else {
    s->send = malloc(s->cap);
    s->recv = malloc(s->cap);
  }
  s->expect = malloc(s->cap);
  s->t = malloc((size_t)s->nv * (size_t)s->o->iters * sizeof *s->t);
  int ok = s->send && s->recv && s->expect && s->t, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_ok)
    return 0;
  if (!ok)
    fprintf(stderr, "rondo-bench: out of memory: three buffers of %zu bytes\n", s->cap);
  free_buffers(s);
  return -1;
}

/* Every size of every dtype and op: the rows. */
static void sweep_sizes(sweep_t *s)
{
  const bench_opts_t *o = s->o;
  size_t sizes[BENCH_MAX_SIZES];
  int nsizes = bench_sizes(o, sizes);
  int nops = reduces(o->cmd) ? o->nops : 1;
  int total = o->ndtypes * nops * nsizes, step = 0;
  for (int d = 0; d < o->ndtypes; d++)
    for (int p = 0; p < nops; p++) {
      s->dtype = o->dtypes[d];
      s->op = o->ops[p];
      s->esize = rondo_dtype_size(s->dtype);
      size_t last = 0;
      for (int z = 0; z < nsizes; z++) {
        char what[48];
        step++;
        if (geometry(s, sizes[z]) && s->bytes != last) {
          run_case(s);
          last = s->bytes;
        }
        out_progress(o, step, total, out_bytes(sizes[z], what, sizeof what));
      }
    }
}

/* Rank 0's closing lines (wrong results, MPI's own bugs, bus bandwidth,
 * AUTO's record) and the summary record. */
static void report(const sweep_t *s, long wrong)
{
  const bench_opts_t *o = s->o;
  if (s->rank == 0) {
    if (wrong == 0)
      printf("# wrong results: 0 (OK)%s\n", o->check ? "" : " -- not checked (-c 0)");
    else {
      printf("# wrong results: %ld elements in %ld of %ld rows (FAILED), in:", wrong,
             s->rows_wrong, s->rows);
      for (int i = 0; i < s->nfailed; i++)
        printf("%s %s", i ? "," : "", s->failed[i]);
      printf("\n");
    }
    if (s->mpi_wrong_total != 0) {
      char lib[MPI_MAX_LIBRARY_VERSION_STRING];
      int len;
      MPI_Get_library_version(lib, &len);
      lib[strcspn(lib, "\n")] = '\0';
      for (char *c = lib; *c != '\0'; c++)
        *c = *c == '\t' ? ' ' : *c;
      printf("# MPI wrong: %ld elements in %ld rows: %s's own %s are wrong in this MPI (%s %s); "
             "MPI's bug, not rondo's, not counted above\n",
             s->mpi_wrong_total, s->mpi_rows_wrong, bench_mpi_name(o->cmd),
             s->mpi_sum_wrong ? "8- and 16-bit integer sums" : "uint8 min/max", lib,
             s->mpi_sum_wrong ? "saturates them instead of wrapping around"
                              : "compares uint8 as signed");
    }
    printf("# average bus bandwidth: %.3f GB/s over %ld rows; by algorithm:",
           s->busbw_rows ? s->busbw_sum / (double)s->busbw_rows : 0.0, s->busbw_rows);
    for (int k = 0; k < s->nv; k++)
      if (s->busbw_n[k] > 0)
        printf(" %s %.3f", s->v[k].label, s->busbw_by[k] / s->busbw_n[k]);
    printf("\n");
    if (s->auto_cases > 0)
      printf("# auto within 10%% of the fastest forced algorithm in %d of %d cases (%.0f%%)\n",
             s->auto_within, s->auto_cases, 100.0 * s->auto_within / s->auto_cases);
    fflush(stdout);
  }
  out_summary_begin();
  out_num("avg_busbw_gbps", s->busbw_rows ? s->busbw_sum / (double)s->busbw_rows : 0.0);
  for (int k = 0; k < s->nv; k++)
    if (s->busbw_n[k] > 0) {
      char key[48];
      snprintf(key, sizeof key, "avg_busbw_gbps_%s", s->v[k].label);
      out_num(key, s->busbw_by[k] / s->busbw_n[k]);
    }
  out_int("rows", s->rows);
  out_int("wrong", wrong);
  if (s->auto_cases > 0) {
    out_int("auto_cases", s->auto_cases);
    out_int("auto_within_10pct", s->auto_within);
  }
}

int sweep_main(const bench_opts_t *o)
{
  sweep_t s;
  memset(&s, 0, sizeof s);
  s.o = o;
  s.comm = rondo_world();
  s.rank = meas_rank(s.comm);
  s.size = meas_size(s.comm);
  s.family = bench_coll(o->cmd, &s.coll);
  if (o->cmd == CMD_BROADCAST && o->root >= s.size) {
    if (s.rank == 0)
      fprintf(stderr, "rondo-bench: -r %d: the root must be below the rank count (%d)\n", o->root,
              s.size);
    return 2;
  }
  char extra_line[768];
  int rc = choose_rows(&s, extra_line, sizeof extra_line);
  if (rc != 0)
    return rc;
  if (alloc_buffers(&s) != 0)
    return 1;
  MPI_Comm_dup(MPI_COMM_WORLD, &s.mpi);
  s.mpi_u8_wrong = !o->device && reduces(o->cmd) && mpi_minmax_u8_wrong(s.mpi, s.rank, s.size);
  s.mpi_sum_wrong = !o->device && reduces(o->cmd) && mpi_small_sum_wrong();

  char title[160];
  snprintf(title, sizeof title, "%s, %s, %d iterations after %d warm-up, check %s",
           bench_cmd_name(o->cmd), o->inplace ? "in place" : "out of place", o->iters, o->warmup,
           o->check ? "on" : "off");
  if (o->cmd == CMD_BROADCAST)
    snprintf(title + strlen(title), sizeof title - strlen(title), ", root %d", o->root);
  if (out_start(o, s.comm, title) != 0) {
    MPI_Comm_free(&s.mpi);
    free_buffers(&s);
    return 1;
  }
  if (s.rank == 0 && extra_line[0])
    printf("%s\n", extra_line);
  if (s.rank == 0)
    print_columns(o);
  sweep_sizes(&s);

  long wrong = 0;
  MPI_Allreduce(&s.wrong_total, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  report(&s, wrong);
  rc = out_finish() != 0 || wrong != 0;
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Comm_free(&s.mpi);
  if (o->device) {
    bdev_nccl_stop();
    bdev_free(s.dsend);
    bdev_free(s.drecv);
    bdev_free_pinned(s.pin);
    bdev_stop();
  }
  free_buffers(&s);
  return rc;
}
