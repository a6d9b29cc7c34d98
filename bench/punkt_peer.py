"""NLTK's Punkt on the same input as bench/punkt_split.c, for bench/punkt.sh.

  punkt_peer.py split LANG INPUT.jsonl REPEAT [keepnl]   NLTK_DATA/tokenizers/punkt_tab/LANG
  punkt_peer.py train INPUT.jsonl OUT_DIR                PunktTrainer on the texts joined by
                                                         blank lines; the parameters written
                                                         sorted, as sluice writes them

split prints what punkt_split prints: sentences, CPU seconds of the splitting (best of
REPEAT; time.process_time), sentences/s, MB/s and the FNV-1a hash of the sentences'
UTF-8 bytes, each followed by a NUL. keepnl: Megatron-LM's --keep-newlines language
variables. train prints the CPU seconds of train() and get_params().
"""
import json
import os
import sys
import time

from nltk.tokenize.punkt import PunktLanguageVars, PunktSentenceTokenizer, PunktTokenizer, PunktTrainer


class KeepNewlines(PunktLanguageVars):
    """Megatron-LM's CustomLanguageVars (tools/preprocess_data.py), its regex unchanged."""
    _period_context_fmt = r"\S*%(SentEndChars)s\s*(?=(?P<after_tok>%(NonWord)s|(?P<next_tok>\S+)))"


def texts(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l)["text"] for l in f if l.strip()]


def split(lang, path, repeat, keepnl):
    docs = texts(path)
    tok = PunktTokenizer(lang)
    if keepnl:
        tok = PunktSentenceTokenizer(tok._params, lang_vars=KeepNewlines())
    best, out = 1e30, None
    for _ in range(repeat):
        t0 = time.process_time()
        out = [tok.tokenize(d) for d in docs]
        best = min(best, time.process_time() - t0)
    h = 1469598103934665603
    for sents in out:
        for s in sents:
            for b in s.encode("utf-8") + b"\0":
                h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    n = sum(len(s) for s in out)
    size = sum(len(d.encode("utf-8")) for d in docs)
    print("sentences %d bytes %d seconds %.4f sentences/s %.0f MB/s %.1f fnv %016x"
          % (n, size, best, n / best, size / best / 1e6, h))


def train(path, out):
    docs = texts(path)
    t0 = time.process_time()
    trainer = PunktTrainer()
    trainer.train("\n\n".join(docs))
    p = trainer.get_params()
    t = time.process_time() - t0
    os.makedirs(out, exist_ok=True)
    rows = {"abbrev_types.txt": sorted(p.abbrev_types),
            "collocations.tab": sorted("\t".join(c) for c in p.collocations),
            "sent_starters.txt": sorted(p.sent_starters),
            "ortho_context.tab": sorted("%s\t%d" % kv for kv in p.ortho_context.items() if kv[1])}
    for name, lines in rows.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write("\n".join(sorted(lines, key=lambda s: s.encode("utf-8"))).encode("utf-8"))
    print("seconds %.3f" % t)


if __name__ == "__main__":
    if sys.argv[1] == "split":
        split(sys.argv[2], sys.argv[3], int(sys.argv[4]), len(sys.argv) > 5)
    else:
        train(sys.argv[2], sys.argv[3])
