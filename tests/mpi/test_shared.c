/*
 * test_shared: rondo_mem_alloc memory and the collectives that read it in
 * place (docs/api.md, "Shared memory").
 *
 * On one node a reduce-scatter or all-gather whose input lies in one
 * rondo_mem_alloc allocation on every rank reads the peers' inputs where
 * they lie (shm.c); the all-reduce takes such memory as any other. Checked against closed-form values (mpitest.h's
 * generators): every dtype kind the kernels treat apart, SUM, MAX and AVG,
 * counts from 1 to past a shm slot, out of place, in place at this rank's
 * block and at the start, uneven blocks with an empty one, AUTO and shm
 * forced, each call twice (a comm's first shm call agrees before it runs,
 * the later ones in their round: only those read in place). Then what must
 * fail: input in the memory on some ranks only (every rank gets
 * RONDO_ERR_MISMATCH on one node), freeing what is not an allocation, a
 * NULL output pointer, and allocations of different sizes, of 0 bytes,
 * reused slots and a comm destroyed with its memory still allocated. On
 * virtual nodes (several nodes) the memory is plain memory to the calls.
 */
#include "mpitest.h"

static int p, nodes;

/* Counts of the cases: 1, odd, and past a shm slot of 64 KiB floats. */
static const size_t counts[] = {1, 7, 1000, 40000};
static const rondo_dtype_t dtypes[] = {RONDO_FLOAT32, RONDO_INT32, RONDO_FLOAT64,
                                       RONDO_BFLOAT16};
static const rondo_op_t ops[] = {RONDO_SUM, RONDO_MAX, RONDO_AVG};

/* The largest input: p blocks of the largest count of 8-byte elements. */
static size_t max_bytes(void) { return (size_t)p * 40000 * 8 + 64; }

enum { OUT_OF_PLACE, AT_BLOCK, AT_START, FORMS };
static const char *const form_names[] = {"out of place", "in place at the block",
                                         "in place at the start"};

/* Reduce-scatter of count per rank, input in send (shared memory). */
static void reduce_scatter_case(rondo_comm_t comm, char *send, char *recv, rondo_dtype_t dt,
                                rondo_op_t op, size_t count, int form, rondo_algo_t algo)
{
  size_t es = mt_dtype_size(dt);
  char *want = mt_alloc(count * es);
  for (int call = 0; call < 2; call++) {
    mt.salt++;
    mt_where("reduce-scatter %s %s %zu %s, %s, call %d", mt_dtype_str(dt), mt_op_str(op), count,
             form_names[form], mt_algo_str(algo), call);
    mt_fill_input(dt, op, 0, (size_t)p * count, send);
    mt_fill_reduced(dt, op, (size_t)mt.rank * count, count, want);
    char *out = form == OUT_OF_PLACE ? recv
                : form == AT_BLOCK   ? send + (size_t)mt.rank * count * es
                                     : send;
    if (form == OUT_OF_PLACE)
      memset(out, MT_POISON, count * es + MT_GUARD);
    rondo_status_t st = rondo_reduce_scatter_algo(comm, send, out, count, dt, op, algo);
    if (!MT_EQ_STATUS(st, RONDO_SUCCESS))
      break;
    mt_check_elems("this rank's block", dt, out, want, count);
    if (form == OUT_OF_PLACE)
      mt_check_poison("after the block", out + count * es, MT_GUARD);
  }
  free(want);
}

/* All-gather of count per rank, this rank's block in send (shared). */
static void allgather_case(rondo_comm_t comm, char *send, char *recv, rondo_dtype_t dt,
                           size_t count, int in_place, rondo_algo_t algo)
{
  size_t es = mt_dtype_size(dt), all = (size_t)p * count;
  char *want = mt_alloc(all * es);
  for (int call = 0; call < 2; call++) {
    mt.salt++;
    mt_where("allgather %s %zu %s, %s, call %d", mt_dtype_str(dt), count,
             in_place ? "in place" : "out of place", mt_algo_str(algo), call);
    /* every rank's block is its input for elements at its block: the
     * generator's value of (rank, index), built for each rank here */
    int me = mt.rank;
    for (int r = 0; r < p; r++) {
      mt.rank = r;
      mt_fill_input(dt, RONDO_SUM, (size_t)r * count, count, want + (size_t)r * count * es);
    }
    mt.rank = me;
    char *out = in_place ? send : recv;
    char *mine = out + (size_t)me * count * es;
    if (!in_place)
      memset(out, MT_POISON, all * es + MT_GUARD);
    memcpy(in_place ? mine : send, want + (size_t)me * count * es, count * es);
    rondo_status_t st = rondo_allgather_algo(comm, in_place ? mine : send, out, count, dt, algo);
    if (!MT_EQ_STATUS(st, RONDO_SUCCESS))
      break;
    mt_check_elems("every block", dt, out, want, all);
    if (!in_place)
      mt_check_poison("after the blocks", out + all * es, MT_GUARD);
    mt_hash_record(out, all * es);
  }
  free(want);
}

