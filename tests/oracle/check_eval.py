"""Check `sluice eval --details FILE` against the numpy model.

usage: check_eval.py STEP_DIR DETAILS.jsonl

For every scored choice, the numpy model (model_numpy.py, float64, the full forward pass
over context + continuation, no cache) computes the sum over the continuation's tokens of
log P(token | everything before it); it must equal sluice's log-likelihood within 1e-5
(relative to max(1, |loglik|)), and the greedy flag must agree wherever the top two logits
are not within 1e-5 of each other.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_numpy as mn  # noqa: E402


def main():
    step, det = sys.argv[1], sys.argv[2]
    cfg = json.load(open(os.path.join(step, "checkpoint.json")))["model"]
    raw, _ = mn.st_load(os.path.join(step, "model.safetensors"))
    p = {k: v.astype(np.float64) for k, v in raw.items()}
    c = mn.Cfg(cfg)
    V = cfg["vocab_size"]
    worst, n, bad = 0.0, 0, []
    for line in open(det):
        d = json.loads(line)
        ids = d["ctx"] + d["cont"]
        toks = np.array([ids[:-1]], dtype=np.int64)
        _, logits, _ = mn.forward_backward(p, c, toks, toks, want_grads=False)
        lg = np.asarray(logits).reshape(len(ids) - 1, -1)[:, :V]
        lse = np.log(np.exp(lg - lg.max(1, keepdims=True)).sum(1)) + lg.max(1)
        nc = len(d["ctx"])
        ll, greedy, ambiguous = 0.0, True, False
        for k, t in enumerate(d["cont"]):
            row = lg[nc - 1 + k]
            ll += row[t] - lse[nc - 1 + k]
            top = np.sort(row)[-2:]
            ambiguous |= top[1] - top[0] < 1e-5
            greedy &= int(row.argmax()) == t
        err = abs(ll - d["loglik"]) / max(1.0, abs(ll))
        worst = max(worst, err)
        n += 1
        if err > 1e-5 or (not ambiguous and bool(greedy) != bool(d["greedy"])):
            bad.append((d["item"], d["choice"], ll, d["loglik"], greedy, d["greedy"]))
    print("eval oracle: %d choices, worst relative error %.2e" % (n, worst))
    for b in bad[:5]:
        print("FAIL item %d choice %d: numpy %.9g greedy %s, sluice %.9g greedy %s" % (b[0], b[1], b[2], b[4], b[3], b[5]))
    print("eval oracle: %d mismatches" % len(bad))
    sys.exit(1 if bad or not n else 0)


if __name__ == "__main__":
    main()
