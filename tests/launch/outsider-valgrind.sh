#!/bin/sh
# tests/launch/outsider.sh's rows 1, 3, 5 and 7 (an impostor hello,
# zero-byte connections, a silent connection at formation, 200 connections)
# with rank 0, and so its rendezvous server, under valgrind: no error, no
# leak. In the plain build (valgrind cannot run the sanitizer build's
# programs); outsider.sh itself runs under AddressSanitizer. Skipped (77)
# without valgrind.
command -v valgrind > /dev/null 2>&1 || { echo "skipped: no valgrind"; exit 77; }
OUTSIDER_VALGRIND=1 exec sh "${top_srcdir:-.}/tests/launch/outsider.sh"
