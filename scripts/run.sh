#!/bin/sh
# The main job: install what is missing, build, run the demo on 2 ranks (it
# all-reduces with every algorithm and checks the results), then a short
# benchmark table against MPI_Allreduce.
set -eu
RONDO_TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$RONDO_TOP/scripts/common.sh"
rondo_install_deps
rondo_mpi_env
build=$RONDO_TOP/build
rondo_build "$build"
echo "== demo: 2 ranks"
"$RONDO_MPIEXEC" -n 2 "$build/examples/demo"
echo "== benchmark: 2 ranks, float32 sum, every algorithm vs MPI_Allreduce (docs/bench.md)"
"$RONDO_MPIEXEC" -n 2 "$build/tools/rondo-bench" -b 4 -e 16M -f 16 -n 10 -w 2 -q
