/* The engine's response cache (lib/engine/cache.c): names and signatures to
 * bits, the least recently used entry as the victim, a name in one entry
 * only. No MPI: every rank applies the same calls and so holds the same
 * cache; here one copy is driven by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "engine/cache.h"

static eng_sig_t sig(int kind, uint64_t count, uint64_t rows)
{
  eng_sig_t s;
  memset(&s, 0, sizeof s);
  s.kind = kind;
  s.dtype = RONDO_FLOAT32;
  s.op = RONDO_SUM;
  s.root = -1;
  s.count = count;
  s.rows = rows;
  s.prescale = s.postscale = 1.0;
  return s;
}

static void an_empty_cache_finds_nothing(void **state)
{
  (void)state;
  eng_cache_t c;
  eng_sig_t s = sig(ENG_ALLREDUCE, 4, 0);
  assert_int_equal(eng_cache_init(&c, 0), RONDO_SUCCESS); /* RONDO_CACHE_CAPACITY=0 */
  assert_int_equal(eng_cache_find(&c, "a", &s), -1);
  assert_int_equal(eng_cache_find_name(&c, "a"), -1);
  assert_int_equal(eng_cache_victim(&c), -1);
  assert_int_not_equal(eng_cache_set(&c, 0, "a", &s), RONDO_SUCCESS); /* no entry 0 */
  eng_cache_free(&c);
  assert_int_equal(eng_cache_init(&c, 3), RONDO_SUCCESS);
  assert_int_equal(eng_cache_find_name(&c, "a"), -1);
  assert_int_equal(eng_cache_victim(&c), 0);
  eng_cache_free(&c);
}

static void a_set_name_is_found_with_a_signature_it_serves(void **state)
{
  (void)state;
  eng_cache_t c;
  assert_int_equal(eng_cache_init(&c, 4), RONDO_SUCCESS);
  eng_sig_t s = sig(ENG_ALLREDUCE, 4, 0), other = sig(ENG_ALLREDUCE, 5, 0);
  assert_int_equal(eng_cache_set(&c, 2, "grad.w", &s), RONDO_SUCCESS);
  assert_int_equal(eng_cache_find(&c, "grad.w", &s), 2);
  assert_int_equal(eng_cache_find_name(&c, "grad.w"), 2);
  assert_string_equal(eng_cache_name(&c, 2), "grad.w");
  assert_int_equal(eng_cache_sig(&c, 2)->count, 4);
  /* another count: the name is there, the bit does not serve it */
  assert_int_equal(eng_cache_find(&c, "grad.w", &other), -1);
  assert_int_equal(eng_cache_find(&c, "grad.b", &s), -1);
  /* the same name set again with a new signature: same entry, new signature */
  assert_int_equal(eng_cache_set(&c, 2, "grad.w", &other), RONDO_SUCCESS);
  assert_int_equal(eng_cache_find(&c, "grad.w", &other), 2);
  assert_int_equal(eng_cache_find(&c, "grad.w", &s), -1);
  /* an allgather decided with equal rows serves only those rows; one
   * decided with rows that differ serves any */
  eng_sig_t ag = sig(ENG_ALLGATHER, 3, 2), mine = sig(ENG_ALLGATHER, 3, 2);
  assert_int_equal(eng_cache_set(&c, 0, "ag", &ag), RONDO_SUCCESS);
  assert_int_equal(eng_cache_find(&c, "ag", &mine), 0);
  mine.rows = 7;
  assert_int_equal(eng_cache_find(&c, "ag", &mine), -1);
  ag.rows = ENG_ROWS_DIFFER;
  assert_int_equal(eng_cache_set(&c, 0, "ag", &ag), RONDO_SUCCESS);
  assert_int_equal(eng_cache_find(&c, "ag", &mine), 0);
  /* out of range ids are refused, not written */
  assert_int_equal(eng_cache_set(&c, 4, "x", &s), RONDO_ERR_INTERNAL);
  assert_int_equal(eng_cache_set(&c, -1, "x", &s), RONDO_ERR_INTERNAL);
  assert_int_equal(eng_cache_find_name(&c, "x"), -1);
  eng_cache_free(&c);
}

