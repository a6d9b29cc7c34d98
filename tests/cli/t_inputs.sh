#!/usr/bin/env bash
# How stages take their inputs (core/inputs.h): directory walks through symbolic links
# (loops, siblings) list each file once. Every command runs under `timeout`: before this
# rule two loops of links made a walk that never ended.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# N documents "PREFIX-i" into FILE
gen() {
    python3 - "$@" <<'PY'
import json, sys
path, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()
with open(path, "a") as f:
    for i in range(n):
        text = " ".join(words[(i * 7 + k * 3) % len(words)] + str((i * 31 + k) % 97) for k in range(40))
        f.write(json.dumps({"id": "%s-%d" % (prefix, i), "text": "%s %d %s" % (prefix, i, text)}) + "\n")
PY
}
docs_in() { json "$1/manifest.json" "m['counts']['documents_in']"; }

case_ "a link to its own directory, two of them, a link to a sibling: each file read once"
mkdir -p "$T/in/sub"
gen "$T/in/a.jsonl" a 5
gen "$T/in/sub/b.jsonl" b 3
ln -s . "$T/in/self"
ln -s .. "$T/in/sub/up"
ln -s sub "$T/in/sib"
run timeout 20 "$SLUICE" clean --out "$T/o-links" "$T/in"
expect_rc 0
expect_eq "$(docs_in "$T/o-links")" 8
# the names kept: the first in walk order (sorted entries, depth first)
expect_eq "$(json "$T/o-links/manifest.json" "[i['path'].split('/in/')[1] for i in m['inputs']]")" \
          "['a.jsonl', 'sib/b.jsonl']"

finish
