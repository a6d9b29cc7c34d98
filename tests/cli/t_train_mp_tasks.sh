#!/usr/bin/env bash
# eval.tasks under model parallelism on the CPU path: the weights are gathered from the
# model-parallel group to rank 0, which scores the zero-shot tasks with the code of `sluice
# eval`. Under TP=2 and PP=2 (tiny-gpt: tied embeddings, whose first-stage copy counts) and
# DP=2 with ZeRO-1 and ZeRO-3 (whose sharded weights are all-gathered first), the scores
# logged in log.file at every evaluation equal one rank's: accuracies exactly, LAMBADA's
# perplexity within the fp32 tolerance of tests/cli/parallel_lib.sh (the split runs'
# weights differ from one rank's by a few ulp).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/parallel_lib.sh"
if ! have_mpi; then
    echo "  skip: mpirun not found"
    finish
fi

# data with a tokenizer (the GPT-2 BPE of the fixtures): 4,000 lines of Shakespeare
mkdir -p "$T/gpt2" "$T/tok"
zstd -q -d "$FIX/tokenizer/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$FIX/tokenizer/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
zstd -q -d "$FIX/tokenizer/tinyshakespeare.txt.zst" -o "$T/s.txt"
"$PY" -c "
import json, sys
for l in open(sys.argv[1]).readlines()[:4000]:
    if l.strip(): print(json.dumps({'text': l.strip()}))" "$T/s.txt" > "$T/s.jsonl"
run "$SLUICE" tokenize -q --tokenizer "gpt2:$T/gpt2" --append-eod --out "$T/tok/s" "$T/s.jsonl"
expect_rc 0
"$PY" - "$T" <<'PY'
import json, sys
T = sys.argv[1]
w = lambda name, rows: open("%s/%s.jsonl" % (T, name), "w").write("".join(json.dumps(r) + "\n" for r in rows))
who = ["citizen", "king", "queen", "duke", "lord", "lady"]
w("speak", [{"context": "First %s: hear me" % n, "choices": [" speak.", " run.", " sing.", " eat."],
             "gold": 0} for n in who])
w("lambada", [{"text": "Before we proceed any further, hear me %s" % x}
              for x in ["speak", "now", "well", "out"]])
PY

TRAIN=(data.prefix="$T/tok/s_text_document" data.cache_dir="$T/cache" train.seq_len=32
       train.global_batch_size=8 train.steps=4 train.threads=1 train.device=cpu
       eval.interval=2 eval.iters=1 "eval.tasks=[$T/speak.jsonl, $T/lambada.jsonl]")
GPT="$ROOT/configs/models/tiny-gpt.yaml"

# tasks NAME NP KEY=VALUE...: a run whose task scores go to $T/NAME.jsonl
tasks() {
    local name=$1 np=$2
    shift 2
    run "${MPIRUN[@]}" -np "$np" "$SLUICE" train "$GPT" "${TRAIN[@]}" "$@" log.file="$T/$name.jsonl"
    case_ "$name: trains and scores the tasks at steps 2 and 4"
    expect_rc 0
    expect_err "eval.tasks: '$T/speak.jsonl' (choice, 6 items)"
}

# same_tasks A B: the task records of the two logs agree
same_tasks() {
    "$PY" - "$T/$1.jsonl" "$T/$2.jsonl" "$RTOL" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p) if '"task"' in l] for p in sys.argv[1:3])
key = lambda r: (r["step"], r["task"])
assert sorted(map(key, a)) == sorted(map(key, b)) == [(2, "lambada"), (2, "speak"), (4, "lambada"), (4, "speak")], (a, b)
a, b = sorted(a, key=key), sorted(b, key=key)
for x, y in zip(a, b):
    second = "perplexity" if x["task"] == "lambada" else "acc_norm"
    print(f"  step {x['step']} {x['task']}: acc {x['acc']} vs {y['acc']}, {second} {x[second]!r} vs {y[second]!r}")
    assert x["acc"] == y["acc"] and x["items"] == y["items"], (x, y)
    rel = abs(x[second] - y[second]) / abs(y[second])
    assert rel <= float(sys.argv[3]), (x, y, rel)
PY
}

tasks one 1 train.micro_batch_size=2
for l in "tp2 2 parallel.tensor=2" "pp2 2 parallel.pipeline=2" "dp2z 2 optim.zero=1" \
    "dp2z3 2 optim.zero=3"; do
    set -- $l
    tasks "$@" train.micro_batch_size=2
    case_ "$1: the task scores = one rank's (accuracy exactly, perplexity rtol $RTOL)"
    run same_tasks "$1" one
    expect_rc 0
done
finish
