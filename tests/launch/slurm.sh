#!/bin/sh
# rondo under a real Slurm: a private one-node cluster (munged, slurmctld,
# slurmd) started in the test's scratch directory, on free ports, with its
# own munge key; nothing system-wide is read or touched. Then, each checked
# on its output:
#   a. srun --mpi=pmi2 -n 2 test_collectives: MPICH's PMI client forms the
#      world; every check passes;
#   b. Python under srun --mpi=pmi2: rondo's NumPy all-reduce gives the
#      closed-form sum on both ranks, rondo.size() is 2 and rondo.rank()
#      is SLURM_PROCID;
#   c. srun -n 2 without an MPI plugin: rondo's rendezvous forms the world
#      (MASTER_ADDR, MASTER_PORT, RONDO_RENDEZVOUS_KEY from srun's
#      --export=ALL); test_collectives passes and rondo-info says so;
#   srun --mpi=pmix (where Slurm has PMIx): MPICH speaks no PMIx, so every
#      rank fails at once, saying so;
#   d. sbatch: a batch script's srun --mpi=pmi2 runs rondo-train --epochs 2;
#      the job ends COMPLETED with ExitCode 0:0, epoch lines and a final
#      accuracy in its output;
#   e. a rank killed with SIGKILL mid-job, under srun --mpi=pmi2 and under
#      plain srun with the rendezvous: srun returns within 60 s with a
#      failure, saying why, and no rank is left; scancel of a running step
#      (each way) ends it, and every rank, the same way.
# Skips (77) only where Slurm or munge is not installed, or this machine
# does not let their daemons start (not root, a forbidden operation). On
# rondo built on Open MPI, only: each rank of a plain srun says to use Open
# MPI's launchers, and srun --mpi=pmix forms the world where Slurm has
# PMIx (the rest needs MPICH's PMI client).
# Every daemon, step and rank is ended on exit, also on failure; the last
# check is that none is left. About 20 s.
PATH=$PATH:/usr/sbin:/sbin
for c in srun sbatch scontrol sinfo squeue scancel slurmctld slurmd munged; do
  command -v "$c" > /dev/null 2>&1 ||
    { echo "skipped: no $c (Debian: apt-get install slurm-wlm munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "skipped: a private slurmd runs as root, and this is uid $(id -u)"; exit 77; }
. "${top_srcdir:-.}/tests/launch/common.sh"

# None of the caller's launcher variables: a make check inside a Slurm job
# would otherwise ask this test's controller for that job's steps.
for v in $(env | sed -n 's/^\(\(SLURM\|SBATCH\|SRUN\|SALLOC\|PMI\|PMIX\|OMPI\)_[A-Za-z0-9_]*\)=.*/\1/p'); do
  unset "$v"
done
unset RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT RONDO_RENDEZVOUS RONDO_RENDEZVOUS_KEY \
  RONDO_RENDEZVOUS_KEY_FILE
export RONDO_RENDEZVOUS_TIMEOUT_SEC=30
py=/usr/bin/python3
bld=$(cd "$builddir" && pwd)
coll=$bld/tests/mpi/test_collectives
bench=$bld/tools/rondo-bench
train=$bld/examples/train/rondo-train
abs_info=$bld/tools/rondo-info

# Every process of this test's Slurm carries RONDO_SLURM_TEST=$tmp: the
# daemons, slurmstepd (slurmd's environment), srun, sbatch and every task
# (srun's). ours lists them (not this shell, whose environment predates the
# variable, nor grep, run without it).
RONDO_SLURM_TEST=$tmp
export RONDO_SLURM_TEST
ours() {
  env -u RONDO_SLURM_TEST sh -c 'grep -l -z -x "RONDO_SLURM_TEST=$1" /proc/[0-9]*/environ 2>/dev/null |
    sed "s,^/proc/\([0-9]*\)/environ\$,\1,"' - "$tmp"
}
# ours_named NAME: those of ours whose command is NAME (or libtool's
# lt-NAME).
ours_named() {
  for p in $(ours); do
    is "$p" "$1" && echo "$p"
  done
}
# is PID NAME: process PID runs NAME (or lt-NAME).
is() {
  case $(cat "/proc/$1/comm" 2>/dev/null) in "$2"|"lt-$2") return 0 ;; esac
  return 1
}

