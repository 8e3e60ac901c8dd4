/*
 * The all-reduce cost model's levels and fitted defaults, the choice among
 * the menu's candidates and its explanation.
 *
 * Model. Notation: n bytes, p ranks, p' the largest power of two <= p, N
 * nodes, L ranks on the fullest node. A ring runs at the intra level on one
 * node and at the inter level otherwise (it is paced by its slowest link,
 * which one stream crosses). A butterfly step (select_step_time) runs at the
 * intra level when no partner is on another node, else at the inter level
 * with the node's crossing ranks sharing its link: the inter level's beta is
 * per byte through one node's link; where the network was measured per
 * butterfly distance (params.dists), the alpha and beta of the nodes'
 * distance. alpha(m) is the level's alpha for a message of m bytes
 * (rndv_alpha above eager_limit). Across nodes every algorithm also pays
 * the argument check, an exchange of its packet (rondo's recursive doubling,
 * or MPI's all-reduce, + mpi_alpha, where MPI's is node-aware and rondo's
 * cannot send inline data from one rank a node: check_time;
 * algo_check_by_exchange chooses), except mpi for calls that ride in it and
 * Rabenseifner where its halving carries it.
 * Each algorithm's formula lives with its code (lib/algo/allreduce/allreduce_*.c);
 * for reference, all of them:
 *
 *   recursive doubling  steps at distance 1, 2, .., p'/2 (+2 folding steps
 *                       when p != p'), each a step of n
 *                       + gamma * n * (lg p' (+1)) + copy
 *   Rabenseifner        halving and doubling steps of n/2 at distance 1, n/4
 *                       at 2, .., n/p' at p'/2 (+2 fold steps of n)
 *                       + gamma * (n (p'-1)/p' (+n)) + copy; below p'
 *                       elements the first steps are uneven, messages of
 *                       up to min(count, p'/2^k) elements with the same
 *                       mean (select_step_time_uneven), gamma on those,
 *                       and the doubling in radix k: lg k of its steps in
 *                       one of k - 1 messages (algo_rab_radix)
 *   ring                2 (p-1) steps of chunks of c = min(n/p, ring_chunk):
 *                       alpha(c) * steps + max(M, R) + min(M, R) * c / (n/p),
 *                       M = beta * 2n (p-1)/p, R = gamma * n (p-1)/p; across
 *                       nodes, where a chunk takes over 1 ms on the link,
 *                       c = n/p (whole segments: algo_ring_chunk)
 *   mpi                 min(recursive doubling, Rabenseifner if eligible,
 *                       node-aware where MPI's is: select_mpi_node_aware)
 *                       + mpi_alpha; riding in the check, one of them on
 *                       n + the packet's header (no mpi_alpha in rondo's
 *                       own exchange)
 *   shm                 2 shm alphas (copied in, reduced) + shm beta * 2n
 *                       (copy in, copy out) + shm gamma * n (each rank reduces
 *                       n/L bytes of L inputs: it reads n)
 *   hierarchical        shm reduce-scatter (alpha + beta n + gamma n), the
 *                       cheaper of ring and recursive doubling on n/L bytes
 *                       among N ranks at the inter level with beta x L (the
 *                       node's L streams share its link), shm allgather
 *                       (alpha + beta n); above one stripe (hier_chunk) the
 *                       cores' and the link's work overlap: max + min / k
 *   nccl                the ring formula at the point-to-point level (a
 *                       placeholder: it only competes on device memory, where
 *                       it is the only candidate)
 *   one rank            every algorithm is a copy, n * copy_beta, so the tie
 *                       goes to mpi (the first on the menu)
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
 * Predicted / measured, us (rab not at 4 B, where it then ran recursive
 * doubling: count < p'):
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
 * (rondo-bench -a ring,shm, RONDO_SHM_CHUNK_BYTES=256K, quiet
 * host): 4 B 0.25 us, 4 KiB 1.0, 16 KiB 3.5, 64 KiB 13, 256 KiB 23, 1 MiB
 * 87, 4 MiB 467, 16 MiB 2740, 64 MiB 12970. alpha = half the 4-byte time
 * (2 synchronizations), beta from the 64 MiB slope with gamma the reduction
 * kernel's; it predicts 4 KiB-64 KiB within 10% and over-predicts the
 * cache-resident 256 KiB-1 MiB by 2x, which still ranks shm first at every
 * size on one node, as measured. The inter level here (5 us, 10 GB/s) is only
 * the guess for RONDO_NET_CALIBRATE=off: a comm that spans nodes measures its
 * own (lib/topo/net.c), and so does the intra level of such a comm, whose
 * ranks may talk through something other than MPICH's shared memory.
 */
