#!/usr/bin/env bash
# sluice tokenize --split-sentences and sluice tokenizer punkt-train, with NLTK 3.10.4 (in
# .venv) as the oracle: the trainer's parameters equal PunktTrainer's on the same text;
# the _sentence .bin/.idx equal what Megatron-LM's preprocess_data.py writes (NLTK's
# PunktSentenceTokenizer with those parameters, its 1,000,000-character pieces, its
# --keep-newlines language variables; the same GPT-2 ids per sentence, the EOD on the last
# sentence, Megatron's MMIDIDX layout) byte for byte, on held-out documents (UDHR in 40
# languages, web text, Wikipedia, generated hard cases); a punkt_tab directory that NLTK
# wrote, found through NLTK_DATA; -j 1/3 and mpirun -np 2 alike; bad punkt_tab files.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

TF="$FIX/tokenizer"
MIDX="$(dirname "$0")/megatron_idx.py"
mkdir -p "$T/gpt2" "$T/held" "$T/empty-home"
zstd -q -d "$TF/encoder.json.zst" -o "$T/gpt2/encoder.json"
zstd -q -d "$TF/vocab.bpe.zst" -o "$T/gpt2/vocab.bpe"
GPT2="gpt2:$T/gpt2"

case_ "-h shows punkt-train and the sentence options"
run "$SLUICE" tokenizer punkt-train -h
expect_rc 0; expect_out "--out DIR"; expect_out "punkt_tab"
run "$SLUICE" tokenize -h
expect_rc 0; expect_out "--split-sentences"; expect_out "--keep-newlines"; expect_out "--punkt DIR"

printf '{"text": "One sentence. Two sentences here."}\n' >"$T/one.jsonl"
case_ "usage errors"
run "$SLUICE" tokenize --tokenizer "$GPT2" --keep-newlines --out "$T/u" "$T/one.jsonl"
expect_rc 2; expect_err "--keep-newlines splits sentences: give --split-sentences too"
run "$SLUICE" tokenize --tokenizer "$GPT2" --split-sentences --lang ../x --out "$T/u" "$T/one.jsonl"
expect_rc 2; expect_err "bad language name '../x'"
run env HOME="$T/empty-home" NLTK_DATA="$T/nowhere" "$SLUICE" tokenize --tokenizer "$GPT2" \
    --split-sentences --lang klingon --out "$T/u" "$T/one.jsonl"
expect_rc 1; expect_err "no punkt model for 'klingon'"; expect_err "hint: name its punkt_tab directory"
run "$SLUICE" tokenizer punkt-train "$T/one.jsonl"
expect_rc 2; expect_err "--out DIR is required"

case_ "the bundled English model, found beside the binary"
run env HOME="$T/empty-home" NLTK_DATA= "$SLUICE" tokenize --tokenizer "$GPT2" --split-sentences \
    --out "$T/b" "$T/one.jsonl"
expect_rc 0; expect_file "$T/b_text_sentence.idx"; expect_no_file "$T/b_text_document.idx"
expect_eq "$(json "$T/b.manifest.json" "m['settings']['punkt'].endswith('configs/punkt/english')")" True
expect_eq "$(json "$T/b.manifest.json" "m['counts']['sentences']")" 2
expect_eq "$(json "$T/b.manifest.json" "m['outputs'][0]['sequences']")" 2

# bad punkt_tab directories: each refused, naming the file and the line
good="$ROOT/configs/punkt/english"
bad_model() { # NAME FILE CONTENT: a copy of the good model with FILE replaced
    rm -rf "$T/bad-$1"
    cp -r "$good" "$T/bad-$1"
    printf "$3" >"$T/bad-$1/$2"
}
check_bad() { # NAME EXPECTED...
    case_ "bad punkt_tab: $1"
    local name=$1
    shift
    run "$SLUICE" tokenize --tokenizer "$GPT2" --split-sentences --punkt "$T/bad-$name" \
        --out "$T/bo-$name" "$T/one.jsonl"
    expect_rc 1
    for e in "$@"; do expect_err "$e"; done
    expect_no_file "$T/bo-${name}_text_sentence.bin"
}
bad_model colloc collocations.tab 'mr\tsmith\nno-tab-here\nb\tc'
check_bad colloc "bad-colloc/collocations.tab' line 2: expected two word types separated by one tab"
bad_model ortho ortho_context.tab 'the\t32\nmr\tx12\n'
check_bad ortho "bad-ortho/ortho_context.tab' line 2: expected a word type, a tab and an integer, got 'mr"
bad_model utf8 abbrev_types.txt 'mr\ndr\n\xff\xfe\n'
check_bad utf8 "bad-utf8/abbrev_types.txt' line 3: not UTF-8"
bad_model missing sent_starters.txt ''
rm "$T/bad-missing/sent_starters.txt"
check_bad missing "cannot read punkt parameters '$T/bad-missing/sent_starters.txt'"
bad_model crlf ortho_context.tab 'the\t32\r\nmr\t2\r\nbig\t99999999999999999999\r\n'
check_bad crlf "bad-crlf/ortho_context.tab' line 3"

