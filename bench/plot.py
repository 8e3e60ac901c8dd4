#!/usr/bin/python3
"""Chart rondo-bench JSON results (written by ``rondo-bench ... --json FILE``).

Usage:
    /usr/bin/python3 bench/plot.py RESULT.json [MORE.json ...] [-o OUT]
        [--metric busbw|algbw|time|speedup] [--type T] [--op O]
        [--title TEXT]

Collective sweeps (allreduce, allgather, broadcast, reduce_scatter,
alltoall) give one line per algorithm against message size; the MPI
baseline (algo "MPI_...") is black and dashed, and rows with wrong results
get a red x.  A sweep over several types/ops is plotted for its most common
(type, op) pair unless --type/--op pick another.  Fusion runs give grouped
bars of engine / single / loop time per model, with the ratios above them.

Several files of the same collective are overlaid, labelled by file name.
OUT's extension (.png, .svg, .pdf) picks the format; the default is the
first RESULT with .png.  Errors go to stderr with exit status 2; on success
the output path is printed.
"""

import argparse
import collections
import json
import math
import os
import sys
import textwrap

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

SWEEPS = ("allreduce", "allgather", "broadcast", "reduce_scatter", "alltoall")
METRICS = {  # --metric -> (row key, y axis label)
    "busbw": ("busbw_gbps", "bus bandwidth (GB/s)"),
    "algbw": ("algbw_gbps", "algorithm bandwidth (GB/s)"),
    "time": ("time_us", "time per call (us, log scale)"),
    "speedup": ("speedup_vs_mpi", "speedup over the MPI baseline"),
}
# An algorithm keeps its colour and marker in every chart.
ALGOS = ("auto", "ring", "recursive_doubling", "rabenseifner", "shm",
         "hierarchical", "mpi", "nccl", "staged", "hierarchical_nccl",
         "pairwise", "recursive_halving", "bruck")
MARKERS = "osD^vp<>hd*PXH8+1"  # one per ALGOS entry and the 4 of unknown names
FUSION_BARS = (("engine_ms", "engine (fused)", "tab:blue"),
               ("single_ms", "one allreduce of everything", "tab:green"),
               ("loop_ms", "one allreduce per tensor", "tab:orange"))
# rondo-bench fusion --sharded: an all-gather and a reduce-scatter per tensor
SHARDED_LABELS = ("engine (async all-gathers, reduce-scatters)",
                  "one all-gather + reduce-scatter of everything",
                  "MPI_Allgatherv + MPI_Reduce_scatter per tensor")


class PlotError(Exception):
    """A problem with the input or output; exit status 2."""


