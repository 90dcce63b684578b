#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""auto against the 64M threshold past the limit, in turn: auto_past_limit.py BUILD_DIR [ROUNDS] [OUT.csv]

Runs the spill benchmark's seed programs (seed.py, seed.R) at 1.5x and 3x a 1 GiB cgroup limit under `auto` and
`spill` (MEMSPACE_SPILL_THRESHOLD=64M), the two configurations of each (language, size) next to each other with
their order alternating every round, with the benchmark's two probes beside them as sibling leaves (as in
`memspace bench spill`'s sweeps, which run each configuration's sizes minutes apart, once). Needs root (cgroups).
Take the machine lock: flock /tmp/memspace-bench.lock auto_past_limit.py ...

Beside the wall times (alloc_s) it records, per run, figures that do not depend on the host's speed: the
program's own rusage of the fill (fill_page_faults, fill_user_s, fill_sys_s, from the seed), the whole process's
rusage from wait4 (blocks written: ru_oublock, counted by the kernel when a page is dirtied; major faults;
voluntary and involuntary context switches), the leaf cgroup's memory.stat events (pgmajfault, pgpgout,
workingset_refault_file, memory.max_usage_in_bytes) and the library's exit
statistics (MEMSPACE_SHOW_STATS: write-back passes, full and urgent ones, write-behind blocks and waits, auto's
samples). Prints per (language, size, configuration) the median and range of each figure, and per round auto's
allocation time over the threshold's (the median of the rounds' ratios is the comparable figure).
MSB_FACTORS=1.5,3 MSB_LANGS=python,r MSB_CONFIGS=auto,spill choose the runs; MSB_BLOCK_MIB=N allocates the data as
N-MiB numpy arrays instead of one vector. More configurations: plain (no library) and heap (the library without
spill) for the data-fits size, spillb (the 64M threshold again: an A/A check of the method), autoENV (auto with
ENV=1 in the environment, for a bisecting build), CONFIG+VAR (any of them with VAR=1 in the environment: an
experimental switch measured under both configurations); the last configuration is the base of the ratios.
MSB_VERBOSE=all gives every configuration auto's MEMSPACE_VERBOSE=1; MSB_PROBES=0 runs without the probes;
MSB_SEED_R=experiments/seed_threads.R splits the fill's CPU by thread; MSB_ACCESSES=N (default 2000).
With the probes it prints, per configuration, the p50, p99 and worst of each probe's rounds that overlap its runs."""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import mscgroup  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
OUT = sys.argv[3] if len(sys.argv) > 3 else None
LIB = os.environ.get("MSB_LIB") or os.path.join(BUILD, "libmemspace.so")
PROBE = os.path.join(BUILD, "bench", "spill_probe")
PY = "/usr/bin/python3"
MiB = 1 << 20
LIMIT = 1024 * MiB
FACTORS = [float(f) for f in os.environ.get("MSB_FACTORS", "1.5,3").split(",")]
LANGS = os.environ.get("MSB_LANGS", "python,r").split(",")
CONFIGS = os.environ.get("MSB_CONFIGS", "auto,spill").split(",")
SPILL_DIR = os.environ.get("MEMSPACE_SPILL_DIR", "/var/tmp")
STATS_DIR = f"/tmp/auto-past-limit-{os.getpid()}"
PROBE_LOG = STATS_DIR + "-{}.log"  # each probe's rounds (start, latency), written when it ends
STAT_KEYS = ("spill_writebacks", "spill_writebacks_full", "spill_writebacks_urgent", "spill_write_behind",
             "spill_write_behind_waits", "spill_advice_switches", "spill_auto_samples", "spill_moves",
             "spill_blocks", "syscalls")


def env_for(config):
    """config's environment; CONFIG+VAR: config's with VAR=1"""
    config, _, var = config.partition("+")
    e = env_for_base(config)
    if var:
        e[var] = "1"
    return e


def env_for_base(config):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMSPACE_") and k != "LD_PRELOAD"}
    if config == "plain":  # no library (the data-fits target's base)
        return e
    if config == "heap":  # the library without spill
        e.update(LD_PRELOAD=LIB, MEMSPACE_SHOW_STATS="1", MEMSPACE_STATS_FILE=os.path.join(STATS_DIR, f"{config}-%p"))
        return e
    if config.startswith("auto") and config != "auto":  # autoENV: auto with ENV=1 too (a bisecting build's switch)
        e[config[4:].upper()] = "1"
    thr = "auto" if config.startswith("auto") else {"spill": "64M", "spillb": "64M"}.get(config, config)  # spillb: an A/A twin
    e.update(LD_PRELOAD=LIB, MEMSPACE_SPILL_THRESHOLD=thr, MEMSPACE_SPILL_DIR=SPILL_DIR, MEMSPACE_SHOW_STATS="1",
             MEMSPACE_STATS_FILE=os.path.join(STATS_DIR, f"{config}-%p"))
    if config.startswith("auto") or os.environ.get("MSB_VERBOSE") == "all":  # all: every configuration (the same stderr)
        e["MEMSPACE_VERBOSE"] = "1"
    return e


