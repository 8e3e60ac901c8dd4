/*
 * What the agreement's files share (signature.c): a signature's sum, the
 * order differing fields are reported in, which fields are hashes, the
 * error for a call that met a rank destroying the comm, and whether the
 * last mismatch was one collective with different arguments. Internal to
 * lib/algo/agree/.
 */
#ifndef RONDO_ALGO_AGREE_SIGNATURE_H
#define RONDO_ALGO_AGREE_SIGNATURE_H

#include <stdint.h>

#include "algo/agree/agree.h"

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
