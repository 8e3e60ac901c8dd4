/*
 * rondo-bench: the microbenchmark tool (docs/bench.md). Not part of the
 * library: it uses only the public API (rondo.h) and MPI. The files are
 *   main.c      subcommand dispatch, exit status
 *   options.c   the command line, shared by every subcommand
 *   output.c    the header, the text table, --json, --csv, progress lines,
 *               bench_die
 *   data.c      input patterns and the expected results (the check)
 *   sweep.c     allreduce, allgather, broadcast, reduce_scatter, alltoall,
 *               and auto's quality (sweep.h: its state)
 *   rows.c      which rows a sweep runs (a family's algorithms and baselines)
 *   fusion.c    a model's gradient set through the asynchronous engine
 *   models.c    the shipped gradient sets (also used by bench/engine_bench)
 *   tune.c      the tuning-table writer (`rondo-bench tune`)
 *   explain.c   what the selector picks per size, and why
 *   device.c    --memory device: CUDA buffers and the raw-NCCL and
 *               host-plus-copies baselines
 */
#ifndef RONDO_BENCH_H
#define RONDO_BENCH_H

#include <stddef.h>
#include <stdio.h>

#include "rondo.h"

typedef enum {
  CMD_ALLREDUCE = 0,
  CMD_ALLGATHER,
  CMD_BROADCAST,
  CMD_REDUCE_SCATTER,
  CMD_ALLTOALL,
  CMD_FUSION,
  CMD_TUNE,
  CMD_EXPLAIN,
  CMD_COUNT
} bench_cmd_t;

const char *bench_cmd_name(bench_cmd_t cmd);
/* The collectives with a family of algorithms and a selector (allreduce,
 * reduce_scatter, allgather): 1 and *coll; 0 for the other subcommands. */
int bench_coll(bench_cmd_t cmd, rondo_coll_t *coll);
/* MPI's own call that a sweep compares with ("MPI_Allreduce"); NULL for
 * fusion, tune and explain. */
const char *bench_mpi_name(bench_cmd_t cmd);
/* reduce_scatter's and allgather's row of the memory floor (-a's name). */
#define BENCH_FLOOR_ROW "memory_floor"

enum { BENCH_MAX_SIZES = 256 };

typedef struct {
  bench_cmd_t cmd;
  size_t minbytes, maxbytes, stepbytes; /* stepbytes > 0: add instead of multiply */
  size_t factor;
  int iters, warmup, check, inplace, root, full, quiet, verbose;
  int device;             /* allreduce --memory device: buffers in GPU memory */
  int shared;             /* --memory shared: buffers from rondo_mem_alloc */
  int ndtypes, nops;
  rondo_dtype_t dtypes[RONDO_DTYPE_COUNT];
  rondo_op_t ops[RONDO_OP_COUNT];
  const char *algo_list;  /* allreduce, reduce_scatter, allgather, tune: names or
                             "all"; NULL = default */
  unsigned colls;         /* tune, explain: bit 1 << c for each rondo_coll_t c */
  const char *json_path, *csv_path;
  /* fusion */
  const char *model;      /* resnet50, bert-base, vgg16, all */
  size_t tensors, tensor_bytes; /* --tensors N --size S instead of a model */
  int sharded;            /* --sharded: all-gather + reduce-scatter per tensor */
  /* tune */
  const char *output;
  int rounds, max_rounds;
  double margin;          /* fraction */
  int ignored_table;      /* tune: RONDO_TUNING_FILE / RONDO_*_ALGO were set and
                             are ignored (main.c) */
  /* tests only */
  const char *break_algo; /* corrupt this row's results before the check */
  int argc;
  char **argv;
} bench_opts_t;

/* Parses argv (every rank; main.c agrees on the outcome). Returns 0, 2 after
 * printing a message on stderr (bad usage), or 3 after printing the help on
 * stdout. print: this process prints (main.c parses quietly first, then
 * again with print on the one rank that reports). */
int bench_parse(int argc, char **argv, bench_opts_t *o, int print);
/* The message sizes of the sweep, into sizes[BENCH_MAX_SIZES]; the count. */
int bench_sizes(const bench_opts_t *o, size_t *sizes);

