#!/bin/sh
# --strategy sharded --stage 1|2|3 (docs/train.md, "Sharded"): ZeRO's
# stages on rondo's reduce-scatter and all-gather.
#   - every stage ends with mirrored's bytes, on 1, 2 and 3 ranks of one
#     node, with the variables compared across ranks after every step;
#     across virtual nodes of 1+1+1 ranks within rounding of mirrored's,
#     and the same bytes run after run;
#   - checkpoints cross strategies and rank counts mid-epoch: sharded runs
#     resume as mirrored and mirrored ones as sharded, with the bytes of an
#     uninterrupted run; a stage 2 checkpoint of 3 ranks goes on as central
#     storage on 2 with the bytes of mirrored doing the same;
#   - a variable with fewer elements than ranks stops every rank with exit
#     2 and the variable's name; the header and JSON name the stage.
# Memory: tests/train/sharded-memory.sh; bad flags: tests/train/cli.sh; a
# stage mixed across ranks: tests/probe/tool-train-stage-mixed.probe.
. "${top_srcdir:-.}/tests/train/common.sh"
synthetic="--dataset synthetic --samples 50 --features 12 --classes 3 --hidden 16,8 --batch 16 --max-steps 30 --lr 0.1 --check-every 1"
for case in 1:0:2,3 2:0:1,2,3 3:0:1,2,3; do
  n=${case%%:*} rest=${case#*:}
  vn=${rest%%:*} stages=${rest#*:}
  where="$n rank(s) on one node"
  # shellcheck disable=SC2086 # split the options on purpose
  RONDO_NODE_SIZE=$vn run "$n" $synthetic --save-weights "$tmp/mirrored.bin" ||
    { show; fail "$where: mirrored failed"; }
  for stage in $(echo "$stages" | tr , ' '); do
    # shellcheck disable=SC2086
    RONDO_NODE_SIZE=$vn run "$n" $synthetic --strategy sharded --stage "$stage" \
      --save-weights "$tmp/sharded.bin" || { show; fail "$where: stage $stage failed"; }
    weights same "$tmp/mirrored.bin" "$tmp/sharded.bin" ||
      fail "$where: stage $stage differs from mirrored"
  done
  pass "$where: stages $stages end with mirrored's bytes, the same on every rank"
done
# Across nodes at 3 ranks the reduce-scatter adds in pairwise's order, not
# recursive doubling's: rounding apart from mirrored, and the same bytes
# from run to run and at stages 2 and 3 (the same sums).
# shellcheck disable=SC2086
RONDO_NODE_SIZE=1 run 3 $synthetic --save-weights "$tmp/mirrored.bin" || { show; fail "3x1: mirrored"; }
for run in 2a 2b 3; do
  # shellcheck disable=SC2086
  RONDO_NODE_SIZE=1 run 3 $synthetic --strategy sharded --stage "${run%[ab]}" \
    --save-weights "$tmp/sharded$run.bin" || { show; fail "3x1: stage ${run%[ab]} failed"; }
done
weights same "$tmp/sharded2a.bin" "$tmp/sharded2b.bin" && weights same "$tmp/sharded2a.bin" "$tmp/sharded3.bin" ||
  fail "3 virtual nodes: stage 2 twice and stage 3 do not end with the same bytes"
weights close "$tmp/mirrored.bin" "$tmp/sharded2a.bin" 1e-6 1e-5 ||
  fail "3 virtual nodes: stage 2 is more than rounding away from mirrored"
pass "3 ranks on virtual nodes of 1: stages 2 and 3 deterministic, within rounding of mirrored"

# Checkpoints: 20 steps under one strategy, 20 more under another
# (digits: 120 steps an epoch, so both cuts are mid-epoch).
digits="--batch 32 --lr 0.1 --epochs 3"
# shellcheck disable=SC2086
run 2 $digits --max-steps 40 --save-weights "$tmp/straight.bin" || { show; fail "uninterrupted"; }
for pair in "mirrored:sharded --stage 3" "sharded --stage 3:mirrored" \
  "sharded --stage 1:sharded --stage 2" "sharded --stage 2:sharded --stage 3"; do
  first=${pair%%:*} then=${pair#*:}
  # shellcheck disable=SC2086
  run 2 $digits --max-steps 20 --strategy $first --checkpoint "$tmp/ck.bin" ||
    { show; fail "$first: 20 steps"; }
  # shellcheck disable=SC2086
  run 2 $digits --max-steps 40 --strategy $then --resume "$tmp/ck.bin" \
    --save-weights "$tmp/resumed.bin" || { show; fail "$then: resume"; }
  weights same "$tmp/straight.bin" "$tmp/resumed.bin" ||
    fail "$first for 20 steps, then $then: differs from 40 uninterrupted steps"
  pass "$first's checkpoint resumed under $then: the bytes of an uninterrupted run"
done
for strategy in mirrored "sharded --stage 2"; do
  # shellcheck disable=SC2086
  run 3 $digits --max-steps 20 --strategy $strategy --checkpoint "$tmp/ck3.bin" ||
    { show; fail "$strategy on 3 ranks: 20 steps"; }
  next=mirrored
  [ "$strategy" = mirrored ] || next=central-storage
  # shellcheck disable=SC2086
  run 2 $digits --max-steps 40 --strategy $next --resume "$tmp/ck3.bin" \
    --save-weights "$tmp/$next.bin" || { show; fail "$next on 2 ranks: resume"; }
done
weights same "$tmp/mirrored.bin" "$tmp/central-storage.bin" ||
  fail "a stage 2 checkpoint of 3 ranks, resumed as central storage on 2: differs from mirrored"
pass "a stage 2 checkpoint of 3 ranks goes on as central storage on 2 ranks, as mirrored's does"

# shellcheck disable=SC2086
run 4 $synthetic --strategy sharded
rc=$?
[ $rc = 2 ] || { show; fail "a 3-element variable on 4 ranks: exit $rc, expected 2"; }
grep -q "^rondo-train: rank 0: --strategy sharded: fc3.bias has 3 elements, fewer than the 4 ranks" "$tmp/err" &&
  [ "$(grep -c "stopping: rank 0 reports: --strategy sharded: fc3.bias" "$tmp/err")" = 3 ] ||
  { show; fail "a 3-element variable on 4 ranks: not the message on every rank"; }
pass "a variable with fewer elements than ranks stops every rank with its name"

run 2 --max-steps 1 --strategy sharded --json "$tmp/h.json" || { show; fail "header run"; }
grep -q "^strategy   sharded, ZeRO stage 2: each rank keeps 1/2 of the momentum and the summed gradients" "$tmp/out" ||
  { show; fail "the header does not name the stage"; }
grep -q '"strategy":"sharded","servers":0,"staleness":null,"stage":2' "$tmp/h.json" ||
  { cat "$tmp/h.json"; fail "the JSON record does not name the stage"; }
pass "the header and the JSON record name the strategy and its stage"
