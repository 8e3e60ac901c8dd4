/*
 * Checkpoints and the weight file (docs/train.md has both layouts).
 *
 * A checkpoint is one little-endian image: a header (magic, format version,
 * sizes, the model shape, step, epoch, position in the epoch, seed, batch,
 * dataset, hyperparameters), every variable, the momentum buffers, and a
 * CRC-32 of everything before it. Rank 0 writes it to a temporary file in the
 * same directory, fsyncs it, renames it over the old one and fsyncs the
 * directory, so a crash at any moment leaves either the old checkpoint or the
 * new one, never a mix. A writer killed before its rename leaves its
 * temporary file (path.tmp.PID); the next write to the path removes those
 * of processes that no longer exist. Reading checks the size, the magic, the version and
 * the checksum before anything is used.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "examples/train/train.h"

#define CKPT_MAGIC "RONDOCKP"
enum { CKPT_VERSION = 1 };

#define fail train_error

/* ---- little-endian encoding ------------------------------------------------------ */

typedef struct {
  unsigned char *p;
  size_t pos, len;
} buf_t;

static void put(buf_t *b, uint64_t v, int bytes)
{
  for (int i = 0; i < bytes; i++)
    b->p[b->pos++] = (unsigned char)(v >> (8 * i));
}

static void put_f64(buf_t *b, double d)
{
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  put(b, v, 8);
}

static void put_floats(buf_t *b, const float *f, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    uint32_t v;
    memcpy(&v, &f[i], sizeof v);
    put(b, v, 4);
  }
}

static uint64_t get(buf_t *b, int bytes)
{
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++)
    v |= (uint64_t)b->p[b->pos++] << (8 * i);
  return v;
}

static double get_f64(buf_t *b)
{
  uint64_t v = get(b, 8);
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}

static void get_floats(buf_t *b, float *f, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    uint32_t v = (uint32_t)get(b, 4);
    memcpy(&f[i], &v, sizeof v);
  }
}

/* magic, version, header bytes, total bytes, nsizes */
enum { FIXED_HEAD = 8 + 4 + 4 + 8 + 4 };
/* After the sizes: step, epoch, offset, seed, batch, train samples (8 each),
 * the dataset name (16), epochs and schedule (4 each), lr, momentum, weight
 * decay, warm-up epochs, step epochs, gamma (8 each). docs/train.md has the
 * table. */
enum { TAIL_HEAD = 8 * 6 + 16 + 4 * 2 + 8 * 6 };
/* A layer size is at most 2^20 (--hidden, --features) and the classes
 * 65535: the variable count of a valid file cannot overflow. */
enum { MAX_SIZE = 1 << 20 };

static size_t header_bytes(int nsizes)
{
  return FIXED_HEAD + 4 * (size_t)nsizes + TAIL_HEAD;
}

/* ---- atomic writes ------------------------------------------------------------------ */

/* A name for what a non-regular file is, for messages. */
static const char *file_kind(mode_t m)
{
  return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
       : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "a special file";
}

/* Removes path's temporary files (path.tmp.PID) left by writers that were
 * killed before their rename: those whose process no longer exists here.
 * A process that still exists keeps its file, whoever it is now. (Only a
 * writer on another host, writing the same path on a shared file system,
 * would look dead here; two runs writing one checkpoint collide anyway.) */
