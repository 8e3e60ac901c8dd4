#!/bin/sh
# The main job: install what is missing, build, train an MLP on the UCI
# digits with rondo-train on 2 ranks (synchronous data-parallel SGD with
# mirrored variables, docs/train.md), then a short benchmark table of every
# all-reduce algorithm against MPI_Allreduce (docs/bench.md).
set -eu
RONDO_TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$RONDO_TOP/scripts/common.sh"
rondo_install_deps
rondo_mpi_env
build=$RONDO_TOP/build
rondo_build "$build"
echo "== rondo-train: digits, 2 ranks, the defaults (docs/train.md)"
"$RONDO_MPIEXEC" -n 2 "$build/examples/train/rondo-train"
echo "== benchmark: 2 ranks, float32 sum, every algorithm vs MPI_Allreduce (docs/bench.md)"
"$RONDO_MPIEXEC" -n 2 "$build/tools/rondo-bench" -b 4 -e 16M -f 16 -n 10 -w 2 -q
