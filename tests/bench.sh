#!/bin/sh
# rondo-bench end to end:
#   - bad command lines exit 2 with a message, before MPI starts;
#   - a 2-rank all-reduce sweep exits 0, its JSON parses, has a row for
#     every size and algorithm, no wrong results, and columns that agree
#     (count, busbw = algbw x 2(n-1)/n, MPI's own speed-up 1); the CSV has
#     the same rows; progress lines arrive on stderr;
#   - every dtype and op, out of place and in place, and every other
#     collective check clean at 3 ranks (reduce_scatter and allgather with
#     every algorithm of their family);
#   - reduce_scatter and allgather at 2 ranks: a row per algorithm of the
#     family, auto (saying what it ran) and MPI's own call, in the same
#     columns as allreduce (busbw = algbw x (n-1)/n of the whole buffer);
#   - a deliberately broken algorithm (--break-algo) is reported in #wrong
#     and fails the run;
#   - fusion replays a shipped gradient set (resnet50; its tensor count and
#     size checked, all three sets' in tests/unit/test_models.c) and a
#     synthetic one, also sharded (all-gathers and reduce-scatters);
#   - explain names an algorithm per size, for each family; bench/plot.py
#     draws the JSON.
set -u
bindir=${top_builddir:-.}/tools
srcdir=${top_srcdir:-.}
mpiexec=$srcdir/tests/mpiexec # MPICH or Open MPI, Hydra syntax
py=/usr/bin/python3
tmp=${TMPDIR:-/tmp}/rondo-bench-test.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { timeout --kill-after=10 600 "$mpiexec" "$@" </dev/null; } # mpiexec reads stdin
run_for() { secs=$1; shift; timeout --kill-after=10 "$secs" "$mpiexec" "$@" </dev/null; }
bench=$bindir/rondo-bench

# ---- the command line -------------------------------------------------------------
nbad=0
for bad in "nope" "-b 1x" "-b 0" "-e 2 -b 4" "-f 1" "-f 2 -i 8" "-n 0" "-w -1" "-d float128" \
           "-o mean" "-c 2" "-a nccl" "-a sideways" "--bogus" "-n" "allgather -o sum" \
           "broadcast --inplace" "alltoall -a ring" "fusion --model lenet" "fusion --tensors 5" \
           "tune --margin 200" "-b 8 allgather" "explain --json x" "-b 1 -e 1G -i 1" \
           "-d float32,,int8" "-d ,float32" "-o sum," "-a ring,,shm" "--break-algo nope" \
           "fusion --break-algo ring" "alltoall --break-algo ring" "broadcast --memory device" \
           "--memory gpu" "--memory device -a MPI_Allreduce" "--rounds 0" "--rounds 32" \
           "reduce_scatter --memory device -a MPI_Reduce_scatter_block" \
           "allgather --memory device -a memory_floor" "reduce_scatter --inplace" \
           "broadcast --rounds 3" "broadcast -a ring" "allgather -a MPI_Allreduce" \
           "reduce_scatter -a MPI_Allgather" "allgather --break-algo pairwise,x" \
           "reduce_scatter -a bruck" "allgather -a pairwise" "allgather -a nccl" \
           "explain --collective bcast" "allgather --collective allgather" "tune --sharded" \
           "allreduce --sharded"; do
  # shellcheck disable=SC2086 # split the options on purpose
  "$bench" $bad >"$tmp/out" 2>&1
  rc=$?
  [ $rc = 2 ] || { cat "$tmp/out"; fail "rondo-bench $bad: exit $rc, expected 2"; }
  grep -q '^rondo-bench: ..' "$tmp/out" || { cat "$tmp/out"; fail "rondo-bench $bad: no message"; }
  nbad=$((nbad + 1))
done
"$bench" --help >"$tmp/out" 2>&1 || fail "rondo-bench --help failed"
grep -q '^usage: ' "$tmp/out" || fail "--help printed no usage"
echo "PASS: $nbad bad command lines exit 2 with a message; --help prints the usage"

