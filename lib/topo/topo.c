/*
 * The MPI side of topology: real nodes from MPI_Comm_split_type, virtual
 * nodes (RONDO_NODE_SIZE), node numbering, per-slice cross-node
 * communicators, and the oversubscription check with hwloc (hw.c).
 */
#define _GNU_SOURCE /* sched_getaffinity, cpu_set_t */
#include "topo/topo.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "topo/hw.h"

#ifdef RONDO_SMPI
#include <simgrid/host.h>
#endif

/* ---- hwloc, loaded once per process ------------------------------------------- */

static pthread_mutex_t hw_lock = PTHREAD_MUTEX_INITIALIZER;
static hwloc_topology_t hw_topo;
static int hw_state; /* 0 not loaded, 1 loaded, -1 failed */

#ifndef RONDO_SMPI
static hwloc_topology_t hw_get(void)
{
  pthread_mutex_lock(&hw_lock);
  if (hw_state == 0)
    hw_state = topo_hw_load(&hw_topo) == 0 ? 1 : -1;
  hwloc_topology_t t = hw_state == 1 ? hw_topo : NULL;
  pthread_mutex_unlock(&hw_lock);
  return t;
}
#endif

void topo_shutdown(void)
{
  pthread_mutex_lock(&hw_lock);
  if (hw_state == 1)
    hwloc_topology_destroy(hw_topo);
  hw_state = 0;
  pthread_mutex_unlock(&hw_lock);
}

#ifdef RONDO_SMPI
/* Simulated (SimGrid's SMPI, docs/scale.md): the node is a simulated host
 * with the platform's cores. hwloc would describe the machine that runs the
 * simulation, and load it once per simulated rank. */
static rondo_status_t probe_hw(MPI_Comm real_node, topo_t *t)
{
  (void)real_node;
  sg_host_t host = sg_host_self();
  t->cores = t->avail_cores = sg_host_core_count(host);
  snprintf(t->hw_summary, sizeof t->hw_summary, "simulated host %s, %d cores (SimGrid)",
           sg_host_get_name(host), t->cores);
  return RONDO_SUCCESS;
}
#else
/* The union of the real node's ranks' cpusets: MPI_BOR over their bitmap
 * words, as many as the largest topology on the node needs (up to
 * CPUSET_WORDS: 16384 PUs with 64-bit words; *nwords 0 above, the same on
 * every rank of the node, which then goes without the hardware facts). On
 * this rank's stack, so that no rank gives up alone between the two
 * reductions. */
enum { CPUSET_WORDS = 256 };
static rondo_status_t node_cpuset_words(MPI_Comm real_node, hwloc_topology_t topo,
                                        unsigned long *all, int *nwords)
{
  int mine = topo != NULL ? topo_hw_cpuset_nwords(topo) : 1;
  MPI_CHECK(MPI_Allreduce(&mine, nwords, 1, MPI_INT, MPI_MAX, real_node));
  if (*nwords > CPUSET_WORDS) {
    *nwords = 0;
    return RONDO_SUCCESS;
  }
  unsigned long words[CPUSET_WORDS] = {0};
  hwloc_cpuset_t set = topo != NULL ? hwloc_bitmap_alloc() : NULL;
  if (set != NULL) {
    topo_hw_bind_cpuset(topo, set);
    topo_hw_cpuset_to_ulongs(set, words, *nwords);
    hwloc_bitmap_free(set);
  }
  /* Every rank joins the reduction, even if its hwloc failed. */
  MPI_CHECK(MPI_Allreduce(words, all, *nwords, MPI_UNSIGNED_LONG, MPI_BOR, real_node));
  return RONDO_SUCCESS;
}

