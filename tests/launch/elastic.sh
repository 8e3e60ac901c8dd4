#!/bin/sh
# Elastic world size: torchrun --nnodes 1:2 lets the job grow and shrink
# between attempts, and rondo-train resumes from its checkpoint on the new
# rank count (checkpoints restore on any rank count), with one command line
# for every attempt (--resume F with --checkpoint F).
#   - grow: one agent trains at 1 rank; a second agent joins; torchrun
#     restarts the workers, rondo forms a 2-rank world and resumes;
#   - shrink: one of the 2 agents is killed (agent and worker, kill -9); the
#     other's worker ends (rondo's watcher, docs/launching.md "When a rank
#     dies"), its agent restarts it alone, rondo forms a 1-rank world and
#     resumes;
# and each ends with the final test accuracy of an uninterrupted run within
# the run-to-run spread of a rank-count change (1 point; exact sums differ
# once the rank count changes, docs/train.md).
# Agents run on one host here, as separate "nodes" of one c10d rendezvous.
# The shrink case runs in the background beside the reference run and the
# grow case: most of its 28 s is waiting (torch 1.13's rendezvous drops a
# killed agent after 3 missed heartbeats of 5 s, fixed, and then waits
# its last call), so together they take the time of the longer one.
# Skipped (77) without torch for /usr/bin/python3.
. "${top_srcdir:-.}/tests/launch/common.sh"
needs_torch
needs_mpich
train=$builddir/examples/train/rondo-train
[ -x "$train" ] || { echo "skipped: rondo-train is not built (--disable-train)"; exit 77; }

args="--epochs 30 --batch 32 --lr 0.05"

# The worker every agent starts. With SLOW_ALONE set, a worker alone in its
# world sleeps 20 ms a step (3600 steps: a minute), so that the first attempt
# of the grow case cannot finish before the second agent joins (alone at
# full speed it trains in 2 s, less than torchrun takes to start on a busy
# machine; when it finished first, its agent exited with torch's c10d store
# and the second agent failed to reach the store). Sleeping changes no
# number: the sums are the same.
worker=$tmp/worker
cat > "$worker" <<EOF
#!/bin/sh
if [ -n "\$SLOW_ALONE" ] && [ "\$WORLD_SIZE" = 1 ]; then exec "$train" "\$@" --debug-slow 0:20; fi
exec "$train" "\$@"
EOF
chmod +x "$worker"

# agent OUT PORT CHECKPOINT [LAST_CALL]: one torchrun agent of the elastic
# job, in the background; its pid in $agent. LAST_CALL: seconds a
# rendezvous waits for more agents once it has the minimum (1).
agent() {
  torchrun --nnodes 1:2 --nproc_per_node 1 --rdzv_backend c10d --rdzv_endpoint "127.0.0.1:$2" \
    --rdzv_id "elastic$2" --rdzv_conf last_call_timeout="${4:-1}" --max_restarts 3 \
    --no_python "$worker" $args --checkpoint "$3" --checkpoint-every 100 --resume "$3" \
    > "$1" 2>&1 &
  agent=$!
}
kill_tree() { # PID: it and every process below it, with SIGKILL
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill -9 "$1" 2>/dev/null
}
accuracy() { sed -n 's/^final: .*test accuracy \([0-9.]*\)%.*/\1/p' "$@" | head -n 1; }
within_spread() { # A B: |A - B| <= 1 point
  awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= 1.0) }'
}

