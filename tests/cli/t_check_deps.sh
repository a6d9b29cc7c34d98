#!/usr/bin/env bash
# Layering: scripts/check-deps.sh passes on this tree and fails, naming file and line, on a
# planted include that the table in docs/dev.md does not allow.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
check=$ROOT/scripts/check-deps.sh

case_ "the tree keeps its layers"
run "$check" "$ROOT"
expect_rc 0; expect_out_empty

# a copy of the sources, with one bad include planted at a time
mkdir -p "$T/src"
for d in core dataset tokenize curate train pipeline kernels cli docs; do cp -r "$ROOT/$d" "$T/src/"; done

case_ "a component including cli/ fails"
cp -r "$T/src" "$T/a"
printf '#include "cli/commands.h"\n' >>"$T/a/curate/filter/filter.c"
run "$check" "$T/a"
expect_rc 1
expect_out "curate/filter/filter.c:"
expect_out 'curate/ includes "cli/commands.h"'
expect_err "a lower layer includes a higher one"

case_ "dataset/ including tokenize/ (the cycle) fails"
cp -r "$T/src" "$T/b"
printf '#include "tokenize/tokenizer.h"\n' >"$T/b/dataset/planted.c"
run "$check" "$T/b"
expect_rc 1; expect_out 'dataset/planted.c:1: dataset/ includes "tokenize/tokenizer.h"'

case_ "a kernel including train/ fails; core including anything above it fails"
cp -r "$T/src" "$T/c"
printf '#include "train/model.h"\n' >"$T/c/kernels/planted.h"
printf '/* x */\n  #  include "pipeline/pipeline.h"\n' >"$T/c/core/planted.c"
run "$check" "$T/c"
expect_rc 1
expect_out 'kernels/planted.h:1: kernels/ includes "train/model.h"'
expect_out 'core/planted.c:2: core/ includes "pipeline/pipeline.h"'

case_ "an allowed include and a local include pass"
cp -r "$T/src" "$T/d"
printf '#include "dataset/idx.h"\n#include "local.h"\n' >"$T/d/tokenize/planted.c"
run "$check" "$T/d"
expect_rc 0

case_ "no layer table is an error, not a pass"
cp -r "$T/src" "$T/e"
sed -i '/<!-- layers -->/,/<!-- \/layers -->/d' "$T/e/docs/dev.md"
run "$check" "$T/e"
expect_rc 2; expect_err "no layer table"

finish
