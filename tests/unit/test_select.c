/* The all-reduce selector on synthetic layouts and parameters: eligibility,
 * closed-form predictions, the default parameters' ranking of the measured
 * 2-rank sweep, tuning-table parsing and precedence, and the explanation;
 * the tables of the all-reduce, reduce-scatter and all-gather families,
 * and the tuning rules and explanations of the latter two. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/algo.h"
#include "algo/common/blocks.h"
#include "select/select.h"

#define BIT(a) (1u << (a))
#define HOST_ALGOS                                                                  \
  (BIT(RONDO_ALGO_MPI) | BIT(RONDO_ALGO_RING) | BIT(RONDO_ALGO_RECURSIVE_DOUBLING) | \
   BIT(RONDO_ALGO_RABENSEIFNER) | BIT(RONDO_ALGO_SHM) | BIT(RONDO_ALGO_HIERARCHICAL))
#define P2P_ALGOS                                                                   \
  (BIT(RONDO_ALGO_MPI) | BIT(RONDO_ALGO_RING) | BIT(RONDO_ALGO_RECURSIVE_DOUBLING) | \
   BIT(RONDO_ALGO_RABENSEIFNER))
#define DEVICE_ALGOS \
  (BIT(RONDO_ALGO_NCCL) | BIT(RONDO_ALGO_STAGED) | BIT(RONDO_ALGO_HIERARCHICAL_NCCL))
#define ALL_ALGOS (HOST_ALGOS | DEVICE_ALGOS | BIT(RONDO_ALGO_ADASUM))

/* The algorithms on the menu of the next selector calls (bits of ids):
 * layout() sets it, a test may change it. The rows are the library's own
 * descriptors (lib/algo/allreduce/table.c). */
static unsigned menu_bits;

static const select_menu_t *menu(void)
{
  static const select_algo_t *rows[SELECT_MAX_ALGOS];
  static select_menu_t m = {0, rows, RONDO_COLL_ALLREDUCE, NULL};
  const select_menu_t *all = algo_menu();
  m.n = 0;
  for (int i = 0; i < all->n; i++)
    if (menu_bits & BIT(all->algo[i]->id))
      rows[m.n++] = all->algo[i];
  return &m;
}

/* count float32 elements on ranks spread evenly over nodes; available: the
 * menu. */
static select_input_t layout(size_t count, int ranks, int nodes, unsigned available)
{
  select_input_t in = {.count = count,
                       .bytes = count * 4,
                       .dtype = RONDO_FLOAT32,
                       .op = RONDO_SUM,
                       .ranks = ranks,
                       .nodes = nodes,
                       .min_local = ranks / nodes,
                       .max_local = (ranks + nodes - 1) / nodes,
                       .mem = SELECT_MEM_HOST};
  menu_bits = available;
  return in;
}

static rondo_algo_t choose(const select_params_t *p, const select_table_t *t,
                           const select_input_t *in, select_result_t *res)
{
  return select_choose(p, menu(), t, RONDO_ALGO_AUTO, in, res);
}

static void expect_choice(const select_params_t *p, const select_input_t *in,
                          rondo_algo_t want)
{
  select_result_t res;
  rondo_algo_t got = choose(p, NULL, in, &res);
  if (got != want)
    fail_msg("%zu bytes, %d ranks, %d nodes: chose %s, want %s (%s)", in->bytes,
             in->ranks, in->nodes, rondo_algo_name(got), rondo_algo_name(want),
             res.reason);
  assert_int_equal(res.choice, got);
}

static void assert_contains(const char *text, const char *part)
{
  if (strstr(text, part) == NULL)
    fail_msg("'%s' does not contain '%s'", text, part);
}

/* cmocka's float assertions work in single precision: compare doubles to
 * 1e-12 relative, printing both. */
#define assert_close(got, want) assert_close_at((got), (want), #got, __FILE__, __LINE__)
static void assert_close_at(double got, double want, const char *what, const char *file,
                            int line)
{
  if (fabs(got - want) > 1e-12 * fabs(want))
    fail_msg("%s:%d: %s = %.17g, want %.17g", file, line, what, got, want);
}

/* Round numbers, so the closed forms below are easy to check by hand. */
static const select_params_t unit_params = {
    .intra = {.alpha = 1e-6, .beta = 1e-9, .gamma = 2e-9},
    .inter = {.alpha = 10e-6, .beta = 4e-9, .gamma = 2e-9},
    .shm = {.alpha = 0.5e-6, .beta = 0.5e-9, .gamma = 1e-9},
    .mpi_alpha = 3e-6,
    .copy_beta = 0.25e-9,
    .ring_chunk = 1024,
};

/* ---- the model --------------------------------------------------------------- */

static void test_predictions_match_closed_forms(void **state)
{
  (void)state;
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout(1024, 4, 1, ALL_ALGOS); /* n = 4096 bytes, p = 4 */
  select_predict(&unit_params, menu(), &in, c);
  double n = 4096, us = 1e-6, ns = 1e-9;
  /* rd: 2 steps of n, reduces 2n, copies n */
  double rd = 2 * us + 2 * n * ns + 2 * n * 2 * ns + n * 0.25 * ns;
  /* rab: 4 messages, moves 2n 3/4, reduces n 3/4, copies n */
  double rab = 4 * us + 1.5 * n * ns + 0.75 * n * 2 * ns + n * 0.25 * ns;
  /* ring: 6 steps; segment 1024 = one chunk, so moving (1.5n ns) and
   * reducing (0.75n x 2 ns) add up */
  double ring = 6 * us + 1.5 * n * ns + 1.5 * n * ns;
  double shm = 2 * 0.5 * us + 2 * n * 0.5 * ns + n * 1 * ns;
  assert_close(c[RONDO_ALGO_RECURSIVE_DOUBLING].seconds, rd);
  assert_close(c[RONDO_ALGO_RABENSEIFNER].seconds, rab);
  assert_close(c[RONDO_ALGO_RING].seconds, ring);
  assert_close(c[RONDO_ALGO_MPI].seconds, fmin(rd, rab) + 3 * us);
  assert_close(c[RONDO_ALGO_SHM].seconds, shm);
  assert_null(c[RONDO_ALGO_RING].why_not);

  /* 16 KiB: segments of 4 chunks, so 3/4 of the cheaper part is hidden */
  in = layout(4096, 4, 1, ALL_ALGOS);
  select_predict(&unit_params, menu(), &in, c);
  n = 16384;
  assert_close(c[RONDO_ALGO_RING].seconds, 6 * us + 1.5 * n * ns + 1.5 * n * ns / 4);
}

static void test_non_power_of_two_folds_two_extra_steps(void **state)
{
  (void)state;
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout(1024, 6, 1, P2P_ALGOS); /* p' = 4, n = 4096 */
  select_predict(&unit_params, menu(), &in, c);
  double n = 4096, us = 1e-6, ns = 1e-9;
  double rd = 4 * us + 4 * n * ns + 3 * n * 2 * ns + n * 0.25 * ns;
  double rab = 6 * us + (1.5 * n + 2 * n) * ns + (0.75 * n + n) * 2 * ns + n * 0.25 * ns;
  assert_close(c[RONDO_ALGO_RECURSIVE_DOUBLING].seconds, rd);
  assert_close(c[RONDO_ALGO_RABENSEIFNER].seconds, rab);
}

static void test_messages_above_the_eager_limit_pay_rndv_alpha(void **state)
{
  (void)state;
  select_params_t p = unit_params;
  p.intra.eager_limit = 8192;
  p.intra.rndv_alpha = 5e-6;
  select_candidate_t c[SELECT_MAX_ALGOS];
  double us = 1e-6, ns = 1e-9;
  /* 2 ranks, 16 KiB: rd sends 16 KiB (rendezvous), rab two messages of 8 KiB
   * (eager) */
  select_input_t in = layout(4096, 2, 1, P2P_ALGOS);
  select_predict(&p, menu(), &in, c);
  double n = 16384;
  assert_close(c[RONDO_ALGO_RECURSIVE_DOUBLING].seconds,
               5 * us + n * ns + n * 2 * ns + n * 0.25 * ns);
  assert_close(c[RONDO_ALGO_RABENSEIFNER].seconds,
               2 * us + n * ns + n / 2 * 2 * ns + n * 0.25 * ns);
}

static void test_ring_wins_when_bandwidth_dominates(void **state)
{
  (void)state;
  select_params_t p = unit_params;
  p.intra.alpha = 1e-9; /* latency negligible */
  p.ring_chunk = 256 * 1024;
  for (int ranks = 3; ranks <= 16; ranks++) {
    select_input_t in = layout((size_t)16 << 20, ranks, 1, P2P_ALGOS);
    expect_choice(&p, &in, RONDO_ALGO_RING);
  }
}

static void test_recursive_doubling_wins_when_latency_dominates(void **state)
{
  (void)state;
  for (int ranks = 2; ranks <= 16; ranks++) {
    select_input_t in = layout(1, ranks, 1, P2P_ALGOS);
    expect_choice(&unit_params, &in, RONDO_ALGO_RECURSIVE_DOUBLING);
  }
}

static void test_one_rank_predicts_a_copy_and_mpi_wins_the_tie(void **state)
{
  (void)state;
  select_input_t in = layout(1000, 1, 1, HOST_ALGOS);
  select_result_t res;
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_MPI);
  assert_string_equal(res.reason, "lowest predicted time");
  for (int a = RONDO_ALGO_MPI; a <= RONDO_ALGO_SHM; a++) {
    assert_null(res.cand[a].why_not);
    assert_close(res.cand[a].seconds, 4000 * 0.25e-9);
  }
  assert_string_equal(res.cand[RONDO_ALGO_HIERARCHICAL].why_not, "one node: use shm");
}

/* ---- eligibility --------------------------------------------------------------- */

/* 8 nodes, 3 butterfly distances of 1 us and 1 ns a byte with every pair
 * sending, 0.1 ns for one pair alone. */
static select_params_t eight_nodes_params(void)
{
  select_params_t p = unit_params;
  p.dists = 3;
  for (int k = 0; k < 3; k++) {
    p.dist_alpha[k] = 1e-6;
    p.dist_beta[k] = 1e-9;
  }
  p.lone_beta = 0.1e-9;
  return p;
}

/* Below p' elements Rabenseifner's first steps are uneven: half the ranks
 * send their range's whole data, the others nothing (a binomial reduce,
 * and in the doubling a broadcast). 2 float32 on 8 nodes: the steps send
 * at most 8, 8 and 4 bytes, 4, 2 and 1 on average. Where one pair alone
 * is faster than every pair at once (lone_beta), the shared links carry
 * the mean; unmeasured, the largest message is priced at dist_beta. */
