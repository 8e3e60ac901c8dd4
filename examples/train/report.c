/*
 * What rondo-train prints: the header, one line per epoch, a progress bar
 * while an epoch runs (when a terminal shows it), the final line, and the
 * same numbers as JSON lines with --json. Only rank 0 writes.
 *
 * Under mpiexec a rank's stdout is a pipe to the launcher even when the
 * launcher writes to a terminal, so "auto" also looks at the stdout of the
 * process's parents (the launcher and its proxy, on Linux).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "examples/train/train.h"
#include "tools/terminal.h"

struct report {
  int writer, quiet, bar, bar_shown;
  double last_bar;
  FILE *json;
  const char *json_path;
};

double train_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void train_memory(double *rss_mib, double *pss_mib)
{
  /* smaps_rollup (Linux 4.14): Rss and Pss in kB; the order of its lines
   * is not relied on. */
  *rss_mib = *pss_mib = -1;
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  if (f == NULL)
    return;
  char line[256];
  double kb;
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "Rss: %lf kB", &kb) == 1)
      *rss_mib = kb / 1024;
    else if (sscanf(line, "Pss: %lf kB", &kb) == 1)
      *pss_mib = kb / 1024;
  }
  fclose(f);
}

void train_straggle(const train_opts_t *o, int rank)
{
  if (o->slow_rank != rank || !(o->slow_ms > 0))
    return;
  double seconds = o->slow_ms / 1e3;
  struct timespec ts;
  ts.tv_sec = (time_t)seconds;
  ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int train_error(char *err, size_t len, const char *fmt, ...)
{
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  int n = vsnprintf(err, len, fmt, ap);
  va_end(ap);
  /* Too long for err (a long path): keep the start and the end, where the
   * reason is, and drop the middle. */
  char *full = n >= 0 && (size_t)n >= len && len > 16 ? malloc((size_t)n + 1) : NULL;
  if (full != NULL) {
    vsnprintf(full, (size_t)n + 1, fmt, again);
    size_t head = (len - 1 - 3) / 4, tail = len - 1 - 3 - head;
    snprintf(err, len, "%.*s...%s", (int)head, full, full + (size_t)n - tail);
    free(full);
  }
  va_end(again);
  return -1;
}

/* --json's file, for writing. O_NONBLOCK: a FIFO that nobody reads fails
 * at once (ENXIO) instead of blocking open() forever; one that somebody
 * reads works. */
static FILE *open_json(const char *path, char *err, size_t errlen)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK, 0644), flags;
  FILE *f = NULL;
  if (fd >= 0 && (flags = fcntl(fd, F_GETFL)) >= 0 &&
      fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0)
    f = fdopen(fd, "w");
  if (f == NULL) {
    train_error(err, errlen, "--json %s: cannot open it for writing: %s", path,
                errno == ENXIO ? "a FIFO that nobody reads" : strerror(errno));
    if (fd >= 0)
      close(fd);
  }
  return f;
}

int report_create(const train_opts_t *o, int writer, report_t **out, char *err, size_t errlen)
{
  report_t *r = calloc(1, sizeof *r);
  if (r == NULL) {
    train_error(err, errlen, "no memory");
    return -1;
  }
  r->writer = writer;
  r->quiet = o->quiet;
  r->bar = writer && !o->quiet &&
           (o->progress == PROGRESS_BAR ||
            (o->progress == PROGRESS_AUTO && term_shows(STDOUT_FILENO)));
  r->json_path = o->json;
  if (writer && o->json != NULL && (r->json = open_json(o->json, err, errlen)) == NULL) {
    free(r);
    return -1;
  }
  *out = r;
  return 0;
}

static void clear_bar(report_t *r)
{
  if (r->bar_shown) {
    fputs("\r\033[K", stdout);
    r->bar_shown = 0;
  }
}

