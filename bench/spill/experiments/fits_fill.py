#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Data that fits: where a fill's time goes, run by run. fits_fill.py BUILD_DIR [ROUNDS] [SIZE_MIB]

Runs bench/spill/seed.py (SIZE_MIB, default 512: half the benchmark's 1 GiB limit, the 0.5x cell) in a 1 GiB
memory cgroup, ROUNDS (default 7) rounds of MSB_CONFIGS (default plain,auto; also spill: the 64M threshold, heap:
the library without spill; old: auto with the library MSB_OLD_LIB, to compare two builds) in turn, the order rotating every round. Prints per run the fill's wall seconds,
page faults and system seconds (seed.py's own figures) beside the machine's counters over the run: the host's
steal (/proc/stat), the THP faults and fallbacks, direct compaction and reclaim (/proc/vmstat), and per
configuration the medians and each round's ratio to the first configuration. MSB_WARM=1: right before each run a
process touches and frees 1 GiB in 2 MiB pages (huge pages the host backs, freed less than the guest's page
reporting delay before the run's fill), to separate the host's backing of fresh memory from the allocator. Needs root (cgroups). Take the
machine lock: flock /tmp/memspace-bench.lock fits_fill.py ..."""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import mscgroup  # noqa: E402

MiB = 1 << 20
VMSTAT = ("thp_fault_alloc", "thp_fault_fallback", "compact_stall", "allocstall_normal", "allocstall_movable",
          "pgfault")


def counters():
    c = {}
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    c["steal_ms"] = int(cpu[8]) * 1000 // os.sysconf("SC_CLK_TCK")
    with open("/proc/vmstat") as f:
        for line in f:
            k, v = line.split()
            if k in VMSTAT:
                c[k] = int(v)
    return c


def warm():
    """touches 1 GiB advised MADV_HUGEPAGE (one byte per 4 KiB) and frees it (unmapped at the end of the call)"""
    import mmap
    m = mmap.mmap(-1, 1024 * MiB)
    m.madvise(mmap.MADV_HUGEPAGE)
    for off in range(0, len(m), 4096):
        m[off] = 1
    m.close()


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    size = (int(sys.argv[3]) if len(sys.argv) > 3 else 512) * MiB
    lib = os.path.join(build, "libmemspace.so")
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPACE_") and k != "LD_PRELOAD"}
    envs = {"plain": base, "auto": dict(base, LD_PRELOAD=lib, MEMSPACE_SPILL_THRESHOLD="auto"),
            "spill": dict(base, LD_PRELOAD=lib, MEMSPACE_SPILL_THRESHOLD="64M"), "heap": dict(base, LD_PRELOAD=lib),
            "old": dict(base, LD_PRELOAD=os.environ.get("MSB_OLD_LIB", lib), MEMSPACE_SPILL_THRESHOLD="auto")}
    configs = os.environ.get("MSB_CONFIGS", "plain,auto").split(",")
    argv = ["/usr/bin/python3", os.path.join(os.path.dirname(HERE), "seed.py"), str(size), os.environ.get("MSB_ACCESSES", "200000")]
    res = {c: [] for c in configs}
    g = mscgroup.Group("fits-fill", 1024 * MiB)
    try:
        for r in range(rounds):
            order = configs[r % len(configs):] + configs[:r % len(configs)]
            for c in order:
                if os.environ.get("MSB_WARM") == "1":
                    warm()
                c0 = counters()
                rc, out, err, _ = g.run(argv, timeout=120, env=envs[c])
                c1 = counters()
                d = dict(kv.split("=") for kv in out.split())
                d = {k: float(v) for k, v in d.items()}
                d.update({k: c1[k] - c0[k] for k in c0})
                res[c].append(d)
                print(f"round {r} {c:<6} alloc {d['alloc_s']:.3f} s  reads/s {d['read_ops_per_s']:.0f}  writes/s "
                      f"{d['write_ops_per_s']:.0f}  faults {d['fill_page_faults']:.0f}  sys "
                      f"{d['fill_sys_s']:.3f}  user {d['fill_user_s']:.3f}  | steal {d['steal_ms']} ms  thp "
                      f"{d['thp_fault_alloc']}/{d['thp_fault_fallback']} fallback  compact_stall {d['compact_stall']}  "
                      f"allocstall {d['allocstall_normal'] + d['allocstall_movable']}", flush=True)
    finally:
        g.remove()
    ref = configs[0]
    for c in configs:
        a = [d["alloc_s"] for d in res[c]]
        print(f"{c:<6} alloc median {statistics.median(a):.3f} s [{min(a):.3f}-{max(a):.3f}]  faults median "
              f"{statistics.median(d['fill_page_faults'] for d in res[c]):.0f}")
        if c != ref:
            x = sorted(b["alloc_s"] / a["alloc_s"] for a, b in zip(res[ref], res[c]))
            print(f"  {c}/{ref} per round: median {statistics.median(x):.3f}x [{x[0]:.2f}-{x[-1]:.2f}]")


if __name__ == "__main__":
    main()
