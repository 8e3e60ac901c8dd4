#!/bin/sh
# DEVELOPERS.md's file index ("## Layout") against the sources, so that a
# new file cannot go unlisted; and the layers' levels line of
# tests/check-layers.sh against the two pages that describe the layers.
#
# Which files: every *.c, *.h, *.py and *.sh under lib/, interpose/,
# tools/, bench/, examples/, bindings/ and scripts/, the code someone
# reads to find where an idea lives. tests/ is left out: its folders are
# listed by kind (one unit test per module, one probe per failure), and a
# line per test would repeat their names. Only what is on disk is checked
# (find, not git), so the check runs the same in a git tree and in the
# release tarball of make distcheck.
#
# A file is in the index when
#  - its path is written out in backticks anywhere in DEVELOPERS.md
#    (`lib/rondo.h`, `scripts/common.sh`); or
#  - in the index's row for the nearest folder above it (the row whose
#    first cell is `lib/algo/`, `tools/bench/`, ...), its name, its path
#    below that folder, or its name without the extension (a program:
#    `rondo-info`, `allreduce_sweep`) appears in backticks; or
#  - it is a header that needs no line of its own: the one named after its
#    folder (lib/algo/algo.h, the folder's interface), or the header of a
#    source of the same name (shm.h beside shm.c).
set -u
src=${top_srcdir:-.}
status=0

# sources ROOT: the files the index must list, relative to ROOT.
sources() {
  (cd "$1" && find lib interpose tools bench examples bindings scripts -type f \
     \( -name '*.c' -o -name '*.h' -o -name '*.py' -o -name '*.sh' \) 2>/dev/null | LC_ALL=C sort)
}

# unlisted ROOT: prints each file of ROOT missing from ROOT/DEVELOPERS.md.
unlisted() {
  sources "$1" | awk -v dev="$1/DEVELOPERS.md" -v root="$1" '
    BEGIN {
      while ((getline line < dev) > 0) {
        # every `...` of the page, word by word
        s = line
        while (match(s, /`[^`]*`/)) {
          tok = substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH)
          n = split(tok, w, " "); for (i = 1; i <= n; i++) anywhere[w[i]] = 1
        }
        # the index rows: "| `folder/` | what |", and every word in their `...`
        if (line ~ /^## /) layout = (line == "## Layout")
        if (layout && match(line, /^\| `[^`]*\/`/)) {
          row = substr(line, RSTART + 3, RLENGTH - 4); folders[row] = 1
          s = line
          while (match(s, /`[^`]*`/)) {
            tok = substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH)
            n = split(tok, w, " "); for (i = 1; i <= n; i++) inrow[row, w[i]] = 1
          }
        }
      }
    }
    { f = $0; all[f] = 1; list[++nf] = f }
    END {
      for (k = 1; k <= nf; k++) {
        f = list[k]
        if (f in anywhere) continue
        n = split(f, part, "/"); name = part[n]; dir = substr(f, 1, length(f) - length(name))
        stem = name; sub(/\.[a-z]+$/, "", stem)
        if (name ~ /\.h$/) {
          if ((dir stem ".c") in all) continue
          m = split(dir, d, "/"); if (stem == d[m - 1]) continue
        }
        # the nearest folder above f with a row of its own
        best = ""
        for (r in folders) if (index(f, r) == 1 && length(r) > length(best)) best = r
        if (best != "") {
          rel = substr(f, length(best) + 1)
          if ((best, name) in inrow || (best, rel) in inrow || (best, stem) in inrow) continue
        }
        print f
      }
    }'
}

# levels_line: the order of the layers as tests/check-layers.sh states it.
levels_line() {
  sed -n 's/^#   \(0 base .*\)$/\1/p' "$src/tests/check-layers.sh"
}

# The check must catch a missing file: a folder with a row that names one
# of its two sources, a header paired with the named one, the folder's own
# header, and a second source named only in another folder's row.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lib/base" "$tmp/tools"
: > "$tmp/lib/base/log.c"; : > "$tmp/lib/base/log.h"; : > "$tmp/lib/base/base.h"
: > "$tmp/lib/base/new.c"; : > "$tmp/tools/rondo-info.c"
cat > "$tmp/DEVELOPERS.md" <<'EOF'
## Layout

| path | what |
|---|---|
| `lib/base/` | logging (`log.c`) |
| `tools/` | `rondo-info`; not `new.c` |
EOF
got=$(unlisted "$tmp")
if [ "$got" != "lib/base/new.c" ]; then
  echo "FAIL: the index check should report exactly lib/base/new.c, it reported: ${got:-nothing}"
  status=1
fi

# The real index.
if [ -z "$(sources "$src")" ]; then echo "FAIL: found no sources under $src"; exit 1; fi
missing=$(unlisted "$src")
for f in $missing; do
  echo "FAIL: $f is not in DEVELOPERS.md's file index (## Layout): add it to its folder's row"
  status=1
done

# The layers: DEVELOPERS.md and docs/architecture.md carry the levels line
# of tests/check-layers.sh word for word.
levels=$(levels_line)
if [ -z "$levels" ]; then
  echo "FAIL: tests/check-layers.sh has no '#   0 base ...' levels line"; status=1
else
  for page in DEVELOPERS.md docs/architecture.md; do
    grep -qF "$levels" "$src/$page" ||
      { echo "FAIL: $page does not give the layers as tests/check-layers.sh does: $levels"; status=1; }
  done
fi

[ $status = 0 ] && echo "PASS: DEVELOPERS.md's index lists all $(sources "$src" | wc -l) sources; the layers read the same in DEVELOPERS.md, docs/architecture.md and tests/check-layers.sh"
exit $status
