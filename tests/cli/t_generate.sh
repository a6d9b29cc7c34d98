#!/usr/bin/env bash
# sluice generate: usage and docs, greedy decoding against the numpy model (full forward
# pass per token, no cache), seeds, the greedy settings, a model trained on a cycle of ids
# continues it (past its context window), text through the data's tokenizer, bad input.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ORACLE="$ROOT/tests/oracle"
MODELS="$ROOT/configs/models"
QUICK=(train.seq_len=32 train.micro_batch_size=2 train.global_batch_size=2 eval.interval=0 -q)

case_ "generate -h: usage on stdout, the docs page shows it verbatim"
run "$SLUICE" generate -h
expect_rc 0
expect_out "usage: sluice generate CHECKPOINT --prompt TEXT [options]"
doc="$ROOT/docs/commands/generate.md"
block=$(awk '/^## Usage/{u=1; next} u && /^```text/{b=1; next} b && /^```/{exit} b' "$doc")
expect_eq "$block" "$(cat "$T/out")" "(docs/commands/generate.md ## Usage)"
for opt in $(grep -o -- '--[a-z][a-z-]*' "$T/out" | sort -u); do
    grep -q -- "\`[^\`]*$opt" "$doc" && ok || fail "$opt is not described in docs/commands/generate.md"
done

case_ "usage errors exit 2"
run "$SLUICE" generate
expect_rc 2; expect_err "no checkpoint given"
run "$SLUICE" generate "$T" --top-p 1.5
expect_rc 2; expect_err "--top-p must be in [0, 1]"
run "$SLUICE" generate "$T" --ids
expect_rc 2; expect_err "--ids needs --prompt"
run "$SLUICE" generate "$T" --temperature -1 -p x
expect_rc 2; expect_err "--temperature must be 0 or more"

case_ "a bad checkpoint path is a clear error, exit 1"
run "$SLUICE" generate "$T/nowhere" -p x
expect_rc 1; expect_err "cannot open checkpoint '$T/nowhere'"
mkdir -p "$T/empty"
run "$SLUICE" generate "$T/empty" -p x
expect_rc 1; expect_err "'$T/empty' holds no checkpoint"

# ---- random-init models against the oracle -------------------------------------------
for m in tiny-gpt tiny-llama; do
    run "$SLUICE" train "$MODELS/$m.yaml" data=synthetic model.vocab_size=256 train.steps=1 \
        "${QUICK[@]}" checkpoint.dir="$T/$m"
    expect_rc 0
    case_ "$m: greedy decoding = the arg max of the numpy model's full forward pass"
    run "$SLUICE" generate "$T/$m" --ids -p "5 17 200" -n 40 --temperature 0
    expect_rc 0
    expect_eq "$(wc -w < "$T/out")" 43
    greedy=$(cat "$T/out")
    run "$PY" "$ORACLE/check_generate.py" "$T/$m/step-00000001" "5 17 200" "$greedy"
    expect_rc 0
    expect_out "greedy: 40 tokens"
    expect_out " 0 mismatches"
    case_ "$m: top-p 0 and top-k 1 are greedy too"
    for opt in "--top-p 0 --seed 9" "--top-k 1 --temperature 2"; do
        # shellcheck disable=SC2086
        run "$SLUICE" generate "$T/$m" --ids -p "5 17 200" -n 40 $opt
        expect_rc 0
        expect_eq "$(cat "$T/out")" "$greedy" "($opt)"
    done
    case_ "$m: same seed, same tokens; another seed, other tokens"
    run "$SLUICE" generate "$T/$m" --ids -p "5 17 200" -n 40 --temperature 1 --top-k 0 --seed 7
    a=$(cat "$T/out")
    run "$SLUICE" generate "$T/$m" --ids -p "5 17 200" -n 40 --temperature 1 --top-k 0 --seed 7
    expect_eq "$(cat "$T/out")" "$a"
    run "$SLUICE" generate "$T/$m" --ids -p "5 17 200" -n 40 --temperature 1 --top-k 0 --seed 8
    [ "$(cat "$T/out")" != "$a" ] && ok || fail "seeds 7 and 8 gave the same tokens"
    [ "$a" != "$greedy" ] && ok || fail "sampling gave the greedy tokens"
done

case_ "ids beyond the vocabulary are refused"
run "$SLUICE" generate "$T/tiny-gpt" --ids -p "5 256"
expect_rc 2; expect_err "'256' is not a token id below 256"

# ---- a model that learned a cycle continues it --------------------------------------
case_ "tiny-gpt trained on the cycle 10 11 12 13 14 continues it greedily, past its context"
"$PY" -c "
import json
for d in range(20): print(json.dumps([[10 + i % 5 for i in range(200)]]))" |
    "$PY" "$ROOT/tests/cli/megatron_idx.py" write "$T/cyc" uint16
