/*
 * test_device - the all-reduce of device buffers.
 *
 * By default it drives the host double of the device backend
 * (lib/device/host_double.c): the GPU code's control flow without a GPU,
 * which is not GPU verification. MPITEST_BACKEND=cuda runs the same checks
 * on real CUDA devices (tests/gpu/run.sh does, on a GPU machine), but for
 * the injected failures, which only the double can make; without a device
 * it skips (77).
 *
 * MPITEST_DEVICES=n gives the double n devices per host (default 1; with
 * CUDA, the machine's). Each rank uses device local_rank % n, so with n
 * below the ranks on a host, ranks share a device, and AUTO must choose
 * staging (NCCL refuses shared GPUs); with one device per rank it must
 * choose nccl.
 *
 *  - exact results: every dtype x op, counts 0, 1, 2, 7, p-1, p+1, 257,
 *    1031, in place and out of place, by AUTO, staged and (one device per
 *    rank) nccl, against closed-form results, identical bytes on every
 *    rank (oversubscribed, fewer cases for the forced algorithms: see
 *    test_exact); one call of 100003 elements through many staging chunks;
 *  - memory rules: host and device buffers mixed in one call, a rank with
 *    host buffers among ranks with device buffers, alltoall, allgatherv and
 *    the engine's broadcast and allgather refusing device buffers,
 *    explanations;
 *  - broadcast (every root), allgather and reduce-scatter (every op) on
 *    device buffers, exact: NCCL's with a device per rank, staged else;
 *    the two families' members forced (staged, and nccl with a device per
 *    rank), out of place and in place; a host member forced onto device
 *    buffers, and nccl where ranks share a device, refused everywhere;
 *  - the engine: device and host requests (never fused together) of several
 *    sizes, exact, in and out of place; scales refused; a name with host
 *    buffers on one rank and device buffers on another (a mismatch); a
 *    failed batch on one rank failing it everywhere; a comm destroyed with
 *    a device batch still in flight;
 *  - failures, each on a comm of its own: an injected copy failure, an
 *    NCCL collective failure, an NCCL initialization failure, a timeout.
 *    One rank fails; every rank's call fails with the first error's status
 *    and message, the comm's later device calls fail at once, and the comm
 *    is destroyed with the failed work still draining, leaving no device
 *    allocation behind.
 */
#include "mpitest.h"

#include "device/device.h"

static const dev_backend_t *dev = &dev_host_double;
static int devices = 1, shared, real; /* real: CUDA, not the double */
/* rondo's nodes (virtual with RONDO_NODE_SIZE): hierarchical_nccl runs
 * where no GPU serves two ranks of one node and the nodes are equal */
static int nodes = 1, node_shared, equal_nodes = 1;
/* What AUTO must choose for device buffers, worked out here from the
 * devices each rank uses (not from the library): nccl where no GPU is
 * shared; hierarchical_nccl across nodes of 2+ ranks where GPUs are shared
 * only across nodes (or staged: both are eligible there, and the cheaper
 * depends on the network the comm measured); staged otherwise
 * (hierarchical_nccl with 1 rank per node ties with staged, which comes
 * first in the table). */
static rondo_algo_t want_auto;

#define CAP_COUNT ((size_t)100003)

typedef struct {
  char *input, *want, *host, *out; /* host memory */
  char *send, *recv;               /* device memory */
} bufs_t;

/* Host <-> device copies of the test itself: with the double a memcpy (so
 * they never count as the double's copies, where failures are injected),
 * with CUDA a copy on the test's own stream, waited for. */
static dev_stream_t *test_stream;

static void copy(void *dst, const void *src, size_t n)
{
  if (n == 0)
    return;
  if (!real) {
    memcpy(dst, src, n);
    return;
  }
  if (dev->copy_async(dst, src, n, test_stream) != RONDO_SUCCESS ||
      dev->stream_sync(test_stream) != RONDO_SUCCESS) {
    fprintf(stderr, "test_device: a test copy failed: %s\n", rondo_last_error());
    MPI_Abort(MPI_COMM_WORLD, 99);
  }
}

/* Fills n bytes of device memory with the poison byte. */
static void poison(void *d, size_t n, char *scratch)
{
  memset(scratch, MT_POISON, n);
  copy(d, scratch, n);
}

static void *dev_alloc(size_t bytes)
{
  void *p = NULL;
  if (dev->mem_alloc(&p, bytes) != RONDO_SUCCESS) {
    fprintf(stderr, "test_device: device allocation of %zu bytes failed\n", bytes);
    MPI_Abort(MPI_COMM_WORLD, 99);
  }
  return p;
}

static rondo_status_t call(rondo_comm_t comm, rondo_algo_t algo, const void *s, void *r,
                           size_t count, rondo_dtype_t dt, rondo_op_t op)
{
  return algo == RONDO_ALGO_AUTO ? rondo_allreduce(comm, s, r, count, dt, op)
                                 : rondo_allreduce_algo(comm, s, r, count, dt, op, algo);
}

/* One call on device buffers (the double's device memory is host memory,
 * so the test reads and writes it directly, as cudaMemcpy would). */
