#!/bin/sh
# Jobs started by torchrun (torch.distributed.run), with MPI underneath
# (docs/launching.md):
#   - C programs linked to librondo: the collectives test at 2 ranks and the
#     all-reduce test at 3, every check passing on every rank; an
#     unmodified MPI program with librondo-mpi preloaded (its MPI_Init joins
#     the rendezvous) at 2;
#   - rondo-info at 2 ranks finds the same topology and makes the same
#     choices as under mpiexec -n 2 (one node, shm), and says it formed
#     through rondo's rendezvous; rondo-bench runs and checks its rows;
#   - Python: rondo.init() and shutdown() leave no thread or socket behind
#     (rank 0's rendezvous server included; tests/launch/leftovers.py);
#     DDP on the rondo backend at 3 ranks equals one process training on
#     the global batch (tests/launch/ddp.py);
#   - torch.multiprocessing.spawn with rank= and world_size= given, through
#     env://, tcp:// and file:// (2 ranks).
# Skipped (77) without torch for /usr/bin/python3.
. "${top_srcdir:-.}/tests/launch/common.sh"
needs_torch
if [ "$mpi" = openmpi ]; then
  # Open MPI's processes start only under its own launchers: every rank
  # says so, none waits.
  torchrun --nproc_per_node 2 --master_port "$(free_port)" --no_python "$info" > "$tmp/o" 2>&1 &&
    { cat "$tmp/o"; fail "rondo-info on Open MPI under torchrun did not fail"; }
  [ "$(grep -o "this rondo is built on Open MPI, which forms a job only under its own launchers" "$tmp/o" | wc -l)" -ge 2 ] ||
    { cat "$tmp/o"; fail "on Open MPI under torchrun, not every rank said which launchers it needs"; }
  pass "rondo on Open MPI under torchrun: every rank says to start it with mpiexec"
  needs_mpich
fi
export PYTHONPATH=$rondo_pythonpath${PYTHONPATH:+:$PYTHONPATH}

# run_torchrun N OUT ARGS...: torchrun on N local ranks with a port of its own.
run_torchrun() {
  n=$1 out=$2
  shift 2
  torchrun --nproc_per_node "$n" --master_port "$(free_port)" "$@" > "$out" 2>&1
}

for t in "2 test_collectives" "3 test_allreduce"; do
  set -- $t
  run_torchrun "$1" "$tmp/c" --no_python "$builddir/tests/mpi/$2" ||
    { cat "$tmp/c"; fail "torchrun $2 at $1 ranks exited with $?"; }
  grep -q "$2 ($1 ranks): [0-9]* checks, 0 failed" "$tmp/c" ||
    { cat "$tmp/c"; fail "torchrun $2 at $1 ranks: no '$2 ($1 ranks): N checks, 0 failed'"; }
  pass "torchrun --nproc_per_node $1 $2: $(grep -o "$2 ($1 ranks): [0-9]* checks, 0 failed" "$tmp/c" | sed 's/^.*: //')"
done

# An unmodified MPI program with librondo-mpi preloaded: its MPI_Init forms
# the world through the rendezvous (one job of 2 ranks, not 2 singletons),
# and every result is checked.
lib=$(cd "$builddir/interpose/.libs" 2>/dev/null && pwd)/librondo-mpi.so
if [ -f "$lib" ]; then
  run_torchrun 2 "$tmp/i" --no_python env LD_PRELOAD="$lib" "$builddir/bench/mpi_allreduce" ||
    { cat "$tmp/i"; fail "torchrun bench/mpi_allreduce under librondo-mpi exited with $?"; }
  grep -q "# mpi_allreduce: MPI_Allreduce, 2 ranks" "$tmp/i" && grep -q "# wrong results: 0" "$tmp/i" ||
    { cat "$tmp/i"; fail "bench/mpi_allreduce under librondo-mpi and torchrun: not 2 ranks, or wrong results"; }
  pass "torchrun --nproc_per_node 2 of an unmodified MPI program with librondo-mpi: one job of 2 ranks, 0 wrong results"
