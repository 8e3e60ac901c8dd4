#!/bin/sh
# tests/launch/outsider.sh's rows 1, 3 and 7 (an impostor hello, zero-byte
# connections, 200 connections) with rank 0, and so its rendezvous server,
# under valgrind: no error, no leak. In the plain build (valgrind cannot run
# the sanitizer build's programs); outsider.sh itself, every row, runs under
# AddressSanitizer. (Row 5, silent connections at formation, took 21 s
# under valgrind, for the same code paths as row 7's.) Skipped (77) without
# valgrind.
command -v valgrind > /dev/null 2>&1 || { echo "skipped: no valgrind"; exit 77; }
OUTSIDER_VALGRIND=1 exec sh "${top_srcdir:-.}/tests/launch/outsider.sh"