/* ---- output.c: rank 0 writes; every function is a no-op elsewhere ---------- */

/* Prints "rondo-bench: " + message on stderr and aborts the job (any rank). */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The header (stdout) and the files of --json / --csv. Returns 0, or -1 when
 * a file cannot be opened (message printed). Collective. */
int out_start(const bench_opts_t *o, rondo_comm_t comm, const char *title);
/* One record of --json ("rows") and --csv: fields (key and value are
 * copied), then out_row_end(). */
void out_str(const char *key, const char *value);
void out_num(const char *key, double value); /* NaN: null */
void out_int(const char *key, long long value);
void out_row_end(void);
/* The summary object of --json: out_str/out_num/out_int, then out_finish(). */
void out_summary_begin(void);
/* Closes the files; returns 0, or -1 if writing failed (message printed). */
int out_finish(void);
/* Progress on stderr after step `done` of `total` (what: "1 MiB"). */
void out_progress(const bench_opts_t *o, int done, int total, const char *what);
/* "1 KiB", "32 MiB", "12 B" */
const char *out_bytes(size_t bytes, char *buf, size_t len);

/* ---- data.c ---------------------------------------------------------------- */

/* Element i of rank `rank`'s input of a reduction with op, as a small
 * integer; the sum, product, minimum and maximum over any set of ranks are
 * exact in every dtype (docs/bench.md has the bounds). */
long long data_reduce_input(int rank, size_t i, rondo_op_t op, int nranks);
/* Element i of a block sent by rank src to rank dst (allgather, alltoall,
 * broadcast): 0..99. */
long long data_move_input(int src, int dst, size_t i);
/* Stores v in element i of buf. */
void data_store(void *buf, rondo_dtype_t dtype, size_t i, long long v);
/* Stores into element j of out the expected result of the reduction with
 * op over ranks 0..n-1 of input element i, exactly as rondo documents the
 * result (docs/api.md, "Reduction semantics"). */
void data_expect_reduce(void *out, size_t j, rondo_dtype_t dtype, rondo_op_t op, size_t i,
                        int n);
/* The MPI datatype for dtype (MPI_DATATYPE_NULL: none for reductions), and
 * the MPI op (MPI_OP_NULL: none, i.e. AVG). */
MPI_Datatype data_mpi_type(rondo_dtype_t dtype, int for_reduction);
MPI_Op data_mpi_op(rondo_op_t op);

/* ---- device.c: --memory device (fatal errors end the job) -------------------- */

/* Selects device local_rank % devices and makes the copy stream; -1 with
 * why when there is no device (or no CUDA in this build). */
int bdev_start(int local_rank, char *why, size_t len);
void bdev_stop(void);
void *bdev_alloc(size_t bytes);
void *bdev_alloc_pinned(size_t bytes);
void bdev_free(void *p);
void bdev_free_pinned(void *p);
/* A copy any way between host and device memory, waited for. */
void bdev_copy(void *dst, const void *src, size_t bytes);
/* Raw NCCL over comm (collective): 0, or -1 with why on every rank (no
 * NCCL, ranks sharing a GPU, a failed init). */
int bdev_nccl_start(MPI_Comm comm, char *why, size_t len);
void bdev_nccl_allreduce(const void *s, void *r, size_t count, rondo_dtype_t dtype,
                         rondo_op_t op);
/* ncclReduceScatter (recvcount elements a rank) and ncclAllGather (bytes a
 * rank) on the same communicator, waited for. */
void bdev_nccl_reduce_scatter(const void *s, void *r, size_t recvcount, rondo_dtype_t dtype,
                              rondo_op_t op);
void bdev_nccl_allgather(const void *s, void *r, size_t bytes);
void bdev_nccl_stop(void);

/* ---- the subcommands: 0 success, 1 wrong results or a failure -------------- */

int sweep_main(const bench_opts_t *o);
int fusion_main(const bench_opts_t *o);
int tune_main(const bench_opts_t *o);
int explain_main(const bench_opts_t *o);

#endif