static void test_rabenseifner_below_pof2_elements(void **state)
{
  (void)state;
  double us = 1e-6, ns = 1e-9;
  select_params_t p = eight_nodes_params();
  p.rab_radix = 2; /* the doubling's radix is test_rabenseifner_doubling_radix's */
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout(2, 8, 8, P2P_ALGOS);
  select_predict(&p, menu(), &in, c);
  assert_null(c[RONDO_ALGO_RABENSEIFNER].why_not);
  double fixed = 8 * p.copy_beta + (8 + 8 + 4) * p.intra.gamma + 6 * us;
  assert_close(c[RONDO_ALGO_RABENSEIFNER].seconds, fixed + 2 * (4 + 2 + 1) * ns);
  /* no step is priced below one pair alone: 8 bytes at 0.5 ns, not 2 at 1 */
  p.lone_beta = 0.5 * ns;
  select_predict(&p, menu(), &in, c);
  assert_close(c[RONDO_ALGO_RABENSEIFNER].seconds, fixed + 2 * (4 + 4 + 2) * ns);
  p.lone_beta = 0;
  select_predict(&p, menu(), &in, c);
  assert_close(c[RONDO_ALGO_RABENSEIFNER].seconds, fixed + 2 * (8 + 8 + 4) * ns);
  /* from p' elements on, every rank sends n/2^k: as before */
  p.lone_beta = 0.1 * ns;
  in = layout(8, 8, 8, P2P_ALGOS);
  select_predict(&p, menu(), &in, c);
  assert_close(c[RONDO_ALGO_RABENSEIFNER].seconds,
               32 * p.copy_beta + 28 * p.intra.gamma + 6 * us + 2 * (16 + 8 + 4) * ns);
}

/* Below p' elements the doubling's steps are latency, and the model does
 * lg radix of them at once: 2 elements on 8 nodes, 1 us a step. In radix
 * 8 its one step sends 7 messages of one element (28 bytes, 7 on average
 * through the shared links: 7 ns) where radix 2's three steps send 4, 8
 * and 8 bytes (1 + 2 + 4 on average: 7 ns): 2 us less. From p' elements,
 * radix 2 (its steps are bandwidth there). On a link so slow that bytes
 * outweigh steps, radix 4: its first step sends 3 x 4 bytes where radix
 * 2's first two send 4 + 8, and radix 8's one 28 in all. RONDO_RAB_RADIX
 * forces one. */
static void test_rabenseifner_doubling_radix(void **state)
{
  (void)state;
  double us = 1e-6, ns = 1e-9;
  select_params_t p = eight_nodes_params();
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout(2, 8, 8, P2P_ALGOS);
  assert_int_equal(algo_rab_radix(&p, &in), 8);
  select_predict(&p, menu(), &in, c);
  double fixed = 8 * p.copy_beta + (8 + 8 + 4) * p.intra.gamma + 3 * us + 7 * ns;
  assert_close(c[RONDO_ALGO_RABENSEIFNER].seconds, fixed + 1 * us + 7 * ns);
  /* radix 4: a step of 3 messages of one element (masks 4 and 2; 3 ns on
   * average), then radix 2's last (up to 2 elements, 4 bytes on average) */
  p.rab_radix = 4;
  select_predict(&p, menu(), &in, c);
  assert_close(c[RONDO_ALGO_RABENSEIFNER].seconds, fixed + 2 * us + (3 + 4) * ns);
  p.rab_radix = 0;
  in = layout(8, 8, 8, P2P_ALGOS);
  assert_int_equal(algo_rab_radix(&p, &in), 2);
  in = layout(2, 8, 8, P2P_ALGOS);
  p.lone_beta = 0;
  for (int k = 0; k < 3; k++)
    p.dist_beta[k] = 1 * us;
  assert_int_equal(algo_rab_radix(&p, &in), 4);
  p.rab_radix = 8;
  assert_int_equal(algo_rab_radix(&p, &in), 8);
}

/* 1 KiB on 4096 ranks, each a node, where every pair at once gets a
 * fortieth of the link (a backbone of 100 links for 4096 hosts, the flat
 * cluster of docs/scale.md): recursive doubling's 12 steps of 1 KiB from
 * every rank cost more than Rabenseifner's 24 short or uneven ones, so the
 * call that rode in the check's exchange (mpi) gives way to the halving
 * that carries it. With full bisection (one pair alone no faster) mpi stays. */
static void test_rabenseifner_below_pof2_on_a_shared_backbone(void **state)
{
  (void)state;
  double us = 1e-6, ns = 1e-9;
  select_params_t p = select_default_params;
  p.inter.alpha = 0.7 * us;
  p.inter.beta = 3.4 * ns;
  p.check_bytes = 64;
  p.dists = 12;
  for (int k = 0; k < 12; k++) {
    p.dist_alpha[k] = 0.8 * us;
    p.dist_beta[k] = 3.4 * ns;
  }
  p.lone_beta = 0.08 * ns; /* 100 Gbit/s */
  select_input_t in = layout(256, 4096, 4096, P2P_ALGOS);
  in.mpi_check = in.check_exchange = 1;
  expect_choice(&p, &in, RONDO_ALGO_RABENSEIFNER);
  for (int k = 0; k < 12; k++)
    p.dist_beta[k] = 0.08 * ns;
  expect_choice(&p, &in, RONDO_ALGO_MPI);
}

static void test_shm_only_on_one_node_and_hierarchical_only_across(void **state)
{
  (void)state;
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t one = layout(1024, 4, 1, HOST_ALGOS);
  select_predict(&unit_params, menu(), &one, c);
  assert_null(c[RONDO_ALGO_SHM].why_not);
  assert_string_equal(c[RONDO_ALGO_HIERARCHICAL].why_not, "one node: use shm");
  select_input_t two = layout(1024, 4, 2, HOST_ALGOS);
  select_predict(&unit_params, menu(), &two, c);
  assert_string_equal(c[RONDO_ALGO_SHM].why_not,
                      "ranks span more than one node (use hierarchical)");
  assert_null(c[RONDO_ALGO_HIERARCHICAL].why_not);
}

static void test_unavailable_algorithms_are_not_eligible(void **state)
{
  (void)state;
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout(1024, 4, 1, BIT(RONDO_ALGO_MPI));
  select_predict(&unit_params, menu(), &in, c);
  assert_null(c[RONDO_ALGO_MPI].why_not);
  for (int a = RONDO_ALGO_RING; a < RONDO_ALGO_COUNT; a++)
    assert_string_equal(c[a].why_not, "not built into this library");
  expect_choice(&unit_params, &in, RONDO_ALGO_MPI);
}

static void test_host_memory_never_picks_nccl(void **state)
{
  (void)state;
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout(1 << 20, 4, 1, ALL_ALGOS);
  select_predict(&unit_params, menu(), &in, c);
  assert_string_equal(c[RONDO_ALGO_NCCL].why_not, "needs device memory");
  menu_bits = BIT(RONDO_ALGO_NCCL);
  expect_choice(&unit_params, &in, RONDO_ALGO_AUTO);
}

/* Device buffers on ranks with a GPU each, NCCL built. */
static select_input_t device_layout(size_t count, int ranks, int nodes, unsigned available)
{
  select_input_t in = layout(count, ranks, nodes, available);
  in.mem = SELECT_MEM_DEVICE;
  in.has_nccl = 1;
  in.gpu_shared = 0;
  in.gpu_node_shared = 0;
  return in;
}

static void test_device_memory_picks_nccl(void **state)
{
  (void)state;
  select_input_t in = device_layout(1 << 20, 4, 2, ALL_ALGOS);
  select_result_t res;
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_NCCL);
  for (int a = RONDO_ALGO_MPI; a < RONDO_ALGO_NCCL; a++) {
    assert_false(res.cand[a].can_run);
    /* an algorithm's own rule comes first: shm spans nodes here */
    assert_string_equal(res.cand[a].why_not,
                        a == RONDO_ALGO_SHM ? "ranks span more than one node (use hierarchical)"
                                            : "host algorithm: buffer is device memory");
  }
  /* staging runs too, but pays two copies more than NCCL at every size */
  assert_true(res.cand[RONDO_ALGO_STAGED].can_run);
  assert_null(res.cand[RONDO_ALGO_STAGED].why_not);
  for (size_t n = 1; n <= ((size_t)1 << 28); n *= 8) {
    in = device_layout(n, 8, 2, ALL_ALGOS);
    assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_NCCL);
    assert_true(res.cand[RONDO_ALGO_STAGED].seconds > res.cand[RONDO_ALGO_NCCL].seconds);
  }
  /* on one rank too (a copy either way; nccl comes first) */
  in = device_layout(1000, 1, 1, ALL_ALGOS);
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_NCCL);
}

static void test_shared_gpu_or_no_nccl_picks_staged(void **state)
{
  (void)state;
  select_result_t res;
  /* several ranks on one GPU: NCCL refuses them */
  select_input_t in = device_layout(1 << 20, 4, 1, ALL_ALGOS);
  in.gpu_shared = 1;
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_STAGED);
  assert_false(res.cand[RONDO_ALGO_NCCL].can_run);
  assert_non_null(strstr(res.cand[RONDO_ALGO_NCCL].why_not, "share a GPU"));
  /* a rondo without NCCL */
  in = device_layout(1 << 20, 4, 1, ALL_ALGOS);
  in.has_nccl = 0;
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_STAGED);
  assert_non_null(strstr(res.cand[RONDO_ALGO_NCCL].why_not, "no NCCL"));
  /* before the first device call the layout is unknown (-1): nccl stays
   * eligible, so rondo_explain_call shows what a GPU per rank would get */
  in = device_layout(1 << 20, 4, 1, ALL_ALGOS);
  in.gpu_shared = -1;
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_NCCL);
  /* the explanation names the reason */
  char text[4096];
  in = device_layout(1 << 20, 4, 1, ALL_ALGOS);
  in.gpu_shared = 1;
  choose(&unit_params, NULL, &in, &res);
  assert_true(select_explain(menu(), &res, &in, text, sizeof text) > 0);
  assert_contains(text, "device memory");
  assert_contains(text, "share a GPU");
  assert_contains(text, "staged");
}

static void test_hierarchical_nccl_where_gpus_are_shared_across_nodes(void **state)
{
  (void)state;
  select_result_t res;
  /* 2 nodes x 2 ranks, a GPU per rank of a node, but GPUs shared across
   * the nodes (emulated hosts on one machine): flat nccl cannot run */
  select_input_t in = device_layout(1 << 20, 4, 2, ALL_ALGOS);
  in.gpu_shared = 1;
  in.gpu_node_shared = 0;
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_HIERARCHICAL_NCCL);
  assert_true(res.cand[RONDO_ALGO_STAGED].seconds >
              res.cand[RONDO_ALGO_HIERARCHICAL_NCCL].seconds);
  /* a GPU each everywhere: flat nccl, and hierarchical_nccl says why not */
  in.gpu_shared = 0;
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_NCCL);
  assert_true(res.cand[RONDO_ALGO_HIERARCHICAL_NCCL].can_run);
  assert_non_null(strstr(res.cand[RONDO_ALGO_HIERARCHICAL_NCCL].why_not, "nccl runs over"));
  /* two ranks of a node on one GPU: staged */
  in.gpu_shared = in.gpu_node_shared = 1;
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_STAGED);
  assert_false(res.cand[RONDO_ALGO_HIERARCHICAL_NCCL].can_run);
  /* nodes of different sizes (3 ranks on 2 nodes) */
  in = device_layout(1 << 20, 3, 2, ALL_ALGOS);
  in.gpu_shared = 1;
  in.gpu_node_shared = 0;
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_STAGED);
  assert_non_null(strstr(res.cand[RONDO_ALGO_HIERARCHICAL_NCCL].why_not, "different numbers"));
  /* one node: not chosen, but it runs */
  in = device_layout(1 << 20, 2, 1, ALL_ALGOS);
  in.gpu_shared = 1;
  in.gpu_node_shared = 0;
  choose(&unit_params, NULL, &in, &res);
  assert_true(res.cand[RONDO_ALGO_HIERARCHICAL_NCCL].can_run);
  assert_string_equal(res.cand[RONDO_ALGO_HIERARCHICAL_NCCL].why_not, "one node: use nccl");
}

