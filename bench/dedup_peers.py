#!/usr/bin/env python3
"""Peers' MinHash signature throughput on one core (datasketch, rensa), for bench/dedup.sh.

usage: dedup_peers.py FILE.jsonl WORDS PERMS REPEAT HASHES_PREFIX

Shingles are the same as sluice's with --norm none: runs of WORDS whitespace-separated
words joined by one space (text.split()). For each peer two timings: text -> signature
(Python splitting and joining included, as the peers are used), and signature from
prebuilt shingles. rensa also signs sluice's own 64-bit shingle hashes through its batch
API (digest_matrix_from_flat_token_hashes): the same inputs, permutations only.
Prints one JSON line of seconds.
"""
import json
import sys
import time

import numpy as np
from datasketch import MinHash
from rensa import RMinHash

path, words, perms, repeat, prefix = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
texts = [json.loads(l)["text"] for l in open(path, encoding="utf-8") if l.strip()]


def shingles(t):
    w = t.split()
    if not w:
        return []
    if len(w) < words:
        return [" ".join(w)]
    return [" ".join(w[i:i + words]) for i in range(len(w) - words + 1)]


res = {"documents": len(texts)}
pre = [shingles(t) for t in texts]
pre_b = [[s.encode() for s in sh] for sh in pre]


def timeit(fn, reps):
    best = None
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        d = time.perf_counter() - t
        best = d if best is None or d < best else best
    return best


def rensa_text():
    for t in texts:
        m = RMinHash(perms, 1)
        m.update(shingles(t))
        m.digest()


def rensa_pre():
    for sh in pre:
        m = RMinHash(perms, 1)
        m.update(sh)
        m.digest()


def ds_text():
    for t in texts:
        m = MinHash(num_perm=perms, seed=1)
        m.update_batch([s.encode() for s in shingles(t)])
        m.digest()


def ds_pre():
    for sh in pre_b:
        m = MinHash(num_perm=perms, seed=1)
        m.update_batch(sh)
        m.digest()


hashes = np.fromfile(prefix + ".hashes", dtype=np.uint64)
offsets = np.fromfile(prefix + ".offsets", dtype=np.uint64)


def rensa_batch():
    RMinHash.digest_matrix_from_flat_token_hashes(hashes, offsets, perms, 1)


res["rensa_text_to_signature"] = timeit(rensa_text, repeat)
res["rensa_from_shingles"] = timeit(rensa_pre, repeat)
try:
    res["rensa_batch_from_sluice_hashes"] = timeit(rensa_batch, repeat)
except Exception as e:  # an older rensa without the batch API
    res["rensa_batch_error"] = str(e)
res["datasketch_text_to_signature"] = timeit(ds_text, 1)
res["datasketch_from_shingles"] = timeit(ds_pre, 1)
print(json.dumps(res))
