#!/usr/bin/env python3
"""check_results_csv.py SRC: every CSV committed under bench/results/ follows docs/contract.md §2's row format, not
only the PART.csv files of `memspace bench` (check_bench_csv.py checks those in depth): the exact header, seven
fields a row, impl an allocator's name (check_bench_csv.py's impl_problem: reserved, memspace-PRESET,
NAME-published, or this project's linux; configurations go in case), and a unit (_ns, _bytes) only at the end of a
metric's name. Prints every problem; exit 1 on one."""
import csv
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "install"))
from check_bench_csv import impl_problem  # noqa: E402

HEADER = ["part", "case", "impl", "threads", "size_bytes", "metric", "value"]
UNIT_INSIDE = re.compile(r"_(ns|bytes)_")


def problems_of(path):
    out = []
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != HEADER:
        return [f"{path}: header is {rows[0] if rows else 'missing'}"]
    for n, r in enumerate(rows[1:], 2):
        if len(r) != 7:
            out.append(f"{path}:{n}: {len(r)} fields")
            continue
        if impl_problem(r[2]):
            out.append(f"{path}:{n}: {impl_problem(r[2])}")
        if UNIT_INSIDE.search(r[5]):
            out.append(f"{path}:{n}: metric '{r[5]}' does not end in its unit")
    return out


def main():
    files = sorted(glob.glob(os.path.join(sys.argv[1], "bench", "results", "*.csv")))
    problems = [p for f in files for p in problems_of(f)]
    for p in problems[:40]:
        print(p)
    print(f"{len(files)} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