static void test_device_memory_without_device_algorithms_chooses_none(void **state)
{
  (void)state;
  select_input_t in = device_layout(1 << 20, 4, 1, HOST_ALGOS);
  select_result_t res;
  assert_int_equal(choose(&unit_params, NULL, &in, &res), RONDO_ALGO_AUTO);
  assert_int_equal(res.choice, RONDO_ALGO_AUTO);
  assert_string_equal(res.reason, "no eligible algorithm");
  assert_string_equal(res.cand[RONDO_ALGO_NCCL].why_not, "not built into this library");
}

static void test_forced_wins_even_when_not_eligible(void **state)
{
  (void)state;
  select_input_t in = layout(1 << 20, 4, 2, HOST_ALGOS);
  select_result_t res;
  assert_int_equal(select_choose(&unit_params, menu(), NULL, RONDO_ALGO_SHM, &in, &res),
                   RONDO_ALGO_SHM);
  assert_string_equal(res.reason,
                      "forced by RONDO_ALLREDUCE_ALGO; not eligible: ranks span more "
                      "than one node (use hierarchical)");
  assert_int_equal(select_choose(&unit_params, menu(), NULL, RONDO_ALGO_RING, &in, &res),
                   RONDO_ALGO_RING);
  assert_string_equal(res.reason, "forced by RONDO_ALLREDUCE_ALGO");
}

/* ---- the default parameters ------------------------------------------------------ */

static void test_default_params_rank_the_2rank_sweep(void **state)
{
  (void)state;
  /* docs/PERFORMANCE.md: recursive doubling fastest up to 8 KiB, the ring
   * from 16 KiB to 64 MiB, MPI_Allreduce never */
  for (size_t bytes = 4; bytes <= ((size_t)64 << 20); bytes *= 2) {
    select_input_t in = layout(bytes / 4, 2, 1, P2P_ALGOS);
    expect_choice(&select_default_params, &in,
                  bytes <= 8192 ? RONDO_ALGO_RECURSIVE_DOUBLING : RONDO_ALGO_RING);
  }
}

static void test_default_params_pick_shm_on_one_node(void **state)
{
  (void)state;
  for (int ranks = 2; ranks <= 8; ranks++) {
    select_input_t in = layout((size_t)1 << 18, ranks, 1, HOST_ALGOS); /* 1 MiB */
    expect_choice(&select_default_params, &in, RONDO_ALGO_SHM);
  }
  /* measured: shm's two flag synchronizations (0.25 us) beat one MPI
   * message (recursive doubling, 0.38 us) even at 4 bytes */
  select_input_t tiny = layout(1, 2, 1, HOST_ALGOS);
  expect_choice(&select_default_params, &tiny, RONDO_ALGO_SHM);
  /* without shm, the 2-rank sweep's ranking: recursive doubling */
  tiny = layout(1, 2, 1, HOST_ALGOS & ~(1u << RONDO_ALGO_SHM));
  expect_choice(&select_default_params, &tiny, RONDO_ALGO_RECURSIVE_DOUBLING);
}

static void test_default_params_pick_hierarchical_across_nodes(void **state)
{
  (void)state;
  /* The default inter level (10 GB/s) is about as fast as this host's
   * shared-memory copies, so the node phases do not pay off; on a 1 GB/s
   * network (Ethernet) they do, and more so with more ranks per node. */
  select_params_t slow = select_default_params;
  slow.inter.beta = 1.0e-9;
  select_input_t in = layout((size_t)1 << 18, 4, 2, HOST_ALGOS); /* 1 MiB, 2 x 2 */
  expect_choice(&slow, &in, RONDO_ALGO_HIERARCHICAL);
  in = layout((size_t)1 << 18, 8, 2, HOST_ALGOS); /* 2 x 4 */
  expect_choice(&slow, &in, RONDO_ALGO_HIERARCHICAL);
  in = layout((size_t)1 << 18, 4, 2, HOST_ALGOS); /* default params: not hierarchical */
  select_result_t res;
  assert_int_not_equal(select_choose(&select_default_params, menu(), NULL, RONDO_ALGO_AUTO, &in, &res),
                       RONDO_ALGO_HIERARCHICAL);
}

/* A butterfly step across nodes: the node's crossing ranks share its link. */
static void test_butterfly_steps_share_the_node_link(void **state)
{
  (void)state;
  double n = 1 << 20, us = 1e-6, ns = 1e-9;
  select_input_t in = layout(1 << 18, 8, 2, HOST_ALGOS); /* 2 nodes x 4 ranks */
  /* distance 1 and 2 stay inside a node: intra */
  assert_close(select_step_time(&unit_params, &in, n, 1), 1 * us + n * 1 * ns);
  assert_close(select_step_time(&unit_params, &in, n, 2), 1 * us + n * 1 * ns);
  /* distance 4: all 4 ranks of a node cross, sharing the link */
  assert_close(select_step_time(&unit_params, &in, n, 4), 10 * us + n * 4 * ns * 4);
  /* 3 ranks per node (6 ranks): at distance 2, ranks 1 and 2 of node 0 have
   * partners 3 and 0; only rank 1 crosses */
  in = layout(1 << 18, 6, 2, HOST_ALGOS);
  assert_close(select_step_time(&unit_params, &in, n, 2), 10 * us + n * 4 * ns * 1);
  /* one node: always intra */
  in = layout(1 << 18, 8, 1, HOST_ALGOS);
  assert_close(select_step_time(&unit_params, &in, n, 4), 1 * us + n * 1 * ns);
}

/* Where the network was measured per butterfly distance, a step across
 * nodes costs the alpha and beta of its nodes' distance: rank distance over
 * ranks per node, the largest measured distance beyond. */
static void test_butterfly_steps_priced_by_distance(void **state)
{
  (void)state;
  double n = 1 << 20, us = 1e-6, ns = 1e-9;
  select_params_t p = unit_params;
  p.dists = 3; /* nodes 1, 2 and 4 apart */
  for (int k = 0; k < 3; k++) {
    p.dist_alpha[k] = (k + 1) * us;
    p.dist_beta[k] = (k + 1) * 0.1 * ns;
  }
  select_input_t in = layout(1 << 18, 16, 16, HOST_ALGOS); /* one rank per node */
  assert_close(select_step_time(&p, &in, n, 1), 1 * us + n * 0.1 * ns);
  assert_close(select_step_time(&p, &in, n, 2), 2 * us + n * 0.2 * ns);
  assert_close(select_step_time(&p, &in, n, 4), 3 * us + n * 0.3 * ns);
  assert_close(select_step_time(&p, &in, n, 8), 3 * us + n * 0.3 * ns); /* beyond: the last */
  /* 4 ranks per node: rank distance 8 is 2 nodes apart, all 4 crossing */
  in = layout(1 << 18, 64, 16, HOST_ALGOS);
  assert_close(select_step_time(&p, &in, n, 2), unit_params.intra.alpha + n * 1 * ns);
  assert_close(select_step_time(&p, &in, n, 4), 1 * us + n * 0.1 * ns * 4);
  assert_close(select_step_time(&p, &in, n, 8), 2 * us + n * 0.2 * ns * 4);
  /* recursive doubling on one rank per node sums them */
  in = layout(16, 8, 8, HOST_ALGOS);
  assert_close(select_rd_steps_time(&p, &in, 64), (1 + 2 + 3) * us + 64 * 0.6 * ns);
  /* a message above the inter level's eager limit pays what the
   * rendezvous costs beyond alpha, at every distance */
  p.inter.eager_limit = 8192;
  p.inter.rndv_alpha = p.inter.alpha + 5 * us;
  assert_close(select_step_time(&p, &in, 8192, 2), 2 * us + 8192 * 0.2 * ns);
  assert_close(select_step_time(&p, &in, 16384, 2), 7 * us + 16384 * 0.2 * ns);
}

/* Where MPI's all-reduce is node-aware (MPICH) and nodes hold several
 * ranks, mpi is priced as a reduce inside each node, one rank per node
 * across, and a broadcast inside, when that is cheaper; so is the check. */
static void test_node_aware_mpi_crosses_once_per_node(void **state)
{
  (void)state;
  double us = 1e-6, ns = 1e-9;
  select_params_t p = unit_params;
  select_input_t in = layout(16, 64, 8, BIT(RONDO_ALGO_MPI)); /* 64 B, 8 nodes x 8 */
  select_candidate_t flat[SELECT_MAX_ALGOS], aware[SELECT_MAX_ALGOS];
  select_predict(&p, menu(), &in, flat);
  p.mpi_node_aware = 1;
  select_predict(&p, menu(), &in, aware);
  double n = 64, work = n * 0.25 * ns + n * 2 * ns * 6; /* copy, 6 reductions */
  double inside = 3 * (1 * us + n * 1 * ns), across = 3 * (10 * us + n * 4 * ns);
  assert_close(aware[RONDO_ALGO_MPI].seconds, work + 2 * inside + across + 3 * us);
  /* flat: 3 steps inside, 3 across with all 8 ranks of a node on its link */
  double flat_steps = 3 * (1 * us + n * 1 * ns) + 3 * (10 * us + n * 4 * ns * 8);
  assert_close(flat[RONDO_ALGO_MPI].seconds, work + flat_steps + 3 * us);
  /* one rank per node: nothing changes */
  in = layout(16, 8, 8, BIT(RONDO_ALGO_MPI));
  select_predict(&p, menu(), &in, aware);
  p.mpi_node_aware = 0;
  select_predict(&p, menu(), &in, flat);
  assert_close(aware[RONDO_ALGO_MPI].seconds, flat[RONDO_ALGO_MPI].seconds);
  /* the check on several ranks per node (MPI's all-reduce of the packet) too */
  p.check_bytes = 160;
  in = layout(1 << 16, 64, 8, BIT(RONDO_ALGO_RING));
  in.mpi_check = 1;
  select_predict(&p, menu(), &in, flat);
  p.mpi_node_aware = 1;
  select_predict(&p, menu(), &in, aware);
  double b = 160;
  double check_flat = 3 * (1 * us + b * 1 * ns) + 3 * (10 * us + b * 4 * ns * 8);
  double check_aware = 2 * 3 * (1 * us + b * 1 * ns) + 3 * (10 * us + b * 4 * ns);
  assert_close(flat[RONDO_ALGO_RING].seconds - aware[RONDO_ALGO_RING].seconds,
               check_flat - check_aware);
}

/* The check's packets cross by rondo's own exchange wherever MPI's
 * all-reduce is not node-aware (algo_check_by_exchange's rule: one rank
 * per node, a library whose all-reduce is flat) or nodes are blocks whose
 * first ranks carry the data across (the layout's part of the rule, which
 * the mpi tests check on virtual nodes: mt_expect_layout), and by MPI's
 * elsewhere; the network does not enter it. */
