#!/usr/bin/env bash
# sluice export hf writes a tokenizer that transformers' AutoTokenizer loads and that gives
# the ids `sluice tokenize` wrote, with and without add_special_tokens, for every kind of
# tokenizer sluice reads or trains: SentencePiece unigram and BPE (trained by `sluice
# tokenizer train` the way the demo does, and published models), GPT-2, tiktoken ranks,
# Hugging Face tokenizer.json files and BERT vocab.txt (bert:, bert-lower:); on the
# reference texts and on the demo's documents.
# The differences that remain (SentencePiece unigram ties, decomposed text under a
# character map) are each checked to be of that sort (tests/oracle/check_export_tokenizer.py;
# docs/tokenizers.md, "Exported tokenizers"). Also: checkpoints carry their tokenizer, a
# relative tokenizer path in another directory is no longer lost, a missing tokenizer stops
# train at start. Without transformers (tests/requirements.txt), the ids are not compared
# and the test says so; every file and field of the export is still checked.
# sanitizer build: skip (Python oracle; the export's C code runs under the sanitizers in t_train_facts.sh)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TF="$FIX/tokenizer"
HF="$FIX/hf"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=true
HAVE_TF=0
"$PY" -c "import transformers" 2>/dev/null && HAVE_TF=1

# the reference texts: handwritten edge cases, naughty strings, UDHR, news (cases.jsonl)
# and the SentencePiece cases; the demo's documents and tokenizer: configs/pipelines/demo.yaml
# up to its tokenize stage (unigram, 2,048 pieces, byte fallback)
{ zstd -q -d -c "$TF/cases.jsonl.zst"; zstd -q -d -c "$TF/sentencepiece_cases.jsonl.zst"; } |
    "$PY" -c "import json, sys
for l in sys.stdin: print(json.dumps({'text': json.loads(l)['text']}))" > "$T/ref.jsonl"
case_ "the demo's pipeline up to tokenize"
run "$SLUICE" run -q "$ROOT/configs/pipelines/demo.yaml" work_dir="$T/demo" \
    'stages=[extract,clean,filter,dedup_exact,dedup_fuzzy,tokenizer_train,tokenize]'
expect_rc 0
zstd -q -d -c "$T"/demo/dedup_fuzzy/part-*.jsonl.zst > "$T/demo.jsonl"
cp "$T/demo/tokenizer_train/tokenizer.model" "$T/uni.model"
for m in c4_en_301_5Mexp2_spm test_model test_ja_model spm_uni_id spm_bpe_noesc; do
    zstd -q -d -c "$TF/$m.model.zst" > "$T/$m.model"
done
for r in r50k_base cl100k_base o200k_base; do zstd -q -d -c "$TF/$r.tiktoken.zst" > "$T/$r.tiktoken"; done
"$PY" "$ROOT/tests/oracle/bert_cases.py" vocab "$HF/bert_uncased.json.zst" "$T/bert_vocab.txt"
mkdir -p "$T/gpt2"
zstd -q -d "$TF/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$TF/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"

case_ "tokenizer train: a BPE with byte fallback on the demo's documents"
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 2048 --byte-fallback --seed 1 \
    --threads 2 --out "$T/bpe" "$T/demo.jsonl"
expect_rc 0

# name kind spec: every tokenizer the test exports (all on the reference texts; those
# marked + on the demo's documents too)
TOKS=(
    "uni+ spm-uni spm:$T/uni.model"
    "bpe+ spm-bpe spm:$T/bpe.model"
    "c4+ spm-bpe spm:$T/c4_en_301_5Mexp2_spm.model"
    "test_model spm-uni spm:$T/test_model.model"
    "test_ja spm-uni spm:$T/test_ja_model.model"
    "uni_id spm-uni spm:$T/spm_uni_id.model"
    "bpe_noesc spm-bpe spm:$T/spm_bpe_noesc.model"
    "gpt2+ exact gpt2:$T/gpt2"
    "r50k exact tiktoken:$T/r50k_base.tiktoken"
    "cl100k+ exact tiktoken:$T/cl100k_base.tiktoken"
    "o200k exact tiktoken:$T/o200k_base.tiktoken"
)
for h in neox_gpt2+ gpt_neox_20b bert_base_uncased+ llama3_style qwen2_style o200k_style bert_uncased bert_cased; do
    TOKS+=("$h exact hf:$HF/${h%+}.json.zst")
