#!/usr/bin/python3
"""rondo-train's scaling: the same synthetic model trained on 1 rank and on N
ranks in one run, alternating, with rondo-train's defaults otherwise
(docs/PERFORMANCE.md, "rondo-train").

  bench/train_scaling.py                      1 and 2 ranks, 5 rounds
  bench/train_scaling.py --ranks 1,4,8,16 --rounds 3

Weak scaling (each rank's share of the global batch stays --per-rank; the
convention of Horovod's and TensorFlow's scaling numbers) and, with --strong,
strong scaling (the global batch stays --per-rank x the largest rank count).
Throughput is samples per second over the steps of epochs 2.. (epoch 1 warms
up; evaluation is not timed), the median over rounds. Efficiency at N ranks is
throughput(N) / (N x throughput(1)). With --ceiling, each round also runs N
independent 1-rank trainings at once (the machine's ceiling: every core
computing, nothing communicated), and efficiency is also given against
their summed throughput in the same round. "comm wait" is the share of step time
blocked in rondo_wait; "hidden" is the share of the all-reduce time (first
gradient submitted to last one completed) that backward overlapped.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile


def add_run_arguments(p):
    """The options this script shares with train_strategies.py: the binary,
    the launcher and the synthetic model."""
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--train", default=os.path.join(here, "..", "build", "examples", "train", "rondo-train"))
    p.add_argument("--mpiexec", default=os.environ.get("MPIEXEC", "mpiexec"),
                   help="the launcher, with its options (one string)")
    p.add_argument("--per-rank", type=int, default=128, help="samples per worker per step")
    p.add_argument("--features", type=int, default=1024)
    p.add_argument("--hidden", default="1024,1024")
    p.add_argument("--classes", type=int, default=100)
    p.add_argument("--steps", type=int, default=40, help="steps per epoch (sets --samples)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("extra", nargs="*", help="more rondo-train options (after --)")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(p)
    p.add_argument("--ranks", default="1,2", help="comma-separated rank counts (default 1,2)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--strong", action="store_true", help="keep the global batch instead")
    p.add_argument("--ceiling", action="store_true",
                   help="also N concurrent 1-rank runs per round: the machine's ceiling")
    p.add_argument("--json", help="write every run's numbers here")
    return p.parse_args()


def command(a, ranks, batch, samples, out):
    return shlex.split(a.mpiexec) + ["-n", str(ranks), a.train, "--dataset", "synthetic",
           "--samples", str(samples), "--features", str(a.features),
           "--classes", str(a.classes), "--hidden", a.hidden, "--batch", str(batch),
           "--epochs", str(a.epochs), "--json", out, "-q"] + a.extra


def start(cmd):
    env = dict(os.environ, RONDO_LOG=os.environ.get("RONDO_LOG", "error"))
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def finish(cmd, proc, out):
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        sys.exit("%s\nfailed (%d):\n%s%s" % (" ".join(cmd), proc.returncode, stdout, stderr))
    return [json.loads(line) for line in open(out)]


def run_once(a, ranks, batch, samples):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = command(a, ranks, batch, samples, out.name)
        recs = finish(cmd, start(cmd), out.name)
    return summary(recs, ranks, batch, cmd)


def run_ceiling(a, n, batch, samples):
    """n 1-rank runs at once: their summed samples per second."""
    outs = [tempfile.NamedTemporaryFile(suffix=".json") for _ in range(n)]
    cmds = [command(a, 1, batch, samples, o.name) for o in outs]
    procs = [start(c) for c in cmds]
    rates = [summary(finish(c, p, o.name), 1, batch, c)["samples_per_s"]
             for c, p, o in zip(cmds, procs, outs)]
    for o in outs:
        o.close()
    return sum(rates)


def summary(recs, ranks, batch, cmd):
    epochs = [e for e in recs if e["type"] == "epoch" and e["epoch"] >= 2]
    final = recs[-1]
    samples_timed = sum(e["samples"] for e in epochs)
    seconds = sum(e["seconds"] for e in epochs)
    steps = sum(e["steps"] for e in epochs)
    share = lambda key: sum(e[key] * e["seconds"] for e in epochs) / seconds
    return {"ranks": ranks, "batch": batch, "samples_per_s": samples_timed / seconds,
            "step_ms": 1e3 * seconds / steps, "comm_wait": share("comm_wait_share"),
            "hidden": share("comm_hidden_share"), "input_wait": share("input_wait_share"),
            "config": final["config"], "command": " ".join(cmd)}


def main():
    a = parse()
    counts = [int(x) for x in a.ranks.split(",")]
    if counts[0] != 1:
        sys.exit("--ranks must start with 1 (the baseline)")
    global_strong = a.per_rank * max(counts)
    plan = {n: (global_strong if a.strong else a.per_rank * n) for n in counts}
    runs = {n: [] for n in counts}
    ceilings = {n: [] for n in counts if n > 1}
    for rnd in range(a.rounds):
        for n in counts:
            batch = plan[n]
            runs[n].append(run_once(a, n, batch, batch * a.steps))
            print("# round %d/%d: %d rank(s): %.0f samples/s" % (rnd + 1, a.rounds, n,
                  runs[n][-1]["samples_per_s"]), file=sys.stderr, flush=True)
            if a.ceiling and n > 1:
                per = batch // n
                ceilings[n].append(run_ceiling(a, n, per, per * a.steps))
                runs[n][-1]["ceiling"] = ceilings[n][-1]
                print("# round %d/%d: %d 1-rank runs at once: %.0f samples/s"
                      % (rnd + 1, a.rounds, n, ceilings[n][-1]), file=sys.stderr, flush=True)
    c = runs[1][0]["config"]
    print("# rondo-train %s scaling, %d rounds alternating rank counts, median of each"
          % ("strong" if a.strong else "weak", a.rounds))
    print("# model: MLP %s (%d variables, %.1f MB of gradients per step), synthetic data"
          % (c["shape"], c["variables"], c["variables"] * 4 / 1e6))
    print("# batch: %s; defaults otherwise (all-reduce '%s' with deterministic=%s, prefetch=%s)"
          % ("%d per rank" % a.per_rank if not a.strong else "%d global" % global_strong,
             c["allreduce"], c["deterministic"], c["prefetch"]))
    print("# %5s %8s %12s %10s %10s %8s %10s %7s %10s"
          % ("ranks", "batch", "samples/s", "per rank", "efficiency", "step ms", "comm wait",
             "hidden", "input wait"))
    base = statistics.median(r["samples_per_s"] for r in runs[1])
    for n in counts:
        med = lambda k: statistics.median(r[k] for r in runs[n])
        rate = med("samples_per_s")
        print("  %5d %8d %12.0f %10.0f %10.3f %8.2f %9.1f%% %6.0f%% %9.1f%%"
              % (n, plan[n], rate, rate / n, rate / (n * base), med("step_ms"),
                 100 * med("comm_wait"), 100 * med("hidden"), 100 * med("input_wait")))
        spread = sorted(r["samples_per_s"] / (n * base) for r in runs[n])
        if n > 1:
            print("#        efficiency over rounds (each against the median 1-rank rate): %s"
                  % " ".join("%.3f" % x for x in spread))
        if ceilings.get(n):
            of = sorted(r["samples_per_s"] / r["ceiling"] for r in runs[n])
            print("#        of the ceiling (%d 1-rank runs at once, the same round): median %.3f,"
                  " rounds %s" % (n, statistics.median(of), " ".join("%.3f" % x for x in of)))
    print("# command: %s" % runs[counts[-1]][0]["command"])
    if a.json:
        json.dump(runs, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