static void test_check_by_exchange_where_mpi_is_flat(void **state)
{
  (void)state;
  select_params_t p = unit_params;
  p.mpi_node_aware = 1;
  select_input_t in = layout(16, 8, 8, HOST_ALGOS); /* one rank per node */
  assert_false(select_mpi_node_aware(&p, &in));
  in = layout(16, 64, 8, HOST_ALGOS); /* 8 nodes x 8 */
  assert_true(select_mpi_node_aware(&p, &in));
  /* even where the packet alone would cross faster flat (a fast network) */
  p.inter.alpha = 1e-6;
  p.inter.beta = 0.01e-9;
  assert_true(select_mpi_node_aware(&p, &in));
  p.mpi_node_aware = 0;
  assert_false(select_mpi_node_aware(&p, &in));
  in = layout(16, 8, 1, HOST_ALGOS); /* one node */
  assert_false(select_mpi_node_aware(&p, &in));
  /* an mpi call riding in rondo's own exchange takes its flat steps,
   * whatever MPI's all-reduce would do; in MPI's, MPI's choice */
  select_candidate_t aware[SELECT_MAX_ALGOS], flat[SELECT_MAX_ALGOS];
  p = unit_params;
  p.check_bytes = 64;
  in = layout(16, 64, 8, BIT(RONDO_ALGO_MPI)); /* 64 B, 8 nodes x 8 */
  in.mpi_check = 1;
  in.check_exchange = 1;
  p.mpi_node_aware = 1;
  select_predict(&p, menu(), &in, aware);
  p.mpi_node_aware = 0;
  select_predict(&p, menu(), &in, flat);
  assert_close(aware[RONDO_ALGO_MPI].seconds, flat[RONDO_ALGO_MPI].seconds);
  in.check_exchange = 0;
  select_predict(&p, menu(), &in, flat);
  p.mpi_node_aware = 1;
  select_predict(&p, menu(), &in, aware);
  assert_true(aware[RONDO_ALGO_MPI].seconds < flat[RONDO_ALGO_MPI].seconds);
  /* where one rank of a node carries the data across in rondo's exchange
   * (check_leaders), its steps are the node-aware ones, whatever MPI's
   * all-reduce would do, without MPI's per-call overhead */
  select_candidate_t leaders[SELECT_MAX_ALGOS];
  in.check_exchange = 1;
  in.check_leaders = 1;
  p.mpi_node_aware = 0;
  select_predict(&p, menu(), &in, leaders);
  assert_close(leaders[RONDO_ALGO_MPI].seconds, aware[RONDO_ALGO_MPI].seconds - p.mpi_alpha);
}

/* Rabenseifner sends its big halves to the nearest ranks: on 2 nodes x 2
 * ranks only the n/4 step crosses, with both ranks of a node. */
static void test_rabenseifner_crosses_with_its_small_pieces(void **state)
{
  (void)state;
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout(1024, 4, 2, BIT(RONDO_ALGO_RABENSEIFNER));
  select_predict(&unit_params, menu(), &in, c);
  double n = 4096, us = 1e-6, ns = 1e-9;
  double near = 2 * (1 * us + n / 2 * 1 * ns), far = 2 * (10 * us + n / 4 * 4 * ns * 2);
  double rab = near + far + 0.75 * n * 2 * ns + n * 0.25 * ns;
  assert_close(c[RONDO_ALGO_RABENSEIFNER].seconds, rab);
}

/* Across nodes every algorithm pays the argument check's exchange but mpi
 * for calls that ride in it, and Rabenseifner, whose halving carries it
 * (half a check's step for each step whose data is a second message beside
 * the packet, above AGREE_RIDER_INLINE_BYTES): still AUTO picks mpi for
 * small calls there (one step, not two). */
/* in's predictions across nodes with the argument check (with) and
 * without it (without); exchange: the check is rondo's own exchange. */
static void price_check(const select_params_t *p, select_input_t in, int exchange,
                        select_candidate_t *with, select_candidate_t *without)
{
  in.check_exchange = exchange;
  in.mpi_check = 1;
  select_predict(p, menu(), &in, with);
  in.mpi_check = 0;
  select_predict(p, menu(), &in, without);
}

static void test_small_calls_across_nodes_ride_in_the_check(void **state)
{
  (void)state;
  select_params_t p = select_default_params;
  p.inter.alpha = 6e-6;
  p.inter.beta = 8e-9; /* 1 Gbit/s */
  p.check_bytes = 384;
  select_input_t in = layout(16, 2, 2, HOST_ALGOS); /* 64 bytes, 2 x 1 */
  in.mpi_check = 1;
  in.check_exchange = 1; /* one rank per node: Rabenseifner carries it */
  expect_choice(&p, &in, RONDO_ALGO_MPI);
  select_candidate_t with[SELECT_MAX_ALGOS], without[SELECT_MAX_ALGOS];
  price_check(&p, in, 1, with, without);
  /* riding, mpi's messages hold the packet's header too: one recursive
   * doubling step of 384 more bytes (with its copy and reduction), and
   * rondo's own exchange calls no MPI_Allreduce */
  assert_close(with[RONDO_ALGO_MPI].seconds,
               without[RONDO_ALGO_MPI].seconds - p.mpi_alpha +
                   384 * (p.inter.beta + p.copy_beta + p.intra.gamma));
  assert_true(with[RONDO_ALGO_RING].seconds > without[RONDO_ALGO_RING].seconds + 6e-6);
  /* Rabenseifner's halving carries the check: its 32-byte step goes in
   * the packet's message, which costs it nothing more */
  assert_close(with[RONDO_ALGO_RABENSEIFNER].seconds, without[RONDO_ALGO_RABENSEIFNER].seconds);
  /* above the packet's room (64 KiB) mpi pays the check like the others;
   * Rabenseifner's one step, of 32 KiB, sends its packet beside the data,
   * which costs half the check ring pays */
  price_check(&p, layout(16384, 2, 2, HOST_ALGOS), 1, with, without);
  assert_true(with[RONDO_ALGO_MPI].seconds > without[RONDO_ALGO_MPI].seconds + 6e-6);
  assert_close(with[RONDO_ALGO_RABENSEIFNER].seconds - without[RONDO_ALGO_RABENSEIFNER].seconds,
               (with[RONDO_ALGO_RING].seconds - without[RONDO_ALGO_RING].seconds) / 2);
  /* 16 nodes, 64 KiB: steps of 32, 16, 8 and 4 KiB, those above the
   * packet's room beside it: that share of half the check ring pays */
  size_t room = select_menu_find(menu(), RONDO_ALGO_RABENSEIFNER)->carries_check;
  int apart = (32768 > room) + (16384 > room) + (8192 > room) + (4096 > room);
  assert_true(apart >= 1 && apart <= 3); /* (16 KiB, 8 KiB under Open MPI) */
  price_check(&p, layout(16384, 16, 16, HOST_ALGOS), 1, with, without);
  assert_close(with[RONDO_ALGO_RABENSEIFNER].seconds - without[RONDO_ALGO_RABENSEIFNER].seconds,
               (with[RONDO_ALGO_RING].seconds - without[RONDO_ALGO_RING].seconds) / 2 * apart / 4);
  /* several ranks per node: the check is MPI's all-reduce, which nothing
   * carries */
  price_check(&p, layout(8192, 4, 2, HOST_ALGOS), 0, with, without);
  assert_true(with[RONDO_ALGO_RABENSEIFNER].seconds >
              without[RONDO_ALGO_RABENSEIFNER].seconds + 6e-6);
}

/* Hierarchical with one rank per node is a flat all-reduce plus copies. */
static void test_hierarchical_not_chosen_with_one_rank_per_node(void **state)
{
  (void)state;
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout(1 << 20, 2, 2, HOST_ALGOS);
  select_predict(&unit_params, menu(), &in, c);
  assert_non_null(c[RONDO_ALGO_HIERARCHICAL].why_not);
  assert_int_equal(c[RONDO_ALGO_HIERARCHICAL].can_run, 1);
}

/* Above one stripe the hierarchical pipeline overlaps the node phases with
 * the link: where a stripe crosses the link quickly it costs about the
 * link's time, not the sum. */
static void test_hierarchical_pipeline_overlaps_cores_and_link(void **state)
{
  (void)state;
  select_params_t p = unit_params;
  p.inter.beta = 0.4e-9; /* 20 Gbit/s: a 1 MiB stripe crosses in under 1 ms */
  p.hier_chunk = 1 << 20;
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout((size_t)1 << 22, 4, 2, BIT(RONDO_ALGO_HIERARCHICAL)); /* 16 MiB */
  select_predict(&p, menu(), &in, c);
  double n = 16.0 * (1 << 20), ns = 1e-9;
  double cores = 2 * 0.5e-6 + (2 * 0.5 * ns + 1 * ns) * n;
  double link_bound = n * 0.4 * ns; /* 2 (N-1)/N n through a 0.4 ns/B link */
  double t = c[RONDO_ALGO_HIERARCHICAL].seconds;
  assert_true(t >= link_bound && t >= cores);
  p.hier_chunk = (size_t)1 << 30; /* one stripe: the phases add up */
  select_predict(&p, menu(), &in, c);
  double whole = c[RONDO_ALGO_HIERARCHICAL].seconds;
  assert_true(whole > link_bound + cores);
  assert_true(t < whole); /* pipelined: the cores' work hides behind the link */
}

/* How many stripes the hierarchical pipeline runs (algo_hier_stripes): on a
 * fast link stripes of at most one chunk; on a slow one (a chunk takes over
 * 2 ms to cross) stripes of 1 to 16 chunks, 4 of them where that fits, and
 * never over 1 GiB; under two stripes, none. The model prices the same:
 * on a slow link 16 MiB costs less in 4 stripes than in one piece. */
static void test_hierarchical_few_stripes_on_a_slow_link(void **state)
{
  (void)state;
  double mib = 1 << 20, gib = 1024 * mib;
  /* fast: stripes of a chunk, the last one short */
  assert_int_equal(algo_hier_stripes(16 * mib, mib, 0), 16);
  assert_int_equal(algo_hier_stripes(16 * mib + 1, mib, 0), 17);
  assert_int_equal(algo_hier_stripes(mib, mib, 0), 0);
  /* slow: up to 4 chunks, as many stripes as whole chunks */
  assert_int_equal(algo_hier_stripes(1.5 * mib, mib, 1), 0);
  assert_int_equal(algo_hier_stripes(2 * mib, mib, 1), 2);
  assert_int_equal(algo_hier_stripes(3.9 * mib, mib, 1), 3);
  /* up to 64 chunks, 4 stripes; above, stripes of at most 16 chunks */
  assert_int_equal(algo_hier_stripes(4 * mib, mib, 1), 4);
  assert_int_equal(algo_hier_stripes(16 * mib, mib, 1), 4);
  assert_int_equal(algo_hier_stripes(64 * mib, mib, 1), 4);
  assert_int_equal(algo_hier_stripes(79 * mib, mib, 1), 5); /* 15.8 MiB each */
  assert_int_equal(algo_hier_stripes(256 * mib, mib, 1), 16);
  /* at most 1 GiB a stripe, whatever the chunk */
  assert_int_equal(algo_hier_stripes(8 * gib, 512 * mib, 1), 8);
  assert_int_equal(algo_hier_stripes(3 * gib, gib, 1), 3);
  assert_int_equal(algo_hier_stripes(3 * gib - 1, gib, 1), 3); /* not 2 of 1.5 GiB */
  assert_int_equal(algo_hier_stripes(3 * gib - 1, gib, 0), 3);

  select_params_t p = unit_params;
  p.inter.beta = 8e-9; /* 1 Gbit/s: a 1 MiB stripe takes 8 ms */
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout(4 * (size_t)mib, 4, 2, BIT(RONDO_ALGO_HIERARCHICAL)); /* 16 MiB */
  p.hier_chunk = (size_t)mib;
  select_predict(&p, menu(), &in, c);
  double four = c[RONDO_ALGO_HIERARCHICAL].seconds;
  p.hier_chunk = (size_t)gib; /* one piece */
  select_predict(&p, menu(), &in, c);
  assert_true(four < c[RONDO_ALGO_HIERARCHICAL].seconds);
}

