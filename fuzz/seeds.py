#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<target>/ (committed; rerun after changing an input format)."""
import os, random, sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

def write(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

# fuzz_parse: byte 0 % 4 == 0: a size string; else environment lines
sizes = ["0", "1", "4096", "4K", "4k", "2M", "1G", "3GiB", "5MB", "12B", "1T", " 64K ", "", "K", "-1", "1X",
         "1Gi", "99999999999999999999", "18446744073709551615", "18446744073709551616", "16777216T", "17179869184G",
         "0x10", "1 K", "1KiB", "1kib", "1mb"]
for i, s in enumerate(sizes):
    write("fuzz_parse", "size%02d" % i, b"\x00" + s.encode())
envs = [
    "MEMSPACE_CACHE=size\nMEMSPACE_PURGE_DELAY=-1\nMEMSPACE_SPACE_INITIAL=64M",
    "MEMSPACE_SPACE_EXPAND=1G\nMEMSPACE_SPACE_AT=firstalloc\nMEMSPACE_SPACE_INHERIT=yes",
    "MEMSPACE_SPILL_THRESHOLD=1MiB\nMEMSPACE_SPILL_DIR=/tmp\nMEMSPACE_HUGE_PAGES=2M",
    "MEMSPACE_SECURE=on\nMEMSPACE_SHOW_STATS=true\nMEMSPACE_VERBOSE=0\nMEMSPACE_FRAME_IDLE=500",
    "MEMSPACE_CACHE=7\nMEMSPACE_PURGE_DELAY=99999999999999999999\nMEMSPACE_SPACE_AT=later",
    "MEMSPACE_CACHE=\nMEMSPACE_CACHE=none\nMEMSPACE_SECURE=2",
    "\x00unlimited\n\x01-1\n\x02 16K \n\x09off\n\x0c86400001",
    "MEMSPACE_HUGE_PAGES=1G\nMEMSPACE_SPACE_INITIAL=9223372036854775808\nMEMSPACE_PURGE_DELAY=-",
]
for i, e in enumerate(envs):
    write("fuzz_parse", "env%02d" % i, b"\x01" + e.encode())

# fuzz_heap: op byte (op % 13), slot byte, then arguments; sizes are (class byte, u16)
rnd = random.Random(42)
def size_arg(cls, v):
    return bytes([cls, v & 0xff, (v >> 8) & 0xff])
heap = []
seq = b""
for slot in range(16):           # mallocs of every size class
    seq += bytes([0, slot]) + size_arg(slot % 8, rnd.randrange(65536))
for slot in range(16):           # realloc each, then free half
    seq += bytes([3, slot]) + size_arg((slot + 3) % 8, rnd.randrange(65536))
for slot in range(0, 16, 2):
    seq += bytes([5, slot])
heap.append(seq)
heap.append(b"".join(bytes([7, s, a]) + size_arg(1, 100) for s, a in enumerate(range(0, 23, 2))) + bytes([7, 30, 0x85]) + size_arg(0, 8))
heap.append(b"".join(bytes([2, s, 10]) + size_arg(3, 300 + s) for s in range(8)) + bytes([8, 1, 8, 2, 9, 0x40, 12, 0]))
heap.append(bytes([10, 0, 5]) + bytes([0, 1]) + size_arg(0x87, 60000) + bytes([10, 1, 9, 200]))
heap.append(bytes([11, 0, 0]) + b"".join(bytes([0, s]) + size_arg(0x87, 40000 + s) for s in range(6)) + bytes([9, 0x40]))
heap.append(bytes([11, 0, 1]) + b"".join(bytes([0, s]) + size_arg(6, 30000) for s in range(6)) + bytes([9, 0x40, 9, 0]) + bytes([5, 0, 5, 1, 9, 0x40]))
heap.append(bytes([0, 0]) + size_arg(0x87, 65535) + b"".join(bytes([3, 0]) + size_arg(0x87, v) for v in (100, 65535, 20000, 8)))
for i, s in enumerate(heap):
    write("fuzz_heap", "seq%02d" % i, s)

# fuzz_space: 3 config bytes (a: create_in when a%4==0, else initial 4K<<a%11; b: flags/expand; c: at/offset)
space = []
for a, b, c in ((5, 0, 0), (8, 4 | 8, 1), (0, 0, 3), (3, 1 | 2, 0), (10, 4 | 1, 1), (0, 0x40, 5)):
    seq = bytes([a, b, c])
    for slot in range(12):
        seq += bytes([0x80 | 0, slot]) + size_arg(slot % 7, rnd.randrange(65536))
    for slot in range(0, 12, 3):
        seq += bytes([0x80 | 5, slot])
    for slot in range(1, 12, 3):
        seq += bytes([0x80 | 3, slot]) + size_arg(3, rnd.randrange(65536))
    seq += bytes([2, 20, 4]) + size_arg(1, 50) + bytes([7, 21, 6]) + size_arg(1, 40) + bytes([7, 22, 0x81]) + size_arg(0, 8)
    seq += bytes([8, 1, 9, 0, 4, 10, 0, 11, 2, 12, 0, 1, 0, 3]) + size_arg(7, 50000) + bytes([13 | 0x80, 0])
    space.append(seq)
for i, s in enumerate(space):
    write("fuzz_space", "seq%02d" % i, s)
print("seed corpora written under", root)
