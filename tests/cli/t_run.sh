#!/usr/bin/env bash
# sluice run: --keys and --dry-run, overrides and stages=[...], unknown keys named by
# FILE:LINE, skipping complete steps, running again what changed, a run killed (SIGKILL)
# in the middle of a stage that resumes and ends with the same outputs as a run that was
# never stopped, the train stage, and mpirun -np 2 giving the outputs of -np 1.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
EX="$ROOT/examples"

mkdir -p "$T/gpt2" "$T/big"
zstd -q -d "$FIX/tokenizer/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$FIX/tokenizer/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
# 16 files x 3000 documents (about 45 MB): clean takes a few seconds, time to stop it
python3 - "$T/big" <<'PY'
import json, random, sys
random.seed(7)
words = ("the of and to in a is that for it as was with be by on not he this are or his from at "
         "which but have an they you were her she there been one all we their has would when if "
         "river mountain city history music science water light house garden school market").split()
for f in range(16):
    with open("%s/in-%02d.jsonl" % (sys.argv[1], f), "w") as o:
        for d in range(3000):
            text = " ".join(random.choice(words) for _ in range(random.randint(50, 400))) + "."
            if d % 50 == 0:
                text = "duplicate document %d" % (d % 200)
            o.write(json.dumps({"text": text, "n": d}) + "\n")
PY
cat > "$T/p.yaml" <<EOF
# a test pipeline
name: big
work_dir: $T/w
extract:
  format: jsonl
  in: $T/big
clean:
  nfkc: false
dedup_exact: {}
tokenize:
  tokenizer: gpt2:$T/gpt2
  append_eod: true
EOF

case_ "--keys lists every stage's keys, the train stage's too"
run "$SLUICE" run --keys
expect_rc 0; expect_out "dedup_fuzzy: sluice dedup fuzzy"; expect_out "file_numbers"
expect_out "train: sluice train"; expect_out "the model and run config"

case_ "-h"
run "$SLUICE" run -h
expect_rc 0; expect_out "usage: sluice run PIPELINE.yaml [key=value ...] [--dry-run]"

case_ "--dry-run prints the command lines in order and creates nothing"
run "$SLUICE" run "$T/p.yaml" --dry-run
expect_rc 0
expect_eq "$(sed -n 1p "$T/out")" "sluice extract --out $T/w/extract --format jsonl $T/big"
expect_eq "$(sed -n 2p "$T/out")" "sluice clean --out $T/w/clean $T/w/extract"
expect_eq "$(sed -n 3p "$T/out")" "sluice dedup exact --out $T/w/dedup_exact $T/w/clean"
expect_eq "$(sed -n 4p "$T/out")" \
    "sluice tokenize --out $T/w/tokenize/big --tokenizer gpt2:$T/gpt2 --append-eod $T/w/dedup_exact"
expect_eq "$(wc -l < "$T/out")" 4
expect_no_file "$T/w"

case_ "overrides: a stage's key, work_dir, a variable; stages=[...] picks stages"
run "$SLUICE" run "$T/p.yaml" --dry-run clean.nfkc=true work_dir="$T/w2" 'stages=[clean,tokenize]'
expect_rc 0
expect_eq "$(cat "$T/out")" "sluice clean --out $T/w2/clean --nfkc $T/w2/extract
sluice tokenize --out $T/w2/tokenize/big --tokenizer gpt2:$T/gpt2 --append-eod $T/w2/dedup_exact"

case_ "a stage option its command refuses: --dry-run fails as the run would, naming the step"
run "$SLUICE" run "$T/p.yaml" --dry-run clean.level=99
expect_rc 2; expect_err "step 'clean': --level must be 1..22"
expect_err "command: sluice clean --out $T/w/clean --level 99 $T/w/extract"
expect_out_empty; expect_no_file "$T/w"
run "$SLUICE" run "$T/p.yaml" clean.level=99
expect_rc 2; expect_err "step 'clean': --level must be 1..22"; expect_no_file "$T/w"

