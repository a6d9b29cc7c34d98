#!/usr/bin/env bash
# Layering: scripts/check-deps.sh passes on this tree and its objects, and fails, naming file
# and line (or object and symbol), on a planted include that the table in docs/dev.md does not
# allow (quoted, in angle brackets, or relative with ../) and on a planted object that uses a
# symbol of a higher layer.
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

case_ "an include in angle brackets is checked too (the build has -I.)"
cp -r "$T/src" "$T/f"
printf '#include <train/model.h>\n#include <stdio.h>\n' >"$T/f/curate/planted.c"
run "$check" "$T/f"
expect_rc 1
expect_out 'curate/planted.c:1: curate/ includes <train/model.h>'
if grep -q "stdio.h" "$T/out"; then fail "a system header named"; else ok; fi

case_ "an include with ../ fails in any folder, cli/ too"
cp -r "$T/src" "$T/g"
printf '#include "../core/err.h"\n' >"$T/g/cli/planted.c"
printf '#include "../../train/model.h"\n' >"$T/g/curate/filter/planted.h"
run "$check" "$T/g"
expect_rc 1
expect_out 'cli/planted.c:1: a relative include "../core/err.h"'
expect_out 'curate/filter/planted.h:1: a relative include "../../train/model.h"'

# objects: a lower layer's object that references a symbol defined only in a higher layer's,
# declared by hand (no include to catch); a stale object (its source gone) is not read
case_ "an extern symbol of a higher layer fails; one of an allowed layer and a stale object pass"
cp -r "$T/src" "$T/h"
mkdir -p "$T/h-obj/core" "$T/h-obj/train" "$T/h-obj/dataset"
printf 'int planted_train_fn(void) { return 1; }\nint planted_core_fn(void) { return 2; }\n' \
    >"$T/h/train/planted.c"
printf 'int planted_train_fn(void);\nint planted_up(void) { return planted_train_fn(); }\n' \
    >"$T/h/core/planted.c"
printf 'int planted_base(void) { return 3; }\n' >"$T/h/core/planted_base.c"
printf 'int planted_base(void);\nint planted_down(void) { return planted_base(); }\n' \
    >"$T/h/dataset/planted.c"
for f in train/planted core/planted core/planted_base dataset/planted; do
    cc -c -o "$T/h-obj/$f.o" "$T/h/$f.c"
done
cp "$T/h-obj/core/planted.o" "$T/h-obj/core/gone.o" # no core/gone.c
run "$check" --obj "$T/h-obj" "$T/h"
expect_rc 1
expect_out "core/planted.o: core/ uses planted_train_fn, defined in train/ (train/planted.o)"
expect_no_err "includes"
expect_err "uses a symbol of a higher one"
if grep -q "gone.o\|dataset/planted.o" "$T/out"; then fail "a stale or allowed object named"; else ok; fi
rm "$T/h-obj/core/planted.o" "$T/h/core/planted.c"
run "$check" --obj "$T/h-obj" "$T/h"
expect_rc 0

case_ "the build's objects keep the layers"
if [ -d "${SLUICE_BUILD:-}/obj" ]; then
    run "$check" --obj "$SLUICE_BUILD/obj" "$ROOT"
    expect_rc 0; expect_out_empty
else
    run "$check" --obj "$T/no-objects" "$ROOT"
    expect_rc 2; expect_err "no object directory"
fi

finish
