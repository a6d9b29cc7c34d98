#!/usr/bin/env python3
"""Write the agreement/benchmark corpus as JSONL: every document of shared/data/jsonl-corpora
(697 Common Crawl, 20 CCNet and 10 paragraph-dedup documents from dolma, the 4 records of the
lm_dataformat archive whose text is a string), the UDHR texts and the 500 Brown Corpus samples (tags removed, one
paragraph per sentence line). Usage: DATA OUT.jsonl"""
import gzip, io, json, re, subprocess, sys, tarfile

data, out = sys.argv[1], sys.argv[2]
docs = []
d = data + "/jsonl-corpora/dolma/"
for f in ["CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz", "cc_en_head-0091.jsonl.gz",
          "cc_en_head-0174.jsonl.gz"]:
    for i, line in enumerate(gzip.open(d + f, "rt")):
        docs.append({"id": "%s:%d" % (f.split(".")[0], i), "text": json.loads(line)["text"]})
for i, line in enumerate(gzip.open(d + "dedupe-paragraphs/documents-000.json.gz", "rt")):
    docs.append({"id": "dedupe-paragraphs:%d" % i, "text": json.loads(line)["text"]})
blns = subprocess.run(["zstdcat", data + "/jsonl-corpora/lm_dataformat/blns.jsonl.zst"],
                      capture_output=True, check=True).stdout.decode()
for i, line in enumerate(blns.splitlines()):
    text = json.loads(line)["text"]
    if isinstance(text, str):  # one record's "text" is a list of strings
        docs.append({"id": "lm_dataformat:%d" % i, "text": text})
for i, line in enumerate(open(data + "/text/udhr/udhr.jsonl")):
    j = json.loads(line)
    docs.append({"id": "udhr:" + j["code"], "text": j["text"]})
with tarfile.open(data + "/text/brown/brown.tar.gz") as t:
    for m in sorted(t.getmembers(), key=lambda m: m.name):
        name = m.name.split("/")[-1]
        if not re.match(r"c[a-r]\d\d$", name):
            continue
        raw = t.extractfile(m).read().decode("utf-8", "replace")
        paras = []
        for sent in raw.split("\n"):
            words = [w.rsplit("/", 1)[0] for w in sent.split()]
            if words:
                paras.append(" ".join(words).replace("``", '"').replace("''", '"'))
        docs.append({"id": "brown:" + name, "text": "\n\n".join(paras)})
with open(out, "w") as f:
    for doc in docs:
        f.write(json.dumps(doc, ensure_ascii=False) + "\n")
print(len(docs), "documents", file=sys.stderr)
