#!/usr/bin/env python3
"""Check that the main text of every UDHR page comes out whole.

Usage: html_udhr_check.py PRED.json UDHR.jsonl
PRED.json is {"<code>": {"articleBody": "..."}} (bench/html_bench -o). Every line of the
reference text (h1-h4, p, li blocks, whitespace collapsed) must appear, in order, in the
extracted text with whitespace collapsed; prints the pages where one is missing and exits
1 if any.
"""
import json
import sys


def norm(s):
    return " ".join(s.split())


def main():
    pred = json.load(open(sys.argv[1], encoding="utf-8"))
    bad = 0
    n = 0
    for line in open(sys.argv[2], encoding="utf-8"):
        d = json.loads(line)
        n += 1
        got = norm(pred[d["code"]]["articleBody"])
        pos = 0
        missing = []
        for ref in d["text"].split("\n"):
            ref = norm(ref)
            if not ref:
                continue
            at = got.find(ref, pos)
            if at < 0:
                missing.append(ref)
            else:
                pos = at + len(ref)
        if missing:
            bad += 1
            print("%s: %d block(s) missing or out of order, first: %r"
                  % (d["code"], len(missing), missing[0][:80]))
    print("udhr: %d of %d pages whole" % (n - bad, n))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
