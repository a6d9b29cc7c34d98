#!/usr/bin/env bash
# Run each fuzz harness for SECONDS with its seed corpus; fail on any crash.
# Usage: tests/fuzz/run.sh SECONDS TARGET...   (binaries in build-fuzz/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seconds=$1
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-fuzz-XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0
for t in "$@"; do
    corpus="$work/$t"
    mkdir -p "$corpus"
    [ -d "$here/corpus/$t" ] && cp -r "$here/corpus/$t/." "$corpus/"
    echo "== fuzz $t for ${seconds}s"
    if ! build-fuzz/"$t" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
            -timeout=10 -print_final_stats=0 -artifact_prefix="$work/$t-" "$corpus" \
            >"$work/$t.log" 2>&1; then
        echo "FAIL: fuzz $t found a problem:"
        tail -40 "$work/$t.log"
        mkdir -p tests/fuzz/crashes && cp "$work/$t-"* tests/fuzz/crashes/ 2>/dev/null || true
        status=1
    else
        grep -E "^#[0-9]+.*(DONE|pulse)" "$work/$t.log" | tail -1 || true
    fi
done
exit $status
