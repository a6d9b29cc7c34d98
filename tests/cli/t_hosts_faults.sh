#!/usr/bin/env bash
# Faults across hosts (tests/cli/lib_hosts.sh: 3 hosts, 2 ranks each, a Redis Cluster with
# a master and a replica on each host, each master's replica on the next host), each in the
# middle of fuzzy dedup on 6 ranks against the cluster (slowed between its batches): a
# host's link cut, every process of a host killed, a host's Redis master killed, a slow and
# lossy link. Each run ends with the memory backend's outputs or stops, naming the host,
# within a bound only a hang would pass (timeout 120), and leaves no output under its final
# name; the same command run again gives the reference's outputs. Each case prints its
# time to stop and to recover.
# sanitizer build: skip (the faults repeat, with timeouts and reruns, the code paths t_hosts.sh runs under the sanitizers)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_hosts.sh"

have_mpi || { echo "SKIP: mpirun not found (install openmpi-bin)"; finish; exit 0; }
hosts_up 3
hosts_redis "$T/redis" || { fail "cannot start the Redis Cluster over the hosts"; finish; exit 1; }

# the reference: real web text (examples/jsonl, with near duplicates) deduplicated by one
# rank with the memory backend
mkdir -p "$T/in"
cp "$ROOT"/examples/jsonl/CC-MAIN-*.jsonl.gz "$FIX/dedup/udhr.jsonl.zst" "$T/in/"
run "$SLUICE" dedup fuzzy --out "$T/ref" "$T/in"
expect_rc 0

# a watchdog shorter than the daemons' keepalive (about 20 s), so that the ranks' own
# message comes first; batches slowed down so that a fault lands mid-stage
export SLUICE_MPI_TIMEOUT=5 SLUICE_REDIS_PAUSE_MS=1500
MPI=("${HOSTS_MPIRUN[@]}" -x SLUICE_MPI_TIMEOUT --hostfile "$HOSTS_FILE" -np 6)
DEDUP=("$SLUICE" dedup fuzzy --backend redis --redis "$HOSTS_REDIS")

same_as_ref() { # DIR
    local f
    for f in duplicates.jsonl clusters.jsonl $(cd "$T/ref" && ls part-*); do
        cmp -s "$T/ref/$f" "$1/$f" && ok || fail "$f differs from the reference"
    done
}
# start OUT: the stage on 6 ranks in the background, paused between batches, under the
# Redis prefix OUT's name; returns when the run holds its lease on the prefix (its ranks
# are up and the stage is under way)
start() {
    bgout=$1
    on hl timeout 120 "${MPI[@]}" -x SLUICE_REDIS_PAUSE_MS "${DEDUP[@]}" \
        --redis-prefix "$(basename "$1")" --out "$1" "$T/in" >"$1.out" 2>"$1.err" &
    bgpid=$!
    for _ in $(seq 600); do
        [ "$(on hl redis-cli -c -h "$(host_addr h0)" -p 7000 exists "$(basename "$1"):lock" \
            2>/dev/null)" = 1 ] && return 0
        kill -0 "$bgpid" 2>/dev/null || break
        sleep 0.1
    done
    fail "the stage never took its lease on the cluster"
}
# stopped: wait for the background run; its status in $rc, stderr in $T/err, and the
# seconds from the fault to its end in $stop_s
stopped() {
    set +e; wait "$bgpid"; rc=$?; set -e
    stop_s=$((SECONDS - t_fault))
    cp "$bgout.err" "$T/err"; cp "$bgout.out" "$T/out"
}
# drained: the earlier job's ranks are gone from every host before the next run, as a
# resource manager sees to when a job ends: mpirun can return (a node lost) while ranks on
# the other hosts are still being killed, and a rank alive still holds the job's Redis
# lease (the rerun would rightly be refused). Waits up to 30 s, then kills what is left.
drained() {
    local h p busy
    for _ in $(seq 300); do
        busy=0
        for h in h0 h1 h2; do
            for p in $(host_pids "$h"); do
                [ "$(cat /proc/$p/comm 2>/dev/null)" = sluice ] && busy=1
            done
        done
        [ "$busy" = 0 ] && return 0
        sleep 0.1
    done
    for h in h0 h1 h2; do
        for p in $(host_pids "$h"); do
            [ "$(cat /proc/$p/comm 2>/dev/null)" = sluice ] && kill -KILL "$p" 2>/dev/null
        done
    done
    return 0
}
# again OUT: the same command, no pause, after the fault is gone; time in $again_s
again() {
    drained
    local t=$SECONDS
    run on hl timeout 120 "${MPI[@]}" "${DEDUP[@]}" --redis-prefix "$(basename "$1")" --out "$1" "$T/in"
    again_s=$((SECONDS - t))
    expect_rc 0
    same_as_ref "$1"
}
# left H: the MPI processes (orted, sluice) still on host H; killed (its resource manager
# would), the Redis servers spared
left() {
    local p n=0
    for p in $(host_pids "$1"); do
        case "$(cat /proc/$p/comm 2>/dev/null)" in
        redis-server) ;;
        *) kill -KILL "$p" 2>/dev/null && n=$((n + 1)) ;;
        esac
    done
    echo $n
}

