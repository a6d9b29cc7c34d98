#!/usr/bin/env bash
# sluice tokenize --tokenizer hf:tokenizer.json: the ids of the Hugging Face tokenizers
# library for whole UDHR documents (per document, with several workers), added and special
# tokens in the text, decoding back; hostile tokenizer.json files refused with the file and
# the position named. When a Python with the `tokenizers` package is at hand
# (SLUICE_TOKENIZERS_PY, or .venv-bench), the committed expected ids are recomputed with it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

HF="$FIX/hf"
MIDX="$(dirname "$0")/megatron_idx.py"
mkdir -p "$T/in" "$T/bad"
zstd -q -d -c "$FIX/dedup/udhr.jsonl.zst" > "$T/in/udhr.jsonl"

case_ "-h names the hf: tokenizer"
run "$SLUICE" tokenize -h
expect_rc 0; expect_out "hf:tokenizer.json"

# per document: the sha256 of its ids equals the reference record of the same UDHR text
for tok in neox_gpt2 gpt_neox_20b bert_base_uncased llama3_style qwen2_style o200k_style bert_uncased bert_cased; do
    case_ "$tok: every UDHR document has the tokenizers library's ids"
    run "$SLUICE" tokenize -q --workers 3 --tokenizer "hf:$HF/$tok.json.zst" --out "$T/u_$tok" "$T/in/udhr.jsonl"
    expect_rc 0
    bad=$("$PY" - "$T/u_${tok}_text_document" "$HF/expected.jsonl.zst" "$tok" "$T/in/udhr.jsonl" "$ROOT/tests/cli" <<'PY'
import hashlib, json, subprocess, sys
import numpy as np
sys.path.insert(0, sys.argv[5])
import megatron_idx as m
prefix, exp, tok, src = sys.argv[1:5]
code, lens, ptrs, doc, b = m.read(prefix)
want = {}
for line in subprocess.run(["zstd", "-q", "-d", "-c", exp], check=True, capture_output=True).stdout.decode().split("\n"):
    if line:
        r = json.loads(line)
        if r["tok"] == tok and r["id"].startswith("udhr-full:"):
            want[r["id"][10:]] = (r["n"], r["sha256"])
codes = [json.loads(l)["code"] for l in open(src, encoding="utf-8")]
ids = np.asarray(b, dtype="<u4")
off = np.concatenate([[0], np.cumsum(lens)])
bad = 0
for d, c in enumerate(codes):
    s, e = off[doc[d]], off[doc[d + 1]]
    got = ids[s:e]
    if (len(got), hashlib.sha256(got.tobytes()).hexdigest()) != want[c]:
        bad += 1
print(bad if len(codes) == len(doc) - 1 == len(want) else "count %d %d %d" % (len(codes), len(doc) - 1, len(want)))
PY
)
    expect_eq "$bad" "0" "(documents whose ids differ)"
done

case_ "added and special tokens in the text take their ids; cat decodes them back"
printf '%s\n' '{"text":"Hello <|im_start|>world 12345 <tool_call>x</tool_call><|im_end|>"}' > "$T/in/sp.jsonl"
run "$SLUICE" tokenize -q --tokenizer "hf:$HF/qwen2_style.json.zst" --out "$T/sp" "$T/in/sp.jsonl"
expect_rc 0
run "$SLUICE" dataset cat --ids "$T/sp_text_document"
expect_rc 0; expect_out "3001 86 318 775 220 16 17 18 19 20 220 3003 87 3004 3002"
run "$SLUICE" dataset cat --tokenizer "hf:$HF/qwen2_style.json.zst" "$T/sp_text_document"
expect_rc 0; expect_out "Hello <|im_start|>world 12345 <tool_call>x</tool_call><|im_end|>"

case_ "--append-eod finds <|endoftext|> in the added tokens"
run "$SLUICE" tokenize -q --append-eod --tokenizer "hf:$HF/neox_gpt2.json.zst" --out "$T/eod" "$T/in/sp.jsonl"
expect_rc 0
run "$SLUICE" dataset cat --ids "$T/eod_text_document"
expect_out " 50256"