# Stops everything this test started: the steps and jobs (scancel), slurmd,
# slurmctld, any process left of ours, then munged. Run on exit, and before
# the last check.
munged_pid='' ctld_pid='' slurmd_pid=''
stop_slurm() {
  if [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2>/dev/null; then
    # shellcheck disable=SC2046 # one job id a word
    timeout 10 scancel --quiet --full $(timeout 10 squeue -h -o %i 2>/dev/null) 2>/dev/null
    i=0
    while [ -n "$(timeout 10 squeue -h -o %i 2>/dev/null)" ] && [ $i -lt 100 ]; do
      sleep 0.1
      i=$((i + 1))
    done
  fi
  for p in $slurmd_pid $ctld_pid; do
    kill "$p" 2>/dev/null
  done
  for p in $slurmd_pid $ctld_pid; do
    i=0
    while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  slurmd_pid='' ctld_pid=''
  left=$(ours)
  # shellcheck disable=SC2086 # one pid a word
  [ -n "$left" ] && kill -9 $left 2>/dev/null
  if [ -n "$munged_pid" ]; then
    kill "$munged_pid" 2>/dev/null
    i=0
    while kill -0 "$munged_pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$munged_pid" 2>/dev/null
    wait "$munged_pid" 2>/dev/null
    munged_pid=''
  fi
}
trap 'stop_slurm; rm -rf "$tmp"' EXIT
# all_stopped: the last check; nothing is left: every daemon, step and rank
# ends.
all_stopped() {
  stop_slurm
  left=$(ours)
  [ -z "$left" ] || { ps -o pid,ppid,args -p "$(echo "$left" | paste -s -d ,)"; fail "processes of this test's Slurm left: $left"; }
  pass "munged, slurmctld, slurmd stopped; no process of this test's Slurm left"
}
trap 'exit 1' HUP INT TERM

# cannot_start NAME LOG: NAME (a daemon) did not come up. Skips where the
# machine forbids it, fails otherwise; shows LOG either way.
cannot_start() {
  echo "--- $2"
  tail -n 30 "$2"
  if grep -q -E "Operation not permitted|Permission denied|Read-only file system" "$2"; then
    echo "skipped: $1 cannot start here ($(grep -m 1 -E "Operation not permitted|Permission denied|Read-only file system" "$2"))"
    exit 77
  fi
  fail "$1 did not start"
}

# munged with a key of its own. Its socket's directory, and every one above,
# must be searchable by all.
chmod 711 "$tmp"
mkdir -m 755 "$tmp/munge" "$tmp/state" "$tmp/spool"
dd if=/dev/urandom of="$tmp/munge/key" bs=1024 count=1 2> /dev/null && chmod 600 "$tmp/munge/key"
munged -F --socket="$tmp/munge/socket" --key-file="$tmp/munge/key" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munge/munged.log" \
  --seed-file="$tmp/munge/seed" > "$tmp/munge/munged.out" 2>&1 &
munged_pid=$!
i=0
while [ ! -S "$tmp/munge/socket" ] && kill -0 "$munged_pid" 2>/dev/null && [ $i -lt 100 ]; do
  sleep 0.1
  i=$((i + 1))
done
[ -S "$tmp/munge/socket" ] || { cannot_start munged "$tmp/munge/munged.out"; }

# slurm.conf: one node, this host, every file in $tmp.
host=$(hostname -s)
# shellcheck disable=SC2046 # two ports
set -- $("$py" -c '
import socket
s = [socket.socket() for _ in range(2)]
for a in s: a.bind(("", 0))
print(*[a.getsockname()[1] for a in s])')
conf=$tmp/slurm.conf
cat > "$conf" <<EOF
ClusterName=rondotest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=5
MailProg=/bin/true
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=rondo Nodes=$host Default=YES MaxTime=10 State=UP
EOF
SLURM_CONF=$conf
export SLURM_CONF
slurmctld -D -f "$conf" > "$tmp/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -f "$conf" > "$tmp/slurmd.out" 2>&1 &
slurmd_pid=$!
i=0
while [ "$(timeout 10 sinfo -h -N -o %t 2>/dev/null)" != idle ] && [ $i -lt 300 ]; do
  kill -0 "$ctld_pid" 2>/dev/null || { cat "$tmp/slurmctld.log"; cannot_start slurmctld "$tmp/slurmctld.out"; }
  kill -0 "$slurmd_pid" 2>/dev/null || { cat "$tmp/slurmd.log"; cannot_start slurmd "$tmp/slurmd.out"; }
  sleep 0.1
  i=$((i + 1))
done
[ "$(sinfo -h -N -o %t 2>&1)" = idle ] ||
  { sinfo -N 2>&1; tail -n 20 "$tmp/slurmctld.log" "$tmp/slurmd.log"; fail "node $host is not idle after 30 s"; }
pass "a private Slurm $(slurmctld -V | sed 's/^slurm-wlm //; s/^slurm //') (munged, slurmctld, slurmd) on $host: partition rondo, $(nproc) CPUs, idle"

# srun_ok WHAT OUT ARGS...: srun ARGS, bounded; fails unless it exits 0.
srun_ok() {
  what=$1 out=$2
  shift 2
  timeout --kill-after=10 120 srun "$@" < /dev/null > "$out" 2>&1
  s=$?
  [ "$s" = 0 ] || { cat "$out"; fail "$what: srun exited with $s (124: it hung)"; }
}
# idle WHAT: no job or step is left, within 30 s.
idle() {
  i=0
  while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  [ -z "$(squeue -h -o %i 2>&1)" ] || { squeue 2>&1; fail "$1: jobs still in the queue after 30 s"; }
}
collectives_passed() { sed -n 's/^test_collectives (2 ranks): \([0-9]* checks, 0 failed\)$/\1/p' "$1"; }

# On Open MPI: each task of a plain srun says which launchers it needs;
# srun --mpi=pmix (where Slurm has PMIx: Debian's libpmix2) forms the world.
if [ "$mpi" = openmpi ]; then
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) timeout --kill-after=10 120 \
    srun --mpi=none -n 2 "$abs_info" < /dev/null > "$tmp/ompi" 2>&1
  s=$?
  [ "$s" != 0 ] && [ "$s" != 124 ] || { cat "$tmp/ompi"; fail "Open MPI under plain srun: exit status $s"; }
  for r in 0 1; do
    grep -q "^\[rondo $r\] ERROR .*this rondo is built on Open MPI, which forms a job only under its own launchers: start it with mpiexec (or srun --mpi=pmix)" "$tmp/ompi" ||
      { cat "$tmp/ompi"; fail "Open MPI under plain srun: rank $r does not say to use Open MPI's launchers"; }
  done
  pass "Open MPI under srun without an MPI plugin: both ranks say to start it with mpiexec (or srun --mpi=pmix)"
  if srun --mpi=list 2>&1 | grep -q -x '[[:space:]]*pmix'; then
    srun_ok "srun --mpi=pmix rondo-info" "$tmp/pmix" --mpi=pmix -n 2 "$abs_info"
    grep -A1 '^launcher' "$tmp/pmix" | grep -q "an MPI launcher (PMIX_RANK is set)" &&
      grep -q "^  2 ranks on 1 node" "$tmp/pmix" ||
      { cat "$tmp/pmix"; fail "Open MPI under srun --mpi=pmix: not 2 ranks formed by the MPI launcher"; }
    pass "Open MPI under srun --mpi=pmix -n 2: rondo-info sees the MPI launcher (PMIX_RANK) and 2 ranks on 1 node"
  else
    echo "skipped: srun --mpi=pmix (this Slurm has no PMIx plugin: Debian's libpmix2)"
  fi
  echo "skipped: the rest needs rondo built on MPICH (srun --mpi=pmi2, rondo's rendezvous); this one is on Open MPI"
  all_stopped
  exit 0
fi

for f in "$coll" "$bench"; do
  [ -x "$f" ] || { echo "FAIL: $f is not built (make check builds it)"; exit 99; }
done

# a. MPICH's PMI client under srun --mpi=pmi2.
srun_ok "srun --mpi=pmi2 test_collectives" "$tmp/a" --mpi=pmi2 -n 2 "$coll"
n=$(collectives_passed "$tmp/a")
[ -n "$n" ] || { cat "$tmp/a"; fail "srun --mpi=pmi2 -n 2 test_collectives: no 'test_collectives (2 ranks): N checks, 0 failed'"; }
pass "srun --mpi=pmi2 -n 2 test_collectives: $n"

# b. Python under srun --mpi=pmi2.
if why=$(rondo_python_env numpy); then
  rondo_python_env numpy
  # (the sources' folder absolute: a task's directory is srun's, a batch
  # job's is its own)
  PYTHONPATH=${rondo_pythonpath%%:*}:$(cd "$srcdir" && pwd)/bindings/python${PYTHONPATH:+:$PYTHONPATH}
  export PYTHONPATH
  srun_ok "srun --mpi=pmi2 python3" "$tmp/b" --mpi=pmi2 -n 2 "$python" -c '
import os, sys
import numpy as np
import rondo

rondo.init()
r, n = rondo.rank(), rondo.size()
assert n == 2, "size %d, not 2" % n
assert r == int(os.environ["SLURM_PROCID"]), "rank %d, SLURM_PROCID %s" % (r, os.environ["SLURM_PROCID"])
x = np.arange(1000, dtype=np.float64) * (r + 1)
s = rondo.allreduce(x)
want = np.arange(1000, dtype=np.float64) * (n * (n + 1) // 2)
assert np.array_equal(s, want), "rank %d: %r" % (r, s[:5])
y = np.full(7, r + 1, dtype=np.int32)
rondo.allreduce_(y, op="max")
assert (y == n).all(), y
sys.stdout.write("rank %d of %d (SLURM_PROCID %s): sum of 1000 float64 right, max right; %s\n"
                 % (r, n, os.environ["SLURM_PROCID"], rondo.launcher()))
rondo.shutdown()'
  for r in 0 1; do
    grep -q "^rank $r of 2 (SLURM_PROCID $r): sum of 1000 float64 right, max right; an MPI launcher (PMI_FD is set)" "$tmp/b" ||
      { cat "$tmp/b"; fail "Python under srun --mpi=pmi2: no line from rank $r, or not through the MPI launcher"; }
  done
  pass "Python under srun --mpi=pmi2 -n 2: rondo.allreduce's sum and max right on both ranks, rondo.size() 2, rondo.rank() = SLURM_PROCID"
else
  echo "$why (Python under srun)"
fi

# c. srun without an MPI plugin: rondo's rendezvous, keyed.
rendezvous_env() {
  MASTER_ADDR=127.0.0.1
  MASTER_PORT=$(free_port)
  RONDO_RENDEZVOUS_KEY=$("$py" -c 'import secrets; print(secrets.token_hex(32))')
  export MASTER_ADDR MASTER_PORT RONDO_RENDEZVOUS_KEY
}
rendezvous_env
srun_ok "srun --mpi=none test_collectives" "$tmp/c" --mpi=none --export=ALL -n 2 "$coll"
n=$(collectives_passed "$tmp/c")
[ -n "$n" ] || { cat "$tmp/c"; fail "srun --mpi=none -n 2 test_collectives: no 'test_collectives (2 ranks): N checks, 0 failed'"; }
rendezvous_env
srun_ok "srun --mpi=none rondo-info" "$tmp/c.info" --mpi=none --export=ALL -n 2 "$abs_info"
launcher=$(sed -n '/^launcher/{n;s/^ *//;p;}' "$tmp/c.info")
case $launcher in
  "SLURM_PROCID/SLURM_STEP_NUM_TASKS, through rondo's rendezvous at 127.0.0.1:$((MASTER_PORT + 1)) (from MASTER_ADDR and MASTER_PORT + 1"*) ;;
  *) cat "$tmp/c.info"; fail "rondo-info under srun --mpi=none: its launcher line is not Slurm's variables and the rendezvous" ;;
