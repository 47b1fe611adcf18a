#!/usr/bin/env python3
"""Writes the debug_file fuzzer's seeds into the folder given (default fuzz/seeds/debug_file):
minimal ELF files whose sections an attacker chose. Each covers the address 0x1000-0x1100.

  zstd-past-size: .debug_info compressed with zstd, declaring 4 KiB, inflating to 256 MiB;
  zlib-terabyte: .debug_info compressed with zlib, declaring 1 TiB;
  nested-inline: a subprogram with inlined subroutines nested 2,000 deep.
"""
import os
import struct
import sys
import zlib


def elf(sections):
    """An ELF64 file of (name, flags, bytes) sections."""
    names = b"\0"
    offsets = []
    for name, _, _ in sections + [(".shstrtab", 0, b"")]:
        offsets.append(len(names))
        names += name.encode() + b"\0"
    body = bytearray(64)
    headers = bytearray(64)
    for i, (name, flags, data) in enumerate(sections + [(".shstrtab", 0, names)]):
        while len(body) % 8:
            body.append(0)
        kind = 3 if name == ".shstrtab" else 1
        headers += struct.pack("<IIQQQQIIQQ", offsets[i], kind, flags, 0, len(body), len(data), 0, 0,
                               8 if flags & 0x800 else 1, 0)
        body += data
    while len(body) % 8:
        body.append(0)
    count = len(sections) + 2
    head = b"\x7fELF\x02\x01\x01" + bytes(9)
    head += struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 0, len(body), 0, 64, 56, 0, 64, count, count - 1)
    body[:64] = head
    return bytes(body + headers)


def chdr(kind, declared):
    return struct.pack("<IIQQ", kind, 0, declared, 1)


def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v == 0:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def nested(depth):
    abbrev = bytearray()
    for code, tag in [(1, 0x11), (2, 0x2E), (3, 0x1D)]:
        abbrev += uleb(code) + uleb(tag) + b"\x01"
        for name, form in [(0x03, 0x08), (0x11, 0x01), (0x12, 0x07)]:
            abbrev += uleb(name) + uleb(form)
        abbrev += b"\0\0"
    abbrev += b"\0"
    dies = bytearray()
    for i, code in enumerate([1, 2] + [3] * depth):
        dies += bytes([code]) + (b"f\0" if i == 1 else b"n\0") + struct.pack("<QQ", 0x1000, 0x100)
    dies += bytes(depth + 2)
    info = struct.pack("<IHIB", len(dies) + 7, 4, 0, 8) + dies
    return elf([(".debug_abbrev", 0, bytes(abbrev)), (".debug_info", 0, info)])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "debug_file")
    os.makedirs(out, exist_ok=True)
    blocks = 2048
    bomb = bytes([0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x38])
    for i in range(blocks):
        head = (131072 << 3) | (1 << 1) | (1 if i + 1 == blocks else 0)
        bomb += struct.pack("<I", head)[:3] + b"\0"
    files = {
        "zstd-past-size": elf([(".debug_info", 0x800, chdr(2, 4096) + bomb)]),
        "zlib-terabyte": elf([(".debug_info", 0x800, chdr(1, 1 << 40) + zlib.compress(bytes(8 << 20), 9))]),
        "nested-inline": nested(2000),
    }
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