static void run_case(rondo_comm_t comm, rondo_algo_t algo, rondo_dtype_t dt, rondo_op_t op,
                     size_t count, int inplace, const bufs_t *b)
{
  size_t es = mt_dtype_size(dt), n = count * es, guard = MT_GUARD * es;
  mt_where("%s dtype=%s op=%s count=%zu %s", mt_algo_str(algo), mt_dtype_str(dt), mt_op_str(op),
           count, inplace ? "in-place" : "out-of-place");
  char *src = inplace ? b->recv : b->send;
  copy(src, b->input, n);
  poison(src + n, guard, b->out);
  if (!inplace)
    poison(b->recv, n + guard, b->out);
  rondo_status_t st = call(comm, algo, src, b->recv, count, dt, op);
  copy(b->out, b->recv, n + guard);
  if (dt == RONDO_INT16 && (algo == RONDO_ALGO_NCCL || algo == RONDO_ALGO_HIERARCHICAL_NCCL)) {
    /* NCCL has no 16-bit integer type: refused, naming the way that works */
    if (MT_EQ_STATUS(st, RONDO_ERR_UNSUPPORTED))
      MT_CHECK(strstr(rondo_last_error(), "use staged") != NULL, "the message names staged: %s",
               rondo_last_error());
    return;
  }
  if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
    mt_check_elems("result", dt, b->out, b->want, count);
    mt_check_poison("bytes past the end of recvbuf", b->out + n, guard);
    if (!inplace) {
      copy(b->out, b->send, n);
      mt_check_elems("sendbuf after the call", dt, b->out, b->input, count);
      copy(b->out, b->recv, n);
    }
  }
  mt_hash_record(b->out, n);
}

static void test_exact(rondo_comm_t comm, const bufs_t *b)
{
  size_t p = (size_t)mt.size;
  size_t counts[] = {0, 1, 2, 7, p - 1, p + 1, 257, 1031};
  rondo_algo_t algos[4] = {RONDO_ALGO_AUTO, RONDO_ALGO_STAGED};
  int nalgos = 2;
  if (!shared)
    algos[nalgos++] = RONDO_ALGO_NCCL;
  if (nodes > 1 && !node_shared && equal_nodes)
    algos[nalgos++] = RONDO_ALGO_HIERARCHICAL_NCCL;
  /* oversubscribed (3 ranks and up): the forced algorithms in place only
   * at 1031 elements; at 4-5 ranks (mt.crowded) AUTO too, and the forced
   * ones in int32 and float32 only (1-3 ranks run every type with each) */
  int trim = mt.size > 2;
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++) {
    for (int op = 0; op < MT_OPS; op++)
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        if (c > 0 && counts[c] == counts[c - 1])
          continue;
        mt.salt = counts[c];
        mt_fill_input((rondo_dtype_t)dt, (rondo_op_t)op, 0, counts[c], b->input);
        mt_fill_reduced((rondo_dtype_t)dt, (rondo_op_t)op, 0, counts[c], b->want);
        for (int a = 0; a < nalgos; a++)
          for (int ip = 0; ip < 2; ip++)
            if ((ip == 0 || !trim || counts[c] == 1031 || (a == 0 && !mt.crowded)) &&
                (a == 0 || !mt.crowded || dt == RONDO_INT32 || dt == RONDO_FLOAT32))
              run_case(comm, algos[a], (rondo_dtype_t)dt, (rondo_op_t)op, counts[c], ip, b);
      }
    mt_hash_flush();
  }
  /* many staging chunks (RONDO_STAGE_CHUNK_BYTES is small in the .mpi files) */
  /* and AVG at a count NCCL splits over many blocks (before 2.29.7 a
   * one-rank ncclAvg left the last count % blocks elements unwritten) */
  static const rondo_op_t big_ops[] = {RONDO_SUM, RONDO_AVG};
  for (int o = 0; o < 2; o++) {
    mt.salt = CAP_COUNT + (uint64_t)o;
    mt_fill_input(RONDO_FLOAT32, big_ops[o], 0, CAP_COUNT, b->input);
    mt_fill_reduced(RONDO_FLOAT32, big_ops[o], 0, CAP_COUNT, b->want);
    for (int a = 0; a < nalgos; a++)
      run_case(comm, algos[a], RONDO_FLOAT32, big_ops[o], CAP_COUNT, 0, b);
  }
  mt_hash_flush();
}

static void expect_message(const char *part)
{
  MT_CHECK(strstr(rondo_last_error(), part) != NULL, "message '%s' contains '%s'",
           rondo_last_error(), part);
}

static void test_choice(rondo_comm_t comm, const bufs_t *b)
{
  mt_where("rondo_explain_call on device buffers");
  char text[4096];
  size_t need = 0;
  MT_EQ_STATUS(rondo_explain_call(comm, b->send, b->recv, 1000, RONDO_FLOAT32, RONDO_SUM, text,
                                  sizeof text, &need),
               RONDO_SUCCESS);
  MT_CHECK(strstr(text, "device memory") != NULL, "explanation names device memory: %s", text);
  MT_CHECK(strstr(text, "GPUs: ") != NULL, "explanation has the GPUs line: %s", text);
  char want[64];
  snprintf(want, sizeof want, "choice: %s ", rondo_algo_name(want_auto));
  if (want_auto == RONDO_ALGO_HIERARCHICAL_NCCL) {
    /* It and staged are both eligible here; which is cheaper depends on the
     * network the comm measured between its (virtual) nodes. */
    MT_CHECK(strstr(text, want) != NULL || strstr(text, "choice: staged ") != NULL,
             "'%s' or staged in: %s", want, text);
    const char *row = strstr(text, "  hierarchical_nccl ");
    MT_CHECK(row != NULL && strstr(row, " us") != NULL && strstr(row, " us") < strchr(row, '\n'),
             "hierarchical_nccl is eligible (a predicted time): %s", text);
  } else {
    MT_CHECK(strstr(text, want) != NULL, "'%s' in: %s", want, text);
  }
  if (shared)
    MT_CHECK(strstr(text, "share a GPU") != NULL && strstr(text, "share device") != NULL,
             "explanation says why not nccl and which ranks share: %s", text);
  /* host buffers: the host choice, no device line */
  MT_EQ_STATUS(rondo_explain_call(comm, b->input, b->want, 1000, RONDO_FLOAT32, RONDO_SUM, text,
                                  sizeof text, &need),
               RONDO_SUCCESS);
  MT_CHECK(strstr(text, "host memory") != NULL && strstr(text, "GPUs:") == NULL,
           "host buffers explained as host: %s", text);
  /* forcing nccl on a shared GPU fails on every rank, saying why */
  if (shared) {
    mt_where("nccl forced on a shared GPU");
    MT_EQ_STATUS(rondo_allreduce_algo(comm, b->send, b->recv, 10, RONDO_FLOAT32, RONDO_SUM,
                                      RONDO_ALGO_NCCL),
                 RONDO_ERR_UNSUPPORTED);
    expect_message("share a GPU");
  }
}

