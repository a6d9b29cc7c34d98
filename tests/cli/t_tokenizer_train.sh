#!/usr/bin/env bash
# sluice tokenizer train: a model trained on botchan.txt encodes it exactly as spm_encode
# does with that model; the sample is uniform and deterministic; MPI gives the same model.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

zstd -q -d "$FIX/tokenizer/botchan.txt.zst" -o "$T/botchan.txt"

case_ "usage"
run "$SLUICE" tokenizer train --out "$T/m" "$T/botchan.txt"
expect_rc 2; expect_err "--vocab-size N is required"
run "$SLUICE" tokenizer train -h
expect_rc 0; expect_out "--input-sentence-size"; expect_out "--model-type"
run "$SLUICE" tokenizer -h
expect_rc 0; expect_out "sluice tokenizer train"; expect_out "sluice tokenizer punkt-train"

for type in bpe unigram; do
    case_ "$type model: our ids equal spm_encode's for every line of botchan.txt"
    run "$SLUICE" tokenizer train --model-type $type --vocab-size 1000 --threads 1 --out "$T/$type" "$T/botchan.txt"
    expect_rc 0; expect_file "$T/$type.model"; expect_file "$T/$type.vocab"
    expect_err "4288 sentences sampled of 4288"
    # every line (CR kept, as spm_encode reads it) as one document
    python3 -c "
import json, sys
for line in open(sys.argv[1], 'rb').read().split(b'\n')[:-1]:
    print(json.dumps({'text': line.decode('utf-8')}))" "$T/botchan.txt" > "$T/lines.jsonl"
    run "$SLUICE" tokenize -q --tokenizer "spm:$T/$type.model" --out "$T/enc_$type" "$T/lines.jsonl"
    expect_rc 0
    "$SLUICE" dataset cat --ids "$T/enc_${type}_text_document" > "$T/ours"
    spm_encode --model "$T/$type.model" --output_format=id < "$T/botchan.txt" > "$T/theirs"
    expect_eq "$(wc -l < "$T/ours")" 4288
    cmp -s "$T/ours" "$T/theirs" && ok || fail "ids differ from spm_encode"
    expect_eq "$(json "$T/enc_$type.manifest.json" "m['settings']['dtype']")" uint16
done

case_ "NeMo's special ids by default"
"$SLUICE" tokenize -q --tokenizer "spm:$T/bpe.model" --append-eod --out "$T/e" "$T/lines.jsonl"
expect_eq "$(json "$T/e.manifest.json" "m['settings']['eod_id']")" 3
expect_eq "$(head -1 "$T/bpe.vocab" | cut -f1)" "<pad>"
expect_eq "$(sed -n 2p "$T/bpe.vocab" | cut -f1)" "<unk>"

case_ "a sample of 500 sentences is deterministic"
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 500 --threads 1 --input-sentence-size 500 --out "$T/s1" "$T/botchan.txt"
expect_rc 0; expect_err "500 sentences sampled of 4288"
mkdir -p "$T/again"
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 500 --threads 1 --input-sentence-size 500 --out "$T/again/s1" "$T/botchan.txt"
cmp -s "$T/s1.model" "$T/again/s1.model" && ok || fail "two runs gave different models"
if have_mpi; then
    mkdir -p "$T/mpi"
    run "${MPIRUN[@]}" -np 2 "$SLUICE" tokenizer train --model-type bpe --vocab-size 500 --threads 1 \
        --input-sentence-size 500 --out "$T/mpi/s1" "$T/botchan.txt"
    expect_rc 0
    cmp -s "$T/s1.model" "$T/mpi/s1.model" && ok || fail "-np 2 gave a different model"
fi

case_ "JSONL input, options passed through"
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 600 --threads 1 --byte-fallback --split-digits \
    --user-defined-symbols '<sep>' --spm-option max_sentencepiece_length=8 --out "$T/j" "$T/lines.jsonl"
expect_rc 0
grep -q '<0x41>' "$T/j.vocab" && ok || fail "no byte pieces"
grep -q '^<sep>' "$T/j.vocab" && ok || fail "no user-defined symbol"

case_ "a bad spm option is a clear error"
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 600 --spm-option no_such_flag=1 --out "$T/z" "$T/botchan.txt"
expect_rc 1; expect_err "SentencePiece training failed"
expect_no_file "$T/z.model"

case_ "--out in a missing directory: created before the training; a file in the way fails first"
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 600 --threads 1 --out "$T/new/deep/spm" "$T/botchan.txt"
expect_rc 0; expect_file "$T/new/deep/spm.model"; expect_file "$T/new/deep/spm.vocab"
: > "$T/afile"
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 600 --threads 1 --out "$T/afile/x/spm" "$T/botchan.txt"
expect_rc 1; expect_err "cannot create directory '$T/afile/x'"
expect_no_err "sentences sampled"   # before the sampling and the training, not after

case_ "-q is quiet (no LOG(INFO) of the trainer); its errors name our flags"
run "$SLUICE" tokenizer train -q --model-type bpe --vocab-size 600 --threads 1 --out "$T/q" "$T/botchan.txt"
expect_rc 0; expect_err_empty
run "$SLUICE" tokenizer train --model-type bpe --vocab-size 600 --threads 1 --out "$T/q2" "$T/botchan.txt"
expect_rc 0; expect_no_err "LOG(INFO)"
run "$SLUICE" tokenizer train -q --model-type unigram --vocab-size 30 --threads 1 --out "$T/q3" "$T/botchan.txt"
expect_rc 1; expect_err "--character-coverage"; expect_no_err "--character_coverage"; expect_no_err "LOG(INFO)"

finish
