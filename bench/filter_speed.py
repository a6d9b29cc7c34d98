#!/usr/bin/env python3
"""Time sluice against a peer, paired: the two commands run in turn (A B A B ...) on one core
(taskset -c CPU), each run's CPU time (user + system, from wait4) taken, and the ratio taken
pair by pair so a machine that changes speed during the call moves both sides alike. Prints
one Markdown table row with medians.

  filter_speed.py LABEL DOCS RUNS CPU -- SLUICE_CMD... -- PEER_CMD...

A command's output directory (its --out, or a peer's OUT_DIR) is removed before each run.
"""
import os, shutil, statistics, subprocess, sys

label, docs, runs, cpu = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rest = sys.argv[6:]
cut = rest.index("--")
cmd_a, cmd_b = rest[:cut], rest[cut + 1:]
pin = ["taskset", "-c", cpu] if shutil.which("taskset") else []


def out_dir(cmd):
    if "--out" in cmd:
        return cmd[cmd.index("--out") + 1]
    return cmd[3]  # filter_peer.py MODE IN OUT_DIR


def cpu_seconds(cmd):
    shutil.rmtree(out_dir(cmd), ignore_errors=True)
    p = subprocess.Popen(pin + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench: command failed: %s" % " ".join(cmd))
    return ru.ru_utime + ru.ru_stime


a, b = [], []
for i in range(runs):
    a.append(cpu_seconds(cmd_a))
    b.append(cpu_seconds(cmd_b))
    print("%s run %d: sluice %.2f s, peer %.2f s CPU" % (label, i + 1, a[-1], b[-1]), file=sys.stderr)
ma, mb = statistics.median(a), statistics.median(b)
ratio = statistics.median(y / x for x, y in zip(a, b))
print("| %s | %d | %.0f | %.1f | **%.0fx** | %d (%.0f-%.0fx) |" % (
    label, docs, docs / ma, docs / mb, ratio, runs,
    min(y / x for x, y in zip(a, b)), max(y / x for x, y in zip(a, b))))
