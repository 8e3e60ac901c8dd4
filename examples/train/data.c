/*
 * Datasets. Every rank loads the whole dataset (it is small next to the
 * model's traffic) and reads its own rows of each batch; a file that is
 * missing or malformed on one rank stops every rank (main.c agrees on it).
 *
 *  digits         UCI optical recognition of handwritten digits: 8x8 images
 *                 of 0..16, 3823 training and 1797 test samples (the UCI
 *                 split), shipped gzipped in examples/train/data/.
 *  fashion-mnist  Zalando's 28x28 images, 60000 + 10000, from the IDX files
 *                 of Debian's dataset-fashion-mnist, read through zlib.
 *  synthetic      --samples N --features F --classes C: noisy copies of one
 *                 random prototype per class; the test split is N/5 more.
 *
 * Features are kept as bytes and normalized per feature (mean and standard
 * deviation of the training split) when a batch is gathered.
 *
 * A file is read whole and gunzipped here rather than through gzread, which
 * skips bytes after the end of the gzip data and hands a truncated stream's
 * last partial line to the parser: here those are errors, named as such.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "examples/train/rng.h"
#include "examples/train/train.h"

#ifndef TRAIN_DATADIR
#define TRAIN_DATADIR "/usr/local/share/rondo"
#endif

#define fail train_error

static int split_alloc(split_t *s, size_t n, size_t features)
{
  s->n = n;
  s->features = features;
  s->x = malloc(n * features);
  s->y = malloc(n * sizeof *s->y);
  return s->x != NULL && s->y != NULL ? 0 : -1;
}

static void split_free(split_t *s)
{
  free(s->x);
  free(s->y);
  memset(s, 0, sizeof *s);
}

/* dir/name, or dir/name without ".gz" when only that exists. */
static int find_file(const char *dir, const char *name, char *path, size_t len, char *err,
                     size_t errlen)
{
  if ((size_t)snprintf(path, len, "%s/%s", dir, name) >= len)
    return fail(err, errlen, "--data-dir: '%s' is too long a path", dir);
  size_t n = strlen(path);
  if (access(path, F_OK) != 0 && n > 3 && strcmp(path + n - 3, ".gz") == 0) {
    path[n - 3] = '\0';
    if (access(path, F_OK) != 0)
      path[n - 3] = '.';
  }
  return 0;
}

enum { DIGITS_MAX_BYTES = 64 << 20 };
/* An IDX file: at most 16 GiB of data (read_idx) and its header. */
#define IDX_MAX_BYTES (((size_t)1 << 34) + 16)

/* Inflates every gzip member of in[0..n) into a malloc'ed, NUL-terminated
 * buffer of at most max bytes; NULL with a message for a truncated or
 * corrupt stream, or bytes after its end that are not another member. */
static unsigned char *gunzip(const char *path, const unsigned char *in, size_t n, size_t max,
                             size_t *len, char *err, size_t errlen)
{
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) { /* 16: gzip, not zlib */
    fail(err, errlen, "%s: no memory to gunzip it", path);
    return NULL;
  }
  size_t cap = n < max / 4 ? 4 * n + 4096 : max, used = 0, fed = 0;
  unsigned char *out = malloc(cap + 1);
  int ok = out != NULL;
  if (!ok)
    fail(err, errlen, "%s: no memory to gunzip it", path);
  while (ok) {
    if (z.avail_in == 0 && fed < n) { /* avail_in is 32-bit: 1 GiB at a time */
      z.next_in = (Bytef *)(in + fed);
      z.avail_in = (uInt)(n - fed < (1u << 30) ? n - fed : 1u << 30);
      fed += z.avail_in;
    }
    if (used == cap) {
      size_t more = cap < max / 2 ? 2 * cap : max;
      unsigned char *bigger = more > cap ? realloc(out, more + 1) : NULL;
      if (bigger == NULL) {
        fail(err, errlen, "%s: %s", path,
             more > cap ? "no memory to gunzip it" : "too large uncompressed");
        ok = 0;
        break;
      }
      out = bigger;
      cap = more;
    }
    z.next_out = out + used;
    z.avail_out = (uInt)(cap - used < (1u << 30) ? cap - used : 1u << 30);
    uInt room = z.avail_out;
    int ret = inflate(&z, Z_NO_FLUSH);
    used += room - z.avail_out;
    if (ret == Z_STREAM_END) {
      size_t at = fed - z.avail_in; /* the first byte after this member */
      if (at == n)
        break;
      if (n - at < 2 || in[at] != 0x1f || in[at + 1] != 0x8b) { /* not another member */
        fail(err, errlen, "%s: %zu bytes after the end of the gzip data", path, n - at);
        ok = 0;
      } else {
        inflateReset(&z); /* cannot fail on a stream inflateInit2 made */
      }
    } else if (ret == Z_BUF_ERROR && z.avail_in == 0 && fed == n) {
      fail(err, errlen, "%s: truncated gzip data: the stream ends early", path);
      ok = 0;
    } else if (ret != Z_OK) {
      fail(err, errlen, "%s: corrupt gzip data: %s", path, z.msg ? z.msg : zError(ret));
      ok = 0;
    }
  }
  inflateEnd(&z);
  if (!ok) {
    free(out);
    return NULL;
  }
  out[used] = '\0';
  *len = used;
  return out;
}

