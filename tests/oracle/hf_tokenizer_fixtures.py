#!/usr/bin/env python3
"""Write the Hugging Face tokenizer.json fixtures and their reference ids.

The tokenizer.json files are written by the Hugging Face `tokenizers` library itself
(pip install tokenizers), from vocabularies the project ships or trains here:

  neox_gpt2      OpenAI's GPT-2 vocabulary and merges (../shared/data/gpt2-bpe) in the
                 GPT-NeoX / Pythia / OLMo layout: NFC normalizer, ByteLevel pre-tokenizer
                 with the GPT-2 regex, <|endoftext|> and <|padding|> special tokens
  llama3_style   byte-level BPE trained here, Llama 3 layout: Split with the Llama 3
                 (cl100k) regex, ByteLevel without regex, ignore_merges, no normalizer,
                 <|begin_of_text|> ... special tokens
  qwen2_style    byte-level BPE trained here, Qwen2 layout: NFC, Split with Qwen2's regex
                 (single digits), <|endoftext|> <|im_start|> <|im_end|> special and
                 <tool_call> </tool_call> ordinary added tokens
  o200k_style    byte-level BPE trained here with the o200k regex, a prefix space, and
                 byte_fallback set (it changes nothing with a full byte alphabet)
  bert_uncased   WordPiece trained here with WordPieceTrainer, BERT layout:
                 BertNormalizer (lower case, accents stripped, CJK split), BertPreTokenizer
  bert_cased     the same without lower-casing and accent stripping, a short
                 max_input_chars_per_word

The reference ids are tokenizers' `encode(text, add_special_tokens=False).ids` for every
text of tests/fixtures/tokenizer/cases.jsonl (full id lists) and for whole files
(tinyshakespeare, botchan, the head of wagahaiwa, every UDHR text: id count and the
sha256 of the ids as little-endian uint32).

  tests/oracle/hf_tokenizer_fixtures.py write DATA_DIR OUT_DIR   write everything
  tests/oracle/hf_tokenizer_fixtures.py ids DATA_DIR OUT_DIR     rewrite only the expected
      ids, from the committed tokenizer.json files
  tests/oracle/hf_tokenizer_fixtures.py check DATA_DIR OUT_DIR   recompute the ids with
      tokenizers and compare with the committed expected file (exit 1 on a difference)

Besides the files written here, OUT_DIR holds published tokenizer.json files (PUBLISHED:
EleutherAI's GPT-NeoX-20B tokenizer, also Pythia's), whose ids are computed the same way.

DATA_DIR is the project's shared data folder (../shared/data); OUT_DIR is
tests/fixtures/hf. WordPiece training is not deterministic between runs (ties), so
`write` may give other vocabularies; `check` tests the committed files.
"""
import hashlib
import json
import os
import subprocess
import struct
import sys

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from tokenizers import AddedToken

GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
            r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
O200K_RE = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
])


NAMES = ["neox_gpt2", "llama3_style", "qwen2_style", "o200k_style", "bert_uncased", "bert_cased",
         "gpt_neox_20b", "bert_base_uncased"]
# Real files kept as they were published (not written here); see tests/fixtures/hf/SOURCE.md.
PUBLISHED = ["gpt_neox_20b", "bert_base_uncased"]


def zread(path):
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    with open(path, "rb") as f:
        return f.read()


def training_texts(data):
    """A multilingual training corpus: UDHR in every language, English prose, Japanese."""
    out = []
    with open(os.path.join(data, "text/udhr/udhr.jsonl"), encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line)["text"])
    out.append(zread(os.path.join(data, "text/tinyshakespeare/input.txt")).decode()[:300000])
    out.append(zread(os.path.join(data, "sentencepiece/wagahaiwa_nekodearu.txt")).decode()[:100000])
    return out


