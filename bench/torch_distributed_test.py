#!/usr/bin/python3
"""PyTorch's own distributed test suite on the "rondo" backend (or gloo).

Runs DistributedTest._DistTestBase from torch's
torch/testing/_internal/distributed/distributed_test.py (imported from the
installed torch, never copied) the way upstream's
test/distributed/test_distributed_spawn.py runs it for gloo: one TestCase
(TestDistBackend + DistributedTest._DistTestBase) whose setUp spawns
WORLD_SIZE processes (multiprocessing "spawn") for every test; each
process calls init_process_group(BACKEND) and runs the test as its rank.

    RONDO_LIBRARY=$PWD/build/lib/.libs/librondo.so \\
        PYTHONPATH=$PWD/build/bindings/python:$PWD/bindings/python \\
        /usr/bin/python3 bench/torch_distributed_test.py --backend rondo \\
        --world-size 2 [-k PATTERN] [--list] [--json OUT] [--timeout S] [--init env|file]

RONDO_LIBRARY defaults to build/lib/.libs/librondo.so of this repository
when unset; PYTHONPATH must name the rondo package (build/bindings/python
for the built extension, bindings/python for the sources). No mpiexec: the
rondo backend forms its world from the store torch hands it
(bindings/python/rondo/torch/rendezvous.py). The spawned children re-import
this file as their main module, so the module-level `import rondo.torch`
registers the backend in every child.

Environment distributed_test.py reads, set here before it is imported:
BACKEND, WORLD_SIZE, TEMP_DIR (a fresh temporary directory; TestDistBackend
makes a new one per test), INIT_METHOD, MASTER_ADDR (127.0.0.1, as
TestDistBackend.setUpClass sets it) and DISTRIBUTED_TESTS_DEFAULT_TIMEOUT
(common_distributed's per-test timeout: after it the parent kills the
test's processes and the test errors).

--init env (the default): every test's processes meet with
init_method="env://" at MASTER_ADDR and a MASTER_PORT that is free when the
test starts (set in the parent before it spawns), and INIT_METHOD=env://.
--init file: exactly upstream's TestDistBackend, whose init_method is a
file:// store per test (TestDistBackend.setUp also resets INIT_METHOD to a
file:// path, whatever run_test.py set).

The last line printed is the summary:
    torch distributed_test.py, BACKEND=X, WORLD_SIZE=N: R run, P passed, F failed, E errors, S skipped (T s)
--json OUT writes {"summary": {...}, "tests": {name: {"outcome":
pass|fail|error|skip, "reason": first line}}}. Errors raised in a child
reach the parent as "Process i exited with error code 10 and exception:
<traceback>"; the reason given is then the traceback's last line (the
exception itself), prefixed with the rank.
"""
import argparse
import os
import socket
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__":
    _parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    _parser.add_argument("--backend", choices=("rondo", "gloo"), required=True)
    _parser.add_argument("--world-size", type=int, default=2)
    _parser.add_argument("-k", dest="patterns", action="append", default=[],
                         help="only tests matching this unittest -k pattern (repeatable)")
    _parser.add_argument("--list", action="store_true", help="list the tests and exit")
    _parser.add_argument("--json", metavar="OUT", help="write per-test outcomes here")
    _parser.add_argument("--timeout", type=int, default=150,
                         help="seconds per test before its processes are killed "
                              "(upstream default 300; default %(default)s)")
    _parser.add_argument("--init", choices=("env", "file"), default="env",
                         help="env:// with a fresh MASTER_PORT per test (default) or "
                              "upstream TestDistBackend's file:// store")
    _parser.add_argument("--skips-as", metavar="NAME",
                         help="decide torch's per-backend skips as for backend NAME (gloo) "
                              "while running on --backend: runs the tests torch keeps for "
                              "gloo on rondo (not upstream's procedure; their bodies see "
                              "the real backend's name)")
    _parser.add_argument("-v", "--verbose", action="store_true")
    ARGS = _parser.parse_args()
    os.environ["BACKEND"] = ARGS.skips_as or ARGS.backend
    os.environ["RONDO_TDT_BACKEND"] = ARGS.backend
    os.environ["WORLD_SIZE"] = str(ARGS.world_size)
    os.environ["TEMP_DIR"] = tempfile.mkdtemp(prefix="tdt-")
    os.makedirs(os.path.join(os.environ["TEMP_DIR"], "barrier"))
    os.makedirs(os.path.join(os.environ["TEMP_DIR"], "test_dir"))
    os.environ["INIT_METHOD"] = "env://"
    os.environ["RONDO_TDT_INIT"] = ARGS.init
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["DISTRIBUTED_TESTS_DEFAULT_TIMEOUT"] = str(ARGS.timeout)
    # common_utils parses sys.argv when imported; the spawned children get
    # this argv too.
    sys.argv = sys.argv[:1]

os.environ.setdefault("RONDO_LIBRARY", os.path.join(REPO, "build", "lib", ".libs", "librondo.so"))

try:
    import expecttest  # noqa: F401 - common_utils imports it; Debian ships no package of it
except ImportError:
    # A stand-in with what common_utils uses of it (TestCase, ACCEPT);
    # distributed_test.py uses none of expecttest's assertions.
    import types
    import unittest as _unittest
    expecttest = types.ModuleType("expecttest")
    expecttest.ACCEPT = False
    expecttest.TestCase = _unittest.TestCase
    sys.modules["expecttest"] = expecttest

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

