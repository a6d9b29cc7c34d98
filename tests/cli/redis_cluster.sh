# A throw-away Redis Cluster on loopback for tests and benchmarks (sourced).
#   rc_start DIR BASE_PORT MASTERS REPLICAS   start MASTERS*(1+REPLICAS) nodes on BASE_PORT..
#   rc_stop                                   stop every node that rc_start started
# Needs redis-server and redis-cli (Debian redis-server, redis-tools). Nodes keep no data
# on disk (no RDB, no AOF) and fail over after 2 s (cluster-node-timeout 2000).
RC_PIDS=()
RC_PORTS=()

rc_start() {
    local dir=$1 base=$2 masters=$3 replicas=$4
    local n=$((masters * (1 + replicas))) i port hosts=()
    mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do
        port=$((base + i))
        mkdir -p "$dir/$port"
        redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
            --cluster-config-file "$dir/$port/nodes.conf" --cluster-node-timeout 2000 \
            --dir "$dir/$port" --save "" --appendonly no --daemonize no \
            --logfile "$dir/$port/log" --protected-mode no >/dev/null 2>&1 &
        RC_PIDS+=($!)
        RC_PORTS+=("$port")
        hosts+=("127.0.0.1:$port")
    done
    for port in "${RC_PORTS[@]}"; do
        for _ in $(seq 100); do
            redis-cli -p "$port" ping >/dev/null 2>&1 && break
            sleep 0.1
        done
    done
    redis-cli --cluster create "${hosts[@]}" --cluster-replicas "$replicas" --cluster-yes \
        >"$dir/create.log" 2>&1 || { cat "$dir/create.log" >&2; return 1; }
    rc_wait_ok "$base" "$n"
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

# the port of a master, and of the replica that serves the same slots
rc_master_port() { redis-cli -p "$1" cluster nodes | awk '/master/ && !/fail/ {split($2, a, "[:@]"); print a[2]; exit}'; }

rc_stop() {
    local pid
    for pid in "${RC_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${RC_PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    RC_PIDS=()
    RC_PORTS=()
}
