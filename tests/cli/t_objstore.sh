#!/usr/bin/env bash
# Remote inputs: s3://, http(s):// and hf:// operands, against moto's S3 server (PyPI moto
# 5.1.18, tests/requirements.txt) started here on 127.0.0.1 with its IAM authentication on
# (INITIAL_NO_AUTH_ACTION_COUNT: the first 3 requests, which create the IAM user, its policy
# and its key, go unchecked; every later request must carry a valid AWS Signature V4 of
# that key, or moto answers 403 SignatureDoesNotMatch / InvalidAccessKeyId): so the
# signatures libcurl makes for sluice are checked by the server itself. In front of it, a
# Python proxy (helpers/objstore_server.py) injects 503 SlowDown and connections dropped
# mid-body, and serves the Hugging Face hub's URL layout (resolve, tree API with Link
# pages, a bearer token). Shown: listing with pagination, range reads, a stage reading
# from the store with output identical to the local-disk run, retries, wrong credentials,
# hf://, a redirect to file:// refused, and no secret in any output or file written.
# moto's check has one quirk: it signs again from the query string as it decoded it, so a
# listing whose prefix holds a '/' (sent as %2F, as AWS wants it) is refused there, for
# boto3 too: the listings here are of a bucket's root and of hub folders.
# Only http:// is served here: https:// takes the same path through libcurl, whose
# protocols are restricted to http and https for every request and redirect.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

MOTO="$ROOT/.venv/bin/moto_server"
if [ ! -x "$MOTO" ] || ! "$PY" -c 'import moto, boto3' 2>/dev/null; then
    echo "SKIP: moto's server and boto3 are not in $ROOT/.venv (tests/requirements.txt)"
    finish
    exit 0
fi

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

mport=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
INITIAL_NO_AUTH_ACTION_COUNT=3 "$MOTO" -H 127.0.0.1 -p "$mport" >"$T/moto.log" 2>&1 &
pids+=($!)
mkdir -p "$T/hub/org/corpus/data/sub" "$T/local"
KEYS_FILE="$T/keys" HUB_TOKEN=hf_hubsecret0123456789 "$PY" "$(dirname "$0")/helpers/objstore_server.py" \
    "$T/port" "$T/log" "127.0.0.1:$mport" "$T/hub" 150 &
pids+=($!)
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
port=$(cat "$T/port")
# moto takes seconds to import: wait until it accepts connections (a connection is no
# request, and counts for nothing against INITIAL_NO_AUTH_ACTION_COUNT)
for _ in $(seq 300); do (: </dev/tcp/127.0.0.1/"$mport") 2>/dev/null && break; sleep 0.1; done
EP="http://127.0.0.1:$port"

SECRET=wJalrSecret0123456789abcdefghijklmnopqrst
# the corpus: plain, zstd and gzip files (two larger than a range read), a hidden one and
# one of another extension; every document has an id, so that the shards do not depend on
# where a file was read from
"$PY" - "$T/local/data" <<'PY'
import json, os, random, sys
random.seed(7)
d = sys.argv[1]
os.makedirs(d + "/sub", exist_ok=True)
names = ["a.jsonl", "b.jsonl", "c.jsonl", "drop-d.jsonl", "flaky-e.jsonl", "sub/f.jsonl", ".hidden.jsonl"]
for i, n in enumerate(names):
    with open(os.path.join(d, n), "w") as f:
        for k in range(40 + 60 * (i % 3)):
            text = "doc %d of %s: " % (k, n) + " ".join(random.choice(["caf\u00c3\u00a9", "&amp;", "word", "  x  "]) for _ in range(random.randint(1, 60)))
            f.write(json.dumps({"id": "%s-%d" % (n, k), "text": text}) + "\n")
with open(os.path.join(d, "notes.txt"), "w") as f:
    f.write("not an input\n")
PY
zstd -q --rm "$T/local/data/b.jsonl" && gzip -n "$T/local/data/c.jsonl"
cp -r "$T/local/data/." "$T/hub/org/corpus/data/"

