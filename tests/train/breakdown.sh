#!/bin/sh
# bench/step_breakdown.py over rondo-train's timeline: every step it reports
# holds the model's 6 gradients, its phases (forward, backward, the exposed
# tail, the optimizer) are non-negative and fit in the step, and every
# gradient's reduction starts after its submission. A trace without the
# program's marks is refused with a message.
. "${top_srcdir:-.}/tests/train/common.sh"
RONDO_TIMELINE=$tmp/t.json run 2 --dataset synthetic --samples 1536 --features 64 --classes 10 \
  --hidden 64,64 --batch 64 --epochs 2 -q || { show; fail "rondo-train with a timeline"; }
"$py" "$srcdir/bench/step_breakdown.py" "$tmp/t.json" --json "$tmp/steps.json" >"$tmp/table" 2>&1 ||
  { cat "$tmp/table"; fail "step_breakdown.py on rondo-train's trace"; }
cat "$tmp/table"
"$py" - "$tmp/steps.json" <<'PY' || fail "the breakdown's steps"
import json, sys
rows = json.load(open(sys.argv[1]))
bad = []
# 48 steps (24 per epoch), less the first 3 and the last (no next mark)
if not 30 <= len(rows) <= 44:
    bad.append("%d steps reported" % len(rows))
for i, r in enumerate(rows):
    parts = [r[k] for k in ("forward", "backward", "exposed tail", "optimizer")]
    if r["gradients"] != 6:
        bad.append("step %d: %d gradients" % (i, r["gradients"]))
    if min(parts) < 0 or sum(parts) > r["step"] + 1e-6:
        bad.append("step %d: phases %s in a step of %.3f ms" % (i, parts, r["step"]))
    if r["submit->start"] < 0 or r["last gradient -> start"] < 0 or r["reduction"] <= 0:
        bad.append("step %d: %s" % (i, r))
    if r["cycles"] < 1:
        bad.append("step %d: no cycle" % i)
print("\n".join(bad[:10]))
sys.exit(1 if bad else 0)
PY
printf '[\n{"name":"x","cat":"rondo","ph":"X","pid":0,"tid":1,"ts":1,"dur":1}\n]\n' > "$tmp/nomarks.json"
if "$py" "$srcdir/bench/step_breakdown.py" "$tmp/nomarks.json" >"$tmp/err2" 2>&1; then
  fail "a trace without marks was accepted"
fi
grep -q 'has no "step" marks' "$tmp/err2" || { cat "$tmp/err2"; fail "the refusal's message"; }
pass "step_breakdown.py: $(wc -l <"$tmp/table") lines, every step consistent"