def is_num(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load(path):
    """Read one result file and check the fields its chart needs."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise PlotError(f"{path}: no such file")
    except OSError as e:
        raise PlotError(f"{path}: cannot read: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PlotError(f"{path}: invalid JSON: {e}")
    if not isinstance(data, dict):
        raise PlotError(f"{path}: expected a JSON object at the top level")
    coll = data.get("collective")
    if coll not in SWEEPS + ("fusion",):
        raise PlotError(f"{path}: unknown collective {coll!r} (expected "
                        f"one of {', '.join(SWEEPS)}, fusion)")
    rows = data.get("rows")
    if not isinstance(rows, list) or not rows:
        raise PlotError(f"{path}: no rows to plot")
    numeric = [b[0] for b in FUSION_BARS] if coll == "fusion" else ["size"]
    need = ["model" if coll == "fusion" else "algo"] + numeric
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise PlotError(f"{path}: row {i} is not an object")
        missing = [k for k in need if k not in row]
        if missing:
            raise PlotError(f"{path}: row {i} lacks {', '.join(missing)}")
        bad = [k for k in numeric if not is_num(row[k])]
        if bad:
            raise PlotError(f"{path}: row {i}: {', '.join(bad)} not a number")
    return data


def size_label(n):
    """8 -> '8B', 1024 -> '1K', 33554432 -> '32M'."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return f"{n:g}B"


def title(data, extra=""):
    """Collective, ranks and nodes, [type/op], MPI library's short name."""
    parts = [data["collective"]]
    if "ranks" in data:
        nodes = data.get("nodes", "?")
        parts.append(f"{data['ranks']} ranks on {nodes} "
                     f"node{'' if nodes == 1 else 's'}")
    if extra:
        parts.append(extra)
    lib = str(data.get("mpi_library") or "").strip()
    if lib:  # 'MPICH Version: 4.0.2\n...' -> 'MPICH 4.0.2'
        lib = lib.splitlines()[0].split(",")[0].replace("Version:", "")
        parts.append(" ".join(lib.split())[:40])
    return ", ".join(parts)


def footnote(fig, datas, names):
    """Small grey text at the bottom with each file's command and date."""
    lines = []
    for data, name in zip(datas, names):
        text = (f"$ {data.get('command', '?')}  ({data.get('date', '?')}, "
                f"{data.get('tool', 'rondo-bench')} "
                f"{data.get('version', '')})")
        lines += textwrap.wrap(text if len(datas) == 1 else
                               f"{name}: {text}", 130)
    fig.text(0.01, 0.005, "\n".join(lines), fontsize=7, color="0.35",
             va="bottom", family="monospace")
    fig.subplots_adjust(bottom=0.09 + 0.02 * len(lines))


def pair_text(pair, sep="/"):
    """('float32', 'sum') -> 'float32/sum'; ops '-' and 'none' are left out."""
    return sep.join(str(v) for v in pair if v not in (None, "", "-", "none"))


def pick_pair(rows, want_type, want_op, path):
    """The (type, op) pair to plot: the requested one or the most common."""
    pairs = collections.Counter((r.get("type"), r.get("op")) for r in rows)
    ok = [p for p in pairs if want_type in (None, p[0])
          and want_op in (None, p[1])]
    if not ok:
        have = "; ".join(pair_text(p, " ") or "(untyped)"
                         for p in sorted(pairs, key=str))
        raise PlotError(f"{path}: no rows with type={want_type or 'any'} "
                        f"op={want_op or 'any'}; available: {have}")
    return max(ok, key=lambda p: pairs[p])


def algo_index(algo):
    """Position of an algorithm in ALGOS; unknown ones after those."""
    base = (algo.split() or [""])[0]
    if base == "rondo":  # the other collectives' only line: like auto
        return 0
    if base in ALGOS:
        return ALGOS.index(base)
    return len(ALGOS) + sum(base.encode()) % 4


def algo_style(algo, first_file):
    """Line style: fixed colour/marker per algorithm, MPI baseline black."""
    if algo.startswith("MPI_"):
        return dict(color="black", marker="s", markersize=4, linewidth=2,
                    linestyle="--" if first_file else "-.")
    i = algo_index(algo)
    colours = plt.get_cmap("tab10").colors + plt.get_cmap("Dark2").colors
    style = dict(color=colours[i], markersize=5, marker=MARKERS[i],
                 linestyle="-" if first_file else ":")
    if algo.endswith(" in place"):
        style.update(markerfacecolor="white", linestyle="--")
    return style


def plot_sweep(datas, names, args):
    """Line chart: one line per algorithm over message size."""
    key, ylabel = METRICS[args.metric]
    fig, ax = plt.subplots(figsize=(10, 6))
    sizes, wrong = set(), []
    for n, (data, name, path) in enumerate(zip(datas, names, args.inputs)):
        pair = pick_pair(data["rows"], args.type, args.op, path)
        rows = [r for r in data["rows"]
                if (r.get("type"), r.get("op")) == pair]
        mixed = len({bool(r.get("inplace")) for r in rows}) > 1
        lines = collections.defaultdict(list)
        for r in rows:
            if is_num(r.get(key)) and r["size"] > 0:
                inplace = " in place" if mixed and r.get("inplace") else ""
                lines[f"{r['algo']}{inplace}"].append(r)
        for algo in sorted(lines, key=lambda a: (a.startswith("MPI_"),
                                                 algo_index(a), a)):
            if algo.startswith("MPI_") and args.metric == "speedup":
                continue  # the baseline is the line at 1.0
            pts = sorted(lines[algo], key=lambda r: r["size"])
            sizes.update(r["size"] for r in pts)
            ax.plot([r["size"] for r in pts], [r[key] for r in pts],
                    label=algo if len(datas) == 1 else f"{algo} ({name})",
                    **algo_style(algo, n == 0))
            wrong += [(r["size"], r[key]) for r in pts if r.get("wrong")]
    if not sizes:
        raise PlotError(f"{', '.join(args.inputs)}: no row has a size > 0 "
                        f"and a number in {key!r}; try another --metric")
    if args.metric == "speedup":
        ax.axhline(1.0, color="black", linestyle="--", linewidth=1.5,
                   label="MPI baseline (1.0)")
    if wrong:
        ax.scatter(*zip(*wrong), marker="x", color="red", s=90,
                   linewidths=2.5, zorder=5, label="wrong result")
    ax.set_xscale("log", base=2)
    lo, hi = int(math.log2(min(sizes))), math.ceil(math.log2(max(sizes)))
    step = max(1, math.ceil((hi - lo + 1) / 14))
    ticks = [2 ** k for k in range(hi, lo - 1, -step)][::-1]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([size_label(t) for t in ticks])
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(ylabel)
    if args.metric == "time":
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9)
    ax.set_title(args.title or title(datas[0], pair_text(pair)))
    return fig


