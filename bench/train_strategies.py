#!/usr/bin/python3
"""rondo-train's strategies side by side: the same synthetic model trained
under each --strategy in turn, round after round, with rondo-train's defaults
otherwise (docs/PERFORMANCE.md, "rondo-train's strategies").

  bench/train_strategies.py                                  2 ranks, 4 rounds
  bench/train_strategies.py --hidden 4096,4096 --rounds 1    a model of 170 MB

Throughput is samples per second over the steps of epochs 2.. (as
train_scaling.py), each strategy's median over rounds and its ratio to the
first strategy's run of the same round. Memory is read at the end of each run
(rondo-train's final record): the largest resident set of any rank, and the
proportional set sizes of all ranks added up (shared pages counted once).
"""
import argparse
import copy
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_scaling  # noqa: E402  (command, start, finish, summary)


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--train", default=os.path.join(here, "..", "build", "examples", "train", "rondo-train"))
    p.add_argument("--mpiexec", default=os.environ.get("MPIEXEC", "mpiexec"))
    p.add_argument("--strategies", default="mirrored,central-storage",
                   help="comma-separated; the first is the baseline")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--per-rank", type=int, default=128, help="samples per rank per step")
    p.add_argument("--features", type=int, default=1024)
    p.add_argument("--hidden", default="1024,1024")
    p.add_argument("--classes", type=int, default=100)
    p.add_argument("--steps", type=int, default=40, help="steps per epoch (sets --samples)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("extra", nargs="*", help="more rondo-train options (after --)")
    return p.parse_args()


def run_once(a, strategy):
    b = copy.copy(a)
    b.extra = a.extra + ["--strategy", strategy]
    batch = a.per_rank * a.ranks
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = train_scaling.command(b, a.ranks, batch, batch * a.steps, out.name)
        recs = train_scaling.finish(cmd, train_scaling.start(cmd), out.name)
    s = train_scaling.summary(recs, a.ranks, batch, cmd)
    s["rss_max"], s["pss_total"] = recs[-1]["rss_mib_max"], recs[-1]["pss_mib_total"]
    return s


def main():
    a = parse()
    names = a.strategies.split(",")
    runs = {n: [] for n in names}
    for rnd in range(a.rounds):
        for n in names:
            runs[n].append(run_once(a, n))
            print("# round %d/%d: %s: %.0f samples/s" % (rnd + 1, a.rounds, n,
                  runs[n][-1]["samples_per_s"]), file=sys.stderr, flush=True)
    c = runs[names[0]][0]["config"]
    print("# rondo-train's strategies, %d ranks, %d rounds alternating, median of each"
          % (a.ranks, a.rounds))
    print("# model: MLP %s (%d variables: %.1f MiB of variables, as much momentum and "
          "gradients), synthetic data, %d samples per rank per step"
          % (c["shape"], c["variables"], c["variables"] * 4 / 2**20, a.per_rank))
    print("# %-16s %10s %8s %18s %14s %16s"
          % ("strategy", "samples/s", "step ms", "vs first, rounds", "RSS max MiB",
             "PSS total MiB"))
    for n in names:
        med = lambda k: statistics.median(r[k] for r in runs[n])
        ratios = sorted(r["samples_per_s"] / b["samples_per_s"]
                        for r, b in zip(runs[n], runs[names[0]]))
        print("  %-16s %10.0f %8.2f %18s %14.1f %16.1f"
              % (n, med("samples_per_s"), med("step_ms"),
                 "%.3f-%.3f" % (ratios[0], ratios[-1]), med("rss_max"), med("pss_total")))
    print("# command: %s" % runs[names[-1]][0]["command"])


if __name__ == "__main__":
    main()
