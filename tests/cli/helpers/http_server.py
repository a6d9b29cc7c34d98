#!/usr/bin/env python3
"""A local HTTP server for the download tests: serves files from ROOT on 127.0.0.1 and
injects failures by path prefix. Writes its port to PORTFILE, logs one line per request
("METHOD PATH RANGE STATUS") to LOG, and exits by itself after LIFETIME seconds.

  /files/NAME    the file, with Range support (206, 416)
  /tree/PATH     ROOT/PATH (subdirectories, no ".."), as /files
  /drop/NAME     first request: 200 with the full Content-Length, half the body, then the
                 connection is closed; later requests: as /files
  /flaky/NAME    first two requests: 503 (Retry-After: 0); then as /files
  /norange/NAME  always 200 with the whole file (ignores Range); first request drops
                 half-way like /drop
  /always503/NAME  503 every time
usage: http_server.py ROOT PORTFILE LOG [LIFETIME]
"""
import http.server
import os
import sys
import threading

ROOT, PORTFILE, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
LIFETIME = float(sys.argv[4]) if len(sys.argv) > 4 else 120
counts = {}
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def note(self, status):
        with open(LOG, "a") as f:
            f.write("%s %s %s %d\n" % (self.command, self.path, self.headers.get("Range", "-"), status))

    def simple(self, status, body=b"", extra=()):
        self.note(status)
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        parts = self.path.split("/", 2)
        if len(parts) < 3:
            return self.simple(404, b"not found\n")
        mode, name = parts[1], parts[2]
        path = os.path.join(ROOT, os.path.basename(name))
        if mode == "tree":
            parts = name.split("?")[0].split("/")
            path = os.path.join(ROOT, *[p for p in parts if p not in ("", ".", "..")])
        with lock:
            n = counts.get(self.path, 0) + 1
            counts[self.path] = n
        if mode not in ("files", "tree", "drop", "flaky", "norange", "always503") or not os.path.isfile(path):
            return self.simple(404, b"not found\n")
        if mode == "always503" or (mode == "flaky" and n <= 2):
            return self.simple(503, b"busy\n", [("Retry-After", "0")])
        data = open(path, "rb").read()
        if mode in ("drop", "norange") and n == 1:
            self.note(200)
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        rng = self.headers.get("Range")
        if rng and mode != "norange" and rng.startswith("bytes="):
            start_s, _, end_s = rng[6:].partition("-")
            start = int(start_s)
            end = int(end_s) if end_s else len(data) - 1
            if start >= len(data):
                return self.simple(416, b"", [("Content-Range", "bytes */%d" % len(data))])
            body = data[start : end + 1]
            self.note(206)
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, start + len(body) - 1, len(data)))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.simple(200, data)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Timer(LIFETIME, server.shutdown).start()
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
