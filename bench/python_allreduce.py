#!/usr/bin/python3
"""All-reduce from Python: rondo's NumPy API, the raw C call through ctypes,
and torch.distributed's gloo backend, side by side in one process.

    RONDO_LIBRARY=$PWD/build/lib/.libs/librondo.so \\
        PYTHONPATH=$PWD/build/bindings/python:$PWD/bindings/python \\
        mpiexec -n 2 /usr/bin/python3 bench/python_allreduce.py -b 8 -e 64M -f 2

float32 sum, every size from -b to -e (times -f). Per size, the ways:
  py     rondo.allreduce(x, out=y): the NumPy API, out of place into a
         reused output y, the default configuration (AUTO); without out= a
         new array per call adds its page faults (docs/python.md);
  ctypes rondo._lib.allreduce_algo(handle, in, out, count, FLOAT32, SUM,
         AUTO) into py's output y: the same C call with nothing of
         the Python layer but the foreign call itself;
  py_    rondo.allreduce_(x): the NumPy API in place;
  ctypes_ the C call of ctypes, in place on py_'s array: py_'s baseline, as
         ctypes is py's;
  gloo   torch.distributed.all_reduce(t), gloo backend, a CPU float32
         tensor: in place (gloo has no out-of-place all-reduce).
The in-place ways get their input back (a copy, outside the timed region)
before every call, so every call reduces the same data.

Method: warm-up calls of every way, then the timed calls of rondo's ways
interleaved one by one: per round one call of each, in an order drawn anew
every round (the same on every rank), each call after a barrier, so a noisy
moment of the shared machine hits every way alike and no way always follows
the same one. gloo's calls come after, in a block of their own: its threads
stay busy a while after a call and would slow whichever call came next.
Every call is timed on its own with time.perf_counter. A cell is the rank's
median over its calls, the slowest rank's (max over ranks); the JSON also
has the mean over ranks of the medians, which is what rondo-bench's
"median" column is.

Check: the result of the last timed call of every way is compared element
by element with the exact sum (inputs are small integers, exact in
float32); wrong elements are counted over the ranks, printed, and make the
exit status 1.
"""
import argparse
import ctypes
import datetime
import json
import os
import shlex
import socket
import sys
import time

import numpy as np

import rondo
from rondo import _lib

FLOAT32, SUM, AUTO = 6, 0, 0
WAYS = ("py", "ctypes", "py_", "ctypes_", "gloo")
PAIRS = (("py", "ctypes", "overhead"), ("py_", "ctypes_", "overhead_inplace"))


def parse_size(s):
    s = s.strip().upper().rstrip("B")
    mult = 1
    if s and s[-1] in "KMG":
        mult = 1 << {"K": 10, "M": 20, "G": 30}[s[-1]]
        s = s[:-1]
    return int(float(s) * mult)