# ---- --memory device: skipped (77) without a GPU, checked rows with one ------------
for coll in allreduce reduce_scatter allgather; do
  run -n 2 "$bench" $coll --memory device -b 8 -e 64K -f 8 -n 3 -w 1 >"$tmp/log" 2>&1
  rc=$?
  if [ $rc = 77 ]; then
    grep -q '^rondo-bench: --memory device: skipped: ' "$tmp/log" ||
      { cat "$tmp/log"; fail "$coll --memory device without a GPU: no reason given"; }
    echo "PASS: $coll --memory device without a GPU skips (77): $(cat "$tmp/log")"
  else
    cat "$tmp/log"
    [ $rc = 0 ] || fail "$coll --memory device exited $rc"
    grep -q '^# wrong results: 0 (OK)$' "$tmp/log" || fail "$coll --memory device: wrong results"
    grep -q ' staged ' "$tmp/log" || fail "$coll --memory device: no staged row"
    echo "PASS: $coll --memory device on a GPU"
  fi
done

# ---- a 2-rank sweep, JSON and CSV --------------------------------------------------
run -n 2 "$bench" -b 8 -e 64K -f 8 -n 3 -w 1 --json "$tmp/ar.json" --csv "$tmp/ar.csv" \
  >"$tmp/log" 2>"$tmp/err" || { cat "$tmp/log" "$tmp/err"; fail "the 2-rank sweep exited $?"; }
cat "$tmp/log"
grep -q '^# wrong results: 0 (OK)$' "$tmp/log" || fail "no clean wrong-results footer"
grep -q '^# average bus bandwidth: ' "$tmp/log" || fail "no average bus bandwidth footer"
grep -q '^# rondo-bench: 5/5 done' "$tmp/err" || { cat "$tmp/err"; fail "no progress lines on stderr"; }
# auto's quality: each auto row names what auto ran, the footer counts the
# 5 sizes (each with auto and forced algorithms)
[ "$(grep -c ' auto  .* -> [a-z_]*\( (miss)\)\{0,1\}$' "$tmp/log")" = 5 ] ||
  fail "not every auto row says what auto ran"
grep -q '^# auto within 10% of the fastest forced algorithm in [0-5] of 5 cases ' "$tmp/log" ||
  fail "no footer on auto's quality"
"$py" - "$tmp/ar.json" "$tmp/ar.csv" <<'EOF' || fail "the JSON or CSV is wrong"
import csv, json, sys
d = json.load(open(sys.argv[1]))
assert d["collective"] == "allreduce" and d["ranks"] == 2, d
for key in ("mpi_library", "topology", "knobs", "options", "summary", "command"):
    assert key in d, key
rows = d["rows"]
sizes = sorted({r["size"] for r in rows})
assert sizes == [8, 64, 512, 4096, 32768], sizes
algos = {r["algo"] for r in rows}
assert {"auto", "ring", "recursive_doubling", "rabenseifner", "mpi", "MPI_Allreduce"} <= algos, algos
assert len(rows) == len(sizes) * len(algos), (len(rows), sizes, algos)
for r in rows:
    assert r["wrong"] == 0, r
    assert r["count"] * 4 == r["size"], r
    assert r["time_us"] > 0 and r["median_us"] > 0, r
    assert abs(r["busbw_gbps"] - r["algbw_gbps"]) <= 1e-3 * r["algbw_gbps"] + 1e-9, r  # 2(n-1)/n = 1
    assert abs(r["algbw_gbps"] - r["size"] / (r["time_us"] * 1e3)) <= 1e-3 * r["algbw_gbps"] + 1e-6, r
    if r["algo"] == "MPI_Allreduce":
        assert abs(r["speedup_vs_mpi"] - 1) < 1e-9, r
    assert r["speedup_vs_mpi"] is not None and r["speedup_vs_mpi"] > 0, r
assert d["summary"]["wrong"] == 0 and d["summary"]["rows"] == len(rows), d["summary"]
assert d["summary"]["auto_cases"] == len(sizes), d["summary"]
assert 0 <= d["summary"]["auto_within_10pct"] <= len(sizes), d["summary"]
lines = list(csv.DictReader(open(sys.argv[2])))
assert len(lines) == len(rows), (len(lines), len(rows))
assert [l["algo"] for l in lines] == [r["algo"] for r in rows]
print("PASS: JSON and CSV: %d rows, %d sizes x %d algorithms, columns consistent"
      % (len(rows), len(sizes), len(algos)))
EOF

