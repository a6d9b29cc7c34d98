#!/usr/bin/env bash
# sluice dedup fuzzy --backend redis against real Redis Clusters on loopback: the same
# answers as the memory backend (1 and 2 ranks, incremental), a master killed mid-run, a
# master restarted empty mid-run, and clusters that refuse, lack slots, answer CLUSTERDOWN
# or want a password. More faults: t_dedup_redis_faults.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_cluster.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "skip: redis-server/redis-cli not found (Debian redis-server, redis-tools)"
    finish
    exit 0
fi
# every server is stopped whatever happens
trap rc_stop EXIT

BASE=$(rc_free_base 20)
SEEDS="127.0.0.1:$BASE,127.0.0.1:$((BASE + 1)),127.0.0.1:$((BASE + 2))"
rc_start "$T/rc" "$BASE" 3 1

mkdir -p "$T/gen"
$PY "$HERE/dedup_gen.py" "$T/gen" 21 2500 3
cmp_out() { # DIR_A DIR_B: same shards and side files
    local f
    for f in "$1"/duplicates.jsonl "$1"/clusters.jsonl "$1"/part-*.jsonl.zst; do
        cmp -s "$f" "$2/$(basename "$f")" && ok || fail "$(basename "$f") differs ($1 vs $2)"
    done
}
total_keys() { local n=0 p; for p in "${RC_PORTS[@]}"; do
    k=$(redis-cli -p "$p" dbsize 2>/dev/null || echo 0); [ "$(redis-cli -p "$p" role 2>/dev/null | head -1)" = master ] && n=$((n + k)); done; echo $n; }

case_ "memory reference"
run "$SLUICE" dedup fuzzy --verify --out "$T/mem" "$T/gen"
expect_rc 0

case_ "redis backend: the same outputs as memory"
run "$SLUICE" dedup fuzzy --verify --backend redis --redis "$SEEDS" --out "$T/red" "$T/gen"
expect_rc 0
expect_no_err "no synced replica"
cmp_out "$T/mem" "$T/red"
expect_eq "$(total_keys)" 0 "(the run's buckets are deleted)"

if have_mpi; then
    case_ "redis backend under mpirun -np 2: the same outputs"
    run "${MPIRUN[@]}" -np 2 "$SLUICE" dedup fuzzy --verify --backend redis --redis "$SEEDS" \
        --out "$T/red2" "$T/gen"
    expect_rc 0
    cmp_out "$T/mem" "$T/red2"
fi

case_ "redis backend --rehydrate: the cluster sizes and repeats of memory"
run "$SLUICE" dedup fuzzy --verify --rehydrate --out "$T/mem-rh" "$T/gen"
expect_rc 0
run "$SLUICE" dedup fuzzy --verify --rehydrate --backend redis --redis "$SEEDS" --out "$T/red-rh" "$T/gen"
expect_rc 0
cmp_out "$T/mem-rh" "$T/red-rh"
[ "$(json "$T/red-rh/manifest.json" "m['counts']['documents_rehydrated']")" -gt 0 ] && ok ||
    fail "no document rehydrated"

case_ "redis incremental: the same removals as memory incremental"
run "$SLUICE" dedup fuzzy --out "$T/mi-a" --index-out "$T/midx" "$T/gen/part-0.jsonl"
expect_rc 0
run "$SLUICE" dedup fuzzy --out "$T/mi-b" --index-in "$T/midx" "$T/gen/part-1.jsonl" "$T/gen/part-2.jsonl"
expect_rc 0
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$T/ri-a" --index-out "$T/ridx" \
    "$T/gen/part-0.jsonl"
expect_rc 0
expect_eq "$(json "$T/ridx/meta.json" "m['backend']")" redis
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$T/ri-b" --index-in "$T/ridx" \
    "$T/gen/part-1.jsonl" "$T/gen/part-2.jsonl"
expect_rc 0
cmp_out "$T/mi-b" "$T/ri-b"
run "$SLUICE" dedup fuzzy --out "$T/x" --index-in "$T/ridx" "$T/gen/part-1.jsonl"
expect_rc 1; expect_err "was built with --backend redis"

case_ "a master killed mid-run: the run completes through the promoted replica"
SLUICE_REDIS_PAUSE_MS=250 "$SLUICE" dedup fuzzy --verify --backend redis --redis "$SEEDS" \
    --out "$T/kill" "$T/gen" >"$T/kill.out" 2>"$T/kill.err" &
spid=$!
for _ in $(seq 300); do
    [ "$(redis-cli -p "$BASE" dbsize 2>/dev/null || echo 0)" -gt 0 ] && break
    sleep 0.05
done
# the master's replica must have finished its sync (and caught up) before the master dies:
# a replica still in its first full sync refuses to fail over and the cluster stays down
redis-cli -p "$BASE" info replication | tr -d '\r' | grep -q '^connected_slaves:[1-9]' && ok ||
    fail "master $BASE has no replica"
rc_wait_synced "${RC_PORTS[@]}" && ok || fail "replicas not in sync before the kill"
kill -9 "${RC_PIDS[0]}"
set +e; wait $spid; krc=$?; set -e
cp "$T/kill.err" "$T/err"; : >"$T/out"
if [ $krc -eq 0 ]; then
    ok
    cmp_out "$T/mem" "$T/kill"
else
    # allowed: a clear error and a state that a second run completes
    expect_err "did not recover"
    expect_no_file "$T/kill/manifest.json"
    run "$SLUICE" dedup fuzzy --verify --backend redis --redis "$SEEDS" --out "$T/kill" "$T/gen"
    expect_rc 0
    cmp_out "$T/mem" "$T/kill"
