#!/usr/bin/env bash
# sluice eval: usage and docs; a tiny model trained on a learnable task ("NAME likes FOOD."
# with a fixed food per name) scores well above chance on it; every choice's log-likelihood
# equals the numpy model's (full forward, no cache) within 1e-5 for the task layouts
# (HellaSwag, LAMBADA, ARC, PIQA, Winogrande, context/choices); held-out loss equals the
# trainer's validation loss on the same samples; bad input.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ORACLE="$ROOT/tests/oracle"
CFG="$ROOT/configs/models/tiny-gpt.yaml"

case_ "eval -h: usage on stdout, the docs page shows it verbatim"
run "$SLUICE" eval -h
expect_rc 0
expect_out "usage: sluice eval CHECKPOINT (--data PREFIX | --tasks FILE.jsonl) [options]"
doc="$ROOT/docs/commands/eval.md"
block=$(awk '/^## Usage/{u=1; next} u && /^```text/{b=1; next} b && /^```/{exit} b' "$doc")
expect_eq "$block" "$(cat "$T/out")" "(docs/commands/eval.md ## Usage)"
for opt in $(grep -o -- '--[a-z][a-z-]*' "$T/out" | sort -u); do
    grep -q -- "\`[^\`]*$opt" "$doc" && ok || fail "$opt is not described in docs/commands/eval.md"
done

case_ "usage errors exit 2"
run "$SLUICE" eval
expect_rc 2; expect_err "no checkpoint given"
run "$SLUICE" eval "$T"
expect_rc 2; expect_err "nothing to measure"
run "$SLUICE" eval "$T" --data x --split dev
expect_rc 2; expect_err "unknown split 'dev'"
run "$SLUICE" eval "$T" --data x --device tpu
expect_rc 2; expect_err "--device: unknown device 'tpu'"

# the data: a 1,000-piece SentencePiece model, 3,000 sentences of a learnable pairing
zstd -q -d "$FIX/tokenizer/botchan.txt.zst" -o "$T/botchan.txt"
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 1000 --threads 1 \
    --input-sentence-size 2000 --out "$T/m" "$T/botchan.txt"
expect_rc 0
"$PY" - "$T" <<'PY'
import json, random, sys
T = sys.argv[1]
random.seed(5)
names = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
         "mallory", "oscar", "peggy", "rupert", "sybil", "trent", "victor", "walter", "yvonne",
         "zoe", "arthur", "bella", "cedric", "daisy"]
foods = ["apples", "bread", "cheese", "dates"]
pair = {n: foods[i % 4] for i, n in enumerate(names)}
with open(T + "/c.jsonl", "w") as f:
    for _ in range(3000):
        n = random.choice(names)
        f.write(json.dumps({"text": "%s likes %s." % (n, pair[n])}) + "\n")
with open(T + "/likes.jsonl", "w") as f:
    for n in names:
        f.write(json.dumps({"context": "%s likes" % n, "choices": [" %s." % x for x in foods],
                            "gold": foods.index(pair[n])}) + "\n")
    f.write("not json\n")
# the public layouts, small, about the same text
w = lambda name, rows: open("%s/%s.jsonl" % (T, name), "w").write("".join(json.dumps(r) + "\n" for r in rows))
w("hellaswag", [{"ind": i, "activity_label": "Eating", "ctx_a": "%s sits down." % n, "ctx_b": "she likes",
                 "ctx": "%s sits down. she likes" % n, "endings": ["%s. [title] yes" % x for x in foods],
                 "label": foods.index(pair[n]), "split": "val"} for i, n in enumerate(names[:6])])
w("lambada", [{"text": "%s likes %s. %s likes %s" % (n, pair[n], n, pair[n])} for n in names[:6]])
w("arc", [{"id": str(i), "question": "what does %s like?" % n,
           "choices": {"text": foods, "label": ["A", "B", "C", "D"]},
           "answerKey": "ABCD"[foods.index(pair[n])]} for i, n in enumerate(names[:6])])
w("piqa", [{"goal": "feed %s" % n, "sol1": "give %s" % pair[n], "sol2": "give stones", "label": 0} for n in names[:6]])
w("winogrande", [{"sentence": "%s likes _ very much." % n, "option1": pair[n], "option2": "stones", "answer": "1"}
                 for n in names[:6]])