/* All-reduce of count elements in send (shared), in place (reads the
 * peers' buffers on one node) or into recv. */
static void allreduce_case(rondo_comm_t comm, char *send, char *recv, rondo_dtype_t dt,
                           rondo_op_t op, size_t count, int in_place, rondo_algo_t algo)
{
  size_t es = mt_dtype_size(dt);
  char *want = mt_alloc(count * es);
  for (int call = 0; call < 2; call++) {
    mt.salt++;
    mt_where("allreduce %s %s %zu %s, %s, call %d", mt_dtype_str(dt), mt_op_str(op), count,
             in_place ? "in place" : "out of place", mt_algo_str(algo), call);
    mt_fill_input(dt, op, 0, count, send);
    mt_fill_reduced(dt, op, 0, count, want);
    char *out = in_place ? send : recv;
    if (!in_place)
      memset(out, MT_POISON, count * es + MT_GUARD);
    rondo_status_t st = rondo_allreduce_algo(comm, send, out, count, dt, op, algo);
    if (!MT_EQ_STATUS(st, RONDO_SUCCESS))
      break;
    mt_check_elems("the reduction", dt, out, want, count);
    if (!in_place)
      mt_check_poison("after it", out + count * es, MT_GUARD);
    mt_hash_record(out, count * es);
  }
  free(want);
}

/* Uneven blocks, rank 1's empty: rondo_reduce_scatterv on shared input. */
static void reduce_scatterv_case(rondo_comm_t comm, char *send, char *recv)
{
  size_t *rc = mt_alloc((size_t)p * sizeof *rc), total = 0, at = 0;
  for (int r = 0; r < p; r++) {
    rc[r] = r == 1 ? 0 : 300 + 17 * (size_t)r;
    if (r < mt.rank)
      at += rc[r];
    total += rc[r];
  }
  float *want = mt_alloc((rc[mt.rank] + 1) * sizeof *want);
  for (int call = 0; call < 2; call++) {
    mt.salt++;
    mt_where("reduce_scatterv float32 sum, call %d", call);
    mt_fill_input(RONDO_FLOAT32, RONDO_SUM, 0, total, send);
    mt_fill_reduced(RONDO_FLOAT32, RONDO_SUM, at, rc[mt.rank], want);
    memset(recv, MT_POISON, rc[mt.rank] * 4 + MT_GUARD);
    rondo_status_t st = rondo_reduce_scatterv(comm, send, recv, rc, RONDO_FLOAT32, RONDO_SUM);
    if (!MT_EQ_STATUS(st, RONDO_SUCCESS))
      break;
    mt_check_elems("this rank's block", RONDO_FLOAT32, recv, want, rc[mt.rank]);
    mt_check_poison("after the block", recv + rc[mt.rank] * 4, MT_GUARD);
  }
  free(want);
  free(rc);
}

static void results(rondo_comm_t comm, char *send, char *recv)
{
  rondo_algo_t algos[] = {RONDO_ALGO_AUTO, RONDO_ALGO_SHM};
  int nalgos = nodes == 1 ? 2 : 1; /* shm needs one node */
  for (int a = 0; a < nalgos; a++)
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
      for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        /* oversubscribed runs keep the largest count to one dtype */
        if (mt.crowded && c == 3 && d > 0)
          continue;
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
          for (int form = 0; form < FORMS; form++)
            if (form == OUT_OF_PLACE || o == 0)
              reduce_scatter_case(comm, send, recv, dtypes[d], ops[o], counts[c], form,
                                  algos[a]);
        allgather_case(comm, send, recv, dtypes[d], counts[c], 0, algos[a]);
        allgather_case(comm, send, recv, dtypes[d], counts[c], 1, algos[a]);
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
          allreduce_case(comm, send, recv, dtypes[d], ops[o], (size_t)p * counts[c], 1,
                         algos[a]);
        allreduce_case(comm, send, recv, dtypes[d], RONDO_SUM, (size_t)p * counts[c], 0,
                       algos[a]);
      }
  reduce_scatterv_case(comm, send, recv);
  mt_hash_flush();
}

