"""Plots for `memspace bench pages` (from pages.csv alone): the seed's two figures on Linux, with the
published Windows figures beside (impl gerstmann-published), and the frame allocator's per-frame cost and RSS."""
import os
from collections import defaultdict

from plot import numeric, pyplot, save


def _median(values):
    v = sorted(values)
    n = len(v)
    if not n:
        return 0.0
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _mapping(rows, outdir, part, plt):
    rounds = defaultdict(list)
    for r in numeric(rows, impl="linux", metric="round_ns"):
        pattern, strategy = r["case"].split("/", 1)
        rounds[(pattern, strategy)].append(r["value"] / 1e6)
    published = {}
    for r in numeric(rows, impl="gerstmann-published"):
        pattern, strategy = r["case"].split("/", 1)
        published[(pattern, strategy)] = r["value"] / 1e6
    patterns = [p for p in ("memset", "touch64k", "touch4k") if any(k[0] == p for k in rounds)]
    if not patterns:
        return
    fig, axes = plt.subplots(1, len(patterns), figsize=(6 * len(patterns), 5), squeeze=False)
    for ax, pattern in zip(axes[0], patterns):
        alone = _median(rounds.get((pattern, "memset_alone"), [0]))
        names = [s for (p, s) in rounds if p == pattern and s != "memset_alone"]
        net = [max(_median(rounds[(pattern, s)]) - alone, 0) for s in names]
        y = range(len(names))
        ax.barh([i + 0.2 for i in y], net, height=0.4, label="Linux, memset subtracted")
        ax.barh([i + 0.2 for i in y], [alone] * len(names), left=net, height=0.4, alpha=0.3,
                label="+ pattern alone (raw)")
        win = [published.get((pattern, s), 0) for s in names]
        if any(win):
            ax.barh([i - 0.2 for i in y], win, height=0.4, label="Windows (gerstmann-published)")
        ax.set_yticks(list(y))
        ax.set_yticklabels(names, fontsize=8)
        ax.set_xlabel("ms per round (median)")
        ax.set_title(f"{pattern}: map, write, release")
        ax.legend(fontsize=7)
    save(fig, os.path.join(outdir, f"{part}-map.png"))


def _frame(rows, outdir, part, plt):
    per = defaultdict(list)
    summary = defaultdict(dict)
    for r in numeric(rows, impl="memspace"):
        if not r["case"].startswith("frame/"):
            continue
        policy = r["case"].split("/", 1)[1]
        if r["metric"] == "frame_ns":
            per[policy].append(r["value"] / 1e6)
        else:
            summary[policy][r["metric"]] = r["value"]
    if not per:
        return
    names = list(per)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    a1.boxplot([per[n] for n in names], labels=names, showfliers=True)
    a1.set_ylabel("ms per frame")
    a1.set_title("frame cost per policy")
    a1.tick_params(axis="x", labelrotation=30, labelsize=8)
    x = range(len(names))
    mib = 1024 * 1024
    a2.bar([i - 0.3 for i in x], [summary[n].get("peak_rss_bytes", 0) / mib for n in names], 0.3, label="peak RSS")
    a2.bar([i for i in x], [summary[n].get("end_rss_bytes", 0) / mib for n in names], 0.3, label="after last flip")
    a2.bar([i + 0.3 for i in x], [summary[n].get("idle_rss_bytes", 0) / mib for n in names], 0.3,
           label="after idle")
    pool = [summary[n].get("hugetlb_pool_end_bytes", 0) / mib for n in names]
    if any(pool):
        a2.bar([i for i in x], pool, 0.3, fill=False, hatch="//", label="hugetlb pool in use (not RSS)")
    a2.set_xticks(list(x))
    a2.set_xticklabels(names, rotation=30, fontsize=8)
    a2.set_ylabel("MiB (RSS above start)")
    a2.set_title("RSS")
    a2.legend(fontsize=7)
    save(fig, os.path.join(outdir, f"{part}-frame.png"))


def plot(rows, outdir, part):
    plt = pyplot()
    _mapping(rows, outdir, part, plt)
    _frame(rows, outdir, part, plt)
