#!/usr/bin/env bash
# Docs stay in step with the binary: every command `sluice --help` lists has a page
# docs/commands/<command>.md whose "## Usage" section is exactly its -h (and its
# subcommands' -h), and every relative link in docs/ and README.md points at a file.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
sync=$ROOT/scripts/sync-command-docs.sh

case_ "every listed command has a page whose usage section is its -h"
run "$sync" --check --sluice "$SLUICE" --docs "$ROOT/docs"
expect_rc 0
if [ "$rc" -ne 0 ]; then
    echo "  pages out of step with -h; run scripts/sync-command-docs.sh (diff below)" >&2
    sed 's/^/  /' "$T/out" "$T/err" >&2
fi
"$SLUICE" --help | awk '/^commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }' >"$T/cmds"
while read -r cmd; do
    if [ -f "$ROOT/docs/commands/$cmd.md" ]; then ok; else fail "no page docs/commands/$cmd.md"; fi
done <"$T/cmds"

case_ "sluice help NAME (the command table's usage and options) prints what sluice NAME -h prints"
while read -r cmd; do
    "$SLUICE" help "$cmd" >"$T/help" && "$SLUICE" "$cmd" -h >"$T/h" && cmp -s "$T/help" "$T/h" \
        && ok || fail "'sluice help $cmd' differs from 'sluice $cmd -h'"
done <"$T/cmds"
for sub in exact fuzzy; do
    "$SLUICE" help dedup $sub >"$T/help" && "$SLUICE" dedup $sub -h >"$T/h" && cmp -s "$T/help" "$T/h" \
        && ok || fail "'sluice help dedup $sub' differs from 'sluice dedup $sub -h'"
done
run "$SLUICE" help dedup nope
expect_rc 2; expect_err "'nope' is not a 'dedup' subcommand"

# the check itself: a changed usage text, a missing heading and a missing page all fail
case_ "the check notices a stale usage block"
cp -r "$ROOT/docs" "$T/docs"
sed -i 's/^    -o, --out DIR .*/    -o, --out DIR               (stale text)/' "$T/docs/commands/reshard.md"
run "$sync" --check --sluice "$SLUICE" --docs "$T/docs"
expect_rc 1; expect_out "(stale text)"; expect_out "+    -o, --out DIR               output directory (created)"

case_ "the script rewrites a stale usage block and leaves the rest alone"
run "$sync" --sluice "$SLUICE" --docs "$T/docs"
expect_rc 0; expect_out "reshard.md"
run diff -r "$ROOT/docs" "$T/docs"
expect_rc 0

case_ "the check notices a page without a usage heading"
sed -i 's/^## Usage$/## How to call it/' "$T/docs/commands/clean.md"
run "$sync" --check --sluice "$SLUICE" --docs "$T/docs"
expect_rc 1; expect_err "clean.md has no '## Usage' heading"

case_ "the check notices a command without a page"
rm "$T/docs/commands/export.md"
run "$sync" --check --sluice "$SLUICE" --docs "$T/docs"
expect_rc 1; expect_err "no page for 'export'"

case_ "relative links in docs/ and README.md point at existing files"
run python3 - "$ROOT" <<'PY'
import os, re, sys
root = sys.argv[1]
pages = [os.path.join(root, "README.md")]
for d, _, files in os.walk(os.path.join(root, "docs")):
    pages += [os.path.join(d, f) for f in files if f.endswith(".md")]
bad = 0
for page in sorted(pages):
    text = open(page, encoding="utf-8").read()
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)   # no links in code blocks
    text = re.sub(r"`[^`\n]*`", "", text)                          # nor in code spans
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        full = os.path.normpath(os.path.join(os.path.dirname(page), path))
        if not os.path.exists(full):
            print("%s: broken link %s" % (os.path.relpath(page, root), target))
            bad += 1
print("%d broken" % bad)
PY
expect_rc 0; expect_out "0 broken"

case_ "SLUICE_PROGRESS_INTERVAL is documented under each long command and in the README, and does what they say"
for c in download extract clean filter dedup reshard tokenizer tokenize run; do
    grep -q '^## Progress' "$ROOT/docs/commands/$c.md" && grep -q 'SLUICE_PROGRESS_INTERVAL' "$ROOT/docs/commands/$c.md" \
        && ok || fail "docs/commands/$c.md has no Progress section naming SLUICE_PROGRESS_INTERVAL"
done
grep -q 'SLUICE_PROGRESS_INTERVAL' "$ROOT/README.md" && ok || fail "README.md does not name SLUICE_PROGRESS_INTERVAL"
python3 -c "
import json
for i in range(20000): print(json.dumps({'text': 'document %d ' % i + 'lorem ipsum ' * 20}))
" > "$T/progress.jsonl"
SLUICE_PROGRESS_INTERVAL=0.001 run "$SLUICE" reshard --shards 2 --out "$T/progress" "$T/progress.jsonl"
expect_rc 0; expect_err "reshard: "; expect_err "B/s"
run "$SLUICE" reshard --shards 2 --out "$T/progress2" "$T/progress.jsonl"
expect_rc 0; expect_no_err "B/s"

finish
