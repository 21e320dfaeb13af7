#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fnlen.py — list C/CUDA functions longer than a limit (kernel style: a
definition's opening brace and closing brace stand alone in column 0).

Usage: scripts/fnlen.py [--limit N] FILE...   (default limit 80)
Prints "LINES FILE:LINE NAME" for each function over the limit, longest
first, then one summary line; exits 0 (a measure, not a check).
"""
import re
import sys


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    name, start = None, None
    for i, line in enumerate(lines):
        if line == "{" and i > 0:
            # the signature: the nearest earlier line that starts in column 0
            j = i - 1
            while j > 0 and (lines[j][:1] in (" ", "\t") or lines[j] == ""):
                j -= 1
            m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", lines[j])
            if m and not lines[j].startswith(("struct", "enum", "union", "#", "static const", "const")):
                name, start = m.group(1), i
        elif line == "}" and start is not None:
            yield name, start + 1, i - start + 1
            name, start = None, None


def main(argv):
    limit = 80
    if argv[:1] == ["--limit"]:
        limit, argv = int(argv[1]), argv[2:]
    allf, over = [], []
    for path in argv:
        for name, line, n in functions(path):
            allf.append((n, path, line, name))
            if n > limit:
                over.append((n, path, line, name))
    for n, path, line, name in sorted(over, reverse=True):
        print(f"{n:5d} {path}:{line} {name}")
    longest = max(allf) if allf else (0, "-", 0, "-")
    print(f"{len(allf)} functions, {len(over)} over {limit} lines; longest {longest[0]} ({longest[3]})")


if __name__ == "__main__":
    main(sys.argv[1:])
