#!/usr/bin/env bash
# sluice tokenize and sluice dataset: reference ids for whole files, Megatron layout read
# by an independent numpy reader (and an index it wrote read by us), EOD and empty
# documents, manifest counts, MPI -np 1/2/4 and --workers giving identical bytes, bad input.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

TF="$FIX/tokenizer"
mkdir -p "$T/gpt2" "$T/in"
zstd -q -d "$TF/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$TF/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
GPT2="gpt2:$T/gpt2"
MIDX="$(dirname "$0")/megatron_idx.py"

case_ "-h prints the options; usage errors exit 2"
run "$SLUICE" tokenize -h
expect_rc 0; expect_out "--tokenizer"; expect_out "--append-eod"; expect_out "--json-key"
run "$SLUICE" tokenize --out "$T/x" "$T/in"
expect_rc 2; expect_err "--tokenizer SPEC is required"
run "$SLUICE" tokenize --tokenizer bogus:x --out "$T/x" "$T/in"
expect_rc 2; expect_err "unknown tokenizer 'bogus:x'"
run "$SLUICE" dataset frob x
expect_rc 2; expect_err "unknown subcommand 'frob'"

# whole files as one document each: ids equal the reference (sha256 of the ids as uint32 LE)
python3 - "$TF" "$T/in" <<'PY'
import json, subprocess, sys
tf, d = sys.argv[1], sys.argv[2]
for name, fx in (("tinyshakespeare", "tinyshakespeare.txt.zst"), ("botchan", "botchan.txt.zst")):
    text = subprocess.run(["zstd", "-q", "-d", "-c", tf + "/" + fx], check=True, capture_output=True).stdout
    with open("%s/%s.jsonl" % (d, name), "w") as f:
        f.write(json.dumps({"text": text.decode("utf-8")}) + "\n")
