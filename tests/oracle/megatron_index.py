"""A Python port of Megatron-LM's GPT sample indexing (megatron/core/datasets/gpt_dataset.py
_build_document_sample_shuffle_indices, helpers.cpp build_sample_idx and
build_blending_indices, the split rule of blended_megatron_dataset_builder.py), using
numpy.random.RandomState as Megatron does, and of the cache names: the unique_description
of a GPTDataset / BlendedDataset (megatron_dataset.py, blended_dataset.py, the sizes of
blended_megatron_dataset_builder.py) and its MD5, as megatron-core 0.16.1 builds them.
Test oracle for sluice's dataset/gpt_index.c, dataset/megatron_desc.c and dataset/loader.c.

usage:
  megatron_index.py make-data DIR              the prefixes of the cache-name cases
                                               (tests/golden/megatron_index/cases.json)
  megatron_index.py describe CASES.json NAME   (run in the data directory) print the
                                               description files Megatron writes for case
                                               NAME as one JSON object {file: text}
  megatron_index.py write PREFIX SPEC          write a .bin/.idx (uint16) from a JSON list of
                                               documents (lists of token ids)
  megatron_index.py check --seq-len L --split S --seed N --samples TRAIN,VALID,TEST
                          --cache DIR --dump DUMP_DIR --steps K --gbs G  [W1] PREFIX1 [W2 PREFIX2 ...]
      compares the cached indices (single prefix) and the tokens of the first K dumped steps
      with this port. Exits 1 on a mismatch.
"""
import glob
import hashlib
import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_numpy as mn  # noqa: E402


# ---- MMIDIDX (an independent reader/writer) -------------------------------------------

def idx_read(prefix):
    raw = open(prefix + ".idx", "rb").read()
    assert raw[:9] == b"MMIDIDX\x00\x00"
    (version,) = struct.unpack("<Q", raw[9:17])
    dtype_code = raw[17]
    nseq, ndoc = struct.unpack("<QQ", raw[18:34])
    off = 34
    sizes = np.frombuffer(raw, dtype="<i4", count=nseq, offset=off)
    off += 4 * nseq
    ptrs = np.frombuffer(raw, dtype="<i8", count=nseq, offset=off)
    dt = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16}[dtype_code]
    data = np.fromfile(prefix + ".bin", dtype=dt)
    return sizes.astype(np.int64), ptrs, data, np.dtype(dt).itemsize


def idx_write(prefix, docs):
    sizes = [len(d) for d in docs]
    with open(prefix + ".bin", "wb") as f:
        for d in docs:
            f.write(np.asarray(d, dtype="<u2").tobytes())
    ptrs = np.concatenate([[0], np.cumsum(sizes)[:-1] * 2]).astype("<i8")
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + bytes([8]))
        f.write(struct.pack("<QQ", len(docs), len(docs) + 1))
        f.write(np.asarray(sizes, dtype="<i4").tobytes())
        f.write(ptrs.tobytes())
        f.write(np.arange(len(docs) + 1, dtype="<i8").tobytes())


# ---- Megatron's algorithm ---------------------------------------------------------------

def split_ranges(split, n):
    w = [float(x) for x in split.replace(",", " ").split()]
    w += [0.0] * (3 - len(w))
    s = sum(w)
    w = [x / s for x in w]
    ends = [0]
    for x in w:
        ends.append(ends[-1] + x)
    out = []
    for i in range(3):
        if ends[i + 1] <= ends[i]:
            out.append(None)
        else:
            out.append((int(round(ends[i] * float(n))), int(round(ends[i + 1] * float(n)))))
    return out


def build_document_index(documents, num_epochs, rs, separate_final_epoch):
    if not separate_final_epoch or num_epochs == 1:
        di = np.mgrid[0:num_epochs, 0:len(documents)][1]
        di[:] = documents
        di = di.reshape(-1).astype(np.int32)
        rs.shuffle(di)
        return di
    first = build_document_index(documents, num_epochs - 1, rs, False)
    last = build_document_index(documents, 1, rs, False)
    return np.concatenate((first, last))


