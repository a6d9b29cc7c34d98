#!/usr/bin/env bash
# The trainer reads its data's facts: model.vocab_size from the tokenize manifest (padded to
# 128), a smaller vocabulary is an error naming both sizes, no data is an error (synthetic
# only when asked), a prefix given as the tokenize --out or as the .bin gets a hint naming
# PREFIX_text_document, prefixes of different tokenizers cannot be blended, the checkpoint
# records the tokenizer, the end-of-document id and absolute data paths (generate works from
# another directory), --print-config prints a config that trains, and a resumed run's
# log.file does not repeat the steps after the checkpoint.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CFG="$ROOT/configs/models/tiny-gpt.yaml"
TF="$FIX/tokenizer"
QUICK=(model.num_layers=1 train.seq_len=32 train.micro_batch_size=2 train.global_batch_size=2
       train.steps=2 eval.interval=0 train.resume=none)

# a 1,000-piece SentencePiece model (eos/end of document = 3) and the GPT-2 BPE
zstd -q -d "$TF/botchan.txt.zst" -o "$T/botchan.txt"
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 1000 --threads 1 \
    --input-sentence-size 2000 --out "$T/m" "$T/botchan.txt"
expect_rc 0
mkdir -p "$T/gpt2"
zstd -q -d "$TF/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$TF/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
"$PY" -c "
import json, sys
for l in open(sys.argv[1]):
    l = l.strip()
    if l: print(json.dumps({'text': l}))" "$T/botchan.txt" > "$T/b.jsonl"
mkdir -p "$T/tok"
run "$SLUICE" tokenize -q --tokenizer "spm:$T/m.model" --append-eod --out "$T/tok/web" "$T/b.jsonl"
expect_rc 0
run "$SLUICE" tokenize -q --tokenizer "gpt2:$T/gpt2" --append-eod --out "$T/tok/g" "$T/b.jsonl"
expect_rc 0
P="$T/tok/web_text_document"

case_ "no data is an error naming both ways out; data=synthetic is explicit"
run "$SLUICE" train "$CFG" "${QUICK[@]}"
expect_rc 2
expect_err "no training data: data.prefix is not set"
expect_err "data=synthetic"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix=
expect_rc 2
expect_err "no training data: data.prefix is empty"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data=synthetic
expect_rc 0
expect_err "data: synthetic"

case_ "model.vocab_size comes from the data: 1000 ids, padded to 1024 rows; eod 3"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="$P" data.cache_dir="$T/cache" \
    checkpoint.dir="$T/ck"
expect_rc 0
expect_err "model.vocab_size 1000 from the data, padded to 1024"
ck="$T/ck/step-00000002/checkpoint.json"
expect_eq "$(json "$ck" "m['model']['vocab_size'], m['model']['padded_vocab_size']")" "1000 1024"
expect_eq "$(json "$ck" "m['data']['tokenizer'], m['data']['eod_id'], m['data']['vocab_size'], m['data']['prefix']")" \
    "spm:$(realpath "$T/m.model") 3 1000 $(realpath "$P")"

case_ "a model vocabulary smaller than the data's is an error naming both sizes"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="$P" model.vocab_size=500
expect_rc 2
expect_err "model.vocab_size 500 is smaller than the data's tokenizer"
expect_err "1000 ids"
case_ "a larger one trains, with a warning about the rows never trained"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="$P" data.cache_dir="$T/cache" model.vocab_size=50257
expect_rc 0
expect_err "model.vocab_size 50257 is larger than the data's tokenizer (1000 ids)"

case_ "the tokenize --out or the .bin as data.prefix: a hint names the prefix"
for p in "$T/tok/web" "$T/tok/web.bin"; do
    run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="$p"
    expect_rc 1
    expect_err "data.prefix=$T/tok/web_text_document"
done

case_ "blending prefixes of different tokenizers is an error naming both"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="0.5 $P 0.5 $T/tok/g_text_document"
expect_rc 2
expect_err "were tokenized with different tokenizers"
expect_err "spm:"
expect_err "gpt2:"

case_ "an empty validation split: the hint gives a data.split that works"
head -n 10 "$T/b.jsonl" > "$T/ten.jsonl"
run "$SLUICE" tokenize -q --tokenizer "spm:$T/m.model" --append-eod --out "$T/tok/ten" "$T/ten.jsonl"
expect_rc 0
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="$T/tok/ten_text_document" data.cache_dir="$T/cache" \
    eval.interval=1 eval.iters=1 train.seq_len=8
