#!/bin/sh
# rondo-train's threads at work: the engine's thread and the prefetch
# thread (--prefetch on, reading batches ahead) while the job trains,
# writes a checkpoint every 20 steps and resumes from one, at 2 and 3
# ranks; the resumed run ends with the uninterrupted run's bytes.
# scripts/test.sh runs it under ThreadSanitizer, where a race fails the run
# (exit 66); checkpoint.sh covers the checkpoints themselves (a killed job,
# other rank counts, refusals).
. "${top_srcdir:-.}/tests/train/common.sh"
# --epochs fixes the learning-rate schedule; digits take 120 steps an epoch at
# batch 32, so steps 60 and 100 are mid-epoch
args="--batch 32 --lr 0.1 --epochs 3 --prefetch on"
for n in 2 3; do
  # shellcheck disable=SC2086 # split the options on purpose
  run "$n" $args --max-steps 60 --checkpoint "$tmp/ck.bin" --checkpoint-every 20 ||
    { show; fail "$n ranks: 60 steps with checkpoints"; }
  # shellcheck disable=SC2086
  run "$n" $args --resume "$tmp/ck.bin" --max-steps 100 --save-weights "$tmp/resumed.bin" ||
    { show; fail "$n ranks: resume"; }
  grep -q "^resumed    from $tmp/ck.bin at step 60" "$tmp/out" || { show; fail "$n ranks: not resumed at step 60"; }
  # shellcheck disable=SC2086
  run "$n" $args --max-steps 100 --save-weights "$tmp/straight.bin" ||
    { show; fail "$n ranks: 100 steps"; }
  weights same "$tmp/straight.bin" "$tmp/resumed.bin" ||
    fail "$n ranks: resumed at step 60 differs from an uninterrupted run"
  pass "$n ranks, batches prefetched: checkpoints every 20 steps, resumed at step 60 to 100: the bytes of an uninterrupted run"
done