#include "select/select.h"

#include "base/numbers.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define US 1e-6
#define NS_PER_BYTE 1e-9
#define RING_CHUNK_DEFAULT ((size_t)256 * 1024)
#define HIER_CHUNK_DEFAULT ((size_t)1024 * 1024)

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
    .hier_chunk = HIER_CHUNK_DEFAULT,
};

/* ---- the model ---------------------------------------------------------- */

double select_msg_alpha(const select_level_t *lv, double bytes)
{
  if (lv->eager_limit > 0 && bytes > (double)lv->eager_limit)
    return lv->rndv_alpha;
  return lv->alpha;
}

const select_level_t *select_p2p_level(const select_params_t *prm, const select_input_t *in)
{
  return in->nodes > 1 ? &prm->inter : &prm->intra;
}

double select_step_time_uneven(const select_params_t *prm, const select_input_t *in,
                               double most, double mean, int distance)
{
  int streams = 0;
  if (in->nodes > 1)
    for (int r = 0; r < in->max_local; r++)
      streams += (r ^ distance) >= in->max_local;
  if (streams == 0)
    return select_msg_alpha(&prm->intra, most) + prm->intra.beta * most;
  if (prm->dists > 0) {
    int k = 0, apart = distance / in->max_local;
    while (k + 1 < prm->dists && (2 << k) <= apart)
      k++;
    double rndv = select_msg_alpha(&prm->inter, most) - prm->inter.alpha; /* above eager */
    /* dist_beta was measured with every pair sending: the links all pairs
     * share carry the mean, but no message moves faster than one pair
     * alone (lone_beta), nor slower than with every pair sending */
    double wire = prm->dist_beta[k] * most;
    if (prm->lone_beta > 0 && mean < most)
      wire = fmin(wire, fmax(prm->dist_beta[k] * mean, prm->lone_beta * most));
    return prm->dist_alpha[k] + rndv + wire * streams;
  }
  return select_msg_alpha(&prm->inter, most) + prm->inter.beta * most * streams;
}

double select_step_time(const select_params_t *prm, const select_input_t *in, double bytes,
                        int distance)
{
  return select_step_time_uneven(prm, in, bytes, bytes, distance);
}

double select_rd_steps_time(const select_params_t *prm, const select_input_t *in,
                            double bytes)
{
  int pof2 = rondo__pof2_floor(in->ranks);
  double t = 0;
  if (pof2 != in->ranks)
    t += 2 * select_step_time(prm, in, bytes, 1);
  for (int mask = 1; mask < pof2; mask <<= 1)
    t += select_step_time(prm, in, bytes, mask);
  return t;
}

int select_mpi_node_aware(const select_params_t *prm, const select_input_t *in)
{
  return prm->mpi_node_aware && in->nodes > 1 && in->max_local > 1;
}

double select_node_aware_steps_time(const select_params_t *prm, const select_input_t *in,
                                    double bytes)
{
  select_input_t node = *in, cross = *in;
  node.ranks = in->max_local;
  node.nodes = 1;
  cross.ranks = in->nodes;
  cross.min_local = cross.max_local = 1;
  return 2 * select_rd_steps_time(prm, &node, bytes) + select_rd_steps_time(prm, &cross, bytes);
}

/* The argument check across nodes: recursive doubling of the check's
 * packet, rondo's own (exchange.c), or MPI's all-reduce of it, which
 * MPICH makes node-aware, plus that call's overhead. */
static double check_time(const select_params_t *prm, const select_input_t *in)
{
  double b = (double)prm->check_bytes;
  if (in->check_exchange)
    return select_rd_steps_time(prm, in, b);
  return prm->mpi_alpha + (select_mpi_node_aware(prm, in) ? select_node_aware_steps_time(prm, in, b)
                                                          : select_rd_steps_time(prm, in, b));
}

