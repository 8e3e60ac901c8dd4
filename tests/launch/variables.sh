#!/bin/sh
# Jobs started by hand, as any launcher would start them: RANK, WORLD_SIZE
# and the rendezvous in each process's environment, no MPI launcher
# (docs/launching.md).
#   - 2 and 3 processes of the collectives test form one world through
#     rondo's rendezvous and pass every check, and 2 with Slurm's variables
#     (a task of srun without an MPI plugin);
#   - a rank killed mid-job ends the other at once (exit status 75), which
#     says why, whether the dead one was rank 1 or rank 0 (the server);
# Bad input at start-up gets a clear error on every rank, within the
# rendezvous timeout, never a hang ("When the job cannot form"); the
# program is rondo-info, which prints rondo_init's error and exits 1:
#   - a rank that never arrives: the others name it;
#   - ranks that disagree on WORLD_SIZE, or two processes with one RANK;
#   - RANK not below WORLD_SIZE, a malformed WORLD_SIZE, RANK without
#     WORLD_SIZE, no rendezvous address;
#   - the job's key: a rank without it or with another is refused, a key
#     file others may read, a key too short, both variables; a rank refuses
#     an impostor rank 0 (tests/launch/fake_rank0.py);
#   - a rendezvous port that is taken (by another program) or unreachable;
#   - an MPI launcher whose processes carry RANK/WORLD_SIZE that contradict
#     MPI's world: every rank fails; one of them alone (PyTorch's test
#     runner exports WORLD_SIZE alone under mpiexec) is MPI's: no error
#     where it agrees, and a LOCAL_RANK that contradicts MPI's node fails.
# On Open MPI: every rank says which launchers it needs, and the last case.
. "${top_srcdir:-.}/tests/launch/common.sh"
# The failures below wait out the rendezvous timeout; the jobs that form
# get a long one.
to=2
export RONDO_RENDEZVOUS_TIMEOUT_SEC=$to
export MASTER_ADDR=127.0.0.1
# (none of the caller's own launcher variables)
unset RONDO_RENDEZVOUS RONDO_RENDEZVOUS_KEY RONDO_RENDEZVOUS_KEY_FILE RANK WORLD_SIZE LOCAL_RANK \
  LOCAL_WORLD_SIZE SLURM_PROCID SLURM_STEP_NUM_TASKS SLURM_LOCALID SLURM_STEP_NUM_NODES
py=${RONDO_PYTHON:-/usr/bin/python3}

# expect OUT STATUS PATTERN WHAT: the process of OUT exited with a failure
# and said PATTERN (a grep -E expression).
expect() {
  grep -q -E "$2" "$1" || { echo "--- $1"; cat "$1"; fail "$3: no '$2'"; }
}
# expect_alone VARS...: one process of rondo-info under VARS fails (exit
# status 1) at once; its output in $tmp/a.
expect_alone() {
  env "$@" RONDO_RENDEZVOUS_TIMEOUT_SEC=$to timeout 60 "$info" > "$tmp/a" 2>&1
  s=$?
  [ "$s" = 1 ] || { cat "$tmp/a"; fail "$*: exit status $s, not 1"; }
}
# wait_all WHAT: every background process failed (none succeeded or hung).
wait_all() {
  for p in $pids; do
    wait "$p"
    s=$?
    [ "$s" = 1 ] || fail "$1: a rank exited with $s, not 1 (124: it hung)"
  done
  pids=
}

# On Open MPI: every rank says which launchers it needs, at once.
if [ "$mpi" = openmpi ]; then
  MASTER_PORT=$(free_port); export MASTER_PORT
  start_rank "$tmp/o0" 0 2 "$info"
  start_rank "$tmp/o1" 1 2 "$info"
  wait_all "Open MPI without its launcher"
  for r in 0 1; do
    expect "$tmp/o$r" "this rondo is built on Open MPI, which forms a job only under its own launchers: start it with mpiexec" \
      "rank $r on Open MPI"
  done
  pass "Open MPI, RANK/WORLD_SIZE and no MPI launcher: both ranks say to use mpiexec (or rondo on MPICH)"
