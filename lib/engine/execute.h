/*
 * Running what a cycle made ready, in an order that is the same on every
 * rank, through a table of runners by kind of collective: all-reduces
 * (fusion.c), allgathers and reduce-scatters (collectives.c) are fused,
 * broadcasts and all-to-alls run one by one (collectives.c).
 */
#ifndef RONDO_ENGINE_EXECUTE_H
#define RONDO_ENGINE_EXECUTE_H

#include "base/base.h"
#include "engine/fusion.h"
#include "engine/responses.h"


/* Makes what the cycle's execution needs on this rank: room for its items,
 * this rank's request for each response, and a stand-in (with its scratch
 * memory) for each name a joined rank lacks. After a slow path the ranks
 * agree on it: if any rank lacks memory, every rank fails the cycle's
 * ready requests instead of running them (collective over e->mpi then). */
rondo_status_t eng_execute_prepare(eng_run_t *e, const eng_cycle_t *cycle);
/* Runs the ready responses of one cycle (prepared) and completes their
 * requests (device batches: once their GPU work is done, eng_poll_device). */
void eng_execute(eng_run_t *e, const eng_cycle_t *cycle);

#endif /* RONDO_ENGINE_EXECUTE_H */