done
TOKS+=("megatron_bert_lower+ exact bert-lower:$T/bert_vocab.txt" "megatron_bert exact bert:$T/bert_vocab.txt")

ref_args=() demo_args=()
for t in "${TOKS[@]}"; do
    read -r name kind spec <<<"$t"
    demo=0
    [ "${name%+}" != "$name" ] && demo=1 && name=${name%+}
    case_ "export hf --tokenizer $name: written alone, no BOS added, special tokens as sluice reads them"
    run "$SLUICE" export hf --out "$T/hf-$name" --tokenizer "$spec"
    expect_rc 0
    expect_file "$T/hf-$name/tokenizer_config.json"
    expect_no_file "$T/hf-$name/config.json"
    cfg="$T/hf-$name/tokenizer_config.json"
    # hf: tokenizers find added tokens in the text (as the tokenizers library); the others
    # read a special token's text as text
    split=True
    [ "${spec%%:*}" = hf ] && split=False
    expect_eq "$(json "$cfg" "m['add_bos_token'], m['add_eos_token'], m['split_special_tokens']")" \
        "False False $split"
    case "${spec%%:*}" in
    gpt2) expect_file "$T/hf-$name/vocab.json"; expect_file "$T/hf-$name/merges.txt" ;;
    bert*) expect_eq "$(json "$T/hf-$name/tokenizer.json" "m['post_processor'], m['model']['type']")" "None WordPiece" ;;
    spm)
        expect_file "$T/hf-$name/tokenizer.model"
        expect_eq "$(json "$T/hf-$name/tokenizer.json" "m['model']['type'], m['post_processor']")" \
            "$([ "$kind" = spm-uni ] && echo Unigram || echo BPE) None"
        ;;
    # tiktoken ranks: the ByteLevel post-processor of a saved byte-level BPE adds no token
    tiktoken) expect_eq "$(json "$T/hf-$name/tokenizer.json" "(m['post_processor'] or {}).get('type'), m['truncation']")" "ByteLevel None" ;;
    hf) expect_eq "$(json "$T/hf-$name/tokenizer.json" "m['post_processor'], m['truncation'], m['padding']")" "None None None" ;;
    esac
    for c in ref demo; do
        [ $c = demo ] && [ $demo = 0 ] && continue
        run "$SLUICE" tokenize -q --tokenizer "$spec" --out "$T/t-$name-$c" "$T/$c.jsonl"
        expect_rc 0
        [ $c = ref ] && ref_args+=("$kind:$T/hf-$name:$T/t-$name-ref_text_document")
        [ $c = demo ] && demo_args+=("$kind:$T/hf-$name:$T/t-$name-demo_text_document")
    done
done

if [ $HAVE_TF = 1 ]; then
    for c in ref demo; do
        case_ "AutoTokenizer gives sluice's ids on the $c texts (every tokenizer)"
        args=("${ref_args[@]}")
        [ $c = demo ] && args=("${demo_args[@]}")
        run "$PY" "$ROOT/tests/oracle/check_export_tokenizer.py" "$T/$c.jsonl" "${args[@]}"
        expect_rc 0
        sed 's/^/  /' "$T/out"
    done
else
    echo "skip: AutoTokenizer's ids (transformers not importable; tests/requirements.txt)"
fi

case_ "a word model has no tokenizers equivalent: refused, nothing written"
head -50 "$T/demo.jsonl" > "$T/small.jsonl"
run "$SLUICE" tokenizer train --model-type word --vocab-size 300 --threads 1 --out "$T/word" "$T/small.jsonl"
expect_rc 0
run "$SLUICE" export hf --out "$T/hf-word" --tokenizer "spm:$T/word.model"
expect_rc 1
expect_err "only unigram and BPE models"
expect_no_file "$T/hf-word/tokenizer_config.json"

# --- the demo's path: a relative tokenizer in one directory, train in another ----------
mkdir -p "$T/a" "$T/b"
cp "$T/uni.model" "$T/a/tok.model"
head -300 "$T/demo.jsonl" > "$T/a/d.jsonl"
case_ "tokenize records the tokenizer with an absolute path"
(cd "$T/a" && "$SLUICE" tokenize -q --append-eod --tokenizer spm:tok.model --out tokens/d d.jsonl)
expect_eq "$(json "$T/a/tokens/d.manifest.json" "m['settings']['tokenizer']")" "spm:$(realpath "$T/a/tok.model")"

