#!/usr/bin/env python3
"""Parquet files for tests/cli/t_parquet.sh, written by pyarrow and DuckDB, and pyarrow's
own reading of them as the oracle of the documents sluice reads from them.

  parquet_oracle.py write SRC.jsonl[.gz] DIR    one file per writer setting, from SRC's rows,
                                                plus types.parquet (every type and nesting)
  parquet_oracle.py check FILE.parquet OUT.jsonl[.zst] [FILE OUT]...
                                                pyarrow's rows of FILE against OUT's documents,
                                                field by field (sluice's JSON rules:
                                                docs/formats/parquet.md)
"""
import base64
import datetime
import decimal
import gzip
import io
import json
import math
import os
import struct
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def read_jsonl(path):
    if path.endswith(".gz"):
        f = gzip.open(path, "rt", encoding="utf-8")
    elif path.endswith(".zst"):
        import subprocess
        f = io.StringIO(subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout.decode())
    else:
        f = open(path, encoding="utf-8")
    return [json.loads(l, parse_float=decimal.Decimal) for l in f if l.strip()]


# pyarrow writer settings: (file name, write_table keyword arguments)
def settings():
    codecs = ["none", "snappy", "gzip", "zstd", "lz4", "brotli"]
    out = []
    for c in codecs:
        for v in ("1.0", "2.0"):
            out.append((f"{c}-v{v[0]}", dict(compression=c, data_page_version=v)))
    plain = dict(use_dictionary=False)
    out.append(("plain-v1", dict(plain, data_page_version="1.0")))
    out.append(("plain-v2", dict(plain, data_page_version="2.0")))
    for v in ("1.0", "2.0"):
        out.append((f"delta-v{v[0]}", dict(plain, data_page_version=v, compression="zstd",
                                           column_encoding="DELTA_BINARY_PACKED")))
        out.append((f"dlba-v{v[0]}", dict(plain, data_page_version=v,
                                          column_encoding="DELTA_LENGTH_BYTE_ARRAY")))
        out.append((f"dba-v{v[0]}", dict(plain, data_page_version=v, compression="snappy",
                                         column_encoding="DELTA_BYTE_ARRAY")))
    out.append(("rowgroups", dict(row_group_size=2, data_page_size=512)))
    out.append(("smallpages", dict(data_page_size=256, write_batch_size=3, compression="gzip")))
    return out


def columns_for(encoding, table):
    """column_encoding applies only to the columns whose type it fits."""
    m = {}

    def walk(prefix, t):
        if pa.types.is_struct(t):
            for f in t:
                walk(prefix + [f.name], f.type)
        elif encoding == "DELTA_BINARY_PACKED" and pa.types.is_integer(t):
            m[".".join(prefix)] = encoding
        elif encoding in ("DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY") and (
                pa.types.is_string(t) or pa.types.is_binary(t)):
            m[".".join(prefix)] = encoding

    for f in table.schema:
        walk([f.name], f.type)
    return m


