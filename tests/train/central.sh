#!/bin/sh
# --strategy central-storage (docs/train.md): one copy of the variables and
# momentum per node, updated once per node.
#   - it ends with the same bytes as mirrored, on one node of 2 and 3 ranks
#     and across virtual nodes of 2+1 and 1+1+1 ranks (the same all-reduce,
#     the same arithmetic per element), comparing the variables across
#     ranks after every step (which can differ only across nodes: a node's
#     ranks share one copy);
#   - a checkpoint written under one strategy resumes under the other, and
#     ends with the bytes of an uninterrupted run;
#   - it holds less memory: with a 2.1M-variable model on one node of 2
#     ranks, the ranks' proportional set sizes add up to at least 3/4 of the
#     shared copy's 16 MiB less than under mirrored (a size, not a timing);
#   - the header and the JSON record name the strategy.
# Mixed strategies across ranks: tests/probe/tool-train-strategy-mixed.probe.
# In the Open MPI stage (subset in common.sh): one node of 2 ranks and
# virtual nodes of 2+1, then the rest as here.
. "${top_srcdir:-.}/tests/train/common.sh"
synthetic="--dataset synthetic --samples 50 --features 12 --classes 3 --hidden 16,8 --batch 16 --max-steps 30 --lr 0.1 --check-every 1"
layouts="2:0 3:0 3:2 3:1"
subset && layouts="2:0 3:2"
for layout in $layouts; do
  n=${layout%:*} vn=${layout#*:}
  where="$n ranks on one node"
  [ "$vn" = 0 ] || where="$n ranks on virtual nodes of $vn"
  for strategy in mirrored central-storage; do
    # shellcheck disable=SC2086 # split the options on purpose
    RONDO_NODE_SIZE=$vn run "$n" $synthetic --strategy $strategy \
      --save-weights "$tmp/$strategy.bin" || { show; fail "$where: $strategy failed"; }
  done
  nodes=1
  [ "$vn" = 0 ] || nodes=$(((n + vn - 1) / vn))
  grep -q "^rondo-train .* on $n ranks on $nodes \(virtual \)\{0,1\}node(s)" "$tmp/out" ||
    { show; fail "$where: the run was not on $nodes node(s)"; }
  weights same "$tmp/mirrored.bin" "$tmp/central-storage.bin" ||
    fail "$where: central-storage differs from mirrored"
  pass "$where: central-storage ends with mirrored's bytes, identical on every rank"
done

# Checkpoints cross strategies: 20 steps under one, 20 more under the other.
digits="--batch 32 --lr 0.1 --epochs 3"
run 2 $digits --max-steps 40 --save-weights "$tmp/straight.bin" || { show; fail "uninterrupted"; }
for pair in mirrored:central-storage central-storage:mirrored; do
  first=${pair%:*} then=${pair#*:}
  # shellcheck disable=SC2086
  run 2 $digits --max-steps 20 --strategy "$first" --checkpoint "$tmp/ck.bin" ||
    { show; fail "$first: 20 steps"; }
  # shellcheck disable=SC2086
  run 2 $digits --max-steps 40 --strategy "$then" --resume "$tmp/ck.bin" \
    --save-weights "$tmp/resumed.bin" || { show; fail "$then: resume"; }
  weights same "$tmp/straight.bin" "$tmp/resumed.bin" ||
    fail "$first for 20 steps, then $then: differs from 40 uninterrupted steps"
  pass "$first's checkpoint resumed under $then: the bytes of an uninterrupted run"
done

# Memory: 1024-1024-1024-10 has 2,109,450 variables, 8 MiB, and as much momentum.
big="--dataset synthetic --samples 64 --features 1024 --classes 10 --hidden 1024,1024 --batch 16 --max-steps 2 -q"
# Under AddressSanitizer, freed memory stays resident in its quarantine (the
# private copies central storage frees would still count): no quarantine.
for strategy in mirrored central-storage; do
  # shellcheck disable=SC2086
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:thread_local_quarantine_size_kb=0" \
    run 2 $big --strategy $strategy --json "$tmp/$strategy.json" || { show; fail "$strategy: big model"; }
done
"$py" - "$tmp/mirrored.json" "$tmp/central-storage.json" <<'EOF' || fail "memory"
import json, sys
final = [json.loads(l) for l in open(sys.argv[1]) if '"final"' in l][0], \
        [json.loads(l) for l in open(sys.argv[2]) if '"final"' in l][0]
for f, name in zip(final, ("mirrored", "central-storage")):
    assert f["config"]["strategy"] == name, f["config"]["strategy"]
copy = 2 * 2109450 * 4 / 2**20  # the variables and the momentum, MiB
saved = final[0]["pss_mib_total"] - final[1]["pss_mib_total"]
print("PSS of both ranks: mirrored %.1f MiB, central-storage %.1f MiB: %.1f MiB saved "
      "(one copy: %.1f MiB)" % (final[0]["pss_mib_total"], final[1]["pss_mib_total"], saved, copy))
sys.exit(0 if saved >= 0.75 * copy else 1)
EOF
pass "central-storage holds one copy per node: the ranks' memory is smaller by about one copy"
# shellcheck disable=SC2086
run 2 --max-steps 1 --strategy central-storage || { show; fail "header run"; }
grep -q "^strategy   central-storage: the variables and momentum (0.4 MiB) once per node" "$tmp/out" ||
  { show; fail "the header does not name the strategy"; }
pass "the header names the strategy"
