/*
 * The all-reduce cost model, the eligibility rules, the choice and its
 * explanation.
 *
 * Model. Notation: n bytes, p ranks, p' the largest power of two <= p, N
 * nodes, L ranks on the fullest node. A point-to-point algorithm runs at the
 * intra level on one node and at the inter level otherwise (a ring or a
 * butterfly spanning nodes is paced by its slowest link). alpha(m) is the
 * level's alpha for a message of m bytes (rndv_alpha above eager_limit).
 *
 *   recursive doubling  steps lg p' (+2 folding when p != p'), each a
 *                       message of n: alpha(n) * steps + beta * n * steps
 *                       + gamma * n * (lg p' (+1)) + copy
 *   Rabenseifner        halving and doubling at n/2, n/4, .., n/p' (+2 fold
 *                       messages of n): sum of alpha(message) + beta *
 *                       (2n (p'-1)/p' (+2n)) + gamma * (n (p'-1)/p' (+n)) + copy
 *   ring                2 (p-1) steps of chunks of c = min(n/p, ring_chunk):
 *                       alpha(c) * steps + max(M, R) + min(M, R) * c / (n/p),
 *                       M = beta * 2n (p-1)/p, R = gamma * n (p-1)/p
 *   mpi                 min(recursive doubling, Rabenseifner if eligible)
 *                       + mpi_alpha
 *   shm                 2 shm alphas (copied in, reduced) + shm beta * 2n
 *                       (copy in, copy out) + shm gamma * n (each rank reduces
 *                       n/L bytes of L inputs: it reads n)
 *   hierarchical        shm reduce-scatter (alpha + beta n + gamma n), the
 *                       cheaper of ring and recursive doubling on n/L bytes
 *                       among N ranks at the inter level (in place: no copy),
 *                       shm allgather (alpha + beta n)
 *   nccl                the ring formula at the point-to-point level (a
 *                       placeholder: it only competes on device memory, where
 *                       it is the only candidate)
 *   one rank            every algorithm is a copy, n * copy_beta, so the tie
 *                       goes to mpi (the lowest enum value)
 *
 * Two refinements of the plain model, both forced by the sweep below:
 *  - The ring's pipeline hides all but one chunk of the cheaper of moving and
 *    reducing, min(M, R) * c / (n/p); while a segment is one chunk (n <=
 *    p * ring_chunk) nothing overlaps and M and R add up. Charging the
 *    first chunk's min(n, 256K) (beta + gamma) / p on top of max(M, R)
 *    instead made the ring dearer than Rabenseifner at every size up to
 *    about 1.5 MiB on 2 ranks, against the measurements.
 *  - Recursive doubling and Rabenseifner copy sendbuf to recvbuf first
 *    (algo_copy_input; the ring's step 0 sends straight from sendbuf). On
 *    2 ranks Rabenseifner and the ring send and reduce the same bytes in the
 *    same 2 steps, and this copy is what separates them (64 KiB: 21.0 against
 *    15.4 us). The selector assumes out of place, the case measured.
 *
 * Defaults. The intra level and mpi_alpha are fitted to the 2-rank, one-node
 * sweep of docs/PERFORMANCE.md (float32 sum, MPICH 4.0.2 ch4:ucx, median of
 * 5 rounds). gamma and copy_beta are not fitted but read off reduce_bench in
 * the same file: float32 sum and memcpy both run at about 47-49 GB/s of
 * payload at 1 MiB, 0.02 ns/B. The eager limit is where recursive doubling's
 * time jumps (8 KiB messages eager, 16 KiB rendezvous; the ring and
 * Rabenseifner jump one size later, when their n/2 messages cross it, as
 * the model predicts). alpha, rndv_alpha, beta and mpi_alpha minimise the
 * squared log error over the 11 sizes below x 4 algorithms, subject to the
 * sweep's ranking with a 3% margin at every power of two from 4 B to 64 MiB
 * (recursive doubling best up to 8 KiB, ring from 16 KiB, mpi never). That
 * ranking caps rndv_alpha: with one gamma + copy for all sizes, recursive
 * doubling beating the ring at 8 KiB and losing at 32 KiB needs rndv_alpha
 * < 4 alpha, so the model underestimates the measured jump at 16 KiB.
 *
 * Predicted / measured, us (rab at 4 B is recursive doubling: count < p'):
 *      bytes   recursive_doubling   rabenseifner    ring            mpi
 *          4      0.31/0.38          -               0.62/0.56       0.67/0.68
 *         1K      0.55/0.41          0.85/0.72       0.83/0.82       0.91/0.98
 *         4K      1.28/0.94          1.55/1.09       1.46/1.15       1.64/1.49
 *         8K      2.24/1.67          2.47/1.92       2.31/1.89       2.60/2.38
 *        16K      4.61/6.61          4.32/3.29       4.00/3.36       4.68/4.20
 *        64K      16.2/18.7          16.3/21.0       15.0/15.4       16.6/23.3
 *       256K      62.6/59.8          60.7/58.3       55.5/39.9       61.1/69.9
 *         1M       248/139            238/142         212/118         239/179
 *         4M       991/919            949/773         829/729         950/1018
 *        16M      3960/7102          3793/5916       3295/4009       3793/6848
 *        64M     15838/22486        15168/21783     13160/15785     15168/45212
 * 27 of the 43 points are within 30%, 39 within 45%. The four beyond are
 * cache effects a linear model cannot follow: every algorithm is fast at
 * 1 MiB (+67% to +80%) and MPI_Allreduce falls off at 64 MiB (-66%). The
 * ranking is the sweep's at every size.
 *
 * The shm level is fitted by hand to a 2-rank sweep of allreduce_shm.c
 * (bench/allreduce_sweep -a ring,shm, RONDO_SHM_CHUNK_BYTES=256K, quiet
 * host): 4 B 0.25 us, 4 KiB 1.0, 16 KiB 3.5, 64 KiB 13, 256 KiB 23, 1 MiB
 * 87, 4 MiB 467, 16 MiB 2740, 64 MiB 12970. alpha = half the 4-byte time
 * (2 synchronizations), beta from the 64 MiB slope with gamma the reduction
 * kernel's; it predicts 4 KiB-64 KiB within 10% and over-predicts the
 * cache-resident 256 KiB-1 MiB by 2x, which still ranks shm first at every
 * size on one node, as measured. The inter level (5 us, 10 GB/s) is a typical
 * Ethernet/InfiniBand guess, to be measured on a real cluster.
 */
