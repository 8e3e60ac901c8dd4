#!/bin/sh
# docs/knobs.md against the knob table it mirrors (knob_table in
# lib/base/knobs.c), so that the two cannot drift apart. For every knob:
#  - it is a row of the page's table ("## The knobs") and a row of the code's;
#  - the type agrees (KNOB_ENUM enum, KNOB_NAME name, KNOB_SIZE size,
#    KNOB_INT int, KNOB_DOUBLE number, KNOB_STRING string, KNOB_SUBSYS list);
#  - the default agrees (the code's "" is the page's "empty");
#  - a Horovod fallback in the code is named on the page, and the page
#    names no fallback the code lacks;
#  - a knob with bounds (max > 0) states them: "Range MIN to MAX", in bytes
#    or KiB/MiB/GiB/TiB for sizes.
# The page's table must also be one table: a blank line between two rows
# would end it there, and the rows after it would show as text.
# Checking rather than generating keeps the page's long explanations by
# hand, next to the one-line docs of the code.
set -u
src=${top_srcdir:-.}

# The code's table, one line per knob: NAME TYPE DEFAULT FALLBACK MIN MAX
# ("-" for an empty default or no fallback).
code_knobs() {
  awk '
    /knob_table\[\] = \{/ { on = 1; next }
    on && /^};/ { on = 0 }
    on { sub(/\/\*.*\*\//, ""); text = text " " $0 }
    END {
      n = split(text, row, /\{"/)
      for (i = 2; i <= n; i++) {
        r = row[i]
        name = substr(r, 1, index(r, "\"") - 1)
        match(r, /KNOB_[A-Z]+/); type = substr(r, RSTART + 5, RLENGTH - 5)
        rest = substr(r, RSTART + RLENGTH)
        match(rest, /"[^"]*"/); def = substr(rest, RSTART + 1, RLENGTH - 2)
        if (def == "") def = "-"
        fb = "-"
        if (match(r, /"HOROVOD_[A-Z_]*" *\}/)) { fb = substr(r, RSTART + 1, RLENGTH); sub(/".*/, "", fb) }
        # The bounds: the three fields before same_everywhere and the fallback.
        match(r, /FIELD\([a-z_0-9]*\), *[a-z_A-Z]*, */)
        b = substr(r, RSTART + RLENGTH); split(b, f, ",")
        printf "%s %s %s %s %s %s\n", name, tolower(type), def, fb, value(f[1]), value(f[2])
      }
    }
    # "64", "1 << 20", "(size_t)1 << 30" as a number.
    function value(e,   p) {
      gsub(/\(size_t\)| /, "", e)
      if (index(e, "<<")) { split(e, p, "<<"); return p[1] * 2 ^ p[2] }
      return e + 0
    }' "$1"
}

# The page's table, one line per row: NAME TYPE DEFAULT FALLBACK MIN MAX
# ("-" where there is none). Rows after a blank line inside the table are
# reported as "BROKEN NAME".
page_knobs() {
  awk '
    /^## / { on = ($0 == "## The knobs"); next }
    !on { next }
    /^\| `RONDO_/ {
      n = split($0, c, /\|/)
      name = c[2]; gsub(/[` ]/, "", name)
      if (gap) print "BROKEN", name
      type = c[3]; gsub(/ /, "", type)
      def = c[4]; gsub(/^ +| +$/, "", def); gsub(/`/, "", def)
      if (def == "empty") def = "-"
      meaning = c[5]; for (i = 6; i < n; i++) meaning = meaning "|" c[i]
      fb = "-"
      if (match(meaning, /[Ff]allback[^`]*`HOROVOD_[A-Z_]*`/)) {
        fb = substr(meaning, RSTART, RLENGTH); sub(/.*`HOROVOD_/, "HOROVOD_", fb); sub(/`/, "", fb)
      }
      lo = "-"; hi = "-"
      if (match(meaning, /Range [0-9]+( [A-Za-z]+)? to [0-9]+( [A-Za-z]+)?/)) {
        split(substr(meaning, RSTART + 6, RLENGTH - 6), r, " to ")
        lo = bytes(r[1]); hi = bytes(r[2])
      }
      print name, type, def, fb, lo, hi
      seen = 1; gap = 0; next
    }
    seen && /^$/ { gap = 1 }
    seen && /^[^|]/ && !/^$/ { seen = 0; gap = 0 }   # text after the table
    # "4 KiB", "1 GiB", "64 bytes", "1048576" as a number.
    function bytes(s,   p, m) {
      split(s, p, " "); m = 1
      if (p[2] == "KiB") m = 2 ^ 10; else if (p[2] == "MiB") m = 2 ^ 20
      else if (p[2] == "GiB") m = 2 ^ 30; else if (p[2] == "TiB") m = 2 ^ 40
      return p[1] * m
    }' "$1"
}