def build_sample_idx(sizes, doc_idx, seq_length, num_epochs, tokens_per_epoch, E=1):
    num_samples = (num_epochs * tokens_per_epoch - E) // seq_length
    out = np.zeros((num_samples + 1, 2), dtype=np.int64)
    di, off = 0, 0
    for s in range(1, num_samples + 1):
        remaining = seq_length + E
        while remaining != 0:
            doc_len = int(sizes[doc_idx[di]]) - off
            remaining -= doc_len
            if remaining <= 0:
                off += remaining + doc_len - E
                remaining = 0
            else:
                if di == len(doc_idx) - 1:
                    off = int(sizes[doc_idx[di]]) - E
                    break
                di += 1
                off = 0
        out[s] = (di, off)
    return out


def build_shuffle_index(num_samples, total_size, rs):
    first = np.arange(0, num_samples, dtype=np.int64)
    rs.shuffle(first)
    if num_samples == total_size:
        return first
    last = np.arange(num_samples, total_size, dtype=np.int64)
    rs.shuffle(last)
    return np.concatenate((first, last))


def gpt_indices(sizes, lo, hi, seq_length, num_samples, seed, E=1):
    documents = np.arange(lo, hi, dtype=np.int32)
    T = int(sizes[lo:hi].sum())
    num_epochs = 1
    tok = T
    while tok < num_samples * seq_length + E:
        tok += T
        num_epochs += 1
    separate = False
    if num_epochs > 1:
        sans = ((num_epochs - 1) * T - E) // seq_length
        from_final = num_samples - sans
        per_epoch = (T - E) // seq_length
        assert 0 <= from_final <= per_epoch + 1
        separate = from_final < int(0.80 * per_epoch)
    rs = np.random.RandomState(seed)
    doc_idx = build_document_index(documents, num_epochs, rs, separate)
    sample_idx = build_sample_idx(sizes, doc_idx, seq_length, num_epochs, T, E)
    if separate:
        n_ = ((num_epochs - 1) * T - E) // seq_length
    else:
        n_ = sample_idx.shape[0] - 1
    shuffle_idx = build_shuffle_index(n_, sample_idx.shape[0] - 1, rs)
    return doc_idx, sample_idx, shuffle_idx, num_epochs, separate


def sample_tokens(data, ptrs, isz, sizes, doc_idx, sample_idx, shuffle_idx, i, E=1):
    k = shuffle_idx[i]
    (b, bo), (e, eo) = sample_idx[k], sample_idx[k + 1]
    parts = []
    for p in range(b, e + 1):
        seq = doc_idx[p]
        start = ptrs[seq] // isz
        fr = bo if p == b else 0
        to = eo + E if p == e else sizes[seq]
        parts.append(data[start + fr:start + to])
    return np.concatenate(parts).astype(np.int64)


def blending_indices(weights, size):
    counts = [0] * len(weights)
    di = np.zeros(size, dtype=np.int16)
    dsi = np.zeros(size, dtype=np.int64)
    for s in range(size):
        x = max(s, 1.0)
        best, err = 0, weights[0] * x - counts[0]
        for i in range(1, len(weights)):
            e = weights[i] * x - counts[i]
            if e > err:
                best, err = i, e
        di[s] = best
        dsi[s] = counts[best]
        counts[best] += 1
    return di, dsi


# ---- cache names (unique_description) ----------------------------------------------------

SPLITS = ("train", "valid", "test")
NEW_CLASS = "megatron.core.tokenizers.text.models.default_tokenizer.DefaultTokenizerText"


