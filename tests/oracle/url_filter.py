#!/usr/bin/env python3
"""Expected decisions of the URL filter (`url` with `rules: datatrove`) from datatrove's own
URLFilter, and the URLs they are for.

  url_filter.py write DATA_DIR OUT_DIR

DATA_DIR is the project's shared data folder (../shared/data): the URLs of every WARC, WAT
and WET file under DATA_DIR/warc (their WARC-Target-URI headers) and the lists of
DATA_DIR/lexicons/url-filter. OUT_DIR (tests/fixtures/filter/url) receives:

  urls.jsonl.gz         the WARC URLs, then a generated set covering each rule (subdomains of
                        blocked domains, IDNA/punycode, ports, upper case, user info, query
                        strings, fragments, trailing and ideographic dots, IP addresses,
                        entries of the URL blocklist, banned, soft-banned and sub-words,
                        every ICANN rule of the Public Suffix List with its wildcards and
                        exceptions); {"url", "text"} a line
  expected.txt.gz       datatrove's decision for each, a line each: "keep" or its reason
  expected-extra.txt.gz the same with extra lists (EXTRA below; the test's config says the
                        same for sluice)
  blocklist-slice.tar.gz  the entries of UT1's `domains` and `urls` that any of these URLs
                        can match (its registered domain, its host, the URL itself) and
                        every 1000th other line: with it the decisions are the same as with
                        the whole list, so tests run without the 18 MB file
  psl-domains.txt       extra domains for the Public Suffix List cases

The public suffixes come from the Debian publicsuffix package's list
(/usr/share/publicsuffix/public_suffix_list.dat, which libpsl reads too), given to
tldextract as its suffix list: both sides use the same snapshot.

Needs (in a venv of its own): datatrove==0.10.0 tldextract==5.4.0 pyahocorasick==2.3.1
fasteners==0.20.
"""
import gzip
import io
import json
import os
import re
import sys
import tarfile
import tempfile

PSL = "/usr/share/publicsuffix/public_suffix_list.dat"

# the parameters of the second run; extra.yaml in OUT_DIR says the same for sluice
EXTRA = {
    "soft_word_threshold": 3,
    "extra_domains": ["Example.com", "blocked.example.org", "# not a comment in a list"],
    "extra_urls": ["http://example.net/blocked/page", "https://example.net/blocked?q=1"],
    "banned_words": ["Kittens", "pup-py"],
    "soft_banned_words": ["alpha", "beta", "gamma"],
    "banned_subwords": ["zebra crossing", "quux"],
}


def warc_urls(data_dir):
    """WARC-Target-URI of every record of every WARC/WAT/WET file, first-seen order."""
    seen, out = set(), []
    root = os.path.join(data_dir, "warc")
    for d, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            if ".war" not in f and not f.endswith((".wat", ".wet", ".wat.gz", ".wet.gz")):
                continue
            if f.endswith(".lz4"):
                continue  # the same records as the .warc beside it
            path = os.path.join(d, f)
            raw = open(path, "rb").read()
            if raw[:2] == b"\x1f\x8b":
                try:
                    raw = gzip.GzipFile(fileobj=io.BytesIO(raw)).read()
                except (OSError, EOFError):  # a truncated or damaged member: what was read
                    dec = gzip.GzipFile(fileobj=io.BytesIO(raw))
                    raw = b""
                    try:
                        while True:
                            chunk = dec.read(1 << 16)
                            if not chunk:
                                break
                            raw += chunk
                    except (OSError, EOFError):
                        pass
            for m in re.finditer(rb"^WARC-Target-URI:[ \t]*(.*?)[ \t]*\r?$", raw, re.M):
                u = m.group(1).decode("utf-8", "replace")
                if u and u not in seen:
                    seen.add(u)
                    out.append(u)
    return out


def psl_rules():
    """(rule, section) of the list's ICANN section."""
    rules, icann = [], False
    for line in open(PSL, encoding="utf-8"):
        line = line.strip()
        if "===BEGIN ICANN DOMAINS===" in line:
            icann = True
        elif "===END ICANN DOMAINS===" in line:
            icann = False
        elif icann and line and not line.startswith("//"):
            rules.append(line.split()[0])
    return rules


