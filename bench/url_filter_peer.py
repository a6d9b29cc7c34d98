#!/usr/bin/env python3
"""datatrove 0.10.0's URLFilter on the "url" member of a JSONL file, timed: the list load
(its download_data: the tar.gz extracted into the Hugging Face assets cache on the first
call only, then the lists read into Python sets) and the filter() calls, CPU seconds each.

  url_filter_peer.py IN.jsonl REASONS_OUT

Writes each document's decision ("keep" or the reason) a line to REASONS_OUT and prints
{"load_s", "filter_s", "urls"} as JSON. The public suffixes come from Debian's list
(/usr/share/publicsuffix/public_suffix_list.dat), the one libpsl reads on our side.
"""
import json
import os
import sys
import tempfile
import time

PSL = "/usr/share/publicsuffix/public_suffix_list.dat"


def main(inp, out):
    from datatrove.data import Document
    from datatrove.pipeline.filters import URLFilter
    from tldextract import TLDExtract

    docs = [Document(text="", id=str(i), metadata={"url": json.loads(l)["url"]})
            for i, l in enumerate(open(inp, encoding="utf-8")) if l.strip()]
    with tempfile.TemporaryDirectory() as tld:
        t0 = time.process_time()
        f = URLFilter()
        f.tldextractor = TLDExtract(cache_dir=tld, suffix_list_urls=("file://" + PSL,),
                                    fallback_to_snapshot=False)
        f.download_data()
        f.tldextractor("http://example.com/")  # the suffix list read and its trie built
        t1 = time.process_time()
        res = []
        for d in docs:
            r = f.filter(d)
            res.append("keep" if r is True else r[1])
        t2 = time.process_time()
    with open(out, "w") as fo:
        fo.write("".join(r + "\n" for r in res))
    print(json.dumps({"load_s": t1 - t0, "filter_s": t2 - t1, "urls": len(docs)}))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    os.environ.setdefault("HF_ASSETS_CACHE", os.path.join(tempfile.gettempdir(), "sluice-bench-hf-assets"))
    main(sys.argv[1], sys.argv[2])