static void test_memory_rules(rondo_comm_t comm, const bufs_t *b)
{
  float *hs = (float *)b->host;
  mt_where("host sendbuf, device recvbuf on every rank");
  MT_EQ_STATUS(rondo_allreduce(comm, hs, b->recv, 8, RONDO_FLOAT32, RONDO_SUM),
               RONDO_ERR_INVALID_ARG);
  expect_message("sendbuf is host memory but recvbuf is memory of device");
  mt_where("device sendbuf, host recvbuf on rank 0 only");
  rondo_status_t st =
      rondo_allreduce(comm, b->send, mt.rank == 0 ? hs : (void *)b->recv, 8, RONDO_FLOAT32,
                      RONDO_SUM);
  MT_EQ_STATUS(st, mt.rank == 0 ? RONDO_ERR_INVALID_ARG : RONDO_ERR_PEER);
  if (mt.size > 1) {
    mt_where("host buffers on rank 0, device buffers elsewhere");
    st = mt.rank == 0 ? rondo_allreduce(comm, hs, hs + 8, 8, RONDO_FLOAT32, RONDO_SUM)
                      : rondo_allreduce(comm, b->send, b->recv, 8, RONDO_FLOAT32, RONDO_SUM);
    MT_EQ_STATUS(st, RONDO_ERR_MISMATCH);
    expect_message("memory");
  }
  /* A bad device pointer: a buffer that runs past the end of its device
   * allocation, refused before any device work with both sizes; the other
   * ranks learn that rank 0 failed. Memory of the same device right after
   * the allocation would be taken for a next piece of a mapping in pieces:
   * 1.5 MiB leaves the rest of CUDA's 2 MiB page unallocated after it. */
  const size_t len = (size_t)3 << 19;
  char *small = dev_alloc(len);
  mt_where("rank 0's device sendbuf runs past the end of its allocation");
  st = rondo_allreduce(comm, mt.rank == 0 ? small + len - 16 : small, b->recv, 8,
                       RONDO_FLOAT32, RONDO_SUM);
  MT_EQ_STATUS(st, mt.rank == 0 ? RONDO_ERR_INVALID_ARG : RONDO_ERR_PEER);
  if (mt.rank == 0) {
    expect_message("sendbuf (32 bytes at");
    expect_message("runs past the end of its allocation on device");
  }
  mt_where("every rank's count too large for its device buffers");
  st = rondo_allreduce(comm, small, small, len / 4 + 1, RONDO_FLOAT32, RONDO_SUM);
  MT_EQ_STATUS(st, RONDO_ERR_INVALID_ARG);
  expect_message("a bad device pointer or count");
  mt_where("an engine request with a device buffer past its allocation");
  rondo_request_t bad = NULL;
  MT_EQ_STATUS(rondo_allreduce_async(comm, "dev.bad", small, small + len - 4, 2, RONDO_FLOAT32,
                                     RONDO_SUM, NULL, &bad),
               RONDO_ERR_INVALID_ARG);
  MT_CHECK(bad == NULL, "no request");
  expect_message("recvbuf (8 bytes at");
  dev->mem_free(small);
  mt_where("the comm works after the refusals");
  mt.salt = 7;
  mt_fill_input(RONDO_FLOAT32, RONDO_SUM, 0, 7, b->input);
  mt_fill_reduced(RONDO_FLOAT32, RONDO_SUM, 0, 7, b->want);
  run_case(comm, RONDO_ALGO_AUTO, RONDO_FLOAT32, RONDO_SUM, 7, 0, b);
  mt_hash_flush();
  if (devices > 1 && !real) {
    /* one device per rank and comm: rank 0's buffers on another device */
    int cur = -1;
    dev->get_device(&cur);
    dev->set_device((cur + 1) % devices);
    char *other = dev_alloc(64);
    dev->set_device(cur);
    mt_where("rank 0's buffers on another device than the comm's");
    MT_EQ_STATUS(rondo_allreduce(comm, mt.rank == 0 ? other : b->send,
                                 mt.rank == 0 ? other : b->recv, 4, RONDO_FLOAT32, RONDO_SUM),
                 mt.rank == 0 ? RONDO_ERR_INVALID_ARG : RONDO_ERR_PEER);
    if (mt.rank == 0)
      expect_message("one device per rank and comm");
    mt_where("an engine request on another device than the engine's first");
    rondo_request_t r = NULL;
    MT_EQ_STATUS(rondo_allreduce_async(comm, "dev.first", b->send, b->recv, 4, RONDO_FLOAT32,
                                       RONDO_SUM, NULL, &r),
                 RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_allreduce_async(comm, "dev.other", other, other, 4, RONDO_FLOAT32,
                                       RONDO_SUM, NULL, &r),
                 RONDO_ERR_INVALID_ARG);
    expect_message("one device per rank and comm");
    dev->mem_free(other);
  }
  mt_where("alltoall and allgatherv refuse device buffers");
  MT_EQ_STATUS(rondo_alltoall(comm, b->send, b->recv, 2, RONDO_FLOAT32), RONDO_ERR_UNSUPPORTED);
  expect_message("this call takes host buffers only");
  size_t counts[8] = {0}, one = 1;
  for (int r = 0; r < mt.size && r < 8; r++)
    counts[r] = 1;
  if (mt.size <= 8)
    MT_EQ_STATUS(rondo_allgatherv(comm, b->send, one, b->recv, counts, NULL, RONDO_FLOAT32),
                 RONDO_ERR_UNSUPPORTED);
  mt_where("a broadcast with device buffers on rank 0 only");
  MT_EQ_STATUS(rondo_broadcast(comm, mt.rank == 0 ? (void *)b->recv : (void *)b->host, 8,
                               RONDO_FLOAT32, 0),
               mt.size > 1 ? RONDO_ERR_MISMATCH : RONDO_SUCCESS);
  mt_where("the engine's broadcast and allgather refuse device buffers at submission");
  rondo_request_t req = NULL;
  MT_EQ_STATUS(rondo_broadcast_async(comm, "dev", b->send, 8, RONDO_FLOAT32, 0, NULL, &req),
               RONDO_ERR_UNSUPPORTED);
  MT_EQ_STATUS(rondo_allgather_async(comm, "dev", b->send, 1, 8, RONDO_FLOAT32, NULL, &req),
               RONDO_ERR_UNSUPPORTED);
  MT_CHECK(req == NULL, "no request");
  /* the comm still works afterwards */
  mt_where("a valid device call after the refusals");
  mt_fill_input(RONDO_INT32, RONDO_SUM, 0, 5, b->out);
  copy(b->send, b->out, 5 * 4);
  mt_fill_reduced(RONDO_INT32, RONDO_SUM, 0, 5, b->want);
  if (MT_EQ_STATUS(rondo_allreduce(comm, b->send, b->recv, 5, RONDO_INT32, RONDO_SUM),
                   RONDO_SUCCESS)) {
    copy(b->out, b->recv, 5 * 4);
    mt_check_elems("result", RONDO_INT32, b->out, b->want, 5);
  }
}

