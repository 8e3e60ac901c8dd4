#!/bin/sh
# --strategy parameter-server's bad input (docs/train.md): every rank stops
# with status 2 and the reason, before any training: more servers than
# ranks, one rank, --servers or --staleness without the strategy,
# mid-epoch checkpoints, --check-every, --debug-perturb, and ranks given
# different --servers or --staleness. The strategy's results:
# tests/train/ps.sh.
. "${top_srcdir:-.}/tests/train/common.sh"
# Bad input: status 2 on every rank, with the reason.
refused() { # N WHAT ARGS...: refused with status 2 and WHAT on stderr
  n=$1 what=$2; shift 2
  run "$n" "$@" -q
  rc=$?
  [ $rc = 2 ] || { show; fail "$*: status $rc, not 2"; }
  grep -q -- "$what" "$tmp/err" || { show; fail "$*: no '$what'"; }
  pass "refused with status 2: $*"
}
refused 2 "leaves no worker among 2 ranks" --strategy parameter-server --servers 2
refused 1 "needs at least 2 ranks" --strategy parameter-server
refused 2 "are for --strategy parameter-server" --servers 1
refused 2 "are for --strategy parameter-server" --staleness 0
refused 2 "checkpoints at the end of each epoch only" --strategy parameter-server \
  --checkpoint "$tmp/x.bin" --checkpoint-every 5
refused 2 "compares the variables at the end of each epoch only" --strategy parameter-server \
  --check-every 5
refused 2 "is for --strategy mirrored" --strategy parameter-server --debug-perturb 1:5
refused 2 "is for --strategy mirrored" --strategy central-storage --debug-perturb 1:5
mixed() { # WHAT ARGS...: rank 0 has --servers 1 --staleness 0, ranks 1-2 ARGS
  what=$1
  shift
  timeout --kill-after=10 120 "$mpiexec" -n 1 "$train" --strategy parameter-server --servers 1 \
    --staleness 0 -q : -n 2 "$train" --strategy parameter-server "$@" -q \
    </dev/null >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc = 2 ] && grep -q -- "$what" "$tmp/err" || { show; fail "ranks with different $*: status $rc"; }
  pass "refused with status 2: ranks given different $*"
}
mixed "different --servers (1 on some, 2 on others)" --servers 2 --staleness 0
mixed "different --staleness (-1 on some, 0 on others" --servers 1
run 2 --strategy parameter-server --servers 2 -q
grep -q "rank 1: stopping: rank 0 reports: --servers 2 leaves no worker" "$tmp/err" ||
  { show; fail "rank 1 does not report why it stops"; }
pass "every rank says why it stops"
