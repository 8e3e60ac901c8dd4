# Sourced by the Python tests (launch, install.sh, example.sh):
#   rondo_python_env MODULE...
# sets python (RONDO_PYTHON, default /usr/bin/python3: Debian's numpy and
# torch are its), srcdir and RONDO_LIBRARY (the build tree's librondo.so,
# absolute), or exits 77 saying why the test cannot run here: no shared
# library, a sanitizer build, or a module the interpreter cannot import.
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
}
