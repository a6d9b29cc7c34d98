"""Check a `sluice import hf` checkpoint against the Hugging Face directory it came from.

usage: check_import.py HF_DIR STEP_DIR [DUMP_DIR]

The HF tensors are read here (every shard of model.safetensors.index.json, F32/BF16/F16
widened to float32), mapped to sluice's names with the HF conventions (check_hf.from_hf;
GPT-2 names with or without the "transformer." prefix, buffers such as attn.bias ignored),
and must equal the imported parameters bit for bit (padded vocabulary rows zero). With
DUMP_DIR (a `sluice train ... train.resume=STEP_DIR debug.dump_dir=DUMP_DIR` run), the
logits the trainer computed for its first batch must equal the numpy model's logits of the
HF weights (relative error <= 1e-5).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_hf  # noqa: E402
import model_numpy as mn  # noqa: E402

bad = []


def check(name, ok, detail=""):
    print("%s %s %s" % ("ok  " if ok else "FAIL", name, detail))
    if not ok:
        bad.append(name)


def widen(raw, hdr):
    """st_load keeps BF16/F16 as raw integers: make float32 of them."""
    out = {}
    for k, v in raw.items():
        dt = hdr[k]["dtype"]
        if dt == "BF16":
            out[k] = (v.astype(np.uint32) << 16).view(np.float32)
        elif dt == "F16":
            out[k] = v.view(np.float16).astype(np.float32)
        else:
            out[k] = v
    return out


def load_hf(d):
    ix = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(ix))["weight_map"].values())) if os.path.exists(ix) else ["model.safetensors"]
    h = {}
    for f in files:
        raw, hdr = mn.st_load(os.path.join(d, f))
        h.update(widen(raw, hdr))
    # the original GPT-2 files have no "transformer." prefix
    for k in list(h):
        if k.startswith(("h.", "wte.", "wpe.", "ln_f.")):
            h["transformer." + k] = h.pop(k)
    return h


def main():
    hf_dir, step_dir = sys.argv[1], sys.argv[2]
    cfg = json.load(open(os.path.join(step_dir, "checkpoint.json")))["model"]
    hc = json.load(open(os.path.join(hf_dir, "config.json")))
    arch = "GPT2LMHeadModel" if hc["model_type"] == "gpt2" else "LlamaForCausalLM"
    h = load_hf(hf_dir)
    want = check_hf.from_hf(h, cfg, arch, cfg["padded_vocab_size"])
    ours, _ = mn.st_load(os.path.join(step_dir, "model.safetensors"))
    check("the same tensors", set(want) == set(ours),
          "missing %s extra %s" % (sorted(set(ours) - set(want))[:3], sorted(set(want) - set(ours))[:3]))
    diff = [k for k in want if k in ours and not np.array_equal(
        np.asarray(want[k], np.float32).reshape(ours[k].shape).view(np.uint32), ours[k].view(np.uint32))]
    check("every tensor bit for bit", not diff, "differ: %s" % diff[:3])
    if len(sys.argv) > 3:
        d, _ = mn.st_load(os.path.join(sys.argv[3], "step-000001.safetensors"))
        V = cfg["vocab_size"]
        tokens = d["tokens"].astype(np.int64)
        lg = d["logits"].reshape(-1, d["logits"].shape[-1])
        mb = lg.shape[0] // (tokens.shape[1] - 1)
        toks = tokens[:mb]
        p64 = {k: np.asarray(v, np.float64) for k, v in want.items()}
        _, ref, _ = mn.forward_backward(p64, mn.Cfg(cfg), toks[:, :-1], toks[:, 1:], want_grads=False)
        ref = np.asarray(ref).reshape(-1, np.asarray(ref).shape[-1])[:, :V]
        got = lg[:, :V].astype(np.float64)
        err = np.abs(got - ref).max() / np.abs(ref).max()
        check("the trainer's logits of the imported model equal numpy's of the HF weights",
              err <= 1e-5, "(rel err %.2e, %d positions)" % (err, got.shape[0]))
    print("hf import: %d mismatches" % len(bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
