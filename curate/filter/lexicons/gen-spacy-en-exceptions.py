#!/usr/bin/env python3
"""Write spacy-en-exceptions.tsv: how spaCy's English tokenizer splits its special cases.

Run once with spaCy installed (bench/requirements.txt); the output is data (one special
case per line: the string, then the pieces it is split into, tab-separated). Entries that
contain whitespace are left out: sluice splits at whitespace before it looks them up.
"""
import sys

import spacy

nlp = spacy.blank("en")
out = open(sys.argv[1] if len(sys.argv) > 1 else "spacy-en-exceptions.tsv", "w", encoding="utf-8")
out.write("# spaCy %s English tokenizer special cases (MIT license, see SOURCE.md)\n" % spacy.__version__)
for key in sorted(nlp.tokenizer.rules):
    pieces = [t[65] for t in nlp.tokenizer.rules[key]]  # 65 = ORTH
    if any(c.isspace() for c in key) or any(c.isspace() for p in pieces for c in p):
        continue
    if "".join(pieces) != key:
        continue
    out.write(key + "\t" + "\t".join(pieces) + "\n")
