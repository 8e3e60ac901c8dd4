# Sourced by the launcher tests (tests/launch/*.sh): paths, torchrun, a
# scratch directory removed on exit, and helpers. make check exports
# top_srcdir and top_builddir.
set -u
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
. "$srcdir/tests/python/common.sh"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "PASS: $*"; }
info=$builddir/tools/rondo-info
[ -x "$info" ] || { echo "FAIL: $info is not built"; exit 99; }
# Oversubscribed runs warn on every rank; the tests read their own output.
export RONDO_LOG=${RONDO_LOG:-error}
# The MPI library rondo is built on: "mpich" or "openmpi". Only MPICH's
# processes start through rondo's rendezvous (docs/launching.md).
case $("$info" 2>/dev/null | sed -n 's/^  MPI  *//p') in
  *"Open MPI"*) mpi=openmpi ;;
  *) mpi=mpich ;;
esac
# needs_mpich: the rest of the test needs rondo on MPICH; on Open MPI it is
# skipped (77), saying so.
needs_mpich() {
  [ "$mpi" = mpich ] || { echo "skipped: the rest needs rondo built on MPICH (this one is on Open MPI)"; exit 77; }
}

# torchrun ARGS...: torch's launcher. Debian's torch 1.13 under Python 3.11
# fails in its own to_map() unless --redirects and --tee name one stream
# (a torch bug with IntFlag); 2 and 2 send the workers' stderr through
# torchrun's, prefixed, and leave their stdout alone. The agent looks at
# its workers every --monitor_interval seconds (torch's default: 5), so a
# job ends up to that long after its last worker: 0.25 here (a later
# --monitor_interval in ARGS wins). Its logs go to this test's scratch
# folder, removed on exit (torch's default is a new /tmp/torchelastic_*
# each run, left behind). torchrun_flags: these, for scripts that start
# torchrun themselves (multihost.sh).
torchrun_flags="--redirects 2 --tee 2 --monitor_interval 0.25 --log_dir $tmp/torchrun"
torchrun() {
  timeout --kill-after=10 "${RONDO_TEST_TIMEOUT:-300}" \
    "$python" -m torch.distributed.run $torchrun_flags "$@"
}
needs_torch() { rondo_python_env torch; }

# wait_for FILE PATTERN [LOG]: until FILE holds a line matching PATTERN
# (grep; "." for any byte), at most 120 s; then fails, showing LOG (FILE).
wait_for() {
  # (a deadline by the clock, not a count of sleeps: once, in a sanitized
  # run, the count ran out within seconds)
  until_s=$(($(date +%s) + 120))
  while ! grep -q "$2" "$1" 2>/dev/null && [ "$(date +%s)" -lt $until_s ]; do sleep 0.1; done
  grep -q "$2" "$1" 2>/dev/null || { cat "${3:-$1}"; fail "no '$2' in $1 after 120 s"; }
}

# free_port: a TCP port nobody listens on now, and the next one too (rondo
# listens on MASTER_PORT + 1 by default).
free_port() {
  "${python:-/usr/bin/python3}" -c '
import socket
while True:
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1))
    except OSError:
        continue
    print(p)
    break'
}

# start_rank OUT RANK SIZE CMD...: one process of a job started by hand, as
# any launcher would (RANK, WORLD_SIZE and the rendezvous in its
# environment), in the background; its output in OUT, its pid added to
# $pids. $MASTER_ADDR, $MASTER_PORT or $RONDO_RENDEZVOUS as the caller
# exported them.
pids=
start_rank() {
  out=$1 r=$2 n=$3
  shift 3
  RANK=$r WORLD_SIZE=$n timeout --kill-after=5 120 "$@" > "$out" 2>&1 &
  pids="$pids $!"
}

# same_as_mpiexec TORCHRUN_OUT MPIEXEC_OUT LAYOUT: rondo-info's output under
# torchrun says it formed through the rendezvous, shows LAYOUT ("2 ranks on
# 1 node"), and its topology, algorithms and choices (rondo-info's own
# lines, not torchrun's log nor a worker's stderr) equal mpiexec's.
same_as_mpiexec() {
  grep -A1 "^launcher" "$1" | grep -q "RANK/WORLD_SIZE, through rondo's rendezvous" ||
    { cat "$1"; fail "rondo-info under torchrun does not say it formed through the rendezvous"; }
  for f in "$1" "$2"; do
    sed -n '/^topology/,/^knobs/p; /^selection/,$p' "$f" |
      grep -v -E '^(WARNING|INFO|ERROR):|^\[default[0-9]+\]:' > "$f.view"
  done
  grep -q "$3" "$1.view" || { cat "$1"; fail "rondo-info under torchrun: not $3"; }
  diff "$2.view" "$1.view" > "$tmp/diff" ||
    { cat "$tmp/diff"; fail "rondo-info under torchrun differs from mpiexec (< mpiexec, > torchrun)"; }
}
