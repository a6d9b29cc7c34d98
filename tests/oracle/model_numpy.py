"""An independent numpy (float64) implementation of the sluice transformer, forward and
backward, written from the math (docs/trainer.md), plus AdamW and the learning-rate
schedule as torch.optim.AdamW and Megatron define them. Used only as a test oracle.

Parameters are a dict name -> array with the names of docs/formats/checkpoint.md.
"""
import json
import math
import struct

import numpy as np

# ---- safetensors (read and write, numpy only) ------------------------------------------

_DT = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
       "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "U16": np.uint16,
       "U32": np.uint32, "U64": np.uint64, "BF16": np.uint16}  # BF16: the raw bits


def st_load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        out[k] = np.frombuffer(raw[base + b:base + e], dtype=_DT[v["dtype"]]).reshape(v["shape"]).copy()
    return out, hdr


# ---- the model -------------------------------------------------------------------------

class Cfg:
    def __init__(self, m):
        self.V = m["vocab_size"]
        self.L = m["num_layers"]
        self.D = m["hidden_size"]
        self.H = m["num_attention_heads"]
        self.Hkv = m["num_query_groups"]
        self.F = m["ffn_hidden_size"]
        self.hd = self.D // self.H
        self.rms = m["normalization"] == "rmsnorm"
        self.act = m["activation"]
        self.rope = m["position_embedding_type"] == "rope"
        self.bias = m["bias"]
        self.tied = m["share_embeddings_and_output_weights"]
        self.eps = m["layernorm_epsilon"]
        self.theta = m["rotary_base"]
        self.rs = m["rope_scaling"]


def rope_inv_freq(c):
    i = np.arange(c.hd // 2, dtype=np.float64)
    f = 1.0 / c.theta ** (2.0 * i / c.hd)
    if c.rs["factor"] > 0:
        orig, lo, hi, fac = (c.rs["original_max_position_embeddings"], c.rs["low_freq_factor"],
                             c.rs["high_freq_factor"], c.rs["factor"])
        wl = 2 * math.pi / f
        smooth = (orig / wl - lo) / (hi - lo)
        scaled = np.where(wl > orig / lo, f / fac, f)
        mid = (wl >= orig / hi) & (wl <= orig / lo)
        f = np.where(mid, (1 - smooth) * f / fac + smooth * f, scaled)
    return f


def rope_tables(c, T):
    ang = np.arange(T, dtype=np.float64)[:, None] * rope_inv_freq(c)[None, :]
    return np.cos(ang), np.sin(ang)


def rot(x, cos, sin, inverse=False):
    # x [B, T, heads, hd]; pairs (i, i + hd/2); cos, sin [T, hd/2] or per sample [B, T, hd/2]
    h = x.shape[-1] // 2
    s = -sin if inverse else sin
    x1, x2 = x[..., :h], x[..., h:]
    if cos.ndim == 2:
        cos, s = cos[None], s[None]
    c_, s_ = cos[:, :, None, :], s[:, :, None, :]
    return np.concatenate([x1 * c_ - x2 * s_, x2 * c_ + x1 * s_], axis=-1)


def ltor_masks(tokens, eod, reset_position_ids, reset_attention_mask, eod_mask_loss):
    """Megatron-LM's left-to-right masks of a batch of input tokens [B, T], written from its
    definition: an EOD token at i ends a document, tokens from i + 1 on neither attend to
    nor count positions from tokens up to i; the loss is masked where the input is EOD.
    Returns (allowed [B, T, T] bool: query t may attend key u, positions [B, T], loss mask
    [B, T] float)."""
    B, T = tokens.shape
    allowed = np.tile(np.tril(np.ones((T, T), dtype=bool)), (B, 1, 1))
    pos = np.tile(np.arange(T), (B, 1))
    lmask = np.ones((B, T))
    for b in range(B):
        if eod_mask_loss:
            lmask[b, tokens[b] == eod] = 0.0
        prev = 0
        for i in np.nonzero(tokens[b] == eod)[0]:
            if reset_attention_mask:
                allowed[b, i + 1:, :i + 1] = False
            if reset_position_ids:
                pos[b, i + 1:] -= i + 1 - prev
                prev = i + 1
    return allowed, pos, lmask


def norm_fwd(x, w, b, c):
    if c.rms:
        r = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + c.eps)
        xh = x * r
    else:
        mu = x.mean(-1, keepdims=True)
        r = 1.0 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + c.eps)
        xh = (x - mu) * r
    y = xh * w + (b if b is not None else 0.0)
    return y, (xh, r)


