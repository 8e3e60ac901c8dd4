/* The engine's coordinator (lib/engine/coordinator.c) on hand-made records:
 * what rank 0 decides for names that are ready, missing, mismatched,
 * refused, joined, stalled, left behind by a departing rank, and grouped.
 * No MPI: the coordinator is a pure function of the records and the cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "engine/coordinator.h"

#define MAX_RANKS 4
#define MAX_RECS 8

/* A world of up to MAX_RANKS ranks and their records. */
typedef struct {
  int size;
  eng_record_t recs[MAX_RANKS][MAX_RECS];
  uint32_t n[MAX_RANKS];
  int joined[MAX_RANKS], stopping[MAX_RANKS];
  double warn, abort;
  eng_cache_t cache;
  eng_cycle_t out;
  eng_stalls_t stalls;
} world_t;

static eng_sig_t allreduce(uint64_t count)
{
  eng_sig_t s;
  memset(&s, 0, sizeof s);
  s.kind = ENG_ALLREDUCE;
  s.dtype = RONDO_FLOAT32;
  s.op = RONDO_SUM;
  s.count = count;
  s.prescale = s.postscale = 1.0;
  return s;
}

static void world_init(world_t *w, int size, int cache_capacity)
{
  memset(w, 0, sizeof *w);
  w->size = size;
  w->warn = 60;
  assert_int_equal(eng_cache_init(&w->cache, cache_capacity), RONDO_SUCCESS);
}

static void world_free(world_t *w)
{
  eng_cycle_free(&w->out);
  eng_cache_free(&w->cache);
}

/* Rank r has name pending with sig, submitted age seconds ago. */
static eng_record_t *add(world_t *w, int r, const char *name, eng_sig_t sig, double age)
{
  eng_record_t *rec = &w->recs[r][w->n[r]++];
  memset(rec, 0, sizeof *rec);
  rec->name = (char *)name;
  rec->sig = sig;
  rec->age = age;
  return rec;
}

/* Every rank has name pending with sig. */
static void add_all(world_t *w, const char *name, eng_sig_t sig)
{
  for (int r = 0; r < w->size; r++)
    add(w, r, name, sig, 0.001);
}

static void decide(world_t *w)
{
  const eng_record_t *rows[MAX_RANKS];
  for (int r = 0; r < w->size; r++)
    rows[r] = w->recs[r];
  eng_coord_in_t in = {w->size, rows, w->n, w->joined, w->stopping, w->warn, w->abort};
  eng_cycle_free(&w->out);
  assert_int_equal(eng_coordinate(&in, &w->cache, &w->out, &w->stalls), RONDO_SUCCESS);
}

/* The response for name, or NULL. */
static const eng_resp_t *resp(const world_t *w, const char *name)
{
  for (size_t i = 0; i < w->out.nresp; i++)
    if (strcmp(w->out.resp[i].name, name) == 0)
      return &w->out.resp[i];
  return NULL;
}

static void assert_error(const world_t *w, const char *name, rondo_status_t st, const char *text)
{
  const eng_resp_t *r = resp(w, name);
  assert_non_null(r);
  assert_int_equal(r->type, RESP_ERROR);
  assert_int_equal(r->status, st);
  assert_non_null(r->message);
  if (strstr(r->message, text) == NULL)
    fail_msg("'%s' not in the message: %s", text, r->message);
}

static void ready_names_run_in_order_with_cache_bits(void **state)
{
  (void)state;
  world_t w;
  world_init(&w, 3, 4);
  add_all(&w, "grad.b", allreduce(10));
  add_all(&w, "grad.a", allreduce(20));
  decide(&w);
  assert_int_equal(w.out.nresp, 2);
  /* in order of rank 0's submission, each with its own cache bit */
  assert_string_equal(w.out.resp[0].name, "grad.b");
  assert_string_equal(w.out.resp[1].name, "grad.a");
  assert_int_equal(w.out.resp[0].type, RESP_OK);
  assert_int_equal(w.out.resp[1].type, RESP_OK);
  assert_int_equal(w.out.resp[1].sig.count, 20);
  int b = w.out.resp[0].cache_id, a = w.out.resp[1].cache_id;
  assert_true(b >= 0 && a >= 0 && a != b);
  assert_int_equal(eng_cache_find(&w.cache, "grad.b", &w.out.resp[0].sig), b);
  assert_int_equal(w.stalls.stalled, 0);
  /* the same name again keeps its bit */
  eng_sig_t sig = allreduce(10);
  memset(w.n, 0, sizeof w.n);
  add_all(&w, "grad.b", sig);
  decide(&w);
  assert_int_equal(w.out.nresp, 1);
  assert_int_equal(w.out.resp[0].cache_id, b);
  world_free(&w);
}

