#!/usr/bin/env bash
# sluice extract: every WARC/ARC/WET test file (good ones fully, broken ones with a clear
# message), WET, -np 1 vs -np 2, arXiv tarballs, Pile/C4/JSONL, and bad input: a 200 MB
# record, a gzip bomb, invalid bytes in every charset, a .bz2 cut in half, an archive
# entry named ../../etc/passwd.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
W="$FIX/warc"

# docs FILE... : every output line is a JSON object with the uniform fields
check_docs() {
    python3 - "$@" <<'PY'
import json, sys, subprocess
n = 0
for p in sys.argv[1:]:
    for line in subprocess.run(["zstdcat", p], capture_output=True, check=True).stdout.decode("utf-8").splitlines():
        d = json.loads(line)
        assert isinstance(d["id"], str) and d["id"], d
        assert isinstance(d["text"], str) and d["text"], d["id"]
        assert isinstance(d.get("source"), str), d["id"]
        n += 1
print(n)
PY
}

case_ "every good WARC/ARC file is read fully"
for f in warcfile.warc.gz sample-0000.warc.gz whirlwind.warc.gz example.warc example.warc.gz example.arc \
         example.arc.gz example-iana.org-chunked.warc example-resource.warc.gz post-test.warc.gz \
         example-wget-bad-target-uri.warc.gz example-digest.warc block-sized-records.warc.gz \
         example-space-in-target-uri.warc.gz whirlwind.warc.wat.gz; do
    rm -rf "$T/o"
    run "$SLUICE" extract --format warc --out "$T/o" "$W/$f"
    [ "$rc" -eq 0 ] && ok || fail "$f: exit $rc"
    [ -s "$T/err" ] && ! grep -q "^sluice extract: warning" "$T/err" || grep -q "documents from" "$T/err" && ok || fail "$f: unexpected stderr"
done

case_ "the Common Crawl excerpt: 50 records, 16 HTML responses, 16 documents"
run "$SLUICE" extract --format warc --out "$T/cc" "$W/warcfile.warc.gz"
expect_rc 0
expect_eq "$(json "$T/cc/manifest.json" "m['counts']['documents_in']")" 50
expect_eq "$(json "$T/cc/manifest.json" "m['counts']['records_response']")" 16
# (a page whose main text is empty is counted as skipped_empty)
expect_eq "$(json "$T/cc/manifest.json" "m['counts']['documents_out'] + m['counts'].get('skipped_empty', 0)")" 16
expect_eq "$(check_docs "$T/cc/part-00000.jsonl.zst")" "$(json "$T/cc/manifest.json" "m['counts']['documents_out']")"
zstdcat "$T/cc/part-00000.jsonl.zst" | python3 -c "
import json, sys
docs = [json.loads(l) for l in sys.stdin]
d = [x for x in docs if x['url'] == 'http://01spb.ru/company/'][0]
assert d['charset'] == 'windows-1251' and 'пожарной' in d['text'], d['charset']
assert all(x['warc_record_id'].startswith('<urn:uuid:') and x['warc_date'].startswith('2020-08-08') for x in docs)
assert sum('中国' in x['text'] for x in docs) >= 2
print('ok')" > "$T/chk" || true; expect_eq "$(cat "$T/chk")" ok

case_ "wget quirk: <angle brackets> around the target URI are removed"
run "$SLUICE" extract --format warc --out "$T/wg" "$W/sample-0000.warc.gz"
expect_rc 0
zstdcat "$T/wg/part-00000.jsonl.zst" | python3 -c "
import json, sys
docs = [json.loads(l) for l in sys.stdin]
assert len(docs) == 22 and all(d['url'].startswith('https://') for d in docs), [d['url'] for d in docs][:3]
assert all(d.get('lang') == 'en' for d in docs if 'semanticscholar' in d['url'])
print('ok')" > "$T/chk" || true; expect_eq "$(cat "$T/chk")" ok

