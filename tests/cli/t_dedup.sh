#!/usr/bin/env bash
# sluice dedup exact|fuzzy: answers on real and generated corpora against brute-force
# ground truth, the same outputs for mpirun -np 1/2/4, incremental runs, and bad input.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
GEN="$PY $HERE/dedup_gen.py"
TRUTH="$PY $HERE/dedup_truth.py"
D="$FIX/dedup"

# ids of a side file's removed documents, sorted
removed() { $PY -c "
import json, sys
ids = [i for l in open(sys.argv[1]) for i in json.loads(l)['removed']]
print(' '.join(sorted(map(str, ids))))" "$1"; }
# value of KEY in a dedup_truth.py --json line
jget() { $PY -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
# A >= B - slack
ge() { $PY -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) - float(sys.argv[3]) else 1)" "$@"; }

case_ "help"
run "$SLUICE" dedup -h
expect_rc 0; expect_out "sluice dedup fuzzy"
run "$SLUICE" dedup exact -h
expect_rc 0; expect_out "--keep first|longest"
run "$SLUICE" dedup fuzzy -h
expect_rc 0; expect_out "--preset datatrove|nemo"; expect_out "--redis HOST:PORT,..."
run "$SLUICE" help dedup
expect_rc 0; expect_out "sluice dedup exact"

case_ "every option of -h is in docs/commands/dedup.md"
for mode in exact fuzzy; do
    for opt in $("$SLUICE" dedup $mode -h | grep -o -- '--[a-z0-9-]*' | sort -u); do
        grep -q -- "\`[^\`]*$opt" "$ROOT/docs/commands/dedup.md" && ok || fail "dedup $mode $opt is not documented"
    done
done

case_ "usage errors exit 2"
run "$SLUICE" dedup
expect_rc 2
run "$SLUICE" dedup fuzz --out "$T/x" "$D"
expect_rc 2; expect_err "unknown dedup mode 'fuzz'"
run "$SLUICE" dedup fuzzy "$D"
expect_rc 2; expect_err "--out DIR is required"
run "$SLUICE" dedup fuzzy --out "$T/x" --ngram lines:3 "$D"
expect_rc 2; expect_err "bad --ngram 'lines:3'"
run "$SLUICE" dedup fuzzy --out "$T/x" --bands 100 --rows 100 "$D"
expect_rc 2; expect_err "permutations"
run "$SLUICE" dedup fuzzy --out "$T/x" --verify --index-in "$T/idx" "$D"
expect_rc 2; expect_err "--verify cannot be used with --index-in"
run "$SLUICE" dedup fuzzy --out "$T/x" --backend redis "$D"
expect_rc 2; expect_err "--backend redis needs --redis"
run "$SLUICE" dedup exact --out "$T/x" --norm lower,shout "$D"
expect_rc 2; expect_err "unknown normalisation 'shout'"

case_ "exact: the duplicate pair in blns"
run "$SLUICE" dedup exact --out "$T/blns" "$FIX/jsonl/blns.jsonl.zst"
expect_rc 0
expect_eq "$(json "$T/blns/manifest.json" "m['counts']['duplicates_removed']")" 1
expect_eq "$(wc -l < "$T/blns/duplicates.jsonl")" 1
expect_eq "$(json "$T/blns/manifest.json" "m['stage']")" dedup-exact
expect_eq "$(json "$T/blns/manifest.json" "m['command'][:2]")" "['dedup', 'exact']"
expect_no_file "$T/blns/clusters.jsonl"

case_ "exact --key metadata.url agrees with Dolma's URL dedup"
run "$SLUICE" dedup exact --key metadata.url --out "$T/url" "$D/dolma-dedupe-documents.json.gz"
expect_rc 0
want=$(zcat "$D/dolma-expected-dedupe-by-url.json.gz" | $PY -c "
import json, sys
print(' '.join(sorted(json.dumps(d['id'])[1:-1] for d in map(json.loads, sys.stdin) if d['attributes'].get('bff_duplicate_url'))))")
expect_eq "$(removed "$T/url/duplicates.jsonl")" "$want"
run "$SLUICE" dedup exact --key nosuchkey --out "$T/url2" "$D/dolma-dedupe-documents.json.gz"
expect_rc 0; expect_err "10 documents have no 'nosuchkey'"

case_ "exact: normalisation and --keep longest"
printf '%s\n' '{"id":"a","text":"Hello, World"}' '{"id":"b","text":"hello world!!"}' \
    '{"id":"c","text":"HELLO   WORLD"}' '{"id":"d","text":""}' '{"id":"e","text":""}' > "$T/n.jsonl"
run "$SLUICE" dedup exact --out "$T/n0" "$T/n.jsonl"
expect_rc 0
expect_eq "$(removed "$T/n0/duplicates.jsonl")" "e"
run "$SLUICE" dedup exact --norm all --keep longest --out "$T/n1" "$T/n.jsonl"
expect_rc 0
expect_eq "$(head -1 "$T/n1/duplicates.jsonl")" '{"group":0,"kept":"b","removed":["a","c"]}'
expect_eq "$(json "$T/n1/manifest.json" "m['counts']['documents_out']")" 2

case_ "duplicate ids across inputs: an error naming both files"
printf '%s\n' '{"id":"x1","text":"one"}' '{"id":"same","text":"two"}' > "$T/ida.jsonl"
printf '%s\n' '{"id":"x2","text":"three"}' '{"id":"same","text":"four"}' > "$T/idb.jsonl"
for mode in exact fuzzy; do
    run "$SLUICE" dedup $mode --out "$T/id$mode" "$T/ida.jsonl" "$T/idb.jsonl"
    expect_rc 1; expect_err "duplicate document id"; expect_err "ida.jsonl' line 2"
    expect_err "idb.jsonl' line 2"; expect_no_file "$T/id$mode/manifest.json"
done

case_ "fuzzy: empty and short texts"
printf '%s\n' '{"id":"e1","text":""}' '{"id":"e2","text":"  ... "}' '{"id":"s1","text":"two words"}' \
    '{"id":"s2","text":"Two words."}' '{"id":"l1","text":"a b c d e f g h i j"}' > "$T/short.jsonl"
run "$SLUICE" dedup fuzzy --out "$T/short" "$T/short.jsonl"
expect_rc 0
expect_err "2 documents have no text to compare"
expect_err "2 documents are shorter than one shingle (words:5) and were hashed whole"
expect_eq "$(removed "$T/short/duplicates.jsonl")" "s2"
expect_eq "$(json "$T/short/manifest.json" "m['counts']['empty_documents']")" 2

# ---- accuracy against brute-force ground truth -------------------------------------------
mkdir -p "$T/gen"
$GEN "$T/gen" 11 200 3
GENF=("$T"/gen/part-0.jsonl "$T"/gen/part-1.jsonl "$T"/gen/part-2.jsonl)
# UDHR has no ids: use its language codes
zstd -q -dc "$D/udhr.jsonl.zst" | $PY -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l); d['id'] = d['code']; print(json.dumps(d))" > "$T/udhr.jsonl"
for set in gen udhr dolma; do
    case $set in
        gen) in=("${GENF[@]}") ;;
        udhr) in=("$T/udhr.jsonl") ;;
        dolma) in=("$D/dolma-dedupe-documents.json.gz") ;;
    esac
    for preset in "datatrove words:5 all 14 8" "nemo chars:24 none 20 13"; do
        read -r pname ngram norm b r <<<"$preset"
        for v in verify plain; do
            run "$SLUICE" dedup fuzzy --ngram "$ngram" --norm "$norm" --bands "$b" --rows "$r" \
                $([ $v = verify ] && echo --verify) --anchors 100000 --pairs \
                --out "$T/acc-$set-$pname-$v" "${in[@]}"
            expect_rc 0
        done
        $TRUTH --ngram "$ngram" --norm "$norm" --bands "$b" --rows "$r" --json \
            --pairs "$T/acc-$set-$pname-verify/pairs.jsonl" \
            --pairs "$T/acc-$set-$pname-plain/pairs.jsonl" "${in[@]}" > "$T/score"
        res=$(sed -n 1p "$T/score")
        echo "ok accuracy $set $pname --verify: $res"
        case_ "accuracy $set $pname --verify: precision 1, recall per the S-curve"
        expect_eq "$(jget "$res" precision)" 1.0
        ge "$(jget "$res" recall)" "$(jget "$res" predicted_recall)" 0.03 && ok ||
            fail "recall below the S-curve: $res"
        ge 1e-5 "$(jget "$res" max_jaccard_error)" 0 && ok ||
            fail "reported Jaccard differs from the truth: $res"
        res=$(sed -n 2p "$T/score")
        echo "ok accuracy $set $pname: $res"
        case_ "accuracy $set $pname without --verify: recall per the S-curve"
        ge "$(jget "$res" recall)" "$(jget "$res" predicted_recall)" 0.03 && ok ||
            fail "recall below the S-curve: $res"
    done
