#!/usr/bin/env bash
# The ready pipelines of configs/pipelines/ against a local HTTP server on 127.0.0.1 that
# serves small files under the real layouts (the Pile's numbered shards, allenai/c4 en and
# multilingual, a Common Crawl snapshot's warc.paths.gz, a Wikipedia dump, arXiv e-prints,
# GPT-2's vocab.json + merges.txt): each pipeline's download stage through base_url (and
# gpt2_url), then the stages after it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
EX="$ROOT/examples"
P="$ROOT/configs/pipelines"
W="$T/www"

mkdir -p "$W/gpt2" "$W/cc/crawl-data/CC-MAIN-2024-10/segments/1/warc" "$W/wiki/enwiki/latest" \
    "$W/arxiv/e-print" "$T/custom"
zstd -q -d "$FIX/tokenizer/encoder.json.zst" -o "$W/gpt2/vocab.json"
zstd -q -d "$FIX/tokenizer/vocab.bpe.zst" -o "$W/gpt2/merges.txt"
python3 - "$W" "$T/custom" <<'PY'
import gzip, json, os, random, sys
random.seed(5)
w, custom = sys.argv[1], sys.argv[2]
words = ("the a river city music of and in to history science was is light water house garden "
         "market school mountain people time year world").split()
def text(n):
    sents = []
    for _ in range(n):
        s = " ".join(random.choice(words) for _ in range(random.randint(8, 20)))
        sents.append(s[0].upper() + s[1:] + ".")
    return " ".join(sents)
os.makedirs(w + "/pile", exist_ok=True)
for f in range(2):
    with open(w + "/pile/%02d.jsonl" % f, "w") as o:
        for i in range(40 + f):
            o.write(json.dumps({"text": text(6), "meta": {"pile_set_name": ["Pile-CC", "Wikipedia (en)"][i % 2]}}) + "\n")
os.makedirs(w + "/c4/en", exist_ok=True)
os.makedirs(w + "/c4/multilingual", exist_ok=True)
for f in range(2):
    with gzip.open(w + "/c4/en/c4-train.%05d-of-01024.json.gz" % f, "wt") as o:
        for i in range(30):
            o.write(json.dumps({"text": "\n".join(text(2) for _ in range(6)), "timestamp": "2019-04-25T12:57:54Z",
                                "url": "https://example.com/%d/%d" % (f, i)}) + "\n")
for lang, total in (("de", 2048), ("sw", 32)):
    with gzip.open(w + "/c4/multilingual/c4-%s.tfrecord-00000-of-%05d.json.gz" % (lang, total), "wt") as o:
        for i in range(12):
            o.write(json.dumps({"text": "%s %s" % (lang, text(3)), "timestamp": "2020", "url": "https://x/%d" % i}) + "\n")
with open(custom + "/mine.jsonl", "w") as o:
    for i in range(300):
        o.write(json.dumps({"content": text(5) if i % 10 else "the same text again", "n": i}) + "\n")
