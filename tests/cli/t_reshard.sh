#!/usr/bin/env bash
# sluice reshard: balanced shards, order, ids, pass-through, manifest, resume, progress.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# an input with a known shape: 200 documents, some with ids, extra fields, a nested one
python3 - "$T/in" <<'PY'
import json, os, sys, gzip
d = sys.argv[1]; os.makedirs(d + "/sub")
with open(d + "/a.jsonl", "w") as f:
    for i in range(120):
        doc = {"text": "document %d " % i + "word " * (i % 50), "n": i, "score": 0.1}
        if i % 3 == 0:
            doc = {"id": "given-%d" % i, **doc}
        f.write(json.dumps(doc) + "\n")
with gzip.open(d + "/sub/b.json.gz", "wt") as f:
    for i in range(80):
        # written by hand: "2.50" must survive as spelled
        f.write('{"text": "second file %d", "meta": {"k": [1, 2.50, null]}}\n' % i)
PY

case_ "reshard into N shards"
run "$SLUICE" reshard --out "$T/o1" --shards 3 "$T/in"
expect_rc 0; expect_err "200 documents"
expect_file "$T/o1/part-00000.jsonl.zst"; expect_file "$T/o1/part-00002.jsonl.zst"
expect_no_file "$T/o1/part-00003.jsonl.zst"
expect_eq "$(json "$T/o1/manifest.json" "m['counts']['documents_out']")" 200
expect_eq "$(json "$T/o1/manifest.json" "len(m['outputs'])")" 3
expect_eq "$(json "$T/o1/manifest.json" "m['stage']")" reshard
expect_eq "$(json "$T/o1/manifest.json" "m['counts']['documents_in']")" 200
expect_eq "$(json "$T/o1/manifest.json" "sum(o['documents'] for o in m['outputs'])")" 200

case_ "documents keep input order; ids assigned from path and line; fields pass through"
zstdcat "$T/o1"/part-*.jsonl.zst > "$T/all.jsonl"
python3 - "$T/all.jsonl" "$T/in" > "$T/check" <<'PY'
import json, sys, gzip
lines = open(sys.argv[1]).read().splitlines()
docs = [json.loads(l) for l in lines]
assert len(docs) == 200, len(docs)
assert docs[0]["id"] == "given-0", docs[0]["id"]
assert docs[1]["id"] == "a:2", docs[1]["id"]
assert docs[120]["id"] == "sub/b:1", docs[120]["id"]
assert [d["text"] for d in docs[:3]] == ["document 0 ", "document 1 word ", "document 2 word word "]
# untouched lines are byte-identical to the input
src = open(sys.argv[2] + "/a.jsonl").read().splitlines()
assert lines[0] == src[0]
# "2.50" in a nested member keeps its spelling
assert '{"k": [1, 2.50, null]}' in lines[120], lines[120]
print("ok")
PY
expect_eq "$(cat "$T/check")" ok

case_ "shards are balanced in bytes"
python3 - "$T/o1/manifest.json" > "$T/bal" <<'PY'
import json, sys, subprocess
m = json.load(open(sys.argv[1]))
import os
d = os.path.dirname(sys.argv[1])
sizes = [len(subprocess.run(["zstdcat", d + "/" + o["path"]], capture_output=True).stdout) for o in m["outputs"]]
mean = sum(sizes) / len(sizes)
print("ok" if max(sizes) - min(sizes) < 0.1 * mean + 200 else "unbalanced %s" % sizes)
PY
expect_eq "$(cat "$T/bal")" ok

case_ "--shard-size picks the shard count"
total=$(cat "$T/in/a.jsonl" <(zcat "$T/in/sub/b.json.gz") | wc -c)
run "$SLUICE" reshard --out "$T/o2" --shard-size 4K "$T/in"
expect_rc 0
expect_eq "$(json "$T/o2/manifest.json" "len(m['outputs'])")" "$(( (total + 4095) / 4096 ))"

case_ "re-running resumes: complete shards are kept, a missing one is rebuilt"
before=$(stat -c %Y.%s "$T/o1/part-00000.jsonl.zst")
cp "$T/o1/part-00001.jsonl.zst" "$T/p1.zst"
rm "$T/o1/part-00001.jsonl.zst"
sleep 1
run "$SLUICE" reshard --out "$T/o1" --shards 3 "$T/in"
expect_rc 0; expect_err "(resumed)"
expect_eq "$(stat -c %Y.%s "$T/o1/part-00000.jsonl.zst")" "$before" "(shard 0 rewritten)"
cmp -s "$T/p1.zst" "$T/o1/part-00001.jsonl.zst" && ok || fail "rebuilt shard differs"
expect_eq "$(json "$T/o1/manifest.json" "m['counts']['documents_out']")" 200
expect_eq "$(json "$T/o1/manifest.json" "m['resumed']")" True

case_ "a different plan in the same directory is refused, --force replaces it"
run "$SLUICE" reshard --out "$T/o1" --shards 2 "$T/in"
expect_rc 1; expect_err "different run"; expect_err "--force"
run "$SLUICE" reshard --out "$T/o1" --shards 2 --force "$T/in"
expect_rc 0
expect_no_file "$T/o1/part-00002.jsonl.zst"
expect_eq "$(json "$T/o1/manifest.json" "len(m['outputs'])")" 2