TRAIN=(train.steps=1 train.seq_len=32 train.micro_batch_size=2 train.global_batch_size=2
       eval.interval=0 model.num_layers=1 train.resume=none)
case_ "train from another directory: the checkpoint carries the tokenizer"
(cd "$T/b" && "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" "${TRAIN[@]}" \
    data.prefix=../a/tokens/d_text_document data.cache_dir=cache checkpoint.dir=ck >"$T/out" 2>"$T/err") && rc=0 || rc=$?
expect_rc 0
step="$T/b/ck/step-00000001"
cmp -s "$T/a/tok.model" "$step/tokenizer.model" && ok || fail "the step directory lacks the tokenizer"
expect_eq "$(json "$step/checkpoint.json" "m['data']['tokenizer_copy']")" "spm:tokenizer.model"

case_ "export hf from the checkpoint, its tokenizer's original gone"
mv "$T/a/tok.model" "$T/a/moved.model"
run "$SLUICE" export hf --out "$T/hf-ck" "$T/b/ck"
expect_rc 0
expect_err "spm:$(realpath "$step")/tokenizer.model"
expect_eq "$(json "$T/hf-ck/config.json" "m['eos_token_id']")" "3"
if [ $HAVE_TF = 1 ]; then
    (cd "$T/a" && "$SLUICE" tokenize -q --tokenizer spm:moved.model --out tokens/plain d.jsonl)
    run "$PY" "$ROOT/tests/oracle/check_export_tokenizer.py" "$T/a/d.jsonl" \
        "spm-uni:$T/hf-ck:$T/a/tokens/plain_text_document"
    expect_rc 0
fi

# HellaSwag through transformers as lm-evaluation-harness scores it equals sluice eval: the
# same ids for every context and ending, the same log-likelihoods, acc and acc_norm
TPY=${SLUICE_TORCH_PY:-$PY}
if "$TPY" -c "import torch, transformers" 2>/dev/null; then
    case_ "HellaSwag through the export in transformers equals sluice eval"
    "$PY" - "$T/hs.jsonl" <<'PY'
import json, sys
rows = [("Cooking", "A woman is standing in a kitchen.", "she", ["puts a pan on the stove and pours in oil.", "throws the pan out of the window.", "starts to paint the walls blue.", "jumps into the sink."]),
        ("Reading", "A girl opens a book in the library.", "she", ["turns the pages and reads quietly.", "shouts at the librarian [title] loudly.", "tears out the pages to make a hat.", "throws the book at the window."]),
        ("Skiing", "A skier stands at the top of a snowy hill.", "the skier", ["pushes off and glides down the slope.", "takes off the skis and swims down.", "plants tomatoes in the snow.", "climbs a tree on the hill."]),
        ("Café", "Un homme entre dans un café à Zürich.", "il", ["commande un thé et s'assoit près de la fenêtre.", "danse sur le comptoir.", "peint le plafond en vert.", "nage dans la tasse."])]
with open(sys.argv[1], "w") as f:
    for i, (lab, a, b, ends) in enumerate(rows):
        f.write(json.dumps({"ind": i, "activity_label": lab, "ctx_a": a, "ctx_b": b, "ctx": a + " " + b,
                            "endings": ends, "label": 0, "split": "val"}) + "\n")
PY
    run "$SLUICE" eval "$T/b/ck" --tasks "$T/hs.jsonl" --details "$T/hs-det.jsonl"
    expect_rc 0
    cp "$T/out" "$T/hs-res.json"
    run "$TPY" "$ROOT/tests/oracle/check_hf_eval.py" "$T/hf-ck" "$T/hs.jsonl" "$T/hs-det.jsonl" "$T/hs-res.json"
    expect_rc 0
    sed 's/^/  /' "$T/out"
else
    echo "skip: HellaSwag through transformers (torch not importable; set SLUICE_TORCH_PY)"
fi

case_ "a tokenizer missing at train time is an error then, naming the manifest"
(cd "$T/b" && "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" "${TRAIN[@]}" \
    data.prefix=../a/tokens/d_text_document data.cache_dir=cache checkpoint.dir=ck2 >"$T/out" 2>"$T/err") && rc=0 || rc=$?
expect_rc 2
expect_err "the data's tokenizer is missing"
expect_err "d.manifest.json"
expect_no_file "$T/b/ck2"

finish
