#!/usr/bin/env bash
# bench/train_gpu.sh's rows without a GPU (a stand-in nvidia-smi, and a stand-in trainer that
# writes a log of 20 steps; the labels come from the real sluice's --print-config): every
# row says its layers (of the model's), sequence x micro-batch (global batch) and
# recomputation; the llama3-8b slice (8 of 32 layers) gets its transformer layers' own MFU
# beside the whole slice's, with the output layer's share of the slice's FLOP and of the
# whole model's; a whole model gets no such line; the rate is the median step time of the
# steps after the first 10; llm.c without LLMC_DIR is "not comparable" with the reason.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# the stand-in trainer: --print-config from sluice; a run writes 20 train lines, steps 1-10
# at 2x the time (warm-up), then STEP_S x 0.96, 1.04, 1.00 in turn (median STEP_S), at
# FLOP_TOK FLOP per token, seq x micro-batch tokens a step
mkdir -p "$T/bin"
cat >"$T/bin/sluice" <<SH
#!/usr/bin/env bash
for a in "\$@"; do [ "\$a" = --print-config ] && exec "$SLUICE" "\$@"; done
seq=1024 mb=1 log=
for a in "\$@"; do
    case \$a in
    log.file=*) log=\${a#log.file=} ;;
    train.seq_len=*) seq=\${a#*=} ;;
    train.micro_batch_size=*) mb=\${a#*=} ;;
    esac
done
python3 - "\$log" \$((seq * mb)) <<'PY'
import json, os, sys
log, tokens = sys.argv[1], int(sys.argv[2])
step_s, flop = float(os.environ["STEP_S"]), float(os.environ["FLOP_TOK"])
with open(log, "w") as f:
    for s in range(1, 21):
        t = 2 * step_s if s <= 10 else step_s * (0.96, 1.04, 1.0)[s % 3]
        f.write(json.dumps({"type": "train", "step": s, "loss": 10.5, "step_time_s": t,
                            "tokens_per_s": tokens / t, "tflops_per_rank": flop * tokens / t / 1e12}) + "\n")
PY
SH
printf '#!/bin/sh\n[ "$1" = -L ] && echo "GPU 0: NVIDIA H100 (UUID: GPU-0)" && exit 0\necho "NVIDIA H100, 81559 MiB, 570.00"\n' >"$T/bin/nvidia-smi"
chmod +x "$T/bin/sluice" "$T/bin/nvidia-smi"

STEP_S=0.25
FLOP_TOK=2.0e10
run env PATH="$T/bin:$PATH" STEP_S=$STEP_S FLOP_TOK=$FLOP_TOK SECTIONS="gpt2 large" B=16 \
    "$ROOT/bench/train_gpu.sh" "$T/bin/sluice"
case_ "the benchmark runs on the stand-ins"
expect_rc 0
case_ "llm.c without LLMC_DIR: not comparable, with the reason"
expect_out "llm.c: not comparable (LLMC_DIR is not set"
case_ "GPT-2 rows labelled: 12 of 12 layers, seq 1024 x 16 (global 16), recompute none and selective"
expect_out "sluice gpt2-124m [12 of 12 layers, seq 1024 x 16 (global 16), recompute none]"
expect_out "sluice gpt2-124m selective [12 of 12 layers, seq 1024 x 16 (global 16), recompute selective]"
case_ "gpt3-1.3b labelled: 24 of 24 layers, seq 2048 x 4 (global 4), recompute selective"
expect_out "gpt3-1.3b [24 of 24 layers, seq 2048 x 4 (global 4), recompute selective]"
case_ "llama3-8b labelled as the slice it is: 8 of 32 layers, seq 8192 x 1 (global 1), recompute selective"
expect_out "llama3-8b slice (8 of 32 layers) [8 of 32 layers, seq 8192 x 1 (global 1), recompute selective]"

# the expected figures: tokens/s at the median step time after the warm-up, MFU at 989
# TFLOP/s; the output layer 6 x hidden x vocab FLOP per token (docs/trainer.md), read from
# the model's config
read -r tok mfu lay share whole <<<"$(python3 - "$ROOT/configs/models/llama3-8b.yaml" $STEP_S $FLOP_TOK <<'PY'
import re, sys
cfg = open(sys.argv[1]).read()
get = lambda k: int(re.search(r"^\s*%s:\s*(\d+)" % k, cfg, re.M).group(1))
step, flop = float(sys.argv[2]), float(sys.argv[3])
out = 6 * get("hidden_size") * get("vocab_size")
tok = 8192 / step
whole = out + (flop - out) * get("num_layers") / 8
print(f"{tok:.0f} {100 * flop * tok / 1e12 / 989:5.1f} {100 * (flop - out) * tok / 1e12 / 989:5.1f} "
      f"{100 * out / flop:.1f} {100 * out / whole:.1f}")
PY
)"
row=$(grep '^llama3-8b slice (8 of 32 layers) ' "$T/out" | grep 'tokens/s')
case_ "llama3-8b slice: tokens/s at the median step after warm-up ($tok), MFU $mfu%"
expect_eq "$(echo "$row" | awk '{ print $7 }')" "$tok"
expect_out "MFU $(printf '%5s' "$mfu")%"
case_ "llama3-8b slice: the transformer layers' own MFU ($lay%) and the output layer's share ($share% of the slice, $whole% of the whole model)"
expect_out "  8 of 32 layers: the transformer layers alone MFU $(printf '%5s' "$lay")% (the output layer is $share% of this slice's FLOP, $whole% of the whole model's)"
case_ "a whole model is not called a slice and has no transformer-layers line"
expect_eq "$(grep -c '^gpt3-1.3b  .*tokens/s' "$T/out")" 1
expect_eq "$(grep -c 'the transformer layers alone' "$T/out")" 1

finish
