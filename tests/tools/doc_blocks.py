#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""doc_blocks.py: the fenced blocks of Markdown files, for test_docs.sh.

  --split DIR FILE.md...     each fenced block to DIR/NNN.block: line 1
                             FILE.md:LINE (of the opening fence), then the
                             block's lines
  --commands BLOCK PREFIX    a block of `$ CMD` lines: each command (a `\\`
                             continuation joined) to PREFIX.K.cmd and the
                             lines shown after it to PREFIX.K.out
  --tagged TAG FILE.md       the blocks fenced ```sh TAG, their lines as
                             they are, in order (test_systemd.sh runs the
                             fleet quick start's so); none is exit 1
  --compare EXPECTED GOT SHAPE
                             exit 0 when GOT's lines are EXPECTED's: a line
                             `...` stands for any lines (none too), trailing
                             blanks ignored; SHAPE 1: every number stands
                             for any number.  The difference goes to stdout.
"""
import os
import re
import sys

FENCE = re.compile(r"^```(\w*)(?: ([\w-]+))?$")
NUM = re.compile(r"\d+(\.\d+)?(e[-+]?\d+)?")


def split(out, files):
    os.makedirs(out)
    n = 0
    for path in files:
        lines = open(path).read().split("\n")
        i = 0
        while i < len(lines):
            if not FENCE.match(lines[i]):
                i += 1
                continue
            start, i, block = i + 1, i + 1, []
            while i < len(lines) and not lines[i].startswith("```"):
                block.append(lines[i])
                i += 1
            i += 1
            n += 1
            with open(os.path.join(out, "%03d.block" % n), "w") as f:
                f.write("%s:%d\n" % (path, start))
                f.write("".join(l + "\n" for l in block))


def tagged(tag, path):
    lines, i, found = open(path).read().split("\n"), 0, 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        i += 1
        if not m:
            continue
        while i < len(lines) and not lines[i].startswith("```"):
            if m.group(1) == "sh" and m.group(2) == tag:
                print(lines[i])
            i += 1
        found += m.group(1) == "sh" and m.group(2) == tag
        i += 1
    return 0 if found else 1


def commands(block, prefix):
    lines = open(block).read().split("\n")[1:]
    if lines and lines[-1] == "":
        lines.pop()
    k, cmd, out, i = 0, None, [], 0

    def flush():
        if cmd is not None:
            with open("%s.%d.cmd" % (prefix, k), "w") as f:
                f.write(cmd)
            with open("%s.%d.out" % (prefix, k), "w") as f:
                f.write("".join(l + "\n" for l in out))
    while i < len(lines):
        l = lines[i]
        if l.startswith("$ "):
            flush()
            k, cmd, out = k + 1, l[2:], []
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
        else:
            out.append(l)
        i += 1
    flush()


def norm(line, shape):
    """In its shape a line's numbers are N, and a run of spaces (a column's
    padding, which varies with the numbers' widths) is two."""
    line = line.rstrip()
    return re.sub(r"  +", "  ", NUM.sub("N", line)) if shape else line


def match(exp, got):
    """exp with '...' lines (any lines) against got"""
    if not exp:
        return not got
    if exp[0] == "...":
        return any(match(exp[1:], got[j:]) for j in range(len(got) + 1))
    return bool(got) and exp[0] == got[0] and match(exp[1:], got[1:])


def compare(expected, got, shape):
    shape = shape == "1"
    exp = [norm(l, shape) if l.strip() != "..." else "..." for l in open(expected).read().split("\n")]
    have = [norm(l, shape) for l in open(got).read().split("\n")]
    while exp and exp[-1] == "":
        exp.pop()
    while have and have[-1] == "":
        have.pop()
    if match(exp, have):
        return 0
    print("# expected%s:" % (" (numbers as N)" if shape else ""))
    print("".join("#   " + l + "\n" for l in exp[:30]), end="")
    print("# got:")
    print("".join("#   " + l + "\n" for l in have[:30]), end="")
    return 1


def main():
    a = sys.argv[1:]
    if len(a) >= 2 and a[0] == "--split":
        split(a[1], a[2:])
    elif len(a) == 3 and a[0] == "--commands":
        commands(a[1], a[2])
    elif len(a) == 3 and a[0] == "--tagged":
        return tagged(a[1], a[2])
    elif len(a) == 4 and a[0] == "--compare":
        return compare(a[1], a[2], a[3])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
