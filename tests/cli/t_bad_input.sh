#!/usr/bin/env bash
# Bad input: each gives a clear message naming file and position, no crash, no partial shard.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/good"
python3 -c "
import json
for i in range(3000): print(json.dumps({'text': 'document %d ' % i + 'lorem ipsum ' * 20}))
" > "$T/good/docs.jsonl"
zstd -q -19 "$T/good/docs.jsonl" -o "$T/docs.jsonl.zst"
gzip -c "$T/good/docs.jsonl" > "$T/docs.jsonl.gz"
size_zst=$(stat -c %s "$T/docs.jsonl.zst")
size_gz=$(stat -c %s "$T/docs.jsonl.gz")

case_ "truncated .zst stops the run, naming file and offset"
mkdir -p "$T/tz"; head -c $((size_zst / 2)) "$T/docs.jsonl.zst" > "$T/tz/cut.jsonl.zst"
run "$SLUICE" reshard --out "$T/o-tz" "$T/tz"
expect_rc 1; expect_err "cut.jsonl.zst"; expect_err "truncated zstd stream"; expect_err "compressed byte"
expect_err "--skip-corrupt"
expect_no_file "$T/o-tz/part-00000.jsonl.zst"; expect_no_partials "$T/o-tz"

case_ "truncated .gz stops the run"
mkdir -p "$T/tg"; head -c $((size_gz / 2)) "$T/docs.jsonl.gz" > "$T/tg/cut.jsonl.gz"
run "$SLUICE" reshard --out "$T/o-tg" "$T/tg"
expect_rc 1; expect_err "cut.jsonl.gz"; expect_err "truncated gzip stream"
expect_no_file "$T/o-tg/part-00000.jsonl.zst"; expect_no_partials "$T/o-tg"

case_ "--skip-corrupt keeps the readable part and counts the file"
run "$SLUICE" reshard --out "$T/o-sk" --skip-corrupt "$T/tg"
expect_rc 0; expect_err "cut.jsonl.gz"
n=$(json "$T/o-sk/manifest.json" "m['counts']['documents_out']")
[ "$n" -gt 100 ] && [ "$n" -lt 3000 ] && ok || fail "kept $n documents"
expect_eq "$(json "$T/o-sk/manifest.json" "m['counts']['corrupt_files']")" 1
# every kept line is whole JSON
zstdcat "$T/o-sk"/part-*.jsonl.zst | python3 -c "import sys,json; [json.loads(l) for l in sys.stdin]" && ok || fail "bad JSON kept"

case_ "a .gz file named .zst is read by its content, with a warning"
mkdir -p "$T/mis"; cp "$T/docs.jsonl.gz" "$T/mis/really-gzip.jsonl.zst"
run "$SLUICE" reshard --out "$T/o-mis" "$T/mis"
expect_rc 0; expect_err "really-gzip.jsonl.zst' is named like zstd data but holds gzip data"
expect_eq "$(json "$T/o-mis/manifest.json" "m['counts']['documents_out']")" 3000

case_ "bad lines: invalid UTF-8, not JSON, missing text; each named by file:line"
mkdir -p "$T/bad"
{
    echo '{"text":"fine one"}'
    printf '{"text":"bad \xff\xfe bytes"}\n'
    echo 'this is not json'
    echo '{"title":"no text field"}'
    echo '{"text":"fine two"}'
} > "$T/bad/mixed.jsonl"
run "$SLUICE" reshard --out "$T/o-bad" "$T/bad"
expect_rc 0
expect_err "mixed.jsonl:2:14: invalid UTF-8 in string, skipped"
expect_err "mixed.jsonl:3:1: expected a JSON object, skipped"
expect_err "mixed.jsonl:4: no \"text\" member, skipped"
expect_eq "$(json "$T/o-bad/manifest.json" "m['counts']['documents_out']")" 2
expect_eq "$(json "$T/o-bad/manifest.json" "m['counts']['skipped_invalid_utf8']")" 1
expect_eq "$(json "$T/o-bad/manifest.json" "m['counts']['skipped_invalid_json']")" 1
expect_eq "$(json "$T/o-bad/manifest.json" "m['counts']['skipped_missing_text']")" 1

case_ "--repair-utf8 keeps the line with U+FFFD"
run "$SLUICE" reshard --out "$T/o-rep" --repair-utf8 "$T/bad"
expect_rc 0
expect_eq "$(json "$T/o-rep/manifest.json" "m['counts']['documents_out']")" 3
expect_eq "$(json "$T/o-rep/manifest.json" "m['counts']['repaired_utf8_lines']")" 1
zstdcat "$T/o-rep"/part-*.jsonl.zst | grep -q $'bad \xef\xbf\xbd\xef\xbf\xbd bytes' && ok || fail "no U+FFFD"

