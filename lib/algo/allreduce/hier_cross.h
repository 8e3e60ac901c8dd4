/*
 * The cross-node phase of the hierarchical all-reduces (hier_cross.c).
 */
#ifndef RONDO_ALGO_HIER_CROSS_H
#define RONDO_ALGO_HIER_CROSS_H

#include "algo/algo.h"

/* The model's parameters for the cross phase: every local rank crosses at
 * once, so the node's link is shared by max_local streams. */
select_params_t algo_hier_cross_params(const select_params_t *prm, int max_local);
/* The cross phase's input: bytes of one slice, over one rank per node. */
select_input_t algo_hier_cross_input(const select_input_t *in, double bytes);
/* n elements of buf (host memory), a slice of a whole-element all-reduce on
 * comm, all-reduced over cross (one rank per node) by ring or recursive
 * doubling, as the cost model says. op is SUM, MIN, MAX or PROD. */
rondo_status_t algo_hier_cross(rondo_comm_t comm, rondo_comm_t cross, void *buf, size_t n,
                               size_t whole, rondo_dtype_t dtype, rondo_op_t op);

#endif /* RONDO_ALGO_HIER_CROSS_H */
