#!/bin/sh
# rondo-bench across emulated hosts (tests/multihost/netbed.sh), one run per
# link speed and layout, as docs/PERFORMANCE.md reports them:
#   bench/netbed_sweep.sh [BUILD_DIR] [OUT_DIR]
# Needs root and iproute2. Every run uses the library's defaults (no tuning
# file: the selector decides from the network it measures).
set -u
build=${1:-build}
out=${2:-netbed-sweep}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
for rate in 1gbit 10gbit unlimited; do
  for layout in "2 1" "4 2"; do
    set -- $layout
    name=$out/$rate-$(( $1 / $2 ))x$2.txt
    limit=
    [ "$rate" = unlimited ] || limit="-r $rate"
    echo "== $rate, 2 hosts x $2 ranks -> $name"
    : > "$name"
    # shellcheck disable=SC2086
    timeout 600 sh "$here/tests/multihost/netbed.sh" $limit -- -n "$1" -ppn "$2" \
      -genv RONDO_LOG info "$build/tools/rondo-bench" -b 4 -e 16M -f 4 -n 10 -w 3 -q \
      > "$name" 2>&1 &
    run=$!
    # MPICH 4.0.2 can hang in MPI_Finalize over TCP (docs/multinode.md): once
    # the table is complete, give the run 20 s to end, then stop it.
    while kill -0 "$run" 2>/dev/null && ! grep -q '^# average bus bandwidth' "$name"; do
      sleep 1
    done
    i=0
    while kill -0 "$run" 2>/dev/null && [ $i -lt 20 ]; do sleep 1; i=$((i + 1)); done
    kill "$run" 2>/dev/null
    wait "$run" 2>/dev/null
  done
done
