# SPDX-License-Identifier: MIT
"""The seed's benchmark in Python (numpy): seed.py BYTES ACCESSES [FILE] [--window S]
Allocates a double vector of BYTES (malloc through the first write of every page), then ACCESSES random reads
and ACCESSES random writes. With FILE: the same on a plain mmap of that file (the limit). With --window S (S > 0)
each phase is a window of at least S seconds instead: batches of ACCESSES random reads (one gather each), then
batches of random writes, until the window has passed; the batches' indices come from a pool of POOL indices
drawn beforehand (their cache lines, ~128 MB, are out of the 32 MB cache by the time a batch comes round again),
and the rates count every batch. Prints one line:
alloc_s=.. read_ops_per_s=.. write_ops_per_s=.. and what the process spent beside the wall times (getrusage,
read outside the timed parts): fill_page_faults=.. fill_user_s=.. fill_sys_s=.. (the allocation and fill),
read_page_faults=.. write_page_faults=.. read_cpu_s=.. write_cpu_s=.. (the gathers' and scatters' own: page
faults of their temporaries' fresh pages, user + system seconds), and the phases' wall seconds read_s=..
write_s=..; where the kernel shows them, the fill's split by thread: fill_main_cpu_s=.. fill_main_wait_s=.. (the
program's own thread on a CPU, and runnable but waiting for one: /proc/self/task/PID/schedstat), fill_maint_cpu_s=..
and fill_maint_wait_s=.. (memspace's maintenance thread on a CPU, spill's write-back passes, and runnable but
waiting for one: the rest of the fill it slept, on its period or on the disk) and fill_dirty_bytes=.. (the dirty page cache
of the process's memory cgroup right after the fill: the write-back's backlog)."""
import os
import resource
import sys
import time
import numpy as np

args = sys.argv[1:]
window = 0.0
if "--window" in args:
    i = args.index("--window")
    window = float(args[i + 1])
    del args[i:i + 2]
nbytes, k = int(args[0]), int(args[1])
n = nbytes // 8
POOL = 2000000


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_minflt + r.ru_majflt, r.ru_utime, r.ru_stime


def threads():
    """(the program's thread's on-CPU ns, its run-queue wait ns, the maintenance thread's on-CPU ns and run-queue
    wait ns), or None where the kernel keeps no schedstat"""
    main = wait = maint = maint_wait = 0
    try:
        for t in os.listdir("/proc/self/task"):
            try:
                run, queued = (int(v) for v in open(f"/proc/self/task/{t}/schedstat").read().split()[:2])
                if int(t) == os.getpid():
                    main, wait = run, queued
                elif open(f"/proc/self/task/{t}/comm").read().strip() == "memspace-maint":
                    maint += run
                    maint_wait += queued
            except OSError:
                pass  # (a thread that ended meanwhile)
    except (OSError, ValueError):
        return None
    return main, wait, maint, maint_wait


def cgroup_dirty():
    """the dirty page cache bytes of this process's memory cgroup (v1 total_dirty, v2 file_dirty), or None"""
    try:
        for line in open("/proc/self/cgroup"):
            hid, ctrls, path = line.rstrip("\n").split(":", 2)
            v1 = "memory" in ctrls.split(",")
            if v1 or (hid == "0" and ctrls == ""):
                stat = (f"/sys/fs/cgroup/memory{path}" if v1 else f"/sys/fs/cgroup{path}").rstrip("/") + "/memory.stat"
                if os.path.exists(stat):
                    vals = dict(l.split() for l in open(stat))
                    key = "total_dirty" if v1 else "file_dirty"
                    if key in vals:
                        return int(vals[key])
    except (OSError, ValueError):
        pass
    return None


th0 = threads()
u0 = usage()
t0 = time.perf_counter()
if len(args) > 2:
    # the limit: a plain shared mapping of a file. Written in 64 MiB steps, each followed by
    # sync_file_range(WRITE) (as spill's write-back does): without it a cgroup v1 limit OOM-kills on dirty pages.
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    a = np.memmap(args[2], dtype=np.float64, mode="w+", shape=(n,))
    fd = os.open(args[2], os.O_RDWR)
    step = 8 << 20
    for i in range(0, n, step):
        a[i:i + step] = 1.0
        libc.sync_file_range(fd, ctypes.c_longlong(i * 8), ctypes.c_longlong(step * 8), 2)
else:
    a = np.empty(n, dtype=np.float64)
    a.fill(1.0)
t1 = time.perf_counter()
u1 = usage()
th1 = threads()
dirty = cgroup_dirty()
split = ""
if th0 and th1:
    split = (f"fill_main_cpu_s={(th1[0] - th0[0]) / 1e9:.6f} fill_main_wait_s={(th1[1] - th0[1]) / 1e9:.6f} "
             f"fill_maint_cpu_s={(th1[2] - th0[2]) / 1e9:.6f} fill_maint_wait_s={(th1[3] - th0[3]) / 1e9:.6f} ")
if dirty is not None:
    split += f"fill_dirty_bytes={dirty} "
rng = np.random.default_rng(1)
# the batches: one of k indices, or (a window) enough for POOL indices, each phase walking them in turn
nb = max(1, -(-POOL // k)) if window > 0 else 1
ri = rng.integers(0, n, (nb, k)) if window > 0 else rng.integers(0, n, k).reshape(1, k)
u2 = usage()
s, reads = 0.0, 0
t2 = time.perf_counter()
while True:
    s += float(a[ri[reads % nb]].sum())
    reads += 1
    t3 = time.perf_counter()
    if t3 - t2 >= window:
        break
u3 = usage()
wi = ri if window > 0 else rng.integers(0, n, k).reshape(1, k)
u4 = usage()
writes = 0
t4 = time.perf_counter()
while True:
    a[wi[writes % nb]] = 2.0
    writes += 1
    t5 = time.perf_counter()
    if t5 - t4 >= window:
        break
u5 = usage()
assert s == reads * k, "wrong sum"
print(f"alloc_s={t1 - t0:.6f} read_ops_per_s={reads * k / (t3 - t2):.1f} write_ops_per_s={writes * k / (t5 - t4):.1f} "
      f"fill_page_faults={u1[0] - u0[0]} fill_user_s={u1[1] - u0[1]:.6f} fill_sys_s={u1[2] - u0[2]:.6f} "
      f"read_page_faults={u3[0] - u2[0]} write_page_faults={u5[0] - u4[0]} "
      f"read_cpu_s={u3[1] + u3[2] - u2[1] - u2[2]:.6f} write_cpu_s={u5[1] + u5[2] - u4[1] - u4[2]:.6f} "
      f"{split}read_s={t3 - t2:.6f} write_s={t5 - t4:.6f}", flush=True)
