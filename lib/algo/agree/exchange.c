/*
 * The argument check's exchange across nodes. Every rank's packet
 * (packet.h) is combined into every rank's, in one of two ways,
 * chosen once per comm (algo_check_by_exchange):
 *
 * By rondo's own recursive doubling: lg p' steps in which partners at
 * distance 1, 2, 4 .. swap what they have combined so far, with the fold
 * of fold.c first where the size is no power of two (the rank below it
 * sends its packet to its odd neighbour and gets the result back at the
 * end). That is what MPICH's MPI_Allreduce does with a small packet across
 * nodes of one rank, and Open MPI's everywhere.
 *
 * Where nodes of L ranks are blocks of consecutive ranks, L and their
 * number powers of two (agree_leaders_carry), the first lg L steps stay
 * inside each node, so when the first step across nodes begins every rank
 * of a node holds the node's packet. From there, for inline data (an mpi
 * call's, packet.h) above comm->agree->home_from bytes, only each
 * node's first rank sends it across; the others send their header alone,
 * and at the end get the data from it, in lg L steps inside the node. The
 * links between nodes carry the data once per node, as in MPICH's
 * node-aware all-reduce, where L copies of it crossed at once. Smaller
 * data crosses from every rank, which costs less than those lg L steps
 * (algo_check_home_from).
 *
 * By one MPI all-reduce of the packets (a packet datatype, a user-defined
 * op over agree_packet_combine). Where nodes hold several ranks MPICH's
 * blocking all-reduce is node-aware: the ranks of a node meet in shared
 * memory and one of each crosses the network. A comm takes this way where
 * MPI's all-reduce is node-aware and its nodes are not such blocks
 * (algo_check_by_exchange): there rondo's exchange would have L copies of
 * the riding data cross at once. No data rides with it but the packet's
 * own.
 *
 * It runs over point-to-point messages so that a collective can send its
 * own data in the same steps: Rabenseifner's halving and the all-gather's
 * recursive doubling pair the same ranks in the same order (their riders,
 * allreduce_rabenseifner.c, ag_rd.c), so the check costs them no round of
 * its own. The packets decide, step by step, who
 * sends data: a rank sends its data with its packet while its packet so
 * far says every rank it has heard from made the same valid call and
 * rides (agree_packet_rides). A step's data of at most
 * AGREE_RIDER_INLINE_BYTES goes in the packet's own message, after the
 * header (rider_inline set in the copy sent): one message a step, as
 * MPI's halving and doubling send, where two messages cost the multi-host
 * bed about half a check's step more than the data alone. Every packet's
 * receive has room for that, whatever the partner's call. Larger data is a
 * second message, whose receive is posted with the packet's, before the
 * partner's packet is in: under a rendezvous protocol (or SimGrid's SMPI,
 * where a message moves once both sides are there) data whose receive
 * waited for the packet would pay the latency twice per step. Its tag
 * comes from the call's signature. When the partner's packet shows
 * another call, or no data, the posted receive is cancelled, and data the
 * partner sent in a message of its own for its call is received and
 * dropped.
 * Every rank takes every step whatever its call, and every message sent
 * is received: a mismatch still ends in an error on every rank, never a
 * hang or a stray message.
 */
#include "algo/agree/exchange.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/agree/signature.h"
#include "algo/algo.h"
#include "base/numbers.h"
#include "topo/topo.h"

void agree_nap(double *nap)
{
  struct timespec ts = {0, (long)(*nap * 1e9)};
  nanosleep(&ts, NULL);
  *nap = *nap * 2 < 1e-3 ? *nap * 2 : 1e-3;
}

/* Waits for one request, with its status: in algo_wait, or testing with
 * poll and a nap between the tests. */
