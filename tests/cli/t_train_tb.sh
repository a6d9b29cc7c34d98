#!/usr/bin/env bash
# sluice train's TensorBoard events and loss.svg: read back with TensorBoard's own event
# reader (tags, steps, values equal to log.file's), the default directory and the options,
# a resumed run (one curve over both segments), a killed run (events up to the kill).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CFG="$ROOT/configs/models/tiny-gpt.yaml"
SMALL=(data=synthetic model.vocab_size=256 train.seq_len=32 train.micro_batch_size=2
       train.global_batch_size=2 optim.warmup_steps=2 eval.iters=1 -q)
if ! "$PY" -c "import tensorboard" 2>/dev/null; then
    echo "skip: the tensorboard package is not installed (tests/requirements.txt)"
    finish
    exit 0
fi
TB="$ROOT/tests/cli/tb_events.py"

# check_tb DIR LOG STEPS: DIR's scalars equal the losses of the JSONL log LOG, steps 1..STEPS
check_tb() {
    "$PY" "$TB" "$1" > "$T/tb.json" || { fail "tensorboard cannot read $1"; return; }
    "$PY" - "$T/tb.json" "$2" "$3" <<'PY' && ok || fail "TensorBoard scalars differ from the log"
import json, math, sys
tb = json.load(open(sys.argv[1]))["scalars"]
log = [json.loads(l) for l in open(sys.argv[2])]
steps = int(sys.argv[3])
train = {m["step"]: m for m in log if m["type"] == "train"}
valid = {m["step"]: m for m in log if m["type"] == "valid"}
want = {"train/loss", "train/lr", "train/grad_norm", "train/tokens_per_s", "train/mfu", "val/loss"}
assert set(tb) == want, sorted(tb)
for tag, key in (("train/loss", "loss"), ("train/lr", "lr"), ("train/grad_norm", "grad_norm"),
                 ("train/tokens_per_s", "tokens_per_s"), ("train/mfu", "mfu")):
    got = tb[tag]
    assert [s for s, _ in got] == list(range(1, steps + 1)), (tag, [s for s, _ in got])
    for s, v in got:
        ref = train[s][key]
        assert abs(v - ref) <= 1e-6 * abs(ref) + 1e-12, (tag, s, v, ref)
assert [s for s, _ in tb["val/loss"]] == sorted(valid), tb["val/loss"]
for s, v in tb["val/loss"]:
    assert abs(v - valid[s]["val_loss"]) <= 1e-6 * valid[s]["val_loss"], (s, v)
PY
}

# svg_points FILE: the number of points of the train and validation polylines
svg_points() {
    python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
print(" ".join(str(len(p.attrib["points"].split())) for p in r.iter(ns + "polyline")))
PY
}

case_ "events in checkpoint.dir/tb by default, read back by TensorBoard"
run "$SLUICE" train "$CFG" "${SMALL[@]}" train.steps=6 eval.interval=3 log.peak_tflops=1 \
    checkpoint.dir="$T/a" log.file="$T/a.jsonl"
expect_rc 0
expect_eq "$(ls "$T/a/tb" | grep -c '^events.out.tfevents.[0-9]\{10\}\.')" 1
check_tb "$T/a/tb" "$T/a.jsonl" 6
expect_eq "$(json "$T/tb.json" "m['file_versions']")" "['brain.Event:2']"
case_ "loss.svg next to the events: train and validation curves"
expect_file "$T/a/tb/loss.svg"
expect_eq "$(svg_points "$T/a/tb/loss.svg")" "6 2"

case_ "--tensorboard DIR and log.tensorboard_dir"
run "$SLUICE" train "$CFG" "${SMALL[@]}" train.steps=2 eval.interval=0 --tensorboard "$T/b"
expect_rc 0
expect_eq "$(ls "$T/b" | grep -c '^events.out.tfevents')" 1
expect_file "$T/b/loss.svg"
run "$SLUICE" train "$CFG" "${SMALL[@]}" train.steps=2 eval.interval=0 log.tensorboard_dir="$T/c"
expect_rc 0
expect_file "$T/c/loss.svg"
run "$SLUICE" train "$CFG" "${SMALL[@]}" train.steps=2 eval.interval=0 checkpoint.dir="$T/d" \
    log.tensorboard_dir=none
expect_rc 0
expect_no_file "$T/d/tb"
case_ "a resumed run: one curve over both segments, the redone steps replaced"
# 6 steps with checkpoints at 3 and 6; then resume from step 3 and redo 4..6
run "$SLUICE" train "$CFG" "${SMALL[@]}" train.steps=6 eval.interval=2 log.peak_tflops=1 \
    checkpoint.dir="$T/r" checkpoint.interval=3 checkpoint.keep_last=0 log.file="$T/r1.jsonl"
expect_rc 0
sleep 1 # a new second: a new event file name
run "$SLUICE" train "$CFG" "${SMALL[@]}" train.steps=6 eval.interval=2 log.peak_tflops=1 \
    checkpoint.dir="$T/r" checkpoint.interval=3 checkpoint.keep_last=0 log.file="$T/r2.jsonl" \
    train.resume="$T/r/step-00000003"
expect_rc 0
expect_eq "$(ls "$T/r/tb" | grep -c '^events.out.tfevents')" 2
# what TensorBoard shows: steps 1-3 of the first segment, 4-6 of the second
python3 -c "
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
for m in [m for m in a if m['step'] <= 3] + b: print(json.dumps(m))" "$T/r1.jsonl" "$T/r2.jsonl" > "$T/r.jsonl"
check_tb "$T/r/tb" "$T/r.jsonl" 6
expect_eq "$(svg_points "$T/r/tb/loss.svg")" "6 3"

case_ "a run started over in the same directory replaces the curves"
run "$SLUICE" train "$CFG" "${SMALL[@]}" train.steps=5 eval.interval=2 log.peak_tflops=1 \
    --tensorboard "$T/o" log.file="$T/o1.jsonl"
expect_rc 0
sleep 1
run "$SLUICE" train "$CFG" "${SMALL[@]}" train.steps=3 eval.interval=2 log.peak_tflops=1 \
    --tensorboard "$T/o" log.file="$T/o2.jsonl" optim.lr=1e-3
expect_rc 0
check_tb "$T/o" "$T/o2.jsonl" 3
expect_eq "$(svg_points "$T/o/loss.svg")" "3 2"

case_ "a killed run leaves readable events up to the kill"
"$SLUICE" train "$CFG" "${SMALL[@]}" train.steps=100000 eval.interval=0 log.peak_tflops=1 \
    --tensorboard "$T/k" log.file="$T/k.jsonl" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 300); do
    [ "$(grep -c '"train"' "$T/k.jsonl" 2>/dev/null || echo 0)" -ge 5 ] && break
    sleep 0.1
done
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
"$PY" "$TB" "$T/k" > "$T/k.json" && ok || fail "tensorboard cannot read the killed run's events"
n=$(json "$T/k.json" "len(m['scalars']['train/loss'])")
[ "$n" -ge 5 ] && ok || fail "only $n train/loss events"
expect_eq "$(json "$T/k.json" "[s for s, _ in m['scalars']['train/loss']] == list(range(1, $n + 1))")" True

if have_mpi; then
    case_ "under mpirun -np 2 only rank 0 writes events"
    run "${MPIRUN[@]}" -np 2 "$SLUICE" train "$CFG" "${SMALL[@]}" train.global_batch_size=4 \
        train.steps=2 eval.interval=0 --tensorboard "$T/m"
    expect_rc 0
    expect_eq "$(ls "$T/m" | grep -c '^events.out.tfevents')" 1
fi

finish