fi

# An MPI launcher, and launcher variables that contradict its world: every
# rank fails, none waits.
RANK=0 WORLD_SIZE=5 timeout 120 "$srcdir/tests/mpiexec" -n 2 "$info" > "$tmp/mpi" 2>&1
s=$?
[ "$s" != 0 ] && [ "$s" != 124 ] || { cat "$tmp/mpi"; fail "mpiexec with WORLD_SIZE=5: exit status $s"; }
expect "$tmp/mpi" "RANK/WORLD_SIZE says rank 0 of 5, but MPI made this process rank 0 of 2" \
  "mpiexec -n 2 with WORLD_SIZE=5 (rank 0)"
expect "$tmp/mpi" "RANK/WORLD_SIZE says rank 0 of 5, but MPI made this process rank 1 of 2" \
  "mpiexec -n 2 with WORLD_SIZE=5 (rank 1)"
pass "mpiexec -n 2 under RANK=0 WORLD_SIZE=5: both ranks fail, each saying what it saw"

# Under an MPI launcher a variable alone is MPI's to confirm: WORLD_SIZE=2
# alone (PyTorch's test runner) and LOCAL_RANK=0 on a rank that is local
# rank 0 start; WORLD_SIZE=5 alone and a LOCAL_RANK of 1 on every rank fail
# on every rank, naming the variable and MPI's value.
for vars in "WORLD_SIZE=2"; do
  env $vars timeout 120 "$srcdir/tests/mpiexec" -n 2 "$builddir/tests/mpi/test_collectives" \
    > "$tmp/mpi" 2>&1 || { s=$?; cat "$tmp/mpi"; fail "mpiexec -n 2 under $vars alone: exit status $s"; }
  grep -q "^test_collectives (2 ranks): [0-9]* checks, 0 failed" "$tmp/mpi" ||
    { cat "$tmp/mpi"; fail "mpiexec -n 2 under $vars alone: no '0 failed'"; }
