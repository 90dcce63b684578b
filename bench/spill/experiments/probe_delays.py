#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What ran on the probe's CPU during its slow rounds: probe_delays.py PERF_SCRIPT PROBE_LOG [THRESHOLD_NS]
PERF_SCRIPT: `perf script -F comm,tid,cpu,time,event,trace` of a `perf record -k CLOCK_MONOTONIC -a
-e sched:sched_switch -e syscalls:sys_{enter,exit}_{madvise,sync_file_range} -e syscalls:sys_enter_sched_setscheduler`
taken around probe_beside.py; PROBE_LOG: the probe's rounds. Per slow round (default over 1 ms): the probe's own
run time and the others' time on its CPU, the maintenance thread's split by policy and system call.
Not built or run by the project; used for docs/spill.md (the maintenance thread's yields, *Past the limit*)."""
import collections
import re
import sys

LINE = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$")
SWITCH = re.compile(r"next_comm=(.*?) next_pid=(\d+)")
threshold = float(sys.argv[3]) if len(sys.argv) > 3 else 1e6
slow = [(s / 1e9, (s + l) / 1e9, l / 1e6) for s, l in (map(float, x.split()) for x in open(sys.argv[2])) if l > threshold]
maint = {"policy": "batch", "sys": None}
segments, current = [], {}  # (cpu, start, end, comm, label)


def label(comm):
    return f"maint/{maint['policy']}/{maint['sys']}" if comm.startswith("memspace-maint") else re.sub(r"\d+", "", comm)


for l in open(sys.argv[1]):
    m = LINE.match(l)
    if not m:
        continue
    comm, tid, cpu, t, event, trace = m.groups()
    cpu, t = int(cpu), float(t)
    if event == "sched:sched_switch":
        nxt = SWITCH.search(trace).group(1)
        if cpu in current:
            segments.append((cpu, current[cpu][0], t, current[cpu][1], current[cpu][2]))
        current[cpu] = (t, nxt, label(nxt))
        continue
    if not comm.startswith("memspace-maint"):
        continue
    if "sched_setscheduler" in event:
        maint["policy"] = {3: "batch", 5: "idle", 0: "other"}.get(int(re.search(r"policy: (0x[0-9a-f]+)", trace).group(1), 16), "?")
    elif event.startswith("syscalls:sys_enter_"):
        maint["sys"] = event.split("enter_")[1]
    elif event.startswith("syscalls:sys_exit_"):
        maint["sys"] = None
    if cpu in current and current[cpu][1].startswith("memspace-maint"):  # a new label from here on
        segments.append((cpu, current[cpu][0], t, current[cpu][1], current[cpu][2]))
        current[cpu] = (t, current[cpu][1], label(current[cpu][1]))
total = collections.Counter()
for a, b, lat in slow:
    segs = [s for s in segments if s[2] > a and s[1] < b]
    mine = [s for s in segs if s[3] == "spill_probe"]
    cpus = {s[0] for s in mine}
    others = collections.Counter()
    for cpu, s0, s1, comm, lab in segs:
        if comm != "spill_probe" and cpu in cpus:
            others[lab] += (min(b, s1) - max(a, s0)) * 1e3
    total.update(others)
    ran = sum(min(b, s[2]) - max(a, s[1]) for s in mine) * 1e3
    print(f"{a:.4f} {lat:5.2f} ms  probe ran {ran:.2f}; others: " + ", ".join(f"{k} {v:.2f}" for k, v in others.most_common(4)))
print("total, ms: " + ", ".join(f"{k} {v:.1f}" for k, v in total.most_common(10)))
