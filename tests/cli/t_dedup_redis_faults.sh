#!/usr/bin/env bash
# sluice dedup fuzzy --backend redis when the cluster or another run works against it: a
# master restarted empty mid-run, an evicting maxmemory-policy (at the start, and set
# during a run), two identical runs at once, a killed run's keys under a reused
# --redis-prefix, an index prefix with other settings, an index extended in place by a
# later run. Every run that exits 0 gives the memory backend's outputs on the same input;
# every other run stops with an error that names the node or the run in the way, and the
# same command run again completes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_cluster.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "skip: redis-server/redis-cli not found (Debian redis-server, redis-tools)"
    finish
    exit 0
fi
trap rc_stop EXIT

# three masters, no replicas: a master that restarts keeps its slots and comes back empty
BASE=$(rc_free_base 3)
SEEDS="127.0.0.1:$BASE,127.0.0.1:$((BASE + 1)),127.0.0.1:$((BASE + 2))"
rc_start "$T/rc" "$BASE" 3 0

mkdir -p "$T/x" "$T/y"
$PY "$HERE/dedup_gen.py" "$T/x" 7 800 2
$PY "$HERE/dedup_gen.py" "$T/y" 8 800 2
run "$SLUICE" dedup fuzzy --out "$T/mem-x" "$T/x"
expect_rc 0
run "$SLUICE" dedup fuzzy --out "$T/mem-y" "$T/y"
expect_rc 0

cmp_out() { # DIR_A DIR_B: same shards and side files
    local f
    for f in "$1"/duplicates.jsonl "$1"/clusters.jsonl "$1"/part-*.jsonl.zst; do
        cmp -s "$f" "$2/$(basename "$f")" && ok || fail "$(basename "$f") differs ($1 vs $2)"
    done
}
removed() { json "$1/manifest.json" "m['counts']['duplicates_removed']"; }
total_keys() { local n=0 p; for p in "${RC_PORTS[@]}"; do n=$((n + $(redis-cli -p "$p" dbsize))); done; echo $n; }
# wait_keys PORT: until the node holds keys (a run in the background has begun writing)
wait_keys() {
    for _ in $(seq 400); do
        [ "$(redis-cli -p "$1" dbsize 2>/dev/null || echo 0)" -gt 0 ] && return 0
        sleep 0.025
    done
    fail "no keys appeared on node $1"
}
# wait_quiet PORT: until the node holds keys and their number stands still for 0.1 s (a
# run in the background is between two batches)
wait_quiet() {
    local a b
    wait_keys "$1"
    for _ in $(seq 100); do
        a=$(redis-cli -p "$1" dbsize); sleep 0.1; b=$(redis-cli -p "$1" dbsize)
        [ "$a" = "$b" ] && return 0
    done
    fail "node $1 never stood still"
}
# bg OUT ARGS...: a redis run, slowed down between its batches, in the background ($bgpid);
# its stderr goes to OUT.err
bg() {
    local out=$1
    shift
    SLUICE_REDIS_PAUSE_MS=400 "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$out" \
        "$@" >"$out.out" 2>"$out.err" &
    bgpid=$!
}
# bg_wait: exit status of the background run in $rc, its stderr in $T/err
bg_wait() {
    set +e; wait "$bgpid"; rc=$?; set -e
    cp "$bgout.err" "$T/err"; : >"$T/out"
}

case_ "the redis backend gives the memory backend's outputs"
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$T/red-x" "$T/x"
expect_rc 0
cmp_out "$T/mem-x" "$T/red-x"
expect_eq "$(total_keys)" 0 "(the run's keys are deleted)"

case_ "a master restarted empty mid-run: an error naming it; the same command then completes"
bgout=$T/restart; bg "$bgout" "$T/x"
wait_keys "$BASE"
redis-cli -p "$BASE" shutdown nosave >/dev/null 2>&1 || true
rc_server "$T/rc/$BASE" --port "$BASE" --cluster-enabled yes \
    --cluster-config-file "$T/rc/$BASE/nodes.conf" --cluster-node-timeout 2000
bg_wait
expect_rc 1
expect_err "redis node '127.0.0.1:$BASE' restarted during the run"
expect_err "resumable"
expect_no_file "$T/restart/manifest.json"
rc_wait_ok "$BASE" 3
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$T/restart" "$T/x"
expect_rc 0
cmp_out "$T/mem-x" "$T/restart"
echo "ok restarted master: the rerun removed $(removed "$T/restart") of them as memory did ($(removed "$T/mem-x"))"

case_ "an evicting maxmemory-policy is refused at the start"
P1=$((BASE + 1))
redis-cli -p "$P1" config set maxmemory-policy allkeys-lru >/dev/null
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$T/lru" "$T/x"
expect_rc 1
expect_err "redis node '127.0.0.1:$P1' has maxmemory-policy 'allkeys-lru'"
expect_err "noeviction"
expect_eq "$(total_keys)" 0 "(nothing was written)"
redis-cli -p "$P1" config set maxmemory-policy noeviction >/dev/null