done
WORLD_SIZE=5 timeout 120 "$srcdir/tests/mpiexec" -n 2 "$info" > "$tmp/mpi" 2>&1
s=$?
[ "$s" != 0 ] && [ "$s" != 124 ] || { cat "$tmp/mpi"; fail "mpiexec with WORLD_SIZE=5 alone: exit status $s"; }
[ "$(grep -c -E "WORLD_SIZE=5, but MPI's world has 2 processes" "$tmp/mpi")" -ge 2 ] ||
  { cat "$tmp/mpi"; fail "mpiexec -n 2 with WORLD_SIZE=5 alone: not both ranks name it"; }
LOCAL_RANK=1 timeout 120 "$srcdir/tests/mpiexec" -n 2 "$info" > "$tmp/mpi" 2>&1
s=$?
[ "$s" != 0 ] && [ "$s" != 124 ] || { cat "$tmp/mpi"; fail "mpiexec with LOCAL_RANK=1: exit status $s"; }
expect "$tmp/mpi" "LOCAL_RANK=1, but this process is rank 0 of the 2 processes MPI puts on its node" \
  "mpiexec -n 2 with LOCAL_RANK=1 (rank 0)"
expect "$tmp/mpi" "rank 0's launcher variables contradict MPI's world" "mpiexec -n 2 with LOCAL_RANK=1 (rank 1)"
pass "mpiexec -n 2 under WORLD_SIZE=2 alone: the job runs; WORLD_SIZE=5 alone or LOCAL_RANK=1: every rank fails, naming it"

# The rest is rondo's rendezvous, which only MPICH's processes start through.
[ "$mpi" = mpich ] || exit 0

# Jobs that work: 2 and 3 processes, the address from MASTER_ADDR and
# MASTER_PORT, then from RONDO_RENDEZVOUS.
export RONDO_RENDEZVOUS_TIMEOUT_SEC=60
coll=$builddir/tests/mpi/test_collectives
for n in 2 3; do
  MASTER_PORT=$(free_port); export MASTER_PORT
  [ $n = 3 ] && { export RONDO_RENDEZVOUS=127.0.0.1:$(free_port); }
  r=0
  while [ $r -lt $n ]; do start_rank "$tmp/ok$r" $r $n "$coll"; r=$((r + 1)); done
  for p in $pids; do wait "$p" || { cat "$tmp"/ok*; fail "$n processes started by hand: a rank exited with $?"; }; done
  pids=
  unset RONDO_RENDEZVOUS
  grep -q "^test_collectives ($n ranks): [0-9]* checks, 0 failed" "$tmp/ok0" ||
    { cat "$tmp"/ok*; fail "$n processes started by hand: no '$n ranks: N checks, 0 failed'"; }
  pass "$n processes started with RANK and WORLD_SIZE: one world, $(sed -n "s/^test_collectives ($n ranks): \([0-9]* checks, 0 failed\)/\1/p" "$tmp/ok0")"
done

# A task of srun without an MPI plugin: Slurm's variables instead of RANK
# and WORLD_SIZE, the address from MASTER_ADDR and MASTER_PORT.
MASTER_PORT=$(free_port); export MASTER_PORT
for r in 0 1; do
  SLURM_PROCID=$r SLURM_STEP_NUM_TASKS=2 SLURM_LOCALID=$r timeout --kill-after=5 120 "$coll" \
    > "$tmp/sl$r" 2>&1 &
  pids="$pids $!"
done
for p in $pids; do wait "$p" || { cat "$tmp"/sl*; fail "srun-style tasks: a rank exited with $?"; }; done
pids=
grep -q "^test_collectives (2 ranks): [0-9]* checks, 0 failed" "$tmp/sl0" ||
  { cat "$tmp"/sl*; fail "srun-style tasks: no '2 ranks: N checks, 0 failed'"; }
pass "2 tasks with SLURM_PROCID and SLURM_STEP_NUM_TASKS: one world, $(sed -n "s/^test_collectives (2 ranks): \([0-9]* checks, 0 failed\)/\1/p" "$tmp/sl0")"

# A rank that dies mid-job (kill -9) does not leave the others waiting:
# they end at once with exit status 75, saying why, as mpiexec would end
# them. Rank 1 dies first (rank 0 names it), then rank 0 (rank 1 says the
# rendezvous closed).
bench=$builddir/tools/rondo-bench
for victim in 1 0; do
  MASTER_PORT=$(free_port); export MASTER_PORT
  start_rank "$tmp/k0" 0 2 "$bench" -b 8 -e 512 -f 2 -n 1000000 -a ring
  first=$!
  start_rank "$tmp/k1" 1 2 "$bench" -b 8 -e 512 -f 2 -n 1000000 -a ring
  second=$!
  wait_for "$tmp/k0" "^# topology"
  sleep 1 # in the timed loop (a million calls at each of 7 sizes, 8-512 B: seconds; small
  # enough for MPI to send eagerly: a rendezvous transfer from a dead process
  # makes UCX abort the survivor before rondo can end it)
  if [ $victim = 1 ]; then dead=$second alive=$first out=k0; else dead=$first alive=$second out=k1; fi
  # the process under timeout, not timeout itself
  kill -9 "$(pgrep -P "$dead")"
  wait "$dead"
  t0=$(date +%s)
  wait "$alive"
  s=$?
  t1=$(date +%s)
  pids=
  [ "$s" = 75 ] || { cat "$tmp/k0" "$tmp/k1"; fail "rank $victim killed: the other exited with $s, not 75 (124: it waited)"; }
  [ $((t1 - t0)) -lt 30 ] || fail "rank $victim killed: the other took $((t1 - t0)) s to end"
  if [ $victim = 1 ]; then
    expect "$tmp/$out" "rank 1 left the job before MPI_Finalize .*; MPI cannot go on without a process, so this rank ends too \(exit status 75\)" \
      "rank 0 after rank 1 died"
  else
    expect "$tmp/$out" "the rendezvous closed this rank's connection before MPI_Finalize: rank 0 left the job, or saw another rank leave" \
      "rank 1 after rank 0 died"
  fi
done
pass "a rank killed mid-job (rank 1, then rank 0): the other ends at once with exit status 75, saying why"

# The seven cases below each wait out the rendezvous timeout: they run at
# once, each in the background with a port of its own (at_once), and are
# checked in order (one after the other they took 15 s; ASan's and TSan's
# stages run this test). Their 16 processes start together, so their
# timeout is longer ($all_to s): a rank of the job must arrive within it.
all_to=4
key=$("$py" -c 'import secrets; print(secrets.token_hex(32))')

# A rank that never arrives: ranks 0 and 1 of 3 wait $all_to s, then both name rank 2.
missing_rank() {
  t0=$(date +%s)
  start_rank "$tmp/m0" 0 3 "$info"
  start_rank "$tmp/m1" 1 3 "$info"
  wait_all "a missing rank"
  t1=$(date +%s)
  for r in 0 1; do
    expect "$tmp/m$r" "the job could not form: rank 2 did not arrive within $all_to s \(RONDO_RENDEZVOUS_TIMEOUT_SEC\)" \
      "rank $r with rank 2 missing"
  done
  [ $((t1 - t0)) -lt 30 ] || fail "a missing rank took $((t1 - t0)) s to report"
  pass "ranks 0 and 1 of 3 without rank 2: both fail naming rank 2 after the $all_to s timeout"
}

# Two of four missing: named as a list.
two_missing() {
  start_rank "$tmp/l0" 0 4 "$info"
  start_rank "$tmp/l2" 2 4 "$info"
  wait_all "two missing ranks"
  for r in 0 2; do
    expect "$tmp/l$r" "ranks 1, 3 did not arrive" "rank $r with ranks 1 and 3 missing"
  done
  pass "ranks 0 and 2 of 4: both name ranks 1, 3"
}

# Ranks that disagree on the world's size: the one that differs is turned
# away at once (the job waits on for the real rank, so that a stranger's
# hello cannot end it); at the timeout rank 0 fails quoting it too.
sizes_differ() {
  start_rank "$tmp/s0" 0 2 "$info"
  sleep 0.5 # rank 0 first, so that the other's hello is the one that differs
  start_rank "$tmp/s1" 1 3 "$info"
  wait_all "WORLD_SIZE 2 and 3"
  for r in 0 1; do
    expect "$tmp/s$r" "rank 1 \(host [^)]*\) says the world has 3 processes, rank 0 says 2" \
      "rank $r with WORLD_SIZE 2 and 3"
  done
  expect "$tmp/s0" "rank 1 did not arrive within $all_to s \(RONDO_RENDEZVOUS_TIMEOUT_SEC\); rank 0 turned away: rank 1" \
    "rank 0 with WORLD_SIZE 2 and 3"
  pass "WORLD_SIZE=2 on rank 0 and 3 on rank 1: rank 1 turned away at once, rank 0 at the timeout, both quoting both"
}

# Two processes with one RANK: the second is turned away, the first and
# rank 0 wait for rank 2 and then say which hello was turned away.
rank_twice() {
  start_rank "$tmp/d0" 0 3 "$info"
  start_rank "$tmp/d1" 1 3 "$info"
  start_rank "$tmp/d2" 1 3 "$info"
  wait_all "RANK=1 twice"
  for f in d0 d1 d2; do
    expect "$tmp/$f" "two processes say they are rank 1" "$f with RANK=1 twice"
  done
  pass "RANK=1 twice: all three processes fail naming rank 1"
}

# The job's key (docs/launching.md#who-can-join): a rank without it, or with
# another, is refused and says so; the job's own ranks wait on and name
# the missing rank. A key too short, or in a file others may read, fails
# at once.
without_key() {
  RONDO_RENDEZVOUS_KEY=$key start_rank "$tmp/y0" 0 2 "$info"
  start_rank "$tmp/y1" 1 2 "$info"
  RONDO_RENDEZVOUS_KEY=${key}x start_rank "$tmp/y2" 1 2 "$info"
  wait_all "ranks without the job's key"
  expect "$tmp/y0" "rank 1 did not arrive within $all_to s" "rank 0 with the key"
  expect "$tmp/y1" "rank 1 could not reach the rendezvous at unix:/tmp/rondo-$(id -u)/rendezvous-$((MASTER_PORT + 1)) .*does rank 0 have a RONDO_RENDEZVOUS_KEY this rank lacks\?" \
    "rank 1 without a key"
  expect "$tmp/y2" "rank 1: the rendezvous at 127.0.0.1:$((MASTER_PORT + 1)) refused this process's key" \
    "rank 1 with another key"
  pass "a rank without the key (it looks for the Unix socket) and one with another (refused): each says so, rank 0 waits on and names rank 1"
}

# at_once CASE...: each case in the background, MASTER_PORT a port of its
# own (none next to another's: rondo listens on MASTER_PORT + 1); then
# every case's output in order, and a failure if any failed.
# A rendezvous port taken by another program that accepts and never
# answers (TCP: a job with a key): rank 0 says it cannot listen, rank 1
# reaches the other program and gives up.
taken_port() {
  port=$MASTER_PORT
  "$py" -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(8)
print("listening", flush=True)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)' "$port" > "$tmp/listener" 2>&1 &
  listener=$!
  wait_for "$tmp/listener" listening
  RONDO_RENDEZVOUS=127.0.0.1:$port RONDO_RENDEZVOUS_KEY=$key
  export RONDO_RENDEZVOUS RONDO_RENDEZVOUS_KEY
  start_rank "$tmp/p0" 0 2 "$info"
  start_rank "$tmp/p1" 1 2 "$info"
  wait_all "a taken port"
  kill "$listener" 2>/dev/null
  wait "$listener" 2>/dev/null
  expect "$tmp/p0" "rank 0 cannot listen on port $port for the rendezvous \(from RONDO_RENDEZVOUS\): Address already in use" \
    "rank 0 on a taken port"
  expect "$tmp/p1" "rank 1: the rendezvous at 127.0.0.1:$port gave no answer in time \(is another program listening on that port\?\)" \
    "rank 1 on a taken port"
  pass "a rendezvous port another program holds: rank 0 says it cannot listen, rank 1 that nobody answered"
}

