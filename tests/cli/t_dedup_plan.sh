#!/usr/bin/env bash
# sluice dedup fuzzy --plan: the peak memory it prints per rank and per Redis master is
# within 20% of what the real run then takes, at two corpus sizes, 1 and 2 ranks, memory
# and Redis backends. The measures: getrusage's ru_maxrss of each rank of the run (what
# -v -v reports as "peak memory per rank") and used_memory_peak of each master of a fresh
# Redis Cluster. It writes nothing; --ranks is for --plan only.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis_cluster.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
trap rc_stop EXIT

# peak CMD...: run CMD (a sluice dedup fuzzy) with -v -v; the peak memory of its largest
# rank in MiB, as it measures it (getrusage ru_maxrss of every rank, the largest)
peak() {
    "$@" -v -v > "$T/peak.out" 2> "$T/peak.err" || { echo failed; return; }
    sed -n 's/.*peak memory per rank: max \([0-9.]*\) MB.*/\1/p' "$T/peak.err"
}
# within PLAN MEASURED WHAT: PLAN within 20% of MEASURED
within() {
    python3 -c 'import sys; p, m = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(p - m) > 0.2 * m)' \
        "$1" "$2" 2>/dev/null && ok || fail "$3: --plan says $1 MB, the run took $2 MB (over 20% apart)"
}
# within_rank PLAN MEASURED WHAT: a rank's figure; in the sanitizer build the runs still go
# (the plan's and the run's code under the sanitizers) but the peak holds the sanitizers'
# shadow memory and quarantine, not what the plan models
within_rank() {
    if [ "${SANITIZE:-0}" = 1 ]; then
        [[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9.]+$ ]] && ok || fail "$3: the plan ($1) or the run ($2) failed"
        echo "skip: $3: the sanitizer build's peak memory is not the one planned"
        return
    fi
    within "$@"
}
plan_rank() { sed -n 's/^peak per rank: \([0-9.]*\) MB.*/\1/p' "$T/out"; }
plan_node() { sed -n 's/^peak per redis node: \([0-9.]*\) MB.*/\1/p' "$T/out"; }

for n in 2000 10000; do
    mkdir -p "$T/g$n"
    $PY "$HERE/dedup_gen.py" "$T/g$n" 5 "$n" 4
done

case_ "--plan prints the figures and writes nothing"
run "$SLUICE" dedup fuzzy --plan --out "$T/never" "$T/g2000"
expect_rc 0
expect_out "plan: $(cat "$T"/g2000/*.jsonl | wc -l) documents (counted) in 4 files"
expect_out "peak per rank: "
expect_no_file "$T/never"

case_ "--ranks without --plan is refused"
run "$SLUICE" dedup fuzzy --ranks 2 --out "$T/never" "$T/g2000"
expect_rc 2
expect_err "--ranks is only used with --plan"

for n in 2000 10000; do
    case_ "memory backend, 1 rank, $n clusters: the plan within 20% of the peak"
    run "$SLUICE" dedup fuzzy --plan "$T/g$n"
    expect_rc 0
    within_rank "$(plan_rank)" "$(peak "$SLUICE" dedup fuzzy --out "$T/m$n" "$T/g$n")" "1 rank, $n clusters"
done

if have_mpi; then
    case_ "memory backend under mpirun -np 2: the plan of --ranks 2 within 20% of the largest rank"
    run "$SLUICE" dedup fuzzy --plan --ranks 2 "$T/g10000"
    expect_rc 0
    within_rank "$(plan_rank)" "$(peak "${MPIRUN[@]}" -np 2 "$SLUICE" dedup fuzzy --out "$T/m2" "$T/g10000")" \
        "2 ranks"
fi

if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
    for n in 2000 10000; do
        case_ "redis backend, $n clusters: per rank and per master within 20%"
        BASE=$(rc_free_base 3)
        rc_start "$T/rc$n" "$BASE" 3 0 >/dev/null
        run "$SLUICE" dedup fuzzy --plan --backend redis --redis "127.0.0.1:$BASE" "$T/g$n"
        expect_rc 0
        pr=$(plan_rank)
        pn=$(plan_node)
        within_rank "$pr" "$(peak "$SLUICE" dedup fuzzy --backend redis --redis "127.0.0.1:$BASE" \
            --out "$T/r$n" "$T/g$n")" "redis backend, rank, $n clusters"
        node=0
        for p in "$BASE" $((BASE + 1)) $((BASE + 2)); do
            v=$(redis-cli -p "$p" info memory | tr -d '\r' | sed -n 's/^used_memory_peak://p')
            [ "$v" -gt "$node" ] && node=$v
        done
        within "$pn" "$(python3 -c "print('%.1f' % ($node / 1048576))")" "redis master, $n clusters"
        rc_stop
    done
else
    echo "skip: redis-server/redis-cli not found: the Redis cases"
fi

finish
