/*
 * The network between nodes as the cost model needs it: the time of one
 * message step and the seconds per byte through one node's link, measured
 * when a multi-node comm is made (or set by knobs), the same on every rank.
 * Also the point-to-point level inside a node of that comm, which on some
 * machines (TCP only, as on the multi-host test bed) is far from the
 * one-node defaults. Internal (prefix net_).
 */
#ifndef RONDO_NET_H
#define RONDO_NET_H

#include "base/base.h"

typedef enum {
  NET_DEFAULT = 0, /* not measured: the model's guess */
  NET_MEASURED,    /* measured when the comm was made */
  NET_KNOB         /* RONDO_NET_LATENCY_US / RONDO_NET_GBITS */
} net_source_t;

#define NET_DISTS 16 /* node distances 1 .. 2^15 */
#define NET_EAGER_BYTES 8192 /* taken as the library's eager limit (MPICH's
                                over UCX; the measured rndv_alpha says what
                                crossing it costs) */

typedef struct {
  double alpha;          /* seconds per message step between nodes */
  double rndv_alpha;     /* the same for a message above NET_EAGER_BYTES:
                            the ring's 16 KiB step less its bytes' time, at
                            least alpha (MPI's rendezvous protocol, where
                            it costs more: 3-4 us on two virtual nodes of
                            MPICH ch4:ucx, nothing in SimGrid) */
  double beta;           /* seconds per byte through one node's link (each way) */
  net_source_t alpha_src, beta_src;
  double intra_alpha;    /* point-to-point inside a node: seconds per step, */
  double intra_beta;     /* seconds per byte; 0 when not measured (one rank
                            per node, or no measurement): the defaults hold */
  double seconds;        /* what the measurement cost (0: none) */
  /* The butterfly's steps: node leaders 2^k apart (XOR) swapping at once,
   * as recursive doubling's and Rabenseifner's steps do. On a tree of
   * switches near pairs are faster than the ring's slowest link, and on a
   * dragonfly far pairs share few links; one alpha and beta miss both.
   * dists = lg of the largest power of two <= the node count when
   * measured, else 0 (the model uses alpha and beta). */
  int dists;
  double dist_alpha[NET_DISTS]; /* seconds per step at node distance 2^k */
  double dist_beta[NET_DISTS];  /* seconds per byte through one node's link */
  double lone_beta;     /* the farthest pair swapping alone; 0: not measured */
} net_t;

/* The guesses used when nothing is measured or set. */
#define NET_DEFAULT_ALPHA 5e-6
#define NET_DEFAULT_BETA 0.1e-9

struct topo;

/* Collective over comm (the communicator topo was made from): fills *out. With one node: the defaults, nothing exchanged. Otherwise the
 * knobs win (latency_us, gbits > 0), and what they leave open is measured
 * unless calibrate is 0: some steps between local ranks 0 and 1 of node 0,
 * then a few 8-byte steps and one growing transfer among the node leaders
 * (one rank per node, in a ring), then the same at each butterfly distance
 * (the transfer at the size the ring's growth reached). The growth stops
 * after 20 ms of transfers; the leaders agree on the slowest values and
 * each node's leader hands them to its ranks, so every rank holds the same
 * bytes. */
rondo_status_t net_measure(MPI_Comm comm, const struct topo *topo, double latency_us,
                           double gbits, int calibrate, net_t *out);

/* "latency 41.2 us, 0.93 Gbit/s per node link (measured in 3.1 ms)" and
 * the like, for rondo-info and rondo_explain. */
void net_describe(const net_t *net, int nodes, char *buf, size_t len);

#endif /* RONDO_NET_H */
