#!/usr/bin/env bash
# A new user's flow, away from the source tree: `make install PREFIX=...` into a temporary
# prefix, then a pipeline file of one's own in a temporary folder (a WARC beside it, the
# bundled FineWeb filter config named as configs/filters/fineweb.yaml) run from another
# directory: extract -> clean -> filter -> dedup -> tokenizer -> tokenize, with no
# override and no workaround; the same with the build's own binary; --dry-run naming a
# missing input before anything runs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
unset SLUICE_DATA_DIR

PREFIX="$T/prefix"
mkdir -p "$T/project/warc" "$T/elsewhere"
cp "$ROOT"/examples/warc/*.warc.gz "$FIX/warc/sample-0000.warc.gz" "$T/project/warc/"
cat > "$T/project/web.yaml" <<'EOF'
# my own pipeline: the WARCs beside this file
name: web
extract:
  format: warc
  in: warc
clean: {}
filter:
  config: configs/filters/fineweb.yaml
dedup_exact: {}
dedup_fuzzy: {}
tokenizer_train:
  model_type: bpe
  vocab_size: 400
  character_coverage: 0.995
tokenize:
  append_eod: true
EOF

case_ "make install PREFIX=...: the binary, configs, samples and docs"
run make -s -C "$ROOT" install-files PREFIX="$PREFIX" BUILD="$SLUICE_BUILD" CUDA=0
expect_rc 0
expect_file "$PREFIX/bin/sluice"; expect_file "$PREFIX/share/sluice/configs/filters/fineweb.yaml"
expect_file "$PREFIX/share/sluice/configs/pipelines/demo.yaml"; expect_file "$PREFIX/share/sluice/examples/warc"
expect_file "$PREFIX/share/doc/sluice/commands/run.md"; expect_file "$PREFIX/share/doc/sluice/README.md"
if [ -e "$SLUICE_BUILD/libsluice-gpu.so" ]; then expect_file "$PREFIX/libexec/sluice/libsluice-gpu.so"; fi
if [ -e "$SLUICE_BUILD/libsluice-mpi.so" ]; then expect_file "$PREFIX/libexec/sluice/libsluice-mpi.so"; fi
expect_file "$PREFIX/libexec/sluice/libsluice-cxx.so"
cmp -s "$SLUICE" "$PREFIX/libexec/sluice/sluice" && ok || fail "installed binary differs from the build's"

case_ "installed: the pipeline runs from another directory, configs found in PREFIX/share/sluice"
cd "$T/elsewhere"
run "$PREFIX/bin/sluice" run ../project/web.yaml --dry-run
expect_rc 0
expect_out "sluice extract --out web/extract --format warc ../project/warc"
expect_out "--config $PREFIX/share/sluice/configs/filters/fineweb.yaml"
run "$PREFIX/bin/sluice" run ../project/web.yaml
expect_rc 0; expect_out "pipeline 'web': 7 of 7 steps ran"
expect_file web/tokenize/web_text_document.bin; expect_file web/tokenize/web_text_document.idx
expect_eq "$(json web/extract/manifest.json "len(m['inputs'])")" 2
din=$(json web/filter/manifest.json "m['counts']['documents_in']")
dout=$(json web/filter/manifest.json "m['counts']['documents_out']")
[ "$din" -gt 0 ] && [ "$dout" -gt 0 ] && [ "$dout" -lt "$din" ] && ok || fail "filter kept $dout of $din"
expect_eq "$(json web/tokenize/web.manifest.json "m['counts']['documents_in']")" \
    "$(json web/dedup_fuzzy/manifest.json "m['counts']['documents_out']")"
run "$PREFIX/bin/sluice" run ../project/web.yaml
expect_rc 0; expect_out "0 of 7 steps ran, 7 were complete"
if have_mpi && [ -e "$SLUICE_BUILD/libsluice-mpi.so" ]; then
    # under mpirun, the installed binary finds its MPI library beside itself in libexec
    run "${MPIRUN[@]}" -np 2 "$PREFIX/bin/sluice" reshard --out web/r2 web/extract
    expect_rc 0; expect_eq "$(json web/r2/manifest.json "m['ranks']")" 2
fi

case_ "installed: a bundled pipeline by name (sluice run demo) from anywhere"
run "$PREFIX/bin/sluice" run demo --dry-run work_dir="$T/demo"
expect_rc 0; expect_out "--format warc $PREFIX/share/sluice/examples/warc"
expect_out "sluice train $PREFIX/share/sluice/configs/models/tiny-gpt.yaml"

case_ "the build's binary, from a directory other than the source tree: the same outputs"
mkdir -p "$T/elsewhere2" && cd "$T/elsewhere2"
run "$SLUICE" run ../project/web.yaml
expect_rc 0; expect_out "7 of 7 steps ran"
cmp -s web/tokenize/web_text_document.bin "$T/elsewhere/web/tokenize/web_text_document.bin" && ok \
    || fail "tokens differ between the installed and the build's binary"

case_ "--dry-run and run check that inputs and configs exist before anything runs"
sed -e 's/in: warc/in: warcs/' -e 's/fineweb.yaml/finweb.yaml/' "$T/project/web.yaml" > "$T/project/typo.yaml"
run "$SLUICE" run ../project/typo.yaml --dry-run
expect_rc 1
expect_err "step 'extract': input '../project/warcs' does not exist"
expect_err "step 'filter': input '../project/configs/filters/finweb.yaml' does not exist"
expect_err "hint: a relative path in a pipeline file names a file beside the pipeline file"
run "$SLUICE" run ../project/typo.yaml
expect_rc 1; expect_err "2 inputs are missing"; expect_no_file typo
# on the command line, a path is relative to the working directory
cp -r "$T/project/warc" "$T/elsewhere2/mywarc"
run "$SLUICE" run ../project/web.yaml extract.in=mywarc work_dir=w2 --dry-run
expect_rc 0; expect_out "sluice extract --out w2/extract --format warc mywarc"
cd "$ROOT"

finish
