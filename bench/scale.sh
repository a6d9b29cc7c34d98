#!/usr/bin/env bash
# How cost grows with the input (docs/benchmarks.md, section "Scaling").
#
#   bench/scale.sh [SLUICE]          (make bench-scale)
#
# Corpus: bench/scale_gen.py, real paragraphs of ../shared/data with real near-duplicates
# (25% edited copies, 3% verbatim copies), at SCALES (default 1 4 16) times SCALE_MB (default
# 256 MB of JSONL), in 8 files per SCALE_MB; the larger corpora begin with the smaller.
# Extract runs on its own input: the real WARC files of ../shared/data/warc/dolma-wget
# (1.6 MB of pages, too few to build a corpus from) repeated to SCALE_MB/4 of WARC.gz per 1x.
# Each stage runs on the whole corpus, at 1 rank (no mpirun) and at 2 ranks (mpirun -np 2):
#   extract (WARC) ; clean (corpus) ; filter fineweb.yaml (clean's output) ;
#   dedup exact (clean's output; filter would keep only a fifth of this corpus) ;
#   dedup fuzzy, memory and Redis backends (exact's output) ; tokenize gpt2, -j 1 (fuzzy's).
# Every rank runs under /usr/bin/time: wall, user+sys CPU seconds, ru_maxrss. Redis: a fresh
# 3-master loopback cluster per run, used_memory_peak of each node afterwards; and what
# `sluice dedup fuzzy --plan` predicts for the same run.
# Writes RESULTS (default bench/results/scale-<date>.tsv), one row per rank per run, with
# the 1-minute load average at the start of each run (the wall times of a shared machine
# mean little without it; CPU time and peak memory are the figures to trust), and prints
# a summary table. Runs nice'd. Env: SCALE_MB, SCALES, RANKS, STAGES, REDIS=0 (skip the
# Redis backend), KEEP=1 (keep the work directory).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=$(realpath "${1:-$root/build/sluice}")
data=${SLUICE_DATA:-$root/../shared/data}
[ -d "$data" ] || data=$root/../../shared/data
mb=${SCALE_MB:-256}
scales=${SCALES:-1 4 16}
ranks_list=${RANKS:-1 2}
stages=${STAGES:-extract clean filter exact fuzzy fuzzy-redis tokenize}
results=${RESULTS:-$root/bench/results/scale-$(date -u +%Y%m%d-%H%M).tsv}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-scale-XXXXXX")
source "$root/tests/cli/redis_cluster.sh"
cleanup() {
    rc_stop
    [ "${KEEP:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
renice -n 10 $$ >/dev/null 2>&1 || true
M=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && M+=(--allow-run-as-root)
mkdir -p "$(dirname "$results")"
printf 'scale\tmb\tstage\tranks\trank\tdocs_in\tbytes_in\tload1\twall_s\tcpu_s\tmaxrss_kb\tredis_nodes\tredis_peak_max_b\tplan\n' > "$results"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; results in $results"

# run SCALE STAGE RANKS IN_DIR MANIFEST CMD...: time every rank of CMD, append its rows
run() {
    local scale=$1 stage=$2 np=$3 manifest=$5 load t r
    shift 5
    rm -f "$work"/time.*
    load=$(cut -d' ' -f1 /proc/loadavg)
    # each rank under /usr/bin/time, writing to time.<rank>
    local timed=(bash -c 'exec /usr/bin/time -f "%e %U %S %M" -o "$0.${OMPI_COMM_WORLD_RANK:-0}" "$@"' "$work/time")
    if [ "$np" = 1 ]; then
        "${timed[@]}" "$@" > "$work/log" 2>&1 || { cat "$work/log"; return 1; }
    else
        "${M[@]}" -np "$np" "${timed[@]}" "$@" > "$work/log" 2>&1 || { cat "$work/log"; return 1; }
    fi
    local counts
    counts=$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1])).get("counts", {})
print(c.get("documents_in", c.get("documents", c.get("records", 0))), c.get("bytes_in", 0))' "$manifest")
    for t in "$work"/time.*; do
        r=${t##*.}
        read -r wall user sys rss < <(grep -v '^Command' "$t" | tail -1)
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t\t%s\n' "$scale" "$mb" "$stage" "$np" "$r" \
            "${counts%% *}" "${counts##* }" "$load" "$wall" "$(echo "$user + $sys" | bc)" "$rss" \
            "${PLAN_ROW:-}" >> "$results"
    done
    echo "  $stage x$scale, $np rank(s): $(tail -1 "$work/log" | cut -c1-150)"
}

