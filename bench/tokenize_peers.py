"""The peers of bench/tokenize.sh, on one core.

  tokenize_peers.py encode tiktoken|hf GPT2_DIR RANKS INPUT [jsonl] [repeat]
      encode a text file (one string) or a JSONL file's "text" members with tiktoken
      (GPT-2 ranks, or Meta's tokenizer for a Llama 3/4 tokenizer.model) or HF tokenizers
      (GPT-2 vocab + merges); prints tokens, best seconds, MB/s and the same FNV-1a hash of
      the ids that bench/encode.c prints
  tokenize_peers.py encode gigatoken GPT2_DIR RANKS|MODEL INPUT [jsonl|lines] [repeat]
      the same with gigatoken (pip gigatoken 0.10): a .tiktoken rank file (GPT-2's
      pretokenizer for r50k_base) or a SentencePiece .model; encode_batch_list on one
      thread (parallel=False); CPU seconds of the whole process (gigatoken is Rust); the
      best of `repeat` calls (its piece cache persists between calls) and the first call
      (GIGA_JSON=1: gigatoken reads the rank file as a tokenizer.json written by
      rank_file_json, for a file its rank-file loader cannot read)
  tokenize_peers.py loads RANKS
      exit 0 when gigatoken loads the rank file, else print its error and exit 1
  tokenize_peers.py preprocess RANKS INPUT.jsonl[.zst|.gz] PREFIX
      what Megatron's preprocess_data.py does with one worker, with tiktoken: read JSONL,
      encode each text, append <|endoftext|> to non-empty documents, write
      PREFIX_text_document.bin/.idx with numpy (an empty document repeats its bookend,
      as Megatron's add_document([], []) does)
"""
import gzip, io, json, struct, subprocess, sys, time

import numpy as np


def fnv(ids_iter):
    h = 1469598103934665603
    for ids in ids_iter:
        for i in ids:
            h = ((h ^ i) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def meta_family(ranks_path):
    """"llama3" or "llama4" for Meta's tokenizer.model in llama_models' folders, else None."""
    return next((f for f in ("llama3", "llama4") if "/%s/" % f in ranks_path), None)


def meta_tokenizer(ranks_path):
    """Meta's reference tokenizer (llama_models, installed --no-deps) for the tokenizer.model
    of Llama 3 or Llama 4: tiktoken with Meta's pattern and special tokens; None for other files."""
    from pathlib import Path
    family = meta_family(ranks_path)
    if family is None:
        return None
    mod = __import__("llama_models.%s.tokenizer" % family, fromlist=["Tokenizer"])
    return mod.Tokenizer(Path(ranks_path)).model


def giga_pretokenizer(ranks):
    """gigatoken's scheme for a rank file: GPT-2's for r50k_base, cl100k_base's and
    o200k_base's by file name (None), Meta's files by their family's pattern."""
    family = meta_family(ranks)
    return "gpt2" if "r50k" in ranks else {"llama3": "cl100k", "llama4": "o200k"}.get(family)


def rank_file_json(ranks_path, cache_dir):
    """A Hugging Face tokenizer.json for a rank file of Meta's (the layout of Llama 3's own
    tokenizer.json: Split by the pattern, ByteLevel without its regex, BPE with
    ignore_merges), for a tool that reads tokenizer.json but not the rank file. tiktoken
    merges two neighbours whenever their bytes together are a token, at that token's rank:
    so every split of a token into two tokens is a merge, in the order of the ranks.
    Written once into cache_dir."""
    import hashlib, os, tiktoken.load
    out = os.path.join(cache_dir, "peer-%s.json" % hashlib.sha256(ranks_path.encode()).hexdigest()[:16])
    if os.path.exists(out):
        return out
    meta = meta_tokenizer(ranks_path)
    ranks = tiktoken.load.load_tiktoken_bpe(ranks_path)
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    u = {b: chr(b) for b in printable}
    for k, b in enumerate(x for x in range(256) if x not in u):
        u[b] = chr(256 + k)
    text = lambda bs: "".join(u[x] for x in bs)
    merges = [[text(tok[:k]), text(tok[k:])]
              for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1])
              for k in range(1, len(tok)) if tok[:k] in ranks and tok[k:] in ranks]
    doc = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": meta._pat_str}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": {text(t): r for t, r in ranks.items()}, "merges": merges}}
    with open(out + ".tmp", "w") as f:
        json.dump(doc, f, ensure_ascii=False)
    os.rename(out + ".tmp", out)
    return out


def tiktoken_encoding(ranks_path):
    """tiktoken for a rank file: Meta's tokenizer for its files, else GPT-2's pattern."""
    import tiktoken
    import tiktoken.load
    from tiktoken.core import Encoding
    meta = meta_tokenizer(ranks_path)
    if meta is not None:
        return meta
    pat = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    return Encoding("gpt2", pat_str=pat, mergeable_ranks=tiktoken.load.load_tiktoken_bpe(ranks_path),
                    special_tokens={"<|endoftext|>": 50256})


