"""Chromium's screenshots made small for the README: the same picture in 256 colours.

A page of flat colours and antialiased text has a few thousand colours, and its 256 most
common cover about 97 % of its pixels: each other colour is drawn as the nearest of those
(no dithering), and the picture is written as an indexed PNG, compressed as hard as zlib can.
"""

from __future__ import annotations

import struct
import zlib
from collections import Counter

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {2: 3, 6: 4}  # colour type: RGB, RGBA (what Chromium writes), 8 bits each


def _chunks(png: bytes) -> dict[bytes, bytes]:
    assert png[:8] == _SIGNATURE, "not a PNG"
    found: dict[bytes, bytes] = {}
    pos = 8
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        found[kind] = found.get(kind, b"") + png[pos + 8:pos + 8 + length]
        pos += 12 + length
    return found


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _unfilter(kind: int, line: bytearray, previous: bytearray, step: int) -> None:
    """Undo a row's filter in place (PNG spec, section 9)."""
    if kind == 1:
        for x in range(step, len(line)):
            line[x] = (line[x] + line[x - step]) & 255
    elif kind == 2:
        for x in range(len(line)):
            line[x] = (line[x] + previous[x]) & 255
    elif kind == 3:
        for x in range(len(line)):
            line[x] = (line[x] + ((line[x - step] if x >= step else 0) + previous[x]) // 2) & 255
    elif kind == 4:
        for x in range(len(line)):
            left = line[x - step] if x >= step else 0
            corner = previous[x - step] if x >= step else 0
            line[x] = (line[x] + _paeth(left, previous[x], corner)) & 255


def decode(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA PNG, not interlaced."""
    chunks = _chunks(png)
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert depth == 8 and colour in _CHANNELS and not interlace, "not Chromium's kind of PNG"
    step = _CHANNELS[colour]
    stride = width * step
    data = zlib.decompress(chunks[b"IDAT"])
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = data[start], bytearray(data[start + 1:start + 1 + stride])
        _unfilter(kind, line, previous, step)
        rows.append(bytes(line) if step == 3 else
                    bytes(b for x in range(0, stride, 4) for b in line[x:x + 3]))
        previous = line
    return width, height, rows


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def small(png: bytes) -> bytes:
    """The screenshot as an indexed PNG of its 256 most common colours."""
    width, height, rows = decode(png)
    counts = Counter(row[x:x + 3] for row in rows for x in range(0, len(row), 3))
    palette = [colour for colour, _ in counts.most_common(256)]
    index = {colour: i for i, colour in enumerate(palette)}
    for colour in counts:
        if colour not in index:
            index[colour] = min(range(len(palette)), key=lambda i: sum(
                (a - b) ** 2 for a, b in zip(colour, palette[i])))
    raw = b"".join(b"\0" + bytes(index[row[x:x + 3]] for x in range(0, len(row), 3)) for row in rows)
    return b"".join((_SIGNATURE,
                     _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)),
                     _chunk(b"PLTE", b"".join(palette)),
                     _chunk(b"IDAT", zlib.compress(raw, 9)), _chunk(b"IEND", b"")))


def indexed_pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an indexed PNG that `small` wrote."""
    chunks = _chunks(png)
    width, height = struct.unpack(">II", chunks[b"IHDR"][:8])
    palette = chunks[b"PLTE"]
    data = zlib.decompress(chunks[b"IDAT"])
    rows = [b"".join(palette[3 * i:3 * i + 3] for i in data[y * (width + 1) + 1:(y + 1) * (width + 1)])
            for y in range(height)]
    return width, height, rows
