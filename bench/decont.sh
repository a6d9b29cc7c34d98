#!/usr/bin/env bash
# Benchmark decontamination: speed of `sluice decontaminate` (one rank) against NeMo
# Curator's TaskDecontamination algorithm (bench/decont_peer.py, a faithful plain-Python
# copy: current nemo-curator releases no longer ship it) on the filter-agreement corpus
# (bench/filter_corpus.py, shared/data) with generated task files: passages of 30 words
# taken from 2% of the documents (planted contamination), 10-word texts (the shorter
# n-grams), and 3,000 texts of random corpus words that match nothing. Also compares the
# outputs (with NeMo's max_matches pass off, which sluice does not have).
# Writes bench/results/decont.md (and stdout). Usage: bench/decont.sh [SLUICE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sluice=$(realpath "${1:-build/sluice}")
data=${SLUICE_DATA:-$(cd "$here/../.." && pwd)/shared/data}
py=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-decont-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$py" "$here/filter_corpus.py" "$data" "$work/corpus.jsonl" >/dev/null
"$py" - "$work" <<'PY'
import json, random, sys
w = sys.argv[1]
r = random.Random(1)
docs = [json.loads(l) for l in open(w + "/corpus.jsonl")]
vocab = [x for d in docs[:200] for x in d["text"].split()]
with open(w + "/task.jsonl", "w") as f:
    for d in r.sample(docs, len(docs) // 50):
        ws = d["text"].split()
        if len(ws) > 40:
            k = r.randrange(len(ws) - 30)
            f.write(json.dumps({"question": " ".join(ws[k:k + 30]), "answers": [" ".join(ws[k + 30:k + 40])]}) + "\n")
    for _ in range(3000):
        f.write(json.dumps({"question": " ".join(r.choice(vocab) for _ in range(25)), "answers": [" ".join(r.choice(vocab) for _ in range(10))]}) + "\n")
open(w + "/tasks.yaml", "w").write("tasks:\n  - name: bench\n    files: [task.jsonl]\n    fields: [question, answers]\n")
for mm, name in ((10, "cfg.json"), (10**9, "cfg-all.json")):
    json.dump({"ngram": 13, "min_task_words": 8, "margin": 200, "min_length": 200, "max_splits": 10, "max_matches": mm,
               "tasks": [{"name": "bench", "files": [w + "/task.jsonl"], "fields": ["question", "answers"]}]}, open(w + "/" + name, "w"))
PY
best=
for rep in 1 2 3; do
    s=$(date +%s.%N)
    "$sluice" -q decontaminate --tasks "$work/tasks.yaml" --out "$work/o$rep" "$work/corpus.jsonl"
    e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
done
"$py" "$here/decont_peer.py" "$work/cfg.json" "$work/corpus.jsonl" "$work/peer.jsonl" > "$work/peer.json"
"$py" "$here/decont_peer.py" "$work/cfg-all.json" "$work/corpus.jsonl" "$work/peer-all.jsonl" > "$work/peer-all.json"
"$py" - "$work" "$best" <<'PY' | tee "$here/results/decont.md"
import json, os, subprocess, sys
w, t_ours = sys.argv[1], float(sys.argv[2])
p = json.load(open(w + "/peer.json")); pa = json.load(open(w + "/peer-all.json"))
m = json.load(open(w + "/o1/manifest.json"))["counts"]
mb = os.path.getsize(w + "/corpus.jsonl") / 1e6
t_peer = p["build"] + p["find"] + p["remove"]
print("Corpus: %d documents, %.1f MB JSONL; task table: %d distinct n-grams." % (m["documents_in"], mb, pa["ngrams"]))
print()
print("| run (one core) | seconds | vs NeMo algorithm |")
print("| --- | ---: | ---: |")
print("| NeMo TaskDecontamination (Python copy): build %.2f + find %.2f + remove %.2f s (CPU) | %.2f | 1.0x |" % (p["build"], p["find"], p["remove"], t_peer))
print("| same, build + remove only (no max_matches pass) | %.2f | %.2fx |" % (pa["build"] + pa["remove"], t_peer / (pa["build"] + pa["remove"])))
print("| sluice decontaminate (wall, whole command: read, build, cut, zstd write) | %.2f | %.1fx |" % (t_ours, t_peer / t_ours))
print()
ours = subprocess.run(["zstdcat", w + "/o1/part-00000.jsonl.zst"], capture_output=True, check=True).stdout.decode()
ours = [json.loads(l)["text"] for l in ours.split("\n") if l]
peer = [json.loads(l)["text"] for l in open(w + "/peer-all.jsonl", encoding="utf-8")]
print("Output (NeMo with max_matches off): NeMo %d documents out, %d dropped; sluice %d out, %d dropped "
      "(%d contaminated); identical output texts: %d of %d (multiset)." % (
      pa["documents_out"], pa["dropped"], m["documents_out"],
      m.get("documents_dropped_max_splits", 0) + m.get("documents_dropped_empty", 0), m.get("documents_contaminated", 0),
      sum(min(ours.count(x), peer.count(x)) for x in set(peer)), len(peer)))
PY
