/* The room of the argument check's packet (lib/algo/common/check_packet.c)
 * on hand-made reduced packets: how the calls before set how much data the
 * next call's check carries. No MPI: packet_next_room is a function of the
 * reduced packet and the comm's room state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "algo/common/check_packet.h"
#include "base/comm.h"

/* A reduced packet in which every rank called coll with these fields. */
static packet_t agreed(agree_coll_t coll, int64_t count, rondo_dtype_t dtype, rondo_algo_t algo)
{
  packet_t p;
  memset(&p, 0, sizeof p);
  int64_t x[5] = {coll, count, dtype, RONDO_SUM, algo};
  p.v[1] = -2;
  for (int i = 0; i < 5; i++) {
    p.v[2 + 2 * i] = x[i];
    p.v[3 + 2 * i] = ~x[i];
  }
  p.leaving = -2;
  return p;
}

static void call(struct rondo_comm *c, int64_t bytes, rondo_algo_t algo)
{
  packet_t p = agreed(AGREE_ALLREDUCE, bytes / 4, RONDO_FLOAT32, algo);
  packet_next_room(c, &p);
}

static void new_comm(struct rondo_comm *c)
{
  memset(c, 0, sizeof *c);
  c->check_room = AGREE_FIRST_ROOM;
}

/* A larger inline call grows the room at once, to its power-of-two class. */
static void test_grows_at_once(void **state)
{
  (void)state;
  struct rondo_comm c;
  new_comm(&c);
  call(&c, 1028, RONDO_ALGO_MPI);
  assert_int_equal(c.check_room, 2048);
  call(&c, AGREE_INLINE_BYTES, RONDO_ALGO_MPI);
  assert_int_equal(c.check_room, AGREE_INLINE_BYTES);
}

/* Smaller inline calls lower it after 8 in a row, to the largest of them. */
static void test_shrinks_after_eight(void **state)
{
  (void)state;
  struct rondo_comm c;
  new_comm(&c);
  for (int i = 0; i < 7; i++) {
    call(&c, i == 3 ? 200 : 16, RONDO_ALGO_MPI);
    assert_int_equal(c.check_room, AGREE_FIRST_ROOM);
  }
  call(&c, 16, RONDO_ALGO_MPI);
  assert_int_equal(c.check_room, 256);
  for (int i = 0; i < 8; i++)
    call(&c, 16, RONDO_ALGO_MPI);
  assert_int_equal(c.check_room, 64);
}

/* A loop of two sizes keeps the larger one riding. */
static void test_two_sizes_keep_the_larger(void **state)
{
  (void)state;
  struct rondo_comm c;
  new_comm(&c);
  for (int i = 0; i < 40; i++) {
    call(&c, i % 2 ? 8 : 4096, RONDO_ALGO_MPI);
    assert_int_equal(c.check_room, 4096);
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
  assert_int_equal(c.check_room, 4096); /* 64 KiB allowed */
  call(&c, 32768, RONDO_ALGO_RECURSIVE_DOUBLING);
  assert_int_equal(c.check_room, 2048);
  call(&c, AGREE_INLINE_BYTES + 4, RONDO_ALGO_MPI);
  assert_int_equal(c.check_room, AGREE_INLINE_BYTES / 16);
  call(&c, 512, RONDO_ALGO_RABENSEIFNER);
  assert_int_equal(c.check_room, 0);
  call(&c, 16, RONDO_ALGO_MPI);
  assert_int_equal(c.check_room, 64);
}

/* A failed or mismatched call, or another collective, changes nothing. */
static void test_unchanged_by_others(void **state)
{
  (void)state;
  struct rondo_comm c;
  new_comm(&c);
  packet_t p = agreed(AGREE_ALLREDUCE, 4096, RONDO_FLOAT32, RONDO_ALGO_MPI);
  p.v[0] = 1; /* a rank failed its local check */
  packet_next_room(&c, &p);
  assert_int_equal(c.check_room, AGREE_FIRST_ROOM);
  p = agreed(AGREE_ALLREDUCE, 4096, RONDO_FLOAT32, RONDO_ALGO_MPI);
  p.v[5] = ~(int64_t)1000; /* the counts differed: max 1024, min 1000 */
  packet_next_room(&c, &p);
  assert_int_equal(c.check_room, AGREE_FIRST_ROOM);
  p = agreed(AGREE_BARRIER, 0, 0, 0);
  packet_next_room(&c, &p);
  p = agreed(AGREE_BROADCAST, 1 << 20, RONDO_FLOAT32, RONDO_ALGO_RING);
  packet_next_room(&c, &p);
  assert_int_equal(c.check_room, AGREE_FIRST_ROOM);
  for (int i = 0; i < 7; i++) /* the shrink count survives, and so does */
    call(&c, 16, RONDO_ALGO_MPI);
  packet_next_room(&c, &p); /* a broadcast between */
  call(&c, 16, RONDO_ALGO_MPI);
  assert_int_equal(c.check_room, 64);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grows_at_once),
      cmocka_unit_test(test_shrinks_after_eight),
      cmocka_unit_test(test_two_sizes_keep_the_larger),
      cmocka_unit_test(test_others_cap_the_room),
      cmocka_unit_test(test_unchanged_by_others),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
