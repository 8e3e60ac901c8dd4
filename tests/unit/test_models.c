/* The gradient sets rondo-bench fusion replays (tools/bench/models.c): each
 * shipped model has its architecture's tensor count and parameter count
 * (torchvision's resnet50 and vgg16, Hugging Face's bert-base-uncased
 * without the MLM head), the sum of its tensors, and names that are set
 * and distinct; the made-up set has N tensors of SIZE bytes and its label;
 * an unknown name is refused. No MPI: tests/bench.sh runs one model end to
 * end, this checks all three. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "tools/bench/models.h"

static void check_model(const char *which, int tensors, size_t params)
{
  model_t m;
  assert_int_equal(model_build(&m, which, 0, 0), 0);
  assert_string_equal(m.label, which);
  assert_int_equal(m.n, tensors);
  assert_int_equal(m.total, params);
  size_t sum = 0;
  for (int i = 0; i < m.n; i++) {
    assert_true(m.count[i] > 0);
    assert_true(m.name[i][0] != '\0');
    for (int j = 0; j < i; j++)
      assert_string_not_equal(m.name[i], m.name[j]);
    sum += m.count[i];
  }
  assert_int_equal(sum, m.total);
  model_free(&m);
}

static void test_resnet50(void **state)
{
  (void)state;
  check_model("resnet50", 161, 25557032);
}

static void test_bert_base(void **state)
{
  (void)state;
  check_model("bert-base", 199, 109482240);
}

static void test_vgg16(void **state)
{
  (void)state;
  check_model("vgg16", 32, 138357544);
}

static void test_made_up(void **state)
{
  (void)state;
  model_t m;
  assert_int_equal(model_build(&m, NULL, 200, 1024), 0);
  assert_string_equal(m.label, "200x1KiB");
  assert_int_equal(m.n, 200);
  assert_int_equal(m.total, 200 * 256);
  assert_string_equal(m.name[199], "tensor.199");
  model_free(&m);
  /* 4088 B is no whole KiB; 3 B is less than one float32, which rounds up */
  assert_int_equal(model_build(&m, NULL, 30, 4088), 0);
  assert_string_equal(m.label, "30x4088B");
  assert_int_equal(m.total, 30 * 1022);
  model_free(&m);
  assert_int_equal(model_build(&m, NULL, 2, 3), 0);
  assert_int_equal(m.total, 2);
  model_free(&m);
}

static void test_unknown(void **state)
{
  (void)state;
  model_t m;
  assert_int_equal(model_build(&m, "resnet18", 0, 0), -1);
  assert_int_equal(model_build(&m, "", 0, 0), -1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resnet50), cmocka_unit_test(test_bert_base),
      cmocka_unit_test(test_vgg16),    cmocka_unit_test(test_made_up),
      cmocka_unit_test(test_unknown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
