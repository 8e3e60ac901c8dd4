#!/bin/sh
# The shared library exports exactly the public API: every function declared
# RONDO_API in rondo.h, and no other symbol (internal code is hidden), but
# MPI_Finalize (the profiling-interface wrapper that shuts rondo down first);
# and it calls MPI's collectives by their PMPI_ names (lib/base/pmpi.h).
set -u
lib=${top_builddir:-.}/lib/.libs/librondo.so
header=${top_srcdir:-.}/lib/rondo.h
[ -f "$lib" ] || { echo "SKIP: no shared library (configured with --disable-shared)"; exit 77; }
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u)
# Declarations start a line with RONDO_API and name the function on it.
declared=$(grep '^RONDO_API ' "$header" | sed -E 's/^[^(]*[ *](rondo_[a-z_0-9]+)\(.*/\1/' | sort -u)
status=0
# MPI_Finalize: rondo's profiling-interface wrapper (lib/api/lifecycle.c);
# ucp_disconnect_nb: the workaround for MPICH 4.0.2's finalize over UCX
# (lib/api/mpich_ucx.c), in an MPICH build only: built against another MPI
# library, librondo must not define it.
extra=$(echo "$exported" | grep -v '^rondo_' | grep -v -E '^(_init|_fini|MPI_Finalize|ucp_disconnect_nb)$')
if ! ldd "$lib" | grep -q libmpich && echo "$exported" | grep -qx ucp_disconnect_nb; then
  echo "FAIL: ucp_disconnect_nb is defined in a build against another MPI than MPICH"; status=1
fi
if [ -n "$extra" ]; then
  echo "FAIL: symbols exported without the rondo_ prefix:"; echo "$extra"; status=1
fi
missing=$(comm -23 "$(printf '%s\n' "$declared" > exports.declared; echo exports.declared)" \
                   "$(printf '%s\n' "$exported" > exports.actual; echo exports.actual)")
undeclared=$(comm -13 exports.declared exports.actual | grep -v -E '^(_init|_fini|MPI_Finalize|ucp_disconnect_nb)$')
rm -f exports.declared exports.actual
if [ -n "$missing" ]; then
  echo "FAIL: declared in rondo.h but not exported:"; echo "$missing"; status=1
fi
if [ -n "$undeclared" ]; then
  echo "FAIL: exported but not declared RONDO_API in rondo.h:"; echo "$undeclared"; status=1
fi
# rondo's own collectives go to MPI's profiling names (lib/base/pmpi.h), so
# that an interposer of the MPI names (librondo-mpi) never sees them.
pmpi=$(sed -n 's/^#define \(MPI_[A-Za-z_]*\) PMPI_.*/\1/p' "${top_srcdir:-.}/lib/base/pmpi.h")
called=$(nm -D --undefined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
direct=$(for f in $pmpi; do echo "$called" | grep -x "$f"; done)
if [ -n "$direct" ]; then
  echo "FAIL: librondo calls these by their MPI_ names (lib/base/pmpi.h lists them):"
  echo "$direct"; status=1
fi
[ -n "$pmpi" ] || { echo "FAIL: no names read from lib/base/pmpi.h"; status=1; }
# librondo-mpi exports the MPI calls it defines and its two queries, nothing
# else (interpose/).
mpilib=${top_builddir:-.}/interpose/.libs/librondo-mpi.so
if [ -f "$mpilib" ]; then
  want="MPI_Allgather MPI_Allgatherv MPI_Allreduce MPI_Barrier MPI_Bcast MPI_Finalize MPI_Iallreduce
MPI_Init MPI_Init_thread MPI_Reduce_scatter MPI_Reduce_scatter_block rondo_mpi_active rondo_mpi_counts"
  got=$(nm -D --defined-only "$mpilib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
        grep -v -E '^(_init|_fini)$' | LC_ALL=C sort -u | tr '\n' ' ')
  if [ "$(echo $got)" != "$(echo $want)" ]; then
    echo "FAIL: librondo-mpi exports: $got"; echo "      want: $(echo $want)"; status=1
  fi
fi
n=$(echo "$exported" | grep -c '^rondo_')
[ $status = 0 ] && echo "PASS: $n exported symbols, all declared in rondo.h"
exit $status