def tokenizer_identifiers(spec):
    """What the tokenizer Megatron-LM builds for --tokenizer-type TYPE (and its path
    arguments) reports as unique_identifiers: megatron/core/tokenizers/text/utils/
    build_tokenizer.py with text_tokenizer.py (new system), or the legacy classes of
    megatron/training/tokenizer/tokenizer.py over MegatronLegacyTokenizer (--legacy-tokenizer);
    every other option at its argparse default."""
    from collections import OrderedDict as OD
    if spec.lstrip().startswith("{"):
        return json.loads(spec, object_pairs_hook=OD)
    legacy = spec.startswith("legacy:")
    kind, _, args = (spec[7:] if legacy else spec).partition(":")
    a = args.split(",", 1)
    if legacy:
        cls = "_" + kind
        if kind == "NullTokenizer":
            return OD([("class", cls), ("tokenizer_path", [None]), ("vocab_size", str(int(a[0])))])
        if kind == "GPT2BPETokenizer":
            return OD([("class", cls), ("tokenizer_path", [a[0], a[1]])])
        if kind == "HuggingFaceTokenizer":
            return OD([("class", cls), ("tokenizer_path", [a[0]])])
        return OD([("class", cls), ("tokenizer_path", [a[0]]), ("vocab_extra_ids", "0")])
    hf = [("use_fast", "False"), ("trust_remote_code", "False"), ("include_special_tokens", "False")]
    if kind == "NullTokenizer":
        kw = [("vocab_size", str(int(a[0])))]
        path = None
    elif kind == "GPT2BPETokenizer":
        path = kind
        kw = [("additional_special_tokens", "[]"), ("vocab_file", a[0]), ("merges_file", a[1])] + hf
    elif kind == "HuggingFaceTokenizer":
        path = a[0]
        kw = [("vocab_file", "None"), ("merges_file", "None"), ("additional_special_tokens", "[]")] + hf
    elif kind == "TikTokenizer":
        path = a[0]
        kw = [("num_special_tokens", "1000"), ("special_tokens", "None")]
    else:  # the SentencePiece kinds
        path = a[0]
        kw = [("legacy", "False"), ("special_tokens", "None")]
    return OD([("class", NEW_CLASS), ("tokenizer_path", path)] + kw)


class _Tokenizer:
    """Stands for the tokenizer object: json.dumps reaches its identifiers through the
    default= hook, as in Megatron."""

    def __init__(self, ids):
        self.unique_identifiers = ids


def _dumps(ids):
    return json.dumps(ids, indent=4, default=lambda obj: obj.unique_identifiers)


def split_matrix(split):
    """parse_and_normalize_split + convert_split_vector_to_split_matrix."""
    import functools
    import re
    v = list(map(float, re.findall(r"[.0-9]+", split)))
    v = v + [0.0 for _ in range(3 - len(v))]
    v = normalize(v)
    e = functools.reduce(lambda a, b: a + [a[len(a) - 1] + b], [[0], *v])
    ends = list(zip(e[:-1], e[1:]))
    return [None if b <= a else (a, b) for a, b in ends]


def normalize(w):
    w = np.array(w, dtype=np.float64)
    return (w / np.sum(w)).tolist()


def blend_from_words(words):
    """get_blend_from_list: (prefixes, weights or None)."""
    if len(words) % 2 == 1:
        return [w.strip() for w in words], None
    try:
        weights = [float(x) for x in words[0::2]]
    except ValueError:
        return [w.strip() for w in words], None
    return [w.strip() for w in words[1::2]], weights


def gpt_samples_one_epoch(prefix, lo_hi, seq_length):
    sizes = idx_read(prefix)[0]
    lo, hi = lo_hi
    return (int(sizes[lo:hi].sum()) - 1) // seq_length


