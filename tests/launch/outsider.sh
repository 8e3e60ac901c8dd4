#!/bin/sh
# The outsider: a process on rank 0's host that is no part of the job talks
# to rondo's rendezvous (lib/launch/pmi_server.c) while a real 2-rank job
# forms (tests/launch/outsider.py plays it, and says the protocol). With a
# key (RONDO_RENDEZVOUS_KEY), over TCP on the loopback:
#   0. the rendezvous listens on 127.0.0.1 only;
#   1. an impostor's "cmd=rondo_hello rank=1 size=2 ..." before the real
#      rank 1 starts, without the handshake, and after a wrong mac;
#   2. get of PMI_process_mapping, put and abort exitcode=42 without the
#      handshake, before formation; after it the port refuses;
#   3. connect and close without a byte, before formation; after it, refused;
#   4. lines holding a NUL byte;
#   5. silent connections held open while the last rank says hello;
#   5b. a silent connection and one that stops mid-line, closed by the
#      server's 5 s handshake limit while the job waits;
#   6. connects from formation until the job ends (just before it
#      finalizes): refused; rank 0 does not "stop waiting", and the job ends
#      well within the rendezvous timeout;
#   7. 200 connections at once, opened before rank 1 starts;
#   7b. a connection that proved the key but has not said hello yet (a slow
#      rank) stays open while 200 strangers connect;
#   8. a wrong key (the key from RONDO_RENDEZVOUS_KEY_FILE): closed, and rank
#      0 logs one line naming the peer's address; the right key's handshake
#      verifies both ways, and its auth line replayed is refused; a key
#      holder's hellos that cannot be admitted (a rank taken, another size
#      or attempt, out of range) are turned away, and the job forms;
#   9. a false server on the rendezvous port: a rank with the key tells it
#      nothing (no hello) after a greeting of auth=none (a downgrade) or an
#      auth_ok with a wrong mac; the right mac gets its hello (the control);
# and without a key on one host (MASTER_ADDR=127.0.0.1, a Unix socket):
#   U. no TCP port on MASTER_PORT+1, /tmp/rondo-<uid> of mode 0700, another
#      user (nobody) cannot connect (EACCES), nor, with the directory opened
#      to it for a moment, get a byte (the server's peer check; as root
#      only), the same user's zero-byte connects and NUL lines end nothing,
#      the socket file is gone after;
# and F. a fuzzer: random and mutated greeting, auth, hello and PMI lines
# (OUTSIDER_FUZZ_COUNT, default 300, within OUTSIDER_FUZZ_SECONDS, 15)
# before rank 1 starts, a fifth of them after a right handshake (a key
# holder's bad hellos); FU. the same without a key on the Unix socket
# (OUTSIDER_FUZZ_UNIX_COUNT, 150), never claiming the missing rank 1.
# No outsider is admitted or told anything beyond the greeting, and every
# job forms and passes: rank 0's "0 failed" line and exit 0 on both ranks.
# OUTSIDER_ROWS="1 5 F" runs some rows, one after the other (without it
# every row, in two lanes at once); OUTSIDER_VALGRIND=1 runs rows 1, 3 and 7
# (or OUTSIDER_ROWS) with rank 0 under valgrind (about 20 s; opt-in).
# OUTSIDER_KEEP=DIR keeps every output.
. "${top_srcdir:-.}/tests/launch/common.sh"
needs_mpich
py=${RONDO_PYTHON:-/usr/bin/python3}
outsider=$srcdir/tests/launch/outsider.py
coll=$builddir/tests/mpi/test_collectives
bench=$builddir/tools/rondo-bench
export MASTER_ADDR=127.0.0.1
unset RONDO_RENDEZVOUS RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE SLURM_PROCID \
  SLURM_STEP_NUM_TASKS SLURM_LOCALID SLURM_STEP_NUM_NODES TORCHELASTIC_RUN_ID \
  RONDO_RENDEZVOUS_KEY RONDO_RENDEZVOUS_KEY_FILE