case_ "chunked transfer encoding is decoded (iana.org)"
run "$SLUICE" extract --format warc --out "$T/ch" "$W/example-iana.org-chunked.warc"
expect_rc 0
zstdcat "$T/ch/part-00000.jsonl.zst" | python3 -c "
import json, sys
d = json.loads(sys.stdin.readline())
assert 'DNS Root Zone' in d['text'], d['text'][:200]
assert '\r\n0\r\n' not in d['text']
print('ok')" > "$T/chk" || true; expect_eq "$(cat "$T/chk")" ok

case_ "broken files: clear messages, counted, no crash"
run "$SLUICE" extract --format warc --out "$T/b1" "$W/example-trunc.warc" "$W/example-wrong-chunks.warc.gz" \
    "$W/bad.arc" "$W/example-space-in-url.arc" "$W/example-bad-non-chunked.warc.gz" "$W/example-bad.warc.gz.bad"
expect_rc 0
expect_err "bad.arc"; expect_err "not a ARC record header"
expect_eq "$(json "$T/b1/manifest.json" "m['counts']['bad_records'] >= 1")" True
expect_eq "$(json "$T/b1/manifest.json" "m['counts']['skipped_incomplete'] >= 1")" True
run "$SLUICE" extract --format warc --out "$T/b2" "$W/clipped.warc.gz"
expect_rc 1; expect_err "truncated gzip stream"; expect_err "clipped.warc.gz"; expect_err "hint: use --skip-corrupt"
expect_no_file "$T/b2/part-00000.jsonl.zst"; expect_no_partials "$T/b2"
run "$SLUICE" extract --format warc --skip-corrupt --out "$T/b3" "$W/clipped.warc.gz"
expect_rc 0; expect_eq "$(json "$T/b3/manifest.json" "m['counts']['corrupt_files']")" 1
run "$SLUICE" extract --format warc --out "$T/b4" "$W/block-sized-records.warc.lz4"
expect_rc 1; expect_err "lz4 compression is not supported"

case_ "WET: conversion records become documents with their language"
run "$SLUICE" extract --format wet --out "$T/wet" "$W/whirlwind.warc.wet.gz"
expect_rc 0
zstdcat "$T/wet/part-00000.jsonl.zst" | python3 -c "
import json, sys
d = json.loads(sys.stdin.readline())
assert d['url'] == 'https://an.wikipedia.org/wiki/Escopete' and d['lang'] == 'es' and d['source'] == 'wet', d
assert d['text'].startswith('Escopete - Biquipedia') and d['warc_refers_to'].startswith('<urn:uuid:')
print('ok')" > "$T/chk" || true; expect_eq "$(cat "$T/chk")" ok

# ---- bad input made here --------------------------------------------------------------
python3 - "$T" <<'PY'
import gzip, sys, zlib, os, uuid
d = sys.argv[1]
def record(typ, uri, block, extra=""):
    h = ("WARC/1.1\r\nWARC-Type: %s\r\nWARC-Target-URI: %s\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
         "WARC-Record-ID: <urn:uuid:%s>\r\n%sContent-Type: application/http; msgtype=response\r\n"
         "Content-Length: %d\r\n\r\n" % (typ, uri, uuid.UUID(int=len(uri) * 7919 + len(block)), extra, len(block)))
    return h.encode() + block + b"\r\n\r\n"
def resp(body, headers="Content-Type: text/html\r\n"):
    return ("HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n" % (headers, len(body))).encode() + body
ok_page = resp(b"<html><body><p>A page after the big one.</p></body></html>")
# a 200 MB record, then a normal one (gzip per record, level 1: ~200 kB on disk)
with open(d + "/big.warc.gz", "wb") as f:
    big = resp(b"<html><body>" + b"a" * (200 << 20) + b"</body></html>")
    f.write(gzip.compress(record("response", "http://big.example/", big), 1))
    f.write(gzip.compress(record("response", "http://after.example/", ok_page)))
