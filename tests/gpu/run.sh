#!/bin/sh
# GPU verification of the CUDA/NCCL backend (docs/gpu.md, "What was verified
# where"), on a machine with a CUDA GPU. Exits 77 without one, 1 if anything
# failed. Every step prints its command and its output.
#
#   tests/gpu/run.sh [TEST_DEVICE [OUT_DIR]]
#
# TEST_DEVICE: the test program (default build/tests/mpi/test_device, or
# .device/gpu/test_device where tests/gpu/pack.sh put it for the device
# kit); OUT_DIR: where the logs go (default $OUT, else /tmp/gpu-run).
# MPIEXEC: the launcher, split into words (default $MPX of the kit's
# env.sh, else mpiexec.hydra where it exists, else mpiexec).
#
#   1. 1 rank: the NCCL all-reduce of every dtype and op on device buffers,
#      exact, in and out of place; AUTO chooses nccl; the engine's fused
#      device requests; the memory rules (mixed buffers refused, clearly).
#   2. 2, 4 and 8 ranks on the one GPU: the staged all-reduce exact for
#      every dtype and op; AUTO chooses staged, and rondo_explain_call says
#      why (NCCL refuses two ranks on one GPU) and which ranks share it.
#   3. 2 emulated hosts x 1 rank (the kit's netbed.sh, as root): the
#      hierarchical_nccl all-reduce exact (forced; flat nccl cannot run).
#   4. rondo-bench --memory device, where it is built (allreduce,
#      reduce_scatter, allgather): the nccl path
#      against raw ncclAllReduce at 1 rank, staged against the host
#      all-reduce plus pinned copies at 2 ranks.
#   5. rondo.torch with CUDA tensors (tests/python/test_torch.py) at 1 and
#      2 ranks, where python3 has torch with CUDA and librondo is
#      installed (the kit's) or built.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
td=${1:-}
if [ -z "$td" ]; then
  here=$(cd "$(dirname "$0")" && pwd)
  for c in "$top/build/tests/mpi/test_device" "$here/test_device"; do
    [ -x "$c" ] && { td=$c; break; }
  done
fi
[ -n "$td" ] && [ -x "$td" ] || { echo "$0: no test_device (build rondo first)" >&2; exit 2; }
td=$(cd "$(dirname "$td")" && pwd)/$(basename "$td")
out=${2:-${OUT:-/tmp/gpu-run}}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
mpiexec=${MPIEXEC:-${MPX:-}}
if [ -z "$mpiexec" ]; then
  # MPICH's own launcher: a plain "mpiexec" there may be another MPI's.
  if command -v mpiexec.hydra >/dev/null 2>&1; then mpiexec=mpiexec.hydra; else mpiexec=mpiexec; fi
fi

# NCCL may live in a Python wheel there (nvidia-nccl-cu13): let the loader find it.
for d in $(python3 -c 'import glob, site; print(" ".join(glob.glob(p + "/nvidia/*/lib") for p in site.getsitepackages()))' 2>/dev/null | tr -d "[]',"); do
  [ -d "$d" ] && LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
done
export LD_LIBRARY_PATH

status=0
# step NAME CMD...: runs and logs one step (killed after STEP_SEC, default
# 120 s: exit 124); 77 from the first one skips all.
step() {
  name=$1; shift
  echo "== $name"
  echo "\$ $*"
  timeout -k 10 "${STEP_SEC:-120}" "$@" > "$out/$name.log" 2>&1
  rc=$?
  cat "$out/$name.log"
  echo "== $name: exit $rc"
  return $rc
}

export MPITEST_BACKEND=cuda
step one-rank-nccl $mpiexec -n 1 "$td"
rc=$?
if [ $rc = 77 ]; then echo "skipped: no CUDA device"; exit 77; fi
[ $rc = 0 ] || status=1
for n in 2 4 8; do
  step "staged-np$n" env RONDO_STAGE_CHUNK_BYTES=64K $mpiexec -n "$n" "$td" || status=1
  grep -q "AUTO must choose staged" "$out/staged-np$n.log" ||
    { echo "FAIL: $n ranks on the GPU did not run the staged path"; status=1; }