fi

# rondo-info: the world and its choices as under mpiexec.
run_torchrun 2 "$tmp/t" --no_python "$info" || { cat "$tmp/t"; fail "torchrun rondo-info"; }
"$srcdir/tests/mpiexec" -n 2 "$info" > "$tmp/m" 2>&1 || { cat "$tmp/m"; fail "mpiexec rondo-info"; }
grep -A1 "^launcher" "$tmp/m" | grep -q "an MPI launcher" ||
  { cat "$tmp/m"; fail "rondo-info under mpiexec does not say an MPI launcher started it"; }
# one host, no key: a Unix-domain socket only this user reaches (docs/launching.md#who-can-join)
grep -A1 "^launcher" "$tmp/t" | grep -q "rondo's rendezvous at unix:/tmp/rondo-$(id -u)/rendezvous-[0-9]* (.*; this user's processes only)" ||
  { cat "$tmp/t"; fail "rondo-info under torchrun on one host: the rendezvous is not this user's Unix socket"; }
same_as_mpiexec "$tmp/t" "$tmp/m" "2 ranks on 1 node"
pass "rondo-info under torchrun: 2 ranks on 1 node, the same topology, algorithms and choices as under mpiexec"

run_torchrun 2 "$tmp/b" --no_python "$builddir/tools/rondo-bench" -b 8 -e 64K -f 8 -n 3 -w 1 ||
  { cat "$tmp/b"; fail "torchrun rondo-bench exited with $?"; }
grep -q "2 ranks on 1 node" "$tmp/b" || { cat "$tmp/b"; fail "rondo-bench under torchrun: not 2 ranks"; }
pass "torchrun --nproc_per_node 2 rondo-bench: 2 ranks on 1 node, every row checked"

run_torchrun 2 "$tmp/l" "$srcdir/tests/launch/leftovers.py" ||
  { cat "$tmp/l"; fail "torchrun leftovers.py exited with $?"; }
[ "$(grep -o "rank [01]: ok: " "$tmp/l" | wc -l)" = 2 ] || { cat "$tmp/l"; fail "leftovers.py: not 2 ranks ok"; }
pass "rondo.init() and shutdown() under torchrun: no thread or socket left on either rank ($(grep -o "rank 0: ok: .*" "$tmp/l" | sed 's/^rank 0: ok: //; s/rank 1: .*//' ))"

for n in 3; do
  run_torchrun "$n" "$tmp/d" "$srcdir/tests/launch/ddp.py" ||
    { cat "$tmp/d"; fail "torchrun ddp.py at $n ranks exited with $?"; }
  # (counted, not anchored: lines of ranks that share stdout can touch)
  [ "$(grep -o "rank [0-9] of $n: ok: [^;]*;[^;]*;[^;]*; rondo's world: RANK/WORLD_SIZE, through rondo's rendezvous" "$tmp/d" | wc -l)" = "$n" ] ||
    { cat "$tmp/d"; fail "torchrun ddp.py at $n ranks: not every rank ok through the rendezvous"; }
  pass "torchrun --nproc_per_node $n ddp.py: $(grep -o "rank 0 of [0-9]: ok: [^;]*; max difference[^;]*" "$tmp/d" | sed 's/^rank 0 of [0-9]: ok: //')"
done

for t in "2 env" "2 tcp" "2 file"; do
  set -- $t
  timeout --kill-after=10 300 "$python" "$srcdir/tests/launch/ddp.py" --spawn "$1" --init "$2" \
    --port "$(free_port)" > "$tmp/s" 2>&1 || { cat "$tmp/s"; fail "mp.spawn $1 ranks, $2:// exited with $?"; }
  [ "$(grep -o "rank [0-9] of $1: ok: " "$tmp/s" | wc -l)" = "$1" ] ||
    { cat "$tmp/s"; fail "mp.spawn $1 ranks, $2://: not every rank ok"; }
  pass "torch.multiprocessing.spawn of $1 ranks, init_method $2://: DDP equals one process"
done