done

case_ "the mersenne and multiply32 families find the same near-duplicates as multiply"
run "$SLUICE" dedup fuzzy --verify --out "$T/mult" "${GENF[@]}"
expect_rc 0
b=$(json "$T/mult/manifest.json" "m['counts']['duplicates_removed']")
for fam in mersenne multiply32; do
    run "$SLUICE" dedup fuzzy --hash $fam --verify --out "$T/$fam" "${GENF[@]}"
    expect_rc 0
    a=$(json "$T/$fam/manifest.json" "m['counts']['duplicates_removed']")
    ge "$a" "$b" 5 && ge "$b" "$a" 5 && ok || fail "$fam $a vs multiply $b removed"
done

case_ "resume: a second run with the same plan is a resumed one with the same outputs"
run "$SLUICE" dedup fuzzy --verify --out "$T/mult" "${GENF[@]}"
expect_rc 0; expect_err "(resumed)"

# ---- incremental -------------------------------------------------------------------------------
case_ "incremental: --index-out then --index-in removes what a joint run removes"
run "$SLUICE" dedup fuzzy --out "$T/inc-a" --index-out "$T/idx" "$T/gen/part-0.jsonl"
expect_rc 0; expect_file "$T/idx/meta.json"; expect_file "$T/idx/bands-00000.sldx.zst"
run "$SLUICE" dedup fuzzy --out "$T/inc-b" --index-in "$T/idx" --index-out "$T/idx2" \
    "$T/gen/part-1.jsonl" "$T/gen/part-2.jsonl"
