"""Compare the first step of a `sluice train ... train.fp8=RECIPE debug.dump_dir=D` run with
the numpy oracle run with the same FP8 quantisation (tests/oracle/fp8_numpy.py), and
optionally with the gradient of a run without FP8.

usage: check_fp8.py --recipe current|delayed [--tol T] [--plain DUMP_DIR LO HI] DUMP_DIR CKPT_DIR

Against the oracle: the step-1 loss and every parameter gradient to a relative error <= T
(max |ours - oracle| / max |oracle| per tensor). With --plain, a dump of the same run without
FP8: the norm-wise relative difference |fp8 - plain|_2 / |plain|_2 of the whole gradient must
lie in [LO, HI] (FP8 changed the gradient, by about what its rounding predicts). The oracle's
quantiser is checked against ml_dtypes first where that can be imported. Exits 1 on a failure.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fp8_numpy  # noqa: E402
import model_numpy as mn  # noqa: E402


def rel(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    s = np.abs(b).max()
    return np.abs(a - b).max() / s if s > 0 else np.abs(a - b).max()


def grads_of(d):
    return {k[5:]: v.astype(np.float64) for k, v in d.items() if k.startswith("grad.")}


def rel_norm_all(a, b):
    num = sum(float(((a[k] - b[k]) ** 2).sum()) for k in b)
    den = sum(float((b[k] ** 2).sum()) for k in b)
    return (num / den) ** 0.5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipe", required=True, choices=["current", "delayed"])
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--plain", nargs=3)
    ap.add_argument("dump")
    ap.add_argument("ckpt")
    a = ap.parse_args()
    failures = []

    def check(name, ok, text):
        print("%-4s %s: %s" % ("ok" if ok else "FAIL", name, text))
        if not ok:
            failures.append(name)

    bad = fp8_numpy.check_against_ml_dtypes()
    if bad is None:
        print("skip the quantiser against ml_dtypes (not importable)")
    else:
        check("the oracle's E4M3 and E5M2 rounding against ml_dtypes", bad == 0, "%d mismatches" % bad)
    cfg = json.load(open(os.path.join(a.ckpt, "checkpoint.json")))["model"]
    d1, _ = mn.st_load(os.path.join(a.dump, "step-000001.safetensors"))
    params = {k[6:]: v for k, v in d1.items() if k.startswith("param.")}
    ours = grads_of(d1)
    c = mn.Cfg(cfg)
    T = d1["tokens"].shape[1] - 1
    toks = d1["tokens"].astype(np.int64)
    mb = d1["logits"].shape[0] // T
    accum = toks.shape[0] // mb
    fp8 = fp8_numpy.Fp8Linear(a.recipe)
    G, loss = None, 0.0
    for m in range(accum):
        chunk = toks[m * mb:(m + 1) * mb]
        lm, _, g = mn.forward_backward(params, c, chunk[:, :-1], chunk[:, 1:], fp8=fp8)
        loss += float(lm) / accum
        G = {k: v / accum for k, v in g.items()} if G is None else {k: G[k] + g[k] / accum for k in g}
    check("step 1 loss against the FP8 oracle", rel(d1["loss"][0], loss) <= a.tol,
          "ours %.8g oracle %.8g (tol %.0e)" % (d1["loss"][0], loss, a.tol))
    errs = {k: rel(ours[k], G[k]) for k in G}
    worst = max(errs, key=errs.get)
    for k in sorted(errs):
        if errs[k] > a.tol:
            check("step 1 grad " + k, False, "rel err %.3e (tol %.0e)" % (errs[k], a.tol))
    check("step 1 grads against the FP8 oracle: %d tensors" % len(G), errs[worst] <= a.tol,
          "worst %s rel err %.3e (tol %.0e)" % (worst, errs[worst], a.tol))
    if a.plain:
        plain = grads_of(mn.st_load(os.path.join(a.plain[0], "step-000001.safetensors"))[0])
        lo, hi = float(a.plain[1]), float(a.plain[2])
        gap = rel_norm_all(ours, plain)
        per = {k: float(np.linalg.norm(ours[k] - plain[k]) / max(np.linalg.norm(plain[k]), 1e-30))
               for k in plain if "layers." in k}
        wk = max(per, key=per.get)
        check("step 1 gradient, FP8 against no FP8", lo <= gap <= hi,
              "norm-wise rel diff %.3e (expected in [%g, %g]; largest in a layer: %s %.3e)"
              % (gap, lo, hi, wk, per[wk]))
    print("fp8 oracle: %d checks failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
