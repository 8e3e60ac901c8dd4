#!/bin/sh
# rondo under SimGrid's SMPI (docs/scale.md), when SimGrid is installed
# (exit 77 otherwise): builds librondo and rondo-bench with smpicc
# (scripts/build-smpi.sh, into smpi-build/ of the build folder), then:
#   - 64 simulated ranks, one per host of the 100 Gbit fat tree: every
#     algorithm and AUTO from 16 B to 64 KiB and at 256 KiB in float32 sum,
#     every element checked on every rank (rondo-bench exits 1 on a wrong
#     one; every type with every op runs at 1-5 ranks in tests/mpi, and
#     int32 max here in the radix runs below: the schedules do not depend
#     on them);
#   - Rabenseifner's doubling forced to radix 8 and 4, 4 B to 64 KiB, checked;
#   - 32 ranks, 8 per host of the multicore platform: the node-shared
#     windows between simulated ranks, shm's and the hierarchical path's;
#     the check there is rondo's exchange, in which the inline data of
#     mpi's calls above a few hundred bytes crosses from one rank a host and
#     Rabenseifner's halving carries the packets, and, with
#     RONDO_CHECK_EXCHANGE=mpi, MPICH's node-aware all-reduce, checked;
#   - the reduce-scatter and all-gather families, every member and AUTO,
#     on 16 ranks of 2 simulated hosts (hierarchical among them) and on 12
#     of hosts of 8 and 4 (unequal nodes, p not a power of two), checked;
#   - explain: the subcommand reaches rondo-bench under smpirun, and
#     rondo's network measurement sees the simulated network (the platform
#     says 0.3 us and 100 Gbit/s per link);
#   - bench/simulate.sh, with rondo under either selector, and
#     bench/simulate_table.py's tables of its results.
# A simulation runs on one core (SimGrid runs every simulated rank in one
# thread): the runs go in two lanes at once, each checked afterwards.
set -u
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
for tool in smpicc smpirun; do
  command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: no $tool (apt-get install libsimgrid-dev)"; exit 77; }
done
fail() { echo "FAIL: $*"; exit 1; }
smpi=$(cd "$builddir" && pwd)/smpi-build
sh "$srcdir/scripts/build-smpi.sh" "$smpi" || fail "scripts/build-smpi.sh"
tmp=${TMPDIR:-/tmp}/rondo-smpi-test.$$
mkdir -p "$tmp/lane-a" "$tmp/lane-b" || exit 99
lanes=
trap 'kill $lanes 2>/dev/null; rm -rf "$tmp"' EXIT
seq 0 63 | sed 's/^/node-/' > "$tmp/hosts-1"
seq 0 3 | sed 's/^/node-/; s/$/:8/' > "$tmp/hosts-8"

