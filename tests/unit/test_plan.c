/* The engine's fusion planner (lib/engine/plan.c) on hand-made items: which
 * items are fused, in which batches, in which order. No MPI: the planner is
 * a pure function of the items and the limits. Each case names the rule it
 * pins; a property check on many random cycles holds every rule at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "engine/plan.h"

#define MAX_ITEMS 64

/* A cycle of up to MAX_ITEMS items, and room for its plan. */
typedef struct {
  size_t n;
  eng_resp_t resp[MAX_ITEMS];
  eng_item_t items[MAX_ITEMS];
  size_t order[MAX_ITEMS], ends[MAX_ITEMS], open[MAX_ITEMS];
  char taken[MAX_ITEMS];
  eng_plan_t plan;
} cycle_t;

static eng_sig_t sig(rondo_dtype_t dtype, uint64_t count)
{
  eng_sig_t s;
  memset(&s, 0, sizeof s);
  s.kind = ENG_ALLREDUCE;
  s.dtype = dtype;
  s.op = RONDO_SUM;
  s.root = -1;
  s.count = count;
  s.prescale = s.postscale = 1.0;
  return s;
}

/* Appends an item of s whose elems is its count; returns its signature. */
static eng_sig_t *add(cycle_t *c, eng_sig_t s)
{
  size_t i = c->n++;
  assert_true(i < MAX_ITEMS);
  c->resp[i].sig = s;
  c->items[i].resp = &c->resp[i];
  c->items[i].elems = s.count;
  return &c->resp[i].sig;
}

static void plan(cycle_t *c, size_t threshold, size_t max_tensor)
{
  c->plan = (eng_plan_t){c->order, c->ends, 0, c->open, c->taken};
  eng_plan(c->items, c->n, (eng_plan_limits_t){threshold, max_tensor}, &c->plan);
}

/* The plan as text: "[0 1][2]". */
static const char *shown(const cycle_t *c)
{
  static char text[1024];
  size_t used = 0;
  for (size_t b = 0, from = 0; b < c->plan.nbatches; from = c->plan.ends[b++]) {
    used += (size_t)snprintf(text + used, sizeof text - used, "[");
    for (size_t j = from; j < c->plan.ends[b]; j++)
      used += (size_t)snprintf(text + used, sizeof text - used, "%s%zu", j > from ? " " : "",
                               c->order[j]);
    used += (size_t)snprintf(text + used, sizeof text - used, "]");
  }
  text[used] = '\0';
  return text;
}

static void nothing_plans_no_batch(void **state)
{
  (void)state;
  cycle_t c = {0};
  plan(&c, 1 << 20, 1 << 20);
  assert_int_equal(c.plan.nbatches, 0);
}

static void alike_items_fuse_in_response_order(void **state)
{
  (void)state;
  cycle_t c = {0};
  for (int i = 0; i < 4; i++)
    add(&c, sig(RONDO_FLOAT32, 10 + (uint64_t)i));
  plan(&c, 1 << 20, 1 << 20);
  assert_string_equal(shown(&c), "[0 1 2 3]");
}

static void a_zero_threshold_runs_every_item_alone(void **state)
{
  (void)state;
  cycle_t c = {0};
  for (int i = 0; i < 3; i++)
    add(&c, sig(RONDO_FLOAT32, 10));
  plan(&c, 0, 1 << 20);
  assert_string_equal(shown(&c), "[0][1][2]");
}

static void batches_fill_up_to_the_threshold_exactly(void **state)
{
  (void)state;
  cycle_t c = {0};
  for (int i = 0; i < 5; i++)
    add(&c, sig(RONDO_FLOAT32, 25)); /* 100 bytes each */
  plan(&c, 200, 1 << 20);            /* two fit exactly, a third does not */
  assert_string_equal(shown(&c), "[0 1][2 3][4]");
  plan(&c, 199, 1 << 20);
  assert_string_equal(shown(&c), "[0][1][2][3][4]");
  /* an item alone may exceed the threshold: it still runs */
  cycle_t big = {0};
  add(&big, sig(RONDO_FLOAT64, 100));
  add(&big, sig(RONDO_FLOAT64, 1));
  plan(&big, 64, 1 << 20);
  assert_string_equal(shown(&big), "[0][1]");
}

static void groups_form_in_order_of_first_appearance(void **state)
{
  (void)state;
  cycle_t c = {0};
  add(&c, sig(RONDO_INT32, 1));   /* 0: group int32 */
  add(&c, sig(RONDO_FLOAT32, 1)); /* 1: group float32 */
  add(&c, sig(RONDO_INT32, 1));   /* 2 */
  add(&c, sig(RONDO_FLOAT32, 1)); /* 3 */
  add(&c, sig(RONDO_INT64, 1));   /* 4: group int64 */
  plan(&c, 1 << 20, 1 << 20);
  assert_string_equal(shown(&c), "[0 2][1 3][4]");
}

