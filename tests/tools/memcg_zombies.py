#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memcg_zombies.py PARENT TMPFS N: leave N dying (zombie) memory cgroups.

For a test of `nodetune doctor`'s zombie-memcg hazard on a live cgroup v1
memory hierarchy, as root.  For each of N groups: make PARENT/nodetune-zombie-I,
move this process into it, charge it a page of the tmpfs mounted at TMPFS
(a file of 4 KiB), move back to PARENT and rmdir the group.  The kernel keeps
each removed group, offline, while the page charged to it lives: /proc/cgroups
counts it, the hierarchy no longer shows it.  Unmounting TMPFS frees the pages
and with them the groups; that is how a test undoes this.

PARENT should be this process's own memory cgroup, so that the charges stay
inside the limits that apply to it.  Exit 0 when all N were made; on a failure
one line on stderr names the step, and exit 1 (the groups made so far are
already removed and go when TMPFS does).
"""
import os
import sys


def main():
    if len(sys.argv) != 4:
        print("usage: memcg_zombies.py PARENT TMPFS N", file=sys.stderr)
        return 2
    parent, tmpfs, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    me = str(os.getpid())
    for i in range(n):
        d = os.path.join(parent, "nodetune-zombie-%d" % i)
        step = "mkdir " + d
        try:
            os.mkdir(d)
            step = "move into " + d
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(me)
            step = "charge a page in " + tmpfs
            with open(os.path.join(tmpfs, "page-%d" % i), "wb") as f:
                f.write(b"z" * 4096)
            step = "move back to " + parent
            with open(os.path.join(parent, "cgroup.procs"), "w") as f:
                f.write(me)
            step = "rmdir " + d
            os.rmdir(d)
        except OSError as e:
            try:  # out of the group, and the group away, as far as possible
                with open(os.path.join(parent, "cgroup.procs"), "w") as f:
                    f.write(me)
                os.rmdir(d)
            except OSError:
                pass
            print("memcg_zombies.py: group %d: %s: %s" % (i, step, e.strerror), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
