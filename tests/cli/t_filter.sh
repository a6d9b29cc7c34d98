#!/usr/bin/env bash
# sluice filter / clean / classifier: outputs, manifest counts, rejected and annotated
# documents, config errors with file:line, bad documents, MPI -np 1 vs 2.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ROOTDIR=$(cd "$(dirname "$0")/../.." && pwd)
CFG=$ROOTDIR/configs/filters
IN=$FIX/jsonl/cc_en_head-0091.jsonl.gz

case_ "-h and --list"
run "$SLUICE" filter -h; expect_rc 0; expect_out "--rejected DIR"
run "$SLUICE" filter --list; expect_rc 0; expect_out "gopher_quality"; expect_out "fineweb_quality"
run "$SLUICE" clean -h; expect_rc 0; expect_out "--remove-urls"
run "$SLUICE" classifier -h; expect_rc 0; expect_out "--pos IN"
run "$SLUICE" filter --out "$T/x" "$IN"; expect_rc 2; expect_err "--config"

case_ "every shipped config runs; manifest counts removals per filter"
for c in nemo-en gopher c4 c4-badwords fineweb fineweb-heuristics non-en; do
    run "$SLUICE" filter --config "$CFG/$c.yaml" --out "$T/o-$c" --rejected "$T/r-$c" "$IN"
    expect_rc 0
    din=$(json "$T/o-$c/manifest.json" "m['counts']['documents_in']")
    dout=$(json "$T/o-$c/manifest.json" "m['counts']['documents_out']")
    rem=$(json "$T/o-$c/manifest.json" "sum(v for k, v in m['counts'].items() if k.startswith('removed_') and not k.startswith('removed_bytes_'))")
    expect_eq "$din" 10; expect_eq $((dout + rem)) 10 "($c)"
    nrej=$(zstdcat "$T/r-$c"/part-00000.jsonl.zst | wc -l)
    expect_eq "$nrej" "$rem" "(rejected file of $c)"
done
zstdcat "$T/r-gopher/part-00000.jsonl.zst" | head -1 | python3 -c "
import json,sys; d=json.loads(sys.stdin.readline()); assert d['filter'] in ('gopher_quality','gopher_repetition') and d['filter_reason'] and 'filter_score' in d" && ok || fail "rejected doc lacks filter fields"

case_ "--annotate keeps every document with its scores"
run "$SLUICE" filter --config "$CFG/gopher.yaml" --annotate --out "$T/ann" "$IN"
expect_rc 0
expect_eq "$(zstdcat "$T/ann/part-00000.jsonl.zst" | wc -l)" 10
zstdcat "$T/ann/part-00000.jsonl.zst" | python3 -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); s=d['filter_scores']; assert set(s)=={'gopher_repetition','gopher_quality'}, s" && ok || fail "scores missing"

case_ "config errors name file and line"
printf 'filters:\n  - gopher_quality\n  - c4_qualty\n' > "$T/bad1.yaml"
run "$SLUICE" filter --config "$T/bad1.yaml" --out "$T/b1" "$IN"
expect_rc 1; expect_err "bad1.yaml:3: unknown filter 'c4_qualty'"; expect_err "did you mean 'c4_quality'"
printf 'filters:\n  - gopher_quality:\n      min_doc_words: many\n' > "$T/bad2.yaml"
run "$SLUICE" filter --config "$T/bad2.yaml" --out "$T/b2" "$IN"
expect_rc 1; expect_err "bad2.yaml:3"; expect_err "many"
printf 'filters:\n  - fineweb_quality:\n      short_line_thresh: 0.5\n' > "$T/bad3.yaml"
run "$SLUICE" filter --config "$T/bad3.yaml" --out "$T/b3" "$IN"
expect_rc 1; expect_err "bad3.yaml:3"; expect_err "short_line_thresh"

