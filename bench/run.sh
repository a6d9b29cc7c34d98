#!/usr/bin/env bash
# Run every benchmark in bench/ against its peer tools (`make bench`). Each script prints
# its own table (docs/benchmarks.md has the results and what each one measures); this
# runner keeps going when one fails, saves each one's output to bench/results/NAME.log and
# ends with a line per benchmark: ok, failed (exit code) or skipped.
#
#   bench/run.sh [SLUICE]                  all of them
#   ONLY="reshard tokenize" bench/run.sh   some of them
#
# The peers are installed into .venv-bench first (pip, from bench/requirements.txt, or
# BENCH_REQUIREMENTS); when pip cannot install them the run stops there, exit 2, with pip's
# error. Nothing here is a runtime dependency of sluice.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=$(realpath "${1:-$root/build/sluice}")
build=$(dirname "$sluice")
if [ ! -x "$sluice" ]; then
    echo "bench/run.sh: $sluice: not built (make)" >&2
    exit 2
fi

# name, then the command (run from the repository root)
benches=(
    "reshard        bench/reshard.sh $sluice"
    "parquet        bench/parquet.sh $sluice"
    "parquet-write  bench/parquet_write.sh $sluice"
    "tokenize       bench/tokenize.sh $sluice"
    "tokenize-hf    bench/tokenize_hf.sh 3"
    "tokenizer-train bench/tokenizer-train.sh"
    "punkt          bench/punkt.sh 3"
    "warc           bench/warc.sh $sluice"
    "html           bench/html.sh $build"
    "filter-speed   bench/filter-speed.sh $sluice"
    "filter-agreement bench/filter-agreement.sh $sluice"
    "dedup          bench/dedup.sh $sluice"
    "dedup-accuracy bench/dedup_accuracy.sh $sluice"
    "train-cpu      bench/train_cpu.sh $sluice"
)
[ -x bench/train_gpu.sh ] && benches+=("train-gpu      bench/train_gpu.sh $sluice")
# Megatron-LM's own scripts need its checkout (and Python 3.12): only when MEGATRON_LM is set
[ -n "${MEGATRON_LM:-}" ] && benches+=("tokenize-megatron bench/tokenize_megatron.sh 3")

cd "$root" || exit 2
mkdir -p bench/results

# the peers, once for all benchmarks: stop here, with pip's own error, when they do not
# install (the scripts skip this step when the venv already holds this requirements file)
venv="$root/.venv-bench"
reqs=${BENCH_REQUIREMENTS:-bench/requirements.txt}
want=$(sha256sum "$reqs" | cut -d' ' -f1)
if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
    echo "==== setting up $venv ($reqs)" >&2
    if ! { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; }; then
        echo "bench/run.sh: cannot create $venv (python3 -m venv; Debian: apt-get install python3-venv)" >&2
        exit 2
    fi
    if ! "$venv/bin/pip" install --progress-bar off --disable-pip-version-check -r "$reqs" \
            >bench/results/pip.log 2>&1; then
        echo "bench/run.sh: the peer tools in $reqs cannot be installed; pip says:" >&2
        if grep -q '^ERROR' bench/results/pip.log; then
            sed -n '/^ERROR/,$p' bench/results/pip.log | grep -v '^[[:space:]]*$' | head -30 >&2
        else
            tail -25 bench/results/pip.log >&2
        fi
        echo "(whole log: bench/results/pip.log)" >&2
        exit 2
    fi
    echo "$want" >"$venv/.requirements.sha256"
fi
summary=()
status=0
for entry in "${benches[@]}"; do
    read -r name cmd <<<"$entry"
    if [ -n "${ONLY:-}" ] && ! [[ " $ONLY " == *" $name "* ]]; then
        continue
    fi
    echo "==== $name: $cmd" >&2
    start=$(date +%s)
    # shellcheck disable=SC2086  # cmd is a word list written above
    bash $cmd 2>&1 | tee "bench/results/$name.log"
    rc=${PIPESTATUS[0]}
    secs=$(($(date +%s) - start))
    if [ "$rc" -eq 0 ]; then
        summary+=("$(printf '%-17s ok      %5d s' "$name" "$secs")")
    else
        summary+=("$(printf '%-17s failed  %5d s  (exit %d; bench/results/%s.log)' "$name" "$secs" "$rc" "$name")")
        status=1
    fi
done
[ -z "${ONLY:-}" ] && { echo "==== bench-kernels" >&2; make --no-print-directory bench-kernels 2>&1 | tee bench/results/kernels.log; }
echo
echo "benchmarks:"
[ ${#summary[@]} -gt 0 ] && printf "  %s\n" "${summary[@]}"
exit $status
