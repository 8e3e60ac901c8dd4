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
 *
 * Then the butterfly's distances: for k = 0, 1, .. every leader below the
 * largest power of two swaps with the leader 2^k away (XOR), all pairs at
 * once, as recursive doubling's and Rabenseifner's steps do: a latency
 * (the median of DIST_LAT_STEPS 8-byte swaps) and, at a sixteenth of the
 * size the ring's growth reached (at least 16 KiB), a bandwidth (the faster
 * of two swaps, less the latency of a message of that size: the ring's
 * rendezvous latency above the eager limit): small, since on a dragonfly
 * the far pairs may get a hundredth of the link (CHANGELOG, 2026-11-29).
 * Last, the farthest pair swaps that size alone, the others waiting (on
 * two nodes the butterfly's one pair already was alone): where
 * the pairs share links (a backbone) one pair alone is faster, which
 * prices the steps in which few ranks send (select_step_time_uneven).
 * The ring's values price the ring, which its slowest link paces; these
 * price each butterfly step by its distance (select_step_time). Under one
 * switch of a tree near pairs are faster than the ring's slowest link,
 * which crosses the tree; on a dragonfly far pairs share a few links
 * between router groups.
 */
#include "topo/net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/numbers.h"
#include "topo/topo.h"

#define LAT_STEPS 15                    /* 8-byte steps timed for a latency */
#define BW_FIRST ((size_t)16 * 1024)    /* first bandwidth step */
#define BW_LAST ((size_t)4 * 1024 * 1024)
#define STEP_TARGET 0.5e-3              /* a step this long measures the rate */
#define NET_BUDGET 0.02                 /* stop growing after this many seconds */
#define INTRA_BYTES ((size_t)256 * 1024)
#define DIST_LAT_STEPS 7                /* 8-byte swaps timed per distance */

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
    MPI_Status st[2]; /* (GCC 12 takes MPICH's MPI_STATUSES_IGNORE for an empty array) */
    MPI_CHECK(MPI_Waitall(2, req, st));
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

static rondo_status_t wait_idle(const topo_t *topo, MPI_Request *req);

/* Seconds per byte from the time of a transfer of bytes and the latency
 * (at least a twentieth of the time moves: a link faster than the latency
 * can show). */
static double per_byte(double time, double alpha, size_t bytes)
{
  double moving = time - alpha;
  return (moving > time * 0.05 ? moving : time * 0.05) / (double)bytes;
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

/* The median of steps (at most LAT_STEPS) 8-byte steps, after one untimed
 * step (which also opens the connection). */
static rondo_status_t latency(const topo_t *topo, MPI_Comm c, int right, int left, int steps,
                              double *alpha)
{
  char s[8] = {0}, r[8];
  double t[LAT_STEPS];
  RONDO_CHECK(ring_step(topo, c, right, left, s, r, sizeof s, &t[0]));
  for (int i = 0; i < steps; i++)
    RONDO_CHECK(ring_step(topo, c, right, left, s, r, sizeof s, &t[i]));
  qsort(t, (size_t)steps, sizeof *t, by_value);
  *alpha = t[steps / 2];
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
                                char *sbuf, char *rbuf, double alpha, double *beta,
                                double *rndv_alpha, size_t *reached)
{
  double start = MPI_Wtime(), agreed[2], first = 0, warm;
  size_t bytes = BW_FIRST;
  /* one untimed step of the first size: a library may open what its
   * rendezvous protocol needs at the first large message (UCX's lanes) */
  RONDO_CHECK(ring_step(topo, c, right, left, sbuf, rbuf, bytes, &warm));
  for (;;) {
    /* the fastest of 2 steps, of 4 at the first size, whose latency
     * beyond its bytes is the rendezvous step's (rndv_alpha below): one
     * descheduled step there would price every larger message */
    double t, mine[2] = {0, 0};
    for (int i = 0; i < (bytes == BW_FIRST ? 4 : 2); i++) {
      RONDO_CHECK(ring_step(topo, c, right, left, sbuf, rbuf, bytes, &t));
      mine[0] = i == 0 || t < mine[0] ? t : mine[0];
    }
    mine[1] = MPI_Wtime() - start;
    MPI_CHECK(MPI_Allreduce(mine, agreed, 2, MPI_DOUBLE, MPI_MAX, c));
    if (bytes == BW_FIRST)
      first = agreed[0];
    if (agreed[0] >= STEP_TARGET || bytes >= BW_LAST || agreed[1] > NET_BUDGET)
      break;
    bytes *= 2;
  }
  double t[3];
  for (int i = 0; i < 3; i++)
    RONDO_CHECK(slowest_step(topo, c, right, left, sbuf, rbuf, bytes, &t[i]));
  qsort(t, 3, sizeof *t, by_value);
  /* the median: one step that rode a burst or was descheduled does not
   * count */
  *beta = per_byte(t[1], alpha, bytes);
  *reached = bytes;
  /* The first step's latency beyond its bytes (BW_FIRST is above
   * NET_EAGER_BYTES) */
  double rndv = first - *beta * (double)BW_FIRST;
  *rndv_alpha = rndv > alpha ? rndv : alpha;
  return RONDO_SUCCESS;
}

/* Seconds per byte of a swap of bytes with peer on c: the faster of two,
 * less lat, the latency of a message of that size (alpha, plus rndv_extra
 * above NET_EAGER_BYTES). */
static rondo_status_t swap_beta(const topo_t *topo, MPI_Comm c, int peer, char *sbuf, char *rbuf,
                                size_t bytes, double alpha, double rndv_extra, double *beta)
{
  double t[2];
  for (int i = 0; i < 2; i++)
    RONDO_CHECK(ring_step(topo, c, peer, peer, sbuf, rbuf, bytes, &t[i]));
  double lat = alpha + (bytes > NET_EAGER_BYTES ? rndv_extra : 0);
  *beta = per_byte(t[0] < t[1] ? t[0] : t[1], lat, bytes);
  return RONDO_SUCCESS;
}

/* The butterfly's distances among the leaders on c (see the top of the
 * file): alpha[k] and beta[k] for k < lg p', this rank's view (the caller
 * takes the slowest); beta only when bytes > 0. Leaders at or above p'
 * take no part (their zeros lose to the others' values). */
static rondo_status_t butterfly(const topo_t *topo, MPI_Comm c, int rank, int pof2,
                                char *sbuf, char *rbuf, size_t bytes, double rndv_extra,
                                double *alpha, double *beta)
{
  if (rank >= pof2)
    return RONDO_SUCCESS;
  for (int k = 0; (1 << k) < pof2; k++) {
    int peer = rank ^ (1 << k);
    RONDO_CHECK(latency(topo, c, peer, peer, DIST_LAT_STEPS, &alpha[k]));
    if (bytes > 0)
      RONDO_CHECK(swap_beta(topo, c, peer, sbuf, rbuf, bytes, alpha[k], rndv_extra, &beta[k]));
  }
  return RONDO_SUCCESS;
}

/* A barrier of c, waited for asleep (wait_idle). */
static rondo_status_t idle_barrier(const topo_t *topo, MPI_Comm c)
{
  MPI_Request req;
  MPI_CHECK(MPI_Ibarrier(c, &req));
  return wait_idle(topo, &req);
}

/* Leader 0 and the leader pof2/2 away swap bytes alone, after the others
 * have finished the butterfly and while they sleep: lone_beta (0 on the
 * other leaders, whose zeros lose to it); alpha, that pair's latency. */
static rondo_status_t lone_pair(const topo_t *topo, MPI_Comm c, int rank, int pof2, char *sbuf,
                                char *rbuf, size_t bytes, double alpha, double rndv_extra,
                                double *lone_beta)
{
  RONDO_CHECK(idle_barrier(topo, c));
  if (rank == 0 || rank == pof2 / 2)
    RONDO_CHECK(swap_beta(topo, c, rank ^ (pof2 / 2), sbuf, rbuf, bytes, alpha, rndv_extra,
                          lone_beta));
  return idle_barrier(topo, c);
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
  RONDO_CHECK(latency(topo, topo->node, peer, peer, LAT_STEPS, alpha));
  double best = 0, t;
  for (int i = 0; i < 3; i++) {
    RONDO_CHECK(ring_step(topo, topo->node, peer, peer, sbuf, rbuf, INTRA_BYTES, &t));
    if (i == 0 || t < best)
      best = t;
  }
  *beta = per_byte(best, *alpha, INTRA_BYTES);
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

/* What the leaders agree on and hand to their ranks: the values of net_t
 * in this order, then the butterfly's alphas and betas. */
enum { V_ALPHA, V_RNDV_ALPHA, V_BETA, V_INTRA_ALPHA, V_INTRA_BETA, V_SECONDS, V_LONE_BETA,
       V_DIST_ALPHA,
       V_DIST_BETA = V_DIST_ALPHA + NET_DISTS, V_COUNT = V_DIST_BETA + NET_DISTS };

/* Among the node leaders (local rank 0): the ring's latency and bandwidth,
 * then the butterfly's, what the knobs leave open (want_*), into v, which
 * every leader then holds alike (the slowest values, the intra level's
 * included; a knob's value stands for every distance). */
static rondo_status_t measure_leaders(const topo_t *topo, const net_t *known, int want_alpha,
                                      int want_beta, char *sbuf, char *rbuf, double start,
                                      double *v)
{
  MPI_Comm lead = topo->cross[0]; /* local rank 0 owns slice 0 */
  int rank, size;
  MPI_CHECK(MPI_Comm_rank(lead, &rank));
  MPI_CHECK(MPI_Comm_size(lead, &size));
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double alpha = known->alpha, beta = known->beta, rndv_alpha = 0;
  size_t reached = 0;
  RONDO_CHECK(idle_barrier(topo, lead)); /* node 0's pair measures first; the others sleep */
  if (want_alpha) {
    RONDO_CHECK(latency(topo, lead, right, left, LAT_STEPS, &alpha));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &alpha, 1, MPI_DOUBLE, MPI_MAX, lead));
  }
  if (want_beta)
    RONDO_CHECK(bandwidth(topo, lead, right, left, sbuf, rbuf, alpha, &beta, &rndv_alpha,
                          &reached));
  int pof2 = rondo__pof2_floor(size), dists = 0;
  while ((1 << dists) < pof2 && dists < NET_DISTS)
    dists++;
  double da[NET_DISTS] = {0}, db[NET_DISTS] = {0};
  size_t each = reached / 16 > BW_FIRST ? reached / 16 : reached; /* see the top of the file */
  double rndv_extra = rndv_alpha > alpha ? rndv_alpha - alpha : 0;
  RONDO_CHECK(butterfly(topo, lead, rank, 1 << dists, sbuf, rbuf, each, rndv_extra, da, db));
  if (want_beta && dists > 1) /* (on 2 nodes the butterfly's one pair was alone) */
    RONDO_CHECK(lone_pair(topo, lead, rank, 1 << dists, sbuf, rbuf, each, da[dists - 1],
                          rndv_extra, &v[V_LONE_BETA]));
  else if (want_beta && dists == 1)
    v[V_LONE_BETA] = db[0];
  for (int k = 0; k < dists; k++) { /* what a knob set stays set */
    v[V_DIST_ALPHA + k] = want_alpha ? da[k] : alpha;
    v[V_DIST_BETA + k] = want_beta ? db[k] : beta;
  }
  v[V_ALPHA] = alpha;
  v[V_RNDV_ALPHA] = alpha + rndv_extra;
  v[V_BETA] = beta;
  v[V_SECONDS] = MPI_Wtime() - start;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, V_COUNT, MPI_DOUBLE, MPI_MAX, lead));
  return RONDO_SUCCESS;
}

