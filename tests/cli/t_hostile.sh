#!/usr/bin/env bash
# Hostile and careless input to the readers of models and configs: truncated and crafted
# fastText models, YAML bombs, duplicate keys and binary files as configs, empty merges
# files, SentencePiece training on one huge "word", dedup --index-in without its ids, a
# Redis node that sends a 2 GB bulk length or stalls mid-reply. Each is a clear
# error naming the file (and where it can, the position and the numbers), never an abort
# or an allocation of gigabytes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

printf '{"text":"hello world, this is a short English sentence."}\n' > "$T/in.jsonl"
lid() { printf 'filters:\n  - language:\n      model: %s\n      languages: [en]\n' "$1" > "$2"; }

case_ "a truncated fastText model is an error, never an abort (quantized .ftz)"
for cut in 60 100 5000 500000 938000; do
    head -c $cut "$FIX/filter/lid.176.ftz" > "$T/cut$cut.ftz"
    lid "$T/cut$cut.ftz" "$T/cut$cut.yaml"
    run "$SLUICE" filter --config "$T/cut$cut.yaml" --out "$T/o$cut" "$T/in.jsonl"
    expect_rc 1; expect_err "cannot load fastText model '$T/cut$cut.ftz'"; expect_err "of $cut)"
    expect_no_file "$T/o$cut/manifest.json"
done
expect_err "the output matrix (176 x 16 floats) needs 11264 bytes, 11251 are left"

case_ "a crafted dictionary size (2^31-1 words) is refused before any allocation"
python3 - "$FIX/filter/lid.176.ftz" "$T/huge.ftz" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<iii", d, 64, 2**31 - 1, 2**31 - 1 - 176, 176)
open(sys.argv[2], "wb").write(d)
PY
lid "$T/huge.ftz" "$T/huge.yaml"
run "$SLUICE" filter --config "$T/huge.yaml" --out "$T/oh" "$T/in.jsonl"
expect_rc 1; expect_err "its dictionary claims 2147483647 entries"

case_ "a crafted matrix shape is refused"
python3 - "$FIX/filter/lid.176.ftz" "$T/shape.ftz" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<i", d, 4 + 4, 300)  # dim 300 while the matrices have 16 columns
open(sys.argv[2], "wb").write(d)
PY
lid "$T/shape.ftz" "$T/shape.yaml"
run "$SLUICE" filter --config "$T/shape.yaml" --out "$T/os" "$T/in.jsonl"
expect_rc 1; expect_err "the input matrix is"; expect_err "the dictionary needs"

case_ "a truncated classifier model (dense .bin) is an error, never an abort"
run "$SLUICE" classifier train --pos "$T/in.jsonl" --neg "$FIX/jsonl/blns.jsonl.zst" --out "$T/q.bin" \
    --epoch 1 --dim 4
expect_rc 0
sz=$(stat -c %s "$T/q.bin")
head -c $((sz - 7)) "$T/q.bin" > "$T/qcut.bin"
printf 'filters:\n  - classifier:\n      model: %s\n' "$T/qcut.bin" > "$T/qcut.yaml"
run "$SLUICE" filter --config "$T/qcut.yaml" --out "$T/oq" "$T/in.jsonl"
expect_rc 1; expect_err "cannot load fastText model '$T/qcut.bin'"; expect_err "the output matrix"
printf 'filters:\n  - classifier:\n      model: %s\n' "$T/q.bin" > "$T/q.yaml"
run "$SLUICE" filter --config "$T/q.yaml" --out "$T/oq2" "$T/in.jsonl"
expect_rc 0

case_ "a quantization flag other than 0 or 1 is refused (a C++ bool of 2 is undefined)"
# the byte after the dictionary (entries, then the prune index) says whether the input
# matrix is quantized; fastText writes 0 or 1
python3 - "$T/q.bin" "$T/qflag.bin" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
size, = struct.unpack_from("<i", d, 64)
prune, = struct.unpack_from("<q", d, 84)
pos = 92
for _ in range(size):
    pos = d.index(0, pos) + 1 + 8 + 1
