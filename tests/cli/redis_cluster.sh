# A throw-away Redis Cluster on loopback for tests and benchmarks (sourced).
#   rc_start DIR BASE_PORT MASTERS REPLICAS   start MASTERS*(1+REPLICAS) nodes on BASE_PORT..
#   rc_free_base N                            a base port for N nodes (see below)
#   rc_stop                                   stop every node that rc_start started
#   rc_server DIR --port P [ARGS...]          one more node (anything redis-server takes)
#   rc_wait_synced PORT...                    every replica among these nodes has finished
#                                             its sync: master_link_status:up, no sync in
#                                             progress, its offset equal to its master's
# Needs redis-server and redis-cli (Debian redis-server, redis-tools). Nodes are daemons
# with pid files, keep no data on disk (no RDB, no AOF), start a replica's sync at once
# (repl-diskless-sync-delay 0, not 5 s) and fail over after 2 s (cluster-node-timeout
# 2000). RC_PIDS lists them in start order.
RC_PIDS=()
RC_PORTS=()

# rc_free_base N: print a base port B such that B..B+N-1 and their cluster bus ports
# (+10000) can all be bound now, chosen from 10000-22000: below the kernel's ephemeral range
# (32768-60999), from which client sockets (replication links, redis-cli, the tool under
# test) take their local ports and would make a node's bind fail ("Address already in use").
rc_free_base() {
    python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
for _ in range(200):
    base = random.randrange(10000, 22000 - n)
    socks = []
    try:
        for p in list(range(base, base + n)) + list(range(base + 10000, base + 10000 + n)):
            s = socket.socket()
            s.bind(("127.0.0.1", p))
            socks.append(s)
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    sys.exit(0)
sys.exit("no free range of %d ports in 10000-22000" % n)
PY
}

rc_start() {
    local dir=$1 base=$2 masters=$3 replicas=$4
    local n=$((masters * (1 + replicas))) i port hosts=()
    mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do
        port=$((base + i))
        mkdir -p "$dir/$port"
        rc_server "$dir/$port" --port "$port" --cluster-enabled yes \
            --cluster-config-file "$dir/$port/nodes.conf" --cluster-node-timeout 2000 || return 1
        RC_PORTS+=("$port")
        hosts+=("127.0.0.1:$port")
    done
    redis-cli --cluster create "${hosts[@]}" --cluster-replicas "$replicas" --cluster-yes \
        >"$dir/create.log" 2>&1 || { cat "$dir/create.log" >&2; return 1; }
    rc_wait_ok "$base" "$n" && rc_wait_synced "${RC_PORTS[@]}"
}

# rc_info PORT FIELD: one field of INFO replication
rc_info() {
    [ -n "$1" ] || return 0
    { redis-cli -p "$1" info replication 2>/dev/null || true; } | tr -d '\r' | sed -n "s/^$2://p"
}

# rc_wait_synced PORT...: wait (up to 60 s) until every replica among these nodes reports
# master_link_status:up, no sync in progress and the offset of its master. A replica whose
# first full sync has not finished refuses to fail over ("Master did not reply to PSYNC"):
# a master must not be killed before this holds.
rc_wait_synced() {
    local p ok why mp mo ro
    for _ in $(seq 600); do
        ok=1
        for p in "$@"; do
            [ "$(rc_info "$p" role)" = slave ] || continue
            mp=$(rc_info "$p" master_port)
            ro=$(rc_info "$p" slave_repl_offset)
            mo=$(rc_info "$mp" master_repl_offset)
            if [ "$(rc_info "$p" master_link_status)" != up ] ||
                [ "$(rc_info "$p" master_sync_in_progress)" != 0 ] || [ -z "$ro" ] || [ "$ro" != "$mo" ]; then
                ok=0
                why="replica $p of $mp: link $(rc_info "$p" master_link_status), offset $ro of $mo"
                break
            fi
        done
        [ $ok = 1 ] && return 0
        sleep 0.1
    done
    echo "redis replicas did not finish their sync: $why" >&2
    return 1
}

# rc_server DIR ARGS...: start one daemonised redis-server (no persistence) with its files
# in DIR, wait until it answers, and add its pid to RC_PIDS
rc_server() {
    local dir=$1 port
    shift
    mkdir -p "$dir"
    redis-server --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no --daemonize yes \
        --repl-diskless-sync-delay 0 --pidfile "$dir/pid" --logfile "$dir/log" "$@" \
        >/dev/null 2>&1 || return 1
    for _ in $(seq 400); do
        [ -s "$dir/pid" ] && break
        sleep 0.05
    done
    if [ ! -s "$dir/pid" ]; then
        echo "redis-server in $dir did not start: $(tail -3 "$dir/log" 2>/dev/null)" >&2
        return 1
    fi
    RC_PIDS+=("$(cat "$dir/pid")")
    port=$(sed -n 's/.*--port \([0-9]*\).*/\1/p' <<<"$*")
    for _ in $(seq 300); do
        redis-cli -p "$port" ping 2>/dev/null | grep -q -e PONG -e NOAUTH && return 0
        sleep 0.1
    done
    echo "redis-server on port $port did not start" >&2
    return 1
}

# rc_wait_ok BASE N: every node reports cluster_state:ok and knows every slot
rc_wait_ok() {
    local base=$1 n=$2 i ok
    for _ in $(seq 300); do
        ok=1
        for ((i = 0; i < n; i++)); do
            redis-cli -p $((base + i)) cluster info 2>/dev/null | grep -q 'cluster_state:ok' || ok=0
        done
        [ $ok = 1 ] && return 0
        sleep 0.1
    done
    echo "redis cluster on ports $base.. did not become ok" >&2
    return 1
}

rc_stop() {
    local pid
    for pid in "${RC_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${RC_PIDS[@]}"; do
        for _ in $(seq 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
    done
    RC_PIDS=()
    RC_PORTS=()
}