timeout_sec=${OUTSIDER_TIMEOUT:-20}
export RONDO_RENDEZVOUS_TIMEOUT_SEC=$timeout_sec
key=$("$py" -c 'import secrets; print(secrets.token_hex(32))')
other_key=$("$py" -c 'import secrets; print(secrets.token_hex(32))')
sock_dir=/tmp/rondo-$(id -u)
rows=${OUTSIDER_ROWS:-0 1 2 3 4 5 5b 6 7 7b 8 9 U F FU}
vg=
if [ "${OUTSIDER_VALGRIND:-0}" = 1 ]; then
  command -v valgrind > /dev/null || fail "OUTSIDER_VALGRIND=1, and there is no valgrind"
  vg=1
  rows=${OUTSIDER_ROWS:-1 3 7}
  timeout_sec=${OUTSIDER_TIMEOUT:-90}
  export RONDO_RENDEZVOUS_TIMEOUT_SEC=$timeout_sec
fi
for f in "$coll" "$bench"; do [ -x "$f" ] || fail "$f is not built"; done

# Two lanes at once: a row mostly waits (for its job to form, for a time
# limit), so without OUTSIDER_ROWS the rows run in two copies of this
# script, each with rows of its own, their outputs shown one after the
# other. The rows on the Unix socket (U, FU) share a lane: U opens
# /tmp/rondo-<uid> to another user for a moment.
if [ -z "${OUTSIDER_ROWS:-}" ]; then
  lane_a="0 1 2 3 4 5 8 9 F" lane_b="5b 6 7 7b U FU"
  [ -n "$vg" ] && lane_a="1 3" lane_b="7"
  OUTSIDER_ROWS=$lane_a sh "$0" > "$tmp/lane-a" 2>&1 &
  pid_a=$!
  OUTSIDER_ROWS=$lane_b sh "$0" > "$tmp/lane-b" 2>&1
  rc_b=$?
  wait "$pid_a"
  rc_a=$?
  cat "$tmp/lane-a" "$tmp/lane-b"
  [ $rc_a = 77 ] && [ $rc_b = 77 ] && exit 77
  [ $rc_a = 0 ] && [ $rc_b = 0 ] && exit 0
  echo "FAIL: lane of rows $lane_a: exit $rc_a; lane of rows $lane_b: exit $rc_b"
  exit 1
fi
failed=0
summary=

ms() { echo $(($(date +%s%N) / 1000000)); }
wanted() { case " $rows " in *" $1 "*) return 0 ;; esac; return 1; }

# row N TITLE / row_bad WHY / row_end: one row's verdict, its time, and on
# failure what the outsider and both ranks printed.
row() {
  row=$1 title=$2 row_ok=1 row_t0=$(ms) pid0= pid1= job_ms=
  : > "$tmp/$row.att"
  echo "--- row $row: $title"
}
row_bad() { echo "  row $row: $*"; row_ok=0; }
row_end() {
  t=$(($(ms) - row_t0))
  secs=$((t / 1000)).$((t % 1000 / 100))
  # what the outsider found, in brief
  grep -E "^outsider: (after formation: [0-9]|silent: [0-9]|fuzz: [0-9]|control: the right|client [0-9]*: |fake server|uid [0-9]*: connect|uid [0-9]* reached|proven: |key holder, |zero-byte: [0-9])" \
    "$tmp/$row.att" | sed 's/^/  /'
  [ -n "$job_ms" ] && echo "  the job: rank 0 exited $s0, rank 1 $s1, in $((job_ms / 1000)).$((job_ms % 1000 / 100)) s"
  [ -s "$tmp/$row.vg" ] && echo "  valgrind on rank 0: $(grep -o 'ERROR SUMMARY.*' "$tmp/$row.vg" | tail -n 1); $(grep -o 'definitely lost.*' "$tmp/$row.vg" | tail -n 1)"
  if [ $row_ok = 1 ]; then
    pass "row $row: $title (${secs} s)"
    summary="$summary
  row $row  PASS  ${secs} s  $title"
  else
    for f in "$tmp/$row.att" "$tmp/$row.0" "$tmp/$row.1" "$tmp/$row.vg"; do
      [ -s "$f" ] && { echo "  --- $(basename "$f"):"; tail -n 40 "$f" | sed 's/^/    /'; }
    done
    echo "FAIL: row $row: $title (${secs} s)"
    failed=1
    summary="$summary
  row $row  FAIL  ${secs} s  $title"
  fi
}