/* ---- broadcast, allgather, reduce-scatter on device buffers ------------------------ */

/* buf[k] = rank's input of element k (mpitest.h's values for that rank). */
static void fill_input_of(int rank, rondo_dtype_t dt, size_t count, void *buf)
{
  for (size_t k = 0; k < count; k++)
    mt_store(dt, buf, k, mt_value(dt, RONDO_SUM, rank, k));
}

/* The reduce-scatter and all-gather members on device buffers: AUTO,
 * staged, and nccl where every rank has a device of its own. */
static rondo_algo_t algos[3] = {RONDO_ALGO_AUTO, RONDO_ALGO_STAGED, RONDO_ALGO_NCCL};
static int nalgos;

/* An all-gather of n elements a rank by algo, out of place or in place
 * (sendbuf this rank's block of recvbuf), every block checked. */
static void gather_case(rondo_comm_t comm, const bufs_t *b, size_t n, rondo_dtype_t dt,
                        rondo_algo_t algo, int in_place)
{
  size_t p = (size_t)mt.size, es = mt_dtype_size(dt);
  mt_where("allgather of %zu %s by %s on device buffers, %s", n, mt_dtype_str(dt),
           rondo_algo_name(algo), in_place ? "in place" : "out of place");
  mt_fill_input(dt, RONDO_SUM, 0, n, b->input);
  poison(b->recv, p * n * es, b->out);
  char *send = in_place ? b->recv + (size_t)mt.rank * n * es : b->send;
  copy(send, b->input, n * es);
  if (!MT_EQ_STATUS(rondo_allgather_algo(comm, send, b->recv, n, dt, algo), RONDO_SUCCESS))
    return;
  copy(b->out, b->recv, p * n * es);
  for (int r = 0; r < mt.size; r++) {
    fill_input_of(r, dt, n, b->want);
    mt_check_elems("allgather block", dt, b->out + (size_t)r * n * es, b->want, n);
  }
}

/* A reduce-scatter of n elements a rank by algo, out of place or in place
 * (recvbuf this rank's block of sendbuf). */