PY
for enc in gpt2 cl100k_base o200k_base; do
    if [ $enc = gpt2 ]; then spec=$GPT2; else spec="tiktoken:$TF/$enc.tiktoken.zst"; fi
    for name in tinyshakespeare botchan; do
        case_ "$name under $enc equals the reference ids"
        run "$SLUICE" tokenize -q --tokenizer "$spec" --out "$T/w_${enc}_$name" "$T/in/$name.jsonl"
        expect_rc 0
        got=$("$PY" -c "
import sys, hashlib, numpy as np
sys.path.insert(0, '$(dirname "$MIDX")'); import megatron_idx as m
code, lens, ptrs, doc, b = m.read(sys.argv[1])
print(hashlib.sha256(np.asarray(b, dtype='<u4').tobytes()).hexdigest(), len(b))" "$T/w_${enc}_${name}_text_document")
        want=$(python3 -c "
import json, sys
for r in json.load(open(sys.argv[1])):
    if r['file'].endswith(sys.argv[2]) and r['encoding'] == sys.argv[3]:
        print(r['sha256_of_ids_as_uint32_le'], r['num_tokens'])" "$TF/full_files.json" \
            "$([ $name = botchan ] && echo botchan.txt || echo input.txt)" $enc)
        expect_eq "$got" "$want"
    done
done

# a corpus with the cases that matter
python3 - "$T/in/docs.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"text": "hello world", "title": "A"}) + "\n")
    f.write(json.dumps({"text": "", "title": "B"}) + "\n")           # empty
    f.write(json.dumps({"title": "C"}) + "\n")                        # missing key
    f.write(json.dumps({"text": ["first sentence.", "", "second one."], "title": "D"}) + "\n")
    f.write("not json\n")
    f.write(json.dumps({"text": "caf\u00e9 \u00fcber na\u00efve " * 50, "title": "E"}) + "\n")
PY
printf '{"text": "bad \xff\xfe bytes"}\n' >> "$T/in/docs.jsonl"

case_ "EOD on non-empty documents, empty and missing ones kept as empty documents"
run "$SLUICE" tokenize --tokenizer "$GPT2" --append-eod --json-key text --json-key title \
    --out "$T/d" "$T/in/docs.jsonl"
expect_rc 0; expect_err "docs.jsonl:5"
expect_file "$T/d_text_document.bin"; expect_file "$T/d_title_document.idx"
expect_file "$T/d.manifest.json"; expect_no_partials "$T"
expect_eq "$(json "$T/d.manifest.json" "m['counts']['documents_in']")" 6
expect_eq "$(json "$T/d.manifest.json" "m['counts']['empty_documents']")" 2
expect_eq "$(json "$T/d.manifest.json" "m['counts']['missing_key']")" 1
expect_eq "$(json "$T/d.manifest.json" "m['counts']['missing_key_title']")" 1
expect_eq "$(json "$T/d.manifest.json" "m['counts']['skipped_invalid_json']")" 1
expect_eq "$(json "$T/d.manifest.json" "m['counts']['repaired_utf8_lines']")" 1
expect_eq "$(json "$T/d.manifest.json" "m['settings']['dtype']")" uint16
run "$PY" "$MIDX" dump "$T/d_text_document"
expect_rc 0
expect_eq "$(sed -n 1p "$T/out")" '{"document":0,"ids":[31373,995,50256]}'
expect_eq "$(sed -n 2p "$T/out")" '{"document":1,"ids":[]}'
expect_eq "$(sed -n 3p "$T/out")" '{"document":2,"ids":[]}'
cp "$T/out" "$T/numpy_dump"
run "$SLUICE" dataset cat --ids --jsonl "$T/d_text_document"
expect_rc 0
expect_eq "$(md5sum < "$T/out")" "$(md5sum < "$T/numpy_dump")" "(our reader vs the numpy reader)"
run "$SLUICE" dataset cat --tokenizer "$GPT2" --docs 0,3 "$T/d_text_document"
expect_rc 0
expect_eq "$(cat "$T/out")" "hello world<|endoftext|>
first sentence.second one.<|endoftext|>"
run "$SLUICE" dataset inspect "$T/d_text_document"
expect_rc 0; expect_out "documents   6 (2 empty)"; expect_out "sequences   5"
run "$SLUICE" dataset verify --tokenizer "$GPT2" "$T/d_text_document" "$T/d_title_document.idx"
expect_rc 0; expect_out "ok $T/d_text_document: 6 documents"

case_ "a rank file shaped as Llama 3's tokenizer.model: cl100k_base's ids, <|end_of_text|> as EOD"
mkdir -p "$T/llama/original"
zstd -dc "$TF/cl100k_base.tiktoken.zst" > "$T/llama/original/tokenizer.model"
"$PY" - "$T/llama/original/tokenizer.model" <<'PY'
import base64, sys
with open(sys.argv[1], "a") as f:  # 27,744 made-up tokens (0xF8 never occurs in UTF-8)
    for k in range(100256, 128000):
        f.write(base64.b64encode(b"\xf8\xf8" + k.to_bytes(4, "big")).decode() + " %d\n" % k)
PY
run "$SLUICE" tokenize --tokenizer "tiktoken:$T/llama/original/tokenizer.model" --append-eod \
    --out "$T/ll" "$T/in/docs.jsonl"
expect_rc 0
expect_eq "$(json "$T/ll.manifest.json" "m['settings']['vocab_size']")" 128256
expect_eq "$(json "$T/ll.manifest.json" "m['settings']['eod_id']")" 128001
run "$PY" "$MIDX" dump "$T/ll_text_document"
expect_eq "$(sed -n 1p "$T/out")" '{"document":0,"ids":[15339,1917,128001]}'
run "$SLUICE" dataset cat --tokenizer "tiktoken:$T/llama/original/tokenizer.model" --docs 0 "$T/ll_text_document"
expect_eq "$(cat "$T/out")" "hello world<|end_of_text|>"

case_ "the sentence list of document 3 is two sequences, EOD on the last"
expect_eq "$("$PY" -c "
import sys; sys.path.insert(0, '$(dirname "$MIDX")'); import megatron_idx as m
code, lens, ptrs, doc, b = m.read(sys.argv[1]); print([int(x) for x in doc], [int(x) for x in lens[:3]])" "$T/d_text_document")" \
    "[0, 1, 1, 1, 3, 4, 5] [3, 3, 4]"

case_ "an index written by the numpy writer is read by sluice"
printf '[[1,2,3],[4]]\n[]\n[[50256]]\n' | "$PY" "$MIDX" write "$T/np" uint16
run "$SLUICE" dataset verify --vocab-size 50257 "$T/np"
expect_rc 0; expect_out "3 documents, 3 sequences, 5 tokens (uint16)"
run "$SLUICE" dataset cat --ids --jsonl "$T/np"
expect_eq "$(cat "$T/out")" '{"document":0,"ids":[1,2,3,4]}
{"document":1,"ids":[]}
{"document":2,"ids":[50256]}'

case_ "merge shifts the document index"
run "$SLUICE" dataset merge --out "$T/m" "$T/d_text_document" "$T/np"
expect_rc 0
run "$PY" "$MIDX" dump "$T/m"
expect_rc 0; expect_eq "$(wc -l < "$T/out")" 9
expect_eq "$(sed -n 7p "$T/out")" '{"document":6,"ids":[1,2,3,4]}'
run "$SLUICE" dataset merge --out "$T/m2" "$T/np" "$T/w_cl100k_base_botchan_text_document"
expect_rc 1; expect_err "dtype is int32"
run "$SLUICE" dataset merge --out "$T/merged/all/m" "$T/d_text_document" "$T/np"
expect_rc 0; cmp -s "$T/merged/all/m.bin" "$T/m.bin" && ok || fail "merge into a new directory"
: > "$T/afile"
run "$SLUICE" dataset merge --out "$T/afile/m" "$T/d_text_document" "$T/np"
expect_rc 1; expect_err "'$T/afile' exists and is not a directory"

case_ "the compiled-vocabulary cache: written once, read back, same bytes; off, read-only and damaged caches still work"
VC="$T/vc"
for spec in "$GPT2" "tiktoken:$TF/o200k_base.tiktoken.zst"; do
    rm -rf "$VC"
    SLUICE_CACHE_DIR= run "$SLUICE" tokenize -j 1 --tokenizer "$spec" --out "$T/vc_off" "$FIX/tokenizer/cases.jsonl.zst"
    expect_rc 0
    [ ! -e "$VC" ] && ok || fail "SLUICE_CACHE_DIR= wrote a cache"
    SLUICE_CACHE_DIR="$VC" run "$SLUICE" tokenize -j 1 --tokenizer "$spec" --out "$T/vc_1" "$FIX/tokenizer/cases.jsonl.zst"
    expect_rc 0
    expect_eq "$(ls "$VC" | grep -c '^bpe-.*\.bin$')" 1
    SLUICE_CACHE_DIR="$VC" run "$SLUICE" tokenize -j 1 --tokenizer "$spec" --out "$T/vc_2" "$FIX/tokenizer/cases.jsonl.zst"
    expect_rc 0
    for r in vc_1 vc_2; do
        cmp -s "$T/vc_off_text_document.bin" "$T/${r}_text_document.bin" && cmp -s "$T/vc_off_text_document.idx" "$T/${r}_text_document.idx" \
            && ok || fail "$spec: $r differs from the run without the cache"
    done
    # damaged: ignored and written again; the output is the same
    f=$(ls "$VC"/bpe-*.bin)
    printf 'XXXXXXXX' | dd of="$f" bs=1 seek=4000 conv=notrunc status=none
    SLUICE_CACHE_DIR="$VC" run "$SLUICE" tokenize -j 1 --tokenizer "$spec" --out "$T/vc_3" "$FIX/tokenizer/cases.jsonl.zst"
    expect_rc 0
    cmp -s "$T/vc_off_text_document.bin" "$T/vc_3_text_document.bin" && ok || fail "$spec: the run after damage differs"
    dd if="$f" bs=1 skip=4000 count=8 status=none | grep -q XXXXXXXX && fail "$spec: the damaged file was not rewritten" || ok
done
# a cache folder that cannot be created (under a file): no cache, same output
: > "$T/afile_vc"
SLUICE_CACHE_DIR="$T/afile_vc/sub" run "$SLUICE" tokenize -j 1 --tokenizer "$GPT2" --out "$T/vc_ro" "$FIX/tokenizer/cases.jsonl.zst"
expect_rc 0
SLUICE_CACHE_DIR= run "$SLUICE" tokenize -j 1 --tokenizer "$GPT2" --out "$T/vc_gpt2" "$FIX/tokenizer/cases.jsonl.zst"
cmp -s "$T/vc_gpt2_text_document.bin" "$T/vc_ro_text_document.bin" && ok || fail "an unusable cache folder changed the output"

case_ "cl100k ids need int32"
expect_eq "$(json "$T/w_cl100k_base_botchan.manifest.json" "m['settings']['dtype']")" int32

case_ "-np 1/2/4 and --workers 1/3 give identical bytes"
mkdir -p "$T/many"
python3 - "$T/many" <<'PY'
import json, random, sys, gzip
random.seed(3)
words = ["alpha", "beta", "Gamma", "delta's", "123", "4567", "  ", "\n", "é", "日本", "!?", "x" * 30]
for f in range(6):
    op = gzip.open if f % 2 else open
    with op("%s/p%d.jsonl%s" % (sys.argv[1], f, ".gz" if f % 2 else ""), "wt") as out:
        for i in range(random.randint(20, 300)):
            t = " ".join(random.choice(words) for _ in range(random.randint(0, 200)))
            out.write(json.dumps({"text": t}) + "\n")
PY
run "$SLUICE" tokenize -j 1 --tokenizer "tiktoken:$TF/o200k_base.tiktoken.zst" --append-eod --out "$T/s1" "$T/many"
expect_rc 0
run "$SLUICE" tokenize -v -j 3 --tokenizer "tiktoken:$TF/o200k_base.tiktoken.zst" --append-eod --out "$T/s3" "$T/many"
expect_rc 0
# -v: per input file, the reading thread's CPU (what bounds one rank on one file)
expect_eq "$(grep -c "the reading thread took .* CPU s for .* MB of JSONL" "$T/err")" 6
cmp -s "$T/s1_text_document.bin" "$T/s3_text_document.bin" && ok || fail ".bin differs for -j 3"
cmp -s "$T/s1_text_document.idx" "$T/s3_text_document.idx" && ok || fail ".idx differs for -j 3"
if have_mpi; then
    for np in 1 2 4; do
        run "${MPIRUN[@]}" -np $np "$SLUICE" tokenize -j 1 --tokenizer "tiktoken:$TF/o200k_base.tiktoken.zst" \
            --append-eod --out "$T/n$np" "$T/many"
        expect_rc 0
        for ext in bin idx; do
            cmp -s "$T/s1_text_document.$ext" "$T/n${np}_text_document.$ext" && ok || fail "-np $np: .$ext differs"
        done
        expect_eq "$(json "$T/n$np.manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
                  "$(json "$T/s1.manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
        expect_no_partials "$T"
    done
fi

case_ "a document over 100 MB is reported with its file and line, counted and skipped"
python3 -c "
import json, sys
sys.stdout.write(json.dumps({'text': 'small'}) + '\n')
sys.stdout.write('{\"text\": \"' + 'a' * (101 << 20) + '\"}\n')
sys.stdout.write(json.dumps({'text': 'after'}) + '\n')" | zstd -q -3 > "$T/huge.jsonl.zst"
run "$SLUICE" tokenize --tokenizer "$GPT2" --out "$T/h" "$T/huge.jsonl.zst"
expect_rc 0; expect_err "huge.jsonl.zst:2"
expect_eq "$(json "$T/h.manifest.json" "m['counts']['skipped_line_too_long']")" 1
expect_eq "$(json "$T/h.manifest.json" "m['counts']['documents_out']")" 2

# SentencePiece: the own encoder (spm:) and the library (spm-lib:) write the same bytes,
# and their ids are spm_encode's, line by line (three models: unigram, Japanese unigram, BPE
# with byte fallback), over English and Japanese text
python3 - "$TF" "$T/in/spm.jsonl" "$T/in/spm.txt" <<'PY'
import json, subprocess, sys
tf, out, txt = sys.argv[1], sys.argv[2], sys.argv[3]
lines = []
for fx in ("botchan.txt.zst", "wagahaiwa_head.txt.zst"):
    text = subprocess.run(["zstd", "-q", "-d", "-c", tf + "/" + fx], check=True, capture_output=True).stdout
    lines += [l for l in text.decode("utf-8").split("\n") if l.strip()][:1500]
with open(out, "w") as f, open(txt, "w") as g:
    for l in lines:
        f.write(json.dumps({"text": l}) + "\n")
        g.write(l + "\n")
PY
for model in test_model test_ja_model c4_en_301_5Mexp2_spm; do
    zstd -q -d -f "$TF/$model.model.zst" -o "$T/$model.model"
    case_ "spm:$model and spm-lib:$model write the same bytes"
    run "$SLUICE" tokenize -q --tokenizer "spm:$T/$model.model" --out "$T/s_$model" "$T/in/spm.jsonl"
    expect_rc 0
    run "$SLUICE" tokenize -q --tokenizer "spm-lib:$T/$model.model" --out "$T/l_$model" "$T/in/spm.jsonl"
    expect_rc 0
    expect_eq "$(cat "$T/s_${model}_text_document.bin" | sha256sum)" "$(cat "$T/l_${model}_text_document.bin" | sha256sum)"
    if command -v spm_encode >/dev/null 2>&1; then
        case_ "spm:$model gives spm_encode's ids"
        got=$("$PY" -c "
import sys
sys.path.insert(0, '$(dirname "$MIDX")'); import megatron_idx as m
code, lens, ptrs, doc, b = m.read(sys.argv[1])
print(' '.join(map(str, b)))" "$T/s_${model}_text_document")
        want=$(spm_encode --model "$T/$model.model" --output_format=id < "$T/in/spm.txt" | tr '\n' ' ' | sed 's/ *$//; s/  */ /g')
        expect_eq "$(echo "$got" | md5sum)" "$(echo "$want" | md5sum)"
    fi
done

case_ "the C++ libraries (libsluice-cxx.so) are loaded by a SentencePiece model alone"
LD_DEBUG=files "$SLUICE" tokenize -q --tokenizer "gpt2:$T/gpt2" --out "$T/ldg" "$T/in/docs.jsonl" 2>"$T/ld.log"
expect_rc 0
grep -q "file=libzstd" "$T/ld.log" && ok || fail "LD_DEBUG shows no library loads"
# (the sanitizer build's UBSan runtime loads the C++ runtime itself)
cxx_libs="libsluice-cxx libsentencepiece libfasttext libcld2"
[ "${SANITIZE:-0}" = 1 ] || cxx_libs="$cxx_libs libstdc++"
for lib in $cxx_libs; do
    grep -q "file=[^ ]*$lib" "$T/ld.log" && fail "tokenize with GPT-2 loaded $lib" || ok
done
LD_DEBUG=files "$SLUICE" tokenize -q --tokenizer "spm-lib:$T/test_model.model" --out "$T/lds" "$T/in/spm.jsonl" 2>"$T/ld.log"
expect_rc 0
grep -q "file=[^ ]*/libsluice-cxx.so" "$T/ld.log" && ok || fail "spm-lib: did not load libsluice-cxx.so"
grep -q "file=libsentencepiece" "$T/ld.log" && ok || fail "spm-lib: did not load libsentencepiece"
cmp -s "$T/lds_text_document.bin" "$T/l_test_model_text_document.bin" && ok || fail "spm-lib: other tokens"
run env SLUICE_CXX_LIB="$T/none/libsluice-cxx.so" "$SLUICE" tokenize --tokenizer "spm-lib:$T/test_model.model" \
    --out "$T/ldn" "$T/in/spm.jsonl"
expect_rc 1; expect_err "libsluice-cxx.so"; expect_err "$T/none/libsluice-cxx.so"
expect_no_file "$T/ldn_text_document.bin"

case_ "a corrupt .model is an error naming the file"
head -c 5000 /dev/urandom > "$T/bad.model"
run "$SLUICE" tokenize --tokenizer "spm:$T/bad.model" --out "$T/b" "$T/in/docs.jsonl"
expect_rc 1; expect_err "bad.model"; expect_err "not a SentencePiece model"
expect_no_file "$T/b_text_document.bin"

case_ "merges that disagree with the vocabulary are an error naming both files"
mkdir -p "$T/gbad"; cp "$T/gpt2/encoder.json" "$T/gbad/"
{ head -3 "$T/gpt2/vocab.bpe"; echo "Ġzzzq xyzw"; } > "$T/gbad/vocab.bpe"
run "$SLUICE" tokenize --tokenizer "gpt2:$T/gbad" --out "$T/b" "$T/in/docs.jsonl"
expect_rc 1; expect_err "vocab.bpe"; expect_err "line 4"; expect_err "not in the vocabulary"

case_ "broken shards: truncated .idx, fairseq .idx, short .bin"
cp "$T/d_text_document.bin" "$T/t1.bin"; head -c 60 "$T/d_text_document.idx" > "$T/t1.idx"
run "$SLUICE" dataset verify "$T/t1"
expect_rc 1; expect_err "t1.idx"; expect_err "truncated"
cp "$T/d_text_document.bin" "$T/t2.bin"; "$PY" "$MIDX" fairseq "$T/d_text_document" "$T/t2"
run "$SLUICE" dataset inspect "$T/t2"
expect_rc 1; expect_err "t2.idx"; expect_err "fairseq"
cp "$T/d_text_document.idx" "$T/t3.idx"; head -c 7 "$T/d_text_document.bin" > "$T/t3.bin"
run "$SLUICE" dataset cat --ids "$T/t3"
expect_rc 1; expect_err "t3.bin"; expect_err "the index needs"

case_ "a full output disk while the workers write: the run stops with the hint, no output"
# tinyshakespeare a line a document: ~340k tokens, 0.7 MB of parts, written batch by batch
# by whichever worker finishes the oldest batch; the disk holds 256 KiB
zstd -q -d -c "$TF/tinyshakespeare.txt.zst" | "$PY" -c "
import json, sys
for line in sys.stdin:
    print(json.dumps({'text': line}))" > "$T/lines.jsonl"
mkdir -p "$T/fullmnt"
if unshare -r -m true 2>/dev/null; then
    for j in 1 2 4; do
        run timeout 120 unshare -r -m sh -c 'mount -t tmpfs -o size=256k tmpfs "$1" && "$2" tokenize --tokenizer "$3" --workers "$4" --out "$1/o" "$5"; rc=$?; ls -A "$1" > "$1.ls.$4"; exit $rc' \
            sh "$T/fullmnt" "$SLUICE" "$GPT2" $j "$T/lines.jsonl"
        expect_rc 1
        expect_err "No space left on device"
        expect_err "hint: the output disk is full: free space"
        expect_eq "$(grep -c 'document\.\(bin\|idx\)$\|manifest' "$T/fullmnt.ls.$j" || true)" 0
    done
fi

# kill_after_records DIR N WORKERS: start tokenize of $T/many into DIR/t with WORKERS workers
# and SIGKILL it once N input files have their record
kill_after_records() {
    "$SLUICE" tokenize --tokenizer "$GPT2" --workers "$3" --append-eod --out "$1/t" "$T/many" >/dev/null 2>&1 &
    local pid=$! n
    for _ in $(seq 6000); do # up to a minute on a busy machine
        n=$(ls "$1/.t.sluice-parts/.sluice" 2>/dev/null | grep -c '^part-.*json$' || true)
        [ "$n" -ge "$2" ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.01
    done
    kill -KILL $pid 2>/dev/null || true
    wait $pid 2>/dev/null || true
}

case_ "SIGKILL after 3 of 40 files: the next run resumes per file; output identical to an uninterrupted run"
mkdir -p "$T/many"
python3 - "$T/many" <<'PY'
import json, random, sys
random.seed(3)
words = ("the of and to in a is that for it as was with be by on not he this are or his from at "
         "which but have an they you were her she there been one all we river mountain city").split()
for f in range(40):
    with open("%s/in-%02d.jsonl" % (sys.argv[1], f), "w") as o:
        for d in range(600):
            o.write(json.dumps({"text": " ".join(random.choice(words) for _ in range(random.randint(50, 300)))}) + "\n")
PY
run "$SLUICE" tokenize --tokenizer "$GPT2" --workers 1 --append-eod --out "$T/rref/t" "$T/many"
expect_rc 0; expect_eq "$(json "$T/rref/t.manifest.json" "m['resumed']")" False
mkdir -p "$T/rk"
kill_after_records "$T/rk" 3 1
if [ -e "$T/rk/t.manifest.json" ]; then fail "tokenize finished before the kill"; else ok; fi
done_before=$(ls "$T/rk/.t.sluice-parts/.sluice" | grep -c '^part-.*json$' || true)
run "$SLUICE" tokenize --tokenizer "$GPT2" --workers 1 --append-eod --out "$T/rk/t" "$T/many"
expect_rc 0; expect_err "(resumed)"
expect_eq "$(json "$T/rk/t.manifest.json" "m['resumed']")" True
for e in bin idx; do
    cmp -s "$T/rk/t_text_document.$e" "$T/rref/t_text_document.$e" && ok || fail "resumed .$e differs"
done
expect_eq "$(json "$T/rk/t.manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
          "$(json "$T/rref/t.manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
expect_no_file "$T/rk/.t.sluice-parts"
[ "$done_before" -ge 3 ] && [ "$done_before" -lt 40 ] && ok || fail "$done_before files were done at the kill"

case_ "a part lost to a crash after its record (parts are not synced) is redone on resume"
kill_after_records "$T/rz" 2 2
# what an unsynced file may hold after a power loss: its size, zeros for bytes (the part
# of the first file with a record)
rec=$(ls "$T/rz/.t.sluice-parts/.sluice" 2>/dev/null | grep -m1 '^part-.*json$' || true)
part="$T/rz/.t.sluice-parts/${rec%.json}_k0.bin"
if [ -n "$rec" ] && [ -s "$part" ] && [ ! -e "$T/rz/t.manifest.json" ]; then
    dd if=/dev/zero of="$part" bs="$(stat -c %s "$part")" count=1 conv=notrunc status=none
    run "$SLUICE" tokenize --tokenizer "$GPT2" --workers 2 --append-eod --out "$T/rz/t" "$T/many"
    expect_rc 0; expect_err "(resumed)"
    expect_eq "$(json "$T/rz/t.manifest.json" "m['counts'].get('resume_redone_units')")" 1
    for e in bin idx; do
        cmp -s "$T/rz/t_text_document.$e" "$T/rref/t_text_document.$e" && ok || fail "resumed .$e differs"
    done
else
    fail "no part was recorded before the kill"
fi

case_ "killed, then other settings: the earlier parts are not reused"
kill_after_records "$T/rk2" 2 1
run "$SLUICE" tokenize --tokenizer "$GPT2" --workers 1 --out "$T/rk2/t" "$T/many"
expect_rc 0; expect_no_err "(resumed)"
run "$SLUICE" tokenize --tokenizer "$GPT2" --workers 1 --out "$T/rref2/t" "$T/many"
cmp -s "$T/rk2/t_text_document.bin" "$T/rref2/t_text_document.bin" && ok || fail "not a fresh start"

finish
