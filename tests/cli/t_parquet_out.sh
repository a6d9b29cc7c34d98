#!/usr/bin/env bash
# --out-format parquet: reshard, clean and a `sluice run` pipeline write Parquet shards that
# pyarrow and DuckDB read as the same rows and columns as the JSONL shards of the same run
# (tests/cli/parquet_check.py); row groups, ZSTD, dictionaries, the schema's types, a member
# missing from the schema, 0 rows, resume after SIGKILL, and mpirun -np 2.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if ! "$PY" -c "import pyarrow, duckdb" 2>/dev/null; then
    echo "skip: pyarrow and duckdb not installed (tests/requirements.txt)"
    exit 0
fi

# the input: the UDHR in 107 languages (unicode, long texts) and 10 CCNet documents (nested
# metadata), each with every member (null where its corpus has none, so that any shard's
# first row group has them all: the schema, core/parquet_write.h) and members of each JSON
# type, then odd documents: empty, control characters, astral and right-to-left text, a
# 2 MB text (pages of 1 MiB), an escaped key, extreme numbers, members absent
mkdir -p "$T/in"
zstdcat "$FIX/dedup/udhr.jsonl.zst" > "$T/udhr.jsonl"
zcat "$FIX/jsonl/cc_en_head-0091.jsonl.gz" > "$T/ccnet.jsonl"
"$PY" - "$T/udhr.jsonl" "$T/ccnet.jsonl" "$T/in/all.jsonl" <<'PY'
import json, sys
udhr = [dict(json.loads(l), src="udhr") for l in open(sys.argv[1], encoding="utf-8")]
ccnet = [dict(json.loads(l), src="ccnet") for l in open(sys.argv[2], encoding="utf-8")]
keys = []
for d in udhr + ccnet:
    keys += [k for k in d if k not in keys]
base = []
for i, d in enumerate(udhr + ccnet):
    d = {k: d.get(k) for k in keys if k != "id" or k in d}  # no id: reshard gives one
    d.update({"n": i, "score": i / 7, "flag": i % 2 == 0, "meta": {"i": [i, None]} if i % 3 else None,
              "mixed": i if i % 2 else str(i), "big": 2**70 + i, "k\u00e9y\"q": "v%d" % i})
    base.append(d)
odd = [
    {"text": "", "src": "odd", "n": -(2**63), "score": 1e300, "flag": False, "mixed": "one"},
    {"text": "ctl \u0000\u0001\u001f\u007f tab\t nl\n cr\r", "src": "odd", "n": None},
    {"text": "\U0001F600 astral, \u00e9, \u4e2d\u6587, \u202e rtl", "src": "odd", "mixed": [1, {"a": None}]},
    {"text": "long " + "w\u00f6rd " * 300000, "src": "odd", "score": -0.0, "n": 2**63 - 1},
    {"text": "no id, few members", "src": "odd", "flag": None, "meta": [], "k\u00e9y\"q": ""},
]
with open(sys.argv[3], "w", encoding="utf-8") as f:
    for d in base + odd:
        f.write(json.dumps(d, ensure_ascii=False) + "\n")
PY

# check_pair JSONL_DIR PARQUET_DIR ROWS: every shard pair through parquet_check.py
check_pair() {
    local args=() f
    for f in "$1"/part-*.jsonl.zst; do
        zstdcat "$f" > "$T/$(basename "$f" .zst)"
        args+=("$T/$(basename "$f" .zst)" "$2/$(basename "$f" .jsonl.zst).parquet")
    done
    "$PY" "$ROOT/tests/cli/parquet_check.py" "$3" src id "${args[@]}"
}

