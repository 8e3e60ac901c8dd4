/* rondo-bench's command line: one parser for every subcommand. */
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/bench/bench.h"
#include "base/numbers.h"
#include "tools/launch_env.h"
#include "tools/names.h"

static const char *const cmd_names[CMD_COUNT] = {
  "allreduce", "allgather", "broadcast", "reduce_scatter", "alltoall", "fusion", "tune",
  "explain"};

const char *bench_cmd_name(bench_cmd_t cmd) { return cmd_names[cmd]; }

int bench_coll(bench_cmd_t cmd, rondo_coll_t *coll)
{
  switch (cmd) {
  case CMD_ALLREDUCE: *coll = RONDO_COLL_ALLREDUCE; return 1;
  case CMD_REDUCE_SCATTER: *coll = RONDO_COLL_REDUCE_SCATTER; return 1;
  case CMD_ALLGATHER: *coll = RONDO_COLL_ALLGATHER; return 1;
  default: return 0;
  }
}

const char *bench_mpi_name(bench_cmd_t cmd)
{
  static const char *const n[] = {"MPI_Allreduce", "MPI_Allgather", "MPI_Bcast",
                                  "MPI_Reduce_scatter_block", "MPI_Alltoall"};
  return cmd <= CMD_ALLTOALL ? n[cmd] : NULL;
}

