/* The argument check's packet (lib/algo/agree/packet.c) on
 * hand-made packets: how two packets combine, when they say that data rides
 * with them, and how the calls before set how much data the next call's
 * check carries. No MPI: these are functions of packets and the comm's room
 * state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "algo/agree/packet.h"
#include "algo/agree/signature.h"
#include "base/comm.h"

/* A call's sum as hand-made packets carry it: any value that differs
 * when a field does (the packet code only compares sums). */
static uint64_t sum_of(agree_coll_t coll, int64_t count, rondo_dtype_t dtype, rondo_algo_t algo)
{
  return 1 + (uint64_t)coll + 16 * ((uint64_t)dtype + 64 * ((uint64_t)algo + 64 * (uint64_t)count));
}

/* A reduced packet in which every rank called coll with these fields. */
static agree_packet_t agreed(agree_coll_t coll, int64_t count, rondo_dtype_t dtype,
                             rondo_algo_t algo)
{
  agree_packet_t p;
  memset(&p, 0, sizeof p);
  p.sig = sum_of(coll, count, dtype, algo);
  p.not_sig = ~p.sig;
  p.coll = coll;
  if (coll == AGREE_ALLREDUCE || coll == AGREE_REDUCE_SCATTER || coll == AGREE_ALLGATHER) {
    p.count = count;
    p.dtype = dtype;
    p.op = RONDO_SUM;
    p.algo = algo;
  }
  return p;
}

/* p, combined with the packet of a rank that called the same but with
 * count: the sums differ (a mismatch). */
static agree_packet_t disagreed(agree_packet_t p, int64_t count)
{
  agree_packet_t q =
      agreed((agree_coll_t)p.coll, count, (rondo_dtype_t)p.dtype, (rondo_algo_t)p.algo);
  q.room = p.room;
  q.first = p.first;
  q.rides = p.rides;
  agree_packet_combine(&q, &p);
  return p;
}

static void call(struct rondo_comm *c, int64_t bytes, rondo_algo_t algo)
{
  agree_packet_t p = agreed(AGREE_ALLREDUCE, bytes / 4, RONDO_FLOAT32, algo);
  agree_packet_next_room(c, &p);
}

/* The agreement state of the comm under test (one test runs at a time). */
static struct agree_state the_state;

static void new_comm(struct rondo_comm *c)
{
  memset(c, 0, sizeof *c);
  memset(&the_state, 0, sizeof the_state);
  the_state.room = AGREE_FIRST_ROOM;
  c->agree = &the_state;
}

/* A larger inline call grows the room at once, to its power-of-two class. */
static void test_grows_at_once(void **state)
{
  (void)state;
  struct rondo_comm c;
  new_comm(&c);
  call(&c, 1028, RONDO_ALGO_MPI);
  assert_int_equal(c.agree->room, 2048);
  call(&c, AGREE_INLINE_BYTES, RONDO_ALGO_MPI);
  assert_int_equal(c.agree->room, AGREE_INLINE_BYTES);
}

/* Smaller inline calls lower it after 8 in a row, to the largest of them. */
static void test_shrinks_after_eight(void **state)
{
  (void)state;
  struct rondo_comm c;
  new_comm(&c);
  for (int i = 0; i < 7; i++) {
    call(&c, i == 3 ? 200 : 16, RONDO_ALGO_MPI);
    assert_int_equal(c.agree->room, AGREE_FIRST_ROOM);
  }
  call(&c, 16, RONDO_ALGO_MPI);
  assert_int_equal(c.agree->room, 256);
  for (int i = 0; i < 8; i++)
    call(&c, 16, RONDO_ALGO_MPI);
  assert_int_equal(c.agree->room, 64);
}

/* A loop of two sizes keeps the larger one riding. */
static void test_two_sizes_keep_the_larger(void **state)
{
  (void)state;
  struct rondo_comm c;
  new_comm(&c);
  for (int i = 0; i < 40; i++) {
    call(&c, i % 2 ? 8 : 4096, RONDO_ALGO_MPI);
    assert_int_equal(c.agree->room, 4096);
  }
}

/* Another algorithm's all-reduce of B bytes leaves at most B/16 of room;
 * an mpi call too large to ride counts as another algorithm's. */
static void test_others_cap_the_room(void **state)
{
  (void)state;
  struct rondo_comm c;
  new_comm(&c);
  call(&c, 4096, RONDO_ALGO_MPI);
  call(&c, 1 << 20, RONDO_ALGO_RING);
  assert_int_equal(c.agree->room, 4096); /* 64 KiB allowed */
  call(&c, 32768, RONDO_ALGO_RECURSIVE_DOUBLING);
  assert_int_equal(c.agree->room, 2048);
  call(&c, AGREE_INLINE_BYTES + 4, RONDO_ALGO_MPI);
  assert_int_equal(c.agree->room, AGREE_INLINE_BYTES / 16);
  call(&c, 512, RONDO_ALGO_RABENSEIFNER);
  assert_int_equal(c.agree->room, 0);
  call(&c, 16, RONDO_ALGO_MPI);
  assert_int_equal(c.agree->room, 64);
}

