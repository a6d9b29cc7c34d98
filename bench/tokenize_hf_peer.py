"""The peer of bench/tokenize_hf.sh: Hugging Face `tokenizers` on one thread.

  tokenize_hf_peer.py TOKENIZER.json INPUT.jsonl[.zst|.gz] [repeat]

Encodes each JSONL "text" member with encode(text, add_special_tokens=False), twice over:
a Python loop over the texts (CPU seconds of this thread) and encode_batch on a one-thread
pool (RAYON_NUM_THREADS=1; CPU seconds of the process); prints the faster of the two as
tokens, seconds, MB/s and the FNV-1a hash of the ids that bench/encode.c prints.
"""
import gzip, io, json, subprocess, sys, time

from tokenizers import Tokenizer


def fnv(ids_iter):
    h = 1469598103934665603
    for ids in ids_iter:
        for i in ids:
            h = ((h ^ i) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def open_text(path):
    if path.endswith(".zst"):
        return io.StringIO(subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout.decode())
    if path.endswith(".gz"):
        return gzip.open(path, "rt")
    return open(path, encoding="utf-8")


def main():
    path, inp = sys.argv[1], sys.argv[2]
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    tok = Tokenizer.from_file(path)
    texts = [json.loads(l)["text"] for l in open_text(inp)]
    nbytes = sum(len(t.encode()) for t in texts)
    best, out, how = 1e30, None, ""
    for _ in range(repeat):
        t0 = time.thread_time()
        o = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        s = time.thread_time() - t0
        if s < best:
            best, out, how = s, o, "loop"
        t0 = time.process_time()
        o = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
        s = time.process_time() - t0
        if s < best:
            best, out, how = s, o, "batch"
    print("tokens %d bytes %d seconds %.4f MB/s %.2f fnv %016x via %s"
          % (sum(len(x) for x in out), nbytes, best, nbytes / best / 1e6, fnv(out), how))


if __name__ == "__main__":
    main()
