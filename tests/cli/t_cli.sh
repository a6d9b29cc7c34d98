#!/usr/bin/env bash
# The dispatcher: help, version, unknown commands, exit codes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

case_ "--help lists commands on stdout"
run "$SLUICE" --help
expect_rc 0; expect_out "usage: sluice"; expect_out "reshard"; expect_err_empty

case_ "no command: usage on stderr, exit 2"
run "$SLUICE"
expect_rc 2; expect_err "usage: sluice"; expect_out_empty

case_ "--version"
run "$SLUICE" --version
expect_rc 0; expect_out "sluice $(cat "$(dirname "$0")/../../VERSION")"

case_ "help CMD prints the command's usage to stdout"
run "$SLUICE" help reshard
expect_rc 0; expect_out "usage: sluice reshard"; expect_out "--shard-size"; expect_err_empty

case_ "CMD -h is the same as help CMD"
run "$SLUICE" reshard -h
expect_rc 0
cp "$T/out" "$T/h1"
run "$SLUICE" help reshard
expect_eq "$(cat "$T/h1")" "$(cat "$T/out")" "(help reshard vs reshard -h)"

case_ "unknown command: nearest match on stderr, exit 2"
run "$SLUICE" resahrd
expect_rc 2; expect_err "'resahrd' is not a sluice command"; expect_err "reshard"; expect_out_empty

case_ "unknown command far from any: no suggestion"
run "$SLUICE" zzzzzzzzzz
expect_rc 2; expect_no_err "most similar"

case_ "help for an unknown command"
run "$SLUICE" help reshad
expect_rc 2; expect_err "reshard"

case_ "unknown global option"
run "$SLUICE" --bogus reshard
expect_rc 2; expect_err "unknown option '--bogus'"

case_ "usage error in a command: exit 2, message and usage on stderr"
run "$SLUICE" reshard "$FIX/jsonl"
expect_rc 2; expect_err "--out DIR is required"; expect_err "usage: sluice reshard"; expect_out_empty

case_ "unknown option of a command with a suggestion"
run "$SLUICE" reshard --out "$T/o" --shard-sise 1M "$FIX/jsonl"
expect_rc 2; expect_err "did you mean '--shard-size'"

case_ "bad option value"
run "$SLUICE" reshard --out "$T/o" --shard-size lots "$FIX/jsonl"
expect_rc 2; expect_err "'lots' is not a size"

case_ "conflicting options"
run "$SLUICE" reshard --out "$T/o" --shards 2 --shard-size 1M "$FIX/jsonl"
expect_rc 2; expect_err "cannot be used together"

case_ "failure exits 1"
run "$SLUICE" reshard --out "$T/o" "$T/does-not-exist.jsonl"
expect_rc 1; expect_err "does-not-exist.jsonl"

finish
