#!/bin/sh
# An unmodified MPI program's MPI_Allreduce with and without librondo-mpi,
# in one run (docs/mpi.md, docs/PERFORMANCE.md):
#   bench/interpose.sh [BUILD_DIR] [RANKS]          (default build, 2)
# Runs bench/mpi_allreduce (a plain MPI program) alternately without and
# with the library preloaded, RUNS times each (default 3), 8 B to 64 MiB of
# MPI_FLOAT sums (taken over by rondo) and 8 B to 4 KiB of MPI_UNSIGNED
# sums (passed to MPI: what the library adds to a call it does not take).
# Prints, per size, the median over runs of each way's time per call and
# their ratio (above 1: faster with rondo). Environment: MPIEXEC (default
# mpiexec), RUNS, RONDO_MPI_INTERCEPT (default: the library's default).
set -u
build=${1:-build}
ranks=${2:-2}
runs=${RUNS:-3}
mpiexec=${MPIEXEC:-mpiexec}
build=$(cd "$build" && pwd)
prog=$build/bench/mpi_allreduce
lib=$build/interpose/.libs/librondo-mpi.so
[ -x "$prog" ] && [ -f "$lib" ] || { echo "interpose.sh: build first ($prog, $lib)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
with="-genv LD_PRELOAD $lib -genv LD_LIBRARY_PATH $build/lib/.libs"
status=0
for r in $(seq "$runs"); do
  for way in mpi rondo; do
    opts=
    [ $way = rondo ] && opts=$with
    # shellcheck disable=SC2086
    $mpiexec $opts -n "$ranks" "$prog" -b 8 -e 64M -f 4 -r 5 > "$tmp/$way.float.$r" || status=1
    # shellcheck disable=SC2086
    $mpiexec $opts -n "$ranks" "$prog" -b 8 -e 4K -f 8 -r 7 -t unsigned > "$tmp/$way.unsigned.$r" ||
      status=1
    grep -q '^# wrong results: 0' "$tmp/$way.float.$r" || { echo "wrong results ($way)"; status=1; }
  done
done
echo "# bench/interpose.sh: $ranks ranks, $runs runs each way, alternating; RONDO_MPI_INTERCEPT=${RONDO_MPI_INTERCEPT:-default}"
echo "# $(mpichversion 2>/dev/null | head -n 1 || echo MPI)"
for kind in float unsigned; do
  echo
  [ $kind = float ] && echo "MPI_Allreduce of MPI_FLOAT (MPI_SUM): taken over by rondo" ||
    echo "MPI_Allreduce of MPI_UNSIGNED (MPI_SUM): passed to MPI by the library"
  printf '%12s %12s %12s %8s %10s\n' bytes "MPI us" "rondo-mpi us" ratio "added us"
  cat "$tmp"/mpi."$kind".* | grep -v '^#' | awk '{print "mpi", $1, $2}' > "$tmp/all.$kind"
  cat "$tmp"/rondo."$kind".* | grep -v '^#' | awk '{print "rondo", $1, $2}' >> "$tmp/all.$kind"
  awk '
    function median(list,   n, a, i, j, t) {
      n = split(list, a, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { v[$1, $2] = v[$1, $2] " " $3; sizes[$2] = 1 }
    END {
      n = 0; for (s in sizes) order[n++] = s + 0
      for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
      for (i = 0; i < n; i++) {
        s = order[i]; m = median(v["mpi", s]); r = median(v["rondo", s])
        printf "%12d %12.2f %12.2f %8.2f %10.2f\n", s, m, r, r > 0 ? m / r : 0, r - m
      }
    }' "$tmp/all.$kind"
done
exit $status
