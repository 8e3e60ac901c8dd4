#!/bin/sh
# rondo-bench across emulated hosts (tests/multihost/netbed.sh), one run per
# collective, link speed and layout, as docs/PERFORMANCE.md reports them:
#   bench/netbed_sweep.sh [BUILD_DIR] [OUT_DIR]
# then bench/netbed_table.py OUT_DIR/*.json prints the tables. Each run
# leaves OUT_DIR/RATE-HxP.txt and .json for allreduce (the names of old),
# OUT_DIR/COLL-RATE-HxP.txt and .json for the other collectives
# (reduce_scatter-1gbit-2x2.json).
# Environment:
#   NETBED_COLLS    rondo-bench subcommands, space-separated (default
#                   "allreduce"; also "reduce_scatter" and "allgather", whose
#                   rows are auto, each member, MPI's call and memory_floor)
#   NETBED_LAYOUTS  hosts x ranks per host, space-separated (default "2x1 2x2";
#                   the 16-core device machine: "4x4")
#   NETBED_RATES    link speeds (default "1gbit 10gbit unlimited")
#   RONDO_BENCH     the rondo-bench to run (default BUILD_DIR/tools/rondo-bench)
#   MPIEXEC         the launcher netbed.sh runs (default mpiexec)
#   NETBED_ITERS    timed iterations per row (default 20, rondo-bench's own)
# Needs root and iproute2. Every run uses the library's defaults (no tuning
# file: the selector decides from the network it measures). Exit status 1
# when a run left no complete table (each run's output is in its .txt), 2 for
# a collective NETBED_COLLS does not know.
set -u
build=${1:-build}
out=${2:-netbed-sweep}
here=$(cd "$(dirname "$0")/.." && pwd)
bench=${RONDO_BENCH:-$build/tools/rondo-bench}
mkdir -p "$out"
failed=
for coll in ${NETBED_COLLS:-allreduce}; do
  case $coll in
    allreduce) prefix='' sub='' ;;
    reduce_scatter|allgather) prefix=$coll- sub=$coll ;;
    *) echo "netbed_sweep: NETBED_COLLS: '$coll' is not allreduce, reduce_scatter or allgather" >&2
       exit 2 ;;
  esac
  for rate in ${NETBED_RATES:-1gbit 10gbit unlimited}; do
    for layout in ${NETBED_LAYOUTS:-2x1 2x2}; do
      hosts=${layout%x*}
      ppn=${layout#*x}
      name=$out/$prefix$rate-$layout
      limit=
      [ "$rate" = unlimited ] || limit="-r $rate"
      echo "== $coll, $rate, $hosts hosts x $ppn ranks -> $name.txt, $name.json"
      : > "$name.txt"
      # shellcheck disable=SC2086
      timeout -k 10 600 sh "$here/tests/multihost/netbed.sh" -H "$hosts" $limit -- \
        -n $((hosts * ppn)) -ppn "$ppn" -genv RONDO_LOG info \
        "$bench" $sub -b 4 -e 16M -f 4 -n ${NETBED_ITERS:-20} -w 3 -q --json "$name.json" \
        > "$name.txt" 2>&1 &
      run=$!
      # MPICH 4.0.2 can hang in MPI_Finalize over TCP (docs/multinode.md): once
      # the table is complete, give the run 20 s to end, then stop it.
      while kill -0 "$run" 2>/dev/null && ! grep -q '^# average bus bandwidth' "$name.txt"; do
        sleep 1
      done
      i=0
      while kill -0 "$run" 2>/dev/null && [ $i -lt 20 ]; do sleep 1; i=$((i + 1)); done
      kill "$run" 2>/dev/null
      wait "$run" 2>/dev/null
      # A run counts when its table is complete; the kill above is expected.
      if ! grep -q '^# average bus bandwidth' "$name.txt" || [ ! -s "$name.json" ]; then
        echo "== $coll, $rate, $hosts hosts x $ppn ranks FAILED: no complete table (see $name.txt)" >&2
        failed="$failed $prefix$rate-$layout"
      fi
      # The kernel tears a deleted namespace down later, in a worker thread:
      # let it finish before the next run measures its network.
      sleep 3
    done
  done
done
if [ -n "$failed" ]; then
  echo "netbed_sweep: runs without a table:$failed" >&2
  exit 1
fi