# MSB_BLOCK_MIB=N: the data as blocks of N MiB (numpy arrays, each filled after its allocation; Python only)
# instead of one vector, where auto keeps the first blocks in RAM until its mark and spills the rest
BLOCK_MIB = int(os.environ.get("MSB_BLOCK_MIB", "0"))
BLOCKS_PROGRAM = """import resource, sys, time
import numpy as np
total, block = int(sys.argv[1]), int(sys.argv[2]) << 20
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
keep = []
for i in range(total // block):
    a = np.empty(block // 8)
    a.fill(1.0)
    keep.append(a)
t1 = time.perf_counter()
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(f"alloc_s={t1 - t0:.6f} fill_page_faults={r1.ru_minflt + r1.ru_majflt - r0.ru_minflt - r0.ru_majflt} "
      f"fill_user_s={r1.ru_utime - r0.ru_utime:.6f} fill_sys_s={r1.ru_stime - r0.ru_stime:.6f}")
"""


# MSB_SEED_R=FILE: another R seed (experiments/seed_threads.R splits the fill's CPU by thread); MSB_ACCESSES=N
SEED_R = os.environ.get("MSB_SEED_R", os.path.join(os.path.dirname(HERE), "seed.R"))


def argv_for(lang, size):
    k = int(os.environ.get("MSB_ACCESSES", "2000"))  # the benchmark's default accesses from the limit up
    if BLOCK_MIB:
        return [PY, "-c", BLOCKS_PROGRAM, str(size), str(BLOCK_MIB)]
    if lang == "python":
        return [PY, os.path.join(os.path.dirname(HERE), "seed.py"), str(size), str(k)]
    return ["Rscript", "--vanilla", SEED_R, str(size), str(k)]


def parse(text):
    """the seed's figures (name=number)"""
    return {k: float(v) for k, v in re.findall(r"(\w+)=([-+0-9.eE]+)(?=\s|$)", text)}