static rondo_status_t wait_status(rondo_comm_t comm, MPI_Request *req, MPI_Status *status,
                                  void (*poll)(rondo_comm_t))
{
  if (poll == NULL)
    return algo_wait(comm, req, status);
  double nap = 20e-6;
  for (;;) {
    int done = 0;
    MPI_CHECK(MPI_Test(req, &done, status));
    if (done)
      return RONDO_SUCCESS;
    poll(comm);
    agree_nap(&nap);
  }
}

/* Waits for n requests, as wait_status. */
static rondo_status_t wait_all(rondo_comm_t comm, int n, MPI_Request *reqs,
                               void (*poll)(rondo_comm_t))
{
  for (int i = 0; i < n; i++)
    RONDO_CHECK(wait_status(comm, &reqs[i], MPI_STATUS_IGNORE, poll));
  return RONDO_SUCCESS;
}

static pthread_once_t tags_looked = PTHREAD_ONCE_INIT;
static int wide_tags; /* MPI_TAG_UB reaches the wide range (the same everywhere) */

static void look_at_tags(void)
{
  int *ub = NULL, found = 0;
  (void)MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
  wide_tags = found && ub != NULL && *ub >= ALGO_TAG_CHECK_WIDE + (2 << 22);
}

/* The tag of the data that rides with packet p on comm: from the sum of
 * its signature, so that data of another call seldom matches a receive posted
 * for this call's, and, as its lowest bit, the parity of the comm's
 * exchanges, so that it never matches the next call's (a partner can run
 * at most one exchange ahead: it cannot finish the next one without this
 * rank's packet). Where MPI's tags reach 2^23 above 32768 (MPICH, Open
 * MPI) the hash takes 22 bits, else 12 below the p2p API's tags. A hash
 * that collides is taken care of (step()), unless the other call's data is
 * the larger: a receive posted for fewer bytes is truncated, which MPICH
 * reports as fatal. That needs two riding calls that differ and whose
 * hashes collide, about 1 in 4 million where the tags are wide. */
static int data_tag(rondo_comm_t comm, const agree_packet_t *p)
{
  uint64_t h = p->sig; /* a 64-bit sum already */
  int parity = (int)(comm->agree->calls & 1);
  pthread_once(&tags_looked, look_at_tags);
  if (wide_tags)
    return ALGO_TAG_CHECK_WIDE + 2 * (int)(h % (1u << 22)) + parity;
  return ALGO_TAG_CHECK_DATA + 2 * (int)(h % (ALGO_TAG_CHECK_DATAS / 2)) + parity;
}

/* Receives and drops the data peer sent with tag after its packet, of a
 * call other than this rank's. Only a failing check gets here. */
static rondo_status_t drop_data(rondo_comm_t comm, int peer, int tag)
{
  MPI_Status s;
  MPI_CHECK(MPI_Probe(peer, tag, comm->mpi, &s));
#if MPI_VERSION >= 4
  MPI_Count bytes = 0;
  MPI_CHECK(MPI_Get_count_c(&s, MPI_BYTE, &bytes));
#else
  int bytes = 0; /* (MPI_UNDEFINED beyond INT_MAX bytes: truncated below) */
  MPI_CHECK(MPI_Get_count(&s, MPI_BYTE, &bytes));
#endif
  void *buf = bytes > 0 ? malloc((size_t)bytes) : NULL;
  /* Without memory for it, a receive of 0 bytes still takes the message:
   * MPI truncates it (which MPICH reports as fatal: only out of memory, in
   * a call that fails anyway). */
  MPI_Request req = MPI_REQUEST_NULL;
  rondo_status_t st = algo_irecv_tag(comm, buf, buf != NULL ? (size_t)bytes : 0, peer, tag, &req);
  if (st == RONDO_SUCCESS)
    st = algo_waitall(comm, 1, &req);
  if (st != RONDO_SUCCESS)
    algo_abandon(1, &req, 0, NULL); /* before buf goes */
  free(buf);
  return buf != NULL ? st : RONDO_SUCCESS;
}

