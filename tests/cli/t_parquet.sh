#!/usr/bin/env bash
# Parquet inputs: files written by pyarrow (every codec, v1 and v2 pages, PLAIN,
# dictionary and DELTA encodings, BYTE_STREAM_SPLIT, nulls, lists, structs, maps, one and
# many row groups) and by DuckDB read as pyarrow reads them (field by field), and as the
# same rows in JSONL by tokenize (identical .bin/.idx) and filter (the same kept and
# rejected documents); a file of many row groups split among ranks with identical
# outputs for -np 1/2/4; damaged and cut files named with a byte offset.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if ! "$PY" -c "import pyarrow, duckdb" 2>/dev/null; then
    echo "SKIP: pyarrow and duckdb (tests/requirements.txt) are not installed"
    finish
    exit 0
fi
ORACLE="$(dirname "$0")/parquet_oracle.py"
SRC=$FIX/jsonl/cc_en_head-0091.jsonl.gz
TF="$FIX/tokenizer"
mkdir -p "$T/gpt2" "$T/in"
zstd -q -d "$TF/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$TF/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
GPT2="gpt2:$T/gpt2"
"$PY" "$ORACLE" write "$SRC" "$T/pq"
zcat "$SRC" >"$T/in/docs.jsonl"

case_ "every file reads as pyarrow reads it, field by field"
pairs=()
for f in "$T"/pq/*.parquet; do
    n=$(basename "$f" .parquet)
    run "$SLUICE" reshard -q -n 1 --out "$T/r/$n" "$f"
    expect_rc 0
    pairs+=("$f" "$T/r/$n/part-00000.jsonl.zst")
done
run "$PY" "$ORACLE" check "${pairs[@]}"
expect_rc 0

case_ "files made byte by byte: BIT_PACKED levels, LZ4 in the Hadoop framing"
"$PY" "$ORACLE" craft "$T/craft"
for n in bitpacked lz4hadoop; do
    run "$SLUICE" reshard -q -n 1 --out "$T/r/craft-$n" "$T/craft/craft-$n.parquet"
    expect_rc 0
done
run "$PY" "$ORACLE" check-crafted "$T/craft/craft.json" "$T/r/craft-bitpacked/part-00000.jsonl.zst" \
    "$T/r/craft-lz4hadoop/part-00000.jsonl.zst"
expect_rc 0

case_ "tokenize: the same .bin/.idx as the rows in JSONL"
run "$SLUICE" tokenize -q --tokenizer "$GPT2" --out "$T/tok/jsonl" "$T/in/docs.jsonl"
expect_rc 0
for n in none-v1 snappy-v2 gzip-v1 zstd-v2 lz4-v1 brotli-v2 plain-v1 delta-v2 dlba-v1 dba-v2 \
    rowgroups smallpages duckdb duckdb-v2; do
    run "$SLUICE" tokenize -q --tokenizer "$GPT2" --out "$T/tok/$n" "$T/pq/$n.parquet"
    expect_rc 0
    for ext in bin idx; do
        cmp -s "$T/tok/jsonl_text_document.$ext" "$T/tok/${n}_text_document.$ext" && ok ||
            fail "$n: .$ext differs from the JSONL's"
    done
done

case_ "filter: the same kept and rejected documents as the rows in JSONL"
ids() { zstdcat "$1"/part-*.jsonl.zst | "$PY" -c "
import json, sys
for l in sys.stdin: d = json.loads(l); print(d['id'], len(d['text']), d.get('filter', ''))"; }
CFG=$(cd "$(dirname "$0")/../.." && pwd)/configs/filters/fineweb.yaml
mkdir -p "$T/f"
for src in "$T/in/docs.jsonl" "$T/pq/zstd-v2.parquet" "$T/pq/duckdb.parquet"; do
    n=$(basename "$src")
    run "$SLUICE" filter -q --config "$CFG" --out "$T/f/$n" --rejected "$T/f/$n-rej" "$src"
    expect_rc 0
    ids "$T/f/$n" >"$T/f/$n.kept"
    ids "$T/f/$n-rej" >"$T/f/$n.rejected"
done
for n in zstd-v2.parquet duckdb.parquet; do
    cmp -s "$T/f/docs.jsonl.kept" "$T/f/$n.kept" && ok || fail "$n: kept documents differ"
    cmp -s "$T/f/docs.jsonl.rejected" "$T/f/$n.rejected" && ok || fail "$n: rejected differ"
done
[ -s "$T/f/docs.jsonl.kept" ] && [ -s "$T/f/docs.jsonl.rejected" ] && ok ||
    fail "the filter kept or rejected nothing: the comparison shows nothing"

case_ "a folder of Parquet files is an input"
mkdir -p "$T/dir"
cp "$T/pq/zstd-v1.parquet" "$T/pq/snappy-v2.parquet" "$T/dir/"
run "$SLUICE" reshard -q -n 1 --out "$T/r/dir" "$T/dir"
expect_rc 0
expect_eq "$(json "$T/r/dir/manifest.json" "m['counts']['documents_out']")" 20

case_ "a file of many row groups is split among ranks: -np 1/2/4 identical"
# 5 row groups of 2 rows; parts of about 1 row group each
export SLUICE_PARQUET_UNIT_BYTES=1
run "$SLUICE" tokenize -q --tokenizer "$GPT2" --out "$T/np/seq" "$T/pq/rowgroups.parquet"
expect_rc 0
cmp -s "$T/tok/jsonl_text_document.bin" "$T/np/seq_text_document.bin" && ok ||
    fail "split into parts: .bin differs from the JSONL's"
expect_eq "$(json "$T/np/seq.manifest.json" "len(m['inputs'])")" 5 "(one part per row group)"
if have_mpi; then
    for np in 1 2 4; do
        run "${MPIRUN[@]}" -x SLUICE_PARQUET_UNIT_BYTES -np $np "$SLUICE" tokenize -q --tokenizer "$GPT2" \
            --out "$T/np/t$np" "$T/pq/rowgroups.parquet"
        expect_rc 0
        for ext in bin idx; do
            cmp -s "$T/np/seq_text_document.$ext" "$T/np/t${np}_text_document.$ext" && ok ||
                fail "-np $np: .$ext differs"
        done
        run "${MPIRUN[@]}" -x SLUICE_PARQUET_UNIT_BYTES -np $np "$SLUICE" reshard -q -n 3 \
            --out "$T/np/r$np" "$T/pq/rowgroups.parquet"
        expect_rc 0
        expect_eq "$(cd "$T/np/r$np" && ls part-*)" "$(cd "$T/np/r1" && ls part-*)" "(-np $np: reshard's shards)"
        for s in "$T/np/r1"/part-*; do
            cmp -s <(zstdcat "$s") <(zstdcat "$T/np/r$np/$(basename "$s")") && ok ||
                fail "-np $np: reshard's $(basename "$s") differs"
        done
        expect_eq "$(json "$T/np/r$np/manifest.json" "m['counts']['documents_out']")" 10
    done
fi
case_ "a stage over the parts of a file resumes: a missing part's shard is written again"
run "$SLUICE" filter -q --config "$CFG" --out "$T/np/f" "$T/pq/rowgroups.parquet"
expect_rc 0
rm "$T/np/f/part-00002.jsonl.zst"
run "$SLUICE" filter -q --config "$CFG" --out "$T/np/f" "$T/pq/rowgroups.parquet"
expect_rc 0
expect_eq "$(json "$T/np/f/manifest.json" "(m['resumed'], m['counts']['documents_in'], m['counts']['resume_redone_units'])")" \
    "(True, 10, 1)"
unset SLUICE_PARQUET_UNIT_BYTES

case_ "a damaged or cut file: an error naming the file and a byte offset"
f=$T/pq/none-v1.parquet
size=$(stat -c %s "$f")
head -c $((size - 100)) "$f" >"$T/cut.parquet"
run "$SLUICE" reshard -q -n 1 --out "$T/bad1" "$T/cut.parquet"
expect_rc 1
expect_err "cut.parquet"; expect_err "does not end with \"PAR1\" (at byte $((size - 104)))"
# the first data page's header: overwrite it (at byte 4) with bytes that do not parse
cp "$f" "$T/hdr.parquet"
printf '\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$T/hdr.parquet" bs=1 seek=4 conv=notrunc status=none
run "$SLUICE" tokenize -q --tokenizer "$GPT2" --out "$T/bad2" "$T/hdr.parquet"
expect_rc 1
expect_err "cannot read Parquet file '$T/hdr.parquet' at byte 4 (row group 0, column"
expect_err "page header does not parse"
# a footer length past the file
cp "$f" "$T/foot.parquet"
printf '\xff\xff\xff\x7f' | dd of="$T/foot.parquet" bs=1 seek=$((size - 8)) conv=notrunc status=none
run "$SLUICE" filter -q --config "$CFG" --out "$T/bad3" "$T/foot.parquet"
expect_rc 1
expect_err "its footer length (2147483647, at byte $((size - 8)))"
# the compressed bytes of a page damaged (the magic of the text column's first zstd frame):
# the codec says so
g=$T/pq/zstd-v1.parquet
cp "$g" "$T/zst.parquet"
off=$("$PY" -c "
import pyarrow.parquet as pq, sys
rg = pq.ParquetFile(sys.argv[1]).metadata.row_group(0)
c = [rg.column(i) for i in range(rg.num_columns) if rg.column(i).path_in_schema == 'text'][0]
start = c.dictionary_page_offset or c.data_page_offset
print(open(sys.argv[1], 'rb').read().index(b'\x28\xb5\x2f\xfd', start))" "$g")
printf 'XXXX' | dd of="$T/zst.parquet" bs=1 seek="$off" conv=notrunc status=none
run "$SLUICE" reshard -q -n 1 --out "$T/bad4" "$T/zst.parquet"
expect_rc 1
expect_err "cannot read Parquet file '$T/zst.parquet' at byte"
expect_err "(row group 0, column 'text'): the page does not decompress"
# reshard --skip-corrupt: the row groups before the damaged one are kept (3 of 5, 6 rows)
cp "$T/pq/rowgroups.parquet" "$T/rg.parquet"
off=$("$PY" -c "
import pyarrow.parquet as pq, sys
c = pq.ParquetFile(sys.argv[1]).metadata.row_group(3).column(0)
print(c.dictionary_page_offset or c.data_page_offset)" "$T/rg.parquet")
printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$T/rg.parquet" bs=1 seek="$off" conv=notrunc status=none
run "$SLUICE" reshard -n 1 --skip-corrupt --out "$T/bad5" "$T/rg.parquet"
expect_rc 0
expect_err "at byte $off (row group 3, column 'added'): its page header does not parse"
expect_eq "$(json "$T/bad5/manifest.json" "m['counts']['documents_out']")" 6
expect_eq "$(json "$T/bad5/manifest.json" "m['counts']['corrupt_files']")" 1

finish
