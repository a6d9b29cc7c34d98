#!/usr/bin/env python3
"""Agreement and speed of sluice's `pii` filter against datatrove's PIIFormatter
(bench/pii.sh). datatrove covers e-mails and IPv4; both sides run with the same
placeholders and datatrove's default `only_remove_public_ips=True` (sluice:
`public_ips_only: true`). A document agrees when both redacted texts are identical.

Usage: pii_bench.py SLUICE CORPUS.jsonl WORK"""
import json, os, re, subprocess, sys, time

sluice, corpus, work = sys.argv[1:4]
speed = sys.argv[4] if len(sys.argv) > 4 else None  # the pii_speed driver
from datatrove.pipeline.formatters import PIIFormatter

docs = [json.loads(l) for l in open(corpus, encoding="utf-8")]
nbytes = sum(len(d["text"].encode()) for d in docs)
fmt = PIIFormatter(email_replacement="<EMAIL>", ip_replacement="<IP_ADDRESS>")
fmt.format("warm up x@example.com 8.8.8.8")
t0 = time.process_time()
peer = [fmt.format(d["text"]) for d in docs]
t_peer = time.process_time() - t0

cfgs = {
    "emails+ips": "filters:\n  - pii:\n      kinds: [email, ip]\n      public_ips_only: true\n",
    "all kinds": "filters:\n  - pii\n",
    "ssn only (about the cost of reading and writing)": "filters:\n  - pii:\n      kinds: [ssn]\n",
}
times = {}
for name, y in cfgs.items():
    cfg = os.path.join(work, re.sub(r"\W", "_", name) + ".yaml")
    open(cfg, "w").write(y)
    best = None
    for rep in range(3):
        out = os.path.join(work, "out-%s-%d" % (re.sub(r"\W", "_", name), rep))
        t0 = time.perf_counter()
        subprocess.run([sluice, "-q", "filter", "--config", cfg, "--out", out, corpus], check=True)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    times[name] = (best, out)

ours = {}
out = times["emails+ips"][1]
raw = subprocess.run(["zstdcat", os.path.join(out, "part-00000.jsonl.zst")], capture_output=True, check=True).stdout
for l in raw.decode().split("\n"):
    if not l:
        continue
    d = json.loads(l)
    ours[d["id"]] = d["text"]
same = 0
diff = []
ph = re.compile(r"<EMAIL>|<IP_ADDRESS>")
n_peer = n_ours = 0
for d, p in zip(docs, peer):
    o = ours[d["id"]]
    n_peer += len(ph.findall(p)) - len(ph.findall(d["text"]))
    n_ours += len(ph.findall(o)) - len(ph.findall(d["text"]))
    if o == p:
        same += 1
    else:
        diff.append((d["id"], p, o))
print("| check | documents | redactions (datatrove) | redactions (sluice) | same text | agreement |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
print("| e-mails + public IPv4 | %d | %d | %d | %d | %.2f%% |" % (len(docs), n_peer, n_ours, same, 100.0 * same / len(docs)))
print()
for i, p, o in diff[:20]:
    # the first differing stretch
    k = next((j for j in range(min(len(p), len(o))) if p[j] != o[j]), min(len(p), len(o)))
    print("- `%s`: datatrove `%s` / sluice `%s`" % (i, p[max(0, k - 30):k + 40].replace("\n", " "), o[max(0, k - 30):k + 40].replace("\n", " ")))
print()
mb = nbytes / 1e6
print("| run (one core) | seconds | MB/s | vs datatrove |")
print("| --- | ---: | ---: | ---: |")
print("| datatrove PIIFormatter.format (e-mails, IPs; CPU time of the calls only) | %.3f | %.1f | 1.0x |" % (t_peer, mb / t_peer))
for name, (t, _) in times.items():
    print("| sluice filter, %s (wall, whole command: read, JSON, redact, zstd write) | %.3f | %.1f | %.1fx |" % (name, t, mb / t, t_peer / t))
if speed:
    import struct
    texts = os.path.join(work, "texts.bin")
    with open(texts, "wb") as f:
        for d in docs:
            t = d["text"].encode()
            f.write(struct.pack("<I", len(t)) + t)
    print()
    print("Scanning and redacting only (no JSON, no I/O), CPU time, best of 5:")
    print()
    print("| scanner (one core) | seconds | MB/s | vs datatrove |")
    print("| --- | ---: | ---: | ---: |")
    print("| datatrove PIIFormatter.format (e-mails, public IPv4) | %.3f | %.1f | 1.0x |" % (t_peer, mb / t_peer))
    for name in ("emails+ips", "all kinds"):
        cfg = os.path.join(work, re.sub(r"\W", "_", name) + ".yaml")
        o = subprocess.run([speed, texts, cfg, "5"], capture_output=True, check=True, text=True).stdout.split()
        t = float(o[0])
        print("| sluice pii, %s | %.3f | %.1f | %.1fx |" % (name, t, mb / t, t_peer / t))
print()
print("%d documents, %.1f MB of text." % (len(docs), mb))
