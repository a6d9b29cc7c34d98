#!/usr/bin/env python3
"""A local HTTP server for the download tests: serves files from ROOT on 127.0.0.1 and
injects failures by path prefix. Writes its port to PORTFILE, logs one line per request
("METHOD PATH RANGE STATUS IF-RANGE") to LOG, and exits by itself after LIFETIME seconds.

  /files/NAME    the file, with Range support (206, 416), a strong ETag (from the file's
                 size and mtime) and Last-Modified; If-Range with another validator gets
                 the whole file (200), as RFC 9110 says
  /weak/NAME     as /files, but with a weak ETag and no Last-Modified (If-Range unusable)
  /tree/PATH     ROOT/PATH (subdirectories, no ".."), as /files
  /drop/NAME     first request: 200 with the full Content-Length, half the body, then the
                 connection is closed; later requests: as /files
  /flaky/NAME    first two requests: 503 (Retry-After: 0); then as /files
  /norange/NAME  always 200 with the whole file (ignores Range); first request drops
                 half-way like /drop
  /always503/NAME  503 every time
  /trickle/NAME  200 with a Content-Length of 1 GiB, then one byte every 0.2 s
  /redirect/URL  302 to URL (the rest of the path, "://" written as ":/")
Servers that lie, each for its first K lying answers (?lies=K, default 1), then as /files:
  /lie206/NAME   a request without Range gets 206 "bytes 0-99/SIZE" and those 100 bytes
  /empty200/NAME first request drops half-way (as /drop); a Range request gets 200 with the
                 file's validators, Content-Length: 0 and no body
  /short/NAME    first request drops half-way; a Range request gets a 206 that starts
                 where asked but holds only 1000 bytes ("bytes S-S+999/SIZE")
  /back/NAME     first request drops half-way; a Range request gets 206 "bytes 0-999/SIZE"
  /changed/NAME  first request: NAME, dropped half-way; later requests: NAME.new, and a
                 Range request gets a 206 of NAME.new whatever its If-Range says (a server
                 that ignores If-Range); ?lm: Last-Modified only, no ETag
  /badrange/NAME 206 with "Content-Range: bytes 0-abc/xyz" and the whole file
  /bighead/NAME  200 with a 10 MB header line
  /manyhead/NAME 200 with 1000 header lines of 100 bytes
The query string is not part of the file name.
usage: http_server.py ROOT PORTFILE LOG [LIFETIME]
"""
import email.utils
import http.server
import os
import sys
import threading
import time

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
            f.write("%s %s %s %d %s\n" % (self.command, self.path, self.headers.get("Range", "-"), status,
                                          self.headers.get("If-Range", "-")))

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
        name, _, query = name.partition("?")
        lies = int(query.split("lies=")[1].split("&")[0]) if "lies=" in query else 1
        path = os.path.join(ROOT, os.path.basename(name))
        if mode == "tree":
            parts = name.split("/")
            path = os.path.join(ROOT, *[p for p in parts if p not in ("", ".", "..")])
        with lock:
            n = counts.get(self.path, 0) + 1
            counts[self.path] = n
        if mode == "redirect":
            return self.simple(302, b"", [("Location", name.replace(":/", "://", 1))])
        if mode == "trickle":
            self.note(200)
            self.send_response(200)
            self.send_header("Content-Length", str(1 << 30))
            self.end_headers()
            try:
                while True:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                self.close_connection = True
            return
        lie_modes = ("lie206", "empty200", "short", "back", "changed", "badrange", "bighead", "manyhead")
        if mode not in ("files", "tree", "drop", "flaky", "norange", "always503", "weak") + lie_modes \
                or not os.path.isfile(path):
            return self.simple(404, b"not found\n")
        if mode == "changed" and n > 1:
            path += ".new"
        if mode == "always503" or (mode == "flaky" and n <= 2):
            return self.simple(503, b"busy\n", [("Retry-After", "0")])
        data = open(path, "rb").read()
        st = os.stat(path)
        validators = []
        if mode == "weak":
            validators = [("ETag", 'W/"%x"' % st.st_size)]
        elif mode == "changed" and "lm" in query.split("&"):
            validators = [("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))]
        else:
            validators = [("ETag", '"%x-%x"' % (st.st_mtime_ns, st.st_size)),
                          ("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))]
        if_range = self.headers.get("If-Range")
        # If-Range: the range only when the validator still matches (strong ETag or date)
        range_ok = if_range is None or any(v == if_range and not v.startswith("W/") for _, v in validators)
        if mode in ("drop", "norange", "empty200", "short", "back", "changed") and n == 1:
            self.note(200)
            self.send_response(200)
            for k, v in validators:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        rng = self.headers.get("Range")
        # the lies: the nth request (the first one after the drop for the modes that drop)
        lying = n - (mode in ("empty200", "short", "back", "changed")) <= lies
        if lying and self.lie(mode, rng, data, validators):
            return
        if mode == "changed" and rng:
            range_ok = True  # ignores If-Range
        if rng and mode != "norange" and rng.startswith("bytes=") and range_ok:
            start_s, _, end_s = rng[6:].partition("-")
            start = int(start_s)
            end = int(end_s) if end_s else len(data) - 1
            if start >= len(data):
                return self.simple(416, b"", [("Content-Range", "bytes */%d" % len(data))])
            body = data[start : end + 1]
            self.note(206)
            self.send_response(206)
            for k, v in validators:
                self.send_header(k, v)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, start + len(body) - 1, len(data)))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.simple(200, data, validators)

    def lie(self, mode, rng, data, validators):
        """Send mode's lie for this request; False when it has none for it."""
        start = int(rng[6:].partition("-")[0]) if rng and rng.startswith("bytes=") else None
        extra, body, status = [], data, 206
        if mode == "lie206" and start is None:
            body, extra = data[:100], [("Content-Range", "bytes 0-99/%d" % len(data))]
        elif mode == "empty200" and start is not None:
            status, body = 200, b""
        elif mode == "short" and start is not None:
            body = data[start : start + 1000]
            extra = [("Content-Range", "bytes %d-%d/%d" % (start, start + len(body) - 1, len(data)))]
        elif mode == "back" and start is not None:
            body, extra = data[:1000], [("Content-Range", "bytes 0-999/%d" % len(data))]
        elif mode == "badrange":
            extra = [("Content-Range", "bytes 0-abc/xyz")]
        elif mode == "bighead":
            status, extra = 200, [("X-Pad", "p" * (10 << 20))]
        elif mode == "manyhead":
            status, extra = 200, [("X-Pad-%04d" % i, "p" * 88) for i in range(1000)]
        else:
            return False
        self.note(status)
        self.send_response(status)
        for k, v in list(validators) + extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # a client that hangs up on a lie (an oversized head) is what the lie is for
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


server = Server(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Timer(LIFETIME, server.shutdown).start()
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