# hostile files: each refused with exit 1, the file named and where in it
zstd -q -d -c "$HF/qwen2_style.json.zst" > "$T/bad/good.json"
"$PY" - "$T/bad" <<'PY'
import json, sys
d = sys.argv[1]
src = open(d + "/good.json", encoding="utf-8").read()
j = json.loads(src)
def w(name, obj):
    with open("%s/%s.json" % (d, name), "w", encoding="utf-8") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
w("truncated", src[: len(src) // 2])
k = json.loads(src); k["model"]["vocab"] = list(k["model"]["vocab"].items()); w("vocab_array", k)
k = json.loads(src); k["model"]["vocab"]["Ġthe"] = 99999999999; w("huge_id", k)
k = json.loads(src); k["model"]["vocab"]["Ġthe"] = "7"; w("string_id", k)
k = json.loads(src); k["added_tokens"][1]["content"] = 5; w("added_type", k)
k = json.loads(src); k["added_tokens"][0]["id"] = 1 << 40; w("added_huge", k)
k = json.loads(src); k["model"]["merges"][3] = ["a"]; w("merge_short", k)
k = json.loads(src); k["model"]["merges"][2] = ["zzzq", "x"]; w("merge_unknown", k)
k = json.loads(src); k["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\p{L}+|\d+"; w("regex", k)
k = json.loads(src); k["model"]["type"] = "Unigram"; w("unigram", k)
k = json.loads(src); k["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "_"}; w("replace", k)
k = json.loads(src); del k["model"]["vocab"]["Ā"]; w("no_byte", k)
k = json.loads(src); k["model"]["dropout"] = 0.1; w("dropout", k)
w("not_object", "[1, 2, 3]")
w("empty", "")
PY
check_bad() { # FILE WHAT...
    local f=$1; shift
    case_ "hostile tokenizer.json: $f"
    run "$SLUICE" tokenize -q --tokenizer "hf:$T/bad/$f.json" --out "$T/bad/o_$f" "$T/in/sp.jsonl"
    expect_rc 1
    expect_err "cannot load tokenizer '$T/bad/$f.json'"
    for w in "$@"; do expect_err "$w"; done
    expect_no_file "$T/bad/o_${f}_text_document.bin"
}
check_bad truncated "not a JSON object" "at byte"
check_bad vocab_array "model.vocab: expected an object" "at byte"
check_bad huge_id "model.vocab (the value at byte" "no valid id"
check_bad string_id "no valid id"
check_bad added_type "added_tokens[1]: 'content' must be a string, not int" "at byte"
check_bad added_huge "added_tokens[0]: token '<|endoftext|>' has id 1099511627776"
check_bad merge_short "model.merges[3]: expected" "at byte"
check_bad merge_unknown "model.merges (entry N is line N+1): line 3" "is not in the vocabulary"
check_bad regex 'the Split regex '"'"'\p{L}+|\d+'"'"' is not one sluice knows' "pre_tokenizer.pretokenizers[0]"
check_bad unigram "model type 'Unigram' is not supported" "spm:"
check_bad replace "normalizer 'Replace' is not supported"
check_bad no_byte "no token for byte 0x00"
check_bad dropout "dropout 0.1 is not supported"
check_bad not_object "not a JSON object"
check_bad empty "not a JSON object"

# the committed expected ids are those of the tokenizers library (when it is installed)
TPY=${SLUICE_TOKENIZERS_PY:-}
if [ -z "$TPY" ]; then
    for p in "$PY" "$ROOT/.venv-bench/bin/python"; do
        if [ -x "$p" ] && "$p" -c "import tokenizers" 2>/dev/null; then TPY=$p; break; fi
    done
fi
if [ -n "$TPY" ]; then
    case_ "tests/oracle/hf_tokenizer_fixtures.py check: tokenizers reproduces the expected ids"
    run env RAYON_NUM_THREADS=1 "$TPY" "$ROOT/tests/oracle/hf_tokenizer_fixtures.py" check - "$HF"
    expect_rc 0; expect_out "ok:"
else
    echo "  (skipped: no Python with the tokenizers package; set SLUICE_TOKENIZERS_PY)"
fi

finish