/* Input in the memory on rank 0 only: a call that would read in place
 * (shm, 2 KiB or more) fails on every rank with the field named; another
 * member, or several nodes, run it (the memory is plain there). */
static void mixed_use(rondo_comm_t comm, char *send, char *recv)
{
  if (p < 2)
    return;
  mt_where("input in rondo_mem_alloc memory on rank 0 only");
  size_t count = 1024;
  char *own = mt_alloc((size_t)p * count * 4);
  char *in = mt.rank == 0 ? send : own;
  float *want = mt_alloc(count * sizeof *want);
  for (int call = 0; call < 2; call++) {
    mt.salt++;
    mt_fill_input(RONDO_FLOAT32, RONDO_SUM, 0, (size_t)p * count, in);
    mt_fill_reduced(RONDO_FLOAT32, RONDO_SUM, (size_t)mt.rank * count, count, want);
    rondo_status_t st = rondo_reduce_scatter(comm, in, recv, count, RONDO_FLOAT32, RONDO_SUM);
    if (nodes == 1) {
      MT_EQ_STATUS(st, RONDO_ERR_MISMATCH);
      MT_CHECK(strstr(rondo_last_error(), "rondo_mem_alloc") != NULL,
               "the message names the memory: %s", rondo_last_error());
    } else if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
      mt_check_elems("this rank's block", RONDO_FLOAT32, recv, want, count);
    }
    st = rondo_allgather(comm, in, recv, count, RONDO_FLOAT32);
    MT_EQ_STATUS(st, nodes == 1 ? RONDO_ERR_MISMATCH : RONDO_SUCCESS);
    /* the all-reduce reads nothing in place: nothing to agree on */
    st = rondo_allreduce(comm, in, in, count, RONDO_FLOAT32, RONDO_SUM);
    MT_EQ_STATUS(st, RONDO_SUCCESS);
    /* the ring reads nothing in place: nothing to agree on */
    mt_fill_input(RONDO_FLOAT32, RONDO_SUM, 0, (size_t)p * count, in);
    st = rondo_reduce_scatter_algo(comm, in, recv, count, RONDO_FLOAT32, RONDO_SUM,
                                   RONDO_ALGO_RING);
    if (MT_EQ_STATUS(st, RONDO_SUCCESS))
      mt_check_elems("the ring's block", RONDO_FLOAT32, recv, want, count);
  }
  /* the comm goes on as before */
  mt_fill_input(RONDO_FLOAT32, RONDO_SUM, 0, (size_t)p * count, send);
  mt_fill_reduced(RONDO_FLOAT32, RONDO_SUM, (size_t)mt.rank * count, count, want);
  if (MT_EQ_STATUS(rondo_reduce_scatter(comm, send, recv, count, RONDO_FLOAT32, RONDO_SUM),
                   RONDO_SUCCESS))
    mt_check_elems("the next call", RONDO_FLOAT32, recv, want, count);
  free(want);
  free(own);
}

/* The calls' own errors, each on every rank. */
static void refusals(rondo_comm_t comm, char *send)
{
  mt_where("rondo_mem_free of what is not an allocation's start, on rank 0");
  rondo_status_t st = rondo_mem_free(comm, mt.rank == 0 ? send + 64 : send);
  MT_EQ_STATUS(st, mt.rank == 0 ? RONDO_ERR_INVALID_ARG : RONDO_ERR_PEER);
  mt_where("rondo_mem_alloc with a NULL output pointer on the last rank");
  void *q = (void *)1;
  st = rondo_mem_alloc(comm, 100, mt.rank == p - 1 ? NULL : &q);
  MT_EQ_STATUS(st, mt.rank == p - 1 ? RONDO_ERR_INVALID_ARG : RONDO_ERR_PEER);
  if (mt.rank != p - 1)
    MT_CHECK(q == NULL, "a failed allocation leaves *ptr NULL");
  mt_where("rondo_mem_alloc on a NULL comm");
  MT_EQ_STATUS(rondo_mem_alloc(NULL, 100, &q), RONDO_ERR_INVALID_COMM);
  mt_where("rondo_mem_free of a pointer never allocated, on every rank");
  int x;
  MT_EQ_STATUS(rondo_mem_free(comm, &x), RONDO_ERR_INVALID_ARG);
  mt_where("rondo_mem_free of NULL on every rank");
  MT_EQ_STATUS(rondo_mem_free(comm, NULL), RONDO_SUCCESS);
  if (p > 1) {
    mt_where("rondo_mem_free of NULL on rank 0 only");
    MT_EQ_STATUS(rondo_mem_free(comm, mt.rank == 0 ? NULL : send), RONDO_ERR_MISMATCH);
  }
}

