#!/usr/bin/env python3
"""Brute-force ground truth for near-duplicate detection, and the score of a run.

usage: dedup_truth.py --ngram words:5|chars:24 --norm LIST [--threshold 0.8]
                      [--bands B --rows R] [--pairs OUT/pairs.jsonl] [--json] IN...

Reads JSONL documents (plain, .gz or .zst) in the given order, normalises their text as
docs/dedup.md describes (written here independently of the C code), cuts it into
shingles as strings, and computes the exact Jaccard similarity of every pair of documents
that share a shingle (all other pairs have similarity 0). With --pairs it scores a run's
pairs.jsonl against the pairs at or above --threshold: precision, recall, the recall that
the LSH S-curve 1-(1-J^R)^B predicts for these pairs, and, for verified pairs, the largest
difference between the reported and the true similarity.
"""
import argparse
import gzip
import io
import json
import subprocess
import sys
import unicodedata
from collections import defaultdict


def read_docs(path):
    if path.endswith(".zst"):
        data = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
        f = io.StringIO(data.decode("utf-8"))
    elif path.endswith(".gz"):
        f = gzip.open(path, "rt", encoding="utf-8")
    else:
        f = open(path, encoding="utf-8")
    for n, line in enumerate(f, 1):
        if not line.strip():
            continue
        d = json.loads(line)
        if not isinstance(d.get("text"), str):
            continue
        yield d.get("id", "%s:%d" % (path, n)), d["text"]


SPACES = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)}
ZERO_WIDTH = {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"}
EXTRA_PUNCT = {0x60C, 0x61B, 0x61F, 0x6D4, 0x964, 0x965, 0x37E, 0x387, 0x589, 0x5BE, 0x5C3,
               0xE5A, 0xE5B, 0x104A, 0x104B, 0x1362, 0x1363, 0xD7, 0xF7}


def is_punct(ch):
    c = ord(ch)
    if c < 0x80:
        return ch in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    if 0xA1 <= c <= 0xBF:
        return c not in (0xAA, 0xB5, 0xBA)
    return (0x2010 <= c <= 0x205E or 0x3001 <= c <= 0x303F or 0xFF01 <= c <= 0xFF0F or
            0xFF1A <= c <= 0xFF20 or 0xFF3B <= c <= 0xFF40 or 0xFF5B <= c <= 0xFF65 or
            c in EXTRA_PUNCT)


def covered(ch):
    """Blocks whose case and accents the normalisation handles."""
    c = ord(ch)
    return c < 0x180 or 0x370 <= c <= 0x3FF or 0x400 <= c <= 0x4BF


def strip_accent(ch):
    c = ord(ch)
    if not (0xC0 <= c <= 0x17F or 0x386 <= c <= 0x3CE):
        return ch
    base = unicodedata.normalize("NFD", ch)[0]
    if ch in "ĐđĦħĿŀŁłŉſ":
        base = {"Đ": "D", "đ": "d", "Ħ": "H", "ħ": "h", "Ŀ": "L", "ŀ": "l", "Ł": "L",
                "ł": "l", "ŉ": "n", "ſ": "s"}[ch]
    if ch == "ı":
        base = "i"
    if ch == "İ":
        base = "I"
    return base if len(unicodedata.normalize("NFD", ch)) > 1 or base != ch else ch


def lower(ch):
    if not covered(ch) or ch in "ıĸŉſ" or ch == "\u0130":
        return "i" if ch == "\u0130" else ch
    lo = ch.lower()
    return lo if len(lo) == 1 else ch


def normalise(text, flags):
    out = []
    pending = False
    for ch in text:
        if "accents" in flags and 0x300 <= ord(ch) <= 0x36F:
            continue
        if "space" in flags and ch in ZERO_WIDTH:
            continue
        if "punct" in flags and is_punct(ch):
            ch = " "
        if "space" in flags and ch in SPACES:
            pending = True
            continue
        if "accents" in flags:
            ch = strip_accent(ch)
        if "lower" in flags:
            ch = lower(ch)
        if "digits" in flags and "0" <= ch <= "9":
            ch = "0"
        if pending and out:
            out.append(" ")
        pending = False
        out.append(ch)
    return "".join(out)


def shingles(text, kind, n):
    if kind == "words":
        w = text.split()
        w = [x for x in text.replace("\t", " ").replace("\n", " ").replace("\r", " ")
             .replace("\x0b", " ").replace("\x0c", " ").split(" ") if x]
        if not w:
            return set()
        if len(w) < n:
            return {" ".join(w)}
        return {" ".join(w[i:i + n]) for i in range(len(w) - n + 1)}
    if not text:
        return set()
    if len(text) < n:
        return {text}
    return {text[i:i + n] for i in range(len(text) - n + 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ngram", required=True)
    ap.add_argument("--norm", default="none")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--bands", type=int)
    ap.add_argument("--rows", type=int)
    ap.add_argument("--pairs", action="append", default=[])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("inputs", nargs="+")
    a = ap.parse_args()
    kind, n = a.ngram.split(":")
    n = int(n)
    flags = set() if a.norm == "none" else (
        {"lower", "punct", "space", "digits", "accents"} if a.norm == "all" else set(a.norm.split(",")))
    ids, sets = [], []
    for p in a.inputs:
        for i, t in read_docs(p):
            ids.append(json.dumps(i))
            sets.append(shingles(normalise(t, flags), kind, n))
    index = defaultdict(list)
    for k, s in enumerate(sets):
        for x in s:
            index[x].append(k)
    inter = defaultdict(int)
    for members in index.values():
        if len(members) > 2000:  # a shingle in thousands of documents: count pairs directly
            pass
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                inter[(members[i], members[j])] += 1
    truth = {}
    for (i, j), c in inter.items():
        jac = c / (len(sets[i]) + len(sets[j]) - c)
        truth[(ids[i], ids[j])] = jac
    # empty documents are never paired
    true_pairs = {p for p, j in truth.items() if j >= a.threshold - 1e-12}
    res = {"documents": len(ids), "true_pairs": len(true_pairs)}
    if a.bands and a.rows:
        res["predicted_recall"] = (sum(1 - (1 - truth[p] ** a.rows) ** a.bands for p in true_pairs)
                                   / len(true_pairs)) if true_pairs else 1.0
    runs = []
    for path in a.pairs:
        found = {}
        for line in open(path):
            d = json.loads(line)
            x, y = json.dumps(d["a"]), json.dumps(d["b"])
            key = (x, y) if (x, y) in truth or (y, x) not in truth else (y, x)
            found[key] = d.get("jaccard")
        tp = sum(1 for p in found if p in true_pairs)
        r = dict(res)
        r["pairs_file"] = path
        r["found_pairs"] = len(found)
        r["precision"] = tp / len(found) if found else 1.0
        r["recall"] = tp / len(true_pairs) if true_pairs else 1.0
        diffs = [abs(j - truth.get(p, 0.0)) for p, j in found.items() if j is not None]
        r["max_jaccard_error"] = max(diffs) if diffs else 0.0
        runs.append(r)
    if runs:
        for r in runs:
            print(json.dumps(r, sort_keys=True) if a.json else
                  "\t".join("%s=%s" % (k, r[k]) for k in sorted(r)))
        return
    if a.json:
        print(json.dumps(res, sort_keys=True))
    else:
        for k in sorted(res):
            print("%s\t%s" % (k, res[k]))


if __name__ == "__main__":
    main()
