#!/usr/bin/env python3
"""Summarise bench/scale.sh's rows (one per rank per run) as a Markdown table.

usage: scale_table.py RESULTS.tsv

Per run (scale, stage, ranks): documents and MB in (as the stage's manifest counts them),
the load average when it started, wall seconds (the slowest rank), CPU seconds (user +
system, all ranks), peak RSS of the largest rank, documents/s and MB/s per CPU second (per
core), and peak RSS per document a rank held (largest rank's peak / (documents / ranks));
for the Redis backend also the largest node's used_memory_peak and --plan's figures.
"""
import collections
import csv
import sys

runs = collections.OrderedDict()
with open(sys.argv[1]) as f:
    for r in csv.DictReader(f, delimiter="\t"):
        runs.setdefault((int(r["scale"]), r["stage"], int(r["ranks"])), []).append(r)

print("| stage | scale | ranks | documents | MB in | load | wall s | CPU s | peak MB/rank "
      "| docs/s/core | MB/s/core | KB/doc/rank | Redis peak MB/node | --plan |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
order = sorted(runs, key=lambda k: (k[1], k[0], k[2]))
for key in order:
    rows = runs[key]
    scale, stage, ranks = key
    docs, nbytes = int(rows[0]["docs_in"] or 0), int(rows[0]["bytes_in"] or 0)
    wall = max(float(r["wall_s"]) for r in rows)
    cpu = sum(float(r["cpu_s"]) for r in rows)
    rss = max(int(r["maxrss_kb"]) for r in rows) / 1024
    per_core = "%.0f | %.1f" % (docs / cpu, nbytes / 1e6 / cpu) if cpu > 0 else "- | -"
    kb_doc = rss * 1024 / (docs / ranks) if docs else 0
    redis = rows[0]["redis_peak_max_b"]
    redis = "%.1f" % (int(redis) / 2**20) if redis else ""
    print("| %s | %dx | %d | %d | %.1f | %s | %.1f | %.1f | %.1f | %s | %.2f | %s | %s |"
          % (stage, scale, ranks, docs, nbytes / 1e6, rows[0]["load1"], wall, cpu, rss, per_core,
             kb_doc, redis, rows[0]["plan"]))
