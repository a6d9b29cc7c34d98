#!/usr/bin/env bash
# sluice tokenize --tokenizer bert:vocab.txt / bert-lower:vocab.txt: the .bin/.idx, ids,
# end-of-document id, vocabulary size and decoding of Megatron-LM's BertWordPieceCase and
# BertWordPieceLowerCase tokenizers, compared with a Python port of them
# (tests/oracle/megatron_bert.py; the port itself is checked against transformers' Python
# BERT tokenizer) on the reference texts, every UDHR document, hard cases and nearly every
# code point; the spec in the pipeline, export, generate; malformed vocab.txt files refused
# with the file and the line named. The comparisons need .venv (numpy, transformers).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ORA="$ROOT/tests/oracle"
MIDX="$ROOT/tests/cli/megatron_idx.py"
mkdir -p "$T/in" "$T/v" "$T/bad"
zstd -q -d -c "$FIX/tokenizer/cases.jsonl.zst" > "$T/in/cases.jsonl"
zstd -q -d -c "$FIX/dedup/udhr.jsonl.zst" > "$T/in/udhr.jsonl"

case_ "-h of tokenize, dataset, generate, eval and export names the bert: and bert-lower: specs"
for c in tokenize dataset generate eval "export hf"; do
    run "$SLUICE" $c -h
    expect_rc 0; expect_out "bert:vocab.txt bert-lower:vocab.txt"
done

# ---- malformed vocab.txt and specs: no Python needed ----------------------------------
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n' > "$T/bad/ok.txt"
bad_vocab() { # NAME CONTENT(printf format)
    printf "$2" > "$T/bad/$1.txt"
}
bad_vocab dup '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\na\nthe\n'
bad_vocab blank '[PAD]\n[UNK]\n[CLS]\n\n[SEP]\n[MASK]\n'
bad_vocab spaces '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n \t \n'
bad_vocab latin1 '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncaf\xe9\n'
bad_vocab nomask '[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n'
bad_vocab bom '\xef\xbb\xbf[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n'
: > "$T/bad/empty.txt"
truncate -s 300M "$T/bad/huge.txt"
check_bad() { # NAME WHAT...
    local f=$1; shift
    case_ "malformed vocab.txt: $f"
    run "$SLUICE" tokenize -q --tokenizer "bert-lower:$T/bad/$f.txt" --out "$T/bad/o_$f" "$T/bad/ok.txt"
    expect_rc 1
    expect_err "cannot load vocabulary '$T/bad/$f.txt'"
    for w in "$@"; do expect_err "$w"; done
    expect_no_file "$T/bad/o_${f}_text_document.bin"
}
check_bad dup "line 8: token 'the' is also line 6"
check_bad blank "line 4: empty token" "hint: is there a blank line?"
check_bad spaces "line 6: empty token"
check_bad latin1 "line 6: not valid UTF-8 (byte 34 of the file)"
check_bad nomask "no '[MASK]' token" "[CLS], [SEP], [PAD], [MASK] and [UNK]"
check_bad bom "no '[PAD]' token" "byte order mark"
check_bad empty "no tokens"
check_bad huge "larger than 256 MiB"
rm -f "$T/bad/huge.txt"

case_ "bad specs: an unknown option, a count that is not one, no path, an unknown kind"
printf '{"text":"the"}\n' > "$T/in/the.jsonl"
run "$SLUICE" tokenize --tokenizer "bert,extra=3:$T/bad/ok.txt" --out "$T/bad/s" "$T/in/the.jsonl"
expect_rc 2; expect_err "bert: takes no option 'extra'"; expect_err "extra-ids=N"
run "$SLUICE" tokenize --tokenizer "bert-lower,extra-ids=x:$T/bad/ok.txt" --out "$T/bad/s" "$T/in/the.jsonl"
expect_rc 2; expect_err "extra-ids needs a count: extra-ids=N"
run "$SLUICE" tokenize --tokenizer "spm,extra-ids=1:$T/bad/ok.txt" --out "$T/bad/s" "$T/in/the.jsonl"
expect_rc 2; expect_err "spm: takes no option 'extra-ids'"
run "$SLUICE" tokenize --tokenizer "bert:" --out "$T/bad/s" "$T/in/the.jsonl"
expect_rc 2; expect_err "unknown tokenizer 'bert:'"; expect_err "bert-lower:vocab.txt"

if [ ! -x "$ROOT/.venv/bin/python" ]; then
    echo "  (skipped: the comparisons with the Python port need .venv with numpy and transformers)"
    finish
    exit
fi
PY="$ROOT/.venv/bin/python"

# ---- the vocabularies and texts ------------------------------------------------------
# Google's bert-base-uncased vocabulary (30522 tokens) and the trained multilingual ones
for v in bert_base_uncased bert_cased bert_uncased; do
    "$PY" "$ORA/bert_cases.py" vocab "$FIX/hf/$v.json.zst" "$T/v/$v.txt"
