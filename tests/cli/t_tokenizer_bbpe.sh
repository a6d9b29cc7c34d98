#!/usr/bin/env bash
# sluice tokenizer train --model-type byte-bpe: the merges of a hand-checked corpus; the
# written rank file is read by `sluice tokenize` at once and decodes back to the input;
# the tokenizer.json is the one the `tokenizers` library's BpeTrainer writes on the same
# corpus and gives the same ids (when python tokenizers is installed); mpirun -np 1 and 2
# write the same files.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

zstd -q -d "$FIX/tokenizer/botchan.txt.zst" -o "$T/botchan.txt"
zstd -q -d "$FIX/tokenizer/cases.jsonl.zst" -o "$T/cases.jsonl"

# a Python with the tokenizers library (bench's venv, the test venv, the system's)
HFPY=
for p in "${SLUICE_TOKENIZERS_PY:-}" "$ROOT/.venv-bench/bin/python" "$PY" python3; do
    if [ -n "$p" ] && "$p" -c "import tokenizers" 2>/dev/null; then
        HFPY=$p
        break
    fi
done
[ -n "$HFPY" ] || echo "note: python tokenizers not installed: the comparisons with it are skipped"

case_ "usage"
run "$SLUICE" tokenizer train --model-type byte-bpe --vocab-size 200 --out "$T/x" "$T/botchan.txt"
expect_rc 2; expect_err "at least the 1 special tokens plus the 256 bytes"
run "$SLUICE" tokenizer train --model-type byte-bpe --vocab-size 300 --pattern p50k --out "$T/x" "$T/botchan.txt"
expect_rc 2
run "$SLUICE" tokenizer train --model-type byte-bpe --vocab-size 300 --out "$T/x" "$T/none.txt"
expect_rc 1; expect_err "none.txt"
expect_no_file "$T/x.tiktoken"
run "$SLUICE" tokenizer train --model-type byte-bpe --vocab-size 300 --special-tokens $'<\xff>' --out "$T/x" "$T/botchan.txt"
expect_rc 2; expect_err "--special-tokens is not valid UTF-8"

case_ "no special tokens: the bytes start at id 0"
run "$SLUICE" tokenizer train --model-type byte-bpe --vocab-size 300 --special-tokens '' --out "$T/nosp" "$T/botchan.txt"
expect_rc 0
expect_eq "$(json "$T/nosp.tokenizer.json" "len(m['added_tokens']), m['model']['vocab']['!'], len(m['model']['vocab'])")" "0 0 300"
expect_eq "$(cat "$T/nosp.tiktoken.json")" '{"pattern": "gpt2", "special_tokens": {}}'
run "$SLUICE" tokenize -q --tokenizer "tiktoken:$T/nosp.tiktoken" --out "$T/enc_nosp" "$T/cases.jsonl"
expect_rc 0
expect_eq "$(json "$T/enc_nosp.manifest.json" "m['settings']['vocab_size']")" 300

case_ "a hand-checked corpus: the merges and their tie-break"
for i in $(seq 10); do echo '{"text":"hug"}'; done > "$T/hug.jsonl"
for i in $(seq 5); do echo '{"text":"pug"}'; echo '{"text":"hugs"}'; done >> "$T/hug.jsonl"
for i in $(seq 12); do echo '{"text":"pun"}'; done >> "$T/hug.jsonl"
for i in $(seq 4); do echo '{"text":"bun"}'; done >> "$T/hug.jsonl"
run "$SLUICE" tokenizer train --model-type byte-bpe --vocab-size 400 --out "$T/hug" "$T/hug.jsonl"
expect_rc 0; expect_err "fewer than 400: no more pairs to merge"
expect_eq "$(json "$T/hug.tokenizer.json" "' '.join(a+'+'+b for a, b in m['model']['merges'])")" \
    "u+g u+n h+ug p+un p+ug hug+s b+un"
expect_eq "$(json "$T/hug.tokenizer.json" "m['model']['vocab']['bun'], m['added_tokens'][0]['content']")" \
    "263 <|endoftext|>"
expect_eq "$(cat "$T/hug.tiktoken.json")" '{"pattern": "gpt2", "special_tokens": {"<|endoftext|>": 0}}'
expect_eq "$(tail -1 "$T/hug.tiktoken")" "YnVu 263"

