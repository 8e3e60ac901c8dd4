#!/bin/sh
# The whole test suite: install what is missing, configure the four build
# folders at once, then
#   1. build/         : 'make distcheck' (the tarball builds,
#                       installs and passes its part of 'make check', 'make
#                       print-plain-tests': the 4- and 5-rank runs, the
#                       emulated hosts, the tools' end-to-end runs, Python,
#                       the export check); build/ itself is not compiled
#                       (distcheck compiles its own copy), scripts/run.sh
#                       compiles it
#   2. build-asan/    : the rest, built with AddressSanitizer + UBSan: the
#                       library's tests at 1-3 ranks, every C probe, the unit
#                       tests and the tools' parsers ('make
#                       print-sanitizer-tests'); the two lists and stage
#                       3's TSAN_ONLY split 'make check' exactly,
#                       Makefile.am says why
#   3. build-tsan/    : the threaded parts (the engine's tests and probes,
#                       completion queues, the rendezvous's server and
#                       watcher, the timeline, and rondo-train's engine and
#                       prefetch thread while it trains, checkpoints and
#                       resumes: tests/train/threads.sh; its other runs,
#                       the same threads at other rank counts and for
#                       longer, run in stages 1, 2 and 4) built with
#                       ThreadSanitizer ('make print-thread-sanitizer-tests';
#                       the timeline's test and threads.sh run only here)
#   4. build-openmpi/ : against Open MPI 4.1 (installed beside MPICH, which
#                       stays the system's default): the library's tests at
#                       2 ranks (the interposer's among them), the
#                       algorithms' at 3, two on
#                       virtual nodes at 4, the NumPy and torch.distributed
#                       tests at 2 ranks,
#                       rondo-train's runs that call MPI themselves and the
#                       export check ('make print-openmpi-tests');
#                       docs/building.md
# and a closing line with the totals. Any failure fails the command.
set -eu
RONDO_TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$RONDO_TOP/scripts/common.sh"
rondo_install_deps
rondo_apt_install libsimgrid-dev # tests/smpi.sh: rondo on SimGrid's SMPI (docs/scale.md)
rondo_apt_install slurm-wlm munge # tests/launch/slurm.sh: a private one-node Slurm
rondo_apt_install valgrind # tests/launch/outsider-valgrind.sh: the rendezvous server under valgrind
rondo_install_openmpi
rondo_mpi_env
start=$(date +%s)
stage_start=$start
pass=0 fail=0 skip=0

# Adds up the automake harness summary ("# PASS:  12") printed in file $1,
# shows the end of the log of every test that failed in build folder $2
# (CI keeps only this command's output) and the stage's time.
tally() {
  p=$(sed -n 's/^# PASS: *//p' "$1" | tail -n 1); f=$(sed -n 's/^# FAIL: *//p' "$1" | tail -n 1)
  s=$(sed -n 's/^# SKIP: *//p' "$1" | tail -n 1); x=$(sed -n 's/^# ERROR: *//p' "$1" | tail -n 1)
  pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0} + ${x:-0})); skip=$((skip + ${s:-0}))
  for t in $(sed -n 's/^\(FAIL\|ERROR\): //p' "$1"); do
    for log in $(find "$2" -path "*/${t%.*}.log" 2>/dev/null); do
      echo "== the end of $log"
      tail -n 40 "$log"
    done
  done
  echo "== stage time: $(( $(date +%s) - stage_start )) s"
  stage_start=$(date +%s)
}

# run_logged FILE CMD...: runs CMD, its output both shown and kept in FILE.
run_logged() {
  out=$1; shift
  { "$@" 2>&1; echo $? > "$out.rc"; } | tee "$out"
  rc=$(cat "$out.rc"); rm -f "$out.rc"
  return "$rc"
}

