#!/usr/bin/env bash
# How stages take their inputs (core/inputs.h): directory walks through symbolic links
# (loops, siblings) list each file once; stages that read an input twice refuse FIFOs
# (one-pass stages read them); an input appended to during a run is read up to its size
# in the plan, by every stage; an unreadable file is named as such. Every command runs
# under `timeout`: before these rules a loop of links never ended and a FIFO hung.
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

case_ "FIFOs: refused by the stages that read an input twice, read by the one-pass ones"
mkfifo "$T/f.jsonl"
gen "$T/fdata.jsonl" f 4
writer() { timeout 20 sh -c 'cat "$1" >"$2"' sh "$T/fdata.jsonl" "$T/f.jsonl" & }
for cmd in "reshard" "dedup exact" "dedup fuzzy"; do
    writer
    wjob=$!
    # shellcheck disable=SC2086
    run timeout 20 "$SLUICE" $cmd --out "$T/o-fifo-${cmd/ /-}" "$T/f.jsonl"
    expect_rc 1
    expect_err "cannot read input '$T/f.jsonl': it is a FIFO, and the stage '${cmd/ /-}' reads each input more than once"
    expect_no_file "$T/o-fifo-${cmd/ /-}/manifest.json"
    timeout 20 cat "$T/f.jsonl" >/dev/null || true # the writer waits for a reader
    wait $wjob || true
done
writer
wjob=$!
run timeout 20 "$SLUICE" clean --out "$T/o-fifo-clean" "$T/f.jsonl"
expect_rc 0
expect_eq "$(docs_in "$T/o-fifo-clean")" 4
wait $wjob || true

case_ "extract reads a FIFO once: a plain HTML page, one arXiv paper (each was read twice)"
mkfifo "$T/page.html" "$T/paper.gz"
timeout 20 sh -c 'printf "<html><head><title>T</title></head><body><p>%s</p></body></html>" \
    "A paragraph of plain text that is long enough to be kept as the main text of the page." >"$1"' \
    sh "$T/page.html" &
wjob=$!
run timeout 20 "$SLUICE" extract --format html --out "$T/o-html" "$T/page.html"
wait $wjob || true
expect_rc 0
expect_eq "$(json "$T/o-html/manifest.json" "m['counts']['documents_out']")" 1
gzip -c "$FIX/arxiv/arxiv-latex-cleaner/input/main.tex" >"$T/paper.saved"
timeout 20 sh -c 'cat "$1" >"$2"' sh "$T/paper.saved" "$T/paper.gz" &
wjob=$!
run timeout 20 "$SLUICE" extract --format arxiv --out "$T/o-arxiv" "$T/paper.gz"
wait $wjob || true
expect_rc 0
expect_eq "$(json "$T/o-arxiv/manifest.json" "m['counts']['documents_out']")" 1

# Start CMD reading FIFO first and BIG after it; once CMD has opened the FIFO (it has
# listed and planned its inputs), append 500 documents to BIG, then feed the FIFO.
append_during() {
    local fifo=$1 big=$2
    shift 2
    timeout 60 "$@" >"$T/out" 2>"$T/err" &
    local job=$!
    exec 8>"$fifo" # returns when the stage opens the FIFO to read it
    gen "$big" late 500
    cat "$T/fdata.jsonl" >&8
    exec 8>&-
    rc=0
    wait $job || rc=$?
}

case_ "an input appended to while filter runs: read up to its size in the plan"
gen "$T/big.jsonl" big 3000
cp "$T/big.jsonl" "$T/big0.jsonl"
mkfifo "$T/g.jsonl"
run timeout 60 "$SLUICE" filter --config "$ROOT/configs/filters/gopher.yaml" --out "$T/o-f0" \
    "$T/fdata.jsonl" "$T/big0.jsonl"
expect_rc 0
append_during "$T/g.jsonl" "$T/big.jsonl" \
    "$SLUICE" filter --config "$ROOT/configs/filters/gopher.yaml" --out "$T/o-f1" "$T/g.jsonl" "$T/big.jsonl"
expect_rc 0
expect_eq "$(docs_in "$T/o-f1")" "$(docs_in "$T/o-f0")"
expect_eq "$(json "$T/o-f1/manifest.json" "m['counts']['documents_out']")" \
          "$(json "$T/o-f0/manifest.json" "m['counts']['documents_out']")"

case_ "an input appended to while dedup fuzzy runs (paused reading --index-in): read up to its size in the plan"
gen "$T/old.jsonl" old 100
run timeout 60 "$SLUICE" dedup fuzzy --out "$T/o-z0" --index-out "$T/idx" "$T/old.jsonl"
expect_rc 0
mv "$T/idx/bands-00000.sldx.zst" "$T/bands"
mkfifo "$T/idx/bands-00000.sldx.zst"
cp "$T/big0.jsonl" "$T/big.jsonl"
# the FIFO is the index's band file (dedup fuzzy refuses FIFO inputs): the same pause
timeout 60 "$SLUICE" dedup fuzzy --out "$T/o-z1" --index-in "$T/idx" "$T/big.jsonl" >"$T/out" 2>"$T/err" &
zjob=$!
exec 8>"$T/idx/bands-00000.sldx.zst"
gen "$T/big.jsonl" late 500
cat "$T/bands" >&8
exec 8>&-
rc=0
wait $zjob || rc=$?
expect_rc 0
expect_eq "$(docs_in "$T/o-z1")" 3000

case_ "an unreadable input: named as such, with no --skip-corrupt hint"
cp "$T/big0.jsonl" "$T/locked.jsonl"
chmod 000 "$T/locked.jsonl"
# root reads anything: drop the capabilities that let it (setpriv), else run as is
deny=()
if [ "$(id -u)" -eq 0 ]; then
    if setpriv --bounding-set=-dac_override,-dac_read_search true 2>/dev/null &&
        ! setpriv --bounding-set=-dac_override,-dac_read_search cat "$T/locked.jsonl" >/dev/null 2>&1; then
        deny=(setpriv --bounding-set=-dac_override,-dac_read_search)
    else
        echo "skip: root cannot drop CAP_DAC_OVERRIDE here (setpriv)"
    fi
fi
if [ "$(id -u)" -ne 0 ] || [ ${#deny[@]} -gt 0 ]; then
    run timeout 20 "${deny[@]}" "$SLUICE" reshard --out "$T/o-locked" "$T/locked.jsonl"
    expect_rc 1
    expect_err "cannot read input '$T/locked.jsonl': Permission denied"
    expect_no_err "skip-corrupt"
fi

finish
