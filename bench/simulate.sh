#!/bin/sh
# rondo at scale, simulated (docs/scale.md): rondo-bench under SimGrid's
# SMPI on the platforms of bench/platforms/, at each rank count, against
# MPI's own call (MPI_Allreduce, or with -c MPI_Reduce_scatter_block or
# MPI_Allgather) under SMPI's MPICH and Open MPI selectors.
#
#   bench/simulate.sh [-B BUILD] [-o DIR] [-c COLL] [-p "PLATFORM..."] [-r "RANKS..."]
#                     [-b MIN] [-e MAX] [-f FACTOR] [-a ALGOS] [-s SELECTOR] [-n ROUNDS]
#
#   -B BUILD  the SMPI build (default build-smpi; scripts/build-smpi.sh makes it)
#   -o DIR    where the results go (default simulate-results)
#   -c COLL   the collective: allreduce (default), reduce_scatter or
#             allgather (rondo-bench's subcommand; sizes are the whole
#             buffer, ranks x block, and those under 4 bytes a rank are
#             skipped); its baseline is MPI_Allreduce,
#             MPI_Reduce_scatter_block or MPI_Allgather
#   -p LIST   platforms, names of bench/platforms/*.xml (default: all eight)
#   -r LIST   rank counts (default "16 64 256 1024 4096")
#   -b -e -f  sizes, as rondo-bench takes them (default 16, 64M, 4)
#   -a ALGOS  rondo-bench's -a: the algorithms to time (default: every one,
#             AUTO and the baseline; keep auto and the baseline in a list).
#             For reduce_scatter and allgather the default is auto, every
#             member that the cost model prices at some size in the
#             explain run (below) and the baseline: never memory_floor,
#             a memcpy that takes no simulated time here
#   -s ompi   run rondo under the Open MPI selector instead, in one
#             simulation with the baseline, and skip the MPICH selector:
#             its collectives make each communicator SMP-aware first (a ring
#             all-gather, p^2 messages), which is too slow at 4096 ranks
#   -n ROUNDS timed calls per row (default 1), each in a round of its own,
#             the rows in another order each round, and the median kept:
#             a single call's time depends on how out of step the call
#             before left the ranks, which a median of 3 mostly takes out
#
# Per platform and rank count, three runs, each one simulation (X is
# empty for allreduce, -reduce_scatter or -allgather with -c):
#   NAME-RX-explain.txt rondo-bench explain -v (--collective COLL): the
#                       cost model's prediction for every algorithm at
#                       every size; it runs first
#   NAME-RX-mpich.json  rondo-bench (every algorithm, AUTO, the baseline)
#                       with --cfg=smpi/coll-selector:mpich (with -s ompi:
#                       none, and NAME-RX-ompi.json holds the whole table)
#   NAME-RX-ompi.json   the baseline alone with the Open MPI selector
# bench/simulate_table.py turns them into docs/scale.md's tables and plots.
#
# What is simulated (docs/scale.md, "What the simulation models"): the
# network as the platform file states it (SMPI's bandwidth and latency
# correction factors are set to 1); computation takes no simulated time
# (smpi/simulate-computation:no), for rondo and for SMPI's collectives
# alike; a failed MPI_Test costs 100 ns (SMPI's default, 0.1 ms and more
# for each failure in a row, would make every polling wait slow). Buffers
# of 1 MiB and more are shared by all simulated ranks
# (smpi/auto-shared-malloc-thresh), so memory stays small at 4096 ranks;
# their contents are then meaningless, hence --check 0 (tests/smpi.sh
# checks the results at 64 ranks instead).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=build-smpi out=simulate-results
platforms="fattree-10g fattree-100g flat-10g flat-100g dragonfly-10g dragonfly-100g multicore-10g multicore-100g"
ranks="16 64 256 1024 4096" min=16 max=64M factor=4 algos= rondo_sel=mpich rounds=1
coll=allreduce
while getopts B:o:c:p:r:b:e:f:a:s:n: opt; do
  case $opt in
    B) build=$OPTARG ;; o) out=$OPTARG ;; c) coll=$OPTARG ;; p) platforms=$OPTARG ;;
    r) ranks=$OPTARG ;; b) min=$OPTARG ;; e) max=$OPTARG ;; f) factor=$OPTARG ;;
    a) algos="-a $OPTARG" ;; s) rondo_sel=$OPTARG ;; n) rounds=$OPTARG ;;
    *) sed -n '2,56p' "$0" >&2; exit 2 ;;
  esac