# ---- what auto runs, in --rounds rounds --------------------------------------------
# RONDO_ALLREDUCE_ALGO makes auto run ring: its rows say so.
RONDO_ALLREDUCE_ALGO=ring run -n 2 "$bench" -b 64 -e 4K -f 8 -n 3 -w 0 --rounds 2 \
  -a auto,ring,shm -q >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "--rounds 2: exit $?"; }
[ "$(grep -c ' auto  .* -> ring\( (miss)\)\{0,1\}$' "$tmp/log")" = 3 ] ||
  { cat "$tmp/log"; fail "auto forced to ring: its rows do not say ring"; }
grep -q '^# auto within 10% of the fastest forced algorithm in [0-3] of 3 cases ' "$tmp/log" ||
  { cat "$tmp/log"; fail "auto forced to ring: no footer on auto's quality"; }

# ---- every dtype and op, and the other collectives, at 3 ranks ----------------------
# MPI_Allreduce is left out here: MPICH 4.0.2 computes MIN and MAX of uint8
# as signed (pmodels/mpich#6083), which rondo-bench rightly reports.
algos=auto,mpi,ring,recursive_doubling,rabenseifner,shm
for place in "" "--inplace"; do
  # shellcheck disable=SC2086
  run -n 3 "$bench" -b 1 -e 400 -i 133 -n 1 -w 0 -d all -o all -a $algos $place -q \
    >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "3 ranks, every dtype and op $place: exit $?"; }
  grep -q '^# wrong results: 0 (OK)$' "$tmp/log" || fail "3 ranks $place: wrong results"
  echo "PASS: 3 ranks, 8 dtypes x 5 ops x $algos ${place:-out of place}: no wrong results"
done
for coll in allgather broadcast reduce_scatter alltoall; do
  extra="-d all"
  [ $coll = reduce_scatter ] && extra="-d float32,int32,bfloat16 -o all"
  [ $coll = broadcast ] && extra="-d all -r 2"
  # shellcheck disable=SC2086
  run -n 3 "$bench" $coll -b 1 -e 2K -i 509 -n 1 -w 0 $extra -q >"$tmp/log" 2>&1 ||
    { cat "$tmp/log"; fail "$coll at 3 ranks: exit $?"; }
  grep -q '^# wrong results: 0 (OK)$' "$tmp/log" || fail "$coll: wrong results"
  rows=$(grep -c '^  ' "$tmp/log")
  [ "$rows" -ge 8 ] || { cat "$tmp/log"; fail "$coll: only $rows rows"; }
  echo "PASS: $coll at 3 ranks ($extra): $rows rows, no wrong results"
done

# ---- reduce_scatter and allgather: every algorithm of the family ----------------------
# The rows of -a all: auto, each algorithm of the family that runs here (the
# others named on a "# not measured:" line, with the library's reason), and
# MPI's own call, measured in the same run.
for coll in reduce_scatter allgather; do
  case $coll in
    reduce_scatter) base=MPI_Reduce_scatter_block; family="mpi ring shm pairwise recursive_halving" ;;
    allgather) base=MPI_Allgather; family="mpi ring shm recursive_doubling bruck" ;;
  esac
  run -n 2 "$bench" $coll -a all -b 64 -e 64K -f 8 -n 3 -w 1 -q --json "$tmp/$coll.json" \
    --csv "$tmp/$coll.csv" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "$coll -a all: exit $?"; }
  cat "$tmp/log"
  grep -q '^# wrong results: 0 (OK)$' "$tmp/log" || fail "$coll: wrong results"
  grep -q "^# not measured: .*(it is not a" "$tmp/log" || fail "$coll: no note on the algorithms left out"
  [ "$(grep -c ' auto  .* -> [a-z_]*\( (miss)\)\{0,1\}$' "$tmp/log")" = 4 ] ||
    fail "$coll: not every auto row says what auto ran"
  grep -q '^# auto within 10% of the fastest forced algorithm in [0-4] of 4 cases ' "$tmp/log" ||
    fail "$coll: no footer on auto's quality"
  # shellcheck disable=SC2086 # the family's names are separate arguments
  "$py" - "$tmp/$coll.json" "$tmp/$coll.csv" "$coll" "$base" $family <<'EOF' || fail "$coll: the JSON or CSV is wrong"