# compare CODE_TABLE PAGE_TABLE: prints one FAIL line per disagreement.
compare() {
  awk '
    FNR == NR { code[$1] = $0; next }
    $1 == "BROKEN" { printf "FAIL: docs/knobs.md: a blank line splits the knob table before %s\n", $2; next }
    { page[$1] = $0 }
    END {
      for (k in code) if (!(k in page)) printf "FAIL: %s is in lib/base/knobs.c but not in docs/knobs.md\n", k
      for (k in page) if (!(k in code)) printf "FAIL: %s is in docs/knobs.md but not in lib/base/knobs.c\n", k
      for (k in code) {
        if (!(k in page)) continue
        split(code[k], c, " "); split(page[k], p, " ")
        t = c[2]; if (t == "double") t = "number"; if (t == "subsys") t = "list"
        if (t != p[2]) printf "FAIL: %s: type %s in the code, %s on the page\n", k, t, p[2]
        if (c[3] != p[3]) printf "FAIL: %s: default \"%s\" in the code, \"%s\" on the page\n", k, c[3] == "-" ? "" : c[3], p[3] == "-" ? "" : p[3]
        if (c[4] != p[4]) printf "FAIL: %s: fallback %s in the code, %s on the page\n", k, c[4], p[4]
        if (c[6] > 0 && (c[5] != p[5] || c[6] != p[6]))
          printf "FAIL: %s: range %s to %s in the code, the page says %s to %s\n", k, c[5], c[6], p[5], p[6]
      }
    }' "$1" "$2"
}

status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The check must catch drift: a knob the page lacks, one the code lacks, a
# default, a type, a fallback and a range that differ, and a split table.
cat > "$tmp/knobs.c" <<'EOF'
static const knob_def_t knob_table[] = {
    {"RONDO_A", KNOB_SIZE, "1M", "doc", FIELD(a), NULL, 4096, (size_t)1 << 30, 1, NULL},
    {"RONDO_B", KNOB_INT, "3",
     "doc, " "more doc",
     FIELD(b), NULL, 0, 1 << 20, 1, "HOROVOD_B"},
    {"RONDO_C", KNOB_STRING, "", "doc", FIELD(c), NULL, 0, 0, 0, NULL},
    {"RONDO_D", KNOB_DOUBLE, "0", "doc", FIELD(d), NULL, 0, 10, 0, NULL},
};
EOF
cat > "$tmp/knobs.md" <<'EOF'
## The knobs

| name | type | default | meaning |
|---|---|---|---|
| `RONDO_A` | size | `1M` | Range 4 KiB to 2 GiB. |
| `RONDO_B` | number | `4` | Range 0 to 1048576. |

| `RONDO_C` | string | empty | Fallback: `HOROVOD_C`. |
| `RONDO_E` | int | `0` | gone |

## Syntax
EOF
code_knobs "$tmp/knobs.c" > "$tmp/code"
page_knobs "$tmp/knobs.md" > "$tmp/page"
compare "$tmp/code" "$tmp/page" > "$tmp/out"
for want in "RONDO_D is in lib/base/knobs.c but not" "RONDO_E is in docs/knobs.md but not" \
            "RONDO_A: range" "RONDO_B: type int in the code, number" "RONDO_B: default \"3\"" \
            "RONDO_B: fallback HOROVOD_B in the code, -" "RONDO_C: fallback - in the code, HOROVOD_C" \
            "blank line splits the knob table before RONDO_C"; do
  grep -q "$want" "$tmp/out" || { echo "FAIL: the check missed: $want"; status=1; }
done
[ "$(wc -l < "$tmp/out")" -eq 8 ] || { echo "FAIL: the check reported more than the planted drift:"; cat "$tmp/out"; status=1; }

# The real ones.
code_knobs "$src/lib/base/knobs.c" > "$tmp/code"
page_knobs "$src/docs/knobs.md" > "$tmp/page"
if [ ! -s "$tmp/code" ] || [ ! -s "$tmp/page" ]; then
  echo "FAIL: found no knobs in lib/base/knobs.c or docs/knobs.md (has the table's form changed?)"
  exit 1
fi
compare "$tmp/code" "$tmp/page" > "$tmp/out"
if [ -s "$tmp/out" ]; then cat "$tmp/out"; status=1; fi
[ $status = 0 ] && echo "PASS: docs/knobs.md and lib/base/knobs.c name the same $(wc -l < "$tmp/code") knobs, with the same types, defaults, fallbacks and ranges"
exit $status
