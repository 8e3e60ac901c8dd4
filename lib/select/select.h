/*
 * The all-reduce selector, generic: it knows no algorithm by name. The
 * caller (lib/algo's table) passes the candidates as a menu; each brings
 * its rules (can it run this call, should it be chosen) and its cost-model
 * terms, and the selector applies RONDO_ALLREDUCE_ALGO, then the tuning
 * table, then the lowest predicted time. Pure functions of their inputs,
 * so the same inputs give the same choice on every rank and unit tests can
 * drive them with synthetic layouts. Internal (prefix select_). cost.c has
 * the model's levels, their fitted defaults and the choice; tuning.c the
 * tuning tables; each algorithm's formula is in its own file (lib/algo).
 */
#ifndef RONDO_SELECT_H
#define RONDO_SELECT_H

#include <stddef.h>
#include <stdio.h>

#include "rondo.h"

typedef enum { SELECT_MEM_HOST = 0, SELECT_MEM_DEVICE = 1 } select_mem_t;

/* What a selection is made for; equal on every rank of a comm. ranks, nodes
 * and max_local below 1 count as 1. */
typedef struct {
  size_t count;        /* elements */
  size_t bytes;        /* count x element size */
  rondo_dtype_t dtype;
  rondo_op_t op;
  int ranks;           /* comm size */
  int nodes;           /* nodes (real or RONDO_NODE_SIZE virtual) */
  int min_local;       /* fewest ranks on a node */
  int max_local;       /* most ranks on a node */
  select_mem_t mem;
  /* device memory only: */
  int has_nccl;        /* the device backend has a collective library */
  int gpu_shared;      /* 1: a device serves two or more ranks; 0: none
                          does; -1: not known yet (before the comm's first
                          call on device buffers) */
  int gpu_node_shared; /* the same among the ranks of each node */
  int mpi_check;       /* the argument check is an exchange across nodes
                          (exchange.c) that every algorithm pays
                          first, but for data that rides in it and
                          algorithms that carry it (select_algo_t) */
  int check_exchange;  /* that exchange is rondo's own, whose steps an
                          algorithm can carry, not MPI's all-reduce
                          (algo_check_by_exchange) */
  int check_leaders;   /* in that exchange this call's inline data would
                          cross nodes from each node's first rank alone,
                          once per node (agree_leaders_carry, above
                          agree_home_from(comm) bytes) */
  rondo_coll_t coll;   /* the collective (0: all-reduce); for reduce-scatter
                          and all-gather count and bytes are the whole
                          buffer's, every rank's block */
  size_t block_max;    /* reduce-scatter, all-gather: the largest block's
                          elements */
  int blocks_equal;    /* reduce-scatter, all-gather: every block has
                          block_max elements */
  int node_blocks;     /* every node holds max_local ranks, node n the
                          ranks n L .. n L + L - 1 (topo->blocks) */
} select_input_t;

/* One level of the machine: alpha = seconds per message (or per
 * synchronization), beta = seconds per byte moved, gamma = seconds per byte
 * reduced. A message larger than eager_limit bytes pays rndv_alpha instead
 * of alpha (the eager -> rendezvous protocol switch of the MPI library);
 * eager_limit 0 means no switch, so a level set up with alpha, beta and
 * gamma alone is the plain model. */
typedef struct {
  double alpha, beta, gamma;
  size_t eager_limit;
  double rndv_alpha;
} select_level_t;

#define SELECT_DISTS 16 /* butterfly distances between nodes: 1 .. 2^15 */

