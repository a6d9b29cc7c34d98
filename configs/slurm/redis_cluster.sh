# shellcheck shell=bash
# The Redis Cluster of a Slurm job (sourced by curate.sub; tests/cli/t_slurm_redis.sh tests
# each function on its own). The servers listen on one address of their node, keep
# protected mode on and want the job's password, which never appears on a command line:
# redis-server reads it from a config file only the user can read, redis-cli from
# REDISCLI_AUTH, sluice from SLUICE_REDIS_PASSWORD.
#   sl_private_dir DIR              make DIR (mode 700), or accept it if it is already ours
#                                   and private; refuse a link or a directory others reach
#   sl_new_password FILE            32 bytes from /dev/urandom as 64 hex digits in FILE
#                                   (mode 600); the caller reads it into the environment
#   sl_route_addr PEER              this host's source address on its route to PEER (an
#                                   address or a host name): the address PEER reaches it by
#   sl_redis_conf FILE ADDR PORT    a redis.conf (mode 600) for a cluster node on ADDR:PORT
#                                   with its files in FILE's directory, the password from
#                                   SLUICE_REDIS_PASSWORD
#   sl_redis_form REPLICAS HOST:PORT...  join running servers into one cluster
# Every function prints its failure on stderr and returns non-zero.

sl_private_dir() {
    local d=$1
    mkdir -p "$(dirname "$d")"
    mkdir -m 700 "$d" 2>/dev/null || true
    if [ -L "$d" ] || [ ! -d "$d" ] || [ ! -O "$d" ]; then
        echo "redis: '$d' is not a directory of $(id -un) (a link, or made by someone else): not using it" >&2
        return 1
    fi
    # mkdir -p leaves an existing directory's mode alone; a directory others can enter is
    # made private, not trusted as it is (nothing of this job is in it yet)
    chmod 700 "$d"
}

sl_new_password() {
    local f=$1 pw
    pw=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
    if [ ${#pw} -ne 64 ]; then
        echo "redis: cannot read 32 bytes from /dev/urandom for the job's password" >&2
        return 1
    fi
    (umask 077 && printf '%s\n' "$pw" >"$f")
}

sl_route_addr() {
    local peer=$1 addr route
    case "$peer" in
    *[!0-9.]* | "") addr=$(getent ahostsv4 "$peer" 2>/dev/null | awk 'NR == 1 { print $1 }') ;;
    *) addr=$peer ;;
    esac
    if [ -z "$addr" ]; then
        echo "redis: cannot resolve '$peer' to an IPv4 address" >&2
        return 1
    fi
    # `ip route get` prints "ADDR [via GW] dev DEV src SRC ...": SRC is what the kernel
    # puts on packets to ADDR, so it is the address ADDR's host sees and can answer
    route=$(ip -4 -o route get "$addr" 2>&1) || {
        echo "redis: no route to '$peer' ($addr): $route" >&2
        return 1
    }
    awk '{ for (i = 1; i < NF; i++) if ($i == "src") { print $(i + 1); exit } }' <<<"$route" | grep . ||
        { echo "redis: no source address in the route to '$peer': $route" >&2; return 1; }
}

sl_redis_conf() {
    local f=$1 addr=$2 port=$3 d
    d=$(dirname "$f")
    if [ -z "${SLUICE_REDIS_PASSWORD:-}" ]; then
        echo "redis: SLUICE_REDIS_PASSWORD is empty: no server starts without a password" >&2
        return 1
    fi
    # requirepass for clients, masterauth for a replica's link to its master; protected
    # mode stays on (it refuses outside clients only on a server with neither a password
    # nor a bind line: a guard should both be lost)
    # printf is a builtin: the password is on no process's command line
    (umask 077 && printf '%s\n' "bind $addr" "port $port" "protected-mode yes" \
        "requirepass $SLUICE_REDIS_PASSWORD" "masterauth $SLUICE_REDIS_PASSWORD" \
        "cluster-enabled yes" "cluster-config-file $d/nodes.conf" "cluster-node-timeout 5000" \
        "dir $d" 'save ""' "appendonly no" "logfile $d/log" >"$f")
}

# sl_redis_nodes HOST:PORT: the cluster's node count and assigned slots as "N S"
sl_redis_nodes() {
    redis-cli -h "${1%:*}" -p "${1##*:}" cluster info 2>/dev/null | tr -d '\r' |
        awk -F: '/^cluster_known_nodes:/ { n = $2 } /^cluster_slots_assigned:/ { s = $2 }
                 END { print n + 0, s + 0 }'
}

# sl_redis_synced K HOST:PORT...: wait until the masters among the hosts count K replicas
# whose first sync has finished (state=online in a master's INFO replication: what a
# failover needs, and what sluice checks at its start)
sl_redis_synced() {
    local want=$1 h online
    shift
    for _ in $(seq 300); do
        online=0
        for h in "$@"; do
            online=$((online + $(redis-cli -h "${h%:*}" -p "${h##*:}" info replication 2>/dev/null |
                tr -d '\r' | grep -c '^slave[0-9]*:.*state=online')))
        done
        [ "$online" -ge "$want" ] && return 0
        sleep 0.2
    done
    echo "redis: $online of $want replicas finished their first sync within 60 s" >&2
    return 1
}

sl_redis_form() {
    local replicas=$1 h i n lo hi ok
    shift
    n=$#
    local hosts=("$@")
    export REDISCLI_AUTH=$SLUICE_REDIS_PASSWORD
    # a failover is voted by the masters: redis-cli --cluster create wants 3 of them
    if [ $((n / (1 + replicas))) -ge 3 ]; then
        redis-cli --cluster create "${hosts[@]}" --cluster-replicas "$replicas" --cluster-yes || return
        sl_redis_synced $((n - n / (1 + replicas))) "${hosts[@]}"
        return
    fi
    if [ "$replicas" -gt 0 ]; then
        echo "redis: $n servers make fewer than 3 masters with $replicas replicas each: every server is a master, without replicas (a failover needs 3 masters to vote)" >&2
    fi
    # the 16384 slots in n ranges as equal as can be, one a server, then the servers meet
    for ((i = 0; i < n; i++)); do
        h=${hosts[i]}
        lo=$((i * 16384 / n))
        hi=$(((i + 1) * 16384 / n - 1))
        redis-cli -h "${h%:*}" -p "${h##*:}" cluster addslotsrange "$lo" "$hi" | grep -qx OK ||
            { echo "redis: $h refused slots $lo-$hi" >&2; return 1; }
    done
    for ((i = 1; i < n; i++)); do
        h=${hosts[i]}
        redis-cli -h "${hosts[0]%:*}" -p "${hosts[0]##*:}" cluster meet "${h%:*}" "${h##*:}" |
            grep -qx OK || { echo "redis: ${hosts[0]} cannot meet $h" >&2; return 1; }
    done
    # every node knows every other and every slot (gossip takes a moment)
    for _ in $(seq 300); do
        ok=1
        for h in "${hosts[@]}"; do
            [ "$(sl_redis_nodes "$h")" = "$n 16384" ] || ok=0
        done
        [ $ok = 1 ] && return 0
        sleep 0.2
    done
    echo "redis: the $n servers did not agree on one cluster within 60 s ($h knows $(sl_redis_nodes "$h"): nodes, slots)" >&2
    return 1
}
