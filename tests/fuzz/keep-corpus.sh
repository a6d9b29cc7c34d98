#!/usr/bin/env bash
# Keep what a campaign learned, small: for each harness, the inputs of its campaign corpus
# (fuzz-corpus/<harness>) of at most MAX_BYTES that reach code the kept corpus
# (tests/fuzz/corpus/<harness>) does not are added to the kept corpus. libFuzzer's merge
# decides (-merge=1 -use_counters=0: an input is added only for an edge of the code that
# no kept or already added input runs; how often an edge runs is not counted, which keeps
# the set to a few hundred inputs at most; new files are named by the SHA-1 of their
# bytes), so a second run adds nothing. Prints, per harness, the inputs and bytes added.
#
# Usage: tests/fuzz/keep-corpus.sh [MAX_BYTES [HARNESS...]]   (binaries in build-fuzz/;
#        default: 4096 bytes, every harness with a campaign corpus)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
max=${1:-4096}
shift || true
case "$max" in ''|*[!0-9]*) echo "keep-corpus: MAX_BYTES '$max' is not a number" >&2; exit 2 ;; esac
root=fuzz-corpus
if [ $# -eq 0 ]; then
    for d in "$root"/fuzz_*/; do
        [ -d "$d" ] && set -- "$@" "$(basename "$d")"
    done
fi
[ $# -gt 0 ] || { echo "keep-corpus: no campaign corpus in $root/" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-keep-XXXXXX")
trap 'rm -rf "$work"' EXIT
bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
for t in "$@"; do
    [ -x "build-fuzz/$t" ] || { echo "keep-corpus: build-fuzz/$t is missing (make fuzz)" >&2; exit 2; }
    [ -d "$root/$t" ] || { echo "keep-corpus: no campaign corpus $root/$t" >&2; exit 2; }
    kept=$here/corpus/$t
    mkdir -p "$kept" "$work/$t"
    find "$root/$t" -maxdepth 1 -type f -size -"$((max + 1))"c -exec cp -t "$work/$t" {} +
    small=$(find "$work/$t" -type f | wc -l)
    before_n=$(find "$kept" -type f | wc -l)
    before_b=$(bytes "$kept")
    if ! build-fuzz/"$t" -merge=1 -use_counters=0 -max_len="$max" -rss_limit_mb=2048 -timeout=60 \
            "$kept" "$work/$t" >"$work/$t.log" 2>&1; then
        echo "keep-corpus: merging $t failed:" >&2
        tail -20 "$work/$t.log" >&2
        exit 1
    fi
    n=$(( $(find "$kept" -type f | wc -l) - before_n ))
    b=$(( $(bytes "$kept") - before_b ))
    echo "$t: $n inputs added ($b bytes), from $small of at most $max bytes"
    rm -rf "${work:?}/$t"
done
