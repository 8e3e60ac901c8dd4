/*
 * The argument check on one node (board.c): agree.h declares the board's
 * calls the other files of the layer use (create, post, finish); this
 * is its freeing and the leave step's look at it, for agree.c. Internal
 * to lib/algo/agree/.
 */
#ifndef RONDO_ALGO_AGREE_BOARD_H
#define RONDO_ALGO_AGREE_BOARD_H

#include <stdint.h>

#include "algo/agree/agree.h"

/* Frees comm's board, if any (agree_state_free). */
void agree_board_free(rondo_comm_t comm, int mpi_usable);

/* One comm's leave between steps (agree_leave). */
typedef struct {
  int done;         /* every rank of the comm is leaving it */
  int open;         /* a board round is posted, not every flag seen yet */
  uint64_t call;    /* that round */
  uint64_t mine;    /* this rank's flag sum in it */
  double since;     /* when the board's wait began (0: not yet) */
  int warned;       /* the stall warning was given */
} agree_leave_t;

/* One step on the board: posts a round where none is open, and looks
 * whether every rank's flag of that round is there, without waiting.
 * st->done once every rank was leaving in the same round. */
void agree_board_leave_step(rondo_comm_t comm, agree_leave_t *st, const agree_sig_t *sig);

#endif /* RONDO_ALGO_AGREE_BOARD_H */
