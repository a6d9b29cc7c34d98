#!/usr/bin/env bash
# sluice download against a real HTTP server on 127.0.0.1 that injects failures: a
# connection dropped mid-file (resumed with Range), 503 then success, a server that
# ignores Range, a wrong checksum, a 404; a stale partial file of a changed resource
# (If-Range), a server that trickles bytes, schemes other than http(s) (also redirected),
# files without a checksum entry, 300,000 URLs; URL templates; MPI ranks; the manifest and
# extract --rm-inputs. Servers that lie: a 206 to a plain GET, an empty 200 to a resume, a
# short range, a range from elsewhere, another version behind a 206, a malformed
# Content-Range, oversized response heads; secrets in URLs kept out of messages and manifests.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/www"
python3 - "$T/www" <<'PY'
import os, random, sys, json
random.seed(3)
d = sys.argv[1]
for i in range(8):
    with open("%s/shard-%02d.jsonl" % (d, i), "w") as f:
        for k in range(200 + 50 * i):
            f.write(json.dumps({"text": "file %d doc %d " % (i, k) + "x" * random.randint(1, 400)}) + "\n")
with open(d + "/big.bin", "wb") as f:
    f.write(os.urandom(3 << 20))
# lie.bin, and lie.bin.new: the same file's next version, a second older by its mtime
for name in ("lie.bin", "lie.bin.new"):
    with open(d + "/" + name, "wb") as f:
        f.write(random.randbytes(200000))
os.utime(d + "/lie.bin", (1577836800, 1577836800))
PY
(cd "$T/www" && sha256sum shard-00.jsonl big.bin > ../sums.sha256 && md5sum shard-01.jsonl >> ../sums.sha256)

python3 "$(dirname "$0")/helpers/http_server.py" "$T/www" "$T/port" "$T/log" 150 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
port=$(cat "$T/port")
B="http://127.0.0.1:$port"
DL=(--retry-wait 0.05)

case_ "--url: a plain download, verified with a sha256 list; manifest written"
run "$SLUICE" download --out "$T/d1" "${DL[@]}" --checksums "$T/sums.sha256" --url "$B/files/shard-00.jsonl"
expect_rc 0
cmp -s "$T/www/shard-00.jsonl" "$T/d1/shard-00.jsonl" && ok || fail "content differs"
expect_eq "$(json "$T/d1/manifest.json" "m['stage']")" download
expect_eq "$(json "$T/d1/manifest.json" "[o['path'] for o in m['outputs']]")" "['shard-00.jsonl']"
expect_eq "$(json "$T/d1/manifest.json" "m['counts']['files_verified']")" 1
expect_no_file "$T/d1/.shard-00.jsonl.part"

case_ "a connection dropped mid-file is resumed with Range; the result is whole"
: > "$T/log"
run "$SLUICE" download --out "$T/d2" "${DL[@]}" --checksums "$T/sums.sha256" --url "$B/drop/big.bin"
expect_rc 0
cmp -s "$T/www/big.bin" "$T/d2/big.bin" && ok || fail "resumed file differs"
grep -q "GET /drop/big.bin bytes=[1-9][0-9]*- 206" "$T/log" && ok || fail "no Range request after the drop: $(cat "$T/log")"
grep -q 'GET /drop/big.bin bytes=[1-9][0-9]*- 206 "' "$T/log" && ok || fail "no If-Range with the ETag: $(cat "$T/log")"
expect_no_file "$T/d2/.big.bin.part.validator"
expect_err "retry 1"
expect_eq "$(json "$T/d2/manifest.json" "m['counts']['files_resumed']")" 1

case_ "503 then success: retried with backoff"
run "$SLUICE" download --out "$T/d3" "${DL[@]}" --url "$B/flaky/shard-02.jsonl"
expect_rc 0; expect_err "HTTP 503"
cmp -s "$T/www/shard-02.jsonl" "$T/d3/shard-02.jsonl" && ok || fail "content differs"
expect_eq "$(json "$T/d3/manifest.json" "m['counts']['retries']")" 2