def norm_bwd(dy, w, cache, c):
    xh, r = cache
    dn = dy * w
    dw = (dy * xh).reshape(-1, xh.shape[-1]).sum(0)
    db = dy.reshape(-1, xh.shape[-1]).sum(0)
    if c.rms:
        dx = r * (dn - xh * (dn * xh).mean(-1, keepdims=True))
    else:
        dx = r * (dn - dn.mean(-1, keepdims=True) - xh * (dn * xh).mean(-1, keepdims=True))
    return dx, dw, db


K_GELU = math.sqrt(2.0 / math.pi)


def gelu(x, tanh_form):
    if tanh_form:
        return 0.5 * x * (1.0 + np.tanh(K_GELU * (x + 0.044715 * x ** 3)))
    from math import erf
    verf = np.vectorize(erf)
    return 0.5 * x * (1.0 + verf(x / math.sqrt(2.0)))


def gelu_grad(x, tanh_form):
    if tanh_form:
        u = K_GELU * (x + 0.044715 * x ** 3)
        t = np.tanh(u)
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K_GELU * (1 + 3 * 0.044715 * x * x)
    from math import erf
    verf = np.vectorize(erf)
    cdf = 0.5 * (1.0 + verf(x / math.sqrt(2.0)))
    return cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def P(params, name):
    return params.get(name)