#include "select/select.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define US 1e-6
#define NS_PER_BYTE 1e-9
#define RING_CHUNK_DEFAULT ((size_t)256 * 1024)

const select_params_t select_default_params = {
    .shm = {.alpha = 0.12 * US, .beta = 0.087 * NS_PER_BYTE, .gamma = 0.02 * NS_PER_BYTE},
    .intra = {.alpha = 0.31 * US,
              .beta = 0.196 * NS_PER_BYTE,
              .gamma = 0.02 * NS_PER_BYTE,
              .eager_limit = 8192,
              .rndv_alpha = 0.74 * US},
    .inter = {.alpha = 5.0 * US, .beta = 0.1 * NS_PER_BYTE, .gamma = 0.02 * NS_PER_BYTE},
    .mpi_alpha = 0.36 * US,
    .copy_beta = 0.02 * NS_PER_BYTE,
    .ring_chunk = RING_CHUNK_DEFAULT,
};

/* ---- the model ---------------------------------------------------------- */

static int pof2_floor(int p)
{
  int q = 1;
  while (q <= p / 2)
    q *= 2;
  return q;
}

static int log2_int(int pof2)
{
  int lg = 0;
  while ((1 << lg) < pof2)
    lg++;
  return lg;
}

static double msg_alpha(const select_level_t *lv, double bytes)
{
  if (lv->eager_limit > 0 && bytes > (double)lv->eager_limit)
    return lv->rndv_alpha;
  return lv->alpha;
}

static double min2(double a, double b) { return a < b ? a : b; }
static double max2(double a, double b) { return a > b ? a : b; }

/* copy: seconds per byte of the input copy (0 when the data is in place). */
static double rd_time(const select_level_t *lv, double n, int p, double copy)
{
  int pof2 = pof2_floor(p), lg = log2_int(pof2);
  int fold = p != pof2;
  double steps = lg + (fold ? 2 : 0);
  return copy * n + steps * msg_alpha(lv, n) + lv->beta * n * steps +
         lv->gamma * n * (lg + fold);
}

static double rab_time(const select_level_t *lv, double n, int p, double copy)
{
  int pof2 = pof2_floor(p);
  int fold = p != pof2;
  double t = copy * n;
  for (int part = 2; part <= pof2; part *= 2)
    t += 2 * msg_alpha(lv, n / part); /* one halving and one doubling step */
  if (fold)
    t += 2 * msg_alpha(lv, n);
  double share = (double)(pof2 - 1) / pof2;
  return t + lv->beta * (2 * n * share + (fold ? 2 * n : 0)) +
         lv->gamma * (n * share + (fold ? n : 0));
}

