#!/usr/bin/env python3
"""Write the agreement/benchmark corpus as JSONL: the 697 Common Crawl documents and 20
CCNet documents of shared/data/jsonl-corpora/dolma, the UDHR texts and the 500 Brown
Corpus samples (tags removed, one paragraph per sentence line). Usage: DATA OUT.jsonl"""
import gzip, io, json, re, sys, tarfile

data, out = sys.argv[1], sys.argv[2]
docs = []
d = data + "/jsonl-corpora/dolma/"
for f in ["CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz", "cc_en_head-0091.jsonl.gz",
          "cc_en_head-0174.jsonl.gz"]:
    for i, line in enumerate(gzip.open(d + f, "rt")):
        docs.append({"id": "%s:%d" % (f.split(".")[0], i), "text": json.loads(line)["text"]})
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
