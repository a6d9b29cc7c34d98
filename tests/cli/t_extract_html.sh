#!/usr/bin/env bash
# extract --format html groups consecutive pages into shards by input size (not one shard,
# and four fsyncs, per page): the same documents as one shard per page, the same bytes for
# -np 1 and 2, a resumed run equal to an uninterrupted one, and a bad page named.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

EXH="$ROOT/examples/html"
npages=$(ls "$EXH" | grep -c '\.html' || true)

case_ "24 pages: one shard by default; the documents of one shard per page, in the same order"
run "$SLUICE" extract --format html --out "$T/one" "$EXH"
expect_rc 0
expect_eq "$(ls "$T/one" | grep -c '^part-')" 1
expect_eq "$(json "$T/one/manifest.json" "m['counts']['documents_in']")" "$npages"
run "$SLUICE" extract --format html --shard-size 1 --out "$T/each" "$EXH"
expect_rc 0
expect_eq "$(ls "$T/each" | grep -c '^part-')" "$npages"
expect_eq "$(zstdcat "$T/one"/part-*.jsonl.zst | md5sum)" "$(zstdcat "$T/each"/part-*.jsonl.zst | md5sum)"

case_ "--shard-size 40K: several shards, cut between pages at the size"
run "$SLUICE" extract --format html --shard-size 40K --out "$T/g1" "$EXH"
expect_rc 0
n1=$(ls "$T/g1" | grep -c '^part-')
[ "$n1" -gt 1 ] && [ "$n1" -lt "$npages" ] && ok || fail "$n1 shards for $npages pages"
expect_eq "$(zstdcat "$T/g1"/part-*.jsonl.zst | md5sum)" "$(zstdcat "$T/one"/part-*.jsonl.zst | md5sum)"
expect_eq "$(json "$T/g1/manifest.json" "m['settings']['shard_size']")" 40960

if have_mpi; then
    case_ "-np 2 and -np 3 write the bytes of -np 1"
    for np in 2 3; do
        run "${MPIRUN[@]}" -np $np "$SLUICE" extract --format html --shard-size 40K --out "$T/g$np" "$EXH"
        expect_rc 0
        for f in $(cd "$T/g1" && ls part-*); do
            cmp -s "$T/g1/$f" "$T/g$np/$f" && ok || fail "$f differs with -np $np"
        done
        expect_eq "$(ls "$T/g$np" | grep -c '^part-')" "$n1"
    done
fi

case_ "a rerun resumes by shard; a shard removed is written again, the same"
first=$(cd "$T/g1" && ls part-* | head -1)
cp "$T/g1/$first" "$T/keep.zst"
rm "$T/g1/$first" "$T/g1/manifest.json"
rm -f "$T/g1/.sluice/$first.json"
run "$SLUICE" extract --format html --shard-size 40K --out "$T/g1" "$EXH"
expect_rc 0; expect_err "(resumed)"
cmp -s "$T/keep.zst" "$T/g1/$first" && ok || fail "the rewritten shard differs"

case_ "a page that cannot be read stops the run naming it"
mkdir -p "$T/bad"
cp "$EXH"/* "$T/bad/"
printf '\x1f\x8b\x08\x00garbage' > "$T/bad/zz-broken.html.gz"
run "$SLUICE" extract --format html --out "$T/ob" "$T/bad"
expect_rc 1; expect_err "zz-broken.html.gz"
expect_no_file "$T/ob/part-00000.jsonl.zst"; expect_no_partials "$T/ob"
run "$SLUICE" extract --format html --skip-corrupt --out "$T/ob2" "$T/bad"
expect_rc 0
expect_eq "$(json "$T/ob2/manifest.json" "m['counts']['corrupt_files']")" 1

case_ "gzip pages: one member, several members, plain: the same text as the uncompressed page"
mkdir -p "$T/gz/a" "$T/gz/b" "$T/gz/c"
first=$(ls "$EXH"/*.html.gz | head -1)
zcat "$first" > "$T/page.html"
head -c 3000 "$T/page.html" > "$T/p1"; tail -c +3001 "$T/page.html" > "$T/p2"
gzip -c "$T/page.html" > "$T/gz/a/page.html.gz"
{ gzip -c "$T/p1"; gzip -c "$T/p2"; } > "$T/gz/b/page.html.gz"
cp "$T/page.html" "$T/gz/c/page.html"
for d in a b c; do
    run "$SLUICE" extract --format html --out "$T/gzo-$d" "$T/gz/$d"
    expect_rc 0
done
expect_eq "$(zstdcat "$T/gzo-a/part-00000.jsonl.zst" | md5sum)" "$(zstdcat "$T/gzo-c/part-00000.jsonl.zst" | md5sum)"
expect_eq "$(zstdcat "$T/gzo-b/part-00000.jsonl.zst" | md5sum)" "$(zstdcat "$T/gzo-c/part-00000.jsonl.zst" | md5sum)"
head -c 2000 "$T/gz/a/page.html.gz" > "$T/gz/a/cut.html.gz"
run "$SLUICE" extract --format html --out "$T/gzo-cut" "$T/gz/a"
expect_rc 1; expect_err "cut.html.gz"

finish
