/*
 * Unit tests of the device layer (lib/device), without a GPU:
 *  - rondo's dtypes and ops in NCCL's terms (the values of nccl.h, written
 *    out here);
 *  - the memory-kind rules of a call's buffers, through the host double;
 *  - the host double's own semantics, which the MPI tests rely on: streams
 *    run in order, events complete after the work before them, failures
 *    are sticky and carry the injected message, stream_sync drains;
 *  - the real backend on this machine: without a GPU it reports no device
 *    and calls every pointer host memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

static const dev_backend_t *hd = &dev_host_double;

static void test_nccl_types_and_ops(void **state)
{
  (void)state;
  /* nccl.h: ncclInt8 0, ncclUint8 1, ncclInt32 2, ncclInt64 4, ncclFloat16 6,
   * ncclFloat32 7, ncclFloat64 8, ncclBfloat16 9; NCCL has no int16 */
  static const int want_type[RONDO_DTYPE_COUNT] = {0, 1, 2, 4, 6, 9, 7, 8, -1};
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++)
    assert_int_equal(dev_nccl_dtype((rondo_dtype_t)dt), want_type[dt]);
  assert_int_equal(dev_nccl_dtype(RONDO_DTYPE_COUNT), -1);
  assert_int_equal(dev_nccl_dtype((rondo_dtype_t)-1), -1);
  /* ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3, ncclAvg 4 */
  for (int n = 1; n <= 3; n++) {
    assert_int_equal(dev_nccl_op(RONDO_SUM, n), 0);
    assert_int_equal(dev_nccl_op(RONDO_PROD, n), 1);
    assert_int_equal(dev_nccl_op(RONDO_MAX, n), 2);
    assert_int_equal(dev_nccl_op(RONDO_MIN, n), 3);
    assert_int_equal(dev_nccl_op(RONDO_ADASUM, n), -1);
    assert_int_equal(dev_nccl_op(RONDO_OP_COUNT, n), -1);
  }
  /* AVG: ncclAvg, except on one rank, where NCCL < 2.29.7 drops the last
   * elements of ncclAvg (NVIDIA/nccl#1950) and ncclSum is the same copy */
  assert_int_equal(dev_nccl_op(RONDO_AVG, 1), 0);
  assert_int_equal(dev_nccl_op(RONDO_AVG, 2), 4);
  assert_int_equal(dev_nccl_op(RONDO_AVG, 5), 4);
}

static void test_memory_kinds(void **state)
{
  (void)state;
  dev_use_backend(hd);
  dev_double_devices(2);
  char host[64];
  void *d0 = NULL, *d1 = NULL, *pinned = NULL;
  assert_int_equal(hd->set_device(0), RONDO_SUCCESS);
  assert_int_equal(hd->mem_alloc(&d0, 64), RONDO_SUCCESS);
  assert_int_equal(hd->set_device(1), RONDO_SUCCESS);
  assert_int_equal(hd->mem_alloc(&d1, 64), RONDO_SUCCESS);
  assert_int_equal(hd->host_alloc(&pinned, 64), RONDO_SUCCESS);
  assert_int_equal(hd->set_device(2), RONDO_ERR_CUDA);
  int dev = 7;
  /* host and host, pinned included */
  assert_int_equal(dev_call_memory("f", host, 64, pinned, 64, &dev), RONDO_SUCCESS);
  assert_int_equal(dev, -1);
  /* NULL is host */
  assert_int_equal(dev_call_memory("f", NULL, 0, NULL, 0, &dev), RONDO_SUCCESS);
  assert_int_equal(dev, -1);
  /* device and device, in place and inside the allocation */
  assert_int_equal(dev_call_memory("f", d1, 64, (char *)d1 + 8, 56, &dev), RONDO_SUCCESS);
  assert_int_equal(dev, 1);
  assert_int_equal(dev_call_memory("f", d0, 64, d0, 64, &dev), RONDO_SUCCESS);
  assert_int_equal(dev, 0);
  /* a device buffer longer than what is left of its allocation: a bad
   * pointer or count, refused with both sizes (host buffers cannot be
   * checked so) */
  assert_int_equal(dev_call_memory("rondo_x", d1, 64, (char *)d1 + 8, 57, &dev),
                   RONDO_ERR_INVALID_ARG);
  assert_non_null(strstr(rondo_last_error(), "rondo_x: recvbuf (57 bytes at "));
  assert_non_null(strstr(rondo_last_error(), "runs past the end of its allocation on device 1, "
                                             "which has 56 bytes from there"));
  assert_int_equal(dev_call_memory("rondo_x", d0, 65, d0, 65, &dev), RONDO_ERR_INVALID_ARG);
  assert_non_null(strstr(rondo_last_error(), "rondo_x: sendbuf (65 bytes"));
  assert_int_equal(dev_buffer_memory("rondo_b", "buf", (char *)d0 + 60, 4, &dev), RONDO_SUCCESS);
  assert_int_equal(dev_buffer_memory("rondo_b", "buf", (char *)d0 + 60, 8, &dev),
                   RONDO_ERR_INVALID_ARG);
  assert_non_null(strstr(rondo_last_error(), "rondo_b: buf (8 bytes"));
  /* (count 0 on device pointers is still a device call:
   * tests/mpi/test_device.c runs it through every device algorithm) */
  /* one past the end is not the allocation */
  assert_int_equal(dev_memory_device((char *)d0 + 64, &dev), RONDO_SUCCESS);
  assert_int_equal(dev, -1);
  /* mixed: the message says which buffer is where */
  assert_int_equal(dev_call_memory("rondo_x", host, 8, d0, 8, &dev), RONDO_ERR_INVALID_ARG);
  assert_int_equal(dev, -1);
  assert_non_null(strstr(rondo_last_error(),
                         "rondo_x: sendbuf is host memory but recvbuf is memory of device 0"));
  assert_int_equal(dev_call_memory("rondo_x", d0, 8, d1, 8, &dev), RONDO_ERR_INVALID_ARG);
  assert_non_null(strstr(rondo_last_error(), "memory of device 0 but recvbuf is memory of "
                                             "device 1"));
  hd->mem_free(d0);
  hd->mem_free(d1);
  hd->host_free(pinned);
  assert_int_equal(dev_double_live(), 0);
  dev_double_devices(1);
  dev_use_backend(NULL);
}

