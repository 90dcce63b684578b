# SPDX-License-Identifier: MIT
"""hold.py MIB: holds MIB MiB of float64 in numpy arrays (allocated, written, then every value verified)."""
import sys
import numpy as np

mib = int(sys.argv[1])
chunk = 1 << 20                      # elements per verification step (8 MiB of temporaries)
n = mib * (1 << 20) // 8
a = np.empty(n, dtype=np.float64)    # one big block: spilled above the threshold
for i in range(0, n, chunk):
    a[i:i + chunk] = np.arange(i, min(i + chunk, n), dtype=np.float64)
bad = 0
for i in range(0, n, chunk):
    bad += int(np.count_nonzero(a[i:i + chunk] != np.arange(i, min(i + chunk, n), dtype=np.float64)))
if bad:
    print(f"FAIL {bad} wrong values")
    sys.exit(1)
print(f"ok python: {mib} MiB held and verified")
