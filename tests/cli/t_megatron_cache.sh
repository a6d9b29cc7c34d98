#!/usr/bin/env bash
# Megatron-Core's cache names: for each case of tests/golden/megatron_index/cases.json (one
# prefix, a weighted blend, an unweighted one, one weighted prefix, separate split paths,
# nine prefixes, legacy tokenizers, a directory name outside ASCII), the description files
# `sluice dataset index` writes, and so the MD5s in the cache names, equal byte for byte
# those the real megatron-core 0.16.1 wrote (golden files, tests/golden/megatron_index/gen.py)
# and those of the Python port written from reading megatron-core (tests/oracle/
# megatron_index.py). Then: a second run reads everything from the cache; `dataset samples`
# equals the port's tokens, also per data-parallel rank; bad options are clear errors.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
MI="$ROOT/tests/oracle/megatron_index.py"
G="$ROOT/tests/golden/megatron_index"
mkdir -p "$T/data"
"$PY" "$MI" make-data "$T/data"
cd "$T/data"

names() { (cd "$1" && ls | grep -- '-description.txt$' | sort); }

for name in $(json "$G/cases.json" '" ".join(c["name"] for c in m)'); do
    case_ "$name: sluice's descriptions are megatron-core's and the port's"
    mapfile -t args < <("$PY" "$MI" sluice-args "$G/cases.json" "$name" "$T/c-$name")
    run "$SLUICE" dataset index "${args[@]}"
    expect_rc 0
    out="$T/c-$name"
    [ -d "$out" ] || out="$T/data/a/cache/GPTDataset_indices" # no cache path: beside the data
    expect_eq "$(names "$out")" "$(names "$G/$name")" "(description files of $name)"
    for f in $(names "$G/$name"); do
        if cmp -s "$out/$f" "$G/$name/$f"; then ok; else fail "$name: $f differs from megatron-core's"; fi
    done
    "$PY" "$MI" describe "$G/cases.json" "$name" >"$T/port.json"
    run "$PY" - "$T/port.json" "$G/$name" <<'PY'
import json, os, sys
port, gold = json.load(open(sys.argv[1])), sys.argv[2]
files = sorted(os.listdir(gold))
assert sorted(port) == files, (sorted(port), files)
for f in files:
    assert port[f] == open(os.path.join(gold, f)).read(), f
print("port equals megatron-core: %d descriptions" % len(files))
PY
    expect_rc 0
    expect_out "port equals megatron-core"
done

case_ "a second run reads every index from the cache and builds nothing"
mapfile -t args < <("$PY" "$MI" sluice-args "$G/cases.json" blend "$T/c-blend")
run "$SLUICE" dataset index --manifest "$T/m.json" "${args[@]}"
expect_rc 0
expect_out '"built": 0'
expect_eq "$(json "$T/m.json" 'all(i["from_cache"] for i in m["indices"]), len(m["indices"])')" "True 6"
expect_no_err "building"

case_ "dataset samples: the blend's tokens in Megatron's order, whole and per rank"
run "$SLUICE" dataset samples "${args[@]}" --from 0 --to 39
expect_rc 0
cp "$T/out" "$T/all.jsonl"
for r in 0 1; do
    "$SLUICE" dataset samples "${args[@]}" --from 0 --to 39 --dp-rank $r --dp-size 2 \
        --micro-batch-size 4 >"$T/rank$r.jsonl"
done
run "$PY" - "$MI" "$T/all.jsonl" "$T/rank0.jsonl" "$T/rank1.jsonl" <<'PY'
import json, math, sys
sys.path.insert(0, __import__("os").path.dirname(sys.argv[1]))
import megatron_index as mi
L, seed, want = 8, 5, 100
w = mi.normalize([0.3, 0.7])
comps = []
for k, p in enumerate(["a", "b"]):
    sizes, ptrs, data, isz = mi.idx_read(p)
    lo, hi = mi.split_ranges("98,2,0", len(sizes))[0]
    n = int(math.ceil(math.ceil(want * w[k]) * 1.005))
    d, s, sh, _, _ = mi.gpt_indices(sizes, lo, hi, L, n, seed)
    comps.append((sizes, ptrs, data, isz, d, s, sh))
size = sum(int(math.ceil(want * x)) for x in w)
di, dsi = mi.blending_indices(mi.normalize(w), size)
rows = [json.loads(l) for l in open(sys.argv[2])]
assert [r["index"] for r in rows] == list(range(40))
for r in rows:
    c = comps[di[r["index"]]]
    mine = mi.sample_tokens(c[2], c[1], c[3], c[0], c[4], c[5], c[6], dsi[r["index"]]).tolist()
    assert r["ids"] == mine and r["dataset"] == di[r["index"]], r["index"]
# Megatron's sampler: groups of micro x dp = 8, rank r takes [4 r, 4 r + 4) of each
for rank, f in ((0, sys.argv[3]), (1, sys.argv[4])):
    got = [json.loads(l) for l in open(f)]
    idx = [i for i in range(40) if i % 8 // 4 == rank]
    assert [g["index"] for g in got] == idx, (rank, [g["index"] for g in got])
    assert all(g["ids"] == rows[g["index"]]["ids"] and g["rank"] == rank for g in got)
print("samples equal the port: 40, and per rank")
PY
expect_rc 0
expect_out "samples equal the port"

# ---- bad input -----------------------------------------------------------------------
case_ "an unknown Megatron tokenizer names the forms it knows"
run "$SLUICE" dataset index --seq-length 8 --samples 10 --megatron-tokenizer Bogus:1 a
expect_rc 1
expect_err "Megatron tokenizer 'Bogus:1' is unknown"
expect_err "GPT2BPETokenizer:VOCAB,MERGES"

case_ "no tokenize manifest and no --megatron-tokenizer: asks which"
run "$SLUICE" dataset index --seq-length 8 --samples 10 a
expect_rc 2
expect_err "which tokenizer will Megatron be given"

case_ "no sample count"
run "$SLUICE" dataset index --seq-length 8 --megatron-tokenizer NullTokenizer:1000 a
expect_rc 2
expect_err "--train-iters"

case_ "samples past the split's end"
run "$SLUICE" dataset samples --seq-length 8 --samples 10,0,0 --megatron-tokenizer NullTokenizer:1000 \
    --from 0 --to 100000 a
expect_rc 2
expect_err "--to 100000 is past them"

finish
