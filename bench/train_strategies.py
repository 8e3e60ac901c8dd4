#!/usr/bin/python3
"""rondo-train's strategies side by side: the same training under each
--strategy in turn, round after round, with rondo-train's defaults otherwise
(docs/PERFORMANCE.md, "rondo-train's strategies").

  bench/train_strategies.py                                  2 ranks, 4 rounds
  bench/train_strategies.py --hidden 4096,4096 --rounds 1    a model of 170 MB
  bench/train_strategies.py --dataset digits --target 0.95 --slow 1:2 \\
      --strategies mirrored,parameter-server:0,parameter-server:async

A strategy is a --strategy name; parameter-server:S also sets --staleness S,
sharded:K sets --stage K.
--workers is the number of ranks that train: a parameter-server run adds
--servers ranks to them. Without --dataset the data is synthetic, --per-rank
samples per worker per step and --steps steps per epoch; with it, the
dataset's own size and --batch.

Throughput is samples per second over the steps of epochs 2.. (as
train_scaling.py), each strategy's median over rounds and its ratio to the
first strategy's run of the same round. With --target, the time to
accuracy is the training time (evaluation not counted) of the epochs up to
the first whose test accuracy reaches it. Memory is read at the end of each
run (rondo-train's final record): the largest resident set of any rank, and
the proportional set sizes of all ranks added up (shared pages once).
"""
import argparse
import os
import shlex
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_scaling  # noqa: E402  (start, finish, summary)


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    train_scaling.add_run_arguments(p)
    p.add_argument("--strategies", default="mirrored,central-storage",
                   help="comma-separated; the first is the baseline")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--servers", type=int, default=1, help="parameter-server's extra ranks")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--dataset", help="digits or fashion-mnist instead of synthetic data")
    p.add_argument("--batch", type=int, default=64, help="with --dataset: the global batch")
    p.add_argument("--slow", help="RANK:MS: that rank sleeps MS ms before each step")
    p.add_argument("--target", type=float, help="test accuracy for the time to accuracy")
    return p.parse_args()


def command(a, strategy, out):
    name, _, option = strategy.partition(":")
    ranks = a.workers + (a.servers if name == "parameter-server" else 0)
    cmd = shlex.split(a.mpiexec) + ["-n", str(ranks), a.train, "--strategy", name,
                                    "--epochs", str(a.epochs), "--json", out, "-q"]
    if name == "parameter-server":
        cmd += ["--servers", str(a.servers)] + (["--staleness", option] if option else [])
    if name == "sharded" and option:
        cmd += ["--stage", option]
    if a.dataset:
        cmd += ["--dataset", a.dataset, "--batch", str(a.batch), "--hidden", a.hidden]
    else:
        batch = a.per_rank * a.workers
        cmd += ["--dataset", "synthetic", "--samples", str(batch * a.steps), "--features",
                str(a.features), "--classes", str(a.classes), "--hidden", a.hidden,
                "--batch", str(batch)]
    if a.slow:
        cmd += ["--debug-slow", a.slow]
    return cmd + a.extra


def run_once(a, strategy):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = command(a, strategy, out.name)
        recs = train_scaling.finish(cmd, train_scaling.start(cmd), out.name)
    s = train_scaling.summary(recs, a.workers, 0, cmd)
    final = recs[-1]
    s["rss_max"], s["pss_total"] = final["rss_mib_max"], final["pss_mib_total"]
    s["test_acc"], s["to_target"] = final["test_acc"], None
    if a.target is not None:
        spent = 0.0
        for e in (r for r in recs if r["type"] == "epoch"):
            spent += e["seconds"]
            if e["test_acc"] >= a.target:
                s["to_target"] = spent
                break
    return s


def main():
    a = parse()
    if a.dataset and a.hidden == "1024,1024":
        a.hidden = "256,128"  # rondo-train's default model for real data
    names = a.strategies.split(",")
    runs = {n: [] for n in names}
    for rnd in range(a.rounds):
        for n in names:
            runs[n].append(run_once(a, n))
            print("# round %d/%d: %s: %.0f samples/s" % (rnd + 1, a.rounds, n,
                  runs[n][-1]["samples_per_s"]), file=sys.stderr, flush=True)
    c = runs[names[0]][0]["config"]
    print("# rondo-train's strategies, %d workers (parameter-server: and %d server%s), "
          "%d rounds alternating, median of each%s"
          % (a.workers, a.servers, "" if a.servers == 1 else "s", a.rounds,
             "; rank %s sleeps %s ms before each step" % tuple(a.slow.split(":")) if a.slow else ""))
    print("# model: MLP %s (%d variables, %.1f MiB), %s, global batch %d"
          % (c["shape"], c["variables"], c["variables"] * 4 / 2**20, c["dataset"], c["batch"]))
    print("# %-26s %10s %8s %16s %9s %11s %9s %9s"
          % ("strategy", "samples/s", "step ms", "vs first, rounds", "test acc",
             "to target s", "RSS max", "PSS sum"))
    for n in names:
        med = lambda k: statistics.median(r[k] for r in runs[n])
        ratios = sorted(r["samples_per_s"] / b["samples_per_s"]
                        for r, b in zip(runs[n], runs[names[0]]))
        reached = [r["to_target"] for r in runs[n] if r["to_target"] is not None]
        target = ("%.2f" % statistics.median(reached) if len(reached) == len(runs[n])
                  else "%d/%d runs" % (len(reached), len(runs[n]))) if a.target else "-"
        print("  %-26s %10.0f %8.2f %16s %8.2f%% %11s %8.1fM %8.1fM"
              % (n, med("samples_per_s"), med("step_ms"),
                 "%.3f-%.3f" % (ratios[0], ratios[-1]), 100 * med("test_acc"), target,
                 med("rss_max"), med("pss_total")))
    print("# command: %s" % runs[names[-1]][0]["command"])


if __name__ == "__main__":
    main()
