#!/usr/bin/env python3
"""datasketch MinHashLSH with Redis storage: inserts + queries per second (bench/dedup.sh).

usage: dedup_redis_peer.py FILE.jsonl... --port P [--bands 14 --rows 8]

MinHashes (word 5-grams, bands*rows permutations) are computed first and not timed; then
every document is inserted (insertion_session, datasketch's pipelined mode) and queried.
Prints one JSON line: documents, seconds_insert, seconds_query.
"""
import argparse
import json
import time

from datasketch import MinHash, MinHashLSH

ap = argparse.ArgumentParser()
ap.add_argument("inputs", nargs="+")
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--bands", type=int, default=14)
ap.add_argument("--rows", type=int, default=8)
a = ap.parse_args()
k = a.bands * a.rows
items = []
for p in a.inputs:
    for line in open(p, encoding="utf-8"):
        d = json.loads(line)
        w = d["text"].split()
        sh = [" ".join(w[i:i + 5]).encode() for i in range(max(1, len(w) - 4))]
        m = MinHash(num_perm=k, seed=1)
        m.update_batch(sh)
        items.append((d["id"], m))
lsh = MinHashLSH(num_perm=k, params=(a.bands, a.rows),
                 storage_config={"type": "redis", "basename": b"bench",
                                 "redis": {"host": "127.0.0.1", "port": a.port}})
t = time.perf_counter()
with lsh.insertion_session(buffer_size=50000) as s:
    for key, m in items:
        s.insert(key, m)
ti = time.perf_counter() - t
t = time.perf_counter()
for key, m in items:
    lsh.query(m)
tq = time.perf_counter() - t
print(json.dumps({"documents": len(items), "seconds_insert": ti, "seconds_query": tq}))
