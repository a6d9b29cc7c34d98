#!/usr/bin/env bash
# What a user sees of every command, written to a directory so that two builds can be
# compared with `diff -r` (for changes that must not change behaviour):
#   scripts/behaviour-snapshot.sh [--sluice BIN] OUT_DIR
# It records each command's and subcommand's -h, the usage errors (no operands, an unknown
# option) with their exit codes, `sluice run --dry-run` of every bundled pipeline, and the
# demo pipeline up to a few training steps: every stage's outputs (sha256) and manifests,
# with what differs from run to run (times, rates, paths of the work directory) taken out.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
sluice="$here/build/sluice"
if [ "${1:-}" = "--sluice" ]; then sluice=$(realpath "$2"); shift 2; fi
out=${1:?usage: behaviour-snapshot.sh [--sluice BIN] OUT_DIR}
rm -rf "$out"
mkdir -p "$out/help" "$out/usage" "$out/run"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-snapshot-XXXXXX")
trap 'rm -rf "$work"' EXIT

# cmd -h and usage errors; `sluice --help` lists the commands, `help NAME` their subcommands
"$sluice" --help > "$out/help/_sluice.txt" 2>&1 || true
cmds=$("$sluice" --help | awk '/^   [a-z]/ {print $1}')
capture() { # NAME CMD...: stdout, stderr and the exit code of CMD
    local name=$1
    shift
    local rc=0
    "$@" > "$work/o" 2> "$work/e" || rc=$?
    { echo "rc $rc"; echo "--- stdout"; cat "$work/o"; echo "--- stderr"; cat "$work/e"; } |
        sed "s|$work|WORK|g; s|$here|ROOT|g" > "$name"
}
for c in $cmds; do
    capture "$out/help/$c.txt" "$sluice" "$c" -h
    capture "$out/usage/$c-none.txt" "$sluice" "$c"
    capture "$out/usage/$c-bogus.txt" "$sluice" "$c" --no-such-option x
    subs=$("$sluice" help "$c" 2>/dev/null |
        sed -n "s/^\(usage\|   or\): sluice $c \([a-z][a-z-]*\).*/\2/p" | sort -u || true)
    for s in $subs; do
        case $s in *[!a-z-]*) continue ;; esac
        capture "$out/help/$c-$s.txt" "$sluice" "$c" "$s" -h
        capture "$out/usage/$c-$s-none.txt" "$sluice" "$c" "$s"
    done
done

# sluice run --dry-run of the bundled pipelines
for p in "$here"/configs/pipelines/*.yaml; do
    capture "$out/run/dry-$(basename "$p" .yaml).txt" "$sluice" run --dry-run "$p" work_dir="$work/dry"
done

# the demo: every stage, then 4 training steps; outputs hashed, manifests without times
capture "$out/run/demo.txt" "$sluice" run -q "$here/configs/pipelines/demo.yaml" \
    work_dir="$work/demo" train.train.steps=4 train.eval.interval=2
# times and rates out of the step lines and the summary's last column
sed -E -i 's/(step_time|tokens\/s|TFLOP\/s\/rank) [0-9.]+/\1 T/g; s/ [0-9.]+ s;/ T s;/;
    s/^([a-z_/]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +)[0-9.]+/\1T/' "$out/run/demo.txt"
# (left out: locks, logs, plots, event files, and the index cache's descriptions, which
# name the data by its path; the cache files are named by their hash, made HASH here)
(cd "$work/demo" && find . -type f ! -name '*.tfevents*' ! -name 'log.jsonl' ! -name '*.svg' \
    ! -name lock ! -name ranks.lock ! -name '*-description.txt' ! -name '*.json' ! -path '*/tb/*' \
    -print0 | xargs -0 sha256sum) | sed -E 's|/[0-9a-f]{32}-GPTDataset|/HASH-GPTDataset|' |
    sort -k2 > "$out/run/demo-files.txt"
"${PY:-python3}" - "$work/demo" "$out/run/demo-json" <<'PY'
import json, os, re, sys
src, dst = sys.argv[1:3]
volatile = re.compile(r"(started|finished|wall|seconds|_s$|per_s|elapsed|time|rss|host|pid|rate|throughput)")
def clean(v):
    if isinstance(v, dict):
        return {k: ("<varies>" if volatile.search(k) else clean(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [clean(x) for x in v]
    if isinstance(v, str):
        return v.replace(src, "WORK")
    if isinstance(v, int) and v > 10 ** 17:  # a file's modification time in ns
        return "<varies>"
    return v
os.makedirs(dst, exist_ok=True)
for root, _, files in os.walk(src):
    for f in sorted(files):
        if f.endswith(".json") and "tokenizer" not in f:
            p = os.path.join(root, f)
            try:
                v = json.load(open(p))
            except ValueError:
                continue
            name = os.path.relpath(p, src).replace("/", "__")
            if name == "train__.sluice__run__step.json":
                continue  # the trainer's files are named by hashes of paths and times

            json.dump(clean(v), open(os.path.join(dst, name), "w"), indent=1, sort_keys=True)
PY
echo "snapshot in $out"