if ! nltk=$("$PY" -c "import nltk.tokenize.punkt, nltk; print(nltk.__version__)" 2>/dev/null); then
    echo "  skip: the NLTK cases: no NLTK in '$PY' (tests/requirements.txt; the oracle of the splits)"
    finish
    exit
fi
[ "$nltk" = 3.10.4 ] || echo "  (note: NLTK $nltk; these cases were written against 3.10.4)"

# the texts: botchan (Project Gutenberg, public domain) to train on, in two documents; the
# held-out documents in three files
zstd -q -d "$TF/botchan.txt.zst" -o "$T/botchan.txt"
"$SLUICE" -q extract --format wiki --out "$T/wiki" "$FIX/wiki/enwiki-table-markup.xml.bz2"
zstd -q -d -c "$T"/wiki/part-*.jsonl.zst >"$T/wiki.jsonl"
zstd -q -d -c "$FIX/dedup/udhr.jsonl.zst" >"$T/udhr.jsonl"
export NLTK_DATA="$T/nltk_data"
NLTK_DIR="$NLTK_DATA/tokenizers/punkt_tab/english"
SL_MODEL="$NLTK_DATA/tokenizers/punkt_tab/sluice"
mkdir -p "$NLTK_DIR"
"$PY" - "$T" "$FIX" <<'PY'
import gzip, json, random, sys
from nltk.tokenize.punkt import (PunktLanguageVars, PunktSentenceTokenizer, PunktTokenizer,
                                 PunktTrainer, save_punkt_params)
import os
T, FIX = sys.argv[1], sys.argv[2]