done
"$PY" "$ORA/bert_cases.py" hard "$T/in/hard.jsonl"
pair() { # SPEC VOCAB CASE PREFIX [sluice options] -- port options -- INPUTS...
    local spec=$1 vocab=$2 c=$3 pre=$4; shift 4
    local sopt=() popt=()
    while [ "$1" != -- ]; do sopt+=("$1"); shift; done; shift
    while [ "$1" != -- ]; do popt+=("$1"); shift; done; shift
    run "$SLUICE" tokenize -q "${sopt[@]}" --tokenizer "$spec:$vocab" --out "$T/s_$pre" "$@"
    expect_rc 0
    "$PY" "$ORA/megatron_bert.py" encode "$vocab" "$c" "${popt[@]}" "$@" "$T/p_${pre}_text_document"
    for e in bin idx; do
        cmp -s "$T/s_${pre}_text_document.$e" "$T/p_${pre}_text_document.$e" && ok ||
            fail "$spec with $(basename "$vocab"): the .$e differs from the port's (Megatron's)"
    done
}

case_ "bert-lower: with bert-base-uncased, --append-eod: Megatron's .bin/.idx for the reference texts, every UDHR document and the hard cases"
pair bert-lower "$T/v/bert_base_uncased.txt" lower bbu --append-eod --workers 3 -- --append-eod -- \
    "$T/in/cases.jsonl" "$T/in/udhr.jsonl" "$T/in/hard.jsonl"
case_ "bert: (cased) with a multilingual cased vocabulary, --append-eod: the same"
pair bert "$T/v/bert_cased.txt" cased bc --append-eod --workers 3 -- --append-eod -- \
    "$T/in/cases.jsonl" "$T/in/udhr.jsonl" "$T/in/hard.jsonl"
case_ "bert: with bert-base-uncased, no EOD"
pair bert "$T/v/bert_base_uncased.txt" cased bbc -- -- "$T/in/hard.jsonl"

case_ "the EOD is Megatron's eod ([EOS], added after the file's tokens); vocab_size as Megatron reports it"
expect_eq "$(json "$T/s_bbu.manifest.json" "m['settings']['vocab_size'], m['settings']['eod_id'], m['settings']['dtype']")" \
    "$("$PY" "$ORA/megatron_bert.py" info "$T/v/bert_base_uncased.txt" lower | "$PY" -c "import json,sys; m=json.load(sys.stdin); print(m['vocab_size'], m['eod'], 'uint16')")"

# every code point not a Lo letter, unassigned or private (and every 31st of those), in
# contexts, with a vocabulary of single characters: the ids show each output character
if [ "$("$PY" -c 'import unicodedata; print(unicodedata.unidata_version)')" = \
     "$(sed -n 's/^#define BERT_UNICODE_VERSION "\(.*\)"$/\1/p' "$ROOT/tokenize/bert_unicode_table.h")" ]; then
    "$PY" "$ORA/bert_cases.py" chars "$T/in/chars.jsonl" "$T/v/chars.txt"
    case_ "nearly every code point, both casings: the port's characters"
    pair bert "$T/v/chars.txt" cased ch -- -- "$T/in/chars.jsonl"
    pair bert-lower "$T/v/chars.txt" lower chl -- -- "$T/in/chars.jsonl"
else
    echo "  (skipped the code point comparison: .venv's Python has another Unicode version than tokenize/bert_unicode_table.h)"
fi

case_ "the port agrees with transformers' Python BERT tokenizer (NFC off; texts with Cn, Co, Cs left out)"
run "$PY" "$ORA/bert_cases.py" transformers --head 1000 "$T/v/bert_base_uncased.txt:lower" \
    "$T/v/bert_cased.txt:cased" -- "$T/in/cases.jsonl" "$T/in/udhr.jsonl" "$T/in/hard.jsonl"
expect_rc 0; expect_out "bert_base_uncased.txt lower: agree 8"; expect_out "bert_cased.txt cased: agree 8"

case_ "dataset cat decodes as Megatron's detokenize"
"$PY" "$MIDX" dump "$T/s_bc_text_document" > "$T/bc.ids"
"$PY" "$ORA/megatron_bert.py" decode "$T/v/bert_cased.txt" cased "$T/bc.ids" > "$T/bc.want"
run "$SLUICE" dataset cat --jsonl "$T/s_bc_text_document"
expect_rc 0
"$PY" - "$T/out" "$T/bc.want" <<'PY' && ok || fail "decoded texts differ from the port's"
import json, sys
got = [json.loads(l)["text"] for l in open(sys.argv[1], encoding="utf-8")]
want = [json.loads(l)["text"] for l in open(sys.argv[2], encoding="utf-8")]
assert len(got) == len(want) > 700 and got == want, [(a, b) for a, b in zip(got, want) if a != b][:3]
PY

case_ "extra-ids=100 (--vocab-extra-ids 100): <extra_id_N> after [BOS] [EOS], decoded; the ids of text unchanged"
pair bert-lower,extra-ids=100 "$T/v/bert_uncased.txt" lower x100 --append-eod -- --append-eod --extra-ids 100 -- \
    "$T/in/hard.jsonl"