if os.environ.get("RONDO_TDT_BACKEND", os.environ.get("BACKEND")) == "rondo":
    import rondo.torch  # noqa: F401,E402 - registers the "rondo" backend (here and in each child)

from torch.testing._internal.distributed import distributed_test as _dt  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest, TestDistBackend)

# --skips-as: the decorators were evaluated for $BACKEND (here and in every
# child, which imports this file again with the same environment); the
# processes initialize the real backend (distributed_test's _run reads
# this global).
_dt.BACKEND = os.environ.get("RONDO_TDT_BACKEND", os.environ["BACKEND"])

torch.backends.cuda.matmul.allow_tf32 = False
BACKEND = _dt.BACKEND
INIT = os.environ.get("RONDO_TDT_INIT", "env")


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        if INIT == "env":
            # TestDistBackend.setUp pointed INIT_METHOD at a file; the
            # children read it when they import distributed_test.
            os.environ["INIT_METHOD"] = "env://"
            os.environ["MASTER_PORT"] = str(_free_port())
        self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

    @property
    def init_method(self):
        if INIT == "env":
            return "env://"
        return super().init_method


_suffix = "NoInitFile" if INIT == "env" else ""
TestDistBackendWithSpawn.__name__ = "TestDistBackendWithSpawn%s%s" % (BACKEND.upper(), _suffix)
TestDistBackendWithSpawn.__qualname__ = TestDistBackendWithSpawn.__name__
globals()[TestDistBackendWithSpawn.__name__] = TestDistBackendWithSpawn


def _reason(err):
    """First line of an exception's message; for a child's error, the rank
    and the last line of its traceback."""
    etype, value, _ = err
    text = str(value)
    lines = text.splitlines()
    if lines and lines[0].startswith("Process ") and "exited with error code" in lines[0]:
        rank = lines[0].split()[1]
        body = []
        for line in lines[1:]:
            if line.startswith("Process ") and "exited with error code" in line:
                break
            body.append(line)
        tail = [l for l in body if l.strip()]
        # the exception's first line: the first unindented line after the
        # traceback's last frame
        last = max([i for i, l in enumerate(tail) if l.startswith("  File ")], default=-1)
        for line in tail[last + 1:]:
            if not line.startswith(" "):
                return "rank %s: %s" % (rank, line.strip())
        return "rank %s: %s" % (rank, tail[-1].strip() if tail else "")
    first = lines[0] if lines else ""
    return "%s: %s" % (etype.__name__, first)


def main():
    import json
    import time
    import unittest

    loader = unittest.TestLoader()
    if ARGS.patterns:
        loader.testNamePatterns = ["*%s*" % p if "*" not in p else p for p in ARGS.patterns]
    suite = loader.loadTestsFromTestCase(TestDistBackendWithSpawn)
    tests = list(suite)
    if ARGS.list:
        for t in tests:
            print(t.id().split(".")[-1])
        print("%d tests" % len(tests))
        return 0

    outcomes = {}

    class Result(unittest.TextTestResult):
        def _name(self, test):
            return test.id().split(".")[-1]

        def addSuccess(self, test):
            super().addSuccess(test)
            outcomes[self._name(test)] = {"outcome": "pass", "reason": ""}
            self._flush()

        def addFailure(self, test, err):
            super().addFailure(test, err)
            outcomes[self._name(test)] = {"outcome": "fail", "reason": _reason(err)}
            self._flush()

        def addError(self, test, err):
            super().addError(test, err)
            outcomes[self._name(test)] = {"outcome": "error", "reason": _reason(err)}
            self._flush()

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            outcomes[self._name(test)] = {"outcome": "skip",
                                          "reason": (str(reason).splitlines() or [""])[0]}
            self._flush()

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            outcomes[self._name(test)] = {"outcome": "pass", "reason": "expected failure"}
            self._flush()

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            outcomes[self._name(test)] = {"outcome": "fail", "reason": "unexpected success"}
            self._flush()

        def _flush(self):
            # partial results survive an interrupted run
            if ARGS.json:
                write_json(partial=True)

    t0 = time.time()
    summary = {}

    def write_json(partial=False):
        counts = {k: sum(1 for o in outcomes.values() if o["outcome"] == k)
                  for k in ("pass", "fail", "error", "skip")}
        summary.update({"backend": BACKEND, "world_size": int(os.environ["WORLD_SIZE"]),
                        "init": INIT, "selected": len(tests), "run": len(outcomes),
                        "passed": counts["pass"], "failed": counts["fail"],
                        "errors": counts["error"], "skipped": counts["skip"],
                        "seconds": round(time.time() - t0, 1), "partial": partial})
        tmp = ARGS.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"summary": summary, "tests": outcomes}, f, indent=1, sort_keys=True)
        os.replace(tmp, ARGS.json)

    runner = unittest.TextTestRunner(verbosity=2, resultclass=Result, stream=sys.stdout)
    result = runner.run(unittest.TestSuite(tests))
    elapsed = time.time() - t0
    if ARGS.json:
        write_json()
    skipped = len(result.skipped)
    failed = len(result.failures) + len(result.unexpectedSuccesses)
    errors = len(result.errors)
    passed = result.testsRun - skipped - failed - errors
    print("torch distributed_test.py, BACKEND=%s, WORLD_SIZE=%s: %d run, %d passed, %d failed, "
          "%d errors, %d skipped (%.0f s)" % (BACKEND, os.environ["WORLD_SIZE"], result.testsRun,
                                              passed, failed, errors, skipped, elapsed))
    sys.stdout.flush()
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
