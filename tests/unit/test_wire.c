/* The slow path's messages (lib/engine/wire.c): records to rank 0 and its
 * responses back, as bytes. Each round trip gives back what went in; every
 * message cut short, and every length or count that claims more than the
 * message holds, is an error (RONDO_ERR_INTERNAL) without a read past the
 * end (the ASan build of this test sees one) and without a leak. No MPI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "engine/wire.h"

static eng_sig_t sig(int kind, uint64_t count)
{
  eng_sig_t s;
  memset(&s, 0, sizeof s);
  s.kind = kind;
  s.dtype = RONDO_INT64;
  s.op = RONDO_MAX;
  s.algo = 3;
  s.root = 2;
  s.count = count;
  s.rows = 5;
  s.prescale = 0.5;
  s.postscale = 0.25;
  s.tag = 0x1234567890abcdefULL;
  s.group = 99;
  s.flags = 6;
  s.group_size = 3;
  return s;
}

/* Three records: every field set, empty and missing strings. */
static void records(eng_record_t r[3])
{
  memset(r, 0, 3 * sizeof *r);
  r[0] = (eng_record_t){"grad.w", sig(ENG_ALLREDUCE, 1000), 1.5, "tag-7", "layer1", 2};
  r[1] = (eng_record_t){"", sig(ENG_ALLGATHER, 0), 0, NULL, NULL, 0};
  r[2] = (eng_record_t){"x", sig(ENG_REDUCE_SCATTER, (uint64_t)1 << 40), 1e9, "", "g", 0};
}

static void assert_str_or_empty(const char *got, const char *want)
{
  assert_string_equal(got, want != NULL ? want : "");
}

static void records_come_back_as_they_went(void **state)
{
  (void)state;
  eng_record_t in[3], *out = NULL;
  records(in);
  for (uint32_t n = 0; n <= 3; n++) {
    eng_buf_t b = {0};
    assert_int_equal(eng_wire_put_records(&b, in, n), RONDO_SUCCESS);
    uint32_t got = 99;
    assert_int_equal(eng_wire_get_records(b.p, b.len, &out, &got), RONDO_SUCCESS);
    assert_int_equal(got, n);
    for (uint32_t i = 0; i < n; i++) {
      assert_string_equal(out[i].name, in[i].name);
      assert_memory_equal(&out[i].sig, &in[i].sig, sizeof in[i].sig);
      assert_true(out[i].age == in[i].age);
      assert_str_or_empty(out[i].text, in[i].text);
      assert_str_or_empty(out[i].group, in[i].group);
      assert_int_equal(out[i].held, in[i].held);
    }
    eng_records_free(out, got);
    free(b.p);
  }
}

static void cut_or_swollen_records_are_refused(void **state)
{
  (void)state;
  eng_record_t in[3], *out;
  uint32_t n;
  records(in);
  eng_buf_t b = {0};
  assert_int_equal(eng_wire_put_records(&b, in, 3), RONDO_SUCCESS);
  /* every prefix: refused (each copied to a buffer of its own length, so a
   * read past it is ASan's) */
  for (size_t len = 0; len < b.len; len++) {
    char *p = malloc(len ? len : 1);
    memcpy(p, b.p, len);
    out = (eng_record_t *)1;
    assert_int_equal(eng_wire_get_records(p, len, &out, &n), RONDO_ERR_INTERNAL);
    assert_null(out);
    assert_int_equal(n, 0);
    free(p);
  }
  /* a count far beyond the bytes: refused before any allocation */
  uint32_t huge = UINT32_MAX;
  memcpy(b.p, &huge, sizeof huge);
  assert_int_equal(eng_wire_get_records(b.p, b.len, &out, &n), RONDO_ERR_INTERNAL);
  /* the first name's length beyond the message */
  uint32_t three = 3, long_name = (uint32_t)b.len;
  memcpy(b.p, &three, sizeof three);
  memcpy(b.p + sizeof three, &long_name, sizeof long_name);
  assert_int_equal(eng_wire_get_records(b.p, b.len, &out, &n), RONDO_ERR_INTERNAL);
  free(b.p);
  /* an allocation that failed while writing: an error, not a short message */
  eng_buf_t failed = {0};
  failed.failed = 1;
  assert_int_equal(eng_wire_put_records(&failed, in, 3), RONDO_ERR_NO_MEMORY);
  free(failed.p);
}

/* Two responses: one ready with its cache bit, one failed with a message. */
static void responses(eng_cycle_t *c)
{
  memset(c, 0, sizeof *c);
  eng_sig_t s = sig(ENG_BROADCAST, 12);
  assert_int_equal(eng_resp_add(c, RESP_OK, RONDO_SUCCESS, 4, &s, "bcast.0", NULL),
                   RONDO_SUCCESS);
  s = sig(ENG_ALLREDUCE, 7);
  assert_int_equal(eng_resp_add(c, RESP_ERROR, RONDO_ERR_MISMATCH, -1, &s, "grad.b",
                                "rank 1 has count 8"),
                   RONDO_SUCCESS);
}

static void responses_come_back_as_they_went(void **state)
{
  (void)state;
  eng_cycle_t in, out;
  responses(&in);
  eng_buf_t b = {0};
  assert_int_equal(eng_wire_put_responses(&b, &in), RONDO_SUCCESS);
  memset(&out, 0, sizeof out);
  assert_int_equal(eng_wire_get_responses(b.p, b.len, &out), RONDO_SUCCESS);
  assert_int_equal(out.nresp, 2);
  for (size_t i = 0; i < 2; i++) {
    assert_int_equal(out.resp[i].type, in.resp[i].type);
    assert_int_equal(out.resp[i].status, in.resp[i].status);
    assert_int_equal(out.resp[i].cache_id, in.resp[i].cache_id);
    assert_memory_equal(&out.resp[i].sig, &in.resp[i].sig, sizeof in.resp[i].sig);
    assert_string_equal(out.resp[i].name, in.resp[i].name);
  }
  assert_null(out.resp[0].message);
  assert_string_equal(out.resp[1].message, "rank 1 has count 8");
  /* they append: a second read doubles the list */
  assert_int_equal(eng_wire_get_responses(b.p, b.len, &out), RONDO_SUCCESS);
  assert_int_equal(out.nresp, 4);
  assert_string_equal(out.resp[3].name, "grad.b");
  eng_cycle_free(&out);
  eng_cycle_free(&in);
  free(b.p);
}

static void cut_responses_are_refused(void **state)
{
  (void)state;
  eng_cycle_t in, out;
  responses(&in);
  eng_buf_t b = {0};
  assert_int_equal(eng_wire_put_responses(&b, &in), RONDO_SUCCESS);
  for (size_t len = 0; len < b.len; len++) {
    char *p = malloc(len ? len : 1);
    memcpy(p, b.p, len);
    memset(&out, 0, sizeof out);
    assert_int_equal(eng_wire_get_responses(p, len, &out), RONDO_ERR_INTERNAL);
    eng_cycle_free(&out);
    free(p);
  }
  /* a count beyond the responses there */
  uint32_t more = 3;
  memcpy(b.p, &more, sizeof more);
  memset(&out, 0, sizeof out);
  assert_int_equal(eng_wire_get_responses(b.p, b.len, &out), RONDO_ERR_INTERNAL);
  eng_cycle_free(&out);
  eng_cycle_free(&in);
  free(b.p);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(records_come_back_as_they_went),
      cmocka_unit_test(cut_or_swollen_records_are_refused),
      cmocka_unit_test(responses_come_back_as_they_went),
      cmocka_unit_test(cut_responses_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
