#!/usr/bin/env python3
"""Keep/drop decisions of datatrove's filters (the oracle) against sluice's on the same
documents. Usage: filter_agreement.py SLUICE CORPUS.jsonl WORKDIR > table.md"""
import json, os, subprocess, sys

from datatrove.data import Document
from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter,
                                        GopherQualityFilter, GopherRepetitionFilter)

sluice, corpus, work = sys.argv[1], sys.argv[2], sys.argv[3]
docs = [json.loads(l) for l in open(corpus)]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def datatrove(chain):
    res = {}
    for d in docs:
        doc = Document(text=d["text"], id=d["id"])
        why = None
        for f in chain:
            try:
                r = f.filter(doc)
            except Exception as e:  # datatrove fails on some inputs (empty text); counted as a drop
                r = (False, "exception " + e.__class__.__name__)
            if r is not True:
                why = "%s:%s" % (f.__class__.__name__, r[1] if isinstance(r, tuple) else "")
                break
        res[d["id"]] = why
    return res

def ours(yaml_text, name):
    cfg = os.path.join(work, name + ".yaml")
    open(cfg, "w").write(yaml_text)
    out = os.path.join(work, "out-" + name)
    subprocess.run([sluice, "-q", "filter", "--force", "--annotate", "--config", cfg, "--out", out, corpus], check=True)
    res = {}
    for line in subprocess.run(["zstdcat"] + sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".zst")),
                               capture_output=True, check=True).stdout.decode().split("\n"):
        if not line:
            continue
        j = json.loads(line)
        res[j["id"]] = ("%s:%s" % (j["filter_drop"], j["filter_reason"])) if "filter_drop" in j else None
    return res

def config(name):
    return open(os.path.join(root, "configs/filters", name)).read()

cases = [
    ("GopherQualityFilter", [GopherQualityFilter()], "language: en\nfilters:\n  - gopher_quality\n"),
    ("GopherRepetitionFilter", [GopherRepetitionFilter()], "language: en\nfilters:\n  - gopher_repetition\n"),
    ("C4QualityFilter", [C4QualityFilter()], "language: en\nfilters:\n  - c4_quality\n"),
    ("FineWebQualityFilter", [FineWebQualityFilter()], "language: en\nfilters:\n  - fineweb_quality\n"),
    ("gopher.yaml", [GopherRepetitionFilter(), GopherQualityFilter()], config("gopher.yaml")),
    ("c4.yaml", [C4QualityFilter()], config("c4.yaml")),
    ("fineweb-heuristics.yaml", [GopherRepetitionFilter(), GopherQualityFilter(),
                                 C4QualityFilter(filter_no_terminal_punct=False), FineWebQualityFilter()],
     config("fineweb-heuristics.yaml")),
]
print("| check | documents | kept (datatrove) | kept (sluice) | same decision | agreement |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
notes = []
for i, (name, chain, yaml_text) in enumerate(cases):
    a, b = datatrove(chain), ours(yaml_text, "case%d" % i)
    same = sum((a[k] is None) == (b.get(k) is None) for k in a)
    print("| %s | %d | %d | %d | %d | %.2f%% |" % (name, len(a), sum(v is None for v in a.values()),
          sum(v is None for v in b.values()), same, 100.0 * same / len(a)))
    for k in a:
        if (a[k] is None) != (b.get(k) is None):
            notes.append("- %s, `%s`: datatrove %s, sluice %s" % (name, k, a[k] or "keeps", b.get(k) or "keeps"))
print()
print("Disagreements:" if notes else "No disagreements.")
for n in notes:
    print(n)
