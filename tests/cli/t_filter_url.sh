#!/usr/bin/env bash
# url with `rules: datatrove`: the decision and reason of every URL equal datatrove 0.10's
# URLFilter (tests/fixtures/filter/url, written by tests/oracle/url_filter.py from datatrove's
# output: the WARC URLs of shared/data and a generated set covering each rule), with UT1's
# list slice read from the tar.gz and from a directory, without and with extra lists; the
# reasons counted in the manifest and in `sluice stats`; config errors.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
U="$FIX/filter/url"
IN="$U/urls.jsonl.gz"

# the reasons of an annotated output, a line a document, in input order
reasons() { zstdcat "$1"/part-*.zst | "$PY" -c '
import json, sys
for l in sys.stdin:
    print(json.loads(l).get("filter_reason", "keep"))'; }

# the same decisions as datatrove: an annotated run against the expected reasons
same_as() { # OUT_DIR EXPECTED.txt.gz LABEL
    reasons "$1" > "$T/got"
    zcat "$2" > "$T/want"
    if cmp -s "$T/got" "$T/want"; then ok; else
        fail "$3: $(diff "$T/want" "$T/got" | grep -c '^>') of $(wc -l < "$T/want") URLs decided otherwise than datatrove"
        diff "$T/want" "$T/got" | head -5 >&2
    fi
}

case_ "datatrove's decisions: the list slice from its tar.gz, then from a directory"
cat > "$T/dt.yaml" <<EOF
filters:
  - url:
      rules: datatrove
      blocklist: $U/blocklist-slice.tar.gz
      extra_domains: ["@$U/psl-domains.txt"]
EOF
run "$SLUICE" filter --annotate --config "$T/dt.yaml" --out "$T/a1" "$IN"
expect_rc 0
same_as "$T/a1" "$U/expected.txt.gz" "tar.gz"
mkdir "$T/lists" && tar -xzf "$U/blocklist-slice.tar.gz" -C "$T/lists"
sed "s|blocklist: .*|blocklist: $T/lists|" "$T/dt.yaml" > "$T/dir.yaml"
run "$SLUICE" filter --annotate --config "$T/dir.yaml" --out "$T/a2" "$IN"
expect_rc 0
same_as "$T/a2" "$U/expected.txt.gz" "directory"

case_ "each reason counted in the manifest as url_<reason>, as datatrove's decisions count them"
run "$SLUICE" filter --config "$T/dt.yaml" --out "$T/f1" "$IN"
expect_rc 0
zcat "$U/expected.txt.gz" > "$T/want0"
"$PY" - "$T/f1/manifest.json" "$T/want0" <<'PY' && ok || fail "manifest counts differ from datatrove's reasons"
import collections, json, sys
c = json.load(open(sys.argv[1]))["counts"]
want = collections.Counter(l.strip() for l in open(sys.argv[2]))
assert set(want) == {"keep", "domain", "subdomain", "url", "hard_blacklisted", "soft_blacklisted",
                     "blacklisted_subword"}, want  # every rule decides somewhere
for r, n in want.items():
    if r != "keep":
        assert c.get("url_" + r) == n, (r, c.get("url_" + r), n)
assert c["documents_out"] == want["keep"] and c["removed_url"] == sum(want.values()) - want["keep"]
PY

case_ "extra domains, URLs, banned, soft-banned and sub-words, soft_word_threshold"
cat > "$T/extra.yaml" <<EOF
filters:
  - url:
      rules: datatrove
      blocklist: $U/blocklist-slice.tar.gz
      soft_word_threshold: 3
      extra_domains: ["Example.com", "blocked.example.org", "# not a comment in a list", "@$U/psl-domains.txt"]
      extra_urls: ["http://example.net/blocked/page", "https://example.net/blocked?q=1"]
      banned_words: ["Kittens", "pup-py"]
      soft_banned_words: [alpha, beta, gamma]
      banned_subwords: ["zebra crossing", quux]
EOF
run "$SLUICE" filter --annotate --config "$T/extra.yaml" --out "$T/a3" "$IN"
expect_rc 0
same_as "$T/a3" "$U/expected-extra.txt.gz" "extra lists"

case_ "sluice stats: the score is the reason (0 kept, 1-6 in datatrove's order), per reason"
run "$SLUICE" stats --config "$T/dt.yaml" --out "$T/st" "$IN"
expect_rc 0
zcat "$U/expected.txt.gz" > "$T/want0"
"$PY" - "$T/st/stats.json" "$T/want0" <<'PY' && ok || fail "stats reasons differ from datatrove's"
import collections, json, sys
m = json.load(open(sys.argv[1]))
order = ["keep", "domain", "subdomain", "url", "hard_blacklisted", "soft_blacklisted",
         "blacklisted_subword"]
want = collections.Counter(l.strip() for l in open(sys.argv[2]))
got = m["filter_reasons"]["url"]
assert got == {r: n for r, n in want.items()}, (got, want)
s = m["filter_scores"]["url"]
assert s["documents"] == sum(want.values())
assert abs(s["mean"] - sum(order.index(r) * n for r, n in want.items()) / sum(want.values())) < 1e-5  # printed to 6 digits
PY

case_ "documents without a URL are kept and counted"
printf '{"text":"no url"}\n{"text":"empty","url":""}\n{"text":"t","url":"http://example.com/porn"}\n' > "$T/nourl.jsonl"
run "$SLUICE" filter --config "$T/dt.yaml" --out "$T/f2" "$T/nourl.jsonl"
expect_rc 0
expect_eq "$(json "$T/f2/manifest.json" "(m['counts']['documents_out'], m['counts']['url_no_url'], m['counts']['url_hard_blacklisted'])")" "(2, 2, 1)"

case_ "config errors name the file and line"
printf 'filters:\n  - url:\n      rules: dt\n' > "$T/e1.yaml"
run "$SLUICE" filter --config "$T/e1.yaml" --out "$T/e1" "$T/nourl.jsonl"
expect_rc 1; expect_err "e1.yaml:3"; expect_err "unknown url rules 'dt'"; expect_err "hint: lists"
printf 'filters:\n  - url:\n      rules: datatrove\n      blocklist: nosuch.tar.gz\n' > "$T/e2.yaml"
run "$SLUICE" filter --config "$T/e2.yaml" --out "$T/e2" "$T/nourl.jsonl"
expect_rc 1; expect_err "e2.yaml:4"; expect_err "nosuch.tar.gz"
expect_no_file "$T/e2/manifest.json"
tar -czf "$T/other.tar.gz" -C "$T/lists" domains
printf 'filters:\n  - url:\n      rules: datatrove\n      blocklist: other.tar.gz\n' > "$T/e3.yaml"
run "$SLUICE" filter --config "$T/e3.yaml" --out "$T/e3" "$T/nourl.jsonl"
expect_rc 1; expect_err "has no member 'urls'"
head -c 3000 "$U/blocklist-slice.tar.gz" > "$T/cut.tar.gz"
printf 'filters:\n  - url:\n      rules: datatrove\n      blocklist: cut.tar.gz\n' > "$T/e4.yaml"
run "$SLUICE" filter --config "$T/e4.yaml" --out "$T/e4" "$T/nourl.jsonl"
expect_rc 1; expect_err "cut.tar.gz"
# the datatrove options belong to rules: datatrove; the list rules keep their own
printf 'filters:\n  - url:\n      blocklist: x.tar.gz\n' > "$T/e5.yaml"
run "$SLUICE" filter --config "$T/e5.yaml" --out "$T/e5" "$T/nourl.jsonl"
expect_rc 1; expect_err "blocklist"

finish
