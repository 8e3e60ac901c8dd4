# Sourced by the Python tests (launch, install.sh, example.sh):
#   rondo_python_env MODULE...
# sets python (RONDO_PYTHON, default /usr/bin/python3: Debian's numpy and
# torch are its), srcdir, RONDO_LIBRARY (the build tree's librondo.so,
# absolute) and rondo_pythonpath (the build tree's bindings/python, where
# the compiled rondo/_fast lies, then the sources'), or exits 77 saying why
# the test cannot run here: no shared library, a sanitizer build, or a
# module the interpreter cannot import. Where the build has rondo/_fast it
# exports RONDO_EXPECT_FAST=1 (unless RONDO_PYTHON_FAST=0 turns it off), and
# test_rondo.py then fails if the package did not load it.
rondo_python_env() {
  python=${RONDO_PYTHON:-/usr/bin/python3}
  srcdir=${top_srcdir:-.}
  [ -x "$python" ] || { echo "skipped: no $python"; exit 77; }
  RONDO_LIBRARY=$(cd "${top_builddir:-.}/lib/.libs" 2>/dev/null && pwd)/librondo.so
  [ -f "$RONDO_LIBRARY" ] ||
    { echo "skipped: no shared librondo (configured with --disable-shared?)"; exit 77; }
  # A sanitizer build's library cannot be loaded into an interpreter that
  # was not started with the sanitizer's runtime first.
  if nm -D "$RONDO_LIBRARY" 2>/dev/null | grep -q -E ' U __(asan|tsan|ubsan)_'; then
    echo "skipped: $RONDO_LIBRARY is a sanitizer build (the Python tests run in the plain build)"
    exit 77
  fi
  for module in "$@"; do
    "$python" -c "import $module" 2>/dev/null ||
      { echo "skipped: $python cannot import $module (Debian: apt-get install python3-$module)"; exit 77; }
  done
  export RONDO_LIBRARY
  pybuild=$(cd "${top_builddir:-.}" && pwd)/bindings/python
  rondo_pythonpath=$pybuild:$srcdir/bindings/python
  if [ "${RONDO_PYTHON_FAST:-1}" != 0 ] && ls "$pybuild"/rondo/_fast*.so > /dev/null 2>&1; then
    RONDO_EXPECT_FAST=1
    export RONDO_EXPECT_FAST
  fi
}
