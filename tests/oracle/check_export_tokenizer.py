#!/usr/bin/env python3
"""transformers' AutoTokenizer on tokenizers exported by `sluice export hf` against the ids
`sluice tokenize` wrote for the same documents.

usage: check_export_tokenizer.py TEXTS.jsonl KIND:DIR:PREFIX ...

For each document of TEXTS.jsonl (one {"text": ...} a line, tokenized without
--append-eod into PREFIX_text_document) and each exported DIR, tokenizer(text).input_ids
must equal sluice's ids, and tokenizer(text, add_special_tokens=False) give the same (on
the first 100 documents and on every one that differs).
KIND says which differences are explained, and each one is checked to be of that sort:

  exact     none (GPT-2, tiktoken, Hugging Face tokenizers, SentencePiece BPE)
  spm-bpe   where the text is not in NFC or holds a combining mark (Unicode category M):
            tokenizers applies SentencePiece's character map to one grapheme cluster at a
            time (character by character in clusters of 6 bytes or more), SentencePiece
            matches the longest key at each character, so decomposed text (combining marks,
            conjoining Hangul jamo) can normalize differently; the two token strings must
            then differ
  spm-uni   the same, and ties: two segmentations of the same text whose piece scores sum
            to the same value (SentencePiece sums in float32 and keeps the first of equal
            paths, tokenizers sums in float64): same token text, equal sums

Prints one line per tokenizer; exits 1 when a difference is not of an allowed sort.
"""
import json
import math
import os
import sys
import unicodedata

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import megatron_idx  # noqa: E402


def shard_ids(prefix):
    code, lens, ptrs, doc, data = megatron_idx.read(prefix)
    out = []
    for d in range(len(doc) - 1):
        a, b = int(doc[d]), int(doc[d + 1])
        if a == b:
            out.append([])
            continue
        s = int(ptrs[a]) // data.itemsize
        out.append([int(x) for x in np.asarray(data[s:s + int(lens[a:b].sum())])])
    return out


def decomposed(text):
    return unicodedata.normalize("NFC", text) != text or any(
        unicodedata.category(c).startswith("M") for c in text)


def check(kind, d, prefix, texts):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(d)
    want_all = shard_ids(prefix)
    if len(want_all) != len(texts):
        return "%s: %d documents in the shard, %d texts" % (d, len(want_all), len(texts)), {}
    scores = None
    tj = os.path.join(d, "tokenizer.json")
    if kind == "spm-uni":
        model = json.load(open(tj, encoding="utf-8"))["model"]
        scores = [s for _, s in model["vocab"]]
    counts = {"same": 0, "tie": 0, "normalizer": 0}
    all_got = tok(texts)["input_ids"]
    # add_special_tokens is a setting of the tokenizer, not of the text: the first documents
    # and every one that differs show that it adds nothing
    plain = tok(texts[:100], add_special_tokens=False)["input_ids"]
    for i, text in enumerate(texts):
        want, got = want_all[i], all_got[i]
        if (i < 100 and plain[i] != got) or (
                got != want and tok(text, add_special_tokens=False)["input_ids"] != got):
            return "%s: document %d: add_special_tokens adds tokens" % (d, i), counts
        if got == want:
            counts["same"] += 1
            continue
        sw = "".join(tok.convert_ids_to_tokens(want))
        sg = "".join(tok.convert_ids_to_tokens(got))
        if kind in ("spm-bpe", "spm-uni") and sw != sg and decomposed(text):
            counts["normalizer"] += 1
            continue
        if kind == "spm-uni" and sw == sg:
            a, b = sum(scores[x] for x in want), sum(scores[x] for x in got)
            if math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-4):
                counts["tie"] += 1
                continue
        j = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]),
                 min(len(got), len(want)))
        return ("%s: document %d (%r...) differs at id %d: sluice %s, transformers %s"
                % (d, i, text[:40], j, tok.convert_ids_to_tokens(want[j:j + 6]),
                   tok.convert_ids_to_tokens(got[j:j + 6]))), counts
    return None, counts


def main():
    texts = [json.loads(l)["text"] for l in open(sys.argv[1], encoding="utf-8")]
    bad = 0
    for arg in sys.argv[2:]:
        kind, d, prefix = arg.split(":", 2)
        err, counts = check(kind, d, prefix, texts)
        print("%s %s: %s" % (os.path.basename(d), kind,
                              ", ".join("%s %d" % kv for kv in counts.items())))
        if err:
            print("FAIL " + err)
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
