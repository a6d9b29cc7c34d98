#!/usr/bin/env bash
# Precision and recall of sluice dedup fuzzy against brute-force ground truth
# (tests/cli/dedup_truth.py) on the UDHR versions, the Dolma dedup fixture and a generated
# corpus with controlled edit rates; both presets, with and without --verify. Prints the
# Markdown rows of the table in docs/dedup.md.
# Usage: bench/dedup_accuracy.sh [SLUICE]   (GEN_CLUSTERS=1000 by default)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=$(realpath "${1:-$root/build/sluice}")
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-acc-XXXXXX")
trap 'rm -rf "$work"' EXIT
fix=$root/tests/fixtures/dedup
mkdir -p "$work/gen"
python3 "$root/tests/cli/dedup_gen.py" "$work/gen" 101 "${GEN_CLUSTERS:-1000}" 4
zstd -q -dc "$fix/udhr.jsonl.zst" | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l); d['id'] = d['code']; print(json.dumps(d))" > "$work/udhr.jsonl"
for set in generated udhr dolma; do
    case $set in
        generated) in=("$work"/gen/*.jsonl) ;;
        udhr) in=("$work/udhr.jsonl") ;;
        dolma) in=("$fix/dolma-dedupe-documents.json.gz") ;;
    esac
    for preset in "datatrove words:5 all 14 8" "nemo chars:24 none 20 13"; do
        read -r pname ngram norm b r <<<"$preset"
        for v in yes no; do
            "$sluice" -q dedup fuzzy --preset "$pname" $([ $v = yes ] && echo --verify) \
                --anchors 100000 --pairs --out "$work/o-$v" "${in[@]}"
        done
        python3 "$root/tests/cli/dedup_truth.py" --ngram "$ngram" --norm "$norm" --bands "$b" \
            --rows "$r" --json --pairs "$work/o-yes/pairs.jsonl" --pairs "$work/o-no/pairs.jsonl" \
            "${in[@]}" | python3 -c "
import json, sys
docs = None
for line, v in zip(sys.stdin, ('yes', 'no')):
    r = json.loads(line)
    print('| %s (%d docs) | %s | %s | %d | %d | %.3f | %.3f | %.3f |' % (sys.argv[1], r['documents'],
          sys.argv[2], v, r['true_pairs'], r['found_pairs'], r['precision'], r['recall'], r['predicted_recall']))
" "$set" "$pname"
        rm -rf "$work"/o-*
    done
done
