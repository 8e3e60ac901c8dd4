/*
 * Measuring the network between nodes (net.h). Every exchange is a ring
 * step, a send to the next and a receive from the previous rank, which is
 * what the ring and the cross-node phase of the hierarchical all-reduce do;
 * on two nodes it is a plain swap. Timings are agreed on with MPI_MAX, so a
 * slow link paces the model as it paces the algorithms. The measuring
 * ranks' waits yield the core as the algorithms' do; the ranks that wait
 * for them sleep between polls, so that on an oversubscribed node the
 * measuring ones have the cores.
 *
 * Bandwidth: the transfer starts at 16 KiB and doubles until a step takes
 * STEP_TARGET (or reaches 4 MiB); then three more steps of that size are
 * timed and the median counts. The growing steps drain whatever burst
 * allowance the link grants (a switch buffer, a token bucket), so the last
 * ones see its sustained rate; beta = (time - alpha) / bytes.
 */
#include "topo/net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "topo/topo.h"

#define LAT_STEPS 15                    /* 8-byte steps timed for a latency */
#define BW_FIRST ((size_t)16 * 1024)    /* first bandwidth step */
#define BW_LAST ((size_t)4 * 1024 * 1024)
#define STEP_TARGET 0.5e-3              /* a step this long measures the rate */
#define NET_BUDGET 0.02                 /* stop growing after this many seconds */
#define INTRA_BYTES ((size_t)256 * 1024)

static int by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Waits for two requests as the comm's algorithms do (algo_waitall): in
 * MPI_Waitall, or, on an oversubscribed node, polling and yielding the core
 * (topo_backoff), since a rank spinning in MPI_Wait would keep the rank it
 * waits for off the core for a whole time slice. */
static rondo_status_t wait_two(const topo_t *topo, MPI_Request req[2])
{
  if (!topo->yield) {
    MPI_CHECK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    return RONDO_SUCCESS;
  }
  unsigned polls = 0;
  for (int i = 0; i < 2; i++) {
    int done = 0;
    for (;;) {
      MPI_CHECK(MPI_Test(&req[i], &done, MPI_STATUS_IGNORE));
      if (done)
        break;
      topo_backoff(topo, polls++);
    }
  }
  return RONDO_SUCCESS;
}

/* One ring step of bytes; its duration in *sec. */
static rondo_status_t ring_step(const topo_t *topo, MPI_Comm c, int right, int left,
                                const char *sbuf, char *rbuf, size_t bytes, double *sec)
{
  MPI_Request req[2];
  double t0 = MPI_Wtime();
  MPI_CHECK(MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, left, 0, c, &req[0]));
  MPI_CHECK(MPI_Isend(sbuf, (int)bytes, MPI_BYTE, right, 0, c, &req[1]));
  RONDO_CHECK(wait_two(topo, req));
  *sec = MPI_Wtime() - t0;
  return RONDO_SUCCESS;
}

/* The median of LAT_STEPS 8-byte steps, after one untimed step (which also
 * opens the connection). */
static rondo_status_t latency(const topo_t *topo, MPI_Comm c, int right, int left,
                              double *alpha)
{
  char s[8] = {0}, r[8];
  double t[LAT_STEPS];
  RONDO_CHECK(ring_step(topo, c, right, left, s, r, sizeof s, &t[0]));
  for (int i = 0; i < LAT_STEPS; i++)
    RONDO_CHECK(ring_step(topo, c, right, left, s, r, sizeof s, &t[i]));
  qsort(t, LAT_STEPS, sizeof *t, by_value);
  *alpha = t[LAT_STEPS / 2];
  return RONDO_SUCCESS;
}

/* A step timed by every rank of c, agreed with MPI_MAX. */
static rondo_status_t slowest_step(const topo_t *topo, MPI_Comm c, int right, int left,
                                   const char *sbuf, char *rbuf, size_t bytes, double *sec)
{
  double mine;
  RONDO_CHECK(ring_step(topo, c, right, left, sbuf, rbuf, bytes, &mine));
  MPI_CHECK(MPI_Allreduce(&mine, sec, 1, MPI_DOUBLE, MPI_MAX, c));
  return RONDO_SUCCESS;
}

/* Seconds per byte of the ring over c (see the top of the file); alpha is
 * the step latency already known. Each size is timed twice and the faster
 * counts, so one descheduled step (an oversubscribed node) does not stop
 * the growth early, inside a burst allowance. Collective over c. */
