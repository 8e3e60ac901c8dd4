#!/bin/sh
# Parity: N ranks train exactly like one rank with the global batch. The same
# seed and global batch on 1, 2, 3 and 4 ranks give the same variables after
# 40 steps, up to the order of float32 sums (bound in docs/train.md):
#   - digits, global batch 10: uneven splits (4+3+3 at 3 ranks, 3+3+2+2 at 4);
#   - synthetic, 50 samples, batch 16: each epoch ends with a batch of 2, so at
#     3 and 4 ranks some ranks have no sample in it and contribute zeros.
# Every multi-rank run also compares its variables across ranks after every
# step (--check-every 1): all ranks hold identical bytes. The 2- and 4-rank
# runs prepare batches on the prefetch thread, the others inline.
# A control run with another global batch must fall outside the bound, so the
# bound is tight enough to tell a different batch. (A mistake every rank count
# makes alike, such as a wrong divisor, is reference.sh's to catch.)
. "${top_srcdir:-.}/tests/train/common.sh"
bound=3.8e-6 # |w_N - w_1| after 40 steps: 32 ulps of 1.0 (docs/train.md)
digits="--batch 10 --max-steps 40 --lr 0.1"
synthetic="--dataset synthetic --samples 50 --features 12 --classes 3 --hidden 16,8 --batch 16 --max-steps 40 --lr 0.1"
for name in digits synthetic; do
  eval "args=\$$name"
  # shellcheck disable=SC2086 # split the options on purpose
  run 1 $args --save-weights "$tmp/$name-1.bin" || { show; fail "$name: 1 rank failed"; }
  for n in 2 3 4; do
    prefetch=on
    [ "$n" = 3 ] && prefetch=off
    # shellcheck disable=SC2086
    run "$n" $args --check-every 1 --prefetch $prefetch --save-weights "$tmp/$name-$n.bin" ||
      { show; fail "$name: $n ranks failed"; }
    weights close "$tmp/$name-1.bin" "$tmp/$name-$n.bin" "$bound" 0 ||
      fail "$name: $n ranks differ from 1 rank by more than $bound"
    pass "$name: $n ranks match 1 rank within $bound after 40 steps, identical on every rank"
  done
done
# shellcheck disable=SC2086
run 1 --batch 11 --max-steps 40 --lr 0.1 --save-weights "$tmp/control.bin" || { show; fail "control run"; }
if weights close "$tmp/digits-1.bin" "$tmp/control.bin" "$bound" 0 >/dev/null; then
  fail "a run with global batch 11 is within the bound of batch 10: the bound cannot tell"
fi
pass "a run with another global batch is outside the bound"