case_ "bad documents: empty, whitespace, emoji, invalid UTF-8, 100 MB"
mkdir -p "$T/badin"
python3 - "$T/badin/docs.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for t in ["", "   \n\n\t ", "\U0001F600" * 500, "word " * 60, "\n" * 1000, "{" * 3000]:
        f.write(json.dumps({"text": t}) + "\n")
    f.write('{"text":"bad \xff\xfe bytes and more words here"}\n'.encode("latin-1").decode("latin-1"))
PY
printf '{"text":"invalid \xff\xfe utf8 in text"}\n' >> "$T/badin/docs.jsonl"
for c in nemo-en gopher c4 fineweb-heuristics non-en; do
    run "$SLUICE" filter --config "$CFG/$c.yaml" --out "$T/bo-$c" --repair-utf8 "$T/badin"
    expect_rc 0
done
python3 -c "
import sys
sys.stdout.write('{\"text\":\"' + ('lorem ipsum dolor sit amet. ' * 3800000) + '\"}\n')" > "$T/badin/huge.jsonl"
run "$SLUICE" filter --config "$CFG/gopher.yaml" --out "$T/bo-huge" --max-line 128M "$T/badin/huge.jsonl"
expect_rc 0
expect_eq "$(json "$T/bo-huge/manifest.json" "m['counts']['documents_in']")" 1

case_ "language ID: CLD2 by default, fastText with a model; --split-by-language"
printf 'filters:\n  - language\n' > "$T/lang.yaml"
run "$SLUICE" filter --config "$T/lang.yaml" --out "$T/lang" --split-by-language "$IN"
expect_rc 0; expect_file "$T/lang/lang=en/part-00000.jsonl.zst"
zstdcat "$T/lang/lang=en/part-00000.jsonl.zst" > "$T/l1.txt"; grep -q "\"lang_score\"" "$T/l1.txt" && ok || fail "no lang_score"
# the manifest lists the language files (and no empty part file): the next stage reads them
expect_no_file "$T/lang/part-00000.jsonl.zst"
expect_eq "$(json "$T/lang/manifest.json" "[o['path'] for o in m['outputs']][0]")" "lang=en/part-00000.jsonl.zst"
expect_eq "$(json "$T/lang/manifest.json" "sum(o['documents'] for o in m['outputs']) == m['counts']['documents_out'] > 0")" True
run "$SLUICE" reshard --out "$T/lang-next" "$T/lang"
expect_rc 0
expect_eq "$(json "$T/lang-next/manifest.json" "m['counts']['documents_out']")" "$(json "$T/lang/manifest.json" "m['counts']['documents_out']")"
run "$SLUICE" filter --config "$T/lang.yaml" --out "$T/lang" --split-by-language "$IN"
expect_rc 0; expect_err "(resumed)"
expect_eq "$(json "$T/lang/manifest.json" "[o['path'] for o in m['outputs']][0]")" "lang=en/part-00000.jsonl.zst"
printf 'filters:\n  - language:\n      model: %s\n      languages: [en]\n' "$FIX/filter/lid.176.ftz" > "$T/ft.yaml"
run "$SLUICE" filter --config "$T/ft.yaml" --out "$T/ft" "$IN"
expect_rc 0
zstdcat "$T/ft/part-00000.jsonl.zst" > "$T/l2.txt"; grep -q "\"lang\":\"en\"" "$T/l2.txt" && ok || fail "fastText lang missing"

case_ "classifier train + Pareto sampling is deterministic for a seed"
run "$SLUICE" classifier train --pos "$IN" --neg "$FIX/jsonl/blns.jsonl.zst" --out "$T/q.bin" --epoch 2 --dim 10
expect_rc 0; expect_file "$T/q.bin"
printf 'filters:\n  - classifier:\n      model: %s\n      mode: pareto\n      alpha: 3\n      seed: 7\n' "$T/q.bin" > "$T/cls.yaml"
run "$SLUICE" filter --config "$T/cls.yaml" --out "$T/c1" "$IN" "$FIX/jsonl/blns.jsonl.zst"; expect_rc 0
run "$SLUICE" filter --config "$T/cls.yaml" --out "$T/c2" "$IN" "$FIX/jsonl/blns.jsonl.zst"; expect_rc 0
cmp -s <(zstdcat "$T"/c1/part-*.jsonl.zst) <(zstdcat "$T"/c2/part-*.jsonl.zst) && ok || fail "not deterministic"

case_ "clean: repairs counted, other members untouched"
printf '{"id":"a","text":"caf\xc3\x83\xc2\xa9 &amp; more  \\r\\n\\n\\n\\n\\nend","meta":{"k":[1,2]}}\n' > "$T/c.jsonl"
run "$SLUICE" clean --out "$T/cl" "$T/c.jsonl"
expect_rc 0
expect_eq "$(json "$T/cl/manifest.json" "m['counts']['fixed_mojibake']")" 1
expect_eq "$(json "$T/cl/manifest.json" "m['counts']['fixed_html_entities']")" 1
expect_eq "$(zstdcat "$T/cl/part-00000.jsonl.zst")" '{"id":"a","text":"café & more\n\nend","meta":{"k":[1,2]}}'

if have_mpi; then
    case_ "mpirun -np 1 and 2 keep and reject the same documents"
    mkdir -p "$T/mpi"; cp "$IN" "$FIX/jsonl/blns.jsonl.zst" "$T/mpi/"; cp "$T/badin/docs.jsonl" "$T/mpi/"
    for np in 1 2; do
        run "${MPIRUN[@]}" -np $np "$SLUICE" filter --config "$CFG/nemo-en.yaml" --repair-utf8 --out "$T/m$np" --rejected "$T/mr$np" "$T/mpi"
        expect_rc 0
        run "${MPIRUN[@]}" -np $np "$SLUICE" clean --out "$T/mc$np" "$T/mpi"
        expect_rc 0
    done
    for f in "$T"/m1/part-*.zst "$T"/mr1/part-*.zst "$T"/mc1/part-*.zst; do
        d=$(basename "$(dirname "$f")"); d=${d%1}2
        cmp -s "$f" "$T/$d/$(basename "$f")" && ok || fail "$f differs between -np 1 and 2"
    done
    expect_eq "$(json "$T/m2/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
              "$(json "$T/m1/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
fi

case_ "--set filters.N.KIND.P: N must hold a filter of that kind; filters.KIND.P by name; entries with parameters too"
run "$SLUICE" filter --config "$CFG/fineweb.yaml" --set filters.2.gopher_quality.min_doc_words=100000 --out "$T/s1" "$IN"
expect_rc 1; expect_err "filters.2 is 'gopher_repetition', not 'gopher_quality'"; expect_err "is filters.3"
expect_no_file "$T/s1/manifest.json"
n=0
for set in filters.3.gopher_quality.min_doc_words=100000 filters.gopher_quality.min_doc_words=100000; do
    n=$((n + 1))
    run "$SLUICE" filter --config "$CFG/fineweb.yaml" --set "$set" --out "$T/s2-$n" "$IN"
    expect_rc 0
    expect_eq "$(json "$T/s2-$n/manifest.json" "m['settings']['config']['filters'][2:4]")" \
        "['gopher_repetition', {'gopher_quality': {'min_doc_words': 100000}}]" "($set)"
done
# gopher.yaml: both entries have parameters
run "$SLUICE" filter --config "$CFG/gopher.yaml" --set filters.1.gopher_quality.min_doc_words=7 \
    --set filters.gopher_repetition.dup_line_frac=0.5 --out "$T/s3" "$IN"
expect_rc 0
expect_eq "$(json "$T/s3/manifest.json" "(m['settings']['config']['filters'][1]['gopher_quality']['min_doc_words'], m['settings']['config']['filters'][1]['gopher_quality']['max_doc_words'], m['settings']['config']['filters'][0]['gopher_repetition']['dup_line_frac'])")" "(7, 100000, 0.5)"
run "$SLUICE" filter --config "$CFG/gopher.yaml" --set filters.0.gopher_quality.min_doc_words=7 --out "$T/s4" "$IN"
expect_rc 1; expect_err "filters.0 is 'gopher_repetition', not 'gopher_quality'"
run "$SLUICE" filter --config "$CFG/gopher.yaml" --set filters.nosuch.x=1 --out "$T/s4" "$IN"
expect_rc 1; expect_err "the config has no filter 'nosuch'"; expect_err "its filters are gopher_repetition, gopher_quality"
printf 'filters:\n  - gopher_quality\n  - gopher_repetition\n  - gopher_quality: {min_doc_words: 10}\n' > "$T/twice.yaml"
run "$SLUICE" filter --config "$T/twice.yaml" --set filters.gopher_quality.min_doc_words=7 --out "$T/s5" "$IN"
expect_rc 1; expect_err "'gopher_quality' is ambiguous: the config has it at filters.0, filters.2"
run "$SLUICE" filter --config "$T/twice.yaml" --set filters.0.gopher_quality.min_doc_words=7 --out "$T/s5" "$IN"
expect_rc 0
expect_eq "$(json "$T/s5/manifest.json" "m['settings']['config']['filters'][0]")" "{'gopher_quality': {'min_doc_words': 7}}"
# the form fineweb.yaml's comment gives works
grep -q -- "--set filters.language.model=PATH" "$CFG/fineweb.yaml" && ok || fail "fineweb.yaml's comment"
run "$SLUICE" filter --config "$CFG/fineweb.yaml" --set filters.language.threshold=0.5 --out "$T/s6" "$IN"
expect_rc 0

case_ "regex: a match PCRE2 gives up on (match limit) is counted; on_error decides drop or keep"
python3 -c "
import json
print(json.dumps({'text': 'a' * 40 + 'c'}))
print(json.dumps({'text': 'fine text'}))
print(json.dumps({'text': 'line one\n' + 'a' * 40 + 'c' + '\nline three'}))" > "$T/rx.jsonl"
printf 'filters:\n  - regex:\n      patterns: ["^(a|aa)+$"]\n      match_limit: 1000\n' > "$T/rx1.yaml"
run "$SLUICE" filter --config "$T/rx1.yaml" --out "$T/rx1" --rejected "$T/rx1-rej" "$T/rx.jsonl"
expect_rc 0
expect_eq "$(json "$T/rx1/manifest.json" "m['counts']['regex_match_limit_errors']")" 2
expect_err "rx.jsonl:1: filter 'regex' could not decide (counted as 'regex_match_limit_errors')"
expect_eq "$(json "$T/rx1/manifest.json" "m['counts']['documents_out']")" 1
expect_eq "$(zstdcat "$T"/rx1-rej/part-*.jsonl.zst | python3 -c "import json,sys; print({json.loads(l)['filter_reason'] for l in sys.stdin})")" "{'regex_error'}"
printf 'filters:\n  - regex:\n      patterns: ["^(a|aa)+$"]\n      match_limit: 1000\n      on_error: keep\n' > "$T/rx2.yaml"
run "$SLUICE" filter --config "$T/rx2.yaml" --out "$T/rx2" "$T/rx.jsonl"
expect_rc 0
expect_eq "$(json "$T/rx2/manifest.json" "m['counts']['regex_match_limit_errors']")" 2
expect_eq "$(json "$T/rx2/manifest.json" "m['counts']['documents_out']")" 3
printf 'filters:\n  - regex:\n      patterns: ["^(a|aa)+$"]\n      action: drop_lines\n      match_limit: 1000\n' > "$T/rx3.yaml"
run "$SLUICE" filter --config "$T/rx3.yaml" --out "$T/rx3" "$T/rx.jsonl"
expect_rc 0
expect_eq "$(zstdcat "$T/rx3/part-00000.jsonl.zst" | sed -n 3p)" '{"id":"rx:3","text":"line one\nline three"}'
printf 'filters:\n  - regex:\n      patterns: ["x"]\n      on_error: maybe\n' > "$T/rx4.yaml"
run "$SLUICE" filter --config "$T/rx4.yaml" --out "$T/rx4" "$T/rx.jsonl"
expect_rc 1; expect_err "on_error: expected drop or keep, got 'maybe'"

case_ "clean and filter: a skipped line counts in documents_in (in = out + removed + skipped)"
printf '{"text":"good one"}\nnot json\n{"no":"text"}\n{"text":"good two"}\n' > "$T/sk.jsonl"
run "$SLUICE" clean --out "$T/sk-c" "$T/sk.jsonl"
expect_rc 0
expect_eq "$(json "$T/sk-c/manifest.json" "(m['counts']['documents_in'], m['counts']['documents_out'])")" "(4, 2)"
printf 'filters:\n  - regex:\n      patterns: ["two"]\n' > "$T/sk.yaml"
run "$SLUICE" filter --config "$T/sk.yaml" --out "$T/sk-f" "$T/sk.jsonl"
expect_rc 0
expect_eq "$(json "$T/sk-f/manifest.json" "(m['counts']['documents_in'], m['counts']['documents_out'], m['counts']['removed_regex'])")" "(4, 1, 1)"

finish