# An unreachable rendezvous (nobody at the address), a Unix socket (one
# host, no key) and TCP (a key), both at once.
unreachable() {
  port=$MASTER_PORT
  start_rank "$tmp/u0" 1 2 env RONDO_RENDEZVOUS=127.0.0.1:$port "$info"
  start_rank "$tmp/u1" 1 2 env RONDO_RENDEZVOUS=127.0.0.1:$port RONDO_RENDEZVOUS_KEY=$key "$info"
  wait_all "an unreachable rendezvous"
  expect "$tmp/u0" "rank 1 could not reach the rendezvous at unix:/tmp/rondo-$(id -u)/rendezvous-$port \(No such file or directory\) within $all_to s" \
    "an unreachable rendezvous (one host, no key)"
  expect "$tmp/u1" "rank 1 could not reach the rendezvous at 127.0.0.1:$port \(Connection refused\) within $all_to s" \
    "an unreachable rendezvous (a key: TCP)"
  pass "an unreachable rendezvous, a Unix socket and TCP: named with its address, where it came from, and why"
}

at_once() {
  ports= running=
  for c in "$@"; do
    until p=$(free_port) && ! echo " $ports " | grep -q -E " ($((p - 1))|$p|$((p + 1))) "; do :; done
    ports="$ports $p"
    (MASTER_PORT=$p RONDO_RENDEZVOUS_TIMEOUT_SEC=$all_to && export MASTER_PORT RONDO_RENDEZVOUS_TIMEOUT_SEC &&
      "$c") > "$tmp/case.$c" 2>&1 &
    running="$running $!"
  done
  bad=
  for p in $running; do wait "$p" || bad=1; done # (all of them, before $tmp goes)
  for c in "$@"; do cat "$tmp/case.$c"; done
  [ -z "$bad" ] || exit 1
}
at_once missing_rank two_missing sizes_differ rank_twice without_key taken_port unreachable
export RONDO_RENDEZVOUS_TIMEOUT_SEC=$to # (the cases below that fail wait it out)

