#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench/big_eh_frame.py OUT MIB: a static x86-64 executable that spins in one function, with an
# .eh_frame of MIB MiB of valid FDEs, out of pc order (what an outsider can make the daemon
# compile). Used by bench/service_latency.sh.
import struct, sys

out, mib = sys.argv[1], float(sys.argv[2])
BASE = 0x400000
text_off = 0x1000
code = b"\xeb\xfe"  # jmp .
text_size = 0x1000
eh_off = text_off + text_size
eh_vaddr = BASE + eh_off

# CIE: version 1, augmentation "zR", code align 1, data align -8, RA reg 16, aug len 1,
# FDE encoding pcrel|sdata4 (0x1b); initial: def_cfa rsp+8, offset ra at cfa-8.
cie_body = struct.pack("<IB", 0, 1) + b"zR\x00" + b"\x01" + b"\x78" + b"\x10" + b"\x01" + b"\x1b" \
    + b"\x0c\x07\x08" + b"\x90\x01"
while (len(cie_body) + 4) % 8:
    cie_body += b"\x00"
cie = struct.pack("<I", len(cie_body)) + cie_body
fde_len = 4 + 4 + 4 + 1 + 3  # cie ptr, pc_begin, pc_range, aug len, pad (DW_CFA_nop)
fde_total = 4 + fde_len
n = int(mib * 1048576) // fde_total
pos = len(cie)
text_vaddr = BASE + text_off
# Every FDE covers a 1-byte range inside the text page (distinct starts, many overlapping pages).
buf = bytearray(len(cie) + n * fde_total + 4)
buf[: len(cie)] = cie
for i in range(n):
    at = pos
    cie_ptr = at + 4  # distance from this field back to the CIE at offset 0
    pc = text_vaddr + (i % (text_size - 16))
    pc_rel = pc - (eh_vaddr + at + 8)
    struct.pack_into("<IIiIB3s", buf, at, fde_len, cie_ptr, pc_rel, 1, 0, b"\x00\x00\x00")
    pos += fde_total
struct.pack_into("<I", buf, pos, 0)  # terminator
eh = bytes(buf)
eh_size = len(eh)

shstr = b"\x00.text\x00.eh_frame\x00.shstrtab\x00"
shstr_off = eh_off + eh_size
sh_off = (shstr_off + len(shstr) + 7) & ~7
ehdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + b"\x00" * 9, 2, 62, 1,
                   text_vaddr, 64, sh_off, 0, 64, 56, 2, 64, 4, 3)
ph_text = struct.pack("<IIQQQQQQ", 1, 5, 0, BASE, BASE, text_off + text_size, text_off + text_size,
                      0x1000)
ph_eh = struct.pack("<IIQQQQQQ", 1, 4, eh_off, eh_vaddr, eh_vaddr, eh_size, eh_size, 0x1000)
sh_null = b"\x00" * 64
sh_text = struct.pack("<IIQQQQIIQQ", 1, 1, 6, text_vaddr, text_off, text_size, 0, 0, 16, 0)
sh_eh = struct.pack("<IIQQQQIIQQ", 7, 1, 2, eh_vaddr, eh_off, eh_size, 0, 0, 8, 0)
sh_str = struct.pack("<IIQQQQIIQQ", 17, 3, 0, 0, shstr_off, len(shstr), 0, 0, 1, 0)
with open(out, "wb") as f:
    f.write(ehdr + ph_text + ph_eh)
    f.seek(text_off)
    f.write(code.ljust(text_size, b"\xcc"))
    f.write(eh)
    f.write(shstr)
    f.seek(sh_off)
    f.write(sh_null + sh_text + sh_eh + sh_str)
print(n, "FDEs,", eh_size, "bytes of .eh_frame")