# build_check_programs DIR TESTS...: builds in DIR only the check programs
# these tests run, for a stage that runs few of them (it then passes
# check_PROGRAMS= to make check, which would build them all): each .mpi
# file's (tests/mpi/launch --program), the probes' driver, a unit test
# itself, and test_collectives, which the launcher tests run. A program
# left out fails its test ("not built"), not silently.
build_check_programs() {
  dir=$1; shift
  programs=$(for t in "$@"; do
    case $t in
      *.mpi) echo "tests/mpi/$(sh "$RONDO_TOP/tests/mpi/launch" --program "$RONDO_TOP/$t")" ;;
      *.probe) echo tests/probe/probe ;;
      tests/unit/*) echo "$t" ;;
    esac
  done | sort -u)
  make -C "$dir" -j"$(nproc)" $programs tests/mpi/test_collectives >> "$dir/make.out" 2>&1 ||
    { tail -n 40 "$dir/make.out"; return 1; }
}

# Each stage's configure arguments, and its MPI (use_openmpi: Open MPI's
# launcher, and the compiler its wrapper calls).
asan_args="--enable-sanitizers --disable-static"
tsan_args="--enable-sanitizers=thread --disable-static"
openmpi_args="--disable-static"
use_openmpi() { RONDO_CC=mpicc.openmpi; RONDO_MPIEXEC=$(command -v mpiexec.openmpi); rondo_unwrap; }

# The four configures run at once: each is mostly one shell's serial work
# (about 15 s here), so together they take little more than one. A stage
# whose configure failed runs it again, and shows why.
# Every stage compiles with the compiler the MPI wrapper calls, and the
# wrapper's flags (rondo_unwrap, scripts/common.sh); scripts/run.sh keeps
# the wrapper, as a user's ./configure does.
rondo_unwrap
rondo_autogen
echo "== configuring build/, build-asan/, build-tsan/ and build-openmpi/ at once"
rondo_configure "$RONDO_TOP/build" > /dev/null 2>&1 &
rondo_configure "$RONDO_TOP/build-asan" $asan_args > /dev/null 2>&1 &
rondo_configure "$RONDO_TOP/build-tsan" $tsan_args > /dev/null 2>&1 &
(use_openmpi && rondo_configure "$RONDO_TOP/build-openmpi" $openmpi_args) > /dev/null 2>&1 &
wait

status=0
echo "== 1/4 configure and make distcheck (build/)"
rondo_configure "$RONDO_TOP/build"
# -j (here and below): the compile runs in parallel, the tests one at a
# time (Makefile.am: on 2 cores two tests at once took longer than one
# after the other, as did a build beside them, even at nice 19).
# --disable-static: the static library doubles the compile (every object
# built twice, 96 s against 58 here); tests/smpi.sh builds it (SMPI's
# build is static only) and every test runs the shared one.
# check_PROGRAMS: the programs those tests run (not the unit tests, which
# stage 2 runs: 10 s of compiling).
# The copy's configure gets the same compiler, flags and shell (its
# configure, make and libtool run in dash too).
CONFIG_SHELL=$RONDO_SHELL run_logged "$RONDO_TOP/build/distcheck.out" make -C "$RONDO_TOP/build" -j"$(nproc)" distcheck \
  DISTCHECK_CONFIGURE_FLAGS="CC='$RONDO_CC' CPPFLAGS='$RONDO_CPPFLAGS' LDFLAGS='$RONDO_LDFLAGS' LIBS='$RONDO_LIBS' MPIEXEC=$RONDO_MPIEXEC CONFIG_SHELL=$RONDO_SHELL --disable-static" \
  TESTS="$(make -s --no-print-directory -C "$RONDO_TOP/build" print-plain-tests)" \
  check_PROGRAMS="$(make -s --no-print-directory -C "$RONDO_TOP/build" print-plain-programs)" || status=1
tally "$RONDO_TOP/build/distcheck.out" "$RONDO_TOP/build"

echo "== 2/4 AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
rondo_build "$RONDO_TOP/build-asan" $asan_args
# (print-sanitizer-tests: Makefile.am says which and why)
run_logged "$RONDO_TOP/build-asan/check.out" make -C "$RONDO_TOP/build-asan" -j"$(nproc)" check \
  TESTS="$(make -s --no-print-directory -C "$RONDO_TOP/build-asan" print-sanitizer-tests)" || status=1
tally "$RONDO_TOP/build-asan/check.out" "$RONDO_TOP/build-asan"

echo "== 3/4 ThreadSanitizer, threaded tests (build-tsan/)"
# UCX's memory hooks (libucm, under MPICH's ch4:ucx) crash in TSan's
# interceptors when a thread exits; rondo does not need them.
rondo_build "$RONDO_TOP/build-tsan" $tsan_args
# (print-thread-sanitizer-tests: Makefile.am says which and why)
tsan_tests=$(make -s --no-print-directory -C "$RONDO_TOP/build-tsan" print-thread-sanitizer-tests)
build_check_programs "$RONDO_TOP/build-tsan" $tsan_tests || status=1
UCX_MEM_EVENTS=no TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
  run_logged "$RONDO_TOP/build-tsan/check.out" make -C "$RONDO_TOP/build-tsan" -j"$(nproc)" check \
  TESTS="$(echo $tsan_tests)" check_PROGRAMS= || status=1
tally "$RONDO_TOP/build-tsan/check.out" "$RONDO_TOP/build-tsan"

echo "== 4/4 Open MPI 4.1 (build-openmpi/)"
use_openmpi
rondo_build "$RONDO_TOP/build-openmpi" $openmpi_args
ompi_tests=$(make -s --no-print-directory -C "$RONDO_TOP/build-openmpi" print-openmpi-tests)
build_check_programs "$RONDO_TOP/build-openmpi" $ompi_tests || status=1
# TRAIN_TEST_SUBSET=mpi: rondo-train's tests run their cases that reach MPI in
# ways of their own (tests/train/common.sh)
TRAIN_TEST_SUBSET=mpi run_logged "$RONDO_TOP/build-openmpi/check.out" make -C "$RONDO_TOP/build-openmpi" \
  -j"$(nproc)" check TESTS="$ompi_tests" check_PROGRAMS= || status=1
tally "$RONDO_TOP/build-openmpi/check.out" "$RONDO_TOP/build-openmpi"

echo "== total: $(( $(date +%s) - start )) s"
echo "$pass passed, $fail failed, $skip skipped"
exit $status