import csv, json, sys
path, csv_path, coll, base, family = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
d = json.load(open(path))
assert d["collective"] == coll and d["ranks"] == 2, d
rows = d["rows"]
sizes = sorted({r["size"] for r in rows})
assert sizes == [64, 512, 4096, 32768], sizes
algos = {r["algo"] for r in rows}
assert algos == {"auto", base, "memory_floor"} | set(family), algos
assert len(rows) == len(sizes) * len(algos), (len(rows), sizes, algos)
for r in rows:
    assert r["wrong"] == 0, r
    assert r["count"] * 4 * 2 == r["size"], r  # the whole buffer: ranks x block
    assert r["op"] == ("sum" if coll == "reduce_scatter" else "-"), r
    assert r["time_us"] > 0 and r["median_us"] > 0, r
    assert abs(r["algbw_gbps"] - r["size"] / (r["time_us"] * 1e3)) <= 1e-3 * r["algbw_gbps"] + 1e-6, r
    assert abs(r["busbw_gbps"] - r["algbw_gbps"] / 2) <= 1e-3 * r["algbw_gbps"] + 1e-9, r  # (n-1)/n
    assert r["speedup_vs_mpi"] is not None and r["speedup_vs_mpi"] > 0, r
    if r["algo"] == base:
        assert abs(r["speedup_vs_mpi"] - 1) < 1e-9, r
# The memory floor: one memcpy per rank of half the bytes the collective
# must read and write (rondo-bench's floor_bytes), unchecked, not in the
# average bus bandwidth.
floor = {r["size"]: r for r in rows if r["algo"] == "memory_floor"}
assert sorted(floor) == sizes, floor
s = d["summary"]
assert s["avg_busbw_gbps_memory_floor"] > 0, s
others = [r["busbw_gbps"] for r in rows if r["algo"] != "memory_floor"]
# (the JSON rounds every number to 6 digits, the rows' and the average alike)
assert abs(s["avg_busbw_gbps"] - sum(others) / len(others)) <= 1e-4 * s["avg_busbw_gbps"] + 1e-6, s
assert d["summary"]["wrong"] == 0 and d["summary"]["rows"] == len(rows), d["summary"]
assert d["summary"]["auto_cases"] == len(sizes), d["summary"]
for a in algos:
    assert "avg_busbw_gbps_" + a in d["summary"], a
lines = list(csv.DictReader(open(csv_path)))
assert [l["algo"] for l in lines] == [r["algo"] for r in rows]
print("PASS: %s: %d rows, %d sizes x %s" % (coll, len(rows), len(sizes), " ".join(sorted(algos))))
EOF
done
# -a names the family's algorithms and the baseline; auto's rows say what
# RONDO_*_ALGO makes it run
RONDO_REDUCE_SCATTER_ALGO=ring run -n 2 "$bench" reduce_scatter -a auto,ring,MPI_Reduce_scatter_block \
  -b 64 -e 4K -f 8 -n 2 -w 0 -q >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "reduce_scatter -a: exit $?"; }
[ "$(grep -c '^ ' "$tmp/log")" = 9 ] || { cat "$tmp/log"; fail "reduce_scatter -a: expected 3 x 3 rows"; }
[ "$(grep -c ' auto  .* -> ring\( (miss)\)\{0,1\}$' "$tmp/log")" = 3 ] ||
  { cat "$tmp/log"; fail "reduce_scatter forced to ring: auto's rows do not say ring"; }
RONDO_ALLGATHER_ALGO=bruck run -n 2 "$bench" allgather -a auto,bruck -b 64 -e 64 -n 2 -w 0 -q \
  >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "allgather -a auto,bruck: exit $?"; }
grep -q ' auto  .* -> bruck' "$tmp/log" || { cat "$tmp/log"; fail "allgather forced to bruck: auto's row"; }
run -n 2 "$bench" reduce_scatter -a bruck -b 64 -e 64 -q >"$tmp/log" 2>&1
[ $? = 2 ] || { cat "$tmp/log"; fail "reduce_scatter -a bruck: expected exit 2"; }
grep -q '^rondo-bench: -a bruck: .*not a reduce.scatter' "$tmp/log" ||
  { cat "$tmp/log"; fail "reduce_scatter -a bruck: no reason"; }
echo "PASS: reduce_scatter and allgather -a: named rows, auto forced by RONDO_*_ALGO, bruck refused for reduce_scatter"

