#!/usr/bin/env python3
"""Parquet files for tests/cli/t_parquet.sh, written by pyarrow and DuckDB, and pyarrow's
own reading of them as the oracle of the documents sluice reads from them.

  parquet_oracle.py write SRC.jsonl[.gz] DIR    one file per writer setting, from SRC's rows,
                                                plus types.parquet (every type and nesting)
  parquet_oracle.py craft DIR                    files no library here writes, made byte by byte:
                                                BIT_PACKED definition levels, the Hadoop
                                                framing of LZ4 (liblz4 through ctypes)
  parquet_oracle.py check-crafted DIR/craft.json OUT...   their documents against their rows
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
    # pages of 50,000 values of a few bytes each (runs of the RLE hybrid)
    con.execute("COPY (SELECT 'same text' AS text, 'CC-MAIN-2019-30' AS dump, i::VARCHAR AS id, "
                "i % 3 = 0 AS flag FROM range(50000) t(i)) "
                f"TO '{os.path.join(d, 'duckdb-runs.parquet')}' (FORMAT parquet)")
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


# ---- files made byte by byte (the format's Thrift compact protocol) ---------------------

def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zz(n):
    return _varint((n << 1) ^ (n >> 63))


class _Struct:
    """A Thrift struct in the compact protocol: fields in increasing id order."""
    I32, I64, BINARY, LIST, STRUCT = 5, 6, 8, 9, 12

    def __init__(self):
        self.b, self.last = bytearray(), 0

    def field(self, fid, ftype, payload):
        d = fid - self.last
        self.b += bytes([(d << 4) | ftype]) if 0 < d <= 15 else bytes([ftype]) + _zz(fid)
        self.last = fid
        self.b += payload
        return self

    def i32(self, fid, v):
        return self.field(fid, self.I32, _zz(v))

    def i64(self, fid, v):
        return self.field(fid, self.I64, _zz(v))

    def bin(self, fid, v):
        return self.field(fid, self.BINARY, _varint(len(v)) + v)

    def lst(self, fid, etype, items):
        head = bytes([(len(items) << 4) | etype]) if len(items) < 15 else bytes([0xF0 | etype]) + _varint(len(items))
        return self.field(fid, self.LIST, head + b"".join(items))

    def sub(self, fid, st):
        return self.field(fid, self.STRUCT, st.end())

    def end(self):
        return bytes(self.b) + b"\0"


def _bitpacked_msb(levels, width):
    bits = "".join(format(v, f"0{width}b") for v in levels)
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))


def _hadoop_lz4(raw):
    import ctypes
    lz4 = ctypes.CDLL("liblz4.so.1")
    cap = lz4.LZ4_compressBound(len(raw))
    dst = ctypes.create_string_buffer(cap)
    n = lz4.LZ4_compress_default(raw, dst, len(raw), cap)
    return struct.pack(">II", len(raw), n) + dst.raw[:n]


def craft_file(path, rows, codec):
    """Two optional columns, text (UTF8) and n (INT32), one row group, v1 pages with
    BIT_PACKED definition levels; codec 0 (none) or 5 (LZ4, Hadoop framing)."""
    out = bytearray(b"PAR1")
    chunks = []
    for name, typ in (("text", 6), ("n", 1)):
        vals = [r[name] for r in rows]
        levels = _bitpacked_msb([v is not None for v in vals], 1)
        if typ == 6:
            body = b"".join(struct.pack("<I", len(v.encode())) + v.encode() for v in vals if v is not None)
        else:
            body = b"".join(struct.pack("<i", v) for v in vals if v is not None)
        raw = levels + body
        comp = _hadoop_lz4(raw) if codec == 5 else raw
        dph = _Struct().i32(1, len(vals)).i32(2, 0).i32(3, 4).i32(4, 3)
        ph = _Struct().i32(1, 0).i32(2, len(raw)).i32(3, len(comp)).sub(5, dph).end()
        off = len(out)
        out += ph + comp
        md = (_Struct().i32(1, typ).lst(2, 5, [_zz(0), _zz(4)]).lst(3, 8, [_varint(len(name)) + name.encode()])
              .i32(4, codec).i64(5, len(vals)).i64(6, len(ph) + len(raw)).i64(7, len(ph) + len(comp))
              .i64(9, off))
        chunks.append((off, md, len(ph) + len(comp)))
    cols = [_Struct().i64(2, off).sub(3, md).end() for off, md, _ in chunks]
    rg = _Struct().lst(1, 12, cols).i64(2, sum(n for _, _, n in chunks)).i64(3, len(rows)).end()
    schema = [_Struct().bin(4, b"schema").i32(5, 2).end(),
              _Struct().i32(1, 6).i32(3, 1).bin(4, b"text").i32(6, 0).end(),
              _Struct().i32(1, 1).i32(3, 1).bin(4, b"n").end()]
    fmd = _Struct().i32(1, 1).lst(2, 12, schema).i64(3, len(rows)).lst(4, 12, [rg]).end()
    out += fmd + struct.pack("<I", len(fmd)) + b"PAR1"
    with open(path, "wb") as f:
        f.write(out)


def craft(d):
    os.makedirs(d, exist_ok=True)
    rows = [{"text": "first", "n": 1}, {"text": None, "n": None}, {"text": "caf\u00e9", "n": -7},
            {"text": "", "n": None}, {"text": "a\nb", "n": 2 ** 31 - 1}, {"text": None, "n": 0},
            {"text": "seventh", "n": 5}, {"text": "eighth", "n": None}, {"text": "ninth", "n": 9}]
    craft_file(os.path.join(d, "craft-bitpacked.parquet"), rows, 0)
    craft_file(os.path.join(d, "craft-lz4hadoop.parquet"), rows, 5)
    # what they hold, for check-crafted (pyarrow reads BIT_PACKED levels in the other bit
    # order than the format's Encodings.md gives, so it is no oracle for them)
    with open(os.path.join(d, "craft.json"), "w") as f:
        json.dump(rows, f)


def check_crafted(want_json, out):
    """The documents read from a crafted file against the rows it was made of: the rows with
    a text (a null text is a document without one, skipped as in JSONL), ids assigned."""
    want = [r for r in json.load(open(want_json)) if r["text"] is not None]
    got = [{k: v for k, v in d.items() if k != "id"} for d in read_jsonl(out)]
    if got != want:
        print(f"{out}: {got} != {want}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "craft":
        craft(sys.argv[2])
    elif sys.argv[1] == "check-crafted":
        a = sys.argv[3:]
        sys.exit(max(check_crafted(sys.argv[2], o) for o in a))
    elif sys.argv[1] == "check":
        a = sys.argv[2:]
        sys.exit(max(check(a[i], a[i + 1]) for i in range(0, len(a), 2)))
    else:
        sys.exit(__doc__)