status_words() {
  case $1 in
    0) ;; 1) echo " (1: an error)" ;; 9) echo " (9: valgrind found errors)" ;;
    42) echo " (42: the outsider's abort exit code)" ;;
    75) echo " (75: it ended because the rendezvous saw a rank leave)" ;;
    124) echo " (124: it hung until the test's timeout)" ;;
    134) echo " (134: SIGABRT)" ;; 137) echo " (137: SIGKILL)" ;; 139) echo " (139: SIGSEGV)" ;;
    *) echo " ($1)" ;;
  esac
}

# outsider ATTACK ARGS...: the outsider against this row's rendezvous (its
# output in $tmp/$row.att); a violation fails the row.
outsider() {
  echo "\$ outsider.py $*" >> "$tmp/$row.att"
  "$py" "$outsider" "$@" >> "$tmp/$row.att" 2>&1 ||
    row_bad "outsider.py $1: $(grep -c VIOLATION "$tmp/$row.att") violation(s) so far: $(grep VIOLATION "$tmp/$row.att" | tail -n 1 | cut -c1-300)"
}

# rank0 PROGRAM...: rank 0 of a 2-rank job (WARN lines on), in the
# background, on a fresh port ($rport is the rendezvous's); returns once its
# rendezvous listens ($listens: tcp, unix or none), without connecting.
rank0() {
  MASTER_PORT=$(free_port); export MASTER_PORT
  rport=$((MASTER_PORT + 1))
  sock=$sock_dir/rendezvous-$rport
  job_t0=$(ms)
  if [ -n "$vg" ]; then
    start_rank "$tmp/$row.0" 0 2 env RONDO_LOG=${OUTSIDER_RANK0_LOG:-warn} "$builddir/libtool" --mode=execute valgrind \
      --error-exitcode=9 --leak-check=full --suppressions="$srcdir/tests/valgrind.supp" \
      --log-file="$tmp/$row.vg" "$@"
  else
    start_rank "$tmp/$row.0" 0 2 env RONDO_LOG=${OUTSIDER_RANK0_LOG:-warn} "$@"
  fi
  pid0=$!
  listens=$("$py" "$outsider" wait-listen --port "$rport" --unix "$sock" --pid "$pid0" --hold 120)
  [ "$listens" = none ] && row_bad "rank 0's rendezvous never listened (on TCP $rport or $sock)"
}
rank1() { start_rank "$tmp/$row.1" 1 2 "$@"; pid1=$!; }

# job_end coll|bench: both ranks exit 0 and rank 0 says its results are right;
# rank 0 did not stop waiting for a stranger.
job_end() {
  wait "$pid0"; s0=$?
  s1=-
  [ -n "$pid1" ] && { wait "$pid1"; s1=$?; }
  pids=
  job_ms=$(($(ms) - job_t0))
  [ "$s0" = 0 ] || row_bad "rank 0 exited with $s0$(status_words "$s0")"
  [ "$s1" = 0 ] || row_bad "rank 1 exited with $s1$(status_words "$s1")"
  case $1 in
    coll) grep -q "^test_collectives (2 ranks): [0-9]* checks, 0 failed" "$tmp/$row.0" ||
      row_bad "rank 0 did not print 'test_collectives (2 ranks): N checks, 0 failed'" ;;
    bench) grep -q "^# wrong results: 0 (OK)" "$tmp/$row.0" ||
      row_bad "rank 0 did not print '# wrong results: 0 (OK)'" ;;
  esac
  grep -q "stopped waiting" "$tmp/$row.0" && row_bad "rank 0: $(grep "stopped waiting" "$tmp/$row.0")"
  if [ -n "$vg" ]; then
    grep -q "ERROR SUMMARY: 0 errors" "$tmp/$row.vg" ||
      row_bad "valgrind on rank 0: $(grep "ERROR SUMMARY" "$tmp/$row.vg" | tail -n 1)"
  fi
}