case_ "a server that ignores Range: the partial file is started over, not corrupted"
run "$SLUICE" download --out "$T/d4" "${DL[@]}" --url "$B/norange/shard-03.jsonl"
expect_rc 0
cmp -s "$T/www/shard-03.jsonl" "$T/d4/shard-03.jsonl" && ok || fail "content differs"

case_ "wrong checksum: exit 1, nothing under the final name, no partial kept"
printf '%s  shard-04.jsonl\n' "$(printf 0%.0s $(seq 64))" > "$T/bad.sha256"
run "$SLUICE" download --out "$T/d5" "${DL[@]}" --checksums "$T/bad.sha256" --url "$B/files/shard-04.jsonl"
expect_rc 1; expect_err "checksum mismatch for 'shard-04.jsonl'"
expect_no_file "$T/d5/shard-04.jsonl"; expect_no_file "$T/d5/.shard-04.jsonl.part"
expect_no_file "$T/d5/manifest.json"

case_ "md5 lines are understood"
run "$SLUICE" download --out "$T/d5m" "${DL[@]}" --checksums "$T/sums.sha256" --url "$B/files/shard-01.jsonl"
expect_rc 0; expect_eq "$(json "$T/d5m/manifest.json" "m['counts']['files_verified']")" 1

case_ "404: a clear error, no retries, the other files still complete"
: > "$T/log"
run "$SLUICE" download --out "$T/d6" "${DL[@]}" --url "$B/files/missing.jsonl" --url "$B/files/shard-05.jsonl"
expect_rc 1; expect_err "HTTP 404"; expect_err "1 of 2 files failed"
expect_file "$T/d6/shard-05.jsonl"; expect_no_file "$T/d6/missing.jsonl"
expect_eq "$(grep -c missing "$T/log")" 1

case_ "persistent 503: gives up after --retries with a resume hint"
run "$SLUICE" download --out "$T/d7" --retry-wait 0.01 --retries 2 --url "$B/always503/shard-06.jsonl"
expect_rc 1; expect_err "gave up after 3 attempts"; expect_err "hint:"
expect_no_file "$T/d7/shard-06.jsonl"

case_ "--url-template with --file-numbers (NeMo syntax) and --url-list"
run "$SLUICE" download --out "$T/d8" "${DL[@]}" --url-template "$B/files/shard-{n:02d}.jsonl" --file-numbers 0,3,5-7
expect_rc 0
for i in 00 03 05 06 07; do cmp -s "$T/www/shard-$i.jsonl" "$T/d8/shard-$i.jsonl" && ok || fail "shard-$i"; done
expect_no_file "$T/d8/shard-01.jsonl"
printf '# a comment\n%s/files/shard-01.jsonl\n\n%s/files/shard-02.jsonl\n' "$B" "$B" > "$T/urls.txt"
run "$SLUICE" download --out "$T/d9" "${DL[@]}" --url-list "$T/urls.txt"
expect_rc 0; expect_file "$T/d9/shard-01.jsonl"; expect_file "$T/d9/shard-02.jsonl"

case_ "a re-run skips complete files (resumed stage)"
: > "$T/log"
run "$SLUICE" download --out "$T/d8" "${DL[@]}" --url-template "$B/files/shard-{n:02d}.jsonl" --file-numbers 0,3,5-7
expect_rc 0
expect_eq "$(wc -l < "$T/log")" 0 "(files fetched again)"

case_ "a stale partial file of a resource that changed since starts over (If-Range)"
head -c 1000000 /dev/urandom > "$T/www/change.bin"
: > "$T/log"
run "$SLUICE" download --out "$T/dc" "${DL[@]}" --retries 0 --url "$B/drop/change.bin"
expect_rc 1; expect_file "$T/dc/.change.bin.part"; expect_file "$T/dc/.change.bin.part.validator"
sleep 0.05; head -c 1000000 /dev/urandom > "$T/www/change.bin"   # same size, new content
run "$SLUICE" download --out "$T/dc" "${DL[@]}" --url "$B/drop/change.bin"
expect_rc 0
cmp -s "$T/www/change.bin" "$T/dc/change.bin" && ok || fail "old and new versions mixed"
grep -q 'GET /drop/change.bin bytes=500000- 200 "' "$T/log" && ok || fail "no If-Range answered 200: $(cat "$T/log")"
expect_no_file "$T/dc/.change.bin.part"; expect_no_file "$T/dc/.change.bin.part.validator"

