"""Megatron-LM's BertWordPiece tokenizers in plain Python: the test oracle of sluice's
`bert:` and `bert-lower:` tokenizer specs (tokenize/bert.h).

Written from the algorithm of Megatron-LM's _BertWordPieceTokenizer
(megatron/training/tokenizer/tokenizer.py, up to core 0.16) and the BERT FullTokenizer it
wraps (bert_tokenization.py, Google's original BERT code), not from sluice's C:

  vocab.txt      one token a line (Python text mode: \\n, \\r\\n or \\r end a line), each
                 line str.strip()ped, line N (from 0) is id N
  BasicTokenizer _clean_text (drop U+0000, U+FFFD, Cc, Cf but \\t \\n \\r; Zs and \\t \\n \\r
                 become spaces), a space around every CJK ideograph, str.split(); lower case
                 only: str.lower() and NFD with the Mn characters dropped, per word; then
                 every punctuation character (ASCII non-alphanumerics, P*) a word alone
  WordPiece      greedy longest match first, "##" pieces, [UNK] for a word it cannot spell
                 or of more than 200 characters
  Megatron       [CLS] [SEP] [PAD] [MASK] looked up; [BOS], [EOS], <extra_id_0..E-1>
                 appended when absent (add_token: the next id); eod = [EOS];
                 vocab_size = the number of ids; detokenize = FullTokenizer's
                 convert_tokens_to_string with its clean-up

Python's unicodedata and str are those of the Python running this file.

Command line (the CLI test and the benchmark use it):

  megatron_bert.py encode VOCAB cased|lower [--append-eod] [--extra-ids N] [--json-key K]
                   IN.jsonl... OUT_PREFIX
      what Megatron's preprocess_data.py writes: OUT_PREFIX.bin/.idx (one sequence per
      document, or per sentence when the key holds a list; uint16 below 65500 ids), the
      documents of the inputs one after the other
  megatron_bert.py ids VOCAB cased|lower [--extra-ids N] IN.jsonl
      one JSON line per document: {"ids": [...]}
  megatron_bert.py decode VOCAB cased|lower [--extra-ids N] IDS.jsonl
      one JSON line per line {"ids": [...]} of input: {"text": detokenize(ids)}
  megatron_bert.py info VOCAB cased|lower [--extra-ids N]
      {"vocab_size", "eod", "cls", "sep", "pad", "mask", "bos", "eos", "extra"}
"""
import json
import os
import sys
import unicodedata

MAX_WORD_CHARS = 200


def load_vocab(path):
    vocab = {}
    with open(path, "r", encoding="utf-8") as f:
        for index, line in enumerate(iter(f.readline, "")):
            vocab[line.strip()] = index
    return vocab


def is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokens(text, lower):
    """BERT's BasicTokenizer.tokenize."""
    kept = []
    for ch in text:
        if ord(ch) == 0 or ord(ch) == 0xFFFD or is_control(ch):
            continue
        kept.append(" " if is_whitespace(ch) else ch)
    spaced = []
    for ch in kept:
        spaced.append(" %s " % ch if is_cjk(ord(ch)) else ch)
    out = []
    for word in "".join(spaced).split():
        if lower:
            word = "".join(c for c in unicodedata.normalize("NFD", word.lower())
                           if unicodedata.category(c) != "Mn")
        piece = ""
        for ch in word:
            if is_punctuation(ch):
                if piece:
                    out.append(piece)
                    piece = ""
                out.append(ch)
            else:
                piece += ch
        if piece:
            out.append(piece)
    return out


def wordpiece(word, vocab):
    if len(word) > MAX_WORD_CHARS:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            sub = word[start:end] if start == 0 else "##" + word[start:end]
            if sub in vocab:
                pieces.append(sub)
                break
            end -= 1
        if end == start:
            return ["[UNK]"]
        start = end
    return pieces


class MegatronBert:
    def __init__(self, vocab_file, lower, extra_ids=0):
        self.vocab = load_vocab(vocab_file)
        self.lower = lower
        for name in ("[CLS]", "[SEP]", "[PAD]", "[MASK]"):
            setattr(self, name[1:-1].lower(), self.vocab[name])
        self.bos = self.add("[BOS]")
        self.eos = self.add("[EOS]")
        self.extra = [self.add("<extra_id_%d>" % i) for i in range(extra_ids)]
        self.eod = self.eos
        self.inv = {i: t for t, i in self.vocab.items()}

    def add(self, token):
        if token not in self.vocab:
            self.vocab[token] = len(self.vocab)
        return self.vocab[token]

    @property
    def vocab_size(self):
        return len(self.vocab)

    def tokenize(self, text):
        ids = []
        for word in basic_tokens(text, self.lower):
            ids += [self.vocab[p] for p in wordpiece(word, self.vocab)]
        return ids

    def detokenize(self, ids):
        text = " ".join(self.inv[i] for i in ids).replace(" ##", "").strip()
        for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                     (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"),
                     (" 're", "'re")):
            text = text.replace(a, b)
        return text


def documents(tok, path, key, append_eod):
    """preprocess_data.py's Encoder.encode, one document a line: its sentences' ids."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            text = json.loads(line).get(key, "")
            sentences = text if isinstance(text, list) else [text]
            seqs = [s for s in (tok.tokenize(x) for x in sentences) if s]
            if seqs and append_eod:
                seqs[-1].append(tok.eod)
            yield seqs


def main(argv):
    cmd, vocab, case = argv[1], argv[2], argv[3]
    rest = argv[4:]
    opts = {"--append-eod": False, "--extra-ids": 0, "--json-key": "text"}
    while rest and rest[0].startswith("--"):
        name = rest.pop(0)
        opts[name] = True if name == "--append-eod" else rest.pop(0)
    tok = MegatronBert(vocab, case == "lower", int(opts["--extra-ids"]))
    out = sys.stdout
    if cmd == "info":
        out.write(json.dumps({k: getattr(tok, k) for k in (
            "vocab_size", "eod", "cls", "sep", "pad", "mask", "bos", "eos", "extra")}) + "\n")
    elif cmd == "ids":
        for seqs in documents(tok, rest[0], opts["--json-key"], False):
            out.write(json.dumps({"ids": [i for s in seqs for i in s]}) + "\n")
    elif cmd == "decode":
        with open(rest[0], encoding="utf-8") as f:
            for line in f:
                out.write(json.dumps({"text": tok.detokenize(json.loads(line)["ids"])},
                                     ensure_ascii=False) + "\n")
    elif cmd == "encode":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
        import megatron_idx
        import io
        docs = "".join(json.dumps(seqs) + "\n" for path in rest[:-1] for seqs in documents(
            tok, path, opts["--json-key"], opts["--append-eod"]))
        sys.stdin = io.StringIO(docs)
        megatron_idx.write(rest[-1], "uint16" if tok.vocab_size < 65500 else "int32")
    else:
        sys.exit("unknown command %r" % cmd)


if __name__ == "__main__":
    main(sys.argv)
