#!/usr/bin/env python3
"""Compare two gradient dumps of `sluice train train.dump_grads=DIR` tensor by tensor.

    grad_compare.py A.safetensors B.safetensors [--rtol R]   exit 0 when every part agrees
    grad_compare.py --perturb KIND IN OUT                      write a deliberately wrong copy

Every parameter's gradient of A is compared with B's (the reference) by its relative L2
error ||a - b|| / ||b||. Fused tensors are split first, so that a small part cannot hide
inside a large one: the qkv projection into its q, k and v rows (at initialisation the
gradients of q and k are 1% of v's or less, so a wrong dK would barely move the whole
tensor's error), and SwiGLU's fc into its gate and up rows. A part whose reference norm is
below FLOOR x the norm of the whole gradient is compared against that floor instead of its
own norm, so that rounding noise on a zero is not read as a 100% error: that is the k bias,
whose gradient is zero in exact arithmetic (softmax does not see a constant added to every
score; measured 2e-11 on the CPU). Its bf16 noise on the GPU is about 2^-9 ||dK|| (a sum
over tokens of dK rows each rounded once), ~2e-7 for tiny-gpt, against a floor of
1e-4 x 1.5 = 1.5e-4; every other part of the tiny models is above the floor (the smallest,
q and k of the qkv weight, about 7e-4) and is compared with its own norm. Non-finite values, missing tensors and shape
differences fail. One line per part is printed, the worst first.

Tolerances (the caller's --rtol): CPU against CPU (one rank with accumulation against two
ranks, both fp32) differs only in the order of fp32 sums: 1e-4. GPU against CPU: the GPU
keeps activations and the per-micro-batch gradients in bf16 (8 significant bits: one
rounding is a relative error of up to 2^-9 = 0.2%, 1.1e-3 RMS), and a parameter's gradient
is a product of a chain of such stored values (forward activations, then the backward's
dX of each layer it passes), so its relative L2 error is about sqrt(k) x 1.1e-3 for k
roundings on the path: about 1e-2 for the deepest tensors of a 2-layer model, more for the
attention's q/k parts, where dS = P (dP - rowsum) cancels. 5e-2 leaves that margin and is
still an order of magnitude below the error of a wrong gradient (a transposed dK, RoPE's
backward rotation in the wrong direction, the wrong KV head for a query group, or a
missing factor: all at least 0.3).

--meta DUMP splits the fused tensors of two checkpoints' files by the shapes of a gradient
dump. --exclude PART reports a part without failing on it: comparing parameters after some
AdamW steps, the k bias (attn.qkv.bias[k]) is such a part. Its gradient is zero in exact
arithmetic, so what AdamW sees there is rounding noise, which m / sqrt(v) normalises into
full-size steps in noise-chosen directions: two runs that differ only in rounding end with
different k biases (measured 1e-4 relative), and the difference cannot change the loss (a
bias added to every key adds a constant to a query's scores, which the softmax removes).

--perturb writes IN with one deliberate error, for the test that shows the comparison can
fail: "dk" zeroes the k rows of layer 0's qkv weight gradient (a wrong attention backward
that the global gradient norm barely sees), "scale" multiplies layer 0's MLP output
projection gradient by 1 + 1e-3.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

FLOOR = 1e-4


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    meta = hdr.pop("__metadata__", {})
    out = {}
    for k, v in hdr.items():
        if v["dtype"] != "F32":
            sys.exit(f"{path}: {k}: dtype {v['dtype']}, expected F32")
        b, e = v["data_offsets"]
        out[k] = np.frombuffer(raw[8 + n + b:8 + n + e], dtype="<f4").reshape(v["shape"]).copy()
    return out, meta, hdr


def save(path, tensors, meta):
    hdr, off, blobs = {"__metadata__": meta}, 0, []
    for k, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        hdr[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def parts(name, a, meta):
    """(label, array) pieces of one tensor: fused tensors split by their rows (when the
    metadata gives the shapes: gradient dumps do, checkpoints' model.safetensors do not)."""
    if "n_heads" not in meta:
        return [(name, a)]
    H, Hkv, hd = int(meta["n_heads"]), int(meta["n_kv_heads"]), int(meta["head_dim"])
    if ".attn.qkv." in name:
        q, k = H * hd, Hkv * hd
        return [(name + "[q]", a[:q]), (name + "[k]", a[q:q + k]), (name + "[v]", a[q + k:])]
    if ".mlp.fc." in name and meta.get("activation") == "swiglu":
        F = int(meta["d_ff"])
        return [(name + "[gate]", a[:F]), (name + "[up]", a[F:])]
    return [(name, a)]


def compare(a_path, b_path, rtol, meta_path=None, exclude=()):
    A, meta_a, _ = load(a_path)
    B, meta_b, _ = load(b_path)
    if meta_path:
        meta_b = load(meta_path)[1]
    bad = []
    if sorted(A) != sorted(B):
        bad.append(f"tensor names differ: only in A {sorted(set(A) - set(B))}, "
                   f"only in B {sorted(set(B) - set(A))}")
    total = np.sqrt(sum(float(np.sum(B[k].astype(np.float64) ** 2)) for k in B))
    rows = []
    for name in sorted(set(A) & set(B)):
        if A[name].shape != B[name].shape:
            bad.append(f"{name}: shape {A[name].shape} vs {B[name].shape}")
            continue
        for (label, a), (_, b) in zip(parts(name, A[name], meta_b), parts(name, B[name], meta_b)):
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            if not np.all(np.isfinite(a64)):
                bad.append(f"{label}: {int(np.sum(~np.isfinite(a64)))} non-finite values")
                continue
            nb = float(np.linalg.norm(b64))
            den = max(nb, FLOOR * total)
            err = float(np.linalg.norm(a64 - b64)) / den if den > 0 else float(np.linalg.norm(a64))
            skip = any(x in label for x in exclude)
            rows.append((err, label + ("  (excluded)" if skip else ""), nb, den > nb))
            if err > rtol and not skip:
                bad.append(f"{label}: relative L2 error {err:.3e} > {rtol:g}")
    rows.sort(reverse=True)
    for err, label, nb, floored in rows:
        print(f"  {label:44s} rel {err:.3e}  |ref| {nb:.3e}{'  (vs floor)' if floored else ''}")
    print(f"  {len(rows)} parts, worst {rows[0][0] if rows else 0:.3e}, tolerance {rtol:g}; "
          f"gradient norm {total:.6g}")
    if bad:
        for m in bad:
            print("  FAIL " + m)
        return 1
    return 0


def perturb(kind, src, dst):
    T, meta, _ = load(src)
    if kind == "dk":
        name = "layers.0.attn.qkv.weight"
        H, Hkv, hd = int(meta["n_heads"]), int(meta["n_kv_heads"]), int(meta["head_dim"])
        T[name][H * hd:(H + Hkv) * hd] = 0
    elif kind == "scale":
        T["layers.0.mlp.proj.weight"] *= np.float32(1 + 1e-3)
    else:
        sys.exit(f"unknown perturbation '{kind}'")
    save(dst, T, meta)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perturb", nargs=3, metavar=("KIND", "IN", "OUT"))
    ap.add_argument("--rtol", type=float, default=5e-2)
    ap.add_argument("--meta", help="take the model's shapes (to split fused tensors) from this "
                    "gradient dump: for checkpoints, whose files do not carry them")
    ap.add_argument("--exclude", action="append", default=[],
                    help="parts whose label contains this are printed but cannot fail")
    ap.add_argument("files", nargs="*")
    o = ap.parse_args()
    if o.perturb:
        return perturb(*o.perturb)
    if len(o.files) != 2:
        ap.error("give two dumps: A (tested) and B (reference)")
    for f in o.files:
        if not os.path.exists(f):
            sys.exit(f"no gradient dump '{f}'")
    return compare(o.files[0], o.files[1], o.rtol, o.meta, o.exclude)


if __name__ == "__main__":
    sys.exit(main())