case_ "the partial file's validators and size are kept beside it"
: > "$T/log"
run "$SLUICE" download --out "$T/dm1" "${DL[@]}" --retries 0 --url "$B/drop/lie.bin"
expect_rc 1
st=$(python3 -c 'import email.utils,os,sys; s=os.stat(sys.argv[1]); print("etag \"%x-%x\"\nlast-modified %s\nsize %d" % (s.st_mtime_ns, s.st_size, email.utils.formatdate(s.st_mtime, usegmt=True), s.st_size))' "$T/www/lie.bin")
expect_eq "$(cat "$T/dm1/.lie.bin.part.validator")" "$st"

# A server that lies, once per case (then it answers as /files): the file still comes out
# whole, the lie is named in a warning with the URL, and the manifest counts it.
case_ "lie: a 206 with 100 bytes answering a plain GET is a short range, resumed"
run "$SLUICE" download --out "$T/l1" "${DL[@]}" --url "$B/lie206/lie.bin"
expect_rc 0
cmp -s "$T/www/lie.bin" "$T/l1/lie.bin" && ok || fail "$(stat -c %s "$T/l1/lie.bin") bytes saved as complete"
expect_err "'$B/lie206/lie.bin': HTTP 206 with Content-Range 'bytes 0-99/200000' answering a request for the whole file: 100 of 200000 bytes; resuming at byte 100"
expect_eq "$(json "$T/l1/manifest.json" "m['counts']['bad_responses']")" 1

case_ "lie: an empty 200 of the same version answering a resume is refused, the partial file kept"
: > "$T/log"
run "$SLUICE" download --out "$T/l2" "${DL[@]}" --url "$B/empty200/lie.bin"
expect_rc 0
cmp -s "$T/www/lie.bin" "$T/l2/lie.bin" && ok || fail "stale partial file saved as complete"
expect_err "'$B/empty200/lie.bin': HTTP 200 with an empty body answering a request for bytes 100000-"
expect_eq "$(grep -c 'bytes=100000- 206' "$T/log")" 1 "(the next attempt resumes the kept partial file)"
expect_eq "$(json "$T/l2/manifest.json" "m['counts']['bad_responses']")" 1

case_ "lie: a 206 shorter than asked keeps its bytes and asks for the rest"
: > "$T/log"
run "$SLUICE" download --out "$T/l3" "${DL[@]}" --url "$B/short/lie.bin"
expect_rc 0
cmp -s "$T/www/lie.bin" "$T/l3/lie.bin" && ok || fail "short file saved as complete"
expect_err "HTTP 206 with Content-Range 'bytes 100000-100999/200000' answering a request for bytes 100000-: 101000 of 200000 bytes"
grep -q "bytes=101000- 206" "$T/log" && ok || fail "no request for the rest: $(cat "$T/log")"
run "$SLUICE" download --out "$T/l3b" "${DL[@]}" --retries 2 --url "$B/short/lie.bin?lies=9"
expect_rc 1; expect_err "gave up after 3 attempts"; expect_no_file "$T/l3b/lie.bin"

case_ "lie: a 206 that starts elsewhere than asked starts the file over"
run "$SLUICE" download --out "$T/l4" "${DL[@]}" --url "$B/back/lie.bin"
expect_rc 0
cmp -s "$T/www/lie.bin" "$T/l4/lie.bin" && ok || fail "spliced or short file"
expect_err "HTTP 206 with Content-Range 'bytes 0-999/200000' answering a request for bytes 100000-; starting over"
expect_eq "$(json "$T/l4/manifest.json" "m['counts']['restarts']")" 1

