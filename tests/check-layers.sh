#!/bin/sh
# The library's layers (docs/architecture.md), bottom up:
#   0 base  1 reduce, topo, launch  2 select, device  3 algo  4 comm  5 engine  6 api
# A file may use its own folder and the folders below it, never one above
# and never a sibling on its own level (reduce and topo know nothing of each
# other, nor launch). A subfolder belongs to its parent's layer
# (lib/algo/allreduce/ is algo). Checked three ways:
#  - includes: every #include "folder/file" of lib/ against the order, and
#    no circle of includes among the files of lib/, tools/, bench/ and
#    examples/;
#  - calls: every symbol an object file of lib/ uses (nm -u) that another
#    object of lib/ defines must come from its own folder or one below;
#  - circles: within one folder of lib/ (its subfolders included) and
#    within tools/bench/, the files' calls run one way: no file uses a
#    symbol of a file that, directly or through others, uses one of its
#    own.
#  - the engine (lib/engine/): struct engine lives in assembly.h, which
#    only the files that assemble the engine include (assemblers, below);
#    and every include of an engine file goes down the order that
#    engine.h lists its files in, bottom up.
set -u
src=${top_srcdir:-.}
build=$(cd "${top_builddir:-.}" && pwd)
status=0

# The one list of layers and levels: "folder level" pairs.
levels="base 0 reduce 1 topo 1 launch 1 select 2 device 2 algo 3 comm 4 engine 5 api 6"
# level FOLDER: sets lvl to FOLDER's level, or x (no subprocess: the
# include check asks it for every include of every file).
level() {
  lvl=x
  set -- "$1" $levels
  wanted=$1; shift
  while [ $# -ge 2 ]; do
    if [ "$1" = "$wanted" ]; then lvl=$2; return; fi
    shift 2
  done
}
# The "#include "..."" names of file $1.
includes_of() { sed -n 's/^#include "\([^"]*\)".*/\1/p' "$1"; }

# "may FROM use TO": 0 yes, 1 no.
may_use() {
  [ "$1" = "$2" ] && return 0
  level "$1"; a=$lvl
  level "$2"; b=$lvl
  [ "$a" = x ] || [ "$b" = x ] && return 1
  [ "$b" -lt "$a" ]
}

# ---- includes --------------------------------------------------------------------
# check_includes ROOT: reports each include of ROOT/lib/*/ that goes up or
# sideways; returns 1 if any does. Sets folders.
check_includes() {
  bad=0
  folders=0
  for dir in "$1"/lib/*/; do
    from=$(basename "$dir")
    level "$from"
    if [ "$lvl" = x ]; then
      echo "FAIL: lib/$from/ is not a layer of docs/architecture.md"; bad=1; continue
    fi
    folders=$((folders + 1))
    for f in "$dir"*.c "$dir"*.h "$dir"*/*.c "$dir"*/*.h; do
      [ -f "$f" ] || continue
      for inc in $(includes_of "$f"); do
        case $inc in
        rondo.h) continue ;;          # the public header: every layer's types
        */*) to=${inc%%/*} ;;
        *) to=$from ;;                # same folder
        esac
        if ! may_use "$from" "$to"; then
          echo "FAIL: ${f#"$1"/} includes $inc: $from may not use $to"
          bad=1
        fi
      done
    done
  done
  return $bad
}

# The check must catch a violation: a base file that includes the API.
tmp=$(mktemp -d)
mkdir -p "$tmp/lib/base" "$tmp/lib/api"
printf '#include "api/api.h"\n' > "$tmp/lib/base/bad.c"
if check_includes "$tmp" > /dev/null; then
  echo "FAIL: the include check missed lib/base including api/api.h"; status=1
fi
rm -rf "$tmp"
check_includes "$src" || status=1

# ---- the engine's private struct and its order ----------------------------------------
# The files that assemble the engine: the only ones that may include
# engine/assembly.h (struct engine). Every other file takes the object it
# needs (docs/engine.md).
assemblers="lib/engine/engine.c lib/engine/loop.c"

# check_private ROOT: reports each file of ROOT (lib/, tools/, tests/,
# bench/, examples/, interpose/) other than the assemblers that includes
# engine/assembly.h; returns 1 if any does.
check_private() {
  # (one grep over every file, then the assemblers left out)
  found=$(cd "$1" && find lib tools tests bench examples interpose -name '*.[ch]' 2>/dev/null |
    LC_ALL=C sort | xargs grep -H -E '^#include "(engine/)?assembly\.h"' 2>/dev/null |
    sed 's/^\([^:]*\):#include "\([^"]*\)".*/\1 \2/' |
    awk -v allowed=" $assemblers lib/engine/assembly.h " -v a="$assemblers" \
      'index(allowed, " " $1 " ") == 0 { printf "FAIL: %s includes %s: only the files that assemble the engine (%s) see struct engine\n", $1, $2, a }')
  [ -z "$found" ] && return 0
  echo "$found"
  return 1
}

