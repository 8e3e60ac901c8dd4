/*
 * test_knobs: knobs that shape messages must be equal on every rank.
 * The last rank exports a different value before rondo_comm_create() loads
 * the knobs; creation must then fail on every rank with RONDO_ERR_MISMATCH
 * naming the knob, instead of ring messages of different sizes hanging
 * later. The knobs are read once per process, so each rank count runs one
 * case:
 *   1 rank:  nothing to disagree with: creation succeeds
 *   2 ranks: RONDO_RING_CHUNK_BYTES 128K vs 64K   -> mismatch
 *   3 ranks: RONDO_CHECK_ARGS 1 vs 0              -> mismatch
 *   4 ranks: 64K vs 65536 (equal once parsed) and RONDO_LOG warn vs error
 *            (allowed to differ)                  -> success, and a ring
 *            all-reduce on the comm is correct
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
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
    knob = "RONDO_CHECK_ARGS";
    setenv(knob, last ? "0" : "1", 1);
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
