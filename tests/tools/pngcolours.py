#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pngcolours.py PNG RRGGBB... — how many pixels of the PNG have each colour.

Prints "WIDTHxHEIGHT" and then one "RRGGBB COUNT" line per colour.  Reads
8-bit RGB or RGBA non-interlaced PNGs (what Chromium's --screenshot writes)
with the standard library only.  Exit 2 on anything else.
"""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                print(f"{path}: unsupported PNG (depth {depth}, colour type {ctype})", file=sys.stderr)
                sys.exit(2)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw, stride, prev, out = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.append(bytes(line))
        prev = line
    return w, h, bpp, out


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        sys.exit(2)
    w, h, bpp, rows = pixels(sys.argv[1])
    want = {bytes.fromhex(c): c for c in sys.argv[2:]}
    counts = dict.fromkeys(want.values(), 0)
    for row in rows:
        for x in range(0, len(row), bpp):
            c = want.get(row[x:x + 3])
            if c:
                counts[c] += 1
    print(f"{w}x{h}")
    for c in sys.argv[2:]:
        print(c, counts[c])


main()
