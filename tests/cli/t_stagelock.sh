#!/usr/bin/env bash
# One run at a time in an output directory (core/dirlock.h): two real processes racing on
# one --out (the second refused, naming the first, or with --wait run after it; the output
# whole and equal to a lone run's), every command that writes a stage directory refusing
# a held one, a rank left of an earlier run keeping the next run out, every MPI rank
# holding the directory, and the stale temporaries of a dead run removed by the next one.
# Every wait is bounded by `timeout` or a bounded loop; no assertion depends on timing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

python3 - "$T" <<'PY'
import json, sys
with open(sys.argv[1] + "/docs.jsonl", "w") as f:
    for i in range(20000):
        f.write(json.dumps({"id": "d%d" % i, "text": "document %d " % i + "lorem ipsum " * 8}) + "\n")
PY
mkdir -p "$T/fifo"
mkfifo "$T/fifo/docs.jsonl"

# until CMD succeeds, at most 30 s (a bound, not a timing assertion)
wait_for() {
    local i
    for i in $(seq 600); do
        if eval "$1"; then return 0; fi
        sleep 0.05
    done
    fail "gave up waiting for: $1"
    return 1
}
# the shard's documents, decompressed
docs_of() { zstd -dc "$1"/part-*.jsonl.zst; }
# start PIDFILE CMD...: CMD in the background, bounded by timeout; CMD's own pid (which a
# lock file names) in PIDFILE, the background job in $!
start() {
    local pf=$1
    shift
    rm -f "$pf"
    timeout 120 sh -c 'echo $$ >"$0"; exec "$@"' "$pf" "$@" &
}
# pid_of PIDFILE: once it is written
pid_of() { wait_for "[ -s '$1' ]" && cat "$1"; }

case_ "a lone run, the reference"
run timeout 60 "$SLUICE" extract --format jsonl --out "$T/lone" "$T/docs.jsonl"
expect_rc 0

case_ "two extracts into one --out: the second is refused while the first runs, naming it"
# the first reads a FIFO: it holds the directory, stalled, until the data comes
start "$T/a.pid" "$SLUICE" extract --format jsonl --out "$T/o1" "$T/fifo/docs.jsonl" >"$T/a.out" 2>"$T/a.err"
ajob=$! apid=$(pid_of "$T/a.pid")
wait_for "grep -qs '\"pid\":$apid,' '$T/o1/.sluice/lock'"
run timeout 60 "$SLUICE" extract --format jsonl --out "$T/o1" "$T/docs.jsonl"
expect_rc 1
expect_err "output directory '$T/o1' is in use by another run (pid $apid on host"
expect_err "sluice extract --format jsonl --out $T/o1 $T/fifo/docs.jsonl)"
expect_err "hint: wait for it to end, or add --wait"
timeout 60 cat "$T/docs.jsonl" >"$T/fifo/docs.jsonl"
arc=0; wait $ajob || arc=$?
expect_eq "$arc" 0 "(the first run's exit code)"
expect_eq "$(docs_of "$T/o1" | md5sum)" "$(docs_of "$T/lone" | md5sum)" "(the first run's shard)"
expect_eq "$(json "$T/o1/manifest.json" "m['counts']['documents_out']")" \
          "$(json "$T/lone/manifest.json" "m['counts']['documents_out']")"
expect_no_partials "$T/o1"
# resumed as it is: the record's hash is of the whole shard
run timeout 60 "$SLUICE" extract --format jsonl --out "$T/o1" --force "$T/docs.jsonl"
expect_rc 0
expect_eq "$(docs_of "$T/o1" | md5sum)" "$(docs_of "$T/lone" | md5sum)"

case_ "--wait: the second waits for the first, says for whom, then runs"
start "$T/a.pid" "$SLUICE" extract --format jsonl --out "$T/o2" "$T/fifo/docs.jsonl" >"$T/a.out" 2>"$T/a.err"
ajob=$! apid=$(pid_of "$T/a.pid")
wait_for "grep -qs '\"pid\":$apid,' '$T/o2/.sluice/lock'"
timeout 120 "$SLUICE" extract --format jsonl --out "$T/o2" --wait --force "$T/docs.jsonl" \
    >"$T/b.out" 2>"$T/b.err" &
