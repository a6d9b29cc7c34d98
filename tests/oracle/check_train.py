"""Compare a `sluice train ... debug.dump_dir=D` run with an oracle implementation.

usage: check_train.py --oracle numpy|torch DUMP_DIR CHECKPOINT_DIR STEPS

Step 1: logits (micro-batch 0), loss and every parameter gradient must match the oracle
built from the same initial weights to a relative error <= 1e-5, where the relative error
of a tensor is max|ours - oracle| / max|oracle|. Then STEPS AdamW steps replayed on the
dumped batches: every per-step loss <= 1e-4, and every final parameter tensor (the
checkpoint) <= 1e-4 in the norm-wise relative error |ours - oracle|_2 / |oracle|_2.

Why the norm for the parameters: AdamW divides by sqrt(v) + eps, so an element whose
gradient is pure rounding noise (the key bias, whose exact gradient is zero; embedding and
output rows of tokens whose gradient cancels to ~1e-8) moves by up to lr per step in any
fp32 implementation, in a direction set by the noise. Those few elements dominate the
element-wise maximum; the norm measures the agreement of the update as a whole. The
element-wise figure is printed too. Prints one line per check, exits 1 on a mismatch.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_numpy as mn  # noqa: E402

TOL_STEP1 = 1e-5
TOL_STEPS = 1e-4


def rel(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = np.abs(a - b).max() if a.size else 0.0
    s = np.abs(b).max() if b.size else 0.0
    return d / s if s > 0 else d


class NumpyOracle:
    """float64 numpy model; AdamW and clipping as torch defines them."""

    def __init__(self, cfg, params, o):
        self.c = mn.Cfg(cfg)
        self.o = o
        self.p = {k: v.astype(np.float64) for k, v in params.items()}
        self.state = {}
        self.g = None

    def micro(self, tokens, targets, accum, docs=None):
        loss, logits, g = mn.forward_backward(self.p, self.c, tokens, targets, docs=docs)
        g = {k: v / accum for k, v in g.items()}
        self.g = g if self.g is None else {k: self.g[k] + g[k] for k in g}
        return float(loss), logits

    def grads(self):
        return self.g

    def finish(self, step):
        norm = mn.clip(self.g, self.o["clip_grad"])
        mn.adamw(self.p, self.g, self.state, self.o, step, mn.lr_at(self.o, step))
        self.g = None
        return norm

    def params(self):
        return self.p


def rel_norm(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    s = np.linalg.norm(b)
    return np.linalg.norm(a - b) / s if s > 0 else np.linalg.norm(a - b)


def check(name, err, tol, failures):
    ok = err <= tol
    print("%-4s %-44s rel err %.3e (tol %.0e)" % ("ok" if ok else "FAIL", name, err, tol))
    if not ok:
        failures.append(name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", default="numpy")
    ap.add_argument("dump")
    ap.add_argument("ckpt")
    ap.add_argument("steps", type=int)
    ap.add_argument("--eod", type=int, default=-1, help="the end-of-document id")
    ap.add_argument("--reset-position-ids", action="store_true")
    ap.add_argument("--reset-attention-mask", action="store_true")
    ap.add_argument("--eod-mask-loss", action="store_true")
    a = ap.parse_args()
    flags = (a.reset_position_ids, a.reset_attention_mask, a.eod_mask_loss)
    if any(flags) and a.oracle != "numpy":
        sys.exit("the document flags are checked by the numpy oracle only")
    meta = json.load(open(os.path.join(a.ckpt, "checkpoint.json")))
    cfg = meta["model"]
    o = meta["optimizer"]["settings"]
    d1, _ = mn.st_load(os.path.join(a.dump, "step-000001.safetensors"))
    params = {k[6:]: v for k, v in d1.items() if k.startswith("param.")}
    ours_grads = {k[5:]: v for k, v in d1.items() if k.startswith("grad.")}
    if a.oracle == "torch":
        import oracle_torch
        orc = oracle_torch.TorchOracle(cfg, params, o)
    else:
        orc = NumpyOracle(cfg, params, o)
    failures = []
    T = d1["tokens"].shape[1] - 1
    V = cfg["vocab_size"]
    for step in range(1, a.steps + 1):
        d = d1 if step == 1 else mn.st_load(os.path.join(a.dump, "step-%06d.safetensors" % step))[0]
        toks = d["tokens"].astype(np.int64)
        mb = d1["logits"].shape[0] // T
        accum = toks.shape[0] // mb
        loss_sum = 0.0
        for m in range(accum):
            chunk = toks[m * mb:(m + 1) * mb]
            docs = mn.ltor_masks(chunk[:, :-1], a.eod, *flags) if any(flags) else None
            if docs is None:
                loss, logits = orc.micro(chunk[:, :-1], chunk[:, 1:], accum)
            else:
                loss, logits = orc.micro(chunk[:, :-1], chunk[:, 1:], accum, docs)
            loss_sum += loss
            if step == 1 and m == 0:
                check("step 1 logits (micro-batch 0)", rel(d1["logits"], np.asarray(logits)[:, :V]),
                      TOL_STEP1, failures)
        loss = loss_sum / accum
        if step == 1:
            check("step 1 loss", rel(d1["loss"][0], loss), TOL_STEP1, failures)
            grads = orc.grads()
            worst = max(grads, key=lambda k: rel(ours_grads[k], grads[k]))
            for k in sorted(grads):
                e = rel(ours_grads[k], grads[k])
                if e > TOL_STEP1:
                    check("step 1 grad " + k, e, TOL_STEP1, failures)
            check("step 1 grads: %d tensors, worst %s" % (len(grads), worst),
                  rel(ours_grads[worst], grads[worst]), TOL_STEP1, failures)
        else:
            check("step %d loss" % step, rel(d["loss"][0], loss), TOL_STEPS, failures)
        norm = orc.finish(step)
        if step == 1:
            check("step 1 grad norm", rel(d1["grad_norm"][0], norm), TOL_STEP1, failures)
    final, _ = mn.st_load(os.path.join(a.ckpt, "model.safetensors"))
    theirs = orc.params()
    worst = max(final, key=lambda k: rel_norm(final[k], theirs[k]))
    for k in sorted(final):
        e = rel_norm(final[k], theirs[k])
        if e > TOL_STEPS:
            check("params after %d steps: %s" % (a.steps, k), e, TOL_STEPS, failures)
    check("params after %d steps: %d tensors, worst %s" % (a.steps, len(final), worst),
          rel_norm(final[worst], theirs[worst]), TOL_STEPS, failures)
    wmax = max(final, key=lambda k: rel(final[k], theirs[k]))
    print("info element-wise max after %d steps: worst %s %.3e" % (a.steps, wmax, rel(final[wmax], theirs[wmax])))
    print("oracle %s: %d checks failed" % (a.oracle, len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
