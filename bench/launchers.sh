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
#     ranks under each launcher, and of a job of /bin/true (the launcher's
#     own cost), alternately, RUNS times: the medians, and the job less the
#     launcher's own cost (what starting rondo costs under each); and the
#     same job started by hand (N processes with RANK and WORLD_SIZE, no
#     launcher): rondo's rendezvous without a launcher's own cost;
#  3. DDP: the median step time of bench/ddp_step.py at 2 ranks under
#     torchrun, on the rondo backend and on gloo, alternately, RUNS times;
#  4. rendezvous: a 2-rank torchrun job of rondo-info --explain 4 without a
#     key (one host: the Unix socket) and with RONDO_RENDEZVOUS_KEY (TCP and
#     the challenge-response), alternately, RUNS times: the jobs' median
#     wall time, and the median of each rank's connect-and-handshake time
#     (rondo's own debug line: "N ms to connect and be greeted").
# PARTS (default "allreduce startup ddp rendezvous") picks the parts.
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
parts=${PARTS:-allreduce startup ddp rendezvous}
want() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }

if want allreduce; then
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
fi

if want startup; then
echo
echo "## start-up: a whole job of rondo-info --explain 4, median wall seconds"
echo
echo "| ranks | mpiexec: job | of it, mpiexec's own | rondo | torchrun: job | of it, torchrun's own | rondo | started by hand (RANK, WORLD_SIZE): job |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
# by_hand N CMD...: N processes started at once with RANK and WORLD_SIZE, as
# any launcher would, without a launcher's own cost; waits for all.
by_hand() {
  n=$1
  shift
  port=$((port + 2))
  pids=
  for r in $(seq 0 $((n - 1))); do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=$n "$@" > /dev/null 2>&1 &
    pids="$pids $!"
  done
  for p in $pids; do wait "$p"; done
}
# job FILE CMD...: appends the wall seconds CMD took to FILE.
job() {
  f=$1
  shift
  a=$(now)
  "$@" > /dev/null 2>&1
  b=$(now)
  awk -v a="$a" -v b="$b" 'BEGIN { print b - a }' >> "$f"
}
for n in 2 4; do
  : > "$tmp/sm"; : > "$tmp/st"; : > "$tmp/sm0"; : > "$tmp/st0"; : > "$tmp/sh"
  for r in $(seq "$runs"); do
    job "$tmp/sh" by_hand "$n" "$info" --explain 4
    job "$tmp/sm" "$mpiexec" -n "$n" "$info" --explain 4
    job "$tmp/sm0" "$mpiexec" -n "$n" true
    job "$tmp/st" torchrun --nproc_per_node "$n" --no_python "$info" --explain 4
    job "$tmp/st0" torchrun --nproc_per_node "$n" --no_python true
  done
  m=$(median < "$tmp/sm") m0=$(median < "$tmp/sm0") t=$(median < "$tmp/st") t0=$(median < "$tmp/st0")
  h=$(median < "$tmp/sh")
  awk -v n="$n" -v m="$m" -v m0="$m0" -v t="$t" -v t0="$t0" -v h="$h" \
    'BEGIN { printf "| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n, m, m0, m - m0, t, t0, t - t0, h }'
done
fi

if want ddp; then
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
fi

if want rendezvous; then
echo
echo "## rendezvous: torchrun --nproc_per_node 2 rondo-info --explain 4, without and with a key"
echo
echo "| rendezvous | job: median wall s | handshake per rank: median ms | max ms |"
echo "|---|---:|---:|---:|"
key=$("$py" -c 'import secrets; print(secrets.token_hex(32))')
: > "$tmp/kn"; : > "$tmp/kk"; : > "$tmp/hn"; : > "$tmp/hk"
# keyed JOBFILE HANDSHAKEFILE KEY: one job, its wall time and each rank's handshake.
keyed() {
  a=$(now)
  if [ -n "$3" ]; then export RONDO_RENDEZVOUS_KEY=$3; else unset RONDO_RENDEZVOUS_KEY; fi
  RONDO_LOG=debug RONDO_LOG_SUBSYS=launch \
    torchrun --nproc_per_node 2 --no_python "$info" --explain 4 > "$tmp/out" 2>&1
  unset RONDO_RENDEZVOUS_KEY
  b=$(now)
  awk -v a="$a" -v b="$b" 'BEGIN { print b - a }' >> "$1"
  sed -n 's/.* \([0-9.]*\) ms to connect and be greeted.*/\1/p' "$tmp/out" >> "$2"
}
for r in $(seq "$runs"); do
  keyed "$tmp/kn" "$tmp/hn" ""
  keyed "$tmp/kk" "$tmp/hk" "$key"
done
for which in "no key (one host: Unix socket)|n" "RONDO_RENDEZVOUS_KEY (TCP, HMAC-SHA256 both ways)|k"; do
  f=${which##*|}
  awk -v name="${which%|*}" -v j="$(median < "$tmp/k$f")" -v h="$(median < "$tmp/h$f")" \
    -v m="$(sort -g "$tmp/h$f" | tail -n 1)" \
    'BEGIN { printf "| %s | %.2f | %.3f | %.3f |\n", name, j, h, m }'
done
fi