def generated(domains, urls_list, rules):
    """URLs for each rule of the filter and each way of writing a host."""
    g = []
    blocked = [d for d in domains[:: max(1, len(domains) // 40)]][:40]
    for d in blocked:
        g += [
            f"http://{d}/", f"https://www.{d}/page", f"http://a.b.{d}:8080/x?y=1#z",
            f"HTTP://{d.upper()}/", f"http://user:pw@{d}/", f"http://{d}./", f"//{d}/",
            f"{d}/path", f"http://{d}\u3002/", f"http://WWW.{d}/", f"http://{d}:443",
            f"ftp://{d}", f"http://{d}?q", f"http://{d}#f", f" http://{d}/",
        ]
    # hosts of the list whose registered domain is not itself listed: the "subdomain" rule
    dset = set(domains)
    subs = [d for d in domains if d.count(".") >= 2 and d.split(".", 1)[1] not in dset][:60]
    for d in subs:
        g += [f"http://{d}/", f"https://x.{d}/", f"http://{d.upper()}/"]
    # URL blocklist entries, as listed and with a scheme
    for u in urls_list[:: max(1, len(urls_list) // 60)][:60]:
        g += [u, "http://" + u, u + "/"]
    # words
    g += [
        "http://example.com/porn", "http://example.com/PORN", "http://example.com/xxx-porn-",
        "http://example.com/sex/videos", "http://example.com/a/b/c", "http://example.com/",
        "http://example.com/hot-girls", "http://example.com/nude_teen", "http://example.com/teen",
        "http://example.com/milf?x=1", "http://example.com/Milf", "http://example.com/pornhub",
        "http://example.com/xporn", "http://example.com/p-o-r-n", "http://example.com/PoRnO",
        "http://example.com/amateur-gay-chat", "http://example.com/?q=escort+girls",
        "http://example.com/caf\u00e9-sex", "http://example.com/sexy", "http://example.com/hentai",
        "http://exämple.com/xxx", "https://example.com/wiki/Essex", "https://example.com/Sussex",
        "https://example.com/analysis", "https://example.com/cumulative", "https://example.com/scunthorpe",
    ]
    # IDNA, IP addresses, ports, odd hosts
    g += [
        "http://xn--80ak6aa92e.com/", "http://пример.рф/", "http://xn--e1afmkfd.xn--p1ai/",
        "http://XN--P1AI/", "http://пример.РФ/", "http://münchen.de/", "http://xn--mnchen-3ya.de/",
        "http://127.0.0.1/", "http://127.0.0.1:8080/x", "http://[::1]/", "http://[2001:db8::1]:80/",
        "http://localhost/", "http://foo.notatld/", "http://co.uk/", "http://.com/", "http://a..com/",
        "http://a.b..com/", "http://example.com../", "http://example.com\uff0e/", "http://example\uff61com/",
        "http://ex ample.com/", "http:///example.com/", "mailto:someone@example.com", "example.com",
        "http://user@host@example.com/", "http://example.com:abc/", "https://EXAMPLE.COM:8443/A?B=C",
        "http://a.b.c.d.e.f.example.co.uk/", "http://blogspot.com/", "http://x.blogspot.com/",
        "http://www.ck/", "http://a.www.ck/", "http://foo.ck/", "http://ck/", "http://a.foo.ck/",
        "http://city.kawasaki.jp/", "http://x.city.kawasaki.jp/", "http://x.y.kawasaki.jp/",
        "http://a..kawasaki.jp/", "http://[notip]/", "http://[v1.x]/", "http://%65xample.com/",
    ]
    for r in rules:
        base = r.lstrip("!").replace("*", "w")
        g += [f"http://{base}/", f"http://b.{base}/", f"http://a.b.{base}/"]
    return g


def decide(urls, params, workdir):
    os.environ.setdefault("HF_ASSETS_CACHE", os.path.join(workdir, "hf-assets"))
    from datatrove.data import Document
    from datatrove.pipeline.filters import URLFilter
    from tldextract import TLDExtract

    f = URLFilter(**params)
    f.tldextractor = TLDExtract(cache_dir=os.path.join(workdir, "tld"), suffix_list_urls=("file://" + PSL,),
                                fallback_to_snapshot=False)
    out = []
    for i, u in enumerate(urls):
        r = f.filter(Document(text="x", id=str(i), metadata={"url": u}))
        out.append("keep" if r is True else r[1])
    return out, f


def write(data_dir, out_dir):
    lists = os.path.join(data_dir, "lexicons", "url-filter")
    with tarfile.open(os.path.join(lists, "url_filterblacklistsv0_3_0.tar.gz")) as t:
        domains = t.extractfile("domains").read().decode().splitlines()
        urls_list = t.extractfile("urls").read().decode().splitlines()
    rules = psl_rules()
    urls = warc_urls(data_dir)
    nwarc = len(urls)
    seen = set(urls)
    for u in generated(domains, urls_list, rules):
        if u not in seen:
            seen.add(u)
            urls.append(u)
    os.makedirs(out_dir, exist_ok=True)
    with gzip.GzipFile(os.path.join(out_dir, "urls.jsonl.gz"), "wb", mtime=0) as fo:
        for u in urls:
            fo.write((json.dumps({"url": u, "text": "x"}, ensure_ascii=False) + "\n").encode())
    psl_domains = sorted({"b." + r.lstrip("!").replace("*", "w") for r in rules})
    with open(os.path.join(out_dir, "psl-domains.txt"), "w") as fo:
        fo.write("\n".join(psl_domains) + "\n")
    with tempfile.TemporaryDirectory() as work:
        base, f = decide(urls, {"extra_domains": psl_domains}, work)
        extra, _ = decide(urls, dict(EXTRA, extra_domains=EXTRA["extra_domains"] + psl_domains), work)
        # the slice: every list line a URL here can match, and every 1000th line
        dset, uset = set(domains), set(urls_list)
        keep_d, keep_u = set(domains[::1000]), set(urls_list[::1000])
        for u in urls:
            x = f.tldextractor(u)
            for c in (x.top_domain_under_public_suffix, x.fqdn):
                if c in dset:
                    keep_d.add(c)
            if u in uset:
                keep_u.add(u)
    for name, res in (("expected.txt.gz", base), ("expected-extra.txt.gz", extra)):
        with gzip.GzipFile(os.path.join(out_dir, name), "wb", mtime=0) as fo:
            fo.write("".join(r + "\n" for r in res).encode())
    slice_path = os.path.join(out_dir, "blocklist-slice.tar.gz")
    with tarfile.open(slice_path, "w:gz", format=tarfile.USTAR_FORMAT) as t:
        for name, lines, keep in (("domains", domains, keep_d), ("urls", urls_list, keep_u)):
            data = "".join(l + "\n" for l in lines if l in keep).encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            t.addfile(info, io.BytesIO(data))
    counts = {}
    for r in base:
        counts[r] = counts.get(r, 0) + 1
    print(f"{len(urls)} URLs ({nwarc} from WARCs); datatrove: {counts}; slice: "
          f"{len(keep_d)} domains, {len(keep_u)} URLs", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "write":
        sys.exit(__doc__)
    write(sys.argv[2], sys.argv[3])