static rondo_status_t probe_hw(MPI_Comm real_node, topo_t *t)
{
  hwloc_topology_t topo = hw_get();
  unsigned long all[CPUSET_WORDS];
  int nwords = 0;
  topo_hw_t hw;
  RONDO_CHECK(node_cpuset_words(real_node, topo, all, &nwords));
  hwloc_cpuset_t node_set = topo != NULL && nwords > 0 ? hwloc_bitmap_alloc() : NULL;
  if (node_set == NULL) { /* a local fact: the comm works without it */
    snprintf(t->hw_summary, sizeof t->hw_summary, "hwloc could not %s",
             topo == NULL   ? "load the topology"
             : nwords == 0 ? "describe over 16384 PUs"
                           : "allocate a bitmap");
    t->cores = t->avail_cores = 0;
    return RONDO_SUCCESS;
  }
  topo_hw_cpuset_from_ulongs(node_set, all, nwords);
  topo_hw_count(topo, node_set, &hw);
  hwloc_bitmap_free(node_set);
  topo_hw_describe(&hw, t->hw_summary, sizeof t->hw_summary);
  t->cores = hw.cores;
  t->avail_cores = hw.cpuset_cores;
  return RONDO_SUCCESS;
}
#endif

/* FNV-1a of n bytes into h. */
static unsigned fnv(unsigned h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 16777619u;
  return h;
}

/* What tells this process's machine and its share of the cores: the
 * kernel's boot id where Linux has one (network namespaces, as in the
 * multi-host test bed, and containers share the kernel and its cores
 * whatever host names they give themselves), else the processor name;
 * with the CPUs the process may run on, so that containers held to
 * separate cores of one kernel count apart. */
static unsigned machine_key(void)
{
  unsigned h = 2166136261u;
  char id[64];
  size_t n = 0;
#ifdef RONDO_SMPI
  FILE *f = NULL; /* every simulated host shares the process: its name tells them */
#else
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
#endif
  if (f != NULL) {
    n = fread(id, 1, sizeof id, f);
    fclose(f);
  }
  if (n > 0) {
    h = fnv(h, id, n);
  } else {
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    if (MPI_Get_processor_name(name, &len) == MPI_SUCCESS && len > 0)
      h = fnv(h, name, (size_t)len);
  }
#if defined(__linux__) && !defined(RONDO_SMPI)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    h = fnv(h, &set, sizeof set);
#endif
  return h;
}

/* Ranks of comm on this machine (machine_key): network namespaces (the
 * multi-host test bed) or containers can split one machine into several
 * MPI nodes whose ranks still share its cores. Two keys with the same
 * hash count as one machine, which can only overstate sharing. A comm
 * whose ranks all share one node (real_local_size, the same on every rank
 * then) is on one machine: no split, which on an oversubscribed node costs
 * MPI's blocking collective a scheduler slice or more a step. */
static rondo_status_t machine_ranks(MPI_Comm comm, int rank, int real_local_size, int *out)
{
  int size;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  if (real_local_size == size) {
    *out = size;
    return RONDO_SUCCESS;
  }
  MPI_Comm same;
  MPI_CHECK(MPI_Comm_split(comm, (int)(machine_key() & 0x7fffffff), rank, &same));
  rondo_status_t st = RONDO_SUCCESS;
  MPI_CHECK_GOTO(MPI_Comm_size(same, out), st, done);
done:
  MPI_CHECK_LOG(MPI_Comm_free(&same));
  return st;
}

/* ---- nodes ---------------------------------------------------------------------- */

void topo_slice(size_t count, int slices, int g, size_t *start, size_t *len)
{
  size_t s = (size_t)slices, i = (size_t)g;
  size_t base = count / s, extra = count % s;
  *start = i * base + (i < extra ? i : extra);
  *len = base + (i < extra);
}

/* Node ids: the node's leaders (local rank 0), numbered by rank; the
 * smallest and largest node, whether the nodes are blocks of consecutive
 * ranks, and whether any node is oversubscribed. The
 * leaders are found in a bitmap of the comm's ranks, OR-reduced a stretch
 * of LEADER_WORDS words (16384 ranks) at a time on the stack, so that no
 * rank can run out of memory alone; not in a communicator of their own,
 * which would be one more to make (SimGrid's SMPI makes each with p^2
 * messages, and its MPI_Exscan sends all to all). */
