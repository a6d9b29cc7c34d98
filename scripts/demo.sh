#!/usr/bin/env bash
# make demo: run configs/pipelines/demo.yaml over the samples in examples/ (extract, clean,
# filter, dedup, tokenizer training, tokenization, tiny-gpt training) and summarise:
# documents in and out per stage, tokens, the validation loss, a sample of generated text,
# and the pictures funnel.svg and loss.svg. DEMO_OUT names the work directory (default
# demo-out); a second run skips what is complete, DEMO_FRESH=1 starts over.
set -euo pipefail
sluice=${1:-build/sluice}
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-demo-out}
[ "${DEMO_FRESH:-0}" = 1 ] && rm -rf "$out"
start=$(date +%s)
echo "== sluice demo: configs/pipelines/demo.yaml over examples/ (work directory $out)"
"$sluice" run configs/pipelines/demo.yaml work_dir="$out" "${@:2}"
python3 - "$out" <<'PY'
import glob, json, math, sys
out = sys.argv[1]
s = json.load(open(out + "/summary.json"))
steps = {st["step"]: st for st in s["steps"]}
extracted = sum(st["documents_out"] for st in s["steps"] if st["stage"] == "extract")
tok = [st for st in s["steps"] if st["stage"] == "tokenize"]
print()
print("documents: %d extracted from examples/, %d left after filter and dedup (%.0f%%)" % (
    extracted, tok[0]["documents_in"], 100.0 * tok[0]["documents_in"] / max(extracted, 1)))
print("tokens: %d in %s" % (tok[0]["tokens"], tok[0]["out"]))
t = s.get("train")
if t:
    ckpts = sorted(glob.glob(t["out"] + "/checkpoints/step-*/checkpoint.json"))
    vocab = json.load(open(ckpts[-1]))["model"]["vocab_size"] if ckpts else 2048
    print("training: %d steps in %.0f s; final training loss %.3f, validation loss %.3f nats/token"
          " (uniform guessing: ln %d = %.3f)" % (t["steps"], t["seconds"], t["loss"],
                                                  t.get("val_loss", float("nan")), vocab, math.log(vocab)))
PY
ckpt=$(ls -d "$out"/train/checkpoints/step-* 2>/dev/null | sort | tail -1 || true)
if [ -n "$ckpt" ]; then
    gen=("$sluice" generate "$ckpt" --prompt "The history of" --max-tokens 60 --temperature 0.8
        --top-p 0.95 --tokenizer "spm:$out/tokenizer_train/tokenizer.model")
    echo
    echo "== a sample of generated text: ${gen[*]}"
    "${gen[@]}"
fi
echo
echo "pictures: $out/funnel.svg (documents after each stage), $out/loss.svg (the loss curve)"
echo "demo took $(( $(date +%s) - start )) s"