done

# 2 emulated hosts x 1 rank on the one GPU (the kit's netbed.sh, as root):
# flat nccl cannot run (one GPU for both), hierarchical_nccl can (each
# host's NCCL communicator has one rank); test_device runs it forced.
bed=$(cd "$(dirname "$0")/.." 2>/dev/null && pwd)/netbed.sh
unbed() { ip link del rbr0 2>/dev/null; ip netns del rh1 2>/dev/null; ip netns del rh2 2>/dev/null; }
rm -f "$out/hier-nccl-2hosts.log"
if [ -f "$bed" ] && [ "$(id -u)" = 0 ]; then
  unbed # left by a run that was killed
  trap 'unbed' EXIT INT TERM
  # The bed's namespaces and bridge go away afterwards, whatever happened
  # (the trap). The kit's bed finds its launcher from the checkout's root.
  (cd "$(dirname "$bed")/.." && NHOSTS=2 . "$bed" && step hier-nccl-2hosts $NETMPX -n 2 -ppn 1 "$td")
  grep -q " [1-9][0-9]* checks, 0 failed" "$out/hier-nccl-2hosts.log" 2>/dev/null ||
    { echo "FAIL: the 2-host run did not pass"; status=1; }
  unbed
  trap - EXIT INT TERM
  grep -q "2 node(s)" "$out/hier-nccl-2hosts.log" 2>/dev/null ||
    { echo "FAIL: the 2-host run did not see 2 nodes"; status=1; }
else
  echo "== hier-nccl-2hosts: no netbed.sh beside this script, or not root: skipped"
fi

bench=$(command -v rondo-bench 2>/dev/null || echo "$top/build/tools/rondo-bench")
if [ -x "$bench" ] && "$bench" --help 2>/dev/null | grep -q -- "--memory"; then
  step bench-nccl-np1 $mpiexec -n 1 "$bench" allreduce --memory device -b 8 -e 256M -f 4 \
    -n 50 -w 5 --json "$out/bench-nccl-np1.json" || status=1
  step bench-staged-np2 $mpiexec -n 2 "$bench" allreduce --memory device -b 8 -e 256M -f 4 \
    -n 20 -w 3 --json "$out/bench-staged-np2.json" || status=1
  for c in reduce_scatter allgather; do
    step "bench-$c-nccl-np1" $mpiexec -n 1 "$bench" $c --memory device -b 8 -e 256M -f 4 \
      -n 50 -w 5 --json "$out/bench-$c-nccl-np1.json" || status=1
    step "bench-$c-staged-np2" $mpiexec -n 2 "$bench" $c --memory device -b 8 -e 64M -f 4 \
      -n 20 -w 3 --json "$out/bench-$c-staged-np2.json" || status=1
  done
else
  echo "== rondo-bench --memory device: not in this build; no benchmark"
fi
lib=$(dirname "$bench")/../lib/librondo.so
[ -f "$lib" ] || lib=$top/build/lib/.libs/librondo.so
if [ -f "$lib" ] && python3 -c 'import torch, numpy; assert torch.cuda.is_available()' 2>/dev/null; then
  for n in 1 2; do
    step "torch-cuda-np$n" env RONDO_LIBRARY="$lib" \
      PYTHONPATH="$top/bindings/python:$top/tests/python" $mpiexec -n $n python3 \
      "$top/tests/python/test_torch.py" || status=1
  done
else
  echo "== torch-cuda: no librondo.so, or python3 has no torch with CUDA: skipped"
fi
echo "== tests/gpu/run.sh: $([ $status = 0 ] && echo all passed || echo FAILED) (logs in $out)"
exit $status