MASTER_PORT=$(free_port); export MASTER_PORT
RONDO_RENDEZVOUS_KEY=$key RONDO_RENDEZVOUS_TIMEOUT_SEC=60 start_rank "$tmp/z0" 0 2 "$info"
sleep 0.5
RONDO_RENDEZVOUS_KEY=${key}x start_rank "$tmp/z1" 1 2 "$info"
pids=${pids% *} # rank 0's alone: rank 1's is waited for here
wait "$!"
[ $? = 1 ] || fail "a rank with another key: exit status not 1"
expect "$tmp/z1" "refused this process's key" "rank 1 with another key"
umask 077
echo "$key" > "$tmp/key"
RONDO_RENDEZVOUS_KEY_FILE=$tmp/key start_rank "$tmp/z2" 1 2 "$info"
for p in $pids; do wait "$p" || { cat "$tmp"/z*; fail "the key in RONDO_RENDEZVOUS_KEY on rank 0 and in a file on rank 1: a rank exited with $?"; }; done
pids=
grep -q "the job's key proven" "$tmp/z0" || { cat "$tmp/z0"; fail "rank 0 does not say the key was proven"; }
pass "rank 0's key in RONDO_RENDEZVOUS_KEY, rank 1's in RONDO_RENDEZVOUS_KEY_FILE: the job forms; a rank with another key before it was refused"
chmod 644 "$tmp/key"
expect_alone RANK=1 WORLD_SIZE=2 RONDO_RENDEZVOUS_KEY_FILE="$tmp/key"
expect "$tmp/a" "RONDO_RENDEZVOUS_KEY_FILE='$tmp/key' must belong to this user and be readable by it alone \(chmod 600\): it is mode 644" \
  "a key file others may read"