def types_table():
    n = 7
    rows = []
    for i in range(n):
        nul = i % 3 == 1
        rows.append({
            "id": f"t{i}",
            "text": f"row {i}: caf\u00e9 \"quoted\" \\ tab\t nl\n \u2603" if i != 5 else "",
            "i8": None if nul else -i, "i16": 300 * i, "i32": -70000 * i, "i64": (1 << 40) * i,
            "u8": 250 - i, "u32": 4000000000 + i, "u64": (1 << 63) + i,
            "f32": None if nul else 0.1 * i, "f64": 1.0 / (i + 1), "b": i % 2 == 0,
            "bin": None if nul else bytes([i, 255, 0, 10]) * i,
            "date": datetime.date(1969, 12, 30) + datetime.timedelta(days=400 * i),
            "ts_ms": datetime.datetime(2020, 2, 29, 23, 59, 59) + datetime.timedelta(milliseconds=1234 * i),
            "ts_us_utc": datetime.datetime(1960, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=987654321 * i),
            "time_us": datetime.time(i, 2 * i, 3, 4 * i),
            "dec": decimal.Decimal(f"{-1 if nul else 1}{i}.{i:02d}"),
            "dec_wide": decimal.Decimal(f"123456789012345678901.{i:05d}"),
            "fixed": bytes([i] * 4),
            "ints": None if i == 2 else [j * i for j in range(i % 4)],
            "strs": [None if j == 1 else f"s{j}" for j in range(i % 3)],
            "nested": [[j, None] for j in range(i % 3)] if i != 4 else [],
            "st": None if i == 3 else {"a": i, "b": None if nul else f"b{i}", "c": {"d": [i, i + 1]}},
            "structs": [{"x": j, "y": str(j)} for j in range(i % 3)],
            "m": None if i == 6 else [(f"k{j}", None if j == 1 else j) for j in range(i % 4)],
        })
    schema = pa.schema([
        ("id", pa.string()), ("text", pa.string()), ("i8", pa.int8()), ("i16", pa.int16()),
        ("i32", pa.int32()), ("i64", pa.int64()), ("u8", pa.uint8()), ("u32", pa.uint32()),
        ("u64", pa.uint64()), ("f32", pa.float32()), ("f64", pa.float64()), ("b", pa.bool_()),
        ("bin", pa.binary()), ("date", pa.date32()), ("ts_ms", pa.timestamp("ms")),
        ("ts_us_utc", pa.timestamp("us", tz="UTC")), ("time_us", pa.time64("us")),
        ("dec", pa.decimal128(6, 2)), ("dec_wide", pa.decimal128(30, 5)),
        ("fixed", pa.binary(4)), ("ints", pa.list_(pa.int64())), ("strs", pa.list_(pa.string())),
        ("nested", pa.list_(pa.list_(pa.int32()))),
        ("st", pa.struct([("a", pa.int32()), ("b", pa.string()),
                          ("c", pa.struct([("d", pa.list_(pa.int16()))]))])),
        ("structs", pa.list_(pa.struct([("x", pa.int64()), ("y", pa.string())]))),
        ("m", pa.map_(pa.string(), pa.int32())),
    ])
    return pa.Table.from_pylist(rows, schema=schema)


def write(src, d):
    os.makedirs(d, exist_ok=True)
    rows = read_jsonl(src)
    table = pa.Table.from_pylist(json.loads(json.dumps(rows, default=float)))
    for name, kw in settings():
        kw = dict(kw)
        enc = kw.pop("column_encoding", None)
        if enc:
            kw["column_encoding"] = columns_for(enc, table)
        pq.write_table(table, os.path.join(d, name + ".parquet"), **kw)
    types = types_table()
    pq.write_table(types, os.path.join(d, "types-v1.parquet"), data_page_version="1.0")
    pq.write_table(types, os.path.join(d, "types-v2.parquet"), data_page_version="2.0",
                   compression="zstd", row_group_size=3)
    for enc in ("DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY"):
        pq.write_table(types, os.path.join(d, f"types-{enc.lower()}.parquet"), use_dictionary=False,
                       column_encoding=columns_for(enc, types), data_page_version="2.0")
    pq.write_table(types, os.path.join(d, "types-int96.parquet"), use_deprecated_int96_timestamps=True)
    pq.write_table(types.select(["id", "text", "f32", "f64", "i32", "i64"]),
                   os.path.join(d, "types-bss.parquet"), use_dictionary=False,
                   use_byte_stream_split=["f32", "f64"], data_page_version="2.0")
    try:
        import duckdb
    except ImportError:
        return
    con = duckdb.connect()
    con.execute("CREATE TABLE docs AS SELECT * FROM read_json_auto(?)", [src])
    con.execute(f"COPY docs TO '{os.path.join(d, 'duckdb.parquet')}' (FORMAT parquet)")
    con.execute(f"COPY docs TO '{os.path.join(d, 'duckdb-v2.parquet')}' "
                "(FORMAT parquet, PARQUET_VERSION v2, ROW_GROUP_SIZE 4, COMPRESSION zstd)")