# IAM user, policy and key (the 3 unchecked requests), then the bucket and the corpus,
# uploaded with the key's signatures
"$PY" - "$EP" "$T/local/data" "$T/keys" <<'PY'
import boto3, json, os, sys
ep, d, out = sys.argv[1:4]
kw = dict(endpoint_url=ep, region_name="us-east-1")
iam = boto3.client("iam", aws_access_key_id="x", aws_secret_access_key="y", **kw)
iam.create_user(UserName="u")
iam.put_user_policy(UserName="u", PolicyName="all", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
k = iam.create_access_key(UserName="u")["AccessKey"]
s3 = boto3.client("s3", aws_access_key_id=k["AccessKeyId"], aws_secret_access_key=k["SecretAccessKey"], **kw)
s3.create_bucket(Bucket="corpora")
s3.create_bucket(Bucket="corpora-empty")
s3.create_bucket(Bucket="corpora-out")
for dp, dn, fn in os.walk(d):
    for n in fn:
        p = os.path.join(dp, n)
        s3.upload_file(p, "corpora", os.path.relpath(p, d))
with open(out, "w") as f:
    f.write("%s %s\n" % (k["AccessKeyId"], k["SecretAccessKey"]))
PY
read -r KEY_ID KEY_SECRET <"$T/keys"
export AWS_ENDPOINT_URL="$EP" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID="$KEY_ID" AWS_SECRET_ACCESS_KEY="$KEY_SECRET"
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_DEFAULT_REGION AWS_ENDPOINT_URL_S3 HF_TOKEN HF_ENDPOINT || true
export AWS_SHARED_CREDENTIALS_FILE="$T/no-credentials" AWS_CONFIG_FILE="$T/no-config"
# every output of sluice is kept here, to be searched for secrets at the end
mkdir -p "$T/said"
said=0
keep() { said=$((said + 1)); cp "$T/out" "$T/said/$said.out"; cp "$T/err" "$T/said/$said.err"; }

case_ "the local-disk run: the reference"
run "$SLUICE" clean -q --out "$T/ref" "$T/local/data"
expect_rc 0
expect_eq "$(json "$T/ref/manifest.json" "len(m['outputs'])")" 6

case_ "s3:// prefix: listed page by page (2 keys a page), read in 4 KiB ranges, through 503 SlowDown and a connection dropped mid-body; shards identical to the local run"
: >"$T/log"
SLUICE_S3_MAX_KEYS=2 SLUICE_REMOTE_CHUNK=4096 run "$SLUICE" clean -q --out "$T/s3out" s3://corpora
keep
expect_rc 0
for f in "$T"/ref/part-*.jsonl.zst; do
    cmp -s "$f" "$T/s3out/$(basename "$f")" && ok || fail "$(basename "$f") differs from the local run"
done
expect_eq "$(json "$T/s3out/manifest.json" "[i['path'] for i in m['inputs']]")" \
    "['s3://corpora/a.jsonl', 's3://corpora/b.jsonl.zst', 's3://corpora/c.jsonl.gz', 's3://corpora/drop-d.jsonl', 's3://corpora/flaky-e.jsonl', 's3://corpora/sub/f.jsonl']"
# 8 keys, 2 a page: 4 list requests, the later three with a continuation token
expect_eq "$(grep -c 'GET /corpora?list-type=2&max-keys=2&prefix= ' "$T/log")" 1
expect_eq "$(grep -c 'GET /corpora?continuation-token=.*&list-type=2&max-keys=2&prefix= ' "$T/log")" 3
grep -q 'GET /corpora/a.jsonl bytes=4096-8191 206' "$T/log" && ok || fail "no second range of a.jsonl: $(head -c 3000 "$T/log")"
expect_eq "$(grep -c 'GET /corpora/flaky-e.jsonl bytes=0-4095 503' "$T/log")" 2
grep -q 'GET /corpora/drop-d.jsonl bytes=0-4095 206-dropped' "$T/log" && ok || fail "no dropped answer"
grep -q 'GET /corpora/drop-d.jsonl bytes=[1-9][0-9]*-4095 206' "$T/log" && ok || fail "the dropped range was not resumed from where it stopped: $(grep drop-d "$T/log")"

case_ "a Parquet object read by row groups in ranges: the footer first, then column chunks; the file split into parts as on disk, shards identical to the local file's"
"$PY" - "$T/local/fw.parquet" "$EP" "$KEY_ID" "$KEY_SECRET" <<'PY'
import boto3, sys
import pyarrow as pa, pyarrow.parquet as pq
path, ep, kid, sec = sys.argv[1:5]
rows = [{"id": "fw-%d" % i, "text": "row %d: " % i + "caf\u00e9 words and more words " * (i % 17 + 1),
         "url": "https://example.org/%d" % i, "score": i / 7} for i in range(600)]
pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=100, compression="zstd")
s3 = boto3.client("s3", endpoint_url=ep, region_name="us-east-1", aws_access_key_id=kid, aws_secret_access_key=sec)
s3.create_bucket(Bucket="tables")
s3.upload_file(path, "tables", "fw.parquet")
PY
pqsize=$(stat -c %s "$T/local/fw.parquet")
SLUICE_PARQUET_UNIT_BYTES=4096 run "$SLUICE" clean -q --out "$T/pqlocal" "$T/local/fw.parquet"
expect_rc 0
: >"$T/log"
SLUICE_PARQUET_UNIT_BYTES=4096 run "$SLUICE" clean -q --out "$T/pqs3" s3://tables/fw.parquet
keep
expect_rc 0
nparts=$(json "$T/pqlocal/manifest.json" "len(m['outputs'])")
[ "$nparts" -gt 1 ] && ok || fail "the file was not split into parts: $nparts"
expect_eq "$(json "$T/pqs3/manifest.json" "len(m['outputs'])")" "$nparts"
for f in "$T"/pqlocal/part-*.jsonl.zst; do
    cmp -s "$f" "$T/pqs3/$(basename "$f")" && ok || fail "$(basename "$f") differs from the local run"
