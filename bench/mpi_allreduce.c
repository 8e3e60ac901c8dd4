/*
 * mpi_allreduce: a plain MPI program that times MPI_Allreduce, for running
 * with and without librondo-mpi (bench/interpose.sh, docs/mpi.md). It knows
 * nothing of rondo: with the library preloaded its calls are rondo's. Its
 * own bookkeeping (barriers between rounds, the slowest rank's time) calls
 * MPI by the PMPI_ names, so that only the timed calls can change.
 *
 *   mpiexec -n 2 bench/mpi_allreduce [-b 8] [-e 64M] [-f 4] [-t float|unsigned] [-r 5]
 *                                     [-k allreduce|iallreduce|reduce_scatter_block|
 *                                         reduce_scatter|allgather|allgatherv]
 *
 * -k iallreduce times MPI_Iallreduce followed by MPI_Wait instead (after
 * MPI_Init_thread with MPI_THREAD_MULTIPLE, which rondo's engine needs).
 * -k reduce_scatter_block, reduce_scatter, allgather, allgatherv time that
 * call of MPI_FLOAT (sums), equal blocks (the v forms with equal counts,
 * displacements packed): the bytes are the whole buffer, a reduce-scatter's
 * input or an all-gather's output, size blocks of whole floats.
 * -t unsigned times MPI_UNSIGNED sums, which librondo-mpi passes to MPI
 * unchanged, in rounds alternating with the same calls made to
 * PMPI_Allreduce directly: a second column, PMPI's time, and the difference
 * is what the library adds to a call it does not take over, measured in one
 * process. For each size: -r rounds of calls
 * (about 20 ms each, at least 5 calls) between barriers; a line per size
 * with the median over rounds of the slowest rank's mean per call, in us.
 * The result of every size is checked against its closed form.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse(const char *s)
{
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k')
    v *= 1024;
  else if (*end == 'M' || *end == 'm')
    v *= 1024 * 1024;
  else if (*end == 'G' || *end == 'g')
    v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

enum { K_ALLREDUCE, K_IALLREDUCE, K_RSB, K_RS, K_AG, K_AGV, K_COUNT };
static const char *const kind_names[K_COUNT] = {
    "allreduce", "iallreduce", "reduce_scatter_block", "reduce_scatter", "allgather",
    "allgatherv"};
static const char *const kind_calls[K_COUNT] = {
    "MPI_Allreduce", "MPI_Iallreduce + MPI_Wait", "MPI_Reduce_scatter_block",
    "MPI_Reduce_scatter", "MPI_Allgather", "MPI_Allgatherv"};
static int kind, direct, *counts, *displs;

/* One call of a block collective; count: elements per block. */
static void call_blocks(const void *in, void *out, int count)
{
  switch (kind) {
  case K_RSB:
    MPI_Reduce_scatter_block(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    break;
  case K_RS:
    MPI_Reduce_scatter(in, out, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    break;
  case K_AG:
    MPI_Allgather(in, count, MPI_FLOAT, out, count, MPI_FLOAT, MPI_COMM_WORLD);
    break;
  default:
    MPI_Allgatherv(in, count, MPI_FLOAT, out, counts, displs, MPI_FLOAT, MPI_COMM_WORLD);
    break;
  }
}

/* One call of the kind timed (count: an all-reduce's elements, a block
 * collective's per block). */
static void call(const void *in, void *out, int count, MPI_Datatype t)
{
  if (kind >= K_RSB) {
    call_blocks(in, out, count);
    return;
  }
  if (direct) {
    PMPI_Allreduce(in, out, count, t, MPI_SUM, MPI_COMM_WORLD);
    return;
  }
  if (kind == K_ALLREDUCE) {
    MPI_Allreduce(in, out, count, t, MPI_SUM, MPI_COMM_WORLD);
    return;
  }
  MPI_Request req;
  MPI_Iallreduce(in, out, count, t, MPI_SUM, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
  size_t lo = 8, hi = 64 << 20;
  int factor = 4, rounds = 5, unsig = 0;
  /* MPI_Iallreduce through rondo's engine needs MPI_THREAD_MULTIPLE; the
   * blocking call is timed as most programs make it, after MPI_Init */
  int provided, wants_threads = 0;
  for (int i = 1; i + 1 < argc; i++)
    wants_threads |= strcmp(argv[i], "-k") == 0 && strcmp(argv[i + 1], "iallreduce") == 0;
  if (wants_threads)
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  else
    MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-b") == 0)
      lo = parse(argv[i + 1]);
    else if (strcmp(argv[i], "-e") == 0)
      hi = parse(argv[i + 1]);
    else if (strcmp(argv[i], "-f") == 0)
      factor = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-r") == 0)
      rounds = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-t") == 0)
      unsig = strcmp(argv[i + 1], "unsigned") == 0;
    else if (strcmp(argv[i], "-k") == 0)
      for (kind = K_COUNT - 1; kind >= 0 && strcmp(argv[i + 1], kind_names[kind]) != 0;)
        kind--; /* -1: unknown */
  }
  int blocks = kind >= K_RSB;
  if (factor < 2 || rounds < 1 || rounds > 100 || lo < 4 || hi < lo || kind < 0 ||
      (blocks && unsig)) {
    if (rank == 0)
      fprintf(stderr, "mpi_allreduce: bad arguments (see the file's comment)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Datatype t = unsig ? MPI_UNSIGNED : MPI_FLOAT;
  char *in = malloc(hi), *out = malloc(hi);
  counts = malloc((size_t)size * sizeof *counts);
  displs = malloc((size_t)size * sizeof *displs);
  if (in == NULL || out == NULL || counts == NULL || displs == NULL)
    MPI_Abort(MPI_COMM_WORLD, 3);
  double per[100], pmpi[100];
  long wrong = 0;
  if (rank == 0)
    printf("# mpi_allreduce: %s, %d ranks, %s sum, %d rounds; bytes, us per call\n",
           kind_calls[kind], size,
           unsig ? "MPI_UNSIGNED" : "MPI_FLOAT", rounds);
  for (size_t bytes = lo; bytes <= hi; bytes *= (size_t)factor) {
    /* count: an all-reduce's elements, or a block's */
    int count = (int)(bytes / 4 / (blocks ? (size_t)size : 1));
    if (count == 0)
      continue;
    int inputs = kind == K_AG || kind == K_AGV ? count : blocks ? count * size : count;
    for (int q = 0; q < size; q++) {
      counts[q] = count;
      displs[q] = q * count;
    }
    for (int i = 0; i < inputs; i++) {
      if (unsig)
        ((unsigned *)in)[i] = (unsigned)(rank + i % 7);
      else if (kind == K_AG || kind == K_AGV)
        ((float *)in)[i] = (float)(rank * 1000 + i % 7);
      else
        ((float *)in)[i] = (float)(rank + i % 7);
    }
    /* the check, then a warm-up that sizes a round */
    call(in, out, count, t);
    int outputs = kind == K_AG || kind == K_AGV ? count * size : count;
    for (int i = 0; i < outputs; i++) {
      /* element i of the result: an all-gather's is rank i / count's
       * input i % count; a reduce-scatter's is input rank x count + i */
      double want = kind == K_AG || kind == K_AGV
                        ? (double)(i / count) * 1000 + (i % count) % 7
                        : (double)size * (size - 1) / 2 +
                              (double)size * (((kind == K_RSB || kind == K_RS ? rank * count : 0) + i) % 7);
      double got = unsig ? ((unsigned *)out)[i] : ((float *)out)[i];
      wrong += got != want;
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < 3; k++)
      call(in, out, count, t);
    double one = (MPI_Wtime() - t0) / 3, slowest;
    PMPI_Allreduce(&one, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int calls = (int)(0.02 / (slowest > 1e-7 ? slowest : 1e-7));
    calls = calls < 5 ? 5 : calls > 20000 ? 20000 : calls;
    for (int r = 0; r < rounds; r++)
      for (direct = 0; direct <= unsig; direct++) { /* unsigned: PMPI's rounds too */
        PMPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int k = 0; k < calls; k++)
          call(in, out, count, t);
        double mean = (MPI_Wtime() - t0) / calls;
        PMPI_Allreduce(&mean, direct ? &pmpi[r] : &per[r], 1, MPI_DOUBLE, MPI_MAX,
                       MPI_COMM_WORLD);
      }
    direct = 0;
    qsort(per, (size_t)rounds, sizeof per[0], cmp);
    qsort(pmpi, (size_t)rounds, sizeof pmpi[0], cmp);
    if (rank == 0 && unsig)
      printf("%12zu %12.3f %12.3f\n", bytes, per[rounds / 2] * 1e6, pmpi[rounds / 2] * 1e6);
    else if (rank == 0)
      printf("%12zu %12.2f\n", bytes, per[rounds / 2] * 1e6);
    if (bytes > hi / (size_t)factor)
      break;
  }
  long all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("# wrong results: %ld\n", all);
  free(in);
  free(out);
  free(counts);
  free(displs);
  MPI_Finalize();
  return all != 0;
}
