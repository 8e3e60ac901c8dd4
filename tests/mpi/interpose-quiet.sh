#!/bin/sh
# Under librondo-mpi, rondo writes nothing into the program's output unless
# RONDO_LOG asks (docs/mpi.md): a plain MPI program at 4 ranks (on a small
# machine, oversubscribed: librondo's topology then has something to say),
# every call rondo can take taken over, prints byte for byte what it prints
# without the library, on stdout and on stderr. And the check can fail:
# with RONDO_LOG=info the same run says more.
set -u
builddir=${top_builddir:-.}
libs=$(cd "$builddir" && pwd)
exe=$libs/tests/mpi/plain_mpi
lib=$libs/interpose/.libs/librondo-mpi.so
[ -x "$exe" ] && [ -f "$lib" ] || { echo "interpose-quiet: $exe or $lib is not built"; exit 99; }
mpiexec=${top_srcdir:-.}/tests/mpiexec
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
unset RONDO_LOG RONDO_LOG_SUBSYS
path=$libs/lib/.libs:$libs/interpose/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# run NAME [ENV...]: the program at 4 ranks, its stdout and stderr in
# $tmp/NAME.out and $tmp/NAME.err; the preload when NAME is not "plain".
run() {
  name=$1
  shift
  if [ "$name" = plain ]; then
    env "$@" timeout --kill-after=10 300 "$mpiexec" -n 4 "$exe" > "$tmp/$name.out" 2> "$tmp/$name.err"
  else
    env RONDO_MPI_INTERCEPT=all "$@" timeout --kill-after=10 300 "$mpiexec" -genv LD_PRELOAD "$lib" \
      -genv LD_LIBRARY_PATH "$path" -n 4 "$exe" > "$tmp/$name.out" 2> "$tmp/$name.err"
  fi || { echo "interpose-quiet: the $name run exited with $?"; cat "$tmp/$name.out" "$tmp/$name.err"; exit 1; }
}

run plain
grep -q '^plain_mpi (4 ranks): 0 wrong results$' "$tmp/plain.out" ||
  { echo "interpose-quiet: the plain run:"; cat "$tmp/plain.out"; exit 1; }
run preload
status=0
for f in out err; do
  if ! cmp -s "$tmp/plain.$f" "$tmp/preload.$f"; then
    echo "interpose-quiet: std$f differs with librondo-mpi preloaded (RONDO_LOG unset):"
    diff "$tmp/plain.$f" "$tmp/preload.$f"
    status=1
  fi
done
run info RONDO_LOG=info
if cmp -s "$tmp/plain.err" "$tmp/info.err"; then
  echo "interpose-quiet: RONDO_LOG=info said nothing more: the comparison above proves nothing"
  status=1
fi
[ $status = 0 ] && echo "interpose-quiet: the same bytes with and without librondo-mpi"
exit $status