case_ "lie: a 206 of another version (ETag, or Last-Modified alone) starts over, not spliced"
for q in "" "?lm"; do
    run "$SLUICE" download --out "$T/l5$q" "${DL[@]}" --url "$B/changed/lie.bin$q"
    expect_rc 0
    cmp -s "$T/www/lie.bin.new" "$T/l5$q/lie.bin" && ok || fail "two versions spliced ($q)"
    expect_err "the file changed on the server since the partial file began ($([ -z "$q" ] && echo ETag || echo Last-Modified)"
    expect_eq "$(json "$T/l5$q/manifest.json" "m['counts']['restarts']")" 1
done

case_ "lie: a 206 with an unreadable Content-Range is refused and retried"
run "$SLUICE" download --out "$T/l6" "${DL[@]}" --url "$B/badrange/lie.bin"
expect_rc 0
cmp -s "$T/www/lie.bin" "$T/l6/lie.bin" && ok || fail "content differs"
expect_err "'$B/badrange/lie.bin': HTTP 206 with an unreadable Content-Range 'bytes 0-abc/xyz'; retry 1"

case_ "an oversized response head (one 10 MB line, or 100 KB of lines) stops at once, clearly"
for m in bighead manyhead; do
    : > "$T/log"
    run "$SLUICE" download --out "$T/l7" "${DL[@]}" --url "$B/$m/lie.bin?lies=9"
    expect_rc 1; expect_err "cannot download '$B/$m/lie.bin?lies=***': "; expect_err "retrying would not help"
    expect_no_err "Out of memory'"
    expect_eq "$(wc -l < "$T/log")" 1 "(retried)"
done
expect_err "the response header is over 64 KiB (HTTP 200)"

case_ "secrets in URLs (user information, query values) reach no message and no manifest"
no_secret() {
    if grep -rq "pa55word\|hunter2" "$T/err" "$@"; then fail "a secret was written: $(grep -rl "pa55word\|hunter2" "$T/err" "$@")"; else ok; fi
}
run "$SLUICE" download --out "$T/sec" "${DL[@]}" --url "http://ann:pa55word@127.0.0.1:$port/files/shard-00.jsonl?token=hunter2"
expect_rc 0
cmp -s "$T/www/shard-00.jsonl" "$T/sec/shard-00.jsonl" && ok || fail "content differs"
expect_eq "$(json "$T/sec/manifest.json" "m['command'][-1]")" "http://***@127.0.0.1:$port/files/shard-00.jsonl?token=***"
no_secret "$T/sec"
run "$SLUICE" download --out "$T/sec2" "${DL[@]}" --url="http://ann:pa55word@127.0.0.1:$port/flaky/shard-02.jsonl?sig=hunter2&v=1"
expect_rc 0; expect_err "'http://***@127.0.0.1:$port/flaky/shard-02.jsonl?sig=***&v=***': HTTP 503; retry 1"
expect_eq "$(json "$T/sec2/manifest.json" "m['command'][-1]")" "--url=http://***@127.0.0.1:$port/flaky/shard-02.jsonl?sig=***&v=***"
no_secret "$T/sec2"
run "$SLUICE" download --out "$T/sec3" "${DL[@]}" --url "http://ann:pa55word@127.0.0.1:$port/files/gone.jsonl?sig=hunter2"
expect_rc 1; expect_err "cannot download 'http://***@127.0.0.1:$port/files/gone.jsonl?sig=***': HTTP 404"
no_secret "$T/sec3"

case_ "a server that trickles bytes is given up on (--min-speed over --stall-timeout)"
run "$SLUICE" download --out "$T/dt" "${DL[@]}" --retries 0 --stall-timeout 2 --min-speed 100 \
    --url "$B/trickle/slow.bin"
expect_rc 1; expect_err "slower than 100 bytes/s for 2 s"; expect_err "gave up after 1 attempts"
expect_no_file "$T/dt/slow.bin"
run "$SLUICE" download -h
expect_out "--min-speed BYTES"; expect_out "(default 1K)"

