#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The 10-ms probe beside one benchmark run, in a 1 GiB memory cgroup (root):
  probe_beside.py SIZE_MIB [spill|plain|hog]  (env LIB: the library to preload for spill; LOG: the probe's rounds)
spill/plain: bench/spill/seed.py at SIZE_MIB; hog: a numpy program filling 512 MiB of plain memory 60 times.
Prints the run's figures and the probe's rounds, p50, p99 and max. For `perf sched record -k CLOCK_MONOTONIC -a`
around it: the probe's log uses CLOCK_MONOTONIC too, and probe_delays.py names what ran while the probe waited.
Not built or run by the project; used for docs/spill.md (the maintenance thread's yields)."""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "spill"))
import mscgroup  # noqa: E402

MiB = 1 << 20
size, config = int(sys.argv[1]) * MiB, sys.argv[2] if len(sys.argv) > 2 else "spill"
build = os.path.join(ROOT, "build")
log = os.environ.get("LOG", "/tmp/probe-beside.log")
env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPACE_") and k != "LD_PRELOAD"}
if config == "spill":
    env.update(LD_PRELOAD=os.environ.get("LIB", os.path.join(build, "libmemspace.so")),
               MEMSPACE_SPILL_THRESHOLD="64M", MEMSPACE_SPILL_DIR="/var/tmp")
argv = ["/usr/bin/python3", os.path.join(ROOT, "bench", "spill", "seed.py"), str(size), "2000"]
if config == "hog":
    argv = ["/usr/bin/python3", "-c", "import numpy as np; a=np.empty(2**26); [a.fill(i) for i in range(60)]"]
parent = mscgroup.Group("beside", 1024 * MiB)
try:
    p = parent.child("probe").popen([os.path.join(build, "bench", "spill_probe"), "10", "64", log],
                                    stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    time.sleep(0.5)
    rc, out, err, _ = parent.child("bench").run(argv, timeout=120, env=env)
    time.sleep(0.3)
    p.terminate()
    print(rc, out.strip(), err.strip()[-200:])
    print(p.communicate()[0].strip())
finally:
    parent.remove()