static void a_name_lives_in_one_entry(void **state)
{
  (void)state;
  eng_cache_t c;
  assert_int_equal(eng_cache_init(&c, 3), RONDO_SUCCESS);
  eng_sig_t s = sig(ENG_ALLREDUCE, 1, 0);
  assert_int_equal(eng_cache_set(&c, 0, "a", &s), RONDO_SUCCESS);
  assert_int_equal(eng_cache_set(&c, 1, "b", &s), RONDO_SUCCESS);
  /* "a" moves to entry 2: entry 0 is free again and the first victim */
  assert_int_equal(eng_cache_set(&c, 2, "a", &s), RONDO_SUCCESS);
  assert_int_equal(eng_cache_find_name(&c, "a"), 2);
  assert_null(eng_cache_name(&c, 0));
  assert_int_equal(eng_cache_victim(&c), 0);
  /* "b"'s entry given to "c": "b" is gone */
  assert_int_equal(eng_cache_set(&c, 1, "c", &s), RONDO_SUCCESS);
  assert_int_equal(eng_cache_find_name(&c, "b"), -1);
  assert_int_equal(eng_cache_find_name(&c, "c"), 1);
  assert_int_equal(eng_cache_find_name(&c, "a"), 2);
  eng_cache_free(&c);
}

static void the_victim_is_free_else_least_recently_used(void **state)
{
  (void)state;
  eng_cache_t c;
  assert_int_equal(eng_cache_init(&c, 3), RONDO_SUCCESS);
  eng_sig_t s = sig(ENG_ALLREDUCE, 1, 0);
  assert_int_equal(eng_cache_set(&c, 0, "a", &s), RONDO_SUCCESS);
  assert_int_equal(eng_cache_victim(&c), 1);
  assert_int_equal(eng_cache_set(&c, 1, "b", &s), RONDO_SUCCESS);
  assert_int_equal(eng_cache_set(&c, 2, "c", &s), RONDO_SUCCESS);
  assert_int_equal(eng_cache_victim(&c), 0); /* a is the oldest */
  eng_cache_touch(&c, 0);
  assert_int_equal(eng_cache_victim(&c), 1); /* now b */
  eng_cache_touch(&c, 1);
  eng_cache_touch(&c, 2);
  assert_int_equal(eng_cache_victim(&c), 0);
  eng_cache_free(&c);
}

/* A long run through a small cache, names set where the victim says, as
 * rank 0 assigns them: the most recent names are always found, at the
 * entry they were given, and no other. */
static void a_long_run_keeps_the_most_recent_names(void **state)
{
  (void)state;
  enum { CAP = 8, NAMES = 500 };
  eng_cache_t c;
  assert_int_equal(eng_cache_init(&c, CAP), RONDO_SUCCESS);
  eng_sig_t s = sig(ENG_ALLREDUCE, 1, 0);
  int at[NAMES];
  char name[32];
  for (int i = 0; i < NAMES; i++) {
    snprintf(name, sizeof name, "layer%d.weight", i);
    at[i] = eng_cache_victim(&c);
    assert_true(at[i] >= 0 && at[i] < CAP);
    assert_int_equal(eng_cache_set(&c, at[i], name, &s), RONDO_SUCCESS);
    for (int j = 0; j <= i; j++) {
      snprintf(name, sizeof name, "layer%d.weight", j);
      if (j > i - CAP)
        assert_int_equal(eng_cache_find(&c, name, &s), at[j]);
      else
        assert_int_equal(eng_cache_find_name(&c, name), -1);
    }
  }
  eng_cache_free(&c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(an_empty_cache_finds_nothing),
      cmocka_unit_test(a_set_name_is_found_with_a_signature_it_serves),
      cmocka_unit_test(a_name_lives_in_one_entry),
      cmocka_unit_test(the_victim_is_free_else_least_recently_used),
      cmocka_unit_test(a_long_run_keeps_the_most_recent_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