case_ "only http and https: other schemes are refused up front, redirects too"
for u in "gopher://127.0.0.1:$port/_SET%20k%20v" "ftp://127.0.0.1:$port/x.bin" "file:///etc/passwd" "GOPHER://h/_x"; do
    : > "$T/log"
    run "$SLUICE" download --out "$T/ds" --url "$B/files/shard-00.jsonl" --url "$u"
    expect_rc 2; expect_err "cannot download '$u': the scheme"; expect_err "http:// and https:// URLs only"
    expect_eq "$(wc -l < "$T/log")" 0 "(requests made before the check)"
done
printf '%s/files/shard-00.jsonl\nfile:///etc/passwd\n' "$B" > "$T/urls-bad.txt"
run "$SLUICE" download --out "$T/ds" --url-list "$T/urls-bad.txt"
expect_rc 2; expect_err "the scheme 'file' is not allowed"
run "$SLUICE" download --out "$T/ds" --url-template "gopher://127.0.0.1:$port/{n}.bin" --file-numbers 1-2
expect_rc 2; expect_err "the scheme 'gopher' is not allowed"
run "$SLUICE" download --out "$T/ds" --url "127.0.0.1:$port/files/shard-00.jsonl"
expect_rc 2; expect_err "the URL has no scheme"
run "$SLUICE" download --out "$T/ds" "${DL[@]}" --url "$B/redirect/ftp:/127.0.0.1:$port/files/x.bin"
expect_rc 1; expect_err "http and https only, also when redirected"
run "$SLUICE" download --out "$T/ds" "${DL[@]}" --url "$B/redirect/gopher:/127.0.0.1:$port/_x.bin"
expect_rc 1; expect_err "http and https only, also when redirected"
expect_no_file "$T/ds/manifest.json"

case_ "--checksums: files without an entry are warned about and counted; --require-checksums refuses"
run "$SLUICE" download --out "$T/du" "${DL[@]}" --checksums "$T/sums.sha256" \
    --url "$B/files/shard-00.jsonl" --url "$B/files/shard-02.jsonl"
expect_rc 0; expect_err "1 of 2 files have no entry in '$T/sums.sha256' and will not be verified ('shard-02.jsonl')"
expect_eq "$(json "$T/du/manifest.json" "m['counts']['files_verified']")" 1
expect_eq "$(json "$T/du/manifest.json" "m['counts']['files_unverified']")" 1
: > "$T/log"
run "$SLUICE" download --out "$T/dv" "${DL[@]}" --checksums "$T/sums.sha256" --require-checksums \
    --url "$B/files/shard-00.jsonl" --url "$B/files/shard-02.jsonl"
expect_rc 2; expect_err "1 of 2 files have no entry"; expect_err "--require-checksums"
expect_eq "$(wc -l < "$T/log")" 0 "(requests made before the check)"
run "$SLUICE" download --out "$T/dv" --require-checksums --url "$B/files/shard-00.jsonl"
expect_rc 2; expect_err "--require-checksums needs --checksums FILE"

case_ "300,000 URLs: the name and checksum checks are linear (a duplicate found, a digest missing)"
python3 - "$T" "$B" <<'PY'
import sys
t, b = sys.argv[1], sys.argv[2]
n = 300000
with open(t + "/many.txt", "w") as f, open(t + "/many.sha256", "w") as s:
    for i in range(n):
        f.write("%s/files/CC-MAIN-%06d.warc.gz\n" % (b, i))
        if i != 123456:
            s.write("%064x  CC-MAIN-%06d.warc.gz\n" % (i, i))
with open(t + "/many-dup.txt", "w") as f:
    f.write(open(t + "/many.txt").read())
    f.write("%s/other/CC-MAIN-%06d.warc.gz\n" % (b, 7))
