"""Plots for `memspace bench dma` (called by bench/plot.py with the CSV rows).

dma.png: ring-write throughput against event size, one panel per write method (ms_dma_write, ms_dma_stream,
memcpy, loopback device), one line per buffer size and page size, the memset limit of each page size drawn
across. Figures are GB per CPU-second of the writing thread (median of the reps); the CSV also has wall-clock."""
import os
import statistics
from collections import defaultdict

from plot import numeric, pyplot, save

METHODS = [("nt", "ms_dma_write (fence per event)"), ("ntbatch", "ms_dma_stream (fence per 64 KiB)"),
           ("memcpy", "memcpy (glibc)"), ("loopback", "loopback device (list only)")]
PAGE_STYLE = {"4k": "--", "2m": "-", "1g": ":"}
LIMIT_COLOR = {"4k": "dimgray", "2m": "black", "1g": "darkgreen"}
BUF_COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"]


def label_size(b):
    b = int(b)
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div}{unit}"
    return f"{b}B"


def plot(rows, outdir, part):
    plt = pyplot()
    metric = "gb_per_cpu_s"
    cells = defaultdict(list)  # (method, page, buf) -> {event: [values]}
    series = defaultdict(lambda: defaultdict(list))
    for r in numeric(rows, metric=metric):
        c = r["case"]
        if not c.startswith("ring-") or "published" in c:
            continue
        _, method, page, buf = c.split("-", 3)
        series[(method, page, buf)][int(r["size_bytes"])].append(r["value"])
    limits = {}
    for r in numeric(rows, metric=metric):
        if r["case"].startswith("limit-memset-"):
            limits.setdefault(r["case"].split("-")[-1], []).append(r["value"])
    if not series:
        return
    methods = [m for m in METHODS if any(k[0] == m[0] for k in series)]
    bufs = sorted({k[2] for k in series}, key=lambda b: float(b[:-1]) * {"G": 1024, "M": 1, "K": 1 / 1024}.get(b[-1], 1))
    color = {b: BUF_COLORS[i % len(BUF_COLORS)] for i, b in enumerate(bufs)}
    ncol = 2 if len(methods) > 2 else len(methods)
    nrow = (len(methods) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(6.5 * ncol, 4.5 * nrow), sharey=True, squeeze=False)
    flat = [a for row in axes for a in row]
    for ax in flat[len(methods):]:
        ax.set_visible(False)
    for ax, (method, title) in zip(flat, methods):
        keys = sorted((k for k in series if k[0] == method),
                      key=lambda k: (k[1], float(k[2].rstrip("GMKB")) * {"G": 1024, "M": 1, "K": 1 / 1024}.get(k[2][-1], 1)))
        for k in keys:
            pts = sorted(series[k].items())
            xs = [e for e, _ in pts]
            ys = [statistics.median(v) for _, v in pts]
            ax.plot(xs, ys, PAGE_STYLE.get(k[1], "-"), marker="o", markersize=3, color=color[k[2]],
                    label=f"{k[2]} buffer, {k[1]} pages")
        for page, vals in sorted(limits.items()):
            ax.axhline(statistics.median(vals), color=LIMIT_COLOR.get(page, "gray"), linestyle=":", linewidth=1.5,
                       label=f"memset limit, {page} pages")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("event size (bytes)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
    for row in axes:
        row[0].set_ylabel("GB per CPU-second (1e9 B)")
    flat[len(methods) - 1].legend(fontsize=7, loc="lower right")
    fig.suptitle("DMA ring writes by event size (memspace bench dma)")
    save(fig, os.path.join(outdir, f"{part}.png"))
