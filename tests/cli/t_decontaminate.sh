#!/usr/bin/env bash
# sluice decontaminate: output identical to the brute-force reference
# (tests/decont/reference.py) on a generated corpus with planted task passages, per-task
# counts in the manifest, -np 1 vs 2 identical, config and usage errors.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ROOTDIR=$(cd "$(dirname "$0")/../.." && pwd)
PY=${SLUICE_PYTHON:-python3}

"$PY" - "$T" <<'PY'
import json, random, sys
T = sys.argv[1]
r = random.Random(7)
vocab = ("the of and to in is was for on that with as by at from it an be this are or his "
         "which her had not but were they have one all their been has more its also who "
         "river city music école naïve 東京 data model year first after new two time").split()
def sentence(k):
    w = [r.choice(vocab) for _ in range(k)]
    return w[0].capitalize() + " " + " ".join(w[1:]) + r.choice([".", ".", "!", "?", ","])
tasks = {
  "qa": [{"question": " ".join(r.choice(vocab) for _ in range(20)) + "?", "context": "x"} for _ in range(6)],
  "mc": [{"query": "Which " + " ".join(r.choice(vocab) for _ in range(9)),
          "choices": [" ".join(r.choice(vocab) for _ in range(15)) for _ in range(3)]} for _ in range(5)],
  # enough n-grams (7,200) to regrow the table and its prefilter
  "big": [{"text": " ".join("w%d" % r.randrange(100000) for _ in range(30))} for _ in range(400)],
}
for name, recs in tasks.items():
    with open(f"{T}/{name}.jsonl", "w") as f:
        for x in recs:
            f.write(json.dumps(x, ensure_ascii=False) + "\n")
        f.write("\n")
passages = [x["question"] for x in tasks["qa"]] + [x["query"] for x in tasks["mc"]] + \
           [c for x in tasks["mc"] for c in x["choices"]] + [x["text"] for x in tasks["big"][::40]]
def perturb(p):  # case and punctuation changes do not hide a passage
    return "".join(c.upper() if r.random() < .2 else c for c in p).replace(" ", r.choice([" ", "  ", ", ", " - "]), 3)
with open(f"{T}/in.jsonl", "w") as f:
    for i in range(80):
        parts = [sentence(r.randint(4, 18)) for _ in range(r.randint(1, 40))]
        for _ in range(r.choice([0, 0, 1, 2, 5, 12])):
            parts.insert(r.randint(0, len(parts)), perturb(r.choice(passages)))
        f.write(json.dumps({"id": f"d{i}", "text": " ".join(parts)}, ensure_ascii=False) + "\n")
with open(f"{T}/tasks.yaml", "w") as f:
    f.write("tasks:\n  - name: qa\n    files: [qa.jsonl]\n    fields: [question]\n"
            "  - name: mc\n    files: [mc.jsonl]\n    fields: [query, choices]\n"
            "  - name: big\n    files: [big.jsonl]\n    fields: [text]\n")
PY

compare() { # ARGS... : run sluice and the reference with the same settings
    local tag=$1 ngram=$2 margin=$3 minlen=$4 splits=$5
    run "$SLUICE" decontaminate --tasks "$T/tasks.yaml" --out "$T/o-$tag" --ngram "$ngram" \
        --margin "$margin" --min-length "$minlen" --max-splits "$splits" "$T/in.jsonl"
    expect_rc 0
    "$PY" - "$T" "$ngram" "$margin" "$minlen" "$splits" > "$T/cfg-$tag.json" <<'PY'
import json, sys
T = sys.argv[1]
print(json.dumps({"ngram": int(sys.argv[2]), "min_task_words": 8, "margin": int(sys.argv[3]),
                  "min_length": int(sys.argv[4]), "max_splits": int(sys.argv[5]),
                  "tasks": [{"name": "qa", "files": [f"{T}/qa.jsonl"], "fields": ["question"]},
                            {"name": "mc", "files": [f"{T}/mc.jsonl"], "fields": ["query", "choices"]},
                            {"name": "big", "files": [f"{T}/big.jsonl"], "fields": ["text"]}]}))
PY
    "$PY" "$ROOTDIR/tests/decont/reference.py" "$T/cfg-$tag.json" "$T/in.jsonl" "$T/ref-$tag.jsonl" "$T/refc-$tag.json"
    zstdcat "$T/o-$tag/part-00000.jsonl.zst" | "$PY" -c "
import json,sys
for l in sys.stdin:
    d=json.loads(l); print(json.dumps({'id':d['id'],'text':d['text']},ensure_ascii=False))" > "$T/got-$tag.jsonl"
    if cmp -s "$T/got-$tag.jsonl" "$T/ref-$tag.jsonl"; then ok; else
        fail "output differs from the reference ($tag): $(diff "$T/got-$tag.jsonl" "$T/ref-$tag.jsonl" | head -c 600)"; fi
    "$PY" - "$T/o-$tag/manifest.json" "$T/refc-$tag.json" <<'PY' && ok || fail "counts differ ($tag)"
import json, sys
m = json.load(open(sys.argv[1]))["counts"]; r = json.load(open(sys.argv[2]))
assert m["documents_in"] == 80, m
assert m.get("documents_contaminated", 0) == r["contaminated"], (m, r)
assert m.get("documents_dropped_max_splits", 0) + m.get("documents_dropped_empty", 0) == r["dropped"], (m, r)
assert m.get("short_pieces_dropped", 0) == r["short"], (m, r)
for k, v in r.items():
    if k.startswith("matches_"):
        assert m.get(k) == v, (k, m, r)
assert r["contaminated"] > 10 and r["dropped"] > 0 and r.get("matches_qa") and r.get("matches_mc") and r.get("matches_big"), r
PY
}