def byte_bpe(data, regex, vocab_size, specials, added=(), normalizer=None, prefix_space=False,
             byte_fallback=False, ignore_merges=False):
    tok = Tokenizer(models.BPE(byte_fallback=byte_fallback, ignore_merges=ignore_merges))
    if normalizer:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=prefix_space, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[])
    tok.train_from_iterator(training_texts(data), trainer=trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    if added:
        tok.add_tokens([AddedToken(s, special=False, normalized=False) for s in added])
    return tok


def wordpiece(data, vocab_size, lowercase, max_chars):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=max_chars))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=None, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                        special_tokens=specials, continuing_subword_prefix="##")
    tok.train_from_iterator(training_texts(data), trainer=trainer)
    return tok


def build(data):
    toks = {}
    gpt2 = models.BPE.from_file(os.path.join(data, "gpt2-bpe/encoder.json"),
                                os.path.join(data, "gpt2-bpe/vocab.bpe"))
    t = Tokenizer(gpt2)
    t.normalizer = normalizers.NFC()
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    t.decoder = decoders.ByteLevel()
    t.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False),
                          AddedToken("<|padding|>", special=True, normalized=False)])
    toks["neox_gpt2"] = t
    os.environ["RAYON_NUM_THREADS"] = os.environ.get("RAYON_NUM_THREADS", "1")
    toks["llama3_style"] = byte_bpe(
        data, LLAMA3_RE, 3000,
        ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|eot_id|>"],
        ignore_merges=True)
    toks["qwen2_style"] = byte_bpe(data, QWEN2_RE, 3000,
                                   ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                   added=["<tool_call>", "</tool_call>"],
                                   normalizer=normalizers.NFC())
    toks["o200k_style"] = byte_bpe(data, O200K_RE, 2000, ["<|endoftext|>"], prefix_space=True,
                                   byte_fallback=True)
    toks["bert_uncased"] = wordpiece(data, 4000, True, 100)
    toks["bert_cased"] = wordpiece(data, 3000, False, 12)
    # added tokens with lstrip, rstrip, single_word and normalized set
    toks["bert_cased"].add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False)])
    toks["bert_cased"].add_tokens([AddedToken("foo_bar", single_word=True, normalized=False),
                                   AddedToken("<r>", rstrip=True, normalized=False),
                                   AddedToken("hello", normalized=True)])
    toks["bert_uncased"].add_tokens([AddedToken("hello", normalized=True),
                                     AddedToken("<Keep>", normalized=False)])
    toks["qwen2_style"].add_tokens([AddedToken("\u00c5ngstr\u00f6m", normalized=True)])
    return toks


# Texts for the added tokens' options and the normalizers.
EXTRA = [
    "a <mask> b", "a   <mask>   b", "x<mask>y", "\t\n<mask>", "foo_bar baz", "afoo_bar", "foo_bar_",
    "(foo_bar)", "foo_bar", "1foo_bar", "<r>   next", "<r>", "a<r>\u00a0\u2003b", "Hello world hello HELLO",
    "H\u0065llo hellO", "<Keep> <keep> <KEEP>", "A\u030angstro\u0308m \u00c5ngstr\u00f6m \u212bngstr\u00f6m",
    "<|im_start|><|im_start|><|im_end|>", "<|im_start", "<tool_call></tool_call><tool_call>",
    "\u0130stanbul \u0130I\u0131i \u1e9e\u00df \u03a3\u039f\u03a3 \u1c89 \ua7cb",
    "caf\u00e9 cafe\u0301 \u00c5\u212b \ufb01 \u2460 \uff21\uff22",
    "\u4e2d\u6587abc\u3042\u3044 \U00020000\U0002a6df \u2f800",
    "\u0000a\ufffdb\u200bc\u00adc\ue000d\U000f0000e\ufffef",
    "x" * 13 + " " + "y" * 101 + " " + "\u00e9" * 12 + " " + "\u00e9" * 13,
]