info=$("$PY" "$ORA/megatron_bert.py" info "$T/v/bert_uncased.txt" lower --extra-ids 100)
expect_eq "$(json "$T/s_x100.manifest.json" "m['settings']['vocab_size']")" \
    "$(echo "$info" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['vocab_size'])")"
echo "$info" | "$PY" -c "import json,sys; m=json.load(sys.stdin); print(json.dumps({'ids': [m['bos'], m['extra'][0], m['extra'][99], m['eos'], m['cls'], m['mask']]}))" > "$T/x.ids"
"$PY" "$MIDX" write "$T/x_text_document" uint16 <<< "[$(json "$T/x.ids" "m['ids']")]"
run "$SLUICE" dataset cat --tokenizer "bert-lower,extra-ids=100:$T/v/bert_uncased.txt" "$T/x_text_document"
expect_rc 0; expect_out "[BOS] <extra_id_0> <extra_id_99> [EOS] [CLS] [MASK]"

case_ "vocab.txt with CRLF and lone CR line ends, spaces around tokens: Python's text mode and strip()"
"$PY" - "$T/v/bert_uncased.txt" "$T/v/crlf.txt" <<'PY'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]
ends = ["\r\n", "\r", "\n", " \t\r\n", "\u3000\n"]
with open(sys.argv[2], "w", encoding="utf-8", newline="") as f:
    f.write("".join((" " if i % 7 == 0 else "") + t + ends[i % 5] for i, t in enumerate(lines)))
PY
pair bert-lower "$T/v/crlf.txt" lower crlf -- -- "$T/in/cases.jsonl"

case_ "the pipeline's tokenize: key takes the spec, its path beside the pipeline file"
cp "$T/v/bert_uncased.txt" "$T/vocab.txt"
head -50 "$T/in/cases.jsonl" > "$T/in/p.jsonl"
cat > "$T/p.yaml" <<EOF
name: b
work_dir: $T/w
tokenize:
  in: $T/in/p.jsonl
  tokenizer: bert-lower,extra-ids=3:vocab.txt
  append_eod: true
EOF
run "$SLUICE" run -q "$T/p.yaml"
expect_rc 0
expect_eq "$(json "$T/w/tokenize/b.manifest.json" "m['settings']['tokenizer']")" "bert-lower,extra-ids=3:$T/vocab.txt"
pair bert-lower,extra-ids=3 "$T/vocab.txt" lower pl --append-eod -- --append-eod --extra-ids 3 -- "$T/in/p.jsonl"
cmp -s "$T/w/tokenize/b_text_document.bin" "$T/s_pl_text_document.bin" && ok || fail "the pipeline wrote other tokens"

case_ "export hf --tokenizer bert-lower: the tokenizers library reads tokenizer.json and gives the same ids"
run "$SLUICE" export hf --out "$T/hf" --tokenizer "bert-lower:$T/v/bert_base_uncased.txt"
expect_rc 0; expect_err "tokenizer.json + vocab.txt + tokenizer_config.json"
cmp -s "$T/hf/vocab.txt" "$T/v/bert_base_uncased.txt" && ok || fail "exported vocab.txt differs"
"$PY" - "$T/hf" "$T/in/cases.jsonl" "$T/in/udhr.jsonl" "$T/s_bbu_text_document" "$MIDX" <<'PY' && ok || fail "exported tokenizer.json gives other ids"
import json, sys, os
from tokenizers import Tokenizer
sys.path.insert(0, os.path.dirname(sys.argv[5]))
import megatron_idx
t = Tokenizer.from_file(sys.argv[1] + "/tokenizer.json")
t.encode_special_tokens = True  # split_special_tokens: "[CLS]" in a text is text
cfg = json.load(open(sys.argv[1] + "/tokenizer_config.json"))
assert cfg["eos_token"] == "[EOS]" and t.token_to_id("[EOS]") == 30523, cfg
code, lens, ptrs, doc, b = megatron_idx.read(sys.argv[4])
texts = [json.loads(l)["text"] for f in sys.argv[2:4] for l in open(f, encoding="utf-8")]
for d, text in enumerate(texts):
    s, e = doc[d], doc[d + 1]
    want = [int(x) for x in b[ptrs[s] // 2: ptrs[s] // 2 + int(lens[s])]][:-1] if e > s else []
    assert t.encode(text).ids == want, d
PY

case_ "generate: a checkpoint trained on bert-lower data encodes the prompt and decodes with it"
run "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" model.num_layers=1 train.seq_len=32 \
    train.micro_batch_size=2 train.global_batch_size=2 train.steps=1 eval.interval=0 train.resume=none \
    data.prefix="$T/s_x100_text_document" data.cache_dir="$T/cache" checkpoint.dir="$T/ck" -q
expect_rc 0
run "$SLUICE" generate "$T/ck" --prompt "Everyone has the right" --max-tokens 4 --top-k 1
expect_rc 0; expect_out "Everyone has the right"
expect_err "tokenizer 'bert-lower,extra-ids=100:$T/ck/step-00000001/vocab.txt' (the training data's, from the checkpoint)"

finish
