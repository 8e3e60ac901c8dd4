#!/usr/bin/python3
"""Where a training step's time goes, from rank 0's engine timeline.

    RONDO_TIMELINE=/tmp/t.json mpiexec -n 2 rondo-train ...
    bench/step_breakdown.py /tmp/t.json

The program marks its steps with rondo_timeline_mark (rondo-train does;
bench/ddp_step.py does on the rondo backend): "step" (forward begins),
"backward", "gradients ready" (backward's compute is done; DDP cannot say,
so the last gradient's submission stands for it), "gradients reduced" or
"backward done" (the program has every reduced gradient), "updated". The
engine's spans give each gradient's submission (QUEUE_WAIT's begin), the
moment it was ready on every rank (NEGOTIATE's end) and its reduction
(ALLREDUCE, with the fusion buffer's copies).

Per step, the median over the steps after --skip (and the 10th and 90th
percentiles):
  step            one "step" mark to the next
  forward         "step" to "backward"
  backward        "backward" to "gradients ready": compute, with the
                  gradients' submissions
  exposed tail    "gradients ready" to "gradients reduced": the compute
                  thread waits for the reductions
  optimizer       "gradients reduced" to "updated"
  reduction       the time in reductions (the union of their spans)
  submit->start   each gradient's submission to its reduction's start:
                  queued (until the engine takes it), negotiated (until
                  every rank has it), then behind other reductions
  last gradient   the last submission to its reduction's start, and to the
                  end of the step's last reduction
  cycles          negotiations that ran something
"""
import argparse
import json
import statistics
import sys

PHASES = ("step", "backward", "gradients ready", "gradients reduced", "updated")


def load(path):
    try:
        events = json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit("step_breakdown: cannot read the trace %s: %s" % (path, e))
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M"}
    marks = sorted((e["ts"] * 1e-3, e["name"]) for e in events if e.get("cat") == "app")
    spans = [e for e in events if e.get("ph") == "X"]
    return names, marks, spans


def gradients(names, spans):
    """One record per gradient submitted: its spans' times in ms."""
    out = []
    by_track = {}
    for e in sorted(spans, key=lambda e: e["ts"]):
        if names.get(e["tid"]) != "engine":
            by_track.setdefault(e["tid"], []).append(e)
    for tid, evs in by_track.items():
        g = None
        for e in evs:
            b, end = e["ts"] * 1e-3, (e["ts"] + e["dur"]) * 1e-3
            if e["name"] == "QUEUE_WAIT":  # a new submission of this name
                g = {"name": names.get(tid, "?"), "submit": b, "taken": end}
                out.append(g)
            elif g is None:
                continue
            elif e["name"] == "NEGOTIATE":
                g["ready"] = end
            else:  # the reduction and its copies (or another collective)
                g.setdefault("start", b)
                g["end"] = max(g.get("end", end), end)
                g.setdefault("work", []).append((b, end))
    return [g for g in out if "start" in g]


def steps_of(marks):
    """The steps: {phase: time} from one "step" mark to the next."""
    steps, cur = [], None
    for t, name in marks:
        if name == "step":
            if cur is not None:
                cur["next"] = t
            cur = {"step": t}
            steps.append(cur)
        elif cur is not None and name not in cur:
            cur[name] = t
    for s in steps:
        s.setdefault("gradients reduced", s.get("backward done"))
    return [s for s in steps if "next" in s and "backward" in s and s["gradients reduced"]]


def union(intervals):
    total, end = 0.0, None
    for b, e in sorted(intervals):
        if end is None or b > end:
            total += e - b
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def breakdown(step, grads, cycles):
    mine = [g for g in grads if step["step"] <= g["submit"] < step["next"]]
    if not mine:
        return None
    last = max(mine, key=lambda g: g["submit"])
    ready = step.get("gradients ready", last["submit"])
    r = {
        "step": step["next"] - step["step"],
        "forward": step["backward"] - step["step"],
        "backward": ready - step["backward"],
        "exposed tail": step["gradients reduced"] - ready,
        "optimizer": step.get("updated", step["gradients reduced"]) - step["gradients reduced"],
        "reduction": union([w for g in mine for w in g["work"]]),
        "submit->start": statistics.median(g["start"] - g["submit"] for g in mine),
        "  queued": statistics.median(g["taken"] - g["submit"] for g in mine),
        "  negotiated": statistics.median(g.get("ready", g["taken"]) - g["taken"] for g in mine),
        "  behind others": statistics.median(g["start"] - g.get("ready", g["taken"])
                                             for g in mine),
        "last gradient -> start": last["start"] - last["submit"],
        "last gradient -> all reduced": max(g["end"] for g in mine) - last["submit"],
        "cycles": sum(1 for c in cycles if step["step"] <= c < step["next"]),
        "gradients": len(mine),
    }
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="RONDO_TIMELINE's file (rank 0's)")
    p.add_argument("--skip", type=int, default=3, help="steps left out at the start (default 3)")
    p.add_argument("--label", default="", help="a name for the run in the heading")
    p.add_argument("--json", help="also write every step's numbers here (a JSON list)")
    a = p.parse_args()
    names, marks, spans = load(a.trace)
    if not any(name == "step" for _, name in marks):
        sys.exit("step_breakdown: %s has no \"step\" marks: the program must call "
                 "rondo_timeline_mark (rondo-train and bench/ddp_step.py do)" % a.trace)
    grads = gradients(names, spans)
    cycles = [e["ts"] * 1e-3 for e in spans
              if names.get(e["tid"]) == "engine" and e["name"] == "CYCLE_NEGOTIATION"]
    rows = [r for r in (breakdown(s, grads, cycles) for s in steps_of(marks)[a.skip:]) if r]
    if not rows:
        sys.exit("step_breakdown: no complete step after the first %d in %s" % (a.skip, a.trace))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("# step breakdown%s: %d steps of rank 0 (%s), median [p10 p90], ms"
          % (" of " + a.label if a.label else "", len(rows), a.trace))
    for key in rows[0]:
        vals = sorted(r[key] for r in rows)
        q = lambda f: vals[min(len(vals) - 1, int(f * len(vals)))]
        if key in ("cycles", "gradients"):
            print("  %-30s %8.0f" % (key, statistics.median(vals)))
        else:
            share = statistics.median(vals) / statistics.median(r["step"] for r in rows)
            print("  %-30s %8.3f  [%7.3f %7.3f]  %5.1f%%"
                  % (key, statistics.median(vals), q(0.1), q(0.9), 100 * share))


main()