static void rs_case(rondo_comm_t comm, const bufs_t *b, size_t n, rondo_dtype_t dt, rondo_op_t op,
                    rondo_algo_t algo, int in_place)
{
  size_t p = (size_t)mt.size, es = mt_dtype_size(dt);
  mt_where("reduce_scatter of %zu %s %s per rank by %s on device buffers, %s", n,
           mt_dtype_str(dt), mt_op_str(op), rondo_algo_name(algo),
           in_place ? "in place" : "out of place");
  mt_fill_input(dt, op, 0, p * n, b->input);
  copy(b->send, b->input, p * n * es);
  mt_fill_reduced(dt, op, (uint64_t)mt.rank * n, n, b->want);
  char *recv = in_place ? b->send + (size_t)mt.rank * n * es : b->recv;
  if (!in_place)
    poison(b->recv, n * es, b->out);
  if (MT_EQ_STATUS(rondo_reduce_scatter_algo(comm, b->send, recv, n, dt, op, algo),
                   RONDO_SUCCESS)) {
    copy(b->out, recv, n * es);
    mt_check_elems("reduce_scatter block", dt, b->out, b->want, n);
  }
}

static void test_other_collectives(rondo_comm_t comm, const bufs_t *b)
{
  size_t counts[] = {1, 7, 1031};
  nalgos = shared ? 2 : 3;
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    size_t n = counts[c];
    for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt += 3) { /* int8, int64, float32 */
      size_t es = mt_dtype_size((rondo_dtype_t)dt);
      for (int root = 0; root < mt.size; root += mt.size > 2 ? 2 : 1) {
        mt_where("broadcast of %zu %s from %d on device buffers", n,
                 mt_dtype_str((rondo_dtype_t)dt), root);
        mt.salt = 1000 + n;
        fill_input_of(root, (rondo_dtype_t)dt, n, b->want); /* what every rank will hold */
        if (mt.rank == root)
          copy(b->recv, b->want, n * es);
        else
          poison(b->recv, n * es, b->out);
        if (MT_EQ_STATUS(rondo_broadcast(comm, b->recv, n, (rondo_dtype_t)dt, root),
                         RONDO_SUCCESS)) {
          copy(b->out, b->recv, n * es);
          mt_check_elems("broadcast", (rondo_dtype_t)dt, b->out, b->want, n);
        }
      }
      for (int k = 0; k < nalgos; k++)
        for (int in_place = 0; in_place < 2; in_place++) {
          gather_case(comm, b, n, (rondo_dtype_t)dt, algos[k], in_place);
          for (int op = 0; op < MT_OPS; op++)
            rs_case(comm, b, n, (rondo_dtype_t)dt, (rondo_op_t)op, algos[k], in_place);
        }
    }
  }
  /* a host member forced onto device buffers: refused on every rank */
  mt_where("allgather forced onto ring with device buffers");
  MT_EQ_STATUS(rondo_allgather_algo(comm, b->send, b->recv, 1, RONDO_FLOAT32, RONDO_ALGO_RING),
               RONDO_ERR_UNSUPPORTED);
  mt_where("reduce_scatter forced onto shm with device buffers");
  MT_EQ_STATUS(rondo_reduce_scatter_algo(comm, b->send, b->recv, 1, RONDO_FLOAT32, RONDO_SUM,
                                         RONDO_ALGO_SHM),
               RONDO_ERR_UNSUPPORTED);
  if (shared) { /* nccl forced where ranks share a device: refused on every rank */
    mt_where("reduce_scatter forced onto nccl with a shared device");
    MT_EQ_STATUS(rondo_reduce_scatter_algo(comm, b->send, b->recv, 1, RONDO_FLOAT32, RONDO_SUM,
                                           RONDO_ALGO_NCCL),
                 RONDO_ERR_UNSUPPORTED);
  }
}

/* ---- the engine ------------------------------------------------------------------- */

enum { ENG_REQS = 6 };

/* Device requests of several sizes and dtypes, host requests among them
 * (never fused with them), all waited for and checked exactly. */