PY
mkdir -p "$T/tok"
run "$SLUICE" tokenize -q --tokenizer "spm:$T/m.model" --append-eod --out "$T/tok/c" "$T/c.jsonl"
expect_rc 0

run "$SLUICE" train "$CFG" data.prefix="$T/tok/c_text_document" model.num_layers=1 train.seq_len=32 \
    train.micro_batch_size=8 train.global_batch_size=8 train.steps=150 optim.lr=3e-3 optim.warmup_steps=10 \
    eval.interval=75 eval.iters=4 checkpoint.dir="$T/ck" log.file="$T/log.jsonl" train.device=cpu \
    "eval.tasks=[$T/likes.jsonl]" -q
expect_rc 0

case_ "a model trained on the learnable task scores well above chance (0.25)"
run "$SLUICE" eval "$T/ck" --tasks "$T/likes.jsonl" --details "$T/det.jsonl"
expect_rc 0
expect_err "1 lines of '$T/likes.jsonl' skipped; the first: $T/likes.jsonl:25: not a JSON object"
acc=$(json_line() { "$PY" -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())[sys.argv[2]])" "$@"; }; json_line "$T/out" acc)
"$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.75 else 1)" "$acc" && ok || fail "acc $acc is not well above chance"
echo "  learnable task: acc $acc over 24 items (chance 0.25); $(grep -o 'items_per_s":[0-9.]*' "$T/out")"

case_ "eval.tasks during training: acc and acc_norm at every evaluation in log.file, TensorBoard and loss.svg"
expect_eq "$("$PY" -c "
import json, sys
t = [json.loads(l) for l in open(sys.argv[1]) if '\"task\"' in l]
print(len(t), [m['step'] for m in t], t[-1]['task'], t[-1]['acc'], all(0 <= m['acc_norm'] <= 1 and m['items'] == 24 and m['items_per_s'] > 0 for m in t))" "$T/log.jsonl")" \
    "2 [75, 150] likes $acc True"
if "$PY" -c "import tensorboard" 2>/dev/null; then
    "$PY" "$ROOT/tests/cli/tb_events.py" "$T/ck/tb" > "$T/tb.json" && ok || fail "TensorBoard cannot read the events"
    run "$PY" - "$T/tb.json" "$T/log.jsonl" <<'PY'
import json, sys
tb = json.load(open(sys.argv[1]))["scalars"]
log = [json.loads(l) for l in open(sys.argv[2]) if '"task"' in l]
for key in ("acc", "acc_norm"):
    got = tb["eval/likes/" + key]
    assert [s for s, _ in got] == [m["step"] for m in log], (key, got)
    for (s, v), m in zip(got, log):
        assert abs(v - m[key]) <= 1e-6, (key, s, v, m[key])
print("tb ok")
PY
    expect_out "tb ok"
else
    grep -aq "eval/likes/acc_norm" "$T"/ck/tb/events.out.tfevents.* && ok || fail "no eval/likes/acc_norm in the TensorBoard events"
fi
# loss.svg: a second panel (below the loss panel, 480 px) with the task's acc and acc_norm
# curves, one point per evaluation, at the logged values
run "$PY" - "$T/ck/tb/loss.svg" "$T/log.jsonl" <<'PY'
import json, sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
log = [json.loads(l) for l in open(sys.argv[2]) if '"task"' in l]
lines = {p.get("class"): [tuple(map(float, xy.split(","))) for xy in p.get("points").split()]
         for p in r.iter(ns + "polyline")}
texts = [t.text for t in r.iter(ns + "text")]
assert int(r.get("height")) > 480 and "task accuracy" in texts, (r.get("height"), texts)
assert "likes acc" in texts and "likes acc_norm" in texts, texts
for key in ("acc", "acc_norm"):
    pts = lines["task likes " + key]
    assert len(pts) == len(log), (key, pts)
    assert all(480 < y < int(r.get("height")) for _, y in pts), pts
# the y of each point is its value on the panel's axis: equal values, equal heights
    vals = [m[key] for m in log]
    assert (pts[0][1] == pts[1][1]) == (vals[0] == vals[1]), (pts, vals)
assert len(lines["train loss"]) > 2 and len(lines["validation loss"]) == 2
print("svg ok")
PY
expect_out "svg ok"

case_ "every choice's log-likelihood equals the numpy model's (1e-5)"
run "$PY" "$ORACLE/check_eval.py" "$T/ck/step-00000150" "$T/det.jsonl"
expect_rc 0
expect_out "eval oracle: 0 mismatches"

