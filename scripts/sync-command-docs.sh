#!/usr/bin/env bash
# Rewrite the "## Usage" section of every docs/commands/<command>.md from the binary's -h.
# Run it after changing a usage text; tests/cli/t_docs.sh fails until the pages match.
#
#   scripts/sync-command-docs.sh [--check] [--sluice BIN] [--docs DIR]
#
# The commands are those `sluice --help` lists. A page's usage section is everything from
# its "## Usage" line to the next "## " heading; it becomes `sluice help CMD` (the usage
# text and options of the command table, cli/table.c: what `sluice CMD -h` prints, as
# tests/unit/test_commands.c checks) in a text block, then one "### sluice CMD SUB" block
# per subcommand (a lowercase word after "sluice CMD" in a usage line) whose help differs
# from the command's. A command without a page, or a page without "## Usage", is an
# error: write the page first.
# --check changes nothing: it prints a diff of what would change and exits 1 if anything
# would.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=${SLUICE:-$root/build/sluice}
docs=$root/docs
check=0
while [ $# -gt 0 ]; do
    case "$1" in
    --check) check=1 ;;
    --sluice) sluice=$2; shift ;;
    --docs) docs=$2; shift ;;
    -h | --help) sed -n '2,15s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "sync-command-docs: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$sluice" ] || { echo "sync-command-docs: no binary '$sluice' (run make first)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sync-docs-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# the commands, from the "commands:" list of sluice --help
mapfile -t commands < <("$sluice" --help | awk '/^commands:/ { on = 1; next }
    on && /^$/ { exit }  on { print $1 }')
[ ${#commands[@]} -gt 0 ] || { echo "sync-command-docs: '$sluice --help' lists no commands" >&2; exit 1; }

# usage_section CMD: the generated section body (without the "## Usage" line)
usage_section() {
    local cmd=$1 sub
    "$sluice" help "$cmd" >"$tmp/h.main"
    printf '\n<!-- written by scripts/sync-command-docs.sh from `sluice %s -h`: edit the usage text in the source, then run the script -->\n\n' "$cmd"
    printf '```text\n'
    cat "$tmp/h.main"
    printf '```\n'
    for sub in $(sed -n "s/^\(usage:\|   or:\) sluice $cmd \([a-z][a-z0-9-]*\)\( .*\)\{0,1\}$/\2/p" "$tmp/h.main" | awk '!seen[$0]++'); do
        "$sluice" help "$cmd" "$sub" >"$tmp/h.sub" 2>/dev/null || continue
        cmp -s "$tmp/h.main" "$tmp/h.sub" && continue
        printf '\n### sluice %s %s\n\n```text\n' "$cmd" "$sub"
        cat "$tmp/h.sub"
        printf '```\n'
    done
    printf '\n'
}

errors=0
changed=0
for cmd in "${commands[@]}"; do
    page=$docs/commands/$cmd.md
    if [ ! -f "$page" ]; then
        echo "sync-command-docs: no page for '$cmd': write $page (with a '## Usage' heading)" >&2
        errors=$((errors + 1))
        continue
    fi
    if ! grep -q '^## Usage$' "$page"; then
        echo "sync-command-docs: $page has no '## Usage' heading" >&2
        errors=$((errors + 1))
        continue
    fi
    usage_section "$cmd" >"$tmp/section"
    # the page with its usage section replaced
    awk -v sec="$tmp/section" '
        /^## Usage$/ { print; while ((getline l < sec) > 0) print l; skip = 1; next }
        skip && /^## / { skip = 0 }
        !skip { print }' "$page" >"$tmp/page"
    if ! cmp -s "$page" "$tmp/page"; then
        changed=$((changed + 1))
        if [ $check -eq 1 ]; then
            diff -u "$page" "$tmp/page" --label "$page" --label "$page (from sluice $cmd -h)" || true
        else
            cat "$tmp/page" >"$page"
            echo "updated $page"
        fi
    fi
done
[ $errors -eq 0 ] || exit 1
if [ $check -eq 1 ] && [ $changed -gt 0 ]; then
    echo "sync-command-docs: $changed page(s) differ from -h; run scripts/sync-command-docs.sh" >&2
    exit 1
fi
exit 0