case_ "a 100 MB line is skipped with a clear message, memory stays bounded"
mkdir -p "$T/huge"
python3 -c "
import sys
sys.stdout.write('{\"text\":\"small before\"}\n')
sys.stdout.write('{\"text\":\"' + 'x' * (100 << 20) + '\"}\n')
sys.stdout.write('{\"text\":\"small after\"}\n')
" | zstd -q -1 -o "$T/huge/huge.jsonl.zst"
run /usr/bin/time -f "maxrss_kb=%M" "$SLUICE" reshard --out "$T/o-huge" "$T/huge"
expect_rc 0; expect_err "huge.jsonl.zst:2: line longer than 67108864 bytes, skipped"
expect_eq "$(json "$T/o-huge/manifest.json" "m['counts']['documents_out']")" 2
expect_eq "$(json "$T/o-huge/manifest.json" "m['counts']['skipped_line_too_long']")" 1
rss=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' "$T/err")
# (sanitizer builds keep freed memory in quarantine: no bound there)
if [ "${SANITIZE:-0}" != 1 ]; then
    [ "${rss:-999999999}" -lt 200000 ] && ok || fail "peak memory $rss kB for a 100 MB line"
fi

case_ "a 100 MB line is kept when the cap allows it"
run "$SLUICE" reshard --out "$T/o-huge2" --max-line 128M "$T/huge"
expect_rc 0
expect_eq "$(json "$T/o-huge2/manifest.json" "m['counts']['documents_out']")" 3

case_ "an empty file: no documents, no shards, a manifest"
mkdir -p "$T/empty"; : > "$T/empty/empty.jsonl"
run "$SLUICE" reshard --out "$T/o-empty" "$T/empty"
expect_rc 0; expect_err "no documents"
expect_eq "$(json "$T/o-empty/manifest.json" "m['counts']['documents_out']")" 0
expect_no_file "$T/o-empty/part-00000.jsonl.zst"

case_ "an empty compressed file"
mkdir -p "$T/empty2"; : | zstd -q > "$T/empty2/e.jsonl.zst"; : | gzip > "$T/empty2/e.jsonl.gz"
run "$SLUICE" reshard --out "$T/o-empty2" "$T/empty2"
expect_rc 0
expect_eq "$(json "$T/o-empty2/manifest.json" "m['counts']['documents_out']")" 0

case_ "a directory with no inputs"
mkdir -p "$T/none"; echo hi > "$T/none/readme.txt"
run "$SLUICE" reshard --out "$T/o-none" "$T/none"
expect_rc 1; expect_err "directory '$T/none' has no input files"

case_ "an unwritable output directory"
run "$SLUICE" reshard --out /proc/sluice-out "$T/good"
expect_rc 1; expect_err "/proc/sluice-out"
echo file > "$T/afile"
run "$SLUICE" reshard --out "$T/afile/sub" "$T/good"
expect_rc 1; expect_err "$T/afile"

case_ "an unreadable input file"
mkdir -p "$T/unr"; cp "$T/good/docs.jsonl" "$T/unr/x.jsonl"
if [ "$(id -u)" -ne 0 ]; then
    chmod 000 "$T/unr/x.jsonl"
    run "$SLUICE" reshard --out "$T/o-unr" "$T/unr"
    expect_rc 1; expect_err "cannot read input '$T/unr/x.jsonl': Permission denied"
else
    run "$SLUICE" reshard --out "$T/o-unr" "$T/unr/x.jsonl/"
    expect_rc 1; expect_err "x.jsonl/"
fi

case_ "xz input is named as unsupported"
if command -v xz >/dev/null; then
    mkdir -p "$T/xz"; xz -c "$T/good/docs.jsonl" > "$T/xz/d.jsonl.zst"
    run "$SLUICE" reshard --out "$T/o-xz" "$T/xz"
    expect_rc 1; expect_err "xz compression is not supported"
fi

case_ "interrupted run leaves no partial shard under a final name"
python3 -c "
import json
for i in range(400000): print(json.dumps({'text': 'document %d ' % i + 'lorem ipsum dolor ' * 10}))
" | zstd -q -1 -o "$T/big.jsonl.zst"
"$SLUICE" -q reshard --out "$T/o-int" --shards 1 "$T/big.jsonl.zst" &
pid=$!
for _ in $(seq 100); do [ -n "$(find "$T/o-int" -name '.*.tmp' 2>/dev/null)" ] && break; sleep 0.05; done
kill -TERM $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
expect_no_file "$T/o-int/part-00000.jsonl.zst"; expect_no_partials "$T/o-int"
run "$SLUICE" reshard --out "$T/o-int" --shards 1 "$T/big.jsonl.zst"
expect_rc 0
expect_eq "$(json "$T/o-int/manifest.json" "m['counts']['documents_out']")" 400000

