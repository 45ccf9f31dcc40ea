#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Check that a screenshot of a flame graph really shows one.

usage: check_png.py FILE.png

Decodes the PNG (8-bit RGB/RGBA, no library needed) and checks that the
picture is not blank: boxes in the flame graph's colour families (user red/
orange, kernel aqua, JIT green, process lavender) cover a visible area.
Prints one PASS/FAIL line.
"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise ValueError(f"unsupported PNG: depth {depth} colour type {ctype}")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xff
            elif f == 2:
                line[i] = (line[i] + b) & 0xff
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xff
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xff
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def family(r, g, b):
    if r >= 210 and 50 <= g <= 175 and b <= 65:
        return "user"
    if r <= 125 and g >= 180 and b >= 200:
        return "kernel"
    if r <= 125 and g >= 180 and b <= 105:
        return "jit"
    if 170 <= r <= 210 and 165 <= g <= 205 and b >= 230:
        return "process"
    return None


def main():
    path = sys.argv[1]
    try:
        width, height, bpp, rows = decode(path)
    except (ValueError, zlib.error, struct.error) as e:
        print(f"FAIL: screenshot shows a flame graph: {path}: {e}")
        return 1
    counts = {}
    for line in rows:
        for x in range(0, width * bpp, bpp):
            fam = family(line[x], line[x + 1], line[x + 2])
            if fam:
                counts[fam] = counts.get(fam, 0) + 1
    # every family must cover at least a small box (10 x 10 pixels)
    missing = [f for f in ("user", "kernel", "jit", "process") if counts.get(f, 0) < 100]
    if missing:
        print(f"FAIL: screenshot shows a flame graph: no {missing} coloured boxes in "
              f"{width}x{height} {path} (pixels per family: {counts})")
        return 1
    print(f"PASS: screenshot shows a flame graph ({width}x{height}, pixels per family {counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