esac
case $launcher in
  *"the job's key proven"*) ;;
  *) cat "$tmp/c.info"; fail "rondo-info under srun --mpi=none with RONDO_RENDEZVOUS_KEY: the launcher line does not say the key was proven" ;;
esac
grep -q "^  2 ranks on 1 node" "$tmp/c.info" || { cat "$tmp/c.info"; fail "rondo-info under srun --mpi=none: not 2 ranks on 1 node"; }
pass "srun --mpi=none -n 2 (MASTER_ADDR, MASTER_PORT, RONDO_RENDEZVOUS_KEY exported): one world through rondo's rendezvous, the job's key proven; test_collectives $n"
unset MASTER_ADDR MASTER_PORT RONDO_RENDEZVOUS_KEY

# srun --mpi=pmix, where Slurm has PMIx: MPICH speaks no PMIx, so each
# process starts as MPI's singleton; every rank fails at once, saying so,
# none waits.
if srun --mpi=list 2>&1 | grep -q -x '[[:space:]]*pmix'; then
  timeout --kill-after=10 60 srun --mpi=pmix -n 2 "$abs_info" < /dev/null > "$tmp/pmix" 2>&1
  s=$?
  [ "$s" != 0 ] && [ "$s" != 124 ] || { cat "$tmp/pmix"; fail "srun --mpi=pmix rondo-info: exit status $s (124: it hung)"; }
  for r in 0 1; do
    grep -q "^rondo-info: RONDO_ERR_LAUNCH: SLURM_PROCID/SLURM_STEP_NUM_TASKS says rank $r of 2, but MPI made this process rank 0 of 1" "$tmp/pmix" ||
      { cat "$tmp/pmix"; fail "srun --mpi=pmix rondo-info: rank $r does not say that MPI made it a singleton"; }
  done
  pass "srun --mpi=pmix -n 2 rondo-info (MPICH): both ranks fail at once (exit status $s), saying '$(sed -n 's/^rondo-info: RONDO_ERR_LAUNCH: .*rank 0 of 1: //p' "$tmp/pmix" | head -n 1)'"
