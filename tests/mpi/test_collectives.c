/*
 * test_collectives - rondo_broadcast, rondo_allgather, rondo_allgatherv,
 * rondo_reduce_scatter, rondo_alltoall and rondo_barrier.
 *
 * The data-movement collectives run for every dtype on pseudo-random bytes
 * (NaN and subnormal patterns included: moving data must not touch it) and
 * are checked byte for byte, together with the poison past the end of every
 * output and, for allgatherv, in the gaps between blocks. reduce_scatter runs
 * every op x dtype on the exact-value inputs of mpitest.h. Count 0 is also
 * run with NULL buffers.
 */
#include "mpitest.h"

#define BCAST_PRIME     ((size_t)100003)
#define ALLGATHER_PRIME ((size_t)10007)
#define ALLTOALL_PRIME  ((size_t)5003)
#define REDSCAT_PRIME   ((size_t)1009)

/* Stream ids for mt_fill_pattern: what a rank sends is computable anywhere. */
static uint64_t stream_of(int coll, rondo_dtype_t dt, int from, int to, size_t count)
{
  return (((((uint64_t)coll * 16 + (uint64_t)dt) * 4096 + (uint64_t)from) * 4096 + (uint64_t)to)
          << 20) ^
         count;
}

static unsigned char *out_buf(size_t nbytes, size_t es)
{
  unsigned char *b = mt_alloc(nbytes + MT_GUARD * es);
  memset(b, MT_POISON, nbytes + MT_GUARD * es);
  return b;
}

static void test_broadcast(rondo_comm_t comm)
{
  size_t counts[] = {0, 1, (size_t)mt.size + 1, BCAST_PRIME};
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++) {
    size_t es = mt_dtype_size((rondo_dtype_t)dt);
    for (int root = 0; root < mt.size; root++) {
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = counts[c] * es;
        mt_where("broadcast dtype=%s count=%zu root=%d", mt_dtype_str((rondo_dtype_t)dt), counts[c],
                 root);
        unsigned char *want = mt_alloc(n), *buf = out_buf(n, es);
        mt_fill_pattern(want, n, stream_of(1, (rondo_dtype_t)dt, root, 0, counts[c]));
        if (mt.rank == root)
          memcpy(buf, want, n);
        rondo_status_t st = rondo_broadcast(comm, buf, counts[c], (rondo_dtype_t)dt, root);
        if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
          mt_check_elems(mt.rank == root ? "root's buffer after the call" : "received data",
                         (rondo_dtype_t)dt, buf, want, counts[c]);
          mt_check_poison("bytes past the end of buf", buf + n, MT_GUARD * es);
        }
        mt_hash_record(buf, n);
        if (counts[c] == 0) {
          mt_where("broadcast dtype=%s count=0 NULL buf root=%d", mt_dtype_str((rondo_dtype_t)dt),
                   root);
          MT_EQ_STATUS(rondo_broadcast(comm, NULL, 0, (rondo_dtype_t)dt, root), RONDO_SUCCESS);
        }
        free(want);
        free(buf);
      }
    }
  }
  mt_hash_flush();
}

static void test_allgather(rondo_comm_t comm)
{
  size_t counts[] = {0, 1, (size_t)mt.size + 1, ALLGATHER_PRIME};
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++) {
    size_t es = mt_dtype_size((rondo_dtype_t)dt);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      size_t count = counts[c], n = count * es, total = n * (size_t)mt.size;
      mt_where("allgather dtype=%s count=%zu", mt_dtype_str((rondo_dtype_t)dt), count);
      unsigned char *send = out_buf(n, es), *input = mt_alloc(n), *recv = out_buf(total, es);
      unsigned char *want = mt_alloc(total);
      for (int r = 0; r < mt.size; r++)
        mt_fill_pattern(want + (size_t)r * n, n, stream_of(2, (rondo_dtype_t)dt, r, 0, count));
      memcpy(send, want + (size_t)mt.rank * n, n);
      memcpy(input, send, n);
      rondo_status_t st = rondo_allgather(comm, send, recv, count, (rondo_dtype_t)dt);
      if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
        mt_check_elems("gathered data", (rondo_dtype_t)dt, recv, want, count * (size_t)mt.size);
        mt_check_poison("bytes past the end of recvbuf", recv + total, MT_GUARD * es);
        mt_check_elems("sendbuf after the call", (rondo_dtype_t)dt, send, input, count);
        mt_check_poison("bytes past the end of sendbuf", send + n, MT_GUARD * es);
      }
      mt_hash_record(recv, total);
      if (count == 0) {
        mt_where("allgather dtype=%s count=0 NULL buffers", mt_dtype_str((rondo_dtype_t)dt));
        MT_EQ_STATUS(rondo_allgather(comm, NULL, NULL, 0, (rondo_dtype_t)dt), RONDO_SUCCESS);
      }
      free(send);
      free(input);
      free(recv);
      free(want);
    }
  }
  mt_hash_flush();
}

