# SPDX-License-Identifier: MIT
# Run by spill_scripts.py python_fds with libmemspace.so preloaded and a 64K spill threshold, under
# RLIMIT_NOFILE 20: the program closes every descriptor (os.closerange) while spilled blocks live, opens a file
# of its own (it takes spill's old number), frees and allocates spilled blocks and forks. Spill must leave the
# file and its descriptor alone, keep the spilled data, and the child's writes must stay the child's.
import os
import sys

path = sys.argv[1]
a = bytearray(b"A" * (1 << 20))
b = bytearray(b"B" * (3 << 20))
os.closerange(3, 1024)
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, b"Q" * (4 << 20))
del b  # a free: spill punched its old descriptor, now the program's file
c = bytearray(b"C" * (2 << 20))  # a new spilled block
pid = os.fork()
if pid == 0:
    a[0:4] = b"XXXX"
    c[-4:] = b"YYYY"
    os._exit(0 if a[0:4] == b"XXXX" else 1)
_, st = os.waitpid(pid, 0)
assert st == 0, f"child status {st}"
assert a[0:4] == b"AAAA" and a.count(b"A") == len(a), "the child's write reached the parent"
assert c[-4:] == b"CCCC", "the child's write reached the parent (new block)"
os.fstat(fd)  # still open
os.lseek(fd, 0, os.SEEK_SET)
data = b""
while True:
    chunk = os.read(fd, 1 << 20)
    if not chunk:
        break
    data += chunk
assert data == b"Q" * (4 << 20), f"the program's file was changed ({len(data)} bytes, {data.count(b'Q')} Q)"
del a, c
os.unlink(path)
print("ok python_fds")
