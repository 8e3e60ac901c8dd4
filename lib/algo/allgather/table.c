/*
 * The all-gather family's table: one row per member, pointing at the
 * descriptor in the member's own file. The selector (as a menu), the
 * tuning parser, RONDO_ALLGATHER_ALGO and rondo-info read it (family.c).
 * Adding a member: its file with a descriptor, its id in rondo.h if the
 * idea is new, one row here. The order is the selector's preference on a
 * tie (on one rank every member is a copy, and mpi wins).
 */
#include "algo/common/blocks.h"

extern const algo_desc_t algo_ag_mpi, algo_ag_ring, algo_ag_rd, algo_ag_bruck, algo_ag_shm, algo_ag_hier,
    algo_ag_nccl, algo_ag_staged;

static const select_algo_t *const rows[] = {
    &algo_ag_mpi.select, &algo_ag_ring.select, &algo_ag_rd.select,
    &algo_ag_bruck.select, &algo_ag_shm.select, &algo_ag_hier.select,
    &algo_ag_nccl.select, &algo_ag_staged.select,
};

/* Last in the chain of menus the tuning parser reads (select.h). */
extern const select_menu_t algo_ag_menu_chained;
const select_menu_t algo_ag_menu_chained = {sizeof rows / sizeof rows[0], rows,
                                            RONDO_COLL_ALLGATHER, NULL};

const select_menu_t *algo_ag_menu(void) { return &algo_ag_menu_chained; }
