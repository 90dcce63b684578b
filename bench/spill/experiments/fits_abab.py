#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Data that fits, plain against auto with the machine's drift taken out: fits_abab.py BUILD_DIR [LANG] [SLICES]

`memspace bench spill` judges auto at 0.5x the limit on rounds of separate runs, each configuration's phases
seconds apart from the other's, and a shared VM's load and host move between them. Here both programs are alive
at once, each in its own 1 GiB cgroup (the benchmark's limit: auto decides and samples as there), each holding
its 512 MiB vector, and they take turns: SLICES (default 20) slices of 100 ms of random reads each, A B B A A
B..., then the same for random writes, so that what the machine does in a second reaches both alike. The workers
are this file (--worker, numpy) and fits_abab.R; their batches are the benchmark's (200,000 accesses from a pool
of 2,000,000 indices). Prints per configuration the total accesses, wall and CPU seconds of each phase, and
each one's time per access over the first's (wall and CPU), per slice pair (median, range) and in total. Needs root
(cgroups). Take the machine lock: flock /tmp/memspace-bench.lock fits_abab.py ...
MSB_CONFIGS=plain,auto (default; also spill: the 64M threshold, heap: the library without spill, plainb and
autob: plain and auto again, the A/A checks of the method). The first configuration is the base of the ratios."""
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
SIZE, BATCH, POOL, SLICE_S = 512 * MiB, 200000, 2000000, 0.1


def worker():
    """holds the vector; answers 'r S' / 'w S' (a slice of S seconds) with 'ops wall_s cpu_s', 'q' quits"""
    import numpy as np
    n = SIZE // 8
    a = np.empty(n)
    a.fill(1.0)
    idx = np.random.default_rng(1).integers(0, n, (POOL // BATCH, BATCH))
    nb, j, s = len(idx), 0, 0.0
    print("ready", flush=True)
    for line in sys.stdin:
        op, dur = line.split()[0], float(line.split()[1]) if len(line.split()) > 1 else 0
        if op == "q":
            break
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        done = 0
        while True:
            if op == "r":
                s += float(a[idx[j % nb]].sum())
            else:
                a[idx[j % nb]] = 1.0
            j += 1
            done += 1
            t1 = time.perf_counter()
            if t1 - t0 >= dur:
                break
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
        print(f"{done * BATCH} {t1 - t0:.6f} {cpu:.6f}", flush=True)


def main():
    sys.path.insert(0, os.path.dirname(HERE))
    import mscgroup
    build, lang = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "python"
    slices = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    lib = os.path.join(build, "libmemspace.so")
    configs = os.environ.get("MSB_CONFIGS", "plain,auto").split(",")
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPACE_") and k != "LD_PRELOAD"}
    envs = {"plain": base, "plainb": base,
            "auto": dict(base, LD_PRELOAD=lib, MEMSPACE_SPILL_THRESHOLD="auto"),
            "autob": dict(base, LD_PRELOAD=lib, MEMSPACE_SPILL_THRESHOLD="auto"),
            "spill": dict(base, LD_PRELOAD=lib, MEMSPACE_SPILL_THRESHOLD="64M"),
            "heap": dict(base, LD_PRELOAD=lib)}
    argv = ([sys.executable, os.path.abspath(__file__), "--worker"] if lang == "python"
            else ["Rscript", "--vanilla", os.path.join(HERE, "fits_abab.R")])
    groups, procs = [], {}
    try:
        for c in configs:  # one after the other: the fills do not compete
            g = mscgroup.Group(f"abab-{c}", 1024 * MiB)
            groups.append(g)
            p = g.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=envs[c])
            if p.stdout.readline().strip() != "ready":
                raise SystemExit(f"{c}: the worker did not start")
            procs[c] = p
        res = {(c, op): [] for c in configs for op in "rw"}
        for op in "rw":
            for i in range(slices):
                order = configs if i % 2 == 0 else configs[::-1]  # A B, B A: each slice pair's order alternates
                for c in order:
                    procs[c].stdin.write(f"{op} {SLICE_S}\n")
                    procs[c].stdin.flush()
                    ops, wall, cpu = procs[c].stdout.readline().split()
                    res[(c, op)].append((int(ops), float(wall), float(cpu)))
        for c in configs:
            procs[c].stdin.write("q\n")
            procs[c].stdin.flush()
            procs[c].wait(timeout=30)
    finally:
        for g in groups:
            g.remove()
    ref = configs[0]
    print(f"{lang}, {SIZE // MiB} MiB, each in its own 1 GiB cgroup, {slices} slices of {SLICE_S * 1000:.0f} ms a phase, in turn")
    for op, name in (("r", "reads"), ("w", "writes")):
        for c in configs:
            v = res[(c, op)]
            ops, wall, cpu = (sum(x[i] for x in v) for i in range(3))
            print(f"  {name:<6} {c:<6} {ops:>10} accesses  {ops / wall / 1e6:7.2f} M/s wall  {ops / cpu / 1e6:7.2f} M/CPU-s  "
                  f"(wall {wall:.2f} s, CPU {cpu:.2f} s)")
        for c in configs[1:]:
            for k, what in ((1, "wall"), (2, "CPU")):
                each = sorted((b[k] / b[0]) / (a[k] / a[0]) for a, b in zip(res[(ref, op)], res[(c, op)]))
                tot = (sum(b[k] for b in res[(c, op)]) / sum(b[0] for b in res[(c, op)])) / \
                      (sum(a[k] for a in res[(ref, op)]) / sum(a[0] for a in res[(ref, op)]))
                print(f"  {name:<6} {c} / {ref} time per access ({what}): total {tot:.3f}x, slice pairs median "
                      f"{statistics.median(each):.3f}x [{each[0]:.2f}-{each[-1]:.2f}]")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker()
    else:
        main()
