#!/usr/bin/env bash
# sluice import hf: usage and docs; import(export(ckpt)) equals ckpt bit for bit for GPT-2
# and Llama; HF-layout fixtures written here with numpy (sharded with an index, BF16, the
# original GPT-2 names without "transformer." and with attn.bias buffers) import to the HF
# weights exactly, and the trainer's logits of an imported model equal the numpy model's of
# the HF weights; a run continues from the import; bad directories are clear errors.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ORACLE="$ROOT/tests/oracle"
MODELS="$ROOT/configs/models"
QUICK=(train.seq_len=16 train.micro_batch_size=2 train.global_batch_size=2 eval.interval=0
       model.vocab_size=300 model.num_layers=2 -q)

case_ "import -h: usage on stdout, the docs page shows it verbatim"
run "$SLUICE" import -h
expect_rc 0
expect_out "usage: sluice import hf DIR --out CKPT"
doc="$ROOT/docs/commands/import.md"
block=$(awk '/^## Usage/{u=1; next} u && /^```text/{b=1; next} b && /^```/{exit} b' "$doc")
expect_eq "$block" "$(cat "$T/out")" "(docs/commands/import.md ## Usage)"

case_ "usage errors exit 2"
run "$SLUICE" import onnx x --out y
expect_rc 2; expect_err "unknown import format onnx"
run "$SLUICE" import hf "$T"
expect_rc 2; expect_err "--out CKPT is required"

# trained checkpoints of both families (2 steps, so the weights are not the initial ones)
for m in tiny-gpt tiny-llama; do
    run "$SLUICE" train "$MODELS/$m.yaml" data=synthetic train.steps=2 "${QUICK[@]}" checkpoint.dir="$T/ck-$m"
    expect_rc 0
    run "$SLUICE" export hf --out "$T/hf-$m" "$T/ck-$m"
    expect_rc 0

    case_ "$m: import(export(ckpt)) equals ckpt bit for bit"
    run "$SLUICE" import hf "$T/hf-$m" --out "$T/im-$m"
    expect_rc 0
    expect_err "imported '$T/hf-$m'"
    run "$PY" - "$T/ck-$m/step-00000002" "$T/im-$m/step-00000000" <<'PY'
import json, struct, sys
def rd(p):
    b = open(p + "/model.safetensors", "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); h.pop("__metadata__")
    return h, b[8 + n:]
(h1, d1), (h2, d2) = rd(sys.argv[1]), rd(sys.argv[2])
m1 = json.load(open(sys.argv[1] + "/checkpoint.json"))["model"]
m2 = json.load(open(sys.argv[2] + "/checkpoint.json"))["model"]
print("header", h1 == h2, "data", d1 == d2, "model", m1 == m2)
PY
    expect_out "header True data True model True"
    run "$PY" "$ORACLE/check_import.py" "$T/hf-$m" "$T/im-$m/step-00000000"
    expect_rc 0
    expect_out "hf import: 0 mismatches"
done

# HF-layout fixtures the way published checkpoints store them
run "$PY" - "$T/hf-tiny-llama" "$T/llama-sharded" "$T/hf-tiny-gpt" "$T/gpt2-orig" <<'PY'
import json, os, shutil, struct, sys
import numpy as np
def rd(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], "<f4").reshape(v["shape"]) for k, v in h.items()}
def wr(p, tensors):
    hdr, off, blobs = {}, 0, []
    for k, (dt, a) in tensors.items():
        raw = a.tobytes(); hdr[k] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw); blobs.append(raw)
    hdr["__metadata__"] = {"format": "pt"}
    j = json.dumps(hdr).encode(); j += b" " * (-len(j) % 8)
    open(p, "wb").write(struct.pack("<Q", len(j)) + j + b"".join(blobs))