pos += 8 * max(prune, 0)
assert d[pos] == 0
d[pos] = 2
open(sys.argv[2], "wb").write(d)
PY
printf 'filters:\n  - classifier:\n      model: %s\n' "$T/qflag.bin" > "$T/qflag.yaml"
run "$SLUICE" filter --config "$T/qflag.yaml" --out "$T/oqf" "$T/in.jsonl"
expect_rc 1; expect_err "cannot load fastText model '$T/qflag.bin'"
expect_err "the input matrix's quantization flag is 2, where fastText writes 0 or 1"
expect_no_file "$T/oqf/manifest.json"

case_ "a YAML bomb (11 levels of ten aliases) stops at the alias limit, in little memory"
python3 - "$T/bomb.yaml" <<'PY'
import sys
lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
for l in range(1, 12):
    lines.append("a%d: &a%d [%s]" % (l, l, ", ".join("*a%d" % (l - 1) for _ in range(10))))
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
run "$SLUICE" train "$T/bomb.yaml" train.steps=1
expect_rc 2; expect_err "bomb.yaml:6: alias '*a4' expands the config past the alias limit"
cp "$T/bomb.yaml" "$T/bomb-p.yaml"
run "$SLUICE" run "$T/bomb-p.yaml" --dry-run
expect_rc 2; expect_err "alias limit"

case_ "a duplicate key is an error naming both lines"
printf 'filters:\n  - words:\n      min_words: 5\n      max_words: 100\n      min_words: 50\n' > "$T/dup.yaml"
run "$SLUICE" filter --config "$T/dup.yaml" --out "$T/od" "$T/in.jsonl"
expect_rc 1; expect_err "dup.yaml:5: duplicate key 'min_words' (first at line 3)"
expect_no_file "$T/od/manifest.json"

case_ "a binary file given as a config is named as not YAML text"
run "$SLUICE" train "$FIX/filter/lid.176.ftz" train.steps=1
expect_rc 2; expect_err "lid.176.ftz: not a YAML text file: byte 0xba at offset 0"; expect_no_err "num_layers"
printf 'just a sentence, not settings\n' > "$T/prose.yaml"
run "$SLUICE" train "$T/prose.yaml" train.steps=1
expect_rc 2; expect_err "prose.yaml:1: not a YAML mapping of settings"; expect_no_err "num_layers"

case_ "an empty merges file (or only its #version line) is refused, naming it"
mkdir -p "$T/g0"
zstd -q -d "$FIX/tokenizer/encoder.json.zst" -o "$T/g0/vocab.json"
for content in "" "#version: 0.2\n" "\n\n"; do
    printf "$content" > "$T/g0/merges.txt"
    run "$SLUICE" tokenize --tokenizer "gpt2:$T/g0" --out "$T/g0out" "$T/in.jsonl"
    expect_rc 1; expect_err "cannot load merges '$T/g0/merges.txt'"; expect_err "the file has no merges"
    expect_no_file "$T/g0out_text_document.bin"
done

case_ "dedup --index-in without the index's ids files is an error, not \"kept\": null"
mkdir -p "$T/dd"
python3 - "$T/dd" <<'PY'
import json, random, sys
random.seed(11)
words = ["w%d" % i for i in range(5000)]
docs = [" ".join(random.choice(words) for _ in range(300)) for _ in range(20)]
with open(sys.argv[1] + "/a.jsonl", "w") as f:
    for i, d in enumerate(docs):
        f.write(json.dumps({"id": "a%d" % i, "text": d}) + "\n")
with open(sys.argv[1] + "/b.jsonl", "w") as f:
    for i, d in enumerate(docs[:5]):
        f.write(json.dumps({"id": "b%d" % i, "text": d + " tail"}) + "\n")
PY
run "$SLUICE" dedup fuzzy --out "$T/dd/oa" --index-out "$T/dd/idx" "$T/dd/a.jsonl"
expect_rc 0
cp -r "$T/dd/idx" "$T/dd/idx-full"
rm "$T/dd/idx"/ids-*.sldx.zst
run "$SLUICE" dedup fuzzy --out "$T/dd/ob" --index-in "$T/dd/idx" "$T/dd/b.jsonl"
expect_rc 1; expect_err "the dedup index '$T/dd/idx' has no ids files"
expect_no_file "$T/dd/ob/manifest.json"
run "$SLUICE" dedup fuzzy --out "$T/dd/oc" --index-in "$T/dd/idx-full" "$T/dd/b.jsonl"
expect_rc 0
expect_eq "$(json "$T/dd/oc/manifest.json" "m['counts']['documents_out']")" 0
grep -q '"kept":null' "$T/dd/oc/duplicates.jsonl" && fail "kept: null in duplicates.jsonl" || ok

