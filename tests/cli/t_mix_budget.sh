#!/usr/bin/env bash
# sluice mix --tokens: each source's realised tokens within one document of its target (a
# Python reference of the targets, tokens recounted from the output), at most ceil(E)
# copies of a document, the manifest's accounting, the same output for mpirun -np 1/2, a
# stopped run resumed, tokens counted with a tokenizer as sluice tokenize counts them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/in"
$PY - "$T/in" <<'PY'
import json, random, sys
r = random.Random(3)
for f in range(3):
    with open("%s/f%d.jsonl" % (sys.argv[1], f), "w") as o:
        for i in range(60):
            src = r.choice(["web", "books", "code", "wiki"])
            text = "".join(r.choice("ab c\u00e9\n") for _ in range(r.randint(1, 300)))
            o.write(json.dumps({"id": "f%d-%d" % (f, i), "source": src, "text": text}) + "\n")
PY
plain() { for f in "$1"/part-*.jsonl.zst; do echo "== $(basename "$f")"; zstd -q -d -c "$f"; done; }

# check OUT TOKENS EPOCHS BYTES-PER-TOKEN WEIGHTS...: targets by a Python reference, the
# output's tokens recounted per source, each realised within one document of its target
check() {
    $PY - "$T/in" "$@" <<'PY' && ok || fail "budgets of $1"
import glob, json, math, subprocess, sys
ins, out, tokens, epochs, bpt = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
weights = dict((w.split("=")[0], float(w.split("=")[1])) for w in sys.argv[6:])
tok = lambda d: math.ceil(len(d["text"].encode()) / bpt)
docs = [json.loads(l) for f in sorted(glob.glob(ins + "/*.jsonl")) for l in open(f)]
avail, biggest = {}, {}
for d in docs:
    avail[d["source"]] = avail.get(d["source"], 0) + tok(d)
    biggest[d["source"]] = max(biggest.get(d["source"], 0), tok(d))
W = sum(weights.get(s, 0 if weights else 1) for s in avail)
got, copies = {}, {}
for f in sorted(glob.glob(out + "/part-*.jsonl.zst")):
    for l in subprocess.run(["zstd", "-q", "-d", "-c", f], capture_output=True).stdout.decode().splitlines():
        d = json.loads(l)
        got[d["source"]] = got.get(d["source"], 0) + tok(d)
        copies[d["id"]] = copies.get(d["id"], 0) + 1
m = json.load(open(out + "/manifest.json"))["counts"]
for s in avail:
    w = weights.get(s, 0 if weights else 1)
    target = min(math.floor(tokens * w / W), math.floor(epochs * avail[s]))
    assert m["mix_%s_target_tokens" % s] == target, (s, target, m)
    assert m["mix_%s_tokens" % s] == got.get(s, 0), (s, got, m)
    assert 0 <= got.get(s, 0) - target < max(biggest[s], 1), (s, got.get(s, 0), target)
assert max(copies.values()) <= math.ceil(epochs), max(copies.values())
assert m["documents_in"] == m["not_sampled"] + m["documents_out"] - m["repeated_copies"], m
PY
}

case_ "help"
run "$SLUICE" mix -h; expect_rc 0; expect_out "--tokens N"; expect_out "--max-epochs E"

case_ "budgets realised within one document of each source's target"
run "$SLUICE" mix --tokens 9000 --weights web=3 --weights books=1 --weights wiki=0.5 \
    --seed 7 --shards 4 --out "$T/a" "$T/in"
expect_rc 0
check "$T/a" 9000 1 4 web=3 books=1 wiki=0.5
# more tokens than the sources hold: capped at 2.5 epochs, whole epochs repeated
run "$SLUICE" mix --tokens 200000 --max-epochs 2.5 --bytes-per-token 3 --seed 7 --out "$T/b" "$T/in"
expect_rc 0
check "$T/b" 200000 2.5 3
expect_eq "$(ls "$T/b" | grep -c part-)" 3

case_ "the seed orders the mix; the shards do not change what is in it"
run "$SLUICE" mix -q --tokens 9000 --weights web=3 --weights books=1 --weights wiki=0.5 \
    --seed 7 --shards 2 --out "$T/a2" "$T/in"