case_ "an unknown key in the file: FILE:LINE and the nearest key"
sed 's/  nfkc: false/  nfck: false/' "$T/p.yaml" > "$T/typo.yaml"
run "$SLUICE" run "$T/typo.yaml" --dry-run
expect_rc 2; expect_err "$T/typo.yaml:8"; expect_err "unknown key 'nfck'"; expect_err "did you mean 'nfkc'?"

case_ "an unknown stage at the top level: FILE:LINE"
printf 'extract:\n  format: jsonl\n  in: x\ncleen: {}\n' > "$T/typo2.yaml"
run "$SLUICE" run "$T/typo2.yaml" --dry-run
expect_rc 2; expect_err "$T/typo2.yaml:4"; expect_err "did you mean 'clean'?"

case_ "an unknown key or stage given on the command line"
run "$SLUICE" run "$T/p.yaml" --dry-run clean.bogus=1
expect_rc 2; expect_err "unknown key 'bogus'"
run "$SLUICE" run "$T/p.yaml" --dry-run 'stages=[extract,dedup]'
expect_rc 2; expect_err "unknown stage 'dedup'"
run "$SLUICE" run "$T/p.yaml" --dry-run 'stages=[filter]'
expect_rc 2; expect_err "stage 'filter' has no section"
run "$SLUICE" run "$T/p.yaml" notanoverride
expect_rc 2; expect_err "is not a key=value override"

case_ "stages=[extract,clean] runs those two only"
run "$SLUICE" run "$T/p.yaml" work_dir="$T/ref" 'stages=[extract,clean]'
expect_rc 0; expect_out "2 of 2 steps ran"
expect_file "$T/ref/clean/manifest.json"; expect_no_file "$T/ref/dedup_exact"

case_ "the whole pipeline next: the complete stages are skipped"
run "$SLUICE" run "$T/p.yaml" work_dir="$T/ref"
expect_rc 0; expect_out "2 of 4 steps ran, 2 were complete"
expect_err "[1/4] extract: complete, skipped"; expect_err "[2/4] clean: complete, skipped"
# dedup: every 50th document is one of 4 texts: 16 x 60 copies, 4 kept
expect_eq "$(json "$T/ref/summary.json" "[s['documents_out'] for s in m['steps']]")" \
    "[48000, 48000, 47044, 47044]"
expect_file "$T/ref/funnel.svg"

case_ "run again: nothing to do"
run "$SLUICE" run "$T/p.yaml" work_dir="$T/ref"
expect_rc 0; expect_out "0 of 4 steps ran, 4 were complete"

case_ "an input changed: its stage and every stage after it run again"
cp -r "$T/ref" "$T/ref2"
sed -i 's/"n": 7}/"n": 7, "x": 1}/' "$T/big/in-15.jsonl"
run "$SLUICE" run "$T/p.yaml" work_dir="$T/ref2" --dry-run
expect_rc 0
expect_eq "$(grep -c '^# complete' "$T/out" || true)" 0
expect_out "sluice extract --out $T/ref2/extract --format jsonl $T/big --force"
run "$SLUICE" run "$T/p.yaml" work_dir="$T/ref2"
expect_rc 0; expect_out "4 of 4 steps ran"; expect_err "extract (again: "
sed -i 's/"n": 7, "x": 1}/"n": 7}/' "$T/big/in-15.jsonl"
rm -rf "$T/ref2"

