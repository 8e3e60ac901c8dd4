# Sourced by the rondo-train tests (tests/train/*.sh): paths, a scratch
# directory removed on exit, and helpers. make check exports top_srcdir,
# top_builddir and MPIEXEC.
set -u
train=${top_builddir:-.}/examples/train/rondo-train
srcdir=${top_srcdir:-.}
mpiexec=$srcdir/tests/mpiexec # MPICH or Open MPI, Hydra syntax
py=/usr/bin/python3
[ -x "$train" ] || { echo "FAIL: $train is not built"; exit 99; }
[ -x "$py" ] || { echo "FAIL: $py is missing (scripts/common.sh installs python3)"; exit 99; }
tmp=${TMPDIR:-/tmp}/rondo-train-test.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
# Oversubscribed runs say so on every rank; the tests read their own output.
export RONDO_LOG=${RONDO_LOG:-error}
fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "PASS: $*"; }
# run N ARGS...: rondo-train on N ranks; stdout to $tmp/out, stderr to $tmp/err.
run() {
  n=$1; shift
  timeout --kill-after=10 300 "$mpiexec" -n "$n" "$train" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
}
show() { echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"; }
# subset: true in the Open MPI stage of scripts/test.sh (TRAIN_TEST_SUBSET=mpi),
# which runs a test's cases that reach MPI in ways of their own (a layout
# of each kind, the messages, windows, checkpoints and a killed rank); the
# repeats at other layouts and the convergence runs, which take no other
# MPI path, run on MPICH in the other stages.
subset() { [ "${TRAIN_TEST_SUBSET:-all}" = mpi ]; }
weights() { "$py" "$srcdir/tests/train/weights.py" "$@"; }