/* The whole of path (NUL-terminated), gunzipped when it is gzip data. */
static unsigned char *read_file(const char *path, size_t max, size_t *len, char *err,
                                size_t errlen)
{
  size_t n;
  unsigned char *raw = train_slurp(path, &n, err, errlen);
  if (raw == NULL || n < 2 || raw[0] != 0x1f || raw[1] != 0x8b) {
    if (raw != NULL && n > max) {
      fail(err, errlen, "%s: %zu bytes: too large", path, n);
      free(raw);
      return NULL;
    }
    *len = n;
    return raw;
  }
  unsigned char *out = gunzip(path, raw, n, max, len, err, errlen);
  free(raw);
  return out;
}

/* ---- digits: CSV lines of 64 values in 0..16 and the class --------------------- */

enum { DIGITS_FEATURES = 64, DIGITS_CLASSES = 10 };

static int parse_digits_line(char *line, uint8_t *x, uint16_t *y)
{
  char *p = line;
  for (int i = 0; i <= DIGITS_FEATURES; i++) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 0 || v > (i < DIGITS_FEATURES ? 16 : DIGITS_CLASSES - 1))
      return -1;
    if (i < DIGITS_FEATURES)
      x[i] = (uint8_t)v;
    else
      *y = (uint16_t)v;
    p = end;
    if (i < DIGITS_FEATURES && *p++ != ',')
      return -1;
  }
  while (*p == '\r' || *p == '\n')
    p++;
  return *p == '\0' ? 0 : -1;
}

static int load_digits_file(const char *dir, const char *name, size_t expect, split_t *s,
                            char *err, size_t len)
{
  char path[4096];
  size_t bytes;
  if (find_file(dir, name, path, sizeof path, err, len) != 0)
    return -1;
  char *text = (char *)read_file(path, DIGITS_MAX_BYTES, &bytes, err, len);
  if (text == NULL)
    return -1;
  int rc = -1;
  if (split_alloc(s, expect, DIGITS_FEATURES) != 0) {
    fail(err, len, "%s: out of memory", path);
    goto out;
  }
  size_t n = 0;
  for (char *line = text, *next; *line != '\0'; line = next) {
    next = line + strcspn(line, "\n");
    if (*next == '\n')
      *next++ = '\0';
    if (n == expect) {
      fail(err, len, "%s: more than the %zu samples of the UCI split", path, expect);
      goto out;
    }
    if (parse_digits_line(line, s->x + n * DIGITS_FEATURES, s->y + n) != 0) {
      fail(err, len, "%s line %zu: not 64 values in 0..16 and a class in 0..9", path, n + 1);
      goto out;
    }
    n++;
  }
  if (n != expect) {
    fail(err, len, "%s: %zu samples, the UCI split has %zu (truncated?)", path, n, expect);
    goto out;
  }
  rc = 0;
out:
  free(text);
  return rc;
}

static const char *digits_dir(const train_opts_t *o)
{
  if (o->data_dir != NULL)
    return o->data_dir;
  /* Installed, or straight from the source tree (a clone that was never
   * installed). */
  static const char *const dirs[] = {TRAIN_DATADIR,
#ifdef TRAIN_SRCDATADIR
                                     TRAIN_SRCDATADIR
#endif
  };
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/optdigits.tra.gz", dirs[i]);
    if (access(path, R_OK) == 0)
      return dirs[i];
  }
  return dirs[0];
}

static int load_digits(const train_opts_t *o, dataset_t *d, char *err, size_t len)
{
  const char *dir = digits_dir(o);
  d->features = DIGITS_FEATURES;
  d->classes = DIGITS_CLASSES;
  snprintf(d->source, sizeof d->source, "%s/optdigits.{tra,tes}", dir);
  if (load_digits_file(dir, "optdigits.tra.gz", 3823, &d->train, err, len) != 0)
    return -1;
  return load_digits_file(dir, "optdigits.tes.gz", 1797, &d->test, err, len);
}

/* ---- Fashion-MNIST: IDX files (big-endian header, then bytes) ------------------- */