else
  echo "skipped: srun --mpi=pmix (this Slurm has no PMIx plugin: Debian's libpmix2)"
fi

# d. sbatch: rondo-train in a batch job.
if [ -x "$train" ]; then
  cat > "$tmp/train.sbatch" <<EOF
#!/bin/sh
#SBATCH -n 2
#SBATCH --time=5
srun --mpi=pmi2 -n 2 "$train" --epochs 2
EOF
  job=$(sbatch --parsable -J rondo-train -o "$tmp/train.out" -D "$tmp" "$tmp/train.sbatch" 2>"$tmp/sbatch.err") ||
    { cat "$tmp/sbatch.err"; fail "sbatch refused the job"; }
  job=${job%%;*}
  i=0
  while :; do
    state=$(scontrol show job "$job" 2>&1 | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case $state in PENDING|CONFIGURING|RUNNING|COMPLETING|'') ;; *) break ;; esac
    [ $i -lt 1200 ] || { scontrol show job "$job"; cat "$tmp/train.out"; fail "sbatch job $job: still $state after 120 s"; }
    sleep 0.1
    i=$((i + 1))
  done
  code=$(scontrol show job "$job" | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p')
  [ "$state" = COMPLETED ] && [ "$code" = 0:0 ] ||
    { scontrol show job "$job"; cat "$tmp/train.out"; fail "sbatch job $job: $state, ExitCode $code (not COMPLETED, 0:0)"; }
  epochs=$(grep -c '^epoch ' "$tmp/train.out")
  acc=$(sed -n 's/^final: .*test accuracy \([0-9.]*\)%.*/\1/p' "$tmp/train.out")
  [ "$epochs" = 2 ] && [ -n "$acc" ] ||
    { cat "$tmp/train.out"; fail "sbatch job $job: $epochs epoch lines (not 2), final accuracy '$acc'"; }
  pass "sbatch (srun --mpi=pmi2 -n 2 rondo-train --epochs 2): job $job COMPLETED, ExitCode 0:0, 2 epoch lines, test accuracy $acc%"
else
  echo "skipped part d: $train is not built (configured without rondo-train)"
fi
idle "the sbatch job"

# e. A rank killed with SIGKILL, and a step cancelled: srun ends, with a
# failure that says why, and no rank is left.
# start_bench OUT ARGS...: a 2-rank rondo-bench under srun ARGS in the
# background (srun_pid), long enough to be killed in its timed loop (a
# million calls at each of 7 sizes, 8-512 B: small enough for MPI to send
# eagerly, see variables.sh); returns once rank 0 prints its topology.
start_bench() {
  out=$1
  shift
  timeout --kill-after=5 60 srun "$@" -n 2 "$bench" -b 8 -e 512 -f 2 -n 1000000 -a ring \
    < /dev/null > "$out" 2>&1 &
  srun_pid=$!
  i=0
  while ! grep -q "^# topology" "$out" 2>/dev/null && kill -0 "$srun_pid" 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  grep -q "^# topology" "$out" || { cat "$out"; fail "srun $*: rondo-bench did not start (no '# topology' line)"; }
  sleep 1
}
# rank_pid R: the process of rank R of the running step, a child of slurmstepd.
rank_pid() {
  scontrol listpids 2> /dev/null | awk -v g="$1" 'NR > 1 && $5 == g { print $1 }' |
    while read -r p; do
      is "$p" rondo-bench && is "$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null)" slurmstepd &&
        echo "$p"
    done
}
# ended WHAT OUT: srun (srun_pid) returns within its 60 s with a failure
# (srun's own status: 128 + the signal that ended a task, or 1; not
# timeout's), no rondo-bench of ours is left, the queue empties.
ended() {
  wait "$srun_pid"
  s=$?
  t=$(( $(date +%s) - t0 ))
  [ "$s" != 0 ] && [ "$s" != 124 ] && [ $t -lt 55 ] ||
    { cat "$2"; fail "$1: srun exited with $s after $t s (0: success; 124 or 137 after 60 s: it did not end)"; }
  left=$(ours_named rondo-bench)
  [ -z "$left" ] || { cat "$2"; ps -o pid,ppid,stat,etime,args -p "$(echo "$left" | paste -s -d ,)"; fail "$1: rondo-bench still running ($left)"; }
  idle "$1"
}

for how in pmi2 rendezvous; do
  if [ $how = pmi2 ]; then
    # MPI's processes do not notice a dead peer: without --kill-on-bad-exit
    # (or KillOnBadExit=1) rank 0 waits in the all-reduce until the time limit.
    args="--mpi=pmi2 --kill-on-bad-exit=1"
  else
    rendezvous_env
    args="--mpi=none --export=ALL"
  fi
  # SIGKILL to rank 1.
  # shellcheck disable=SC2086 # srun's options, one a word
  start_bench "$tmp/k.$how" $args
  victim=$(rank_pid 1)
  [ -n "$victim" ] || { scontrol listpids; cat "$tmp/k.$how"; fail "srun $args: no process of rank 1 under slurmstepd"; }
  t0=$(date +%s)
  kill -9 "$victim"
  ended "srun $args, rank 1 killed" "$tmp/k.$how"
  # expect_k PATTERN WHAT: the output of the killed job says PATTERN.
  expect_k() {
    grep -q -E "$1" "$tmp/k.$how" || { cat "$tmp/k.$how"; fail "srun $args, rank 1 killed: $2"; }
  }
  expect_k "srun: error: [^:]*: task 1: Killed" "srun does not say 'task 1: Killed'"
  if [ $how = pmi2 ]; then
    # Slurm ends rank 0 (--kill-on-bad-exit).
    expect_k "srun: error: [^:]*: task 0: (Terminated|Killed)" "srun does not say it ended task 0"
    why="srun says 'task 1: Killed', then ends task 0"
  else
    # rondo's watch ends rank 0 (no --kill-on-bad-exit), saying why.
    expect_k "rank 1 left the job before MPI_Finalize .*so this rank ends too \(exit status 75\)" \
      "rank 0 does not say that rank 1 left the job"
    expect_k "srun: error: [^:]*: task 0: Exited with exit code 75" "srun does not say task 0 exited with 75"
    why="rank 0 says 'rank 1 left the job before MPI_Finalize' and exits with 75"
  fi
  pass "srun $args -n 2 rondo-bench, rank 1 SIGKILLed: srun exited with $s after $t s; $why; no rank left"

  # scancel of the running step.
  [ $how = rendezvous ] && rendezvous_env
  # shellcheck disable=SC2086
  start_bench "$tmp/x.$how" $args
  step=$(squeue -h -s -o %i | grep -E '^[0-9]+\.0$')
  [ -n "$step" ] || { squeue -s; fail "srun $args: no running step to cancel"; }
  t0=$(date +%s)
  scancel "$step" || fail "scancel $step failed"
  ended "srun $args, step $step cancelled" "$tmp/x.$how"
  grep -q -E "STEP $step ON .* CANCELLED" "$tmp/x.$how" ||
    { cat "$tmp/x.$how"; fail "srun $args, step $step cancelled: no 'STEP $step ON ... CANCELLED' from Slurm"; }
  pass "srun $args -n 2 rondo-bench, scancel $step: srun exited with $s after $t s, every rank gone"
  unset MASTER_ADDR MASTER_PORT RONDO_RENDEZVOUS_KEY
done

all_stopped