done
expect_eq "$(json "$T/pqs3/manifest.json" "m['counts']['documents_out']")" 600
grep -q "GET /tables/fw.parquet bytes=$((pqsize - 8))-$((pqsize - 1)) 206" "$T/log" && ok || fail "the footer's length was not read by a range: $(grep fw.parquet "$T/log" | head)"
grep -q "GET /tables/fw.parquet bytes=0-$((pqsize - 1)) " "$T/log" && fail "the whole object was fetched" || ok

case_ "s3://bucket/key: one object; the same shard as the local file"
run "$SLUICE" clean -q --out "$T/s3one" s3://corpora/b.jsonl.zst
keep
expect_rc 0
cmp -s "$T/ref/part-00001.jsonl.zst" "$T/s3one/part-00000.jsonl.zst" && ok || fail "shard differs"

case_ "a bucket without input files: an error naming it"
run "$SLUICE" clean -q --out "$T/s3none" s3://corpora-empty/
keep
expect_rc 1
expect_err "'s3://corpora-empty/' has no input files"

case_ "--cache-dir: the first run keeps a copy of each object (by URL and ETag), the second reads the copies (a HEAD each, no GET); the same shards"
: >"$T/log"
run "$SLUICE" clean -q --cache-dir "$T/cache" --out "$T/cache1" s3://corpora
keep
expect_rc 0
expect_eq "$(ls "$T/cache" | wc -l)" 6
expect_eq "$(cat "$T"/cache/* | wc -c)" "$(cat "$T"/local/data/[abcdf]* "$T"/local/data/sub/* | wc -c)"
: >"$T/log"
run "$SLUICE" clean -q --cache-dir "$T/cache" --out "$T/cache2" s3://corpora
keep
expect_rc 0
for f in "$T"/ref/part-*.jsonl.zst; do
    cmp -s "$f" "$T/cache2/$(basename "$f")" && ok || fail "$(basename "$f") differs from the local run"
done
expect_eq "$(grep -c '^GET /corpora/' "$T/log")" 0
expect_eq "$(grep -c '^HEAD /corpora/' "$T/log")" 6

case_ "wrong credentials: the bucket named, the server's words, a hint, no secret"
AWS_SECRET_ACCESS_KEY="$SECRET" run "$SLUICE" clean -q --out "$T/s3bad" s3://corpora/a.jsonl
keep
expect_rc 1
expect_err "bucket 'corpora'"
expect_err "SignatureDoesNotMatch"
expect_err "hint: the credentials from the environment (AWS_ACCESS_KEY_ID) were refused"
AWS_ACCESS_KEY_ID=AKIAWRONGWRONGWRONG0 AWS_SECRET_ACCESS_KEY="$SECRET" run "$SLUICE" clean -q --out "$T/s3bad" s3://corpora/
keep
expect_rc 1
expect_err "bucket 'corpora'"
expect_err "InvalidAccessKeyId"