def open_text(path):
    if path.endswith(".zst"):
        return io.StringIO(subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout.decode())
    if path.endswith(".gz"):
        return gzip.open(path, "rt")
    return open(path)


def encode(kind, gpt2_dir, ranks, path, jsonl, repeat):
    if jsonl == "lines":
        texts = [l[:-1] if l.endswith("\n") else l for l in open_text(path)]
    elif jsonl:
        texts = [json.loads(l)["text"] for l in open_text(path)]
    else:
        texts = [open_text(path).read()]
    nbytes = sum(len(t.encode()) for t in texts)
    if kind == "gigatoken":
        import gigatoken
        if ranks.endswith(".model") and meta_family(ranks) is None:
            tok = gigatoken.Tokenizer.from_sentencepiece(ranks)
        else:
            # GPT-2's pretokenizer for r50k_base; cl100k_base and o200k_base by file name;
            # Meta's Llama 3 and Llama 4 files (tokenizer.model) with their patterns
            import os, tempfile
            if os.environ.get("GIGA_JSON"):  # 0.10 panics on Llama 3's file: its tokenizer.json
                path_json = rank_file_json(ranks, os.environ.get("PEER_CACHE", tempfile.gettempdir()))
                tok = gigatoken.Tokenizer.from_json(open(path_json).read())
            else:
                tok = gigatoken.Tokenizer.from_tiktoken(ranks, pretokenizer=giga_pretokenizer(ranks))
        tok.encode_batch_list(["Warm-up: its one-time set-up is not timed. 123"], parallel=False)
        best, first, out = 1e30, None, None
        for _ in range(repeat):
            t0 = time.process_time()
            out = tok.encode_batch_list(texts, parallel=False)
            t = time.process_time() - t0
            best = min(best, t)
            first = t if first is None else first
        # MB/s is the best call, whose piece cache was filled by the calls before it;
        # `first` is the MB/s of the first call on the text (after a one-line warm-up)
        print("tokens %d bytes %d seconds %.4f MB/s %.1f fnv %016x first %.1f"
              % (sum(len(x) for x in out), nbytes, best, nbytes / best / 1e6, fnv(out), nbytes / first / 1e6))
        return
    if kind == "tiktoken":
        enc = tiktoken_encoding(ranks)
        f = enc.encode_ordinary
    else:
        from tokenizers import Tokenizer, models, pre_tokenizers
        tok = Tokenizer(models.BPE.from_file(gpt2_dir + "/encoder.json", gpt2_dir + "/vocab.bpe"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        f = lambda t: tok.encode(t).ids
    best, first, out = 1e30, None, None
    for _ in range(repeat):
        t0 = time.thread_time()  # CPU seconds, as bench/encode.c measures
        out = [f(t) for t in texts]
        t = time.thread_time() - t0
        best = min(best, t)
        first = t if first is None else first
    print("tokens %d bytes %d seconds %.4f MB/s %.1f fnv %016x first %.1f"
          % (sum(len(x) for x in out), nbytes, best, nbytes / best / 1e6, fnv(out), nbytes / first / 1e6))


def loads(ranks):
    """Exit 0 when gigatoken loads this rank file, else print why and exit 1."""
    import gigatoken
    try:
        gigatoken.Tokenizer.from_tiktoken(ranks, pretokenizer=giga_pretokenizer(ranks))
    except BaseException as e:  # a Rust panic is a BaseException
        print("%s: %s" % (type(e).__name__, " ".join(str(e).split())))
        sys.exit(1)


def preprocess(ranks, path, prefix):
    enc = tiktoken_encoding(ranks)
    lengths, pointers, docs, pos = [], [], [0], 0
    with open(prefix + "_text_document.bin", "wb") as b:
        for line in open_text(path):
            ids = enc.encode_ordinary(json.loads(line)["text"])
            if ids:
                ids.append(50256)
            arr = np.asarray(ids, dtype=np.uint16)
            b.write(arr.tobytes())
            if ids:
                lengths.append(len(ids))
                pointers.append(pos)
                pos += arr.nbytes
            docs.append(len(lengths))
    with open(prefix + "_text_document.idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, len(lengths), len(docs)))
        f.write(np.asarray(lengths, "<i4").tobytes() + np.asarray(pointers, "<i8").tobytes())
        f.write(np.asarray(docs, dtype="<i8").tobytes())


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "encode":
        encode(a[2], a[3], a[4], a[5], a[6] if len(a) > 6 else "", int(a[7]) if len(a) > 7 else 3)
    elif a[1] == "loads":
        loads(a[2])
    else:
        preprocess(a[2], a[3], a[4])