# shrink: 2 ranks, then 1 (in the background: its result is checked below)
ck_shrink=$tmp/shrink.ck
(
  # (a failure here ends this case's agents too: they are not the main
  # shell's children)
  trap 'for p in ${first:-} ${second:-}; do kill_tree "$p"; done' EXIT
  port=$(free_port)
  agent "$tmp/c" "$port" "$ck_shrink" 8 # both agents in the first round
  first=$agent
  # The first agent hosts torch's c10d store (the rendezvous dies with its
  # host: torch's c10d backend has one): it listens before the second starts,
  # and the second is the one killed.
  i=0
  until "$python" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' \
    "$port" 2>/dev/null || [ $i -ge 300 ]; do sleep 0.1; i=$((i + 1)); done
  agent "$tmp/d" "$port" "$ck_shrink" 8
  second=$agent
  wait_for "$ck_shrink" .
  i=0
  while [ "$(grep -h -c '^epoch ' "$tmp/c" "$tmp/d" | awk '{ n += $1 } END { print n }')" -lt 2 ] && [ $i -lt 1200 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  grep -q "^rondo-train .* on 2 ranks" "$tmp/c" "$tmp/d" || { cat "$tmp/c" "$tmp/d"; fail "the job did not start on 2 ranks"; }
  kill_tree "$second"
  wait "$second" 2>/dev/null
  wait "$first" || { s=$?; cat "$tmp/c" "$tmp/d"; fail "the surviving agent exited with $s"; }
  # (the surviving worker ended through rondo's watcher, exit 75, or through
  # MPI's transport if that noticed the dead peer first: either way its
  # agent restarted it)
  step=$(sed -n "s|^resumed    from $ck_shrink at step \([0-9]*\) .*|\1|p" "$tmp/c" | head -n 1)
  grep -q "^rondo-train .* on 1 ranks" "$tmp/c" && [ -n "$step" ] ||
    { cat "$tmp/c"; fail "the shrunk job did not resume on 1 rank"; }
) > "$tmp/shrink.log" 2>&1 &
shrinking=$!
# (a failure below ends the shrink case too)
trap '[ -z "$shrinking" ] || kill_tree "$shrinking"; rm -rf "$tmp"' EXIT

# (the reference under mpiexec: the same 2-rank world, without torchrun's start)
timeout --kill-after=10 300 "$srcdir/tests/mpiexec" -n 2 "$train" $args \
  > "$tmp/straight" 2>&1 || { cat "$tmp/straight"; fail "uninterrupted rondo-train at 2 ranks"; }
want=$(accuracy "$tmp/straight")

# grow: 1 rank, then 2
ck_grow=$tmp/grow.ck
port=$(free_port)
SLOW_ALONE=1 && export SLOW_ALONE # for this agent only
agent "$tmp/a" "$port" "$ck_grow"
unset SLOW_ALONE
a=$agent
wait_for "$tmp/a" "^epoch  *1/"
agent "$tmp/b" "$port" "$ck_grow"
b=$agent
wait "$a" || { s=$?; cat "$tmp/a" "$tmp/b"; fail "the first agent exited with $s"; }
wait "$b" || { s=$?; cat "$tmp/a" "$tmp/b"; fail "the second agent exited with $s"; }
grep -q "^rondo-train .* on 1 ranks" "$tmp/a" && grep -q "resumed    nothing: $ck_grow does not exist yet" "$tmp/a" ||
  { cat "$tmp/a"; fail "the first attempt did not start fresh on 1 rank"; }
step=$(sed -n "s|^resumed    from $ck_grow at step \([0-9]*\) .*|\1|p" "$tmp/a" "$tmp/b" | head -n 1)
grep -q "^rondo-train .* on 2 ranks" "$tmp/a" "$tmp/b" && [ -n "$step" ] ||
  { cat "$tmp/a" "$tmp/b"; fail "the grown job did not resume on 2 ranks"; }
got=$(accuracy "$tmp/a" "$tmp/b")
within_spread "$got" "$want" ||
  { cat "$tmp/a" "$tmp/b"; fail "grown from 1 to 2 ranks: test accuracy $got%, uninterrupted $want%"; }
pass "torchrun --nnodes 1:2: 1 rank, a second agent joined, resumed at step $step on 2 ranks; test accuracy $got% (uninterrupted at 2 ranks: $want%)"

wait "$shrinking" || { shrinking=; cat "$tmp/shrink.log"; exit 1; }
shrinking=
step=$(sed -n "s|^resumed    from $ck_shrink at step \([0-9]*\) .*|\1|p" "$tmp/c" | head -n 1)
got=$(accuracy "$tmp/c")
within_spread "$got" "$want" ||
  { cat "$tmp/c"; fail "shrunk from 2 ranks to 1: test accuracy $got%, uninterrupted $want%"; }
pass "torchrun --nnodes 1:2: 2 ranks, one agent and its worker killed, the other worker ended, resumed at step $step on 1 rank; test accuracy $got% (uninterrupted at 2 ranks: $want%)"