enum { BITS_PER_WORD = 8 * sizeof(unsigned long), LEADER_WORDS = 256 };
static rondo_status_t number_nodes(MPI_Comm comm, int rank, topo_t *t)
{
  int size, sizes[4], maxima[4], below = 0, count = 0;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  int span = LEADER_WORDS * BITS_PER_WORD; /* ranks per stretch */
  for (int first = 0; first < size; first += span) {
    unsigned long words[LEADER_WORDS] = {0}, all[LEADER_WORDS];
    int n = size - first < span ? (size - first + BITS_PER_WORD - 1) / BITS_PER_WORD
                                : LEADER_WORDS;
    int at = rank - first; /* this rank's bit in the stretch, if there */
    if (t->local_rank == 0 && at >= 0 && at < span)
      words[at / BITS_PER_WORD] |= 1UL << (at % BITS_PER_WORD);
    MPI_CHECK(MPI_Allreduce(words, all, n, MPI_UNSIGNED_LONG, MPI_BOR, comm));
    for (int w = 0; w < n; w++) {
      int lead = __builtin_popcountl(all[w]);
      count += lead;
      if (first + (w + 1) * BITS_PER_WORD <= rank)
        below += lead;
      else if (first + w * BITS_PER_WORD <= rank)
        below += __builtin_popcountl(all[w] & ((1UL << (rank % BITS_PER_WORD)) - 1));
    }
  }
  /* the leader's count of the leaders below it, for its whole node */
  MPI_CHECK(MPI_Bcast(&below, 1, MPI_INT, 0, t->node));
  t->node_id = below;
  t->node_count = count;
  sizes[0] = -t->local_size;
  sizes[1] = t->local_size;
  sizes[2] = t->oversubscribed;
  sizes[3] = rank != t->node_id * t->local_size + t->local_rank; /* out of its block */
  MPI_CHECK(MPI_Allreduce(sizes, maxima, 4, MPI_INT, MPI_MAX, comm));
  t->min_local = -maxima[0];
  t->max_local = maxima[1];
  t->any_oversubscribed = maxima[2];
  t->blocks = maxima[3] == 0 && t->min_local == t->max_local;
  return RONDO_SUCCESS;
}

/* cross[g]: the owners of slice g, one per node, ordered by node. On one
 * node (node_count, the same on every rank) each is its owner alone: a
 * duplicate of MPI_COMM_SELF, without a collective over comm. */
static rondo_status_t make_cross(MPI_Comm comm, topo_t *t)
{
  t->slices = t->max_local;
  t->cross = malloc((size_t)t->slices * sizeof *t->cross);
  for (int g = 0; t->cross != NULL && g < t->slices; g++)
    t->cross[g] = MPI_COMM_NULL;
  /* Without the array this rank still joins every split, as no member, so
   * that the others finish theirs; comm_build then agrees on the failure. */
  for (int g = 0; g < t->slices; g++) {
    int mine = t->cross != NULL && topo_owner(g, t->local_size) == t->local_rank;
    MPI_Comm none = MPI_COMM_NULL;
    if (t->node_count == 1) {
      if (mine)
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_SELF, &t->cross[g]));
      continue;
    }
    MPI_CHECK(MPI_Comm_split(comm, mine ? 0 : MPI_UNDEFINED, t->node_id,
                             t->cross != NULL ? &t->cross[g] : &none));
  }
  if (t->cross == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "topology: %d cross communicators", t->slices);
  return RONDO_SUCCESS;
}