static void a_full_cache_reuses_the_least_recent_entry(void **state)
{
  (void)state;
  world_t w;
  world_init(&w, 2, 1);
  add_all(&w, "x", allreduce(1));
  decide(&w);
  assert_int_equal(w.out.resp[0].cache_id, 0);
  memset(w.n, 0, sizeof w.n);
  add_all(&w, "y", allreduce(1));
  decide(&w);
  assert_int_equal(w.out.resp[0].cache_id, 0);
  assert_int_equal(eng_cache_find_name(&w.cache, "x"), -1);
  assert_int_equal(eng_cache_find_name(&w.cache, "y"), 0);
  world_free(&w);
}

static void a_missing_name_waits_then_warns_then_fails(void **state)
{
  (void)state;
  world_t w;
  world_init(&w, 3, 4);
  w.warn = 5;
  w.abort = 30;
  add(&w, 0, "late", allreduce(4), 1.0);
  add(&w, 1, "late", allreduce(4), 1.0);
  decide(&w);
  assert_int_equal(w.out.nresp, 0); /* it waits for rank 2 */
  assert_int_equal(w.stalls.stalled, 0);
  w.recs[0][0].age = 6;
  decide(&w);
  assert_int_equal(w.out.nresp, 0);
  assert_int_equal(w.stalls.stalled, 1);
  assert_non_null(strstr(w.stalls.line, "'late'"));
  assert_non_null(strstr(w.stalls.line, "missing on ranks 2"));
  w.recs[1][0].age = 31;
  decide(&w);
  assert_error(&w, "late", RONDO_ERR_STALLED, "rank(s) 2 did not submit it");
  world_free(&w);
}

static void a_mismatch_names_the_ranks_and_the_field(void **state)
{
  (void)state;
  world_t w;
  world_init(&w, 3, 4);
  add(&w, 0, "w", allreduce(10), 0);
  add(&w, 1, "w", allreduce(10), 0);
  add(&w, 2, "w", allreduce(12), 0);
  eng_sig_t other = allreduce(5);
  other.op = RONDO_MAX;
  add_all(&w, "v", allreduce(5));
  w.recs[1][1].sig = other;
  decide(&w);
  assert_error(&w, "w", RONDO_ERR_MISMATCH, "count: rank 0 has 10, rank 2 has 12");
  assert_error(&w, "v", RONDO_ERR_MISMATCH, "op: rank 0 has");
  world_free(&w);
}

static void a_refusal_fails_everywhere_with_its_reason(void **state)
{
  (void)state;
  world_t w;
  world_init(&w, 2, 4);
  add(&w, 0, "r", allreduce(3), 0);
  eng_sig_t refused = allreduce(3);
  refused.kind = ENG_REFUSED;
  add(&w, 1, "r", refused, 0)->text = "the buffer is NULL";
  decide(&w);
  assert_error(&w, "r", RONDO_ERR_PEER, "rank 1 refused it: the buffer is NULL");
  world_free(&w);
}

