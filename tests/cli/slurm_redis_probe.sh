#!/usr/bin/env bash
# sluice as curate.sub starts it, behind a probe for t_slurm.sh: it records in PROBE_DIR,
# while the job's Redis servers run, the password the rank was handed (for the test to
# look for afterwards), what a client without it gets, each server's bind and
# protected-mode, the processes with the password on their command line, and, once the
# run is done, each server's commands (INFO commandstats, less AUTH, CLUSTER, INFO, ...).
#   SLUICE=tests/cli/slurm_redis_probe.sh PROBE_DIR=DIR PROBE_SLUICE=build/sluice ...
set -uo pipefail
p=$PROBE_DIR
mkdir -m 700 "$p"
(umask 077 && printf '%s' "$SLUICE_REDIS_PASSWORD" >"$p/pw")
seeds=$(printf '%s\n' "$@" | sed -n 's/^redis=//p' | tr ',' ' ')
cli() { redis-cli -h "${1%:*}" -p "${1##*:}" "${@:2}" 2>&1 | tr -d '\r'; }
for h in $seeds; do
    echo "$h $(unset REDISCLI_AUTH; cli "$h" ping)" >>"$p/noauth"
    echo "$h $(cli "$h" config get bind | sed -n 2p) $(cli "$h" config get protected-mode | sed -n 2p)" >>"$p/conf"
done
# (grep reads the password from its file, so that its own command line holds none)
grep -lFf "$p/pw" /proc/[0-9]*/cmdline 2>/dev/null >"$p/cmdlines"
"$PROBE_SLUICE" "$@"
rc=$?
for h in $seeds; do
    echo "$h $(cli "$h" info commandstats | awk -F'[:=,]' '/^cmdstat_/ && $1 !~ /_(auth|cluster|info|ping|config|command|client|hello|wait)(\||$)/ { n += $3 } END { print n + 0 }')" >>"$p/calls"
done
exit $rc
