"""An independent reader and writer of Megatron MMIDIDX .bin/.idx, written from
docs/formats/megatron-idx.md with numpy only (no sluice code). Used by the CLI tests:

  megatron_idx.py dump PREFIX            one JSON line per document: {"document", "ids"}
  megatron_idx.py write PREFIX DTYPE     read JSON lines [[seq ids], ...] (one document
                                         each) from stdin and write PREFIX.bin/.idx
  megatron_idx.py fairseq PREFIX OUT     write OUT.idx in fairseq's layout (no doc index)
"""
import json
import struct
import sys

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64,
          7: np.float32, 8: np.uint16}
CODES = {"uint16": 8, "int32": 4}


def read(prefix):
    with open(prefix + ".idx", "rb") as f:
        data = f.read()
    assert data[:9] == MAGIC, "bad magic"
    version, = struct.unpack("<Q", data[9:17])
    assert version == 1, "version %d" % version
    code = data[17]
    seqs, docs = struct.unpack("<QQ", data[18:34])
    off = 34
    lengths = np.frombuffer(data, dtype="<i4", count=seqs, offset=off)
    off += 4 * seqs
    pointers = np.frombuffer(data, dtype="<i8", count=seqs, offset=off)
    off += 8 * seqs
    doc_idx = np.frombuffer(data, dtype="<i8", count=docs, offset=off)
    off += 8 * docs
    assert off == len(data), "index size %d, expected %d" % (len(data), off)
    assert doc_idx[0] == 0 and doc_idx[-1] == seqs
    dt = np.dtype(DTYPES[code]).newbyteorder("<")
    bin_ = np.memmap(prefix + ".bin", dtype=dt, mode="r") if seqs else np.zeros(0, dt)
    expect = 0
    for i in range(seqs):
        assert pointers[i] == expect, "pointer %d" % i
        expect += int(lengths[i]) * dt.itemsize
    assert expect == bin_.nbytes, ".bin has %d bytes, index says %d" % (bin_.nbytes, expect)
    return code, lengths, pointers, doc_idx, bin_


def dump(prefix):
    code, lengths, pointers, doc_idx, bin_ = read(prefix)
    itemsize = np.dtype(DTYPES[code]).itemsize
    out = sys.stdout
    for d in range(len(doc_idx) - 1):
        ids = []
        for s in range(doc_idx[d], doc_idx[d + 1]):
            start = int(pointers[s]) // itemsize
            ids.extend(int(x) for x in bin_[start:start + int(lengths[s])])
        out.write(json.dumps({"document": d, "ids": ids}, separators=(",", ":")) + "\n")


def write(prefix, dtype):
    code = CODES[dtype]
    dt = np.dtype(DTYPES[code]).newbyteorder("<")
    lengths, pointers, doc_idx = [], [], [0]
    pos = 0
    with open(prefix + ".bin", "wb") as b:
        for line in sys.stdin:
            for seq in json.loads(line):
                arr = np.asarray(seq, dtype=dt)
                b.write(arr.tobytes(order="C"))
                lengths.append(len(seq))
                pointers.append(pos)
                pos += arr.nbytes
            doc_idx.append(len(lengths))
    with open(prefix + ".idx", "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", code))
        f.write(struct.pack("<Q", len(lengths)))
        f.write(struct.pack("<Q", len(doc_idx)))
        f.write(np.asarray(lengths, dtype="<i4").tobytes(order="C"))
        f.write(np.asarray(pointers, dtype="<i8").tobytes(order="C"))
        f.write(np.asarray(doc_idx, dtype="<i8").tobytes(order="C"))


def fairseq(prefix, out):
    code, lengths, pointers, _, _ = read(prefix)
    with open(out + ".idx", "wb") as f:
        f.write(MAGIC + struct.pack("<Q", 1) + struct.pack("<B", code))
        f.write(struct.pack("<Q", len(lengths)))
        f.write(lengths.astype("<i4").tobytes() + pointers.astype("<i8").tobytes())


if __name__ == "__main__":
    {"dump": lambda: dump(sys.argv[2]), "write": lambda: write(sys.argv[2], sys.argv[3]),
     "fairseq": lambda: fairseq(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
