#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The 10-ms probe's rounds per benchmark run: probe_phases.py LOG_DIR CONFIG [THRESHOLD_MS]

LOG_DIR: the directory of a `memspace bench spill` run (or bench/spill/run.py) with MSB_PROBE_LOG_DIR=LOG_DIR,
which holds phases.log (each run's start and end, CLOCK_MONOTONIC ns) and CONFIG-probe-10ms.log (each round's
start and latency). Prints, for CONFIG's probe, its figures over all rounds and per run it overlaps (the rounds
between runs as "between"): rounds, p50, p99, max and the rounds over THRESHOLD_MS (default 3.48: twice an idle
machine's p99, the probe target's bound; give twice the run's own idle p99). Not built or run by the project; used
for docs/spill.md (*Past the limit*)."""
import collections
import os
import sys

d, config = sys.argv[1], sys.argv[2]
threshold = float(sys.argv[3]) * 1e6 if len(sys.argv) > 3 else 3.48e6
runs, cur = [], None
for line in open(os.path.join(d, "phases.log")):
    p = line.split(None, 2)
    if p[1] == "start":
        cur = (int(p[0]), p[2].strip())
    elif cur:
        runs.append((cur[0], int(p[0]), cur[1]))
        cur = None
rounds = [tuple(map(float, line.split())) for line in open(os.path.join(d, f"{config}-probe-10ms.log"))
          if len(line.split()) == 2]
by = collections.defaultdict(list)
for t0, lat in rounds:
    name = next((n for a, b, n in runs if t0 < b and t0 + lat > a), "between")
    by[name].append(lat)


def figures(lats):
    lats = sorted(lats)
    n = len(lats)
    return (f"rounds {n:5d}  p50 {lats[n // 2] / 1e6:6.2f}  p99 {lats[min(int(n * 0.99), n - 1)] / 1e6:6.2f}  "
            f"max {lats[-1] / 1e6:7.2f} ms  over {threshold / 1e6:.2f} ms: {sum(x > threshold for x in lats)}")


print(f"{config}: all {figures([lat for _, lat in rounds])}")
for name, lats in by.items():
    print(f"  {name[:60]:60s} {figures(lats)}")