for pat in gpt2 cl100k o200k; do
    case_ "$pat: trained on botchan.txt, cases.jsonl encoded with the ranks decodes back exactly"
    run "$SLUICE" tokenizer train --model-type byte-bpe --pattern $pat --vocab-size 1200 \
        --special-tokens '<|endoftext|>,<pad>' --out "$T/$pat" "$T/botchan.txt"
    expect_rc 0; expect_err "4288 texts"
    expect_file "$T/$pat.tokenizer.json"; expect_file "$T/$pat.tiktoken"
    run "$SLUICE" tokenize -q --tokenizer "tiktoken:$T/$pat.tiktoken" --append-eod --out "$T/enc_$pat" "$T/cases.jsonl"
    expect_rc 0
    expect_eq "$(json "$T/enc_$pat.manifest.json" "m['settings']['eod_id']")" 0
    "$SLUICE" dataset cat --jsonl --tokenizer "tiktoken:$T/$pat.tiktoken" "$T/enc_${pat}_text_document" > "$T/back_$pat"
    "$SLUICE" dataset cat --ids "$T/enc_${pat}_text_document" > "$T/ids_$pat"
    python3 - "$T/cases.jsonl" "$T/back_$pat" "$T/ids_$pat" <<'EOF' && ok || fail "decode(encode(x)) != x"
import json, sys
src = [json.loads(l)['text'] for l in open(sys.argv[1], encoding='utf-8')]
back = [json.loads(l)['text'] for l in open(sys.argv[2], encoding='utf-8')]
ids = [l.split() for l in open(sys.argv[3])]
assert len(src) == len(back) == 741, (len(src), len(back))
for s, b, i in zip(src, back, ids):
    # (an empty document has no tokens, and no end-of-document either)
    assert b == s + '<|endoftext|>' or s == b == '', (s[:60], b[:60])
    assert i[-1:] in (['0'], [])
# compression: fewer tokens than bytes
assert sum(len(i) for i in ids) < sum(len(s.encode()) for s in src) * 0.8
EOF
    if [ -n "$HFPY" ]; then
        # the same ids from the tokenizer.json; and BpeTrainer writes the same file
        "$HFPY" - "$T/$pat.tokenizer.json" "$T/cases.jsonl" "$T/ids_$pat" "$T/botchan.txt" $pat "$T/hf_$pat.json" <<'EOF' && ok || fail "tokenizers disagrees"
import json, sys
from tokenizers import Tokenizer, Regex, models, pre_tokenizers, decoders, processors, trainers
tj, cases, idsf, corpus, pat, out = sys.argv[1:]
t = Tokenizer.from_file(tj)
src = [json.loads(l)['text'] for l in open(cases, encoding='utf-8')]
ours = [[int(x) for x in l.split()][:-1] for l in open(idsf)]
for s, o in zip(src, ours):
    # tokenizers takes special tokens in the text as such, sluice encodes them as text
    if '<|endoftext|>' in s or '<pad>' in s:
        continue
    h = t.encode(s, add_special_tokens=False).ids
    assert h == o, (s[:60], h[:20], o[:20])
    assert t.decode(h, skip_special_tokens=False) == s
m = Tokenizer(models.BPE())
if pat == 'gpt2':
    m.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
else:
    regex = t.pre_tokenizer.__getstate__()
    regex = json.loads(regex)['pretokenizers'][0]['pattern']['Regex']
    m.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior='isolated', invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