# wait_rank0 PATTERN: until rank 0's output holds PATTERN (or it ended), at most 120 s.
wait_rank0() {
  i=0
  while ! grep -q "$1" "$tmp/$row.0" 2>/dev/null && kill -0 "$pid0" 2>/dev/null && [ $i -lt 1200 ]; do
    sleep 0.1; i=$((i + 1))
  done
  grep -q "$1" "$tmp/$row.0" || row_bad "rank 0 never printed '$1'"
}

# wait_file FILE: until it exists, at most 30 s.
wait_file() {
  i=0
  while [ ! -e "$1" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
}

# before ATTACK...: rank 0 starts, the outsider attacks, then rank 1 starts
# and the job must form and pass.
before() {
  rank0 "$coll"
  for a in "$@"; do outsider $a --port "$rport" --key "$other_key"; done
  rank1 "$coll"
  job_end coll
}

# after ACTION: a job that runs a few seconds; from the moment it formed
# until it ends, the outsider connects every 20 ms and does ACTION with what
# it reaches; every connect must be refused.
after() {
  rank0 "$bench" -b 8 -e 512 -f 2 -n 60000 -a ring
  rank1 "$bench" -b 8 -e 512 -f 2 -n 60000 -a ring
  wait_rank0 "^# topology"
  rm -f "$tmp/$row.stop"
  "$py" "$outsider" after --port "$rport" --action "$1" --stop-file "$tmp/$row.stop" --hold 60 \
    >> "$tmp/$row.att" 2>&1 &
  att=$!
  job_end bench
  touch "$tmp/$row.stop"
  wait "$att" || row_bad "the outsider reached the rendezvous after the world formed: $(grep VIOLATION "$tmp/$row.att" | head -n 1)"
  grep -q "after formation: [1-9][0-9]* connects tried" "$tmp/$row.att" ||
    row_bad "the outsider tried no connect after formation"
}

export RONDO_RENDEZVOUS_KEY="$key"

if wanted 0 || wanted 1; then
  row 1 "an impostor's hello for rank 1 before rank 1 starts: without the handshake, and after a wrong mac (and row 0: rank 0 listens on 127.0.0.1 only)"
  rank0 "$coll"
  if wanted 0; then
    where=$("$py" "$outsider" listeners --port "$rport")
    echo "  rank 0 listens on [$where] port $rport" >> "$tmp/$row.att"
    [ "$where" = 127.0.0.1 ] || row_bad "with a key and MASTER_ADDR=127.0.0.1 rank 0 listens on $where, not 127.0.0.1 only"
  fi
  outsider impostor --port "$rport"
  outsider wrong-mac --port "$rport"
  rank1 "$coll"
  job_end coll
  row_end
fi

if wanted 2; then
  row 2 "get of PMI_process_mapping, put and abort exitcode=42 without the handshake, before formation"
  before pmi
  row_end
fi

if wanted 2 || wanted 3; then
  [ -z "$vg" ] && {
    row 2+3 "get, put, abort, and zero-byte connects after formation: refused (a job of a few seconds)"
    after pmi-zero
    row_end
  }
fi

if wanted 3; then
  row 3 "zero-byte connect and close (before the greeting, after it, reset), before formation"
  before zero
  row_end
fi

if wanted 4; then
  row 4 "lines holding a NUL byte, before formation"
  before nul
  row_end
fi

if wanted 5; then
  row 5 "3 silent connections held open while rank 1 says hello"
  rank0 "$coll"
  rm -f "$tmp/5.ready"
  hold=7.5
  [ -n "$vg" ] && hold=20
  "$py" "$outsider" silent --port "$rport" --count 3 --hold $hold --closed-within 6.5 \
    --ready-file "$tmp/5.ready" >> "$tmp/$row.att" 2>&1 &
  att=$!
  wait_file "$tmp/5.ready"
  rank1 "$coll"
  job_end coll
  wait "$att" || row_bad "silent connections: $(grep VIOLATION "$tmp/$row.att" | head -n 1)"
  row_end
fi

if wanted 5b && [ -z "$vg" ]; then
  row 5b "a silent connection, and one that stops mid-line, closed by the 5 s handshake limit while the job waits"
  rank0 "$coll"
  outsider silent --port "$rport" --count 2 --partial --hold 8 --closed-within 6.5
  rank1 "$coll"
  job_end coll
  row_end
fi

if wanted 6 && [ -z "$vg" ]; then
  row 6 "connects from formation until the job ends (a silent one held if accepted): refused; no 'stopped waiting'"
  # (a stranger that held rank 0 would make it wait out the rendezvous
  # timeout and say "stopped waiting", which job_end refuses; no clock is
  # read: under a sanitizer on a loaded host the job alone can take longer)
  after silent
  row_end
fi

if wanted 7; then
  row 7 "200 connections at once, opened before rank 1 starts and held"
  rank0 "$coll"
  rm -f "$tmp/7.ready" "$tmp/7.stop"
  "$py" "$outsider" silent --port "$rport" --count 200 --hold 60 --stop-file "$tmp/7.stop" \
    --ready-file "$tmp/7.ready" >> "$tmp/$row.att" 2>&1 &
  att=$!
  wait_file "$tmp/7.ready"
  rank1 "$coll"
  job_end coll
  touch "$tmp/7.stop"
  wait "$att" || row_bad "200 connections: $(grep VIOLATION "$tmp/$row.att" | head -n 1)"
  row_end
fi

if wanted 7b && [ -z "$vg" ]; then
  row 7b "a connection that proved the key (a rank slow to say hello) is not pushed out by 200 strangers"
  rank0 "$coll"
  outsider proven --port "$rport" --key "$key" --count 200
  rank1 "$coll"
  job_end coll
  row_end
fi

if wanted 8; then
  row 8 "a wrong key: closed, one WARN line on rank 0 naming the peer; the right key verifies both ways; a replayed auth line is refused; a key holder's wrong hellos are turned away"
  # this job reads its key from a file of mode 0600
  (umask 077 && echo "$key" > "$tmp/key")
  unset RONDO_RENDEZVOUS_KEY
  export RONDO_RENDEZVOUS_KEY_FILE="$tmp/key"
  rank0 "$coll"
  outsider wrong-key --port "$rport" --key "$other_key"
  outsider control --port "$rport" --key "$key"
  outsider wrong-hellos --port "$rport" --key "$key"
  rank1 "$coll"
  job_end coll
  unset RONDO_RENDEZVOUS_KEY_FILE
  export RONDO_RENDEZVOUS_KEY="$key"
  # one WARN line per refused peer (the wrong key, the replay), naming it
  for what in "wrong key" "replayed auth line"; do
    peer=$(sed -n "s/^outsider: $what (from \([0-9.]*:[0-9]*\)).*/\1/p" "$tmp/$row.att")
    [ -n "$peer" ] || { row_bad "no '$what' attempt in the outsider's output"; continue; }
    port=${peer#*:}
    n=$(grep "^\[rondo 0\] WARN" "$tmp/$row.0" | grep "127\.0\.0\.1" | grep -c -w "$port")
    if [ "$n" != 1 ]; then
      n_addr=$(grep "^\[rondo 0\] WARN" "$tmp/$row.0" | grep -c "127\.0\.0\.1")
      row_bad "rank 0 logged $n WARN lines naming the $what peer $peer ($n_addr WARN lines name 127.0.0.1 at all), not 1"
    fi
  done
  row_end
fi

if wanted 9; then
  for mode in downgrade badmac goodmac; do
    case $mode in
      downgrade) row 9a "a false server greets a rank that has the key with auth=none: the rank says no hello" ;;
      badmac) row 9b "a false server answers the rank's auth with a wrong mac: the rank says no hello" ;;
      goodmac) row 9c "(control) a false server with the key answers rightly: the rank's auth verifies and it says hello" ;;
    esac
    MASTER_PORT=$(free_port); export MASTER_PORT
    rport=$((MASTER_PORT + 1))
    rm -f "$tmp/$row.ready" "$tmp/$row.stop"
    "$py" "$outsider" fake-server --port "$rport" --mode $mode --key "$key" --hold 30 \
      --stop-file "$tmp/$row.stop" --ready-file "$tmp/$row.ready" >> "$tmp/$row.att" 2>&1 &
    att=$!
    wait_file "$tmp/$row.ready"
    RONDO_RENDEZVOUS_TIMEOUT_SEC=4 RANK=1 WORLD_SIZE=2 timeout --kill-after=5 60 "$info" \
      > "$tmp/$row.1" 2>&1
    s1=$?
    touch "$tmp/$row.stop"
    wait "$att" || row_bad "$(grep VIOLATION "$tmp/$row.att" | head -n 1)"
    [ "$s1" = 1 ] || row_bad "rank 1 exited with $s1$(status_words "$s1"), not 1"
    echo "  rank 1: $(grep -v '^$' "$tmp/$row.1" | tail -n 1 | cut -c1-200)" >> "$tmp/$row.att"
    row_end
  done
