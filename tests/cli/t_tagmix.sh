#!/usr/bin/env bash
# sluice tag and sluice mix: attribute shards in Dolma's layout; tag once, then mix at two
# thresholds gives the documents of sluice filter run at each (byte for byte); spans cut
# as a Python reference cuts them; bad attributes named by file and line; mpirun -np 1/2
# identical; a stopped run resumed; both stages in sluice run.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# the inputs: three files of documents of many lengths (UDHR in 107 languages, web pages)
mkdir -p "$T/in"
zstd -q -d -c "$FIX/dedup/udhr.jsonl.zst" > "$T/udhr.jsonl"
head -50 "$T/udhr.jsonl" > "$T/in/a.jsonl"
tail -n +51 "$T/udhr.jsonl" | gzip > "$T/in/b.jsonl.gz"
gzip -d -c "$FIX/jsonl/cc_en_head-0091.jsonl.gz" > "$T/in/c.jsonl"
echo 'not json' >> "$T/in/c.jsonl"
cat > "$T/c.yaml" <<'Y'
filters:
  - word_count: {min_words: 50}
  - numbers
  - filter: mean_word_length
    name: mean-len
Y
plain() { for f in "$1"/part-*.jsonl.zst; do echo "== $(basename "$f")"; zstd -q -d -c "$f"; done; }
count() { json "$1/manifest.json" "m['counts'].get('$2', 0)"; }

case_ "help"
run "$SLUICE" tag -h; expect_rc 0; expect_out "--experiment NAME"
run "$SLUICE" mix -h; expect_rc 0; expect_out "--remove-spans RULE"

case_ "tag: one attributes line per document, Dolma's names and spans"
run "$SLUICE" tag --config "$T/c.yaml" --experiment ex --out "$T/attrs" "$T/in"
expect_rc 0
expect_eq "$(count "$T/attrs" documents_out)" 117
$PY - "$T/attrs" "$T/in" <<'PY' && ok || fail "attributes lines"
import gzip, json, subprocess, sys
attrs, ins = sys.argv[1:]
# documents without an id get "<file stem>:<line>"
docs = [dict(json.loads(l), id="a:%d" % (i + 1)) for i, l in enumerate(open(ins + "/a.jsonl"))]
docs += [dict(json.loads(l), id="b:%d" % (i + 1))
         for i, l in enumerate(gzip.open(ins + "/b.jsonl.gz", "rt"))]
docs += [json.loads(l) for l in open(ins + "/c.jsonl") if l.startswith("{")]
lines = []
for i in range(3):
    out = subprocess.run(["zstd", "-q", "-d", "-c", "%s/part-%05d.jsonl.zst" % (attrs, i)],
                         capture_output=True, check=True).stdout.decode()
    lines += [json.loads(l) for l in out.splitlines()]
assert len(lines) == len(docs)
names = {"ex__%s__%s" % (f, k) for f in ("word_count", "numbers", "mean_len") for k in ("score", "keep")}
for d, a in zip(docs, lines):
    assert a["id"] == d["id"], (a["id"], d["id"])
    assert set(a["attributes"]) == names, a["attributes"].keys()
    for v in a["attributes"].values():
        assert len(v) == 1 and v[0][:2] == [0, len(d["text"])], v
    assert a["attributes"]["ex__word_count__score"][0][2] == len(d["text"].split())
PY

case_ "tag once, mix at two thresholds: the documents of sluice filter at each"
K="--keep-if ex__numbers__keep==1 --keep-if ex__mean_len__keep==1"
for min in 50 1500; do
    run "$SLUICE" filter --config "$T/c.yaml" --set filters.word_count.min_words=$min \
        --out "$T/f$min" "$T/in"
    expect_rc 0
    # shellcheck disable=SC2086
    run "$SLUICE" mix --attributes "$T/attrs" --keep-if "ex__word_count__score >= $min" \
        --keep-if "ex__word_count__score<=100000" $K --out "$T/m$min" "$T/in"
    expect_rc 0
    expect_eq "$(plain "$T/m$min" | md5sum)" "$(plain "$T/f$min" | md5sum)" "(min_words $min)"
    expect_eq "$(count "$T/m$min" documents_out)" "$(count "$T/f$min" documents_out)"
    # every document kept or counted under its rule
    expect_eq "$(count "$T/m$min" removed_keep_if_ex__word_count__score)" \
        "$(count "$T/f$min" removed_word_count)"
done
k50=$(count "$T/m50" documents_out); k1500=$(count "$T/m1500" documents_out)
[ "$k1500" -lt "$k50" ] && [ "$k1500" -gt 0 ] && ok || fail "thresholds do not split: $k50 $k1500"
run "$SLUICE" mix --attributes "$T/attrs" --drop-if "ex__word_count__keep == 0" \
    --drop-if "ex__numbers__keep == 0" --drop-if "ex__mean_len__keep==0" --out "$T/mdef" "$T/in"