# a gzip bomb inside the HTTP body: 1 GiB of zeros behind Content-Encoding: gzip
co = zlib.compressobj(9, zlib.DEFLATED, 31)
bomb = b"".join(co.compress(b"\0" * (1 << 20)) for _ in range(1024)) + co.flush()
with open(d + "/bomb.warc.gz", "wb") as f:
    f.write(gzip.compress(record("response", "http://bomb.example/", resp(bomb, "Content-Type: text/html\r\nContent-Encoding: gzip\r\n"))))
    f.write(gzip.compress(record("response", "http://after.example/", ok_page)))
# invalid bytes in every charset we know
labels = ["utf-8", "windows-1252", "iso-8859-2", "iso-8859-5", "iso-8859-7", "windows-1250", "windows-1251",
          "windows-1253", "windows-1254", "windows-1255", "windows-1256", "windows-1257", "windows-1258",
          "windows-874", "koi8-r", "koi8-u", "ibm866", "macintosh", "gb18030", "gbk", "gb2312", "big5",
          "shift_jis", "euc-jp", "iso-2022-jp", "euc-kr", "utf-16le", "utf-16be", "x-unknown-charset"]
bad = bytes(range(0x80, 0x100)) + b"\xff\xfe\x00\xd8\x1b$B\x1b(\x8e\xa1\xa1\x81\x30\x81\xfe\xc0\xaf\xed\xa0\x80"
with open(d + "/charsets.warc", "wb") as f:
    for i, l in enumerate(labels):
        body = b"<html><body><p>charset " + l.encode() + b" </p>" + bad + b"<p>end</p></body></html>"
        f.write(record("response", "http://cs.example/%d" % i, resp(body, "Content-Type: text/html; charset=%s\r\n" % l)))
    # no declaration at all: detection
    for i in range(4):
        f.write(record("response", "http://nodecl.example/%d" % i, resp(b"<html><body>" + bad[i * 40:] + b"</body></html>", "")))
