#!/usr/bin/env python3
"""Markdown tables from bench/netbed_sweep.sh's JSON files, as
docs/PERFORMANCE.md prints them ("Across hosts").

    bench/netbed_table.py SWEEP_DIR/*.json

Each file is named RATE-HOSTSxPPN.json (1gbit-4x4.json, unlimited-2x2.json).
Per size: AUTO, MPI_Allreduce, their ratio, the fastest algorithm forced in
the same run, AUTO over it, and for a rate-limited link AUTO's share of the
link bound (each host sends and receives 2 (H-1)/H of the buffer through its
link at the rate). Times are the medians rondo-bench reports.
"""
import json
import os
import re
import sys

RATES = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3}
SHORT = {"recursive_doubling": "rd", "rabenseifner": "rab", "hierarchical": "hier"}


def size_text(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def time_text(us):
    return f"{us:,.0f}" if us >= 1000 else f"{us:.1f}"


def table(path):
    name = os.path.basename(path)[: -len(".json")]
    m = re.fullmatch(r"(\w+?)-(\d+)x(\d+)", name)
    if not m:
        sys.exit(f"netbed_table: {path}: name it RATE-HOSTSxPPN.json")
    rate, hosts, ppn = m.group(1), int(m.group(2)), int(m.group(3))
    bits = None
    r = re.fullmatch(r"(\d+(?:\.\d+)?)(gbit|mbit|kbit)", rate.lower())
    if r:
        bits = float(r.group(1)) * RATES[r.group(2)]
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"netbed_table: {path}: no table ({e}); see the run's .txt", file=sys.stderr)
        return False
    net = re.search(r"network between nodes: [^;]*(;[^;]*GB/s)?(; measuring took [\d.]+ ms)?",
                    doc.get("topology", ""))
    print(f"**{rate}, {hosts} hosts x {ppn} ranks** — {net.group(0) if net else 'network: not reported'}")
    print()
    by_size = {}
    for row in doc["rows"]:
        by_size.setdefault(row["size"], {})[row["algo"]] = row
    head = ["size", "AUTO (us)", "MPI_Allreduce (us)", "AUTO vs MPI", "fastest forced (us)",
            "AUTO / fastest"]
    if bits:
        head.append("AUTO at link bound")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    at_least_mpi = within = total = 0
    wrong = 0
    for size in sorted(by_size):
        rows = by_size[size]
        wrong += sum(r["wrong"] for r in rows.values())
        if "auto" not in rows or "MPI_Allreduce" not in rows:
            continue
        auto = rows["auto"]["median_us"]
        mpi = rows["MPI_Allreduce"]["median_us"]
        forced = {a: r["median_us"] for a, r in rows.items() if a not in ("auto", "MPI_Allreduce")}
        if not forced:
            continue
        best = min(forced, key=forced.get)
        total += 1
        at_least_mpi += mpi / auto >= 1.0
        ok = auto / forced[best] <= 1.10
        within += ok
        cells = [size_text(size), time_text(auto), time_text(mpi), f"{mpi / auto:.2f}",
                 f"{SHORT.get(best, best)} {time_text(forced[best])}",
                 f"{auto / forced[best]:.2f}" + ("" if ok else " (miss)")]
        if bits:
            bound_us = 2 * (hosts - 1) / hosts * size * 8 / bits * 1e6
            cells.append(f"{bound_us / auto:.0%}" if size >= (1 << 20) else "")
        print("| " + " | ".join(cells) + " |")
    print()
    print(f"AUTO >= MPI_Allreduce at {at_least_mpi} of {total} sizes; within 10% of the "
          f"fastest forced algorithm at {within} of {total}; wrong results: {wrong}.")
    print()
    return total > 0 and wrong == 0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ok = True
    for path in sys.argv[1:]:
        ok &= table(path)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