def describe(case, surplus=0.005):
    """{file name: text} of every description Megatron writes for the case."""
    from collections import OrderedDict as OD
    tok = _Tokenizer(tokenizer_identifiers(case["tokenizer"]))
    sizes = case["samples"]
    out = {}

    def gpt(path, i, num_samples, split, matrix):
        ids = OD([("class", "GPTDataset"), ("dataset_path", path), ("num_samples", num_samples),
                  ("index_split", SPLITS[i]), ("random_seed", case.get("seed", 1234)),
                  ("sequence_length", case["seq_length"]), ("split", split),
                  ("split_matrix", matrix), ("tokenizer", tok)])
        text = _dumps(ids)
        h = hashlib.md5(text.encode("utf-8")).hexdigest()
        out["%s-GPTDataset-%s-description.txt" % (h, SPLITS[i])] = text
        return ids

    def blend(words, i, size, split, matrix):
        prefixes, weights = blend_from_words(words)
        bounds = matrix[i] if matrix else (0.0, 1.0)
        if weights is not None:
            weights = normalize(weights)
            comp = [int(math.ceil(math.ceil(size * w) * (1 + surplus))) for w in weights]
            size_i = sum(int(math.ceil(math.ceil(size * w) * 1.0)) for w in weights)
        else:
            comp = [None] * len(prefixes)
        datasets = [gpt(p, i, comp[k], split, matrix) for k, p in enumerate(prefixes)]
        if weights is None:
            weights = []
            for p in prefixes:
                n = len(idx_read(p)[0])
                lo_hi = (int(round(bounds[0] * float(n))), int(round(bounds[1] * float(n))))
                weights.append(gpt_samples_one_epoch(p, lo_hi, case["seq_length"]))
            size_i = min(size, sum(weights))
        ids = OD([("class", "BlendedDataset"), ("datasets", datasets), ("split", SPLITS[i]),
                  ("weights", normalize(weights)), ("size", size_i)])
        text = _dumps(ids)
        if case.get("cache"):  # Megatron caches a blend only under path_to_cache
            h = hashlib.md5(text.encode("utf-8")).hexdigest()
            out["%s-BlendedDataset-%s-description.txt" % (h, SPLITS[i])] = text

    if "data_path" in case:
        split = case.get("split", "969, 30, 1")
        matrix = split_matrix(split)
        prefixes, weights = blend_from_words(case["data_path"])
        for i in range(3):
            if matrix[i] is None:
                continue
            if len(prefixes) == 1 and weights is None:
                gpt(prefixes[0], i, sizes[i], split, matrix)
            else:
                blend(case["data_path"], i, sizes[i], split, matrix)
    else:
        for i, key in enumerate(("train_data_path", "valid_data_path", "test_data_path")):
            words = case.get(key)
            if not words:
                continue
            prefixes, _ = blend_from_words(words)
            if len(prefixes) == 1:
                gpt(prefixes[0], i, sizes[i], None, None)
            else:
                blend(words, i, sizes[i], None, None)
    return out


def make_data(d):
    """The prefixes of the cache-name cases: a (1000 documents), b (150), 'dé/c' (a
    directory name outside ASCII, 120) and w0..w8 (60 each), 1..60 tokens of ids < 1000."""
    rng = np.random.default_rng(7)
    os.makedirs(os.path.join(d, "d\u00e9"), exist_ok=True)
    names = [("a", 1000), ("b", 150), ("d\u00e9/c", 120)] + [("w%d" % k, 60) for k in range(9)]
    for name, n in names:
        docs = [rng.integers(0, 1000, size=int(rng.integers(1, 61))).tolist() for _ in range(n)]
        idx_write(os.path.join(d, name), docs)