/* Withdraws this rank's receive of peer's data, posted before peer's
 * packet said that no such data comes. Whether it took a message anyway
 * (data of another call whose tag is the same): *took. Its status is of
 * no interest (it may be a truncation). */
static rondo_status_t withdraw(MPI_Request *req, int *took)
{
  MPI_Status s;
  int cancelled = 0;
  MPI_CHECK(MPI_Cancel(req));
  (void)MPI_Wait(req, &s);
  MPI_CHECK(MPI_Test_cancelled(&s, &cancelled));
  *took = !cancelled;
  return RONDO_SUCCESS;
}

/* Whether a packet's inline data stays home in a step across nodes whose
 * ranks are not their node's first (bare): above comm->agree->home_from
 * bytes. Either side of the step asks it of the packet the other side sent
 * too. */
static int stays_home(rondo_comm_t comm, int bare, const agree_packet_t *p)
{
  return bare && agree_packet_data_bytes(p) > comm->agree->home_from;
}

/* Waits for one message, a receive if recv; on a failure abandons it
 * (algo_abandon), so that a receive does not outlive its buffer. */
static rondo_status_t wait_one(rondo_comm_t comm, MPI_Request *req, int recv,
                               void (*poll)(rondo_comm_t))
{
  rondo_status_t st = wait_all(comm, 1, req, poll);
  if (st != RONDO_SUCCESS && recv)
    algo_abandon(1, req, 0, NULL);
  else if (st != RONDO_SUCCESS)
    algo_abandon(0, NULL, 1, req);
  return st;
}

/* Whether a step's data of bytes travels in the packet's own message. */
static int rides_along(size_t bytes) { return bytes <= AGREE_RIDER_INLINE_BYTES; }

/* This rank's packet out to peer: with the rider's data of this step
 * after its header where it is small (rides_along; staged: room for
 * both), else the data as a second message with tag. */
static rondo_status_t send_packet(rondo_comm_t comm, const agree_packet_t *mine, size_t sent,
                                  const void *data, size_t bytes, int rides, int tag, int peer,
                                  agree_packet_t *staged, MPI_Request out[2])
{
  if (rides && rides_along(bytes) && sent == sizeof(agree_packet_t)) {
    memcpy(staged, mine, sent);
    staged->rider_inline = 1;
    if (bytes > 0)
      memcpy(agree_packet_data(staged), data, bytes);
    return algo_isend_tag(comm, staged, sent + bytes, peer, ALGO_TAG_CHECK, &out[0]);
  }
  RONDO_CHECK(algo_isend_tag(comm, mine, sent, peer, ALGO_TAG_CHECK, &out[0]));
  return rides ? algo_isend_tag(comm, data, bytes, peer, tag, &out[1]) : RONDO_SUCCESS;
}

/* peer's data of this step, for the same call as this rank's: from
 * theirs, the message of got bytes, where it came along, else its own
 * message (in[1], posted now if it was not). */
static rondo_status_t take_data(rondo_comm_t comm, agree_packet_t *theirs, int got, int along,
                                void *buf, size_t bytes, int peer, int tag, MPI_Request in[2],
                                void (*poll)(rondo_comm_t))
{
  if (!along) {
    if (in[1] == MPI_REQUEST_NULL)
      RONDO_CHECK(algo_irecv_tag(comm, buf, bytes, peer, tag, &in[1]));
    return wait_all(comm, 1, &in[1], poll);
  }
  if ((size_t)got != sizeof(agree_packet_t) + bytes)
    return rondo__fail(RONDO_ERR_INTERNAL, "the check's exchange: rank %d sent %d bytes for a "
                       "step of %zu", peer, got, bytes);
  if (bytes > 0)
    memcpy(buf, agree_packet_data(theirs), bytes);
  return RONDO_SUCCESS;
}