static double ring_time(const select_level_t *lv, double n, int p, size_t chunk_bytes)
{
  double chunk = (double)(chunk_bytes ? chunk_bytes : RING_CHUNK_DEFAULT);
  double seg = n / p, msg = min2(seg, chunk);
  double moved = lv->beta * 2 * n * (p - 1) / p;
  double reduced = lv->gamma * n * (p - 1) / p;
  double exposed = min2(moved, reduced);
  if (seg > chunk)
    exposed *= chunk / seg;
  return 2.0 * (p - 1) * msg_alpha(lv, msg) + max2(moved, reduced) + exposed;
}

static double shm_time(const select_level_t *sh, double n)
{
  return 2 * sh->alpha + 2 * n * sh->beta + n * sh->gamma;
}

static double hier_time(const select_params_t *prm, double n, int nodes, int local)
{
  const select_level_t *sh = &prm->shm;
  double slice = n / local;
  double reduce_scatter = sh->alpha + sh->beta * n + sh->gamma * n;
  double across = min2(ring_time(&prm->inter, slice, nodes, prm->ring_chunk),
                       rd_time(&prm->inter, slice, nodes, 0));
  double allgather = sh->alpha + sh->beta * n;
  return reduce_scatter + across + allgather;
}

/* ---- eligibility ------------------------------------------------------------ */

static select_input_t normalized(const select_input_t *in)
{
  select_input_t s = *in;
  if (s.ranks < 1)
    s.ranks = 1;
  if (s.nodes < 1)
    s.nodes = 1;
  if (s.max_local < 1)
    s.max_local = 1;
  if (s.min_local < 1)
    s.min_local = 1;
  return s;
}

static const char *why_not(const select_input_t *in, rondo_algo_t algo)
{
  if (!(in->available & (1u << algo)))
    return "not available on this comm";
  if (in->mem == SELECT_MEM_DEVICE && algo != RONDO_ALGO_NCCL)
    return "host algorithm: buffer is device memory";
  if (in->mem != SELECT_MEM_DEVICE && algo == RONDO_ALGO_NCCL)
    return "needs device memory";
  switch (algo) {
  case RONDO_ALGO_RABENSEIFNER:
    if (in->count < (size_t)pof2_floor(in->ranks))
      return "count < largest power of two <= ranks";
    break;
  case RONDO_ALGO_SHM:
    if (in->nodes != 1)
      return "ranks span more than one node";
    break;
  case RONDO_ALGO_HIERARCHICAL:
    if (in->nodes < 2)
      return "one node: use shm";
    break;
  default:
    break;
  }
  return NULL;
}

static double predict_one(const select_params_t *prm, const select_input_t *in,
                          rondo_algo_t algo)
{
  double n = (double)in->bytes;
  int p = in->ranks;
  const select_level_t *lv = in->nodes > 1 ? &prm->inter : &prm->intra;

  if (p == 1)
    return n * prm->copy_beta;
  switch (algo) {
  case RONDO_ALGO_MPI: {
    double t = rd_time(lv, n, p, prm->copy_beta);
    if (in->count >= (size_t)pof2_floor(p))
      t = min2(t, rab_time(lv, n, p, prm->copy_beta));
    return t + prm->mpi_alpha;
  }
  case RONDO_ALGO_RING:
  case RONDO_ALGO_NCCL:
    return ring_time(lv, n, p, prm->ring_chunk);
  case RONDO_ALGO_RECURSIVE_DOUBLING:
    return rd_time(lv, n, p, prm->copy_beta);
  case RONDO_ALGO_RABENSEIFNER:
    return rab_time(lv, n, p, prm->copy_beta);
  case RONDO_ALGO_SHM:
    return shm_time(&prm->shm, n);
  case RONDO_ALGO_HIERARCHICAL:
    return hier_time(prm, n, in->nodes, in->max_local);
  default:
    return 0;
  }
}

void select_predict(const select_params_t *params, const select_input_t *in,
                    select_candidate_t cand[RONDO_ALGO_COUNT])
{
  select_input_t s = normalized(in);
  cand[RONDO_ALGO_AUTO] = (select_candidate_t){0, "not an algorithm"};
  for (int a = RONDO_ALGO_AUTO + 1; a < RONDO_ALGO_COUNT; a++) {
    cand[a].why_not = why_not(&s, (rondo_algo_t)a);
    cand[a].seconds = cand[a].why_not ? 0 : predict_one(params, &s, (rondo_algo_t)a);
  }
}

/* ---- the choice ------------------------------------------------------------- */

static rondo_algo_t cheapest(const select_candidate_t cand[RONDO_ALGO_COUNT])
{
  rondo_algo_t best = RONDO_ALGO_AUTO;
  for (int a = RONDO_ALGO_AUTO + 1; a < RONDO_ALGO_COUNT; a++) {
    if (cand[a].why_not)
      continue;
    if (best == RONDO_ALGO_AUTO || cand[a].seconds < cand[best].seconds)
      best = (rondo_algo_t)a;
  }
  return best;
}