def forward_backward(params, c, tokens, targets, want_grads=True, docs=None, fp8=None):
    """tokens, targets [B, T] int. Returns (mean loss, logits [B*T, V], grads dict).
    docs: ltor_masks' (allowed, positions, loss mask), or None (causal, 0..T-1, all 1).
    fp8: the four products of each layer through fp8.fwd(layer, which, x, W) -> x . W^T and
    fp8.bwd(layer, which, dy, x, W) -> (dx, dW) (tests/oracle/fp8_numpy.py); which is 0 (QKV),
    1 (attention out), 2 (MLP up) or 3 (MLP down)."""
    B, T = tokens.shape
    if docs is None:
        allowed = np.tril(np.ones((T, T), dtype=bool))[None]
        pos, lmask = np.tile(np.arange(T), (B, 1)), np.ones((B, T))
    else:
        allowed, pos, lmask = docs
    D, H, Hkv, hd, V = c.D, c.H, c.Hkv, c.hd, c.V
    g = H // Hkv
    p = {k: v.astype(np.float64) for k, v in params.items()}
    E = p["embed.weight"]
    x = E[tokens]
    if not c.rope:
        x = x + p["pos_embed.weight"][pos]
    if c.rope:
        cos, sin = rope_tables(c, T)
        cos, sin = cos[pos], sin[pos]
    caches = []
    for l in range(c.L):
        pre = "layers.%d." % l
        h1, n1 = norm_fwd(x, p[pre + "attn_norm.weight"], p.get(pre + "attn_norm.bias"), c)
        qkv = fp8.fwd(l, 0, h1, p[pre + "attn.qkv.weight"]) if fp8 else h1 @ p[pre + "attn.qkv.weight"].T
        if c.bias:
            qkv = qkv + p[pre + "attn.qkv.bias"]
        q = qkv[..., :H * hd].reshape(B, T, H, hd)
        k = qkv[..., H * hd:(H + Hkv) * hd].reshape(B, T, Hkv, hd)
        v = qkv[..., (H + Hkv) * hd:].reshape(B, T, Hkv, hd)
        if c.rope:
            q, k = rot(q, cos, sin), rot(k, cos, sin)
        kr, vr = np.repeat(k, g, axis=2), np.repeat(v, g, axis=2)  # [B,T,H,hd]
        s = np.einsum("bthd,buhd->bhtu", q, kr) / math.sqrt(hd)
        s = np.where(allowed[:, None], s, -np.inf)
        s = s - s.max(-1, keepdims=True)
        pr = np.exp(s)
        pr = pr / pr.sum(-1, keepdims=True)
        y = np.einsum("bhtu,buhd->bthd", pr, vr).reshape(B, T, H * hd)
        o = fp8.fwd(l, 1, y, p[pre + "attn.proj.weight"]) if fp8 else y @ p[pre + "attn.proj.weight"].T
        if c.bias:
            o = o + p[pre + "attn.proj.bias"]
        xm = x + o
        h2, n2 = norm_fwd(xm, p[pre + "mlp_norm.weight"], p.get(pre + "mlp_norm.bias"), c)
        f = fp8.fwd(l, 2, h2, p[pre + "mlp.fc.weight"]) if fp8 else h2 @ p[pre + "mlp.fc.weight"].T
        if c.bias:
            f = f + p[pre + "mlp.fc.bias"]
        if c.act == "swiglu":
            gt, up = f[..., :c.F], f[..., c.F:]
            sg = 1.0 / (1.0 + np.exp(-gt))
            a = gt * sg * up
        else:
            a = gelu(f, c.act == "gelu_tanh")
        m = fp8.fwd(l, 3, a, p[pre + "mlp.proj.weight"]) if fp8 else a @ p[pre + "mlp.proj.weight"].T
        if c.bias:
            m = m + p[pre + "mlp.proj.bias"]
        caches.append((x, h1, n1, q, kr, vr, pr, y, xm, h2, n2, f, a))
        x = xm + m
    hf, nf = norm_fwd(x, p["final_norm.weight"], p.get("final_norm.bias"), c)
    Wout = (E if c.tied else p["lm_head.weight"])[:V]
    logits = (hf @ Wout.T).reshape(B * T, V)
    mx = logits.max(-1, keepdims=True)
    lse = np.log(np.exp(logits - mx).sum(-1, keepdims=True)) + mx
    tflat = targets.reshape(-1)
    losses = lse[:, 0] - logits[np.arange(B * T), tflat]
    lw = lmask.reshape(-1)
    kept = lw.sum()
    loss = (losses * lw).sum() / kept if kept > 0 else 0.0
    if not want_grads:
        return loss, logits, None
    G = {k: np.zeros_like(v) for k, v in p.items()}
    dlog = np.exp(logits - lse)
    dlog[np.arange(B * T), tflat] -= 1.0
    dlog *= (lw / kept if kept > 0 else 0.0 * lw)[:, None]
    dlog = dlog.reshape(B, T, V)
    Gout = np.einsum("btv,btd->vd", dlog, hf)
    if c.tied:
        G["embed.weight"][:V] += Gout
    else:
        G["lm_head.weight"][:V] += Gout
    dhf = dlog @ Wout
    dx, dw, db = norm_bwd(dhf, p["final_norm.weight"], nf, c)
    G["final_norm.weight"] += dw
    if "final_norm.bias" in G:
        G["final_norm.bias"] += db
    for l in reversed(range(c.L)):
        pre = "layers.%d." % l
        x0, h1, n1, q, kr, vr, pr, y, xm, h2, n2, f, a = caches[l]
        # MLP
        if fp8:
            da, gw = fp8.bwd(l, 3, dx, a, p[pre + "mlp.proj.weight"])
            G[pre + "mlp.proj.weight"] += gw
        else:
            G[pre + "mlp.proj.weight"] += np.einsum("btd,btf->df", dx, a)
            da = dx @ p[pre + "mlp.proj.weight"]
        if c.bias:
            G[pre + "mlp.proj.bias"] += dx.reshape(-1, D).sum(0)
        if c.act == "swiglu":
            gt, up = f[..., :c.F], f[..., c.F:]
            sg = 1.0 / (1.0 + np.exp(-gt))
            df = np.concatenate([da * up * sg * (1 + gt * (1 - sg)), da * gt * sg], axis=-1)
        else:
            df = da * gelu_grad(f, c.act == "gelu_tanh")
        if fp8:
            dh2, gw = fp8.bwd(l, 2, df, h2, p[pre + "mlp.fc.weight"])
            G[pre + "mlp.fc.weight"] += gw
        else:
            G[pre + "mlp.fc.weight"] += np.einsum("btf,btd->fd", df, h2)
            dh2 = df @ p[pre + "mlp.fc.weight"]
        if c.bias:
            G[pre + "mlp.fc.bias"] += df.reshape(-1, df.shape[-1]).sum(0)
        dxm, dw, db = norm_bwd(dh2, p[pre + "mlp_norm.weight"], n2, c)
        G[pre + "mlp_norm.weight"] += dw
        if pre + "mlp_norm.bias" in G:
            G[pre + "mlp_norm.bias"] += db
        dxm = dxm + dx
        # attention
        if fp8:
            dy, gw = fp8.bwd(l, 1, dxm, y, p[pre + "attn.proj.weight"])
            G[pre + "attn.proj.weight"] += gw
            dy = dy.reshape(B, T, H, hd)
        else:
            G[pre + "attn.proj.weight"] += np.einsum("btd,bte->de", dxm, y)
            dy = (dxm @ p[pre + "attn.proj.weight"]).reshape(B, T, H, hd)
        if c.bias:
            G[pre + "attn.proj.bias"] += dxm.reshape(-1, D).sum(0)
        dpr = np.einsum("bthd,buhd->bhtu", dy, vr)
        dvr = np.einsum("bhtu,bthd->buhd", pr, dy)
        ds = pr * (dpr - (dpr * pr).sum(-1, keepdims=True)) / math.sqrt(hd)
        dq = np.einsum("bhtu,buhd->bthd", ds, kr)
        dkr = np.einsum("bhtu,bthd->buhd", ds, q)
        dk = dkr.reshape(B, T, Hkv, g, hd).sum(3)
        dv = dvr.reshape(B, T, Hkv, g, hd).sum(3)
        if c.rope:
            dq, dk = rot(dq, cos, sin, True), rot(dk, cos, sin, True)
        dqkv = np.concatenate([dq.reshape(B, T, -1), dk.reshape(B, T, -1), dv.reshape(B, T, -1)], -1)
        if fp8:
            dh1, gw = fp8.bwd(l, 0, dqkv, h1, p[pre + "attn.qkv.weight"])
            G[pre + "attn.qkv.weight"] += gw
        else:
            G[pre + "attn.qkv.weight"] += np.einsum("bte,btd->ed", dqkv, h1)
            dh1 = dqkv @ p[pre + "attn.qkv.weight"]
        if c.bias:
            G[pre + "attn.qkv.bias"] += dqkv.reshape(-1, dqkv.shape[-1]).sum(0)
        dx0, dw, db = norm_bwd(dh1, p[pre + "attn_norm.weight"], n1, c)
        G[pre + "attn_norm.weight"] += dw
        if pre + "attn_norm.bias" in G:
            G[pre + "attn_norm.bias"] += db
        dx = dx0 + dxm
    np.add.at(G["embed.weight"], tokens.reshape(-1), dx.reshape(-1, D))
    if not c.rope:
        np.add.at(G["pos_embed.weight"], pos.reshape(-1), dx.reshape(-1, D))
    return loss, logits, G