def read_int(path):
    try:
        return int(open(path).read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def leaf_stat(path):
    d = {}
    try:
        for line in open(os.path.join(path, "memory.stat")):
            k, v = line.split()
            d[k] = int(v)
    except OSError:
        pass
    return d


def lib_stats(pid_files):
    """the library's exit statistics, summed over the run's processes (Rscript starts R)"""
    d = {}
    for f in pid_files:
        if os.path.basename(f) in ("out", "err"):
            continue
        for line in open(f):
            m = re.match(r"\s*(\w+)\s+(\d+)", line)
            if m and m.group(1) in STAT_KEYS:
                d[m.group(1)] = d.get(m.group(1), 0) + int(m.group(2))
    return d


def run_one(parent, lang, size, config):
    leaf = parent.child(f"exp-{lang}-{config}")
    for f in os.listdir(STATS_DIR):
        os.unlink(os.path.join(STATS_DIR, f))
    t0 = time.time()
    with open(os.path.join(STATS_DIR, "out"), "w+") as fo, open(os.path.join(STATS_DIR, "err"), "w+") as fe:
        p = subprocess.Popen(argv_for(lang, size), preexec_fn=leaf.preexec(), env=env_for(config), stdout=fo,
                             stderr=fe)
        _, status, ru = os.wait4(p.pid, 0)  # the process's own rusage (the probes are not our children)
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    wall = time.time() - t0
    d = parse(out)
    d.update(oublock_mib=ru.ru_oublock * 512 / MiB, inblock_mib=ru.ru_inblock * 512 / MiB, majflt=ru.ru_majflt,
             nvcsw=ru.ru_nvcsw, nivcsw=ru.ru_nivcsw, user_s=ru.ru_utime, sys_s=ru.ru_stime)
    st = leaf_stat(leaf.path)
    d["leaf_pgmajfault"] = st.get("total_pgmajfault", st.get("pgmajfault", 0))
    d["leaf_pgpgout"] = st.get("total_pgpgout", 0)
    d["leaf_refault_file"] = st.get("total_workingset_refault_file", st.get("workingset_refault_file", 0))
    d["leaf_max_usage_mib"] = read_int(os.path.join(leaf.path, "memory.max_usage_in_bytes")) / MiB
    d["wall_s"] = wall
    d.update(lib_stats([os.path.join(STATS_DIR, f) for f in os.listdir(STATS_DIR)]))
    m = [int(x) for x in re.findall(r"spilling begins .*?\(counted (\d+) MiB", err)]
    if m:
        d["began_mib"] = max(m)
    parent.children.remove(leaf)
    leaf.remove()
    d["rc"] = p.returncode
    return d


def main():
    os.makedirs(STATS_DIR, exist_ok=True)
    parent = mscgroup.Group("exp-past", LIMIT)
    probes = []
    try:
        # MSB_PROBES=0: none (the benchmark's data-fits rounds run without them)
        for name, period in (("probe-idle", 2000), ("probe-10ms", 10)) if os.environ.get("MSB_PROBES") != "0" else ():
            g = parent.child(name)
            pr = g.popen([PROBE, str(period), "64", PROBE_LOG.format(name)], stdout=subprocess.PIPE, text=True)
            pr.stdout.readline()
            probes.append((name, pr))
        runs = {}  # (lang, size, config) -> [figures]
        spans = {}  # config -> [(start, end) of each run, CLOCK_MONOTONIC ns], to attribute the probes' rounds
        csv = open(OUT, "w") if OUT else None
        if csv:
            csv.write("round,lang,size,config,metric,value\n")
        for r in range(ROUNDS):
            for lang in LANGS:
                for f in FACTORS:
                    size = int(LIMIT * f)
                    order = CONFIGS if r % 2 == 0 else CONFIGS[::-1]
                    for config in order:
                        t0 = time.monotonic_ns()
                        d = run_one(parent, lang, size, config)
                        spans.setdefault(config, []).append((t0, time.monotonic_ns()))
                        runs.setdefault((lang, f, config), []).append(d)
                        print(f"round {r} {lang} {f}x {config}: alloc {d.get('alloc_s', -1):.3f} s, user "
                              f"{d.get('fill_user_s', -1):.3f} sys {d.get('fill_sys_s', -1):.3f} faults "
                              f"{d.get('fill_page_faults', -1):.0f} majflt(leaf) {d['leaf_pgmajfault']} rc {d['rc']}", flush=True)
                        if csv:
                            for k, v in sorted(d.items()):
                                csv.write(f"{r},{lang},{size},{config},{k},{v}\n")
                            csv.flush()
        print("\nmedian [min-max] per configuration:")
        keys = ["alloc_s", "fill_user_s", "fill_sys_s", "fill_page_faults", "leaf_pgmajfault", "leaf_pgpgout",
                "leaf_refault_file", "leaf_max_usage_mib"] + list(STAT_KEYS) + ["began_mib"]
        for (lang, f, config), rs in sorted(runs.items()):
            print(f"{lang} {f}x {config}:")
            extra = sorted({k for x in rs for k in x} - set(keys) - {"rc", "oublock_mib"})
            for k in keys + extra + ["oublock_mib", "inblock_mib", "majflt", "nvcsw", "nivcsw", "user_s", "sys_s"]:
                v = sorted(x[k] for x in rs if k in x)
                if v:
                    print(f"   {k:<28} {v[len(v) // 2]:>12.3f} [{v[0]:.3f}-{v[-1]:.3f}]")
        base = CONFIGS[-1]
        print(f"\neach configuration over {base}, per round (median of the rounds' ratios [range] (each)):")
        for lang in LANGS:
            for f in FACTORS:
                for config in CONFIGS[:-1]:
                    a, s = runs.get((lang, f, config), []), runs.get((lang, f, base), [])
                    for m, inv in (("alloc_s", False), ("read_ops_per_s", True), ("write_ops_per_s", True),
                                   ("fill_sys_s", False)):
                        rat = sorted((y[m] / x[m]) if inv else (x[m] / y[m]) for x, y in zip(a, s)
                                     if x.get(m) and y.get(m))
                        if rat:
                            print(f"  {lang} {f}x {config} {m}: {rat[len(rat) // 2]:.3f}x [{rat[0]:.3f}-{rat[-1]:.3f}] "
                                  f"({' '.join(f'{x:.2f}' for x in rat)})")
        for name, pr in probes:
            pr.terminate()
            pr.wait()
            rounds = [[float(x) for x in line.split()[:2]] for line in open(PROBE_LOG.format(name))]
            for config, sp in spans.items():
                lats = sorted(lat for t0, lat in rounds if any(t0 < b and t0 + lat > a for a, b in sp))
                if lats:
                    print(f"{name} during {config}'s runs: {len(lats)} rounds, p50 {lats[len(lats) // 2] / 1e6:.2f} ms, "
                          f"p99 {lats[min(int(len(lats) * 0.99), len(lats) - 1)] / 1e6:.2f} ms, "
                          f"worst {lats[-1] / 1e6:.2f} ms")
    finally:
        for name, pr in probes:
            pr.terminate()
            pr.wait()
            if os.path.exists(PROBE_LOG.format(name)):
                os.unlink(PROBE_LOG.format(name))
        parent.remove()
        for f in os.listdir(STATS_DIR):
            os.unlink(os.path.join(STATS_DIR, f))
        os.rmdir(STATS_DIR)


if __name__ == "__main__":
    main()