# ---- a broken algorithm fails the run --------------------------------------------
run -n 2 "$bench" -b 64 -e 4K -f 8 -n 1 -w 0 -a auto,ring,MPI_Allreduce --break-algo ring \
  --json "$tmp/broken.json" >"$tmp/log" 2>&1
rc=$?
[ $rc = 1 ] || { cat "$tmp/log"; fail "--break-algo ring: exit $rc, expected 1"; }
grep -q '^# wrong results: [1-9][0-9]* elements in 3 of 9 rows (FAILED), in: ring float32 sum$' \
  "$tmp/log" || { cat "$tmp/log"; fail "--break-algo ring: footer"; }
"$py" - "$tmp/broken.json" <<'EOF' || fail "--break-algo ring: JSON"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert all((r["wrong"] > 0) == (r["algo"] == "ring") for r in rows), rows
EOF
echo "PASS: --break-algo ring: the ring rows have #wrong > 0, the others 0, exit status 1"
run -n 2 "$bench" allgather -b 64 -e 4K -f 8 -n 1 -w 0 -a auto,bruck,MPI_Allgather --break-algo bruck \
  >"$tmp/log" 2>&1
rc=$?
[ $rc = 1 ] || { cat "$tmp/log"; fail "allgather --break-algo bruck: exit $rc, expected 1"; }
grep -q '^# wrong results: [1-9][0-9]* elements in 3 of 9 rows (FAILED), in: bruck float32 -$' \
  "$tmp/log" || { cat "$tmp/log"; fail "allgather --break-algo bruck: footer"; }
echo "PASS: allgather --break-algo bruck: fails the run, the footer names bruck"

# ---- fusion ----------------------------------------------------------------------------
# (one shipped model end to end: the three sets' shapes are
# tests/unit/test_models.c's; bert-base and vgg16 add 1 GB a round)
run -n 2 "$bench" fusion --model resnet50 -n 1 -w 0 -q --json "$tmp/fusion.json" >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "fusion of resnet50: exit $?"; }
cat "$tmp/log"
"$py" - "$tmp/fusion.json" <<'EOF' || fail "fusion JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["collective"] == "fusion"
got = {r["model"]: (r["tensors"], r["bytes"]) for r in d["rows"]}
# torchvision resnet50's parameter count
want = {"resnet50": (161, 25557032 * 4)}
assert got == want, got
for r in d["rows"]:
    assert r["wrong"] == 0, r
    for k in ("engine_ms", "single_ms", "loop_ms", "engine_gbps", "engine_over_single",
              "loop_over_engine"):
        assert r[k] > 0, (k, r)
print("PASS: fusion of resnet50: 161 tensors, no wrong results")
EOF
run -n 2 "$bench" fusion --tensors 200 --size 1K -n 2 -w 1 -q >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "fusion --tensors 200 --size 1K: exit $?"; }
grep -q '^  200x1KiB  *200  *204800 ' "$tmp/log" || { cat "$tmp/log"; fail "fusion: no 200x1KiB row"; }
run -n 2 "$bench" fusion --tensors 20 --size 4K -n 1 -w 0 -q --break-algo engine >"$tmp/log" 2>&1
rc=$?
[ $rc = 1 ] || { cat "$tmp/log"; fail "fusion --break-algo engine: exit $rc, expected 1"; }
echo "PASS: fusion --tensors/--size, and a broken engine result fails the run"

# --sharded: per tensor an all-gather and a reduce-scatter (FSDP, ZeRO-3)
run -n 2 "$bench" fusion --sharded --model resnet50 -n 1 -w 0 -q --json "$tmp/sharded.json" \
  >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "fusion --sharded --model resnet50: exit $?"; }
cat "$tmp/log"
grep -q '^# rondo-bench .*fusion, sharded' "$tmp/log" || fail "fusion --sharded: no title"
"$py" - "$tmp/sharded.json" <<'EOF' || fail "fusion --sharded JSON"
import json, sys
d = json.load(open(sys.argv[1]))
(r,) = d["rows"]
assert (r["model"], r["pattern"], r["tensors"], r["bytes"]) == ("resnet50", "sharded", 161, 25557032 * 4), r
assert r["wrong"] == 0, r
for k in ("engine_ms", "single_ms", "loop_ms", "engine_over_single", "loop_over_engine"):
    assert r[k] > 0, (k, r)