case_ "a host's link cut mid-stage: the job stops naming the lost rank and host; then resumes"
start "$T/cut"
host_link h2 down
t_fault=$SECONDS
stopped
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ok || fail "exit $rc (124: it hung)"
expect_err "on host 'h2' is lost: nothing from it for"
expect_err "SLUICE_MPI_TIMEOUT"
expect_no_file "$T/cut/manifest.json"; expect_no_partials "$T/cut"
cut_err=$(grep -m1 "is lost" "$T/err" || true)
n_left=$(left h2)
host_link h2 up
hosts_redis_wait && ok || fail "the cluster did not heal"
again "$T/cut"
echo "measured: link cut: stopped $stop_s s after the cut ($cut_err); $n_left processes left on the cut-off host; the rerun took $again_s s"

case_ "every process of a host killed (a node crash): the job stops naming the host; then resumes"
start "$T/crash"
host_kill h2
t_fault=$SECONDS
stopped
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ok || fail "exit $rc (124: it hung)"
expect_err "h2"
expect_no_file "$T/crash/manifest.json"; expect_no_partials "$T/crash"
crash_err=$(grep -m1 -e "on node h2" -e "host 'h2'" "$T/err" || true)
# the node comes back: its two Redis servers restart with their nodes.conf and rejoin
hosts_redis_node "$T/redis" h2 7000 && hosts_redis_node "$T/redis" h2 7001 && ok ||
    fail "h2's servers did not restart"
hosts_redis_wait && ok || fail "the cluster did not heal"
again "$T/crash"
echo "measured: node crash: stopped $stop_s s after the kill ($crash_err); the rerun took $again_s s"

case_ "a host's Redis master killed, its replica on another host: the run goes on or stops naming it"
hosts_redis_wait
start "$T/master"
m=$(hosts_redis_cli h1 7000 role | head -1)
victim=h1
[ "$m" = master ] || victim=h0
kill -KILL "$(cat "$T/redis/$victim-7000/pid")"
t_fault=$SECONDS
stopped
if [ "$rc" -eq 0 ]; then
    ok
    same_as_ref "$T/master"
    echo "measured: master on $victim killed: the run went on through its replica and ended $stop_s s later with the reference's outputs"
else
    [ "$rc" -ne 124 ] && ok || fail "exit 124: it hung"
    expect_err "$(host_addr "$victim"):7000"
    expect_no_file "$T/master/manifest.json"
    hosts_redis_wait && ok || fail "the cluster did not heal"
    again "$T/master"
    echo "measured: master on $victim killed: stopped $stop_s s later ($(grep -m1 error "$T/err")); the rerun took $again_s s"
fi
hosts_redis_node "$T/redis" "$victim" 7000 && ok || fail "$victim's server did not restart"
hosts_redis_wait && ok || fail "the cluster did not heal"

case_ "a slow, lossy link"
if on h2 tc qdisc add dev eth0 root netem delay 40ms 10ms loss 3% 2>"$T/tc.err"; then
    how="netem delay 40 ms +- 10 ms, loss 3%"
elif on h2 tc qdisc add dev eth0 root tbf rate 1mbit burst 32kbit latency 500ms 2>>"$T/tc.err"; then
    how="tbf 1 Mbit/s, no loss or delay: netem is not in this kernel ($(head -1 "$T/tc.err"))"
    echo "SKIP: delay and loss: sch_netem missing ($(head -1 "$T/tc.err")); the slow link alone (tbf)"
else
    how=""
    echo "SKIP: a slow, lossy link: neither netem nor tbf ($(tr '\n' ' ' <"$T/tc.err"))"
fi
if [ -n "$how" ]; then
    t=$SECONDS
    run on hl timeout 120 "${MPI[@]}" "${DEDUP[@]}" --out "$T/slow" "$T/in"
    expect_rc 0
    same_as_ref "$T/slow"
    echo "measured: slow link on h2 ($how): the stage ended in $((SECONDS - t)) s with the reference's outputs"
    on h2 tc qdisc del dev eth0 root
fi

finish