static void joined_ranks_serve_allreduces_but_not_the_rest(void **state)
{
  (void)state;
  world_t w;
  world_init(&w, 3, 4);
  w.joined[1] = 1;
  add(&w, 0, "sum", allreduce(8), 0);
  add(&w, 2, "sum", allreduce(8), 0);
  eng_sig_t strict = allreduce(8);
  strict.flags = RONDO_ASYNC_NO_JOIN;
  add(&w, 0, "strict", strict, 0);
  add(&w, 2, "strict", strict, 0);
  eng_sig_t bcast = allreduce(8);
  bcast.kind = ENG_BROADCAST;
  bcast.root = 1;
  add(&w, 0, "bcast", bcast, 0);
  add(&w, 2, "bcast", bcast, 0);
  decide(&w);
  const eng_resp_t *sum = resp(&w, "sum");
  assert_non_null(sum);
  assert_int_equal(sum->type, RESP_OK);
  assert_error(&w, "strict", RONDO_ERR_JOINED, "rank(s) 1 joined");
  assert_error(&w, "bcast", RONDO_ERR_MISMATCH, "the root, rank 1, has joined");
  world_free(&w);
}

static void a_departing_rank_fails_what_it_lacks(void **state)
{
  (void)state;
  world_t w;
  world_init(&w, 3, 4);
  w.stopping[2] = 1;
  add(&w, 0, "orphan", allreduce(2), 0);
  add(&w, 1, "orphan", allreduce(2), 0);
  decide(&w);
  assert_error(&w, "orphan", RONDO_ERR_SHUT_DOWN, "rank(s) 2 destroyed the comm");
  world_free(&w);
}

static eng_sig_t member(uint64_t count, uint64_t group, uint32_t size)
{
  eng_sig_t s = allreduce(count);
  s.group = group;
  s.group_size = size;
  return s;
}

static void a_group_fails_whole(void **state)
{
  (void)state;
  world_t w;
  world_init(&w, 2, 4);
  /* g.1 differs; g.2, which rank 1 has not submitted yet, fails with it */
  add(&w, 0, "g.1", member(4, 77, 2), 0)->group = "g";
  add(&w, 0, "g.2", member(4, 77, 2), 0)->group = "g";
  add(&w, 1, "g.1", member(5, 77, 2), 0)->group = "g";
  add_all(&w, "alone", allreduce(1));
  decide(&w);
  assert_error(&w, "g.1", RONDO_ERR_MISMATCH, "count: rank 0 has 4, rank 1 has 5");
  assert_error(&w, "g.2", RONDO_ERR_MISMATCH, "'g.2' fails with its group: 'g.1' differs");
  assert_int_equal(resp(&w, "alone")->type, RESP_OK);
  world_free(&w);
}

static void a_held_group_that_differs_fails_early(void **state)
{
  (void)state;
  world_t w;
  world_init(&w, 2, 4);
  /* rank 0 holds back its 1 of 2, rank 1 announced a group of 1 */
  eng_record_t *held = add(&w, 0, "h", member(4, 9, 2), 0.3);
  held->group = "g";
  held->held = 1;
  add(&w, 1, "h", member(4, 9, 1), 0.3)->group = "g";
  decide(&w);
  assert_error(&w, "h", RONDO_ERR_MISMATCH, "group 'g' size: rank 0 has 2, rank 1 has 1");
  /* a held name with no difference waits for its group */
  world_free(&w);
  world_init(&w, 2, 4);
  held = add(&w, 0, "h", member(4, 9, 2), 0.3);
  held->group = "g";
  held->held = 1;
  add(&w, 1, "h", member(4, 9, 2), 0.3)->group = "g";
  decide(&w);
  assert_int_equal(w.out.nresp, 0);
  world_free(&w);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ready_names_run_in_order_with_cache_bits),
      cmocka_unit_test(a_full_cache_reuses_the_least_recent_entry),
      cmocka_unit_test(a_missing_name_waits_then_warns_then_fails),
      cmocka_unit_test(a_mismatch_names_the_ranks_and_the_field),
      cmocka_unit_test(a_refusal_fails_everywhere_with_its_reason),
      cmocka_unit_test(joined_ranks_serve_allreduces_but_not_the_rest),
      cmocka_unit_test(a_departing_rank_fails_what_it_lacks),
      cmocka_unit_test(a_group_fails_whole),
      cmocka_unit_test(a_held_group_that_differs_fails_early),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