/* The check's price for a member whose steps carry it in rondo's own
 * exchange: half a check's step for each of its lg p' steps whose data
 * (n/2, n/4 .. n/p' of the whole buffer: the halving's and doubling's) is
 * above along bytes and so a second message beside the packet (on the
 * multi-host bed, 2 x 1 at 1 and 10 Gbit/s, such a step cost about half a
 * check's step more than the data alone: 23 us against 15, the check
 * alone 14); nothing for a step whose data goes in the packet's message
 * (its 64-byte header is a few nanoseconds at the link's rate). */
static double carried_check_time(const select_params_t *prm, const select_input_t *in,
                                 size_t along)
{
  int pof2 = rondo__pof2_floor(in->ranks), apart = 0;
  double half = (double)in->bytes;
  for (int d = 1; d < pof2; d *= 2) {
    half /= 2;
    apart += half > (double)along;
  }
  return pof2 > 1 ? check_time(prm, in) / 2 * apart / rondo__log2(pof2) : 0;
}

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

const select_algo_t *select_menu_find(const select_menu_t *menu, rondo_algo_t id)
{
  for (int i = 0; menu != NULL && i < menu->n; i++)
    if (menu->algo[i]->id == id)
      return menu->algo[i];
  return NULL;
}

/* The rules every algorithm shares (op adasum, memory kind) and its own;
 * in is normalized. */
static void judge(const select_algo_t *a, const select_input_t *in, select_candidate_t *c)
{
  const char *hard = NULL;
  if ((in->op == RONDO_ADASUM) != (a->adasum != 0))
    hard = a->adasum ? "runs op adasum only" : "op adasum runs on the adasum algorithm only";
  if (hard == NULL && a->cannot_run != NULL)
    hard = a->cannot_run(in);
  if (hard == NULL && in->mem != a->mem)
    hard = a->mem == SELECT_MEM_DEVICE ? "needs device memory"
                                       : "host algorithm: buffer is device memory";
  c->can_run = hard == NULL;
  c->why_not = hard ? hard : a->not_chosen ? a->not_chosen(in) : NULL;
}

void select_judge(const select_algo_t *algo, const select_input_t *in, select_candidate_t *c)
{
  select_input_t s = normalized(in);
  c->seconds = 0;
  judge(algo, &s, c);
}

void select_predict(const select_params_t *params, const select_menu_t *menu,
                    const select_input_t *in, select_candidate_t cand[SELECT_MAX_ALGOS])
{
  select_input_t s = normalized(in);
  for (int a = 0; a < SELECT_MAX_ALGOS; a++)
    cand[a] = (select_candidate_t){0, a == RONDO_ALGO_AUTO ? "not an algorithm"
                                                           : "not built into this library",
                                   0};
  for (int i = 0; i < menu->n; i++) {
    const select_algo_t *a = menu->algo[i];
    select_candidate_t *c = &cand[a->id];
    judge(a, &s, c);
    /* On one rank every algorithm is a copy. */
    if (!c->why_not)
      c->seconds = s.ranks == 1 ? (double)s.bytes * params->copy_beta : a->cost(params, &s);
    /* The check across nodes: a round of its own, or, for a member whose
     * steps carry it, what its larger steps' second messages cost. */
    if (!c->why_not && s.ranks > 1 && s.mpi_check && s.bytes > a->rides_check)
      c->seconds += a->carries_check && s.check_exchange
                        ? carried_check_time(params, &s, a->carries_check)
                        : check_time(params, &s);
  }
}

/* ---- the choice ------------------------------------------------------------- */

static rondo_algo_t cheapest(const select_menu_t *menu,
                             const select_candidate_t cand[SELECT_MAX_ALGOS])
{
  rondo_algo_t best = RONDO_ALGO_AUTO;
  for (int i = 0; i < menu->n; i++) {
    rondo_algo_t a = menu->algo[i]->id;
    if (cand[a].why_not)
      continue;
    if (best == RONDO_ALGO_AUTO || cand[a].seconds < cand[best].seconds)
      best = a;
  }
  return best;
}