/* "; skipped tuning file t line 2: shm not eligible" when the first
 * matching rule was skipped, else "". */
static void skipped_rule(const select_table_t *table, const select_input_t *in,
                         const select_candidate_t *cand, char *buf, size_t len)
{
  int line;
  rondo_algo_t first = select_table_lookup(table, in, &line);
  buf[0] = '\0';
  if (first != RONDO_ALGO_AUTO && cand[first].why_not)
    snprintf(buf, len, "; skipped tuning file %s line %d: %s not eligible",
             select_table_source(table), line, rondo_algo_name(first));
}

rondo_algo_t select_choose(const select_params_t *params, const select_table_t *table,
                           rondo_algo_t forced, const select_input_t *in,
                           select_result_t *out)
{
  memset(out, 0, sizeof *out);
  select_predict(params, in, out->cand);

  if (forced != RONDO_ALGO_AUTO) {
    if ((unsigned)forced >= RONDO_ALGO_COUNT) {
      out->choice = RONDO_ALGO_AUTO;
      snprintf(out->reason, sizeof out->reason, "invalid forced algorithm %d",
               (int)forced);
      return out->choice;
    }
    out->choice = forced;
    if (out->cand[forced].why_not)
      snprintf(out->reason, sizeof out->reason,
               "forced by RONDO_ALLREDUCE_ALGO; not eligible: %s",
               out->cand[forced].why_not);
    else
      snprintf(out->reason, sizeof out->reason, "forced by RONDO_ALLREDUCE_ALGO");
    return out->choice;
  }

  unsigned eligible = 0;
  for (int a = RONDO_ALGO_AUTO + 1; a < RONDO_ALGO_COUNT; a++)
    if (!out->cand[a].why_not)
      eligible |= 1u << a;
  char skipped[128];
  skipped_rule(table, in, out->cand, skipped, sizeof skipped);

  int line;
  rondo_algo_t rule = select_table_lookup_among(table, in, eligible, &line);
  if (rule != RONDO_ALGO_AUTO) {
    out->choice = rule;
    snprintf(out->reason, sizeof out->reason, "tuning file %s line %d%s",
             select_table_source(table), line, skipped);
    return out->choice;
  }
  out->choice = cheapest(out->cand);
  snprintf(out->reason, sizeof out->reason, "%s%s",
           out->choice == RONDO_ALGO_AUTO ? "no eligible algorithm"
                                          : "lowest predicted time",
           skipped);
  return out->choice;
}

/* ---- the explanation ---------------------------------------------------------- */

typedef struct {
  char *buf;
  size_t len;
  size_t used; /* what the whole text needs, even past len */
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...)
{
  size_t room = t->used < t->len ? t->len - t->used : 0;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(room ? t->buf + t->used : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0)
    t->used += (size_t)n;
}

static const char *plural(long long n, const char *one, const char *many)
{
  return n == 1 ? one : many;
}

static void put_input(text_t *t, const select_input_t *in)
{
  put(t, "allreduce %zu %s (%zu %s), %d %s on %d %s", in->bytes,
      plural((long long)in->bytes, "byte", "bytes"), in->count,
      plural((long long)in->count, "element", "elements"), in->ranks,
      plural(in->ranks, "rank", "ranks"), in->nodes, plural(in->nodes, "node", "nodes"));
  if (in->min_local == in->max_local)
    put(t, " (%d per node)", in->max_local);
  else
    put(t, " (%d-%d per node)", in->min_local, in->max_local);
  put(t, ", %s memory\n", in->mem == SELECT_MEM_DEVICE ? "device" : "host");
}

int select_explain(const select_result_t *res, const select_input_t *in, char *buf,
                   size_t len)
{
  text_t t = {buf, len, 0};
  if (len > 0)
    buf[0] = '\0';
  put_input(&t, in);
  put(&t, "  %-20s %12s    %s\n", "algorithm", "predicted", "note");
  for (int a = RONDO_ALGO_AUTO + 1; a < RONDO_ALGO_COUNT; a++) {
    const select_candidate_t *c = &res->cand[a];
    char when[32] = "-";
    if (!c->why_not)
      snprintf(when, sizeof when, "%.2f us", c->seconds / US);
    put(&t, "  %-20s %12s", rondo_algo_name((rondo_algo_t)a), when);
    if (a == (int)res->choice)
      put(&t, "    <- chosen (%s)\n", res->reason);
    else if (c->why_not)
      put(&t, "    %s\n", c->why_not);
    else
      put(&t, "\n");
  }
  put(&t, "choice: %s (%s)\n",
      res->choice == RONDO_ALGO_AUTO ? "none" : rondo_algo_name(res->choice),
      res->reason);
  return (int)t.used;
}
