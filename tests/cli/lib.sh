# Helpers for CLI tests: run a command, check its exit code, stdout and stderr.
# Sourced by each tests/cli/t_*.sh; $SLUICE is the binary, $T a fresh temporary directory.

T=$(mktemp -d "${TMPDIR:-/tmp}/sluice-cli-XXXXXX")
# compiled vocabularies cached per test, not in the user's cache
export SLUICE_CACHE_DIR="$T/vocab-cache"
FIX=${SLUICE_FIXTURES:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures" && pwd)}
_pass=0
_fail=0
_case=""

# mpirun with the flags our tests need (root in containers, more ranks than cores)
MPIRUN=(mpirun --oversubscribe -x SLUICE_PROGRESS_INTERVAL)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
# Open MPI's plugins leak by design (dlopen'ed, unloaded): no leak checks under mpirun
[ "${SANITIZE:-0}" = 1 ] && MPIRUN+=(-x ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
have_mpi() { command -v mpirun >/dev/null 2>&1; }
# The trainer on emulated GPUs (build/emu/libsluice-gpu-emu.so, loaded through
# SLUICE_GPU_LIB); ends the test with SKIP where the plugin is not built, or, with the
# argument `mpi`, where mpirun is missing.
need_gpu_emu() {
    local plugin="${SLUICE_BUILD:-$ROOT/build}/emu/libsluice-gpu-emu.so"
    if [ ! -e "$plugin" ]; then
        echo "SKIP: no $plugin (make builds it where the CUDA headers are: cuda_runtime_api.h, cuda_bf16.h, cublasLt.h)"
        finish
        exit 0
    fi
    if [ "${1:-}" = mpi ] && ! have_mpi; then
        echo "SKIP: mpirun not found"
        finish
        exit 0
    fi
    export SLUICE_GPU_LIB="$plugin"
}

# case NAME: start a test case
case_() { _case="$1"; }

# run CMD...: run with output captured in $T/out, $T/err, exit code in $rc
run() {
    set +e
    "$@" >"$T/out" 2>"$T/err"
    rc=$?
    set -e
}

fail() {
    echo "FAIL [$(basename "$0")] $_case: $*" >&2
    echo "  --- stdout:" >&2; head -c 2000 "$T/out" | sed 's/^/  /' >&2
    echo "  --- stderr:" >&2; head -c 2000 "$T/err" | sed 's/^/  /' >&2
    _fail=$((_fail + 1))
}
ok() { _pass=$((_pass + 1)); }

expect_rc() { if [ "$rc" -eq "$1" ]; then ok; else fail "exit code $rc, expected $1"; fi; }
expect_out() { if grep -qF -- "$1" "$T/out"; then ok; else fail "stdout lacks: $1"; fi; }
expect_err() { if grep -qF -- "$1" "$T/err"; then ok; else fail "stderr lacks: $1"; fi; }
expect_no_err() { if grep -qF -- "$1" "$T/err"; then fail "stderr has: $1"; else ok; fi; }
expect_out_empty() { if [ -s "$T/out" ]; then fail "stdout not empty"; else ok; fi; }
expect_err_empty() { if [ -s "$T/err" ]; then fail "stderr not empty"; else ok; fi; }
expect_file() { if [ -e "$1" ]; then ok; else fail "missing file $1"; fi; }
expect_no_file() { if [ -e "$1" ]; then fail "file should not exist: $1"; else ok; fi; }
expect_eq() { if [ "$1" = "$2" ]; then ok; else fail "'$1' != '$2' ${3:-}"; fi; }

# Python with the test oracles (numpy, ...) from .venv when it exists
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=python3
[ -x "$ROOT/.venv/bin/python" ] && PY="$ROOT/.venv/bin/python"

# json FILE EXPR: evaluate a Python expression over the parsed JSON file (as `m`)
json() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print($2)" "$1"; }

# no temporary or partial shard left in DIR
expect_no_partials() {
    local left
    left=$(find "$1" -name '.*.tmp' 2>/dev/null | head -1 || true)
    if [ -n "$left" ]; then fail "temporary file left: $left"; else ok; fi
}

finish() {
    rm -rf "$T"
    echo "$(basename "$0"): $_pass passed, $_fail failed"
    [ "$_fail" -eq 0 ]
}
