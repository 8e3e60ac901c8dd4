/*
 * test_knobs: knobs that shape messages must be equal on every rank.
 * The last rank exports a different value before rondo_comm_create() loads
 * the knobs; creation must then fail on every rank with RONDO_ERR_MISMATCH
 * naming the knob, instead of ring messages of different sizes hanging
 * later. The knobs are read once per process, so each rank count runs one
 * case:
 *   1 rank:  nothing to disagree with: creation succeeds
 *   2 ranks: RONDO_RING_CHUNK_BYTES 128K vs 64K   -> mismatch
 *   3 ranks: RONDO_SHM_CHUNK_BYTES 256K vs 1M      -> mismatch
 *   4 ranks: 64K vs 65536 (equal once parsed) and RONDO_LOG warn vs error
 *            (allowed to differ)                  -> success, and a ring
 *            all-reduce on the comm is correct
 * MPITEST_KNOBS=bad (or bad-tuning): a setup failure on the last rank only -
 * a malformed RONDO_LOG (a RONDO_TUNING_FILE that does not exist) - fails
 * rondo_comm_create on every rank (RONDO_ERR_PEER naming the rank and the
 * knob on the others) instead of leaving them waiting; with the knob fixed,
 * creation works.
 * MPITEST_KNOBS=bad-init: the same through rondo_init, which initializes
 * MPI: it fails on every rank, and succeeds once the knob is fixed.
 * MPITEST_KNOBS=diff-tuning: RONDO_TUNING_FILE is one relative path on
 * every rank, read from each rank's own directory, as on hosts that keep
 * their own copies: the same rules written differently (comments, 8K or
 * 8192) work, and all-reduces on the comm are right; a different rule on
 * the last rank fails creation on every rank with RONDO_ERR_MISMATCH
 * naming the table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpitest.h"

/* rondo_comm_create (or rondo_init) with `knob` set to `value` on the last
 * rank: fails everywhere, naming the knob; then with it unset, works. */
static void bad_on_last_rank(const char *knob, const char *value, rondo_status_t last_status,
                             int via_init, int *argc, char ***argv)
{
  int last = mt.rank == mt.size - 1;
  mt_where("%s=%s on rank %d only", knob, value, mt.size - 1);
  if (last)
    setenv(knob, value, 1);
  rondo_comm_t c = NULL;
  rondo_status_t st =
      via_init ? rondo_init(argc, argv) : rondo_comm_create(MPI_COMM_WORLD, &c);
  MT_EQ_STATUS(st, last ? last_status : RONDO_ERR_PEER);
  MT_CHECK(c == NULL && (!via_init || rondo_world() == NULL), "nothing was created");
  char want[64];
  snprintf(want, sizeof want, "rank %d could not set up rondo", mt.size - 1);
  MT_CHECK(strstr(rondo_last_error(), knob) != NULL &&
               (last || strstr(rondo_last_error(), want) != NULL),
           "message: %s", rondo_last_error());
  unsetenv(knob);
  mt_where("%s fixed: creation works", knob);
  st = via_init ? rondo_init(argc, argv) : rondo_comm_create(MPI_COMM_WORLD, &c);
  if (MT_EQ_STATUS(st, RONDO_SUCCESS) && !via_init)
    MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
}

/* This rank's copy of the table, "rondo.tune" in its own directory, which
 * becomes the working directory. */
static void write_copy(const char *dir, const char *text)
{
  MT_CHECK(mkdir(dir, 0700) == 0 || access(dir, W_OK) == 0, "mkdir %s", dir);
  MT_CHECK(chdir(dir) == 0, "chdir %s", dir);
  FILE *f = fopen("rondo.tune", "w");
  if (MT_CHECK(f != NULL, "write %s/rondo.tune", dir)) {
    fputs(text, f);
    fclose(f);
  }
}

static void tuning_copies(void)
{
  static const char plain[] = "allreduce 0-8K * * * ring\n"
                              "allreduce 8K- * * * rabenseifner\n";
  static const char spelled[] = "# the same rules, written otherwise\n\n"
                                "allreduce\t0-8192  *  *  *  ring   # small\n"
                                "allreduce 8KiB- * * * rabenseifner\n";
  static const char other[] = "allreduce 0-16K * * * ring\n"
                              "allreduce 16K- * * * rabenseifner\n";
  int last = mt.rank == mt.size - 1;
  char home[4096], dir[128];
  MT_CHECK(getcwd(home, sizeof home) != NULL, "getcwd");
  snprintf(dir, sizeof dir, "/tmp/rondo-tune-%ld", (long)getpid());
  setenv("RONDO_TUNING_FILE", "rondo.tune", 1);

  mt_where("the same rules, spelled differently on rank %d", mt.size - 1);
  write_copy(dir, last ? spelled : plain);
  rondo_comm_t c = NULL;
  if (MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS)) {
    enum { COUNT = 5003 }; /* 20 KiB: the rabenseifner rule */
    int *x = mt_alloc(COUNT * sizeof *x);
    for (int n = 1; n <= COUNT; n += COUNT - 1) { /* 4 B (ring) and 20 KiB */
      for (int i = 0; i < n; i++)
        x[i] = (mt.rank + 1) * (i % 11);
      MT_EQ_STATUS(rondo_allreduce(c, x, x, (size_t)n, RONDO_INT32, RONDO_SUM), RONDO_SUCCESS);
      long wrong = 0;
      for (int i = 0; i < n; i++)
        wrong += x[i] != mt.size * (mt.size + 1) / 2 * (i % 11);
      MT_EQ_INT(wrong, 0);
      rondo_algo_t algo = RONDO_ALGO_AUTO;
      MT_EQ_STATUS(rondo_allreduce_choice(c, (size_t)n, RONDO_INT32, RONDO_SUM, &algo),
                   RONDO_SUCCESS);
      MT_EQ_INT(algo, n == 1 ? RONDO_ALGO_RING : RONDO_ALGO_RABENSEIFNER);
    }
    free(x);
    MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
  }

  mt_where("a different rule on rank %d", mt.size - 1);
  write_copy(dir, last ? other : plain);
  MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_ERR_MISMATCH);
  MT_CHECK(c == NULL, "failed creation leaves *comm NULL");
  MT_CHECK(strstr(rondo_last_error(), "RONDO_TUNING_FILE") != NULL, "message: %s",
           rondo_last_error());

  unlink("rondo.tune");
  MT_CHECK(chdir(home) == 0, "chdir back");
  rmdir(dir);
  unsetenv("RONDO_TUNING_FILE");
}

