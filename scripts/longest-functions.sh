#!/usr/bin/env bash
# The longest functions of the C/C++/CUDA sources: lines from the opening brace to the
# closing one, for function bodies whose braces sit in column 0 (the layout .clang-format
# gives), longest first.
#
#   scripts/longest-functions.sh [N] [PATH...]   N: how many (default 20); PATH: files or
#                                                folders (default: every tracked source)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then
    files=$(find "$@" -type f \( -name '*.c' -o -name '*.cc' -o -name '*.cu' \) | sort)
else
    files=$(git ls-files '*.c' '*.cc' '*.cu')
fi
# shellcheck disable=SC2086
awk '
    FNR == 1 { sig = ""; start = 0 }
    start == 0 && /^[A-Za-z_].*\(/ && !/;[[:space:]]*$/ { sig = $0; next }
    start == 0 && sig != "" && /^[[:space:]]/ && !/^\{/ { sig = sig " " $0; next }
    start == 0 && /^\{/ && sig != "" {
        name = sig; gsub(/__launch_bounds__\([^)]*\)/, "", name); sub(/\(.*/, "", name); sub(/.*[^A-Za-z0-9_:~]/, "", name)
        start = FNR; fname = name; next
    }
    start == 0 { sig = "" }
    start > 0 && /^\}/ { printf "%6d  %s:%d  %s\n", FNR - start + 1, FILENAME, start, fname; start = 0; sig = "" }
' $files | sort -rn | head -n "$n"