expect_rc 0
expect_eq "$(plain "$T/a2" | grep -v '^==' | md5sum)" "$(plain "$T/a" | grep -v '^==' | md5sum)"
run "$SLUICE" mix -q --tokens 9000 --weights web=3 --weights books=1 --weights wiki=0.5 \
    --seed 8 --shards 4 --out "$T/a8" "$T/in"
expect_rc 0
[ "$(plain "$T/a8" | md5sum)" != "$(plain "$T/a" | md5sum)" ] && ok || fail "the seed changes nothing"

if have_mpi; then
    case_ "mpirun -np 2: the outputs of one process"
    run "${MPIRUN[@]}" -np 2 "$SLUICE" mix --tokens 9000 --weights web=3 --weights books=1 \
        --weights wiki=0.5 --seed 7 --shards 4 --out "$T/a-np2" "$T/in"
    expect_rc 0
    expect_eq "$(plain "$T/a-np2" | md5sum)" "$(plain "$T/a" | md5sum)"
    expect_eq "$(json "$T/a-np2/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
        "$(json "$T/a/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
else
    echo "SKIP: mpirun not found (ranks)"
fi

case_ "resume: a run stopped after shards 0, 2 and 3 ends as one never stopped"
cp -r "$T/a" "$T/stop"
rm "$T/stop/manifest.json" "$T/stop/part-00001.jsonl.zst" "$T/stop/.sluice/part-00001.jsonl.zst.json"
run "$SLUICE" mix --tokens 9000 --weights web=3 --weights books=1 --weights wiki=0.5 \
    --seed 7 --shards 4 --out "$T/stop" "$T/in"
expect_rc 0; expect_err "(resumed)"
expect_eq "$(plain "$T/stop" | md5sum)" "$(plain "$T/a" | md5sum)"
expect_eq "$(json "$T/stop/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
    "$(json "$T/a/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"

case_ "sluice run: a budgeted mix stage, weights as a map"
cat > "$T/p.yaml" <<YAML
name: budget
work_dir: $T/w
mix:
  in: $T/in
  tokens: 9000
  weights: {web: 3, books: 1, wiki: 0.5}
  seed: 7
  shards: 4
YAML
run "$SLUICE" run "$T/p.yaml"
expect_rc 0
expect_eq "$(plain "$T/w/mix" | md5sum)" "$(plain "$T/a" | md5sum)"

case_ "--tokenizer: tokens counted as sluice tokenize counts them"
run "$SLUICE" tokenize --tokenizer "tiktoken:$FIX/tokenizer/r50k_base.tiktoken.zst" \
    --out "$T/tok" "$T/in"
expect_rc 0
run "$SLUICE" dataset inspect "$T/tok_text_document"
n=$(awk '$1 == "tokens" {print $2}' "$T/out")
run "$SLUICE" mix --tokens 100000000 --source-key none \
    --tokenizer "tiktoken:$FIX/tokenizer/r50k_base.tiktoken.zst" --out "$T/t" "$T/in"
expect_rc 0
expect_eq "$(json "$T/t/manifest.json" "m['counts']['mix_(none)_available_tokens']")" "$n"

case_ "bad options"
run "$SLUICE" mix --tokens 10 --weights web --out "$T/bad1" "$T/in"
expect_rc 2; expect_err "--weights 'web': expected SOURCE=WEIGHT"
run "$SLUICE" mix --weights web=1 --out "$T/bad2" "$T/in"
expect_rc 2; expect_err "nothing to do"
run "$SLUICE" mix --tokens 10 --max-epochs 0 --out "$T/bad3" "$T/in"
expect_rc 2; expect_err "--max-epochs"
run "$SLUICE" mix --tokens 10 --weights web=0 --out "$T/bad4" "$T/in"
expect_rc 2; expect_err "--weights: every weight is 0"
run "$SLUICE" mix --tokens 10 --weights nosuch=1 --out "$T/bad5" "$T/in"
expect_rc 1; expect_err "the sources' weights sum to 0"

finish