def main():
    if sys.argv[1] == "write":
        idx_write(sys.argv[2], json.loads(open(sys.argv[3]).read()))
        return
    if sys.argv[1] == "make-data":
        make_data(sys.argv[2])
        return
    if sys.argv[1] == "sluice-args":
        # the `sluice dataset index` arguments of case NAME, one a line
        c = {c["name"]: c for c in json.load(open(sys.argv[2]))}[sys.argv[3]]
        a = ["--seq-length", str(c["seq_length"]), "--seed", str(c.get("seed", 1234)),
             "--samples", ",".join(map(str, c["samples"])), "--megatron-tokenizer", c["tokenizer"]]
        if "split" in c:
            a += ["--split", c["split"]]
        if c.get("cache"):
            a += ["--data-cache-path", sys.argv[4]]
        for key in ("train_data_path", "valid_data_path", "test_data_path"):
            if key in c:
                a += ["--" + key.replace("_", "-"), " ".join(c[key])]
        a += c.get("data_path", [])
        print("\n".join(a))
        return
    if sys.argv[1] == "describe":
        cases = {c["name"]: c for c in json.load(open(sys.argv[2]))}
        print(json.dumps(describe(cases[sys.argv[3]]), indent=1, sort_keys=True))
        return
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd")
    ap.add_argument("--seq-len", type=int, required=True)
    ap.add_argument("--split", default="969,30,1")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--cache")
    ap.add_argument("--dump")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--gbs", type=int, default=0)
    ap.add_argument("prefix", nargs="+")
    a = ap.parse_args()
    L = a.seq_len
    want = [int(x) for x in a.samples.split(",")]
    if len(a.prefix) == 1:
        prefixes, weights = a.prefix, [1.0]
    else:
        weights = [float(x) for x in a.prefix[0::2]]
        prefixes = a.prefix[1::2]
        s = sum(weights)
        weights = [w / s for w in weights]
    bad = 0
    comps = []
    for p in prefixes:
        sizes, ptrs, data, isz = idx_read(p)
        rng = split_ranges(a.split, len(sizes))
        n_train = want[0] if len(prefixes) == 1 else int(math.ceil(math.ceil(want[0] * weights[len(comps)]) * 1.005))
        lo, hi = rng[0]
        doc_idx, sample_idx, shuffle_idx, epochs, sep = gpt_indices(sizes, lo, hi, L, n_train, a.seed)
        print("%s: train sequences [%d, %d), %d epochs, separate final epoch %s, %d samples"
              % (os.path.basename(p), lo, hi, epochs, sep, len(shuffle_idx)))
        comps.append((sizes, ptrs, data, isz, doc_idx, sample_idx, shuffle_idx))
        if a.cache and len(prefixes) == 1:
            got = {}
            for what in ("document_index", "sample_index", "shuffle_index"):
                f = glob.glob(os.path.join(a.cache, "*-GPTDataset-train-%s.npy" % what))
                if len(f) != 1:
                    print("FAIL cache file for %s: %s" % (what, f))
                    bad += 1
                    continue
                got[what] = np.load(f[0])
            for what, mine in (("document_index", doc_idx), ("sample_index", sample_idx),
                               ("shuffle_index", shuffle_idx)):
                if what in got:
                    same = got[what].shape == mine.shape and np.array_equal(got[what].astype(np.int64), mine.astype(np.int64))
                    print("%s %s equals Megatron's (%s)" % ("ok  " if same else "FAIL", what, mine.shape))
                    bad += 0 if same else 1
    if a.dump and a.steps:
        if len(prefixes) > 1:
            di, dsi = blending_indices(weights, want[0])
        for s in range(1, a.steps + 1):
            d = mn.st_load(os.path.join(a.dump, "step-%06d.safetensors" % s))[0]["tokens"].astype(np.int64)
            for r in range(d.shape[0]):
                i = (s - 1) * a.gbs + r
                c, k = (0, i) if len(prefixes) == 1 else (di[i], dsi[i])
                sizes, ptrs, data, isz, doc_idx, sample_idx, shuffle_idx = comps[c]
                mine = sample_tokens(data, ptrs, isz, sizes, doc_idx, sample_idx, shuffle_idx, k)
                if not np.array_equal(mine, d[r]):
                    print("FAIL step %d row %d (sample %d): tokens differ" % (s, r, i))
                    bad += 1
        print("%s tokens of %d steps x %d samples equal Megatron's order" % ("ok  " if not bad else "FAIL", a.steps, a.gbs))
    print("megatron index oracle: %d mismatches" % bad)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
