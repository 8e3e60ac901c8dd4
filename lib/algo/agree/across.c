/*
 * The argument check across nodes (agree.h, across.h).
 *
 * Across nodes (or where MPI cannot share memory) an exchange of small
 * packets of the status and the signature carries the check, by rondo's
 * recursive doubling or MPI's all-reduce (exchange.c says which):
 * lg p latencies per call (docs/api.md). A small all-reduce run by the mpi
 * algorithm travels in its packet (packet.c says how, and how much
 * room it has), and Rabenseifner's halving sends its data in the steps of
 * rondo's exchange, so for those the check costs no round of its own
 * (where nodes are blocks of several ranks, larger inline data crosses
 * nodes from one rank a node).
 * Every rank sends the same packet shape whatever its call, so a mismatch
 * is still reported, never a hang.
 */
#include "algo/agree/across.h"

#include <string.h>

#include "algo/agree/exchange.h"
#include "algo/agree/signature.h"

/* This rank's packet, its data still to be copied in; d: the data it
 * carries (NULL: none); rides: its all-reduce's data rides in the
 * exchange. */
static void packet_fill(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                        const agree_inline_t *d, int rides, agree_packet_t *p)
{
  memset(p, 0, sizeof *p + comm->agree->room);
  int ok = local == RONDO_SUCCESS;
  p->sig = ok ? agree_sig_sum(sig) : 0;
  p->not_sig = ~p->sig;
  p->coll = (int32_t)sig->coll;
  if (ok && sig->coll == AGREE_ALLREDUCE && sig->n >= 4) { /* rondo_allreduce_algo's order */
    p->count = sig->value[0];
    p->dtype = (int32_t)sig->value[1];
    p->op = (int32_t)sig->value[2];
    p->algo = (int32_t)sig->value[3];
  }
  if (ok && d != NULL) { /* the data's own shape: a reduce-scatter's or all-gather's */
    p->count = (int64_t)d->count;
    p->dtype = (int32_t)d->dtype;
    p->op = (int32_t)d->op;
    p->algo = RONDO_ALGO_MPI;
  }
  p->failed = ok ? 0 : comm->size - comm->rank;
  p->leaving = sig->coll == AGREE_COMM_DESTROY ? comm->size - comm->rank : 0;
  p->first = comm->rank;
  p->rides = rides && ok;
  p->room = (int32_t)comm->agree->room;
}

/* The detail of a mismatch, after packets that disagree: the collective and
 * each field as value, ~value, combined by MAX over every rank in one MPI
 * all-reduce, so max and ~(max of ~value) = min say what differs (~ never
 * overflows, unlike negation). Only a failing call pays it; every rank of
 * it does, since every rank holds the same combined packet. */
enum { DETAIL_WORDS = 2 * (AGREE_SIG_MAX + 1) };

static rondo_status_t detail(rondo_comm_t comm, const agree_sig_t *sig, int64_t v[DETAIL_WORDS])
{
  for (int i = 0; i <= AGREE_SIG_MAX; i++) {
    int64_t x = i == 0 ? (int64_t)sig->coll : i <= sig->n ? sig->value[i - 1] : 0;
    v[2 * i] = x;
    v[2 * i + 1] = ~x;
  }
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, DETAIL_WORDS, MPI_INT64_T, MPI_MAX, comm->mpi));
  return RONDO_SUCCESS;
}

/* What differs, from the detail: the collective, or the first field in
 * report order. */
static rondo_status_t mismatch(const agree_sig_t *sig, const int64_t r[DETAIL_WORDS])
{
  agree_mismatch_same_call = r[0] == ~r[1];
  if (r[0] != ~r[1])
    return rondo__fail(RONDO_ERR_MISMATCH,
                       "ranks called different collectives at the same time (this rank: %s)",
                       agree_coll_name(sig->coll));
  for (int k = 0; k < sig->n; k++) {
    int i = agree_report_order(sig, k) + 1;
    long long hi = r[2 * i], lo = ~r[2 * i + 1];
    if (hi != lo && agree_field_is_hash(sig->field[i - 1]))
      return rondo__fail(RONDO_ERR_MISMATCH, "%s: ranks passed different %s",
                         agree_coll_name(sig->coll), sig->field[i - 1]);
    if (hi != lo)
      return rondo__fail(RONDO_ERR_MISMATCH,
                         "%s: ranks passed different %s (values from %lld to %lld; this rank: "
                         "%lld)",
                         agree_coll_name(sig->coll), sig->field[i - 1], lo, hi,
                         (long long)sig->value[i - 1]);
  }
  /* Sums equal on fields that differ: about 2^-64 */
  return rondo__fail(RONDO_ERR_MISMATCH, "%s: ranks passed different arguments",
                     agree_coll_name(sig->coll));
}