case_ "wrong input: a file that yields not one record is an error (exit 1) with a hint of what it is"
mkdir -p "$T/wrong/text" "$T/gpt2"
zstd -q -d "$FIX/tokenizer/botchan.txt.zst" -o "$T/wrong/text/botchan.txt"
zstd -q -d "$FIX/tokenizer/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$FIX/tokenizer/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
run "$SLUICE" extract --format warc --out "$T/o-w1" "$T/wrong/text/botchan.txt"
expect_rc 1; expect_err "botchan.txt': no warc record could be read"; expect_err "hint: this looks like plain text"
expect_no_file "$T/o-w1/manifest.json"; expect_no_partials "$T/o-w1"
run "$SLUICE" extract --format jsonl --out "$T/o-w2" "$T/wrong/text/botchan.txt"
expect_rc 1; expect_err "no jsonl record could be read"
# the first warnings, then a summary line, not one line per bad line
expect_err "more not shown"
[ "$(wc -l < "$T/err")" -lt 40 ] && ok || fail "$(wc -l < "$T/err") lines of warnings"
run "$SLUICE" extract --format jsonl --out "$T/o-w3" "$ROOT"/examples/warc/*.warc.gz
expect_rc 1; expect_err "hint: this looks like a WARC file: use \`sluice extract --format warc\`"
run "$SLUICE" tokenize --tokenizer "gpt2:$T/gpt2" --out "$T/o-w4/t" "$T/wrong/text/botchan.txt"
expect_rc 1; expect_err "botchan.txt': not one JSON document in 4288 lines"; expect_err "this looks like plain text"
expect_no_file "$T/o-w4/t_text_document.bin"
[ "$(wc -l < "$T/err")" -lt 40 ] && ok || fail "$(wc -l < "$T/err") lines of warnings"
# -q: no warning shown, so none is pointed at; no parts folder left behind (nothing finished)
run "$SLUICE" tokenize -q --tokenizer "gpt2:$T/gpt2" --out "$T/o-w4q/t" "$T/wrong/text/botchan.txt"
expect_rc 1; expect_err "not one JSON document in 4288 lines (-q hid why)"; expect_no_err "see the warnings"
expect_no_file "$T/o-w4q/.t.sluice-parts"
run "$SLUICE" tokenize --tokenizer "gpt2:$T/gpt2" --out "$T/o-w5/t" "$ROOT"/examples/warc/*.warc.gz
expect_rc 1; expect_err "turn it into documents with \`sluice extract --format warc\`"
# a file with some good records is not an error
run "$SLUICE" extract --format jsonl --out "$T/o-w6" "$T/bad/mixed.jsonl"
expect_rc 0

case_ "a file name with terminal escapes is quoted escaped in every message"
mkdir -p "$T/esc"
evil="$T/esc/evil$(printf '\033')]0;pwned$(printf '\007')x$(printf '\302\233')2J.jsonl"
printf 'not json\n' > "$evil"
for cmd in "tokenize --tokenizer gpt2:$T/gpt2 --out $T/esc/t" "reshard --out $T/esc/r" "clean --out $T/esc/c"; do
    run "$SLUICE" $cmd "$T/esc"
    grep -q "$(printf '\033')\|$(printf '\007')\|$(printf '\302\233')" "$T/err" && fail "raw control characters on stderr: $cmd" || ok
    expect_err 'evil\x1b]0;pwned\x07x\u009b2J.jsonl'
done

case_ "out of memory on a 60 MB document: the size asked and the file, not a bare 'out of memory'"
if [ "${SANITIZE:-0}" = 1 ]; then
    echo "skip: out of memory under ulimit -v (the sanitizers' shadow memory needs the address space)"
else
    "$PY" -c "import json; print(json.dumps({'text': 'word ' * 12000000}))" > "$T/big.jsonl"
    (ulimit -v 500000; "$SLUICE" dedup fuzzy --out "$T/bigd" "$T/big.jsonl" >"$T/out" 2>"$T/err") && rc=0 || rc=$?
    expect_rc 1
    expect_err "fatal: out of memory: "; expect_err "MB could not be allocated while"
    expect_err "reading '$T/big.jsonl'"
    rm -f "$T/big.jsonl"
fi

finish
