/*
 * MPI's start-up and hwloc's discovery, kept out of LeakSanitizer's report.
 * Header-only and free of every other rondo header (the tests include it).
 *
 * hwloc's PCI plugin leaves a few allocations behind the first time a
 * process discovers its machine (MPICH's MPI_Init does, and rondo's
 * lib/topo/hw.c), and the plugin is unloaded before the process exits.
 * With ASan's default (fast) unwinder, which follows frame pointers, the
 * leak's stack stops in the unloaded plugin, so tests/lsan.supp cannot
 * name hwloc there; the slow unwinder that could
 * (ASAN_OPTIONS=fast_unwind_on_malloc=0) made every test of the sanitizer
 * build about a third slower. What MPI or hwloc allocate inside those calls
 * is theirs, so rondo and the tests make them with the leak check paused on
 * that thread: RONDO_LEAKCHECK_PAUSE(rc = MPI_Init(...)). Nothing changes
 * in a build without AddressSanitizer.
 */
#ifndef RONDO_BASE_LEAKCHECK_H
#define RONDO_BASE_LEAKCHECK_H

#if defined(__SANITIZE_ADDRESS__)
#define RONDO_LEAKCHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RONDO_LEAKCHECK 1
#endif
#endif

#ifdef RONDO_LEAKCHECK
#include <sanitizer/lsan_interface.h>
#define RONDO_LEAKCHECK_PAUSE(statement)                                     \
  do {                                                                       \
    __lsan_disable();                                                        \
    statement;                                                               \
    __lsan_enable();                                                         \
  } while (0)
#else
#define RONDO_LEAKCHECK_PAUSE(statement)                                     \
  do {                                                                       \
    statement;                                                               \
  } while (0)
#endif

#endif /* RONDO_BASE_LEAKCHECK_H */