case_ "credentials from a profile of the shared credentials file"
printf '[default]\naws_access_key_id = nope\naws_secret_access_key = nope\n\n[ci]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
    "$KEY_ID" "$KEY_SECRET" >"$T/credentials"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$T/credentials" AWS_PROFILE=ci \
    "$SLUICE" clean -q --out "$T/s3prof" s3://corpora/a.jsonl >"$T/out" 2>"$T/err" && rc=0 || rc=$?
keep
expect_rc 0
cmp -s "$T/ref/part-00000.jsonl.zst" "$T/s3prof/part-00000.jsonl.zst" && ok || fail "shard differs"

case_ "hf:// folder: the tree API page by page (2 a page), HF_TOKEN as a bearer token, resolve URLs"
: >"$T/log"
HF_ENDPOINT="$EP" HF_TOKEN=hf_hubsecret0123456789 run "$SLUICE" clean -q --out "$T/hfout" hf://datasets/org/corpus/data
keep
expect_rc 0
for f in "$T"/ref/part-*.jsonl.zst; do
    cmp -s "$f" "$T/hfout/$(basename "$f")" && ok || fail "$(basename "$f") differs from the local run"
done
expect_eq "$(grep -c 'GET /api/datasets/org/corpus/tree/main/data?recursive=true' "$T/log")" 4
grep -q 'GET /datasets/org/corpus/resolve/main/data/sub/f.jsonl bytes=0-' "$T/log" && ok || fail "no resolve URL read"

case_ "hf:// without the token: the hub's 401 and a hint"
HF_ENDPOINT="$EP" run "$SLUICE" clean -q --out "$T/hfbad" hf://datasets/org/corpus/data/a.jsonl
keep
expect_rc 1
expect_err "answered 401"
expect_err "hint: a gated or private dataset needs HF_TOKEN"

case_ "only http and https: a redirect to file:// is refused"
HF_ENDPOINT="$EP" HF_TOKEN=hf_hubsecret0123456789 run "$SLUICE" clean -q --out "$T/evil" hf://datasets/org/corpus/data/evil.jsonl
keep
expect_rc 1
expect_err "hf://datasets/org/corpus/data/evil.jsonl"

case_ "http(s):// URL with a token in its query string: read; shown as token=*** in the manifest, the plan and messages"
run "$SLUICE" clean -q --out "$T/urlout" "$EP/datasets/org/corpus/resolve/main/data/a.jsonl?token=hf_hubsecret0123456789"
keep
expect_rc 0
cmp -s "$T/ref/part-00000.jsonl.zst" "$T/urlout/part-00000.jsonl.zst" && ok || fail "shard differs"
expect_eq "$(json "$T/urlout/manifest.json" "m['inputs'][0]['path']")" "$EP/datasets/org/corpus/resolve/main/data/a.jsonl?token=***"
expect_eq "$(json "$T/urlout/manifest.json" "m['command'][-1]")" "$EP/datasets/org/corpus/resolve/main/data/a.jsonl?token=***"
run "$SLUICE" clean -q --out "$T/urlbad" "$EP/datasets/org/corpus/resolve/main/data/a.jsonl?token=$SECRET"
keep
expect_rc 1
expect_err "a.jsonl?token=***': the server answered 401"

# objects of the store, for comparison: s3get BUCKET PREFIX DIR (every key under PREFIX), by
# boto3 in the helper server
s3get() { curl -sf -o /dev/null "$EP/_test/get?bucket=$1&prefix=$2&out=$3"; }

case_ "--out s3://: shards, records and the manifest uploaded (the manifest last); shards identical to the local run; the lock deleted, no spool left"
: >"$T/log"
export TMPDIR="$T/tmp"
mkdir -p "$TMPDIR"
run "$SLUICE" clean -q --out s3://corpora-out/run1 s3://corpora
keep
cp "$T/log" "$T/log1"
expect_rc 0
s3get corpora-out run1/ "$T/got1"
for f in "$T"/ref/part-*.jsonl.zst; do
    cmp -s "$f" "$T/got1/$(basename "$f")" && ok || fail "$(basename "$f") differs from the local run"
