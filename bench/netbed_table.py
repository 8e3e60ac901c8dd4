#!/usr/bin/env python3
"""Markdown tables from bench/netbed_sweep.sh's JSON files, as
docs/PERFORMANCE.md prints them ("Across hosts").

    bench/netbed_table.py SWEEP_DIR/*.json

Each file is named RATE-HOSTSxPPN.json for allreduce (1gbit-4x4.json,
unlimited-2x2.json) and COLL-RATE-HOSTSxPPN.json for the other collectives
(reduce_scatter-1gbit-2x2.json, allgather-10gbit-2x1.json); the collective
is the one the file's header names. Per size: AUTO, MPI's call
(MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather), their ratio, what
AUTO ran (the "-> name" of the auto row in the run's .txt beside the
JSON, when it is there), the fastest algorithm forced in the same run
(memory_floor is no algorithm and is left out), AUTO over it, and for a
rate-limited link AUTO's and MPI's shares of the link bound from 1 MiB.
Times are the medians rondo-bench reports (its own "vs MPI" and "(miss)"
use the means).

The link bound: H hosts of L ranks (p = H L), one link per host carrying
R bytes/s each way (netbed.sh's tbf limits both directions), a collective
of n bytes as rondo-bench counts them. Ranks of one host exchange through
memory, which the bound takes as free.
  - allreduce (n the buffer): each host sends and receives 2 (H-1)/H n
    through its link: T >= 2 (H-1)/H n / R.
  - reduce_scatter (n the whole send buffer of each rank; each rank keeps
    n/p of the sum): the host's L ranks keep n/H of the result, and the
    (H-1)/H n meant for the other hosts needs this host's contribution,
    which no other host has; summing its L ranks' inputs in memory first
    leaves (H-1)/H n to send, and by symmetry as much arrives:
    T >= (H-1)/H n / R, whatever L. 2x1: n/2 each way (the one swap of
    halves); 2x2: n/2 too (the two ranks of a host sum their halves for the
    other host, and one n/2 crosses), while a flat ring over the 4 ranks
    puts 3/4 n through each link (67% of the bound at best) and pairwise
    exchange n (50%).
  - allgather (n the whole receive buffer; each rank gives n/p): a host
    holds n/H, its L ranks' blocks, and must receive the other (H-1)/H n,
    which no copy in memory can make; by symmetry as much leaves it:
    T >= (H-1)/H n / R, whatever L. 2x1: n/2 each way (the one swap);
    2x2: n/2 too (each block crosses once and is shared in memory), while
    a flat ring over the 4 ranks puts 3/4 n through each link and direct
    sends to every rank n.
The bound counts payload only: the headers of TCP/IP, which tbf counts
against the rate, come on top.
"""
import json
import os
import re
import sys

RATES = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3}
SHORT = {"recursive_doubling": "rd", "rabenseifner": "rab", "hierarchical": "hier",
         "recursive_halving": "rh"}
MPI_CALL = {"allreduce": "MPI_Allreduce", "reduce_scatter": "MPI_Reduce_scatter_block",
            "allgather": "MPI_Allgather"}
NOT_ALGORITHMS = ("auto", "memory_floor")
BOUND_FROM = 1 << 20
# what crosses each host's link each way, as a multiple of n, for H hosts
BOUND_FACTOR = {"allreduce": lambda h: 2 * (h - 1) / h,
                "reduce_scatter": lambda h: (h - 1) / h,
                "allgather": lambda h: (h - 1) / h}
BOUND_TEXT = {"allreduce": "2 (H-1)/H of the buffer",
              "reduce_scatter": "(H-1)/H of the whole send buffer",
              "allgather": "(H-1)/H of the whole receive buffer"}


