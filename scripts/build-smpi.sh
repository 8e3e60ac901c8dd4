#!/bin/sh
# Builds librondo and rondo-bench for SimGrid's SMPI (docs/scale.md), out
# of tree in DIR (default build-smpi): ./scripts/build-smpi.sh [DIR]
#
# SMPI's smpicc makes every program a shared object that smpirun loads once
# per simulated rank, so configure cannot run what it compiles: configure
# runs with SMPI_PRETEND_CC set (smpicc then acts as a plain compiler), make
# runs without it. librondo is linked statically, so that each simulated
# rank gets its own copy of the library's globals; LD names the real linker
# because smpicc's pretend warning on stdout confuses libtool's probe.
# Afterwards run DIR/tools/rondo-bench under smpirun (bench/simulate.sh).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build-smpi}
for tool in smpicc smpirun; do
  command -v "$tool" >/dev/null 2>&1 ||
    { echo "build-smpi.sh: $tool not found: install SimGrid (apt-get install libsimgrid-dev)" >&2; exit 1; }
done
RONDO_TOP=$src
. "$src/scripts/common.sh" # RONDO_SHELL: configure, make and libtool in dash
rondo_autogen
mkdir -p "$dir"
cd "$dir"
# configure again when it changed since (make would rerun it without
# SMPI_PRETEND_CC, and fail)
if [ ! -f config.status ] || [ "$src/configure" -nt config.status ]; then
  echo "== configuring for SMPI in $(pwd) (configure.log)"
  SMPI_PRETEND_CC=1 CONFIG_SHELL=$RONDO_SHELL $RONDO_SHELL "$src/configure" CONFIG_SHELL=$RONDO_SHELL \
    CC=smpicc MPIEXEC=smpirun LD=/usr/bin/ld \
    CFLAGS="${CFLAGS:--O2 -g0}" --disable-shared --enable-static --disable-train \
    --without-cuda --without-nccl > configure.log 2>&1 ||
    { tail -n 20 configure.log >&2; exit 1; }
  grep -q '^#define RONDO_SMPI 1' config.h ||
    { echo "build-smpi.sh: configure did not recognise smpicc (configure.log)" >&2; exit 1; }
fi
echo "== building tools/rondo-bench for SMPI (make.log)"
env -u SMPI_PRETEND_CC make -j"$(nproc)" tools/rondo-bench > make.log 2>&1 ||
  { tail -n 30 make.log >&2; exit 1; }
echo "== $(pwd)/tools/rondo-bench"
