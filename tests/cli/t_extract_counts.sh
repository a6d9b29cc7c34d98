#!/usr/bin/env bash
# sluice extract keeps every record it can and counts every other one under a named reason:
# for every reader and every broken file, documents_in = documents_out + sum(skipped_*).
# WARC resync after garbage, a cut Wikipedia dump, binary arXiv entries, damaged zstd
# frames, the Pile's source with a NUL, --max-record and bytes_in for html and wiki, and a
# resumed run that finds a damaged shard.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
W="$FIX/warc"

# sums DIR: "ok" when the manifest's counts add up, else the counts
sums() {
    python3 - "$1/manifest.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["counts"]
skipped = sum(v for k, v in c.items() if k.startswith("skipped_"))
print("ok" if c["documents_in"] == c["documents_out"] + skipped else json.dumps(c, sort_keys=True))
PY
}

python3 - "$T" <<'PY'
import sys, uuid
d = sys.argv[1]
def record(uri, body, clen=None):
    block = ("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body)).encode() + body
    h = ("WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: %s\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
         "WARC-Record-ID: <urn:uuid:%s>\r\nContent-Type: application/http; msgtype=response\r\n"
         "Content-Length: %s\r\n\r\n" % (uri, uuid.UUID(int=sum(map(ord, uri))), clen if clen is not None else len(block)))
    return h.encode() + block + b"\r\n\r\n"
def page(i):
    return b"<html><body><p>Page number %d has a paragraph of text that is long enough to keep.</p></body></html>" % i
with open(d + "/resync.warc", "wb") as f:
    f.write(record("http://a.example/1", page(1)))
    f.write(b"GARBAGE-without-newline")                 # no newline before the next record
    f.write(record("http://a.example/2", page(2)))
    f.write(b"more garbage\r\n" + b"\0" * 37)          # CRLF + NUL padding
    f.write(record("http://a.example/3", page(3)))
    f.write(b"\0\0\0junk WARC/1.x is no header\r\nWARC/1.0 ")
    f.write(record("http://a.example/4", page(4)))
with open(d + "/absurd.warc", "wb") as f:
    f.write(record("http://b.example/1", page(1)))
    f.write(record("http://b.example/2", page(2), clen="99999999999999999999999"))
    f.write(record("http://b.example/3", page(3)))
    f.write(record("http://b.example/4", page(4), clen="4000000000"))
PY

case_ "WARC: garbage without a newline, or with CRLF + NUL padding, swallows no record"
run "$SLUICE" extract --format warc --out "$T/rs" "$T/resync.warc"
expect_rc 0
expect_eq "$(json "$T/rs/manifest.json" "m['counts']['documents_out']")" 4
expect_eq "$(json "$T/rs/manifest.json" "m['counts']['bad_records']")" 3
expect_eq "$(zstdcat "$T/rs/part-00000.jsonl.zst" | python3 -c "import json,sys; print(' '.join(json.loads(l)['url'][-1] for l in sys.stdin))")" "1 2 3 4"
expect_err "resync.warc: decompressed byte 406: not a WARC record header; skipped 23 bytes"

case_ "ARC: garbage + CRLF + NUL padding before a record swallows no record"
python3 - "$W/example.arc" "$T/pad.arc" <<'PY'
import sys
arc = open(sys.argv[1], "rb").read()
i = arc.index(b"\nhttp://", 10) + 1
open(sys.argv[2], "wb").write(arc[:i] + b"garbage\r\n" + b"\0" * 20 + arc[i:])
PY
run "$SLUICE" extract --format warc --out "$T/pad" "$T/pad.arc"
expect_rc 0
expect_eq "$(json "$T/pad/manifest.json" "(m['counts']['documents_out'], m['counts']['bad_records'])")" "(1, 1)"
expect_eq "$(sums "$T/pad")" ok

case_ "WARC: an absurd Content-Length is one bad record, counted once"
run "$SLUICE" extract --format warc --out "$T/ab" "$T/absurd.warc"
expect_rc 0
expect_eq "$(json "$T/ab/manifest.json" "m['counts']['documents_in']")" 4
expect_eq "$(json "$T/ab/manifest.json" "m['counts']['documents_out']")" 2
expect_eq "$(json "$T/ab/manifest.json" "m['counts']['skipped_bad_header']")" 1
expect_eq "$(json "$T/ab/manifest.json" "m['counts']['skipped_too_large']")" 1
expect_eq "$(json "$T/ab/manifest.json" "m['counts'].get('skipped_incomplete', 0)")" 0
expect_eq "$(sums "$T/ab")" ok

# ---- Wikipedia ------------------------------------------------------------------------
python3 - "$T" <<'PY'
import bz2, sys
d = sys.argv[1]
head = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">\n'
        '<siteinfo><sitename>Wikipedia</sitename><dbname>enwiki</dbname>'
        '<base>https://en.wikipedia.org/wiki/Main_Page</base></siteinfo>\n')
