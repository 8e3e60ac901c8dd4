#!/bin/sh
# RONDO_TIMELINE: a 2-rank engine run writes a Chrome trace that Python's
# json module parses, with the spans docs/engine.md promises for every
# tensor; a copy taken while the run is still going parses too.
set -u
mpiexec=${top_srcdir:-.}/tests/mpiexec # MPICH or Open MPI, Hydra syntax
python=${PYTHON:-/usr/bin/python3}
[ -x "$python" ] || { echo "SKIP: no $python"; exit 77; }
tmp=${TMPDIR:-/tmp}/rondo-timeline-test.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
trace=$tmp/trace.json
MPITEST_ENGINE=basic RONDO_TIMELINE=$trace timeout --kill-after=10 300 \
  "$mpiexec" -n 2 "${top_builddir:-.}/tests/mpi/test_engine" </dev/null >"$tmp/log" 2>&1 &
pid=$!
# A snapshot while the run is going (the file must parse at every moment).
n=0
while [ ! -s "$trace" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
sleep 0.2
cp "$trace" "$tmp/snapshot.json" 2>/dev/null
wait $pid || { cat "$tmp/log"; echo "FAIL: the engine run failed"; exit 1; }
cat "$tmp/log"
"$python" - "$trace" "$tmp/snapshot.json" <<'PY'
import json, sys
trace, snap = sys.argv[1], sys.argv[2]
try:
    json.load(open(snap))
    print("PASS: a snapshot taken during the run parses")
except FileNotFoundError:
    print("PASS: (the run ended before a snapshot was taken)")
events = json.load(open(trace))
assert isinstance(events, list) and events, "not a non-empty JSON array"
names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M"}
spans = {}
for e in events:
    if e.get("ph") == "X":
        assert e["dur"] >= 0 and e["ts"] >= 0, e
        spans.setdefault(names.get(e["tid"], "?"), set()).add(e["name"])
tensors = [n for n in names.values() if n.startswith("layer")]
assert len(tensors) == 80, "expected 80 tensor tracks, got %d" % len(tensors)
for t in tensors:
    need = {"QUEUE_WAIT", "NEGOTIATE", "ALLREDUCE"}
    assert need <= spans.get(t, set()), "%s has spans %s" % (t, spans.get(t))
fused = [e for e in events if e.get("name") == "ALLREDUCE" and e["args"]["fused"] > 1]
assert fused, "no fused all-reduce in the trace"
assert any(e.get("name") == "MEMCPY_IN_FUSION_BUFFER" for e in events)
assert any(e.get("name") == "MEMCPY_OUT_FUSION_BUFFER" for e in events)
algos = {e["args"]["algorithm"] for e in events if e.get("name") == "ALLREDUCE"}
assert algos and "auto" not in algos, algos
assert any(e.get("ph") == "i" and e["name"] == "cycle" for e in events), "no cycle marks"
print("PASS: %d events, %d tensor tracks, %d fused all-reduces, algorithms %s"
      % (len(events), len(tensors), len(fused), sorted(algos)))
PY
# A timeline path rank 0 cannot write is a bad knob: every rank's rondo_init
# fails with the reason (before, the engine went on without a trace).
RONDO_TIMELINE=/nonexistent/dir/trace.json timeout --kill-after=10 300 \
  "$mpiexec" -n 2 "${top_builddir:-.}/tests/mpi/test_engine" </dev/null >"$tmp/log" 2>&1
rc=$?
[ $rc = 1 ] || { cat "$tmp/log"; echo "FAIL: an unwritable RONDO_TIMELINE: exit $rc, expected 1"; exit 1; }
grep -q "rondo_init failed: RONDO_ERR_IO: .*RONDO_TIMELINE=/nonexistent/dir/trace.json: cannot write it" "$tmp/log" &&
  grep -q "rondo_init failed: RONDO_ERR_PEER: .*rank 0 could not set up rondo" "$tmp/log" ||
  { cat "$tmp/log"; echo "FAIL: the messages of an unwritable RONDO_TIMELINE"; exit 1; }
echo "PASS: an unwritable RONDO_TIMELINE fails rondo_init on every rank with the reason"
