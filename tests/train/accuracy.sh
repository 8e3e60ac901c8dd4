#!/bin/sh
# The README's main job: rondo-train with its defaults (digits, 2 ranks)
# reaches at least 95% test accuracy, on both ranks' identical variables (the
# mirror check runs every epoch and at the end).
. "${top_srcdir:-.}/tests/train/common.sh"
run 2 || { show; fail "rondo-train with the defaults on 2 ranks"; }
cat "$tmp/out"
[ "$(grep -c '^epoch ' "$tmp/out")" = 20 ] || fail "expected 20 epoch lines"
acc=$(sed -n 's/^final: .*test accuracy \([0-9.]*\)%.*/\1/p' "$tmp/out")
[ -n "$acc" ] || fail "no final accuracy"
"$py" -c "import sys; sys.exit(0 if float('$acc') >= 95.0 else 1)" ||
  fail "test accuracy $acc% is below 95%"
pass "digits, defaults, 2 ranks: test accuracy $acc% >= 95%"
