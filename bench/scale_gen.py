#!/usr/bin/env python3
"""Build the scaling benchmark's corpus from real text, with real near-duplicates.

usage: scale_gen.py DATA_DIR OUT_DIR MEGABYTES FILES [SEED]

The paragraphs of real text in DATA_DIR (the Common Crawl documents of
jsonl-corpora/dolma, one paragraph a line, and text/tinyshakespeare in blocks of
speeches) are the pool. Each new document joins paragraphs drawn at random until it
reaches a length drawn from 1-6 KB (about 3.5 KB on average, a Common Crawl page's
extracted text). Of the documents, NEAR (25%) are an earlier document (one of the last
WINDOW) with EDIT_MAX (0-5%) of its words replaced, inserted or deleted: near-duplicates
that MinHash at 14x8 bands finds (Jaccard of word 5-grams about 0.75-1); EXACT (3%) are
an earlier document as it was, for dedup exact. The rest share at most a paragraph or two
with any other document.

The same SEED writes the same documents in the same order, so the corpus of 4 x MB
begins with that of MB. Documents are spread round-robin over FILES files
(part-KKKK.jsonl), each with an id and a url.
"""
import gzip
import json
import os
import random
import sys

NEAR = 0.25  # fraction of documents that are edited copies of an earlier one
EXACT = 0.03  # fraction that are verbatim copies (exact duplicates)
WINDOW = 2000  # how far back a copy's original is drawn from
EDIT_MAX = 0.05  # largest fraction of a near-duplicate's words edited
MIN_PARA = 40  # shorter lines (menus, dates) are not paragraphs


def pool(data):
    paras = []
    dolma = os.path.join(data, "jsonl-corpora", "dolma")
    for name in sorted(os.listdir(dolma)):
        if not name.endswith(".jsonl.gz"):
            continue
        with gzip.open(os.path.join(dolma, name), "rt", encoding="utf-8") as f:
            for line in f:
                for p in json.loads(line)["text"].split("\n"):
                    if len(p.strip()) >= MIN_PARA:
                        paras.append(p.strip())
    with open(os.path.join(data, "text", "tinyshakespeare", "input.txt"), encoding="utf-8") as f:
        for block in f.read().split("\n\n"):
            if len(block) >= MIN_PARA:
                paras.append(block.replace("\n", " "))
    return paras


def edit(words, rnd, vocab):
    d = list(words)
    for _ in range(int(round(rnd.uniform(0, EDIT_MAX) * len(d)))):
        op, i = rnd.random(), rnd.randrange(len(d))
        if op < 0.6:
            d[i] = rnd.choice(vocab)
        elif op < 0.8:
            d.insert(i, rnd.choice(vocab))
        elif len(d) > 10:
            del d[i]
    return " ".join(d)


def main():
    data, out, mb, nfiles = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    rnd = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    paras = pool(data)
    vocab = sorted({w for p in paras[:5000] for w in p.split()})
    os.makedirs(out, exist_ok=True)
    files = [open(os.path.join(out, "part-%04d.jsonl" % k), "w", encoding="utf-8")
             for k in range(nfiles)]
    recent, written, i, limit = [], 0, 0, int(mb * 1e6)
    while written < limit:
        r = rnd.random()
        if recent and r < EXACT:
            text = rnd.choice(recent)
        elif recent and r < EXACT + NEAR:
            text = edit(rnd.choice(recent).split(" "), rnd, vocab)
        else:
            target, parts, n = rnd.randint(1000, 6000), [], 0
            while n < target:
                p = rnd.choice(paras)
                parts.append(p)
                n += len(p) + 1
            text = "\n".join(parts)
        recent.append(text)
        if len(recent) > WINDOW:
            recent.pop(rnd.randrange(len(recent)))
        line = json.dumps({"id": "s%d" % i, "url": "https://site%d.example.org/page/%d" % (i % 9973, i),
                           "text": text}, ensure_ascii=False) + "\n"
        files[i % nfiles].write(line)
        written += len(line.encode("utf-8"))
        i += 1
    for f in files:
        f.close()
    print("%d documents, %.1f MB" % (i, written / 1e6))


main()