void report_header(report_t *r, const char *fmt, ...)
{
  if (!r->writer || r->quiet)
    return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

void report_progress(report_t *r, long long epoch, size_t done, size_t total, double loss)
{
  if (!r->bar)
    return;
  double now = train_now();
  if (done < total && now - r->last_bar < 0.1)
    return;
  r->last_bar = now;
  enum { WIDTH = 30 };
  int fill = total > 0 ? (int)(done * WIDTH / total) : WIDTH;
  printf("\repoch %3lld [%.*s%*s] %zu/%zu steps  loss %.4f\033[K", epoch, fill,
         "==============================", WIDTH - fill, "", done, total, loss);
  fflush(stdout);
  r->bar_shown = 1;
}

/* After a JSON record: 0, or -1 with a message (a full disk, /dev/full). */
static int json_written(report_t *r, char *err, size_t errlen)
{
  if (fflush(r->json) == 0 && !ferror(r->json))
    return 0;
  return train_error(err, errlen, "--json %s: write failed: %s", r->json_path, strerror(errno));
}

int report_epoch(report_t *r, const epoch_stats_t *s, char *err, size_t errlen)
{
  if (!r->writer)
    return 0;
  double rate = s->seconds > 0 ? s->samples / s->seconds : 0;
  if (!r->quiet) {
    clear_bar(r);
    printf("epoch %3lld/%d%s  loss %.4f  train %6.2f%%  test %6.2f%%  %7.0f samples/s (%.0f/rank)"
           "  comm wait %4.1f%%  input wait %4.1f%%  lr %.5f  %.2f s\n",
           s->epoch, s->epochs, s->partial ? "*" : "", s->loss, 100 * s->train_acc, 100 * s->test_acc,
           rate, rate / s->size, 100 * s->comm_wait, 100 * s->input_wait, s->lr, s->seconds);
    fflush(stdout);
  }
  if (r->json != NULL) {
    fprintf(r->json,
            "{\"type\":\"epoch\",\"epoch\":%lld,\"epochs\":%d,\"partial\":%s,\"step\":%lld,"
            "\"steps\":%zu,\"steps_per_epoch\":%zu,\"loss\":%.6f,\"train_acc\":%.6f,"
            "\"test_acc\":%.6f,\"test_loss\":%.6f,\"samples\":%.0f,\"seconds\":%.6f,"
            "\"samples_per_s\":%.3f,\"samples_per_s_per_rank\":%.3f,"
            "\"comm_wait_share\":%.6f,\"comm_hidden_share\":%.6f,\"input_wait_share\":%.6f,"
            "\"input_wait_ms_per_step\":%.6f,\"input_prep_ms_per_step\":%.6f,\"lr\":%.8g,"
            "\"ranks\":%d}\n",
            s->epoch, s->epochs, s->partial ? "true" : "false", s->step, s->steps_done, s->steps_in_epoch,
            s->loss, s->train_acc, s->test_acc, s->test_loss, s->samples, s->seconds, rate,
            rate / s->size, s->comm_wait, s->comm_hidden, s->input_wait, s->input_wait_ms, s->input_prep_ms,
            s->lr, s->size);
    return json_written(r, err, errlen);
  }
  return 0;
}

int report_final(report_t *r, const epoch_stats_t *run, const char *config_json,
                 const char *extra, char *err, size_t errlen)
{
  if (!r->writer)
    return 0;
  double rate = run->seconds > 0 ? run->samples / run->seconds : 0;
  clear_bar(r);
  printf("final: %lld steps in %.2f s, %.0f samples/s (%.0f/rank); test accuracy %.2f%% "
         "(loss %.4f)\n"
         "       comm wait %.1f%% of step time, %.0f%% of all-reduce time hidden behind "
         "backward; input %.3f ms/step to prepare, %.3f ms/step waited for\n",
         run->step, run->seconds, rate, rate / run->size, 100 * run->test_acc, run->test_loss,
         100 * run->comm_wait, 100 * run->comm_hidden, run->input_prep_ms, run->input_wait_ms);
  if (run->rss_max >= 0 && run->pss_max >= 0)
    printf("       memory %.0f MiB resident per rank at most, %.0f MiB proportional (shared "
           "pages split among the ranks that map them); %.0f MiB all ranks\n",
           run->rss_max, run->pss_max, run->pss_total);
  fflush(stdout);
  if (r->json != NULL) {
    fprintf(r->json,
            "{\"type\":\"final\",\"step\":%lld,\"steps\":%zu,\"test_acc\":%.6f,"
            "\"test_loss\":%.6f,\"samples\":%.0f,\"seconds\":%.6f,\"samples_per_s\":%.3f,"
            "\"samples_per_s_per_rank\":%.3f,\"comm_wait_share\":%.6f,"
            "\"comm_hidden_share\":%.6f,\"input_wait_share\":%.6f,"
            "\"input_wait_ms_per_step\":%.6f,\"input_prep_ms_per_step\":%.6f,"
            "\"rss_mib_max\":%.1f,\"pss_mib_max\":%.1f,\"pss_mib_total\":%.1f,"
            "%s%s\"ranks\":%d,\"config\":%s}\n",
            run->step, run->steps_done, run->test_acc, run->test_loss, run->samples,
            run->seconds, rate, rate / run->size, run->comm_wait, run->comm_hidden,
            run->input_wait, run->input_wait_ms, run->input_prep_ms, run->rss_max, run->pss_max,
            run->pss_total, extra, extra[0] != '\0' ? "," : "", run->size, config_json);
    return json_written(r, err, errlen);
  }
  return 0;
}

void report_destroy(report_t *r)
{
  if (r == NULL)
    return;
  if (r->json != NULL)
    fclose(r->json);
  free(r);
}