/* One step with peer: this rank's packet (and data) out if send, peer's
 * packet in and combined into mine if recv, peer's data reduced or
 * dropped. theirs: room for a packet and a step's data along
 * (AGREE_PACKET_MAX_BYTES); staged: room for a packet's header and a
 * step's data along. bare: a step across nodes between ranks that are not
 * their node's first (agree_leaders_carry), where the larger inline data
 * stays home (stays_home). */
static rondo_status_t step(rondo_comm_t comm, agree_packet_t *mine, agree_packet_t *theirs,
                           agree_packet_t *staged, int peer, int mask, int send, int recv,
                           int bare, agree_rider_t *rider, void (*poll)(rondo_comm_t))
{
  int home = stays_home(comm, bare, mine);
  size_t sent = home ? sizeof(agree_packet_t) : agree_packet_sent_bytes(mine);
  MPI_Request in[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Request out[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int rides = rider != NULL && agree_packet_rides(mine), tag = rides ? data_tag(comm, mine) : -1;
  void *buf = NULL;
  size_t bytes = 0;
  rondo_status_t st = RONDO_SUCCESS;
  if (recv) { /* room for any packet, and for data along whatever peer's call */
    RONDO_CHECK_GOTO(
        algo_irecv_tag(comm, theirs, AGREE_PACKET_MAX_BYTES, peer, ALGO_TAG_CHECK, &in[0]), st,
        abandon);
    if (rides)
      rider->recv_buf(rider, mask, &buf, &bytes);
    if (rides && !rides_along(bytes))
      RONDO_CHECK_GOTO(algo_irecv_tag(comm, buf, bytes, peer, tag, &in[1]), st, abandon);
  }
  if (send) {
    const void *data = NULL;
    size_t n = 0;
    if (rides)
      rider->send_buf(rider, mask, &data, &n);
    RONDO_CHECK_GOTO(send_packet(comm, mine, sent, data, n, rides, tag, peer, staged, out), st,
                     abandon);
  }
  if (recv) {
    MPI_Status s;
    int got = -1;
    RONDO_CHECK_GOTO(wait_status(comm, &in[0], &s, poll), st, abandon);
    MPI_CHECK_GOTO(MPI_Get_count(&s, MPI_BYTE, &got), st, abandon);
    int along = theirs->rider_inline != 0, they_ride = agree_packet_rides(theirs);
    int same = they_ride && rides && agree_packet_same_call(mine, theirs);
    int took = 0;
    if (same) {
      RONDO_CHECK_GOTO(take_data(comm, theirs, got, along, buf, bytes, peer, tag, in, poll), st,
                       abandon);
      rider->reduce(rider, mask, peer);
    } else if (in[1] != MPI_REQUEST_NULL) {
      RONDO_CHECK_GOTO(withdraw(&in[1], &took), st, abandon);
    }
    if (they_ride && !same && !along && !(took && data_tag(comm, theirs) == tag))
      RONDO_CHECK_GOTO(drop_data(comm, peer, data_tag(comm, theirs)), st, abandon);
  }
  RONDO_CHECK_GOTO(wait_all(comm, 2, out, poll), st, abandon); /* mine is sent: it may change */
  if (recv && (home || stays_home(comm, bare, theirs)))
    agree_packet_combine_header(theirs, mine);
  else if (recv)
    agree_packet_combine(theirs, mine);
  return RONDO_SUCCESS;
abandon: /* no receive may outlive theirs or the rider's buffer */
  algo_abandon(2, in, 2, out);
  return st;
}

/* The node's first rank's packet to every rank of the node, by a binomial
 * tree over local ranks (a node is a block: agree_leaders_carry). */
static rondo_status_t spread(rondo_comm_t comm, agree_packet_t *mine, void (*poll)(rondo_comm_t))
{
  int local = comm->local_rank;
  for (int mask = comm->local_size / 2; mask > 0; mask >>= 1) {
    MPI_Request req = MPI_REQUEST_NULL;
    int low = local & (2 * mask - 1);
    if (low == 0)
      RONDO_CHECK(algo_isend_tag(comm, mine, agree_packet_sent_bytes(mine), comm->rank + mask,
                                 ALGO_TAG_CHECK, &req));
    else if (low == mask)
      RONDO_CHECK(algo_irecv_tag(comm, mine, agree_packet_recv_bytes(comm), comm->rank - mask,
                                 ALGO_TAG_CHECK, &req));
    else
      continue;
    RONDO_CHECK(wait_one(comm, &req, low == mask, poll));
  }
  return RONDO_SUCCESS;
}

/* ---- one MPI all-reduce ----------------------------------------------------------------- */

/* MPI_User_function over packets: agree_packet_combine. */
static void packet_reduce(void *in, void *inout, int *len, MPI_Datatype *type)
{
  (void)type;
  size_t stride = sizeof(agree_packet_t) + (size_t)((const agree_packet_t *)in)->room;
  for (int k = 0; k < *len; k++)
    agree_packet_combine((const agree_packet_t *)((char *)in + (size_t)k * stride),
                         (agree_packet_t *)((char *)inout + (size_t)k * stride));
}

/* One datatype per room class (agree_packet_room_class), made at its first use;
 * one op. */
static MPI_Datatype types[AGREE_PACKET_ROOMS];
static int typed[AGREE_PACKET_ROOMS]; /* types[k] was made */
static MPI_Op packet_op = MPI_OP_NULL;
static pthread_mutex_t made = PTHREAD_MUTEX_INITIALIZER;

static rondo_status_t packet_mpi(rondo_comm_t comm, MPI_Datatype *type, MPI_Op *op)
{
  int k = agree_packet_room_class(comm->agree->room), rc = MPI_SUCCESS;
  pthread_mutex_lock(&made);
  if (packet_op == MPI_OP_NULL)
    rc = MPI_Op_create(packet_reduce, 1, &packet_op);
  if (rc == MPI_SUCCESS && !typed[k]) {
    MPI_Datatype t;
    rc = MPI_Type_contiguous((int)agree_packet_recv_bytes(comm), MPI_BYTE, &t);
    if (rc == MPI_SUCCESS && (rc = MPI_Type_commit(&t)) == MPI_SUCCESS) {
      types[k] = t;
      typed[k] = 1;
    }
  }
  *type = types[k];
  *op = packet_op;
  pthread_mutex_unlock(&made);
  if (rc != MPI_SUCCESS)
    return rondo__mpi_fail(rc, "MPI_Type_contiguous/MPI_Op_create", __FILE__, __LINE__);
  return RONDO_SUCCESS;
}

void agree_exchange_free(void)
{
  for (int k = 0; k < AGREE_PACKET_ROOMS; k++)
    if (typed[k]) {
      MPI_CHECK_LOG(MPI_Type_free(&types[k]));
      typed[k] = 0;
    }
  if (packet_op != MPI_OP_NULL)
    MPI_CHECK_LOG(MPI_Op_free(&packet_op));
}

/* Blocking where no rank yields, so MPI picks its best all-reduce (its
 * nonblocking one is not node-aware); where some rank yields, nonblocking
 * on every rank (a blocking collective may not match a nonblocking one),
 * waited for as the caller asks. */
static rondo_status_t by_mpi(rondo_comm_t comm, agree_packet_t *mine, agree_packet_t *all,
                             void (*poll)(rondo_comm_t))
{
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  RONDO_CHECK(packet_mpi(comm, &type, &op));
  if (!comm->yield_any) {
    MPI_CHECK(MPI_Allreduce(mine, all, 1, type, op, comm->mpi));
  } else {
    MPI_Request req;
    MPI_CHECK(MPI_Iallreduce(mine, all, 1, type, op, comm->mpi, &req));
    RONDO_CHECK(wait_all(comm, 1, &req, poll));
  }
  memcpy(mine, all, agree_packet_recv_bytes(comm));
  return RONDO_SUCCESS;
}

int agree_by_exchange(rondo_comm_t comm) { return comm->agree->by_exchange; }

size_t agree_home_from(rondo_comm_t comm) { return comm->agree->home_from; }

void agree_choose_exchange(rondo_comm_t comm, int by_exchange, size_t home_from)
{
  comm->agree->by_exchange = by_exchange;
  comm->agree->home_from = home_from;
}

void agree_exchange_describe(rondo_comm_t comm, char *buf, size_t len)
{
  if (!agree_by_exchange(comm))
    snprintf(buf, len, "MPI's all-reduce");
  else if (comm->agree->home_from < SIZE_MAX)
    snprintf(buf, len, "rondo's exchange, inline data above %zu B across from one rank a node",
             comm->agree->home_from);
  else
    snprintf(buf, len, "rondo's exchange");
}

int agree_leaders_carry(rondo_comm_t comm)
{
  const struct topo *t = comm->topo;
  return t != NULL && t->blocks && t->max_local > 1 && t->node_count > 1 &&
         rondo__pof2_floor(t->max_local) == t->max_local &&
         rondo__pof2_floor(t->node_count) == t->node_count;
}

/* ---- rondo's recursive doubling ----------------------------------------------------------- */

rondo_status_t agree_exchange(rondo_comm_t comm, agree_packet_t *mine, agree_rider_t *rider,
                              void (*poll)(rondo_comm_t))
{
  int64_t buf[AGREE_PACKET_MAX_BYTES / sizeof(int64_t) + 1];
  int64_t out[(sizeof(agree_packet_t) + AGREE_RIDER_INLINE_BYTES) / sizeof(int64_t) + 1];
  agree_packet_t *theirs = (agree_packet_t *)buf, *staged = (agree_packet_t *)out;
  if (!agree_by_exchange(comm))
    return rider == NULL ? by_mpi(comm, mine, theirs, poll)
                         : rondo__fail(RONDO_ERR_INTERNAL, "no data rides in an MPI all-reduce");
  int rank = comm->rank, newrank = algo_fold_newrank(comm);
  comm->agree->calls++;
  /* where the node's first rank alone carries the data across, the steps
   * from distance L on cross nodes (the size is a power of two: no fold) */
  int across = agree_leaders_carry(comm) ? comm->local_size : comm->pof2;
  int bare = across < comm->pof2 && comm->local_rank != 0;
  int folded = rank < 2 * (comm->size - comm->pof2);
  if (newrank < 0) { /* folded onto rank + 1: gives, then gets the result */
    RONDO_CHECK(step(comm, mine, theirs, staged, rank + 1, 0, 1, 0, 0, rider, poll));
    MPI_Request req = MPI_REQUEST_NULL;
    RONDO_CHECK(
        algo_irecv_tag(comm, mine, agree_packet_recv_bytes(comm), rank + 1, ALGO_TAG_CHECK, &req));
    return wait_one(comm, &req, 1, poll);
  }
  if (folded)
    RONDO_CHECK(step(comm, mine, theirs, staged, rank - 1, 0, 0, 1, 0, rider, poll));
  for (int mask = 1; mask < comm->pof2; mask <<= 1)
    RONDO_CHECK(step(comm, mine, theirs, staged, algo_fold_rank(comm, newrank ^ mask), mask, 1, 1,
                     mask >= across && bare, rider, poll));
  if (across < comm->pof2 && stays_home(comm, 1, mine))
    RONDO_CHECK(spread(comm, mine, poll)); /* the data, which crossed with the first ranks */
  if (folded) {
    MPI_Request req = MPI_REQUEST_NULL;
    RONDO_CHECK(
        algo_isend_tag(comm, mine, agree_packet_sent_bytes(mine), rank - 1, ALGO_TAG_CHECK, &req));
    RONDO_CHECK(wait_one(comm, &req, 0, poll));
  }
  return RONDO_SUCCESS;
}
