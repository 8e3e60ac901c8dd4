#!/bin/sh
# rondo at scale, simulated (docs/scale.md): rondo-bench under SimGrid's
# SMPI on the platforms of bench/platforms/, at each rank count, against
# MPI_Allreduce under SMPI's MPICH and Open MPI selectors.
#
#   bench/simulate.sh [-B BUILD] [-o DIR] [-p "PLATFORM..."] [-r "RANKS..."]
#                     [-b MIN] [-e MAX] [-f FACTOR] [-a ALGOS] [-s SELECTOR] [-n ROUNDS]
#
#   -B BUILD  the SMPI build (default build-smpi; scripts/build-smpi.sh makes it)
#   -o DIR    where the results go (default simulate-results)
#   -p LIST   platforms, names of bench/platforms/*.xml (default: all eight)
#   -r LIST   rank counts (default "16 64 256 1024 4096")
#   -b -e -f  sizes, as rondo-bench takes them (default 16, 64M, 4)
#   -a ALGOS  rondo-bench's -a: the algorithms to time (default: every one,
#             AUTO and MPI_Allreduce; keep auto and MPI_Allreduce in a list)
#   -s ompi   run rondo under the Open MPI selector instead, in one
#             simulation with MPI_Allreduce, and skip the MPICH selector:
#             its collectives make each communicator SMP-aware first (a ring
#             all-gather, p^2 messages), which is too slow at 4096 ranks
#   -n ROUNDS timed calls per row (default 1), each in a round of its own,
#             the rows in another order each round, and the median kept:
#             a single call's time depends on how out of step the call
#             before left the ranks, which a median of 3 mostly takes out
#
# Per platform and rank count, three runs, each one simulation:
#   NAME-R-mpich.json   rondo-bench (every algorithm, AUTO, MPI_Allreduce)
#                       with --cfg=smpi/coll-selector:mpich (with -s ompi:
#                       none, and NAME-R-ompi.json holds the whole table)
#   NAME-R-ompi.json    MPI_Allreduce alone with the Open MPI selector
#   NAME-R-explain.txt  rondo-bench explain -v: the cost model's prediction
#                       for every algorithm at every size
# bench/simulate_table.py turns them into docs/scale.md's tables and plots.
#
# What is simulated (docs/scale.md, "What the simulation models"): the
# network as the platform file states it (SMPI's bandwidth and latency
# correction factors are set to 1); computation takes no simulated time
# (smpi/simulate-computation:no), for rondo and for SMPI's MPI_Allreduce
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
while getopts B:o:p:r:b:e:f:a:s:n: opt; do
  case $opt in
    B) build=$OPTARG ;; o) out=$OPTARG ;; p) platforms=$OPTARG ;; r) ranks=$OPTARG ;;
    b) min=$OPTARG ;; e) max=$OPTARG ;; f) factor=$OPTARG ;; a) algos="-a $OPTARG" ;;
    s) rondo_sel=$OPTARG ;; n) rounds=$OPTARG ;;
    *) sed -n '2,32p' "$0" >&2; exit 2 ;;
  esac
done
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
    if [ "$rondo_sel" = ompi ]; then
      sim ompi "$fast" "$out/$p-$np-ompi.txt" -c 0 $sizes $algos $timing \
        --json "$out/$p-$np-ompi.json"
    else
      sim mpich "$fast" "$out/$p-$np-mpich.txt" -c 0 $sizes $algos $timing \
        --json "$out/$p-$np-mpich.json"
      sim ompi "" "$out/$p-$np-ompi.txt" -c 0 $sizes $timing -a MPI_Allreduce \
        --json "$out/$p-$np-ompi.json"
    fi
    sim "$rondo_sel" "$fast" "$out/$p-$np-explain.txt" explain -v $sizes
    cat "$out/$p-$np-$rondo_sel.txt.time"
  done
done
echo "== done: /usr/bin/python3 bench/simulate_table.py $out"
