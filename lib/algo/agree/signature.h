/*
 * What the agreement's files share: a comm's agreement state (its fields,
 * which no file outside lib/algo/agree/ sees), and from signature.c a
 * signature's sum, the order differing fields are reported in, which
 * fields are hashes, the error for a call that met a rank destroying the
 * comm, and whether the last mismatch was one collective with different
 * arguments. Internal to lib/algo/agree/.
 */
#ifndef RONDO_ALGO_AGREE_SIGNATURE_H
#define RONDO_ALGO_AGREE_SIGNATURE_H

#include <stdint.h>

#include "algo/agree/agree.h"

/* A comm's agreement (comm->agree): made and freed with the comm
 * (agree_state_create, agree_state_free, called by lib/comm). The board
 * and the exchange's choice are set while the comm is built; the rest is
 * rewritten by every agreed call, alike on every rank. */
struct agree_state {
  /* a one-node user comm's board (board.c), or NULL */
  struct agree_board *board;
  /* the packets cross by rondo's own exchange, not MPI's all-reduce: equal
   * on every rank, chosen once the comm knows its topology
   * (agree_choose_exchange, from algo_check_by_exchange) */
  int by_exchange;
  /* in rondo's exchange where a node's first rank carries the inline data
   * across (agree_leaders_carry), it does so for data above this many
   * bytes: equal on every rank (algo_check_home_from) */
  size_t home_from;
  /* the packet's room for inline data, equal on every rank (packet.c) */
  size_t room;
  int smaller;   /* calls in a row that needed less room */
  size_t recent; /* the most room those calls needed */
  /* exchanges so far, equal on every rank: the data of one call and the
   * next get different tags (exchange.c) */
  unsigned calls;
};

/* The 64-bit sum of the collective and every field (never 0: 0 marks bad
 * arguments), compared on the board and carried in the packet. */
uint64_t agree_sig_sum(const agree_sig_t *sig);
/* The field to report k-th when fields differ. */
int agree_report_order(const agree_sig_t *sig, int k);
/* A field that is a hash of several values, named "... (hash)". */
int agree_field_is_hash(const char *field);
/* A call that met rank (of comm) destroying the comm: RONDO_ERR_SHUT_DOWN,
 * naming it. */
rondo_status_t agree_left(rondo_comm_t comm, const agree_sig_t *sig, int rank);
/* Set by a mismatch: every rank called the same collective (read by
 * agree_call_detail). */
extern _Thread_local int agree_mismatch_same_call;

#endif /* RONDO_ALGO_AGREE_SIGNATURE_H */