redis_peaks() { # PORTS...: nodes and the largest used_memory_peak among them, tab-separated
    local p peak max=0
    for p in "$@"; do
        peak=$(redis-cli -p "$p" info memory | tr -d '\r' | sed -n 's/^used_memory_peak://p')
        [ "$peak" -gt "$max" ] && max=$peak
    done
    printf '%s\t%s' "$#" "$max"
}

for scale in $scales; do
    c=$work/c$scale
    echo "== ${scale}x: $(python3 "$root/bench/scale_gen.py" "$data" "$c/corpus" "$((mb * scale))" "$((8 * scale))")"
    if [[ " $stages " == *" extract "* ]]; then
        mkdir -p "$c/warc"
        # one file is 20 copies of the two dolma-wget samples (9 MB of WARC.gz)
        for i in $(seq 20); do cat "$data"/warc/dolma-wget/sample-000*.warc.gz; done > "$c/warc/w-0000.warc.gz"
        nw=$(( (mb / 4 * scale + 8) / 9 )); [ "$nw" -lt 2 ] && nw=2
        for i in $(seq 1 $((nw - 1))); do cp "$c/warc/w-0000.warc.gz" "$c/warc/w-$(printf %04d "$i").warc.gz"; done
    fi
    for np in $ranks_list; do
        o=$c/o$np
        rm -rf "$o"
        mkdir -p "$o"
        for st in $stages; do
            case $st in
            extract) run "$scale" extract "$np" "$c/warc" "$o/x/manifest.json" \
                "$sluice" extract --format warc --out "$o/x" "$c/warc" ;;
            clean) run "$scale" clean "$np" "$c/corpus" "$o/clean/manifest.json" \
                "$sluice" clean --out "$o/clean" "$c/corpus" ;;
            filter) run "$scale" filter "$np" "$o/clean" "$o/filter/manifest.json" \
                "$sluice" filter --config "$root/configs/filters/fineweb.yaml" --out "$o/filter" "$o/clean" ;;
            exact) run "$scale" dedup-exact "$np" "$o/clean" "$o/exact/manifest.json" \
                "$sluice" dedup exact --out "$o/exact" "$o/clean" ;;
            fuzzy)
                PLAN_ROW=$("$sluice" dedup fuzzy --plan --ranks "$np" --out "$o/fz" "$o/exact" 2>/dev/null |
                    sed -n 's/^peak per rank: *\([0-9.]*\) MB.*/rank=\1MB/p' || true) \
                    run "$scale" dedup-fuzzy "$np" "$o/exact" "$o/fz/manifest.json" \
                    "$sluice" dedup fuzzy --out "$o/fz" "$o/exact" ;;
            fuzzy-redis)
                [ "${REDIS:-1}" = 1 ] && command -v redis-server >/dev/null || continue
                base=$(rc_free_base 3)
                rc_start "$work/rc" "$base" 3 0 >/dev/null
                plan=$("$sluice" dedup fuzzy --plan --ranks "$np" --backend redis --redis "127.0.0.1:$base" \
                    --out "$o/fzr" "$o/exact" 2>/dev/null | tr '\n' ' ' |
                    sed -n 's/.*peak per rank: *\([0-9.]*\) MB.*peak per redis node: *\([0-9.]*\) MB.*/rank=\1MB node=\2MB/p' || true)
                PLAN_ROW=$plan run "$scale" dedup-fuzzy-redis "$np" "$o/exact" "$o/fzr/manifest.json" \
                    "$sluice" dedup fuzzy --backend redis --redis "127.0.0.1:$base" --out "$o/fzr" "$o/exact" || true
                # the peaks, written into the rows just added
                peaks=$(redis_peaks "$base" $((base + 1)) $((base + 2)))
                python3 - "$results" "$peaks" <<'PY'
import sys
path, peaks = sys.argv[1], sys.argv[2].split("\t")
rows = open(path).read().split("\n")
for i, r in enumerate(rows):
    f = r.split("\t")
    if len(f) == 14 and f[2] == "dedup-fuzzy-redis" and f[11] == "":
        f[11], f[12] = peaks
        rows[i] = "\t".join(f)
open(path, "w").write("\n".join(rows))
PY
                rc_stop
                rm -rf "$work/rc" ;;
            tokenize) run "$scale" tokenize "$np" "$o/fz" "$o/tok.manifest.json" \
                "$sluice" tokenize --tokenizer "gpt2:$data/gpt2-bpe" --append-eod -j 1 --out "$o/tok" "$o/fz" ;;
            esac
        done
        [ "${KEEP:-0}" = 1 ] || rm -rf "$o"
    done
    [ "${KEEP:-0}" = 1 ] || rm -rf "$c"
done
python3 "$root/bench/scale_table.py" "$results"
