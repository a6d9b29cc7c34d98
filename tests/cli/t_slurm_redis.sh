#!/usr/bin/env bash
# configs/slurm/redis_cluster.sh, the functions curate.sub builds a job's Redis Cluster
# with, outside Slurm: a private directory, the job's password (mode 600), the servers'
# config (one address, protected mode, requirepass and masterauth), clusters of 1, 2 and
# 3 masters whose buckets spread over every master (INFO commandstats), sluice with the
# right, a wrong and no password, the password nowhere else (outputs, logs, command lines),
# and the address on the route to a peer where it is not the first of `hostname -I`
# (a network namespace made here).
# sanitizer build: skip (shell functions and Redis servers; sluice's AUTH paths run under the sanitizers in t_dedup_redis.sh)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_cluster.sh" # rc_free_base
source "$ROOT/configs/slurm/redis_cluster.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "skip: redis-server/redis-cli not found (Debian redis-server, redis-tools)"
    finish
    exit 0
fi
pids=()
ns=
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    done
    [ -z "$ns" ] || ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT

case_ "sl_private_dir: a new directory is private, an open one made private, a link refused"
run sl_private_dir "$T/job/redis"
expect_rc 0
expect_eq "$(stat -c %a "$T/job/redis")" 700
mkdir -m 755 "$T/open"
run sl_private_dir "$T/open"
expect_rc 0
expect_eq "$(stat -c %a "$T/open")" 700
ln -s "$T/open" "$T/link"
run sl_private_dir "$T/link"
expect_rc 1; expect_err "'$T/link' is not a directory of"

case_ "sl_new_password: 64 hex digits from /dev/urandom, mode 600, a new one each time"
run sl_new_password "$T/job/redis/password"
expect_rc 0
expect_eq "$(stat -c %a "$T/job/redis/password")" 600
pw=$(cat "$T/job/redis/password")
if [[ $pw =~ ^[0-9a-f]{64}$ ]]; then ok; else fail "password is not 64 hex digits"; fi
sl_new_password "$T/pw2"
if [ "$(cat "$T/pw2")" != "$pw" ]; then ok; else fail "two passwords are the same"; fi
rm "$T/pw2"

case_ "sl_redis_conf: refuses to write a server's config without a password"
SLUICE_REDIS_PASSWORD='' run sl_redis_conf "$T/nopw.conf" 127.0.0.1 7000
expect_rc 1; expect_err "no server starts without a password"
expect_no_file "$T/nopw.conf"

export SLUICE_REDIS_PASSWORD=$pw
mkdir -p "$T/gen"
$PY "$HERE/dedup_gen.py" "$T/gen" 5 600 2
run "$SLUICE" dedup fuzzy --out "$T/mem" "$T/gen"
expect_rc 0

# start_servers DIR N: N servers on 127.0.0.1 from sl_redis_conf, in $hosts
start_servers() {
    local dir=$1 n=$2 base i port d
    base=$(rc_free_base "$n")
    hosts=()
    for ((i = 0; i < n; i++)); do
        port=$((base + i)); d=$dir/$port
        sl_private_dir "$d"
        sl_redis_conf "$d/redis.conf" 127.0.0.1 "$port"
        redis-server "$d/redis.conf" --daemonize yes --pidfile "$d/pid" --repl-diskless-sync-delay 0
        for _ in $(seq 200); do [ -s "$d/pid" ] && break; sleep 0.05; done
        pids+=("$(cat "$d/pid")")
        hosts+=("127.0.0.1:$port")
    done
}
# calls HOST:PORT: the commands a server ran for clients, from INFO commandstats, less
# those that are not about keys (AUTH, CLUSTER, INFO, PING, CONFIG, ...)
calls() {
    REDISCLI_AUTH=$pw redis-cli -h "${1%:*}" -p "${1##*:}" info commandstats | tr -d '\r' |
        awk -F'[:=,]' '/^cmdstat_/ && $1 !~ /_(auth|cluster|info|ping|config|command|client|hello|wait)(\||$)/ { n += $3 }
                       END { print n + 0 }'
}

