#!/usr/bin/env python3
"""A local server for the object-store tests, on 127.0.0.1: a fault-injecting proxy in front
of an S3 server (moto), and the Hugging Face hub's URL layout over a local folder. Writes
its port to PORTFILE, logs one line per request ("METHOD PATH RANGE STATUS") to LOG, exits
by itself after LIFETIME seconds.

  /datasets/ORG/NAME/resolve/REV/PATH   the file HUB/ORG/NAME/PATH (HEAD, GET, Range);
                                        401 unless "Authorization: Bearer $HUB_TOKEN"
                                        or ?token=$HUB_TOKEN (a URL that carries its token)
  /api/datasets/ORG/NAME/tree/REV[/PATH]?recursive=true[&cursor=K]
                                        the files under it, as the hub lists them, 2 a page,
                                        the next page in a Link header (rel="next")
  .../resolve/REV/evil.jsonl            302 to file:///etc/hostname (a scheme never fetched)
  /_test/get?bucket=B&prefix=P&out=DIR  the test's own look at the store (boto3, with the key
                                        in the file $KEYS_FILE): every object under P into DIR
  /_test/put?bucket=B&key=K&file=F      ... and a write of F's bytes to K
  anything else                         forwarded to the S3 server at UPSTREAM, headers as
                                        sent (the signature covers Host), with faults by key:
     a key with "flaky" in it: its first 2 GETs answer 503 SlowDown
     a key with "drop" in it: each first GET of a range from byte 0 sends its head and half
       its body, then closes the connection
     a PUT whose path holds the text of the file "hold" beside LOG (when it exists) waits
       until that file is gone (a run held mid-stage, to be killed there); a request whose
       body ends early (its client was killed) is not forwarded
usage: objstore_server.py PORTFILE LOG UPSTREAM HUB [LIFETIME]
"""
import http.client
import http.server
import json
import os
import re
import sys
import threading
import time
import urllib.parse

PORTFILE, LOG, UPSTREAM, HUB = sys.argv[1:5]
LIFETIME = float(sys.argv[5]) if len(sys.argv) > 5 else 120
TOKEN = os.environ.get("HUB_TOKEN", "")
counts = {}
lock = threading.Lock()
PAGE = 2


def bump(key):
    with lock:
        counts[key] = counts.get(key, 0) + 1
        return counts[key]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def log(self, status):
        with lock, open(LOG, "a") as f:
            f.write("%s %s %s %s\n" % (self.command, self.path, self.headers.get("Range", "-"), status))

    def send(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.log(status)

    def hub(self, u):
        if (TOKEN and self.headers.get("Authorization") != "Bearer " + TOKEN
                and urllib.parse.parse_qs(u.query).get("token") != [TOKEN]):
            return self.send(401, b'{"error":"Invalid credentials"}')
        m = re.match(r"^/api/datasets/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?$", u.path)
        if m:
            base = os.path.join(HUB, m.group(1))
            sub = (m.group(3) or "").strip("/")
            files = []
            for dp, dn, fn in os.walk(os.path.join(base, sub)):
                dn.sort()
                for n in sorted(fn):
                    p = os.path.relpath(os.path.join(dp, n), base)
                    files.append({"type": "file", "oid": "0", "size": os.path.getsize(os.path.join(dp, n)), "path": p})
            files.sort(key=lambda e: e["path"])
            q = urllib.parse.parse_qs(u.query)
            start = int(q.get("cursor", ["0"])[0])
            page = files[start:start + PAGE]
            hdrs = [("Content-Type", "application/json")]
            if start + PAGE < len(files):
                nxt = "http://%s%s?recursive=true&cursor=%d" % (self.headers["Host"], u.path, start + PAGE)
                hdrs.append(("Link", '<%s>; rel="next"' % nxt))
            return self.send(200, json.dumps(page).encode(), hdrs)
        m = re.match(r"^/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", u.path)
        if not m:
            return self.send(404)
        if m.group(3) == "evil.jsonl":
            return self.send(302, headers=[("Location", "file:///etc/hostname")])
        path = os.path.join(HUB, m.group(1), m.group(3))
        if not os.path.isfile(path):
            return self.send(404, b"Entry not found")
        data = open(path, "rb").read()
        r = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if not r:
            return self.send(200, data, [("ETag", '"v1"')])
        a = int(r.group(1))
        b = int(r.group(2)) if r.group(2) else len(data) - 1
        b = min(b, len(data) - 1)
        return self.send(206, data[a:b + 1], [("ETag", '"v1"'), ("Content-Range", "bytes %d-%d/%d" % (a, b, len(data)))])

    def proxy(self):
        hold = os.path.join(os.path.dirname(LOG), "hold")
        while self.command == "PUT" and os.path.exists(hold):
            try:
                text = open(hold).read().strip()
            except OSError:
                break
            if not text or text not in self.path:
                break
            time.sleep(0.05)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        if n and len(body) != n:
            self.close_connection = True
            return self.log("cut")
        key = urllib.parse.urlsplit(self.path).path
        rng = self.headers.get("Range", "")
        if self.command == "GET" and "flaky" in key and bump("flaky " + key) <= 2:
            return self.send(503, b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>")
        host, port = UPSTREAM.split(":")
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        c.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            if k.lower() not in ("connection",):
                c.putheader(k, v)
        c.endheaders(body)
        r = c.getresponse()
        data = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "content-length", "server", "date"):
                self.send_header(k, v)
        # a HEAD's Content-Length is the object's, not its (empty) body's
        self.send_header("Content-Length", r.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data)))
        self.end_headers()
        if self.command == "HEAD":
            return self.log(r.status)
        if ("drop" in key and rng.startswith("bytes=0-") and r.status in (200, 206) and len(data) > 1
                and bump("drop " + key) == 1):
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.log("%d-dropped" % r.status)
            return
        self.wfile.write(data)
        self.log(r.status)

    def test_call(self, u):
        import boto3  # here, once: a new Python with boto3 for each look costs a second
        q = {k: v[0] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
        ak, sk = open(os.environ["KEYS_FILE"]).read().split()
        s3 = boto3.client("s3", endpoint_url="http://" + UPSTREAM, aws_access_key_id=ak,
                          aws_secret_access_key=sk, region_name="us-east-1")
        if u.path == "/_test/put":
            s3.put_object(Bucket=q["bucket"], Key=q["key"], Body=open(q["file"], "rb").read())
            return self.send(200, b"ok\n")
        n = 0
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=q["bucket"]):
            for o in page.get("Contents", []):
                if o["Key"].startswith(q["prefix"]):
                    p = os.path.join(q["out"], o["Key"][len(q["prefix"]):])
                    os.makedirs(os.path.dirname(p), exist_ok=True)
                    s3.download_file(q["bucket"], o["Key"], p)
                    n += 1
        return self.send(200, b"%d\n" % n)

    def route(self):
        u = urllib.parse.urlsplit(self.path)
        try:
            if u.path.startswith("/_test/"):
                return self.test_call(u)
            if u.path.startswith("/datasets/") or u.path.startswith("/api/"):
                return self.hub(u)
            return self.proxy()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # a client that stopped reading (killed, or done)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = route


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
threading.Thread(target=lambda: (time.sleep(LIFETIME), os._exit(0)), daemon=True).start()
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