expect_rc 1
expect_err "hint: data.split=8,1,1 gives each split at least one of its 10 sequences, or eval.interval=0 turns validation off"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="$T/tok/ten_text_document" data.cache_dir="$T/cache" \
    eval.interval=1 eval.iters=1 train.seq_len=8 data.split=8,1,1
expect_rc 0
expect_out "validation at step 2"

case_ "dataset cat / verify take the tokenizer from the manifest; merge keeps one tokenizer"
run "$SLUICE" dataset cat --docs 0 "$P"
expect_rc 0
expect_out "Project Gutenberg's Botchan (Master Darling), by Kin-nosuke Natsume"
run "$SLUICE" dataset verify "$P"
expect_rc 0
expect_out "ids below the size of the manifest's tokenizer spm:$(realpath "$T/m.model")"
run "$SLUICE" dataset merge --out "$T/tok/mixed" "$P" "$T/tok/g_text_document"
expect_rc 1
expect_err "were tokenized with different tokenizers"
expect_no_file "$T/tok/mixed.bin"
run "$SLUICE" dataset merge --out "$T/tok/both_text_document" "$P" "$T/tok/ten_text_document"
expect_rc 0
expect_eq "$(json "$T/tok/both_text_document.manifest.json" "m['settings']['tokenizer_kind'], m['settings']['vocab_size'], m['settings']['eod_id']")" "spm 1000 3"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="$T/tok/both_text_document" data.cache_dir="$T/cache"
expect_rc 0
expect_err "model.vocab_size 1000 from the data"

case_ "Megatron's unweighted multi-path form: prefixes weighed by their tokens"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="$P $T/tok/ten_text_document" data.cache_dir="$T/cache" \
    train.seq_len=8 debug.dump_dir="$T/dump-unw"
expect_rc 0
expect_err "data: 2 prefixes"

case_ "separate splits: NeMo's data.prefix map and Megatron's *_data_path keys"
for form in "data.prefix={train: [$P], validation: [$T/tok/ten_text_document]}" \
            "data.train_data_path=$P|data.valid_data_path=$T/tok/ten_text_document"; do
    IFS='|' read -r -a kv <<<"$form"
    run "$SLUICE" train "$CFG" "${QUICK[@]}" "${kv[@]}" data.cache_dir="$T/cache" train.seq_len=8 \
        eval.interval=2 eval.iters=1 log.file="$T/sep.jsonl"
    expect_rc 0
    expect_out "validation at step 2"
done
# both forms read the same validation samples: the same validation loss
expect_eq "$(grep -c '"valid"' "$T/sep.jsonl")" "2"
expect_eq "$("$PY" -c "
import json, sys
v = [json.loads(l)['val_loss'] for l in open(sys.argv[1]) if '\"valid\"' in l]
print(v[0] == v[1])" "$T/sep.jsonl")" "True"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.train_data_path="$P" data.cache_dir="$T/cache" eval.interval=1
expect_rc 1
expect_err "the run needs validation samples, and the validation split has no prefixes"
expect_err "eval.interval=0 to turn validation off"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.train_data_path="$P" data.cache_dir="$T/cache" eval.interval=0
expect_rc 0

case_ "generate from another directory finds the tokenizer the checkpoint carries"
mkdir -p "$T/elsewhere"
(cd "$T/elsewhere" && "$SLUICE" generate "$T/ck" -p "the" -n 4 --seed 1 >"$T/out" 2>"$T/err") && rc=0 || rc=$?
expect_rc 0
expect_err "spm:$(realpath "$T/ck/step-00000002")/tokenizer.model"

case_ "export hf: SentencePiece data: tokenizer.json + tokenizer.model, tokenizer_config.json, the data's ids"
run "$SLUICE" export hf --out "$T/hf-spm" "$T/ck"
expect_rc 0
cmp -s "$T/m.model" "$T/hf-spm/tokenizer.model" && ok || fail "tokenizer.model differs from the data's model"
# the model's pieces: <pad> 0, <unk> 1, <s> 2, </s> 3 (sluice tokenizer train's defaults)
expect_eq "$(json "$T/hf-spm/config.json" "m['bos_token_id'], m['eos_token_id'], m['vocab_size']")" "2 3 1000"
expect_eq "$(json "$T/hf-spm/generation_config.json" "m['bos_token_id'], m['eos_token_id']")" "2 3"
expect_eq "$(json "$T/hf-spm/tokenizer_config.json" "m['tokenizer_class'], m['bos_token'], m['eos_token'], m['unk_token'], m['add_bos_token']")"     "PreTrainedTokenizerFast <s> </s> <unk> False"
expect_eq "$(json "$T/hf-spm/tokenizer.json" "m['model']['type'], len(m['model']['vocab'])")" "BPE 1000"
expect_eq "$(json "$T/hf-spm/special_tokens_map.json" "m['eos_token']")" "</s>"

