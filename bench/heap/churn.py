# SPDX-License-Identifier: MIT
"""Allocation-heavy Python workload for `memspace bench heap` (real programs): dicts, lists, strings and
bytes created and dropped in waves, with a working set that grows and shrinks. Run plain and with
PYTHONMALLOC=malloc (then every object goes through the preloaded malloc, not CPython's pymalloc).
Usage: churn.py [WAVES [N]]: WAVES waves of N records each (default 3 x 25000).
Prints a checksum, the same under every allocator."""
import sys


def wave(n, seed):
    table = {}
    rows = []
    acc = 0
    for i in range(n):
        key = "k%d_%d" % (seed, i)
        val = [i, str(i * 7), ("x" * (i % 97)), {"a": i, "b": key}]
        table[key] = val
        rows.append((key, i % 13, b"y" * (i % 211)))
        if i % 3 == 0:
            acc += len(" ".join(str(j) for j in range(i % 17)))
    # drop two thirds in scattered order, grow some strings
    for i in range(0, n, 3):
        table.pop("k%d_%d" % (seed, i), None)
    for i in range(1, n, 3):
        v = table.get("k%d_%d" % (seed, i))
        if v is not None:
            v[2] = v[2] + "z" * (i % 53)
    rows = [r for r in rows if r[1] != 5]
    rows.sort(key=lambda r: (r[1], r[0]))
    acc += sum(len(v[2]) for v in table.values()) + len(rows)
    return acc, table


def main():
    waves = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 25000
    keep = []
    total = 0
    for w in range(waves):
        acc, table = wave(n, w)
        total += acc
        keep.append(table)          # the working set grows...
        if len(keep) > 3:
            keep.pop(0)             # ...and shrinks
    print("checksum", total)


if __name__ == "__main__":
    main()
