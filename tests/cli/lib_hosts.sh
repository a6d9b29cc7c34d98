# Several "hosts" on one machine, for tests of runs across hosts (sourced after lib.sh).
#
#   hosts_up N       N hosts h0..hN-1: each a network namespace with its own address on a
#                    private /24, its loopback up, and its hostname (a UTS namespace per
#                    command), joined by veth pairs to a bridge that lives in a namespace of
#                    its own (nothing is added to the machine's own network); one more
#                    namespace, the login node "hl", on the same bridge, runs mpirun. Ends
#                    the test with SKIP and the reason where namespaces cannot be made.
#   hosts_down       kill every process in the namespaces, delete them (their links go with
#                    them); set as the EXIT/INT/TERM trap by hosts_up, safe to call twice
#   on H CMD...      run CMD on host H (h0.., hl) under its hostname
#   HOSTS_MPIRUN     mpirun over the hosts, to run on the login node (on hl ...), with
#                    --hostfile $HOSTS_FILE (slots=2 on each host) and -np added: ranks
#                    started through $T/hosts/agent (Open MPI's rsh agent: `ip netns
#                    exec`, no ssh); TCP between ranks (btl tcp,self: no shared memory
#                    between hosts); the daemons' and the ranks' sockets on the test subnet
#                    only; TCP keepalive on the daemons' links (idle 10 s, then 2 probes
#                    5 s apart, not Open MPI's 300 s + 9 x 20 s) and 5 retransmissions on
#                    the login node (tcp_retries2: about 12 s, not 15 minutes), so that
#                    mpirun gives up on a cut-off host's daemon; waiting ranks yield the
#                    CPU (the hosts share this machine's cores)
#   host_addr H      the address of host H;  HOSTS_NET the subnet (10.X.Y.0/24)
#   host_link H up|down   set host H's end of its link up or down (a cable pulled)
#   host_kill H      SIGKILL every process on host H (a node crash)
#   host_pids H      the pids of the processes on host H
#   host_tx H        bytes host H sent over its link so far
#
# The working tree and $T are seen by every host (the namespaces share the file system, as
# the nodes of a cluster share theirs). Names carry a per-run id, so tests running at once
# do not collide.

HOSTS=()
HOSTS_NS=()
HOSTS_ID=""

# _hosts_skip REASON: end the test with SKIP
_hosts_skip() {
    echo "SKIP: $1"
    finish
    exit 0
}

# _hosts_subnet: a 10.X.Y.0/24 that no address or route of this machine uses
_hosts_subnet() {
    local x y used
    used=$(ip -4 addr show 2>/dev/null; ip -4 route show table all 2>/dev/null)
    for _ in $(seq 50); do
        x=$((RANDOM % 200 + 40))
        y=$((RANDOM % 250 + 1))
        grep -q "10\.$x\.$y\." <<<"$used" || { echo "10.$x.$y"; return 0; }
    done
    return 1
}

