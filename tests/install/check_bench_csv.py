#!/usr/bin/env python3
"""check_bench_csv.py DIR PART [HIDDEN_PEER...]: DIR/PART.csv, PART.cmd and the plots follow docs/contract.md §2.

CSV: the exact header, one measurement a row, impl [a-z0-9-]+ and an allocator's name (impl_problem), integer threads and size_bytes, numeric values
except status rows, metric names ending in their unit (or a count: no unit suffix of another spelling), a hidden
(not installed) peer only as metric=status,value=not_installed. A status saying the case failed (failed, timeout,
wrong_output) is a problem: a benchmark run whose allocator crashed or printed a wrong result is a failed test,
not a data point; 'skipped' (a case the machine refused: pages.c) only with its reason in PART.cmd
("skipped: CASE: why"). .cmd: command, date, machine (CPU, cores, memory, kernel), library versions. Plots:
PART.png or PART-*.png. Prints every problem; exit 1 when there is one."""
import csv
import glob
import math
import os
import re
import shlex
import sys

HEADER = ["part", "case", "impl", "threads", "size_bytes", "metric", "value"]
STATUS = {"not_installed", "skipped"}
FAILED = {"failed", "timeout", "wrong_output"}
# docs/contract.md §2: impl names an allocator: a reserved name, memspace-PRESET (MEMSPACE_CACHE's presets),
# NAME-published (figures copied from a published source) or, this project's addition, linux (the kernel's page
# calls measured directly: memspace bench pages). Strategies, policies and configurations go in case.
RESERVED = {"memspace", "glibc", "glibc-rt", "jemalloc", "mimalloc", "tcmalloc", "tbbmalloc", "linux"}
PRESETS = {"unlimited", "performance", "size", "none"}


def impl_problem(impl):
    """why impl is not an allocator's name of docs/contract.md §2; None when it is one"""
    if not re.fullmatch(r"[a-z0-9-]+", impl):
        return f"impl '{impl}' is not [a-z0-9-]+"
    if impl in RESERVED or impl.startswith("memspace-") and impl[9:] in PRESETS:
        return None
    if re.fullmatch(r"[a-z0-9-]+-published", impl):
        return None
    return (f"impl '{impl}' is not an allocator's name (reserved, memspace-PRESET, NAME-published, linux): a "
            "configuration goes in case")


# spellings of a unit the contract does not use (it says _ns, _s/seconds, _bytes, ops_per_s, gb_per_s...)
WRONG_UNIT = re.compile(r"(_ms|_us|_msec|_usec|_sec|_kb|_kib|_mb|_mib|_gb|_gib|_pct|_percent|_mbps|_gbps)$")


def main():
    out, part, hidden = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    problems = []
    path = os.path.join(out, part + ".csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    cmd = open(os.path.join(out, part + ".cmd")).read()
    if not rows or rows[0] != HEADER:
        problems.append(f"header is {rows[0] if rows else 'missing'}, not {','.join(HEADER)}")
    numbers = 0
    for n, r in enumerate(rows[1:], 2):
        if len(r) != 7:
            problems.append(f"line {n}: {len(r)} fields: {r}")
            continue
        p, case, impl, threads, size, metric, value = r
        where = f"line {n} ({','.join(r)})"
        if p != part:
            problems.append(f"{where}: part is not {part}")
        if not case:
            problems.append(f"{where}: empty case")
        if impl_problem(impl):
            problems.append(f"{where}: {impl_problem(impl)}")
        if not re.fullmatch(r"-?[0-9]+", threads) or not re.fullmatch(r"[0-9]+", size):
            problems.append(f"{where}: threads and size_bytes must be integers")
        if not re.fullmatch(r"[a-z0-9_]+", metric):
            problems.append(f"{where}: metric '{metric}' is not a lower-case name")
        if metric == "status":
            if value in FAILED:
                problems.append(f"{where}: the case {value} under {impl}")
            elif value not in STATUS:
                problems.append(f"{where}: status '{value}' is not one of {sorted(STATUS)}")
            elif value == "skipped" and not re.search(rf"^skipped: {re.escape(case)}: \S", cmd, re.M):
                problems.append(f"{where}: skipped without its reason in {part}.cmd ('skipped: {case}: ...')")
            continue
        if WRONG_UNIT.search(metric):
            problems.append(f"{where}: metric '{metric}' ends in a unit the contract does not use")
        try:
            v = float(value)
            if math.isnan(v):
                problems.append(f"{where}: value is NaN")
        except ValueError:
            problems.append(f"{where}: value '{value}' is not a number")
            continue
        numbers += 1
        if impl in hidden:
            problems.append(f"{where}: '{impl}' is not installed here but has a number")
    if numbers == 0:
        problems.append("no measurement at all")
    for impl in hidden:
        if not any(len(r) == 7 and r[2] == impl and r[5] == "status" and r[6] == "not_installed" for r in rows[1:]):
            problems.append(f"no metric=status,value=not_installed row for the hidden peer '{impl}'")
    for want in (r"^command: .*\bbench\b", r"^date: \S+", r"^machine: .*cpu=.*cores=\d+.*memory_bytes=\d+.*kernel=",
                 r"^libraries: .*\bglibc="):
        if not re.search(want, cmd, re.M):
            problems.append(f"{part}.cmd has no line matching {want}")
    # the exact command: read back as a shell reads it, its --out is this directory (one with a space or a quote
    # in its name too)
    line = re.search(r"^command: (.*)$", cmd, re.M)
    try:
        words = shlex.split(line.group(1)) if line else []
    except ValueError as e:
        words = []
        problems.append(f"{part}.cmd: the command line does not read back as a shell command ({e})")
    if "--out" in words[:-1] and os.path.realpath(words[words.index("--out") + 1]) != os.path.realpath(out):
        problems.append(f"{part}.cmd: the command's --out is {words[words.index('--out') + 1]!r}, not {out!r}")
    if not glob.glob(os.path.join(out, part + ".png")) + glob.glob(os.path.join(out, part + "-*.png")):
        problems.append(f"no {part}.png or {part}-*.png written")
    for p in problems[:40]:
        print(f"FAIL {part}: {p}")
    print(f"{part}: {len(rows) - 1} rows, {numbers} numbers, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
