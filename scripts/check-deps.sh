#!/usr/bin/env bash
# Layering check: no folder includes a folder above it. The allowed includes of each
# top-level folder are the table "Layers" in docs/dev.md (one row per folder: the folder,
# then the folders it may include; `*` for any). An `#include "X/..."` in a file under a
# listed folder, where X is another listed folder not in its row, is reported as
# FILE:LINE and the check fails (exit 1).
#
#   scripts/check-deps.sh [ROOT]     ROOT: the source tree (default: this checkout)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
doc=$root/docs/dev.md
[ -f "$doc" ] || { echo "check-deps: cannot read '$doc'" >&2; exit 2; }

# the table: rows "| `folder` | `a`, `b` |" between "<!-- layers -->" and "<!-- /layers -->"
table=$(awk '/<!-- layers -->/ { on = 1; next } /<!-- \/layers -->/ { on = 0 } on' "$doc" |
    awk -F'|' 'NF >= 4 && $2 ~ /`/ { gsub(/[` ]/, "", $2); gsub(/[` ]/, "", $3); print $2, $3 }')
[ -n "$table" ] || { echo "check-deps: no layer table in '$doc'" >&2; exit 2; }

find_files() { find "$root/$1" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' \) | sort; }
folders=$(echo "$table" | awk '{ print $1 }' | tr '\n' ' ')

bad=0
while read -r dir allowed; do
    [ -d "$root/$dir" ] || continue
    [ "$allowed" = "*" ] && continue
    out=$(find_files "$dir" | xargs -r grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"/]*/' |
        awk -v self="$dir" -v allowed="$allowed" -v folders="$folders" -v root="$root/" '
        BEGIN { n = split(allowed, a, ","); for (i = 1; i <= n; i++) ok[a[i]] = 1; ok[self] = 1
                m = split(folders, f, " "); for (i = 1; i <= m; i++) known[f[i]] = 1 }
        { line = $0; match(line, /"[^"]*"/); inc = substr(line, RSTART + 1, RLENGTH - 2)
          top = inc; sub(/\/.*/, "", top)
          if (known[top] && !ok[top]) {
              split(line, p, ":"); file = p[1]; sub(root, "", file)
              printf "%s:%s: %s/ includes \"%s\" (%s/ may include: %s)\n", file, p[2], self, inc, self, allowed } }')
    if [ -n "$out" ]; then echo "$out"; bad=1; fi
done <<<"$table"
if [ "$bad" -ne 0 ]; then
    echo "check-deps: a lower layer includes a higher one (layers: docs/dev.md)" >&2
    exit 1
fi