# check_engine_order ROOT: the engine's files, bottom up, are the names
# "  name.c" that ROOT/lib/engine/engine.h's opening comment lists (one
# rank per line; a line may name two). Each include "engine/x.h" of an
# engine file must be of a file of its own rank or below (x.h counts as
# x.c; a header of no listed file is left to the other checks); returns 1
# if one is not.
check_engine_order() {
  order=$(sed -n '1,/\*\//s/^ \*   \([a-z_]*\.c\)\(, \([a-z_]*\.c\)\)\{0,1\} .*/\1 \3/p' \
          "$1/lib/engine/engine.h")
  [ -n "$order" ] || { echo "FAIL: lib/engine/engine.h lists no files bottom up"; return 1; }
  echo "$order" | awk -v root="$1" '
    { for (i = 1; i <= NF; i++) { sub(/\.c$/, "", $i); rank[$i] = NR } }
    END {
      bad = 0
      for (f in rank) for (ext = 0; ext < 2; ext++) {
        file = root "/lib/engine/" f (ext ? ".h" : ".c")
        while ((getline line < file) > 0)
          if (match(line, /^#include "engine\/[a-z_]*\.h"/)) {
            to = substr(line, RSTART + 17, RLENGTH - 20)
            if ((to in rank) && rank[to] > rank[f]) {
              printf "FAIL: lib/engine/%s%s includes engine/%s.h, a file above it (engine.h lists the order)\n", f, (ext ? ".h" : ".c"), to
              bad = 1
            }
          }
        close(file)
      }
      exit bad
    }'
}

# The checks must catch a violation: a file of the engine that includes
# the private header, and one that includes a file above it; and must pass
# the assemblers and an include that goes down.
tmp=$(mktemp -d)
mkdir -p "$tmp/lib/engine"
printf '/*\n *   low.c        below\n *   high.c, also.c  above\n */\n' > "$tmp/lib/engine/engine.h"
printf 'struct engine { int x; };\n' > "$tmp/lib/engine/assembly.h"
printf '#include "engine/assembly.h"\n' > "$tmp/lib/engine/engine.c"
printf '#include "engine/low.h"\n' > "$tmp/lib/engine/high.c"
if ! check_private "$tmp" > /dev/null || ! check_engine_order "$tmp" > /dev/null; then
  echo "FAIL: the engine checks refused an assembler or an include that goes down"; status=1
fi
printf '#include "engine/assembly.h"\n' > "$tmp/lib/engine/low.c"
if check_private "$tmp" > /dev/null; then
  echo "FAIL: the private-struct check missed lib/engine/low.c including engine/assembly.h"; status=1
fi
printf '#include "engine/also.h"\n' > "$tmp/lib/engine/low.h"
if check_engine_order "$tmp" > /dev/null; then
  echo "FAIL: the engine's order check missed low.h including engine/also.h"; status=1
fi
rm -rf "$tmp"
check_private "$src" || status=1
check_engine_order "$src" || status=1

# librondo-mpi (interpose/) sits above the library and uses its public API:
# rondo.h, and the header-only size parser every tool shares.
for f in "$src"/interpose/*.[ch]; do
  for inc in $(includes_of "$f"); do
    case $inc in
    rondo.h | rondo-mpi.h | interpose.h | base/numbers.h) ;;
    *) echo "FAIL: interpose/$(basename "$f") includes $inc: librondo-mpi uses rondo's public API only"
       status=1 ;;
    esac
  done
done

# Circles: every include edge among the sources, then Kahn's algorithm.
files=$(cd "$src" && ls lib/*.h lib/*/*.[ch] lib/*/*/*.[ch] tools/*.[ch] tools/*/*.[ch] bench/*.c \
        examples/*.c examples/*/*.[ch] interpose/*.[ch] 2>/dev/null)
# (one awk reads them all: "FILE INCLUDED" for each include that names a
# file, looked for under lib/, from the top, then beside FILE)
circle=$(cd "$src" && awk '
  FNR == 1 { d = FILENAME; sub(/\/[^\/]*$/, "", d) }
  /^#include "/ {
    inc = $0; sub(/^#include "/, "", inc); sub(/".*/, "", inc)
    for (k = 0; k < 3; k++) {
      cand = k == 0 ? "lib/" inc : k == 1 ? inc : d "/" inc
      if ((getline line < cand) >= 0) { close(cand); print FILENAME, cand; break }
    }
  }' $files | awk '
  { deg[$1] += 0; deg[$2]++; out[$1] = out[$1] " " $2 }
  END {
    n = 0; for (v in deg) if (deg[v] == 0) q[n++] = v
    for (i = 0; i < n; i++) {
      k = split(out[q[i]], t, " ")
      for (j = 1; j <= k; j++) if (--deg[t[j]] == 0) q[n++] = t[j]
    }
    for (v in deg) if (deg[v] > 0) print v
  }')