expect_rc 0
expect_eq "$(plain "$T/mdef" | md5sum)" "$(plain "$T/f50" | md5sum)" "(the keep attributes)"

case_ "a classifier (fastText language ID) tagged once, mixed at two thresholds: filter's documents"
printf 'filters:\n  - language:\n      model: %s\n      languages: [en, fr, de]\n      write: false\n' \
    "$FIX/filter/lid.176.ftz" > "$T/lid.yaml"
run "$SLUICE" tag --config "$T/lid.yaml" --experiment l --out "$T/lattrs" "$T/in"
expect_rc 0
for th in 0.65 0.95; do
    run "$SLUICE" filter --config "$T/lid.yaml" --set filters.language.threshold=$th --out "$T/lf$th" "$T/in"
    expect_rc 0
    run "$SLUICE" mix --attributes "$T/lattrs" --keep-if "l__language__keep == 1" \
        --keep-if "l__language__score >= $th" --out "$T/lm$th" "$T/in"
    expect_rc 0
    expect_eq "$(plain "$T/lm$th" | md5sum)" "$(plain "$T/lf$th" | md5sum)" "(threshold $th)"
done
[ "$(count "$T/lm0.95" documents_out)" -lt "$(count "$T/lm0.65" documents_out)" ] && ok ||
    fail "the thresholds keep the same documents"

case_ "--remove-spans cuts code points as Python slices do"
$PY - "$T" <<'PY'
import json, random, sys
t = sys.argv[1]
rng = random.Random(7)
docs, attrs, want = [], [], []
for i in range(40):
    text = "".join(rng.choice("ab \n\u00e9\u4e2d\U0001F600") for _ in range(rng.randint(0, 60)))
    spans = []
    for _ in range(rng.randint(0, 4)):
        s = rng.randint(0, len(text)); e = rng.randint(s, len(text))
        spans.append([s, e, rng.choice([0.2, 0.5, 0.9, None])])
    docs.append({"id": "d%d" % i, "text": text})
    attrs.append({"id": "d%d" % i, "attributes": {"x__y__z": spans}})
    cut = [False] * len(text)
    for s, e, sc in spans:
        if sc is not None and sc >= 0.5:
            for k in range(s, e): cut[k] = True
    want.append("".join(c for c, x in zip(text, cut) if not x))
open(t + "/sp.jsonl", "w").write("".join(json.dumps(d) + "\n" for d in docs))
import os
os.makedirs(t + "/spa", exist_ok=True)
open(t + "/spa/part-00000.jsonl", "w").write("".join(json.dumps(a) + "\n" for a in attrs))
open(t + "/sp-want", "w").write("".join(json.dumps({"id": "d%d" % i, "text": w}) + "\n"
                                        for i, w in enumerate(want) if w))
PY
zstd -q "$T/spa/part-00000.jsonl" -o "$T/spa/part-00000.jsonl.zst"
run "$SLUICE" mix --attributes "$T/spa" --remove-spans "x__y__z >= 0.5" --out "$T/spo" "$T/sp.jsonl"
expect_rc 0
expect_eq "$(zstd -q -d -c "$T/spo/part-00000.jsonl.zst" | $PY -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l); print(json.dumps({'id': d['id'], 'text': d['text']}))" | md5sum)" \
    "$(md5sum < "$T/sp-want")"
expect_eq $(($(count "$T/spo" documents_out) + $(count "$T/spo" left_empty))) 40

