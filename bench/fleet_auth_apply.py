#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# fleet_auth_apply.py ENDPOINT CACERT < SCRIPT — the users, roles and grants
# that `nodetune fleet init-auth --print` writes as etcdctl lines, made
# over etcd's v3 JSON gateway instead, 32 hosts at once, on kept-alive connections (9 etcdctl runs per
# host take an hour at 10,000 hosts).  The same calls, in the same order per
# user; `auth enable` last.  Exit 1 on the first call etcd refuses.
import base64
import concurrent.futures
import http.client
import json
import re
import shlex
import ssl
import sys
import threading
import time
import urllib.parse

ep, cacert = sys.argv[1], sys.argv[2]
ctx = ssl.create_default_context(cafile=cacert)
local = threading.local()


def b64(s):
    return base64.b64encode(s.encode()).decode()


def call(path, body):
    """One POST on this thread's kept-alive connection (a TLS handshake per
    call costs more than the call); a 503 or a cut (etcd busy, a leader
    election under load) is tried again, 20 times at most."""
    u = urllib.parse.urlsplit(ep)
    for i in range(20):
        try:
            if not hasattr(local, "c"):
                local.c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=60)
            local.c.request("POST", "/v3/auth/" + path, json.dumps(body), {"Content-Type": "application/json"})
            r = local.c.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException):
            del local.c
            time.sleep(0.2 * (i + 1))
            continue
        if r.status == 200 or (i > 0 and b"already exists" in data):
            return      # (a retry of a call that had gone through before the cut)
        if r.status != 503:
            raise SystemExit("fleet_auth_apply: %s: %d %s" % (path, r.status, data[:200]))
        time.sleep(0.2 * (i + 1))
    raise SystemExit("fleet_auth_apply: %s: etcd still busy after 20 tries" % path)


def prefix_end(key):
    b = bytearray(key.encode())
    b[-1] += 1
    return base64.b64encode(bytes(b)).decode()


def run(line):
    w = shlex.split(line.split("etcdctl", 1)[1].split(" < ")[0])
    w = [x for x in w if not x.startswith("--endpoints") and not x.startswith("--cacert")]
    if w[:2] == ["role", "add"]:
        call("role/add", {"name": w[2]})
    elif w[:2] == ["role", "grant-permission"]:
        prefix = "--prefix=true" in w
        w = [x for x in w if x != "--prefix=true"]
        perm = {"key": b64(w[4]), "permType": w[3].upper()}
        if prefix:
            perm["range_end"] = prefix_end(w[4])
        call("role/grant", {"name": w[2], "perm": perm})
    elif w[:2] == ["user", "add"]:
        pw = open(re.search(r"< '([^']+)'", line).group(1)).readline().rstrip("\n")
        call("user/add", {"name": w[2], "password": pw})
    elif w[:2] == ["user", "grant-role"]:
        call("user/grant", {"user": w[2], "role": w[3]})
    elif w[:2] == ["auth", "enable"]:
        call("enable", {})
    else:
        raise SystemExit("fleet_auth_apply: unknown line: " + line)


def main():
    groups, order, last = {}, [], []
    for line in sys.stdin:
        line = line.strip()
        if "etcdctl" not in line:
            continue
        if " auth enable" in line:
            last.append(line)
            continue
        m = re.search(r" (?:role add|role grant-permission|user add|user grant-role) (\S+)", line)
        g = m.group(1) if m else ""
        if g not in groups:
            groups[g] = []
            order.append(g)
        groups[g].append(line)
    # roles before the users that take them: a user's group is its role's
    with concurrent.futures.ThreadPoolExecutor(32) as ex:
        for f in [ex.submit(lambda g=g: [run(x) for x in groups[g]]) for g in order]:
            f.result()
    for line in last:
        run(line)


main()