if [ -n "$circle" ]; then
  echo "FAIL: these files include each other in a circle:"; echo "$circle"; status=1
fi

# ---- calls -------------------------------------------------------------------------
# symbols_of: reads "FOLDER SOURCE OBJECT" lines; prints every symbol each
# object defines ("D FOLDER SOURCE SYMBOL") and uses ("U FOLDER SOURCE SYMBOL").
symbols_of() {
  # (two nm runs over all the objects, each line prefixed with its object)
  list=$(cat)
  [ -n "$list" ] || return 0
  objects=$(echo "$list" | awk '{print $3}')
  { echo "$list" | awk '{print "O", $0}'
    nm -A --defined-only -g $objects | awk '{print "D", $0}'
    nm -A -u $objects | awk '{print "U", $0}'
  } | awk '$1 == "O" { where[$4] = $2 " " $3; next }
           NF == 4 { o = $2; sub(/:[^:]*$/, "", o); if (o in where) print $1, where[o], $4 }'
}

# file_uses: reads symbols_of's lines; prints "USER DEFINER SYMBOL" for each
# symbol a source uses that another source of its own folder defines.
file_uses() {
  awk '$1 == "D" { def[$2 " " $4] = $3; next }
       { use[NR] = $0 }
       END { for (k in use) { split(use[k], u, " "); d = def[u[2] " " u[4]]
             if (d != "" && d != u[3]) print u[3], d, u[4] } }' | sort -u
}

# circles: reads "USER DEFINER ..." lines; prints the shortest circle
# through each file that is on one, as "a.c -> b.c -> a.c", each circle
# once. First it peels off the files no circle can pass through (nothing
# left uses them, or they use nothing left); from each file that remains a
# breadth-first search among the remaining finds its way back, if it is on
# a circle and not only between two.
circles() {
  awk '!(($1, $2) in seen) { seen[$1, $2] = 1; node[$1]; node[$2]
                             out[$1] = out[$1] " " $2; inl[$2] = inl[$2] " " $1
                             outdeg[$1]++; indeg[$2]++ }
  END {
    do {
      changed = 0
      for (v in node) if (!(v in gone) && (indeg[v] == 0 || outdeg[v] == 0)) {
        gone[v] = 1; changed = 1
        k = split(out[v], t, " "); for (j = 1; j <= k; j++) indeg[t[j]]--
        k = split(inl[v], t, " "); for (j = 1; j <= k; j++) outdeg[t[j]]--
      }
    } while (changed)
    for (v in node) {
      if (v in gone) continue
      split("", from); q[0] = v; n = 1; found = 0
      for (i = 0; i < n && !found; i++) {
        k = split(out[q[i]], t, " ")
        for (j = 1; j <= k && !found; j++) {
          w = t[j]
          if (w in gone || w in from) continue
          from[w] = q[i]
          if (w == v) found = 1; else q[n++] = w
        }
      }
      if (!found) continue                     # between two circles, on none
      # the circle, v first, and its least file first as its key
      m = 0; x = from[v]; c[m++] = v
      while (x != v) { c[m++] = x; x = from[x] }
      least = 0; for (i = 1; i < m; i++) if (c[i] < c[least]) least = i
      key = ""; for (i = 0; i < m; i++) key = key " " c[(least - i + m) % m]
      if (key in printed) continue
      printed[key] = 1
      line = c[least]; for (i = 1; i <= m; i++) line = line " -> " c[(least - i + m) % m]
      print line
    }
  }'
}