typedef struct {
  select_level_t shm;   /* through a shared-memory window, within a node */
  select_level_t intra; /* MPI point-to-point between ranks of one node */
  select_level_t inter; /* MPI point-to-point between nodes: alpha per
                           message step, beta per byte through one node's
                           link (shared by the node's ranks that cross it);
                           measured per comm (lib/topo/net.c) */
  double mpi_alpha;     /* MPI_Allreduce's extra per-call overhead (s) */
  double copy_beta;     /* seconds per byte of a local memcpy: the
                           out-of-place input copy that recursive doubling,
                           Rabenseifner and MPI_Allreduce make first, and the
                           whole cost of any algorithm on one rank */
  size_t ring_chunk;    /* the ring's pipeline chunk (RONDO_RING_CHUNK_BYTES);
                           0 means its default, 256 KiB */
  size_t hier_chunk;    /* the hierarchical pipeline's stripe
                           (RONDO_HIER_CHUNK_BYTES); 0 means 1 MiB */
  int rab_radix;        /* Rabenseifner's doubling's radix (RONDO_RAB_RADIX):
                           2, 4 or 8; 0 means the model's choice */
  size_t check_bytes;   /* the argument check's packet across nodes
                           (lib/algo/agree/agree.c) */
  /* The inter level per butterfly distance, where measured (lib/topo/net.c):
   * a step between nodes 2^k apart takes dist_alpha[k] + dist_beta[k] per
   * byte (x the streams sharing the link); k < dists. dists 0: inter's
   * alpha and beta at every distance. */
  int dists;
  double dist_alpha[SELECT_DISTS];
  double dist_beta[SELECT_DISTS];
  /* Seconds per byte of one pair of nodes sending alone, butterfly
   * distance's farthest pair (lib/topo/net.c); 0: not measured. Where the
   * pairs share links (a backbone, the links between a dragonfly's groups)
   * dist_beta, measured with every pair sending, is larger: a step in which
   * few ranks send is priced by the mean of what they send
   * (select_step_time_uneven). */
  double lone_beta;
  int mpi_node_aware;   /* the MPI library's blocking all-reduce reduces
                           inside each node first where nodes hold several
                           ranks (MPICH, and SimGrid's MPICH selector), so
                           it crosses the network once per node */
} select_params_t;

/* The defaults, fitted to the 2-rank sweep of docs/PERFORMANCE.md (2-core
 * KVM host, MPICH 4.0.2); cost.c says how and how well. */
extern const select_params_t select_default_params;

/* alpha for one message of bytes at level lv (rndv_alpha above the eager
 * limit). */
double select_msg_alpha(const select_level_t *lv, double bytes);
/* The level a ring runs at: intra on one node, inter otherwise (a ring
 * spanning nodes is paced by its slowest link, which one stream crosses). */
const select_level_t *select_p2p_level(const select_params_t *prm, const select_input_t *in);
/* One exchange step of a butterfly (recursive doubling, Rabenseifner): every
 * rank swaps bytes with the rank at XOR distance. Ranks are taken to sit on
 * the nodes in blocks of max_local (what MPI launchers do by default). When
 * no partner is on another node the step runs at the intra level: alpha +
 * beta * bytes. Otherwise the ranks whose partner is away share their
 * node's link: inter alpha + inter beta * bytes * (how many of them), since
 * the inter level's beta is per byte through one node's link; alpha and
 * beta of the nodes' distance (distance / max_local) where measured. */
double select_step_time(const select_params_t *prm, const select_input_t *in, double bytes,
                        int distance);
/* The same for a step in which ranks send different amounts: most, the
 * largest message; mean, what a rank sends on average (less where some
 * send little or nothing, as in Rabenseifner's steps on fewer elements
 * than ranks). Across nodes where the butterfly was measured, the bytes
 * through shared links are the mean at dist_beta, but no message moves
 * faster than one pair alone (lone_beta x most); with lone_beta unknown,
 * most at dist_beta. */
double select_step_time_uneven(const select_params_t *prm, const select_input_t *in,
                               double most, double mean, int distance);
/* The steps of recursive doubling on bytes among in's ranks: at distance 1,
 * 2, .., p'/2, plus 2 folding steps (distance 1) when p is not a power of
 * two; each a select_step_time. */
double select_rd_steps_time(const select_params_t *prm, const select_input_t *in,
                            double bytes);

/* Whether MPI's own all-reduce on in's ranks is node-aware: the library is
 * (params.mpi_node_aware) and nodes hold several ranks. */