/* A failed or mismatched call, or another collective, changes nothing. */
static void test_unchanged_by_others(void **state)
{
  (void)state;
  struct rondo_comm c;
  new_comm(&c);
  agree_packet_t p = agreed(AGREE_ALLREDUCE, 4096, RONDO_FLOAT32, RONDO_ALGO_MPI);
  p.failed = 1; /* a rank failed its local check */
  agree_packet_next_room(&c, &p);
  assert_int_equal(c.agree->room, AGREE_FIRST_ROOM);
  p = agreed(AGREE_ALLREDUCE, 4096, RONDO_FLOAT32, RONDO_ALGO_MPI);
  p = disagreed(p, 1000); /* the counts differed */
  agree_packet_next_room(&c, &p);
  assert_int_equal(c.agree->room, AGREE_FIRST_ROOM);
  p = agreed(AGREE_BARRIER, 0, 0, 0);
  agree_packet_next_room(&c, &p);
  p = agreed(AGREE_BROADCAST, 1 << 20, RONDO_FLOAT32, RONDO_ALGO_RING);
  agree_packet_next_room(&c, &p);
  assert_int_equal(c.agree->room, AGREE_FIRST_ROOM);
  for (int i = 0; i < 7; i++) /* the shrink count survives, and so does */
    call(&c, 16, RONDO_ALGO_MPI);
  agree_packet_next_room(&c, &p); /* a broadcast between */
  call(&c, 16, RONDO_ALGO_MPI);
  assert_int_equal(c.agree->room, 64);
}

/* A packet of one rank that calls an mpi all-reduce of n
 * float32 (riding in the packet: the room holds them) with this data. */
typedef struct {
  agree_packet_t p;
  float data[4];
} one_t;

static one_t rank_packet(int rank, const float *x)
{
  one_t o;
  o.p = agreed(AGREE_ALLREDUCE, 4, RONDO_FLOAT32, RONDO_ALGO_MPI);
  o.p.first = rank;
  o.p.room = sizeof o.data;
  memcpy(o.data, x, sizeof o.data);
  return o;
}

/* Combining: MAX of the words, MIN of first and rides, the data summed,
 * the same bytes whichever packet is combined into which. */
static void test_combine(void **state)
{
  (void)state;
  float x0[4] = {1, 2, 3, 4}, x1[4] = {10, 20, 30, 1e30f};
  one_t a = rank_packet(0, x0), b = rank_packet(1, x1);
  a.p.rides = 1;
  b.p.rides = 0;
  b.p.leaving = 1; /* rank 1 of 2 is destroying the comm */
  one_t ab = b, ba = a;
  agree_packet_combine(&a.p, &ab.p);
  agree_packet_combine(&b.p, &ba.p);
  assert_memory_equal(&ab, &ba, sizeof ab);
  assert_int_equal(ab.p.first, 0);
  assert_int_equal(ab.p.rides, 0);
  assert_int_equal(ab.p.leaving, 1);
  float want[4] = {11, 22, 33, 1e30f};
  assert_memory_equal(ab.data, want, sizeof want);
  /* a rank that failed: MAX shows it, and no data is reduced */
  one_t c = rank_packet(1, x1);
  c.p.failed = 1; /* rank 1 of 2 */
  c.p.sig = 0;
  c.p.not_sig = ~(uint64_t)0;
  one_t ac = a;
  agree_packet_combine(&c.p, &ac.p);
  assert_int_equal(ac.p.failed, 1);
  assert_false(agree_packet_agrees(&ac.p));
  assert_memory_equal(ac.data, x0, sizeof x0);
  /* the headers alone (a step whose data stayed home): the same header as
   * a whole combine, the data left as it was */
  one_t hb = b;
  agree_packet_combine_header(&a.p, &hb.p);
  assert_memory_equal(&hb.p, &ab.p, sizeof hb.p);
  assert_memory_equal(hb.data, x1, sizeof x1);
}

/* Data rides with a packet only while every rank it combines called alike,
 * validly, with data to send. */
static void test_rides(void **state)
{
  (void)state;
  agree_packet_t p = agreed(AGREE_ALLREDUCE, 4096, RONDO_FLOAT32, RONDO_ALGO_RABENSEIFNER);
  assert_false(agree_packet_rides(&p));
  p.rides = 1;
  assert_true(agree_packet_rides(&p));
  agree_packet_t q = p;
  q.failed = 1; /* a rank failed */
  assert_false(agree_packet_rides(&q));
  q = disagreed(p, 4000); /* counts from 4000 to 4096 */
  assert_false(agree_packet_rides(&q));
  q = p;
  agree_packet_t b = agreed(AGREE_BROADCAST, 4096, RONDO_FLOAT32, RONDO_ALGO_RABENSEIFNER);
  b.rides = 1;
  agree_packet_combine(&b, &q); /* a broadcast on some rank, all-reduces elsewhere */
  assert_false(agree_packet_rides(&q));
  q = agreed(AGREE_ALLREDUCE, 4000, RONDO_FLOAT32, RONDO_ALGO_RABENSEIFNER);
  q.rides = 1;
  agree_packet_combine(&q, &p); /* two riding groups whose counts differ */
  assert_int_equal(p.rides, 1);
  assert_false(agree_packet_rides(&p));
}

