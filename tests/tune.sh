#!/bin/sh
# rondo-bench tune end to end: bad options exit 2 with a message; a short
# 2-rank tune of the three families writes a table that covers every size
# once per collective, and rondo-info --explain --collective (and rondo-bench
# explain for reduce-scatter and all-gather), loading it, choose at each
# measured size the algorithm the tuner decided.
set -u
bindir=${top_builddir:-.}/tools
mpiexec=${top_srcdir:-.}/tests/mpiexec # MPICH or Open MPI, Hydra syntax
tmp=${TMPDIR:-/tmp}/rondo-tune-test.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { timeout --kill-after=10 300 "$mpiexec" "$@" </dev/null; } # mpiexec reads stdin

for bad in "-f 1" "--rounds 0" "-b 1" "-e 2 -b 4" "--margin x" "-a nope" "-a auto" \
           "--rounds 5 --max-rounds 3" "-z" "extra" "-n 5" "-a MPI_Allreduce" "-a nccl" \
           "--collective bcast" "--collective allreduce,,allgather"; do
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
# 4 sizes of the whole buffer; 4 B holds no float32 block per rank at 2 ranks
for want in "allreduce: 4" "reduce_scatter: 3" "allgather: 3"; do
  grep -q "^# $want sizes, .*wrong results: 0\$" "$tmp/log" ||
    fail "expected '$want sizes' and no wrong results"
done
grep -q '^# wrong results: 0$' "$tmp/log" || fail "no clean wrong-results line"
for coll in allreduce reduce_scatter allgather; do
  rules=$(grep -c "^$coll " "$table")
  [ "$rules" -ge 1 ] || fail "no $coll rules in $table"
  grep "^$coll " "$table" | grep -v -q ' 2 1 host ' && fail "a $coll rule not for 2 ranks on 1 node"
  head_rule=$(grep "^$coll " "$table" | head -n 1 | awk '{print $2}')
  last_rule=$(grep "^$coll " "$table" | tail -n 1 | awk '{print $2}')
  case $head_rule in 0-*|0-) ;; *) fail "first $coll rule does not start at 0: $head_rule";; esac
  case $last_rule in *-) ;; *) fail "last $coll rule is not open: $last_rule";; esac
  # Rules are contiguous: each starts one byte after the previous one ends.
  grep "^$coll " "$table" | awk '{print $2}' | awk -F- '
    NR > 1 && $1 != prev + 1 { print "gap before " $0; bad = 1 } { prev = $2 } END { exit bad }' ||
    fail "$coll rules leave a gap"
  echo "PASS: the $coll rules cover 0 to infinity in $rules rule(s)"
done
# At each measured size, AUTO with the table picks what the tuner decided:
# rondo-info --explain says it for every family (the same size convention
# as tune: the whole buffer), and rondo-bench explain agrees for the others.
grep -E '^ +[a-z_]+ +[0-9]+ ' "$tmp/log" | while read -r coll bytes _model decision _rest; do
  got=$(RONDO_TUNING_FILE=$table run -n 2 "$bindir/rondo-info" --explain "$bytes" \
        --collective "$coll" 2>&1 | sed -n 's/^choice: \([a-z_]*\) .*/\1/p' | head -n 1)
  if [ "$coll" != allreduce ]; then
    bench=$(RONDO_TUNING_FILE=$table run -n 2 "$bindir/rondo-bench" explain --collective "$coll" \
            -b "$bytes" -e "$bytes" 2>&1 | awk '/^ +[0-9]+ /{print $4; exit}')
    [ "$bench" = "$got" ] ||
      fail "$coll $bytes bytes: rondo-bench explain says '$bench', rondo-info '$got'"
  fi
  [ "$got" = "$decision" ] ||
    fail "$coll $bytes bytes: AUTO chose '$got', the tuner decided '$decision'"
  echo "PASS: $coll $bytes bytes -> $decision with the table"
done || exit 1
echo "PASS: AUTO follows the table in every family"

# -a naming only an algorithm the selector passes over here (hierarchical on
# one node): every size falls back to the model's choice, and the table
# still names real algorithms.
run -n 2 "$bindir/rondo-bench" tune -a hierarchical -b 4 -e 64 -f 16 --rounds 1 --max-rounds 1 \
  --output "$tmp/passed" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "tune -a hierarchical exited $?"; }
grep -q 'no candidate of -a at this size' "$tmp/log" || { cat "$tmp/log"; fail "no fallback reason"; }
grep -E '^(allreduce|reduce_scatter|allgather) ' "$tmp/passed" | awk '{print $NF}' |
  while read -r algo; do
    case $algo in mpi|ring|recursive_doubling|rabenseifner|shm|hierarchical|pairwise|recursive_halving|bruck) ;;
    *) fail "tune -a hierarchical wrote a rule for '$algo'";; esac
  done || exit 1
echo "PASS: tune -a with no candidate at a size keeps the model's choice"

# --collective: one family only, and -a names only that family's algorithms
# (bruck is an all-gather: no reduce-scatter can run it)
run -n 2 "$bindir/rondo-bench" tune --collective reduce_scatter -a bruck -b 64 -e 64 \
  --rounds 1 >"$tmp/log" 2>&1
[ $? = 2 ] || { cat "$tmp/log"; fail "tune --collective reduce_scatter -a bruck: expected exit 2"; }
grep -q '^rondo-bench: tune: -a bruck: .*reduce.scatter' "$tmp/log" ||
  { cat "$tmp/log"; fail "tune -a bruck: no reason naming the reduce-scatter family"; }
run -n 2 "$bindir/rondo-bench" tune --collective allgather -a ring,bruck -b 64 -e 1K -f 16 \
  --rounds 1 --max-rounds 1 --output "$tmp/ag" >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "tune --collective allgather exited $?"; }
grep -q -E '^(allreduce|reduce_scatter) ' "$tmp/ag" && fail "--collective allgather wrote other rules"
grep -E '^allgather ' "$tmp/ag" | awk '{print $NF}' | grep -v -q -E '^(ring|bruck|shm|mpi|recursive_doubling)$' &&
  fail "--collective allgather wrote a rule for another algorithm"
echo "PASS: tune --collective allgather -a ring,bruck writes all-gather rules only"
