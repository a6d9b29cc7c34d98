#!/usr/bin/env bash
# configs/slurm/*.sub: syntax and shellcheck, then (when Debian's slurmctld and slurmd are
# installed and start) both scripts submitted with sbatch to a one-node cluster started
# here in a temporary directory: curation with a private Redis Cluster of two servers on
# the bundled examples (password, bind address, slots over both, the password nowhere it
# should not be), and the CPU try-out of docs/slurm.md as the page writes it.
# sanitizer build: skip (starts Slurm daemons; the commands it runs are tested under the sanitizers elsewhere)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
subs=("$ROOT/configs/slurm/curate.sub" "$ROOT/configs/slurm/train.sub")

case_ "the .sub scripts parse"
for s in "${subs[@]}"; do run bash -n "$s"; expect_rc 0; done

case_ "shellcheck finds nothing"
if command -v shellcheck >/dev/null 2>&1; then
    run shellcheck "${subs[@]}" "$ROOT/configs/slurm/redis_cluster.sh"; expect_rc 0
else
    echo "skip [t_slurm.sh] shellcheck: not installed" >&2
fi

skip_cluster() { echo "skip [t_slurm.sh] sbatch runs: $*" >&2; finish; exit $?; }
for p in slurmctld slurmd sbatch srun scontrol redis-server redis-cli; do
    command -v "$p" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$p" >/dev/null 2>&1 ||
        skip_cluster "'$p' is not installed (Debian slurmctld, slurmd, slurm-client, redis-server)"
done
export PATH=$PATH:/usr/sbin
[ "$(id -u)" -eq 0 ] || skip_cluster "slurmd needs root to start jobs as their user"
have_mpi || skip_cluster "no mpirun"

# a one-node cluster: free ports, state in $T, no munge (auth/none), no cgroups
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
host=$(hostname -s)
cpus=$(nproc)
mkdir -p "$T/slurm/state" "$T/slurm/spool"
cat >"$T/slurm/slurm.conf" <<EOF
ClusterName=sluicetest
SlurmctldHost=$host
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
StateSaveLocation=$T/slurm/state
SlurmdSpoolDir=$T/slurm/spool
SlurmctldPidFile=$T/slurm/slurmctld.pid
SlurmdPidFile=$T/slurm/slurmd.pid
SlurmctldLogFile=$T/slurm/slurmctld.log
SlurmdLogFile=$T/slurm/slurmd.log
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF=$T/slurm/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$T/slurm/ctld.out" 2>&1 &
ctld=$!
slurmd -D -f "$SLURM_CONF" >"$T/slurm/d.out" 2>&1 &
sd=$!
stop_slurm() {
    kill "$sd" "$ctld" 2>/dev/null || true
    wait "$sd" "$ctld" 2>/dev/null || true
}
trap stop_slurm EXIT
up=0
for _ in $(seq 100); do
    if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then up=1; break; fi
    kill -0 "$ctld" 2>/dev/null && kill -0 "$sd" 2>/dev/null || break
    sleep 0.2
done
if [ $up -eq 0 ]; then
    tail -5 "$T/slurm/slurmctld.log" "$T/slurm/slurmd.log" "$T/slurm/ctld.out" "$T/slurm/d.out" >&2 2>/dev/null || true
    skip_cluster "slurmctld/slurmd did not come up (logs above)"
fi