fi
echo "ok master killed: exit $krc; $(grep -c . "$T/kill.err") stderr lines"

case_ "a master without a synced replica is named at the start"
# the promoted replica has no replica of its own now (its old master is dead)
run "$SLUICE" dedup fuzzy --backend redis --redis "$SEEDS" --out "$T/unsynced" "$T/gen"
expect_rc 0
expect_err "has no synced replica: if it fails, the run stops"
expect_err "master_link_status:up"

case_ "a master restarted empty mid-run (its replica re-syncs from it): an error naming it"
# the second master and its replica; restarted at once, the master keeps its slots (no
# failover: that needs it gone for cluster-node-timeout) and comes back with no keys
P1=$((BASE + 1))
rc_wait_synced "${RC_PORTS[@]}" && ok || fail "replicas not in sync before the restart"
SLUICE_REDIS_PAUSE_MS=250 "$SLUICE" dedup fuzzy --verify --backend redis --redis "$SEEDS" \
    --out "$T/restart" "$T/gen" >"$T/restart.out" 2>"$T/restart.err" &
spid=$!
# buckets on it, not only the run's own keys (its ~5,500 slot markers and the lease): a
# restart before the first bucket loses nothing, and the run rightly completes
for _ in $(seq 300); do
    [ "$(redis-cli -p "$P1" dbsize 2>/dev/null || echo 0)" -gt 8000 ] && break
    sleep 0.05
done
redis-cli -p "$P1" shutdown nosave >/dev/null 2>&1 || true
rc_server "$T/rc/$P1" --port "$P1" --cluster-enabled yes --cluster-config-file "$T/rc/$P1/nodes.conf" \
    --cluster-node-timeout 2000
set +e; wait $spid; rrc=$?; set -e
cp "$T/restart.err" "$T/err"; : >"$T/out"
echo "ok restarted master with a replica: exit $rrc, role now $(rc_info "$P1" role)"
# never a silent wrong answer: the error naming the node, or (failed over to the replica,
# which has the keys, or restarted before it held anything of the run) the right output
if [ $rrc -ne 0 ]; then
    rc=$rrc; expect_rc 1
    expect_err "redis node '127.0.0.1:$P1' restarted during the run"
    expect_no_file "$T/restart/manifest.json"
else
    cmp_out "$T/mem" "$T/restart"
fi
run "$SLUICE" dedup fuzzy --verify --backend redis --redis "$SEEDS" --out "$T/restart" "$T/gen"
expect_rc 0
cmp_out "$T/mem" "$T/restart"

case_ "a node that refuses connections"
run "$SLUICE" dedup fuzzy --backend redis --redis "127.0.0.1:$((BASE + 19))" --out "$T/refused" "$T/gen"
expect_rc 1; expect_err "cannot reach any Redis Cluster node"; expect_err "$((BASE + 19))"
expect_err "refused"

case_ "a node that is not in a cluster, and one with no slots"
P1=$((BASE + 9)); P2=$((BASE + 10))
rc_server "$T/p1" --port $P1
rc_server "$T/p2" --port $P2 --cluster-enabled yes --cluster-config-file "$T/p2/nodes.conf" \
    --requirepass sekrit
run "$SLUICE" dedup fuzzy --backend redis --redis "127.0.0.1:$P1" --out "$T/nocl" "$T/gen"
expect_rc 1; expect_err "is not part of a cluster"
run "$SLUICE" dedup fuzzy --backend redis --redis "127.0.0.1:$P2" --out "$T/noauth" "$T/gen"
expect_rc 1; expect_err "authentication failed on redis node '127.0.0.1:$P2': NOAUTH"
expect_err "SLUICE_REDIS_PASSWORD"; expect_no_err "cannot reach"
SLUICE_REDIS_PASSWORD=wrong-pw-7431 run "$SLUICE" dedup fuzzy --backend redis --redis "127.0.0.1:$P2" \
    --out "$T/badauth" "$T/gen"
expect_rc 1; expect_err "authentication failed on redis node '127.0.0.1:$P2': AUTH refused"
expect_no_err "wrong-pw-7431"
SLUICE_REDIS_PASSWORD=sekrit run "$SLUICE" dedup fuzzy --backend redis --redis "127.0.0.1:$P2" \
    --out "$T/noslots" "$T/gen"
expect_rc 1; expect_err "16384 of 16384 slots have no master"

case_ "a cluster that answers CLUSTERDOWN: a clear error after --redis-timeout, resumable"
rc_stop
B2=$((BASE + 12))
rc_start "$T/rc2" "$B2" 3 0
kill -9 "${RC_PIDS[2]}"
for _ in $(seq 200); do
    redis-cli -p "$B2" cluster info 2>/dev/null | grep -q cluster_state:fail && break
    sleep 0.1
done
run "$SLUICE" dedup fuzzy --backend redis --redis "127.0.0.1:$B2" --redis-timeout 2 --out "$T/down" "$T/gen"
expect_rc 1; expect_err "did not recover within 2 s"
# the dead master refuses connections, the others answer CLUSTERDOWN: either is named
grep -q -e "CLUSTERDOWN" -e "127.0.0.1:$((B2 + 2)): Connection refused" "$T/err" && ok ||
    fail "the error names neither CLUSTERDOWN nor the dead node"
expect_err "resumable"; expect_no_file "$T/down/manifest.json"; expect_file "$T/down/.sluice/plan.json"

finish
