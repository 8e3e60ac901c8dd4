#!/bin/sh
# The same build under torchrun and under mpiexec, in one run
# (docs/launching.md, docs/PERFORMANCE.md):
#   bench/launchers.sh [BUILD_DIR]          (default build)
#  1. all-reduce: rondo-bench (the default configuration: algorithm auto)
#     at 2 ranks, 8 B to 16 MiB, alternately under mpiexec and under
#     torchrun, RUNS times each (default 5): per size, the median over runs
#     of each launcher's median time per call, and torchrun / mpiexec;
#  2. start-up: the wall time of a whole job of rondo-info --explain 4
#     (start, rondo_init, one all-reduce choice, finalize, exit) at 2 and 4
#     ranks under each launcher, alternately, RUNS times: the median;
#  3. DDP: the median step time of bench/ddp_step.py at 2 ranks under
#     torchrun, on the rondo backend and on gloo, alternately, RUNS times.
# torchrun is Debian's torch 1.13 (/usr/bin/python3 -m torch.distributed.run
# --redirects 2 --tee 2, see docs/launching.md). Environment: RUNS, MPIEXEC
# (default mpiexec).
set -u
build=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-5}
mpiexec=${MPIEXEC:-mpiexec}
py=/usr/bin/python3
bench=$build/tools/rondo-bench
info=$build/tools/rondo-info
[ -x "$bench" ] && [ -x "$info" ] || { echo "launchers.sh: build first ($bench)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export RONDO_LIBRARY=$build/lib/.libs/librondo.so
export PYTHONPATH=$build/bindings/python:$top/bindings/python${PYTHONPATH:+:$PYTHONPATH}
port=29870
torchrun() {
  port=$((port + 2))
  "$py" -m torch.distributed.run --redirects 2 --tee 2 --master_port "$port" "$@"
}
now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "# bench/launchers.sh: $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) cores, RUNS=$runs"
echo
echo "## all-reduce at 2 ranks, rondo-bench -a auto (float32 sum, out of place), median us per call"
for r in $(seq "$runs"); do
  "$mpiexec" -n 2 "$bench" -b 8 -e 16M -f 4 -n 20 -w 5 -a auto --csv "$tmp/m$r.csv" > /dev/null 2>&1 ||
    { echo "mpiexec rondo-bench failed" >&2; exit 1; }
  torchrun --nproc_per_node 2 --no_python "$bench" -b 8 -e 16M -f 4 -n 20 -w 5 -a auto \
    --csv "$tmp/t$r.csv" > /dev/null 2>&1 || { echo "torchrun rondo-bench failed" >&2; exit 1; }
done
echo
echo "| bytes | mpiexec | torchrun | torchrun / mpiexec |"
echo "|---:|---:|---:|---:|"
for size in $(awk -F, 'NR > 1 { print $1 }' "$tmp/m1.csv"); do
  m=$(cat "$tmp"/m*.csv | awk -F, -v s="$size" '$1 == s { print $9 }' | median)
  t=$(cat "$tmp"/t*.csv | awk -F, -v s="$size" '$1 == s { print $9 }' | median)
  awk -v s="$size" -v m="$m" -v t="$t" 'BEGIN { printf "| %d | %.1f | %.1f | %.2f |\n", s, m, t, t / m }'
done

echo
echo "## start-up: a whole job of rondo-info --explain 4, median wall seconds"
echo
echo "| ranks | mpiexec | torchrun | torchrun - mpiexec |"
echo "|---:|---:|---:|---:|"
for n in 2 4; do
  : > "$tmp/sm" ; : > "$tmp/st"
  for r in $(seq "$runs"); do
    a=$(now); "$mpiexec" -n "$n" "$info" --explain 4 > /dev/null 2>&1; b=$(now)
    awk -v a="$a" -v b="$b" 'BEGIN { print b - a }' >> "$tmp/sm"
    a=$(now); torchrun --nproc_per_node "$n" --no_python "$info" --explain 4 > /dev/null 2>&1; b=$(now)
    awk -v a="$a" -v b="$b" 'BEGIN { print b - a }' >> "$tmp/st"
  done
  m=$(median < "$tmp/sm") t=$(median < "$tmp/st")
  awk -v n="$n" -v m="$m" -v t="$t" 'BEGIN { printf "| %d | %.2f | %.2f | %+.2f |\n", n, m, t, t - m }'
done

echo
echo "## DDP at 2 ranks under torchrun: bench/ddp_step.py, median ms per step"
echo
: > "$tmp/dr" ; : > "$tmp/dg"
for r in $(seq "$runs"); do
  torchrun --nproc_per_node 2 "$top/bench/ddp_step.py" --backend rondo 2>/dev/null |
    sed -n 's/^ddp_step: .* median \([0-9.]*\) ms.*/\1/p' >> "$tmp/dr"
  torchrun --nproc_per_node 2 "$top/bench/ddp_step.py" --backend gloo 2>/dev/null |
    sed -n 's/^ddp_step: .* median \([0-9.]*\) ms.*/\1/p' >> "$tmp/dg"
done
[ -s "$tmp/dr" ] && [ -s "$tmp/dg" ] || { echo "ddp_step.py printed no time" >&2; exit 1; }
r=$(median < "$tmp/dr") g=$(median < "$tmp/dg")
echo "| backend | ms per step | gloo / rondo |"
echo "|---|---:|---:|"
awk -v r="$r" -v g="$g" 'BEGIN { printf "| rondo | %.2f | %.2f |\n| gloo | %.2f | 1.00 |\n", r, g / r, g }'