expect_alone RANK=1 WORLD_SIZE=2 RONDO_RENDEZVOUS_KEY=short
expect "$tmp/a" "the rendezvous key \(RONDO_RENDEZVOUS_KEY\) has 5 bytes; it needs at least 16" "a short key"
expect_alone RANK=1 WORLD_SIZE=2 RONDO_RENDEZVOUS_KEY=$key RONDO_RENDEZVOUS_KEY_FILE="$tmp/key"
expect "$tmp/a" "both RONDO_RENDEZVOUS_KEY and RONDO_RENDEZVOUS_KEY_FILE are set" "two keys"
expect_alone RANK=1 WORLD_SIZE=2 RONDO_RENDEZVOUS_KEY=
expect "$tmp/a" "RONDO_RENDEZVOUS_KEY is set but empty" "an empty key"
: > "$tmp/key"
chmod 600 "$tmp/key"
expect_alone RANK=1 WORLD_SIZE=2 RONDO_RENDEZVOUS_KEY_FILE="$tmp/key"
expect "$tmp/a" "RONDO_RENDEZVOUS_KEY_FILE='$tmp/key' holds no key: its first line is empty" "an empty key file"
pass "a key file others may read, a key of 5 bytes, both variables, an empty key, an empty key file: each named at once"

# Variables that cannot be right, on one process: a message at once.
MASTER_PORT=$(free_port); export MASTER_PORT
expect_alone RANK=2 WORLD_SIZE=2
expect "$tmp/a" "RANK=2 is not below WORLD_SIZE=2" "RANK=2 of 2"
expect_alone RANK=0 WORLD_SIZE=two
expect "$tmp/a" "WORLD_SIZE='two' is not a whole number" "WORLD_SIZE=two"
expect_alone RANK=1
expect "$tmp/a" "RANK is set but WORLD_SIZE is not" "RANK alone"
expect_alone -u MASTER_ADDR RANK=0 WORLD_SIZE=2
expect "$tmp/a" "no rendezvous address is set: set MASTER_ADDR and MASTER_PORT" "no MASTER_ADDR"
expect_alone RANK=0 WORLD_SIZE=2 RONDO_RENDEZVOUS=nowhere
expect "$tmp/a" "RONDO_RENDEZVOUS='nowhere' is not HOST:PORT" "RONDO_RENDEZVOUS=nowhere"
expect_alone PMIX_RANK=1 SLURM_PROCID=1 SLURM_STEP_NUM_TASKS=2
expect "$tmp/a" "a PMIx launcher \(srun --mpi=pmix\) started it, and this rondo's MPI \(MPICH\) speaks PMI-1 and PMI-2, not PMIx: use srun --mpi=pmi2" \
  "srun --mpi=pmix's variables on MPICH"