/* A packet sends its header and the data it carries, not its whole room. */
static void test_sends_only_what_it_carries(void **state)
{
  (void)state;
  agree_packet_t p = agreed(AGREE_ALLREDUCE, 4, RONDO_FLOAT32, RONDO_ALGO_MPI);
  p.room = 64;
  assert_int_equal(agree_packet_sent_bytes(&p), sizeof(agree_packet_t) + 16);
  p.room = 8; /* more than the room: it does not ride */
  assert_int_equal(agree_packet_sent_bytes(&p), sizeof(agree_packet_t));
  p = agreed(AGREE_ALLREDUCE, 4, RONDO_FLOAT32, RONDO_ALGO_RING);
  p.room = 64; /* another algorithm: no data */
  assert_int_equal(agree_packet_sent_bytes(&p), sizeof(agree_packet_t));
  p = agreed(AGREE_ALLREDUCE, 4, RONDO_FLOAT32, RONDO_ALGO_MPI);
  p.room = 64;
  p = disagreed(p, 3); /* ranks that disagree on the count: no data */
  assert_int_equal(agree_packet_sent_bytes(&p), sizeof(agree_packet_t));
  assert_int_equal(agree_packet_data_bytes(&p), 0);
  p = agreed(AGREE_ALLREDUCE, 4, RONDO_FLOAT32, RONDO_ALGO_MPI);
  p.room = 64;
  assert_int_equal(agree_packet_data_bytes(&p), 16);
}

/* A reduce-scatter's or all-gather's packet that tells the size of its
 * mpi call's data (agree.c: every rank's, whether it rides or not) sizes
 * the room as an all-reduce's does; one that tells none (another
 * algorithm: count 0) leaves it. An all-gather's blocks, each rank's at
 * its offset in zeros, combine by a uint8 sum into the gathered bytes,
 * the same in either order. */
static void test_families_ride(void **state)
{
  (void)state;
  struct rondo_comm c;
  new_comm(&c);
  agree_packet_t p = agreed(AGREE_REDUCE_SCATTER, 1024, RONDO_FLOAT32, RONDO_ALGO_MPI);
  agree_packet_next_room(&c, &p);
  assert_int_equal(c.agree->room, 4096);
  p = agreed(AGREE_ALLGATHER, AGREE_INLINE_BYTES, RONDO_UINT8, RONDO_ALGO_MPI);
  agree_packet_next_room(&c, &p);
  assert_int_equal(c.agree->room, AGREE_INLINE_BYTES);
  p = agreed(AGREE_ALLGATHER, 0, 0, 0);
  agree_packet_next_room(&c, &p);
  p = agreed(AGREE_REDUCE_SCATTER, 0, 0, 0);
  agree_packet_next_room(&c, &p);
  assert_int_equal(c.agree->room, AGREE_INLINE_BYTES);

  struct gathered {
    agree_packet_t p;
    unsigned char data[8];
  } a, b;
  a.p = agreed(AGREE_ALLGATHER, 8, RONDO_UINT8, RONDO_ALGO_MPI);
  a.p.room = sizeof a.data;
  b = a;
  b.p.first = 1;
  unsigned char x0[8] = {0xff, 0x80, 7, 0, 0, 0, 0, 0}, x1[8] = {0, 0, 0, 0, 0xfe, 1, 0, 0x81};
  memcpy(a.data, x0, 8);
  memcpy(b.data, x1, 8);
  assert_int_equal(agree_packet_data_bytes(&a.p), 8);
  struct gathered ab = b, ba = a;
  agree_packet_combine(&a.p, &ab.p);
  agree_packet_combine(&b.p, &ba.p);
  unsigned char want[8] = {0xff, 0x80, 7, 0, 0xfe, 1, 0, 0x81};
  assert_memory_equal(ab.data, want, 8);
  assert_memory_equal(&ab, &ba, sizeof ab);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grows_at_once),
      cmocka_unit_test(test_shrinks_after_eight),
      cmocka_unit_test(test_two_sizes_keep_the_larger),
      cmocka_unit_test(test_others_cap_the_room),
      cmocka_unit_test(test_unchanged_by_others),
      cmocka_unit_test(test_families_ride),
      cmocka_unit_test(test_combine),
      cmocka_unit_test(test_rides),
      cmocka_unit_test(test_sends_only_what_it_carries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