case_ "reshard: the same rows as the JSONL shards, in pyarrow and DuckDB; row groups of the size set"
run "$SLUICE" reshard --out "$T/j" --shards 3 "$T/in"
expect_rc 0
run "$SLUICE" reshard --out "$T/p" --shards 3 --out-format parquet --row-group-size 16 "$T/in"
expect_rc 0
expect_file "$T/p/part-00000.parquet"; expect_file "$T/p/part-00002.parquet"
expect_no_file "$T/p/part-00000.jsonl.zst"
expect_eq "$(check_pair "$T/j" "$T/p" 16)" "ok 122"
expect_eq "$(json "$T/p/manifest.json" "[o['path'] for o in m['outputs']]")" \
    "['part-00000.parquet', 'part-00001.parquet', 'part-00002.parquet']"
expect_eq "$(json "$T/p/manifest.json" "m['counts']['documents_out']")" 122

case_ "the schema: text and id first, types from the first row group, JSON columns listed"
"$PY" - "$T/p/part-00000.parquet" > "$T/schema" <<'PY'
import sys, pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
s = f.schema_arrow
print(s.names[:2], s.field("n").type, s.field("score").type, s.field("flag").type,
      s.field("src").type, f.metadata.metadata[b"sluice.json_columns"].decode())
PY
expect_eq "$(cat "$T/schema")" \
    "['text', 'id'] int64 double bool string [\"added\",\"created\",\"metadata\",\"source\",\"meta\",\"mixed\",\"big\"]"

case_ "the default row group is 1000 rows; --level changes the pages' compression"
run "$SLUICE" reshard --out "$T/p1" --shards 1 --out-format parquet "$T/in"
expect_rc 0
expect_eq "$("$PY" -c "import sys, pyarrow.parquet as pq; print(pq.ParquetFile(sys.argv[1]).metadata.num_row_groups)" "$T/p1/part-00000.parquet")" 1
run "$SLUICE" reshard --out "$T/p19" --shards 1 --out-format parquet --level 19 "$T/in"
expect_rc 0
cmp -s "$T/p1/part-00000.parquet" "$T/p19/part-00000.parquet" && fail "--level 19 wrote the same bytes" || ok

case_ "a member the first row group lacks is dropped, with a warning"
printf '{"text":"a"}\n{"text":"b"}\n{"text":"c","late":1}\n' > "$T/late.jsonl"
run "$SLUICE" reshard --out "$T/pl" --shards 1 --out-format parquet --row-group-size 2 "$T/late.jsonl"
expect_rc 0; expect_err "1 member(s) not in the schema dropped (first: 'late')"

case_ "invalid UTF-8: skipped as for JSONL, or with --repair-utf8 written as U+FFFD"
printf '{"text":"ok"}\n{"text":"bad \xff\xfe byte"}\n' > "$T/bad.jsonl"
run "$SLUICE" reshard --out "$T/u1" --shards 1 --out-format parquet "$T/bad.jsonl"
expect_rc 0; expect_err "invalid UTF-8"
expect_eq "$("$PY" -c "import sys, pyarrow.parquet as pq; print(pq.read_table(sys.argv[1]).column('text').to_pylist())" "$T/u1/part-00000.parquet")" "['ok']"
run "$SLUICE" reshard --out "$T/u2" --shards 1 --out-format parquet --repair-utf8 "$T/bad.jsonl"
expect_rc 0
expect_eq "$("$PY" -c "import sys, pyarrow.parquet as pq; print(ascii(pq.read_table(sys.argv[1]).column('text').to_pylist()))" "$T/u2/part-00000.parquet")" \
    "$("$PY" -c "print(ascii(['ok', b'bad \\xff\\xfe byte'.decode('utf-8', 'replace')]))")"