def dump(n):
    pages = "".join(
        '<page><title>Page %d</title><ns>0</ns><id>%d</id><revision><id>%d</id>'
        '<timestamp>2020-01-01T00:00:00Z</timestamp><text xml:space="preserve">Article %d: %s</text>'
        '</revision></page>\n' % (i, i, i, i, " ".join("w%d" % (i * 7 + k) for k in range(40)))
        for i in range(1, n + 1))
    return (head + pages + "</mediawiki>\n").encode()
data = dump(2000)
open(d + "/cut.xml", "wb").write(data[: data.rfind(b"<page>") + 60])   # cut inside page 2000
big = dump(8000)
z = bz2.compress(big)
open(d + "/cut.xml.bz2", "wb").write(z[: len(z) * 3 // 4])             # cut inside a bzip2 block
PY

case_ "wiki: a dump cut inside its last page names the cut; --skip-corrupt keeps the 1999 complete pages"
run "$SLUICE" extract --format wiki --out "$T/w1" "$T/cut.xml"
expect_rc 1
expect_err "'$T/cut.xml' is cut short: the XML ends at decompressed byte"
expect_err "inside a page, before the end tag of <mediawiki>; the last complete page ends at byte"
expect_no_err "Extra content"
run "$SLUICE" extract --format wiki --skip-corrupt --out "$T/w2" "$T/cut.xml"
expect_rc 0
expect_eq "$(json "$T/w2/manifest.json" "m['counts']['documents_out']")" 1999
expect_eq "$(json "$T/w2/manifest.json" "m['counts']['skipped_incomplete']")" 1
expect_eq "$(json "$T/w2/manifest.json" "m['counts']['documents_in']")" 2000
expect_eq "$(zstdcat "$T/w2/part-00000.jsonl.zst" | python3 -c "import json,sys; ids=[int(json.loads(l)['id']) for l in sys.stdin]; print(ids == list(range(1, 2000)))")" True
expect_eq "$(json "$T/w2/manifest.json" "m['counts']['bytes_in'] > 400000")" True

case_ "wiki: a .bz2 cut inside a block keeps every page of the complete blocks, in order"
run "$SLUICE" extract --format wiki --skip-corrupt --out "$T/w3" "$T/cut.xml.bz2"
expect_rc 0
n=$(json "$T/w3/manifest.json" "m['counts']['documents_out']")
[ "$n" -gt 1000 ] && [ "$n" -lt 8000 ] && ok || fail "kept $n pages"
expect_eq "$(zstdcat "$T/w3/part-00000.jsonl.zst" | python3 -c "import json,sys; ids=[int(json.loads(l)['id']) for l in sys.stdin]; print(ids == list(range(1, len(ids) + 1)))")" True
expect_eq "$(sums "$T/w3")" ok

# ---- arXiv ----------------------------------------------------------------------------
mkdir -p "$T/axb/bulk"
gzip -c "$FIX/arxiv/arxiv-latex-cleaner/input/main.tex" > "$T/axb/bulk/2101.00001.gz"
python3 - "$T/axb" <<'PY'
import gzip, io, os, random, sys, tarfile
d = sys.argv[1]
random.seed(7)
with tarfile.open(d + "/junk.tar", "w") as t:
    t.add(d + "/bulk/2101.00001.gz", arcname="2101.00001.gz")
    for i in range(2000):   # one-byte entries: binary bytes and letters
        data = bytes([random.randrange(256)])
        ti = tarfile.TarInfo("junk/%05d" % i); ti.size = 1; t.addfile(ti, io.BytesIO(data))
    ti = tarfile.TarInfo("junk/elf"); blob = b"\x7fELF\x02\x01\x01" + bytes(random.randrange(256) for _ in range(4000))
    ti.size = len(blob); t.addfile(ti, io.BytesIO(blob))
# a bulk tar cut inside an entry
with tarfile.open(d + "/big.tar", "w") as t:
    for i in range(40):
        text = gzip.compress(("\\section{Paper %d}\n" % i + " ".join("w%d" % random.randrange(10**9) for _ in range(3000))).encode())
        ti = tarfile.TarInfo("2101.%05d.gz" % i); ti.size = len(text); t.addfile(ti, io.BytesIO(text))
data = open(d + "/big.tar", "rb").read()
open(d + "/cut.tar", "wb").write(data[: len(data) * 2 // 3])
PY

case_ "arXiv: binary and non-LaTeX entries are skipped and counted, not made documents"
run "$SLUICE" extract --format arxiv --out "$T/axo" "$T/axb/junk.tar"
expect_rc 0
expect_eq "$(json "$T/axo/manifest.json" "m['counts']['documents_out']")" 1
expect_eq "$(json "$T/axo/manifest.json" "m['counts']['documents_in']")" 2002
expect_eq "$(json "$T/axo/manifest.json" "m['counts']['skipped_binary'] > 1000 and m['counts']['skipped_not_latex'] > 0")" True
expect_eq "$(sums "$T/axo")" ok

case_ "arXiv: a cut archive: one message with its reason; the cut paper is counted"
run "$SLUICE" extract --format arxiv --out "$T/axc" "$T/axb/cut.tar"
expect_rc 1
expect_eq "$(grep -o "corrupt archive" "$T/err" | wc -l)" 1
expect_err "Truncated tar archive"
run "$SLUICE" extract --format arxiv --skip-corrupt --out "$T/axc2" "$T/axb/cut.tar"
expect_rc 0
expect_eq "$(grep -o "corrupt archive" "$T/err" | wc -l)" 1
expect_eq "$(json "$T/axc2/manifest.json" "m['counts']['skipped_incomplete']")" 1
expect_eq "$(sums "$T/axc2")" ok

# ---- Pile, HTML -----------------------------------------------------------------------
case_ "pile: a set name with \\u0000 is kept whole"
printf '{"text":"t","meta":{"pile_set_name":"Pile\\u0000CC"}}\n' > "$T/nul.jsonl"
run "$SLUICE" extract --format pile --out "$T/nul" "$T/nul.jsonl"
expect_rc 0
expect_eq "$(zstdcat "$T/nul/part-00000.jsonl.zst" | python3 -c "import json,sys; print(repr(json.loads(sys.stdin.readline())['source']))")" "'Pile\\x00CC'"

case_ "html: --max-record is the page cap (no fixed 128 MiB), bytes_in is counted"
mkdir -p "$T/hp" "$T/hb"
python3 - "$T" <<'PY'
import gzip, sys
d = sys.argv[1]
open(d + "/hp/big.html", "w").write("<html><body><p>" + "word " * 400000 + "</p></body></html>")
open(d + "/hp/small.html", "w").write("<html><body><p>A small page with text in it.</p></body></html>")
with gzip.open(d + "/hb/huge.html.gz", "wt", compresslevel=1) as f:   # 131 MB decoded
    f.write("<html><body>")
    for i in range(130000):
        f.write("<p>" + "word " * 200 + "</p>\n")
    f.write("</body></html>")
PY
run "$SLUICE" extract --format html --out "$T/ho" "$T/hp"
expect_rc 0
expect_eq "$(json "$T/ho/manifest.json" "m['counts']['bytes_in']")" "$(cat "$T"/hp/*.html | wc -c)"
run "$SLUICE" extract --format html --max-record 1M --out "$T/ho1" "$T/hp"
expect_rc 0
expect_eq "$(json "$T/ho1/manifest.json" "m['counts']['skipped_too_large']")" 1
expect_eq "$(json "$T/ho1/manifest.json" "m['counts']['documents_out']")" 1
run "$SLUICE" extract --format html --max-record 256M --out "$T/ho2" "$T/hb"
expect_rc 0
expect_eq "$(json "$T/ho2/manifest.json" "m['counts']['documents_out']")" 1


# ---- the rule, on every file we have ---------------------------------------------------
case_ "every fixture (the broken ones from shared/data included): documents_in = documents_out + sum(skipped_*)"
# (lz4 is refused whole: no record of it is read)
for f in "$W"/*; do
    case "$f" in *.md|*.lz4) continue ;; esac
    fmt=warc; case "$f" in *.wet.gz) fmt=wet ;; esac
    rm -rf "$T/all"
    run "$SLUICE" extract --format "$fmt" --skip-corrupt --out "$T/all" "$f"
    [ "$rc" -eq 0 ] && ok || fail "$(basename "$f"): exit $rc"
    r=$(sums "$T/all"); [ "$r" = ok ] && ok || fail "$(basename "$f"): $r"
done
for f in "$FIX"/wiki/*.xml*; do
    rm -rf "$T/all"
    run "$SLUICE" extract --format wiki --skip-corrupt --out "$T/all" "$f"
    [ "$rc" -eq 0 ] && ok || fail "$(basename "$f"): exit $rc"
    r=$(sums "$T/all"); [ "$r" = ok ] && ok || fail "$(basename "$f"): $r"
done
for f in "$FIX"/jsonl/*.jsonl.*; do
    for fmt in jsonl pile; do
        rm -rf "$T/all"
        run "$SLUICE" extract --format $fmt --skip-corrupt --out "$T/all" "$f"
        [ "$rc" -eq 0 ] && ok || fail "$(basename "$f") $fmt: exit $rc"
        r=$(sums "$T/all"); [ "$r" = ok ] && ok || fail "$(basename "$f") $fmt: $r"
    done
done
rm -rf "$T/all"
run "$SLUICE" extract --format html --skip-corrupt --out "$T/all" "$FIX/html"
expect_rc 0; expect_eq "$(sums "$T/all")" ok
mkdir -p "$T/ax-all"; tar czf "$T/ax-all/scipy.tar.gz" -C "$FIX/arxiv/scipy" .
rm -rf "$T/all"
run "$SLUICE" extract --format arxiv --skip-corrupt --out "$T/all" "$T/ax-all" "$T/axb"
expect_rc 0; expect_eq "$(sums "$T/all")" ok
for d in rs ab w2 w3 axo axc2; do expect_eq "$(sums "$T/$d")" ok; done


case_ "a full output disk: the hint says to free space, not --skip-corrupt"
mkdir -p "$T/mnt"
if unshare -r -m true 2>/dev/null; then
    run unshare -r -m sh -c 'mount -t tmpfs -o size=20k tmpfs "$1" && exec "$2" extract --format warc --out "$1/o" "$3"' \
        sh "$T/mnt" "$SLUICE" "$W/sample-0000.warc.gz"
    expect_rc 1
    expect_err "No space left on device"
    expect_err "hint: the output disk is full: free space"
    expect_no_err "--skip-corrupt"
fi

case_ "a resumed run redoes a shard that was cut or changed after its record was written"
mkdir -p "$T/rin"; cp "$W/warcfile.warc.gz" "$W/example.warc.gz" "$T/rin/"
run "$SLUICE" extract --format warc --out "$T/re" "$T/rin"
expect_rc 0
zstdcat "$T"/re/part-*.jsonl.zst | md5sum > "$T/re.sum"
size=$(stat -c %s "$T/re/part-00001.jsonl.zst")
truncate -s $((size / 2)) "$T/re/part-00001.jsonl.zst"
run "$SLUICE" extract --format warc --out "$T/re" "$T/rin"
expect_rc 0; expect_err "(resumed)"
expect_eq "$(zstdcat "$T"/re/part-*.jsonl.zst | md5sum)" "$(cat "$T/re.sum")"
expect_eq "$(json "$T/re/manifest.json" "m['counts']['resume_redone_units']")" 1
# same size, other bytes
printf 'X' | dd of="$T/re/part-00000.jsonl.zst" bs=1 seek=100 conv=notrunc status=none
run "$SLUICE" extract --format warc --out "$T/re" "$T/rin"
expect_rc 0
expect_eq "$(zstdcat "$T"/re/part-*.jsonl.zst | md5sum)" "$(cat "$T/re.sum")"
expect_eq "$(json "$T/re/manifest.json" "m['counts']['resume_redone_units']")" 2
# an untouched directory is not redone
run "$SLUICE" extract --format warc --out "$T/re" "$T/rin"
expect_rc 0
expect_eq "$(json "$T/re/manifest.json" "m['counts']['resume_redone_units']")" 2

finish
