#!/bin/sh
# rondo-train's command line and output:
#   - bad command lines exit 2 with a message (printed once
#     under mpiexec); --help prints the usage;
#   - --json writes a record per epoch and a final one with the configuration;
#     --max-steps inside an epoch marks that epoch partial;
#   - --save-weights writes the documented layout: a forward pass in Python
#     over the file, with the documented normalization, gets the test
#     accuracy rondo-train reported;
#   - the progress bar shows when the launcher's stdout is a terminal, and not
#     in a pipe;
#   - a --json or --checkpoint path that cannot be written stops every rank.
. "${top_srcdir:-.}/tests/train/common.sh"

# bad_lines OUT: runs rondo-train on each command line read from stdin;
# says what went wrong and returns 1 at the first that does not exit 2
# with a message. Two lanes run at once (each run is one process).
bad_lines() {
  while read -r bad; do
    # shellcheck disable=SC2086 # split the options on purpose
    "$train" $bad >"$1" 2>&1
    rc=$?
    [ $rc = 2 ] || { cat "$1"; echo "rondo-train $bad: exit $rc, expected 2"; return 1; }
    grep -q '^rondo-train: ..' "$1" || { cat "$1"; echo "rondo-train $bad: no message"; return 1; }
  done
}
cat > "$tmp/bad" <<'LIST'
--bogus
extra
--lr
--epochs 0
--epochs 1x
--batch 0
--batch -3
--lr 0
--lr nan
--momentum 1
--weight-decay 2
--gamma 2
--seed -1
--hidden 256,,128
--hidden 256,
--hidden 0
--hidden 1,2,3,4,5,6,7,8,9
--dataset mnist
--samples 10
--features 8 --dataset digits
--schedule linear
--warmup-epochs -1
--allreduce sideways
--progress loud
--progress lines
--prefetch maybe
--no-prefetch
--max-steps 0
--check-every 0
--checkpoint-every 5
--debug-perturb 1
--debug-perturb x:3
--inspect /nonexistent --bogus
--stage 2
--strategy mirrored --stage 1
--strategy sharded --stage 4
--strategy sharded --stage 0
--strategy sharded --stage x
--strategy sharded --debug-perturb 0:3
--strategy zero
LIST
sed -n 'p;n' "$tmp/bad" | bad_lines "$tmp/out1" > "$tmp/lane1" 2>&1 &
lane1=$!
sed -n 'n;p' "$tmp/bad" | bad_lines "$tmp/out2" > "$tmp/lane2" 2>&1 || { cat "$tmp/lane2"; fail "a bad command line"; }
wait $lane1 || { cat "$tmp/lane1"; fail "a bad command line"; }
n=$(wc -l < "$tmp/bad")
pass "$n bad command lines exit 2 with a message"
run 2 --epochs 0
[ $? = 2 ] || { show; fail "under mpiexec a bad flag does not exit 2"; }
[ "$(grep -c '^rondo-train: --epochs' "$tmp/err")" = 1 ] || { show; fail "the message is not printed once"; }
pass "under mpiexec -n 2, a bad flag exits 2 and is reported once"
# An algorithm the library knows but cannot run here: the library says why,
# once, and every rank exits 2.
run 2 --allreduce nccl
[ $? = 2 ] || { show; fail "--allreduce nccl does not exit 2"; }
[ "$(grep -c '^rondo-train: --allreduce nccl: .*cannot run' "$tmp/err")" = 1 ] ||
  { show; fail "--allreduce nccl: the library's reason is not printed once"; }
pass "--allreduce nccl (no backend) exits 2 with the library's reason, printed once"
"$train" --help >"$tmp/out" 2>&1 && grep -q '^usage: mpiexec -n N rondo-train' "$tmp/out" ||
  fail "--help"
pass "--help prints the usage"

# JSON lines, a partial last epoch.
run 2 --epochs 3 --json "$tmp/run.json" || { show; fail "2 ranks, 3 epochs"; }
"$py" - "$tmp/run.json" <<'PY' || fail "the JSON records"
import json, sys
recs = [json.loads(line) for line in open(sys.argv[1])]
epochs = [r for r in recs if r["type"] == "epoch"]
final = recs[-1]
assert [r["epoch"] for r in epochs] == [1, 2, 3], epochs
assert [r["step"] for r in epochs] == [60, 120, 180]
for r in epochs:
    assert r["samples"] == 3823 and not r["partial"] and r["steps"] == 60, r
    assert 0 <= r["comm_wait_share"] <= 1 and 0 <= r["comm_hidden_share"] <= 1, r
    assert 0 < r["test_acc"] <= 1 and 0 < r["train_acc"] <= 1 and r["loss"] > 0, r
    assert r["samples_per_s"] > 0 and abs(r["samples_per_s"] / 2 - r["samples_per_s_per_rank"]) < 1e-3 * r["samples_per_s"]