fi

if wanted U && [ -z "$vg" ]; then
  row U "no key, one host: a Unix socket in /tmp/rondo-<uid> (0700), no TCP port, another user refused, zero-byte and NUL lines end nothing"
  unset RONDO_RENDEZVOUS_KEY
  rank0 "$coll"
  echo "  rank 0's rendezvous: $listens" >> "$tmp/$row.att"
  [ "$listens" = unix ] || row_bad "without a key on one host, rank 0 listens on TCP port $rport ([$("$py" "$outsider" listeners --port "$rport")]), not on $sock"
  outsider refused --port "$rport"
  if [ -d "$sock_dir" ]; then
    mode=$(stat -c '%a %u' "$sock_dir")
    [ "$mode" = "700 $(id -u)" ] || row_bad "$sock_dir: mode and owner '$mode', not '700 $(id -u)'"
  else
    row_bad "no $sock_dir"
  fi
  if [ -S "$sock" ]; then
    if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
      echo "\$ setpriv --reuid=65534 --regid=65534 --clear-groups outsider.py unix-denied --unix $sock" >> "$tmp/$row.att"
      setpriv --reuid=65534 --regid=65534 --clear-groups "$py" - unix-denied --unix "$sock" \
        < "$outsider" >> "$tmp/$row.att" 2>&1 || row_bad "user nobody: $(grep VIOLATION "$tmp/$row.att" | tail -n 1)"
      # the directory and the socket opened to others for a moment: the
      # server's own peer check (SO_PEERCRED) still closes it without a byte
      sock_mode=$(stat -c %a "$sock")
      chmod 711 "$sock_dir" && chmod 777 "$sock"
      echo "\$ (chmod 711 $sock_dir; chmod 777 $sock, was $sock_mode) setpriv ... outsider.py unix-denied --peercred --unix $sock" >> "$tmp/$row.att"
      setpriv --reuid=65534 --regid=65534 --clear-groups "$py" - unix-denied --peercred --unix "$sock" \
        < "$outsider" >> "$tmp/$row.att" 2>&1 || row_bad "user nobody through an open directory and socket: $(grep VIOLATION "$tmp/$row.att" | tail -n 1)"
      chmod "$sock_mode" "$sock"; chmod 700 "$sock_dir"
    else
      echo "  (not root: the other user's connect is not tried)" >> "$tmp/$row.att"
    fi
    outsider zero --unix "$sock" --expect none
    outsider nul --unix "$sock" --expect none
  else
    row_bad "no socket $sock"
    # the same user's connects, where the server is
    outsider zero --port "$rport" --expect none
    outsider nul --port "$rport" --expect none
  fi
  rank1 "$coll"
  job_end coll
  [ -e "$sock" ] && row_bad "$sock is still there after the job"
  export RONDO_RENDEZVOUS_KEY="$key"
  row_end