bjob=$!
wait_for "grep -qs 'waiting for it to end' '$T/b.err'"
grep -qF "is in use by another run (pid $apid on host" "$T/b.err" && ok || fail "the waiting message does not name pid $apid"
timeout 60 cat "$T/docs.jsonl" >"$T/fifo/docs.jsonl"
arc=0; wait $ajob || arc=$?
brc=0; wait $bjob || brc=$?
expect_eq "$arc/$brc" "0/0" "(exit codes of the first and the waiting run)"
expect_eq "$(json "$T/o2/manifest.json" "'--wait' in m['command']")" "True" "(the second run wrote last)"
expect_eq "$(docs_of "$T/o2" | md5sum)" "$(docs_of "$T/lone" | md5sum)"
expect_no_partials "$T/o2"

# Hold DIR's lock from this shell, as another run would (with its description).
hold() {
    mkdir -p "$1/.sluice"
    exec 9<>"$1/.sluice/lock"
    flock -x 9
    printf '{"pid":%d,"host":"here","started":"T0","command":"sluice test"}\n' $$ >"$1/.sluice/lock"
}
unhold() { exec 9>&-; }

mkdir -p "$T/gpt2" "$T/www"
zstd -q -d "$FIX/tokenizer/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$FIX/tokenizer/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
head -50 "$T/docs.jsonl" >"$T/small.jsonl"
printf '{"text": "%s"}\n' "the ninth task text" >"$T/task.jsonl"
printf 'tasks:\n  - name: t\n    files: [task.jsonl]\n    fields: [text]\n' >"$T/tasks.yaml"
cat >"$T/pipe.yaml" <<EOF
name: p
work_dir: $T/work
clean:
  in: $T/small.jsonl
