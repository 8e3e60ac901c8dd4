/*
 * probe: failures planted on purpose, for the probes of tests/probe (each
 * .probe file runs one case and says what every rank must print).
 *
 *   mpiexec -n 2 tests/probe/probe CASE
 *
 * Every rank prints what each call it makes returned, one line each:
 *     rank R: LABEL STATUS_NAME: message
 * (and "rank R: LABEL data ok" or "data WRONG" where a result is checked),
 * then "rank R: done" when it got through the case. The program never
 * judges: the .probe file does, so that one file shows the whole
 * expectation. The cases are the classes of docs/reliability.md; each is
 * described where it is defined.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rondo.h"

static int rank, size;

/* One line of output in one write(): the launcher merges the ranks'
 * output, and a line split across two writes can interleave with
 * another rank's line. */
static void line(const char *fmt, ...)
{
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n > sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  if (write(STDOUT_FILENO, buf, (size_t)n) < 0)
    return;
}

static void say(const char *label, rondo_status_t st)
{
  line("rank %d: %s %s: %s", rank, label, rondo_status_name(st),
       st == RONDO_SUCCESS ? "" : rondo_last_error());
}

static void say_data(const char *label, int ok)
{
  line("rank %d: %s data %s", rank, label, ok ? "ok" : "WRONG");
}

