#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""capture-taskstats.py OUTDIR [CPU]: the kernel's taskstats exit messages, raw.

Registers a netlink socket for exits on CPU (default 0), runs a few known
tasks pinned there (a 0.2 s busy child, `true`, a thread that exits), and
writes the datagrams the kernel sent about them, unparsed, as
OUTDIR/exit-N.bin (and the first two about other tasks, of whatever exited
on that CPU meanwhile), with OUTDIR/README naming the kernel and the tasks.  The unit tests of
observe/taskexit.c read these: the kernel's own bytes, not our encoder's.
Written with Python's socket module only (nothing of nodetune's), as root.
"""
import ctypes
import os
import platform
import socket
import struct
import sys
import threading
import time

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
TASKSTATS_CMD_GET = 1
TASKSTATS_CMD_ATTR_REGISTER_CPUMASK = 3
TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK = 4
NLM_F_REQUEST = 1
NLM_F_ACK = 4


def attr(kind, data):
    n = 4 + len(data)
    return struct.pack("HH", n, kind) + data + b"\0" * ((4 - n % 4) % 4)


def msg(kind, flags, cmd, payload):
    body = struct.pack("BBH", cmd, 1, 0) + payload
    return struct.pack("IHHII", 16 + len(body), kind, flags, 0, 0) + body


def family(s):
    s.send(msg(GENL_ID_CTRL, NLM_F_REQUEST, CTRL_CMD_GETFAMILY, attr(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0")))
    data = s.recv(65536)
    off = 20
    while off + 4 <= len(data):
        n, kind = struct.unpack_from("HH", data, off)
        if kind == CTRL_ATTR_FAMILY_ID:
            return struct.unpack_from("H", data, off + 4)[0]
        off += (n + 3) & ~3
    sys.exit("capture-taskstats: no TASKSTATS family")


def record_pids(data):
    """The TASKSTATS_TYPE_PID values in a datagram (TYPE_AGGR_PID = 4 nests
    TYPE_PID = 1): to pick the datagrams to keep, nothing more."""
    pids, off = [], 16 + 4
    while off + 4 <= len(data):
        n, kind = struct.unpack_from("HH", data, off)
        if n < 4:
            break
        if kind & 0x3fff == 4:
            inner = off + 4
            while inner + 8 <= off + n:
                m, k = struct.unpack_from("HH", data, inner)
                if m < 4:
                    break
                if k == 1:
                    pids.append(struct.unpack_from("I", data, inner + 4)[0])
                inner += (m + 3) & ~3
        off += (n + 3) & ~3
    return pids


def main():
    out = sys.argv[1]
    cpu = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    os.makedirs(out, exist_ok=True)
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    s.bind((0, 0))
    fam = family(s)
    mask = attr(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, b"%d\0" % cpu)
    s.send(msg(fam, NLM_F_REQUEST | NLM_F_ACK, TASKSTATS_CMD_GET, mask))
    ack = s.recv(65536)
    if struct.unpack_from("i", ack, 16)[0] != 0:
        sys.exit("capture-taskstats: registering: error %d" % struct.unpack_from("i", ack, 16)[0])
    os.sched_setaffinity(0, {cpu})
    tasks = []
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + 0.2
        while time.monotonic() < end:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
    tasks.append("pid %d: a forked child that spun 0.2 s, exit 0" % pid)
    pid = os.fork()
    if pid == 0:
        os.execv("/bin/true", ["true"])
    os.waitpid(pid, 0)
    tasks.append("pid %d: /bin/true" % pid)
    tids = []

    def named_thread():
        # Python does not name its threads for the kernel: prctl(PR_SET_NAME)
        ctypes.CDLL(None).prctl(15, b"capthread", 0, 0, 0)
        tids.append(threading.get_native_id())
        sum(range(200000))
    th = threading.Thread(target=named_thread)
    th.start()
    th.join()
    tasks.append("thread %d of pid %d named capthread (its own record, the process lives on)" % (tids[0], os.getpid()))
    time.sleep(0.3)
    s.settimeout(0.5)
    ours = set(tids) | {int(t.split()[1].rstrip(":")) for t in tasks if t.startswith("pid ")}
    n = others = 0
    while True:
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        if not ours & set(record_pids(data)):
            if others == 2:
                continue
            others += 1
        with open(os.path.join(out, "exit-%d.bin" % n), "wb") as f:
            f.write(data)
        n += 1
    s.send(msg(fam, NLM_F_REQUEST, TASKSTATS_CMD_GET, attr(TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, b"%d\0" % cpu)))
    with open(os.path.join(out, "README"), "w") as f:
        f.write("taskstats exit messages for CPU %d, captured by tests/tools/capture-taskstats.py\n" % cpu)
        f.write("kernel %s, %s, capturing pid %d\n" % (platform.release(), time.strftime("%Y-%m-%d"), os.getpid()))
        f.write("%d datagram(s), %d of them about other tasks that exited on CPU %d; the tasks it ran:\n" % (n, others, cpu))
        for t in tasks:
            f.write("  %s\n" % t)


main()