m.decoder = decoders.ByteLevel()
m.post_processor = processors.ByteLevel(trim_offsets=False)
tr = trainers.BpeTrainer(vocab_size=1200, special_tokens=['<|endoftext|>', '<pad>'],
                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
lines = [l + '\n' for l in open(corpus, encoding='utf-8', newline='').read().split('\n')[:-1]]
m.train_from_iterator(lines, tr)
m.save(out)
assert open(out, 'rb').read() == open(tj, 'rb').read(), 'tokenizer.json differs from BpeTrainer'
EOF
    fi
done

case_ "a small pre-token table: the rare tail is dropped, with a warning"
run "$SLUICE" tokenizer train --model-type byte-bpe --vocab-size 600 --max-pretokens 1024 --out "$T/small" "$T/botchan.txt"
expect_rc 0; expect_err "the pre-token table filled up"
expect_file "$T/small.tiktoken"

case_ "the same files for any rank count"
mkdir -p "$T/again"
run "$SLUICE" tokenizer train --model-type byte-bpe --vocab-size 1200 --special-tokens '<|endoftext|>,<pad>' \
    --out "$T/again/gpt2" "$T/botchan.txt"
for f in tokenizer.json tiktoken tiktoken.json; do
    cmp -s "$T/gpt2.$f" "$T/again/gpt2.$f" && ok || fail "two runs gave different $f"
done
if have_mpi; then
    for np in 1 2; do
        mkdir -p "$T/np$np"
        run "${MPIRUN[@]}" -np $np "$SLUICE" tokenizer train --model-type byte-bpe --vocab-size 1200 \
            --special-tokens '<|endoftext|>,<pad>' --out "$T/np$np/gpt2" "$T/botchan.txt" "$T/cases.jsonl"
        expect_rc 0
    done
    for f in tokenizer.json tiktoken tiktoken.json; do
        cmp -s "$T/np1/gpt2.$f" "$T/np2/gpt2.$f" && ok || fail "-np 2 gave a different $f"
    done
else
    echo "note: mpirun not found: the -np 1/2 comparison is skipped"
fi

case_ "export hf: a checkpoint of data tokenized with the trained ranks gets their tokenizer.json"
QUICK=(model.num_layers=1 train.seq_len=32 train.micro_batch_size=2 train.global_batch_size=2
       train.steps=1 eval.interval=0 train.resume=none)
run "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" "${QUICK[@]}" data.prefix="$T/enc_gpt2_text_document" \
    data.cache_dir="$T/cache" checkpoint.dir="$T/ck"
expect_rc 0
run "$SLUICE" export hf --out "$T/hf" "$T/ck"
expect_rc 0; expect_err "written as tokenizer.json + tokenizer_config.json"
# the ranks hold the merges: the same file as the trainer wrote
cmp -s "$T/gpt2.tokenizer.json" "$T/hf/tokenizer.json" && ok || fail "exported tokenizer.json differs"
expect_eq "$(json "$T/hf/config.json" "m['bos_token_id'], m['eos_token_id']")" "0 0"
expect_eq "$(json "$T/hf/tokenizer_config.json" "m['tokenizer_class'], m['eos_token']")" \
    "PreTrainedTokenizerFast <|endoftext|>"

case_ "export hf: ranks with a token no merge reaches fail before any file is written"
python3 -c "
import base64, sys
with open(sys.argv[1], 'w') as f:
    for i in range(256):
        f.write(base64.b64encode(bytes([i])).decode() + ' %d\n' % i)
    f.write(base64.b64encode(b'abc').decode() + ' 256\n')
" "$T/odd.tiktoken"
echo '{"pattern": "gpt2", "special_tokens": {"<|endoftext|>": 257}}' > "$T/odd.tiktoken.json"
run "$SLUICE" export hf --out "$T/hf-odd" --tokenizer "tiktoken:$T/odd.tiktoken" "$T/ck"
expect_rc 1; expect_err "token 256 is not reached by merging lower-ranked tokens"
expect_no_file "$T/hf-odd/model.safetensors"

case_ "export hf --tokenizer with OpenAI's r50k_base ranks: tiktoken's ids from tokenizers"
zstd -q -d "$FIX/tokenizer/r50k_base.tiktoken.zst" -o "$T/r50k_base.tiktoken"
run "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" "${QUICK[@]}" data=synthetic model.vocab_size=50304 \
    checkpoint.dir="$T/ck50"
expect_rc 0
run "$SLUICE" export hf --out "$T/hf50" --tokenizer "tiktoken:$T/r50k_base.tiktoken" "$T/ck50"
expect_rc 0
expect_eq "$(json "$T/hf50/config.json" "m['eos_token_id']")" "50256"
if [ -n "$HFPY" ]; then
    "$HFPY" - "$T/hf50/tokenizer.json" "$T/cases.jsonl" <<'EOF' && ok || fail "exported r50k tokenizer.json gives other ids"
import json, sys
from tokenizers import Tokenizer
t = Tokenizer.from_file(sys.argv[1])
assert t.get_vocab_size() == 50257 and t.token_to_id('<|endoftext|>') == 50256
n = 0
for line in open(sys.argv[2], encoding='utf-8'):
    c = json.loads(line)
    if '<|endoftext|>' in c['text']:
        continue
    assert t.encode(c['text'], add_special_tokens=False).ids == c['gpt2'], c['id']
    n += 1
assert n > 700
EOF
fi

case_ "a broken JSONL line is skipped and counted"
{ echo '{"text":"hello world"}'; echo '{"text": broken'; echo '{"text":"hello there"}'; } > "$T/bad.jsonl"
run "$SLUICE" tokenizer train --model-type byte-bpe --vocab-size 300 --out "$T/bad" "$T/bad.jsonl"
expect_rc 0; expect_err "2 texts"
expect_no_partials "$T"

finish