/* Across a node link that takes over 1 ms to carry one ring chunk the ring
 * sends each segment whole (algo_ring_chunk), and the model prices it so;
 * on a fast link, or within a node, it pipelines. */
static void test_ring_does_not_pipeline_over_a_slow_link(void **state)
{
  (void)state;
  size_t chunk = 256 * 1024;
  assert_true(algo_ring_chunk(chunk, 0) == chunk);        /* within a node */
  assert_true(algo_ring_chunk(chunk, 0.8e-9) == chunk);   /* 10 Gbit/s: 0.2 ms */
  assert_true(algo_ring_chunk(chunk, 8e-9) == (size_t)1 << 30); /* 1 Gbit/s: 2.1 ms */
  assert_true(algo_ring_chunk(65536, 8e-9) == 65536);     /* 0.5 ms */
  assert_true(algo_ring_chunk(0, 0) == chunk);            /* 0: the default */
  assert_true(algo_ring_chunk(0, 8e-9) == (size_t)1 << 30);

  select_params_t p = unit_params;
  p.ring_chunk = chunk;
  select_candidate_t c[SELECT_MAX_ALGOS];
  select_input_t in = layout((size_t)1 << 22, 2, 2, BIT(RONDO_ALGO_RING)); /* 16 MiB */
  double n = 16.0 * (1 << 20);
  p.inter.beta = 8e-9;
  select_predict(&p, menu(), &in, c);
  double whole = algo_ring_time(&p.inter, n, 2, (size_t)1 << 30, 0);
  assert_close(c[RONDO_ALGO_RING].seconds, whole);
  assert_close(algo_ring_time(&p.inter, n, 2, chunk, 1), whole);
  assert_true(whole > algo_ring_time(&p.inter, n, 2, chunk, 0)); /* no overlap */
  p.inter.beta = 0.8e-9;
  select_predict(&p, menu(), &in, c);
  assert_close(c[RONDO_ALGO_RING].seconds, algo_ring_time(&p.inter, n, 2, chunk, 0));
  /* one node: the intra level, never cut whole however slow */
  p.intra.beta = 8e-9;
  in = layout((size_t)1 << 22, 2, 1, BIT(RONDO_ALGO_RING));
  select_predict(&p, menu(), &in, c);
  assert_close(c[RONDO_ALGO_RING].seconds, algo_ring_time(&p.intra, n, 2, chunk, 0));
}

/* ---- tuning tables ----------------------------------------------------------------- */

static select_table_t *parse_ok(const char *text)
{
  select_table_t *t = NULL;
  rondo_status_t st = select_table_parse(text, "t.txt", algo_menu(), &t);
  if (st != RONDO_SUCCESS)
    fail_msg("parse failed: %s", rondo_last_error());
  assert_non_null(t);
  return t;
}

static rondo_algo_t lookup(const select_table_t *t, size_t bytes, int ranks, int nodes,
                           select_mem_t mem, int *line)
{
  select_input_t in = layout(bytes / 4, ranks, nodes, ALL_ALGOS);
  in.bytes = bytes;
  in.mem = mem;
  return select_table_lookup(t, &in, line);
}

static void test_parse_good_table_with_comments(void **state)
{
  (void)state;
  select_table_t *t = parse_ok("# generated by rondo-bench tune\n"
                               "\n"
                               "allreduce 0-8K     2-4 1 host recursive_doubling # small\n"
                               "  allreduce\t8K-64KiB * 1 * ring\r\n"
                               "allreduce 64K- * 2- host hierarchical\n"
                               "allreduce 1M * * device nccl");
  assert_int_equal(select_table_rules(t), 4);
  assert_string_equal(select_table_source(t), "t.txt");
  int line;
  assert_int_equal(lookup(t, 100, 2, 1, SELECT_MEM_HOST, &line),
                   RONDO_ALGO_RECURSIVE_DOUBLING);
  assert_int_equal(line, 3);
  assert_int_equal(lookup(t, 16384, 7, 1, SELECT_MEM_DEVICE, &line), RONDO_ALGO_RING);
  assert_int_equal(line, 4);
  assert_int_equal(lookup(t, 1 << 20, 64, 16, SELECT_MEM_HOST, &line),
                   RONDO_ALGO_HIERARCHICAL);
  assert_int_equal(line, 5);
  assert_int_equal(lookup(t, 1 << 20, 4, 1, SELECT_MEM_DEVICE, &line), RONDO_ALGO_NCCL);
  assert_int_equal(line, 6);
  assert_int_equal(lookup(t, 1 << 20, 4, 1, SELECT_MEM_HOST, &line), RONDO_ALGO_AUTO);
  assert_int_equal(line, 0);
  select_table_free(t);
}

static void test_range_bounds(void **state)
{
  (void)state;
  select_table_t *t = parse_ok("allreduce 0-8K 2-4 * * ring\n"
                               "allreduce 8K 2-4 * * shm\n"
                               "allreduce 8K- 2-4 * * mpi\n");
  /* bytes: half-open, so 8K belongs to the next rule; "8K" is exactly 8192 */
  assert_int_equal(lookup(t, 0, 2, 1, SELECT_MEM_HOST, NULL), RONDO_ALGO_RING);
  assert_int_equal(lookup(t, 8191, 2, 1, SELECT_MEM_HOST, NULL), RONDO_ALGO_RING);
  assert_int_equal(lookup(t, 8192, 2, 1, SELECT_MEM_HOST, NULL), RONDO_ALGO_SHM);
  assert_int_equal(lookup(t, 8193, 2, 1, SELECT_MEM_HOST, NULL), RONDO_ALGO_MPI);
  assert_int_equal(lookup(t, SIZE_MAX, 2, 1, SELECT_MEM_HOST, NULL), RONDO_ALGO_MPI);
  /* ranks: inclusive */
  assert_int_equal(lookup(t, 100, 4, 1, SELECT_MEM_HOST, NULL), RONDO_ALGO_RING);
  assert_int_equal(lookup(t, 100, 1, 1, SELECT_MEM_HOST, NULL), RONDO_ALGO_AUTO);
  assert_int_equal(lookup(t, 100, 5, 1, SELECT_MEM_HOST, NULL), RONDO_ALGO_AUTO);
  select_table_free(t);

  t = parse_ok("allreduce 1k-2KB 3 2-2 host ring\n");
  assert_int_equal(lookup(t, 1024, 3, 2, SELECT_MEM_HOST, NULL), RONDO_ALGO_RING);
  assert_int_equal(lookup(t, 2047, 3, 2, SELECT_MEM_HOST, NULL), RONDO_ALGO_RING);
  assert_int_equal(lookup(t, 2048, 3, 2, SELECT_MEM_HOST, NULL), RONDO_ALGO_AUTO);
  assert_int_equal(lookup(t, 1024, 3, 1, SELECT_MEM_HOST, NULL), RONDO_ALGO_AUTO);
  assert_int_equal(lookup(t, 1024, 3, 2, SELECT_MEM_DEVICE, NULL), RONDO_ALGO_AUTO);
  select_table_free(t);
}

static void test_empty_text_is_an_empty_table(void **state)
{
  (void)state;
  const char *texts[] = {"", "\n\n", "# only a comment\n   \t\n# another"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    select_table_t *t = parse_ok(texts[i]);
    assert_int_equal(select_table_rules(t), 0);
    int line = -1;
    assert_int_equal(lookup(t, 100, 2, 1, SELECT_MEM_HOST, &line), RONDO_ALGO_AUTO);
    assert_int_equal(line, 0);
    select_table_free(t);
  }
}