PY
(cd "$W/pile" && zstd -q --rm 00.jsonl 01.jsonl)
cc=crawl-data/CC-MAIN-2024-10/segments/1/warc
cp "$EX"/warc/*.warc.gz "$W/cc/$cc/a-00000.warc.gz"
cp "$FIX/warc/sample-0000.warc.gz" "$W/cc/$cc/a-00001.warc.gz"
printf '%s\n' "$cc/a-00000.warc.gz" "$cc/a-00001.warc.gz" "$cc/a-00002.warc.gz" | gzip > "$W/cc/crawl-data/CC-MAIN-2024-10/warc.paths.gz"
cp "$EX"/wiki/*.bz2 "$W/wiki/enwiki/latest/enwiki-latest-pages-articles1.xml-p1p41242.bz2"
for id in 1706.03762:paper 1810.04805:poly 2005.14165:ckdtree; do
    gzip -c "$FIX/arxiv/scipy/${id#*:}.tex" > "$W/arxiv/e-print/${id%%:*}"
done

python3 "$(dirname "$0")/helpers/http_server.py" "$W" "$T/port" "$T/log" 300 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
B="http://127.0.0.1:$(cat "$T/port")/tree"
G=(gpt2_url="$B/gpt2/")

case_ "pile: numbered shards and GPT-2 files downloaded, extracted, resharded, tokenized"
run "$SLUICE" run "$P/pile.yaml" work_dir="$T/pile" base_url="$B/pile/" "${G[@]}" \
    'stages=[download,extract,reshard,tokenize]'
expect_rc 0; expect_out "5 of 5 steps ran"
expect_file "$T/pile/download/shards/01.jsonl.zst"; expect_file "$T/pile/download/gpt2/merges.txt"
expect_eq "$(json "$T/pile/extract/manifest.json" "m['counts']['documents_out']")" 81
expect_eq "$(zstdcat "$T"/pile/extract/*.zst | grep -c '"source":"Wikipedia (en)"')" 40
expect_eq "$(json "$T/pile/tokenize/pile.manifest.json" "m['counts']['documents_in']")" 81
run "$SLUICE" dataset verify --tokenizer "gpt2:$T/pile/download/gpt2" "$T/pile/tokenize/pile_text_document"
expect_rc 0

case_ "pile: the train stage reads the tokenize stage's shards (dry run)"
run "$SLUICE" run "$P/pile.yaml" work_dir="$T/pile" base_url="$B/pile/" "${G[@]}" --dry-run
expect_rc 0
expect_out "sluice train configs/models/gpt2-124m.yaml data.prefix=$T/pile/tokenize/pile_text_document"
expect_eq "$(grep -c '^# complete, skipped' "$T/out")" 5

case_ "c4: en files by number, extracted, cleaned, C4 rules"
run "$SLUICE" run "$P/c4.yaml" work_dir="$T/c4" base_url="$B/c4/" file_numbers=0-1 \
    'stages=[download,extract,clean,filter,dedup_exact]'
expect_rc 0; expect_out "5 of 5 steps ran"
expect_file "$T/c4/download/c4-train.00001-of-01024.json.gz"
expect_eq "$(json "$T/c4/extract/manifest.json" "m['counts']['documents_out']")" 60
expect_eq "$(json "$T/c4/filter/manifest.json" "m['counts']['documents_in']")" 60

case_ "mc4: languages with their numbers of files ({lang}, {total:05d})"
run "$SLUICE" run "$P/mc4.yaml" work_dir="$T/mc4" base_url="$B/c4/" 'download.languages={de: 2048, sw: 32}' \
    file_numbers=0 'stages=[download,extract,clean]'
expect_rc 0; expect_out "3 of 3 steps ran"
expect_file "$T/mc4/download/c4-sw.tfrecord-00000-of-00032.json.gz"
expect_eq "$(zstdcat "$T"/mc4/extract/*.zst | python3 -c "
import json, sys, collections
print(sorted(collections.Counter(json.loads(l)['lang'] for l in sys.stdin).items()))")" "[('de', 12), ('sw', 12)]"

case_ "common-crawl: the snapshot's warc.paths.gz, lines picked by file_numbers, WARC extraction, FineWeb filter"
run "$SLUICE" run "$P/common-crawl.yaml" work_dir="$T/cc" base_url="$B/cc/" "${G[@]}" \
    file_numbers=0-1 'stages=[download,extract,clean,filter,dedup_exact]'
expect_rc 0; expect_out "7 of 7 steps ran"
expect_eq "$(cat "$T/cc/download/warc/.sluice/urls.txt")" "$B/cc/$cc/a-00000.warc.gz
$B/cc/$cc/a-00001.warc.gz"
# extract deletes each WARC it has read (rm_inputs)
expect_no_file "$T/cc/download/warc/a-00000.warc.gz"
expect_eq "$(json "$T/cc/extract/manifest.json" "m['counts']['records_response']")" \
    "$(( 16 + $(zcat "$FIX/warc/sample-0000.warc.gz" | grep -a -c '^WARC-Type: response') ))"
expect_file "$T/cc/filter/manifest.json"

case_ "common-crawl: run again: complete, the deleted WARCs included"
run "$SLUICE" run "$P/common-crawl.yaml" work_dir="$T/cc" base_url="$B/cc/" "${G[@]}" \
    file_numbers=0-1 'stages=[download,extract,clean,filter,dedup_exact]'
expect_rc 0; expect_out "0 of 7 steps ran"

case_ "common-crawl: fuzzy dedup in the Redis Cluster given by 'redis' (dry run)"
run "$SLUICE" run "$P/common-crawl.yaml" work_dir="$T/cc" redis=10.0.0.1:7000,10.0.0.2:7000 --dry-run
expect_rc 0; expect_out "--backend redis --redis 10.0.0.1:7000,10.0.0.2:7000"

case_ "common-crawl: the memory backend by overrides that unset redis (null, ~)"
for unset in redis=null dedup_fuzzy.redis=null 'redis=~'; do
    run "$SLUICE" run "$P/common-crawl.yaml" work_dir="$T/cc" dedup_fuzzy.backend=memory "$unset" --dry-run
    expect_rc 0
    expect_out "sluice dedup fuzzy --out $T/cc/dedup_fuzzy --preset datatrove --backend memory $T/cc/dedup_exact"
    expect_no_err "redis"
done
grep -q "dedup_fuzzy.backend=memory redis=null" "$P/common-crawl.yaml" && ok || fail "the comment's override"
run "$SLUICE" run "$P/common-crawl.yaml" work_dir="$T/cc" redis_typo=null --dry-run
expect_rc 2; expect_err "unknown key 'redis_typo'"
cat > "$T/nullvar.yaml" <<EOF
v: x
extract:
  format: jsonl
  in: ${T}/\${v}/data
EOF
run "$SLUICE" run "$T/nullvar.yaml" v=null --dry-run
expect_rc 2; expect_err "variable '\${v}' is null"

case_ "wikipedia: a pages-articles dump, articles extracted and cleaned"
run "$SLUICE" run "$P/wikipedia.yaml" work_dir="$T/wiki" base_url="$B/wiki/" 'stages=[download,extract,clean,dedup_exact]'
expect_rc 0; expect_out "4 of 4 steps ran"
# 206 pages: 99 redirects and 1 page outside the article namespace
expect_eq "$(json "$T/wiki/extract/manifest.json" "m['counts']['documents_out']")" 106
expect_eq "$(zstdcat "$T"/wiki/extract/*.zst | grep -c '"title":"Anarchism"')" 1

case_ "arxiv: e-prints by id, the LaTeX main text extracted, tokenized with GPT-2"
run "$SLUICE" run "$P/arxiv.yaml" work_dir="$T/arxiv" base_url="$B/arxiv/" "${G[@]}"
expect_rc 0; expect_out "6 of 6 steps ran"
expect_eq "$(json "$T/arxiv/extract/manifest.json" "m['counts']['documents_out']")" 3
expect_eq "$(json "$T/arxiv/tokenize/arxiv.manifest.json" "m['counts']['documents_in']")" 3

case_ "custom: own JSONL (text_key), dedup, reshard, a tokenizer trained, tokenized"
run "$SLUICE" run "$P/custom.yaml" work_dir="$T/custom/w" data="$T/custom/mine.jsonl" text_key=content \
    reshard.shards=2 tokenizer_train.vocab_size=120 tokenizer_train.byte_fallback=false
expect_rc 0; expect_out "7 of 7 steps ran"
expect_eq "$(json "$T/custom/w/dedup_exact/manifest.json" "m['counts']['documents_out']")" 271
expect_file "$T/custom/w/reshard/part-00001.jsonl.zst"; expect_file "$T/custom/w/tokenizer_train/tokenizer.model"
expect_eq "$(json "$T/custom/w/tokenize/custom.manifest.json" "m['counts']['documents_in']")" \
    "$(json "$T/custom/w/dedup_fuzzy/manifest.json" "m['counts']['documents_out']")"

case_ "every pipeline loads (dry run with the defaults; custom's data is the user's)"
for f in "$P"/*.yaml; do
    extra=()
    [ "$(basename "$f")" = custom.yaml ] && extra=(data="$T/custom/mine.jsonl")
    run "$SLUICE" run "$f" work_dir="$T/dry" "${extra[@]}" --dry-run
    expect_rc 0
done

case_ "--dry-run checks that every input exists: custom.yaml without data="
run "$SLUICE" run "$P/custom.yaml" work_dir="$T/dry" --dry-run
expect_rc 1; expect_err "step 'extract': input '$P/data.jsonl' does not exist"
expect_out "sluice extract --out $T/dry/extract"

case_ "every option a pipeline key maps to is one that its command's -h lists"
"$SLUICE" run --keys > "$T/keys"
bad=$(python3 - "$SLUICE" "$T/keys" <<'PY'
import re, subprocess, sys
sluice, keys = sys.argv[1], sys.argv[2]
cmd, helps, bad, n = None, {}, [], 0
for line in open(keys):
    m = re.match(r"^(\w+): sluice (.*)$", line)
    if m:
        cmd = m.group(2).split()
        continue
    for opt in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line):
        if tuple(cmd) not in helps:
            helps[tuple(cmd)] = subprocess.run([sluice] + cmd + ["-h"], capture_output=True,
                                               text=True).stdout
        n += 1
        if not re.search(r"(^|[ ,])" + re.escape(opt) + r"([ =,]|$)", helps[tuple(cmd)], re.M):
            bad.append("sluice %s has no %s" % (" ".join(cmd), opt))
print("\n".join(bad) if bad or n > 100 else "only %d options found in --keys" % n)
PY
)
expect_eq "$bad" ""

finish