print("PASS: fusion --sharded: resnet50's 161 tensors gathered and reduce-scattered, no wrong results")
EOF
# 3 ranks: 1022 floats per tensor do not split evenly (341, 341, 340), so
# the ranks' shares, and what each rank holds, differ. A few seconds' work:
# 124 means it hung.
run_for 120 -n 3 "$bench" fusion --sharded --tensors 30 --size 4088 -n 2 -w 1 -q >"$tmp/log" 2>&1
rc=$?
[ $rc = 0 ] || { cat "$tmp/log"; fail "fusion --sharded at 3 ranks: exit $rc (124: it hung)"; }
grep -q '^  30x4088B  *30  *122640 .* 0$' "$tmp/log" || { cat "$tmp/log"; fail "fusion --sharded: no 30x4088B row"; }
for way in engine single loop; do
  run -n 2 "$bench" fusion --sharded --tensors 20 --size 4K -n 1 -w 0 -q --break-algo $way \
    >"$tmp/log" 2>&1
  rc=$?
  [ $rc = 1 ] || { cat "$tmp/log"; fail "fusion --sharded --break-algo $way: exit $rc, expected 1"; }
done
echo "PASS: fusion --sharded: uneven shards at 3 ranks, and a broken way fails the run"

# ---- explain and the charts ----------------------------------------------------------
run -n 2 "$bench" explain -b 4 -e 64M -f 4 -d float32,bfloat16 >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "explain: exit $?"; }
n=$(grep -cE '^ +[0-9]+ +(float32|bfloat16) +sum +(mpi|ring|recursive_doubling|rabenseifner|shm|hierarchical) ' "$tmp/log")
[ "$n" = 26 ] || { cat "$tmp/log"; fail "explain: expected 26 rows, got $n"; }
echo "PASS: explain: 13 sizes x 2 dtypes, each with a chosen algorithm and why"
run -n 2 "$bench" explain --collective reduce_scatter,allgather -b 4 -e 64M -f 4 >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "explain --collective: exit $?"; }
# 4 B holds no float32 block per rank: 12 sizes each
n=$(grep -cE '^ +[0-9]+ +float32 +sum +(mpi|ring|shm|hierarchical|pairwise|recursive_halving) ' "$tmp/log")
[ "$n" = 12 ] || { cat "$tmp/log"; fail "explain reduce_scatter: expected 12 rows, got $n"; }
n=$(grep -cE '^ +[0-9]+ +float32 +- +(mpi|ring|shm|hierarchical|recursive_doubling|bruck) ' "$tmp/log")
[ "$n" = 12 ] || { cat "$tmp/log"; fail "explain allgather: expected 12 rows, got $n"; }
echo "PASS: explain --collective reduce_scatter,allgather: a choice per size of each family"

# The six charts in one interpreter (matplotlib's import is most of a
# run): main() takes plot.py's arguments. The missing file below runs
# plot.py itself.
"$py" - "$srcdir/bench" "$tmp" >"$tmp/log" 2>&1 <<'EOF' || { cat "$tmp/log"; fail "plot.py"; }
import sys
sys.path.insert(0, sys.argv[1])
import plot
t = sys.argv[2]
for args in (["ar.json", "-o", "ar.png"], ["ar.json", "--metric", "speedup", "-o", "ar.svg"],
             ["fusion.json", "-o", "fusion.png"], ["reduce_scatter.json", "-o", "reduce_scatter.png"],
             ["allgather.json", "-o", "allgather.png"], ["sharded.json", "-o", "sharded.png"]):
    args = [t + "/" + a if a.endswith((".json", ".png", ".svg")) else a for a in args]
    if plot.main(args) != 0:
        sys.exit("plot.py %s: did not exit 0" % " ".join(args))
EOF
for f in ar.png fusion.png reduce_scatter.png allgather.png sharded.png; do
  head -c 8 "$tmp/$f" | od -An -c | grep -q 'P   N   G' || fail "$f is not a PNG"
done
"$py" -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$tmp/ar.svg" ||
  fail "ar.svg does not parse"
"$py" "$srcdir/bench/plot.py" "$tmp/nothing.json" >"$tmp/log" 2>&1
[ $? = 2 ] || fail "plot.py on a missing file: expected exit 2"
echo "PASS: bench/plot.py draws the sweeps (PNG, SVG) and the fusion runs"