static void test_malformed_lines_are_errors_naming_the_line(void **state)
{
  (void)state;
  static const struct {
    const char *rule;
    const char *says;
  } bad[] = {
      {"bcast 0- * * * ring", "unknown collective 'bcast'"},
      {"allreduce 8K-4K * * * ring", "'8K-4K' is reversed"},
      {"allreduce 8K-8K * * * ring", "'8K-8K' is empty"},
      {"allreduce abc * * * ring", "bad byte range 'abc'"},
      {"allreduce -4 * * * ring", "bad byte range '-4'"},
      {"allreduce 4--8 * * * ring", "bad byte range '4--8'"},
      {"allreduce 4X * * * ring", "bad byte range '4X'"},
      {"allreduce 1.5M * * * ring", "bad byte range '1.5M'"},
      {"allreduce 99999999999999999999 * * * ring", "number too large"},
      {"allreduce 16777216T * * * ring", "number too large"},
      {"allreduce * 3000000000 * * ring", "number too large"},
      {"allreduce * 2K * * ring", "bad rank range '2K'"},
      {"allreduce * 4-2 * * ring", "rank range '4-2' is reversed"},
      {"allreduce * * x * ring", "bad node range 'x'"},
      {"allreduce * * * gpu ring", "unknown memory kind 'gpu'"},
      {"allreduce * * * * rign", "unknown algorithm 'rign'"},
      {"allreduce * * * * auto", "unknown algorithm 'auto'"},
      {"allreduce * * * ring", "too few fields (5)"},
      {"allreduce", "too few fields (1)"},
      {"allreduce * * * * ring extra", "too many fields (7)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "# header\nallreduce 0- * * * mpi\n%s # c\n", bad[i].rule);
    select_table_t *t = (select_table_t *)text; /* any non-NULL: must be reset */
    assert_int_equal(select_table_parse(text, "bad.txt", algo_menu(), &t), RONDO_ERR_INVALID_ARG);
    assert_null(t);
    const char *msg = rondo_last_error();
    assert_contains(msg, "bad.txt line 3:");
    assert_contains(msg, bad[i].says);
  }
}

static void test_table_rule_beats_the_model(void **state)
{
  (void)state;
  select_table_t *t = parse_ok("allreduce 0-1M * 1 host mpi\n");
  select_input_t in = layout(1024, 4, 1, HOST_ALGOS);
  select_result_t res;
  assert_int_equal(choose(&select_default_params, t, &in, &res), RONDO_ALGO_MPI);
  assert_string_equal(res.reason, "tuning file t.txt line 1");
  /* outside the rule's range: the model */
  in = layout(1 << 20, 4, 1, HOST_ALGOS);
  assert_int_equal(choose(&select_default_params, t, &in, &res), RONDO_ALGO_SHM);
  assert_string_equal(res.reason, "lowest predicted time");
  /* forced beats the table */
  in = layout(1024, 4, 1, HOST_ALGOS);
  assert_int_equal(select_choose(&select_default_params, menu(), t, RONDO_ALGO_RING, &in, &res),
                   RONDO_ALGO_RING);
  assert_string_equal(res.reason, "forced by RONDO_ALLREDUCE_ALGO");
  select_table_free(t);
}

static void test_table_skips_rules_whose_algorithm_is_not_eligible(void **state)
{
  (void)state;
  select_table_t *t = parse_ok("allreduce * * * * shm\n"
                               "allreduce * * * * rabenseifner\n"
                               "allreduce * * * * ring\n");
  /* 2 nodes: shm is not eligible, rabenseifner is */
  select_input_t in = layout(1024, 4, 2, HOST_ALGOS);
  select_result_t res;
  assert_int_equal(choose(&select_default_params, t, &in, &res), RONDO_ALGO_RABENSEIFNER);
  assert_string_equal(res.reason,
                      "tuning file t.txt line 2; skipped tuning file t.txt line 1: shm not "
                      "eligible");
  /* 3 elements on 4 ranks: rabenseifner still (it runs below p' elements) */
  in = layout(3, 4, 2, HOST_ALGOS);
  assert_int_equal(choose(&select_default_params, t, &in, &res), RONDO_ALGO_RABENSEIFNER);
  /* 1 node: shm is eligible */
  in = layout(3, 4, 1, HOST_ALGOS);
  assert_int_equal(choose(&select_default_params, t, &in, &res), RONDO_ALGO_SHM);
  /* lookup itself ignores eligibility */
  int line;
  assert_int_equal(select_table_lookup(t, &in, &line), RONDO_ALGO_SHM);
  assert_int_equal(line, 1);
  select_table_free(t);

  /* no eligible rule: the model, and the reason says which rule was skipped */
  t = parse_ok("allreduce * * * * nccl\n");
  in = layout(1024, 2, 1, P2P_ALGOS);
  assert_int_equal(choose(&select_default_params, t, &in, &res),
                   RONDO_ALGO_RECURSIVE_DOUBLING);
  assert_string_equal(res.reason,
                      "lowest predicted time; skipped tuning file t.txt line 1: nccl not "
                      "eligible");
  select_table_free(t);
}

/* The input of a reduce-scatter or all-gather of p equal blocks of block
 * float32 elements (bytes: every block's). */
static select_input_t family_layout(rondo_coll_t coll, size_t block, int ranks, int nodes)
{
  select_input_t in = layout(block * (size_t)ranks, ranks, nodes, 0);
  in.coll = coll;
  in.block_max = block;
  in.blocks_equal = 1;
  in.node_blocks = 1;
  return in;
}

/* On device memory each family chooses between its nccl and staged
 * members alone: nccl where NCCL can run and the blocks are equal, staged
 * where ranks share a GPU, NCCL lacks the type or the blocks differ; the
 * host members are not eligible, and nccl and staged are not on host
 * memory. */
static void test_families_on_device_memory(void **state)
{
  (void)state;
  static const rondo_coll_t colls[] = {RONDO_COLL_REDUCE_SCATTER, RONDO_COLL_ALLGATHER};
  for (size_t k = 0; k < 2; k++) {
    const select_menu_t *m = k == 0 ? algo_rs_menu() : algo_ag_menu();
    select_result_t res;
    for (size_t block = 1; block <= (1u << 22); block *= 64) {
      select_input_t in = family_layout(colls[k], block, 4, 2);
      in.mem = SELECT_MEM_DEVICE;
      in.has_nccl = 1;
      in.gpu_shared = 0;
      in.gpu_node_shared = 0;
      assert_int_equal(select_choose(&select_default_params, m, NULL, RONDO_ALGO_AUTO, &in, &res),
                       RONDO_ALGO_NCCL);
      assert_true(res.cand[RONDO_ALGO_RING].why_not != NULL);
      in.gpu_shared = 1;
      assert_int_equal(select_choose(&select_default_params, m, NULL, RONDO_ALGO_AUTO, &in, &res),
                       RONDO_ALGO_STAGED);
      assert_non_null(strstr(res.cand[RONDO_ALGO_NCCL].why_not, "share a GPU"));
      in.gpu_shared = 0;
      in.blocks_equal = 0;
      assert_int_equal(select_choose(&select_default_params, m, NULL, RONDO_ALGO_AUTO, &in, &res),
                       RONDO_ALGO_STAGED);
      assert_non_null(strstr(res.cand[RONDO_ALGO_NCCL].why_not, "uneven blocks"));
      in.blocks_equal = 1;
      in.has_nccl = 0;
      assert_int_equal(select_choose(&select_default_params, m, NULL, RONDO_ALGO_AUTO, &in, &res),
                       RONDO_ALGO_STAGED);
      in = family_layout(colls[k], block, 4, 2); /* host memory */
      rondo_algo_t host = select_choose(&select_default_params, m, NULL, RONDO_ALGO_AUTO, &in,
                                        &res);
      assert_true(host != RONDO_ALGO_NCCL && host != RONDO_ALGO_STAGED &&
                  host != RONDO_ALGO_AUTO);
      assert_true(res.cand[RONDO_ALGO_STAGED].why_not != NULL);
    }
  }
}

/* One table holds every collective's rules (the menus chain from the
 * all-reduce's): each rule names its collective, its algorithm is one of
 * that collective's, and a lookup matches only the input's collective. */
static void test_table_rules_per_collective(void **state)
{
  (void)state;
  select_table_t *t = parse_ok("allreduce * * * * ring\n"
                               "reduce_scatter 0-8K * * host pairwise # small\n"
                               "reduce_scatter 8K- * * * recursive_halving\n"
                               "allgather * 2-4 * * bruck\n"
                               "allgather * * * host recursive_doubling\n"
                               "reduce_scatter * * * * shm\n"
                               "allgather * * * * mpi\n");
  assert_int_equal(select_table_rules(t), 7);
  int line = -1;
  select_input_t in = layout(1024, 4, 1, ALL_ALGOS);
  assert_int_equal(select_table_lookup(t, &in, &line), RONDO_ALGO_RING);
  assert_int_equal(line, 1);
  in = family_layout(RONDO_COLL_REDUCE_SCATTER, 256, 4, 1); /* 4 KiB */
  assert_int_equal(select_table_lookup(t, &in, &line), RONDO_ALGO_PAIRWISE);
  assert_int_equal(line, 2);
  assert_string_equal(select_table_rule_algo(t, line), "pairwise");
  in = family_layout(RONDO_COLL_REDUCE_SCATTER, 2048, 4, 2); /* 32 KiB */
  assert_int_equal(select_table_lookup(t, &in, &line), RONDO_ALGO_RECURSIVE_HALVING);
  assert_int_equal(line, 3);
  in = family_layout(RONDO_COLL_ALLGATHER, 256, 3, 1);
  assert_int_equal(select_table_lookup(t, &in, &line), RONDO_ALGO_BRUCK);
  assert_int_equal(line, 4);
  assert_string_equal(select_table_rule_algo(t, line), "bruck");
  in = family_layout(RONDO_COLL_ALLGATHER, 256, 8, 2);
  assert_int_equal(select_table_lookup(t, &in, &line), RONDO_ALGO_RECURSIVE_DOUBLING);
  assert_int_equal(line, 5);
  in.mem = SELECT_MEM_DEVICE;
  assert_int_equal(select_table_lookup(t, &in, &line), RONDO_ALGO_MPI);
  assert_int_equal(line, 7);
  /* among the allowed: the rules of the input's collective only */
  in = family_layout(RONDO_COLL_REDUCE_SCATTER, 256, 4, 1);
  assert_int_equal(select_table_lookup_among(t, &in, BIT(RONDO_ALGO_SHM), &line),
                   RONDO_ALGO_SHM);
  assert_int_equal(line, 6);
  /* ring is allowed, but its rule is the all-reduce's */
  assert_int_equal(select_table_lookup_among(t, &in, BIT(RONDO_ALGO_RING), &line),
                   RONDO_ALGO_AUTO);
  assert_int_equal(line, 0);
  in = family_layout(RONDO_COLL_ALLGATHER, 256, 8, 1);
  assert_int_equal(select_table_lookup_among(t, &in, BIT(RONDO_ALGO_BRUCK), &line),
                   RONDO_ALGO_AUTO);
  assert_int_equal(line, 0);

  /* the selector takes a family's rule over its model, and names the knob
   * that forces its members */
  select_result_t res;
  in = family_layout(RONDO_COLL_REDUCE_SCATTER, 256, 4, 1);
  assert_int_equal(select_choose(&select_default_params, algo_rs_menu(), t, RONDO_ALGO_AUTO,
                                 &in, &res),
                   RONDO_ALGO_PAIRWISE);
  assert_string_equal(res.reason, "tuning file t.txt line 2");
  assert_int_equal(select_choose(&select_default_params, algo_rs_menu(), t, RONDO_ALGO_RING,
                                 &in, &res),
                   RONDO_ALGO_RING);
  assert_string_equal(res.reason, "forced by RONDO_REDUCE_SCATTER_ALGO");
  in = family_layout(RONDO_COLL_ALLGATHER, 256, 3, 1);
  assert_int_equal(select_choose(&select_default_params, algo_ag_menu(), t, RONDO_ALGO_AUTO,
                                 &in, &res),
                   RONDO_ALGO_BRUCK);
  assert_string_equal(res.reason, "tuning file t.txt line 4");
  assert_int_equal(select_choose(&select_default_params, algo_ag_menu(), t, RONDO_ALGO_RING,
                                 &in, &res),
                   RONDO_ALGO_RING);
  assert_string_equal(res.reason, "forced by RONDO_ALLGATHER_ALGO");
  select_table_free(t);

  /* a table of reduce-scatter rules says nothing of the others */
  t = parse_ok("reduce_scatter * * * * ring\n");
  in = layout(1024, 4, 1, ALL_ALGOS);
  assert_int_equal(select_table_lookup(t, &in, &line), RONDO_ALGO_AUTO);
  assert_int_equal(line, 0);
  in = family_layout(RONDO_COLL_ALLGATHER, 256, 4, 1);
  assert_int_equal(select_table_lookup(t, &in, &line), RONDO_ALGO_AUTO);
  assert_int_equal(line, 0);
  in = family_layout(RONDO_COLL_REDUCE_SCATTER, 256, 4, 1);
  assert_int_equal(select_table_lookup(t, &in, &line), RONDO_ALGO_RING);
  assert_int_equal(line, 1);
  /* the same rule for another collective is another table */
  uint64_t h = select_table_hash(t);
  select_table_free(t);
  t = parse_ok("allreduce * * * * ring\n");
  assert_true(select_table_hash(t) != h);
  uint64_t h2 = select_table_hash(t);
  select_table_free(t);
  t = parse_ok("allgather * * * * ring\n");
  assert_true(select_table_hash(t) != h && select_table_hash(t) != h2);
  select_table_free(t);

  /* each collective takes its own menu's names, the error naming the line */
  static const struct {
    const char *rule;
    const char *says;
  } bad[] = {
      {"reduce_scatter * * * * rabenseifner", "unknown algorithm 'rabenseifner'"},
      {"reduce_scatter * * * * hierarchical_nccl", "unknown algorithm 'hierarchical_nccl'"},
      {"reduce_scatter * * * * adasum", "unknown algorithm 'adasum'"},
      {"reduce_scatter * * * * bruck", "unknown algorithm 'bruck'"},
      {"reduce_scatter * * * * recursive_doubling", "unknown algorithm 'recursive_doubling'"},
      {"reduce_scatter * * * * auto", "unknown algorithm 'auto'"},
      {"allgather * * * * adasum", "unknown algorithm 'adasum'"},
      {"allgather * * * * rabenseifner", "unknown algorithm 'rabenseifner'"},
      {"allgather * * * * hierarchical_nccl", "unknown algorithm 'hierarchical_nccl'"},
      {"allgather * * * * pairwise", "unknown algorithm 'pairwise'"},
      {"allgather * * * * recursive_halving", "unknown algorithm 'recursive_halving'"},
      {"allreduce * * * * pairwise", "unknown algorithm 'pairwise'"},
      {"allreduce * * * * recursive_halving", "unknown algorithm 'recursive_halving'"},
      {"allreduce * * * * bruck", "unknown algorithm 'bruck'"},
      {"reduce-scatter * * * * ring", "unknown collective 'reduce-scatter'"},
      {"all_gather * * * * ring", "unknown collective 'all_gather'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "reduce_scatter 0- * * * mpi\nallgather 0- * * * bruck\n%s\n",
             bad[i].rule);
    select_table_t *out = (select_table_t *)text; /* any non-NULL: must be reset */
    assert_int_equal(select_table_parse(text, "bad.txt", algo_menu(), &out),
                     RONDO_ERR_INVALID_ARG);
    assert_null(out);
    const char *msg = rondo_last_error();
    assert_contains(msg, "bad.txt line 3:");
    assert_contains(msg, bad[i].says);
  }
  /* the messages list what would do */
  select_table_t *out = NULL;
  assert_int_equal(select_table_parse("bcast * * * * ring\n", "bad.txt", algo_menu(), &out),
                   RONDO_ERR_INVALID_ARG);
  assert_contains(rondo_last_error(), "expected allreduce, reduce_scatter, allgather");
  assert_int_equal(
      select_table_parse("reduce_scatter * * * * bruck\n", "bad.txt", algo_menu(), &out),
      RONDO_ERR_INVALID_ARG);
  assert_contains(rondo_last_error(), algo_family_names(RONDO_COLL_REDUCE_SCATTER));
  /* a chain from the reduce-scatter's menu knows no all-reduce */
  assert_int_equal(
      select_table_parse("allreduce * * * * ring\n", "bad.txt", algo_rs_menu(), &out),
      RONDO_ERR_INVALID_ARG);
  assert_contains(rondo_last_error(), "bad.txt line 1: unknown collective 'allreduce'");
  select_table_t *rs = NULL;
  assert_int_equal(select_table_parse("reduce_scatter * * * * pairwise\nallgather * * * * bruck\n",
                                      "rs.txt", algo_rs_menu(), &rs),
                   RONDO_SUCCESS);
  assert_int_equal(select_table_rules(rs), 2);
  select_table_free(rs);
}

static void test_load_reads_a_file_and_reports_io_errors(void **state)
{
  (void)state;
  char path[] = "/tmp/rondo-test-select-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char text[] = "allreduce 0-4K * * host ring\n";
  assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
  close(fd);

  select_table_t *t = NULL;
  assert_int_equal(select_table_load(path, algo_menu(), &t), RONDO_SUCCESS);
  assert_string_equal(select_table_source(t), path);
  assert_int_equal(select_table_rules(t), 1);
  select_table_free(t);

  /* a NUL byte would silently hide the rest of the file */
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fwrite("allreduce * * * * ring\n\0allreduce", 1, 33, f);
  fclose(f);
  assert_int_equal(select_table_load(path, algo_menu(), &t), RONDO_ERR_INVALID_ARG);
  assert_null(t);
  assert_contains(rondo_last_error(), "NUL byte");

  /* a malformed file names the path and the line */
  f = fopen(path, "w");
  assert_non_null(f);
  fputs("\nallreduce * * * * rign\n", f);
  fclose(f);
  assert_int_equal(select_table_load(path, algo_menu(), &t), RONDO_ERR_INVALID_ARG);
  char want[64];
  snprintf(want, sizeof want, "%s line 2:", path);
  assert_contains(rondo_last_error(), want);
  unlink(path);

  assert_int_equal(select_table_load(path, algo_menu(), &t), RONDO_ERR_IO);
  assert_null(t);
  assert_contains(rondo_last_error(), path);
}

/* ---- the algorithm table -------------------------------------------------------- */

/* One row per all-reduce id (1 .. adasum), in id order, each complete, found
 * by id and name; the ids after adasum are other families' and no
 * all-reduce's. */
static void test_algorithm_table_is_complete(void **state)
{
  (void)state;
  const select_menu_t *all = algo_menu();
  assert_int_equal(all->n, RONDO_ALGO_ADASUM);
  assert_int_equal(all->coll, RONDO_COLL_ALLREDUCE);
  /* the chain the tuning parser reads: all-reduce, reduce-scatter, all-gather */
  assert_ptr_equal(all->next, algo_rs_menu());
  assert_ptr_equal(algo_rs_menu()->next, algo_ag_menu());
  assert_null(algo_ag_menu()->next);
  assert_null(algo_find(RONDO_ALGO_AUTO));
  assert_null(algo_find(RONDO_ALGO_COUNT));
  assert_null(algo_find((rondo_algo_t)-1));
  assert_null(algo_find_name("auto"));
  assert_null(algo_find_name(NULL));
  for (int id = RONDO_ALGO_AUTO + 1; id <= RONDO_ALGO_ADASUM; id++) {
    const algo_desc_t *d = algo_find((rondo_algo_t)id);
    assert_non_null(d);
    assert_int_equal(d->select.id, id);
    assert_string_equal(d->select.name, rondo_algo_name((rondo_algo_t)id));
    assert_ptr_equal(algo_find_name(d->select.name), d);
    assert_ptr_equal(algo_family_find(RONDO_COLL_ALLREDUCE, (rondo_algo_t)id), d);
    assert_ptr_equal(algo_family_find_name(RONDO_COLL_ALLREDUCE, d->select.name), d);
    assert_non_null(d->select.cost);
    assert_true(d->collectives & ALGO_SERVES_ALLREDUCE);
    assert_non_null(strstr(algo_names(), d->select.name));
    assert_non_null(strstr(algo_family_names(RONDO_COLL_ALLREDUCE), d->select.name));
    /* the menu is the table, in its order */
    assert_ptr_equal(all->algo[id - 1], &d->select);
    /* every row runs (nccl and staged on device buffers: lib/algo/common/gpu.c) */
    assert_non_null(d->allreduce);
    assert_int_equal(d->select.mem, id == RONDO_ALGO_NCCL || id == RONDO_ALGO_STAGED ||
                                            id == RONDO_ALGO_HIERARCHICAL_NCCL
                                        ? SELECT_MEM_DEVICE
                                        : SELECT_MEM_HOST);
  }
  for (int id = RONDO_ALGO_ADASUM + 1; id < RONDO_ALGO_COUNT; id++) {
    assert_null(algo_find((rondo_algo_t)id));
    assert_null(algo_family_find(RONDO_COLL_ALLREDUCE, (rondo_algo_t)id));
    assert_null(algo_find_name(rondo_algo_name((rondo_algo_t)id)));
  }
}

/* The reduce-scatter and all-gather tables, their members written out here:
 * each row is found by id and name in its family and in no other, has a
 * cost, serves its collective and runs blocks. */
static void test_family_tables_are_complete(void **state)
{
  (void)state;
  static const struct {
    rondo_coll_t coll;
    unsigned serves;
    rondo_algo_t members[8];
  } fam[] = {
      {RONDO_COLL_REDUCE_SCATTER,
       ALGO_SERVES_REDUCE_SCATTER,
       {RONDO_ALGO_MPI, RONDO_ALGO_RING, RONDO_ALGO_PAIRWISE, RONDO_ALGO_RECURSIVE_HALVING,
        RONDO_ALGO_SHM, RONDO_ALGO_HIERARCHICAL, RONDO_ALGO_NCCL, RONDO_ALGO_STAGED}},
      {RONDO_COLL_ALLGATHER,
       ALGO_SERVES_ALLGATHER,
       {RONDO_ALGO_MPI, RONDO_ALGO_RING, RONDO_ALGO_RECURSIVE_DOUBLING, RONDO_ALGO_BRUCK,
        RONDO_ALGO_SHM, RONDO_ALGO_HIERARCHICAL, RONDO_ALGO_NCCL, RONDO_ALGO_STAGED}},
  };
  for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
    rondo_coll_t coll = fam[f].coll;
    const select_menu_t *m = coll == RONDO_COLL_REDUCE_SCATTER ? algo_rs_menu() : algo_ag_menu();
    size_t want_n = sizeof fam[f].members / sizeof fam[f].members[0];
    assert_int_equal(m->coll, coll);
    assert_int_equal(m->n, (int)want_n);
    unsigned seen = 0;
    for (int i = 0; i < m->n; i++) {
      const select_algo_t *row = m->algo[i];
      rondo_algo_t id = row->id;
      /* one of the members written out above; mpi first (the selector's
       * preference on a tie: on one rank every member is a copy) */
      int listed = 0;
      for (size_t k = 0; k < want_n; k++)
        listed |= fam[f].members[k] == id;
      if (!listed)
        fail_msg("%s: %s is on the table", rondo_coll_name(coll), row->name);
      assert_true(i > 0 || id == RONDO_ALGO_MPI);
      assert_true(id > RONDO_ALGO_AUTO && id < RONDO_ALGO_COUNT);
      assert_false(seen & BIT(id)); /* one row per id */
      seen |= BIT(id);
      const algo_desc_t *d = algo_family_find(coll, id);
      assert_non_null(d);
      assert_ptr_equal(&d->select, row);
      assert_ptr_equal(select_menu_find(m, id), row);
      assert_string_equal(row->name, rondo_algo_name(id));
      assert_ptr_equal(algo_family_find_name(coll, row->name), d);
      assert_non_null(strstr(algo_family_names(coll), row->name));
      assert_non_null(row->cost);
      /* nccl and staged take device buffers, the others host buffers */
      assert_int_equal(row->mem, id == RONDO_ALGO_NCCL || id == RONDO_ALGO_STAGED
                                     ? SELECT_MEM_DEVICE
                                     : SELECT_MEM_HOST);
      assert_int_equal(row->adasum, 0);
      assert_int_equal(d->collectives, fam[f].serves);
      assert_false(d->collectives & ALGO_SERVES_ALLREDUCE);
      assert_non_null(d->blocks);
      assert_null(d->allreduce);
      /* not the all-reduce's descriptor, though the id may be shared */
      assert_ptr_not_equal(d, algo_find(id));
    }
    /* nothing else is the family's */
    for (int id = RONDO_ALGO_AUTO; id <= RONDO_ALGO_COUNT; id++)
      if (!(seen & BIT(id)))
        assert_null(algo_family_find(coll, (rondo_algo_t)id));
    assert_null(algo_family_find(coll, (rondo_algo_t)-1));
    assert_null(algo_family_find_name(coll, "auto"));
    assert_null(algo_family_find_name(coll, NULL));
    assert_null(algo_family_find_name(coll, "rabenseifner"));
    assert_null(algo_family_find_name(coll, "adasum"));
  }
  /* pairwise and recursive_halving are reduce-scatter's alone, bruck
   * all-gather's alone */
  assert_null(algo_family_find(RONDO_COLL_ALLGATHER, RONDO_ALGO_PAIRWISE));
  assert_null(algo_family_find(RONDO_COLL_ALLGATHER, RONDO_ALGO_RECURSIVE_HALVING));
  assert_null(algo_family_find(RONDO_COLL_REDUCE_SCATTER, RONDO_ALGO_BRUCK));
  assert_null(algo_family_find(RONDO_COLL_REDUCE_SCATTER, RONDO_ALGO_RECURSIVE_DOUBLING));
  assert_null(algo_family_find((rondo_coll_t)RONDO_COLL_COUNT, RONDO_ALGO_RING));
  assert_null(algo_family_find_name((rondo_coll_t)RONDO_COLL_COUNT, "ring"));

  /* one id space: rondo_algo_name names every id, each name once, and
   * every id is a member of some family */
  for (int id = RONDO_ALGO_AUTO + 1; id < RONDO_ALGO_COUNT; id++) {
    const char *name = rondo_algo_name((rondo_algo_t)id);
    assert_non_null(name);
    rondo_algo_t back = RONDO_ALGO_AUTO;
    assert_int_equal(rondo_algo_from_name(name, &back), RONDO_SUCCESS);
    assert_int_equal(back, id);
    for (int other = RONDO_ALGO_AUTO; other < id; other++)
      assert_string_not_equal(name, rondo_algo_name((rondo_algo_t)other));
    int families = 0;
    for (int c = 0; c < RONDO_COLL_COUNT; c++) {
      const algo_desc_t *d = algo_family_find((rondo_coll_t)c, (rondo_algo_t)id);
      if (d != NULL) {
        families++;
        assert_string_equal(d->select.name, name); /* an id names one idea */
      }
    }
    assert_true(families >= 1);
  }
  assert_null(rondo_algo_name(RONDO_ALGO_COUNT));
}