case_ "same output as the brute-force reference (defaults, and small margins)"
compare def 13 200 200 10
compare small 13 30 40 3
compare short 8 0 0 4

case_ "manifest lists the tasks with their n-gram counts"
expect_eq "$(json "$T/o-def/manifest.json" "[t['name'] for t in m['settings']['decontaminate']['tasks']]")" "['qa', 'mc', 'big']"
expect_eq "$(json "$T/o-def/manifest.json" "m['settings']['decontaminate']['tasks'][1]['texts']")" 20
expect_eq "$(json "$T/o-def/manifest.json" "m['settings']['decontaminate']['tasks'][2]['ngrams']")" 7200

case_ "-np 1 and -np 2 give the same shards"
if have_mpi; then
    split -n l/3 -d --additional-suffix=.jsonl "$T/in.jsonl" "$T/part"
    run "${MPIRUN[@]}" -np 1 "$SLUICE" decontaminate --tasks "$T/tasks.yaml" --out "$T/n1" "$T"/part0*.jsonl
    expect_rc 0
    run "${MPIRUN[@]}" -np 2 "$SLUICE" decontaminate --tasks "$T/tasks.yaml" --out "$T/n2" "$T"/part0*.jsonl
    expect_rc 0
    for i in 0 1 2; do
        expect_eq "$(zstdcat "$T/n1/part-0000$i.jsonl.zst" | md5sum)" "$(zstdcat "$T/n2/part-0000$i.jsonl.zst" | md5sum)" "(shard $i)"
    done
fi

case_ "a pipeline stage: decontaminate between clean and dedup_exact"
cat > "$T/p.yaml" <<EOF2
work_dir: $T/w
clean: {in: $T/in.jsonl}
decontaminate: {tasks: $T/tasks.yaml, max_splits: 3}
dedup_exact: {}
EOF2
run "$SLUICE" run "$T/p.yaml" --dry-run
expect_rc 0
expect_out "sluice decontaminate --out $T/w/decontaminate --tasks $T/tasks.yaml --max-splits 3 $T/w/clean"
expect_out "sluice dedup exact --out $T/w/dedup_exact $T/w/decontaminate"
run "$SLUICE" run "$T/p.yaml"
expect_rc 0
expect_file "$T/w/decontaminate/manifest.json"

case_ "errors: missing --tasks, bad task config, unreadable task file"
run "$SLUICE" decontaminate --out "$T/e" "$T/in.jsonl"; expect_rc 2; expect_err "--tasks"
printf 'tasks:\n  - name: qa\n    files: [qa.jsonl]\n' > "$T/bad.yaml"
run "$SLUICE" decontaminate --tasks "$T/bad.yaml" --out "$T/e" "$T/in.jsonl"; expect_rc 1
expect_err "bad.yaml:2"; expect_err "no fields"
printf 'tasks:\n  - name: qa\n    files: [nope.jsonl]\n    fields: [q]\n' > "$T/bad2.yaml"
run "$SLUICE" decontaminate --tasks "$T/bad2.yaml" --out "$T/e" "$T/in.jsonl"; expect_rc 1
expect_err "nope.jsonl"; expect_no_file "$T/e/part-00000.jsonl.zst"

case_ "a bad line in a task file is skipped with a warning naming file and line"
{ head -2 "$T/qa.jsonl"; echo '{"question": broken'; tail -n +3 "$T/qa.jsonl"; } > "$T/qa2.jsonl"
sed 's/qa.jsonl/qa2.jsonl/' "$T/tasks.yaml" > "$T/tasks2.yaml"
run "$SLUICE" decontaminate --tasks "$T/tasks2.yaml" --out "$T/b" "$T/in.jsonl"
expect_rc 0; expect_err "task 'qa': 1 unreadable lines skipped"; expect_err "qa2.jsonl:3"
expect_eq "$(json "$T/b/manifest.json" "m['settings']['decontaminate']['tasks'][0]['bad_lines']")" 1
finish
