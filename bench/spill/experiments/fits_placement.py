#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Data that fits, R: the vector's physical placement beside each run's random reads.
fits_placement.py BUILD_DIR [ROUNDS]   (MSB_CONFIGS=plain,auto by default; also spill, plainb: plain again)

Runs bench/spill/seed.R at 0.5x a 1 GiB cgroup (the benchmark's pairs: 512 MiB, windows of 0.5 s of batches of
200,000 accesses), the configurations in turn, the order rotating every round. Between the fill and the timed
phases the R program runs this file (--pagemap PID), which reads the vector's page frames from /proc/PID/pagemap
(root: others read zeros) and prints the share of its 4 KiB pages that lie physically right after the one
before ("adjacent") and how many 2 MiB physical frames they touch. Prints per run the placement, the read and
write phases' CPU nanoseconds per access and the read phase's page faults per batch, then per configuration the
medians, each configuration's CPU per access over the first one's in each round (median, range) and the
correlation of the read CPU per access with the adjacency over all runs. Take the machine lock:
flock /tmp/memspace-bench.lock fits_placement.py build 12"""
import os
import statistics
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
MiB = 1 << 20
BATCH = 200000


def pagemap(pid):
    """the largest read-write mapping of pid (the vector): adjacency and 2 MiB frames of its resident pages"""
    best = (0, 0)
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if fields[1].startswith("rw") and hi - lo > best[1] - best[0]:
                best = (lo, hi)
    n = (best[1] - best[0]) // 4096
    with open(f"/proc/{pid}/pagemap", "rb") as pm:
        pm.seek(best[0] // 4096 * 8)
        entries = struct.unpack(f"{n}Q", pm.read(n * 8))
    pfns = [e & ((1 << 55) - 1) if e >> 63 else None for e in entries]
    present = [p for p in pfns if p]
    adj = sum(1 for a, b in zip(pfns, pfns[1:]) if a and b and b == a + 1)
    print(f"adj={adj / max(1, len(present)):.4f} frames2m={len(set(p >> 9 for p in present))} pages={len(present)}")


def main():
    import mscgroup
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    configs = os.environ.get("MSB_CONFIGS", "plain,auto").split(",")
    lib = os.path.join(build, "libmemspace.so")
    seed = open(os.path.join(os.path.dirname(HERE), "seed.R")).read()
    hook = (f'place <- system(sprintf("env -u LD_PRELOAD /usr/bin/python3 {os.path.abspath(__file__)} --pagemap %d",'
            ' Sys.getpid()), intern = TRUE)\n')
    mark = "c1 <- proc.time(); f1 <- faults()\n"
    if mark not in seed:
        sys.exit("seed.R changed: no line to run the pagemap reader after")
    seed = seed.replace(mark, mark + hook).replace('cat(sprintf("alloc_s', 'cat(place, ""); cat(sprintf("alloc_s', 1)
    script = tempfile.NamedTemporaryFile("w", suffix=".R", delete=False)
    script.write(seed)
    script.close()

    def env(config):
        e = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPACE_") and k != "LD_PRELOAD"}
        if config.startswith("auto"):
            e.update(LD_PRELOAD=lib, MEMSPACE_SPILL_THRESHOLD="auto", MEMSPACE_SPILL_DIR="/var/tmp")
        elif config.startswith("spill"):
            e.update(LD_PRELOAD=lib, MEMSPACE_SPILL_THRESHOLD="64M", MEMSPACE_SPILL_DIR="/var/tmp")
        return e

    parent = mscgroup.Group("fits-placement", 1024 * MiB)
    runs = {c: [] for c in configs}
    try:
        for i in range(rounds):
            for config in configs[i % len(configs):] + configs[:i % len(configs)]:
                g = parent.child(f"{config}-{i}")
                rc, out, err, _ = g.run(["Rscript", "--vanilla", script.name, str(512 * MiB), str(BATCH), "0.5"],
                                        env=env(config), timeout=120)
                g.remove()
                parent.children.remove(g)
                d = {k: float(v) for k, v in (t.split("=", 1) for t in out.split() if "=" in t)}
                if rc or "read_s" not in d:
                    sys.exit(f"{config}: exit {rc}: {err.strip()[-300:]}")
                reads, writes = d["read_ops_per_s"] * d["read_s"], d["write_ops_per_s"] * d["write_s"]
                d.update(round=i, r_ns=d["read_cpu_s"] / reads * 1e9, w_ns=d["write_cpu_s"] / writes * 1e9,
                         faults=d["read_page_faults"] / (reads / BATCH))
                runs[config].append(d)
                print(f"round {i:2} {config:6} adjacent {d['adj']:.2f} frames2m {d['frames2m']:5.0f}  read cpu "
                      f"{d['r_ns']:5.1f} ns/access (faults/batch {d['faults']:.0f})  write cpu {d['w_ns']:5.1f}",
                      flush=True)
    finally:
        parent.remove()
        os.unlink(script.name)
    med = statistics.median
    for c in configs:
        print(f"{c:6} medians: adjacent {med(d['adj'] for d in runs[c]):.2f}, read cpu "
              f"{med(d['r_ns'] for d in runs[c]):.1f} ns/access, write cpu {med(d['w_ns'] for d in runs[c]):.1f}")
    for c in configs[1:]:
        for m in ("r_ns", "w_ns"):
            r = sorted(a[m] / b[m] for a, b in zip(runs[c], runs[configs[0]]))
            print(f"{c}/{configs[0]} {'read' if m == 'r_ns' else 'write'} cpu per access: median {med(r):.3f}, "
                  f"range {r[0]:.2f}-{r[-1]:.2f}")
    pts = [(d["adj"], d["r_ns"]) for c in configs for d in runs[c]]
    if len(pts) > 2:
        ma, mr = statistics.mean(p[0] for p in pts), statistics.mean(p[1] for p in pts)
        sa = sum((p[0] - ma) ** 2 for p in pts) ** 0.5
        sr = sum((p[1] - mr) ** 2 for p in pts) ** 0.5
        if sa and sr:
            print(f"correlation of read cpu per access with adjacency: "
                  f"{sum((p[0] - ma) * (p[1] - mr) for p in pts) / (sa * sr):.2f} ({len(pts)} runs)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pagemap"]:
        pagemap(int(sys.argv[2]))
    else:
        main()