static void test_engine(rondo_comm_t comm)
{
  static const size_t counts[ENG_REQS] = {1, 1000, 7, 70000, 0, 257};
  static const rondo_dtype_t dts[ENG_REQS] = {RONDO_FLOAT32, RONDO_FLOAT32, RONDO_INT64,
                                              RONDO_FLOAT32, RONDO_FLOAT32, RONDO_FLOAT16};
  static const rondo_op_t ops[ENG_REQS] = {RONDO_SUM, RONDO_SUM, RONDO_MAX,
                                           RONDO_AVG, RONDO_SUM, RONDO_SUM};
  char *in[ENG_REQS], *out[ENG_REQS], *want[ENG_REQS], *hin[ENG_REQS], *hout[ENG_REQS];
  rondo_request_t req[2 * ENG_REQS];
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < ENG_REQS; i++) {
      size_t bytes = counts[i] * mt_dtype_size(dts[i]) + 8;
      in[i] = dev_alloc(bytes);
      out[i] = dev_alloc(bytes);
      want[i] = mt_alloc(bytes);
      hin[i] = mt_alloc(bytes);
      hout[i] = mt_alloc(bytes);
      mt.salt = 100 * (uint64_t)round + (uint64_t)i;
      mt_fill_input(dts[i], ops[i], 0, counts[i], hin[i]);
      copy(in[i], hin[i], counts[i] * mt_dtype_size(dts[i]));
      mt_fill_reduced(dts[i], ops[i], 0, counts[i], want[i]);
    }
    /* every rank submits in another order (the engine matches names) */
    for (int k = 0; k < ENG_REQS; k++) {
      int i = (k + mt.rank) % ENG_REQS;
      char name[32];
      mt_where("engine round %d: submit device request %d", round, i);
      snprintf(name, sizeof name, "dev.%d.%d", round, i);
      MT_EQ_STATUS(rondo_allreduce_async(comm, name, in[i], round ? in[i] : out[i], counts[i],
                                         dts[i], ops[i], NULL, &req[i]),
                   RONDO_SUCCESS);
      snprintf(name, sizeof name, "host.%d.%d", round, i);
      MT_EQ_STATUS(rondo_allreduce_async(comm, name, hin[i], hout[i], counts[i], dts[i],
                                         ops[i], NULL, &req[ENG_REQS + i]),
                   RONDO_SUCCESS);
    }
    for (int i = 0; i < ENG_REQS; i++) {
      mt_where("engine round %d (%s): request %d, %zu x %s %s", round,
               round ? "in place" : "out of place", i, counts[i], mt_dtype_str(dts[i]),
               mt_op_str(ops[i]));
      size_t bytes = counts[i] * mt_dtype_size(dts[i]);
      if (req[ENG_REQS + i] != NULL &&
          MT_EQ_STATUS(rondo_wait(&req[ENG_REQS + i]), RONDO_SUCCESS))
        mt_check_elems("host result", dts[i], hout[i], want[i], counts[i]);
      if (req[i] != NULL && MT_EQ_STATUS(rondo_wait(&req[i]), RONDO_SUCCESS)) {
        copy(hout[i], round ? in[i] : out[i], bytes);
        mt_check_elems("device result", dts[i], hout[i], want[i], counts[i]);
      }
      mt_hash_record(hout[i], bytes);
      dev->mem_free(in[i]);
      dev->mem_free(out[i]);
      free(want[i]);
      free(hin[i]);
      free(hout[i]);
    }
    mt_hash_flush();
  }
  float *x = dev_alloc(64), *y = dev_alloc(64), hx[16] = {0};
  rondo_request_t r = NULL;
  mt_where("engine: scales on device buffers are refused");
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.postscale = 0.5;
  MT_EQ_STATUS(rondo_allreduce_async(comm, "scaled", x, y, 4, RONDO_FLOAT32, RONDO_SUM, &o, &r),
               RONDO_ERR_UNSUPPORTED);
  MT_CHECK(r == NULL, "no request");
  if (mt.size > 1) {
    mt_where("engine: rank 0 host buffers, the others device buffers, one name");
    MT_EQ_STATUS(mt.rank == 0
                     ? rondo_allreduce_async(comm, "mixed", hx, hx, 4, RONDO_FLOAT32, RONDO_SUM,
                                             NULL, &r)
                     : rondo_allreduce_async(comm, "mixed", x, y, 4, RONDO_FLOAT32, RONDO_SUM,
                                             NULL, &r),
                 RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_MISMATCH);
    expect_message("memory: rank 0 has host buffers");
  }
  dev->mem_free(x);
  dev->mem_free(y);
}

/* One rank's failed copy into the device fusion buffer fails the batch on
 * every rank; the engine's later device requests fail on every rank (its
 * GPU state is broken), its host requests still run. */
static void test_engine_fault(void)
{
  size_t live_before = dev_double_live();
  rondo_comm_t comm = NULL;
  mt_where("engine fault: comm create");
  MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &comm), RONDO_SUCCESS);
  if (comm == NULL)
    return;
  float *x = dev_alloc(64), *y = dev_alloc(64);
  rondo_request_t r[2] = {NULL, NULL};
  /* a first batch attaches the engine's GPU state; the second fails */
  for (int round = 0; round < 2; round++) {
    if (round == 1 && mt.rank == mt.size - 1)
      dev_double_fail(DEV_DOUBLE_COPY, 1, RONDO_ERR_CUDA);
    mt_where("engine fault: round %d", round);
    rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
    o.group = "g";
    o.group_size = 2; /* both in one fused batch: copies into the fusion buffer */
    MT_EQ_STATUS(rondo_allreduce_async(comm, "a", x, y, 4, RONDO_FLOAT32, RONDO_SUM, &o, &r[0]),
                 RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_allreduce_async(comm, "b", x + 8, y + 8, 4, RONDO_FLOAT32, RONDO_SUM, &o,
                                       &r[1]),
                 RONDO_SUCCESS);
    for (int i = 0; i < 2; i++)
      if (r[i] != NULL) {
        rondo_status_t st = rondo_wait(&r[i]);
        if (round == 0)
          MT_EQ_STATUS(st, RONDO_SUCCESS);
        else
          MT_CHECK(st == RONDO_ERR_CUDA || st == RONDO_ERR_PEER,
                   "the failed batch fails on every rank: %s: %s", mt_status_name(st),
                   rondo_last_error());
      }
    dev_double_reset();
  }
  mt_where("engine fault: a later device request");
  MT_EQ_STATUS(rondo_allreduce_async(comm, "c", x, y, 4, RONDO_FLOAT32, RONDO_SUM, NULL, &r[0]),
               RONDO_SUCCESS);
  rondo_status_t st = rondo_wait(&r[0]);
  MT_CHECK(st == RONDO_ERR_CUDA || st == RONDO_ERR_PEER, "fails: %s: %s", mt_status_name(st),
           rondo_last_error());
  mt_where("engine fault: a host request still runs");
  int one = 1, sum = 0;
  MT_EQ_STATUS(rondo_allreduce_async(comm, "h", &one, &sum, 1, RONDO_INT32, RONDO_SUM, NULL,
                                     &r[0]),
               RONDO_SUCCESS);
  if (MT_EQ_STATUS(rondo_wait(&r[0]), RONDO_SUCCESS))
    MT_EQ_INT(sum, mt.size);
  MT_EQ_STATUS(rondo_comm_destroy(&comm), RONDO_SUCCESS);
  dev->mem_free(x);
  dev->mem_free(y);
  MT_EQ_INT(dev_double_live(), live_before);
}