def size_text(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def time_text(us):
    return f"{us:,.0f}" if us >= 1000 else f"{us:.1f}"


def auto_choices(json_path):
    """size -> what the auto row ran, from the run's .txt ("-> shm (miss)")."""
    txt = json_path[: -len(".json")] + ".txt"
    ran = {}
    try:
        with open(txt, errors="replace") as f:
            for line in f:
                m = re.match(r"\s+(\d+)\s+\d+\s+\S+\s+\S+\s+auto\s.*->\s+(\S+)", line)
                if m:
                    ran[int(m.group(1))] = m.group(2)
    except OSError:
        pass
    return ran


def table(path):
    name = os.path.basename(path)[: -len(".json")]
    m = re.fullmatch(r"(?:(allreduce|reduce_scatter|allgather)-)?(\w+?)-(\d+)x(\d+)", name)
    if not m:
        sys.exit(f"netbed_table: {path}: name it [COLL-]RATE-HOSTSxPPN.json")
    rate, hosts, ppn = m.group(2), int(m.group(3)), int(m.group(4))
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
    coll = doc.get("collective") or m.group(1) or "allreduce"
    if coll not in MPI_CALL:
        print(f"netbed_table: {path}: collective {coll} has no table here", file=sys.stderr)
        return False
    mpi_call = MPI_CALL[coll]
    factor = BOUND_FACTOR[coll](hosts) if bits and hosts > 1 else None
    net = re.search(r"network between nodes: [^;]*(;[^;]*GB/s)?(; measuring took [\d.]+ ms)?",
                    doc.get("topology", ""))
    print(f"**{coll}, {rate}, {hosts} hosts x {ppn} ranks** — "
          f"{net.group(0) if net else 'network: not reported'}")
    print()
    ran = auto_choices(path)
    by_size = {}
    for row in doc["rows"]:
        by_size.setdefault(row["size"], {})[row["algo"]] = row
    head = ["size", "AUTO (us)", "AUTO ran", f"{mpi_call} (us)", "AUTO vs MPI",
            "fastest forced (us)", "AUTO / fastest"]
    if factor:
        head += ["AUTO at link bound", "MPI at link bound"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    at_least_mpi = within = total = 0
    bound_ok = bound_total = 0
    wrong = 0
    for size in sorted(by_size):
        rows = by_size[size]
        wrong += sum(r["wrong"] for a, r in rows.items() if a != "memory_floor")
        if "auto" not in rows or mpi_call not in rows:
            continue
        auto = rows["auto"]["median_us"]
        mpi = rows[mpi_call]["median_us"]
        forced = {a: r["median_us"] for a, r in rows.items()
                  if a not in NOT_ALGORITHMS and a != mpi_call}
        if not forced:
            continue
        best = min(forced, key=forced.get)
        total += 1
        at_least_mpi += mpi / auto >= 1.0
        ok = auto / forced[best] <= 1.10
        within += ok
        cells = [size_text(size), time_text(auto), SHORT.get(ran.get(size), ran.get(size, "")),
                 time_text(mpi), f"{mpi / auto:.2f}" + ("" if mpi / auto >= 1.0 else " (<1)"),
                 f"{SHORT.get(best, best)} {time_text(forced[best])}",
                 f"{auto / forced[best]:.2f}" + ("" if ok else " (miss)")]
        if factor:
            bound_us = factor * size * 8 / bits * 1e6
            if size >= BOUND_FROM:
                share = bound_us / auto
                bound_total += 1
                bound_ok += share >= 0.90
                cells += [f"{share:.0%}" + ("" if share >= 0.90 else " (<90%)"),
                          f"{bound_us / mpi:.0%}"]
            else:
                cells += ["", ""]
        print("| " + " | ".join(cells) + " |")
    print()
    line = (f"AUTO >= {mpi_call} at {at_least_mpi} of {total} sizes; within 10% of the "
            f"fastest forced algorithm at {within} of {total}")
    if factor:
        line += (f"; >= 90% of the link bound at {bound_ok} of {bound_total} sizes from "
                 f"{size_text(BOUND_FROM)} (bound: {BOUND_TEXT[coll]} through each host's "
                 f"link each way, {factor:g} n / R)")
    print(line + f"; wrong results: {wrong}.")
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