done
expect_eq "$(json "$T/got1/manifest.json" "[(o['path'], o['documents']) for o in m['outputs']]")" \
    "$(json "$T/ref/manifest.json" "[(o['path'], o['documents']) for o in m['outputs']]")"
expect_eq "$(json "$T/got1/manifest.json" "[o['bytes'] for o in m['outputs']]")" \
    "$(json "$T/ref/manifest.json" "[o['bytes'] for o in m['outputs']]")"
expect_file "$T/got1/.sluice/plan.json"
expect_file "$T/got1/.sluice/part-00005.jsonl.zst.json"
expect_no_file "$T/got1/.sluice/lock"
expect_eq "$(tail -2 "$T/log1" | cut -d' ' -f1-2 | tr '\n' ' ')" "PUT /corpora-out/run1/manifest.json DELETE /corpora-out/run1/.sluice/lock "
expect_eq "$(ls -A "$TMPDIR")" ""

case_ "--out s3://: a shard over the part size goes up as a multipart upload (2 parts of 5 MiB and the rest)"
mkdir -p "$T/big"
"$PY" -c '
import base64, json, os, random, sys
random.seed(5)
with open(sys.argv[1], "w") as f:
    for k in range(8400):
        f.write(json.dumps({"id": "big-%d" % k, "text": base64.b64encode(random.randbytes(750)).decode()}) + "\n")
' "$T/big/big.jsonl"
run "$SLUICE" clean -q --out "$T/bigref" "$T/big"
expect_rc 0
: >"$T/log"
SLUICE_S3_PART=5242880 run "$SLUICE" clean -q --out s3://corpora-out/big "$T/big"
keep
expect_rc 0
s3get corpora-out big/ "$T/gotbig"
cmp -s "$T/bigref/part-00000.jsonl.zst" "$T/gotbig/part-00000.jsonl.zst" && ok || fail "multipart object differs: $(grep big/ "$T/log")"
expect_eq "$(grep -c 'POST /corpora-out/big/part-00000.jsonl.zst?uploads= .* 200' "$T/log")" 1
expect_eq "$(grep -c 'PUT /corpora-out/big/part-00000.jsonl.zst?partNumber=[12]&uploadId=.* 200' "$T/log")" 2
expect_eq "$(grep -c 'POST /corpora-out/big/part-00000.jsonl.zst?uploadId=.* 200' "$T/log")" 1

case_ "--out s3://: killed mid-run (held uploading part-00003), resumed: the lock of the dead run taken over, units 0-2 not written again, output identical"
: >"$T/log"
echo "run2/part-00003" >"$T/hold"
# in a subshell whose stderr is /dev/null: bash's "Killed" goes there
( "$SLUICE" clean -q --out s3://corpora-out/run2 s3://corpora >"$T/out" 2>"$T/err" &
  echo $! >"$T/victim"
  wait ) 2>/dev/null &
holder=$!
for _ in $(seq 100); do [ -s "$T/victim" ] && break; sleep 0.05; done
for _ in $(seq 300); do grep -q 'PUT /corpora-out/run2/.sluice/part-00002.jsonl.zst.json' "$T/log" && break; sleep 0.05; done
kill -9 "$(cat "$T/victim")"
wait "$holder" || true
rm -f "$T/hold"
keep
s3get corpora-out run2/ "$T/half"
expect_no_file "$T/half/manifest.json"
expect_file "$T/half/.sluice/lock"
: >"$T/log"
run "$SLUICE" clean -q --out s3://corpora-out/run2 s3://corpora
keep
expect_rc 0
s3get corpora-out run2/ "$T/got2"
for f in "$T"/ref/part-*.jsonl.zst; do
    cmp -s "$f" "$T/got2/$(basename "$f")" && ok || fail "$(basename "$f") differs from the local run"
done
expect_eq "$(grep -c 'PUT /corpora-out/run2/part-0000[012]' "$T/log")" 0
expect_eq "$(grep -c 'PUT /corpora-out/run2/part-0000[345].jsonl.zst - 200' "$T/log")" 3
expect_eq "$(json "$T/got2/manifest.json" "m['resumed']")" True
expect_eq "$(json "$T/got2/manifest.json" "m['counts']['documents_out']")" "$(json "$T/ref/manifest.json" "m['counts']['documents_out']")"

