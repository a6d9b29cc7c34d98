#!/usr/bin/env python3
"""References for `sluice dedup paragraphs` (tests/cli/t_dedup_paragraphs.sh).

  paragraph_dedup.py dolma DOCS EXPECTED
      Dolma's expected attribute file (bff_duplicate_paragraph_spans: [start, end, 1] in
      code points of `text`) applied to its input documents: each document's text with the
      spans cut out (clamped to the text), one JSON line {"id", "text"} per document, in input order.
  paragraph_dedup.py brute --unit paragraph|line [--skip-empty] FILE...
      The rule by brute force over JSONL files in order: cut each text at every '\n'; a
      unit whose key (paragraph: the bytes; line: stripped of ASCII whitespace, lowercased)
      is in the set of keys seen so far is removed with its newline, otherwise its key is
      added (an empty text has no units); a document that lost a unit and has only
      whitespace left is dropped. One {"id", "text"} line per
      kept document.
  paragraph_dedup.py brute --unit span3 FILE...
      Three-sentence spans: each text split by NLTK's PunktTokenizer('english') (the model
      found through $NLTK_DATA); span i is sentences i..i+2, its key the text from the
      first's start to the last's end, lowercased, ASCII punctuation made spaces, digits
      made 0, whitespace runs made one space and trimmed (sluice's --norm all on ASCII); a
      span in the set of keys seen so far removes its three sentences, each with the text
      up to the next sentence's start (the last: to the end), otherwise its key is added.
      A text of fewer than 3 sentences has no span. Needs ASCII input (the key above is
      --norm all only there).
"""
import gzip
import json
import string
import sys

WS = " \t\n\r\v\f"


def read(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def dolma(docs_path, expected_path):
    docs = read(docs_path)
    spans = {d["id"]: d["attributes"]["bff_duplicate_paragraph_spans"] for d in read(expected_path)}
    for d in docs:
        text = d["text"]
        keep = [True] * len(text)
        for s, e, _ in spans[d["id"]]:
            # Dolma adds 1 for a newline while its char offset is below the text's length
            # in bytes less 1, so in a non-ASCII text the last paragraph's span runs one
            # past the end: clamped
            for i in range(s, min(e, len(text))):
                keep[i] = False
        out = "".join(ch for ch, k in zip(text, keep) if k)
        if out.strip(WS):
            print(json.dumps({"id": d["id"], "text": out}, ensure_ascii=False))


def brute(unit, skip_empty, files):
    seen = set()
    for path in files:
        for d in read(path):
            pieces = d["text"].split("\n") if d["text"] else []
            out = []
            lost = False
            for i, p in enumerate(pieces):
                nl = "\n" if i + 1 < len(pieces) else ""
                key = p if unit == "paragraph" else p.strip(WS).lower()
                if skip_empty and not p.strip(WS):
                    out.append(p + nl)
                elif key in seen:
                    lost = True
                else:
                    seen.add(key)
                    out.append(p + nl)
            text = "".join(out)
            if not lost or text.strip(WS):
                print(json.dumps({"id": d["id"], "text": text}, ensure_ascii=False))


def span_key(s):
    s = s.lower()
    s = "".join(" " if ch in string.punctuation else "0" if ch.isdigit() else ch for ch in s)
    return " ".join(s.split())


def brute_spans(files):
    from nltk.tokenize.punkt import PunktTokenizer
    tok = PunktTokenizer("english")
    seen = set()
    for path in files:
        for d in read(path):
            text = d["text"]
            sent = list(tok.span_tokenize(text))
            gone = [False] * len(sent)
            for i in range(len(sent) - 2):
                key = span_key(text[sent[i][0]:sent[i + 2][1]])
                if key in seen:
                    gone[i] = gone[i + 1] = gone[i + 2] = True
                else:
                    seen.add(key)
            out = text[:sent[0][0]] if sent else text
            for j, (a, _) in enumerate(sent):
                e = sent[j + 1][0] if j + 1 < len(sent) else len(text)
                if not gone[j]:
                    out += text[a:e]
            if not any(gone) or out.strip(WS):
                print(json.dumps({"id": d["id"], "text": out}, ensure_ascii=False))


def main(argv):
    if argv[0] == "dolma":
        dolma(argv[1], argv[2])
    else:
        unit = argv[argv.index("--unit") + 1]
        skip = "--skip-empty" in argv
        files = [a for a in argv[1:] if a not in ("--unit", unit, "--skip-empty")]
        if unit == "span3":
            brute_spans(files)
        else:
            brute(unit, skip, files)


if __name__ == "__main__":
    main(sys.argv[1:])
