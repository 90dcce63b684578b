"""Plots for `memspace bench spaces`: latency against block size per allocator (mean and p99.9, log-log),
malloc and free, FIFO and random free order; the seed's RTX64 4.x published means on the mean panels."""
import os
import statistics

from plot import numeric, pyplot, save

IMPLS = ["memspace", "glibc", "glibc-rt", "jemalloc", "mimalloc", "tcmalloc"]


def size_tag(v):
    v = int(round(v))
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if v >= 1 << shift:
            return "%d %s" % (v >> shift, unit)
    return "%d B" % v


def _series(rows, case, impl, metric):
    """the median of the runs at each size (spaces.csv has each run's figures)"""
    runs = {}
    for r in numeric(rows, case=case, impl=impl, metric=metric):
        runs.setdefault(int(r["size_bytes"]), []).append(r["value"])
    sizes = sorted(runs)
    return sizes, [max(statistics.median(runs[s]), 0.5) for s in sizes]


def plot(rows, outdir, part):
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter
    largest = max((int(r["size_bytes"]) for r in numeric(rows, impl="memspace", metric="mean_ns")), default=4 << 20)
    ticks = [16 << (2 * k) for k in range(16)]  # 16 B, 64 B, 256 B, 1 KiB...
    for order in ("fifo", "random"):
        fig, axes = plt.subplots(2, 2, figsize=(13, 9), sharex=True)
        for col, op in enumerate(("malloc", "free")):
            for row, (metric, label) in enumerate((("mean_ns", "mean"), ("p999_ns", "p99.9"))):
                ax = axes[row][col]
                for impl in IMPLS:
                    x, y = _series(rows, f"{op}_{order}", impl, metric)
                    if x:
                        ax.plot(x, y, marker="o", markersize=3, label=impl,
                                linewidth=2.5 if impl == "memspace" else 1.2)
                if metric == "mean_ns":
                    x, y = _series(rows, op, "rtx64-published", "mean_ns")
                    if x:
                        ax.plot(x, y, linestyle="--", color="gray", label="rtx64-published (other machine)")
                ax.set_xscale("log", base=2)
                ax.set_xticks([t for t in ticks if t <= largest])
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: size_tag(v)))
                ax.tick_params(labelbottom=True)  # sharex hides the top panels' labels otherwise
                ax.set_yscale("log")
                ax.set_title(f"{op} {label}, {order} free order")
                ax.set_xlabel("block size")
                ax.set_ylabel("ns per call")
                ax.grid(True, which="both", alpha=0.3)
        axes[0][0].legend(fontsize=8)
        fig.suptitle("memspace bench spaces: time per call against block size (median of runs)")
        save(fig, os.path.join(outdir, f"{part}-{order}.png"))
