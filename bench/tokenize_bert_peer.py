"""The peers of bench/tokenize_bert.sh: BERT WordPiece from a vocab.txt on one core.

  tokenize_bert_peer.py tokenizers VOCAB.txt cased|lower INPUT.jsonl [repeat]
      the `tokenizers` library's BertWordPieceTokenizer(vocab, lowercase=...) (Rust; its
      defaults otherwise: BERT normalizer, 100 characters a word), encode(text,
      add_special_tokens=False) per text in a Python loop (CPU seconds of this thread) and
      encode_batch on a one-thread pool (RAYON_NUM_THREADS=1; CPU seconds of the process),
      the faster of the two
  tokenize_bert_peer.py megatron BERT_TOKENIZATION.py VOCAB.txt cased|lower INPUT.jsonl
      Megatron-LM's own Python: FullTokenizer of its bert_tokenization.py (the file named,
      from a Megatron-LM checkout of core 0.16 or older), tokenize + convert_tokens_to_ids
      per text, as _BertWordPieceTokenizer.tokenize does; CPU seconds of this thread
  tokenize_bert_peer.py port VOCAB.txt cased|lower INPUT.jsonl
      the same with the test oracle tests/oracle/megatron_bert.py (a port of that code)

Each prints tokens, bytes, seconds, MB/s and the FNV-1a hash of the ids that bench/encode.c
prints.
"""
import importlib.util, json, os, sys, time, types


def fnv(ids_iter):
    h = 1469598103934665603
    for ids in ids_iter:
        for i in ids:
            h = ((h ^ i) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def report(out, texts, seconds, how):
    nbytes = sum(len(t.encode()) for t in texts)
    print("tokens %d bytes %d seconds %.4f MB/s %.3f fnv %016x via %s"
          % (sum(len(x) for x in out), nbytes, seconds, nbytes / seconds / 1e6, fnv(out), how))


def main():
    kind = sys.argv[1]
    if kind == "megatron":
        src, vocab, case, inp = sys.argv[2:6]
    else:
        vocab, case, inp = sys.argv[2:5]
    texts = [json.loads(l)["text"] for l in open(inp, encoding="utf-8")]
    lower = case == "lower"
    if kind == "tokenizers":
        from tokenizers import BertWordPieceTokenizer
        tok = BertWordPieceTokenizer(vocab, lowercase=lower)
        repeat = int(sys.argv[5]) if len(sys.argv) > 5 else 1
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
        report(out, texts, best, how)
        return
    if kind == "megatron":
        if "six" not in sys.modules:  # bert_tokenization imports six only to tell Python 3
            try:
                import six  # noqa: F401
            except ImportError:
                sys.modules["six"] = types.SimpleNamespace(PY2=False, PY3=True)
        spec = importlib.util.spec_from_file_location("bert_tokenization", src)
        bt = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bt)
        full = bt.FullTokenizer(vocab, do_lower_case=lower)
        encode = lambda t: full.convert_tokens_to_ids(full.tokenize(t))
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "oracle"))
        import megatron_bert
        encode = megatron_bert.MegatronBert(vocab, lower).tokenize
    t0 = time.thread_time()
    out = [encode(t) for t in texts]
    report(out, texts, time.thread_time() - t0, kind)


if __name__ == "__main__":
    main()