static void every_field_of_the_rule_keeps_items_apart(void **state)
{
  (void)state;
  /* each pair differs in one field the rule names: never fused */
  for (int field = 0; field < 6; field++) {
    cycle_t c = {0};
    add(&c, sig(RONDO_FLOAT32, 4));
    eng_sig_t *s = add(&c, sig(RONDO_FLOAT32, 4));
    switch (field) {
    case 0: s->op = RONDO_MAX; break;
    case 1: s->prescale = 0.5; break;
    case 2: s->postscale = 0.25; break;
    case 3: s->algo = RONDO_ALGO_RING; break;
    case 4: s->mem = 1; break;
    default: s->root = 1; break;
    }
    plan(&c, 1 << 20, 1 << 20);
    if (strcmp(shown(&c), "[0][1]") != 0)
      fail_msg("field %d: %s, not [0][1]", field, shown(&c));
  }
  /* what the rule does not name fuses: counts, rows, tags */
  cycle_t c = {0};
  add(&c, sig(RONDO_FLOAT32, 4));
  eng_sig_t *s = add(&c, sig(RONDO_FLOAT32, 9));
  s->rows = 3;
  s->tag = 7;
  plan(&c, 1 << 20, 1 << 20);
  assert_string_equal(shown(&c), "[0 1]");
}

static void a_big_item_runs_alone_where_it_is_met(void **state)
{
  (void)state;
  cycle_t c = {0};
  add(&c, sig(RONDO_FLOAT32, 8));    /* 0: 32 bytes */
  add(&c, sig(RONDO_FLOAT32, 1000)); /* 1: 4000 bytes, above max_tensor */
  add(&c, sig(RONDO_FLOAT32, 8));    /* 2 */
  add(&c, sig(RONDO_FLOAT32, 16));   /* 3: 64 bytes, exactly max_tensor: fused */
  plan(&c, 1 << 20, 64);
  /* 1 runs before the batch its group was filling, which goes on */
  assert_string_equal(shown(&c), "[1][0 2 3]");
  /* elems, not count: a reduce-scatter's or allgather's fused size */
  c.items[0].elems = 1000;
  plan(&c, 1 << 20, 64);
  assert_string_equal(shown(&c), "[0][1][2 3]");
}

/* Many random cycles: every item planned once; a batch is one group, in
 * response order, within the threshold unless alone, and a big item is
 * alone; a group's batches come in response order; the plan is a function
 * of its input (planned twice, the same). */
static void random_cycles_keep_every_rule(void **state)
{
  (void)state;
  srand(12345);
  for (int round = 0; round < 2000; round++) {
    cycle_t c = {0};
    size_t n = (size_t)(rand() % MAX_ITEMS);
    for (size_t i = 0; i < n; i++) {
      eng_sig_t *s = add(&c, sig(rand() % 2 ? RONDO_FLOAT32 : RONDO_FLOAT64,
                                 (uint64_t)(rand() % 3 ? rand() % 40 : rand() % 400)));
      s->op = rand() % 4 ? RONDO_SUM : RONDO_MAX;
    }
    size_t threshold = (size_t)(rand() % 5 ? rand() % 2000 : 0), max_tensor = 1 + (size_t)(rand() % 1500);
    plan(&c, threshold, max_tensor);
    size_t first[MAX_ITEMS];
    memcpy(first, c.order, sizeof first);
    char once[MAX_ITEMS] = {0};
    size_t last_of_group[MAX_ITEMS]; /* by the group's first item */
    for (size_t i = 0; i < MAX_ITEMS; i++)
      last_of_group[i] = SIZE_MAX;
    size_t total = 0;
    for (size_t b = 0, from = 0; b < c.plan.nbatches; from = c.plan.ends[b++]) {
      size_t nb = c.plan.ends[b] - from, bytes = 0;
      assert_true(nb > 0);
      const eng_sig_t *key = &c.resp[c.order[from]].sig;
      size_t esize = rondo_dtype_size((rondo_dtype_t)key->dtype);
      /* the group's first item: the first of the cycle with this key */
      size_t g = 0;
      while (c.resp[g].sig.dtype != key->dtype || c.resp[g].sig.op != key->op)
        g++;
      for (size_t j = from; j < c.plan.ends[b]; j++) {
        size_t i = c.order[j];
        assert_true(i < n);
        assert_false(once[i]);
        once[i] = 1;
        assert_int_equal(c.resp[i].sig.dtype, key->dtype);
        assert_int_equal(c.resp[i].sig.op, key->op);
        if (j > from)
          assert_true(i > c.order[j - 1]);
        bytes += c.items[i].elems * esize;
        if (c.items[i].elems * esize > max_tensor)
          assert_int_equal(nb, 1);
      }
      if (nb > 1)
        assert_true(threshold > 0 && bytes <= threshold);
      /* batches of several, of one group, in order (a big one alone may
       * come before the batch that was filling) */
      if (nb > 1 || c.items[c.order[from]].elems * esize <= max_tensor) {
        if (last_of_group[g] != SIZE_MAX)
          assert_true(c.order[from] > last_of_group[g]);
        last_of_group[g] = c.order[c.plan.ends[b] - 1];
      }
      total += nb;
    }
    assert_int_equal(total, n);
    plan(&c, threshold, max_tensor);
    assert_memory_equal(first, c.order, n * sizeof *first);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(nothing_plans_no_batch),
      cmocka_unit_test(alike_items_fuse_in_response_order),
      cmocka_unit_test(a_zero_threshold_runs_every_item_alone),
      cmocka_unit_test(batches_fill_up_to_the_threshold_exactly),
      cmocka_unit_test(groups_form_in_order_of_first_appearance),
      cmocka_unit_test(every_field_of_the_rule_keeps_items_apart),
      cmocka_unit_test(a_big_item_runs_alone_where_it_is_met),
      cmocka_unit_test(random_cycles_keep_every_rule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
