#!/usr/bin/env python3
"""Keep/drop decisions of datatrove's filters (the oracle) against sluice's on the same
documents, and of NeMo Curator's English cascade against nemo-en.yaml.
Usage: filter_agreement.py SLUICE CORPUS.jsonl WORKDIR CACHEDIR LID_MODEL > table.md
Both sides identify the language with the same fastText model file (LID_MODEL). The peers'
decisions are kept in CACHEDIR per check and peer version, keyed by each document's text, so
a rerun only runs a peer on documents it has not seen."""
import hashlib, json, os, subprocess, sys, time
from importlib.metadata import version

import datatrove.utils.lid
from datatrove.data import Document
from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                        GopherRepetitionFilter, LanguageFilter)

from filter_peer import nemo_chain

sluice, corpus, work, cache, lid_model = sys.argv[1:6]
docs = [json.loads(l) for l in open(corpus)]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
datatrove.utils.lid.cached_asset_path_or_download = lambda *a, **k: lid_model  # no download


def run_datatrove(chain, docs):
    res = {}
    for d in docs:
        doc = Document(text=d["text"], id=d["id"])  # filters that edit the text pass it on
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


def run_nemo(chain, docs):
    res = {}
    for d in docs:
        why = None
        for f in chain:
            if not f.keep_document(f.score_document(d["text"])):
                why = f.__class__.__name__
                break
        res[d["id"]] = why
    return res


def cached(name, tool, chain):
    """The peer's decision (None: keep) for every document, from the cache where it has them."""
    path = os.path.join(cache, "%s-%s-%s.json" % (name, tool, version(tool)))
    known = json.load(open(path)) if os.path.exists(path) else {}
    key = {d["id"]: hashlib.sha256(d["text"].encode()).hexdigest()[:24] for d in docs}
    pending = [d for d in docs if key[d["id"]] not in known]
    if pending:
        t = time.time()
        run = run_datatrove if tool == "datatrove" else run_nemo
        for k, why in run(chain, pending).items():
            known[key[k]] = why
        print("%s %s: %d documents in %.1f s" % (tool, name, len(pending), time.time() - t), file=sys.stderr)
        os.makedirs(cache, exist_ok=True)
        json.dump(known, open(path + ".tmp", "w"))
        os.replace(path + ".tmp", path)
    return {d["id"]: known[key[d["id"]]] for d in docs}


def ours(yaml_text, name, extra):
    cfg = os.path.join(work, name + ".yaml")
    open(cfg, "w").write(yaml_text)
    out = os.path.join(work, "out-" + name)
    subprocess.run([sluice, "-q", "filter", "--force", "--annotate", "--config", cfg, "--out", out] + extra +
                   [corpus], check=True)
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


def one(name):
    return "language: en\nfilters:\n  - %s\n" % name


fineweb_chain = [GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(filter_no_terminal_punct=False),
                 FineWebQualityFilter()]
# (check, peer, peer's chain, our config, extra arguments to sluice filter)
cases = [
    ("GopherQualityFilter", "datatrove", [GopherQualityFilter()], one("gopher_quality"), []),
    ("GopherRepetitionFilter", "datatrove", [GopherRepetitionFilter()], one("gopher_repetition"), []),
    ("C4QualityFilter", "datatrove", [C4QualityFilter()], one("c4_quality"), []),
    ("FineWebQualityFilter", "datatrove", [FineWebQualityFilter()], one("fineweb_quality"), []),
    ("gopher.yaml", "datatrove", [GopherRepetitionFilter(), GopherQualityFilter()], config("gopher.yaml"), []),
    ("c4.yaml", "datatrove", [C4QualityFilter()], config("c4.yaml"), []),
    ("fineweb-heuristics.yaml", "datatrove", fineweb_chain, config("fineweb-heuristics.yaml"), []),
    ("fineweb.yaml", "datatrove", [LanguageFilter(languages=["en"], language_threshold=0.65)] + fineweb_chain,
     config("fineweb.yaml"), ["--set", "filters.language.model=" + lid_model]),
    ("nemo-en.yaml", "nemo-curator", nemo_chain(), config("nemo-en.yaml"), []),
]
print("| check | peer | documents | kept (peer) | kept (sluice) | same decision | agreement |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
notes = []
for i, (name, tool, chain, yaml_text, extra) in enumerate(cases):
    a, b = cached(name, tool, chain), ours(yaml_text, "case%d" % i, extra)
    for k in a:
        b.setdefault(k, "missing from the output")  # a document sluice skipped counts as a drop
    same = sum((a[k] is None) == (b[k] is None) for k in a)
    print("| %s | %s %s | %d | %d | %d | %d | %.2f%% |" % (
        name, tool, version(tool), len(a), sum(v is None for v in a.values()),
        sum(v is None for v in b.values()), same, 100.0 * same / len(a)))
    for k in a:
        if (a[k] is None) != (b[k] is None):
            notes.append("- %s, `%s`: %s %s, sluice %s" % (name, k, tool, a[k] or "keeps", b[k] or "keeps"))
print()
print("Disagreements:" if notes else "No disagreements.")
for n in notes:
    print(n)