static const char *name_of(const select_menu_t *menu, rondo_algo_t id)
{
  const select_algo_t *a = select_menu_find(menu, id);
  return a ? a->name : "?";
}

/* "; skipped tuning file t line 2: shm not eligible" when the first
 * matching rule was skipped, else "". */
static void skipped_rule(const select_table_t *table,
                         const select_input_t *in, const select_candidate_t *cand,
                         char *buf, size_t len)
{
  int line;
  rondo_algo_t first = select_table_lookup(table, in, &line);
  buf[0] = '\0';
  if (first != RONDO_ALGO_AUTO && cand[first].why_not)
    snprintf(buf, len, "; skipped tuning file %s line %d: %s not eligible",
             select_table_source(table), line, select_table_rule_algo(table, line));
}

rondo_algo_t select_choose(const select_params_t *params, const select_menu_t *menu,
                           const select_table_t *table, rondo_algo_t forced,
                           const select_input_t *in, select_result_t *out)
{
  memset(out, 0, sizeof *out);
  select_predict(params, menu, in, out->cand);

  if (forced != RONDO_ALGO_AUTO) {
    if ((unsigned)forced >= SELECT_MAX_ALGOS) {
      out->choice = RONDO_ALGO_AUTO;
      snprintf(out->reason, sizeof out->reason, "invalid forced algorithm %d",
               (int)forced);
      return out->choice;
    }
    static const char *const knob[RONDO_COLL_COUNT] = {
        "RONDO_ALLREDUCE_ALGO", "RONDO_REDUCE_SCATTER_ALGO", "RONDO_ALLGATHER_ALGO"};
    const char *by = (unsigned)in->coll < RONDO_COLL_COUNT ? knob[in->coll] : "a knob";
    out->choice = forced;
    if (out->cand[forced].why_not)
      snprintf(out->reason, sizeof out->reason, "forced by %s; not eligible: %s", by,
               out->cand[forced].why_not);
    else
      snprintf(out->reason, sizeof out->reason, "forced by %s", by);
    return out->choice;
  }

  unsigned eligible = 0;
  for (int i = 0; i < menu->n; i++)
    if (!out->cand[menu->algo[i]->id].why_not)
      eligible |= 1u << menu->algo[i]->id;
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
  out->choice = cheapest(menu, out->cand);
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
  const char *coll = rondo_coll_name(in->coll);
  put(t, "%s %zu %s (%zu %s), %d %s on %d %s", coll != NULL ? coll : "?", in->bytes,
      plural((long long)in->bytes, "byte", "bytes"), in->count,
      plural((long long)in->count, "element", "elements"), in->ranks,
      plural(in->ranks, "rank", "ranks"), in->nodes, plural(in->nodes, "node", "nodes"));
  if (in->min_local == in->max_local)
    put(t, " (%d per node)", in->max_local);
  else
    put(t, " (%d-%d per node)", in->min_local, in->max_local);
  put(t, ", %s memory\n", in->mem == SELECT_MEM_DEVICE ? "device" : "host");
}

int select_explain(const select_menu_t *menu, const select_result_t *res,
                   const select_input_t *in, char *buf, size_t len)
{
  text_t t = {buf, len, 0};
  if (len > 0)
    buf[0] = '\0';
  put_input(&t, in);
  put(&t, "  %-20s %12s    %s\n", "algorithm", "predicted", "note");
  for (int i = 0; i < menu->n; i++) {
    rondo_algo_t a = menu->algo[i]->id;
    const select_candidate_t *c = &res->cand[a];
    char when[32] = "-";
    if (!c->why_not)
      snprintf(when, sizeof when, "%.2f us", c->seconds / US);
    put(&t, "  %-20s %12s", menu->algo[i]->name, when);
    if (a == res->choice)
      put(&t, "    <- chosen (%s)\n", res->reason);
    else if (c->why_not)
      put(&t, "    %s\n", c->why_not);
    else
      put(&t, "\n");
  }
  put(&t, "choice: %s (%s)\n",
      res->choice == RONDO_ALGO_AUTO ? "none" : name_of(menu, res->choice),
      res->reason);
  return (int)t.used;
}