static rondo_status_t bandwidth(const topo_t *topo, MPI_Comm c, int right, int left,
                                char *sbuf, char *rbuf, double alpha, double *beta)
{
  double start = MPI_Wtime(), agreed[2];
  size_t bytes = BW_FIRST;
  for (;;) {
    double t[2], mine[2];
    for (int i = 0; i < 2; i++)
      RONDO_CHECK(ring_step(topo, c, right, left, sbuf, rbuf, bytes, &t[i]));
    mine[0] = t[0] < t[1] ? t[0] : t[1];
    mine[1] = MPI_Wtime() - start;
    MPI_CHECK(MPI_Allreduce(mine, agreed, 2, MPI_DOUBLE, MPI_MAX, c));
    if (agreed[0] >= STEP_TARGET || bytes >= BW_LAST || agreed[1] > NET_BUDGET)
      break;
    bytes *= 2;
  }
  double t[3];
  for (int i = 0; i < 3; i++)
    RONDO_CHECK(slowest_step(topo, c, right, left, sbuf, rbuf, bytes, &t[i]));
  qsort(t, 3, sizeof *t, by_value);
  double best = t[1]; /* the median: one step that rode a burst or was
                         descheduled does not count */
  double moving = best - alpha;
  if (moving < best * 0.05) /* a link faster than the latency can show */
    moving = best * 0.05;
  *beta = moving / (double)bytes;
  return RONDO_SUCCESS;
}

/* Local ranks 0 and 1 of node 0 swap 8 bytes and INTRA_BYTES: the
 * point-to-point level inside a node (nodes are taken to be alike, and one
 * pair measuring alone is not disturbed by the others). */
static rondo_status_t measure_intra(const topo_t *topo, char *sbuf, char *rbuf, double *alpha,
                                    double *beta)
{
  *alpha = *beta = 0;
  if (topo->node_id != 0 || topo->local_size < 2 || topo->local_rank > 1)
    return RONDO_SUCCESS;
  int peer = 1 - topo->local_rank;
  RONDO_CHECK(latency(topo, topo->node, peer, peer, alpha));
  double best = 0, t;
  for (int i = 0; i < 3; i++) {
    RONDO_CHECK(ring_step(topo, topo->node, peer, peer, sbuf, rbuf, INTRA_BYTES, &t));
    if (i == 0 || t < best)
      best = t;
  }
  double moving = best - *alpha;
  *beta = (moving > 0 ? moving : best * 0.05) / (double)INTRA_BYTES;
  return RONDO_SUCCESS;
}

/* Waits for req while others measure: in MPI_Wait where each rank has a
 * core; on an oversubscribed node sleeping between polls, 20 us at first
 * and twice as long each time up to 1 ms, so that the measuring ranks have
 * the cores to themselves (a waiting rank that woke every 20 us took them
 * back dozens of times per step). */
static rondo_status_t wait_idle(const topo_t *topo, MPI_Request *req)
{
  if (!topo->yield) {
    MPI_CHECK(MPI_Wait(req, MPI_STATUS_IGNORE));
    return RONDO_SUCCESS;
  }
  long nap_ns = 20000;
  for (;;) {
    int done = 0;
    MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (done)
      return RONDO_SUCCESS;
    struct timespec nap = {0, nap_ns};
    nanosleep(&nap, NULL);
    nap_ns = nap_ns < 500000 ? 2 * nap_ns : 1000000;
  }
}

/* The leaders' values to every rank of the node. */
static rondo_status_t node_bcast(const topo_t *topo, double *v, int n)
{
  MPI_Request req;
  MPI_CHECK(MPI_Ibcast(v, n, MPI_DOUBLE, 0, topo->node, &req));
  return wait_idle(topo, &req);
}

enum { V_ALPHA, V_BETA, V_INTRA_ALPHA, V_INTRA_BETA, V_SECONDS, V_COUNT };