for f in hellaswag lambada arc piqa winogrande; do
    case_ "$f layout: recognised, scored, equal to numpy"
    run "$SLUICE" eval "$T/ck" --tasks "$T/$f.jsonl" --details "$T/det-$f.jsonl"
    expect_rc 0
    expect_out "\"format\":\"$f\",\"items\":6,\"skipped\":0"
    cp "$T/out" "$T/res-$f.json"
    run "$PY" "$ORACLE/check_eval.py" "$T/ck/step-00000150" "$T/det-$f.jsonl"
    expect_rc 0
    expect_out "eval oracle: 0 mismatches"
done
case_ "a Llama checkpoint (RoPE, GQA, SwiGLU), a 300-position window: every choice equals numpy"
# the continuations of an item share blocks of 128 rows; a choice longer than a block runs
# alone in blocks of its own, the short choices before and after it in shared blocks
run "$SLUICE" train "$ROOT/configs/models/tiny-llama.yaml" data.prefix="$T/tok/c_text_document" \
    model.num_layers=1 model.max_position_embeddings=300 train.seq_len=32 train.micro_batch_size=2 \
    train.global_batch_size=2 train.steps=2 eval.interval=0 checkpoint.dir="$T/ll" train.device=cpu -q
expect_rc 0
"$PY" - "$T" <<'PY'
import json, sys
T = sys.argv[1]
long = " " + " ".join("alice likes apples and bob likes bread" for _ in range(10))  # 170 tokens
rows = [{"context": "carol likes", "choices": [" cheese.", long, " dates."] +
         [" %s and%s" % (w, long[:100 + 10 * i]) for i, w in enumerate(["bread", "apples", "dates"])],
         "gold": 0},  # 3 choices of 50-60 tokens: more rows than one block holds
        {"context": "dave likes " * 3, "choices": [" apples.", " dates."], "gold": 1}]
open(T + "/long.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
for f in long hellaswag winogrande; do
    run "$SLUICE" eval "$T/ll" --tasks "$T/$f.jsonl" --details "$T/det-ll-$f.jsonl"
    expect_rc 0
    run "$PY" "$ORACLE/check_eval.py" "$T/ll/step-00000002" "$T/det-ll-$f.jsonl"
    expect_rc 0
    expect_out "eval oracle: 0 mismatches"
done
expect_eq "$("$PY" -c "import json,sys; c = [len(json.loads(l)['cont']) for l in open(sys.argv[1])]; print(len(c), max(c) > 129, sum(c[3:6]) > 131)" "$T/det-ll-long.jsonl")" "8 True True" "(choices: 8, one longer than a block, 3 more than one block)"

case_ "LAMBADA: perplexity = exp(-mean log-likelihood), acc = greedy matches"
run "$PY" - "$T/det-lambada.jsonl" "$T/res-lambada.json" <<'PY'
import json, math, sys
d = [json.loads(l) for l in open(sys.argv[1])]
r = json.loads(open(sys.argv[2]).read())
ppl = math.exp(-sum(x["loglik"] for x in d) / len(d)); acc = sum(x["greedy"] for x in d) / len(d)
print("ok" if abs(ppl - r["perplexity"]) <= 1e-5 * ppl and abs(acc - r["acc"]) < 1e-9 else "bad %s %s" % (ppl, r))
PY
expect_out "ok"
case_ "HellaSwag: the harness's preprocessing ([title] -> '. ', [..] dropped, ctx_b capitalised)"
run "$PY" - "$T/det-hellaswag.jsonl" "$T/m.model" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).readline())
print(len(d["ctx"]) > 0 and len(d["cont"]) > 0)
PY
expect_out "True"

case_ "held-out loss: equals the trainer's validation loss on the same samples"
run "$SLUICE" eval "$T/ck" --data "$T/tok/c_text_document" --samples 32 --device cpu
expect_rc 0
expect_out '"device":"cpu"'
cp "$T/out" "$T/held.json"
run "$PY" - "$T/held.json" "$T/log.jsonl" <<'PY'
import json, math, sys
r = json.loads(open(sys.argv[1]).readline())
v = [json.loads(l) for l in open(sys.argv[2]) if '"valid"' in l][-1]
ok = (abs(r["loss"] - v["val_loss"]) < 1e-4 and r["tokens"] == 32 * 32
      and abs(r["perplexity"] - math.exp(r["loss"])) < 1e-3 * r["perplexity"]
      and r["bytes"] > 0 and abs(r["bits_per_byte"] - r["loss"] * r["tokens"] / (math.log(2) * r["bytes"])) < 1e-4)
