"""Check a `sluice export hf` directory against the checkpoint it came from.

usage: check_hf.py STEP_DIR HF_DIR

Always (numpy): config.json describes the model; model.safetensors has exactly the tensor
names and shapes transformers expects for GPT2LMHeadModel / LlamaForCausalLM; mapping them
back with the HF conventions (Conv1D stores [in, out]; q/k/v and gate/up are separate)
gives logits equal to the checkpoint's. When transformers and torch import: the directory
loads with AutoModelForCausalLM as the right class and its logits match (rel err <= 1e-4).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_numpy as mn  # noqa: E402

bad = []


def check(name, ok, detail=""):
    print("%s %s %s" % ("ok  " if ok else "FAIL", name, detail))
    if not ok:
        bad.append(name)


def expected_names(cfg, arch):
    L = cfg["num_layers"]
    if arch == "GPT2LMHeadModel":
        n = {"transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight",
             "transformer.ln_f.bias"}
        for i in range(L):
            for s in ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                      "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                      "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"):
                n.add("transformer.h.%d.%s" % (i, s))
    else:
        n = {"model.embed_tokens.weight", "model.norm.weight"}
        for i in range(L):
            for s in ("input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                      "self_attn.v_proj.weight", "self_attn.o_proj.weight",
                      "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                      "mlp.down_proj.weight"):
                n.add("model.layers.%d.%s" % (i, s))
    if not cfg["share_embeddings_and_output_weights"]:
        n.add("lm_head.weight")
    return n


def from_hf(h, cfg, arch, padded):
    """HF tensors -> sluice names (the inverse mapping, written from the HF conventions)."""
    p = {}
    V, D = cfg["vocab_size"], cfg["hidden_size"]

    def pad(w):
        out = np.zeros((padded, w.shape[1]), dtype=w.dtype)
        out[:w.shape[0]] = w
        return out
    if arch == "GPT2LMHeadModel":
        p["embed.weight"] = pad(h["transformer.wte.weight"])
        p["pos_embed.weight"] = h["transformer.wpe.weight"]
        for i in range(cfg["num_layers"]):
            t = "transformer.h.%d." % i
            o = "layers.%d." % i
            p[o + "attn_norm.weight"] = h[t + "ln_1.weight"]
            p[o + "attn_norm.bias"] = h[t + "ln_1.bias"]
            p[o + "attn.qkv.weight"] = h[t + "attn.c_attn.weight"].T
            p[o + "attn.qkv.bias"] = h[t + "attn.c_attn.bias"]
            p[o + "attn.proj.weight"] = h[t + "attn.c_proj.weight"].T
            p[o + "attn.proj.bias"] = h[t + "attn.c_proj.bias"]
            p[o + "mlp_norm.weight"] = h[t + "ln_2.weight"]
            p[o + "mlp_norm.bias"] = h[t + "ln_2.bias"]
            p[o + "mlp.fc.weight"] = h[t + "mlp.c_fc.weight"].T
            p[o + "mlp.fc.bias"] = h[t + "mlp.c_fc.bias"]
            p[o + "mlp.proj.weight"] = h[t + "mlp.c_proj.weight"].T
            p[o + "mlp.proj.bias"] = h[t + "mlp.c_proj.bias"]
        p["final_norm.weight"] = h["transformer.ln_f.weight"]
        p["final_norm.bias"] = h["transformer.ln_f.bias"]
    else:
        p["embed.weight"] = pad(h["model.embed_tokens.weight"])
        for i in range(cfg["num_layers"]):
            t = "model.layers.%d." % i
            o = "layers.%d." % i
            p[o + "attn_norm.weight"] = h[t + "input_layernorm.weight"]
            p[o + "attn.qkv.weight"] = np.concatenate(
                [h[t + "self_attn.q_proj.weight"], h[t + "self_attn.k_proj.weight"],
                 h[t + "self_attn.v_proj.weight"]], 0)
            p[o + "attn.proj.weight"] = h[t + "self_attn.o_proj.weight"]
            p[o + "mlp_norm.weight"] = h[t + "post_attention_layernorm.weight"]
            p[o + "mlp.fc.weight"] = np.concatenate(
                [h[t + "mlp.gate_proj.weight"], h[t + "mlp.up_proj.weight"]], 0)
            p[o + "mlp.proj.weight"] = h[t + "mlp.down_proj.weight"]
        p["final_norm.weight"] = h["model.norm.weight"]
    if "lm_head.weight" in h:
        p["lm_head.weight"] = pad(h["lm_head.weight"])
    return p


def main():
    step_dir, hf_dir = sys.argv[1], sys.argv[2]
    meta = json.load(open(os.path.join(step_dir, "checkpoint.json")))
    cfg = meta["model"]
    ours, _ = mn.st_load(os.path.join(step_dir, "model.safetensors"))
    hc = json.load(open(os.path.join(hf_dir, "config.json")))
    arch = hc["architectures"][0]
    h, _ = mn.st_load(os.path.join(hf_dir, "model.safetensors"))
    want = expected_names(cfg, arch)
    check("tensor names for %s" % arch, set(h) == want,
          "missing %s extra %s" % (sorted(want - set(h))[:3], sorted(set(h) - want)[:3]))
    if arch == "GPT2LMHeadModel":
        check("config", hc["n_embd"] == cfg["hidden_size"] and hc["n_layer"] == cfg["num_layers"]
              and hc["vocab_size"] == cfg["vocab_size"] and hc["n_head"] == cfg["num_attention_heads"])
    else:
        check("config", hc["hidden_size"] == cfg["hidden_size"] and hc["num_key_value_heads"] == cfg["num_query_groups"]
              and hc["vocab_size"] == cfg["vocab_size"] and hc["rope_theta"] == cfg["rotary_base"])
    c = mn.Cfg(cfg)
    rng = np.random.default_rng(0)
    T = min(16, cfg["max_position_embeddings"])
    toks = rng.integers(0, cfg["vocab_size"], size=(2, T + 1))
    _, ref, _ = mn.forward_backward(ours, c, toks[:, :-1], toks[:, 1:], want_grads=False)
    back = from_hf(h, cfg, arch, cfg["padded_vocab_size"])
    _, got, _ = mn.forward_backward(back, c, toks[:, :-1], toks[:, 1:], want_grads=False)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    check("logits through the HF layout equal the checkpoint's", err <= 1e-12, "(rel err %.2e)" % err)
    try:
        import torch
        import transformers
    except Exception:
        print("skip transformers check: transformers/torch not importable")
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32)
        check("transformers loads %s" % arch, type(model).__name__ == arch, type(model).__name__)
        with torch.no_grad():
            lg = model(torch.tensor(toks[:, :-1])).logits.reshape(-1, cfg["vocab_size"]).double().numpy()
        err = np.abs(lg - ref).max() / np.abs(ref).max()
        check("transformers logits equal ours", err <= 1e-4, "(rel err %.2e)" % err)
    print("hf export: %d mismatches" % len(bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
