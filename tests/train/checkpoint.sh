#!/bin/sh
# Checkpoints:
#   - a 2-rank job killed with SIGKILL after it wrote checkpoints resumes from
#     the last one and ends with the same bytes as an uninterrupted run to the
#     same step (bit-identical); so does a 3-rank job (the engine fuses
#     differently from run to run; the default reduction order does not care);
#   - a 2-rank checkpoint resumed on 1 and 4 ranks ends within the parity
#     bound of the 2-rank run;
#   - resuming with nothing but --resume takes the model and the training
#     configuration from the checkpoint, and ends with the bytes of the
#     uninterrupted run; an option that changes the run is noted;
#   - a missing, truncated, corrupted, shape-mismatched, other-dataset or
#     other-seed checkpoint, and one whose valid checksum covers sizes that
#     would overflow, is refused on every rank with a message, before any
#     training.
. "${top_srcdir:-.}/tests/train/common.sh"
bound=3.8e-6 # as parity.sh
# --epochs fixes the learning-rate schedule; 200 epochs keep the job going
# until it is killed.
common="--epochs 200 --batch 32 --lr 0.1 --prefetch on"

# kill_after_checkpoint N FILE: starts an N-rank job that checkpoints every 25
# steps and kills the whole job (its own session) with SIGKILL once FILE exists
# and a little more training has happened. $step gets the step of the
# checkpoint that survived.
kill_after_checkpoint() {
  n=$1 ck=$2
  rm -f "$ck"
  # shellcheck disable=SC2086 # split the options on purpose
  setsid "$mpiexec" -n "$n" "$train" $common --checkpoint "$ck" --checkpoint-every 25 \
    </dev/null >"$tmp/killed.out" 2>&1 &
  pid=$!
  i=0
  while [ ! -s "$ck" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
  [ -s "$ck" ] || { kill -KILL -"$pid"; cat "$tmp/killed.out"; fail "no checkpoint after 30 s"; }
  sleep 0.3
  kill -KILL -"$pid" 2>/dev/null || { cat "$tmp/killed.out"; fail "the job ended before it was killed"; }
  wait "$pid" 2>/dev/null
  "$train" --inspect "$ck" >"$tmp/inspect" 2>&1 || { cat "$tmp/inspect"; fail "inspect $ck"; }
  step=$(sed -n 's/^  step \([0-9]*\),.*/\1/p' "$tmp/inspect")
}

for n in 2 3; do
  ck=$tmp/ck$n.bin
  kill_after_checkpoint "$n" "$ck"
  [ -n "$step" ] && [ "$step" -ge 25 ] && [ $((step % 25)) = 0 ] || fail "checkpoint step '$step'"
  end=$((step + 40))
  # shellcheck disable=SC2086
  run "$n" $common --resume "$ck" --max-steps $end --save-weights "$tmp/resumed$n.bin" ||
    { show; fail "$n ranks: resume from step $step"; }
  grep -q "^resumed    from $ck at step $step" "$tmp/out" || { show; fail "no 'resumed' line"; }
  # shellcheck disable=SC2086
  run "$n" $common --max-steps $end --save-weights "$tmp/straight$n.bin" ||
    { show; fail "$n ranks: uninterrupted run"; }
  weights same "$tmp/straight$n.bin" "$tmp/resumed$n.bin" ||
    fail "$n ranks: killed at step >= $step and resumed differs from an uninterrupted run"
  pass "$n ranks: SIGKILL after the checkpoint of step $step, resumed to step $end: bit-identical"
done

# Another rank count: a 2-rank checkpoint of step 25 resumed on 1 and 4 ranks
# ends within the parity bound of the 2-rank run (the bound is for 40 steps
# early in training; docs/train.md shows how the difference grows later).
ck=$tmp/early.bin
# shellcheck disable=SC2086
run 2 $common --max-steps 25 --checkpoint "$ck" || { show; fail "2 ranks: checkpoint at step 25"; }
# shellcheck disable=SC2086
run 2 $common --max-steps 65 --save-weights "$tmp/straight65.bin" || { show; fail "2 ranks: 65 steps"; }
for n in 1 4; do
  # shellcheck disable=SC2086
  run "$n" $common --resume "$ck" --max-steps 65 --save-weights "$tmp/other$n.bin" ||
    { show; fail "$n ranks: resume of a 2-rank checkpoint"; }
  weights close "$tmp/straight65.bin" "$tmp/other$n.bin" "$bound" 0 ||
    fail "a 2-rank checkpoint resumed on $n ranks is outside the parity bound"
  pass "a 2-rank checkpoint of step 25 resumed on $n ranks to step 65: within $bound of the 2-rank run"
done

# The configuration comes back from the checkpoint.
cfg="--dataset synthetic --samples 300 --features 20 --classes 4 --hidden 24,12 --seed 7
  --batch 16 --epochs 9 --lr 0.2 --momentum 0.8 --weight-decay 0.001 --schedule step
  --step-epochs 3 --gamma 0.5 --warmup-epochs 2"
# shellcheck disable=SC2086
run 2 $cfg --max-steps 30 --checkpoint "$tmp/cfg.bin" || { show; fail "a configured run"; }
# shellcheck disable=SC2086
run 2 $cfg --max-steps 70 --save-weights "$tmp/cfg-straight.bin" || { show; fail "70 steps"; }
run 3 --resume "$tmp/cfg.bin" --max-steps 70 --save-weights "$tmp/cfg-resumed.bin" ||
  { show; fail "--resume alone"; }
grep -q '^model      MLP 20-24-12-4' "$tmp/out" && grep -q 'seed 7$' "$tmp/out" &&
  grep -q '^optimizer  SGD, lr 0.2 (step, 2 warm-up epochs), momentum 0.8, weight decay 0.001, 9 epochs' "$tmp/out" ||
  { show; fail "the configuration was not restored"; }
weights close "$tmp/cfg-straight.bin" "$tmp/cfg-resumed.bin" "$bound" 0 ||
  fail "resumed with --resume alone (on 3 ranks) is outside the parity bound"
pass "--resume alone restores the model, data and schedule (synthetic, step schedule, seed 7)"
run 2 --resume "$tmp/cfg.bin" --max-steps 31 --batch 32 --lr 0.1
grep -q 'note: resuming with --batch 32 (was 16) --lr 0.1 (was 0.2): the run will not match' "$tmp/err" ||
  { show; fail "no note for the changed options"; }
# shellcheck disable=SC2086
run 1 $cfg --epochs 1 --checkpoint "$tmp/cfg-end.bin" || { show; fail "one epoch"; }
run 1 --resume "$tmp/cfg-end.bin" || { show; fail "resuming a finished run"; }
grep -q 'ends epoch 1 of 1: nothing is left to train' "$tmp/err" || { show; fail "no note for a finished run"; }
pass "a changed option and a finished run are noted"

# Refusals: every rank exits with status 1 and the reason, and nothing trains.
refused() { # WHAT PATTERN ARGS...
  what=$1 pattern=$2; shift 2
  run 2 "$@"
  rc=$?
  [ $rc = 1 ] || { show; fail "$what: exit $rc, expected 1"; }
  grep -q "^rondo-train: rank 0: .*$pattern" "$tmp/err" || { show; fail "$what: rank 0 says nothing"; }
  grep -q "^rondo-train: rank 1: stopping: rank 0 reports: .*$pattern" "$tmp/err" ||
    { show; fail "$what: rank 1 says nothing"; }
  grep -q '^epoch' "$tmp/out" && { show; fail "$what: training started"; }
  pass "$what: refused on both ranks ($(sed -n 's/^rondo-train: rank 0: //p' "$tmp/err"))"
}
size=$(wc -c <"$ck")
cp "$ck" "$tmp/truncated.bin" && truncate -s $((size / 2)) "$tmp/truncated.bin"
cp "$ck" "$tmp/corrupt.bin"
printf '\377' | dd of="$tmp/corrupt.bin" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
printf 'not a checkpoint' >"$tmp/garbage.bin"
refused "missing file" "No such file" --resume "$tmp/nope.bin"
refused "truncated file" "truncated" --resume "$tmp/truncated.bin"
refused "corrupted byte" "corrupted: checksum" --resume "$tmp/corrupt.bin"
refused "not a checkpoint" "not a rondo-train checkpoint" --resume "$tmp/garbage.bin"
refused "other hidden layers" "its model is 64-256-128-10, this run's is 64-32-10" \
  --resume "$ck" --hidden 32
refused "other dataset" "it was trained on digits, not synthetic" \
  --resume "$ck" --dataset synthetic --features 64 --classes 10
refused "other seed" "it was trained with --seed 1, this run has --seed 2" --resume "$ck" --seed 2
# Headers with a valid checksum whose sizes would overflow or disagree.
for sizes in "2147483647 2147483648 0" "1048576 1048576 1048576"; do
  "$py" - "$tmp/crafted.bin" $sizes <<'PY' || fail "crafting a checkpoint"
import struct, sys, zlib
sizes = [int(x) for x in sys.argv[2:]]
head = 28 + 4 * len(sizes) + 120
body = b"RONDOCKP" + struct.pack("<IIQI", 1, head, head + 4, len(sizes))
body += b"".join(struct.pack("<I", x & 0xffffffff) for x in sizes) + bytes(120)
open(sys.argv[1], "wb").write(body + struct.pack("<I", zlib.crc32(body)))
PY
  refused "sizes $sizes" "inconsistent header" --resume "$tmp/crafted.bin"
done
"$train" --inspect "$tmp/corrupt.bin" >"$tmp/out" 2>&1 && fail "--inspect accepted a corrupted file"
grep -q "corrupted" "$tmp/out" || fail "--inspect did not say why"
pass "--inspect refuses a corrupted checkpoint with the reason"