rondo_status_t topo_create(MPI_Comm comm, int rank, int node_size, topo_t *t)
{
  rondo_status_t st;
  MPI_Comm real = MPI_COMM_NULL;
  memset(t, 0, sizeof *t);
  t->node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                                &real));
  int real_rank;
  MPI_CHECK_GOTO(MPI_Comm_rank(real, &real_rank), st, fail);
  MPI_CHECK_GOTO(MPI_Comm_size(real, &t->real_local_size), st, fail);
  RONDO_CHECK_GOTO(probe_hw(real, t), st, fail);
  int on_machine;
  RONDO_CHECK_GOTO(machine_ranks(comm, rank, t->real_local_size, &on_machine), st, fail);
  if (on_machine > t->real_local_size)
    t->real_local_size = on_machine; /* several MPI nodes on one machine */
  t->oversubscribed = t->avail_cores > 0 && t->real_local_size > t->avail_cores;
  t->yield = t->oversubscribed;
#ifdef RONDO_SMPI
  t->yield = 0; /* simulated ranks share one thread: every wait gives way (topo_backoff) */
#endif

  int k = node_size;
  if (k > 0) {
    MPI_CHECK_GOTO(MPI_Comm_split(real, real_rank / k, real_rank, &t->node), st, fail);
  } else {
    t->node = real; /* the node comm itself (its own communicator already) */
    real = MPI_COMM_NULL;
  }
  MPI_CHECK_GOTO(MPI_Comm_rank(t->node, &t->local_rank), st, fail);
  MPI_CHECK_GOTO(MPI_Comm_size(t->node, &t->local_size), st, fail);
  RONDO_CHECK_GOTO(number_nodes(comm, rank, t), st, fail);
  RONDO_CHECK_GOTO(make_cross(comm, t), st, fail);
  if (real != MPI_COMM_NULL)
    MPI_CHECK_LOG(MPI_Comm_free(&real));
  return RONDO_SUCCESS;

fail:
  if (real != MPI_COMM_NULL)
    MPI_CHECK_LOG(MPI_Comm_free(&real));
  topo_destroy(t);
  return st;
}

void topo_destroy(topo_t *t)
{
  for (int g = 0; t->cross != NULL && g < t->slices; g++)
    if (t->cross[g] != MPI_COMM_NULL)
      MPI_CHECK_LOG(MPI_Comm_free(&t->cross[g]));
  free(t->cross);
  t->cross = NULL;
  if (t->node != MPI_COMM_NULL)
    MPI_CHECK_LOG(MPI_Comm_free(&t->node));
}

/* ---- waiting -------------------------------------------------------------------- */

#ifdef RONDO_SMPI
/* Simulated ranks are actors on one thread: a pause or a sched_yield never
 * lets the writer of the awaited flag run. A simulated sleep does, and
 * moves the simulated clock (smpicc makes nanosleep SimGrid's). */
void topo_backoff(const topo_t *t, unsigned polls)
{
  (void)t;
  topo_yield(polls);
}

void topo_yield(unsigned polls)
{
  (void)polls;
  struct timespec tick = {0, 100};
  nanosleep(&tick, NULL);
}

void topo_pause(void) { topo_yield(0); }
#else
/* A long wait (a peer is descheduled or still far behind): sleep. */
static void nap(void)
{
  struct timespec ts = {0, 50000};
  nanosleep(&ts, NULL);
}

void topo_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void topo_backoff(const topo_t *t, unsigned polls)
{
  if (t->yield) {
    topo_yield(polls);
    return;
  }
  if (polls < 4096) {
    topo_pause();
  } else if (polls < 65536) {
    sched_yield();
  } else {
    nap();
  }
}

/* An oversubscribed node: sched_yield hands the core to a runnable peer
 * only when one waits on this core's queue, and every spinning rank keeps
 * its own queue busy; a sleep frees the core for whoever needs it. After
 * 256 polls (a few hundred us) the wait sleeps: the tests at 4-5 ranks
 * on 2 cores ran 5-22% faster than with 65536 polls first (CHANGELOG). */
void topo_yield(unsigned polls)
{
  if (polls < 256)
    sched_yield();
  else
    nap();
}
#endif