print("heldout", ok, r["loss"], v["val_loss"], r["bits_per_byte"])
PY
expect_out "heldout True"

case_ "--split all = the valid split of 0,1,0 (the samples the GPU's validation pass reads for all)"
run "$SLUICE" eval "$T/ck" --data "$T/tok/c_text_document" --samples 16 --split all --device cpu
expect_rc 0
sed 's/"split":"[a-z]*",//; s/,"tokens_per_s":[^}]*//' "$T/out" > "$T/all.json"
run "$SLUICE" eval "$T/ck" --data "$T/tok/c_text_document" --samples 16 --split valid \
    --split-weights 0,1,0 --device cpu
expect_rc 0
sed 's/"split":"[a-z]*",//; s/,"tokens_per_s":[^}]*//' "$T/out" > "$T/valid010.json"
cmp -s "$T/all.json" "$T/valid010.json" && ok || fail "$(cat "$T/all.json" "$T/valid010.json")"

case_ "--device cuda without a GPU: an error naming the reason (the GPU: tests/gpu/t_eval_gpu.sh)"
if [ ! -e /dev/nvidia0 ] && [ ! -e /proc/driver/nvidia/gpus ]; then
    run "$SLUICE" eval "$T/ck" --data "$T/tok/c_text_document" --samples 8 --device cuda
    expect_rc 1
    expect_err "--device cuda: "
    expect_err "hint: --device cpu"
    # auto falls back to the CPU
    run "$SLUICE" eval "$T/ck" --data "$T/tok/c_text_document" --samples 8
    expect_rc 0
    expect_out '"device":"cpu"'
else
    echo "  skip: this machine has a GPU"
fi

case_ "bad input"
run "$SLUICE" eval "$T/ck" --tasks "$T/botchan.txt"
expect_rc 1
expect_err "has no items; the first bad line: $T/botchan.txt:1: not a JSON object"
# a tokenizer with more ids than the model (GPT-2's 50,257 against 1,000): a stop naming the
# task, the item and both sizes, not an out-of-bounds read
mkdir -p "$T/gpt2"
zstd -q -d "$FIX/tokenizer/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$FIX/tokenizer/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
run "$SLUICE" eval "$T/ck" --tasks "$T/likes.jsonl" --tokenizer "gpt2:$T/gpt2"
expect_rc 1
expect_err "task '$T/likes.jsonl', item 1: token id "
expect_err "is outside the model's vocabulary of 1000 ids"
expect_err "hint: score with the tokenizer the model was trained with (--tokenizer)"
run "$SLUICE" eval "$T/nope" --tasks "$T/likes.jsonl"
expect_rc 1
expect_err "'$T/nope'"
run "$SLUICE" train "$CFG" data=synthetic model.vocab_size=300 model.num_layers=1 train.steps=1 \
    train.seq_len=16 train.micro_batch_size=1 train.global_batch_size=1 eval.interval=0 checkpoint.dir="$T/syn" -q
run "$SLUICE" eval "$T/syn" --tasks "$T/likes.jsonl"
expect_rc 2
expect_err "no tokenizer for the tasks' text"

case_ "a choice that is not a string is a bad item naming it, not a continuation too long"
printf '%s\n' '{"context": "one", "choices": [" a", 7], "gold": 0}' '{"context": "two", "choices": [" a", null], "gold": 1}' \
    '{"context": "three", "choices": [" x", " y"], "gold": 1}' > "$T/nonstr.jsonl"
run "$SLUICE" eval "$T/ck" --tasks "$T/nonstr.jsonl"
expect_rc 0
expect_err "2 lines of '$T/nonstr.jsonl' skipped"; expect_err "nonstr.jsonl:1: choice 1 is int, not a string"
expect_no_err "longer than the context"

case_ "--seq-len past the model's context is refused (it was clamped without a word)"
run "$SLUICE" eval "$T/ck" --data "$T/tok/c_text_document" --seq-len 100000 --device cpu
expect_rc 2; expect_err "--seq-len 100000 is longer than the model's context"

finish