pass "RANK not below WORLD_SIZE, a malformed WORLD_SIZE, RANK alone, no address, a bad RONDO_RENDEZVOUS, srun --mpi=pmix on MPICH: each named"

# An impostor on rank 0's address (tests/launch/fake_rank0.py): a rank
# with the key refuses one that asks for no key and one that cannot prove
# the key; a keyless rank on one host meets one that asks for a key; and a
# rank meets a web server. Each says so, and tells the impostor nothing.
fake() { # OUT MODE KIND WHERE -- VARS...: one rank 1 against one impostor
  out=$1 mode=$2 kind=$3 where=$4
  shift 5
  "$py" "$srcdir/tests/launch/fake_rank0.py" "$mode" "$kind" "$where" > "$tmp/fake" 2>&1 &
  impostor=$!
  wait_for "$tmp/fake" listening
  env "$@" RONDO_RENDEZVOUS_TIMEOUT_SEC=10 timeout 60 "$info" > "$out" 2>&1
  s=$?
  kill "$impostor" 2>/dev/null
  wait "$impostor" 2>/dev/null
  [ "$s" = 1 ] || { cat "$out"; fail "rank 1 against an impostor ($mode): exit status $s, not 1"; }
}
port=$(free_port)
fake "$tmp/f1" none tcp "$port" -- RANK=1 WORLD_SIZE=2 RONDO_RENDEZVOUS=127.0.0.1:$port RONDO_RENDEZVOUS_KEY=$key
expect "$tmp/f1" "rank 1: the rendezvous at 127.0.0.1:$port asks for no key, but this process has one" \
  "a keyed rank against an impostor that asks for no key"
port=$(free_port)
fake "$tmp/f2" badproof tcp "$port" -- RANK=1 WORLD_SIZE=2 RONDO_RENDEZVOUS=127.0.0.1:$port RONDO_RENDEZVOUS_KEY=$key
expect "$tmp/f2" "rank 1: the rendezvous at 127.0.0.1:$port could not prove it holds the job's key: it is not this job's rank 0" \
  "a keyed rank against an impostor that cannot prove the key"
port=$(free_port)
fake "$tmp/f3" keyed unix "/tmp/rondo-$(id -u)/rendezvous-$port" -- RANK=1 WORLD_SIZE=2 RONDO_RENDEZVOUS=127.0.0.1:$port
expect "$tmp/f3" "rank 1: the rendezvous at unix:/tmp/rondo-$(id -u)/rendezvous-$port asks for the job's key, and this process has none" \
  "a keyless rank against a rendezvous that asks for a key"
port=$(free_port)
fake "$tmp/f4" http tcp "$port" -- RANK=1 WORLD_SIZE=2 RONDO_RENDEZVOUS=127.0.0.1:$port RONDO_RENDEZVOUS_KEY=$key
expect "$tmp/f4" "rank 1: 127.0.0.1:$port is not a rondo rendezvous \(it answered 'HTTP/1.1 400 Bad Request" \
  "a rank against a web server"
pass "impostors on rank 0's address: one that asks for no key, one that cannot prove the key, one that asks a keyless rank for one, a web server: each refused, saying why"
