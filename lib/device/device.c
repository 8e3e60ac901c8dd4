/*
 * Which backend is in use, and what memory a call's buffers are in.
 */
#include "device/device.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

static _Atomic(const dev_backend_t *) chosen = NULL;

const dev_backend_t *dev_backend(void)
{
  const dev_backend_t *b = atomic_load(&chosen);
  return b != NULL ? b : &dev_cuda;
}

void dev_use_backend(const dev_backend_t *b) { atomic_store(&chosen, b); }

/* Whether the backend has any device: asked once per backend and process,
 * so that a host-only program never pays a device call per collective. */
static int has_devices(const dev_backend_t *b)
{
  static _Atomic(const dev_backend_t *) asked = NULL;
  static atomic_int answer = 0;
  if (atomic_load(&asked) != b) {
    int n = 0;
    if (b->device_count(&n) != RONDO_SUCCESS)
      n = 0; /* logged by the backend; treat as none */
    atomic_store(&answer, n > 0);
    atomic_store(&asked, b);
  }
  return atomic_load(&answer);
}

rondo_status_t dev_buffer_memory(const char *fn, const char *name, const void *buf, size_t bytes,
                                 int *device)
{
  *device = -1;
  const dev_backend_t *b = dev_backend();
  if (buf == NULL || !has_devices(b))
    return RONDO_SUCCESS;
  size_t room = SIZE_MAX;
  RONDO_CHECK(b->pointer_device(buf, device, &room));
  if (*device < 0 || bytes <= room)
    return RONDO_SUCCESS;
  /* Memory mapped in pieces (cuMemMap: CUDA's memory pools, PyTorch's
   * expandable segments) reports the piece that holds the address, so a
   * buffer may go on in the next piece: refused only where the bytes after
   * the last piece are not memory of the same device. */
  size_t have = room;
  for (int pieces = 0; have < bytes && pieces < 4096; pieces++) {
    int next = -1;
    size_t more = SIZE_MAX;
    RONDO_CHECK(b->pointer_device((const char *)buf + have, &next, &more));
    if (next != *device)
      return rondo__fail(RONDO_ERR_INVALID_ARG,
                         "%s: %s (%zu bytes at %p) runs past the end of its allocation on "
                         "device %d, which has %zu bytes from there: a bad device pointer or "
                         "count",
                         fn, name, bytes, buf, *device, have);
    have = more > bytes - have ? bytes : have + more;
  }
  return RONDO_SUCCESS;
}

rondo_status_t dev_memory_device(const void *buf, int *device)
{
  return dev_buffer_memory("", "", buf, 0, device);
}

static const char *where(int device, char *text, size_t len)
{
  if (device < 0)
    snprintf(text, len, "host memory");
  else
    snprintf(text, len, "memory of device %d", device);
  return text;
}

rondo_status_t dev_call_memory(const char *fn, const void *sendbuf, size_t sbytes,
                               const void *recvbuf, size_t rbytes, int *device)
{
  int s = -1, r = -1;
  *device = -1;
  RONDO_CHECK(dev_buffer_memory(fn, "sendbuf", sendbuf, sbytes, &s));
  if (recvbuf == sendbuf && rbytes <= sbytes)
    r = s; /* in place: checked already */
  else
    RONDO_CHECK(dev_buffer_memory(fn, "recvbuf", recvbuf, rbytes, &r));
  if (s != r) {
    char a[40], c[40];
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "%s: sendbuf is %s but recvbuf is %s: both buffers of a call must "
                       "be in the same memory (docs/gpu.md)",
                       fn, where(s, a, sizeof a), where(r, c, sizeof c));
  }
  *device = s;
  return RONDO_SUCCESS;
}