case_ "export hf: GPT-2 BPE data: vocab.json + merges.txt, <|endoftext|> = 50256"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="$T/tok/g_text_document" data.cache_dir="$T/cache" \
    checkpoint.dir="$T/ckg"
expect_rc 0
expect_err "model.vocab_size 50257 from the data, padded to 50304"
run "$SLUICE" export hf --out "$T/hf-g" "$T/ckg"
expect_rc 0
cmp -s "$T/gpt2/encoder.json" "$T/hf-g/vocab.json" && ok || fail "vocab.json differs"
cmp -s "$T/gpt2/vocab.bpe" "$T/hf-g/merges.txt" && ok || fail "merges.txt differs"
expect_eq "$(json "$T/hf-g/config.json" "m['bos_token_id'], m['eos_token_id']")" "50256 50256"
expect_eq "$(json "$T/hf-g/tokenizer_config.json" "m['tokenizer_class'], m['eos_token']")" "GPT2Tokenizer <|endoftext|>"

case_ "export hf of synthetic data: no ids, a warning; --tokenizer supplies them"
run "$SLUICE" train "$ROOT/configs/models/tiny-llama.yaml" "${QUICK[@]}" data=synthetic model.vocab_size=1000 \
    checkpoint.dir="$T/cks"
expect_rc 0
run "$SLUICE" export hf --out "$T/hf-s" "$T/cks"
expect_rc 0
expect_err "no tokenizer recorded"
expect_eq "$(json "$T/hf-s/config.json" "m['bos_token_id'], m['eos_token_id']")" "None None"
run "$SLUICE" export hf --out "$T/hf-s2" --tokenizer "spm:$T/m.model" "$T/cks"
expect_rc 0
expect_eq "$(json "$T/hf-s2/config.json" "m['architectures'][0], m['bos_token_id'], m['eos_token_id']")" "LlamaForCausalLM 2 3"
expect_file "$T/hf-s2/tokenizer.model"
run "$SLUICE" export hf --out "$T/hf-s3" --tokenizer "gpt2:$T/gpt2" "$T/cks"
expect_rc 1
expect_err "has 50257 ids, more than the model's vocabulary (1000)"
expect_no_file "$T/hf-s3/model.safetensors"

case_ "--print-config prints the resolved config, which trains as is"
run "$SLUICE" train "$CFG" "${QUICK[@]}" data.prefix="$P" data.cache_dir="$T/cache" --print-config
expect_rc 0
expect_out "vocab_size: 1000  # from the data's tokenize manifest; padded to 1024 rows"
expect_out "  lr: 0.00"
expect_out "decay_style: cosine"
cp "$T/out" "$T/resolved.yaml"
run "$SLUICE" train "$T/resolved.yaml" train.steps=1
expect_rc 0
expect_out "step 1/1"

case_ "resume: log.file holds each step once"
R=("${QUICK[@]}" data.prefix="$P" data.cache_dir="$T/cache" train.steps=4 checkpoint.dir="$T/r"
   checkpoint.interval=2 log.file="$T/r.jsonl" train.resume=auto)
run "$SLUICE" train "$CFG" "${R[@]}"
expect_rc 0
rm -rf "$T/r/step-00000004" # as if the run had died after step 4's log line
run "$SLUICE" train "$CFG" "${R[@]}"
expect_rc 0
expect_err "resumed from"
expect_eq "$("$PY" -c "
import json, sys
print(' '.join(str(json.loads(l)['step']) for l in open(sys.argv[1]) if json.loads(l)['type'] == 'train'))" "$T/r.jsonl")" "1 2 3 4"
expect_no_err "other settings than it was trained with"

case_ "resume with another train.steps: said, with what it changes"
run "$SLUICE" train "$CFG" "${R[@]}" train.steps=6
expect_rc 0
expect_err "resuming '$T/r/step-00000004' with other settings than it was trained with: train.steps 4 -> 6, optim.decay_steps 4 -> 6"

finish
