#!/bin/sh
# An unmodified MPI program's MPI_Allreduce with and without librondo-mpi,
# in one run (docs/mpi.md, docs/PERFORMANCE.md):
#   bench/interpose.sh [BUILD_DIR] [RANKS]          (default build, 2)
# Runs bench/mpi_allreduce (a plain MPI program) alternately without and
# with the library preloaded, RUNS times each (default 3), 8 B to 64 MiB of
# MPI_FLOAT sums (taken over by rondo): per size, the median over runs of
# each way's time per call and their ratio (above 1: faster with rondo).
# Then, with the library preloaded, 8 B to 4 KiB of MPI_UNSIGNED sums
# (passed to MPI) in rounds alternating with the same calls made to
# PMPI_Allreduce in the same process: what the library adds to a call it
# does not take over. Environment: MPIEXEC (default mpiexec), RUNS,
# RONDO_MPI_INTERCEPT (default: the library's default), KIND (default
# allreduce; reduce_scatter_block, reduce_scatter, allgather, allgatherv:
# that call instead, bench/mpi_allreduce's -k, the bytes its whole buffer;
# set RONDO_MPI_INTERCEPT to take it over; no pass-through rounds).
set -u
build=${1:-build}
ranks=${2:-2}
runs=${RUNS:-3}
mpiexec=${MPIEXEC:-mpiexec}
kind=${KIND:-allreduce}
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
    $mpiexec $opts -n "$ranks" "$prog" -k "$kind" -b 8 -e 64M -f 2 -r 5 > "$tmp/$way.float.$r" || status=1
    # shellcheck disable=SC2086
    [ $way = rondo ] && [ "$kind" = allreduce ] && { $mpiexec $opts -n "$ranks" "$prog" -b 8 -e 4K -f 8 -r 9 -t unsigned \
      > "$tmp/unsigned.$r" || status=1; }
    grep -q '^# wrong results: 0' "$tmp/$way.float.$r" || { echo "wrong results ($way)"; status=1; }
  done
done
echo "# bench/interpose.sh: $kind, $ranks ranks, $runs runs each way, alternating; RONDO_MPI_INTERCEPT=${RONDO_MPI_INTERCEPT:-default}"
echo "# $(mpichversion 2>/dev/null | head -n 1 || echo MPI)"
# median_table A B MODE: per size, the medians of A's and B's times (lines
# "size us" in the files A.* and B.*), and their ratio (MODE ratio) or
# difference (MODE diff).
median_table() {
  { cat "$tmp"/"$1".* | grep -v '^#' | awk '{print "a", $1, $2}'
    cat "$tmp"/"$2".* | grep -v '^#' | awk '{print "b", $1, $2}'; } |
  awk -v mode="$3" '
    function median(list,   n, a, i, j, t) {
      n = split(list, a, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { v[$1, $2] = v[$1, $2] " " $3; if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 + 0 } }
    END {
      for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
      for (i = 0; i < n; i++) {
        s = order[i]; x = median(v["a", s]); y = median(v["b", s])
        if (mode == "diff") printf "%12d %12.3f %12.3f %8.3f\n", s, x, y, y - x
        else printf "%12d %12.2f %12.2f %8.2f\n", s, x, y, (y > 0 ? x / y : 0)
      }
    }'
}
call=$(sed -n '1s/^# mpi_allreduce: \([^,]*\),.*/\1/p' "$tmp/mpi.float.1")
if [ "$kind" != allreduce ]; then
  echo
  echo "$call of MPI_FLOAT: MPI's own, and with the library preloaded"
  printf '%12s %12s %12s %8s\n' bytes "MPI us" "rondo-mpi us" ratio
  median_table mpi.float rondo.float ratio
  exit $status
fi
for r in $(seq "$runs"); do # the unsigned runs: PMPI's column, and the library's
  grep -v '^#' "$tmp/unsigned.$r" | awk '{print $1, $3}' > "$tmp/pmpi.$r"
  grep -v '^#' "$tmp/unsigned.$r" | awk '{print $1, $2}' > "$tmp/through.$r"
done
echo
echo "MPI_Allreduce of MPI_FLOAT (MPI_SUM): taken over by rondo"
printf '%12s %12s %12s %8s\n' bytes "MPI us" "rondo-mpi us" ratio
median_table mpi.float rondo.float ratio
echo
echo "MPI_Allreduce of MPI_UNSIGNED (MPI_SUM): passed to MPI by the library, against"
echo "PMPI_Allreduce in the same process"
printf '%12s %12s %12s %8s\n' bytes "PMPI us" "via lib us" "added us"
median_table pmpi through diff
exit $status
