#!/usr/bin/env bash
# sluice dataset and train on damaged .idx files: every sequence pointer and length, and every
# document entry, is checked against the .bin when a shard is opened, so cat, merge, verify,
# inspect and train refuse such a shard naming the file, the sequence and the numbers.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
MIDX="$(dirname "$0")/megatron_idx.py"
CFG="$ROOT/configs/models/tiny-gpt.yaml"

# a good shard: 2000 one-sequence documents of 3..10 tokens, ids < 1000
python3 -c "
import random
random.seed(5)
for i in range(2000): print([[random.randrange(1000) for _ in range(random.randint(3, 10))]])" |
    "$PY" "$MIDX" write "$T/good" uint16
run "$SLUICE" dataset verify "$T/good"
expect_rc 0

# damage PREFIX FIELD INDEX VALUE: copy good.* to PREFIX.* and set lengths/pointers/docs[INDEX]
damage() {
    cp "$T/good.bin" "$1.bin"
    python3 - "$T/good.idx" "$1.idx" "$2" "$3" "$4" <<'PY'
import struct, sys
src, dst, field, i, v = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
d = bytearray(open(src, "rb").read())
n, nd = struct.unpack("<QQ", d[18:34])
if field == "len":
    struct.pack_into("<i", d, 34 + 4 * i, v)
elif field == "ptr":
    struct.pack_into("<q", d, 34 + 4 * n + 8 * i, v)
else:
    struct.pack_into("<q", d, 34 + 12 * n + 8 * i, v)
open(dst, "wb").write(d)
PY
}

case_ "a pointer (not the last) past the .bin: every reader refuses it with the numbers"
damage "$T/p" ptr 5 99999999
for sub in "cat --ids" "inspect" "verify"; do
    run "$SLUICE" dataset $sub "$T/p"
    expect_rc 1; expect_err "p.idx"; expect_err "sequence 5 starts at byte 99999999, where the one before it ends at"
done
run "$SLUICE" dataset merge --out "$T/m" "$T/good" "$T/p"
expect_rc 1; expect_err "sequence 5 starts at byte 99999999"
expect_no_file "$T/m.idx"; expect_no_file "$T/m.bin"

case_ "a length of 2^31-1 and a negative length"
damage "$T/l" len 7 2147483647
run "$SLUICE" dataset cat --ids "$T/l"
expect_rc 1; expect_err "sequence 7"; expect_err "2147483647 tokens"
damage "$T/n" len 3 -5
run "$SLUICE" dataset cat --ids "$T/n"
expect_rc 1; expect_err "sequence 3 has a negative length (-5)"

case_ "a document entry past the sequences, and one going backwards"
damage "$T/d" doc 10 5000
run "$SLUICE" dataset cat --ids "$T/d"
expect_rc 1; expect_err "document entry 10 is sequence 5000, past the shard's 2000 sequences"
damage "$T/e" doc 10 3
run "$SLUICE" dataset inspect "$T/e"
expect_rc 1; expect_err "document entry 10 (sequence 3) is below the previous one (9)"

case_ "pointers inside the .bin but not contiguous: merge refuses what verify would"
damage "$T/c" ptr 4 0
run "$SLUICE" dataset verify "$T/c"
expect_rc 1; expect_err "sequence 4 starts at byte 0"
run "$SLUICE" dataset merge --out "$T/mc" "$T/good" "$T/c"
expect_rc 1; expect_err "cannot open shard '$T/c.idx'"; expect_err "sequence 4 starts at byte 0"
expect_no_file "$T/mc.idx"

case_ "a .bin larger than its .idx describes (int32 tokens under a uint16 index): every reader refuses it"
python3 -c "
import random
random.seed(5)
for i in range(2000): print([[random.randrange(1000) for _ in range(random.randint(3, 10))]])" |
    "$PY" "$MIDX" write "$T/wide" int32
cp "$T/good.idx" "$T/mix.idx"
cp "$T/wide.bin" "$T/mix.bin"
for sub in "cat --ids" "inspect" "verify"; do
    run "$SLUICE" dataset $sub "$T/mix"
    expect_rc 1; expect_err "cannot open shard '$T/mix.bin'"; expect_err "the index '$T/mix.idx' describes"
    expect_err "tokens of another size"
done
run "$SLUICE" train "$CFG" data.prefix="$T/mix" train.steps=1 model.vocab_size=1000 model.num_layers=1 \
    train.seq_len=16 train.micro_batch_size=4 train.global_batch_size=8 eval.interval=0 train.resume=none
expect_rc 1; expect_err "cannot open shard '$T/mix.bin'"

case_ "train refuses the shard instead of reading past the .bin"
run "$SLUICE" train "$CFG" data.prefix="$T/p" train.steps=1 model.vocab_size=1000 model.num_layers=1 \
    train.seq_len=16 train.micro_batch_size=4 train.global_batch_size=8 eval.interval=0 train.resume=none
expect_rc 1; expect_err "p.idx"; expect_err "sequence 5 starts at byte 99999999"

case_ "a document number past the end names the valid range"
run "$SLUICE" dataset cat --ids --docs 2000 "$T/good"
expect_rc 2; expect_err "document 2000 does not exist"; expect_err "0..1999"

finish