int select_mpi_node_aware(const select_params_t *prm, const select_input_t *in);
/* A node-aware all-reduce's steps on bytes: recursive doubling among a
 * node's ranks at the intra level (a reduce), among one rank per node, and
 * again inside the node (the broadcast). */
double select_node_aware_steps_time(const select_params_t *prm, const select_input_t *in,
                                    double bytes);

/* ---- candidates -------------------------------------------------------------- */

/* Ids are rondo_algo_t values below SELECT_MAX_ALGOS (bit sets are unsigned). */
#define SELECT_MAX_ALGOS 32

/* One candidate algorithm as the selector sees it (lib/algo's descriptors
 * carry one each). The input handed to the functions is normalized. */
typedef struct select_algo {
  rondo_algo_t id;
  const char *name;
  select_mem_t mem;   /* the memory its buffers must be in */
  /* Why it cannot run this call at all (a forced call fails with it), or
   * NULL. May be NULL: it runs whenever mem matches. */
  const char *(*cannot_run)(const select_input_t *in);
  /* Why the selector should not choose it although it can run (forcing it
   * still works: hierarchical on one node is shm with extra steps), or
   * NULL. May be NULL. */
  const char *(*not_chosen)(const select_input_t *in);
  /* Predicted seconds for the call (ranks >= 2: the selector prices one
   * rank itself, as a copy). */
  double (*cost)(const select_params_t *prm, const select_input_t *in);
  /* Calls of at most this many bytes travel inside the argument check
   * where it is an exchange across nodes (in->mpi_check): they do not pay
   * for it separately. 0: none. */
  size_t rides_check;
  /* Not 0: its steps carry the check where the exchange is rondo's own
   * (in->check_exchange), so it pays no round for it; a step of at most
   * this many bytes of data goes in the packet's own message, a larger
   * one beside it. 0: they do not. */
  size_t carries_check;
  /* 1: it runs op RONDO_ADASUM and nothing else; 0: every op but that one
   * (Adasum is no elementwise reduction: the other algorithms cannot run
   * it). */
  int adasum;
} select_algo_t;

/* The candidates of one collective, in order of preference on a tie. The
 * families chain (next), so that one tuning table holds the rules of
 * every collective: a rule names its collective (coll's name) first. */
typedef struct select_menu {
  int n;
  const select_algo_t *const *algo;
  rondo_coll_t coll;
  const struct select_menu *next; /* the next collective's menu, or NULL */
} select_menu_t;

typedef struct {
  double seconds;      /* predicted time; meaningless when why_not != NULL */
  const char *why_not; /* NULL if the selector may choose it, else a static reason */
  int can_run;         /* 0: it cannot run this call (why_not says why) */
} select_candidate_t;

typedef struct select_table select_table_t;

typedef struct {
  /* RONDO_ALGO_AUTO when nothing is eligible (and nothing was forced): the
   * caller reports that, reason says "no eligible algorithm". A forced
   * algorithm is the choice even if it cannot run: the caller checks
   * cand[choice].can_run. */
  rondo_algo_t choice;
  /* "forced by RONDO_ALLREDUCE_ALGO" (plus "; not eligible: <why>" if so),
   * "tuning file <path> line N", or "lowest predicted time"; a matching
   * tuning rule that was skipped because its algorithm is not eligible is
   * named in parentheses. */
  char reason[160];
  /* Indexed by id; ids not on the menu: why_not "not built into this
   * library", can_run 0. */
  select_candidate_t cand[SELECT_MAX_ALGOS];
} select_result_t;

/* Eligibility of one algorithm, without its cost (seconds = 0). */
void select_judge(const select_algo_t *algo, const select_input_t *in, select_candidate_t *c);
/* Predicted time and eligibility of every algorithm on the menu. */
void select_predict(const select_params_t *params, const select_menu_t *menu,
                    const select_input_t *in, select_candidate_t cand[SELECT_MAX_ALGOS]);