run "$SLUICE" train "$MODELS/tiny-gpt.yaml" data.prefix="$T/cyc" data.cache_dir="$T/cache" \
    model.vocab_size=64 model.max_position_embeddings=32 train.seq_len=32 train.micro_batch_size=4 \
    train.global_batch_size=4 train.steps=40 optim.warmup_steps=5 eval.interval=0 \
    checkpoint.dir="$T/cyc-ck" log.interval=40
expect_rc 0
run "$SLUICE" generate "$T/cyc-ck" --ids -p "12 13" -n 100 --temperature 0
expect_rc 0
want=$(python3 -c "print(' '.join(str(10 + (2 + i) % 5) for i in range(102)))")
expect_eq "$(cat "$T/out")" "$want"
run "$SLUICE" generate "$T/cyc-ck" --ids -p "12 13 14" -n 20 --temperature 0.3 --seed 3
expect_rc 0
expect_eq "$(cat "$T/out")" "12 13 14 10 11 12 13 14 10 11 12 13 14 10 11 12 13 14 10 11 12 13 14"

# ---- text --------------------------------------------------------------------------
TF="$FIX/tokenizer"
mkdir -p "$T/gpt2" "$T/d"
zstd -q -d "$TF/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$TF/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
python3 -c "
import json
for d in range(20): print(json.dumps({'text': 'one two three four ' * 20}))" > "$T/text.jsonl"
run "$SLUICE" tokenize -q --tokenizer "gpt2:$T/gpt2" --append-eod --out "$T/d/text" "$T/text.jsonl"
expect_rc 0
run "$SLUICE" train "$MODELS/tiny-gpt.yaml" data.prefix="$T/d/text_text_document" \
    data.cache_dir="$T/cache" train.steps=1 "${QUICK[@]}" checkpoint.dir="$T/text-ck"
expect_rc 0
case_ "text: the tokenizer is the training data's, carried by the checkpoint"
run "$SLUICE" generate "$T/text-ck" -p "one two" -n 8 --seed 3
expect_rc 0
expect_err "tokenizer 'gpt2:$T/text-ck/step-00000001' (the training data's, from the checkpoint)"
expect_err "tokens generated in"
head -c 7 "$T/out" | grep -qx "one two" && ok || fail "the prompt is not echoed first"
auto=$(cat "$T/out")
case_ "text: --tokenizer gives the same"
run "$SLUICE" generate "$T/text-ck" -p "one two" -n 8 --seed 3 --tokenizer "gpt2:$T/gpt2" -q
expect_rc 0
expect_eq "$(cat "$T/out")" "$auto"
expect_err_empty
case_ "text: the continuation is the decoded ids of an --ids run"
# GPT-2's byte <-> unicode table, to decode ids with encoder.json alone
G2="
import json, sys
enc = json.load(open(sys.argv[1]))
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
back = {chr(c): b for b, c in zip(bs, cs)}
inv = {v: k for k, v in enc.items()}
if sys.argv[2] == 'encode':
    print(enc['one'], enc[chr(288) + 'two'])
else:
    sys.stdout.buffer.write(bytes(back[ch] for i in sys.argv[3].split() for ch in inv[int(i)]))
"
prompt_ids=$("$PY" -c "$G2" "$T/gpt2/encoder.json" encode)
run "$SLUICE" generate "$T/text-ck" -p "one two" -n 8 --seed 3 --ignore-eod -q
expect_rc 0
text=$(cat "$T/out")
run "$SLUICE" generate "$T/text-ck" --ids -p "$prompt_ids" -n 8 --seed 3 -q
expect_rc 0
ids=$(cut -d' ' -f3- "$T/out")
expect_eq "$(wc -w <<< "$ids")" 8
expect_eq "$text" "one two$("$PY" -c "$G2" "$T/gpt2/encoder.json" decode "$ids")"
case_ "text: a checkpoint of synthetic data needs --tokenizer"
run "$SLUICE" generate "$T/tiny-gpt" -p "one two"
expect_rc 2
expect_err "no tokenizer is recorded"; expect_err "hint: give --tokenizer"

case_ "a damaged checkpoint is refused with the file named"
cp -r "$T/tiny-gpt" "$T/bad"
head -c 3000 "$T/tiny-gpt/step-00000001/model.safetensors" > "$T/bad/step-00000001/model.safetensors"
run "$SLUICE" generate "$T/bad" --ids -p "1"
expect_rc 1
expect_err "cannot load checkpoint"; expect_err "model.safetensors"

finish
