#!/bin/sh
# The Python package installs offline with Debian's pip and setuptools, the
# two ways docs/python.md gives, and the installed copy works at 1 rank:
#   a virtual environment made with --system-site-packages, and
#   pip install --target DIR.
# Skipped (77) without /usr/bin/python3's venv, pip or numpy.
set -u
. "${top_srcdir:-.}/tests/python/common.sh"
rondo_python_env venv pip numpy
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
# pip builds in the source tree; build from a copy so the checkout stays clean.
cp -r "$srcdir/bindings/python" "$tmp/src"
status=0
check() { # what, command...
  what=$1; shift
  if "$@" > "$tmp/out" 2>&1; then echo "ok: $what"; else echo "FAIL: $what"; cat "$tmp/out"; status=1; fi
}
probe='import rondo, numpy as np; rondo.init(); x = rondo.allreduce(np.arange(3.0)); assert (x == np.arange(3.0)).all(), x; print(rondo.__file__); rondo.shutdown()'
# With Python's headers, pip compiles rondo/_fast too, and the installed
# package must load it.
if "$python" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  probe="$probe; assert rondo._fast is not None, 'rondo._fast was not installed'"
fi
check "venv --system-site-packages" "$python" -m venv --system-site-packages "$tmp/venv"
check "pip install into the venv" "$tmp/venv/bin/pip" install --no-build-isolation --no-index "$tmp/src"
check "the venv's rondo works" "$tmp/venv/bin/python" -c "$probe"
grep -q "$tmp/venv/" "$tmp/out" || { echo "FAIL: not the venv's copy: $(cat "$tmp/out")"; status=1; }
check "pip install --target" "$python" -m pip install --no-build-isolation --no-index --no-deps --target "$tmp/target" "$tmp/src"
check "the target's rondo works" env PYTHONPATH="$tmp/target" "$python" -c "$probe"
grep -q "$tmp/target/" "$tmp/out" || { echo "FAIL: not the target's copy"; status=1; }
# Without a library to load: an ImportError that says what to do.
check "a clear ImportError without librondo" env RONDO_LIBRARY=/nonexistent/librondo.so \
  PYTHONPATH="$tmp/target" "$python" -c '
try:
    import rondo
except ImportError as e:
    assert "RONDO_LIBRARY" in str(e) and "docs/python.md" in str(e), e
else:
    raise SystemExit("no ImportError")'
[ $status = 0 ] && echo "install.sh: all passed"
exit $status
