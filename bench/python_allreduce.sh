#!/bin/sh
# All-reduce from C and from Python, one after the other in one invocation:
#   bench/python_allreduce.sh [BUILD_DIR [OUT_DIR]]
# BUILD_DIR: a built tree (default build, relative to the repository); OUT_DIR:
# where the JSON results go (default /tmp/python-bench).
#
# At 2 ranks on this host, float32 sum, the same sizes and call counts:
#   1. rondo-bench -a auto (the C baseline: rondo_allreduce_algo from C), out
#      of place and then --inplace;
#   2. bench/python_allreduce.py: rondo.allreduce and rondo.allreduce_ from
#      Python, the same C call through ctypes, and torch.distributed's gloo;
#   3. a table per size: C against Python, both as rondo-bench reports a
#      median (each rank's median call time, averaged over the ranks), with
#      the difference in us and the ratio, against the targets (under 5 us
#      added per call below 1 MiB, within 3% at 1 MiB and above).
# Environment: MPIEXEC (default mpiexec, MPICH's), PYTHON (default
# /usr/bin/python3, which has numpy and torch), MINBYTES (8), MAXBYTES (64M),
# FACTOR (2), ITERS (50), WARMUP (5), NP (2). Exit status 1 if either
# benchmark failed or found a wrong result.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
out=${2:-/tmp/python-bench}
case $build in /*) ;; *) [ -d "$build" ] || build=$top/$build ;; esac
build=$(cd "$build" 2>/dev/null && pwd) ||
  { echo "$0: no build directory ${1:-build}" >&2; exit 2; }
lib=$build/lib/.libs/librondo.so
bench=$build/tools/rondo-bench
for f in "$lib" "$bench"; do
  [ -e "$f" ] || { echo "$0: $f is missing: build rondo first (scripts/run.sh)" >&2; exit 2; }
done
mkdir -p "$out" && rm -f "$out/c.json" "$out/c_inplace.json" "$out/python.json" || exit 2
mpiexec=${MPIEXEC:-mpiexec}
python=${PYTHON:-/usr/bin/python3}
np=${NP:-2}
sizes="-b ${MINBYTES:-8} -e ${MAXBYTES:-64M} -f ${FACTOR:-2} -n ${ITERS:-50} -w ${WARMUP:-5}"
export RONDO_LIBRARY="$lib"
export PYTHONPATH="$build/bindings/python:$top/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
rc=0

run() {
  echo "\$ $*"
  "$@" || { echo "# exit status $?"; rc=1; }
  echo
}

echo "== python_allreduce.sh: $(date '+%Y-%m-%d %H:%M:%S'), $(uname -n), $(nproc) cores," \
     "load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# RONDO_LIBRARY=$RONDO_LIBRARY"
echo "# PYTHONPATH=$PYTHONPATH"
echo
echo "== 1. C: rondo-bench, AUTO, out of place"
# shellcheck disable=SC2086
run "$mpiexec" -n "$np" "$bench" -a auto $sizes -q --json "$out/c.json"
echo "== 1b. C: rondo-bench, AUTO, in place"
# shellcheck disable=SC2086
run "$mpiexec" -n "$np" "$bench" -a auto --inplace $sizes -q --json "$out/c_inplace.json"
echo "== 2. Python: bench/python_allreduce.py"
# shellcheck disable=SC2086
run "$mpiexec" -n "$np" "$python" "$top/bench/python_allreduce.py" $sizes -q \
  --json "$out/python.json"

echo "== 3. C (rondo-bench) against Python, the same sizes, one run of each (above)"
"$python" - "$out/c.json" "$out/c_inplace.json" "$out/python.json" <<'EOF' || rc=1
import json, sys

c, ci, p = (json.load(open(f)) for f in sys.argv[1:4])
def medians(doc):
    return {r["size"]: r["median_us"] for r in doc["rows"] if r["algo"] == "auto"}
cm, cim = medians(c), medians(ci)
print("# medians as rondo-bench reports them: each rank's median call time, averaged over "
      "the ranks (python.json's")
print("# median_avg_us; the Python table above shows the slowest rank's instead).")
print("# C = rondo-bench -a auto; ctypes = the C call through ctypes (python.json); "
      "py = rondo.allreduce(x),")
print("# out= reused; C_ = rondo-bench --inplace; py_ = rondo.allreduce_(x). "
      "target: py - C < 5 us")
print("# below 1 MiB, py / C <= 1.03 from 1 MiB; '-' = not met.")
hdr = ("size", "C", "ctypes", "py", "py-C", "py/C", "target", "C_", "py_", "py_-C_", "py_/C_",
       "target")
fmt = "# %10s %9s %9s %9s %8s %6s %6s %9s %9s %8s %6s %6s"
print(fmt % hdr)
print(fmt % ("(B)", "(us)", "(us)", "(us)", "(us)", "(x)", "", "(us)", "(us)", "(us)", "(x)", ""))
def verdict(size, a, b):
    ok = (a - b) < 5 if size < 1 << 20 else a / b <= 1.03
    return "ok" if ok else "-"
met = {"py": [0, 0], "py_": [0, 0]}
for r in p["rows"]:
    s = r["size"]
    if s not in cm or s not in cim:
        print("  %10d (not in the rondo-bench results)" % s)
        continue
    C, Ci = cm[s], cim[s]
    py, ct, pyi = (r[w]["median_avg_us"] for w in ("py", "ctypes", "py_"))
    v, vi = verdict(s, py, C), verdict(s, pyi, Ci)
    for w, x in (("py", v), ("py_", vi)):
        met[w][0] += x == "ok"
        met[w][1] += 1
    print("  %10d %9.2f %9.2f %9.2f %8.2f %6.2f %6s %9.2f %9.2f %8.2f %6.2f %6s"
          % (s, C, ct, py, py - C, py / C, v, Ci, pyi, pyi - Ci, pyi / Ci, vi))
print("# targets met: rondo.allreduce at %d of %d sizes, rondo.allreduce_ at %d of %d"
      % (met["py"][0], met["py"][1], met["py_"][0], met["py_"][1]))
wrong = (c["summary"]["wrong"], ci["summary"]["wrong"], p["summary"]["wrong"])
print("# wrong results: C %d, C in place %d, Python %d" % wrong)
sys.exit(1 if any(wrong) else 0)
EOF
echo "# results: $out/c.json $out/c_inplace.json $out/python.json"
exit $rc
