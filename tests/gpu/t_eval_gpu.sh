#!/usr/bin/env bash
# Evaluation on the GPU (make test-gpu; SKIP without a GPU, on the trainer's exact message):
#  - eval.tasks during GPU training: the tasks scored at every evaluation by the code of
#    train/eval.h over the GPU's working weights (params_host), in log.file, TensorBoard and
#    loss.svg's accuracy panel; a tiny model trained on a learnable task scores far above
#    chance, as on the CPU (tests/cli/t_eval.sh);
#  - sluice eval --device cuda --data: the held-out loss is the GPU trainer's validation pass
#    over the checkpoint, so it equals the val_loss the GPU run logged on the same samples
#    (same bf16 working weights, same batches: to 1e-4 relative) and the CPU's held-out loss
#    to bf16 tolerance (LOSS_RTOL, as tests/gpu/t_train_gpu.sh); bytes and tokens are exact;
#    --split all runs, --split test is refused with a hint;
#  - sluice eval --device cuda --tasks: the same scores, byte for byte, as --device cpu (one
#    scoring code on the host).
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh"
LOSS_RTOL=0.005
CFG="$ROOT/configs/models/tiny-gpt.yaml"

NO_GPU="sluice train: error: train.device=cuda: no CUDA device ("
run "$SLUICE" train "$CFG" data=synthetic train.steps=0 train.device=cuda
if [ "$rc" != 0 ]; then
    first=$(head -1 "$T/err")
    if [ "$rc" = 1 ] && [ "${first#"$NO_GPU"}" != "$first" ]; then
        echo "SKIP: no CUDA device (${first#"$NO_GPU"}"
        finish
        exit 0
    fi
    case_ "GPU probe: train.device=cuda train.steps=0"
    fail "exit $rc, and not the no-device message"
    finish
    exit 1
fi

# the data and the learnable task of tests/cli/t_eval.sh
zstd -q -d "$FIX/tokenizer/botchan.txt.zst" -o "$T/botchan.txt"
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 1000 --threads 1 \
    --input-sentence-size 2000 --out "$T/m" "$T/botchan.txt"
expect_rc 0
python3 - "$T" <<'PY'
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
PY
mkdir -p "$T/tok"
run "$SLUICE" tokenize -q --tokenizer "spm:$T/m.model" --append-eod --out "$T/tok/c" "$T/c.jsonl"
expect_rc 0
DATA="$T/tok/c_text_document"

run "$SLUICE" train "$CFG" data.prefix="$DATA" model.num_layers=1 train.seq_len=32 \
    train.micro_batch_size=8 train.global_batch_size=8 train.steps=150 optim.lr=3e-3 \
    optim.warmup_steps=10 eval.interval=75 eval.iters=4 checkpoint.dir="$T/ck" \
    log.file="$T/log.jsonl" train.device=cuda "eval.tasks=[$T/likes.jsonl]"
case_ "eval.tasks during GPU training"
expect_rc 0
expect_err "training on the GPU"
expect_out "eval at step 150 | likes | acc "
run python3 - "$T/log.jsonl" <<'PY'
import json, sys
t = [json.loads(l) for l in open(sys.argv[1]) if '"task"' in l]
assert [m["step"] for m in t] == [75, 150], t
assert t[-1]["acc"] >= 0.75 and t[-1]["items"] == 24, t[-1]
print("tasks ok", t[-1]["acc"], t[-1]["acc_norm"])
PY
expect_out "tasks ok"
grep -aq "eval/likes/acc_norm" "$T"/ck/tb/events.out.tfevents.* && ok || fail "no eval/likes/acc_norm in the events"
grep -q 'class="task likes acc"' "$T/ck/tb/loss.svg" && ok || fail "no task panel in loss.svg"

case_ "eval --device cuda --data: the GPU run's validation loss on the same samples"
run "$SLUICE" eval "$T/ck" --data "$DATA" --samples 32 --batch 8 --device cuda
expect_rc 0
expect_out '"device":"cuda"'
cp "$T/out" "$T/gpu.json"
run python3 - "$T/gpu.json" "$T/log.jsonl" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
v = [json.loads(l) for l in open(sys.argv[2]) if '"valid"' in l][-1]
err = abs(r["loss"] - v["val_loss"]) / v["val_loss"]
print("same" if err <= 1e-4 and r["tokens"] == 32 * 32 else "differ", r["loss"], v["val_loss"], err)
PY
expect_out "same"

case_ "eval --device cuda = --device cpu to bf16 tolerance (loss), exactly (tokens, bytes)"
run "$SLUICE" eval "$T/ck" --data "$DATA" --samples 32 --batch 8 --device cpu
expect_rc 0
expect_out '"device":"cpu"'
cp "$T/out" "$T/cpu.json"
run python3 - "$T/gpu.json" "$T/cpu.json" "$LOSS_RTOL" <<'PY'
import json, sys
g, c = (json.loads(open(p).readline()) for p in sys.argv[1:3])
err = abs(g["loss"] - c["loss"]) / c["loss"]
ok = err <= float(sys.argv[3]) and g["tokens"] == c["tokens"] and g["bytes"] == c["bytes"]
print("close" if ok else "far", g["loss"], c["loss"], err)
PY
expect_out "close"

case_ "--split all on the GPU; --split test is refused with a hint"
run "$SLUICE" eval "$T/ck" --data "$DATA" --samples 16 --split all --device cuda
expect_rc 0
cp "$T/out" "$T/gpu-all.json"
run "$SLUICE" eval "$T/ck" --data "$DATA" --samples 16 --split all --device cpu
expect_rc 0
cp "$T/out" "$T/cpu-all.json"  # run (next) truncates $T/out before python reads it
run python3 - "$T/gpu-all.json" "$T/cpu-all.json" "$LOSS_RTOL" <<'PY'
import json, sys
g, c = json.loads(open(sys.argv[1]).readline()), json.loads(open(sys.argv[2]).readline())
print("close" if abs(g["loss"] - c["loss"]) <= float(sys.argv[3]) * c["loss"] and g["bytes"] == c["bytes"] else "far", g, c)
PY
expect_out "close"
run "$SLUICE" eval "$T/ck" --data "$DATA" --samples 16 --split test --device cuda
expect_rc 2
expect_err "--split test: the GPU scores the valid split or all"

case_ "eval --device cuda --tasks: the same scores as --device cpu"
run "$SLUICE" eval "$T/ck" --tasks "$T/likes.jsonl" --device cuda --details "$T/det-g.jsonl"
expect_rc 0
sed 's/,"items_per_s":[^}]*//' "$T/out" > "$T/tasks-g.json"
run "$SLUICE" eval "$T/ck" --tasks "$T/likes.jsonl" --device cpu --details "$T/det-c.jsonl"
expect_rc 0
sed 's/,"items_per_s":[^}]*//' "$T/out" > "$T/tasks-c.json"
cmp -s "$T/tasks-g.json" "$T/tasks-c.json" && ok || fail "task scores differ between devices"
cmp -s "$T/det-g.jsonl" "$T/det-c.jsonl" && ok || fail "per-choice log-likelihoods differ"

finish
