#!/usr/bin/env python3
"""Writes a kernel image (`vmlinux`) of the running kernel for tests: an ELF file with the core
text symbols of /proc/kallsyms, placed as if the image's `.text` started at IMAGE_TEXT (the
running kernel's `_text` moved there, as KASLR moves it), and the running kernel's build id, so
that a report takes it for the recording's kernel. `.text` holds no bytes (SHT_NOBITS): only
the symbols are there. Also writes OUT_DIR/build_id_list (`id=vmlinux`, a binary cache's).

Usage: kernel_image.py OUT_DIR IMAGE_TEXT    (prints the running kernel's _text address)
"""
import os
import struct
import sys

out_dir, image_text = sys.argv[1], int(sys.argv[2], 0)
symbols = []
with open('/proc/kallsyms') as f:
    for line in f:
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'tTwW' and int(parts[0], 16):
            symbols.append((int(parts[0], 16), parts[1], parts[2]))
symbols.sort()
text = next(a for a, _, n in symbols if n == '_text')
etext = next(a for a, _, n in symbols if n == '_etext')
core = [s for s in symbols if text <= s[0] < etext]
with open('/sys/kernel/notes', 'rb') as f:
    notes = f.read()
at = notes.find(b'GNU\x00')  # the build id note: namesz 4, descsz, type 3, "GNU\0", the id
descsz = int.from_bytes(notes[at - 8:at - 4], 'little')
build_id = notes[at + 4:at + 4 + descsz]

# String tables.
strtab = bytearray(b'\x00')
syms = [bytes(24)]  # the null symbol
locals_first = sorted(range(len(core)), key=lambda i: core[i][1] not in 'tw')
first_global = 1 + sum(1 for s in core if s[1] in 'tw')
for i in locals_first:
    addr, kind, name = core[i]
    size = (core[i + 1][0] - addr) if i + 1 < len(core) else 16
    bind = 0 if kind in 'tw' else 1
    name_at = len(strtab)
    strtab += name.encode() + b'\x00'
    # st_name, st_info (bind << 4 | STT_FUNC), st_other, st_shndx (.text is section 1)
    syms.append(struct.pack('<IBBHQQ', name_at, bind << 4 | 2, 0, 1, addr - text + image_text, size))
symtab = b''.join(syms)
note = struct.pack('<III', 4, len(build_id), 3) + b'GNU\x00' + build_id
shstrtab = b'\x00.text\x00.symtab\x00.strtab\x00.shstrtab\x00.note.gnu.build-id\x00'
name_of = lambda s: shstrtab.index(s.encode() + b'\x00')  # noqa: E731

# Layout: ELF header, then the note, symtab, strtab, shstrtab, then the section headers.
offset = 64
parts = []
placed = {}
for name, data, align in (('note', note, 4), ('symtab', symtab, 8), ('strtab', bytes(strtab), 1),
                          ('shstrtab', shstrtab, 1)):
    offset = (offset + align - 1) // align * align
    placed[name] = (offset, len(data))
    parts.append((offset, data))
    offset += len(data)
shoff = (offset + 7) // 8 * 8
sections = [
    bytes(64),
    # name, type, flags, addr, offset, size, link, info, addralign, entsize
    struct.pack('<IIQQQQIIQQ', name_of('.text'), 8, 6, image_text, 64, etext - text, 0, 0, 16, 0),
    struct.pack('<IIQQQQIIQQ', name_of('.symtab'), 2, 0, 0, *placed['symtab'], 3, first_global, 8, 24),
    struct.pack('<IIQQQQIIQQ', name_of('.strtab'), 3, 0, 0, *placed['strtab'], 0, 0, 1, 0),
    struct.pack('<IIQQQQIIQQ', name_of('.shstrtab'), 3, 0, 0, *placed['shstrtab'], 0, 0, 1, 0),
    struct.pack('<IIQQQQIIQQ', name_of('.note.gnu.build-id'), 7, 2, 0, *placed['note'], 0, 0, 4, 0),
]
header = b'\x7fELF' + bytes([2, 1, 1, 0]) + bytes(8) + struct.pack(
    '<HHIQQQIHHHHHH', 2, 62, 1, image_text, 0, shoff, 0, 64, 0, 0, 64, len(sections), 4)
image = bytearray(header)
for at_, data in parts:
    image += bytes(at_ - len(image)) + data
image += bytes(shoff - len(image)) + b''.join(sections)
with open(os.path.join(out_dir, 'vmlinux'), 'wb') as f:
    f.write(image)
with open(os.path.join(out_dir, 'build_id_list'), 'w') as f:
    f.write(f'{build_id.hex()}=vmlinux\n')
print(f'{text:#x}')