rondo_status_t net_measure(MPI_Comm comm, const topo_t *topo, double latency_us, double gbits,
                           int calibrate, net_t *out)
{
  memset(out, 0, sizeof *out);
  out->alpha = NET_DEFAULT_ALPHA;
  out->beta = NET_DEFAULT_BETA;
  if (latency_us > 0) {
    out->alpha = latency_us * 1e-6;
    out->alpha_src = NET_KNOB;
  }
  if (gbits > 0) {
    out->beta = 8.0 / (gbits * 1e9);
    out->beta_src = NET_KNOB;
  }
  int want_alpha = out->alpha_src == NET_DEFAULT, want_beta = out->beta_src == NET_DEFAULT;
  if (topo->node_count < 2 || !calibrate || (!want_alpha && !want_beta))
    return RONDO_SUCCESS;

  /* Every rank allocates, so a failure is agreed before anyone measures. */
  double v[V_COUNT] = {0};
  size_t bytes = topo->local_rank == 0 ? BW_LAST : topo->local_rank == 1 ? INTRA_BYTES : 0;
  char *sbuf = bytes ? calloc(1, bytes) : NULL, *rbuf = bytes ? malloc(bytes) : NULL;
  rondo_status_t st =
      bytes == 0 || (sbuf != NULL && rbuf != NULL)
          ? RONDO_SUCCESS
          : rondo__fail(RONDO_ERR_NO_MEMORY, "network measurement: %zu-byte buffers", bytes);
  double start = MPI_Wtime();
  RONDO_CHECK_GOTO(rondo__agree_ready(comm, st, "memory for the network measurement"), st,
                   done);
  RONDO_CHECK_GOTO(measure_intra(topo, sbuf, rbuf, &v[V_INTRA_ALPHA], &v[V_INTRA_BETA]), st,
                   done);
  if (topo->local_rank == 0) {
    MPI_Comm lead = topo->cross[0]; /* local rank 0 owns slice 0 */
    int rank, size;
    MPI_CHECK_GOTO(MPI_Comm_rank(lead, &rank), st, done);
    MPI_CHECK_GOTO(MPI_Comm_size(lead, &size), st, done);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double alpha = out->alpha, beta = out->beta;
    MPI_Request req; /* node 0's pair measures first; the others sleep */
    MPI_CHECK_GOTO(MPI_Ibarrier(lead, &req), st, done);
    RONDO_CHECK_GOTO(wait_idle(topo, &req), st, done);
    if (want_alpha) {
      RONDO_CHECK_GOTO(latency(topo, lead, right, left, &alpha), st, done);
      MPI_CHECK_GOTO(MPI_Allreduce(MPI_IN_PLACE, &alpha, 1, MPI_DOUBLE, MPI_MAX, lead), st, done);
    }
    if (want_beta)
      RONDO_CHECK_GOTO(bandwidth(topo, lead, right, left, sbuf, rbuf, alpha, &beta), st, done);
    v[V_ALPHA] = alpha;
    v[V_BETA] = beta;
    v[V_SECONDS] = MPI_Wtime() - start;
    MPI_CHECK_GOTO(MPI_Allreduce(MPI_IN_PLACE, v, V_COUNT, MPI_DOUBLE, MPI_MAX, lead), st, done);
  }
  RONDO_CHECK_GOTO(node_bcast(topo, v, V_COUNT), st, done);
  out->alpha = v[V_ALPHA];
  out->beta = v[V_BETA];
  if (want_alpha)
    out->alpha_src = NET_MEASURED;
  if (want_beta)
    out->beta_src = NET_MEASURED;
  out->intra_alpha = v[V_INTRA_ALPHA];
  out->intra_beta = v[V_INTRA_BETA];
  out->seconds = v[V_SECONDS];
done:
  free(sbuf);
  free(rbuf);
  return st;
}

static const char *source_name(net_source_t s)
{
  return s == NET_MEASURED ? "measured" : s == NET_KNOB ? "set by knob" : "default guess";
}

void net_describe(const net_t *net, int nodes, char *buf, size_t len)
{
  if (nodes < 2) {
    snprintf(buf, len, "one node: no network between nodes");
    return;
  }
  int n = snprintf(buf, len, "network between nodes: latency %.1f us (%s), %.2f Gbit/s per "
                   "node link (%s)", net->alpha * 1e6, source_name(net->alpha_src),
                   8.0 / net->beta / 1e9, source_name(net->beta_src));
  if (n >= 0 && (size_t)n < len && net->intra_alpha > 0)
    n += snprintf(buf + n, len - (size_t)n, "; inside a node %.1f us, %.2f GB/s",
                  net->intra_alpha * 1e6, 1.0 / net->intra_beta / 1e9);
  if (n >= 0 && (size_t)n < len && net->seconds > 0)
    snprintf(buf + n, len - (size_t)n, "; measuring took %.1f ms", net->seconds * 1e3);
}
