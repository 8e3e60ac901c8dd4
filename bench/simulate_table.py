#!/usr/bin/env python3
"""docs/scale.md's tables and plots from bench/simulate.sh's results.

    /usr/bin/python3 bench/simulate_table.py DIR... [--collective LIST] [--plots IMGDIR]

For each collective, platform and rank count in the DIRs (NAME-RX-mpich.json,
NAME-RX-ompi.json, NAME-RX-explain.txt, X empty for the all-reduce and
-reduce_scatter or -allgather for simulate.sh -c; the rows of several DIRs
are merged, so one rank count may be run in several size ranges), one row
per size:
  - AUTO's choice and the fastest forced rondo algorithm (memory_floor is
    no algorithm, and is left out);
  - AUTO/best: AUTO's simulated time over the fastest algorithm's
    (1.00: AUTO picked it; the target is at most 1.10);
  - AUTO against the collective's MPI call (MPI_Allreduce,
    MPI_Reduce_scatter_block, MPI_Allgather) under SMPI's MPICH and Open
    MPI selectors, as a speed-up (above 1: rondo is faster); for the
    reduce-scatter and the all-gather also against the better of the two
    ("vs better sel."); a run made with simulate.sh -s ompi has rondo's
    times in NAME-RX-ompi.json and no MPICH column;
  - the cost model's error: its prediction for AUTO's choice over AUTO's
    simulated time, minus 1, and the median of that error's size over
    every algorithm it predicted (each over its forced row).
Per collective (allreduce, reduce_scatter, allgather, those found, or
those of --collective), a summary table comes first (per platform and rank
count: the points that meet each target, those within 5% of the better MPI
selector, the model's median error); the all-reduce's tables come without
a heading of their own, as docs/scale.md has them. With --plots, one
figure per collective, platform and rank count (time against size, every
algorithm and both selectors): scale-NAME-R.png for the all-reduce,
scale-COLL-NAME-R.png for the others.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys


COLLS = ("allreduce", "reduce_scatter", "allgather")
BASELINE = {"allreduce": "MPI_Allreduce", "reduce_scatter": "MPI_Reduce_scatter_block",
            "allgather": "MPI_Allgather"}
NOT_ALGOS = ("auto", "memory_floor") + tuple(BASELINE.values())


def load_rows(paths):
    """{(size, algo): median us} of rondo-bench JSONs, float32 sum (an
    all-gather's rows have no op: "-")."""
    out = {}
    for path in paths:
        with open(path) as f:
            rows = json.load(f)["rows"]
        out.update({(r["size"], r["algo"]): r["median_us"] for r in rows
                    if r["type"] == "float32" and r["op"] in ("sum", "-")})
    return out


def load_explain(paths):
    """{size: {algo: predicted_us}} and {size: choice} from explain -v."""
    pred, choice, size = {}, {}, None
    for path in paths:
        with open(path) as f:
            for line in f:
                m = re.match(r"(?:%s) (\d+) bytes?\b" % "|".join(COLLS), line)
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


def runs(dirs):
    """{collective: {platform: [rank counts]}} of every run in the dirs."""
    found = {}
    for d in dirs:
        for p in glob.glob(os.path.join(d, "*-*.json")):
            m = re.match(r"(.+)-(\d+)(?:-(reduce_scatter|allgather))?-(mpich|ompi)\.json$",
                         os.path.basename(p))
            if m:
                plats = found.setdefault(m.group(3) or "allreduce", {})
                plats.setdefault(m.group(1), set()).add(int(m.group(2)))
    return {c: {k: sorted(v) for k, v in sorted(found[c].items())} for c in COLLS if c in found}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", metavar="dir")
    ap.add_argument("--collective", default="all",
                    help="allreduce, reduce_scatter, allgather, a comma list or all (default)")
    ap.add_argument("--plots", help="write one PNG per platform and rank count here")
    a = ap.parse_args()
    wanted = COLLS if a.collective == "all" else a.collective.split(",")
    for c in wanted:
        if c not in COLLS:
            sys.exit("simulate_table.py: --collective %s: not one of %s" % (c, ", ".join(COLLS)))
    found = {c: v for c, v in runs(a.dirs).items() if c in wanted}
    if not found:
        sys.exit("simulate_table.py: no results in %s (bench/simulate.sh writes them)"
                 % " ".join(a.dirs))
    for i, (coll, plats) in enumerate(found.items()):
        if i:
            print()
        if coll != "allreduce":
            print("## %s, against %s\n" % (coll, BASELINE[coll]))
        report(a, coll, plats)


def report(a, coll, found):
    """One collective's summary table, then its table per platform."""
    tables, totals = [], []
    for plat, ranks in found.items():
        lines, per_ranks = table(a, coll, plat, ranks)
        tables.append(lines)
        totals += per_ranks
    print("| platform | ranks | AUTO within 10% of the best | AUTO >= both MPI selectors "
          "| AUTO >= 0.95x both | median model error |")
    print("|---|---:|---:|---:|---:|---:|")
    for plat, np_, points in totals:
        errs = [p["err_median"] for p in points if p["err_median"] is not None]
        # the better selector; with Open MPI's alone (-s ompi), that one
        worst = [min(v for v in (p["vs_mpich"], p["vs_ompi"]) if v) for p in points
                 if p["vs_mpich"] or p["vs_ompi"]]
        n, only = len(points), " (Open MPI's)" if all(not p["vs_mpich"] for p in points) else ""
        print("| %s | %d | %d of %d | %d of %d%s | %d of %d%s | %s |" % (
            plat, np_, sum(1 for p in points if p["auto_best"] <= 1.10), n,
            sum(1 for w in worst if w >= 1.0), n, only, sum(1 for w in worst if w >= 0.95), n,
            only, "%.0f%%" % (100 * statistics.median(errs)) if errs else "-"))
    print()
    for lines in tables:
        print("\n".join(lines))


def load_run(dirs, name, mpi):
    """One platform and rank count: rondo-bench's times (MPICH selector),
    the MPI call's (mpi) under Open MPI's, and explain's predictions.
    Without an MPICH run (simulate.sh -s ompi), rondo's times come from the
    Open MPI one, and there is no MPICH column."""
    def files(suffix):
        return [p for p in (os.path.join(d, name + suffix) for d in dirs) if os.path.exists(p)]
    t_ompi = load_rows(files("-ompi.json"))
    mpich = files("-mpich.json")
    t = load_rows(mpich) if mpich else {k: v for k, v in t_ompi.items() if k[1] != mpi}
    pred, choice = load_explain(files("-explain.txt"))
    return t, t_ompi, pred, choice


def point(s, t, t_ompi, pred, choice, algos, mpi):
    """The columns of one size, or None without AUTO or a forced algorithm."""
    auto = t.get((s, "auto"))
    forced = {al: t[(s, al)] for al in algos if (s, al) in t}
    if auto is None or not forced:
        return None
    pick = choice.get(s, "?")
    best = min(forced, key=lambda al: (forced[al], al != pick))  # a tie goes to AUTO's choice
    mpich, ompi = t.get((s, mpi)), t_ompi.get((s, mpi))
    predicted = pred.get(s, {})
    errs = [predicted[al] / forced[al] - 1 for al in forced if al in predicted]
    return {
        "size": s, "pick": pick, "best": best, "auto_best": auto / forced[best],
        "vs_mpich": mpich / auto if mpich else None, "vs_ompi": ompi / auto if ompi else None,
        "vs_better": min(v for v in (mpich, ompi) if v) / auto if mpich or ompi else None,
        # AUTO's own row runs the chosen algorithm (its forced row may
        # start out of step: docs/scale.md, AUTO/best below 1)
        "err_pick": predicted[pick] / auto - 1 if pick in predicted else None,
        "err_median": statistics.median([abs(e) for e in errs]) if errs else None,
    }


def fmt(v, spec):
    return spec % v if v is not None else "-"


def table(a, coll, plat, ranks):
    """One platform's markdown table (lines), and its points per rank count.
    The reduce-scatter's and the all-gather's have a column more: AUTO
    against the better of the two selectors."""
    mpi, family = BASELINE[coll], coll != "allreduce"
    out = ["### %s%s\n" % (plat, ", " + coll if family else ""),
           "| ranks | size | AUTO's choice | fastest | AUTO/best | vs MPICH sel. | vs Open MPI sel. "
           + ("| vs better sel. " if family else "")
           + "| model error (choice) | model error (median) |",
           "|---:|---:|---|---|---:|---:|---:|" + ("---:|" if family else "") + "---:|---:|"]
    per_ranks = []
    for np_ in ranks:
        t, t_ompi, pred, choice = load_run(
            a.dirs, "%s-%d%s" % (plat, np_, "-" + coll if family else ""), mpi)
        sizes = sorted({s for s, _ in t})
        algos = sorted({al for _, al in t if al not in NOT_ALGOS})
        points = [p for p in (point(s, t, t_ompi, pred, choice, algos, mpi) for s in sizes) if p]
        for p in points:
            cols = [np_, human(p["size"]), p["pick"], p["best"], fmt(p["auto_best"], "%.2f"),
                    fmt(p["vs_mpich"], "%.2f"), fmt(p["vs_ompi"], "%.2f")]
            if family:
                cols.append(fmt(p["vs_better"], "%.2f"))
            cols += [fmt(None if p["err_pick"] is None else 100 * p["err_pick"], "%+.0f%%"),
                     fmt(None if p["err_median"] is None else 100 * p["err_median"], "%.0f%%")]
            out.append("| " + " | ".join(str(c) for c in cols) + " |")
        if a.plots:
            plot(a.plots, coll, plat, np_, t, t_ompi, sizes, algos)
        per_ranks.append((plat, np_, points))
    out.append("")
    return out, per_ranks


def plot(outdir, coll, plat, np_, t, t_ompi, sizes, algos):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for al in ["auto"] + algos:
        xs = [s for s in sizes if (s, al) in t]
        ax.plot(xs, [t[(s, al)] for s in xs], marker="o" if al == "auto" else ".",
                lw=2.5 if al == "auto" else 1, label="AUTO" if al == "auto" else al)
    mpi = BASELINE[coll]
    for label, tab in ((mpi + ", MPICH selector", t), (mpi + ", Open MPI selector", t_ompi)):
        xs = [s for s in sizes if (s, mpi) in tab]
        if xs:
            ax.plot(xs, [tab[(s, mpi)] for s in xs], ls="--", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes")
    ax.set_ylabel("simulated time (us)")
    ax.set_title("%s%s, %d ranks (SimGrid SMPI)"
                 % ("" if coll == "allreduce" else coll + ", ", plat, np_))
    ax.legend(fontsize=7)
    fig.tight_layout()
    name = "scale-%s%s-%d.png" % ("" if coll == "allreduce" else coll + "-", plat, np_)
    fig.savefig(os.path.join(outdir, name), dpi=80)
    plt.close(fig)


if __name__ == "__main__":
    main()