# training: PunktTrainer on the texts joined by blank lines; NLTK writes the punkt_tab files
bot = open(T + "/botchan.txt", encoding="utf-8").read()
half = bot.index("\n", len(bot) // 2)
train = [bot[:half], bot[half + 1:]]
with open(T + "/train.jsonl", "w") as f:
    for t in train:
        f.write(json.dumps({"text": t}) + "\n")
trainer = PunktTrainer()
trainer.train("\n\n".join(train))
save_punkt_params(trainer.get_params(), dir=os.environ["NLTK_DATA"] + "/tokenizers/punkt_tab/english")

# held-out documents
docs = [json.loads(l)["text"] for l in open(T + "/udhr.jsonl")][:24]
docs += [json.loads(l)["text"] for l in gzip.open(FIX + "/jsonl/cc_en_head-0091.jsonl.gz", "rt")]
docs += [json.loads(l)["text"] for l in gzip.open(FIX + "/dedup/dolma-dedupe-documents.json.gz", "rt")]
docs += [json.loads(l)["text"] for l in open(T + "/wiki.jsonl")]
pieces = ["Mr.", "Mrs.", "Dr.", "St.", "U.S.", "e.g.", "etc.", "No.", "J.", "K.", "S.", "A.",
          "XI.", "1.", "12.", "1,000.", "3.14", "-5.", "...", ". . .", "..", "--", "?", "!",
          "!!!", "?!", ".", ",", ";", ":", "(", ")", "[", "]", '"', "'", "\u201c", "\u201d",
          "\u2018", "\u2019", "\xab", "\xbb", "(Sent.)", '"Hi."', "end.)", "end.\"",
          "\n", "\n\n", "\t", "\u00a0", "\u2028", "\x1c", "\r\n", "The", "the", "He", "he",
          "Then", "then", "It", "When", "Smith", "Bach", "Natsume", "word", "WORD", "\u00c9lan",
          "\u00e9lan", "stra\u00dfe", "\u0130stanbul", "\u039f\u0394\u039f\u03a3",
          "\u65e5\u672c\u8a9e\u3002", "x\u00b2", "a-b.", "pre-Mr."]
rng = random.Random(7)
for _ in range(300):
    docs.append("".join(rng.choice(pieces) + rng.choice(["", " ", " ", "  "])
                        for _ in range(rng.randint(1, 40))))
docs += ["", "   \n  ", "Just one", "Trailing space.  "]
# longer than Megatron's 1,000,000-character pieces (mostly one sentence: NLTK is quick on
# it), cut inside a sentence after non-ASCII characters
long = "Der Anfang. " + "Caf\u00e9 \u00fcber na\u00efve \u65e5\u672c " * 50000
docs.append(long[:1000000 - 20] + " Im Caf\u00e9 M\u00fcller. Dr. Smith met Mr. Jones there. The end.")
with open(T + "/held/a.jsonl", "w") as a, open(T + "/held/b.jsonl", "w") as b, \
        open(T + "/held/c.jsonl", "w") as c:
    outs = [a, b, c]
    for i, d in enumerate(docs):
        outs[i * 3 // len(docs)].write(json.dumps({"text": d}) + "\n")
    c.write(json.dumps({"text": ["a list is", "taken as its sentences."]}) + "\n")


# Megatron-LM's --keep-newlines language variables (tools/preprocess_data.py)
class KeepNewlines(PunktLanguageVars):
    _period_context_fmt = r"\S*%(SentEndChars)s\s*(?=(?P<after_tok>%(NonWord)s|(?P<next_tok>\S+)))"


split = {"default": PunktTokenizer("english")}  # NLTK's loader on the files NLTK wrote
split["keepnl"] = PunktSentenceTokenizer(split["default"]._params, lang_vars=KeepNewlines())
for mode, tok in split.items():
    counts = []
    with open("%s/sent_%s.jsonl" % (T, mode), "w") as f:
        for d in docs:
            sents = [s for i in range(0, len(d), 1000000) for s in tok.tokenize(d[i:i + 1000000])]
            for s in sents:
                f.write(json.dumps({"text": s}) + "\n")
            counts.append(len(sents))
        for s in ["a list is", "taken as its sentences."]:
            f.write(json.dumps({"text": s}) + "\n")
        counts.append(2)
    json.dump(counts, open("%s/counts_%s.json" % (T, mode), "w"))
PY

case_ "punkt-train: the parameters of NLTK's PunktTrainer on the same texts"
run "$SLUICE" tokenizer punkt-train --out "$SL_MODEL" "$T/train.jsonl"
expect_rc 0; expect_err "2 texts"
run "$PY" - <<'PY'
import sys
from nltk.tokenize.punkt import PunktTokenizer
# NLTK's loader reads both: sluice's model as the language "sluice"
ours, nltk = (PunktTokenizer(lang)._params for lang in ("sluice", "english"))
bad = 0
for name in ("abbrev_types", "collocations", "sent_starters", "ortho_context"):
    a, b = getattr(ours, name), getattr(nltk, name)
    a, b = (dict(a), dict(b)) if name == "ortho_context" else (a, b)
    print(name, len(b), "same" if a == b else "DIFFERENT")
    bad += a != b
    if name == "abbrev_types" and not b:
        bad += 1  # a text that trains nothing proves nothing
sys.exit(bad)
PY
expect_rc 0; expect_out "abbrev_types"; expect_no_err "DIFFERENT"

# the expected shards: sluice's GPT-2 ids of each NLTK sentence (its own document), grouped
# into the documents, zero-token sentences dropped, the EOD on each document's last one,
# written by the independent writer of Megatron's layout
for mode in default keepnl; do
    "$SLUICE" -q tokenize -j 1 --tokenizer "$GPT2" --out "$T/ids_$mode" "$T/sent_$mode.jsonl"
done
"$PY" - "$MIDX" "$T" <<'PY'
import io, json, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
import megatron_idx as m
T = sys.argv[2]
for mode in ("default", "keepnl"):
    code, lens, ptrs, doc_idx, b = m.read("%s/ids_%s_text_document" % (T, mode))
    ids = b.tolist()
    counts = json.load(open("%s/counts_%s.json" % (T, mode)))
    lines, s = [], 0
    for n in counts:
        seqs = [ids[int(ptrs[k]) // 2: int(ptrs[k]) // 2 + int(lens[k])] for k in range(s, s + n)]
        seqs = [q for q in seqs if q]
        if seqs:
            seqs[-1].append(50256)
        lines.append(json.dumps(seqs))
        s += n
    sys.stdin = io.StringIO("\n".join(lines) + "\n")
    m.write("%s/want_%s" % (T, mode), "uint16")
PY
nsent=$("$PY" -c "import json,sys; print(sum(json.load(open(sys.argv[1]))))" "$T/counts_default.json")
ndocs=$("$PY" -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$T/counts_default.json")

same_as() { # PREFIX WANT: the shards are byte for byte the expected ones
    local ext
    for ext in bin idx; do
        cmp -s "$1_text_sentence.$ext" "$2.$ext" && ok || fail "$1_text_sentence.$ext differs from $2.$ext"
    done
}

case_ "split with sluice's trained model: Megatron's _sentence shards, byte for byte"
run "$SLUICE" tokenize --tokenizer "$GPT2" --split-sentences --punkt "$SL_MODEL" --append-eod \
    -j 2 --out "$T/s" "$T/held"
expect_rc 0
same_as "$T/s" "$T/want_default"
expect_eq "$(json "$T/s.manifest.json" "m['counts']['sentences']")" "$nsent"
expect_eq "$(json "$T/s.manifest.json" "m['counts']['documents_out']")" "$ndocs"
echo "  ($nsent sentences in $ndocs documents)"

case_ "NLTK's own punkt_tab files give the same bytes; found through NLTK_DATA by --lang"
run "$SLUICE" tokenize --tokenizer "$GPT2" --split-sentences --punkt "$NLTK_DIR" --append-eod \
    --out "$T/n" "$T/held"
expect_rc 0; same_as "$T/n" "$T/want_default"
run env HOME="$T/empty-home" "$SLUICE" tokenize --tokenizer "$GPT2" --split-sentences --lang english \
    --append-eod --out "$T/e" "$T/held"
expect_rc 0; same_as "$T/e" "$T/want_default"
expect_eq "$(json "$T/e.manifest.json" "m['settings']['punkt']")" "$NLTK_DIR"
# the parameters' fingerprint (in the resume plan): the same parameters whatever the order
# of the lines, another model another fingerprint
fp() { json "$1.manifest.json" "m['settings']['punkt_model']"; }
expect_eq "$(fp "$T/n")" "$(fp "$T/s")"
[ "$(fp "$T/s")" != "$(fp "$T/b")" ] && ok || fail "two models, one fingerprint"

case_ "--keep-newlines: Megatron's language variables"
run "$SLUICE" tokenize --tokenizer "$GPT2" --split-sentences --keep-newlines --punkt "$SL_MODEL" \
    --append-eod --out "$T/k" "$T/held"
expect_rc 0; same_as "$T/k" "$T/want_keepnl"

case_ "-j 1 and -j 3 write the same bytes"
for j in 1 3; do
    run "$SLUICE" tokenize --tokenizer "$GPT2" --split-sentences --punkt "$SL_MODEL" --append-eod \
        -j $j --out "$T/j$j" "$T/held"
    expect_rc 0; same_as "$T/j$j" "$T/want_default"
done

if have_mpi; then
    case_ "mpirun -np 2 writes the same bytes and counts"
    run "${MPIRUN[@]}" -np 2 "$SLUICE" tokenize -j 1 --tokenizer "$GPT2" --split-sentences \
        --punkt "$SL_MODEL" --append-eod --out "$T/m" "$T/held"
    expect_rc 0; same_as "$T/m" "$T/want_default"
    expect_eq "$(json "$T/m.manifest.json" "json.dumps(m['counts'], sort_keys=True)")" \
        "$(json "$T/s.manifest.json" "json.dumps(m['counts'], sort_keys=True)")"
fi

finish
