#!/usr/bin/env python3
"""HellaSwag items scored through transformers (AutoTokenizer + AutoModelForCausalLM on an
exported directory) as lm-evaluation-harness scores them, against `sluice eval --details`.

usage: check_hf_eval.py HF_DIR ITEMS.jsonl DETAILS.jsonl RESULT.json

The harness's loglikelihood: the context and context + " " + ending are encoded without
special tokens and the continuation is what the second adds; acc takes the ending of the
highest log-likelihood, acc_norm the highest per character. Every choice's context and
continuation ids must equal sluice's, each log-likelihood agree within 1e-4, and acc and
acc_norm be sluice's. Needs torch and transformers (SLUICE_TORCH_PY).
"""
import json
import re
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def pre(t):
    t = t.strip().replace(" [title]", ". ")
    t = re.sub("\\[.*?\\]", "", t)
    return t.replace("  ", " ")


def main():
    d, items_path, det_path, res_path = sys.argv[1:5]
    tok = AutoTokenizer.from_pretrained(d)
    model = AutoModelForCausalLM.from_pretrained(d).eval()
    det = [json.loads(l) for l in open(det_path)]
    res = json.loads(open(res_path).readline())
    items = [json.loads(l) for l in open(items_path)]
    acc = accn = k = 0
    bad = []
    for it in items:
        ctx = pre(it["activity_label"] + ": " + it["ctx_a"] + " " + it["ctx_b"].capitalize())
        lls, lens = [], []
        for e in it["endings"]:
            cont = " " + pre(e)
            cenc = tok(ctx, add_special_tokens=False)["input_ids"]
            contenc = tok(ctx + cont, add_special_tokens=False)["input_ids"][len(cenc):]
            s = det[k]
            k += 1
            if cenc != s["ctx"] or contenc != s["cont"]:
                bad.append("item %d: other ids than sluice's" % it["ind"])
            with torch.no_grad():
                lp = torch.log_softmax(model(torch.tensor([cenc + contenc])).logits[0].double(), -1)
            ll = sum(lp[len(cenc) - 1 + i, t].item() for i, t in enumerate(contenc))
            if abs(ll - s["loglik"]) > 1e-4 * max(1.0, abs(ll)):
                bad.append("item %d: loglik %.6f, sluice %.6f" % (it["ind"], ll, s["loglik"]))
            lls.append(ll)
            lens.append(len(cont))
        acc += max(range(len(lls)), key=lambda j: lls[j]) == it["label"]
        accn += max(range(len(lls)), key=lambda j: lls[j] / lens[j]) == it["label"]
    acc, accn = acc / len(items), accn / len(items)
    print("transformers acc %.4f acc_norm %.4f; sluice acc %.4f acc_norm %.4f; %d choices"
          % (acc, accn, res["acc"], res["acc_norm"], k))
    if abs(acc - res["acc"]) > 1e-9 or abs(accn - res["acc_norm"]) > 1e-9:
        bad.append("the scores differ")
    for b in bad[:10]:
        print("FAIL " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