/* The comm is destroyed while a device batch's GPU work is queued (slow):
 * the request completes (its work finished first) and nothing leaks. */
static void test_engine_teardown_in_flight(void)
{
  size_t live_before = dev_double_live();
  rondo_comm_t comm = NULL;
  mt_where("engine teardown: comm create");
  MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &comm), RONDO_SUCCESS);
  if (comm == NULL)
    return;
  int32_t *x = dev_alloc(64), want[4], got[4];
  mt.salt = 7;
  mt_fill_input(RONDO_INT32, RONDO_SUM, 0, 4, got);
  copy(x, got, sizeof got);
  mt_fill_reduced(RONDO_INT32, RONDO_SUM, 0, 4, want);
  dev_double_delay(DEV_DOUBLE_COPY, 200000);
  dev_double_delay(DEV_DOUBLE_COLL, 200000);
  rondo_request_t r = NULL;
  MT_EQ_STATUS(rondo_allreduce_async(comm, "slow", x, x, 4, RONDO_INT32, RONDO_SUM, NULL, &r),
               RONDO_SUCCESS);
  /* 50 ms: the engine has taken it and its GPU work (200 ms) is queued */
  struct timespec ts = {0, 50000000};
  nanosleep(&ts, NULL);
  int done = 1;
  rondo_test(r, &done);
  MT_CHECK(!done, "the request is still in flight when the comm is destroyed");
  mt_where("engine teardown: destroy with the request in flight");
  MT_EQ_STATUS(rondo_comm_destroy(&comm), RONDO_SUCCESS);
  dev_double_reset();
  rondo_status_t st = rondo_wait(&r);
  MT_CHECK(st == RONDO_SUCCESS || st == RONDO_ERR_SHUT_DOWN, "completed or shut down: %s",
           mt_status_name(st));
  if (st == RONDO_SUCCESS) {
    copy(got, x, sizeof got);
    mt_check_elems("result", RONDO_INT32, got, want, 4);
  }
  dev->mem_free(x);
  MT_EQ_INT(dev_double_live(), live_before);
}

/* ---- failures ------------------------------------------------------------------- */

typedef struct {
  const char *name;
  dev_double_point_t point; /* what fails (or is slow) on the failing rank */
  rondo_status_t status;    /* what every rank's call fails with */
  rondo_algo_t algo;
  long delay_us;            /* > 0: a delay past the timeout instead of a failure */
  const char *says;         /* in the failing rank's message */
} fault_t;

static void test_fault(const fault_t *f, const bufs_t *b)
{
  int victim = mt.size - 1;
  size_t live_before = dev_double_live();
  mt_where("fault '%s': comm create", f->name);
  if (f->delay_us > 0)
    setenv("RONDO_DEVICE_TIMEOUT_SEC", "0.5", 1);
  rondo_comm_t comm = NULL;
  MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &comm), RONDO_SUCCESS);
  unsetenv("RONDO_DEVICE_TIMEOUT_SEC");
  if (comm == NULL)
    return;
  if (mt.rank == victim) {
    if (f->delay_us > 0)
      dev_double_delay(f->point, f->delay_us);
    else
      dev_double_fail(f->point, 1, f->status);
  }
  mt_where("fault '%s': the call", f->name);
  mt_fill_input(RONDO_FLOAT32, RONDO_SUM, 0, 3000, b->out);
  copy(b->send, b->out, 3000 * 4);
  rondo_status_t st =
      rondo_allreduce_algo(comm, b->send, b->recv, 3000, RONDO_FLOAT32, RONDO_SUM, f->algo);
  dev_double_reset();
  MT_EQ_STATUS(st, f->status);
  expect_message(f->says);
  if (mt.rank != victim && !(f->delay_us > 0 && f->algo == RONDO_ALGO_NCCL)) {
    /* (waiting on NCCL, every rank may time out before it hears another) */
    char who[32];
    snprintf(who, sizeof who, "rank %d: ", victim);
    expect_message(who);
  }
  mt_where("fault '%s': the next call", f->name);
  st = rondo_allreduce_algo(comm, b->send, b->recv, 10, RONDO_FLOAT32, RONDO_SUM, f->algo);
  MT_CHECK(st == f->status || st == RONDO_ERR_PEER, "later calls fail (%s: %s)",
           mt_status_name(st), rondo_last_error());
  MT_CHECK(st == RONDO_ERR_PEER || strstr(rondo_last_error(), "destroy the comm") != NULL,
           "says what to do: %s", rondo_last_error());
  mt_where("fault '%s': host calls still work", f->name);
  int one = 1, sum = 0;
  MT_EQ_STATUS(rondo_allreduce(comm, &one, &sum, 1, RONDO_INT32, RONDO_SUM), RONDO_SUCCESS);
  MT_EQ_INT(sum, mt.size);
  mt_where("fault '%s': destroy", f->name);
  MT_EQ_STATUS(rondo_comm_destroy(&comm), RONDO_SUCCESS);
  MT_EQ_INT(dev_double_live(), live_before);
}

