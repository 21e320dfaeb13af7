#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# etcd-flaky-proxy.py — a TCP proxy in front of one etcd member's v3 JSON
# gateway that answers the first N reads of a key under PREFIX with HTTP
# 503 (what a member going away or an overloaded gateway answers), and
# passes everything else through byte for byte (watches stream).  For
# tests: a store that fails one kind of read a few times, then recovers.
#
#   etcd-flaky-proxy.py UPSTREAM_PORT PREFIX N PORTFILE
#
# Listens on a loopback port the kernel picks, writes it to PORTFILE, and
# counts what it failed on stderr ("failed N: KEY").  HTTP/1.1 without
# pipelining (libcurl's): a request is read whole (headers and its
# Content-Length body) before it is forwarded or answered.
import base64
import json
import socket
import sys
import threading

up_port, prefix, budget, portfile = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4]
lock = threading.Lock()


def pump(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def read_request(c, buf):
    while b"\r\n\r\n" not in buf:
        b = c.recv(65536)
        if not b:
            return None, b""
        buf += b
    head, rest = buf.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v.strip())
    while len(rest) < n:
        b = c.recv(65536)
        if not b:
            return None, b""
        rest += b
    return head + b"\r\n\r\n" + rest[:n], rest[n:]


def should_fail(req):
    global budget
    if b"/v3/kv/range" not in req.split(b"\r\n", 1)[0]:
        return None
    try:
        key = base64.b64decode(json.loads(req.split(b"\r\n\r\n", 1)[1])["key"])
    except (ValueError, KeyError):
        return None
    with lock:
        if key.startswith(prefix) and budget > 0:
            budget -= 1
            return key
    return None


def serve(c):
    u = socket.create_connection(("127.0.0.1", up_port))
    threading.Thread(target=pump, args=(u, c), daemon=True).start()
    buf = b""
    try:
        while True:
            req, buf = read_request(c, buf)
            if req is None:
                break
            key = should_fail(req)
            if key is not None:
                print("failed %d: %s" % (budget, key.decode()), file=sys.stderr, flush=True)
                c.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 2\r\n\r\n{}")
            else:
                u.sendall(req)
    except OSError:
        pass
    for s in (u, c):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(64)
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % ls.getsockname()[1])
import os  # noqa: E402
os.rename(portfile + ".tmp", portfile)
while True:
    conn, _ = ls.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
