#!/usr/bin/env python3
"""Score article-body predictions the way scrapinghub/article-extraction-benchmark does.

Method (from the benchmark's SOURCE.md / README): texts are split into \\w+ tokens
(Unicode, case kept); each side becomes a multiset of 4-token shingles (a text with
fewer than 4 tokens gives one shorter shingle, an empty text none). Per page,
TP = sum of min(count_true, count_pred), FP = prediction surplus, FN = truth surplus,
then (TP, FP, FN) are divided by their sum. Per-page precision = TP/(TP+FP) and
recall = TP/(TP+FN) (both 1 when FP = FN = 0, 0 when TP = 0 and the other is > 0);
pages with TP+FP = 0 are left out of the precision mean, pages with TP+FN = 0 out of
the recall mean. P and R are means over pages, F1 = 2PR/(P+R). Accuracy is the share
of pages whose token lists are equal. The +- figures are 1.96 standard deviations of
bootstrap resamples of the pages.

Usage: html_score.py GROUND_TRUTH.json PRED [PRED...]
  PRED: a JSON file {"<id>": {"articleBody": "..."}} (optionally wrapped as
  {"output": {...}}), or a directory of <id>.txt files. --per-page prints each page.
"""
import argparse
import json
import os
import random
import re
import statistics
import sys
from collections import Counter

WORD = re.compile(r"\w+", re.UNICODE)


def tokens(text):
    return WORD.findall(text or "")


def shingles(toks, n=4):
    if len(toks) < n:
        return Counter([tuple(toks)]) if toks else Counter()
    return Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))


def page_counts(truth, pred):
    t, p = shingles(tokens(truth)), shingles(tokens(pred))
    tp = fp = fn = 0
    for k in t.keys() | p.keys():
        a, b = t.get(k, 0), p.get(k, 0)
        tp += min(a, b)
        fp += max(0, b - a)
        fn += max(0, a - b)
    s = tp + fp + fn
    return (tp / s, fp / s, fn / s) if s else (0.0, 0.0, 0.0)


def prec(tp, fp, fn):
    if fp == 0 and fn == 0:
        return 1.0
    return tp / (tp + fp) if tp + fp else 0.0


def rec(tp, fp, fn):
    if fp == 0 and fn == 0:
        return 1.0
    return tp / (tp + fn) if tp + fn else 0.0


def summarize(rows):
    ps = [prec(*r) for r in rows if r[0] + r[1] > 0]
    rs = [rec(*r) for r in rows if r[0] + r[2] > 0]
    p = statistics.mean(ps) if ps else 0.0
    r = statistics.mean(rs) if rs else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def load_pred(path):
    if os.path.isdir(path):
        out = {}
        for name in os.listdir(path):
            if name.endswith(".txt"):
                with open(os.path.join(path, name), encoding="utf-8") as f:
                    out[name[:-4]] = {"articleBody": f.read()}
        return out
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    return d.get("output", d) if isinstance(d, dict) and "output" in d else d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("truth")
    ap.add_argument("pred", nargs="+")
    ap.add_argument("--n-bootstrap", type=int, default=1000)
    ap.add_argument("--per-page", action="store_true")
    ap.add_argument("--json", action="store_true", help="one JSON line per prediction")
    a = ap.parse_args()
    with open(a.truth, encoding="utf-8") as f:
        truth = json.load(f)
    for path in a.pred:
        pred = load_pred(path)
        missing = [k for k in truth if k not in pred]
        if missing:
            sys.exit("html_score: '%s' lacks %d of the %d pages (first: %s)"
                     % (path, len(missing), len(truth), missing[0]))
        keys = sorted(truth)
        rows = [page_counts(truth[k].get("articleBody", ""), pred[k].get("articleBody", ""))
                for k in keys]
        acc = statistics.mean(
            1.0 if tokens(truth[k].get("articleBody", "")) == tokens(pred[k].get("articleBody", ""))
            else 0.0 for k in keys)
        p, r, f = summarize(rows)
        rnd = random.Random(0)
        boot = [summarize([rows[rnd.randrange(len(rows))] for _ in rows])
                for _ in range(a.n_bootstrap)]
        ci = [1.96 * statistics.stdev(x[i] for x in boot) if len(boot) > 1 else 0.0
              for i in range(3)]
        if a.per_page:
            for k, row in zip(keys, rows):
                print("%s P=%.3f R=%.3f" % (k, prec(*row), rec(*row)))
        if a.json:
            print(json.dumps({"name": path, "pages": len(keys), "precision": p, "recall": r,
                              "f1": f, "accuracy": acc, "f1_ci": ci[2]}))
        else:
            print("%-40s pages=%d precision=%.3f ± %.3f  recall=%.3f ± %.3f  F1=%.3f ± %.3f  "
                  "accuracy=%.3f" % (os.path.basename(path), len(keys), p, ci[0], r, ci[1], f,
                                     ci[2], acc))


if __name__ == "__main__":
    main()
