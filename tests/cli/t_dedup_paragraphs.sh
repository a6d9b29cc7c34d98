#!/usr/bin/env bash
# sluice dedup paragraphs: Dolma's expected output on its deduper test data, paragraph and
# line (C4) and three-sentence-span dedup against a brute-force reference (tests/oracle/paragraph_dedup.py), the
# Bloom filter's measured false-positive rate, mpirun -np 1/2 giving the same outputs, a run
# stopped after some shards resuming to the same outputs, the stage in `sluice run`, and
# bad options.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
D="$FIX/dedup"
ORACLE="$PY $ROOT/tests/oracle/paragraph_dedup.py"

# {"id", "text"} of each document of an output directory's shards, in shard order
texts() { for f in "$1"/part-*.jsonl.zst; do zstd -q -d -c "$f"; done | $PY -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    print(json.dumps({'id': d['id'], 'text': d['text']}, ensure_ascii=False))"; }
count() { json "$1/manifest.json" "m['counts']['$2']"; }
same_shards() { # DIR_A DIR_B: the same shard names and bytes
    local a b
    a=$(cd "$1" && ls part-*); b=$(cd "$2" && ls part-*)
    [ "$a" = "$b" ] || { fail "shards differ: $a vs $b"; return; }
    for f in $a; do cmp -s "$1/$f" "$2/$f" || { fail "$f differs"; return; }; done
    ok
}

case_ "help"
run "$SLUICE" dedup paragraphs -h
expect_rc 0; expect_out "--unit paragraph|line"; expect_out "--false-positive-rate P"
run "$SLUICE" dedup -h
expect_rc 0; expect_out "sluice dedup paragraphs"

case_ "Dolma's deduper test data: its expected spans cut out, exact and Bloom index"
$ORACLE dolma "$D/dolma-dedupe-documents.json.gz" "$D/dolma-expected-dedupe-paragraphs.json.gz" \
    > "$T/dolma-want"
for ix in "--index exact" "--index bloom --expected-count 1000 --false-positive-rate 0.001"; do
    run "$SLUICE" dedup paragraphs $ix --out "$T/dolma" --force "$D/dolma-dedupe-documents.json.gz"
    expect_rc 0
    texts "$T/dolma" > "$T/dolma-got"
    cmp -s "$T/dolma-want" "$T/dolma-got" && ok || fail "$ix: output differs from Dolma's"
    expect_eq "$(count "$T/dolma" units_removed)" \
        "$(zcat "$D/dolma-expected-dedupe-paragraphs.json.gz" | $PY -c "
import json, sys
print(sum(len(json.loads(l)['attributes']['bff_duplicate_paragraph_spans']) for l in sys.stdin))")"
done
# m = -1000 ln 0.001 / (ln 2)^2 = 14377.6 bits, rounded up to 225 words of 64 = 14400;
# k = round(14400 / 1000 * ln 2) = round(9.98) = 10
expect_err "Bloom filter of 0.00 MiB (14400 bits in 1 parts over 1 ranks, 10 hashes) for 1000 units"

# a generated corpus of 3 files: lines from a small pool, in varied case and spacing, some
# documents wholly repeated (left empty), blank lines
$PY - "$T/gen" <<'PY'
import json, os, random, sys
random.seed(11)
os.makedirs(sys.argv[1])
pool = ["Home", "About us", "The river runs past the mill.", "Contact: info@example.org",
        "Ünïcode läuft — ok", "Share this page", "", "  ", "Read more"]
pool += ["unique line %d of the corpus" % i for i in range(400)]
def var(s):
    r = random.random()
    return s.upper() if r < 0.1 else ("  " + s + "\t") if r < 0.2 else s
n = 0
for f in range(3):
    with open("%s/in-%d.jsonl" % (sys.argv[1], f), "w") as o:
        for d in range(150):
            k = random.randint(1, 12)
            text = "\n".join(var(random.choice(pool)) for _ in range(k))
            if random.random() < 0.1:
                text += "\n"
            if d % 50 == 7:
                text = ""
            if d % 50 == 8:
                text = "   "
            o.write(json.dumps({"id": "g%d" % n, "text": text}, ensure_ascii=False) + "\n")
            n += 1
PY
GEN=("$T/gen/in-0.jsonl" "$T/gen/in-1.jsonl" "$T/gen/in-2.jsonl")
for args in "--unit paragraph" "--unit paragraph --skip-empty" "--unit line" \
            "--unit line --skip-empty"; do
    case_ "brute-force reference: $args"
    run "$SLUICE" dedup paragraphs $args --out "$T/b" --force "${GEN[@]}"
    expect_rc 0
    $ORACLE brute $args "${GEN[@]}" > "$T/b-want"
    texts "$T/b" > "$T/b-got"
    cmp -s "$T/b-want" "$T/b-got" && ok || fail "differs from the reference: $(diff "$T/b-want" "$T/b-got" | head -5)"
    expect_eq "$(count "$T/b" documents_out)" "$(wc -l < "$T/b-want")"
    expect_eq "$(count "$T/b" documents_in)" \
        "$(( $(count "$T/b" documents_out) + $(count "$T/b" left_empty) ))"
done
[ "$(count "$T/b" left_empty)" -gt 0 ] && ok || fail "no document was left empty"

case_ "span3: three-sentence spans against the brute-force reference (NLTK's Punkt)"
# the same Punkt model for both: sluice's English model, given to NLTK through NLTK_DATA
mkdir -p "$T/nltk/tokenizers/punkt_tab"
cp -r "$ROOT/configs/punkt/english" "$T/nltk/tokenizers/punkt_tab/english"
$PY - "$T/s3.jsonl" <<'PY'
import json, random, sys
random.seed(5)
pool = ["Mr. Smith went to Washington.", "It rained in 1999.", "It rained in 2001!",
        "Was it warm?", "The U.S. team won.", "Dr. Brown said no.", "They left at 5 p.m. sharp.",
        "Nobody came.", "THE RIVER ROSE.", "The river rose."]
pool += ["Unique sentence %d stays." % i for i in range(60)]
with open(sys.argv[1], "w") as o:
    for d in range(300):
        sents = [random.choice(pool[:10] if random.random() < 0.7 else pool) for _ in range(random.randint(1, 9))]
        text = "".join(s + random.choice([" ", "  ", "\n", " \n"]) for s in sents).rstrip(" ")
        o.write(json.dumps({"id": "s%d" % d, "text": text}) + "\n")
PY
run "$SLUICE" dedup paragraphs --unit span3 --out "$T/s3" "$T/s3.jsonl"
expect_rc 0
NLTK_DATA="$T/nltk" $ORACLE brute --unit span3 "$T/s3.jsonl" > "$T/s3-want"
texts "$T/s3" > "$T/s3-got"
cmp -s "$T/s3-want" "$T/s3-got" && ok || fail "span3 differs from the reference: $(diff "$T/s3-want" "$T/s3-got" | head -5)"
[ "$(count "$T/s3" units_removed)" -gt 100 ] && ok || fail "few sentences removed"
[ "$(count "$T/s3" left_empty)" -gt 0 ] && ok || fail "no document was left empty"

case_ "Bloom filter: measured false-positive rate within the requested one"
# 200 documents of 1000 distinct lines: every removal is a false positive
$PY -c "
import json
for d in range(200):
    print(json.dumps({'id': 'd%d' % d, 'text': '\n'.join('unit %d of doc %d' % (i, d) for i in range(1000))}))" \
    > "$T/uniq.jsonl"
for p in 0.01 0.001; do
    run "$SLUICE" dedup paragraphs --index bloom --false-positive-rate $p --out "$T/fp$p" "$T/uniq.jsonl"
    expect_rc 0; expect_err "for 200000 units at a false-positive rate of $p"
    fp=$(count "$T/fp$p" units_removed)
    echo "ok bloom p=$p: $fp of 200000 removed"
    $PY -c "import sys; sys.exit(0 if 0 < $fp / 200000 <= $p else 1)" && ok ||
        fail "measured rate $fp/200000 outside (0, $p]"
done
# sized for a tenth of the paragraphs, the filter misses its rate: the sizing is what holds it
run "$SLUICE" dedup paragraphs --index bloom --false-positive-rate 0.01 --expected-count 20000 \
    --out "$T/fpsmall" "$T/uniq.jsonl"
expect_rc 0
fp=$(count "$T/fpsmall" units_removed)
$PY -c "import sys; sys.exit(0 if $fp / 200000 > 0.01 else 1)" && ok ||
    fail "an undersized filter kept its rate: $fp"

if have_mpi; then
    for ix in exact bloom; do
        run "${MPIRUN[@]}" -np 1 "$SLUICE" dedup paragraphs --index $ix --out "$T/np1-$ix" "${GEN[@]}"
        expect_rc 0
        for np in 2 3; do
            case_ "mpirun -np $np --index $ix: the outputs of -np 1"
            run "${MPIRUN[@]}" -np $np "$SLUICE" dedup paragraphs --index $ix --out "$T/np$np-$ix" "${GEN[@]}"
            expect_rc 0
            same_shards "$T/np1-$ix" "$T/np$np-$ix"
            expect_eq "$(json "$T/np$np-$ix/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
                "$(json "$T/np1-$ix/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
        done
    done
    case_ "mpirun -np 2 --unit span3: the outputs of one process"
    run "${MPIRUN[@]}" -np 2 "$SLUICE" dedup paragraphs --unit span3 --out "$T/np2-s3" "$T/s3.jsonl" "${GEN[@]}"
    expect_rc 0
    run "$SLUICE" dedup paragraphs --unit span3 --out "$T/np0-s3" "$T/s3.jsonl" "${GEN[@]}"
    expect_rc 0
    same_shards "$T/np0-s3" "$T/np2-s3"
else
    echo "SKIP: mpirun not found (ranks)"
fi

case_ "resume: a run stopped after shards 0 and 2 ends with the outputs of one never stopped"
run "$SLUICE" dedup paragraphs --out "$T/ref" "${GEN[@]}"
expect_rc 0
cp -r "$T/ref" "$T/stop"
# what a SIGKILL while writing shard 1 leaves: no manifest, no shard 1 nor its record, a
# temporary of the killed process
rm "$T/stop/manifest.json" "$T/stop/part-00001.jsonl.zst" "$T/stop/.sluice/part-00001.jsonl.zst.json"
head -c 100 "$T/ref/part-00001.jsonl.zst" > "$T/stop/.part-00001.jsonl.zst.999999-host.tmp"
touch -d '2000-01-01' "$T/stop/part-00000.jsonl.zst"
run "$SLUICE" dedup paragraphs --out "$T/stop" "${GEN[@]}"
expect_rc 0; expect_err "(resumed)"
same_shards "$T/ref" "$T/stop"
expect_no_partials "$T/stop"
expect_eq "$(json "$T/stop/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
    "$(json "$T/ref/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
[ "$(stat -c %Y "$T/stop/part-00000.jsonl.zst")" -lt 1000000000 ] && ok ||
    fail "a finished shard was written again"

case_ "sluice run: dedup_paragraphs as a stage after dedup_exact"
cat > "$T/p.yaml" <<YAML
name: paras
work_dir: $T/w
extract:
  format: jsonl
  in: $T/gen
dedup_exact: {}
dedup_paragraphs:
  unit: line
  index: bloom
YAML
run "$SLUICE" run "$T/p.yaml" --dry-run
expect_rc 0
expect_eq "$(sed -n 3p "$T/out")" \
    "sluice dedup paragraphs --out $T/w/dedup_paragraphs --unit line --index bloom $T/w/dedup_exact"
run "$SLUICE" run "$T/p.yaml"
expect_rc 0
run "$SLUICE" dedup paragraphs --unit line --index bloom --out "$T/direct" "$T/w/dedup_exact"
expect_rc 0
same_shards "$T/direct" "$T/w/dedup_paragraphs"

case_ "bad options"
run "$SLUICE" dedup paragraphs --index bloom --false-positive-rate 1.5 --out "$T/bad" "$T/uniq.jsonl"
expect_rc 2; expect_err "--false-positive-rate 1.5 is out of range"; expect_no_file "$T/bad"
run "$SLUICE" dedup paragraphs --unit sentence --out "$T/bad" "$T/uniq.jsonl"
expect_rc 2; expect_no_file "$T/bad"

finish