static void remove_stale_temporaries(const char *path)
{
  char dir[4096], base[4096];
  snprintf(dir, sizeof dir, "%s", path);
  snprintf(base, sizeof base, "%s", path);
  const char *name = basename(base);
  size_t n = strlen(name);
  DIR *d = opendir(dirname(dir));
  if (d == NULL)
    return; /* the write that follows says why */
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    const char *pid = e->d_name + n + 5;
    char *end;
    if (strncmp(e->d_name, name, n) != 0 || strncmp(e->d_name + n, ".tmp.", 5) != 0 ||
        *pid < '0' || *pid > '9')
      continue;
    long p = strtol(pid, &end, 10);
    if (*end == '\0' && p > 0 && p != (long)getpid() && kill((pid_t)p, 0) != 0 &&
        errno == ESRCH)
      unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

/* Writes len bytes to path through a temporary file, fsync and rename. */
static int write_atomic(const char *path, const unsigned char *data, size_t len, char *err,
                        size_t errlen)
{
  char tmp[4096], dir[4096];
  struct stat st;
  /* rename() would put the file in place of whatever path is: a FIFO, a
   * device (as root, /dev/null itself). */
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return fail(err, errlen, "%s: cannot write it: %s, not a regular file", path,
                file_kind(st.st_mode));
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return fail(err, errlen, "%s: path too long", path);
  remove_stale_temporaries(path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return fail(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, data + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      fail(err, errlen, "%s: write failed: %s", tmp, w < 0 ? strerror(errno) : "no space");
      close(fd);
      unlink(tmp);
      return -1;
    }
    done += (size_t)w;
  }
  int synced = fsync(fd) == 0 ? 0 : errno;
  int closed = close(fd) == 0 ? 0 : errno;
  if (synced != 0 || closed != 0) {
    fail(err, errlen, "%s: %s failed: %s", tmp, synced ? "fsync" : "close",
         strerror(synced ? synced : closed));
    unlink(tmp);
    return -1;
  }
  if (rename(tmp, path) != 0) {
    fail(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  /* The rename is durable once the directory is. */
  snprintf(dir, sizeof dir, "%s", path);
  int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
  if (dfd < 0 || fsync(dfd) != 0) {
    fail(err, errlen, "%s: cannot fsync its directory: %s", path, strerror(errno));
    if (dfd >= 0)
      close(dfd);
    return -1;
  }
  close(dfd);
  return 0;
}

/* ---- checkpoints ----------------------------------------------------------------- */

static size_t params_of(const size_t *sizes, int nsizes)
{
  size_t n = 0;
  for (int l = 1; l < nsizes; l++)
    n += sizes[l] * sizes[l - 1] + sizes[l];
  return n;
}

int ckpt_save(const char *path, const ckpt_header_t *h, const float *params,
              const float *velocity, size_t nparams, char *err, size_t errlen)
{
  size_t head = header_bytes(h->nsizes), total = head + 8 * nparams + 4;
  buf_t b = {malloc(total), 0, total};
  if (b.p == NULL)
    return fail(err, errlen, "%s: no memory for a %zu-byte checkpoint", path, total);
  memcpy(b.p, CKPT_MAGIC, 8);
  b.pos = 8;
  put(&b, CKPT_VERSION, 4);
  put(&b, head, 4);
  put(&b, total, 8);
  put(&b, (uint64_t)h->nsizes, 4);
  for (int i = 0; i < h->nsizes; i++)
    put(&b, h->sizes[i], 4);
  put(&b, (uint64_t)h->step, 8);
  put(&b, (uint64_t)h->epoch, 8);
  put(&b, h->offset, 8);
  put(&b, h->seed, 8);
  put(&b, h->batch, 8);
  put(&b, h->train_samples, 8);
  memset(b.p + b.pos, 0, 16);
  memcpy(b.p + b.pos, h->dataset, strnlen(h->dataset, 15));
  b.pos += 16;
  put(&b, (uint64_t)h->epochs, 4);
  put(&b, (uint64_t)h->schedule, 4);
  put_f64(&b, h->lr);
  put_f64(&b, h->momentum);
  put_f64(&b, h->weight_decay);
  put_f64(&b, h->warmup_epochs);
  put_f64(&b, h->step_epochs);
  put_f64(&b, h->gamma);
  put_floats(&b, params, nparams);
  put_floats(&b, velocity, nparams);
  put(&b, crc32_z(0L, b.p, b.pos), 4);
  int rc = write_atomic(path, b.p, total, err, errlen);
  free(b.p);
  return rc;
}

int train_open_regular(const char *path, char *err, size_t errlen)
{
  /* O_NONBLOCK: open() of a FIFO would wait for a writer, forever. It makes
   * no difference to a regular file, and is cleared anyway. */
  int fd = open(path, O_RDONLY | O_NONBLOCK);
  struct stat st;
  if (fd < 0)
    return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  int stat_err = fstat(fd, &st) == 0 ? 0 : errno;
  if (stat_err != 0 || !S_ISREG(st.st_mode)) {
    if (stat_err != 0)
      fail(err, errlen, "%s: cannot stat it: %s", path, strerror(stat_err));
    else
      fail(err, errlen, "%s: cannot read it: %s, not a regular file", path,
           file_kind(st.st_mode));
    close(fd);
    return -1;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    fail(err, errlen, "%s: fcntl failed: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

unsigned char *train_slurp(const char *path, size_t *len, char *err, size_t errlen)
{
  int fd = train_open_regular(path, err, errlen);
  struct stat st;
  if (fd < 0)
    return NULL;
  if (fstat(fd, &st) != 0) {
    fail(err, errlen, "%s: cannot stat it: %s", path, strerror(errno));
    close(fd);
    return NULL;
  }
  unsigned char *p = malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (p != NULL && got < (size_t)st.st_size) {
    ssize_t r = read(fd, p + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  if (p == NULL || got != (size_t)st.st_size) {
    fail(err, errlen, "%s: cannot read it: %s", path, p == NULL ? "no memory" : strerror(errno));
    free(p);
    return NULL;
  }
  p[got] = '\0';
  *len = got;
  return p;
}

int ckpt_load(const char *path, ckpt_header_t *h, float **params, float **velocity, char *err,
              size_t errlen)
{
  size_t len;
  unsigned char *p = train_slurp(path, &len, err, errlen);
  if (p == NULL)
    return -1;
  buf_t b = {p, 0, len};
  int rc = -1;
  memset(h, 0, sizeof *h);
  if (len < 8 || memcmp(p, CKPT_MAGIC, 8) != 0) {
    fail(err, errlen, "%s: not a rondo-train checkpoint (no RONDOCKP magic)", path);
    goto out;
  }
  if (len < FIXED_HEAD) {
    fail(err, errlen, "%s: truncated: %zu bytes, not even a header", path, len);
    goto out;
  }
  b.pos = 8;
  uint32_t version = (uint32_t)get(&b, 4);
  size_t head = (size_t)get(&b, 4), total = (size_t)get(&b, 8);
  h->nsizes = (int)get(&b, 4);
  if (version != CKPT_VERSION) {
    fail(err, errlen, "%s: checkpoint format version %u; this rondo-train reads version %d",
         path, version, CKPT_VERSION);
    goto out;
  }
  if (total < FIXED_HEAD + 4) {
    fail(err, errlen, "%s: corrupted: its header gives a size of %zu bytes", path, total);
    goto out;
  }
  if (len < total) {
    fail(err, errlen, "%s: truncated: %zu of its %zu bytes", path, len, total);
    goto out;
  }
  if (len > total) {
    fail(err, errlen, "%s: %zu bytes after the end of the checkpoint", path, len - total);
    goto out;
  }
  b.pos = total - 4;
  uint32_t want = (uint32_t)get(&b, 4), have = (uint32_t)crc32_z(0L, p, total - 4);
  if (want != have) {
    fail(err, errlen, "%s: corrupted: checksum 0x%08x, the file says 0x%08x", path, have, want);
    goto out;
  }
  /* The checksum holds, so the fields are what was written; still check the
   * sizes agree with each other before using them. */
  if (h->nsizes < 2 || h->nsizes > TRAIN_MAX_LAYERS + 1 || head != header_bytes(h->nsizes) ||
      total < head + 4) {
    fail(err, errlen, "%s: inconsistent header (%d layer sizes)", path, h->nsizes);
    goto out;
  }
  b.pos = FIXED_HEAD;
  for (int i = 0; i < h->nsizes; i++) {
    h->sizes[i] = (size_t)get(&b, 4);
    if (h->sizes[i] == 0 || h->sizes[i] > MAX_SIZE) {
      fail(err, errlen, "%s: inconsistent header (layer size %zu)", path, h->sizes[i]);
      goto out;
    }
  }
  size_t nparams = params_of(h->sizes, h->nsizes); /* < 9 x 2^41: no overflow */
  if (nparams > (total - head - 4) / 8 || total != head + 8 * nparams + 4) {
    fail(err, errlen, "%s: inconsistent header (%zu bytes for %zu variables)", path, total,
         nparams);
    goto out;
  }
  h->step = (long long)get(&b, 8);
  h->epoch = (long long)get(&b, 8);
  h->offset = (size_t)get(&b, 8);
  h->seed = get(&b, 8);
  h->batch = (size_t)get(&b, 8);
  h->train_samples = (size_t)get(&b, 8);
  memcpy(h->dataset, b.p + b.pos, 15);
  h->dataset[15] = '\0';
  b.pos += 16;
  uint64_t epochs = get(&b, 4), schedule = get(&b, 4);
  h->epochs = (int)(epochs <= 1000000 ? epochs : 0);
  h->schedule = (schedule_t)(schedule <= SCHEDULE_CONSTANT ? schedule : 0);
  h->lr = get_f64(&b);
  h->momentum = get_f64(&b);
  h->weight_decay = get_f64(&b);
  h->warmup_epochs = get_f64(&b);
  h->step_epochs = get_f64(&b);
  h->gamma = get_f64(&b);
  /* The same ranges as the command line's (the comparisons are false for NaN). */
  int ok = schedule <= SCHEDULE_CONSTANT && h->epochs >= 1 && h->batch >= 1 &&
           h->batch <= (1u << 24) && h->train_samples >= 1 && h->offset < h->train_samples &&
           h->step >= 0 && h->epoch >= 0 && h->lr > 0 && h->lr <= 1e6 && h->momentum >= 0 &&
           h->momentum < 1 && h->weight_decay >= 0 && h->weight_decay <= 1 &&
           h->warmup_epochs >= 0 && h->warmup_epochs <= 1e6 && h->step_epochs > 0 &&
           h->step_epochs <= 1e6 && h->gamma > 0 && h->gamma <= 1;
  if (!ok) {
    fail(err, errlen, "%s: inconsistent header (position or training configuration)", path);
    goto out;
  }
  if (params != NULL) {
    *params = malloc(nparams * sizeof(float));
    *velocity = malloc(nparams * sizeof(float));
    if (*params == NULL || *velocity == NULL) {
      free(*params);
      free(*velocity);
      *params = *velocity = NULL;
      fail(err, errlen, "%s: no memory for %zu variables", path, nparams);
      goto out;
    }
    get_floats(&b, *params, nparams);
    get_floats(&b, *velocity, nparams);
  }
  rc = 0;
out:
  free(p);
  return rc;
}

int weights_save(const char *path, const float *params, size_t nparams, char *err, size_t errlen)
{
  buf_t b = {malloc(nparams * 4 + 1), 0, nparams * 4};
  if (b.p == NULL)
    return fail(err, errlen, "%s: no memory", path);
  put_floats(&b, params, nparams);
  int rc = write_atomic(path, b.p, b.len, err, errlen);
  free(b.p);
  return rc;
}