done
# The subcommand (none: rondo-bench's default, allreduce), the baseline,
# and X of the file names
case $coll in
  allreduce) sub= mpi=MPI_Allreduce x= ;;
  reduce_scatter) sub=$coll mpi=MPI_Reduce_scatter_block x=-$coll ;;
  allgather) sub=$coll mpi=MPI_Allgather x=-$coll ;;
  *) echo "simulate.sh: -c takes allreduce, reduce_scatter or allgather" >&2; exit 2 ;;
esac
case $rondo_sel in mpich | ompi) ;; *) echo "simulate.sh: -s takes mpich or ompi" >&2; exit 2 ;; esac
case $rounds in '' | *[!0-9]* | 0) echo "simulate.sh: -n takes a count of rounds" >&2; exit 2 ;; esac
timing="-n $rounds -w 1 --rounds $rounds -q"
bench=$build/tools/rondo-bench
[ -f "$bench" ] || { echo "simulate.sh: no $bench: run scripts/build-smpi.sh $build first" >&2; exit 1; }
mkdir -p "$out"
# Hosts in platform order: one rank per host, or 8 on the multicore ones.
seq 0 4095 | sed 's/^/node-/' > "$out/hosts-1"
seq 0 511 | sed 's/^/node-/; s/$/:8/' > "$out/hosts-8"
cfg="--cfg=smpi/simulate-computation:no --cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1
  --cfg=smpi/test:1e-7 --cfg=smpi/grow-injected-times:no
  --cfg=smpi/auto-shared-malloc-thresh:1048576 --cfg=smpi/shared-malloc-blocksize:67108864
  --cfg=contexts/stack-size:1024 --log=root.thres:critical"
sim() { # SELECTOR BCAST OUTPUT ARGS...: one simulation, its wall time and peak memory logged
  sel=$1 bcast=$2 log=$3; shift 3
  /usr/bin/time -f "# wall %e s, peak %M KiB" -a -o "$log.time" \
    smpirun -np "$np" -platform "$top/bench/platforms/$p.xml" -hostfile "$out/hosts-$k" \
    $cfg $bcast --cfg=smpi/coll-selector:"$sel" "$bench" "$@" > "$log" 2>&1 ||
    { echo "simulate.sh: $p at $np ranks failed: $log" >&2; tail -n 5 "$log" >&2; return 1; }
}
for p in $platforms; do
  [ -f "$top/bench/platforms/$p.xml" ] || { echo "simulate.sh: no platform $p" >&2; exit 2; }
  k=1
  case $p in multicore-*) k=8 ;; esac
  for np in $ranks; do
    echo "== $p, $np ranks ($k per host)"
    sizes="-b $min -e $max -f $factor"
    # From 1024 ranks, MPI_Bcast is a binomial tree where rondo runs: SMPI
    # gives every new communicator its id by MPI_Bcast, and the selectors'
    # own broadcasts first make the communicator SMP-aware, a ring
    # all-gather of p^2 messages (at 1024 ranks: 128 s of start-up instead
    # of 5 s). Not for the Open MPI baseline alone: its all-reduce below
    # 2 KiB ends in a k-nomial broadcast there, 1.33x faster than a
    # binomial one.
    fast=
    [ "$np" -lt 1024 ] || fast=--cfg=smpi/bcast:binomial_tree
    o=$out/$p-$np$x
    sim "$rondo_sel" "$fast" "$o-explain.txt" explain --collective "$coll" -v $sizes
    run_algos=$algos
    if [ -z "$algos" ] && [ -n "$sub" ]; then
      # auto, the members the model priced (a time, not "-") at some size,
      # the baseline: -a all without memory_floor
      members=$(awk -v c="$coll" '$1 == c && $3 ~ /^bytes?$/ { on = 1; next }
        /^choice:/ { on = 0 }
        on && $1 != "algorithm" && $2 != "-" && !seen[$1]++ { print $1 }' \
        "$o-explain.txt" | paste -sd, -)
      [ -n "$members" ] || { echo "simulate.sh: no $coll member priced in $o-explain.txt" >&2; exit 1; }
      run_algos="-a auto,$members,$mpi"
    fi
    if [ "$rondo_sel" = ompi ]; then
      sim ompi "$fast" "$o-ompi.txt" $sub -c 0 $sizes $run_algos $timing --json "$o-ompi.json"
    else
      sim mpich "$fast" "$o-mpich.txt" $sub -c 0 $sizes $run_algos $timing --json "$o-mpich.json"
      sim ompi "" "$o-ompi.txt" $sub -c 0 $sizes $timing -a "$mpi" --json "$o-ompi.json"
    fi
    cat "$o-$rondo_sel.txt.time"
  done
done
echo "== done: /usr/bin/python3 bench/simulate_table.py $out"