case_ "reshard from the store to the store, the endpoint given by --s3-endpoint: the shards of the local run"
run "$SLUICE" reshard -q --shards 2 --out "$T/rsref" "$T/local/data"
expect_rc 0
AWS_ENDPOINT_URL= run "$SLUICE" reshard -q --shards 2 --s3-endpoint "$EP" --out s3://corpora-out/rs s3://corpora
keep
expect_rc 0
s3get corpora-out rs/ "$T/gotrs"
for f in "$T"/rsref/part-*.jsonl.zst; do
    cmp -s "$f" "$T/gotrs/$(basename "$f")" && ok || fail "$(basename "$f") differs from the local run"
done

if have_mpi; then
    case_ "mpirun -np 2: the store read and written by two ranks, the shards of the local run"
    run "${MPIRUN[@]}" -np 2 -x AWS_ENDPOINT_URL -x AWS_REGION -x AWS_ACCESS_KEY_ID -x AWS_SECRET_ACCESS_KEY \
        -x AWS_SHARED_CREDENTIALS_FILE -x AWS_CONFIG_FILE -x TMPDIR "$SLUICE" clean -q --out s3://corpora-out/mpi s3://corpora
    keep
    expect_rc 0
    s3get corpora-out mpi/ "$T/gotmpi"
    for f in "$T"/ref/part-*.jsonl.zst; do
        cmp -s "$f" "$T/gotmpi/$(basename "$f")" && ok || fail "$(basename "$f") differs from the local run"
    done
    expect_eq "$(json "$T/gotmpi/manifest.json" "m['ranks']")" 2
fi

case_ "dedup exact to the store: its shards and duplicates.jsonl as the local run writes them; filter --split-by-language refused"
run "$SLUICE" dedup exact -q --out "$T/ddref" "$T/local/data"
expect_rc 0
run "$SLUICE" dedup exact -q --out s3://corpora-out/dd s3://corpora
keep
expect_rc 0
s3get corpora-out dd/ "$T/gotdd"
for f in "$T"/ddref/part-*.jsonl.zst "$T/ddref/duplicates.jsonl"; do
    cmp -s "$f" "$T/gotdd/$(basename "$f")" && ok || fail "$(basename "$f") differs from the local run"
done
expect_eq "$(json "$T/gotdd/manifest.json" "m['counts']['documents_out']")" "$(json "$T/ddref/manifest.json" "m['counts']['documents_out']")"
run "$SLUICE" filter -q --config "$ROOT/configs/filters/c4.yaml" --split-by-language --out s3://corpora-out/fl s3://corpora
expect_err "--split-by-language writes folders of shards, not yet to an object store"

case_ "--out s3://: a lock held by a run of another host refuses the run, naming it and how to clear it"
printf '{"host":"elsewhere","pid":1,"started":"2026-01-01T00:00:00Z","command":"sluice clean"}\n' >"$T/lockbody"
curl -sf -o /dev/null "$EP/_test/put?bucket=corpora-out&key=run3/.sluice/lock&file=$T/lockbody"
run "$SLUICE" clean -q --out s3://corpora-out/run3 s3://corpora
keep
expect_rc 1
expect_err "output 's3://corpora-out/run3' is in use by another run: {\"host\":\"elsewhere\""
expect_err "delete the object 's3://corpora-out/run3/.sluice/lock'"
unset TMPDIR

case_ "sluice run --dry-run: a stage's URL input shown with its token as ***"
printf 'name: t\nwork_dir: %s\nclean:\n  in:\n    - "%s"\n' "$T/wd" "$EP/datasets/org/corpus/resolve/main/data/a.jsonl?token=$SECRET" >"$T/p.yaml"
run "$SLUICE" run --dry-run "$T/p.yaml" stages=[clean]
keep
expect_rc 0
expect_out "a.jsonl?token=***'"

case_ "no secret anywhere: not in outputs, manifests, plans, records, messages"
s3get corpora-out "" "$T/store"
leaks=$(grep -rlF -e "$KEY_SECRET" -e "$SECRET" -e hf_hubsecret0123456789 "$T/said" "$T"/s3* "$T"/hf* "$T"/url* "$T"/evil "$T/store" 2>/dev/null || true)
expect_eq "$leaks" ""

finish