fi

if wanted F; then
  count=${OUTSIDER_FUZZ_COUNT:-300}
  seconds=${OUTSIDER_FUZZ_SECONDS:-15}
  row F "fuzz: $count random and mutated greeting, auth, hello and PMI lines before rank 1 starts"
  RONDO_RENDEZVOUS_TIMEOUT_SEC=$((seconds + timeout_sec))
  export RONDO_RENDEZVOUS_TIMEOUT_SEC
  rank0 "$coll"
  outsider fuzz --port "$rport" --count "$count" --seconds "$seconds" --key "$key" --authed 0.2 \
    --concurrency "${OUTSIDER_FUZZ_CONCURRENCY:-16}" ${OUTSIDER_FUZZ_SEED:+--seed $OUTSIDER_FUZZ_SEED} \
    --log "$tmp/fuzz.inputs"
  kill -0 "$pid0" 2>/dev/null || row_bad "rank 0 is gone after the fuzz"
  rank1 "$coll"
  job_end coll
  export RONDO_RENDEZVOUS_TIMEOUT_SEC=$timeout_sec
  sent=$(sed -n 's/^FUZZ_SENT=//p' "$tmp/$row.att")
  [ "${sent:-0}" -gt 0 ] || row_bad "the fuzzer sent nothing"
  [ -n "${OUTSIDER_FUZZ_KEEP:-}" ] && cp "$tmp/fuzz.inputs" "$OUTSIDER_FUZZ_KEEP"
  row_end