# ---- optimizer -------------------------------------------------------------------------

def lr_at(o, step):
    lr, mn, wu, ds = o["lr"], o["min_lr"], o["warmup_steps"], o["decay_steps"]
    if wu > 0 and step <= wu:
        return lr * step / wu
    if o["decay_style"] == "constant":
        return lr
    if step >= ds:
        return mn
    r = (step - wu) / (ds - wu) if ds > wu else 1.0
    if o["decay_style"] == "cosine":
        return mn + 0.5 * (lr - mn) * (1 + math.cos(math.pi * r))
    if o["decay_style"] == "linear":
        return lr - (lr - mn) * r
    raise ValueError(o["decay_style"])


def decays(name, arr):
    return arr.ndim == 2


def adamw(params, grads, state, o, step, lr):
    b1, b2, eps, wd = o["beta1"], o["beta2"], o["eps"], o["weight_decay"]
    for k in params:
        g = grads[k]
        m, v = state.setdefault(k, (np.zeros_like(g), np.zeros_like(g)))
        if decays(k, params[k]):
            params[k] = params[k] * (1 - lr * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        state[k] = (m, v)
        mh = m / (1 - b1 ** step)
        vh = v / (1 - b2 ** step)
        params[k] = params[k] - lr * mh / (np.sqrt(vh) + eps)


def clip(grads, max_norm):
    n = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads.values()))
    if max_norm > 0:
        coef = max_norm / (n + 1e-6)
        if coef < 1:
            for k in grads:
                grads[k] = grads[k] * coef
    return n