/* ---- the explanation --------------------------------------------------------------- */

static void test_explain_lists_every_algorithm_and_the_choice(void **state)
{
  (void)state;
  select_input_t in = layout((size_t)1 << 18, 4, 2, ALL_ALGOS);
  select_result_t res;
  select_params_t slow = select_default_params; /* a 1 GB/s network */
  slow.inter.beta = 1.0e-9;
  choose(&slow, NULL, &in, &res);
  char buf[2048];
  int n = select_explain(menu(), &res, &in, buf, sizeof buf);
  assert_int_equal(n, (int)strlen(buf));
  /* every all-reduce algorithm has its row; the other families' do not */
  const select_menu_t *all = algo_menu();
  for (int i = 0; i < all->n; i++) {
    char row[64];
    snprintf(row, sizeof row, "\n  %s ", all->algo[i]->name);
    assert_contains(buf, row);
  }
  for (int a = RONDO_ALGO_ADASUM + 1; a < RONDO_ALGO_COUNT; a++)
    assert_null(strstr(buf, rondo_algo_name((rondo_algo_t)a)));
  assert_contains(buf, "allreduce 1048576 bytes (262144 elements), 4 ranks on 2 nodes "
                       "(2 per node), host memory\n");
  assert_contains(buf, "ranks span more than one node");
  assert_contains(buf, "needs device memory");
  assert_contains(buf, "<- chosen (lowest predicted time)");
  assert_contains(buf, "choice: hierarchical (lowest predicted time)\n");
  /* one "chosen", on the hierarchical row */
  const char *chosen = strstr(buf, "<- chosen");
  assert_null(strstr(chosen + 1, "<- chosen"));
  const char *row = strstr(buf, "  hierarchical");
  assert_non_null(row);
  assert_true(chosen > row && memchr(row, '\n', (size_t)(chosen - row)) == NULL);

  /* snprintf semantics: the length it wanted, a truncated NUL-terminated prefix */
  assert_int_equal(select_explain(menu(), &res, &in, NULL, 0), n);
  char small[40];
  memset(small, 'x', sizeof small);
  assert_int_equal(select_explain(menu(), &res, &in, small, sizeof small), n);
  assert_int_equal(strlen(small), sizeof small - 1);
  assert_memory_equal(small, buf, sizeof small - 1);
}

