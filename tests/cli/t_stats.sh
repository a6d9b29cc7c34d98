#!/usr/bin/env bash
# sluice stats: document length, language and source counts, per-filter score histograms and
# quantiles (scored by a --config chain, or read from `filter --annotate` output: the same
# numbers), a pipeline's funnel from its summary.json; JSON checked by an independent
# computation in Python, SVG well-formed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CFG="$ROOT/configs/filters"
IN="$FIX/jsonl/cc_en_head-0091.jsonl.gz"

case_ "usage"
run "$SLUICE" stats -h; expect_rc 0; expect_out "--pipeline WORK"
run "$SLUICE" stats "$IN"; expect_rc 2; expect_err "--out DIR is required"
run "$SLUICE" stats --out "$T/x"; expect_rc 2; expect_err "no inputs given"

case_ "--config: every filter scores every document; lengths, languages, sources"
run "$SLUICE" stats --config "$CFG/gopher.yaml" --out "$T/s1" "$IN"
expect_rc 0; expect_out "gopher_quality"; expect_out "stats: $T/s1/stats.json"
expect_file "$T/s1/stats.json"; expect_file "$T/s1/stats.svg"
zcat "$IN" > "$T/in.jsonl"
"$PY" - "$T/in.jsonl" "$T/s1/stats.json" <<'PY' && ok || fail "stats.json disagrees with Python's count"
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
m = json.load(open(sys.argv[2]))
assert m["documents"] == len(docs), (m["documents"], len(docs))
chars = [len(d["text"]) for d in docs]
words = [len(d["text"].split()) for d in docs]
for key, vals in (("characters", chars), ("words", words)):
    bins = m[key]["bins"]
    assert sum(b["documents"] for b in bins) == len(docs)
    for b in bins:
        n = sum(1 for v in vals if b["from"] <= v < b["to"])
        assert n == b["documents"], (key, b, n)
    assert abs(m[key]["mean"] - sum(vals) / len(vals)) < 1e-3 * max(1, sum(vals) / len(vals)), key
langs = {}
for d in docs:
    k = d.get("lang") or "(none)"
    langs[k] = langs.get(k, 0) + 1
assert m["languages"] == langs, (m["languages"], langs)
assert set(m["filter_scores"]) == {"gopher_repetition", "gopher_quality"}, m["filter_scores"].keys()
for name, s in m["filter_scores"].items():
    assert s["documents"] + s["no_score"] == len(docs), (name, s)
    assert sum(b["documents"] for b in s["bins"]) == s["documents"], name
PY
python3 -c "import sys, xml.dom.minidom as x; d = x.parse(sys.argv[1]); assert len(d.getElementsByTagName('rect')) > 20" "$T/s1/stats.svg" \
    && ok || fail "stats.svg is not a well-formed picture with bars"

case_ "the scores of filter --annotate give the same histograms and quantiles"
run "$SLUICE" filter --config "$CFG/gopher.yaml" --annotate --out "$T/ann" "$IN"; expect_rc 0
run "$SLUICE" stats --out "$T/s2" "$T/ann"
expect_rc 0
expect_eq "$(json "$T/s2/stats.json" "json.dumps(m['filter_scores'], sort_keys=True)")" \
          "$(json "$T/s1/stats.json" "json.dumps(m['filter_scores'], sort_keys=True)")"
# the quantiles against numpy's (linear interpolation)
"$PY" - "$T/ann" "$T/s2/stats.json" <<'PY' && ok || fail "quantiles differ from numpy's"
import glob, json, subprocess, sys
import numpy as np
docs = []
for f in sorted(glob.glob(sys.argv[1] + "/part-*.jsonl.zst")):
    out = subprocess.run(["zstdcat", f], capture_output=True, text=True, check=True).stdout
    docs += [json.loads(l) for l in out.splitlines() if l.strip()]
m = json.load(open(sys.argv[2]))
for name, s in m["filter_scores"].items():
    v = np.array([d["filter_scores"][name] for d in docs if d["filter_scores"].get(name) is not None], float)
    for q in (1, 25, 50, 75, 99):
        want = float(np.percentile(v, q))
        got = s["quantiles"]["p%g" % q]
        assert abs(got - want) <= 1e-5 * max(1.0, abs(want)), (name, q, got, want)
PY
run "$SLUICE" stats --out "$T/s3" "$IN"
expect_rc 0; expect_err "no filter scores"
expect_eq "$(json "$T/s3/stats.json" "m['filter_scores']")" "{}"

case_ "--pipeline: the funnel of a pipeline run"
mkdir -p "$T/w"
cat > "$T/p.yaml" <<EOF
name: p
work_dir: $T/w
extract:
  format: jsonl
  in: $IN
filter:
  config: $CFG/gopher.yaml
dedup_exact: {}
EOF
run "$SLUICE" run "$T/p.yaml"; expect_rc 0
run "$SLUICE" stats --pipeline "$T/w" --out "$T/s4" "$T/w/dedup_exact"
expect_rc 0; expect_out "funnel:"
expect_eq "$(json "$T/s4/stats.json" "[(s['step'], s['documents_in'], s['documents_out']) for s in m['funnel']]")" \
          "$(json "$T/w/summary.json" "[(s['step'], s['documents_in'], s['documents_out']) for s in m['steps']]")"
expect_eq "$(json "$T/s4/stats.json" "m['documents']")" "$(json "$T/w/dedup_exact/manifest.json" "m['counts']['documents_out']")"
run "$SLUICE" stats --pipeline "$T/nowhere" --out "$T/s5"
expect_rc 1; expect_err "cannot read the pipeline summary"

finish
