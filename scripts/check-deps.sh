#!/usr/bin/env bash
# Layering check: no folder uses a folder above it. The allowed dependencies of each
# top-level folder are the table "Layers" in docs/dev.md (one row per folder: the folder,
# then the folders it may include; `*` for any). Reported as FILE:LINE (or OBJECT: for a
# symbol), and the check fails (exit 1), for:
#   - an `#include "X/..."` or `#include <X/...>` (the build has -I.) in a file under a
#     listed folder, where X is another listed folder not in its row;
#   - an include with `../` in it, in any listed folder (a path from the root says which
#     folder it reaches; a relative one hides it);
#   - with --obj DIR (where the build put its objects, DIR/<folder>/...o): an object of a
#     folder that references a symbol defined only in objects of folders not in its row (an
#     `extern` declared by hand reaches past the include check). Objects whose source is
#     gone (a stale .o) are not read.
#
#   scripts/check-deps.sh [--obj DIR] [ROOT]     ROOT: the source tree (default: this checkout)
set -euo pipefail
obj=
if [ "${1:-}" = "--obj" ]; then obj=${2:?--obj needs a directory}; shift 2; fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
doc=$root/docs/dev.md
[ -f "$doc" ] || { echo "check-deps: cannot read '$doc'" >&2; exit 2; }
[ -z "$obj" ] || [ -d "$obj" ] || { echo "check-deps: no object directory '$obj' (build first)" >&2; exit 2; }

# the table: rows "| `folder` | `a`, `b` |" between "<!-- layers -->" and "<!-- /layers -->"
table=$(awk '/<!-- layers -->/ { on = 1; next } /<!-- \/layers -->/ { on = 0 } on' "$doc" |
    awk -F'|' 'NF >= 4 && $2 ~ /`/ { gsub(/[` ]/, "", $2); gsub(/[` ]/, "", $3); print $2, $3 }')
[ -n "$table" ] || { echo "check-deps: no layer table in '$doc'" >&2; exit 2; }
# "folder:allowed" words, for awk
rows=$(echo "$table" | awk '{ printf "%s:%s ", $1, $2 }')

# awk helpers over the rows: may[F] is F's allowed list ("*" for any), known[F] a folder
read -r -d '' AWK_ROWS <<'AWK' || true
function load_rows(rows,   n, r, i, kv) {
    n = split(rows, r, " ")
    for (i = 1; i <= n; i++) { split(r[i], kv, ":"); known[kv[1]] = 1; may[kv[1]] = kv[2] }
}
function allowed(from, to,   n, a, i) {
    if (from == to || may[from] == "*") return 1
    n = split(may[from], a, ",")
    for (i = 1; i <= n; i++) if (a[i] == to) return 1
    return 0
}
AWK

bad=0 bad_sym=0
# includes
dirs=()
while read -r dir _; do [ -d "$root/$dir" ] && dirs+=("$root/$dir"); done <<<"$table"
out=$(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' \) |
    sort | xargs -r grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<][^">]*[">]' |
    awk -v rows="$rows" -v root="$root/" "$AWK_ROWS"'
    BEGIN { load_rows(rows) }
    { line = $0; match(line, /["<][^">]*[">]/); written = substr(line, RSTART, RLENGTH)
      inc = substr(written, 2, length(written) - 2)
      split(line, p, ":"); file = p[1]; sub(root, "", file); self = file; sub(/\/.*/, "", self)
      if (inc ~ /(^|\/)\.\.\//) {
          printf "%s:%s: a relative include %s (write the path from the root: \"folder/file.h\")\n", file, p[2], written
          next }
      top = inc; sub(/\/.*/, "", top)
      if (inc ~ /\// && known[top] && !allowed(self, top))
          printf "%s:%s: %s/ includes %s (%s/ may include: %s)\n", file, p[2], self, written, self, may[self] }')
if [ -n "$out" ]; then echo "$out"; bad=1; fi

# symbols: the objects with a source, then "folder object type symbol" lines of their nm
if [ -n "$obj" ]; then
    objs=()
    while read -r dir _; do
        [ -d "$obj/$dir" ] || continue
        while read -r o; do
            base=${o%.o}
            case $base in *.cu) src=("$base") ;; *) src=("$base.c" "$base.cc") ;; esac
            for s in "${src[@]}"; do [ -f "$root/$s" ] && { objs+=("$o"); break; }; done
        done < <(cd "$obj" && find "$dir" -name '*.o' | sort)
    done <<<"$table"
    syms=$(cd "$obj" && printf '%s\0' "${objs[@]}" | xargs -0 -r nm -A -P |
        awk '{ o = $1; sub(/:$/, "", o); d = o; sub(/\/.*/, "", d); print d, o, $3, $2 }')
    out=$(echo "$syms" | awk -v rows="$rows" "$AWK_ROWS"'
        BEGIN { load_rows(rows) }
        # defined: global text, data, bss, read-only, common, weak, unique, indirect
        $3 ~ /^[TDBRCVWGSui]$/ && !(($4, $1) in first) { where[$4] = where[$4] " " $1; first[$4, $1] = $2 }
        $3 ~ /^[Uwv]$/ { refs[++n] = $0 }
        END {
            for (i = 1; i <= n; i++) {
                split(refs[i], f, " "); from = f[1]; sym = f[4]
                if (!(sym in where) || may[from] == "*") continue
                m = split(where[sym], d, " "); ok = 0; names = ""
                for (k = 1; k <= m; k++) {
                    if (allowed(from, d[k])) ok = 1
                    names = names (k > 1 ? ", " : "") d[k] "/ (" first[sym, d[k]] ")"
                }
                if (!ok) printf "%s: %s/ uses %s, defined in %s (%s/ may use: %s)\n", f[2], from, sym, names, from, may[from]
            } }')
    if [ -n "$out" ]; then echo "$out"; bad_sym=1; fi
fi

[ "$bad" -eq 0 ] || echo "check-deps: a lower layer includes a higher one (layers: docs/dev.md)" >&2
[ "$bad_sym" -eq 0 ] ||
    echo "check-deps: a lower layer uses a symbol of a higher one (layers: docs/dev.md)" >&2
[ "$bad" -eq 0 ] && [ "$bad_sym" -eq 0 ]
