/*
 * The argument check across nodes (across.c), for agree.c: one exchange
 * of packets and what it says, for a call and for the leave step. The
 * riding and inline forms are agree.h's. Internal to lib/algo/agree/.
 */
#ifndef RONDO_ALGO_AGREE_ACROSS_H
#define RONDO_ALGO_AGREE_ACROSS_H

#include "algo/agree/agree.h"

/* One exchange of packets (exchange.c), then what it says. d: the
 * data this rank's packet carries (NULL: none); rider: the all-reduce
 * whose data rides in the exchange, or NULL. */
rondo_status_t agree_across(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                            const agree_inline_t *d, agree_rider_t *rider, int *rode);
/* One round of the leave across nodes: whether every rank was leaving too.
 * Where some rank yields, its waits poll and nap (agree_leave_polls). */
rondo_status_t agree_across_leave(rondo_comm_t comm, const agree_sig_t *sig,
                                  void (*poll)(rondo_comm_t), int *all_left);

#endif /* RONDO_ALGO_AGREE_ACROSS_H */