fi

if wanted FU && [ -z "$vg" ]; then
  count=${OUTSIDER_FUZZ_UNIX_COUNT:-150}
  row FU "fuzz without a key, on the Unix socket as this user: $count inputs (never a hello for rank 1) before rank 1 starts"
  unset RONDO_RENDEZVOUS_KEY
  export RONDO_RENDEZVOUS_TIMEOUT_SEC=$((${OUTSIDER_FUZZ_SECONDS:-15} + timeout_sec))
  rank0 "$coll"
  if [ "$listens" = unix ]; then
    outsider fuzz --unix "$sock" --expect none --count "$count" --seconds "${OUTSIDER_FUZZ_SECONDS:-15}" \
      --concurrency "${OUTSIDER_FUZZ_CONCURRENCY:-16}" ${OUTSIDER_FUZZ_SEED:+--seed $OUTSIDER_FUZZ_SEED}
  else
    row_bad "no Unix socket to fuzz ($listens)"
  fi
  rank1 "$coll"
  job_end coll
  export RONDO_RENDEZVOUS_KEY="$key" RONDO_RENDEZVOUS_TIMEOUT_SEC=$timeout_sec
  row_end
fi

[ -n "${OUTSIDER_KEEP:-}" ] && mkdir -p "$OUTSIDER_KEEP" && cp -r "$tmp"/. "$OUTSIDER_KEEP"/
echo "summary:$summary"
[ $failed = 0 ] || exit 1