hosts_up() {
    local n=$1 i ns
    [ "$(id -u)" -eq 0 ] || _hosts_skip "network namespaces need root (uid $(id -u))"
    command -v ip >/dev/null || _hosts_skip "no 'ip' command (iproute2)"
    command -v unshare >/dev/null || _hosts_skip "no 'unshare' (util-linux)"
    HOSTS_ID=$(printf '%04x%x' $$ $((RANDOM % 16)) | tail -c 5)
    local sw="slsw$HOSTS_ID"
    ip netns add "$sw" 2>"$T/netns.err" || _hosts_skip "cannot make a network namespace: $(cat "$T/netns.err")"
    HOSTS_NS=("$sw")
    trap hosts_down EXIT
    trap 'hosts_down; rm -rf "$T"; exit 130' INT TERM
    HOSTS_NET=$(_hosts_subnet) || _hosts_skip "no free 10.x.y.0/24 subnet"
    ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up &&
        ip -n "$sw" link set lo up || _hosts_skip "cannot make a bridge"
    mkdir -p "$T/hosts"
    HOSTS=()
    for ((i = 0; i <= n; i++)); do
        local h="h$i" addr
        [ "$i" -eq "$n" ] && h=hl
        ns="slh$HOSTS_ID-$h"
        ip netns add "$ns" || _hosts_skip "cannot make namespace $ns"
        HOSTS_NS+=("$ns")
        # both ends made in their namespaces: the bridge's end v<host>, the host's eth0
        ip link add "v$HOSTS_ID$h" netns "$sw" type veth peer name eth0 netns "$ns" ||
            _hosts_skip "cannot make a veth pair"
        ip -n "$sw" link set "v$HOSTS_ID$h" master br0 up
        addr="$HOSTS_NET.$((10 + i))"
        ip -n "$ns" addr add "$addr/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        eval "HOST_ADDR_$h=$addr"
        # mpirun, once the job is aborted, waits for every host's daemon; a cut-off one's
        # link has data in flight, so keepalive never starts and Linux retransmits for
        # about 15 minutes (tcp_retries2 15): 5 retries on the login node, about 12 s
        [ "$h" != hl ] || ip netns exec "$ns" sysctl -qw net.ipv4.tcp_retries2=5
        [ "$h" = hl ] || HOSTS+=("$h")
    done
    # the rsh agent Open MPI calls as `agent [ssh options] HOST COMMAND...`: the command
    # runs in HOST's namespace under its hostname. The agent itself stays on the login
    # host, as ssh would; when the command is killed (the node crashed) it stays quiet, as
    # ssh does until TCP gives up on a crashed node, so that mpirun learns of the loss
    # from its link to the node's daemon (it names the node), not from its agent's exit
    cat >"$T/hosts/agent" <<EOF
#!/bin/bash
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do shift; done
h=\$1; shift
ip netns exec "slh$HOSTS_ID-\$h" unshare --uts bash -c 'hostname "\$0" && eval "\$@"' "\$h" "\$*"
s=\$?
[ \$s -lt 128 ] || sleep 300
exit \$s
EOF
    chmod +x "$T/hosts/agent"
    HOSTS_FILE="$T/hosts/hostfile"
    : >"$HOSTS_FILE"
    for h in "${HOSTS[@]}"; do echo "$h slots=2" >>"$HOSTS_FILE"; done
    HOSTS_MPIRUN=(mpirun --allow-run-as-root --oversubscribe
        --mca plm_rsh_agent "$T/hosts/agent" --mca btl tcp,self
        --mca btl_tcp_if_include "$HOSTS_NET.0/24" --mca oob_tcp_if_include "$HOSTS_NET.0/24"
        --mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 5
        --mca oob_tcp_keepalive_probes 2 --mca mpi_yield_when_idle 1
        -x SLUICE_PROGRESS_INTERVAL -x PATH -x SLUICE_REDIS_PASSWORD)
    [ "${SANITIZE:-0}" = 1 ] && HOSTS_MPIRUN+=(-x ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
    # every host reaches every other
    for h in "${HOSTS[@]}"; do
        # port 1: refused at once when the host answers, a timeout when it does not
        if on hl timeout 5 bash -c "exec 3<>/dev/tcp/$(host_addr "$h")/1" 2>/dev/null; [ $? -eq 124 ]; then
            _hosts_skip "host $h does not answer on $(host_addr "$h") from the login node"
        fi
    done
    return 0
}

host_addr() { eval "echo \$HOST_ADDR_$1"; }
_host_ns() { echo "slh$HOSTS_ID-$1"; }

on() {
    local h=$1
    shift
    ip netns exec "$(_host_ns "$h")" unshare --uts bash -c 'hostname "$0" && exec "$@"' "$h" "$@"
}

host_pids() { ip netns pids "$(_host_ns "$1")" 2>/dev/null; }

host_kill() {
    local p
    for p in $(host_pids "$1"); do kill -KILL "$p" 2>/dev/null || true; done
}

host_link() { ip -n "$(_host_ns "$1")" link set eth0 "$2"; }

host_tx() { ip netns exec "$(_host_ns "$1")" cat /sys/class/net/eth0/statistics/tx_bytes; }

hosts_down() {
    local ns p
    for ns in "${HOSTS_NS[@]}"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    done
    for ns in "${HOSTS_NS[@]}"; do
        for _ in $(seq 50); do
            [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
            sleep 0.05
        done
        ip netns del "$ns" 2>/dev/null || true
    done
    HOSTS_NS=()
}

# hosts_redis DIR: a Redis Cluster over the hosts: on each host a master on port 7000 and a
# replica on 7001 bound to the host's address, the replica of host i's master on host i+1
# (mod N), so that every master's replica lives on another host; the same settings as
# redis_cluster.sh (no persistence, fail over after 2 s). Sets HOSTS_REDIS (the masters,
# as seeds for --redis) and exports a password made for this run, as a cluster's job
# would (SLUICE_REDIS_PASSWORD for sluice, REDISCLI_AUTH for redis-cli). Namespaces have
# ports of their own: fixed ports do not collide.
hosts_redis() {
    local dir=$1 h i n=${#HOSTS[@]} masters=() id
    command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
        { echo "redis-server/redis-cli not found (Debian redis-server, redis-tools)" >&2; return 1; }
    SLUICE_REDIS_PASSWORD=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
    export SLUICE_REDIS_PASSWORD REDISCLI_AUTH=$SLUICE_REDIS_PASSWORD
    for h in "${HOSTS[@]}"; do
        hosts_redis_node "$dir" "$h" 7000 && hosts_redis_node "$dir" "$h" 7001 || return 1
        masters+=("$(host_addr "$h"):7000")
    done
    on hl redis-cli --cluster create "${masters[@]}" --cluster-yes >"$dir/create.log" 2>&1 ||
        { cat "$dir/create.log" >&2; return 1; }
    for ((i = 0; i < n; i++)); do
        h=${HOSTS[$(((i + 1) % n))]}
        id=$(on hl redis-cli -h "$(host_addr "${HOSTS[$i]}")" -p 7000 cluster myid)
        on hl redis-cli --cluster add-node "$(host_addr "$h"):7001" "${masters[0]}" \
            --cluster-slave --cluster-master-id "$id" >>"$dir/create.log" 2>&1 ||
            { cat "$dir/create.log" >&2; return 1; }
    done
    HOSTS_REDIS=$(IFS=,; echo "${masters[*]}")
    hosts_redis_wait
}

# hosts_redis_node DIR H PORT: start (or start again, with its nodes.conf: it rejoins) the
# node of host H on PORT, and wait until it answers
hosts_redis_node() {
    local d="$1/$2-$3"
    mkdir -p "$d"
    on "$2" redis-server --bind "$(host_addr "$2")" --port "$3" --dir "$d" \
        --requirepass "$SLUICE_REDIS_PASSWORD" --masterauth "$SLUICE_REDIS_PASSWORD" \
        --save "" --appendonly no --daemonize yes --repl-diskless-sync-delay 0 \
        --pidfile "$d/pid" --logfile "$d/log" --cluster-enabled yes \
        --cluster-config-file "$d/nodes.conf" --cluster-node-timeout 2000 || return 1
    for _ in $(seq 100); do
        hosts_redis_cli "$2" "$3" ping | grep -q PONG && return 0
        sleep 0.05
    done
    echo "redis-server on $2:$3 did not start: $(tail -3 "$d/log")" >&2
    return 1
}

# hosts_redis_cli H PORT ARGS...: redis-cli from the login node to host H's node on PORT
hosts_redis_cli() {
    local h=$1 p=$2
    shift 2
    on hl redis-cli -h "$(host_addr "$h")" -p "$p" "$@" 2>/dev/null | tr -d '\r'
}

# hosts_redis_wait: up to 60 s, until every reachable node says cluster_state:ok and every
# replica has finished its sync with its master (link up, offsets equal)
hosts_redis_wait() {
    local h p ok why mh mp
    for _ in $(seq 600); do
        ok=1
        for h in "${HOSTS[@]}"; do
            for p in 7000 7001; do
                hosts_redis_cli "$h" $p ping | grep -q PONG || continue
                hosts_redis_cli "$h" $p cluster info | grep -q cluster_state:ok ||
                    { ok=0; why="$h:$p: cluster not ok"; }
                local info
                info=$(hosts_redis_cli "$h" $p info replication)
                grep -q role:slave <<<"$info" || continue
                mh=$(sed -n 's/^master_host://p' <<<"$info")
                mp=$(sed -n 's/^master_port://p' <<<"$info")
                if ! grep -q master_link_status:up <<<"$info" ||
                    ! grep -q master_sync_in_progress:0 <<<"$info" ||
                    [ "$(sed -n 's/^slave_repl_offset://p' <<<"$info")" != \
                        "$(on hl redis-cli -h "$mh" -p "$mp" info replication 2>/dev/null | tr -d '\r' | sed -n 's/^master_repl_offset://p')" ]; then
                    ok=0
                    why="replica $h:$p of $mh:$mp not synced"
                fi
            done
        done
        [ $ok = 1 ] && return 0
        sleep 0.1
    done
    echo "redis cluster over the hosts not ready: $why" >&2
    return 1
}
