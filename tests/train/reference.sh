#!/bin/sh
# rondo-train against an independent implementation: tests/train/reference.py
# trains the same synthetic data (same streams, shuffles and initialization)
# with the model, loss, SGD and schedule written from docs/train.md in plain
# double-precision Python, without BLAS or MPI. After 12 steps (3 epochs,
# each ending with a batch of 2, the warm-up and the cosine decay) rondo-train
# on 1 and on 3 ranks must match it within 1e-5. parity.sh shows N ranks
# equal one rank; this shows one rank computes the right thing (a wrong
# divisor for the short batch, say, moves variables by 0.2).
# A control: rondo-train stopped one step earlier is outside the bound.
. "${top_srcdir:-.}/tests/train/common.sh"
bound=1e-5
args="--samples 50 --features 12 --classes 3 --hidden 8,6 --batch 16 --epochs 4 --lr 0.1
  --momentum 0.9 --weight-decay 0.001 --warmup-epochs 1 --seed 5"
# shellcheck disable=SC2086 # split the options on purpose
"$py" "$srcdir/tests/train/reference.py" "$tmp/reference.bin" $args --steps 12 ||
  fail "reference.py"
for n in 1 3; do
  # shellcheck disable=SC2086
  run "$n" --dataset synthetic $args --max-steps 12 --save-weights "$tmp/train$n.bin" ||
    { show; fail "$n ranks"; }
  weights close "$tmp/reference.bin" "$tmp/train$n.bin" "$bound" 0 ||
    fail "$n ranks differ from the reference by more than $bound"
  pass "$n rank(s): within $bound of the independent reference after 12 steps"
done
# shellcheck disable=SC2086
run 1 --dataset synthetic $args --max-steps 11 --save-weights "$tmp/short.bin" || { show; fail "11 steps"; }
if weights close "$tmp/reference.bin" "$tmp/short.bin" "$bound" 0 >/dev/null; then
  fail "11 steps are within the bound of 12: the bound cannot tell"
fi
pass "one step fewer is outside the bound"