static void usage(FILE *f)
{
  fprintf(f,
    "usage: mpiexec -n N rondo-bench [SUBCOMMAND] [OPTIONS]\n"
    "\n"
    "subcommands:\n"
    "  allreduce       every all-reduce algorithm side by side with MPI_Allreduce (default)\n"
    "  reduce_scatter, allgather\n"
    "                  every algorithm of the family side by side with\n"
    "                  MPI_Reduce_scatter_block / MPI_Allgather\n"
    "  broadcast, alltoall\n"
    "                  rondo's collective against its MPI counterpart\n"
    "  fusion          a model's gradients through the fusion engine, against one\n"
    "                  all-reduce of the same bytes and a loop of MPI_Allreduce\n"
    "                  (--sharded: all-gathers and reduce-scatters)\n"
    "  tune            measure the algorithms, write a tuning table (RONDO_TUNING_FILE)\n"
    "  explain         what the selector picks at each size, and why\n"
    "\n"
    "sizes and repetitions:\n"
    "  -b, --minbytes SIZE     smallest message, K/M/G suffixes (default 8; tune, explain: 4)\n"
    "  -e, --maxbytes SIZE     largest message (default 32M; tune, explain: 64M)\n"
    "  -f, --stepfactor F      multiply the size by F each step (default 2)\n"
    "  -i, --stepbytes SIZE    add SIZE each step instead\n"
    "  -n, --iters N           timed iterations per row (default 20; fusion: 10)\n"
    "      --rounds R          allreduce, reduce_scatter, allgather: the timed iterations\n"
    "                          in R rounds, each running the rows in another order\n"
    "                          (default 5; at most -n)\n"
    "  -w, --warmup_iters N    untimed iterations first (default 5; fusion: 2)\n"
    "data:\n"
    "  -d, --datatype T        int8 uint8 int32 int64 float16 bfloat16 float32 float64,\n"
    "                          a comma list, or all (default float32)\n"
    "  -o, --op OP             sum avg min max prod, a comma list, or all (default sum)\n"
    "  -c, --check 0|1         check every element of every row (default 1)\n"
    "      --inplace           in place (sendbuf == recvbuf); default out of place\n"
    "      --memory host|shared|device  buffers in host memory (default); in memory\n"
    "                          from rondo_mem_alloc (shared: every rank of the node\n"
    "                          can read it, and the one-node reduce-scatter and\n"
    "                          all-gather read the peers' inputs in place); or, for\n"
    "                          allreduce, reduce_scatter and allgather, in CUDA device\n"
    "                          memory (rows auto nccl\n"
    "                          staged, allreduce also hierarchical_nccl, and the baselines\n"
    "                          ncclAllReduce / ncclReduceScatter / ncclAllGather and\n"
    "                          host+copies; exit 77 without a GPU)\n"
    "  -r, --root R            broadcast root (default 0)\n"
    "  -a, --algo LIST         allreduce, reduce_scatter, allgather, tune: algorithms,\n"
    "                          comma-separated, or all (default): auto, the family's\n"
    "                          algorithms (allreduce: mpi ring recursive_doubling\n"
    "                          rabenseifner shm hierarchical; reduce_scatter: mpi ring\n"
    "                          pairwise recursive_halving shm hierarchical; allgather: mpi\n"
    "                          ring recursive_doubling bruck shm hierarchical) and the\n"
    "                          baseline (MPI_Allreduce, MPI_Reduce_scatter_block,\n"
    "                          MPI_Allgather); reduce_scatter and allgather also\n"
    "                          memory_floor: one memcpy per rank of the bytes the\n"
    "                          collective must read and write; with --memory\n"
    "                          device: auto nccl staged hierarchical_nccl, NCCL's call\n"
    "                          (ncclAllReduce, ncclReduceScatter, ncclAllGather),\n"
    "                          host+copies\n"
    "output:\n"
    "      --json FILE         every row and the header as JSON (bench/plot.py draws it)\n"
    "      --csv FILE          every row as CSV\n"
    "  -F, --full              also the fastest and slowest rank's time\n"
    "  -q, --quiet             no progress lines on stderr\n"
    "  -v, --verbose           explain: the whole explanation per size\n"
    "  -h, --help              this text\n"
    "fusion:\n"
    "      --model NAME        resnet50, bert-base, vgg16 or all (default all)\n"
    "      --tensors N --size SIZE   N tensors of SIZE bytes instead of a model\n"
    "      --sharded           per tensor one all-gather of the parameters and one\n"
    "                          reduce-scatter of the gradients (FSDP, ZeRO-3)\n"
    "tune, explain:\n"
    "      --collective LIST   allreduce, reduce_scatter, allgather, a comma list, or all\n"
    "                          (default: tune all, explain allreduce)\n"
    "tune:\n"
    "      --output FILE       write the table to FILE (default: print only)\n"
    "      --rounds R          rounds per size (default 7)\n"
    "      --max-rounds R      rounds at most, for close calls (default 21)\n"
    "      --margin PCT        keep the cost model's choice unless another algorithm\n"
    "                          is more than PCT%% faster (default 5)\n"
    "\n"
    "Exit status: 0 success, 1 wrong results or a failed call, 2 bad usage.\n"
    "docs/bench.md explains every column.\n");
}

