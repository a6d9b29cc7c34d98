#!/usr/bin/env bash
# Under real mpirun: -np 1, 2 and 4 give byte-identical shards and the same counts; a
# failing rank stops the whole job instead of hanging it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if ! have_mpi; then
    echo "skip: mpirun not found (install openmpi-bin)"
    finish
    exit 0
fi

for np in 1 2 3 4; do
    case_ "world collectives under mpirun -np $np"
    run timeout 120 "${MPIRUN[@]}" -np $np "${SLUICE_BUILD:-$(dirname "$SLUICE")}/test_world"
    expect_rc 0; expect_out "ok $np ranks"
done

mkdir -p "$T/in"
python3 - "$T/in" <<'PY'
import json, sys, gzip, random
random.seed(7)
d = sys.argv[1]
for f in range(5):
    path = d + "/part-%d.jsonl" % f
    op = gzip.open(path + ".gz", "wt") if f % 2 else open(path, "w")
    with op as out:
        for i in range(random.randint(50, 400)):
            words = " ".join(random.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(random.randint(1, 300)))
            out.write(json.dumps({"text": words, "file": f, "i": i}) + "\n")
            if i % 97 == 5:
                out.write("broken line %d\n" % i)
PY
cp "$FIX/jsonl/blns.jsonl.zst" "$T/in/"

for np in 1 2 4; do
    case_ "mpirun -np $np"
    run "${MPIRUN[@]}" -np $np "$SLUICE" reshard --out "$T/o$np" --shards 7 "$T/in"
    expect_rc 0
    expect_eq "$(json "$T/o$np/manifest.json" "m['ranks']")" $np
done

for np in 2 4; do
    case_ "-np $np gives the same shards as -np 1"
    for f in "$T"/o1/part-*.jsonl.zst; do
        cmp -s "$f" "$T/o$np/$(basename "$f")" && ok || fail "$(basename "$f") differs"
    done
    expect_eq "$(json "$T/o$np/manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
              "$(json "$T/o1/manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
    expect_eq "$(json "$T/o$np/manifest.json" "json.dumps(m['outputs'])")" \
              "$(json "$T/o1/manifest.json" "json.dumps(m['outputs'])")"
done

case_ "every bad line is reported exactly once across ranks"
run "${MPIRUN[@]}" -np 4 "$SLUICE" reshard --out "$T/o4b" --shards 7 "$T/in"
n_reported=$(grep -c "expected a JSON object, skipped" "$T/err" || true)
expect_eq "$n_reported" "$(json "$T/o1/manifest.json" "m['counts']['skipped_invalid_json']")"

case_ "the singleton run equals the mpirun -np 1 run"
run "$SLUICE" reshard --out "$T/o0" --shards 7 "$T/in"
expect_rc 0
for f in "$T"/o1/part-*.jsonl.zst; do
    cmp -s "$f" "$T/o0/$(basename "$f")" && ok || fail "$(basename "$f") differs"
done

case_ "Open MPI is loaded (libsluice-mpi.so) only by a process that mpirun started"
LD_DEBUG=files "$SLUICE" --version >/dev/null 2>"$T/ld.log"
grep -q "file=libzstd" "$T/ld.log" && ok || fail "LD_DEBUG shows no library loads"
grep -q "file=libmpi" "$T/ld.log" && fail "sluice --version loaded libmpi" || ok
run "${MPIRUN[@]}" -np 2 -x LD_DEBUG=files "$SLUICE" reshard --out "$T/ld2" --shards 7 "$T/in"
expect_rc 0
expect_err "/libsluice-mpi.so"; expect_err "file=libmpi"
expect_eq "$(json "$T/ld2/manifest.json" "m['ranks']")" 2
for f in "$T"/o2/part-*.jsonl.zst; do
    cmp -s "$f" "$T/ld2/$(basename "$f")" && ok || fail "$(basename "$f") differs"
done
run "${MPIRUN[@]}" -np 2 -x SLUICE_MPI_LIB="$T/none/libsluice-mpi.so" "$SLUICE" reshard --out "$T/ld3" "$T/in"
[ "$rc" -ne 0 ] && ok || fail "exit 0 without the MPI library"
expect_err "cannot load sluice's MPI library"; expect_err "$T/none/libsluice-mpi.so"
expect_no_file "$T/ld3/part-00000.jsonl.zst"

case_ "a failing rank stops the job with a clear message (no hang)"
mkdir -p "$T/bad"
cp "$T"/in/part-0.jsonl "$T"/in/part-2.jsonl "$T/bad/"
python3 -c "
import json, random, string
random.seed(1)
for i in range(20000): print(json.dumps({'text': ''.join(random.choices(string.ascii_letters, k=60))}))" | gzip > "$T/bad/full.jsonl.gz"
head -c 200000 "$T/bad/full.jsonl.gz" > "$T/bad/cut.jsonl.gz"; rm "$T/bad/full.jsonl.gz"
run timeout 60 "${MPIRUN[@]}" -np 2 "$SLUICE" reshard --out "$T/obad" "$T/bad"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ok || fail "exit $rc (124 means it hung)"
expect_err "cut.jsonl.gz"; expect_err "truncated gzip stream"
expect_no_file "$T/obad/part-00000.jsonl.zst"

finish