def fmt_size(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def knob_lines():
    """The knobs line of rondo-bench's header (the bindings do not wrap
    rondo_knob_get, so it is declared here)."""

    class KnobInfo(ctypes.Structure):
        _fields_ = [(f, ctypes.c_char_p) for f in
                    ("name", "type", "default_value", "current", "doc")]

    lib = _lib.lib
    lib.rondo_knob_count.argtypes = []
    lib.rondo_knob_count.restype = ctypes.c_int
    lib.rondo_knob_get.argtypes = [ctypes.c_int, ctypes.POINTER(KnobInfo)]
    lib.rondo_knob_get.restype = ctypes.c_int
    knobs = {}
    for i in range(lib.rondo_knob_count()):
        k = KnobInfo()
        if lib.rondo_knob_get(i, ctypes.byref(k)) == 0:
            knobs[k.name.decode()] = (k.current or b"").decode()
    lines, line = [], "# knobs:"
    for name, cur in knobs.items():
        item = " %s=%s" % (name, cur if cur else '""')
        if len(line) + len(item) > 100:
            lines.append(line)
            line = "#       "
        line += item
    lines.append(line)
    return knobs, lines


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-b", "--minbytes", default="8", help="smallest message (default 8)")
    ap.add_argument("-e", "--maxbytes", default="64M", help="largest message (default 64M)")
    ap.add_argument("-f", "--stepfactor", type=int, default=2, help="size factor (default 2)")
    ap.add_argument("-n", "--iters", type=int, default=20, help="timed calls per way (default 20)")
    ap.add_argument("-w", "--warmup_iters", type=int, default=5,
                    help="untimed calls per way first (default 5)")
    ap.add_argument("--ways", default=",".join(WAYS),
                    help="which ways, comma-separated (default all: %s)" % ",".join(WAYS))
    ap.add_argument("--no-gloo", action="store_true", help="leave torch.distributed out")
    ap.add_argument("--json", metavar="FILE", help="the header and every row as JSON")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    o = ap.parse_args()
    lo, hi = parse_size(o.minbytes), parse_size(o.maxbytes)
    if lo < 4 or hi < lo or o.stepfactor < 2 or o.iters < 1 or o.warmup_iters < 0:
        ap.error("need 4 <= minbytes <= maxbytes, stepfactor >= 2, iters >= 1, warmup >= 0")
    ways = [w for w in o.ways.split(",") if w]
    if not ways or any(w not in WAYS for w in ways):
        ap.error("--ways: a comma list of %s" % ", ".join(WAYS))
    if o.no_gloo and "gloo" in ways:
        ways.remove("gloo")
    sizes = []
    s = lo
    while s <= hi:
        sizes.append(s // 4 * 4)
        s *= o.stepfactor

    rondo.init()
    comm = rondo.world()
    rank, nranks = comm.rank, comm.size
    handle = comm._h
    # gloo's rank and size: the launcher's (MPICH's hydra sets PMI_RANK and
    # PMI_SIZE), which must be rondo's
    pmi_rank = int(os.environ.get("PMI_RANK", rank))
    pmi_size = int(os.environ.get("PMI_SIZE", nranks))
    if (pmi_rank, pmi_size) != (rank, nranks):
        raise SystemExit("PMI_RANK %d / PMI_SIZE %d are not rondo's rank %d of %d"
                         % (pmi_rank, pmi_size, rank, nranks))

    torch = dist = None
    if "gloo" in ways:
        import torch
        import torch.distributed as dist
        # 2 ranks on 2 cores: one intra-op thread each, or torch's copies and
        # gloo's reductions fight the other rank for the cores.
        torch.set_num_threads(1)
        port = comm.broadcast_object(free_port() if rank == 0 else None)
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                                rank=pmi_rank, world_size=pmi_size)

    knobs, klines = knob_lines()
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    cmd = "mpiexec -n %d %s %s" % (nranks, sys.executable,
                                   " ".join(shlex.quote(a) for a in sys.argv))
    header = {
        "tool": "python_allreduce", "version": rondo.version(), "command": cmd, "date": now,
        "ranks": nranks, "local_size": comm.local_size, "nodes": comm.nodes,
        "python": sys.version.split()[0], "numpy": np.__version__,
        "torch": torch.__version__ if torch else None,
        "torch_threads": torch.get_num_threads() if torch else None,
        "topology": comm.topology(), "knobs": knobs,
        "fast_path": rondo._fast is not None,
        "options": {"minbytes": lo, "maxbytes": hi, "stepfactor": o.stepfactor,
                    "iters": o.iters, "warmup": o.warmup_iters},
    }
    if rank == 0:
        print("# python_allreduce (rondo %s): float32 sum, %d timed calls per way after %d "
              "warm-up, check on" % (header["version"], o.iters, o.warmup_iters))
        print("# command: %s" % cmd)
        print("# %s, %d ranks, %d node(s), %d per node; python %s, numpy %s, torch %s "
              "(gloo, %s intra-op thread(s))"
              % (now, nranks, comm.nodes, comm.local_size, header["python"], header["numpy"],
                 header["torch"] or "-", header["torch_threads"] or "-"))
        print("# topology: %s" % header["topology"])
        print("# common call in C (rondo._fast): %s" % (
            "yes" if header["fast_path"] else "no (not built, or RONDO_PYTHON_FAST=0)"))
        for line in klines:
            print(line)
        print("# ways: py = rondo.allreduce(x, out=y) (out of place, AUTO, y reused like ctypes' output);")
        print("#   ctypes = rondo._lib.allreduce_algo(h, in, out, count, 6, 0, 0), output "
              "preallocated; py_ = rondo.allreduce_(x)")
        print("#   (in place); ctypes_ = the same C call in place; gloo = "
              "torch.distributed.all_reduce(t), in place.")
        print("# cells: each rank's median call time, the slowest rank's (max over ranks). "
              "ovh = py - ctypes, ovh_ = py_ - ctypes_;")
        print("#   gloo/py, gloo/py_: gloo's time over rondo's (above 1: rondo is faster).")
        print("#")
        print("# %10s %9s %9s %8s %6s %9s %9s %8s %6s %10s %7s %8s %6s"
              % ("size", "py", "ctypes", "ovh", "ovh", "py_", "ctypes_", "ovh_", "ovh_", "gloo",
                 "gloo/py", "gloo/py_", "#wrong"))
        print("# %10s %9s %9s %8s %6s %9s %9s %8s %6s %10s %7s %8s %6s"
              % ("(B)", "(us)", "(us)", "(us)", "(%)", "(us)", "(us)", "(us)", "(%)", "(us)",
                 "(x)", "(x)", ""))
        sys.stdout.flush()

    rows = []
    total_wrong = 0
    t_start = time.perf_counter()
    maxb = sizes[-1]
    maxc = maxb // 4
    pattern = (np.arange(maxc, dtype=np.int64) % 17).astype(np.float32)
    src_all = pattern * np.float32(rank + 1)            # this rank's input
    want_all = pattern * np.float32(nranks * (nranks + 1) // 2)   # the exact sum
    perf = time.perf_counter
    allreduce, allreduce_ = rondo.allreduce, rondo.allreduce_
    c_call = _lib.allreduce_algo

    for si, nbytes in enumerate(sizes):
        count = nbytes // 4
        x = src_all[:count].copy()           # py, ctypes: the input, never written
        want = want_all[:count]
        # py and ctypes write the same output, py_ and ctypes_ reduce the same
        # array in place: a pair differs in nothing but the Python layer (two
        # buffers of 1 MiB differed by up to 4% in the C call's time alone)
        out = np.empty(count, np.float32)
        px, pout = x.__array_interface__["data"][0], out.__array_interface__["data"][0]
        xi = x.copy()
        pxi = xi.__array_interface__["data"][0]
        tt = torch.from_numpy(x.copy()) if dist else None   # gloo: in place
        tsrc = torch.from_numpy(x) if dist else None
        last = {}
        failed = dict.fromkeys(ways, 0)     # calls that returned a status

        def c_call_timed(way, src, dst):
            """The C call through ctypes, timed; a failed call is counted."""
            t0 = perf()
            st = c_call(handle, src, dst, count, FLOAT32, SUM, AUTO)
            t1 = perf()
            failed[way] += st != 0
            return t1 - t0

        def call(way):
            """One untimed-setup + timed call; returns seconds."""
            if way == "py":
                t0 = perf()
                r = allreduce(x, out=out)
                t1 = perf()
                last["py"] = r
                return t1 - t0
            if way == "ctypes":
                last["ctypes"] = out
                return c_call_timed(way, px, pout)
            if way == "ctypes_":
                np.copyto(xi, x)
                last["ctypes_"] = xi
                return c_call_timed(way, pxi, pxi)
            if way == "py_":
                np.copyto(xi, x)
                t0 = perf()
                allreduce_(xi)
                t1 = perf()
                last["py_"] = xi
                return t1 - t0
            tt.copy_(tsrc)
            t0 = perf()
            dist.all_reduce(tt)
            t1 = perf()
            last["gloo"] = tt.numpy()
            return t1 - t0

        for w in ways:
            comm.barrier()
            for _ in range(o.warmup_iters):
                call(w)
        times = {w: [] for w in ways}
        rondo_ways = [w for w in ways if w != "gloo"]
        order = np.random.default_rng(si)      # the same orders on every rank
        for r in range(o.iters):
            checked = r == o.iters - 1
            for w in order.permutation(rondo_ways):
                if checked:        # a call that writes nothing must fail the check
                    out.fill(np.nan)
                comm.barrier()
                times[w].append(call(w))
                if checked:        # kept before the pair's other way reuses the buffer
                    last[w] = np.array(last[w], copy=True)
        if "gloo" in ways:
            for _ in range(o.iters):
                comm.barrier()
                times["gloo"].append(call("gloo"))

        # the check: the last timed call of every way, every element
        wrong_mine = np.zeros(len(ways), np.int64)
        for k, w in enumerate(ways):
            got = np.asarray(last[w])
            bad = np.flatnonzero(got != want)
            wrong_mine[k] = bad.size + failed[w]
            if failed[w]:
                print("# rank %d, %d B, %s: %d calls failed: %s" % (
                    rank, nbytes, w, failed[w], _lib.last_error()), file=sys.stderr)
            if bad.size:
                print("# rank %d, %d B, %s: %d wrong elements; first: %s" % (
                    rank, nbytes, w, bad.size,
                    ", ".join("[%d] %r != %r" % (i, float(got[i]), float(want[i]))
                              for i in bad[:4])), file=sys.stderr)
        meds = np.array([np.median(times[w]) for w in ways])
        means = np.array([np.mean(times[w]) for w in ways])
        med_max = comm.allreduce(meds, op="max")
        med_sum = comm.allreduce(meds, op="sum")
        mean_sum = comm.allreduce(means, op="sum")
        wrong = comm.allreduce(wrong_mine, op="sum")
        total_wrong += int(wrong.sum())

        row = {"size": nbytes, "count": count}
        for k, w in enumerate(ways):
            row[w] = {"median_us": med_max[k] * 1e6,            # max over ranks
                      "median_avg_us": med_sum[k] / nranks * 1e6,  # rondo-bench's median
                      "mean_us": mean_sum[k] / nranks * 1e6,
                      "wrong": int(wrong[k])}
        for w, base, key in PAIRS:
            if w in row and base in row:
                a, b = row[w]["median_us"], row[base]["median_us"]
                row[key + "_us"] = a - b
                row[key + "_pct"] = 100.0 * (a - b) / b
        for w in ("py", "py_"):
            if "gloo" in row and w in row:
                row["gloo_over_" + w] = row["gloo"]["median_us"] / row[w]["median_us"]
        rows.append(row)
        if rank == 0:
            def f(key, form):
                v = row.get(key)
                return "-" if v is None else form % (v["median_us"] if isinstance(v, dict) else v)
            print("  %10d %9s %9s %8s %6s %9s %9s %8s %6s %10s %7s %8s %6d" % (
                nbytes, f("py", "%.2f"), f("ctypes", "%.2f"), f("overhead_us", "%.2f"),
                f("overhead_pct", "%.1f"), f("py_", "%.2f"), f("ctypes_", "%.2f"),
                f("overhead_inplace_us", "%.2f"), f("overhead_inplace_pct", "%.1f"),
                f("gloo", "%.2f"), f("gloo_over_py", "%.2f"), f("gloo_over_py_", "%.2f"),
                int(wrong.sum())))
            sys.stdout.flush()
            if not o.quiet:
                print("# python_allreduce: %d/%d done (%s B), %.1f s"
                      % (si + 1, len(sizes), fmt_size(nbytes), perf() - t_start),
                      file=sys.stderr)

    if rank == 0:
        per_way = ", ".join("%s %d" % (w, sum(r[w]["wrong"] for r in rows)) for w in ways)
        print("# wrong results: %d (%s): %s" % (total_wrong, per_way,
                                               "OK" if total_wrong == 0 else "FAILED"))
        for w, base, key in PAIRS:
            if w not in ways or base not in ways:
                continue
            what = "%s over %s" % (w, base)
            for lo_b, hi_b, unit, limit, band in ((0, 1 << 20, "_us", 5.0, "below 1 MiB"),
                                                  (1 << 20, 1 << 62, "_pct", 3.0, "1 MiB and up")):
                v = [r[key + unit] for r in rows if lo_b <= r["size"] < hi_b]
                if not v:
                    continue
                u = " us" if unit == "_us" else "%"
                print("# %s, %s: median %+.2f%s, %+.2f%s to %+.2f%s; target (%s %g%s) met "
                      "at %d of %d sizes"
                      % (what, band, np.median(v), u, min(v), u, max(v), u,
                         "under" if unit == "_us" else "within", limit, u,
                         sum(x < limit if unit == "_us" else x <= limit for x in v), len(v)))
        if o.json:
            header["rows"] = rows
            header["summary"] = {"rows": len(rows), "wrong": total_wrong}
            with open(o.json, "w") as f:
                json.dump(header, f, indent=1)
                f.write("\n")
        sys.stdout.flush()

    if dist is not None:
        dist.destroy_process_group()
    rondo.shutdown()
    return 1 if total_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