case_ "SIGKILL in the middle of clean: the next run resumes it; the outputs equal an uninterrupted run's"
"$SLUICE" run "$T/p.yaml" work_dir="$T/k" >"$T/k.out" 2>"$T/k.err" &
pid=$!
for _ in $(seq 600); do
    n=$(ls "$T/k/clean" 2>/dev/null | grep -c '^part-' || true)
    [ "$n" -ge 3 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.02
done
kill -KILL $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
if [ -e "$T/k/clean/manifest.json" ]; then fail "clean finished before the kill"; else ok; fi
run "$SLUICE" run "$T/p.yaml" work_dir="$T/k"
expect_rc 0
expect_err "[1/4] extract: complete, skipped"; expect_err "[2/4] clean (resuming)"
for f in $(cd "$T/ref" && find . -name 'part-*' -o -name '*.bin' -o -name '*.idx' | sort); do
    cmp -s "$T/ref/$f" "$T/k/$f" && ok || fail "$f differs from the uninterrupted run's"
done
expect_eq "$(cd "$T/k" && find . -name 'part-*' | sort | wc -l)" "$(cd "$T/ref" && find . -name 'part-*' | sort | wc -l)"
for s in extract clean dedup_exact; do
    expect_eq "$(json "$T/k/$s/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
              "$(json "$T/ref/$s/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
done
expect_no_partials "$T/k"

# a small pipeline through tokenizer training and training, on the bundled JSONL samples
cat > "$T/small.yaml" <<EOF
name: small
extract:
  format: jsonl
  in: $EX/jsonl
clean: {}
dedup_exact: {}
dedup_fuzzy: {}
tokenizer_train:
  vocab_size: 1000
  character_coverage: 0.99
  input_sentence_size: 4000
tokenize:
  append_eod: true
train:
  config: $ROOT/configs/models/tiny-gpt.yaml
  model: {max_position_embeddings: 32}
  train: {steps: 4, seq_len: 32, micro_batch_size: 2, global_batch_size: 4}
  eval: {interval: 2, iters: 1}
EOF

case_ "the train stage: data from tokenize, vocabulary from tokenizer_train, checkpoints and log in its directory"
run "$SLUICE" run "$T/small.yaml" work_dir="$T/s0" --dry-run 'stages=[train]'
expect_rc 0
expect_eq "$(cat "$T/out")" "sluice train $ROOT/configs/models/tiny-gpt.yaml model.max_position_embeddings=32 train.steps=4 train.seq_len=32 train.micro_batch_size=2 train.global_batch_size=4 eval.interval=2 eval.iters=1 data.prefix=$T/s0/tokenize/small_text_document model.vocab_size=1000 data.cache_dir=$T/s0/train/index-cache checkpoint.dir=$T/s0/train/checkpoints log.file=$T/s0/train/log.jsonl"
run "$SLUICE" run "$T/small.yaml" work_dir="$T/s0"
expect_rc 0; expect_out "7 of 7 steps ran"; expect_out "train                  4 steps"
expect_file "$T/s0/train/checkpoints/step-00000004"; expect_file "$T/s0/loss.svg"
expect_eq "$(json "$T/s0/summary.json" "m['train']['steps']")" 4

case_ "the train stage changed (more steps): it starts afresh, not from the old checkpoint"
run "$SLUICE" run "$T/small.yaml" work_dir="$T/s0" train.train.steps=6
expect_rc 0; expect_out "1 of 7 steps ran"; expect_err "train.resume=none"
expect_no_file "$T/s0/train/checkpoints/step-00000004"
expect_eq "$(json "$T/s0/summary.json" "m['train']['steps']")" 6
expect_eq "$(grep -c '"type":"train"' "$T/s0/train/log.jsonl")" 6

if have_mpi; then
    for np in 1 2; do
        case_ "mpirun -np $np"
        run timeout 300 "${MPIRUN[@]}" -np $np "$SLUICE" run "$T/small.yaml" work_dir="$T/np$np"
        expect_rc 0; expect_out "7 of 7 steps ran"
    done
    case_ "mpirun -np 2 gives the outputs of -np 1"
    for f in $(cd "$T/np1" && find . -name 'part-*' -o -name '*.bin' -o -name '*.idx' -o -name '*.model' | sort); do
        cmp -s "$T/np1/$f" "$T/np2/$f" && ok || fail "$f differs between -np 1 and -np 2"
    done
    for s in extract clean dedup_exact dedup_fuzzy; do
        expect_eq "$(json "$T/np2/$s/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
                  "$(json "$T/np1/$s/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
    done
    # data parallel training: the same samples, gradients summed in another order
    python3 - "$T/np1/summary.json" "$T/np2/summary.json" <<'PY' && ok || fail "training losses differ"
import json, sys
a, b = (json.load(open(p))["train"] for p in sys.argv[1:])
assert a["steps"] == b["steps"] == 4, (a, b)
assert abs(a["loss"] - b["loss"]) < 1e-3 and abs(a["val_loss"] - b["val_loss"]) < 1e-3, (a, b)
PY
else
    echo "skip: mpirun not found"
fi

finish
