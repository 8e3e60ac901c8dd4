#!/bin/sh
# --strategy sharded's memory (docs/train.md, "Sharded"): with an
# 8.5M-variable model on 2 ranks, stage 1 holds about half the momentum
# less than mirrored (the ranks' PSS added up), and stage 3 about half the
# variables less again, less its two layer buffers (sizes, not timings).
# In the plain stage of scripts/test.sh only: a sanitizer's own memory
# (AddressSanitizer's quarantine and shadow) would hide the figures, and the
# model's size makes it slow there; tests/train/sharded.sh checks the
# strategy's bytes and checkpoints under the sanitizers.
. "${top_srcdir:-.}/tests/train/common.sh"
# Memory: 1024-1024x8-100 has 8,499,300 variables (32.4 MiB), its widest
# layer 1,049,600 (4 MiB), its largest piece at 2 ranks 524,288 (2 MiB).
big="--dataset synthetic --samples 32 --features 1024 --classes 100 --hidden 1024,1024,1024,1024,1024,1024,1024,1024 --batch 16 --max-steps 2 -q"
for strategy in mirrored sharded:1 sharded:3; do
  set -- --strategy "${strategy%%:*}"
  [ "$strategy" = mirrored ] || set -- "$@" --stage "${strategy#*:}"
  # shellcheck disable=SC2086
  run 2 $big "$@" --json "$tmp/$strategy.json" || { show; fail "$strategy: big model"; }
done
"$py" - "$tmp/mirrored.json" "$tmp/sharded:1.json" "$tmp/sharded:3.json" <<'EOF2' || fail "memory"
import json, sys
final = [[json.loads(l) for l in open(p) if '"final"' in l][0] for p in sys.argv[1:]]
assert [f["config"]["stage"] for f in final] == [0, 1, 3], [f["config"]["stage"] for f in final]
pss = [f["pss_mib_total"] for f in final]
MiB = 4 / 2**20
whole = 8499300 * MiB  # one array of the variables
# stage 1: each of the 2 ranks holds half the momentum
want1 = 2 * whole / 2
# stage 3 against stage 1: half the variables less on each rank, less two
# layer buffers and the in-place reduce-scatter's result (the largest piece)
want3 = 2 * (whole / 2 - 2 * 1049600 * MiB - 524288 * MiB)
print("PSS of both ranks: mirrored %.1f MiB, stage 1 %.1f (%.1f less, expected %.1f), "
      "stage 3 %.1f (%.1f less than stage 1, expected %.1f)"
      % (pss[0], pss[1], pss[0] - pss[1], want1, pss[2], pss[1] - pss[2], want3))
sys.exit(0 if pss[0] - pss[1] >= 0.75 * want1 and pss[1] - pss[2] >= 0.75 * want3 else 1)
EOF2
pass "stage 1 holds half the momentum per rank, stage 3 half the variables too"