/* Uneven counts with zeros. Layouts: packed (displs NULL), ascending with
 * gaps, and descending (rank size-1's block first) with gaps; gaps must keep
 * their poison. Ranks with nothing to send pass a NULL sendbuf in the gapped
 * layouts. */
enum { PACKED, GAPPED, REVERSED, NLAYOUTS };
static const char *const layout_names[NLAYOUTS] = {"displs=NULL", "gapped displs",
                                                   "reversed gapped displs"};

static size_t gatherv_count(int pattern, int r)
{
  switch (pattern) {
  case 0:
    return r % 3 == 1 ? 0 : (size_t)(2 * r + 1);
  case 1:
    return r % 2 == 0 ? 0 : (size_t)(1000 + 17 * r);
  default:
    return 0;
  }
}

static void test_allgatherv_case(rondo_comm_t comm, rondo_dtype_t dt, int pattern, int layout)
{
  int p = mt.size;
  size_t es = mt_dtype_size(dt), *cnt = mt_alloc((size_t)p * sizeof *cnt);
  size_t *displs = mt_alloc((size_t)p * sizeof *displs), extent = 0;
  for (int r = 0; r < p; r++)
    cnt[r] = gatherv_count(pattern, r);
  for (int k = 0; k < p; k++) { /* place blocks in order, or reversed */
    int r = layout == REVERSED ? p - 1 - k : k;
    if (layout != PACKED)
      extent += 2 + (size_t)r % 3; /* gap before every block */
    displs[r] = extent;
    extent += cnt[r];
  }
  if (layout != PACKED)
    extent += 3; /* and a gap after the last */
  mt_where("allgatherv dtype=%s counts=pattern%d %s extent=%zu", mt_dtype_str(dt), pattern,
           layout_names[layout], extent);

  size_t n = cnt[mt.rank] * es, total = extent * es;
  unsigned char *want = mt_alloc(total + MT_GUARD * es), *recv = out_buf(total, es);
  unsigned char *send = out_buf(n, es), *input = mt_alloc(n);
  memset(want, MT_POISON, total + MT_GUARD * es);
  for (int r = 0; r < p; r++)
    mt_fill_pattern(want + displs[r] * es, cnt[r] * es, stream_of(3, dt, r, pattern, cnt[r]));
  memcpy(send, want + displs[mt.rank] * es, n);
  memcpy(input, send, n);

  const void *sendbuf = n == 0 && (layout != PACKED || pattern == 2) ? NULL : send;
  void *recvbuf = total == 0 ? NULL : recv;
  rondo_status_t st = rondo_allgatherv(comm, sendbuf, cnt[mt.rank], recvbuf, cnt,
                                       layout == PACKED ? NULL : displs, dt);
  if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
    mt_check_elems("recvbuf (blocks, gaps and guard)", dt, recv, want, extent + MT_GUARD);
    mt_check_elems("sendbuf after the call", dt, send, input, cnt[mt.rank]);
    mt_check_poison("bytes past the end of sendbuf", send + n, MT_GUARD * es);
  }
  mt_hash_record(recv, total);
  free(cnt);
  free(displs);
  free(want);
  free(recv);
  free(send);
  free(input);
}

static void test_allgatherv(rondo_comm_t comm)
{
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++) {
    for (int pattern = 0; pattern < 2; pattern++)
      for (int layout = 0; layout < NLAYOUTS; layout++)
        test_allgatherv_case(comm, (rondo_dtype_t)dt, pattern, layout);
    test_allgatherv_case(comm, (rondo_dtype_t)dt, 2, PACKED); /* all zero, NULL buffers */
  }
  mt_hash_flush();
}

static void test_reduce_scatter(rondo_comm_t comm)
{
  size_t counts[] = {0, 1, (size_t)mt.size + 1, REDSCAT_PRIME};
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++) {
    size_t es = mt_dtype_size((rondo_dtype_t)dt);
    for (int op = 0; op < MT_OPS; op++) {
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t rc = counts[c], all = rc * (size_t)mt.size;
        mt_where("reduce_scatter dtype=%s op=%s recvcount=%zu", mt_dtype_str((rondo_dtype_t)dt),
                 mt_op_str((rondo_op_t)op), rc);
        unsigned char *send = out_buf(all * es, es), *input = mt_alloc(all * es);
        unsigned char *recv = out_buf(rc * es, es), *want = mt_alloc(rc * es);
        /* block b of every rank's sendbuf holds elements b*rc .. b*rc+rc-1 */
        mt.salt = rc;
        mt_fill_input((rondo_dtype_t)dt, (rondo_op_t)op, 0, all, input);
        mt_fill_reduced((rondo_dtype_t)dt, (rondo_op_t)op, (uint64_t)mt.rank * rc, rc, want);
        memcpy(send, input, all * es);
        rondo_status_t st =
            rondo_reduce_scatter(comm, send, recv, rc, (rondo_dtype_t)dt, (rondo_op_t)op);
        if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
          mt_check_elems("this rank's reduced block", (rondo_dtype_t)dt, recv, want, rc);
          mt_check_poison("bytes past the end of recvbuf", recv + rc * es, MT_GUARD * es);
          mt_check_elems("sendbuf after the call", (rondo_dtype_t)dt, send, input, all);
          mt_check_poison("bytes past the end of sendbuf", send + all * es, MT_GUARD * es);
        }
        if (rc == 0) {
          mt_where("reduce_scatter dtype=%s op=%s recvcount=0 NULL buffers",
                   mt_dtype_str((rondo_dtype_t)dt), mt_op_str((rondo_op_t)op));
          MT_EQ_STATUS(rondo_reduce_scatter(comm, NULL, NULL, 0, (rondo_dtype_t)dt, (rondo_op_t)op),
                       RONDO_SUCCESS);
        }
        free(send);
        free(input);
        free(recv);
        free(want);
      }
    }
  }
}

