#!/usr/bin/env bash
# sluice dedup fuzzy --cluster-size / --rehydrate: each kept document's cluster size in
# minhash_cluster_size and its repeats by FineWeb-2's weights, against a corpus of clusters
# of known sizes (1, 1, 2, 3, 4, 5, 99, 100, 1000) whose expected sizes and repeat counts
# are computed here by hand; the same shards for mpirun -np 1/2; a run stopped between its
# shards resumes to the same outputs; other weight tables; the `sluice run` stage keys.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# The corpus: one random 40-word text per cluster (letters only: --norm all folds digits),
# each member a variant that normalisation makes equal (case, trailing punctuation), so the
# clusters are exactly these; members shuffled over two files. expect.json: per text, its
# cluster's size and the id of its first member in input order (the one dedup keeps).
$PY - "$T" <<'PY'
import json, random, sys
t = sys.argv[1]
rng = random.Random(45)
words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(4000)]
sizes = [1, 1, 2, 3, 4, 5, 99, 100, 1000]
texts = [" ".join(rng.choice(words) for _ in range(40)) for _ in sizes]
members = [(c, k) for c, s in enumerate(sizes) for k in range(s)]
rng.shuffle(members)
files = [open(f"{t}/in-{i}.jsonl", "w") for i in range(2)]
first = {}
for n, (c, k) in enumerate(members):
    text = texts[c]
    if k % 3 == 1:
        text = text.upper()
    elif k % 3 == 2:
        text = text + " !"
    # file 0 holds the first half in order, file 1 the rest: input order = n
    files[n * 2 // len(members)].write(json.dumps({"id": f"d{n}", "text": text}) + "\n")
    first.setdefault(c, f"d{n}")
json.dump({first[c]: sizes[c] for c in range(len(sizes))}, open(f"{t}/expect.json", "w"))
PY

# The weight of a cluster of n documents under a table {SIZE: WEIGHT}: that of the largest
# SIZE <= n (FineWeb-2's rule: README.md of github.com/huggingface/fineweb-2 at d0defb2,
# section "Deduplication", its Rehydrater; their default table below, from the same place).
FINEWEB2='{1: 1, 2: 2, 3: 3, 5: 5, 100: 8, 1000: 1}'
# check OUT TABLE: every kept document written weight(size) times, consecutively, with
# minhash_cluster_size = its cluster's size, and nothing else written; the manifest's counts
# (TABLE {}: --cluster-size alone, each once)
check() {
    $PY - "$1" "$2" "$T/expect.json" <<'PY'
import json, subprocess, sys, glob
out, table, expect = sys.argv[1], eval(sys.argv[2]), json.load(open(sys.argv[3]))
def weight(n):
    return table[max(s for s in table if s <= n)] if any(s <= n for s in table) else 1
want, got = [], []
for kid, n in sorted(expect.items(), key=lambda x: int(x[0][1:])):
    want += [(kid, n)] * weight(n)
for p in sorted(glob.glob(out + "/part-*.jsonl.zst")):
    for l in subprocess.run(["zstd", "-dc", p], capture_output=True, check=True).stdout.splitlines():
        d = json.loads(l)
        got.append((d["id"], d.get("minhash_cluster_size")))
m = json.load(open(out + "/manifest.json"))["counts"]
# {}: no rehydration (each once, no documents_rehydrated)
extra = sum(weight(n) - 1 for n in expect.values()) if table else None
bad = []
if got != want:
    bad.append(f"documents {got[:12]}... != {want[:12]}...")
if m["documents_out"] != len(want) or m.get("documents_rehydrated") != extra:
    bad.append(f"counts {m['documents_out']}/{m.get('documents_rehydrated')} != {len(want)}/{extra}")
if m["documents_in"] != sum(expect.values()) or m["duplicate_clusters"] != sum(n > 1 for n in expect.values()):
    bad.append(f"documents_in {m['documents_in']}, clusters {m['duplicate_clusters']}")
print("\n".join(bad) or "ok")
PY
}
IN=("$T/in-0.jsonl" "$T/in-1.jsonl")

case_ "--rehydrate: FineWeb-2's weights by cluster size, the copies counted"
run "$SLUICE" dedup fuzzy --rehydrate --out "$T/r1" "${IN[@]}"
expect_rc 0
expect_eq "$(check "$T/r1" "$FINEWEB2")" ok
# by hand: sizes 1,1,2,3,4,5,99,100,1000 -> 1,1,2,3,3,5,5,8,1 = 29 documents, 20 copies
expect_eq "$(json "$T/r1/manifest.json" "m['counts']['documents_out'], m['counts']['documents_rehydrated']")" "29 20"
expect_eq "$(json "$T/r1/manifest.json" "m['settings']['rehydrate_table']")" "1:1,2:2,3:3,5:5,100:8,1000:1"

case_ "--cluster-size alone: the sizes, each kept document once"
run "$SLUICE" dedup fuzzy --cluster-size --out "$T/c1" "${IN[@]}"
expect_rc 0
expect_eq "$(check "$T/c1" '{}')" ok
expect_eq "$(zstd -dc "$T"/c1/part-*.zst | grep -c minhash_cluster_size)" 9
expect_eq "$(json "$T/c1/manifest.json" "'documents_rehydrated' in m['counts']")" False

case_ "without the options the documents are as before: no size member"
run "$SLUICE" dedup fuzzy --out "$T/p1" "${IN[@]}"
expect_rc 0
expect_eq "$(zstd -dc "$T"/p1/part-*.zst | grep -c minhash_cluster_size || true)" 0
expect_eq "$(json "$T/p1/manifest.json" "'cluster_size' in m['settings']")" False

case_ "--rehydrate-weights SPEC and FILE"
run "$SLUICE" dedup fuzzy --rehydrate-weights 2:4,4:2,100:3 --out "$T/w1" "${IN[@]}"
expect_rc 0
expect_eq "$(check "$T/w1" '{2: 4, 4: 2, 100: 3}')" ok
printf '# sizes and weights\n1:1\n3:2   5:1\n' >"$T/table.txt"
run "$SLUICE" dedup fuzzy --rehydrate-weights "$T/table.txt" --out "$T/w2" "${IN[@]}"
expect_rc 0
expect_eq "$(check "$T/w2" '{1: 1, 3: 2, 5: 1}')" ok
run "$SLUICE" dedup fuzzy --rehydrate-weights 5:5,2:2 --out "$T/bad" "${IN[@]}"
expect_rc 2; expect_err "rehydration step '2:2' in --rehydrate-weights is not after the size before it"
run "$SLUICE" dedup fuzzy --rehydrate-weights 3:0 --out "$T/bad" "${IN[@]}"
expect_rc 2; expect_err "bad rehydration step '3:0'"
run "$SLUICE" dedup fuzzy --rehydrate-weights "$T/none.txt" --out "$T/bad" "${IN[@]}"
expect_rc 2; expect_err "none.txt"

case_ "a changed table is a different plan, not a resume"
run "$SLUICE" dedup fuzzy --rehydrate-weights 2:4,4:2,100:3 --out "$T/r1" "${IN[@]}"
expect_rc 1; expect_err "--force"

case_ "stopped after its first shard, the run resumes to the same outputs"
cp -r "$T/r1" "$T/r2"
rm "$T/r2/manifest.json" "$T/r2/part-00001.jsonl.zst" "$T/r2/.sluice/part-00001.jsonl.zst.json"
run "$SLUICE" dedup fuzzy --rehydrate --out "$T/r2" "${IN[@]}"
expect_rc 0; expect_err "(resumed)"
for f in part-00000.jsonl.zst part-00001.jsonl.zst duplicates.jsonl clusters.jsonl; do
    cmp -s "$T/r1/$f" "$T/r2/$f" && ok || fail "$f differs after the resume"
done
expect_eq "$(json "$T/r2/manifest.json" "m['counts']")" "$(json "$T/r1/manifest.json" "m['counts']")"

if have_mpi; then
    case_ "mpirun -np 2: the outputs of -np 1"
    run "${MPIRUN[@]}" -np 2 "$SLUICE" dedup fuzzy --rehydrate --out "$T/m2" "${IN[@]}"
    expect_rc 0
    for f in part-00000.jsonl.zst part-00001.jsonl.zst duplicates.jsonl clusters.jsonl; do
        cmp -s "$T/r1/$f" "$T/m2/$f" && ok || fail "$f differs under -np 2"
    done
    expect_eq "$(json "$T/m2/manifest.json" "m['counts']")" "$(json "$T/r1/manifest.json" "m['counts']")"
fi

case_ "sluice run: the dedup_fuzzy stage's rehydrate keys"
cat >"$T/p.yaml" <<EOF
name: rh
work_dir: $T/run
extract:
  format: jsonl
  in: $T/src
dedup_fuzzy:
  rehydrate_weights: "2:4,4:2,100:3"
EOF
mkdir -p "$T/src" && cp "${IN[@]}" "$T/src/"
run "$SLUICE" run "$T/p.yaml" --dry-run
expect_rc 0; expect_out "sluice dedup fuzzy --out $T/run/dedup_fuzzy --rehydrate-weights 2:4,4:2,100:3"
run "$SLUICE" run "$T/p.yaml"
expect_rc 0
expect_eq "$(json "$T/run/dedup_fuzzy/manifest.json" "m['counts']['documents_rehydrated']")" \
          "$(json "$T/w1/manifest.json" "m['counts']['documents_rehydrated']")"

finish
