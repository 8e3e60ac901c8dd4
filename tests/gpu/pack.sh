#!/bin/sh
# Adds the GPU verification to the device kit's .device/ (after
# ../shared/device/pack.sh BUILD_DIR): the test program and tests/gpu/run.sh.
#   tests/gpu/pack.sh [BUILD_DIR]      (default build)
# Then, in a device run with carry [".device"]:
#   . .device/env.sh; .device/gpu/run.sh "" "$OUT"
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$top/$build ;; esac
[ -d "$top/.device" ] || { echo "$0: no .device/: run ../shared/device/pack.sh $build first" >&2; exit 2; }
make -C "$build" tests/mpi/test_device >/dev/null
mkdir -p "$top/.device/gpu"
cp "$build/tests/mpi/test_device" "$top/tests/gpu/run.sh" "$top/.device/gpu/"
du -sh "$top/.device/gpu"