static void test_alltoall(rondo_comm_t comm)
{
  size_t counts[] = {0, 1, (size_t)mt.size + 1, ALLTOALL_PRIME};
  int p = mt.size;
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++) {
    size_t es = mt_dtype_size((rondo_dtype_t)dt);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      size_t count = counts[c], n = count * es, total = n * (size_t)p;
      mt_where("alltoall dtype=%s count=%zu", mt_dtype_str((rondo_dtype_t)dt), count);
      unsigned char *send = out_buf(total, es), *input = mt_alloc(total);
      unsigned char *recv = out_buf(total, es), *want = mt_alloc(total);
      for (int j = 0; j < p; j++) { /* block j: from me to j; from j to me */
        mt_fill_pattern(input + (size_t)j * n, n,
                        stream_of(4, (rondo_dtype_t)dt, mt.rank, j, count));
        mt_fill_pattern(want + (size_t)j * n, n,
                        stream_of(4, (rondo_dtype_t)dt, j, mt.rank, count));
      }
      memcpy(send, input, total);
      rondo_status_t st = rondo_alltoall(comm, send, recv, count, (rondo_dtype_t)dt);
      if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
        mt_check_elems("received blocks", (rondo_dtype_t)dt, recv, want, count * (size_t)p);
        mt_check_poison("bytes past the end of recvbuf", recv + total, MT_GUARD * es);
        mt_check_elems("sendbuf after the call", (rondo_dtype_t)dt, send, input, count * (size_t)p);
        mt_check_poison("bytes past the end of sendbuf", send + total, MT_GUARD * es);
      }
      if (count == 0) {
        mt_where("alltoall dtype=%s count=0 NULL buffers", mt_dtype_str((rondo_dtype_t)dt));
        MT_EQ_STATUS(rondo_alltoall(comm, NULL, NULL, 0, (rondo_dtype_t)dt), RONDO_SUCCESS);
      }
      free(send);
      free(input);
      free(recv);
      free(want);
    }
  }
}

/* A barrier returns only after every rank entered it: a late rank records
 * when it enters, the others when they leave. CLOCK_MONOTONIC is one clock
 * for all processes of a host, so this part runs only when every rank shares
 * one node, or on emulated hosts of one kernel (tests/mpi/launch sets
 * MPITEST_SHARED_CLOCK there). */
static void test_barrier(rondo_comm_t comm)
{
  mt_where("barrier");
  for (int i = 0; i < 3; i++)
    MT_EQ_STATUS(rondo_barrier(comm), RONDO_SUCCESS);

  MPI_Comm node;
  int node_size;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  if (mt.size < 2 || (node_size != mt.size && getenv("MPITEST_SHARED_CLOCK") == NULL))
    return;

  int late_ranks[2] = {mt.size - 1, 0};
  for (int k = 0; k < 2; k++) {
    int late = late_ranks[k];
    mt_where("barrier with rank %d entering 200 ms late", late);
    double entered = 0;
    if (mt.rank == late) {
      struct timespec ts = {0, 200 * 1000 * 1000};
      nanosleep(&ts, NULL);
      entered = mt_now();
    }
    rondo_status_t st = rondo_barrier(comm);
    double left = mt_now();
    MT_EQ_STATUS(st, RONDO_SUCCESS);
    MPI_Bcast(&entered, 1, MPI_DOUBLE, late, MPI_COMM_WORLD);
    MT_CHECK(left >= entered, "left the barrier %.6f s before rank %d entered it", entered - left,
             late);
  }
}

int main(int argc, char **argv)
{
  rondo_comm_t comm;
  int start = mt_exact_start(&argc, &argv, "test_collectives", &comm);
  if (start != -1)
    return start;
  test_broadcast(comm);
  test_allgather(comm);
  test_allgatherv(comm);
  test_reduce_scatter(comm);
  test_alltoall(comm);
  test_barrier(comm);
  int rc = mt_finish();
  rondo_finalize();
  return rc;
}
