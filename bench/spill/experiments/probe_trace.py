#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Who had the probe's CPU in its slow rounds: probe_trace.py DIR [THRESHOLD_MS]

DIR holds probe_split.py's kept logs (PROBE_SPLIT_KEEP=DIR: probe-PERIOD.log) and trace.txt, the text of a
tracefs instance recording sched:sched_switch with trace_clock mono (CLOCK_MONOTONIC, as the probe's log) over
the same time. For each round over THRESHOLD_MS (default 8): its split (CPU, run-queue wait, page faults), the
tasks that preempted the probe (count), and per CPU the time each task ran inside the round. Not built or run by
the project; used for docs/spill.md (*The probes*). A private instance leaves the machine's own tracing alone:
  mkdir /sys/kernel/tracing/instances/NAME; cd there; echo mono > trace_clock; echo 32768 > buffer_size_kb;
  echo 1 > events/sched/sched_switch/enable; echo 1 > tracing_on; (run); echo 0 > tracing_on;
  cat trace > DIR/trace.txt; rmdir /sys/kernel/tracing/instances/NAME"""
import collections
import glob
import os
import re
import sys

d = sys.argv[1]
thr = float(sys.argv[2]) * 1e6 if len(sys.argv) > 2 else 8e6
rounds = []
for path in glob.glob(os.path.join(d, "probe-*.log")):
    per = os.path.basename(path)[6:-4]
    for line in open(path):
        r = [int(x) for x in line.split()]
        if r[1] > thr:
            rounds.append((per, r))
line_re = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\].*?\s(\d+\.\d+): sched_switch: (.*)$")
sw = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
ev = []
for line in open(os.path.join(d, "trace.txt")):
    m = line_re.match(line)
    if m:
        s = sw.search(m.group(5))
        if s:
            ev.append((int(float(m.group(4)) * 1e9), int(m.group(3)), s))
for per, r in sorted(rounds, key=lambda x: x[1][0]):
    t0, t1 = r[0], r[0] + r[1]
    faults = f", page faults {r[5]}" if len(r) > 5 else ""
    print(f"probe every {per} ms, round at {t0}: {r[1] / 1e6:.2f} ms = CPU {r[2] / 1e6:.2f} + run-queue wait "
          f"{r[3] / 1e6:.2f} + rest {(r[1] - r[2] - r[3]) / 1e6:.2f}{faults}")
    last, run, pre = {}, collections.defaultdict(collections.Counter), collections.Counter()
    for ts, cpu, s in ev:
        if ts > t1:
            break
        who = f"{s.group(5)}/{s.group(6)}"
        if ts >= t0 and cpu in last:
            a, prev = last[cpu]
            run[cpu][prev] += ts - max(a, t0)
            if s.group(1) == "spill_probe" and s.group(4).startswith("R"):
                pre[who] += 1
        last[cpu] = (ts, who)
    for cpu, (a, who) in last.items():
        run[cpu][who] += t1 - max(a, t0)
    print("   preempted by: " + ", ".join(f"{w} x{n}" for w, n in pre.most_common(6)))
    for cpu, c in sorted(run.items()):
        print(f"   cpu{cpu} ran: " + ", ".join(f"{w} {v / 1e6:.1f} ms" for w, v in c.most_common(6)))
