/*
 * The reduce-scatter family's table: one row per member, pointing at the
 * descriptor in the member's own file. The selector (as a menu), the
 * tuning parser, RONDO_REDUCE_SCATTER_ALGO and rondo-info read it
 * (family.c). Adding a member: its file with a descriptor, its id in
 * rondo.h if the idea is new, one row here. The order is the selector's
 * preference on a tie (on one rank every member is a copy, and mpi wins).
 */
#include "algo/common/blocks.h"

extern const algo_desc_t algo_rs_mpi, algo_rs_ring, algo_rs_pairwise, algo_rs_halving,
    algo_rs_shm, algo_rs_hier,
    algo_rs_nccl, algo_rs_staged;

static const select_algo_t *const rows[] = {
    &algo_rs_mpi.select,     &algo_rs_ring.select, &algo_rs_pairwise.select,
    &algo_rs_halving.select, &algo_rs_shm.select, &algo_rs_hier.select,
    &algo_rs_nccl.select,    &algo_rs_staged.select,
};

/* Chained after all-reduce's menu and before all-gather's, for the tuning
 * parser (select.h). */
extern const select_menu_t algo_ag_menu_chained;
const select_menu_t algo_rs_menu_chained = {sizeof rows / sizeof rows[0], rows,
                                            RONDO_COLL_REDUCE_SCATTER, &algo_ag_menu_chained};

const select_menu_t *algo_rs_menu(void) { return &algo_rs_menu_chained; }