for n in 1 2 3; do
    # three masters get a replica each: the replicas sync only with masterauth
    replicas=$((n == 3 ? 1 : 0))
    case_ "$n master(s): the slots spread over all, sluice with the password gives the memory backend's answer"
    start_servers "$T/rc$n" $((n * (1 + replicas)))
    run sl_redis_form "$replicas" "${hosts[@]}"
    expect_rc 0
    cat "$T/out" "$T/err" >"$T/form$n.log" # (searched for the password at the end)
    # a replica is in sync only if it authenticated with masterauth
    if [ $replicas -gt 0 ]; then
        for _ in $(seq 300); do
            up=0
            for h in "${hosts[@]}"; do
                REDISCLI_AUTH=$pw redis-cli -h 127.0.0.1 -p "${h##*:}" info replication | tr -d '\r' |
                    grep -q '^master_link_status:up' && up=$((up + 1))
            done
            [ $up = 3 ] && break
            sleep 0.1
        done
        expect_eq "$up" 3 "(replicas linked to their masters)"
    fi
    # the first node only as seed: sluice reaches the others by the slot map, and each
    # connection authenticates
    run "$SLUICE" dedup fuzzy --backend redis --redis "${hosts[0]}" --out "$T/red$n" "$T/gen"
    expect_rc 0
    cat "$T/out" "$T/err" >"$T/red$n.log"
    [ $replicas = 0 ] || expect_no_err "no synced replica"
    for f in "$T/mem"/duplicates.jsonl "$T/mem"/clusters.jsonl "$T/mem"/part-*.jsonl.zst; do
        if cmp -s "$f" "$T/red$n/${f##*/}"; then ok; else fail "${f##*/} differs from the memory backend's"; fi
    done
    masters=()
    for h in "${hosts[@]}"; do
        [ "$(REDISCLI_AUTH=$pw redis-cli -h 127.0.0.1 -p "${h##*:}" role | head -1)" = master ] && masters+=("$h")
    done
    expect_eq "${#masters[@]}" "$n" "(masters)"
    total=0; line=
    for h in "${masters[@]}"; do c=$(calls "$h"); total=$((total + c)); line+=" ${h##*:}=$c"; done
    # equal slot ranges and hashed keys: each master near total/n; at least half of that
    # (two servers sharing one slot range gave 16,805 to one and 1 to the other)
    for h in "${masters[@]}"; do
        c=$(calls "$h")
        if [ $((c * 2 * n)) -ge "$total" ]; then ok; else fail "master $h ran $c of $total commands"; fi
    done
    echo "ok $n master(s): commands per master:$line"
done

case_ "a wrong password: a clear stop naming the node, not the password"
SLUICE_REDIS_PASSWORD=not-the-job-pw-5521 run "$SLUICE" dedup fuzzy --backend redis \
    --redis "${hosts[0]}" --out "$T/wrong" "$T/gen"
expect_rc 1
expect_err "authentication failed on redis node '${hosts[0]}'"
expect_err "SLUICE_REDIS_PASSWORD"
expect_no_err "not-the-job-pw-5521"
expect_no_file "$T/wrong/manifest.json"

case_ "no password: NOAUTH, named"
SLUICE_REDIS_PASSWORD='' run "$SLUICE" dedup fuzzy --backend redis --redis "${hosts[0]}" \
    --out "$T/none" "$T/gen"
expect_rc 1
expect_err "authentication failed on redis node '${hosts[0]}': NOAUTH"

case_ "the servers: one address, protected mode on, a password; redis-cli without it refused"
h=${hosts[0]}
expect_eq "$(REDISCLI_AUTH=$pw redis-cli -h 127.0.0.1 -p "${h##*:}" config get bind | sed -n 2p)" 127.0.0.1
expect_eq "$(REDISCLI_AUTH=$pw redis-cli -h 127.0.0.1 -p "${h##*:}" config get protected-mode | sed -n 2p)" yes
run env -u REDISCLI_AUTH redis-cli -h 127.0.0.1 -p "${h##*:}" ping
expect_out "NOAUTH"

case_ "the password is in its file and the servers' configs only"
# every file the runs, the servers and this test wrote, but the job's password file and
# the configs (mode 600 in directories of mode 700)
# (grep reads the password from its file: on its command line it would be a leak itself)
pwf=$T/job/redis/password
leaks=$(grep -rlFf "$pwf" "$T" | grep -vx -e "$T/job/redis/password" -e "$T/rc[0-9]/[0-9]*/redis.conf" || true)
expect_eq "$leaks" "" "(files holding the password)"
for f in "$T"/rc*/*/redis.conf; do [ "$(stat -c %a "$f")" = 600 ] || fail "$f: mode $(stat -c %a "$f")"; done
ok
# and the command line of every process (the servers, the cluster's redis-cli calls are gone)
if grep -lFf "$pwf" /proc/[0-9]*/cmdline 2>/dev/null | grep -q .; then fail "a command line holds the password"; else ok; fi

case_ "sl_route_addr: the address on the route to the peer, not the first of hostname -I"
ns=sluice-route-$$
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! ip netns add "$ns" 2>/dev/null; then
    ns=
    echo "skip [t_slurm_redis.sh] route case: cannot make a network namespace (needs root and ip)" >&2
else
    # two links in the namespace: 10.201.1.1 on the first (so first in hostname -I), the
    # peer 10.201.2.9 behind the second
    in_ns() { ip netns exec "$ns" "$@"; }
    in_ns ip link add a0 type veth peer name a1
    in_ns ip link add b0 type veth peer name b1
    in_ns ip addr add 10.201.1.1/24 dev a0
    in_ns ip addr add 10.201.2.1/24 dev b0
    for l in lo a0 a1 b0 b1; do in_ns ip link set "$l" up; done
    expect_eq "$(in_ns hostname -I | awk '{ print $1 }')" 10.201.1.1 "(hostname -I's first)"
    run in_ns bash -c "source '$ROOT/configs/slurm/redis_cluster.sh' && sl_route_addr 10.201.2.9"
    expect_rc 0; expect_eq "$(cat "$T/out")" 10.201.2.1
    # a peer on the first link, and the host itself (a one-node job)
    run in_ns bash -c "source '$ROOT/configs/slurm/redis_cluster.sh' && sl_route_addr 10.201.1.7"
    expect_eq "$(cat "$T/out")" 10.201.1.1
    run in_ns bash -c "source '$ROOT/configs/slurm/redis_cluster.sh' && sl_route_addr 10.201.2.1"
    expect_eq "$(cat "$T/out")" 10.201.2.1
    run in_ns bash -c "source '$ROOT/configs/slurm/redis_cluster.sh' && sl_route_addr 10.99.0.1"
    expect_rc 1; expect_err "no route to '10.99.0.1'"
    run sl_route_addr no-such-host.invalid
    expect_rc 1; expect_err "cannot resolve 'no-such-host.invalid'"
fi

finish