EOF
# command | the directory it locks
cmds=(
    "clean --out $T/h/clean $T/small.jsonl|$T/h/clean"
    "extract --format jsonl --out $T/h/extract $T/small.jsonl|$T/h/extract"
    "filter --config $ROOT/configs/filters/gopher.yaml --out $T/h/filter $T/small.jsonl|$T/h/filter"
    "decontaminate --tasks $T/tasks.yaml --out $T/h/decont $T/small.jsonl|$T/h/decont"
    "reshard --out $T/h/reshard $T/small.jsonl|$T/h/reshard"
    "dedup exact --out $T/h/exact $T/small.jsonl|$T/h/exact"
    "dedup fuzzy --out $T/h/fuzzy $T/small.jsonl|$T/h/fuzzy"
    "tokenize --tokenizer gpt2:$T/gpt2 --out $T/h/tok/t $T/small.jsonl|$T/h/tok/.t.sluice-parts"
    "download --out $T/h/download --url http://127.0.0.1:9/x.jsonl|$T/h/download"
    "run $T/pipe.yaml|$T/work"
)
for row in "${cmds[@]}"; do
    cmd=${row%|*} dir=${row#*|}
    case_ "sluice ${cmd%% -*}: refused while another run holds its directory"
    hold "$dir"
    # shellcheck disable=SC2086
    run timeout 60 "$SLUICE" $cmd
    unhold
    expect_rc 1
    expect_err "is in use by another run (pid $$ on host 'here', started T0: sluice test)"
    expect_no_file "$dir/manifest.json"
done

case_ "tokenize: the held parts folder keeps the outputs untouched; free, it runs and removes a dead run's temporaries"
run timeout 60 "$SLUICE" tokenize --tokenizer "gpt2:$T/gpt2" --out "$T/tok/t" "$T/small.jsonl"
expect_rc 0
cp "$T/tok/t_text_document.bin" "$T/tok.bin"
hold "$T/tok/.t.sluice-parts"
run timeout 60 "$SLUICE" tokenize --tokenizer "gpt2:$T/gpt2" --out "$T/tok/t" "$T/docs.jsonl"
unhold
expect_rc 1
cmp -s "$T/tok.bin" "$T/tok/t_text_document.bin" && ok || fail "the outputs changed"
echo stale >"$T/tok/.t_text_document.bin.99999999-0badf00d.tmp"
echo stale >"$T/tok/.t.manifest.json.tmp"
run timeout 60 "$SLUICE" tokenize --tokenizer "gpt2:$T/gpt2" --out "$T/tok/t" "$T/small.jsonl"
expect_rc 0
expect_no_file "$T/tok/.t_text_document.bin.99999999-0badf00d.tmp"
expect_no_file "$T/tok/.t.manifest.json.tmp"
cmp -s "$T/tok.bin" "$T/tok/t_text_document.bin" && ok || fail "the outputs differ from the first run's"

case_ "a stage removes the temporaries a dead run left (its own folders' too), and only under its lock"
mkdir -p "$T/st/lang=en" "$T/st/.sluice"
for f in "$T/st/.part-00000.jsonl.zst.4242-0badf00d.tmp" "$T/st/lang=en/.part-00001.jsonl.zst.4242-0badf00d.tmp" \
         "$T/st/.sluice/.plan.json.4242-0badf00d.tmp"; do echo stale >"$f"; done
hold "$T/st"
run timeout 60 "$SLUICE" clean --out "$T/st" "$T/small.jsonl"
unhold
expect_rc 1
expect_file "$T/st/.part-00000.jsonl.zst.4242-0badf00d.tmp"
run timeout 60 "$SLUICE" clean --out "$T/st" "$T/small.jsonl"
expect_rc 0
expect_no_partials "$T/st"

case_ "a rank of an earlier run still writing (its rank 0 gone) keeps the next run out until it exits"
# what a rank other than 0 holds while it may write: ranks.lock, shared; here held by this
# shell (an mpirun killed with -9 on another node leaves such ranks for seconds)
mkdir -p "$T/orph/.sluice"
exec 8<>"$T/orph/.sluice/ranks.lock"
flock -s 8
run timeout 60 "$SLUICE" clean --out "$T/orph" "$T/small.jsonl"
expect_rc 1
expect_err "output directory '$T/orph' is still written by ranks of an earlier run"
expect_no_file "$T/orph/manifest.json"
# (8>&-: the run must not inherit this shell's hold)
timeout 60 "$SLUICE" clean --out "$T/orph" --wait "$T/small.jsonl" >"$T/b.out" 2>"$T/b.err" 8>&- &
bjob=$!
wait_for "grep -qs 'is in use by ranks of an earlier run .* that outlived their launcher: waiting' '$T/b.err'"
exec 8>&-
brc=0; wait $bjob || brc=$?
expect_eq "$brc" 0 "(the waiting run's exit code)"
run timeout 60 "$SLUICE" clean --out "$T/orph-lone" "$T/small.jsonl"
expect_eq "$(docs_of "$T/orph" | md5sum)" "$(docs_of "$T/orph-lone" | md5sum)"

if have_mpi; then
    case_ "mpirun -np 2: every rank holds ranks.lock while it may write, rank 0 the lock"
    mkfifo "$T/fifo/b.jsonl"
    # rank 0 takes small.jsonl, rank 1 the FIFO (balanced by size), where it stalls
    timeout 120 "${MPIRUN[@]}" -np 2 "$SLUICE" clean --out "$T/om" "$T/small.jsonl" "$T/fifo/b.jsonl" \
        >"$T/m.out" 2>&1 &
    mjob=$!
    # the processes holding a lock file of the directory
    holders() {
        local p
        for p in /proc/[0-9]*; do
            ls -l "$p/fd" 2>/dev/null | grep -q -- "-> $T/om/.sluice/$1\$" && echo "${p#/proc/}"
        done
        return 0
    }
    wait_for '[ "$(holders ranks.lock | wc -l)" = 2 ]'
    r0=$(holders lock)
    expect_eq "$(holders ranks.lock | grep -cvx "$r0")" 1 "(ranks holding ranks.lock besides rank 0)"
    run timeout 60 "$SLUICE" clean --out "$T/om" "$T/small.jsonl" "$T/small.jsonl"
    expect_rc 1
    expect_err "output directory '$T/om' is in use by another run (pid $r0 on host"
    timeout 60 cat "$T/small.jsonl" >"$T/fifo/b.jsonl"
    mrc=0; wait $mjob || mrc=$?
    expect_eq "$mrc" 0 "(mpirun's exit code)"
    expect_eq "$(json "$T/om/manifest.json" "m['counts']['documents_out']")" 100
    expect_no_partials "$T/om"
fi

finish
