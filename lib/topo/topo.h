/*
 * A comm's topology: which ranks form a node (real, from
 * MPI_Comm_split_type, or virtual with RONDO_NODE_SIZE), the communicators
 * the hierarchical algorithms need, and what hwloc says about the cores the
 * node's ranks may use. Internal (prefix topo_).
 *
 * Virtual nodes: RONDO_NODE_SIZE=k cuts each real node into runs of k
 * consecutive local ranks (the last run may be shorter), so on one host
 * 4 ranks with k=2 form nodes {0,1} and {2,3}, and k=3 forms {0,1,2} and
 * {3}. Everything downstream (algorithms, selector, queries) sees only these
 * nodes, exactly as it would see real ones.
 *
 * Unequal nodes: slices of a buffer are cut by the largest node size G; on a
 * node of L ranks, local rank r owns slices r, r+L, r+2L, ... < G. The ranks
 * that own slice g on every node form cross[g]; a rank may own several
 * slices and then belongs to several cross communicators.
 */
#ifndef RONDO_TOPO_H
#define RONDO_TOPO_H

#include "base/base.h"
#include "topo/net.h"

typedef struct topo {
  MPI_Comm node;      /* the ranks of this (possibly virtual) node */
  int node_id;        /* 0..node_count-1, ordered by the node's lowest rank */
  int node_count;
  int local_rank, local_size;
  int min_local, max_local; /* smallest and largest node size */
  int blocks;         /* every node holds max_local ranks, node n the comm's
                         ranks n L .. n L + L - 1 (L = max_local): equal
                         on every rank */
  int slices;         /* G = max_local */
  MPI_Comm *cross;    /* [slices]: cross[g] if this rank owns slice g, else MPI_COMM_NULL */
  /* hwloc, for the real node this rank is on */
  int real_local_size; /* ranks of this comm on the real node, or on this
                          machine when several nodes share it (network
                          namespaces, containers: same host name) */
  int cores;           /* cores of the machine */
  int avail_cores;     /* cores in the union of the real node's ranks' cpusets */
  int oversubscribed;  /* real_local_size > avail_cores */
  int any_oversubscribed; /* on some node of the comm (equal on every rank) */
  int yield;           /* waits yield at once: oversubscribed, or the comm's
                          owner asked for it (the engine's comm, which shares
                          cores with the application's threads) */
  char hw_summary[160];
  net_t net;           /* the network between the nodes (net.h) */
} topo_t;

/* Collective over comm (rank: this rank in it): fills the topology.
 * node_size: RONDO_NODE_SIZE (0: real nodes). */
rondo_status_t topo_create(MPI_Comm comm, int rank, int node_size, topo_t *topo);
/* Frees the communicators (not collective beyond MPI_Comm_free). */
void topo_destroy(topo_t *topo);

/* Releases the process-wide hwloc topology (rondo_finalize). */
void topo_shutdown(void);

/* Slice g of G over count elements: [start, start + len). */
void topo_slice(size_t count, int slices, int g, size_t *start, size_t *len);
/* The local rank that owns slice g on a node of local_size ranks. */
static inline int topo_owner(int g, int local_size) { return g % local_size; }

/* Waiting on another rank's flag: spins briefly, then yields the core; when
 * topo->yield is set (an oversubscribed node) it yields at once. Call with the number of
 * unsuccessful polls so far. */
void topo_backoff(const topo_t *topo, unsigned polls);
/* One poll of a spinning wait: the CPU's pause hint, no system call. */
void topo_pause(void);
/* The waits of an oversubscribed node (topo_backoff's when topo->yield):
 * sched_yield, and after 256 polls 50 us sleeps. */
void topo_yield(unsigned polls);

#endif /* RONDO_TOPO_H */