case_ "keys evicted during the run: an error naming the node"
bgout=$T/evict; bg "$bgout" "$T/x"
wait_quiet "$P1"
# between two batches of the run: evict the node's keys (INFO, like any command, makes a
# node over its maxmemory evict), and stop evicting before the run writes again
printf '%s\n' "config set maxmemory-policy allkeys-lru" "config set maxmemory 1" "info stats" \
    "config set maxmemory 0" "config set maxmemory-policy noeviction" |
    redis-cli -p "$P1" | tr -d '\r' | grep '^evicted_keys:[1-9]' >/dev/null && ok || fail "nothing evicted"
bg_wait
expect_rc 1
expect_err "redis node '127.0.0.1:$P1' evicted"
expect_no_file "$T/evict/manifest.json"
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$T/evict" "$T/x"
expect_rc 0
cmp_out "$T/mem-x" "$T/evict"

case_ "two identical runs at once: the second is refused and names the first"
bgout=$T/first; bg "$bgout" "$T/x"
wait_keys "$BASE"
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$T/second" "$T/x"
expect_rc 1
expect_err "is in use by another run"
expect_err "pid $bgpid"
expect_err "$(hostname)"
second_err=$(cat "$T/err")
bg_wait
expect_rc 0
cmp_out "$T/mem-x" "$T/first"
echo "ok second run: $(grep -m1 error <<<"$second_err")"
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$T/second" "$T/x"
expect_rc 0
cmp_out "$T/mem-x" "$T/second"
expect_eq "$(total_keys)" 0

case_ "a killed run's keys under the same --redis-prefix are not read by the next run"
# the killed run read y's second file as its file 0: its buckets name documents that are
# in y's first file for the next run
bgout=$T/killed; bg "$bgout" --redis-prefix reused "$T/y/part-1.jsonl"
wait_keys "$BASE"
kill -9 "$bgpid"
{ wait "$bgpid"; } 2>/dev/null || true
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --redis-prefix reused --out "$T/reused" "$T/y"
expect_rc 0
cmp_out "$T/mem-y" "$T/reused"
expect_eq "$(total_keys)" 0 "(the killed run's keys are gone too)"
echo "ok reused prefix: $(removed "$T/reused") removed, memory $(removed "$T/mem-y")"

case_ "a lock left by a run on another host is waited out"
redis-cli -c -p "$BASE" set reused:lock "host=elsewhere pid=1 start=0 ns=- started=2000-01-01T00:00:00Z" \
    px 1500 >/dev/null
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --redis-prefix reused --out "$T/waited" "$T/y"
expect_rc 0
cmp_out "$T/mem-y" "$T/waited"

case_ "a lock that a run on another host renews is refused"
redis-cli -c -p "$BASE" set reused:lock "host=elsewhere pid=7 start=0 ns=- started=2000-01-01T00:00:00Z" \
    px 3000 >/dev/null
( for _ in $(seq 40); do redis-cli -c -p "$BASE" pexpire reused:lock 3000 >/dev/null; sleep 0.2; done ) &
renewer=$!
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --redis-prefix reused --out "$T/renewed" "$T/y"
kill "$renewer" 2>/dev/null || true
{ wait "$renewer"; } 2>/dev/null || true
redis-cli -c -p "$BASE" del reused:lock >/dev/null
expect_rc 1
expect_err "redis prefix 'reused' is in use by another run (host elsewhere, pid 7, started 2000-01-01T00:00:00Z): it renews its lease"

case_ "an index prefix written with other settings is refused"
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --redis-prefix ix --index-out "$T/ix1" \
    --out "$T/ix1o" "$T/x"
expect_rc 0
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --redis-prefix ix --index-out "$T/ix2" \
    --bands 10 --out "$T/ix2o" "$T/y"
expect_rc 1
expect_err "redis prefix 'ix' holds a dedup index written with other settings"
expect_err "\"bands\":14"

case_ "an index extended in place is refused through its older directory"
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --index-in "$T/ix1" --index-out "$T/ix1b" \
    --out "$T/grow" "$T/y/part-0.jsonl"
expect_rc 0
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --index-in "$T/ix1" --out "$T/stale" \
    "$T/y/part-1.jsonl"
expect_rc 1
expect_err "the index under redis prefix 'ix' is at generation 1, but '$T/ix1' is generation 0: a later run"
expect_err "use the index directory that run wrote"
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --index-in "$T/ix1b" --out "$T/fresh" \
    "$T/y/part-1.jsonl"
expect_rc 0

case_ "a cluster with a password: without it an authentication error naming the node; with it"
PW=pw-5150-not-in-any-log
for p in "${RC_PORTS[@]}"; do redis-cli -p "$p" config set requirepass "$PW" >/dev/null; done
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$T/noauth" "$T/x"
expect_rc 1
expect_err "authentication failed on redis node '127.0.0.1:"
expect_err "NOAUTH"; expect_err "SLUICE_REDIS_PASSWORD"; expect_no_err "cannot reach"
SLUICE_REDIS_PASSWORD=$PW run "$SLUICE" -v dedup fuzzy --backend redis --redis "$SEEDS" \
    --out "$T/auth" "$T/x"
expect_rc 0
cmp_out "$T/mem-x" "$T/auth"
expect_no_err "$PW"
grep -rqF -- "$PW" "$T/auth" && fail "the password is in the outputs" || ok

finish
