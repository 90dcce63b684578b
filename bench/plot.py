#!/usr/bin/env python3
"""Plots for `memspace bench`, from the CSV alone: plot.py PART.csv OUTDIR -> OUTDIR/PART*.png (OUTDIR made when
missing; a CSV that cannot be read or a directory that cannot be made: one line on stderr, status 1)

Each part has a module bench/plots/PART.py with `plot(rows, outdir, part)`; rows are dicts with the CSV's
columns (value kept as text: 'not_installed' rows are status rows). Helpers here are shared by all parts."""
import csv
import importlib.util
import os
import sys


# What a row's case names after a "/" beside the configuration, where docs/contract.md §2 keeps it (impl names an
# allocator): spill's workloads, probes, disk and kernel figures, heap's empty preloaded library, check_cost.sh's
# builds (ref-REF too), heap's secure build. role_view reads such a row as case CONFIGURATION, impl ROLE (the secure
# build as memspace-secure): the plots' and the report's view, in which each is a series of its own. Other "/" cases
# (pages' memset/mmap_munmap) are left as they are.
ROLES = ("python", "r", "probe-10ms", "probe-idle", "o-direct", "kernel", "preload-floor", "checked", "unchecked")


def role_view(row):
    case, sep, role = row["case"].rpartition("/")
    if sep and (role in ROLES or role.startswith("ref-")):
        return dict(row, case=case, impl=role)
    if sep and role == "secure":
        return dict(row, case=case, impl="memspace-secure")
    return row


def read_rows(path):
    with open(path, newline="") as f:
        return [role_view(r) for r in csv.DictReader(f)]


def numeric(rows, **match):
    """rows matching every column=value in match, with value converted to float (status rows dropped)."""
    out = []
    for r in rows:
        if any(r.get(k) != str(v) for k, v in match.items()):
            continue
        try:
            r = dict(r)
            r["value"] = float(r["value"])
        except ValueError:
            continue
        out.append(r)
    return out


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, path, rect=None):
    """lays the figure out (within rect, when given: room kept for a figure-level legend), writes it, frees it"""
    import matplotlib.pyplot as plt
    fig.tight_layout(**({"rect": rect} if rect else {}))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        # a version manager's python3 (pyenv...) first in PATH may lack Debian's python3-matplotlib
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.access(system, os.X_OK):
            os.execv(system, [system, os.path.abspath(__file__)] + sys.argv[1:])
        raise
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    csv_path, outdir = sys.argv[1], sys.argv[2]
    try:
        rows = read_rows(csv_path)
        os.makedirs(outdir, exist_ok=True)  # OUTDIR is made when missing, as `memspace bench --out DIR` makes it
    except OSError as e:
        print(f"plot.py: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    if not rows:
        return 0
    part = rows[0]["part"]
    here = os.path.dirname(os.path.abspath(__file__))
    module_path = os.path.join(here, "plots", part + ".py")
    if not os.path.exists(module_path):
        print(f"plot.py: no plot module for {part}", file=sys.stderr)
        return 0
    sys.path.insert(0, here)
    spec = importlib.util.spec_from_file_location("plot_" + part, module_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.plot(rows, outdir, part)
    return 0


if __name__ == "__main__":
    sys.exit(main())
