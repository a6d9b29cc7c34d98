#!/usr/bin/env python3
"""A TCP server on 127.0.0.1 that answers every Redis command badly, for the tests of the
Redis Cluster client's bounds. Writes its port to PORTFILE; exits after LIFETIME seconds.

  huge   "$2000000000\\r\\n" (a 2 GB bulk string), then one byte every 0.1 s
  stall  "$1000\\r\\n" and 3 bytes of it, then nothing
usage: bad_redis.py MODE PORTFILE [LIFETIME]
"""
import os
import socket
import sys
import threading
import time

MODE, PORTFILE = sys.argv[1], sys.argv[2]
LIFETIME = float(sys.argv[3]) if len(sys.argv) > 3 else 60


def serve(conn):
    try:
        conn.recv(65536)  # the command; what it is does not matter
        if MODE == "huge":
            conn.sendall(b"$2000000000\r\n")
            while True:
                conn.sendall(b"x")
                time.sleep(0.1)
        else:
            conn.sendall(b"$1000\r\nabc")
            time.sleep(LIFETIME)
    except OSError:
        pass
    finally:
        conn.close()


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
threading.Timer(LIFETIME, lambda: os._exit(0)).start()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