static int bad(int print, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(int print, const char *fmt, ...)
{
  if (print) {
    va_list ap;
    va_start(ap, fmt);
    tool_vsay("rondo-bench: ", "\n(rondo-bench --help lists the options)\n", fmt, ap);
    va_end(ap);
  }
  return 2;
}

/* A whole number in [lo, hi], or -1. */
static long parse_int(const char *s, long lo, long hi)
{
  char *end;
  long v = strtol(s, &end, 10);
  return end != s && *end == '\0' && v >= lo && v <= hi ? v : -1;
}

/* nccl-tests' and numpy's names as well as rondo's. */
static int parse_dtype(const char *s, rondo_dtype_t *d)
{
  static const struct { const char *alias, *name; } alias[] = {
    {"float", "float32"}, {"half", "float16"}, {"double", "float64"},
    {"bf16", "bfloat16"}, {"fp16", "float16"}, {"fp32", "float32"}, {"fp64", "float64"},
    {"int", "int32"}, {"char", "int8"}};
  for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
    if (strcasecmp(s, alias[i].alias) == 0)
      s = alias[i].name;
  return rondo_dtype_from_name(s, d) == RONDO_SUCCESS;
}

/* "all" or a comma list of names, into out[]; the count, or -1 naming the
 * bad token in *badtok. */
static int parse_list(const char *arg, int kind, void *out, int max, char *badtok, size_t len)
{
  char buf[256];
  int n = 0;
  if (tool_empty_name(arg, badtok, len))
    return -1;
  if (strcmp(arg, "all") == 0) {
    if (kind == 1)
      max = RONDO_ADASUM; /* the elementwise ops */
    for (int i = 0; i < max; i++) {
      if (kind == 0)
        ((rondo_dtype_t *)out)[i] = (rondo_dtype_t)i;
      else
        ((rondo_op_t *)out)[i] = (rondo_op_t)i;
    }
    return max;
  }
  snprintf(buf, sizeof buf, "%s", arg);
  for (char *save, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    if (n == max) {
      snprintf(badtok, len, "more than %d names", max);
      return -1;
    }
    int ok;
    if (kind == 0)
      ok = parse_dtype(tok, &((rondo_dtype_t *)out)[n]);
    else
      ok = rondo_op_from_name(tok, &((rondo_op_t *)out)[n]) == RONDO_SUCCESS &&
           ((rondo_op_t *)out)[n] != RONDO_ADASUM; /* no MPI_Allreduce to compare with */
    if (!ok) {
      snprintf(badtok, len, "'%s'", tok);
      return -1;
    }
    n++;
  }
  if (n == 0)
    snprintf(badtok, len, "no name");
  return n > 0 ? n : -1;
}

/* Each name of an --algo list is a rondo algorithm, the subcommand's MPI
 * baseline (MPI_Allreduce, ...), a device row (NCCL's call, host+copies), or all. Whether
 * the collective's family has the algorithm is the library's to say, once
 * the comm exists (rows.c). */
static int check_algos(const char *list, bench_cmd_t cmd, char *badtok, size_t len)
{
  const char *mpi = bench_mpi_name(cmd);
  char buf[256];
  if (tool_empty_name(list, badtok, len))
    return -1;
  snprintf(buf, sizeof buf, "%s", list);
  int n = 0;
  for (char *save, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    rondo_algo_t a;
    int device_row = (cmd == CMD_ALLREDUCE && strcmp(tok, "ncclAllReduce") == 0) ||
                     (cmd == CMD_REDUCE_SCATTER && strcmp(tok, "ncclReduceScatter") == 0) ||
                     (cmd == CMD_ALLGATHER && strcmp(tok, "ncclAllGather") == 0) ||
                     ((cmd == CMD_ALLREDUCE || cmd == CMD_REDUCE_SCATTER ||
                       cmd == CMD_ALLGATHER) &&
                      strcmp(tok, "host+copies") == 0);
    int floor_row = (cmd == CMD_REDUCE_SCATTER || cmd == CMD_ALLGATHER) &&
                    strcmp(tok, BENCH_FLOOR_ROW) == 0;
    if (strcmp(tok, "all") != 0 && (mpi == NULL || strcasecmp(tok, mpi) != 0) && !device_row &&
        !floor_row &&
        rondo_algo_from_name(tok, &a) != RONDO_SUCCESS) {
      snprintf(badtok, len, "'%s'", tok);
      return -1;
    }
    n++;
  }
  if (n == 0)
    snprintf(badtok, len, "no name");
  return n > 0 ? 0 : -1;
}

enum {
  OPT_INPLACE = 256, OPT_JSON, OPT_CSV, OPT_MODEL, OPT_TENSORS, OPT_SIZE, OPT_OUTPUT,
  OPT_ROUNDS, OPT_MAX_ROUNDS, OPT_MARGIN, OPT_BREAK, OPT_MEMORY, OPT_COLLECTIVE, OPT_SHARDED
};

static const struct option long_opts[] = {
  {"minbytes", required_argument, NULL, 'b'},
  {"maxbytes", required_argument, NULL, 'e'},
  {"stepfactor", required_argument, NULL, 'f'},
  {"stepbytes", required_argument, NULL, 'i'},
  {"iters", required_argument, NULL, 'n'},
  {"warmup_iters", required_argument, NULL, 'w'},
  {"datatype", required_argument, NULL, 'd'},
  {"op", required_argument, NULL, 'o'},
  {"check", required_argument, NULL, 'c'},
  {"root", required_argument, NULL, 'r'},
  {"algo", required_argument, NULL, 'a'},
  {"full", no_argument, NULL, 'F'},
  {"quiet", no_argument, NULL, 'q'},
  {"verbose", no_argument, NULL, 'v'},
  {"help", no_argument, NULL, 'h'},
  {"inplace", no_argument, NULL, OPT_INPLACE},
  {"memory", required_argument, NULL, OPT_MEMORY},
  {"json", required_argument, NULL, OPT_JSON},
  {"csv", required_argument, NULL, OPT_CSV},
  {"model", required_argument, NULL, OPT_MODEL},
  {"tensors", required_argument, NULL, OPT_TENSORS},
  {"size", required_argument, NULL, OPT_SIZE},
  {"output", required_argument, NULL, OPT_OUTPUT},
  {"rounds", required_argument, NULL, OPT_ROUNDS},
  {"max-rounds", required_argument, NULL, OPT_MAX_ROUNDS},
  {"margin", required_argument, NULL, OPT_MARGIN},
  {"collective", required_argument, NULL, OPT_COLLECTIVE},
  {"sharded", no_argument, NULL, OPT_SHARDED},
  {"break-algo", required_argument, NULL, OPT_BREAK}, /* tests only */
  {NULL, 0, NULL, 0}};

/* What each subcommand accepts besides -b -e -f -i -q -h (1 = yes). */
static int allowed(bench_cmd_t cmd, int opt)
{
  int coll = cmd <= CMD_ALLTOALL, reduces = cmd == CMD_ALLREDUCE || cmd == CMD_REDUCE_SCATTER;
  rondo_coll_t c;
  int family = bench_coll(cmd, &c); /* rows per algorithm */
  switch (opt) {
  case 'n': case 'w': return coll || cmd == CMD_FUSION;
  case 'c': case OPT_JSON: case OPT_CSV: case 'F': case OPT_BREAK: return coll || cmd == CMD_FUSION;
  case 'd': return coll || cmd == CMD_EXPLAIN;
  case 'o': return reduces || cmd == CMD_EXPLAIN;
  case OPT_INPLACE: return cmd == CMD_ALLREDUCE;
  case OPT_MEMORY:
    return cmd == CMD_ALLREDUCE || cmd == CMD_REDUCE_SCATTER || cmd == CMD_ALLGATHER;
  case 'r': return cmd == CMD_BROADCAST;
  case 'a': return family || cmd == CMD_TUNE;
  case 'v': return cmd == CMD_EXPLAIN;
  case OPT_MODEL: case OPT_TENSORS: case OPT_SIZE: case OPT_SHARDED: return cmd == CMD_FUSION;
  case OPT_ROUNDS: return family || cmd == CMD_TUNE;
  case OPT_COLLECTIVE: return cmd == CMD_TUNE || cmd == CMD_EXPLAIN;
  case OPT_OUTPUT: case OPT_MAX_ROUNDS: case OPT_MARGIN: return cmd == CMD_TUNE;
  default: return 1;
  }
}

static const char *opt_text(int c, char *buf, size_t len)
{
  for (const struct option *l = long_opts; l->name != NULL; l++)
    if (l->val == c) {
      if (c < 256)
        snprintf(buf, len, "-%c/--%s", c, l->name);
      else
        snprintf(buf, len, "--%s", l->name);
      return buf;
    }
  snprintf(buf, len, "-%c", c);
  return buf;
}

/* --break-algo names a row the run has (tests only). */
static int breakable(const bench_opts_t *o)
{
  const char *b = o->break_algo;
  rondo_algo_t a;
  rondo_coll_t c;
  if (o->cmd == CMD_FUSION)
    return strcmp(b, "engine") == 0 || strcmp(b, "single") == 0 || strcmp(b, "loop") == 0;
  if (bench_coll(o->cmd, &c))
    return strcmp(b, bench_mpi_name(o->cmd)) == 0 ||
           rondo_algo_from_name(b, &a) == RONDO_SUCCESS;
  return strcmp(b, "rondo") == 0;
}

int bench_parse(int argc, char **argv, bench_opts_t *o, int print)
{
  memset(o, 0, sizeof *o);
  o->argc = argc;
  o->argv = argv;
  o->cmd = CMD_ALLREDUCE;
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') {
    int found = -1;
    for (int c = 0; c < CMD_COUNT; c++)
      if (strcmp(argv[1], cmd_names[c]) == 0)
        found = c;
    if (found < 0)
      return bad(print, "unknown subcommand '%s' (allreduce, allgather, broadcast, "
                 "reduce_scatter, alltoall, fusion, tune, explain)", argv[1]);
    o->cmd = (bench_cmd_t)found;
    first = 2;
  }
  int tune_like = o->cmd == CMD_TUNE || o->cmd == CMD_EXPLAIN;
  o->minbytes = tune_like ? 4 : 8;
  o->maxbytes = tune_like ? (size_t)64 << 20 : (size_t)32 << 20;
  o->factor = 2;
  o->iters = o->cmd == CMD_FUSION ? 10 : 20;
  o->warmup = o->cmd == CMD_FUSION ? 2 : 5;
  o->check = 1;
  o->ndtypes = 1;
  o->dtypes[0] = RONDO_FLOAT32;
  o->nops = 1;
  o->ops[0] = RONDO_SUM;
  o->model = "all";
  o->rounds = o->cmd == CMD_TUNE ? 7 : 5;
  o->max_rounds = 21;
  o->margin = 0.05;
  /* tune: the table covers every family the library selects in; explain
   * answers the all-reduce question unless asked another */
  o->colls = o->cmd == CMD_TUNE ? (1u << RONDO_COLL_COUNT) - 1 : 1u << RONDO_COLL_ALLREDUCE;
  int have_f = 0, have_i = 0, have_size = 0;

  char badtok[64], name[48];
  long v;
  char *end;
  /* The options after the subcommand, as their own vector whose first slot
   * stands for the program: getopt then starts at 1 (SimGrid's getopt
   * keeps its own optind per simulated rank and ignores ours). */
  int nargs = argc - first + 1;
  char **args = argv + first - 1;
  optind = 1;
  opterr = 0;
  int c;
  /* The leading ':' tells a missing value (':') from an unknown option ('?'). */
  while ((c = getopt_long(nargs, args, ":b:e:f:i:n:w:d:o:c:r:a:Fqvh", long_opts, NULL)) != -1) {
    if (c == ':')
      return bad(print, "%s needs a value", args[optind - 1]);
    if (c == '?') {
      if (optopt != 0)
        return bad(print, "unknown option '-%c'", optopt);
      return bad(print, "unknown option '%s'", args[optind - 1]);
    }
    if (!allowed(o->cmd, c))
      return bad(print, "%s does not apply to '%s'", opt_text(c, name, sizeof name),
                 cmd_names[o->cmd]);
    switch (c) {
    case 'b':
    case 'e':
    case 'i':
    case OPT_SIZE: {
      size_t s = 0;
      if (rondo__parse_size(optarg, &s) != 0 || s == 0)
        return bad(print, "%s: '%s' is not a byte count such as 4096, 64K or 1M",
                   opt_text(c, name, sizeof name), optarg);
      if (c == 'b') o->minbytes = s;
      else if (c == 'e') o->maxbytes = s;
      else if (c == 'i') { o->stepbytes = s; have_i = 1; }
      else { o->tensor_bytes = s; have_size = 1; }
      break;
    }
    case 'f':
      if ((v = parse_int(optarg, 2, 1 << 20)) < 0)
        return bad(print, "-f/--stepfactor: '%s' is not a whole factor from 2 to 2^20", optarg);
      o->factor = (size_t)v;
      have_f = 1;
      break;
    case 'n':
    case 'w':
    case 'r':
    case OPT_TENSORS:
    case OPT_ROUNDS:
    case OPT_MAX_ROUNDS: {
      long lo = c == 'n' || c == OPT_TENSORS || c == OPT_ROUNDS || c == OPT_MAX_ROUNDS ? 1 : 0;
      long hi = c == OPT_TENSORS ? 100000 : c == OPT_ROUNDS || c == OPT_MAX_ROUNDS ? 31 : 1000000;
      if ((v = parse_int(optarg, lo, hi)) < 0)
        return bad(print, "%s: '%s' is not a whole number from %ld to %ld",
                   opt_text(c, name, sizeof name), optarg, lo, hi);
      if (c == 'n') o->iters = (int)v;
      else if (c == 'w') o->warmup = (int)v;
      else if (c == 'r') o->root = (int)v;
      else if (c == OPT_TENSORS) o->tensors = (size_t)v;
      else if (c == OPT_ROUNDS) o->rounds = (int)v;
      else o->max_rounds = (int)v;
      break;
    }
    case 'c':
      if ((v = parse_int(optarg, 0, 1)) < 0)
        return bad(print, "-c/--check: '%s' is not 0 or 1", optarg);
      o->check = (int)v;
      break;
    case 'd':
      if ((o->ndtypes = parse_list(optarg, 0, o->dtypes, RONDO_DTYPE_COUNT, badtok,
                                   sizeof badtok)) < 0)
        return bad(print, "-d/--datatype: '%s': %s is not a datatype (int8 uint8 int16 int32 "
                   "int64 float16 bfloat16 float32 float64, or all)", optarg, badtok);
      break;
    case 'o':
      if ((o->nops = parse_list(optarg, 1, o->ops, RONDO_OP_COUNT, badtok, sizeof badtok)) < 0)
        return bad(print, "-o/--op: '%s': %s is not an op (sum avg min max prod, or all; "
                   "adasum has no MPI_Allreduce to compare with: bench/adasum_bench measures it)",
                   optarg, badtok);
      break;
    case 'a':
      if (check_algos(optarg, o->cmd, badtok, sizeof badtok) < 0)
        return bad(print, "-a/--algo: '%s': %s is not an algorithm (auto, rondo-info's "
                   "algorithms, %s%sor all)", optarg, badtok,
                   bench_mpi_name(o->cmd) ? bench_mpi_name(o->cmd) : "",
                   bench_mpi_name(o->cmd) ? ", " : "");
      o->algo_list = optarg;
      break;
    case 'F': o->full = 1; break;
    case 'q': o->quiet = 1; break;
    case 'v': o->verbose = 1; break;
    case 'h': if (print) usage(stdout); return 3;
    case OPT_INPLACE: o->inplace = 1; break;
    case OPT_MEMORY:
      if (strcmp(optarg, "host") != 0 && strcmp(optarg, "device") != 0 &&
          strcmp(optarg, "shared") != 0)
        return bad(print, "--memory: '%s' is not host, shared or device", optarg);
      o->device = strcmp(optarg, "device") == 0;
      o->shared = strcmp(optarg, "shared") == 0;
      break;
    case OPT_JSON: o->json_path = optarg; break;
    case OPT_CSV: o->csv_path = optarg; break;
    case OPT_OUTPUT: o->output = optarg; break;
    case OPT_SHARDED: o->sharded = 1; break;
    case OPT_COLLECTIVE:
      if ((o->colls = tool_parse_colls(optarg, badtok, sizeof badtok)) == 0)
        return bad(print, "--collective: '%s': %s is not a collective (allreduce, "
                   "reduce_scatter, allgather, or all)", optarg, badtok);
      break;
    case OPT_BREAK: o->break_algo = optarg; break;
    case OPT_MODEL:
      if (strcmp(optarg, "resnet50") != 0 && strcmp(optarg, "bert-base") != 0 &&
          strcmp(optarg, "vgg16") != 0 && strcmp(optarg, "all") != 0)
        return bad(print, "--model: '%s' is not a model (resnet50, bert-base, vgg16, all)",
                   optarg);
      o->model = optarg;
      break;
    case OPT_MARGIN:
      o->margin = strtod(optarg, &end) / 100;
      if (end == optarg || *end != '\0' || !(o->margin >= 0 && o->margin <= 1))
        return bad(print, "--margin: '%s' is not a percentage from 0 to 100", optarg);
      break;
    default:
      return bad(print, "unhandled option -%c", c);
    }
  }
  if (optind < nargs) {
    int is_cmd = 0;
    for (int k = 0; k < CMD_COUNT; k++)
      is_cmd |= strcmp(args[optind], cmd_names[k]) == 0;
    return bad(print, "unexpected argument '%s'%s", args[optind],
               is_cmd ? " (the subcommand must come first)" : "");
  }
  if (o->maxbytes < o->minbytes)
    return bad(print, "-e (%zu bytes) is smaller than -b (%zu bytes)", o->maxbytes, o->minbytes);
  if (have_f && have_i)
    return bad(print, "-f and -i exclude each other: multiply or add, not both");
  if (o->cmd == CMD_TUNE && o->max_rounds < o->rounds)
    return bad(print, "--max-rounds (%d) is smaller than --rounds (%d)", o->max_rounds,
               o->rounds);
  if (o->cmd == CMD_TUNE && o->minbytes < 4)
    return bad(print, "tune: -b %zu: must be at least 4 bytes (one float32)", o->minbytes);
  if (o->device && o->algo_list != NULL &&
      (strstr(o->algo_list, bench_mpi_name(o->cmd)) != NULL ||
       strstr(o->algo_list, BENCH_FLOOR_ROW) != NULL))
    return bad(print, "-a %s: not with --memory device (this MPI is not CUDA-aware; the "
               "floor is a host copy); the baselines are NCCL's call and host+copies",
               strstr(o->algo_list, BENCH_FLOOR_ROW) != NULL ? BENCH_FLOOR_ROW
                                                             : bench_mpi_name(o->cmd));
  if ((o->tensors > 0) != have_size)
    return bad(print, "--tensors and --size go together");
  if (o->break_algo != NULL && !breakable(o))
    return bad(print, "--break-algo: '%s' is not a row of %s (fusion: engine, single, loop; "
               "allreduce, reduce_scatter, allgather: an algorithm or the MPI baseline; "
               "the others: rondo)",
               o->break_algo, cmd_names[o->cmd]);
  size_t sizes[BENCH_MAX_SIZES];
  if (o->cmd != CMD_FUSION && bench_sizes(o, sizes) >= BENCH_MAX_SIZES)
    return bad(print, "-b/-e/-%c give more than %d sizes", have_i ? 'i' : 'f',
               BENCH_MAX_SIZES - 1);
  return 0;
}

int bench_sizes(const bench_opts_t *o, size_t *sizes)
{
  int n = 0;
  for (size_t s = o->minbytes; s <= o->maxbytes && n < BENCH_MAX_SIZES;) {
    sizes[n++] = s;
    size_t next = o->stepbytes ? s + o->stepbytes : s * o->factor;
    if (next <= s) /* overflow */
      break;
    s = next;
  }
  return n;
}