# The circle check must catch one: three objects of one folder (a subfolder
# of lib/algo) whose calls run a -> b -> c -> a, and a fourth that uses a
# and is on no circle; and it must find none once c no longer calls a.
tmp=$(mktemp -d)
printf 'void b(void); void a(void) { b(); }\n' > "$tmp/a.c"
printf 'void c(void); void b(void) { c(); }\n' > "$tmp/b.c"
printf 'void a(void); void c(void) { a(); }\n' > "$tmp/c.c"
printf 'void a(void); void d(void) { a(); }\n' > "$tmp/d.c"
synthetic() {
  for f in a b c d; do
    ${CC:-cc} -c -o "$tmp/$f.o" "$tmp/$f.c" || exit 1
    echo "algo lib/algo/sub/$f.c $tmp/$f.o"
  done | symbols_of | file_uses | circles
}
found=$(synthetic)
want="lib/algo/sub/a.c -> lib/algo/sub/b.c -> lib/algo/sub/c.c -> lib/algo/sub/a.c"
if [ "$found" != "$want" ]; then
  echo "FAIL: the circle check missed a.c -> b.c -> c.c -> a.c (it found: $found)"; status=1
fi
printf 'void c(void) {}\n' > "$tmp/c.c"
found=$(synthetic)
if [ -n "$found" ]; then
  echo "FAIL: the circle check found a circle in calls that run one way: $found"; status=1
fi
rm -rf "$tmp"

# The object of every source of lib/ (not a stale one of a removed file):
# "FOLDER SOURCE OBJECT" lines, FOLDER being the layer (lib/algo/coll/x.c
# is algo's).
objs=$(cd "$src" && for c in lib/*/*.c lib/*/*/*.c; do
  [ -f "$c" ] || continue
  o="$build/${c%.c}.o"
  [ -f "$o" ] || o="$build/$(dirname "$c")/.libs/$(basename "${c%.c}").o" # shared only
  [ -f "$o" ] || { echo "FAIL: $o is missing (build the library first)" >&2; exit 1; }
  folder=${c#lib/}
  echo "${folder%%/*} $c $o"
done) || exit 1
symbols=$(echo "$objs" | symbols_of)
# One pass joins them: a use of a symbol another object of lib/ defines is
# a call.
calls=$(echo "$symbols" | awk -v levels="$levels" '
  BEGIN { n = split(levels, l, " "); for (i = 1; i < n; i += 2) level[l[i]] = l[i + 1] }
  $1 == "D" { def[$4] = $2; next }
  { use[NR] = $0 }
  END {
    for (k in use) {
      split(use[k], u, " "); to = def[u[4]]
      if (to == "") continue                       # libc, MPI, hwloc
      n++
      if (to != u[2] && !(level[to] < level[u[2]]))
        printf "FAIL: %s uses %s of lib/%s: %s may not use %s\n", u[3], u[4], to, u[2], to
    }
    print n + 0
  }')
echo "$calls" | grep '^FAIL' && status=1
ncalls=$(echo "$calls" | tail -n 1)

# Circles of calls between the files of each folder, and of rondo-bench's
# (tools/bench, one program of many files).
tool_objs=$(cd "$src" && for c in tools/bench/*.c; do
  o="$build/${c%.c}.o"
  [ -f "$o" ] || { echo "FAIL: $o is missing (build rondo-bench first)" >&2; exit 1; }
  echo "tools/bench $c $o"
done) || exit 1
found=$( (echo "$symbols"; echo "$tool_objs" | symbols_of) | file_uses | circles | sort)
if [ -n "$found" ]; then
  echo "FAIL: these files of one folder use each other in a circle (move the code that"
  echo "      closes it to the file it belongs in):"
  echo "$found" | sed 's/^/  /'
  status=1
fi
[ $status = 0 ] && echo "PASS: $folders layers; no include or call goes up or sideways ($ncalls calls between objects), no include circle, no circle of calls within a folder; struct engine private to $(echo $assemblers | wc -w) files, the engine's includes in order"
exit $status