/* forced != RONDO_ALGO_AUTO wins (even if ineligible: the caller reports
 * that); else the first matching eligible rule of table (may be NULL); else
 * the eligible candidate with the lowest predicted time (ties: the earlier
 * on the menu); else RONDO_ALGO_AUTO (nothing eligible). Fills *out and
 * returns the choice. */
rondo_algo_t select_choose(const select_params_t *params, const select_menu_t *menu,
                           const select_table_t *table, rondo_algo_t forced,
                           const select_input_t *in, select_result_t *out);

/* Human-readable explanation: the input, every candidate with its predicted
 * time or why it is not eligible, the choice and the reason. Writes at most
 * len bytes including the NUL (buf may be NULL when len is 0) and returns
 * the length it wanted (snprintf-style). */
int select_explain(const select_menu_t *menu, const select_result_t *res,
                   const select_input_t *in, char *buf, size_t len);

/* The menu entry of id, or NULL. */
const select_algo_t *select_menu_find(const select_menu_t *menu, rondo_algo_t id);

/* ---- tuning tables -----------------------------------------------------------
 * Text, one rule per line, '#' starts a comment (also after the fields):
 *   <collective> <bytes-range> <ranks-range> <nodes-range> <mem> <algorithm>
 * collective: allreduce, reduce_scatter or allgather (a menu of the chain
 * handed to the parser; bytes are the whole buffer's: every rank's block
 * for the latter two); the algorithm is a name of that collective's menu.
 * ranges: "N", "N-M", "N-" (no upper bound) or "*". Byte ranges are
 * half-open, [N, M), so consecutive rules tile without overlap ("0-8K" is
 * 0..8191 and "8K-64K" starts at 8192); byte values take K/M/G/T suffixes
 * (powers of 1024; "4K", "4KB" and "4KiB" are all 4096). Rank and node
 * ranges are inclusive counts, [N, M] ("2-4" is 2, 3 or 4 ranks). "N" alone
 * means exactly N everywhere. mem is host, device or *; the algorithm is one
 * of the menu's names. The first matching rule whose
 * algorithm is eligible wins. Example:
 *   allreduce 0-8K     2-4 1 host recursive_doubling
 *   allreduce 8K-      *   1 host shm
 */
/* Parses text; source names it in messages. On error returns
 * RONDO_ERR_INVALID_ARG with rondo_last_error() naming source, the line
 * number and what is wrong ("tune.txt line 3: ..."); *out is NULL. Text
 * without rules (empty, only comments) is a valid empty table. On success
 * the caller owns *out (select_table_free). */
rondo_status_t select_table_parse(const char *text, const char *source,
                                  const select_menu_t *menu, select_table_t **out);
/* Reads and parses a file (RONDO_ERR_IO if it cannot be read; the path is
 * the source in messages). */
rondo_status_t select_table_load(const char *path, const select_menu_t *menu,
                                 select_table_t **out);
void select_table_free(select_table_t *table);
/* The algorithm of the first rule matching in (ignoring eligibility), its
 * 1-based line in *line (0 if none; line may be NULL); RONDO_ALGO_AUTO if
 * none or table is NULL. */
rondo_algo_t select_table_lookup(const select_table_t *table, const select_input_t *in,
                                 int *line);
/* The same, considering only rules whose algorithm has its bit
 * (1u << algo) set in allowed: select_choose passes the eligible set. */
rondo_algo_t select_table_lookup_among(const select_table_t *table,
                                       const select_input_t *in, unsigned allowed,
                                       int *line);
/* The name of the algorithm of the rule on line (NULL if none). */
const char *select_table_rule_algo(const select_table_t *table, int line);
/* The source given to select_table_parse (the path for a loaded file). */
const char *select_table_source(const select_table_t *table);
/* Number of rules (0 for NULL). */
size_t select_table_rules(const select_table_t *table);
/* A hash of the rules in order (ranges, memory, algorithm), not of their
 * text: comments, spacing and spellings of one size hash alike. NULL and
 * an empty table hash alike. */
uint64_t select_table_hash(const select_table_t *table);

#endif /* RONDO_SELECT_H */
