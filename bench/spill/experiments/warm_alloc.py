#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Experiment behind docs/spill.md "Data that fits": the allocation cost of spill itself, apart from a VM guest's
host. numpy's np.empty(n).fill(1.0) of SIZE_MIB, ROUNDS times in one process (each array freed before the
next): from the second round on, the pages come from memory the process itself just freed (warm in the host),
so plain and spill compare as on bare metal. Runs plain, then spill in each DIR given (default /var/tmp).
Not built; no cgroup (the data fits). Usage: warm_alloc.py SIZE_MIB ROUNDS [BUILD_DIR [DIR...]]
      or: warm_alloc.py --child SIZE_MIB ROUNDS"""
import os
import statistics
import subprocess
import sys
import time

if sys.argv[1] == "--child":
    import numpy as np
    n, out = int(sys.argv[2]) * (1 << 20) // 8, []
    for _ in range(int(sys.argv[3])):
        t0 = time.perf_counter()
        a = np.empty(n)
        a.fill(1.0)
        out.append(time.perf_counter() - t0)
        del a
    print(" ".join(f"{x:.4f}" for x in out))
    sys.exit(0)

size, rounds = sys.argv[1], sys.argv[2]
build = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "../../../build")
dirs = sys.argv[4:] or ["/var/tmp"]
base = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPACE_") and k != "LD_PRELOAD"}
runs = [("plain", base)] + [(f"spill {d}", dict(base, LD_PRELOAD=os.path.join(build, "libmemspace.so"),
                                                 MEMSPACE_SPILL_THRESHOLD="64M", MEMSPACE_SPILL_DIR=d)) for d in dirs]
for name, env in runs:
    out = subprocess.run([sys.executable, __file__, "--child", size, rounds], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    t = [float(x) for x in out]
    print(f"{name:<24} first {t[0]:.3f} s, then median {statistics.median(t[1:]):.3f} s  ({' '.join(out)})")