rondo_status_t agree_across(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                            const agree_inline_t *d, agree_rider_t *rider, int *rode)
{
  /* The packet with comm's room, whatever this rank's call: ranks in
   * different collectives must still exchange packets of one size for the
   * mismatch to be reported. */
  int64_t buf[AGREE_PACKET_MAX_BYTES / sizeof(int64_t) + 1];
  agree_packet_t *all = (agree_packet_t *)buf;
  packet_fill(comm, local, sig, d, rider != NULL, all);
  size_t bytes = d != NULL ? d->count * rondo_dtype_size(d->dtype) : 0;
  if (bytes > comm->agree->room)
    bytes = 0; /* only its size rides: agree_packet_data_bytes */
  if (rode != NULL)
    *rode = bytes > 0;
  if (bytes > 0 && local == RONDO_SUCCESS && d->in_bytes > 0)
    memcpy(agree_packet_data(all) + d->at, d->in, d->in_bytes);
  RONDO_CHECK(agree_exchange(comm, all, local == RONDO_SUCCESS ? rider : NULL, NULL));
  agree_packet_next_room(comm, all);
  int64_t r[DETAIL_WORDS];
  int differ = all->failed == 0 && all->leaving == 0 && !agree_packet_agrees(all);
  if (differ) /* (a rank whose arguments were bad sets failed: not here) */
    RONDO_CHECK(detail(comm, sig, r));
  if (local != RONDO_SUCCESS)
    return local;
  if (all->leaving != 0)
    return agree_left(comm, sig, comm->size - all->leaving);
  if (all->failed != 0)
    return rondo__fail(RONDO_ERR_PEER,
                       "%s: rank %d of this comm passed invalid arguments (see its log line or "
                       "rondo_last_error())",
                       agree_coll_name(sig->coll), comm->size - all->failed);
  if (differ)
    return mismatch(sig, r);
  if (rider != NULL && !all->rides)
    return rondo__fail(RONDO_ERR_INTERNAL, "%s: the data did not ride in every step",
                       agree_coll_name(sig->coll)); /* (agreed calls always ride alike) */
  if (bytes > 0)
    memcpy(d->out, agree_packet_data(all), bytes);
  return RONDO_SUCCESS;
}

size_t agree_packet_bytes(void) { return sizeof(agree_packet_t); }

void agree_packet_free(void) { agree_exchange_free(); }

int agree_inline_fits(rondo_comm_t comm, rondo_algo_t algo, size_t count, size_t bytes)
{
  return comm->size > 1 && comm->agree->board == NULL && !agree_skip && algo == RONDO_ALGO_MPI &&
         count > 0 && bytes <= AGREE_INLINE_BYTES;
}

rondo_status_t agree_inline(rondo_comm_t comm, const agree_sig_t *sig, const agree_inline_t *d,
                            int *rode)
{
  return agree_across(comm, RONDO_SUCCESS, sig, d, NULL, rode);
}

int agree_rider_fits(rondo_comm_t comm, int carries_check, size_t count)
{
  return comm->size > 1 && comm->agree->board == NULL && !agree_skip && carries_check &&
         count > 0 && agree_by_exchange(comm);
}

rondo_status_t agree_call_riding(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                                 agree_rider_t *rider)
{
  return agree_across(comm, local, sig, NULL, rider, NULL);
}

rondo_status_t agree_across_leave(rondo_comm_t comm, const agree_sig_t *sig,
                                void (*poll)(rondo_comm_t), int *all_left)
{
  int64_t buf[AGREE_PACKET_MAX_BYTES / sizeof(int64_t) + 1];
  agree_packet_t *all = (agree_packet_t *)buf;
  packet_fill(comm, RONDO_SUCCESS, sig, NULL, 0, all);
  RONDO_CHECK(agree_exchange(comm, all, NULL, comm->yield_any ? poll : NULL));
  agree_packet_next_room(comm, all);
  /* every rank's call was this one (no mismatch is told here: a rank in
   * another call sees this one's leaving) */
  *all_left = agree_packet_agrees(all);
  return RONDO_SUCCESS;
}