# ---- sluice's rules, from pyarrow's values --------------------------------------------

def expect(v, t, int96=False):
    """A pyarrow value of type t as sluice writes it (docs/formats/parquet.md); int96: the
    column is stored as INT96 (nanoseconds, no zone)."""
    if v is None:
        return None
    if pa.types.is_map(t):
        return {str(k): expect(x, t.item_type) for k, x in v}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [expect(x, t.value_type) for x in v]
    if pa.types.is_struct(t):
        return {f.name: expect(v[f.name], f.type) for f in t}
    if pa.types.is_floating(t):
        return None if math.isnan(v) or math.isinf(v) else v
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_large_binary(t):
        return base64.b64encode(v).decode()
    if pa.types.is_timestamp(t):
        digits = 9 if int96 else {"ms": 3, "us": 6, "ns": 9}[t.unit]
        if int96:
            return v.strftime("%Y-%m-%dT%H:%M:%S") + "." + f"{v.microsecond:06d}{getattr(v, 'nanosecond', 0):03d}"
        s = v.strftime("%Y-%m-%dT%H:%M:%S")
        frac = f"{v.microsecond:06d}" + "000"
        return s + "." + frac[:digits] + ("Z" if t.tz else "")
    if pa.types.is_date(t):
        return v.isoformat()
    if pa.types.is_time(t):
        digits = {"ms": 3, "us": 6, "ns": 9}[t.unit]
        return v.strftime("%H:%M:%S") + "." + (f"{v.microsecond:06d}000")[:digits]
    if pa.types.is_decimal(t):
        return v
    return v


def same(a, b, t, path):
    if pa.types.is_float32(t) and a is not None and b is not None:
        ok = struct.pack("<f", float(a)) == struct.pack("<f", float(b))
    elif pa.types.is_floating(t) and a is not None and b is not None:
        ok = float(a) == float(b)
    elif isinstance(a, dict) and isinstance(b, dict) and not pa.types.is_map(t):
        ok = a.keys() == b.keys()
        for f in (t if pa.types.is_struct(t) else []):
            ok = same(a.get(f.name), b.get(f.name), f.type, path + "." + f.name) and ok
    elif isinstance(a, dict) and isinstance(b, dict):
        ok = a.keys() == b.keys() and all(same(a[k], b[k], t.item_type, path + "." + k) for k in a)
    elif isinstance(a, list) and isinstance(b, list):
        ok = len(a) == len(b) and all(same(x, y, t.value_type, f"{path}[{i}]")
                                      for i, (x, y) in enumerate(zip(a, b)))
    else:
        ok = a == b and type(a) is type(b) or (isinstance(a, decimal.Decimal) and a == b)
    if not ok:
        print(f"{path}: sluice {a!r}, pyarrow {b!r}", file=sys.stderr)
    return ok


def check(parquet, out):
    table = pq.read_table(parquet, coerce_int96_timestamp_unit="ns")
    schema = pq.ParquetFile(parquet).schema
    int96 = {schema.column(i).path.split(".")[0] for i in range(len(schema))
             if schema.column(i).physical_type == "INT96"}
    want = table.to_pylist()
    got = read_jsonl(out)
    if len(got) != len(want):
        print(f"{parquet}: {len(got)} documents, pyarrow reads {len(want)} rows", file=sys.stderr)
        return 1
    bad = 0
    for i, (g, w) in enumerate(zip(got, want)):
        if list(g.keys()) != table.schema.names:
            print(f"row {i}: keys {list(g.keys())}, schema {table.schema.names}", file=sys.stderr)
            bad += 1
            continue
        for f in table.schema:
            want_v = expect(w[f.name], f.type, f.name in int96)
            if not same(g[f.name], want_v, f.type, f"row {i}: {f.name}"):
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "check":
        a = sys.argv[2:]
        sys.exit(max(check(a[i], a[i + 1]) for i in range(0, len(a), 2)))
    else:
        sys.exit(__doc__)
