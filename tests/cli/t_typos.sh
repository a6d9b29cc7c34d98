#!/usr/bin/env bash
# Typos get the nearest known name from the same table: model YAML keys (before a check of
# the default value could hide them), data.* overrides, filter parameters, and command
# options, the peers' names included (Megatron's --output-prefix, --tokenizer-type).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

echo '{"text": "a few words of text here"}' > "$T/d.jsonl"

case_ "model YAML: num_layer is an unknown key, not 'num_layers must be positive'"
sed 's/^  num_layers:/  num_layer:/' "$ROOT/configs/models/tiny-gpt.yaml" > "$T/m1.yaml"
grep -q '^  num_layer:' "$T/m1.yaml" && ok || fail "the config has no num_layers line"
run "$SLUICE" train "$T/m1.yaml" data=synthetic train.steps=1
expect_rc 2; expect_err "m1.yaml:"; expect_err "unknown key 'model.num_layer'"
expect_err "did you mean 'num_layers'?"; expect_no_err "must be a positive"

case_ "optim: lrr suggests lr, not eps"
sed 's/^  lr:/  lrr:/' "$ROOT/configs/models/tiny-gpt.yaml" > "$T/m2.yaml"
run "$SLUICE" train "$T/m2.yaml" data=synthetic train.steps=1
expect_rc 2; expect_err "unknown key 'optim.lrr'"; expect_err "did you mean 'lr'?"

case_ "data.prefx on the command line suggests prefix"
run "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" data.prefx=x train.steps=1
expect_rc 2; expect_err "unknown key 'data.prefx'"; expect_err "did you mean 'prefix'?"

case_ "filter parameters: min_doc_word, line_punct_th"
printf 'filters:\n  - gopher_quality:\n      min_doc_word: 10\n' > "$T/f1.yaml"
run "$SLUICE" filter --config "$T/f1.yaml" --out "$T/o1" "$T/d.jsonl"
expect_rc 1; expect_err "f1.yaml:3: unknown key 'filters.0.gopher_quality.min_doc_word'"
expect_err "did you mean 'min_doc_words'?"
printf 'filters:\n  - fineweb_quality:\n      line_punct_th: 0.1\n' > "$T/f2.yaml"
run "$SLUICE" filter --config "$T/f2.yaml" --out "$T/o2" "$T/d.jsonl"
expect_rc 1; expect_err "did you mean 'line_punct_thr'?"
printf 'filters:\n  - fineweb_quality:\n      linepunctthr: 0.1\n' > "$T/f3.yaml"
run "$SLUICE" filter --config "$T/f3.yaml" --out "$T/o3" "$T/d.jsonl"
expect_rc 1; expect_err "did you mean 'line_punct_thr'?"
run "$SLUICE" filter --config "$T/f3.yaml" --set filters.fineweb_quality.line_punct_th=1 --out "$T/o3" "$T/d.jsonl"
expect_rc 1; expect_err "did you mean 'line_punct_thr'?"

case_ "command options: Megatron's names point to ours"
run "$SLUICE" tokenize --output-prefix x "$T/d.jsonl"
expect_rc 2; expect_err "unknown option '--output-prefix'"; expect_err "did you mean '--out'?"
run "$SLUICE" tokenize --tokenizer-type GPT2BPETokenizer "$T/d.jsonl"
expect_rc 2; expect_err "did you mean '--tokenizer'?"
run "$SLUICE" tokenize --json-keys text "$T/d.jsonl"
expect_rc 2; expect_err "did you mean '--json-key'?"
run "$SLUICE" tokenize --input "$T/d.jsonl"
expect_rc 2; expect_err "give the inputs as operands"
run "$SLUICE" tokenizer train --model_prefix x "$T/d.jsonl"
expect_rc 2; expect_err "did you mean '--out'?"

finish
