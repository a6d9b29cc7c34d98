"""Texts and vocabularies for the BERT tokenizer test (tests/cli/t_tokenize_bert.sh).

  bert_cases.py hard OUT.jsonl
      hand-picked hard cases, one document each: accents, CJK, controls, U+FFFD,
      zero-width characters, Unicode white space, final sigma, very long words, special
      token strings in the text, sentence lists
  bert_cases.py chars OUT.jsonl VOCAB.txt
      every code point that is not a letter of category Lo, unassigned or private use (and
      every 31st of those), each in two words: between a sigma that may be final and one that
      is not; after a spacing mark of combining class 226, before two nonspacing marks, documents of 400 code points; and a vocabulary of
      the characters the oracle (megatron_bert.py) makes of them, each alone and as a
      "##" piece, so that ids show every character of the tokenizer's output
  bert_cases.py vocab JSON.zst VOCAB.txt
      the WordPiece vocabulary of a tokenizer.json (tests/fixtures/hf) as vocab.txt
  bert_cases.py transformers [--head N] VOCAB.txt:cased|lower... -- IN.jsonl...
      the oracle against transformers' Python BERT tokenizer (BasicTokenizer and
      WordpieceTokenizer of tokenization_bert_legacy, 200 characters a word) on every text
      where the two should agree: transformers NFC-normalizes the text (here replaced by
      the identity) and drops categories Cn, Co and Cs as controls, so texts with such
      characters are left out. --head N: the first N characters of each text. Prints
      "agree N of N (M left out)" for each vocabulary and casing; exit 1 on a difference.
"""
import json
import os
import subprocess
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import megatron_bert  # noqa: E402


def hard():
    t = [
        "Hello, World! The quick brown fox.",
        "café naïve résumé Ångström ÉCOLE Ünïcödé",
        "e\u0301 a\u0308 o\u0323\u0302 q\u0307\u0323 \u1e69\u0301",  # combining marks, reordering
        "ΟΔΟΣ ΣΟΦΟΣ. ΌΣΟΣ, Σ ΑΣ' ΑΣ.Α ΑΣ\u0345 σοφός ΑΣ1 ΑΣΑ",  # final sigma contexts
        "İstanbul İİ DİYARBAKIR ǅemal ẞtraße ﬁnance Ω Å K",
        "中文字 漢字かな交じり文 한국어 텍스트 日本語のテキスト 丽 豈 \U00020000\U0002b820\U0002ceaf",
        "ctrl\x01a\x02b\x7fc\x1bd e\x0bf g\x0ch i\x1cj k\x85l m\x00n",
        "rep\ufffdlace \ufffd \ufffd\ufffd",
        "zero\u200bwidth\u200cjoin\u200dx \ufeffbom \u2060wj \u00adsoft\u00ad",
        "nb\u00a0sp em\u2003sp ideo\u3000sp line\u2028sep para\u2029sep ogham\u1680x",
        "tab\tnew\nline\rcarriage\r\nend",
        "[CLS] [SEP] [PAD] [MASK] [UNK] [BOS] [EOS] <extra_id_0> ##ing ## #",
        "x" * 199 + " " + "y" * 200 + " " + "z" * 201 + " " + "é" * 201,
        "supercalifragilisticexpialidocious " * 3 + "a" * 1000,
        "https://example.com/path?query=1&b=2#frag user@example.org $100.00 3.14159",
        "don't won't I'm they're we've it's 'quoted' \"double\" ``latex''",
        "\u037e\u0387 \u1fef \u2126 \u212b \u0344 \u0f73 \u0f75 \u0f81",  # NFD to ASCII / marks
        "emoji 😀👍🏽 👨‍👩‍👧 🇫🇷 ⚽️",
        "",
        "   ",
        "\x00\x01",
        "Ǆ ǅ ǆ Ǉ ǈ ǉ ᾈ ᾼ ῌ ῼ",
        "\U0001d400\U0001d41a \U00010400\U00010428 \U0001e900\U0001e922",  # math, Deseret, Adlam
        "ᏸᏹᏺ ꭰꭱ Ꭰ",  # Cherokee lower/upper
        "\ue000private\uf8ff \U000f0000 \U0010fffd",
        "\u0378\u0379 \U000e0001tag\U000e007f",  # unassigned, tags (Cf)
        "x\U0001d16d\U0001d165 y\u302f\u1b44\u0301 z\U00016ff0\u1734",  # marks that stay, reordered
    ]
    docs = [{"text": x} for x in t]
    docs.append({"text": ["First sentence.", "", "Second one!", "\x00"]})
    docs.append({"other": "no text key"})
    docs.append({"text": "ΑΣ " * 50 + "Σ" + "\u0345" * 300 + "Α"})
    return docs