static uint32_t be32(const unsigned char *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads an IDX file of unsigned bytes with `ndims` dimensions; dims gets
 * them, *data the payload. The file must hold exactly what its header
 * announces. */
static int read_idx(const char *path, int ndims, uint32_t *dims, uint8_t **data, char *err,
                    size_t len)
{
  size_t n, head = 4 + 4 * (size_t)ndims;
  unsigned char *p = read_file(path, IDX_MAX_BYTES, &n, err, len);
  int rc = -1;
  if (p == NULL)
    return -1;
  if (n < 4) {
    fail(err, len, "%s: truncated: %zu of the 4 bytes of the magic number", path, n);
    goto out;
  }
  if (p[0] != 0 || p[1] != 0 || p[2] != 0x08 || p[3] != ndims) {
    fail(err, len,
         "%s: magic number 0x%02x%02x%02x%02x, expected 0x000008%02x (unsigned bytes, "
         "%d dimensions): not this kind of IDX file",
         path, p[0], p[1], p[2], p[3], ndims, ndims);
    goto out;
  }
  if (n < head) {
    fail(err, len, "%s: truncated: %zu of the %zu bytes of the dimensions", path, n - 4,
         head - 4);
    goto out;
  }
  /* At most 2^31 samples of at most 2^20 bytes, and 16 GiB in all: checked
   * before each product, so nothing wraps. */
  size_t total = 1;
  for (int i = 0; i < ndims; i++) {
    dims[i] = be32(p + 4 + 4 * i);
    if (dims[i] == 0 || dims[i] > (i == 0 ? (1u << 31) : (1u << 20)) ||
        (i == 2 && (size_t)dims[1] * dims[2] > (1u << 20))) {
      fail(err, len, "%s: dimension %d is %u, outside what rondo-train reads", path, i, dims[i]);
      goto out;
    }
    if (total > ((size_t)1 << 34) / dims[i]) {
      fail(err, len, "%s: more than 16 GiB of data: too large", path);
      goto out;
    }
    total *= dims[i];
  }
  if (n - head < total) {
    fail(err, len, "%s: truncated: %zu of the %zu bytes of data its header announces", path,
         n - head, total);
    goto out;
  }
  if (n - head > total) {
    fail(err, len, "%s: data after the end its header gives (%zu bytes more)", path,
         n - head - total);
    goto out;
  }
  memmove(p, p + head, total);
  *data = p;
  rc = 0;
out:
  if (rc != 0)
    free(p);
  return rc;
}

static int load_idx_pair(const char *dir, const char *images, const char *labels, split_t *s,
                         size_t classes, char *err, size_t len)
{
  char ipath[4096], lpath[4096];
  uint32_t idims[3], ldims[1];
  if (find_file(dir, images, ipath, sizeof ipath, err, len) != 0 ||
      find_file(dir, labels, lpath, sizeof lpath, err, len) != 0)
    return -1;
  if (read_idx(ipath, 3, idims, &s->x, err, len) != 0)
    return -1;
  if (read_idx(lpath, 1, ldims, (uint8_t **)&s->y, err, len) != 0)
    return -1;
  if (ldims[0] != idims[0])
    return fail(err, len, "%s has %u labels but %s has %u images", lpath, ldims[0], ipath,
                idims[0]);
  s->n = idims[0];
  s->features = (size_t)idims[1] * idims[2];
  /* Widen the labels in place: the file's bytes become uint16_t. */
  uint8_t *bytes = (uint8_t *)s->y;
  uint16_t *wide = malloc(s->n * sizeof *wide);
  if (wide == NULL)
    return fail(err, len, "%s: out of memory", lpath);
  for (size_t i = 0; i < s->n; i++) {
    if (bytes[i] >= classes) {
      free(wide);
      return fail(err, len, "%s: label %u of sample %zu is not below %zu", lpath, bytes[i], i,
                  classes);
    }
    wide[i] = bytes[i];
  }
  free(bytes);
  s->y = wide;
  return 0;
}

static int load_fashion(const train_opts_t *o, dataset_t *d, char *err, size_t len)
{
  const char *dir = o->data_dir != NULL ? o->data_dir : "/usr/share/datasets/fashion-mnist";
  d->classes = 10;
  snprintf(d->source, sizeof d->source, "%s", dir);
  if (load_idx_pair(dir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", &d->train,
                    d->classes, err, len) != 0)
    return -1;
  if (load_idx_pair(dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", &d->test,
                    d->classes, err, len) != 0)
    return -1;
  if (d->test.features != d->train.features)
    return fail(err, len, "%s: test images have %zu pixels, training images %zu", dir,
                d->test.features, d->train.features);
  d->features = d->train.features;
  return 0;
}

/* ---- synthetic ------------------------------------------------------------------ */

static void synth_split(split_t *s, const uint8_t *proto, size_t classes, uint64_t seed,
                        uint64_t stream)
{
  rng_t r;
  rng_seed(&r, seed, RNG_SYNTHETIC, stream);
  for (size_t i = 0; i < s->n; i++) {
    size_t c = (size_t)rng_below(&r, classes);
    s->y[i] = (uint16_t)c;
    for (size_t f = 0; f < s->features; f++) {
      int v = proto[c * s->features + f] + (int)rng_below(&r, 257) - 128;
      s->x[i * s->features + f] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  }
}

static int load_synthetic(const train_opts_t *o, dataset_t *d, char *err, size_t len)
{
  size_t ntest = o->samples / 5 > 0 ? o->samples / 5 : 1;
  d->features = o->features;
  d->classes = o->classes;
  snprintf(d->source, sizeof d->source, "generated from seed %llu", (unsigned long long)o->seed);
  uint8_t *proto = malloc(o->classes * o->features);
  if (proto == NULL || split_alloc(&d->train, o->samples, o->features) != 0 ||
      split_alloc(&d->test, ntest, o->features) != 0) {
    free(proto);
    return fail(err, len, "synthetic: out of memory for %zu x %zu samples", o->samples,
                o->features);
  }
  rng_t r;
  rng_seed(&r, o->seed, RNG_SYNTHETIC, 0);
  for (size_t i = 0; i < o->classes * o->features; i++)
    proto[i] = (uint8_t)rng_below(&r, 256);
  synth_split(&d->train, proto, o->classes, o->seed, 1);
  synth_split(&d->test, proto, o->classes, o->seed, 2);
  free(proto);
  return 0;
}

/* ---- normalization and access ------------------------------------------------------ */

static int normalization(dataset_t *d, char *err, size_t len)
{
  size_t F = d->features, n = d->train.n;
  double *sum = calloc(F, sizeof *sum), *sq = calloc(F, sizeof *sq);
  d->mean = malloc(F * sizeof *d->mean);
  d->inv_std = malloc(F * sizeof *d->inv_std);
  if (sum == NULL || sq == NULL || d->mean == NULL || d->inv_std == NULL) {
    free(sum);
    free(sq);
    return fail(err, len, "%s: out of memory", d->name);
  }
  for (size_t i = 0; i < n; i++)
    for (size_t f = 0; f < F; f++) {
      double v = d->train.x[i * F + f];
      sum[f] += v;
      sq[f] += v * v;
    }
  for (size_t f = 0; f < F; f++) {
    double mean = sum[f] / (double)n, var = sq[f] / (double)n - mean * mean;
    d->mean[f] = (float)mean;
    /* A constant feature carries nothing: it normalizes to 0. */
    d->inv_std[f] = var > 1e-12 ? (float)(1.0 / sqrt(var)) : 0.0f;
  }
  free(sum);
  free(sq);
  return 0;
}

int data_load(const train_opts_t *o, dataset_t *d, char *err, size_t len)
{
  memset(d, 0, sizeof *d);
  snprintf(d->name, sizeof d->name, "%s", o->dataset);
  int rc;
  if (strcmp(o->dataset, "digits") == 0)
    rc = load_digits(o, d, err, len);
  else if (strcmp(o->dataset, "fashion-mnist") == 0)
    rc = load_fashion(o, d, err, len);
  else
    rc = load_synthetic(o, d, err, len);
  if (rc == 0)
    rc = normalization(d, err, len);
  if (rc != 0)
    data_free(d);
  return rc;
}

void data_free(dataset_t *d)
{
  split_free(&d->train);
  split_free(&d->test);
  free(d->mean);
  free(d->inv_std);
  d->mean = d->inv_std = NULL;
}

void data_gather(const dataset_t *d, const split_t *s, const uint32_t *idx, size_t n, float *x,
                 uint16_t *y)
{
  size_t F = d->features;
  for (size_t i = 0; i < n; i++) {
    const uint8_t *src = s->x + (size_t)idx[i] * F;
    float *dst = x + i * F;
    for (size_t f = 0; f < F; f++)
      dst[f] = ((float)src[f] - d->mean[f]) * d->inv_std[f];
    y[i] = s->y[idx[i]];
  }
}

void data_shuffle(uint64_t seed, long long epoch, uint32_t *perm, size_t n)
{
  rng_t r;
  rng_seed(&r, seed, RNG_SHUFFLE, (uint64_t)epoch);
  for (size_t i = 0; i < n; i++)
    perm[i] = (uint32_t)i;
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)rng_below(&r, i);
    uint32_t t = perm[i - 1];
    perm[i - 1] = perm[j];
    perm[j] = t;
  }
}
