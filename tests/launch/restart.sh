#!/bin/sh
# Elastic restarts: torchrun --max_restarts restarts the whole job when one
# worker is killed (kill -9), rondo forms the world again, and training
# resumes from its last checkpoint with one command line for every attempt
# (--resume F with --checkpoint F starts fresh while F does not exist):
#   rondo-train at 2 ranks: the resumed run ends with the same weights,
#   byte for byte, as an uninterrupted run under torchrun.
# The torch backend starts through the same rendezvous (torchrun.sh runs
# DDP on it under torchrun); a restart adds nothing of rondo's to a Python
# job, so train_ddp.py's own checkpoint is left to its users (it cost this
# test 34 of its 44 s).
# Skipped (77) without torch for /usr/bin/python3.
. "${top_srcdir:-.}/tests/launch/common.sh"
needs_torch
needs_mpich
export PYTHONPATH=$rondo_pythonpath${PYTHONPATH:+:$PYTHONPATH}
train=$builddir/examples/train/rondo-train
[ -x "$train" ] || { echo "skipped: rondo-train is not built (--disable-train)"; exit 77; }

# kill_one_worker_after FILE LOG: waits until FILE exists and a little more,
# then kills one worker of the torchrun whose command line names FILE.
kill_one_worker_after() {
  wait_for "$1" . "$2"
  sleep "$3"
  # the agent itself, not the timeout wrapping it
  agent=$(pgrep -f "^$python -m torch.distributed.run .*$1" | head -n 1)
  victim=$(pgrep -P "$agent" | tail -n 1)
  [ -n "$victim" ] || { cat "$2"; fail "no worker to kill (the run ended first?)"; }
  kill -9 "$victim"
}

# rondo-train: 12 epochs of batch 16 (about 3 s at 2 ranks), a checkpoint
# every 100 steps.
args="--epochs 12 --batch 16"
port=$(free_port)
ck=$tmp/train.ck
torchrun --nproc_per_node 2 --master_port "$port" --max_restarts 1 --no_python "$train" $args \
  --checkpoint "$ck" --checkpoint-every 100 --resume "$ck" --save-weights "$tmp/resumed.w" \
  > "$tmp/r" 2>&1 &
job=$!
kill_one_worker_after "$ck" "$tmp/r" 0.3
wait "$job" || { s=$?; cat "$tmp/r"; fail "the restarted rondo-train job exited with $s"; }
grep -q "resumed    nothing: $ck does not exist yet, starting fresh" "$tmp/r" ||
  { cat "$tmp/r"; fail "the first attempt did not start fresh"; }
step=$(sed -n "s|^resumed    from $ck at step \([0-9]*\) .*|\1|p" "$tmp/r")
[ -n "$step" ] && [ "$step" -ge 100 ] || { cat "$tmp/r"; fail "the second attempt did not resume from $ck"; }
torchrun --nproc_per_node 2 --master_port "$(free_port)" --no_python "$train" $args \
  --save-weights "$tmp/straight.w" > "$tmp/s" 2>&1 || { cat "$tmp/s"; fail "uninterrupted rondo-train"; }
"$python" "$srcdir/tests/train/weights.py" same "$tmp/straight.w" "$tmp/resumed.w" ||
  fail "rondo-train killed and resumed from step $step ends with other weights than an uninterrupted run"
pass "rondo-train under torchrun --max_restarts 1: a worker killed, the job restarted and resumed at step $step, the same weights as an uninterrupted run"

