#!/usr/bin/env bash
# The URL filter (`url` with `rules: datatrove`, UT1's 4.56 M domains) against datatrove
# 0.10.0's URLFilter with the same lists and Debian's Public Suffix List: decisions compared
# URL by URL, then the list load (CPU seconds, from the tar.gz and from an extracted
# directory) and URLs per CPU-second on one core, RUNS rounds (default 5), medians. URLs:
# tests/fixtures/filter/url/urls.jsonl.gz (the WARC URLs of shared/data and the generated
# cases, 23,226) repeated COPIES times (default 20). Writes bench/results/url-filter.md.
# Usage: bench/url-filter.sh [SLUICE]   (datatrove and its URL filter's packages into
# .venv-bench, or the venv named by VENV_BENCH)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
sluice=$(realpath "${1:-build/sluice}")
data=${SLUICE_DATA:-$(cd "$root/.." && pwd)/shared/data}
venv=${VENV_BENCH:-$root/.venv-bench}
runs=${RUNS:-5}
copies=${COPIES:-20}
cpu=${BENCH_CPU:-0}
tgz=$data/lexicons/url-filter/url_filterblacklistsv0_3_0.tar.gz
[ -f "$tgz" ] || { echo "bench: no $tgz (set SLUICE_DATA)" >&2; exit 1; }
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# only what the URL filter needs, at the versions of bench/requirements.txt
grep -E '^(datatrove|tldextract|pyahocorasick|fasteners|regex|loguru)==' "$here/requirements.txt" \
    > "$venv/url-filter-requirements.txt"
"$venv/bin/pip" install -q --disable-pip-version-check -r "$venv/url-filter-requirements.txt"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-urlbench-XXXXXX")
trap 'rm -rf "$work"' EXIT
for _ in $(seq "$copies"); do zcat "$root/tests/fixtures/filter/url/urls.jsonl.gz"; done > "$work/in.jsonl"
head -1 "$work/in.jsonl" > "$work/one.jsonl"
mkdir "$work/lists" && tar -xzf "$tgz" -C "$work/lists"
printf 'filters:\n  - url:\n      rules: datatrove\n      blocklist: %s\n' "$tgz" > "$work/tgz.yaml"
printf 'filters:\n  - url:\n      rules: datatrove\n      blocklist: %s\n' "$work/lists" > "$work/dir.yaml"
"$venv/bin/python" "$here/url_filter_speed.py" "$sluice" "$venv/bin/python" "$work/in.jsonl" \
    "$work/one.jsonl" "$work/tgz.yaml" "$work/dir.yaml" "$runs" "$cpu" "$work" | tee "$here/results/url-filter.md"
