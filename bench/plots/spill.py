# SPDX-License-Identifier: MIT
"""Plots for `memspace bench spill` from spill.csv: the seed's figure (allocation time and random read/write
rates against the vector size, one line per configuration and language; the cgroup limit as a dashed line, runs
the limit killed as an X where their line ends) and the probes' latencies."""
import os

from plot import numeric, pyplot, save

CONFIGS = ("plain", "spill", "swap", "auto", "file_mmap")


def plot(rows, outdir, part):
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 5))
    # the cgroup limit: the size_bytes of the max_completed_bytes rows
    limit = next((int(r["size_bytes"]) for r in numeric(rows, metric="max_completed_bytes")), None)
    # runs the limit killed: `failed` rows at the size that did not complete
    killed = sorted({(r["case"], r["impl"], int(r["size_bytes"])) for r in numeric(rows, metric="failed") if r["value"]})
    for ax, metric, title in zip(axes, ("alloc_s", "read_ops_per_s", "write_ops_per_s"),
                                 ("allocation (malloc to last first write), s", "random reads / s",
                                  "random writes / s")):
        marked = False
        for config in CONFIGS:
            for impl in ("python", "r"):
                pts = sorted((int(r["size_bytes"]), r["value"]) for r in numeric(rows, case=config, impl=impl, metric=metric))
                if pts:
                    line, = ax.plot([s / 2**20 for s, _ in pts], [v for _, v in pts], marker="o",
                                    label=f"{config} ({impl})")
                    for c, i, size in killed:
                        if c == config and i == impl:  # the line ends; a dotted step to an X at the killed size
                            ax.plot([pts[-1][0] / 2**20, size / 2**20], [pts[-1][1]] * 2, ls=":",
                                    color=line.get_color())
                            ax.plot([size / 2**20], [pts[-1][1]], marker="X", markersize=10, ls="none",
                                    color=line.get_color(), markeredgecolor="black",
                                    label="killed by the limit (out of memory)" if not marked else None)
                            marked = True
        if limit:
            ax.axvline(limit / 2**20, color="red", lw=1, ls="--", label="cgroup limit (%d MiB)" % (limit >> 20))
        ax.set_xlabel("vector size, MiB")
        ax.set_title(title)
        if metric != "alloc_s":
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8)
    save(fig, os.path.join(outdir, f"{part}.png"), (0, 0.12, 1, 1))

    probes = [r for r in numeric(rows) if r["impl"].startswith("probe-") and r["metric"] in ("p50_ns", "p99_ns", "max_ns")]
    if not probes:
        return
    configs = [c for c in ("idle", "busy", "plain", "spill", "swap", "auto") if any(r["case"] == c for r in probes)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, probe in zip(axes, ("probe-idle", "probe-10ms")):
        width = 0.25
        for i, metric in enumerate(("p50_ns", "p99_ns", "max_ns")):
            vals = []
            for c in configs:
                v = [r["value"] for r in probes if r["case"] == c and r["impl"] == probe and r["metric"] == metric]
                vals.append(v[0] / 1e6 if v else 0)
            ax.bar([x + i * width for x in range(len(configs))], vals, width, label=metric[:-3])
        ax.set_xticks([x + width for x in range(len(configs))])
        ax.set_xticklabels(configs)
        ax.set_yscale("log")
        ax.set_ylabel("round latency, ms")
        ax.set_title(f"{probe} (touches its working set)")
        ax.legend(fontsize=8)
    save(fig, os.path.join(outdir, f"{part}-probes.png"))