case_ "bad attributes: file and line named"
mkdir -p "$T/bad"
cp "$T/spa/part-00000.jsonl" "$T/bad/p"
nb=0
bad() { # LINE-2-TEXT MESSAGE
    nb=$((nb + 1))
    { sed -n 1p "$T/bad/p"; echo "$1"; tail -n +3 "$T/bad/p"; } | zstd -q -f -o "$T/bad/part-00000.jsonl.zst"
    run "$SLUICE" mix --attributes "$T/bad" --remove-spans "x__y__z>=0.5" --out "$T/bo$nb" "$T/sp.jsonl"
    expect_rc 1; expect_err "$T/bad/part-00000.jsonl.zst:2: $2"; expect_no_file "$T/bo$nb/part-00000.jsonl.zst"
}
bad '{"id": "d1", "attributes": {"x__y__z": [[3, 1, 0.5]]}}' "attribute 'x__y__z': expected spans"
bad '{"id": "d1", "attributes": {"x__y__z": [[0, 9999, 0.5]]}}' "attribute 'x__y__z': span [0, 9999] ends past the text (35 characters)"
bad '{"id": "d1", "attributes": {"x__y__z": 5}}' "attribute 'x__y__z': expected a list of spans, got 5"
bad '{"id": "d1", "attributes": [' "not an attributes line"
bad '{"id": "d9", "attributes": {}}' "attributes of document 'd9' where"
sed -n 1,39p "$T/bad/p" | zstd -q -f -o "$T/bad/part-00000.jsonl.zst"
run "$SLUICE" mix --attributes "$T/bad" --out "$T/bo6" "$T/sp.jsonl"
expect_rc 1; expect_err "attributes '$T/bad/part-00000.jsonl.zst' end at line 39, before document 'd39'"
cat "$T/bad/p" "$T/bad/p" | zstd -q -f -o "$T/bad/part-00000.jsonl.zst"
run "$SLUICE" mix --attributes "$T/bad" --out "$T/bo7" "$T/sp.jsonl"
expect_rc 1; expect_err "more attributes than documents"
run "$SLUICE" mix --attributes "$T/nowhere" --out "$T/bo8" "$T/sp.jsonl"
expect_rc 1; expect_err "cannot read the attributes of '$T/sp.jsonl'"
run "$SLUICE" mix --attributes "$T/spa" --keep-if "x__y__z => 1" --out "$T/bo9" "$T/sp.jsonl"
expect_rc 2; expect_err "cannot read rule 'x__y__z => 1'"; expect_no_file "$T/bo9"
printf 'filters:\n  - c4_quality\n' > "$T/edit.yaml"
run "$SLUICE" tag --config "$T/edit.yaml" --out "$T/bo10" "$T/sp.jsonl"
expect_rc 1; expect_err "cannot tag with filter 'c4_quality'"

if have_mpi; then
    case_ "mpirun -np 2: the outputs of one process"
    run "${MPIRUN[@]}" -np 2 "$SLUICE" tag --config "$T/c.yaml" --experiment ex --out "$T/attrs2" "$T/in"
    expect_rc 0
    expect_eq "$(plain "$T/attrs2" | md5sum)" "$(plain "$T/attrs" | md5sum)"
    # shellcheck disable=SC2086
    run "${MPIRUN[@]}" -np 2 "$SLUICE" mix --attributes "$T/attrs2" --keep-if "ex__word_count__score >= 1500" \
        --keep-if "ex__word_count__score<=100000" $K --out "$T/m1500-np2" "$T/in"
    expect_rc 0
    expect_eq "$(plain "$T/m1500-np2" | md5sum)" "$(plain "$T/m1500" | md5sum)"
else
    echo "SKIP: mpirun not found (ranks)"
fi

case_ "resume: tag and mix stopped after shards 0 and 2 end as runs never stopped"
for s in attrs m1500; do
    cp -r "$T/$s" "$T/stop-$s"
    rm "$T/stop-$s/manifest.json" "$T/stop-$s/part-00001.jsonl.zst" "$T/stop-$s/.sluice/part-00001.jsonl.zst.json"
    head -c 100 "$T/$s/part-00001.jsonl.zst" > "$T/stop-$s/.part-00001.jsonl.zst.999999-host.tmp"
done
run "$SLUICE" tag --config "$T/c.yaml" --experiment ex --out "$T/stop-attrs" "$T/in"
expect_rc 0; expect_err "(resumed)"
# shellcheck disable=SC2086
run "$SLUICE" mix --attributes "$T/attrs" --keep-if "ex__word_count__score >= 1500" \
    --keep-if "ex__word_count__score<=100000" $K --out "$T/stop-m1500" "$T/in"
expect_rc 0; expect_err "(resumed)"
for s in attrs m1500; do
    expect_eq "$(plain "$T/stop-$s" | md5sum)" "$(plain "$T/$s" | md5sum)"
    expect_no_partials "$T/stop-$s"
    expect_eq "$(json "$T/stop-$s/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
        "$(json "$T/$s/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
done

case_ "sluice run: tag, then mix over the same documents"
cat > "$T/p.yaml" <<YAML
name: tm
work_dir: $T/w
extract:
  format: jsonl
  in: $T/in
tag:
  config: $T/c.yaml
  experiment: ex
mix:
  attributes: $T/w/tag
  keep_if: ["ex__word_count__score >= 1500", "ex__word_count__score<=100000",
            "ex__numbers__keep==1", "ex__mean_len__keep==1"]
YAML
run "$SLUICE" run "$T/p.yaml" --dry-run
expect_rc 0
expect_eq "$(sed -n 2p "$T/out")" "sluice tag --out $T/w/tag --config $T/c.yaml --experiment ex $T/w/extract"
run "$SLUICE" run "$T/p.yaml"
expect_rc 0
expect_eq "$(plain "$T/w/mix" | md5sum)" "$(plain "$T/m1500" | md5sum)"

finish