expect_rc 0
run "$SLUICE" dedup fuzzy --out "$T/joint" "${GENF[@]}"
expect_rc 0
joint_bc=$($PY -c "
import json, sys
first = {json.loads(l)['id'] for l in open(sys.argv[2])}
ids = [i for l in open(sys.argv[1]) for i in json.loads(l)['removed'] if i not in first]
print(' '.join(sorted(ids)))" "$T/joint/duplicates.jsonl" "$T/gen/part-0.jsonl")
expect_eq "$(removed "$T/inc-b/duplicates.jsonl")" "$joint_bc"
case_ "incremental: a third generation against the grown index"
cp "$T/gen/part-2.jsonl" "$T/again.jsonl"
sed -i 's/"id": "g/"id": "again-g/' "$T/again.jsonl"
run "$SLUICE" dedup fuzzy --out "$T/inc-c" --index-in "$T/idx2" "$T/again.jsonl"
expect_rc 0
expect_eq "$(json "$T/inc-c/manifest.json" "m['counts']['documents_out']")" 0
case_ "incremental: settings must match the index"
run "$SLUICE" dedup fuzzy --out "$T/inc-d" --preset nemo --index-in "$T/idx" "$T/again.jsonl"
expect_rc 1; expect_err "was built with other MinHash settings"
run "$SLUICE" dedup fuzzy --out "$T/inc-e" --index-in "$T/nowhere" "$T/again.jsonl"
expect_rc 1; expect_err "cannot read the dedup index"

# ---- ranks -------------------------------------------------------------------------------------
if have_mpi; then
    cp "$FIX/jsonl/blns.jsonl.zst" "$T/gen/"
    for mode in "exact --norm all" "fuzzy --verify --pairs" "fuzzy --preset nemo"; do
        for np in 1 2 4; do
            case_ "mpirun -np $np dedup $mode"
            run "${MPIRUN[@]}" -np $np "$SLUICE" dedup $mode --out "$T/np$np" "$T/gen"
            expect_rc 0
        done
        SLUICE_DEDUP_FORCE_STAR=1 run "$SLUICE" dedup $mode --out "$T/np0" "$T/gen"
        for np in 0 2 4; do
            case_ "dedup $mode: -np $np gives the outputs of -np 1"
            for f in "$T"/np1/*.jsonl "$T"/np1/part-*.jsonl.zst; do
                cmp -s "$f" "$T/np$np/$(basename "$f")" && ok || fail "$(basename "$f") differs"
            done
            expect_eq "$(json "$T/np$np/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
                      "$(json "$T/np1/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
        done
        rm -rf "$T"/np?
    done
fi

finish
