#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where the idle probe's slow rounds go, past the limit: probe_split.py BUILD_DIR [RUNS] [LANGS]

Under one 1 GiB memory cgroup (the benchmark's), as sibling leaves: the benchmark's probe (BUILD_DIR/bench/
spill_probe) with PROBE_SPLIT=1 (each round's split, see probe.c) every 2 s and every 250 ms over its 64 MiB, beside RUNS (default 6) runs of each configuration in turn:
auto and the 64M threshold at 3x the limit (seed.py, and seed.R when LANGS has r; default python), and `idle`
(a sleep as long as the last run). Prints per configuration the rounds' latency p50, p99 and worst, and for each
round over twice the idle rounds' worst its split: the probe's CPU time, its wait on the run queue (another task on
its CPU), the rest (the vCPU not running: the host's steal, or the probe asleep in a fault), and /proc/stat's steal
over the round and the probe's page faults. PROBE_SPLIT_KEEP=DIR keeps the rounds' logs there (DIR/probe-PERIOD.log, DIR/spans.log: each run's
configuration, start and end, CLOCK_MONOTONIC ns), to lay beside a trace. Needs root (cgroups). Take the machine lock: flock /tmp/memspace-bench.lock probe_split.py ..."""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import mscgroup  # noqa: E402

MiB = 1 << 20


def main():
    build = sys.argv[1]
    prog = os.path.join(build, "bench", "spill_probe")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    langs = sys.argv[3].split(",") if len(sys.argv) > 3 else ["python"]
    lib = os.path.join(build, "libmemspace.so")
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPACE_") and k != "LD_PRELOAD"}
    envs = {"auto": dict(base, LD_PRELOAD=lib, MEMSPACE_SPILL_THRESHOLD="auto"),
            "spill": dict(base, LD_PRELOAD=lib, MEMSPACE_SPILL_THRESHOLD="64M")}
    size = str(3 * 1024 * MiB)
    argv = {"python": ["/usr/bin/python3", os.path.join(os.path.dirname(HERE), "seed.py"), size, "2000"],
            "r": ["Rscript", "--vanilla", os.path.join(os.path.dirname(HERE), "seed.R"), size, "2000"]}
    configs = os.environ.get("MSB_CONFIGS", "auto,spill,idle").split(",")
    parent = mscgroup.Group("probe-split", 1024 * MiB)
    logs, procs, spans = {}, [], {c: [] for c in configs}
    try:
        for period in (2000, 250):
            g = parent.child(f"probe-{period}")
            keep = os.environ.get("PROBE_SPLIT_KEEP")
            logs[period] = os.path.join(keep, f"probe-{period}.log") if keep else f"/tmp/probe-split-{os.getpid()}-{period}.log"
            p = g.popen([prog, str(period), "64", logs[period]], stdout=subprocess.PIPE, text=True,
                        env=dict(os.environ, PROBE_SPLIT="1"))
            p.stdout.readline()
            procs.append(p)
        leaf = parent.child("bench")
        last = 5.0
        for r in range(runs):
            order = configs[r % len(configs):] + configs[:r % len(configs)]
            for c in order:
                for lang in langs if c != "idle" else ["-"]:
                    t0 = time.monotonic_ns()
                    if c == "idle":
                        time.sleep(last)
                    else:
                        rc, out, err, _ = leaf.run(argv[lang], timeout=300, env=envs[c])
                        if rc != 0:
                            print(f"{c} {lang}: exit {rc}: {err.strip()[-300:]}")
                    t1 = time.monotonic_ns()
                    if c != "idle":
                        last = (t1 - t0) / 1e9
                    spans[c].append((t0, t1))
                    time.sleep(1)
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
    finally:
        parent.remove()
    if os.environ.get("PROBE_SPLIT_KEEP"):
        with open(os.path.join(os.environ["PROBE_SPLIT_KEEP"], "spans.log"), "w") as f:
            for c, sp in spans.items():
                for a, b in sp:
                    f.write(f"{c} {a} {b}\n")
    hz = os.sysconf("SC_CLK_TCK")
    for period, log in logs.items():
        rounds = [tuple(int(x) for x in line.split()) for line in open(log)]  # start, latency, cpu, wait, steal, faults
        if not os.environ.get("PROBE_SPLIT_KEEP"):
            os.unlink(log)
        by = {c: [r for r in rounds if any(a <= r[0] and r[0] + r[1] <= b for a, b in spans[c])] for c in configs}
        idle_max = max((r[1] for r in by.get("idle", [])), default=0)
        print(f"probe every {period} ms (64 MiB): ms")
        for c in configs:
            lats = sorted(r[1] for r in by[c])
            if not lats:
                continue
            n = len(lats)
            print(f"  {c:<6} rounds {n:4d}  p50 {lats[n // 2] / 1e6:6.2f}  p99 {lats[min(int(n * .99), n - 1)] / 1e6:6.2f}  "
                  f"worst {lats[-1] / 1e6:6.2f}")
            for r in sorted(by[c], key=lambda r: -r[1])[:5]:
                if idle_max and r[1] > 2 * idle_max or c == "idle":
                    rest = r[1] - r[2] - r[3]
                    print(f"     {r[1] / 1e6:6.2f} = cpu {r[2] / 1e6:6.2f} + run-queue wait {r[3] / 1e6:6.2f} + rest "
                          f"{rest / 1e6:6.2f}   (steal over the round, all CPUs: {r[4] * 1000 // hz} ms; page faults {r[5]})")


if __name__ == "__main__":
    main()