case_ "an output directory of a stage is read as its listed outputs"
echo '{"text":"side file, not an output"}' > "$T/o1/notes.jsonl"
run "$SLUICE" reshard --out "$T/o3" --shards 1 "$T/o1"
expect_rc 0
expect_eq "$(json "$T/o3/manifest.json" "m['counts']['documents_out']")" 200

case_ "real corpora: Pile-format zst and CCNet gz"
run "$SLUICE" reshard --out "$T/o4" --shards 2 "$FIX/jsonl"
expect_rc 0
expect_eq "$(json "$T/o4/manifest.json" "m['counts']['documents_out']")" 13
expect_eq "$(json "$T/o4/manifest.json" "m['counts']['skipped_text_not_string']")" 1
expect_err "blns.jsonl.zst:2: \"text\" is not a string"

case_ "progress: plain lines when not a terminal, none with -q"
SLUICE_PROGRESS_INTERVAL=0.000001 run "$SLUICE" reshard --out "$T/o5" --shards 2 "$T/in"
expect_rc 0; expect_err "reshard: "; expect_err "B/s"  # a rate; its unit depends on the machine
SLUICE_PROGRESS_INTERVAL=0.000001 run "$SLUICE" -q reshard --out "$T/o6" --shards 2 "$T/in"
expect_rc 0; expect_err_empty
SLUICE_PROGRESS_INTERVAL=0.000001 run "$SLUICE" reshard -q --out "$T/o7" --shards 2 "$T/in"
expect_rc 0; expect_err_empty

case_ "never an empty shard: --shards beyond the documents, --shard-size 1, skewed sizes"
mkdir -p "$T/few"
printf '{"text":"a"}\n{"text":"b"}\n' > "$T/few/two.jsonl"
for a in "--shards 100000" "--shard-size 1"; do
    rm -rf "$T/few-o"
    run "$SLUICE" reshard $a --out "$T/few-o" "$T/few"
    expect_rc 0
    expect_eq "$(find "$T/few-o" -maxdepth 1 -name 'part-*' | wc -l)" 2
    expect_eq "$(json "$T/few-o/manifest.json" "[o['documents'] for o in m['outputs']]")" "[1, 1]"
done
python3 -c "
import json
print(json.dumps({'text': 'x' * 10000}))
print(json.dumps({'text': 'small one'}))
print(json.dumps({'text': 'small two'}))" > "$T/few/skew.jsonl"
rm -rf "$T/few-s"
run "$SLUICE" reshard --shards 3 --out "$T/few-s" "$T/few/skew.jsonl"
expect_rc 0
expect_eq "$(json "$T/few-s/manifest.json" "all(o['documents'] > 0 for o in m['outputs'])")" True
for f in "$T"/few-s/part-*.jsonl.zst; do [ "$(zstdcat "$f" | wc -l)" -gt 0 ] && ok || fail "empty shard $f"; done
expect_eq "$(json "$T/few-s/manifest.json" "m['counts']['documents_out']")" 3
run "$SLUICE" reshard --out "$T/few-n" "$T/few-s"
expect_rc 0; expect_eq "$(json "$T/few-n/manifest.json" "m['counts']['documents_out']")" 3
run "$SLUICE" reshard --shards 3 --out "$T/few-s" "$T/few/skew.jsonl"
expect_rc 0; expect_err "(resumed)"

case_ "a zstd frame whose checksum fails: with --skip-corrupt its lines are dropped and counted"
python3 - "$T/zf" <<'PY'
import json, os, random, subprocess, sys
os.makedirs(sys.argv[1])
random.seed(1)
frames = []
for f in range(3):
    data = "".join(json.dumps({"text": "frame %d doc %d %s" % (f, i, " ".join(str(random.random()) for _ in range(20)))}) + "\n"
                   for i in range(3000)).encode()
    frames.append(subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True).stdout)
bad = bytearray(frames[1]); bad[-1] ^= 0xff   # the frame's checksum
open(sys.argv[1] + "/frames.jsonl.zst", "wb").write(frames[0] + bytes(bad) + frames[2])
PY
run "$SLUICE" reshard --out "$T/zf-o" "$T/zf"
expect_rc 1; expect_err "Restored data doesn't match checksum"
run "$SLUICE" reshard --skip-corrupt --out "$T/zf-o2" "$T/zf"
expect_rc 0
expect_eq "$(zstdcat "$T"/zf-o2/part-*.jsonl.zst | grep -c '"frame 1 ' || true)" 0
expect_eq "$(json "$T/zf-o2/manifest.json" "m['counts']['documents_out']")" 3000
expect_eq "$(json "$T/zf-o2/manifest.json" "m['counts']['skipped_corrupt'] > 0")" True
expect_eq "$(json "$T/zf-o2/manifest.json" "m['counts']['documents_in'] == m['counts']['documents_out'] + sum(v for k, v in m['counts'].items() if k.startswith('skipped_'))")" True
run "$SLUICE" extract --format jsonl --skip-corrupt --out "$T/zf-o3" "$T/zf"
expect_rc 0
expect_eq "$(zstdcat "$T"/zf-o3/part-*.jsonl.zst | grep -c '"frame 1 ' || true)" 0
expect_eq "$(json "$T/zf-o3/manifest.json" "m['counts']['documents_out']")" 3000
expect_eq "$(json "$T/zf-o3/manifest.json" "m['counts']['skipped_corrupt'] > 0")" True

finish