int main(int argc, char **argv)
{
  const char *mode = getenv("MPITEST_KNOBS");
  if (mode != NULL && strcmp(mode, "bad-init") == 0) {
    /* rondo_init initializes MPI; the harness needs MPI first to know the
     * rank, so it reads it from the launcher: Hydra's PMI variables, or
     * Open MPI's. */
    const char *r = getenv("PMI_RANK"), *n = getenv("PMI_SIZE");
    if (r == NULL || n == NULL) {
      r = getenv("OMPI_COMM_WORLD_RANK");
      n = getenv("OMPI_COMM_WORLD_SIZE");
    }
    mt.rank = r ? atoi(r) : 0;
    mt.size = n ? atoi(n) : 1;
    bad_on_last_rank("RONDO_LOG", "bogus", RONDO_ERR_INVALID_KNOB, 1, &argc, &argv);
    mt_start("test_knobs");
    int rc = mt_finish();
    rondo_finalize();
    return rc;
  }
  RONDO_LEAKCHECK_PAUSE(MPI_Init(&argc, &argv));
  if (mode != NULL && strcmp(mode, "diff-tuning") == 0) {
    mt_start("test_knobs");
    tuning_copies();
    rondo_finalize();
    int rc = mt_finish();
    MPI_Finalize();
    return rc;
  }
  if (mode != NULL && strncmp(mode, "bad", 3) == 0) {
    mt_start("test_knobs");
    if (strcmp(mode, "bad-tuning") == 0)
      bad_on_last_rank("RONDO_TUNING_FILE", "/nonexistent/rondo.tune", RONDO_ERR_IO, 0, &argc,
                       &argv);
    else
      bad_on_last_rank("RONDO_LOG", "bogus", RONDO_ERR_INVALID_KNOB, 0, &argc, &argv);
    rondo_finalize();
    int rc = mt_finish();
    MPI_Finalize();
    return rc;
  }
  mt_start("test_knobs");
  int last = mt.rank == mt.size - 1;
  const char *knob = NULL;
  rondo_status_t want = RONDO_SUCCESS;
  switch (mt.size) {
  case 1:
    break;
  case 2:
    knob = "RONDO_RING_CHUNK_BYTES";
    setenv(knob, last ? "64K" : "128K", 1);
    want = RONDO_ERR_MISMATCH;
    break;
  case 3:
    knob = "RONDO_SHM_CHUNK_BYTES";
    setenv(knob, last ? "1M" : "256K", 1);
    want = RONDO_ERR_MISMATCH;
    break;
  default:
    setenv("RONDO_RING_CHUNK_BYTES", last ? "65536" : "64K", 1);
    setenv("RONDO_LOG", last ? "error" : "warn", 1);
    break;
  }
  rondo_comm_t c = NULL;
  mt_where("rondo_comm_create, %s differing on the last rank", knob ? knob : "no knob");
  MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), want);
  if (want != RONDO_SUCCESS) {
    MT_CHECK(c == NULL, "failed creation leaves *comm NULL");
    MT_CHECK(strstr(rondo_last_error(), knob) != NULL, "message names %s: %s", knob,
             rondo_last_error());
  } else {
    enum { COUNT = 100003 };
    float *x = mt_alloc(COUNT * sizeof *x);
    for (size_t i = 0; i < COUNT; i++)
      x[i] = (float)((mt.rank + 1) * (int)(i % 7));
    mt_where("ring all-reduce on the created comm");
    MT_EQ_STATUS(rondo_allreduce_algo(c, x, x, COUNT, RONDO_FLOAT32, RONDO_SUM, RONDO_ALGO_RING),
                 RONDO_SUCCESS);
    long wrong = 0;
    for (size_t i = 0; i < COUNT; i++)
      wrong += x[i] != (float)(mt.size * (mt.size + 1) / 2 * (int)(i % 7));
    MT_EQ_INT(wrong, 0);
    free(x);
    MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
  }
  rondo_finalize(); /* rondo did not start MPI: it stays up */
  int rc = mt_finish();
  MPI_Finalize();
  return rc;
}