def bf16(a):  # round to nearest even, as torch does
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
# Llama: two BF16 shards and an index
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out); shutil.copy(src + "/config.json", out)
t = rd(src + "/model.safetensors"); names = sorted(t)
half = {n: ("model-%05d-of-00002.safetensors" % (1 + (i >= len(names) // 2))) for i, n in enumerate(names)}
for f in sorted(set(half.values())):
    wr(out + "/" + f, {n: ("BF16", bf16(t[n])) for n in names if half[n] == f})
json.dump({"metadata": {"total_size": 0}, "weight_map": half}, open(out + "/model.safetensors.index.json", "w"))
# GPT-2 as openai-community/gpt2 stores it: no "transformer." prefix, causal-mask buffers, F16 wte
src, out = sys.argv[3], sys.argv[4]
os.makedirs(out); shutil.copy(src + "/config.json", out)
t = rd(src + "/model.safetensors"); o = {}
for k, a in t.items():
    o[k[len("transformer."):] if k.startswith("transformer.") else k] = ("F16", a.astype(np.float16)) if "wte" in k else ("F32", a)
L = json.load(open(src + "/config.json"))["n_layer"]; P = json.load(open(src + "/config.json"))["n_positions"]
for i in range(L):
    o["h.%d.attn.bias" % i] = ("F32", np.tril(np.ones((1, 1, P, P), np.float32)))
wr(out + "/model.safetensors", o)
PY
expect_rc 0

for fx in llama-sharded gpt2-orig; do
    case_ "$fx: imports to the HF weights exactly; the trainer's logits equal numpy's"
    run "$SLUICE" import hf "$T/$fx" --out "$T/im-$fx"
    expect_rc 0
    cfgf="$T/im-$fx/model.yaml"
    expect_file "$cfgf"
    # one step from the import (zero moments), logits of the first batch dumped
    run "$SLUICE" train "$cfgf" data=synthetic train.steps=1 train.seq_len=16 train.micro_batch_size=2 \
        train.global_batch_size=2 eval.interval=0 train.resume="$T/im-$fx/step-00000000" \
        debug.dump_dir="$T/dump-$fx" checkpoint.dir="$T/cont-$fx" -q
    expect_rc 0
    expect_file "$T/cont-$fx/step-00000001/checkpoint.json"
    run "$PY" "$ORACLE/check_import.py" "$T/$fx" "$T/im-$fx/step-00000000" "$T/dump-$fx"
    expect_rc 0
    expect_out "hf import: 0 mismatches"
    grep "logits" "$T/out" | sed "s/^/  [$fx] /" || true
done

case_ "bad input: a missing tensor, a wrong shape, another model type, no weights"
mkdir -p "$T/bad1" "$T/bad2" "$T/bad3" "$T/bad4"
cp "$T/hf-tiny-llama/config.json" "$T/bad1/"
run "$PY" - "$T/hf-tiny-llama/model.safetensors" "$T/bad1/model.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
h.pop("model.norm.weight")
j = json.dumps(h).encode(); open(sys.argv[2], "wb").write(struct.pack("<Q", len(j)) + j + b[8 + n:])
PY
run "$SLUICE" import hf "$T/bad1" --out "$T/o1"
expect_rc 1
expect_err "tensor 'model.norm.weight' is missing"
expect_no_file "$T/o1/step-00000000"
"$PY" -c "import json,sys; c=json.load(open(sys.argv[1])); c['intermediate_size']=100; json.dump(c, open(sys.argv[2],'w'))" \
    "$T/hf-tiny-llama/config.json" "$T/bad2/config.json"
cp "$T/hf-tiny-llama/model.safetensors" "$T/bad2/"
run "$SLUICE" import hf "$T/bad2" --out "$T/o2"
expect_rc 1
expect_err "tensor 'model.layers.0.mlp.gate_proj.weight' has shape ["
expect_err "config.json gives [100, 64]"
echo '{"model_type": "mistral"}' > "$T/bad3/config.json"
run "$SLUICE" import hf "$T/bad3" --out "$T/o3"
expect_rc 1
expect_err "model_type 'mistral' is not supported"
cp "$T/hf-tiny-llama/config.json" "$T/bad4/"
run "$SLUICE" import hf "$T/bad4" --out "$T/o4"
expect_rc 1
expect_err "no model.safetensors or model.safetensors.index.json"
run "$SLUICE" import hf "$T/nonexistent" --out "$T/o5"
expect_rc 1
expect_err "config.json"

case_ "a Llama config.json without hidden_size: refused before allocating, with the sizes and the defaults taken"
# (transformers' default hidden_size 4096 made a 7B model over these weights: 26.7 GB asked)
rm -rf "$T/nohid"; cp -r "$T/hf-tiny-llama" "$T/nohid"
python3 - "$T/nohid/config.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); del m["hidden_size"]; m.pop("head_dim", None)
json.dump(m, open(sys.argv[1], "w"))
PY
run "$SLUICE" import hf "$T/nohid" --out "$T/im-nohid"
expect_rc 1
expect_err "the config describes a model of"; expect_err "it does not give hidden_size, whose defaults were taken"
expect_no_file "$T/im-nohid/step-00000000"

finish
