# SPDX-License-Identifier: MIT
"""Many mid-size blocks in Python: midsize.py MIB ACCESSES
Holds MIB bytearrays of 1 MiB in a dict (a marker written in every page: malloc through the first write of each
page), then ACCESSES random page reads and ACCESSES random page writes across them. A fixed spill threshold above
1 MiB leaves every block in RAM (killed past a cgroup's limit); auto spills them once the budget runs short.
Prints one line: alloc_s=.. read_ops_per_s=.. write_ops_per_s=.."""
import random
import sys
import time

MiB, PAGE = 1 << 20, 4096
n, k = int(sys.argv[1]), int(sys.argv[2])
marks = bytes(range(256)) * (MiB // PAGE // 256)
t0 = time.perf_counter()
d = {}
for i in range(n):
    b = bytearray(MiB)
    b[::PAGE] = marks
    d[i] = b
t1 = time.perf_counter()
rnd = random.Random(1)
s = 0
for _ in range(k):
    s += d[rnd.randrange(n)][rnd.randrange(MiB // PAGE) * PAGE]
t2 = time.perf_counter()
for _ in range(k):
    d[rnd.randrange(n)][rnd.randrange(MiB // PAGE) * PAGE + 1] = 7
t3 = time.perf_counter()
bad = sum(1 for i in range(0, n, max(1, n // 64)) if d[i][::PAGE] != marks)
if bad:
    print(f"FAIL {bad} blocks lost their markers")
    sys.exit(1)
print(f"alloc_s={t1 - t0:.6f} read_ops_per_s={k / (t2 - t1):.1f} write_ops_per_s={k / (t3 - t2):.1f}", flush=True)
