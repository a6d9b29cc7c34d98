"""The same model in PyTorch (fp32, autograd, torch.optim.AdamW, clip_grad_norm_), built
from sluice's initial weights. A test oracle only: used when torch can be imported."""
import math

import numpy as np
import torch
import torch.nn.functional as F

import model_numpy as mn

torch.set_num_threads(max(1, torch.get_num_threads()))


class TorchOracle:
    def __init__(self, cfg, params, o):
        self.c = mn.Cfg(cfg)
        self.o = o
        self.p = {k: torch.nn.Parameter(torch.tensor(v, dtype=torch.float32)) for k, v in params.items()}
        decay = [v for k, v in self.p.items() if v.ndim == 2]
        no_decay = [v for k, v in self.p.items() if v.ndim != 2]
        self.opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": o["weight_decay"]},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"])
        self.opt.zero_grad(set_to_none=False)
        for v in self.p.values():
            v.grad = torch.zeros_like(v)

    def _forward(self, tokens):
        c, p = self.c, self.p
        B, T = tokens.shape
        H, Hkv, hd = c.H, c.Hkv, c.hd
        x = p["embed.weight"][tokens]
        if not c.rope:
            x = x + p["pos_embed.weight"][:T][None]
        else:
            inv = torch.tensor(mn.rope_inv_freq(c), dtype=torch.float32)
            ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
            cos, sin = ang.cos(), ang.sin()

        def rope(t):
            h = t.shape[-1] // 2
            t1, t2 = t[..., :h], t[..., h:]
            cc, ss = cos[None, :, None, :], sin[None, :, None, :]
            return torch.cat([t1 * cc - t2 * ss, t2 * cc + t1 * ss], -1)

        def norm(t, pre):
            w = p[pre + ".weight"]
            if c.rms:
                return F.rms_norm(t, (c.D,), w, c.eps)
            return F.layer_norm(t, (c.D,), w, p.get(pre + ".bias"), c.eps)

        def lin(t, pre):
            return F.linear(t, p[pre + ".weight"], p.get(pre + ".bias"))

        for l in range(c.L):
            pre = "layers.%d." % l
            qkv = lin(norm(x, pre + "attn_norm"), pre + "attn.qkv")
            q = qkv[..., :H * hd].view(B, T, H, hd)
            k = qkv[..., H * hd:(H + Hkv) * hd].view(B, T, Hkv, hd)
            v = qkv[..., (H + Hkv) * hd:].view(B, T, Hkv, hd)
            if c.rope:
                q, k = rope(q), rope(k)
            g = H // Hkv
            k = k.repeat_interleave(g, dim=2)
            v = v.repeat_interleave(g, dim=2)
            att = (q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)) / math.sqrt(hd)
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = (att @ v.transpose(1, 2)).transpose(1, 2).reshape(B, T, H * hd)
            x = x + lin(y, pre + "attn.proj")
            f = lin(norm(x, pre + "mlp_norm"), pre + "mlp.fc")
            if c.act == "swiglu":
                a = F.silu(f[..., :c.F]) * f[..., c.F:]
            else:
                a = F.gelu(f, approximate="tanh" if c.act == "gelu_tanh" else "none")
            x = x + lin(a, pre + "mlp.proj")
        x = norm(x, "final_norm")
        W = p["embed.weight"] if c.tied else p["lm_head.weight"]
        return F.linear(x, W[:c.V]).reshape(B * T, c.V)

    def micro(self, tokens, targets, accum):
        logits = self._forward(torch.tensor(tokens))
        loss = F.cross_entropy(logits, torch.tensor(targets).reshape(-1))
        (loss / accum).backward()
        return float(loss.detach()), logits.detach().numpy()

    def grads(self):
        return {k: v.grad.detach().numpy().astype(np.float64) for k, v in self.p.items()}

    def finish(self, step):
        norm = float(torch.nn.utils.clip_grad_norm_(list(self.p.values()), self.o["clip_grad"]))
        for gr in self.opt.param_groups:
            gr["lr"] = mn.lr_at(self.o, step)
        self.opt.step()
        self.opt.zero_grad(set_to_none=False)
        return norm

    def params(self):
        return {k: v.detach().numpy().astype(np.float64) for k, v in self.p.items()}
