#!/usr/bin/env bash
# train.dump_grads and tests/oracle/grad_compare.py, the per-tensor gradient comparison that
# tests/gpu/t_train_gpu.sh runs GPU against CPU: here CPU against CPU, so that the harness
# itself is tested. One rank with 2 accumulation steps against 2 ranks (mpirun) for tiny-gpt
# and tiny-llama agree to fp32 rounding; a dump with a wrong dK (the k rows of one qkv
# gradient zeroed) fails at the GPU tolerance although the global gradient norm barely moves;
# a 0.1% error in one tensor fails at the CPU tolerance; names are the checkpoint's.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CMP=("$PY" "$ROOT/tests/oracle/grad_compare.py")
PREFIX="$FIX/tinyshakespeare/tinyshakespeare_text_document"
COMMON=(data.prefix="$PREFIX" data.cache_dir="$T/cache" train.seq_len=32 train.steps=1
        eval.interval=0 train.global_batch_size=4 train.threads=1)

for model in gpt llama; do
    cfg="$ROOT/configs/models/tiny-$model.yaml"
    run "$SLUICE" train "$cfg" "${COMMON[@]}" train.micro_batch_size=2 train.dump_grads="$T/$model-1" \
        log.file="$T/$model-1.jsonl" checkpoint.dir="$T/$model-ck"
    case_ "$model: train.dump_grads on 1 rank (2 accumulation steps)"
    expect_rc 0
    expect_file "$T/$model-1/grads-step-000001.safetensors"
    case_ "$model: the dump holds every parameter under its checkpoint name, and its norm is the logged grad_norm"
    "$PY" - "$T/$model-1/grads-step-000001.safetensors" "$T/$model-ck/step-00000001/model.safetensors" \
        "$T/$model-1.jsonl" <<'PY' && ok || fail "see above"
import json, sys
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0] if "/" in sys.argv[0] else ".")
import numpy as np
def load(p):
    import struct
    raw = open(p, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    h = json.loads(raw[8:8 + n]); h.pop("__metadata__", None)
    return {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], "<f4")
            for k, v in h.items()}
g, m = load(sys.argv[1]), load(sys.argv[2])
norm = float(np.sqrt(sum(np.sum(v.astype(np.float64) ** 2) for v in g.values())))
logged = [json.loads(l) for l in open(sys.argv[3])][-1]["grad_norm"]
print(f"  {len(g)} tensors; norm {norm:.8g}, logged {logged:.8g}")
assert sorted(g) == sorted(m), (sorted(g), sorted(m))
assert all(g[k].size == m[k].size for k in g)
assert abs(norm - logged) <= 1e-5 * logged, (norm, logged)
PY
    if have_mpi; then
        run "${MPIRUN[@]}" -np 2 "$SLUICE" train "$cfg" "${COMMON[@]}" train.micro_batch_size=2 \
            train.dump_grads="$T/$model-2"
        case_ "$model: train.dump_grads under mpirun -np 2"
        expect_rc 0
        case_ "$model: 2 ranks = 1 rank x 2 accumulation steps, every tensor (rtol 1e-4)"
        run "${CMP[@]}" --rtol 1e-4 "$T/$model-2/grads-step-000001.safetensors" \
            "$T/$model-1/grads-step-000001.safetensors"
        expect_rc 0
        expect_out "[k]"
    else
        echo "  skip: mpirun not found: 2 ranks against 1"
    fi
    case_ "$model: a wrong dK fails the comparison at the GPU tolerance"
    run "${CMP[@]}" --perturb dk "$T/$model-1/grads-step-000001.safetensors" "$T/$model-dk.safetensors"
    expect_rc 0
    run "${CMP[@]}" --rtol 5e-2 "$T/$model-dk.safetensors" "$T/$model-1/grads-step-000001.safetensors"
    expect_rc 1
    expect_out "FAIL layers.0.attn.qkv.weight[k]"
    expect_no_err "Traceback"
    case_ "$model: a 0.1% error in one tensor fails at the CPU tolerance"
    run "${CMP[@]}" --perturb scale "$T/$model-1/grads-step-000001.safetensors" "$T/$model-sc.safetensors"
    run "${CMP[@]}" --rtol 1e-4 "$T/$model-sc.safetensors" "$T/$model-1/grads-step-000001.safetensors"
    expect_rc 1
    expect_out "FAIL layers.0.mlp.proj.weight"
    case_ "$model: a dump compared with itself passes"
    run "${CMP[@]}" --rtol 0 "$T/$model-1/grads-step-000001.safetensors" "$T/$model-1/grads-step-000001.safetensors"
    expect_rc 0
done

case_ "the two models' dumps do not compare (different tensors)"
run "${CMP[@]}" "$T/gpt-1/grads-step-000001.safetensors" "$T/llama-1/grads-step-000001.safetensors"
expect_rc 1
expect_out "tensor names differ"

case_ "train.dump_grads into a path that cannot be a directory"
run "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" "${COMMON[@]}" train.micro_batch_size=2 \
    train.dump_grads=/dev/null/x
expect_rc 1
expect_err "train.dump_grads"

finish
