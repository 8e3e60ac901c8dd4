#!/bin/sh
# Every probe of tests/probe, the slow ones included (make check runs the
# fast ones), one line each, and the counts docs/reliability.md quotes:
#   tests/probe/run.sh [BUILD_DIR] [PROBE...]      (default: build, all)
# Each probe runs through tests/probe/launch; its output goes to
# BUILD_DIR/tests/probe/NAME.log. Exit status 0 when every probe that ran
# was as expected.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
build=$(cd "$build" && pwd) || exit 2
[ -x "$build/tests/probe/probe" ] || make -C "$build" tests/probe/probe > /dev/null || exit 2
top_srcdir=$top top_builddir=$build MPIEXEC=${MPIEXEC:-mpiexec}
export top_srcdir top_builddir MPIEXEC
# A sanitizer build: the settings make check uses (Makefile.am), so that
# MPI's and UCX's own leaks are not counted as the probe's.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$(cd "$top" && pwd)/tests/lsan.supp:print_suppressions=0}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
probes=$*
[ -n "$probes" ] || probes=$(ls "$top"/tests/probe/*.probe)
mkdir -p "$build/tests/probe"
n=0 good=0 badn=0 hung=0 skipped=0
start=$(date +%s)
for p in $probes; do
  name=$(basename "$p" .probe)
  log=$build/tests/probe/$name.log
  sh "$top/tests/probe/launch" "$p" > "$log" 2>&1
  rc=$?
  n=$((n + 1))
  verdict=$(grep "^probe $name: " "$log" | tail -n 1 | sed "s/^probe $name: //")
  what=$(sed -n '1s/^# //p' "$p")
  case $rc in
    0) good=$((good + 1)); mark=ok ;;
    77) skipped=$((skipped + 1)); mark=skip ;;
    *) badn=$((badn + 1)); mark=FAIL
       grep -q 'the job hung' "$log" && hung=$((hung + 1)) ;;
  esac
  printf '%-4s %-28s %s\n' "$mark" "$name" "${verdict:-no verdict (see $log)}"
  [ "$mark" = FAIL ] && sed -n '/NOT as expected/,$p' "$log" | tail -n +2
  [ -n "$what" ] && printf '     %s\n' "$what"
done
echo "probes: $n run, $good as expected, $badn not ($hung of them hung), $skipped skipped, in $(( $(date +%s) - start )) s"
[ "$badn" = 0 ]