case_ "SentencePiece training: the longest sentence fed to the library is capped (64 KiB)"
python3 - "$T/spm.jsonl" <<'PY'
import json, random, sys
random.seed(2)
with open(sys.argv[1], "w") as f:
    for i in range(3000):
        f.write(json.dumps({"text": "the quick brown fox %d jumps over the lazy dog" % i}) + "\n")
    # one 5 MB "word": a line SentencePiece would need gigabytes for
    f.write(json.dumps({"text": "".join(random.choice("abcdefghij") for _ in range(5 << 20))}) + "\n")
PY
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 200 --max-sentence-length 64000000 \
    --out "$T/spm-big" "$T/spm.jsonl"
expect_rc 2; expect_err "--max-sentence-length must be 1..65536 bytes (got 64000000)"
expect_no_file "$T/spm-big.model"
run "$SLUICE" tokenizer train --model-type unigram --vocab-size 200 --max-sentence-length 65536 \
    --threads 1 --out "$T/spm-ok" "$T/spm.jsonl"
expect_rc 0; expect_err "1 longer than 65536 bytes skipped"; expect_file "$T/spm-ok.model"

case_ "a Redis node that announces a 2 GB bulk reply, or stalls mid-reply, is bounded by --redis-timeout"
for mode in huge stall; do
    python3 "$ROOT/tests/cli/helpers/bad_redis.py" $mode "$T/redis-$mode.port" 60 &
    badpid=$!
    for _ in $(seq 100); do [ -s "$T/redis-$mode.port" ] && break; sleep 0.1; done
    run "$SLUICE" dedup fuzzy --backend redis --redis "127.0.0.1:$(cat "$T/redis-$mode.port")" \
        --redis-timeout 2 --out "$T/dr-$mode" "$T/dd/a.jsonl"
    kill $badpid 2>/dev/null || true
    wait $badpid 2>/dev/null || true
    expect_rc 1; expect_no_file "$T/dr-$mode/manifest.json"
    if [ $mode = huge ]; then
        expect_err "announced a bulk reply of 2000000000 bytes (more than 256 MiB)"
    else
        expect_err "no complete reply in time"
    fi
done

case_ "a tiktoken rank file with a 6 MB token loads in linear time, with the same ids"
# the split search hashed every prefix and suffix of a token from scratch: a 300 KB line
# took 9 s, 15 MB never ended; the timeout only catches that, it measures nothing
mkdir -p "$T/longtok"
zstd -q -d -c "$FIX/tokenizer/r50k_base.tiktoken.zst" | "$PY" -c "
import base64, sys
lines = sys.stdin.read().splitlines()
lines[-2] = base64.b64encode(b'ab' * 3000000).decode() + ' ' + lines[-2].split()[1]
sys.stdout.write('\\n'.join(lines) + '\\n')" > "$T/longtok/r50k_base.tiktoken"
printf '{"text":"Hello world, and a few words more."}\n' > "$T/longtok/in.jsonl"
run timeout 60 "$SLUICE" tokenize -q --tokenizer "tiktoken:$T/longtok/r50k_base.tiktoken" --out "$T/longtok/o" "$T/longtok/in.jsonl"
expect_rc 0
zstd -q -d -c "$FIX/tokenizer/r50k_base.tiktoken.zst" > "$T/longtok/plain.tiktoken"
run "$SLUICE" tokenize -q --tokenizer "tiktoken:$T/longtok/plain.tiktoken" --out "$T/longtok/p" "$T/longtok/in.jsonl"
expect_eq "$("$PY" "$(dirname "$0")/megatron_idx.py" dump "$T/longtok/o_text_document")" \
    "$("$PY" "$(dirname "$0")/megatron_idx.py" dump "$T/longtok/p_text_document")"

finish