def chars():
    cps = []
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        cat = unicodedata.category(chr(c))
        if cat not in ("Lo", "Cn", "Co") or c % 31 == 0:
            cps.append(c)
    docs = []
    for i in range(0, len(cps), 400):
        words = []
        for c in cps[i:i + 400]:
            ch = chr(c)
            words.append("aΣ%sΣc \U0001d16d%s\u0301\u0323" % (ch, ch))
        docs.append({"text": " ".join(words)})
    return docs


def vocab_of(docs):
    seen = set()
    for d in docs:
        for lower in (False, True):
            for w in megatron_bert.basic_tokens(d["text"], lower):
                seen.update(w)
    lines = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    for ch in sorted(seen):
        if (ch + "x").strip() == ch + "x" and ch not in "\r\n":
            lines += [ch, "##" + ch]
    return lines


def transformers_check(pairs, files, head):
    import types
    from transformers.models.bert import tokenization_bert_legacy as tbl
    shim = types.SimpleNamespace(**{k: getattr(unicodedata, k) for k in dir(unicodedata)
                                    if not k.startswith("_")})
    shim.normalize = lambda form, s: s if form == "NFC" else unicodedata.normalize(form, s)
    tbl.unicodedata = shim
    texts = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                text = json.loads(line).get("text", "")
                texts += [t[:head] if head else t for t in (text if isinstance(text, list) else [text])]
    bad = 0
    for pair in pairs:
        vocab_file, case = pair.rsplit(":", 1)
        lower = case == "lower"
        basic = tbl.BasicTokenizer(do_lower_case=lower, tokenize_chinese_chars=True)
        vocab = tbl.load_vocab(vocab_file)
        wp = tbl.WordpieceTokenizer(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=200)
        ours = megatron_bert.MegatronBert(vocab_file, lower)
        agree = total = skipped = 0
        for t in texts:
            if any(unicodedata.category(c) in ("Cn", "Co", "Cs") for c in t):
                skipped += 1
                continue
            theirs = [vocab[p] for w in basic.tokenize(t) for p in wp.tokenize(w)]
            total += 1
            if theirs == ours.tokenize(t):
                agree += 1
            elif total - agree <= 3:
                print("differs: %r" % t[:200])
        print("%s %s: agree %d of %d (%d left out)" % (os.path.basename(vocab_file), case, agree,
                                                      total, skipped))
        bad += agree != total
    return 1 if bad else 0


def main(argv):
    if argv[1] == "hard":
        docs = hard()
    elif argv[1] == "chars":
        docs = chars()
        with open(argv[3], "w", encoding="utf-8") as f:
            f.write("".join(x + "\n" for x in vocab_of(docs)))
    elif argv[1] == "transformers":
        head = int(argv[3]) if argv[2] == "--head" else 0
        rest = argv[4:] if head else argv[2:]
        sys.exit(transformers_check(rest[:rest.index("--")], rest[rest.index("--") + 1:], head))
    elif argv[1] == "vocab":
        j = json.loads(subprocess.run(["zstd", "-q", "-d", "-c", argv[2]], check=True,
                                      capture_output=True).stdout)
        v = sorted(j["model"]["vocab"].items(), key=lambda kv: kv[1])
        assert [i for _, i in v] == list(range(len(v)))
        with open(argv[3], "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t, _ in v))
        return
    with open(argv[2], "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv)
