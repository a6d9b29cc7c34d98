#!/usr/bin/env bash
# Install the Debian packages sluice needs (scripts/debian-packages.txt) that are missing.
# As root it runs apt-get; otherwise it prints the exact command to run and fails.
# Usage: scripts/install-deps.sh [--check]   (--check: only report, never install)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list="$here/debian-packages.txt"
check_only=0
[ "${1:-}" = "--check" ] && check_only=1

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "install-deps: not a Debian system (no dpkg-query); install the equivalents of:" >&2
    grep -v '^\s*#' "$list" | grep -v '^\s*$' | tr '\n' ' ' >&2
    echo >&2
    exit 0
fi

missing=()
while read -r pkg _; do
    case "$pkg" in ''|'#'*) continue ;; esac
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$pkg")
done < "$list"

if [ ${#missing[@]} -gt 0 ]; then
    if [ $check_only -eq 1 ]; then
        echo "missing Debian packages: ${missing[*]}" >&2
        exit 1
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: these Debian packages are missing: ${missing[*]}" >&2
        echo "run:  sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
    echo "install-deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    # refresh the package lists when they are absent or older than a day
    if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
        apt-get update -qq
    fi
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages used only as test oracles: a virtual environment in .venv, refreshed
# when tests/requirements.txt changes.
req="$here/../tests/requirements.txt"
venv="$here/../.venv"
if [ $check_only -eq 0 ] && [ -f "$req" ] && grep -qv '^\s*\(#\|$\)' "$req"; then
    want=$(sha256sum "$req" | cut -d' ' -f1)
    if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
        echo "install-deps: setting up $venv for the tests (tests/requirements.txt)" >&2
        [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
        echo "$want" > "$venv/.requirements.sha256"
    fi
fi