def ratio(row, key, num, den):
    """row[key], or row[num] / row[den], as text with 2 decimals."""
    value = row.get(key)
    if not is_num(value):
        value = row[num] / row[den] if row[den] else None
    return "n/a" if value is None else f"{value:.2f}"


def plot_fusion(datas, names, args):
    """Grouped bars per model: engine / single / loop time in ms."""
    groups = []
    for data, name in zip(datas, names):
        for r in data["rows"]:
            label = str(r["model"]) + (" sharded" if r.get("pattern") == "sharded"
                                       else "")
            label += "" if len(datas) == 1 else f"\n({name})"
            if is_num(r.get("tensors")) and is_num(r.get("bytes")):
                label += (f"\n{r['tensors']} tensors, "
                          f"{r['bytes'] / 2 ** 20:.1f} MiB")
            groups.append((label, r))
    width = 0.26
    fig, ax = plt.subplots(figsize=(max(7, 2.2 * len(groups) + 2), 6))
    sharded = all(r.get("pattern") == "sharded" for _, r in groups)
    for k, (key, label, colour) in enumerate(FUSION_BARS):
        label = SHARDED_LABELS[k] if sharded else label
        ax.bar([i + (k - 1) * width for i in range(len(groups))],
               [r[key] for _, r in groups], width, label=label, color=colour)
    values = [r[b[0]] for _, r in groups for b in FUSION_BARS]
    log = min(values) > 0 and max(values) / min(values) > 50
    for i, (_, r) in enumerate(groups):
        text = (f"engine/single "
                f"{ratio(r, 'engine_over_single', 'engine_ms', 'single_ms')}"
                f"\nloop/engine "
                f"{ratio(r, 'loop_over_engine', 'loop_ms', 'engine_ms')}")
        if r.get("wrong"):
            text += f"\nWRONG: {r['wrong']}"
        ax.annotate(text, (i, max(r[b[0]] for b in FUSION_BARS)),
                    xytext=(0, 6), textcoords="offset points", ha="center",
                    va="bottom", fontsize=8,
                    color="red" if r.get("wrong") else "black")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[0] for g in groups], fontsize=9)
    if log:  # models of very different sizes
        ax.set_yscale("log")
        ax.set_ylim(top=max(values) * 3)
    else:
        ax.margins(y=0.2)
    ax.set_ylabel("time per step (ms" + (", log scale)" if log else ")"))
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9)
    ax.set_title(args.title or title(datas[0]))
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Chart rondo-bench --json results.")
    parser.add_argument("inputs", nargs="+", metavar="RESULT.json")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="output file, .png, .svg or .pdf (default: "
                             "the first RESULT with .png)")
    parser.add_argument("--metric", default="busbw",
                        help="sweeps: busbw (default), algbw, time, speedup")
    parser.add_argument("--type", help="data type to plot, e.g. float32")
    parser.add_argument("--op", help="reduction op to plot, e.g. sum")
    parser.add_argument("--title", help="replace the generated title")
    args = parser.parse_args(argv)
    try:
        if args.metric not in METRICS:
            raise PlotError(f"bad --metric {args.metric!r} (expected one "
                            f"of {', '.join(METRICS)})")
        out = args.output or os.path.splitext(args.inputs[0])[0] + ".png"
        ext = os.path.splitext(out)[1].lstrip(".").lower()
        if ext not in plt.figure().canvas.get_supported_filetypes():
            raise PlotError(f"{out}: unsupported output format {ext!r} "
                            "(use .png, .svg or .pdf)")
        plt.close("all")
        datas = [load(p) for p in args.inputs]
        names = [os.path.splitext(os.path.basename(p))[0]
                 for p in args.inputs]
        if len(set(names)) < len(names):  # same file name, other folders
            names = list(args.inputs)
        kinds = sorted({d["collective"] for d in datas})
        if len(kinds) > 1:
            raise PlotError("cannot overlay different collectives: "
                            + ", ".join(kinds))
        plot = plot_fusion if kinds == ["fusion"] else plot_sweep
        fig = plot(datas, names, args)
        footnote(fig, datas, names)
        try:
            fig.savefig(out, dpi=120, bbox_inches="tight")
        except OSError as e:
            raise PlotError(f"{out}: cannot write: {e.strerror or e}")
    except PlotError as e:
        print(f"plot.py: error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