int main(int argc, char **argv)
{
  const char *backend = getenv("MPITEST_BACKEND"), *d = getenv("MPITEST_DEVICES");
  real = backend != NULL && strcmp(backend, "cuda") == 0;
  dev = real ? &dev_cuda : &dev_host_double;
  if (real) {
    if (dev->device_count(&devices) != RONDO_SUCCESS)
      devices = 0;
  } else {
    devices = d != NULL ? atoi(d) : 1;
    dev_use_backend(&dev_host_double);
    dev_double_devices(devices);
  }
  if (mt_rondo_start(&argc, &argv, "test_device"))
    return 1;
  int any = devices, all = devices;
  MPI_Allreduce(&devices, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&devices, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all < 1) {
    int rc = mt_skip(any ? "some ranks see no CUDA device" : "no CUDA device (cudaGetDeviceCount)");
    rondo_finalize();
    return rc;
  }
  rondo_comm_t world = rondo_world();
  /* Each rank's device: its index among the ranks of its host name, modulo
   * the devices (emulated hosts on one machine share the name, and the
   * GPU). Which ranks share one, and within which rondo node. */
  typedef struct {
    char host[MPI_MAX_PROCESSOR_NAME];
    int device, node;
  } who_t;
  who_t me = {{0}, 0, 0}, *who = mt_alloc((size_t)mt.size * sizeof *who);
  int len = 0, local = 0, local_size = 0;
  MPI_Get_processor_name(me.host, &len);
  char topo[1024] = "";
  rondo_comm_topology(world, topo, sizeof topo, NULL);
  const char *at = strstr(topo, "this rank: node ");
  me.node = at != NULL ? atoi(at + strlen("this rank: node ")) : 0;
  MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, who, (int)sizeof me, MPI_BYTE, MPI_COMM_WORLD);
  for (int r = 0; r < mt.size; r++)
    if (strcmp(who[r].host, me.host) == 0) {
      local += r < mt.rank;
      local_size++;
    }
  for (int r = 0; r < mt.size; r++) { /* every rank's device, as it will pick it */
    int idx = 0;
    for (int q = 0; q < r; q++)
      idx += strcmp(who[q].host, who[r].host) == 0;
    who[r].device = idx % devices;
  }
  for (int r = 0; r < mt.size; r++)
    for (int q = r + 1; q < mt.size; q++)
      if (strcmp(who[q].host, who[r].host) == 0 && who[q].device == who[r].device) {
        shared = 1;
        node_shared |= who[q].node == who[r].node;
      }
  free(who);
  nodes = MT_QUERY(rondo_comm_node_count, world);
  int node_size = MT_QUERY(rondo_comm_local_size, world), lo = 0, hi = 0;
  MPI_Allreduce(&node_size, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&node_size, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  equal_nodes = lo == hi;
  want_auto = !shared ? RONDO_ALGO_NCCL
              : nodes > 1 && !node_shared && equal_nodes && node_size > 1
                  ? RONDO_ALGO_HIERARCHICAL_NCCL
                  : RONDO_ALGO_STAGED;
  if (dev->set_device(local % devices) != RONDO_SUCCESS ||
      (real && dev->stream_create(&test_stream) != RONDO_SUCCESS)) {
    fprintf(stderr, "test_device: %s\n", rondo_last_error());
    return 1;
  }
  if (mt.rank == 0)
    printf("test_device: %s, %d device(s) per host, %d rank(s) per host, %d node(s): "
           "AUTO must choose %s%s\n",
           real ? "CUDA" : "the host double", devices, local_size, nodes,
           rondo_algo_name(want_auto),
           shared ? " (ranks share devices)" : " (a device each)");

  size_t cap = (CAP_COUNT + MT_GUARD) * 8;
  bufs_t b = {mt_alloc(cap), mt_alloc(cap), mt_alloc(cap), mt_alloc(cap), dev_alloc(cap),
              dev_alloc(cap)};

  test_exact(world, &b);
  test_choice(world, &b);
  test_memory_rules(world, &b);
  test_other_collectives(world, &b);
  test_engine(world);
  if (!real) { /* failures and delays are injected into the double */
    test_engine_fault();
    test_engine_teardown_in_flight();
    const fault_t faults[] = {
        {"a failed copy", DEV_DOUBLE_COPY, RONDO_ERR_CUDA, RONDO_ALGO_STAGED, 0,
         "injected failure of copy #1"},
        {"a copy past the timeout", DEV_DOUBLE_COPY, RONDO_ERR_CUDA, RONDO_ALGO_STAGED, 1500000,
         "did not complete within RONDO_DEVICE_TIMEOUT_SEC=0.5 s"},
        {"a failed NCCL collective", DEV_DOUBLE_COLL, RONDO_ERR_NCCL, RONDO_ALGO_NCCL, 0,
         "injected failure of collective #1"},
        {"a failed NCCL initialization", DEV_DOUBLE_COLL_INIT, RONDO_ERR_NCCL, RONDO_ALGO_NCCL,
         0, "injected failure of collective init #1"},
        {"an NCCL collective past the timeout", DEV_DOUBLE_COLL, RONDO_ERR_CUDA,
         RONDO_ALGO_NCCL, 1500000, "did not complete within RONDO_DEVICE_TIMEOUT_SEC=0.5 s"},
    };
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
      if (faults[i].algo != RONDO_ALGO_NCCL || !shared)
        test_fault(&faults[i], &b);
  }

  dev->mem_free(b.send);
  dev->mem_free(b.recv);
  if (test_stream != NULL)
    dev->stream_destroy(test_stream);
  free(b.input);
  free(b.want);
  free(b.host);
  free(b.out);
  int rc = mt_finish();
  rondo_finalize();
  return rc;
}