static void nap(double s)
{
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* x[i] = rank + 1 + i, so the sum over ranks is closed-form. */
static void fill(float *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(rank + 1 + (int)i);
}

static int summed(const float *x, size_t n, int ranks)
{
  for (size_t i = 0; i < n; i++)
    if (x[i] != (float)(ranks * (ranks + 1) / 2 + ranks * (int)i))
      return 0;
  return 1;
}

/* ---- the engine ------------------------------------------------------------------- */

/* rondo_join while this rank still has an all-reduce in flight (rank 0):
 * the join waits for it, the other rank completes it, both joins return. */
static void join_pending(rondo_comm_t w)
{
  float x[4];
  fill(x, 4);
  rondo_request_t req = NULL;
  say("submit", rondo_allreduce_async(w, "a", x, x, 4, RONDO_FLOAT32, RONDO_SUM, NULL, &req));
  if (rank == 0) {
    say("join", rondo_join(w, NULL));
    say("wait", rondo_wait(&req));
  } else {
    nap(0.3);
    say("wait", rondo_wait(&req));
    say("join", rondo_join(w, NULL));
  }
  say_data("a", summed(x, 4, size));
}

/* This rank submits n all-reduces g.0 .. g.n-1 in group "g" of size
 * group_size (after a pause of late_s before the second one), then waits
 * for each. */
static void group_of(rondo_comm_t w, int n, int group_size, double late_s)
{
  float x[3][2];
  rondo_request_t req[3] = {NULL, NULL, NULL};
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.group = "g";
  o.group_size = group_size;
  char name[16];
  for (int i = 0; i < n && i < 3; i++) {
    if (i == 1)
      nap(late_s);
    fill(x[i], 2);
    snprintf(name, sizeof name, "g.%d", i);
    say("submit", rondo_allreduce_async(w, name, x[i], x[i], 2, RONDO_FLOAT32, RONDO_SUM, &o,
                                        &req[i]));
  }
  for (int i = 0; i < n && i < 3; i++)
    say("wait", rondo_wait(&req[i]));
}

/* A group of 3 of which rank 0 submits 2 (the third never comes): with
 * RONDO_STALL_ABORT_SEC every request fails with STALLED on every rank. */
static void group_incomplete(rondo_comm_t w)
{
  group_of(w, rank == 0 ? 2 : 3, 3, 0);
}

/* A group whose size differs: rank 0 submits 3 requests in a group of 3,
 * rank 1 the first 2 of them in a group of 2 (a model with an extra layer
 * on one rank). Every request fails with MISMATCH on every rank. */
static void group_count(rondo_comm_t w)
{
  group_of(w, rank == 0 ? 3 : 2, rank == 0 ? 3 : 2, 0);
}

/* Rank 0 submits the first of its group of 3, the other two only after
 * the group has failed (rank 1's group has 2; rank 0 shows its held
 * request after 0.2 s): they fail at once too. */
static void group_late(rondo_comm_t w)
{
  group_of(w, rank == 0 ? 3 : 2, rank == 0 ? 3 : 2, rank == 0 ? 1.0 : 0);
}

/* The same two requests everywhere, but rank 1 says the group has 3. */
static void group_size(rondo_comm_t w)
{
  group_of(w, 2, rank == 1 ? 3 : 2, 0);
}

/* Rank 1 destroys the comm while rank 0 waits for an asynchronous
 * all-reduce on it that rank 1 never submits. */
static void destroy_during_wait(rondo_comm_t w)
{
  (void)w;
  rondo_comm_t c = NULL;
  say("create", rondo_comm_create(MPI_COMM_WORLD, &c));
  float x[2];
  fill(x, 2);
  if (rank == 0) {
    rondo_request_t req = NULL;
    say("submit", rondo_allreduce_async(c, "x", x, x, 2, RONDO_FLOAT32, RONDO_SUM, NULL, &req));
    say("wait", rondo_wait(&req));
  } else {
    nap(0.3);
  }
  say("destroy", rondo_comm_destroy(&c));
}

/* Rank 1 destroys the comm while rank 0 has joined (rondo_join). */
static void destroy_during_join(rondo_comm_t w)
{
  (void)w;
  rondo_comm_t c = NULL;
  say("create", rondo_comm_create(MPI_COMM_WORLD, &c));
  if (rank == 0)
    say("join", rondo_join(c, NULL));
  else
    nap(0.3);
  say("destroy", rondo_comm_destroy(&c));
}

/* ---- blocking calls and comms ------------------------------------------------------- */

/* Rank 1 destroys the comm while rank 0 calls an all-reduce on it. */
static void destroy_during_allreduce(rondo_comm_t w)
{
  (void)w;
  rondo_comm_t c = NULL;
  say("create", rondo_comm_create(MPI_COMM_WORLD, &c));
  float x[4];
  fill(x, 4);
  if (rank == 0)
    say("allreduce", rondo_allreduce(c, x, x, 4, RONDO_FLOAT32, RONDO_SUM));
  else
    nap(0.3);
  say("destroy", rondo_comm_destroy(&c));
}

/* Rank 0 makes one all-reduce more than the others, then every rank
 * finalizes. */
static void finalize_extra_call(rondo_comm_t w)
{
  float x[4];
  fill(x, 4);
  say("allreduce", rondo_allreduce(w, x, x, 4, RONDO_FLOAT32, RONDO_SUM));
  if (rank == 0)
    say("extra allreduce", rondo_allreduce(w, x, x, 4, RONDO_FLOAT32, RONDO_SUM));
}

/* Rank 0 passes a NULL comm (its call fails at once), then finalizes; the
 * others call the all-reduce on the world comm. */
static void null_comm(rondo_comm_t w)
{
  float x[4];
  fill(x, 4);
  say("allreduce", rondo_allreduce(rank == 0 ? NULL : w, x, x, 4, RONDO_FLOAT32, RONDO_SUM));
}

/* Rank 1 comes to the all-reduce 30 s late (never, for the probe's time
 * limit): with RONDO_STALL_WARN_SEC and RONDO_STALL_ABORT_SEC rank 0 names
 * it, then ends the job. */
static void blocking_absent(rondo_comm_t w)
{
  float x[4];
  fill(x, 4);
  if (rank == 1)
    nap(30);
  say("allreduce", rondo_allreduce(w, x, x, 4, RONDO_FLOAT32, RONDO_SUM));
}

/* Rank 1 is killed (SIGKILL) while rank 0 waits in an all-reduce: the
 * launcher ends the job. */
static void killed_rank(rondo_comm_t w)
{
  float x[4];
  fill(x, 4);
  if (rank == 1) {
    nap(0.3);
    raise(SIGKILL);
  }
  say("allreduce", rondo_allreduce(w, x, x, 4, RONDO_FLOAT32, RONDO_SUM));
}

/* rondo_comm_create with a NULL output pointer on rank 1 only. */
static void create_null_out(rondo_comm_t w)
{
  (void)w;
  rondo_comm_t c = NULL;
  rondo_status_t st = rondo_comm_create(MPI_COMM_WORLD, rank == 1 ? NULL : &c);
  say("create", st);
  if (c != NULL)
    say("destroy", rondo_comm_destroy(&c));
}

/* recvbuf = sendbuf + 1 element on rank 1: an overlap, refused on every
 * rank before any data moves. */
static void overlap(rondo_comm_t w)
{
  float x[9];
  fill(x, 9);
  float y[8];
  say("allreduce", rondo_allreduce(w, x, rank == 1 ? x + 1 : y, 8, RONDO_FLOAT32, RONDO_SUM));
  say("allreduce after", rondo_allreduce(w, x, y, 8, RONDO_FLOAT32, RONDO_SUM));
  say_data("after", summed(y, 8, size));
}

/* Allgather in place (sendbuf = this rank's block of recvbuf) works on
 * every rank; sendbuf == recvbuf on rank 1 overlaps its block 0 and is
 * refused on every rank. */
static void allgather_in_place(rondo_comm_t w)
{
  float all[8 * 2];
  for (int r = 0; r < size && r < 8; r++)
    all[2 * r] = all[2 * r + 1] = r == rank ? (float)(rank + 1) : -1.0f;
  say("in place", rondo_allgather(w, all + 2 * rank, all, 2, RONDO_FLOAT32));
  int ok = 1;
  for (int r = 0; r < size && r < 8; r++)
    ok &= all[2 * r] == (float)(r + 1) && all[2 * r + 1] == (float)(r + 1);
  say_data("in place", ok);
  say("overlap", rondo_allgather(w, rank == 1 ? all : all + 2 * rank, all, 2, RONDO_FLOAT32));
}

/* The same overlap in an asynchronous all-reduce. */
static void overlap_async(rondo_comm_t w)
{
  float x[9];
  fill(x, 9);
  float y[8];
  rondo_request_t req = NULL;
  say("submit", rondo_allreduce_async(w, "o", x, rank == 1 ? x + 1 : y, 8, RONDO_FLOAT32,
                                      RONDO_SUM, NULL, &req));
  if (req != NULL)
    say("wait", rondo_wait(&req));
}

/* A NULL buffer in an asynchronous all-reduce on rank 1. */
static void async_null_buffer(rondo_comm_t w)
{
  float x[8];
  fill(x, 8);
  rondo_request_t req = NULL;
  say("submit", rondo_allreduce_async(w, "n", rank == 1 ? NULL : x, x, 8, RONDO_FLOAT32,
                                      RONDO_SUM, NULL, &req));
  if (req != NULL)
    say("wait", rondo_wait(&req));
}

/* allgatherv with recvcounts that differ on rank 1. */
static void allgatherv_mismatch(rondo_comm_t w)
{
  size_t counts[8], n = 0;
  for (int r = 0; r < size && r < 8; r++)
    counts[r] = (size_t)r + 1 + (rank == 1 && r == 0);
  for (int r = 0; r < size && r < 8; r++)
    n += counts[r];
  float send[8], recv[64];
  fill(send, 8);
  say("allgatherv", rondo_allgatherv(w, send, counts[rank], recv, counts, NULL, RONDO_FLOAT32));
}

/* Rank 2 of 3 is also in a comm of ranks 0 and 2, made after the world,
 * and finalizes at once; the others wait for it on the world: in a barrier
 * (how 0), a blocking all-reduce (1), an asynchronous one (2), or rank 0 in
 * an all-reduce on the set (3). Every wait fails with RONDO_ERR_SHUT_DOWN
 * naming rank 2, and every rank finalizes. */
static void leave_set(rondo_comm_t w, int how)
{
  if (size != 3) {
    line("rank %d: leave-set needs 3 ranks", rank);
    return;
  }
  int members[2] = {0, 2};
  rondo_comm_t set = NULL;
  if (rank != 1)
    say("subset", rondo_comm_subset(w, members, 2, &set));
  if (rank == 2)
    return; /* main() finalizes */
  nap(0.2);
  float x[4];
  fill(x, 4);
  rondo_request_t req = NULL;
  if (how == 0 || (how == 3 && rank == 1)) {
    say("barrier", rondo_barrier(w));
  } else if (how == 1) {
    say("allreduce", rondo_allreduce(w, x, x, 4, RONDO_FLOAT32, RONDO_SUM));
  } else if (how == 2) {
    say("submit", rondo_allreduce_async(w, "ls", x, x, 4, RONDO_FLOAT32, RONDO_SUM, NULL, &req));
    if (req != NULL)
      say("wait", rondo_wait(&req));
  } else {
    say("allreduce-set", rondo_allreduce(set, x, x, 4, RONDO_FLOAT32, RONDO_SUM));
  }
}

static void leave_set_barrier(rondo_comm_t w) { leave_set(w, 0); }
static void leave_set_allreduce(rondo_comm_t w) { leave_set(w, 1); }
static void leave_set_async(rondo_comm_t w) { leave_set(w, 2); }
static void leave_set_on_set(rondo_comm_t w) { leave_set(w, 3); }

/* Comms destroyed in different orders: rank 1 destroys a comm of both
 * ranks while rank 0 waits for it in a barrier on the world. Each waits for
 * the other; each names the other after RONDO_STALL_WARN_SEC (docs/
 * reliability.md: destroy comms in the same order on every rank). */
static void destroy_crossed(rondo_comm_t w)
{
  rondo_comm_t c = NULL;
  say("create", rondo_comm_create(MPI_COMM_WORLD, &c));
  if (rank == 0) {
    say("barrier", rondo_barrier(w));
    say("destroy", rondo_comm_destroy(&c));
  } else {
    say("destroy", rondo_comm_destroy(&c));
    say("barrier", rondo_barrier(w));
  }
}

/* A completion callback that calls rondo_wait on its own request: refused,
 * saying that it was inside a completion callback. The callback runs on
 * the engine's thread, or on this thread while it waits (and helps). */
static rondo_status_t cb_status = RONDO_SUCCESS;
static char cb_message[512] = "not called";

static void wait_on_self(rondo_request_t req, rondo_status_t status, void *user)
{
  (void)status;
  (void)user;
  rondo_request_t h = req;
  cb_status = rondo_wait(&h);
  snprintf(cb_message, sizeof cb_message, "%s", rondo_last_error());
}

static void wait_in_callback(rondo_comm_t w)
{
  float x[4];
  fill(x, 4);
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.callback = wait_on_self;
  rondo_request_t req = NULL;
  say("submit", rondo_allreduce_async(w, "cb", x, x, 4, RONDO_FLOAT32, RONDO_SUM, &o, &req));
  if (req != NULL)
    say("wait", rondo_wait(&req));
  line("rank %d: wait in callback %s: %s", rank, rondo_status_name(cb_status), cb_message);
  say_data("cb", summed(x, 4, size));
}

typedef struct {
  const char *name;
  void (*run)(rondo_comm_t);
} probe_case_t;

static const probe_case_t cases[] = {
    {"join-pending", join_pending},
    {"group-incomplete", group_incomplete},
    {"group-count", group_count},
    {"group-size", group_size},
    {"group-late", group_late},
    {"destroy-during-wait", destroy_during_wait},
    {"destroy-during-join", destroy_during_join},
    {"destroy-during-allreduce", destroy_during_allreduce},
    {"finalize-extra-call", finalize_extra_call},
    {"null-comm", null_comm},
    {"create-null-out", create_null_out},
    {"blocking-absent", blocking_absent},
    {"killed-rank", killed_rank},
    {"overlap", overlap},
    {"overlap-async", overlap_async},
    {"allgather-in-place", allgather_in_place},
    {"async-null-buffer", async_null_buffer},
    {"allgatherv-mismatch", allgatherv_mismatch},
    {"wait-in-callback", wait_in_callback},
    {"leave-set-barrier", leave_set_barrier},
    {"leave-set-allreduce", leave_set_allreduce},
    {"leave-set-async", leave_set_async},
    {"leave-set-on-set", leave_set_on_set},
    {"destroy-crossed", destroy_crossed},
};

int main(int argc, char **argv)
{
  const probe_case_t *c = NULL;
  for (size_t i = 0; argc == 2 && i < sizeof cases / sizeof cases[0]; i++)
    if (strcmp(argv[1], cases[i].name) == 0)
      c = &cases[i];
  if (c == NULL) {
    fprintf(stderr, "usage: probe CASE; cases:");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      fprintf(stderr, " %s", cases[i].name);
    fprintf(stderr, "\n");
    return 2;
  }
  rondo_status_t st = rondo_init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (st != RONDO_SUCCESS) {
    say("init", st);
  } else {
    c->run(rondo_world());
    line("rank %d: done", rank);
  }
  say("finalize", rondo_finalize());
  return 0;
}