# step NAME CMD...: runs CMD, its output in $tmp/NAME.out, its exit status
# in $tmp/NAME.rc. ran NAME WHAT: fails (showing the output) unless NAME
# exited 0.
step() {
  name=$1; shift
  "$@" > "$tmp/$name.out" 2>&1
  echo $? > "$tmp/$name.rc"
}
ran() { [ "$(cat "$tmp/$1.rc" 2>/dev/null)" = 0 ] || { cat "$tmp/$1.out"; fail "$2"; }; }
# sim NAME VAR=VALUE|- PLATFORM HOSTS RANKS ARGS...: rondo-bench under
# smpirun (the variable, if any, in its environment), SMPI's files in the
# lane's folder ($lane).
sim() {
  name=$1 var=$2 plat=$3 hosts=$4 np=$5; shift 5
  step "$name" env ${var#-} timeout --kill-after=10 300 smpirun -np "$np" \
    -platform "$srcdir/bench/platforms/$plat.xml" -hostfile "$tmp/$hosts" \
    --cfg=smpi/simulate-computation:no --cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1 \
    --cfg=smpi/coll-selector:mpich --cfg=smpi/tmpdir:"$tmp/$lane" --log=root.thres:critical \
    "$smpi/tools/rondo-bench" "$@"
}
# family NP: the reduce-scatter and all-gather families on NP ranks of the
# multicore platform (3 sizes from one float32 a rank, each a multiple of
# NP elements)
family() {
  for coll in reduce_scatter allgather; do
    sim "$coll-$1" - multicore-100g hosts-8 "$1" $coll -a all -b $((4 * $1)) -e $((4096 * $1)) \
      -f 32 -n 1 -w 1 --rounds 1 -q
  done
}

# (the 256 KiB rows, where the host's reductions and copies cost the most
# real time, in float32 sum only: their first steps send more than SMPI's
# eager 64 KiB, as a 1 MiB row's would, at a quarter of the time)
# Rabenseifner's doubling in radix 8 and 4 (RONDO_RAB_RADIX) at every size
# from one element: on 64 ranks two steps of 3 bits or three of 2; on 48
# ranks the fold to 32 first, then 5 bits in steps of 3 and 2. (one type
# and op a run: the schedule does not depend on them)
# (the lanes take about the same time: 19-20 s each here)
(
  lane=lane-a
  sim flat-f - fattree-100g hosts-1 64 -b 16 -e 64K -f 16 -n 1 -w 1 --rounds 1 -q -d float32 -o sum
  sim radix-8-64 RONDO_RAB_RADIX=8 fattree-100g hosts-1 64 -b 4 -e 64K -f 4 -n 1 -w 1 --rounds 1 -q \
    -d float32 -o sum -a rabenseifner
  sim radix-8-48 RONDO_RAB_RADIX=8 fattree-100g hosts-1 48 -b 4 -e 64K -f 4 -n 1 -w 1 --rounds 1 -q \
    -d int32 -o sum -a rabenseifner
  sim multi-mpi RONDO_CHECK_EXCHANGE=mpi multicore-100g hosts-8 32 -b 16 -e 1M -f 16 -n 1 -w 1 \
    --rounds 1 -q -a rabenseifner,mpi
  sim explain - fattree-100g hosts-1 16 explain -b 1M -e 1M
  family 16
) &
lanes=$!
(
  lane=lane-b
  sim flat-big - fattree-100g hosts-1 64 -b 256K -e 256K -n 1 -w 1 --rounds 1 -q -d float32 -o sum
  sim multi - multicore-100g hosts-8 32 -b 16 -e 1M -f 4 -n 1 -w 1 --rounds 1 -q \
    -a auto,hierarchical,mpi,rabenseifner
  sim radix-4-64 RONDO_RAB_RADIX=4 fattree-100g hosts-1 64 -b 4 -e 64K -f 4 -n 1 -w 1 --rounds 1 -q \
    -d int32 -o max -a rabenseifner
  sim shm - multicore-100g hosts-8 8 -b 16 -e 1M -f 16 -n 1 -w 1 --rounds 1 -q -a shm
  family 12
  # The sweep's scripts, as docs/scale.md runs them, on 16 ranks and 3
  # sizes: both ways of running rondo (-s mpich, the default, and -s ompi)
  # and the tables made from them.
  for s in mpich ompi; do
    step sweep-$s sh "$srcdir/bench/simulate.sh" -B "$smpi" -o "$tmp/sweep-$s" -s "$s" \
      -p fattree-100g -r 16 -b 16 -e 64K -f 64 -a auto,mpi,rabenseifner,MPI_Allreduce
    step table-$s /usr/bin/python3 "$srcdir/bench/simulate_table.py" "$tmp/sweep-$s"
  done
) &
lanes="$lanes $!"
wait
lanes=

ran flat-f "64 ranks on the fat tree, float32 sum"
ran flat-big "64 ranks on the fat tree, 256 KiB"
for out in flat-f flat-big; do
  grep -q '^# wrong results: 0 (OK)' "$tmp/$out.out" || { cat "$tmp/$out.out"; fail "64 ranks: wrong results"; }
done
for algo in auto mpi ring recursive_doubling rabenseifner MPI_Allreduce; do
  n=$(grep -cE "^ +[0-9].* $algo +[0-9]" "$tmp/flat-f.out")
  [ "$n" -eq 4 ] || { cat "$tmp/flat-f.out"; fail "64 ranks: $n rows of $algo, not 4 (one per size)"; }
  n=$(grep -cE "^ +262144 .* $algo +[0-9]" "$tmp/flat-big.out")
  [ "$n" -eq 1 ] || { cat "$tmp/flat-big.out"; fail "64 ranks: $n rows of $algo at 256 KiB, not 1"; }
done
echo "ok: 64 simulated ranks, every algorithm, checked"

for run in "8 64" "4 64" "8 48"; do
  set -- $run
  out=radix-$1-$2
  ran $out "radix $1 on $2 ranks"
  grep -q '^# wrong results: 0 (OK)' "$tmp/$out.out" &&
    grep -q "RONDO_RAB_RADIX=$1" "$tmp/$out.out" &&
    [ "$(grep -cE '^ +[0-9].* rabenseifner +[0-9]' "$tmp/$out.out")" -eq 8 ] ||
    { cat "$tmp/$out.out"; fail "radix $1 on $2 ranks: wrong results or rows"; }
done
echo "ok: Rabenseifner's doubling in radix 8 and 4, checked"

ran multi "32 ranks, 8 per host"
grep -q '^# wrong results: 0 (OK)' "$tmp/multi.out" || { cat "$tmp/multi.out"; fail "32 ranks: wrong results"; }
grep -q 'topology: 32 ranks on 4 node(s) of 8-8 ranks' "$tmp/multi.out" ||
  { cat "$tmp/multi.out"; fail "32 ranks: not 4 nodes of 8"; }
grep -q "argument check: rondo's exchange, inline data above [0-9]* B across from one rank a node" \
  "$tmp/multi.out" || { cat "$tmp/multi.out"; fail "32 ranks: the check is not rondo's, one rank a host"; }
[ "$(grep -cE '^ +[0-9].* hierarchical +[0-9]' "$tmp/multi.out")" -eq 9 ] || { cat "$tmp/multi.out"; fail "no hierarchical rows"; }
ran shm "8 ranks on one host, shm"
grep -q '^# wrong results: 0 (OK)' "$tmp/shm.out" || { cat "$tmp/shm.out"; fail "shm: wrong results"; }
ran multi-mpi "32 ranks, MPI's all-reduce"
grep -q "argument check: MPI's all-reduce" "$tmp/multi-mpi.out" &&
  grep -q '^# wrong results: 0 (OK)' "$tmp/multi-mpi.out" ||
  { cat "$tmp/multi-mpi.out"; fail "32 ranks, 8 per host: the check by MPI's all-reduce"; }
echo "ok: 8 ranks per simulated host, shm and hierarchical, checked; both ways of the check there"

for np in 16 12; do
  for coll in reduce_scatter allgather; do
    out=$coll-$np
    ran $out "$coll on $np ranks, 8 per host"
    grep -q '^# wrong results: 0 (OK)' "$tmp/$out.out" || { cat "$tmp/$out.out"; fail "$coll on $np ranks: wrong results"; }
    want=3
    [ $np = 16 ] || want=0
    [ "$(grep -cE '^ +[0-9].* hierarchical +[0-9]' "$tmp/$out.out")" -eq $want ] &&
      [ "$(grep -cE '^ +[0-9].* auto +[0-9]' "$tmp/$out.out")" -eq 3 ] ||
      { cat "$tmp/$out.out"; fail "$coll on $np ranks: not $want hierarchical rows and 3 of auto"; }
  done
done
echo "ok: the reduce-scatter and all-gather families on 2 hosts of 8 and on hosts of 8 and 4, checked"

ran explain "explain"
line=$(grep -m1 'network between nodes' "$tmp/explain.out")
lat=$(echo "$line" | sed -n 's/.*latency \([0-9.]*\) us (measured).*/\1/p')
gbit=$(echo "$line" | sed -n 's/.*, \([0-9.]*\) Gbit\/s per node link (measured).*/\1/p')
[ -n "$lat" ] && [ -n "$gbit" ] || { cat "$tmp/explain.out"; fail "explain: no measured network"; }
awk -v l="$lat" -v g="$gbit" 'BEGIN { exit !(l >= 0.5 && l <= 2 && g >= 80 && g <= 101) }' ||
  fail "the measured network ($lat us, $gbit Gbit/s) is not the platform's (0.3 us per link, 100 Gbit/s)"
grep -q '^ *1048576 .* ring\|^ *1048576 .* rabenseifner' "$tmp/explain.out" ||
  { cat "$tmp/explain.out"; fail "explain: no bandwidth algorithm chosen at 1 MiB"; }
echo "ok: explain under smpirun, network measured as $lat us, $gbit Gbit/s"

for s in mpich ompi; do
  ran sweep-$s "simulate.sh -s $s"
  ran table-$s "simulate_table.py on simulate.sh -s $s"
  [ "$(grep -c '^| 16 | [0-9]* [KM]*i*B | ' "$tmp/table-$s.out")" -eq 3 ] ||
    { cat "$tmp/table-$s.out"; fail "simulate_table.py: not 3 sizes after simulate.sh -s $s"; }
done
grep -q '^| fattree-100g | 16 | [0-3] of 3 | [0-3] of 3 | ' "$tmp/table-mpich.out" ||
  { cat "$tmp/table-mpich.out"; fail "simulate_table.py: no summary of both selectors"; }
grep -q '^| 16 | 16 B | mpi | [a-z_]* | [0-9.]* | [0-9.]* | [0-9.]* |' "$tmp/table-mpich.out" ||
  { cat "$tmp/table-mpich.out"; fail "simulate_table.py: no MPICH and Open MPI columns"; }
grep -q '^| fattree-100g | 16 | [0-3] of 3 | [0-3] of 3 (Open MPI.s) | ' "$tmp/table-ompi.out" ||
  { cat "$tmp/table-ompi.out"; fail "simulate_table.py: -s ompi's summary does not say Open MPI's"; }
echo "ok: simulate.sh (both selectors for rondo) and simulate_table.py"