case_ "filter: kept, rejected and language files as Parquet, every document in one of them"
printf 'filters:\n  - gopher_quality: {min_doc_words: 50}\n' > "$T/f.yaml"
run "$SLUICE" filter -c "$T/f.yaml" --out "$T/f1" --rejected "$T/f1r" --out-format parquet "$T/in"
expect_rc 0
run "$SLUICE" filter -c "$T/f.yaml" --out "$T/f2" --split-by-language --out-format parquet "$T/in"
expect_rc 0
expect_eq "$("$PY" - "$T" <<'PY'
import glob, sys, pyarrow.parquet as pq
n = lambda pat: sum(pq.read_table(f).num_rows for f in glob.glob(sys.argv[1] + pat))
print(n("/f1/part-*.parquet") + n("/f1r/part-*.parquet"), n("/f1/part-*.parquet") == n("/f2/lang=*/part-*.parquet") > 0)
PY
)" "122 True"

case_ "dedup exact and fuzzy: the kept documents as Parquet, the same rows as their JSONL shards"
for m in exact fuzzy; do
    run "$SLUICE" dedup $m --out "$T/dj$m" "$T/in"
    expect_rc 0
    run "$SLUICE" dedup $m --out "$T/dp$m" --out-format parquet --row-group-size 16 "$T/in"
    expect_rc 0
    expect_eq "$(check_pair "$T/dj$m" "$T/dp$m" 16)" "ok $(json "$T/dj$m/manifest.json" "m['counts']['documents_out']")"
done

case_ "clean: a unit of 0 documents is a Parquet file of 0 rows"
: > "$T/empty.jsonl"
run "$SLUICE" clean --out "$T/c0" --out-format parquet "$T/empty.jsonl"
expect_rc 0
expect_eq "$("$PY" -c "import sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1]); print(t.num_rows, t.column_names)" "$T/c0/part-00000.parquet")" "0 ['text', 'id']"

case_ "SIGKILL mid-run, then the same command: identical files to an uninterrupted run"
for i in 1 2 3 4 5 6; do cat "$T/in/all.jsonl"; done > "$T/big.jsonl"
run "$SLUICE" reshard --out "$T/kref" --shards 40 --out-format parquet --row-group-size 8 "$T/big.jsonl"
expect_rc 0
"$SLUICE" reshard --out "$T/k" --shards 40 --out-format parquet --row-group-size 8 "$T/big.jsonl" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 6000); do
    [ "$(ls "$T/k/.sluice" 2>/dev/null | grep -c '^part-.*\.parquet\.json$' || true)" -ge 3 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
done
kill -KILL $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
run "$SLUICE" reshard --out "$T/k" --shards 40 --out-format parquet --row-group-size 8 "$T/big.jsonl"
expect_rc 0; expect_err "(resumed)"
expect_no_partials "$T/k"
diff <(cd "$T/kref" && ls part-*) <(cd "$T/k" && ls part-*) >/dev/null && ok || fail "other shards"
for f in "$T"/kref/part-*.parquet; do cmp -s "$f" "$T/k/$(basename "$f")" || fail "$(basename "$f") differs"; done
ok

if have_mpi; then
    case_ "mpirun -np 2: byte-identical shards to one rank"
    run "${MPIRUN[@]}" -np 2 "$SLUICE" reshard --out "$T/m2" --shards 3 --out-format parquet --row-group-size 16 "$T/in"
    expect_rc 0
    for f in "$T"/p/part-*.parquet; do cmp -s "$f" "$T/m2/$(basename "$f")" && ok || fail "$(basename "$f") differs"; done
fi

case_ "sluice run: a pipeline whose last stage writes Parquet"
cat > "$T/pl.yaml" <<EOF
name: pq
work_dir: $T/w
extract:
  format: jsonl
  in: $T/in
clean: {}
reshard:
  shards: 2
  out_format: parquet
  row_group_size: 16
EOF
run "$SLUICE" run "$T/pl.yaml"
expect_rc 0
expect_file "$T/w/reshard/part-00001.parquet"
run "$SLUICE" reshard --out "$T/wj" --shards 2 "$T/w/clean"
expect_rc 0
expect_eq "$(check_pair "$T/wj" "$T/w/reshard" 16)" "ok 122"

finish
