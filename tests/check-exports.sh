#!/bin/sh
# The shared library exports exactly the public API: every function declared
# RONDO_API in rondo.h, and no other symbol (internal code is hidden), but
# MPI_Finalize (the profiling-interface wrapper that shuts rondo down first).
set -u
lib=${top_builddir:-.}/lib/.libs/librondo.so
header=${top_srcdir:-.}/lib/rondo.h
[ -f "$lib" ] || { echo "SKIP: no shared library (configured with --disable-shared)"; exit 77; }
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u)
# Declarations start a line with RONDO_API and name the function on it.
declared=$(grep '^RONDO_API ' "$header" | sed -E 's/^[^(]*[ *](rondo_[a-z_0-9]+)\(.*/\1/' | sort -u)
status=0
# MPI_Finalize: rondo's profiling-interface wrapper (lib/api/lifecycle.c).
extra=$(echo "$exported" | grep -v '^rondo_' | grep -v -E '^(_init|_fini|MPI_Finalize)$')
if [ -n "$extra" ]; then
  echo "FAIL: symbols exported without the rondo_ prefix:"; echo "$extra"; status=1
fi
missing=$(comm -23 "$(printf '%s\n' "$declared" > exports.declared; echo exports.declared)" \
                   "$(printf '%s\n' "$exported" > exports.actual; echo exports.actual)")
undeclared=$(comm -13 exports.declared exports.actual | grep -v -E '^(_init|_fini|MPI_Finalize)$')
rm -f exports.declared exports.actual
if [ -n "$missing" ]; then
  echo "FAIL: declared in rondo.h but not exported:"; echo "$missing"; status=1
fi
if [ -n "$undeclared" ]; then
  echo "FAIL: exported but not declared RONDO_API in rondo.h:"; echo "$undeclared"; status=1
fi
n=$(echo "$exported" | grep -c '^rondo_')
[ $status = 0 ] && echo "PASS: $n exported symbols, all declared in rondo.h"
exit $status
