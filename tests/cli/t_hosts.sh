#!/usr/bin/env bash
# Runs across hosts: three network namespaces on a bridge (tests/cli/lib_hosts.sh), two
# ranks on each, started by mpirun from a login host through Open MPI's rsh agent and
# talking TCP over the bridge. The pipeline extract -> clean -> filter -> dedup exact ->
# dedup fuzzy -> tokenize on 6 ranks over 3 hosts writes the bytes of one rank on one host;
# fuzzy dedup against a Redis Cluster with a master and a replica on each host (each
# master's replica on another host) gives the memory backend's answer.
# sanitizer build: skip (the watchdog and the collectives run under the sanitizers in t_mpi.sh and every other mpirun test; across hosts only the transport differs)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_hosts.sh"

have_mpi || { echo "SKIP: mpirun not found (install openmpi-bin)"; finish; exit 0; }
hosts_up 3

mkdir -p "$T/in" "$T/gpt2"
# real web text with exact and near duplicates (814 documents: 456 pass the filter, 3 exact
# and 4 near duplicates among them) and 107 versions of the UDHR
cp "$ROOT"/examples/jsonl/CC-MAIN-*.jsonl.gz "$FIX/jsonl/cc_en_head-0091.jsonl.gz" \
    "$FIX/dedup/udhr.jsonl.zst" "$T/in/"
zstd -q -d "$FIX/tokenizer/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$FIX/tokenizer/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
cat >"$T/p.yaml" <<YAML
name: hosts
extract:
  format: jsonl
  in: $T/in
clean: {}
filter:
  config: $ROOT/configs/filters/c4.yaml
dedup_exact: {}
dedup_fuzzy: {}
tokenize:
  tokenizer: gpt2:$T/gpt2
  append_eod: true
YAML
# same_outputs A B: every shard, token file and side file of run A is in run B, byte for byte
same_outputs() {
    local f n=0
    for f in $(cd "$1" && find . -name 'part-*' -o -name '*.bin' -o -name '*.idx' \
        -o -name 'duplicates.jsonl' -o -name 'clusters.jsonl' | sort); do
        cmp -s "$1/$f" "$2/$f" && ok || fail "$f differs ($1 vs $2)"
        n=$((n + 1))
    done
    [ "$n" -gt 10 ] && ok || fail "only $n files compared"
}

case_ "the world's collectives on 2 ranks on each of 3 hosts"
run on hl timeout 120 "${HOSTS_MPIRUN[@]}" --hostfile "$HOSTS_FILE" -np 6 "${SLUICE_BUILD:-$(dirname "$SLUICE")}/test_world"
expect_rc 0; expect_out "ok 6 ranks"

case_ "one rank on one host"
run "$SLUICE" run "$T/p.yaml" work_dir="$T/one"
expect_rc 0; expect_out "6 of 6 steps ran"

case_ "2 ranks on each of 3 hosts: the bytes of one rank"
tx0=$(host_tx h2)
start=$SECONDS
run on hl timeout 300 "${HOSTS_MPIRUN[@]}" --hostfile "$HOSTS_FILE" -np 6 "$SLUICE" run "$T/p.yaml" \
    work_dir="$T/six"
expect_rc 0; expect_out "6 of 6 steps ran"
sent=$(($(host_tx h2) - tx0))
echo "measured: pipeline on 3 hosts x 2 ranks: $((SECONDS - start)) s, host h2 sent $sent bytes over its link"
# its ranks' share of the exchanges went over the bridge (about 84 kB)
[ "$sent" -gt 20000 ] && ok || fail "host h2 sent only $sent bytes over its link"
same_outputs "$T/one" "$T/six"
for s in extract clean filter dedup_exact dedup_fuzzy; do
    expect_eq "$(json "$T/six/$s/manifest.json" "m['ranks']")" 6
    expect_eq "$(json "$T/six/$s/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
        "$(json "$T/one/$s/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
done

case_ "fuzzy dedup on 6 ranks over 3 hosts against a Redis Cluster across them: the memory backend's answer"
if hosts_redis "$T/redis"; then
    ok
    run on hl timeout 300 "${HOSTS_MPIRUN[@]}" --hostfile "$HOSTS_FILE" -np 6 "$SLUICE" dedup fuzzy \
        --backend redis --redis "$HOSTS_REDIS" --out "$T/red" "$T/one/dedup_exact"
    expect_rc 0
    expect_no_err "no synced replica"
    for f in duplicates.jsonl clusters.jsonl $(cd "$T/one/dedup_fuzzy" && ls part-*); do
        cmp -s "$T/one/dedup_fuzzy/$f" "$T/red/$f" && ok || fail "$f differs from the memory backend's"
    done
    expect_eq "$(json "$T/red/manifest.json" "m['counts']['duplicates_removed']")" \
        "$(json "$T/one/dedup_fuzzy/manifest.json" "m['counts']['duplicates_removed']")"
    # every master's keys on its host; the run deletes them
    keys=0
    for h in "${HOSTS[@]}"; do keys=$((keys + $(hosts_redis_cli "$h" 7000 dbsize))); done
    expect_eq "$keys" 0 "(keys left on the masters)"

    case_ "ranks asleep outside MPI for twice the watchdog's timeout: no rank is taken for lost"
    # each rank sleeps 4 s after each of its batches, while the ranks done first wait in
    # the next collective; their watchdog threads still beat
    run on hl timeout 300 "${HOSTS_MPIRUN[@]}" -x SLUICE_MPI_TIMEOUT=2 -x SLUICE_REDIS_PAUSE_MS=4000 \
        --hostfile "$HOSTS_FILE" -np 6 "$SLUICE" dedup fuzzy --backend redis --redis "$HOSTS_REDIS" \
        --out "$T/slow" "$T/one/dedup_exact"
    expect_rc 0; expect_no_err "is lost"
    cmp -s "$T/one/dedup_fuzzy/duplicates.jsonl" "$T/slow/duplicates.jsonl" && ok ||
        fail "duplicates.jsonl differs from the memory backend's"
else
    fail "cannot start the Redis Cluster over the hosts"
fi

case_ "SLUICE_MPI_TIMEOUT that is not a number of seconds: refused at the start"
run on hl timeout 60 "${HOSTS_MPIRUN[@]}" -x SLUICE_MPI_TIMEOUT=soon --hostfile "$HOSTS_FILE" -np 2 \
    "$SLUICE" reshard --out "$T/bad" "$T/in"
expect_rc 1
expect_err "SLUICE_MPI_TIMEOUT='soon' is not a number of seconds from 0 to 86400"
expect_no_file "$T/bad/manifest.json"

finish
