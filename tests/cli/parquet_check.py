"""Check Parquet shards against the JSONL shards of the same documents, with pyarrow and
DuckDB as the readers (tests/cli/t_parquet_out.sh).

    parquet_check.py ROWS_PER_GROUP DICT_COLS NODICT_COLS A.jsonl A.parquet [B.jsonl B.parquet ...]

For each pair: pyarrow.parquet.read_table and DuckDB's SELECT * give the same rows, in
order, as the JSONL documents, field by field (a member the document lacks is null; a
column the footer's "sluice.json_columns" lists holds each value's JSON text); the row
groups hold ROWS_PER_GROUP rows each but the last; every column chunk is ZSTD; the columns
of DICT_COLS (comma-separated, "-" for none) have a dictionary page in every row group of
8 rows or more, those of NODICT_COLS in none. Prints "ok N" (rows checked) or the first difference, exit 1.
"""
import json
import math
import sys

import duckdb
import pyarrow.parquet as pq


def fail(msg):
    print(msg)
    sys.exit(1)


def names(arg):
    return [] if arg == "-" else arg.split(",")


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def check(jsonl, parquet, per_group, dict_cols, nodict_cols):
    docs = [json.loads(l) for l in open(jsonl, encoding="utf-8") if l.strip()]
    f = pq.ParquetFile(parquet)
    md = f.metadata
    if not md.created_by.startswith("sluice "):
        fail("%s: created_by %r" % (parquet, md.created_by))
    kv = md.metadata or {}
    json_cols = set(json.loads(kv.get(b"sluice.json_columns", b"[]")))
    table = f.read()
    rows = table.to_pylist()
    if len(rows) != len(docs) or md.num_rows != len(docs):
        fail("%s: %d rows, %d documents" % (parquet, len(rows), len(docs)))
    cols = table.column_names
    for i, (doc, row) in enumerate(zip(docs, rows)):
        for k in doc:
            if k not in row:
                fail("%s: row %d lacks column %r" % (parquet, i, k))
        for k in cols:
            want = doc.get(k)
            got = row[k]
            if k in json_cols and got is not None:
                got = json.loads(got)
            if want is None and got is None:
                continue
            if not same(got, want):
                fail("%s: row %d column %r: %r, expected %r" % (parquet, i, k, got, want))
    con = duckdb.connect()
    con.execute("SET threads = 1")
    drows = con.execute("SELECT * FROM read_parquet(?)", [parquet]).fetchall()
    dcols = [d[0] for d in con.description]
    if dcols != cols:
        fail("%s: duckdb columns %r, pyarrow %r" % (parquet, dcols, cols))
    for i, (drow, row) in enumerate(zip(drows, rows)):
        for k, v in zip(dcols, drow):
            if not same(v, row[k]):
                fail("%s: duckdb row %d column %r: %r, pyarrow %r" % (parquet, i, k, v, row[k]))
    if len(drows) != len(rows):
        fail("%s: duckdb %d rows" % (parquet, len(drows)))
    want_groups = max(1, -(-len(docs) // per_group)) if docs else 0
    if md.num_row_groups != want_groups:
        fail("%s: %d row groups, expected %d" % (parquet, md.num_row_groups, want_groups))
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        want = min(per_group, len(docs) - g * per_group)
        if rg.num_rows != want:
            fail("%s: row group %d has %d rows, expected %d" % (parquet, g, rg.num_rows, want))
        for c in range(rg.num_columns):
            cc = rg.column(c)
            if cc.compression != "ZSTD":
                fail("%s: row group %d column %s is %s" % (parquet, g, cc.path_in_schema, cc.compression))
            # a dictionary pays for a few repeated values (at least 8 rows of them)
            if cc.path_in_schema in dict_cols and want >= 8 and not cc.has_dictionary_page:
                fail("%s: row group %d column %s has no dictionary" % (parquet, g, cc.path_in_schema))
            if cc.path_in_schema in nodict_cols and cc.has_dictionary_page:
                fail("%s: row group %d column %s has a dictionary" % (parquet, g, cc.path_in_schema))
    return len(docs)


def main():
    per_group = int(sys.argv[1])
    dict_cols, nodict_cols = names(sys.argv[2]), names(sys.argv[3])
    pairs = sys.argv[4:]
    n = 0
    for j, p in zip(pairs[0::2], pairs[1::2]):
        n += check(j, p, per_group, dict_cols, nodict_cols)
    print("ok %d" % n)


main()