# a .bz2 cut in half
import bz2
data = open(os.path.join(d, "charsets.warc"), "rb").read()
z = bz2.compress(data * 20)
open(d + "/cut.warc.bz2", "wb").write(z[: len(z) // 2])
lines = "".join('{"text": "line %d %s"}\n' % (i, "w" * 50) for i in range(20000)).encode()
z = bz2.compress(lines, 1)
open(d + "/cut.jsonl.bz2", "wb").write(z[: len(z) // 2])
PY

case_ "a 200 MB record is skipped as too large (bounded memory); the next record is read"
run "$SLUICE" extract --format warc --out "$T/big" "$T/big.warc.gz"
expect_rc 0
expect_eq "$(json "$T/big/manifest.json" "m['counts']['skipped_too_large']")" 1
expect_eq "$(json "$T/big/manifest.json" "m['counts']['documents_out']")" 1

case_ "a gzip bomb in an HTTP body stops at the per-record cap"
run "$SLUICE" extract --format warc --max-record 16M --out "$T/bomb" "$T/bomb.warc.gz"
expect_rc 0
expect_eq "$(json "$T/bomb/manifest.json" "m['counts']['skipped_too_large']")" 1
expect_eq "$(json "$T/bomb/manifest.json" "m['counts']['documents_out']")" 1

case_ "invalid bytes in every charset: valid UTF-8 out, U+FFFD where needed, no crash"
run "$SLUICE" extract --format warc --out "$T/cs" "$T/charsets.warc"
expect_rc 0
expect_eq "$(json "$T/cs/manifest.json" "m['counts']['documents_out']")" 33
zstdcat "$T/cs/part-00000.jsonl.zst" | python3 -c "
import json, sys
raw = sys.stdin.buffer.read(); raw.decode('utf-8')  # strict: must be valid UTF-8
docs = [json.loads(l) for l in raw.splitlines()]
assert sum('\ufffd' in d['text'] for d in docs) >= 20
assert all(d['text'].endswith('end') for d in docs if 'cs.example' in d['url'] and 'utf-16' not in d['charset'])
print('ok')" > "$T/chk" || true; expect_eq "$(cat "$T/chk")" ok

case_ "a .bz2 cut in half: a clear error (or its readable part with --skip-corrupt)"
run "$SLUICE" extract --format warc --out "$T/cut" "$T/cut.warc.bz2"
expect_rc 1; expect_err "cut.warc.bz2"; expect_err "bzip2"
expect_no_file "$T/cut/part-00000.jsonl.zst"
run "$SLUICE" extract --format jsonl --out "$T/cutj" "$T/cut.jsonl.bz2"
expect_rc 1; expect_err "cut.jsonl.bz2"
run "$SLUICE" extract --format jsonl --skip-corrupt --out "$T/cutj2" "$T/cut.jsonl.bz2"
expect_rc 0; expect_eq "$(json "$T/cutj2/manifest.json" "m['counts']['corrupt_files']")" 1
expect_eq "$(json "$T/cutj2/manifest.json" "0 < m['counts']['documents_out'] < 20000")" True

# ---- MPI ------------------------------------------------------------------------------
mkdir -p "$T/mix"
cp "$W/warcfile.warc.gz" "$W/sample-0000.warc.gz" "$W/whirlwind.warc.gz" "$W/example.warc.gz" "$W/post-test.warc.gz" "$T/mix/"
if have_mpi; then
    case_ "mpirun -np 1 and -np 2 write the same documents and counts"
    run "${MPIRUN[@]}" -np 1 "$SLUICE" extract --format warc --out "$T/m1" "$T/mix"
    expect_rc 0
    run "${MPIRUN[@]}" -np 2 "$SLUICE" extract --format warc --out "$T/m2" "$T/mix"
    expect_rc 0
    for f in "$T"/m1/part-*.jsonl.zst; do
        cmp -s <(zstdcat "$f") <(zstdcat "$T/m2/$(basename "$f")") && ok || fail "$(basename "$f") differs"
    done
    expect_eq "$(json "$T/m2/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
              "$(json "$T/m1/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
fi

case_ "re-running resumes; -h matches the docs"
run "$SLUICE" extract --format warc --out "$T/cc" "$W/warcfile.warc.gz"
expect_rc 0; expect_err "(resumed)"
run "$SLUICE" extract -h
expect_rc 0; expect_out "--format"; expect_out "--rm-inputs"
run "$SLUICE" extract --out "$T/u" x
expect_rc 2; expect_err "--format is required"
run "$SLUICE" extract --format html5 --out "$T/u" x
expect_rc 2

# ---- arXiv ----------------------------------------------------------------------------
A="$FIX/arxiv"
mkdir -p "$T/ax/bulk" "$T/ax/evil/sub"
tar czf "$T/ax/bulk/1907.10121.tar.gz" -C "$A/scipy" .
gzip -c "$A/arxiv-latex-cleaner/input/main.tex" > "$T/ax/bulk/2101.00001.gz"
printf '%%PDF-1.4 not latex' | gzip > "$T/ax/bulk/2101.00002.gz"
tar cf "$T/ax/arXiv_src_2101_001.tar" -C "$T/ax/bulk" .
python3 - "$T/ax/evil.tar.gz" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w:gz") as t:
    def add(name, data):
        ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    add("main.tex", b"\\documentclass{article}\n\\begin{document}\n\\section{Intro}\nSafe text.\n\\input{../../etc/passwd}\n\\end{document}\n")
    add("../../etc/passwd", b"root:x:0:0:evil:/root:/bin/sh\n")
PY
passwd_before=$(stat -c %Y.%s /etc/passwd)

case_ "arXiv: a bulk tar of per-paper .gz/.tar.gz files, one document per paper"
run "$SLUICE" extract --format arxiv --out "$T/ao" "$T/ax/arXiv_src_2101_001.tar"
expect_rc 0
expect_eq "$(json "$T/ao/manifest.json" "m['counts']['documents_out']")" 2
expect_eq "$(json "$T/ao/manifest.json" "m['counts']['skipped_pdf_only']")" 1
zstdcat "$T/ao/part-00000.jsonl.zst" | python3 -c "
import json, sys
docs = {d['arxiv_id']: d for d in map(json.loads, sys.stdin)}
s = docs['1907.10121']
t = s['text']
assert s['url'] == 'https://arxiv.org/abs/1907.10121' and s['source'] == 'arxiv' and s['main_file'] == 'paper.tex'
assert t.startswith('\\\\section'), t[:80]                # from the first section
assert '\\\\documentclass' not in t and '\\\\bibliography{' not in t
assert '\\\\input{' not in t                              # inputs resolved ...
assert 'cKDTree' in t and 'Nelder' in t                   # ... with their text
assert '\n%' not in t                                     # no whole-line comments
assert '\\\\newcommand' not in t
c = docs['2101.00001']['text']
assert 'Whole line comment' not in c and 'Inline comment' not in c and 'Text%' in c
assert 'This is a percent \\\\%.' in c and 'environment comment' not in c
assert 'I shall be gone' not in c and 'Expect me (else block of iffalse)!' in c
print('ok')" > "$T/chk" 2>&1 || true; expect_eq "$(cat "$T/chk")" ok

case_ "arXiv: an entry named ../../etc/passwd is only a key in memory"
run "$SLUICE" extract --format arxiv --out "$T/ae" "$T/ax/evil.tar.gz"
expect_rc 0; expect_err "points outside"
expect_eq "$(json "$T/ae/manifest.json" "m['counts']['unsafe_entry_names']")" 1
expect_eq "$(stat -c %Y.%s /etc/passwd)" "$passwd_before"
expect_eq "$(find "$T" -name passwd | wc -l)" 0
zstdcat "$T/ae/part-00000.jsonl.zst" | grep -q "Safe text" && ok || fail "paper text missing"

# ---- Pile, C4, JSONL ------------------------------------------------------------------
python3 - "$T/js" <<'PY'
import gzip, json, os, sys
d = sys.argv[1]; os.makedirs(d)
with open(d + "/00.jsonl", "w") as f:
    for i, s in enumerate(["Pile-CC", "ArXiv", "Github"]):
        f.write(json.dumps({"text": "pile doc %d" % i, "meta": {"pile_set_name": s}}) + "\n")
    f.write(json.dumps({"text": "no set", "meta": {}}) + "\n")
with gzip.open(d + "/c4-de.tfrecord-00000-of-01024.json.gz", "wt") as f:
    f.write(json.dumps({"text": "Hallo Welt", "timestamp": "2019-04-25T12:57:54Z", "url": "https://example.de/"}) + "\n")
with gzip.open(d + "/c4-train.00000-of-01024.json.gz", "wt") as f:
    f.write(json.dumps({"text": "Hello", "timestamp": "2019-04-25T12:57:54Z", "url": "https://example.com/"}) + "\n")
with open(d + "/generic.jsonl", "w") as f:
    f.write('{"body": "generic text", "url": "u", "extra": [1, 2.50]}\n')
PY
zstd -q "$T/js/00.jsonl" -o "$T/js/00.jsonl.zst"

case_ "pile: meta.pile_set_name becomes source"
run "$SLUICE" extract --format pile --out "$T/po" "$T/js/00.jsonl.zst" "$FIX/jsonl/blns.jsonl.zst"
expect_rc 0
expect_eq "$(zstdcat "$T/po/part-00000.jsonl.zst" | python3 -c "import json,sys; print([json.loads(l)['source'] for l in sys.stdin])")" \
          "['Pile-CC', 'ArXiv', 'Github', 'pile']"
expect_eq "$(json "$T/po/manifest.json" "m['counts']['documents_out']")" 7
expect_eq "$(json "$T/po/manifest.json" "m['counts']['skipped_text_not_string']")" 1

case_ "c4/mC4: lang from the file name; fields pass through"
run "$SLUICE" extract --format c4 --out "$T/c4" "$T/js/c4-de.tfrecord-00000-of-01024.json.gz" "$T/js/c4-train.00000-of-01024.json.gz"
expect_rc 0
expect_eq "$(zstdcat "$T/c4/part-00000.jsonl.zst" | python3 -c "import json,sys; d=json.loads(sys.stdin.readline()); print(d['lang'], d['source'], d['url'], d['timestamp'], d['id'])")" \
          "de mc4 https://example.de/ 2019-04-25T12:57:54Z c4-de.tfrecord-00000-of-01024:1"
expect_eq "$(zstdcat "$T/c4/part-00001.jsonl.zst" | python3 -c "import json,sys; d=json.loads(sys.stdin.readline()); print(d['lang'], d['source'])")" "en c4"

case_ "jsonl: --text-key moves the text to 'text'; other members byte for byte"
run "$SLUICE" extract --format jsonl --text-key body --source mine --out "$T/jo" "$T/js/generic.jsonl"
expect_rc 0
line=$(zstdcat "$T/jo/part-00000.jsonl.zst")
expect_eq "$(echo "$line" | python3 -c "import json,sys; d=json.loads(sys.stdin.readline()); print(d['text'], d['source'], 'body' in d)")" "generic text mine False"
case "$line" in *'"extra":[1, 2.50]'*) ok ;; *) fail "extra not byte for byte: $line" ;; esac

case_ "libxml2 and libarchive are loaded by the extractors that use them: other commands start without them"
LD_DEBUG=files "$SLUICE" --version >/dev/null 2>"$T/ld.log"
grep -q "file=libzstd" "$T/ld.log" && ok || fail "LD_DEBUG shows no library loads"
for lib in libxml2 libarchive libicuuc; do
    grep -q "file=$lib" "$T/ld.log" && fail "sluice --version loaded $lib" || ok
done
LD_DEBUG=files "$SLUICE" extract --format warc --out "$T/ldw" "$W/warcfile.warc.gz" >/dev/null 2>"$T/ld.log"
grep -q "file=libxml2" "$T/ld.log" && ok || fail "extracting HTML did not load libxml2"
grep -q "file=libarchive" "$T/ld.log" && fail "extracting WARC loaded libarchive" || ok
expect_eq "$(json "$T/ldw/manifest.json" "m['counts']['documents_out']")" "$(json "$T/cc/manifest.json" "m['counts']['documents_out']")"
LD_DEBUG=files "$SLUICE" extract --format arxiv --out "$T/lda" "$T/ax/arXiv_src_2101_001.tar" >/dev/null 2>"$T/ld.log"
grep -q "file=libarchive" "$T/ld.log" && ok || fail "extracting arXiv did not load libarchive"
expect_eq "$(json "$T/lda/manifest.json" "m['counts']['documents_out']")" 2

case_ "every option of -h is in docs/commands/extract.md"
for opt in $("$SLUICE" extract -h | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$opt" "$ROOT/docs/commands/extract.md" && ok || fail "$opt missing from docs/commands/extract.md"
done

case_ "one list of formats: --format's choices, the usage text's list, the docs' table and the readers"
run "$SLUICE" extract -h
expect_rc 0
choices=$(sed -n 's/^ *-f, --format \([a-z0-9|]*\)$/\1/p' "$T/out" | tr '|' ' ')
listed=$(sed -n 's/^  \([a-z0-9][a-z0-9]*\)  *[^ -].*/\1/p' "$T/out" | tr '\n' ' ')
documented=$(sed -n 's/^| `-f, --format F` | required | \(.*\) |$/\1/p' "$ROOT/docs/commands/extract.md" |
    tr -d '`,')
expect_eq "$(echo $choices)" "$(echo $listed)" "(choices / usage list)"
expect_eq "$(echo $choices)" "$(echo $documented)" "(choices / docs/commands/extract.md)"
[ "$(echo $choices | wc -w)" -ge 8 ] && ok || fail "too few formats: '$choices'"
for f in $choices; do
    run "$SLUICE" extract --format "$f" --out "$T/fmt-$f" "$T/no-such-input"
    expect_no_err "not available"
    expect_err "no-such-input"
done

finish
