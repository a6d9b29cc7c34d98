#!/usr/bin/env bash
# A long fuzzing campaign by reader family: each family's harnesses run in slices of
# SLICE wall seconds, two harnesses at a time, until every family has used CPU_SECONDS of
# CPU time (user + system, measured, not wall time) or the DEADLINE (seconds since the
# epoch) passes. Each round takes the two families with the least CPU so far and, in each,
# the harness with the least CPU over every campaign in the log, so every harness gets its
# turns however often campaigns are stopped and started; the last family left runs two of
# its harnesses at a time. The corpus grows in fuzz-corpus/<harness> (seeded from
# tests/fuzz/corpus) and is kept between campaigns; a finding stops its family, keeps the
# input in tests/fuzz/crashes/ and makes the exit status 1. A summary line per family
# (CPU seconds, executions, corpus size) goes to stdout and to fuzz-corpus/campaign.log.
# The per-input timeout is wall time (libFuzzer's): 60 s, since a campaign may run at low
# priority beside other work; check a timeout's input alone before taking it for a hang.
#
# Usage: tests/fuzz/campaign.sh [CPU_SECONDS [SLICE [DEADLINE]]]   (binaries in build-fuzz/)
#        FAMILIES=jsonl,warc tests/fuzz/campaign.sh ...   (only these families)
#        PRIOR=jsonl:867,warc:1018 tests/fuzz/campaign.sh ...   (CPU seconds that earlier
#            campaigns gave these families: they count towards CPU_SECONDS)
# Creating fuzz-corpus/STOP ends the campaign after the running slices (nothing is lost:
# their CPU time is counted and logged); it is removed when the campaign starts. Ctrl-C
# (SIGINT to the harnesses) ends it at once, the slices cut short still counted.
set -uo pipefail
cpu_target=${1:-3600}
slice=${2:-600}
deadline=${3:-0}
families=(
    "streams:fuzz_stream"
    "jsonl:fuzz_jsonl"
    "parquet:fuzz_parquet"
    "warc:fuzz_warc fuzz_http"
    "html:fuzz_html fuzz_html_repeat"
    "wiki-xml:fuzz_wiki_xml fuzz_wikitext"
    "arxiv-tar:fuzz_arxiv"
    "idx:fuzz_idx"
    "config-yaml:fuzz_config"
    "tokenizer-files:fuzz_hf_tokenizer fuzz_bert_vocab fuzz_bpe_load fuzz_spm_enc fuzz_fasttext fuzz_bpe_cache fuzz_punkt"
    "checkpoint-headers:fuzz_safetensors fuzz_tbevents"
    # the harnesses of no reader family: text transforms, BPE training and encoding, the
    # Redis reply parser, the download's response heads and the object stores' listings
    "other:fuzz_clean fuzz_decont fuzz_pii fuzz_shingle fuzz_bpe_train fuzz_bpe_encode fuzz_redis_reply fuzz_resp_head fuzz_objstore"
)
if [ -n "${FAMILIES:-}" ]; then
    keep=()
    for f in "${families[@]}"; do
        case ",$FAMILIES," in *",${f%%:*},"*) keep+=("$f") ;; esac
    done
    [ ${#keep[@]} -eq 0 ] && { echo "campaign: no family in FAMILIES='$FAMILIES'" >&2; exit 2; }
    families=("${keep[@]}")
fi
here=$(cd "$(dirname "$0")" && pwd)
root=fuzz-corpus
# the harnesses that write each input to a file write it to a memory file system when
# there is one: millions of small writes to disk would slow the machine for everyone
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
    TMPDIR=$(mktemp -d /dev/shm/sluice-fuzz-XXXXXX)
    export TMPDIR
    trap 'rm -rf "$TMPDIR"' EXIT
fi
mkdir -p "$root" tests/fuzz/crashes
log=$root/campaign.log
declare -A used found hused   # CPU centiseconds so far: by family, and by harness
for f in "${families[@]}"; do
    used[${f%%:*}]=0
    found[${f%%:*}]=0
done
# by harness over every campaign in the log, so that every harness of a family gets its
# turns even when campaigns are stopped and started again
if [ -f "$log" ]; then
    while read -r h c; do hused[$h]=$c; done < <(awk '$1 ~ /^[0-9][0-9][0-9][0-9]-/ && $4 ~ /^cpu_s=/ {
        sub("cpu_s=", "", $4); s[$3] += $4 * 100 } END { for (h in s) print h, s[h] }' "$log")
fi
prior=${PRIOR:-}
for p in ${prior//,/ }; do
    name=${p%%:*}
    secs=${p#*:}
    [ -n "${used[$name]+x}" ] || continue
    case "$secs" in ''|*[!0-9]*) echo "campaign: PRIOR entry '$p' is not NAME:SECONDS" >&2; exit 2 ;; esac
    used[$name]=$((secs * 100))
done
rm -f "$root/STOP"

# One slice of one harness: prints "CPU_CENTISECONDS EXECUTIONS STATUS".
slice_run() {
    local t=$1 secs=$2
    local corpus=$root/$t
    if [ ! -d "$corpus" ]; then
        mkdir -p "$corpus"
        [ -d "$here/corpus/$t" ] && cp -r "$here/corpus/$t/." "$corpus/"
    fi
    local out=$root/$t.last.log
    /usr/bin/time -f "%U %S" -o "$root/$t.time" build-fuzz/"$t" -max_total_time="$secs" \
        -max_len=65536 -rss_limit_mb=2048 -timeout=60 -report_slow_units=60 -print_final_stats=1 \
        -artifact_prefix="tests/fuzz/crashes/$t-" "$corpus" >"$out" 2>&1
    local rc=$?
    local cpu execs
    # time(1) puts "Command exited with non-zero status N" before the figures on a finding
    cpu=$(tail -1 "$root/$t.time" 2>/dev/null | awk '{printf "%.0f", ($1 + $2) * 100}')
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out" | grep -o '[0-9]*$' | tail -1)
    echo "${cpu:-0} ${execs:-0} $rc"
}

pending() {
    local f name
    for f in "${families[@]}"; do
        name=${f%%:*}
        if [ "${found[$name]}" = 0 ] && [ "${used[$name]}" -lt $((cpu_target * 100)) ]; then
            echo "$f"
        fi
    done
}

# Of the harnesses given, the one with the least CPU so far that is not in $chosen.
least() {
    local best="" bc=0 x c
    for x in "$@"; do
        [[ "$chosen" == *" $x "* ]] && continue
        c=${hused[$x]:-0}
        if [ -z "$best" ] || [ "$c" -lt "$bc" ]; then
            best=$x
            bc=$c
        fi
    done
    echo "$best"
}

status=0
while :; do
    mapfile -t due < <(pending)
    [ ${#due[@]} -eq 0 ] && break
    if [ "$deadline" -gt 0 ] && [ "$(date +%s)" -ge "$deadline" ]; then
        echo "deadline reached" | tee -a "$log"
        break
    fi
    if [ -e "$root/STOP" ]; then
        echo "stopped ($root/STOP)" | tee -a "$log"
        break
    fi
    # the two families with the least CPU so far, in each the harness with the least CPU
    # so far; when one family is left, two of its harnesses
    mapfile -t pick < <(for f in "${due[@]}"; do echo "${used[${f%%:*}]} $f"; done | sort -n |
        head -2 | cut -d' ' -f2-)
    [ ${#pick[@]} -eq 1 ] && pick+=("${pick[0]}")
    pids=()
    names=()
    chosen=" "
    for f in "${pick[@]}"; do
        name=${f%%:*}
        read -r -a hs <<<"${f#*:}"
        h=$(least "${hs[@]}")
        [ -n "$h" ] || continue   # a family of one harness, already running
        chosen+="$h "
        secs=$slice
        if [ "$deadline" -gt 0 ]; then
            left=$((deadline - $(date +%s)))
            [ "$left" -lt "$secs" ] && secs=$left
            [ "$secs" -lt 10 ] && secs=10
        fi
        (slice_run "$h" "$secs" >"$root/$h.result") &
        pids+=($!)
        names+=("$name:$h")
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}"
        name=${names[$i]%%:*}
        h=${names[$i]#*:}
        read -r cpu execs rc <"$root/$h.result"
        used[$name]=$((used[$name] + cpu))
        hused[$h]=$(( ${hused[$h]:-0} + cpu ))
        line="$(date -u +%FT%TZ) $name $h cpu_s=$((cpu / 100)) execs=$execs corpus=$(ls "$root/$h" | wc -l) rc=$rc family_cpu_s=$((used[$name] / 100))"
        echo "$line" | tee -a "$log"
        if [ "$rc" = 72 ] && grep -q "run interrupted" "$root/$h.last.log"; then
            # SIGINT (a user stopping the campaign): the slice counts, nothing was found
            echo "interrupted" | tee -a "$log"
            touch "$root/STOP"
        elif [ "$rc" != 0 ]; then
            found[$name]=1
            status=1
            echo "FINDING in $h (family $name):" | tee -a "$log"
            grep -E "ERROR|SUMMARY|==[0-9]+==" "$root/$h.last.log" | head -5 | tee -a "$log"
        fi
    done
done
for f in "${families[@]}"; do
    name=${f%%:*}
    echo "family $name cpu_s=$((used[$name] / 100)) finding=${found[$name]}" | tee -a "$log"
done
exit $status
