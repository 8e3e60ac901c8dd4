#!/bin/sh
# rondo-bench tune end to end: bad options exit 2 with a message; a short
# 2-rank tune writes a table that covers every size once, and rondo-info,
# loading it, chooses at each measured size the algorithm the tuner decided.
set -u
bindir=${top_builddir:-.}/tools
mpiexec=${top_srcdir:-.}/tests/mpiexec # MPICH or Open MPI, Hydra syntax
tmp=${TMPDIR:-/tmp}/rondo-tune-test.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { timeout --kill-after=10 300 "$mpiexec" "$@" </dev/null; } # mpiexec reads stdin

for bad in "-f 1" "--rounds 0" "-b 1" "-e 2 -b 4" "--margin x" "-a nope" "-a auto" \
           "--rounds 5 --max-rounds 3" "-z" "extra" "-n 5"; do
  # shellcheck disable=SC2086 # split the options on purpose
  run -n 1 "$bindir/rondo-bench" tune $bad >"$tmp/out" 2>&1
  rc=$?
  [ $rc = 2 ] || { cat "$tmp/out"; fail "rondo-bench tune $bad: exit $rc, expected 2"; }
  grep -q '^rondo-bench: ' "$tmp/out" || { cat "$tmp/out"; fail "rondo-bench tune $bad: no message"; }
done
run -n 1 "$bindir/rondo-bench" tune -h >"$tmp/out" 2>&1 || fail "rondo-bench tune -h failed"
grep -q '^usage: ' "$tmp/out" || fail "rondo-bench tune -h printed no usage"
echo "PASS: bad options exit 2 with a message; -h prints the usage"

table=$tmp/table
run -n 2 "$bindir/rondo-bench" tune -b 4 -e 64K -f 16 --rounds 1 --max-rounds 3 \
  --output "$table" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "rondo-bench tune exited $?"; }
cat "$tmp/log"
grep -q '^# 4 sizes, .*wrong results: 0$' "$tmp/log" || fail "expected 4 sizes and no wrong results"
rules=$(grep -c '^allreduce ' "$table")
[ "$rules" -ge 1 ] || fail "no rules in $table"
grep '^allreduce ' "$table" | grep -v -q ' 2 1 host ' && fail "a rule not for 2 ranks on 1 node"
head_rule=$(grep '^allreduce ' "$table" | head -n 1 | awk '{print $2}')
last_rule=$(grep '^allreduce ' "$table" | tail -n 1 | awk '{print $2}')
case $head_rule in 0-*|0-) ;; *) fail "first rule does not start at 0: $head_rule";; esac
case $last_rule in *-) ;; *) fail "last rule is not open: $last_rule";; esac
# Rules are contiguous: each starts one byte after the previous one ends.
grep '^allreduce ' "$table" | awk '{print $2}' | awk -F- '
  NR > 1 && $1 != prev + 1 { print "gap before " $0; bad = 1 } { prev = $2 } END { exit bad }' ||
  fail "rules leave a gap"
# At each measured size, AUTO with the table picks what the tuner decided.
grep -E '^ +[0-9]+ ' "$tmp/log" | while read -r bytes _model decision _rest; do
  got=$(RONDO_TUNING_FILE=$table run -n 2 "$bindir/rondo-info" --explain "$bytes" 2>&1 |
        sed -n 's/^choice: \([a-z_]*\) .*/\1/p' | head -n 1)
  [ "$got" = "$decision" ] || fail "$bytes bytes: rondo-info chose '$got', the tuner decided '$decision'"
  echo "PASS: $bytes bytes -> $decision with the table"
done || exit 1
echo "PASS: the table covers 0 to infinity in $rules rule(s) and AUTO follows it"

# -a naming only an algorithm the selector passes over here (hierarchical on
# one node): every size falls back to the model's choice, and the table
# still names real algorithms.
run -n 2 "$bindir/rondo-bench" tune -a hierarchical -b 4 -e 64 -f 16 --rounds 1 --max-rounds 1 \
  --output "$tmp/passed" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "tune -a hierarchical exited $?"; }
grep -q 'no candidate of -a at this size' "$tmp/log" || { cat "$tmp/log"; fail "no fallback reason"; }
grep '^allreduce ' "$tmp/passed" | awk '{print $NF}' | while read -r algo; do
  case $algo in mpi|ring|recursive_doubling|rabenseifner|shm|hierarchical) ;;
  *) fail "tune -a hierarchical wrote a rule for '$algo'";; esac
done || exit 1
echo "PASS: tune -a with no candidate at a size keeps the model's choice"
