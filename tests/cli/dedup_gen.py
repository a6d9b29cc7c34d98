#!/usr/bin/env python3
"""Generate a JSONL corpus of near-duplicate clusters with controlled edit rates.

usage: dedup_gen.py OUT_DIR SEED CLUSTERS [FILES]

Each cluster has a base document of 80-200 random words and 0-4 variants; a variant
replaces, inserts or deletes a fraction of its words (the cluster's edit rate, drawn from
0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3). Documents are shuffled and spread over FILES files
(part-K.jsonl). Words are lowercase letters only, so every normalisation leaves them as
they are.
"""
import json
import random
import string
import sys

out, seed, nclus = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
nfiles = int(sys.argv[4]) if len(sys.argv) > 4 else 2
rnd = random.Random(seed)
vocab = ["".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(2, 9)))
         for _ in range(5000)]
rates = [0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3]
docs = []
for c in range(nclus):
    base = [rnd.choice(vocab) for _ in range(rnd.randint(80, 200))]
    docs.append(base)
    rate = rnd.choice(rates)
    for _ in range(rnd.randint(0, 4)):
        d = list(base)
        for _ in range(int(round(rate * len(d)))):
            op = rnd.random()
            i = rnd.randrange(len(d))
            if op < 0.6:
                d[i] = rnd.choice(vocab)
            elif op < 0.8:
                d.insert(i, rnd.choice(vocab))
            elif len(d) > 10:
                del d[i]
        docs.append(d)
rnd.shuffle(docs)
files = [open("%s/part-%d.jsonl" % (out, k), "w") for k in range(nfiles)]
for i, d in enumerate(docs):
    files[i % nfiles].write(json.dumps({"id": "g%d" % i, "text": " ".join(d)}) + "\n")
for f in files:
    f.close()