PY
run "$SLUICE" download --out "$T/dd" --url-list "$T/many-dup.txt"
expect_rc 2; expect_err "URLs '$B/files/CC-MAIN-000007.warc.gz' and '$B/other/CC-MAIN-000007.warc.gz' would both be saved as 'CC-MAIN-000007.warc.gz'"
run "$SLUICE" download --out "$T/dd" --url-list "$T/many.txt" --checksums "$T/many.sha256" --require-checksums
expect_rc 2; expect_err "1 of 300000 files have no entry"; expect_err "'CC-MAIN-123456.warc.gz'"

case_ "usage errors exit 2"
run "$SLUICE" download --out "$T/dx" --url-template "$B/files/x-{m}.jsonl" --file-numbers 1
expect_rc 2; expect_err "{n}"
run "$SLUICE" download --out "$T/dx" --url "$B/files/"
expect_rc 2; expect_err "cannot name the file"
run "$SLUICE" download --out "$T/dx"
expect_rc 2; expect_err "nothing to download"

if have_mpi; then
    case_ "mpirun -np 2 splits the files; the manifest lists them all"
    run "${MPIRUN[@]}" -np 2 "$SLUICE" download --out "$T/dm" "${DL[@]}" --url-template "$B/files/shard-{n:02d}.jsonl" --file-numbers 0-7
    expect_rc 0
    expect_eq "$(json "$T/dm/manifest.json" "len(m['outputs'])")" 8
    expect_eq "$(json "$T/dm/manifest.json" "m['ranks']")" 2
    for i in 00 01 02 03 04 05 06 07; do cmp -s "$T/www/shard-$i.jsonl" "$T/dm/shard-$i.jsonl" && ok || fail "shard-$i"; done
fi

case_ "extract --rm-inputs deletes downloaded files once their shards are complete"
run "$SLUICE" extract --format jsonl --rm-inputs --out "$T/x8" "$T/d8"
expect_rc 0; expect_err "removed 5 input files"
expect_no_file "$T/d8/shard-00.jsonl"
expect_eq "$(json "$T/x8/manifest.json" "m['counts']['documents_out']")" "$(cat "$T"/www/shard-0[03567].jsonl | wc -l)"

case_ "extract --rm-inputs refuses files that download did not write"
run "$SLUICE" extract --format jsonl --rm-inputs --out "$T/xw" "$T/www/shard-01.jsonl"
expect_rc 2; expect_err "refusing to delete"
expect_file "$T/www/shard-01.jsonl"

case_ "libcurl and libcrypto are loaded by download alone: other commands start without them"
LD_DEBUG=files "$SLUICE" --version >/dev/null 2>"$T/ld.log"
grep -q "file=libzstd" "$T/ld.log" && ok || fail "LD_DEBUG shows no library loads"
grep -q "file=libcurl" "$T/ld.log" && fail "sluice --version loaded libcurl" || ok
grep -q "file=libcrypto" "$T/ld.log" && fail "sluice --version loaded libcrypto" || ok
LD_DEBUG=files "$SLUICE" download --out "$T/dld" "${DL[@]}" --url "$B/files/shard-00.jsonl" >/dev/null 2>"$T/ld.log"
grep -q "file=libcurl" "$T/ld.log" && ok || fail "sluice download did not load libcurl"
cmp -s "$T/www/shard-00.jsonl" "$T/dld/shard-00.jsonl" && ok || fail "content differs"
LD_DEBUG=files "$SLUICE" download --out "$T/dlc" "${DL[@]}" --checksums "$T/sums.sha256" \
    --url "$B/files/shard-00.jsonl" --url "$B/files/shard-01.jsonl" >/dev/null 2>"$T/ld.log"
grep -q "file=libcrypto" "$T/ld.log" && ok || fail "sluice download --checksums did not load libcrypto"
cmp -s "$T/www/shard-01.jsonl" "$T/dlc/shard-01.jsonl" && ok || fail "content differs (md5 entry)"

case_ "every option of -h is in docs/commands/download.md"
for opt in $("$SLUICE" download -h | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$opt" "$ROOT/docs/commands/download.md" && ok || fail "$opt missing from docs/commands/download.md"
done

kill $server 2>/dev/null || true
finish