/* A family's explanation: its collective on the input line, a row for each
 * of its members and none for anything else, one choice. */
static void test_explain_lists_a_familys_members(void **state)
{
  (void)state;
  for (int c = RONDO_COLL_REDUCE_SCATTER; c <= RONDO_COLL_ALLGATHER; c++) {
    rondo_coll_t coll = (rondo_coll_t)c;
    const select_menu_t *m = coll == RONDO_COLL_REDUCE_SCATTER ? algo_rs_menu() : algo_ag_menu();
    select_input_t in = family_layout(coll, 1024, 4, 2);
    select_result_t res;
    rondo_algo_t got = select_choose(&select_default_params, m, NULL, RONDO_ALGO_AUTO, &in, &res);
    assert_true(got != RONDO_ALGO_AUTO);
    assert_non_null(algo_family_find(coll, got));
    char buf[2048], want[128];
    int n = select_explain(m, &res, &in, buf, sizeof buf);
    assert_int_equal(n, (int)strlen(buf));
    snprintf(want, sizeof want, "%s 16384 bytes (4096 elements), 4 ranks on 2 nodes",
             rondo_coll_name(coll));
    assert_true(strncmp(buf, want, strlen(want)) == 0);
    for (int id = RONDO_ALGO_AUTO + 1; id < RONDO_ALGO_COUNT; id++) {
      snprintf(want, sizeof want, "\n  %s ", rondo_algo_name((rondo_algo_t)id));
      if (algo_family_find(coll, (rondo_algo_t)id) != NULL)
        assert_contains(buf, want);
      else if (strstr(buf, want) != NULL)
        fail_msg("%s: a row for %s: %s", rondo_coll_name(coll),
                 rondo_algo_name((rondo_algo_t)id), buf);
    }
    assert_contains(buf, "ranks span more than one node"); /* shm, on 2 nodes */
    snprintf(want, sizeof want, "choice: %s (lowest predicted time)\n", rondo_algo_name(got));
    assert_contains(buf, want);
    const char *chosen = strstr(buf, "<- chosen");
    assert_non_null(chosen);
    assert_null(strstr(chosen + 1, "<- chosen"));
    snprintf(want, sizeof want, "\n  %s ", rondo_algo_name(got));
    const char *row = strstr(buf, want);
    assert_true(chosen > row && memchr(row + 1, '\n', (size_t)(chosen - row - 1)) == NULL);
  }
}

static void test_explain_when_nothing_is_eligible(void **state)
{
  (void)state;
  select_input_t in = layout(10, 3, 1, HOST_ALGOS);
  in.mem = SELECT_MEM_DEVICE;
  in.min_local = 1;
  select_result_t res;
  choose(&select_default_params, NULL, &in, &res);
  char buf[2048];
  select_explain(menu(), &res, &in, buf, sizeof buf);
  assert_contains(buf, "3 ranks on 1 node (1-3 per node), device memory");
  assert_contains(buf, "host algorithm: buffer is device memory");
  assert_contains(buf, "choice: none (no eligible algorithm)\n");
  assert_null(strstr(buf, "<- chosen"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_predictions_match_closed_forms),
      cmocka_unit_test(test_non_power_of_two_folds_two_extra_steps),
      cmocka_unit_test(test_messages_above_the_eager_limit_pay_rndv_alpha),
      cmocka_unit_test(test_ring_wins_when_bandwidth_dominates),
      cmocka_unit_test(test_recursive_doubling_wins_when_latency_dominates),
      cmocka_unit_test(test_one_rank_predicts_a_copy_and_mpi_wins_the_tie),
      cmocka_unit_test(test_rabenseifner_below_pof2_elements),
      cmocka_unit_test(test_rabenseifner_doubling_radix),
      cmocka_unit_test(test_rabenseifner_below_pof2_on_a_shared_backbone),
      cmocka_unit_test(test_shm_only_on_one_node_and_hierarchical_only_across),
      cmocka_unit_test(test_unavailable_algorithms_are_not_eligible),
      cmocka_unit_test(test_host_memory_never_picks_nccl),
      cmocka_unit_test(test_device_memory_picks_nccl),
      cmocka_unit_test(test_shared_gpu_or_no_nccl_picks_staged),
      cmocka_unit_test(test_hierarchical_nccl_where_gpus_are_shared_across_nodes),
      cmocka_unit_test(test_device_memory_without_device_algorithms_chooses_none),
      cmocka_unit_test(test_forced_wins_even_when_not_eligible),
      cmocka_unit_test(test_default_params_rank_the_2rank_sweep),
      cmocka_unit_test(test_default_params_pick_shm_on_one_node),
      cmocka_unit_test(test_default_params_pick_hierarchical_across_nodes),
      cmocka_unit_test(test_butterfly_steps_share_the_node_link),
      cmocka_unit_test(test_butterfly_steps_priced_by_distance),
      cmocka_unit_test(test_node_aware_mpi_crosses_once_per_node),
      cmocka_unit_test(test_check_by_exchange_where_mpi_is_flat),
      cmocka_unit_test(test_rabenseifner_crosses_with_its_small_pieces),
      cmocka_unit_test(test_small_calls_across_nodes_ride_in_the_check),
      cmocka_unit_test(test_hierarchical_not_chosen_with_one_rank_per_node),
      cmocka_unit_test(test_hierarchical_pipeline_overlaps_cores_and_link),
      cmocka_unit_test(test_hierarchical_few_stripes_on_a_slow_link),
      cmocka_unit_test(test_ring_does_not_pipeline_over_a_slow_link),
      cmocka_unit_test(test_parse_good_table_with_comments),
      cmocka_unit_test(test_range_bounds),
      cmocka_unit_test(test_empty_text_is_an_empty_table),
      cmocka_unit_test(test_malformed_lines_are_errors_naming_the_line),
      cmocka_unit_test(test_table_rule_beats_the_model),
      cmocka_unit_test(test_table_skips_rules_whose_algorithm_is_not_eligible),
      cmocka_unit_test(test_table_rules_per_collective),
      cmocka_unit_test(test_load_reads_a_file_and_reports_io_errors),
      cmocka_unit_test(test_algorithm_table_is_complete),
      cmocka_unit_test(test_family_tables_are_complete),
      cmocka_unit_test(test_families_on_device_memory),
      cmocka_unit_test(test_explain_lists_every_algorithm_and_the_choice),
      cmocka_unit_test(test_explain_lists_a_familys_members),
      cmocka_unit_test(test_explain_when_nothing_is_eligible),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
