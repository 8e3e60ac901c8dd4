#!/usr/bin/env python3
"""docs/scale.md's tables and plots from bench/simulate.sh's results.

    /usr/bin/python3 bench/simulate_table.py DIR [--plots IMGDIR]

For each platform and rank count in DIR (NAME-R-mpich.json, NAME-R-ompi.json,
NAME-R-explain.txt), one row per size:
  - AUTO's choice and the fastest forced rondo algorithm;
  - AUTO/best: AUTO's simulated time over the fastest algorithm's
    (1.00: AUTO picked it; the target is at most 1.10);
  - AUTO against MPI_Allreduce under SMPI's MPICH and Open MPI selectors,
    as a speed-up (above 1: rondo is faster);
  - the cost model's error: its prediction for AUTO's choice over the
    simulated time, minus 1, and the median of that error's size over
    every algorithm it predicted.
Then a summary per platform and, with --plots, one figure per platform and
rank count (time against size, every algorithm and both selectors).
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys


def load_rows(path):
    with open(path) as f:
        d = json.load(f)
    t = {}
    for r in d["rows"]:
        if r["type"] == "float32" and r["op"] == "sum":
            t[(r["size"], r["algo"])] = r["median_us"]
    return d, t


def load_explain(path):
    """{size: {algo: predicted_us}} and {size: choice} from explain -v."""
    pred, choice, size = {}, {}, None
    with open(path) as f:
        for line in f:
            m = re.match(r"allreduce (\d+) bytes", line)
            if m:
                size = int(m.group(1))
                pred[size] = {}
                continue
            m = re.match(r"  (\w+)\s+([0-9.]+) (us|ms|s)\b", line)
            if m and size is not None:
                scale = {"us": 1, "ms": 1e3, "s": 1e6}[m.group(3)]
                pred[size][m.group(1)] = float(m.group(2)) * scale
                if "<- chosen" in line:
                    choice[size] = m.group(1)
    return pred, choice


def human(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d %s" % (n // div, unit)
    return "%d B" % n


def runs(d):
    found = {}
    for p in glob.glob(os.path.join(d, "*-mpich.json")):
        m = re.match(r"(.+)-(\d+)-mpich\.json$", os.path.basename(p))
        found.setdefault(m.group(1), []).append(int(m.group(2)))
    return {k: sorted(v) for k, v in sorted(found.items())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--plots", help="write one PNG per platform and rank count here")
    a = ap.parse_args()
    found = runs(a.dir)
    if not found:
        sys.exit("simulate_table.py: no *-mpich.json in %s (bench/simulate.sh writes them)" % a.dir)
    for plat, ranks in found.items():
        print("### %s\n" % plat)
        print("| ranks | size | AUTO's choice | fastest | AUTO/best | vs MPICH sel. | vs Open MPI sel. "
              "| model error (choice) | model error (median) |")
        print("|---:|---:|---|---|---:|---:|---:|---:|---:|")
        summary = []
        for np_ in ranks:
            base = os.path.join(a.dir, "%s-%d" % (plat, np_))
            head, t = load_rows(base + "-mpich.json")
            _, t_ompi = load_rows(base + "-ompi.json") if os.path.exists(base + "-ompi.json") else ({}, {})
            pred, choice = load_explain(base + "-explain.txt") if os.path.exists(base + "-explain.txt") else ({}, {})
            sizes = sorted({s for s, _ in t})
            algos = sorted({al for _, al in t if al not in ("auto", "MPI_Allreduce")})
            for s in sizes:
                auto = t.get((s, "auto"))
                forced = {al: t[(s, al)] for al in algos if (s, al) in t}
                if auto is None or not forced:
                    continue
                best = min(forced, key=forced.get)
                pick = choice.get(s, "?")
                mpich = t.get((s, "MPI_Allreduce"))
                ompi = t_ompi.get((s, "MPI_Allreduce"))
                errs = [pred[s][al] / forced[al] - 1 for al in forced if al in pred.get(s, {})]
                err_pick = pred[s][pick] / forced[pick] - 1 if pick in forced and pick in pred.get(s, {}) else None
                row = (np_, s, pick, best, auto / forced[best], mpich / auto if mpich else None,
                       ompi / auto if ompi else None, err_pick,
                       statistics.median([abs(e) for e in errs]) if errs else None)
                summary.append(row)
                f = lambda v, fmt: fmt % v if v is not None else "-"
                print("| %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    np_, human(s), pick, best, f(row[4], "%.2f"), f(row[5], "%.2f"), f(row[6], "%.2f"),
                    f(None if err_pick is None else 100 * err_pick, "%+.0f%%"),
                    f(None if row[8] is None else 100 * row[8], "%.0f%%")))
            if a.plots:
                plot(a.plots, plat, np_, t, t_ompi, sizes, algos)
        n = len(summary)
        within = sum(1 for r in summary if r[4] <= 1.10)
        beats = sum(1 for r in summary if r[5] and r[6] and min(r[5], r[6]) >= 1.0)
        print("\nAUTO within 10%% of the fastest rondo algorithm: %d of %d points; at least as fast as "
              "both selectors' MPI_Allreduce: %d of %d.\n" % (within, n, beats, n))


def plot(outdir, plat, np_, t, t_ompi, sizes, algos):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for al in ["auto"] + algos:
        xs = [s for s in sizes if (s, al) in t]
        ax.plot(xs, [t[(s, al)] for s in xs], marker="o" if al == "auto" else ".",
                lw=2.5 if al == "auto" else 1, label="AUTO" if al == "auto" else al)
    for label, tab in (("MPI_Allreduce, MPICH selector", t), ("MPI_Allreduce, Open MPI selector", t_ompi)):
        xs = [s for s in sizes if (s, "MPI_Allreduce") in tab]
        if xs:
            ax.plot(xs, [tab[(s, "MPI_Allreduce")] for s in xs], ls="--", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes")
    ax.set_ylabel("simulated time (us)")
    ax.set_title("%s, %d ranks (SimGrid SMPI)" % (plat, np_))
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "scale-%s-%d.png" % (plat, np_)), dpi=80)
    plt.close(fig)


if __name__ == "__main__":
    main()