/* Sizes that differ by rank (0 on rank 0), slots freed and reused, a comm
 * destroyed with memory left. */
static void lifetimes(rondo_comm_t comm)
{
  mt_where("allocations of different sizes");
  void *a = NULL, *b = NULL, *c = NULL;
  MT_EQ_STATUS(rondo_mem_alloc(comm, mt.rank == 0 ? 0 : 1000 * (size_t)mt.rank, &a),
               RONDO_SUCCESS);
  MT_CHECK(a != NULL && (uintptr_t)a % 64 == 0, "a 64-byte aligned start");
  if (mt.rank > 0 && a != NULL)
    memset(a, 0x5a, 1000 * (size_t)mt.rank); /* its own part is writable, all of it */
  MT_EQ_STATUS(rondo_mem_alloc(comm, 4096, &b), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_mem_free(comm, a), RONDO_SUCCESS);
  mt_where("an allocation in a freed slot, then used");
  enum { K = 1024 }; /* 4 KiB a block: read in place */
  MT_EQ_STATUS(rondo_mem_alloc(comm, (size_t)p * K * 4, &c), RONDO_SUCCESS);
  if (c != NULL) {
    float *recv = mt_alloc((size_t)p * K * 4), *want = mt_alloc(K * 4);
    for (int call = 0; call < 2; call++) {
      mt.salt++;
      mt_fill_input(RONDO_FLOAT32, RONDO_SUM, 0, (size_t)p * K, c);
      mt_fill_reduced(RONDO_FLOAT32, RONDO_SUM, (size_t)mt.rank * K, K, want);
      if (MT_EQ_STATUS(rondo_reduce_scatter(comm, c, recv, K, RONDO_FLOAT32, RONDO_SUM),
                       RONDO_SUCCESS))
        mt_check_elems("this rank's block", RONDO_FLOAT32, recv, want, K);
    }
    free(recv);
    free(want);
  }
  MT_EQ_STATUS(rondo_mem_free(comm, c), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_mem_free(comm, b), RONDO_SUCCESS);

  mt_where("a comm destroyed with its memory allocated");
  rondo_comm_t sub = NULL;
  MT_EQ_STATUS(rondo_comm_split(comm, 0, mt.rank, &sub), RONDO_SUCCESS);
  void *left = NULL;
  MT_EQ_STATUS(rondo_mem_alloc(sub, 1 << 20, &left), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_comm_destroy(&sub), RONDO_SUCCESS);
}

int main(int argc, char **argv)
{
  rondo_comm_t comm;
  int start = mt_exact_start(&argc, &argv, "test_shared", &comm);
  if (start != -1)
    return start;
  p = mt.size;
  nodes = MT_QUERY(rondo_comm_node_count, comm);
  void *send = NULL, *recv = NULL;
  mt_where("rondo_mem_alloc");
  if (MT_EQ_STATUS(rondo_mem_alloc(comm, max_bytes(), &send), RONDO_SUCCESS) &&
      MT_EQ_STATUS(rondo_mem_alloc(comm, max_bytes(), &recv), RONDO_SUCCESS)) {
    results(comm, send, recv);
    mixed_use(comm, send, recv);
    refusals(comm, send);
  }
  lifetimes(comm);
  if (send != NULL)
    MT_EQ_STATUS(rondo_mem_free(comm, send), RONDO_SUCCESS);
  if (recv != NULL)
    MT_EQ_STATUS(rondo_mem_free(comm, recv), RONDO_SUCCESS);
  int rc = mt_finish();
  rondo_finalize();
  return rc;
}
