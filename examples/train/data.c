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
static void find_file(const char *dir, const char *name, char *path, size_t len)
{
  snprintf(path, len, "%s/%s", dir, name);
  if (access(path, F_OK) == 0)
    return;
  char plain[512];
  snprintf(plain, sizeof plain, "%s", path);
  size_t n = strlen(plain);
  if (n > 3 && strcmp(plain + n - 3, ".gz") == 0) {
    plain[n - 3] = '\0';
    if (access(plain, F_OK) == 0)
      snprintf(path, len, "%s", plain);
  }
}

static gzFile open_gz(const char *path, char *err, size_t len)
{
  gzFile f = gzopen(path, "rb");
  if (f == NULL)
    fail(err, len, "%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
  return f;
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
  char path[512], line[512];
  find_file(dir, name, path, sizeof path);
  gzFile f = open_gz(path, err, len);
  if (f == NULL)
    return -1;
  int rc = -1;
  if (split_alloc(s, expect, DIGITS_FEATURES) != 0) {
    fail(err, len, "%s: out of memory", path);
    goto close;
  }
  size_t n = 0;
  while (gzgets(f, line, sizeof line) != NULL) {
    if (n == expect) {
      fail(err, len, "%s: more than the %zu samples of the UCI split", path, expect);
      goto close;
    }
    if (parse_digits_line(line, s->x + n * DIGITS_FEATURES, s->y + n) != 0) {
      fail(err, len, "%s line %zu: not 64 values in 0..16 and a class in 0..9", path, n + 1);
      goto close;
    }
    n++;
  }
  int zerr;
  const char *msg = gzerror(f, &zerr);
  if (zerr != Z_OK && zerr != Z_STREAM_END) {
    fail(err, len, "%s", msg);
    goto close;
  }
  if (n != expect) {
    fail(err, len, "%s: %zu samples, the UCI split has %zu (truncated?)", path, n, expect);
    goto close;
  }
  rc = 0;
close:
  gzclose(f);
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

static int read_exact(gzFile f, const char *path, void *buf, size_t n, const char *what,
                      char *err, size_t len)
{
  size_t got = 0;
  while (got < n) {
    unsigned chunk = n - got > (1u << 30) ? 1u << 30 : (unsigned)(n - got);
    int r = gzread(f, (char *)buf + got, chunk);
    if (r < 0) {
      int zerr;
      return fail(err, len, "%s", gzerror(f, &zerr)); /* "path: what zlib found" */
    }
    if (r == 0)
      return fail(err, len, "%s: truncated: %zu of the %zu bytes of %s", path, got, n, what);
    got += (size_t)r;
  }
  return 0;
}

static uint32_t be32(const unsigned char *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads an IDX file of unsigned bytes with `ndims` dimensions; dims gets
 * them, *data the payload. */
static int read_idx(const char *path, int ndims, uint32_t *dims, uint8_t **data, char *err,
                    size_t len)
{
  gzFile f = open_gz(path, err, len);
  if (f == NULL)
    return -1;
  unsigned char head[4 + 4 * 3];
  int rc = -1;
  *data = NULL;
  if (read_exact(f, path, head, 4, "the magic number", err, len) != 0)
    goto close;
  if (head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] != ndims) {
    fail(err, len,
         "%s: magic number 0x%02x%02x%02x%02x, expected 0x000008%02x (unsigned bytes, "
         "%d dimensions): not this kind of IDX file",
         path, head[0], head[1], head[2], head[3], ndims, ndims);
    goto close;
  }
  if (read_exact(f, path, head + 4, 4 * (size_t)ndims, "the dimensions", err, len) != 0)
    goto close;
  /* At most 2^31 samples of at most 2^20 bytes, and 16 GiB in all: checked
   * before each product, so nothing wraps. */
  size_t total = 1;
  for (int i = 0; i < ndims; i++) {
    dims[i] = be32(head + 4 + 4 * i);
    if (dims[i] == 0 || dims[i] > (i == 0 ? (1u << 31) : (1u << 20)) ||
        (i == 2 && (size_t)dims[1] * dims[2] > (1u << 20))) {
      fail(err, len, "%s: dimension %d is %u, outside what rondo-train reads", path, i, dims[i]);
      goto close;
    }
    if (total > ((size_t)1 << 34) / dims[i]) {
      fail(err, len, "%s: more than 16 GiB of data: too large", path);
      goto close;
    }
    total *= dims[i];
  }
  if ((*data = malloc(total)) == NULL) {
    fail(err, len, "%s: no memory for %zu bytes of data", path, total);
    goto close;
  }
  if (read_exact(f, path, *data, total, "data its header announces", err, len) != 0)
    goto close;
  char extra;
  int r = gzread(f, &extra, 1);
  if (r != 0) {
    int zerr;
    if (r < 0)
      fail(err, len, "%s", gzerror(f, &zerr));
    else
      fail(err, len, "%s: data after the end its header gives", path);
    goto close;
  }
  rc = 0;
close:
  if (rc != 0) {
    free(*data);
    *data = NULL;
  }
  gzclose(f);
  return rc;
}

static int load_idx_pair(const char *dir, const char *images, const char *labels, split_t *s,
                         size_t classes, char *err, size_t len)
{
  char ipath[512], lpath[512];
  uint32_t idims[3], ldims[1];
  find_file(dir, images, ipath, sizeof ipath);
  find_file(dir, labels, lpath, sizeof lpath);
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
