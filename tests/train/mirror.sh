#!/bin/sh
# Mirrored variables: the cross-rank check stops training on every rank,
# naming the variable and the ranks, when one rank's variables change.
#   - --check-every 1 and rank 1 perturbed after step 5: every rank of 3 exits
#     with status 3 at step 5 and names fc1.bias and rank 1;
#   - the default check (every epoch): rank 2 perturbed at step 3 is caught at
#     the end of the first epoch (step 60), not before, and not missed.
# (parity.sh shows the check passing after every step of clean runs.)
. "${top_srcdir:-.}/tests/train/common.sh"

expect_divergence() { # RANKS STEP ARGS...
  n=$1 step=$2; shift 2
  run "$n" "$@"
  rc=$?
  [ $rc = 3 ] || { show; fail "$*: exit $rc, expected 3 (diverged)"; }
  for r in $(seq 0 $((n - 1))); do
    grep -q "^rondo-train: rank $r: the mirrored variables diverged after step $step: different from rank 0's: fc1.bias on rank $bad_rank\$" "$tmp/err" ||
      { show; fail "rank $r did not report fc1.bias diverging on rank $bad_rank after step $step"; }
  done
}

bad_rank=1
expect_divergence 3 5 --max-steps 20 --check-every 1 --debug-perturb 1:5
pass "3 ranks: a change on rank 1 after step 5 stops every rank at step 5, naming fc1.bias and rank 1"
grep -q '^epoch' "$tmp/out" && { show; fail "an epoch line was printed after the divergence"; }

bad_rank=2
expect_divergence 3 60 --max-steps 100 --debug-perturb 2:3
grep -q '^epoch   1/20' "$tmp/out" || { show; fail "the first epoch's line is missing"; }
pass "3 ranks, default check: a change on rank 2 at step 3 is caught at the end of epoch 1 (step 60)"