rondo_status_t net_measure(MPI_Comm comm, const topo_t *topo, double latency_us, double gbits,
                           int calibrate, net_t *out)
{
  memset(out, 0, sizeof *out);
  out->alpha = out->rndv_alpha = NET_DEFAULT_ALPHA;
  out->beta = NET_DEFAULT_BETA;
  if (latency_us > 0) {
    out->alpha = out->rndv_alpha = latency_us * 1e-6;
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
    RONDO_CHECK_GOTO(measure_leaders(topo, out, want_alpha, want_beta, sbuf, rbuf, start, v),
                     st, done);
  }
  RONDO_CHECK_GOTO(node_bcast(topo, v, V_COUNT), st, done);
  out->alpha = v[V_ALPHA];
  out->rndv_alpha = v[V_RNDV_ALPHA];
  out->beta = v[V_BETA];
  if (want_alpha)
    out->alpha_src = NET_MEASURED;
  if (want_beta)
    out->beta_src = NET_MEASURED;
  out->intra_alpha = v[V_INTRA_ALPHA];
  out->intra_beta = v[V_INTRA_BETA];
  out->seconds = v[V_SECONDS];
  out->lone_beta = v[V_LONE_BETA];
  for (int k = 0; k < NET_DISTS && v[V_DIST_ALPHA + k] > 0; k++) {
    out->dist_alpha[k] = v[V_DIST_ALPHA + k];
    out->dist_beta[k] = v[V_DIST_BETA + k];
    out->dists = k + 1;
  }
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
  if (n >= 0 && (size_t)n < len && net->rndv_alpha > net->alpha * 1.05)
    n += snprintf(buf + n, len - (size_t)n, "; %.1f us above %d bytes", net->rndv_alpha * 1e6,
                  NET_EAGER_BYTES);
  if (n >= 0 && (size_t)n < len && net->intra_alpha > 0)
    n += snprintf(buf + n, len - (size_t)n, "; inside a node %.1f us, %.2f GB/s",
                  net->intra_alpha * 1e6, 1.0 / net->intra_beta / 1e9);
  if (n >= 0 && (size_t)n < len && net->dists > 0) {
    double a[2] = {net->dist_alpha[0], net->dist_alpha[0]};
    double b[2] = {net->dist_beta[0], net->dist_beta[0]};
    for (int k = 1; k < net->dists; k++) {
      a[0] = net->dist_alpha[k] < a[0] ? net->dist_alpha[k] : a[0];
      a[1] = net->dist_alpha[k] > a[1] ? net->dist_alpha[k] : a[1];
      b[0] = net->dist_beta[k] < b[0] ? net->dist_beta[k] : b[0];
      b[1] = net->dist_beta[k] > b[1] ? net->dist_beta[k] : b[1];
    }
    n += snprintf(buf + n, len - (size_t)n,
                  "; butterfly steps 1-%d nodes apart: latency %.1f-%.1f us, %.2f-%.2f Gbit/s",
                  1 << (net->dists - 1), a[0] * 1e6, a[1] * 1e6, 8.0 / b[1] / 1e9,
                  8.0 / b[0] / 1e9);
  }
  if (n >= 0 && (size_t)n < len && net->lone_beta > 0)
    n += snprintf(buf + n, len - (size_t)n, "; one pair alone %.2f Gbit/s",
                  8.0 / net->lone_beta / 1e9);
  if (n >= 0 && (size_t)n < len && net->seconds > 0)
    snprintf(buf + n, len - (size_t)n, "; measuring took %.1f ms", net->seconds * 1e3);
}