# wait_job ID: until it leaves the queue; prints its final state
wait_job() {
    for _ in $(seq 1200); do
        squeue -h -j "$1" 2>/dev/null | grep -q . || break
        sleep 0.25
    done
    scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

cd "$ROOT"
case_ "curate.sub: a Redis Cluster of two servers on the allocation, the stages, the cluster stopped at the end"
# redis-server's cluster bus listens on port + 10000: the port must leave room for it (a
# free port from the kernel's ephemeral range, 32768-60999, often does not)
port=$(python3 -c '
import random, socket
for _ in range(1000):
    p = random.randrange(20000, 54000)
    try:
        for q in (p, p + 1, p + 10000, p + 10001):
            s = socket.socket(); s.bind(("0.0.0.0", q)); s.close()
    except OSError:
        continue
    print(p); break')
# the bundled JSONL through clean, filter and both dedups, the buckets in the job's cluster
cat > "$T/curate.yaml" <<EOF
name: curate-test
work_dir: unused
redis: 127.0.0.1:1
extract:
  format: jsonl
  in: $ROOT/examples/jsonl
clean: {}
filter:
  config: configs/filters/nemo-en.yaml
dedup_exact: {}
dedup_fuzzy:
  backend: redis
  redis: \${redis}
EOF
run sbatch --parsable --nodes=1 --ntasks-per-node=1 --time=10 --output="$T/curate.log" \
    --export=ALL,SLUICE="$ROOT/tests/cli/slurm_redis_probe.sh",PROBE_SLUICE="$SLUICE",PROBE_DIR="$T/probe",PIPELINE="$T/curate.yaml",OUT="$T/cur",REDIS_PORT="$port",REDIS_PER_NODE=2,SRUN_MPI=none,REDIS_DIR="$T/redis" \
    configs/slurm/curate.sub
expect_rc 0
job=$(cat "$T/out")
state=$(wait_job "$job")
if [ "$state" != COMPLETED ]; then fail "curate job $job: $state"; tail -30 "$T/curate.log" >&2; fi
expect_file "$T/cur/dedup_fuzzy/manifest.json"
if [ -f "$T/cur/dedup_fuzzy/manifest.json" ]; then
    expect_eq "$(json "$T/cur/dedup_fuzzy/manifest.json" "m['command'][m['command'].index('--backend') + 1]")" redis
    expect_eq "$(json "$T/cur/dedup_fuzzy/manifest.json" "m['counts']['documents_in']")" \
        "$(json "$T/cur/dedup_exact/manifest.json" "m['counts']['documents_out']")"
fi
# the node's address: its route to itself (one node), as the script's helper finds it
addr=$(source configs/slurm/redis_cluster.sh &&
    sl_route_addr "$(scontrol show node -o "$host" | sed -n 's/.*NodeAddr=\([^ ]*\).*/\1/p')")
if grep -q "Redis Cluster $addr:$port,$addr:$((port + 1))$" "$T/curate.log"; then ok; else
    fail "no line 'Redis Cluster $addr:$port,$addr:$((port + 1))' in the job log"; fi
run redis-cli -h "$addr" -p "$port" ping
if grep -q -e PONG -e NOAUTH "$T/out"; then fail "redis-server on $port still runs after the job"; else ok; fi
expect_no_file "$T/redis"

case_ "curate.sub: the servers want the job's password, listen on the node's address, split the slots"
p=$T/probe
if [[ $(cat "$p/pw" 2>/dev/null) =~ ^[0-9a-f]{64}$ ]]; then ok; else fail "sluice got no 64-hex-digit password"; fi
expect_eq "$(grep -c NOAUTH "$p/noauth" 2>/dev/null)" 2 "(servers refusing a client without the password)"
expect_eq "$(awk '{ print $2, $3 }' "$p/conf" 2>/dev/null | sort -u)" "$addr yes" "(bind, protected-mode)"
expect_eq "$(cat "$p/cmdlines" 2>/dev/null)" "" "(processes with the password on their command line)"
# both servers did bucket work, each at least a quarter of it (one slot range on two
# servers gave 16,805 commands to one and 1 to the other)
read -r c0 c1 < <(awk '{ print $2 }' "$p/calls" 2>/dev/null | paste -sd ' ') || true
if [ $((${c0:-0} * 4)) -ge $((${c0:-0} + ${c1:-0})) ] && [ $((${c1:-0} * 4)) -ge $((${c0:-0} + ${c1:-0})) ] &&
    [ "${c0:-0}" -gt 0 ]; then ok; else fail "commands per server: ${c0:-none}, ${c1:-none}"; fi
echo "ok curate.sub: commands per server $c0, $c1"
# the job log, the outputs and manifests, Slurm's logs: none holds the password
leaks=$(grep -rlFf "$p/pw" "$T" | grep -vx "$p/pw" || true)
expect_eq "$leaks" "" "(files holding the password)"

case_ "train.sub: the CPU try-out of docs/slurm.md, as written there"
# the block after the marker, run in a directory with the paths it names (configs/, and
# build/sluice, the script's default), without this test's SLUICE in its environment
tryout=$(awk '/^<!-- tests\/cli\/t_slurm.sh runs the next block/ { f = 1; next }
              f && /^```sh/ { g = 1; next } g && /^```/ { exit } g { print }' "$ROOT/docs/slurm.md")
if grep -q 'configs/slurm/train.sub' <<<"$tryout"; then ok; else fail "no try-out block in docs/slurm.md"; fi
mkdir -p "$T/tryout/build"
ln -s "$ROOT/configs" "$T/tryout/configs"
ln -s "$SLUICE" "$T/tryout/build/sluice"
run env -C "$T/tryout" -u SLUICE bash -euo pipefail -c "$tryout"
expect_rc 0
job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/out")
state=$(wait_job "${job:-0}")
log=$T/tryout/sluice-train-$job.out
if [ -n "$job" ] && [ "$state" = COMPLETED ]; then ok; else fail "try-out job '$job': $state"; tail -30 "$log" >&2; fi
steps=$(sed -n 's/.* train\.steps=\([0-9]*\).*/\1/p' <<<"$tryout")
if grep -q "step $steps/$steps " "$log"; then ok; else fail "no 'step $steps/$steps' in the job log"; tail -20 "$log" >&2; fi
if grep -q "micro 8 x 2 ranks" "$log"; then ok; else fail "the try-out did not train on 2 ranks"; fi
expect_file "$(printf '%s/tryout/checkpoints/sluice-train/step-%08d/model.safetensors' "$T" "$steps")"

finish