static void test_double_streams_events_failures(void **state)
{
  (void)state;
  dev_double_reset();
  dev_stream_t *s = NULL;
  dev_event_t *e = NULL;
  assert_int_equal(hd->stream_create(&s), RONDO_SUCCESS);
  assert_int_equal(hd->event_create(&e), RONDO_SUCCESS);
  int done = 0;
  /* an event never recorded is complete, as CUDA's */
  assert_int_equal(hd->event_query(e, &done), RONDO_SUCCESS);
  assert_int_equal(done, 1);
  /* work runs in order: a slow first copy, a second that depends on it */
  char a[32] = "first", b[32] = "", c[32] = "";
  dev_double_delay(DEV_DOUBLE_COPY, 100000);
  assert_int_equal(hd->copy_async(b, a, sizeof a, s), RONDO_SUCCESS);
  assert_int_equal(hd->copy_async(c, b, sizeof b, s), RONDO_SUCCESS);
  assert_int_equal(hd->event_record(e, s), RONDO_SUCCESS);
  assert_int_equal(hd->event_query(e, &done), RONDO_SUCCESS);
  assert_int_equal(done, 0); /* 100 ms of delay are still ahead */
  assert_int_equal(hd->stream_sync(s), RONDO_SUCCESS);
  assert_int_equal(hd->event_query(e, &done), RONDO_SUCCESS);
  assert_int_equal(done, 1);
  assert_string_equal(c, "first");
  /* an injected failure: sticky, skips the rest, names itself */
  dev_double_reset();
  dev_double_fail(DEV_DOUBLE_COPY, 2, RONDO_ERR_CUDA);
  char d[8] = "x", f[8] = "";
  assert_int_equal(hd->copy_async(f, d, 2, s), RONDO_SUCCESS);  /* #1 runs */
  assert_int_equal(hd->copy_async(f, "yz", 3, s), RONDO_SUCCESS); /* #2 fails */
  assert_int_equal(hd->copy_async(f, "no", 3, s), RONDO_SUCCESS); /* skipped */
  assert_int_equal(hd->event_record(e, s), RONDO_SUCCESS);
  assert_int_equal(hd->stream_sync(s), RONDO_ERR_CUDA);
  assert_non_null(strstr(rondo_last_error(), "injected failure of copy #2"));
  assert_int_equal(hd->event_query(e, &done), RONDO_ERR_CUDA);
  assert_string_equal(f, "x");
  /* failures at allocation are immediate */
  void *p = NULL;
  dev_double_fail(DEV_DOUBLE_ALLOC, 1, RONDO_ERR_NO_MEMORY);
  assert_int_equal(hd->mem_alloc(&p, 8), RONDO_ERR_NO_MEMORY);
  assert_null(p);
  assert_int_equal(hd->mem_alloc(&p, 8), RONDO_SUCCESS);
  hd->mem_free(p);
  dev_double_reset();
  hd->event_destroy(e);
  hd->stream_destroy(s);
  assert_int_equal(dev_double_live(), 0);
}

static void test_real_backend_without_gpu(void **state)
{
  (void)state;
  int n = -1;
  assert_int_equal(dev_cuda.device_count(&n), RONDO_SUCCESS);
  if (n > 0)
    skip(); /* a GPU machine: tests/gpu/run.sh covers it */
  char buf[16];
  int dev = 7;
  assert_int_equal(dev_memory_device(buf, &dev), RONDO_SUCCESS);
  assert_int_equal(dev, -1);
  assert_int_equal(dev_call_memory("f", buf, sizeof buf, buf, sizeof buf, &dev), RONDO_SUCCESS);
  assert_int_equal(dev, -1);
  /* built with NCCL (configure found it here): a collective library */
  assert_true((dev_cuda.coll_id != NULL) == (rondo_nccl_built() != 0));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nccl_types_and_ops),
      cmocka_unit_test(test_memory_kinds),
      cmocka_unit_test(test_double_streams_events_failures),
      cmocka_unit_test(test_real_backend_without_gpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
