#!/usr/bin/env bash
# The settings in a stage's plan come from the rows of its option table marked as changing
# the output (core/options.h SL_OPTF_OUTPUT): a second run with another value of any such
# option must not resume the first run's outputs. For each stage, each option that changes
# what the stage writes is tried against a run without it: the second run is refused (the
# directory holds a different run) or starts afresh; the same options again resume.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/in"
python3 - "$T/in" <<'PY'
import json, sys
for f in range(2):
    with open("%s/f%d.jsonl" % (sys.argv[1], f), "w") as o:
        for d in range(30):
            t = ("Caf\u00c3\u00a9 &amp; \u201cquotes\u201d at http://example.com/%d, "
                 "the \ufb01le number %d of %d.  \n" % (d, d, f)) * (1 + d % 4)
            o.write(json.dumps({"id": "f%d-%d" % (f, d), "uid": "u%d-%d" % (f, d), "text": t,
                                "body": "other text %d" % (d % 7), "url": "u%d" % (d % 9)}) + "\n")
PY

# same_then_others STAGE-ARGS... -- VARIANT...: a first run, the same command again (must
# resume: rc 0), then each variant (a string of extra options) in the first run's --out
# (must not resume: refused as a different run)
n=0
same_then_others() {
    local args=() v
    while [ "$1" != "--" ]; do args+=("$1"); shift; done
    shift
    n=$((n + 1))
    local out="$T/o$n"
    run "$SLUICE" "${args[@]}" --out "$out" "$T/in"
    expect_rc 0
    case_ "${args[*]}: the same options again resume"
    run "$SLUICE" "${args[@]}" -q --out "$out" "$T/in"
    expect_rc 0
    expect_no_err "different run"
    for v in "$@"; do
        case_ "${args[*]}: $v is in the settings"
        # shellcheck disable=SC2086
        run "$SLUICE" "${args[@]}" $v --out "$out" "$T/in"
        expect_rc 1
        expect_err "holds the outputs of a different run"
    done
}

case_ "clean"
same_then_others clean -- --nfkc --remove-urls --uncurl-quotes --no-mojibake --no-entities \
    "--text-key body" "--level 9" "--out-format parquet" "--row-group-size 5"

case_ "extract jsonl"
same_then_others extract --format jsonl -- "--text-key body" "--source web" "--max-record 2K" \
    --skip-corrupt "--level 9" "--id-prefix p" --reassign-ids --keep-truncated \
    "--out-format parquet" "--row-group-size 5"

# html: --shard-size groups pages into shards (for the other formats it is not a setting)
case_ "extract html"
mkdir -p "$T/html"
for i in 1 2 3 4; do
    printf '<html><body><p>Page %d has a paragraph of plain words for the extractor.</p></body></html>\n' \
        "$i" > "$T/html/p$i.html"
done
run "$SLUICE" extract --format html --out "$T/oh" "$T/html"
expect_rc 0
run "$SLUICE" extract --format html --shard-size 1K -q --out "$T/oh" "$T/html"
expect_rc 1
expect_err "holds the outputs of a different run"

case_ "filter"
cat > "$T/f.yaml" <<'Y'
filters:
  - gopher_quality: {min_doc_words: 5}
Y
cat > "$T/g.yaml" <<'Y'
filters:
  - gopher_quality: {min_doc_words: 6}
Y
same_then_others filter --config "$T/f.yaml" -- "--config $T/g.yaml" \
    "--set filters.gopher_quality.min_doc_words=7" --annotate --split-by-language \
    "--rejected $T/rej" --repair-utf8 "--text-key body" "--max-line 100" "--level 9" \
    "--out-format parquet" "--row-group-size 5"

case_ "tag"
cat > "$T/t.yaml" <<'Y'
filters:
  - word_count: {min_words: 5}
Y
same_then_others tag --config "$T/t.yaml" -- "--config $T/g.yaml" \
    "--set filters.word_count.min_words=7" "--experiment e2" --repair-utf8 "--text-key body" \
    "--max-line 100" "--level 9"

case_ "mix"
run "$SLUICE" tag --config "$T/t.yaml" --out "$T/mix-attrs" "$T/in"
expect_rc 0
run "$SLUICE" tag --config "$T/t.yaml" --experiment e2 --out "$T/mix-attrs2" "$T/in"
expect_rc 0
same_then_others mix --attributes "$T/mix-attrs" -- "--attributes $T/mix-attrs2" \
    "--keep-if sluice__word_count__score>=9" "--drop-if sluice__word_count__score>=90" \
    "--remove-spans sluice__word_count__score>1000" --repair-utf8 "--text-key body" \
    "--max-line 100" "--level 9" "--tokens 900" "--tokens 900 --weights (none)=2" \
    "--tokens 900 --source-key body" "--tokens 900 --max-epochs 2" \
    "--tokens 900 --tokenizer tiktoken:$FIX/tokenizer/r50k_base.tiktoken.zst" \
    "--tokens 900 --bytes-per-token 3" "--tokens 900 --seed 3" "--tokens 900 --shards 3"

case_ "dedup exact"
same_then_others dedup exact -- "--key url" "--norm lower" "--keep longest" "--text-key body" \
    "--id-key uid" "--max-line 100" "--level 9" --repair-utf8 "--out-format parquet" \
    "--row-group-size 5"