def allcp(plane):
    """Every code point of a plane but surrogates, each followed by a space."""
    return "".join(chr(c) + " " for c in range(plane << 16, (plane + 1) << 16) if not 0xD800 <= c < 0xE000)


def texts(data, fixtures):
    """(id, text, full) for every reference text; full: compare by count and sha256."""
    out = []
    for line in zread(os.path.join(fixtures, "tokenizer/cases.jsonl.zst")).decode().split("\n"):
        if not line:
            continue
        r = json.loads(line)
        out.append((r["id"], r["text"], False))
    out.append(("file:tinyshakespeare", zread(os.path.join(fixtures, "tokenizer/tinyshakespeare.txt.zst")).decode(), True))
    out.append(("file:botchan", zread(os.path.join(fixtures, "tokenizer/botchan.txt.zst")).decode(), True))
    out.append(("file:wagahaiwa_head", zread(os.path.join(fixtures, "tokenizer/wagahaiwa_head.txt.zst")).decode(), True))
    # the same file as ../shared/data/text/udhr/udhr.jsonl
    for line in zread(os.path.join(fixtures, "dedup/udhr.jsonl.zst")).decode().split("\n"):
        if line:
            r = json.loads(line)
            out.append(("udhr-full:" + r["code"], r["text"], True))
    return out


def extra_texts():
    out = [("extra-%02d" % i, t, False) for i, t in enumerate(EXTRA)]
    out += [("allcp-%02d" % p, allcp(p), True) for p in range(17)]
    return out


def sha_ids(ids):
    return hashlib.sha256(struct.pack("<%dI" % len(ids), *ids)).hexdigest()


def expected(toks, data, fixtures):
    lines = []
    for name in sorted(toks):
        t = toks[name]
        for tid, text, full in texts(data, fixtures) + extra_texts():
            ids = t.encode(text, add_special_tokens=False).ids
            rec = {"tok": name, "id": tid}
            if tid.startswith("extra-"):
                rec["text"] = text
            if full:
                rec.update({"n": len(ids), "sha256": sha_ids(ids)})
            else:
                rec["ids"] = ids
            lines.append(json.dumps(rec, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("write", "ids", "check"):
        sys.exit(__doc__)
    mode, data, out = sys.argv[1:]
    fixtures = os.path.join(os.path.dirname(os.path.abspath(out)))

    def committed(names):
        return {n: Tokenizer.from_str(zread(os.path.join(out, n + ".json.zst")).decode()) for n in names}

    if mode in ("write", "ids"):
        toks = build(data) if mode == "write" else committed([n for n in NAMES if n not in PUBLISHED])
        os.makedirs(out, exist_ok=True)
        for name, t in (toks.items() if mode == "write" else []):
            path = os.path.join(out, name + ".json")
            t.save(path)
            subprocess.run(["zstd", "-q", "-19", "-f", "--rm", path], check=True)
        toks.update(committed(PUBLISHED))
        exp = expected(toks, data, fixtures)
        path = os.path.join(out, "expected.jsonl")
        with open(path, "w") as f:
            f.write(exp)
        subprocess.run(["zstd", "-q", "-19", "-f", "--rm", path], check=True)
        return
    # check: the committed tokenizer.json files load into tokenizers and give the
    # committed ids
    toks = committed(NAMES)
    want = zread(os.path.join(out, "expected.jsonl.zst")).decode()
    got = expected(toks, data, fixtures)
    if got != want:
        a, b = want.split("\n"), got.split("\n")
        bad = [x for x, y in zip(a, b) if x != y]
        print("expected ids differ from tokenizers %s: %d of %d records, first: %s" %
              (__import__("tokenizers").__version__, len(bad) + abs(len(a) - len(b)), len(a),
               bad[0][:200] if bad else "(count)"))
        sys.exit(1)
    print("ok: %d records reproduced with tokenizers %s" % (len(want.split("\n")) - 1,
                                                            __import__("tokenizers").__version__))


if __name__ == "__main__":
    main()