assert final["type"] == "final" and final["step"] == 180 and final["ranks"] == 2
assert final["test_acc"] == epochs[-1]["test_acc"]
c = final["config"]
assert c["dataset"] == "digits" and c["shape"] == "64-256-128-10" and c["batch"] == 64, c
assert c["hidden"] == [256, 128] and c["ranks"] == 2 and c["deterministic"] is True, c
print("records:", len(recs))
PY
pass "--json: a record per epoch (steps, samples, shares) and a final one with the configuration"
run 2 --epochs 3 --max-steps 70 --json "$tmp/partial.json" || { show; fail "--max-steps 70"; }
grep -q '^epoch   2/3\* ' "$tmp/out" || { show; fail "the cut epoch is not marked partial"; }
"$py" -c "
import json, sys
recs = [json.loads(l) for l in open('$tmp/partial.json')]
assert [(r['epoch'], r['partial'], r['steps']) for r in recs[:-1]] == [(1, False, 60), (2, True, 10)], recs
assert recs[-1]['step'] == 70
" || fail "partial epoch records"
pass "--max-steps 70 ends after a partial second epoch of 10 steps"

# The weight file, read from outside.
run 2 --hidden 16 --epochs 2 --save-weights "$tmp/w.bin" || { show; fail "--save-weights"; }
weights count "$tmp/w.bin" $((64 * 16 + 16 + 16 * 10 + 10)) || fail "weight file size"
acc=$(sed -n 's/^final: .*test accuracy \([0-9.]*\)%.*/\1/p' "$tmp/out")
"$py" - "$tmp/w.bin" "$srcdir/examples/train/data" "$acc" <<'PY' || fail "the weight file's layout"
import gzip, struct, sys
w = struct.unpack("<%df" % (1210), open(sys.argv[1], "rb").read())
def rows(name):
    return [[int(v) for v in line.split(",")] for line in gzip.open(sys.argv[2] + "/" + name, "rt")]
train, test = rows("optdigits.tra.gz"), rows("optdigits.tes.gz")
n = len(train)
mean = [sum(r[f] for r in train) / n for f in range(64)]
std = [(sum(r[f] * r[f] for r in train) / n - mean[f] ** 2) ** 0.5 for f in range(64)]
# documented layout: W1 (16 x 64, row-major), b1 (16), W2 (10 x 16), b2 (10)
W1, b1 = w[0:1024], w[1024:1040]
W2, b2 = w[1040:1200], w[1200:1210]
right = 0
for r in test:
    x = [(r[f] - mean[f]) / std[f] if std[f] > 1e-6 else 0.0 for f in range(64)]
    h = [max(0.0, b1[j] + sum(W1[j * 64 + f] * x[f] for f in range(64))) for j in range(16)]
    z = [b2[c] + sum(W2[c * 16 + j] * h[j] for j in range(16)) for c in range(10)]
    right += z.index(max(z)) == r[64]
mine, theirs = 100.0 * right / len(test), float(sys.argv[3])
print("test accuracy from the weight file: %.2f%%, rondo-train said %.2f%%" % (mine, theirs))
sys.exit(0 if abs(mine - theirs) <= 2 * 100.0 / len(test) else 1)
PY
pass "--save-weights: a forward pass over the documented layout reproduces the test accuracy"

# The progress bar: through mpiexec on a terminal, not in a pipe.
run 2 --epochs 1 || { show; fail "1 epoch"; }
grep -q "$(printf '\r')" "$tmp/out" && { show; fail "a bar was drawn into a pipe"; }
if command -v script >/dev/null 2>&1; then
  RONDO_LOG=error script -qec "$mpiexec -n 2 $train --epochs 1" "$tmp/typescript" >/dev/null 2>&1 </dev/null ||
    fail "rondo-train under script(1)"
  grep -q "$(printf '\r')epoch   1 \[" "$tmp/typescript" || { cat "$tmp/typescript"; fail "no bar on a terminal"; }
  pass "the progress bar shows when mpiexec writes to a terminal, and not in a pipe"
else
  fail "script(1) is missing (bsdutils)"
fi

# Unwritable outputs stop every rank.
run 2 --json /nonexistent/dir/run.json
[ $? = 1 ] && grep -q 'rank 1: stopping: rank 0 reports: --json /nonexistent/dir/run.json' "$tmp/err" ||
  { show; fail "an unwritable --json path"; }
run 2 --checkpoint /nonexistent/dir/ck --checkpoint-every 5 --max-steps 10
[ $? = 1 ] && grep -q 'rank 1: stopping: rank 0 reports: /nonexistent/dir/ck.tmp.[0-9]*: cannot create' "$tmp/err" ||
  { show; fail "an unwritable checkpoint path"; }
pass "an unwritable --json or --checkpoint path stops both ranks with the reason"
