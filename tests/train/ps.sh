#!/bin/sh
# --strategy parameter-server (docs/train.md):
#   - staleness 0 is synchronous SGD: W workers end with the bytes of mirrored
#     on W ranks, where both add the W gradients in rank order (1 and 2
#     workers, 3 on one node) and with 1 or 2 servers; the synthetic run ends
#     its epochs with a batch of 2, so some workers have no sample;
#   - asynchronous and bounded-staleness training converge on digits in 8
#     epochs (at least 95% test accuracy, accuracy.sh's bound for mirrored's
#     20; about 96.5% here), the asynchronous one also with a worker slowed
#     down (--debug-slow);
#   - the staleness bound holds: with worker 1 slowed down and staleness 1,
#     the workers' units (the final record's units_per_rank) differ by at
#     most (S + 1) per epoch, and add up to the epochs' units;
#   - a checkpoint written under parameter-server resumes under mirrored and
#     the reverse, with another server count, in the middle of an epoch, and
#     ends with the bytes of an uninterrupted run;
#   - a worker killed with SIGKILL ends the whole job with an error status,
#     without a hang;
#   - the header and the JSON record name the strategy and its settings.
# Bad input: tests/train/ps-input.sh. In the Open MPI stage (subset in
# common.sh): the layouts of 2 workers and 1 or 2 servers, the asynchronous
# run, the checkpoints, the killed worker and the header.
. "${top_srcdir:-.}/tests/train/common.sh"
synth="--dataset synthetic --samples 50 --features 12 --classes 3 --hidden 16,8 --batch 16 --lr 0.1"
synthetic="$synth --max-steps 40"
layouts="1:1 2:1 2:2 3:1"
subset && layouts="2:1 2:2"
for layout in $layouts; do
  w=${layout%:*} k=${layout#*:}
  # shellcheck disable=SC2086 # split the options on purpose
  run "$w" $synthetic --save-weights "$tmp/mirrored.bin" || { show; fail "mirrored on $w ranks"; }
  # shellcheck disable=SC2086
  run $((w + k)) $synthetic --strategy parameter-server --servers "$k" --staleness 0 \
    --save-weights "$tmp/ps.bin" || { show; fail "$w workers and $k servers"; }
  weights same "$tmp/mirrored.bin" "$tmp/ps.bin" ||
    fail "staleness 0, $w workers and $k servers: differs from mirrored on $w ranks"
  pass "staleness 0, $w workers and $k server(s): mirrored's bytes on $w ranks"
done

accuracy() { sed -n 's/^final: .*test accuracy \([0-9.]*\)%.*/\1/p' "$tmp/out"; }
for case in "3:async:" "4:2:--servers 2" "3:async:--debug-slow 1:1"; do
  subset && [ "$case" != "3:async:" ] && continue # (the asynchronous one alone)
  n=${case%%:*} rest=${case#*:} stale=${rest%%:*} more=${rest#*:}
  # shellcheck disable=SC2086
  run "$n" --strategy parameter-server --staleness "$stale" $more --epochs 8 -q ||
    { show; fail "digits, $case"; }
  acc=$(accuracy)
  awk "BEGIN { exit !($acc >= 95) }" || { show; fail "digits, $n ranks, staleness $stale $more: $acc% < 95%"; }
  pass "digits, $n ranks, staleness $stale $more: test accuracy $acc%"
done

# The staleness bound: 2 epochs of 60 global batches, split between 2 workers.
if ! subset; then
  run 3 --strategy parameter-server --staleness 1 --debug-slow 1:20 --epochs 2 -q \
    --json "$tmp/stale.json" || { show; fail "staleness 1 with a straggler"; }
  units=$(sed -n 's/.*"units_per_rank":\[\([0-9]*\),\([0-9]*\),0\].*/\1 \2/p' "$tmp/stale.json")
  set -- $units
  [ $# = 2 ] && [ $(($1 + $2)) = 240 ] && [ $(($1 - $2)) -le 4 ] && [ $(($2 - $1)) -le 4 ] ||
    { cat "$tmp/stale.json"; fail "staleness 1: units per worker '$units', not 240 within 4"; }
  pass "staleness 1 with worker 1 slowed: units per worker $1 and $2, within (1 + 1) x 2 epochs"
fi

# Checkpoints across strategies and layouts (staleness 0 is exact), written
# and resumed in the middle of an epoch (10 steps of 4 an epoch: 2 into the
# third).
short="$synth --epochs 6"
# shellcheck disable=SC2086
run 2 $short --save-weights "$tmp/straight.bin" || { show; fail "uninterrupted"; }
# shellcheck disable=SC2086
run 3 $short --strategy parameter-server --staleness 0 --max-steps 10 --checkpoint "$tmp/ck.bin" ||
  { show; fail "parameter-server, 10 steps"; }
"$train" --inspect "$tmp/ck.bin" | grep -q "step 10, epoch 3, 32 samples into it" ||
  { "$train" --inspect "$tmp/ck.bin"; fail "the checkpoint is not at step 10, sample 32"; }
# shellcheck disable=SC2086
run 2 $short --resume "$tmp/ck.bin" --save-weights "$tmp/resumed.bin" || { show; fail "resume mirrored"; }
weights same "$tmp/straight.bin" "$tmp/resumed.bin" ||
  fail "parameter-server's checkpoint resumed under mirrored differs from an uninterrupted run"
pass "parameter-server's checkpoint resumed under mirrored: the bytes of an uninterrupted run"
# shellcheck disable=SC2086
run 2 $short --max-steps 10 --checkpoint "$tmp/ck.bin" || { show; fail "mirrored, 10 steps"; }
# shellcheck disable=SC2086
run 4 $short --strategy parameter-server --servers 2 --staleness 0 --resume "$tmp/ck.bin" \
  --save-weights "$tmp/resumed.bin" || { show; fail "resume parameter-server"; }
weights same "$tmp/straight.bin" "$tmp/resumed.bin" ||
  fail "mirrored's checkpoint resumed on 2 servers differs from an uninterrupted run"
pass "mirrored's checkpoint resumed on 2 workers and 2 servers: the bytes of an uninterrupted run"

# A killed worker ends the job. The launcher's process group is killed too
# if anything is left after 60 s.
setsid "$mpiexec" -n 3 "$train" --strategy parameter-server --epochs 1000 -q \
  </dev/null >"$tmp/killed.out" 2>&1 &
job=$!
victim=
i=0
while [ -z "$victim" ] && [ $i -lt 300 ]; do
  sleep 0.1
  i=$((i + 1))
  for pid in $(pgrep -f "rondo-train --strategy parameter-server --epochs 1000"); do
    env=$(tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null)
    case $env in *PMI_RANK=1*|*OMPI_COMM_WORLD_RANK=1*) victim=$pid ;; esac
  done
done
[ -n "$victim" ] || { kill -KILL -"$job"; cat "$tmp/killed.out"; fail "worker 1 not found"; }
sleep 1
kill -KILL "$victim"
i=0
while kill -0 "$job" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 "$job" 2>/dev/null; then
  kill -KILL -"$job"
  cat "$tmp/killed.out"
  fail "the job still runs 60 s after worker 1 was killed"
fi
wait "$job"
rc=$?
[ $rc != 0 ] || { cat "$tmp/killed.out"; fail "the job exited 0 after worker 1 was killed"; }
pass "worker 1 killed: the job ended with status $rc within $((i / 10)) s"

# The header and the JSON record.
run 3 --strategy parameter-server --staleness 2 --max-steps 3 --json "$tmp/ps.json" ||
  { show; fail "header run"; }
grep -q "^strategy   parameter-server: 1 server (rank 2) holds the variables and momentum" "$tmp/out" &&
  grep -q "staleness 2: each push updates on arrival" "$tmp/out" ||
  { show; fail "the header does not describe the strategy"; }
grep -q '"strategy":"parameter-server","servers":1,"staleness":2' "$tmp/ps.json" ||
  { cat "$tmp/ps.json"; fail "the JSON record does not name the strategy"; }
pass "the header and the JSON record name the strategy, its servers and staleness"
