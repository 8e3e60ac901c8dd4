"""A small checker for the Python tests run under mpiexec (tests/python/launch):
every rank counts its checks and failures; finish() prints the summary line
the launcher and CI read, and exits 1 if any rank failed."""
import faulthandler
import os
import signal
import sys
import traceback

import rondo

checks = 0
failures = 0
where = ""


def section(name):
    global where
    where = name


def check(cond, what, *args):
    global checks, failures
    checks += 1
    if not cond:
        failures += 1
        print("FAIL [rank %s] %s: %s" % (os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "?")), where,
                                          what % args if args else what), file=sys.stderr)
        if failures > 50:
            sys.exit(1)
    return cond


def one_rank(bad, good, exc, others, what):
    """Rank 0 makes call `bad`, the others `good`: rank 0 raises exc, the
    others `others` naming rank 0; nobody waits."""
    if rondo.size() == 1:
        raises(exc, bad)
        return
    e = raises(exc if rondo.rank() == 0 else others, bad if rondo.rank() == 0 else good)
    check(e is not None and (rondo.rank() == 0 or "rank 0" in str(e)), "%s: %s", what, e)


def raises(exc, fn, *args, **kwargs):
    """Checks that fn raises exc; returns the exception (or None)."""
    try:
        fn(*args, **kwargs)
    except exc as e:
        check(True, "raised")
        return e
    except Exception as e:  # noqa: BLE001 - the check says what was raised instead
        check(False, "%s raised %s: %s, expected %s", getattr(fn, "__name__", fn),
              type(e).__name__, e, exc.__name__)
        return None
    check(False, "%s did not raise %s", getattr(fn, "__name__", fn), exc.__name__)
    return None


def run(name, tests):
    """Runs each test (a function) and finishes. MPITEST_VERBOSE=1 prints
    each test's name as it starts; SIGUSR1 prints every thread's stack."""
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    for t in tests:
        section(t.__name__)
        if os.environ.get("MPITEST_VERBOSE"):
            print("[rank %s] %s" % (rondo.rank(), t.__name__), file=sys.stderr, flush=True)
        try:
            t()
        except Exception:  # noqa: BLE001 - a test that throws is a failure, not a crash
            check(False, "raised:\n%s", traceback.format_exc())
    import numpy as np
    total = rondo.allreduce(np.array([checks, failures], np.int64))
    if rondo.rank() == 0:
        print("%s (%d ranks): %d checks, %d failed" % (name, rondo.size(), total[0], total[1]))
    sys.stdout.flush()
    rondo.shutdown()
    sys.exit(1 if total[1] else 0)