case_ "dedup fuzzy"
run "$SLUICE" dedup fuzzy -q --index-out "$T/fidx" --out "$T/fidx_out" "$T/in"
expect_rc 0
same_then_others dedup fuzzy -- "--index-in $T/fidx" "--preset nemo" "--ngram words:3" "--bands 10" "--rows 4" \
    "--norm none" "--seed 2" "--hash mersenne" --verify "--threshold 0.5" "--anchors 3" \
    "--text-key body" "--id-key uid" --pairs "--max-line 100" "--level 9" --repair-utf8 \
    "--out-format parquet" "--row-group-size 5" --cluster-size --rehydrate \
    "--rehydrate-weights 1:1,2:3"

case_ "dedup paragraphs"
mkdir -p "$T/punkt"
same_then_others dedup paragraphs -- "--unit line" "--lang german" "--punkt $T/punkt" --skip-empty \
    "--index bloom" "--false-positive-rate 0.01" "--expected-count 1000" "--text-key body" \
    "--id-key uid" "--max-line 100" "--level 9" --repair-utf8

case_ "reshard"
same_then_others reshard -- "--shards 3" "--shard-size 1K" "--text-key body" "--max-line 100" \
    "--level 9" --repair-utf8 --skip-corrupt "--id-prefix p" --reassign-ids \
    "--out-format parquet" "--row-group-size 5"

case_ "decontaminate"
mkdir -p "$T/tasks"
echo '{"q": "the file number 3 of 0 and more words to make thirteen of them here now"}' \
    > "$T/tasks/t.jsonl"
printf 'tasks:\n  - name: t\n    files: [%s/tasks/t.jsonl]\n    fields: [q]\n' "$T" > "$T/tasks.yaml"
printf 'tasks:\n  - name: u\n    files: [%s/tasks/t.jsonl]\n    fields: [q]\n' "$T" > "$T/tasks2.yaml"
same_then_others decontaminate --tasks "$T/tasks.yaml" -- "--tasks $T/tasks2.yaml" "--ngram 9" \
    "--min-task-words 3" "--margin 10" "--min-length 5" "--max-splits 2" "--text-key body" \
    "--level 9" "--out-format parquet" "--row-group-size 5"

# tokenize: its parts folder is the stage directory; a run that stops at the end (the
# output's name is taken by a directory) keeps it, so the next run can resume it
case_ "tokenize"
TF="$FIX/tokenizer"
mkdir -p "$T/gpt2"
zstd -q -d "$TF/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$TF/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
tok=(tokenize --tokenizer "gpt2:$T/gpt2" --workers 1)
stopped_run() { # OUT: a complete parts folder, no output
    mkdir -p "$1_text_document.bin/x"
    run "$SLUICE" "${tok[@]}" --out "$1" "$T/in"
    expect_rc 1; expect_err "cannot rename"
    rm -rf "$1_text_document.bin"
}
stopped_run "$T/tk0/t"
run "$SLUICE" "${tok[@]}" --out "$T/tk0/t" "$T/in"
expect_rc 0; expect_err "(resumed)"
k=0
for v in "--json-key body" --append-eod "--eod-id 0" "--max-doc-size 300"; do
    k=$((k + 1))
    case_ "tokenize: $v is in the settings"
    stopped_run "$T/tk$k/t"
    # shellcheck disable=SC2086
    run "$SLUICE" "${tok[@]}" $v --out "$T/tk$k/t" "$T/in"
    expect_rc 0; expect_no_err "(resumed)"
    # shellcheck disable=SC2086
    run "$SLUICE" "${tok[@]}" $v --out "$T/ref$k/t" "$T/in"
    for f in "$T"/ref$k/t_*_document.bin; do
        cmp -s "$f" "$T/tk$k/t_${f##*/t_}" && ok || fail "$v: output differs from a fresh run"
    done
done

# --split-sentences and the options of its Punkt model: a stopped run with the default
# model, then each variant in its directory must start afresh and equal a fresh run
case_ "tokenize --split-sentences"
tks=(tokenize --tokenizer "gpt2:$T/gpt2" --workers 1 --split-sentences)
cp -r "$ROOT/configs/punkt/english" "$T/pk"
mkdir -p "$T/nltk/tokenizers/punkt_tab"
cp -r "$ROOT/configs/punkt/english" "$T/nltk/tokenizers/punkt_tab/german"
k=0
for v in "--keep-newlines" "--punkt $T/pk" "--lang german"; do
    k=$((k + 1))
    case_ "tokenize --split-sentences: $v is in the settings"
    mkdir -p "$T/ts$k/t_text_sentence.bin/x"
    run "$SLUICE" "${tks[@]}" --out "$T/ts$k/t" "$T/in"
    expect_rc 1; expect_err "cannot rename"
    rm -rf "$T/ts$k/t_text_sentence.bin"
    # shellcheck disable=SC2086
    NLTK_DATA="$T/nltk" run "$SLUICE" "${tks[@]}" $v --out "$T/ts$k/t" "$T/in"
    expect_rc 0; expect_no_err "(resumed)"
    # shellcheck disable=SC2086
    NLTK_DATA="$T/nltk" run "$SLUICE" "${tks[@]}" $v --out "$T/tsr$k/t" "$T/in"
    cmp -s "$T/tsr$k/t_text_sentence.bin" "$T/ts$k/t_text_sentence.bin" && ok ||
        fail "$v: output differs from a fresh run"
done

finish
