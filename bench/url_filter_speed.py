#!/usr/bin/env python3
"""The URL filter's speed against datatrove's URLFilter, one core (taskset -c CPU), RUNS
rounds; each round runs, in turn: sluice on one URL with the list from its tar.gz and from
an extracted directory (the list load: the whole process's CPU time), sluice on all URLs
(tar.gz), and datatrove's URLFilter (bench/url_filter_peer.py, which times its load and its
filter() calls apart). Prints Markdown rows with medians, after checking that both sides
decide every URL alike.

  url_filter_speed.py SLUICE PEER_PYTHON IN.jsonl ONE.jsonl TGZ_YAML DIR_YAML RUNS CPU WORK
"""
import json, os, shutil, statistics, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
sluice, peer_py, inp, one, tgz_yaml, dir_yaml, runs, cpu, work = sys.argv[1:10]
runs = int(runs)
pin = ["taskset", "-c", cpu] if shutil.which("taskset") else []


def cpu_seconds(cmd, out=None):
    if out:
        shutil.rmtree(out, ignore_errors=True)
    p = subprocess.Popen(pin + cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    text = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench: command failed: %s" % " ".join(cmd))
    return ru.ru_utime + ru.ru_stime, text


def sluice_run(yaml, src, out, annotate=False):
    cmd = [sluice, "-q", "filter", "--config", yaml, "--out", out] + (["--annotate"] if annotate else []) + [src]
    return cpu_seconds(cmd, out)[0]


urls = sum(1 for l in open(inp) if l.strip())
# the same decisions first
sluice_run(tgz_yaml, inp, work + "/ann", annotate=True)
got = subprocess.run("zstdcat %s/ann/part-*.zst" % work, shell=True, capture_output=True, text=True).stdout
ours = [json.loads(l).get("filter_reason", "keep") for l in got.splitlines()]
cpu_seconds([peer_py, here + "/url_filter_peer.py", inp, work + "/peer.txt"])
theirs = open(work + "/peer.txt").read().split()
same = sum(a == b for a, b in zip(ours, theirs))
print("decisions: %d URLs, %d the same (%s)" % (urls, same, ", ".join(
    "%s %d" % (r, theirs.count(r)) for r in sorted(set(theirs)))), file=sys.stderr)
if same != urls or len(ours) != urls:
    sys.exit("bench: decisions differ")

load_tgz, load_dir, total, peer_load, peer_filter = [], [], [], [], []
for i in range(runs):
    load_tgz.append(sluice_run(tgz_yaml, one, work + "/o1"))
    load_dir.append(sluice_run(dir_yaml, one, work + "/o2"))
    total.append(sluice_run(tgz_yaml, inp, work + "/o3"))
    _, text = cpu_seconds([peer_py, here + "/url_filter_peer.py", inp, work + "/peer.txt"])
    r = json.loads(text)
    peer_load.append(r["load_s"])
    peer_filter.append(r["filter_s"])
    print("run %d: sluice load %.2f s (tar.gz), %.2f s (directory), all %.2f s; datatrove load %.2f s, "
          "filter %.2f s" % (i + 1, load_tgz[-1], load_dir[-1], total[-1], peer_load[-1], peer_filter[-1]),
          file=sys.stderr)
med = statistics.median
ours_rate = [urls / max(t - l, 1e-9) for t, l in zip(total, load_tgz)]
peer_rate = [urls / f for f in peer_filter]
ratio = [a / b for a, b in zip(ours_rate, peer_rate)]
print("| what | sluice | datatrove 0.10.0 | sluice / datatrove |")
print("| --- | ---: | ---: | ---: |")
print("| list load, CPU s (tar.gz / extracted directory) | %.2f / %.2f | %.2f (from its extracted copy) | %.1fx faster |"
      % (med(load_tgz), med(load_dir), med(peer_load), med(peer_load) / med(load_tgz)))
print("| URLs/s per core (%d URLs) | %s | %s | **%.0fx** (%.0f-%.0fx) |"
      % (urls, format(round(med(ours_rate)), ","), format(round(med(peer_rate)), ","), med(ratio),
         min(ratio), max(ratio)))
