"""Plots for `memspace bench heap` (docs/bench-heap.md), from heap.csv alone:
- heap-rptest.png: the seed's figure: memory operations per CPU-second and memory overhead (% of peak live
  bytes) against threads, one line per allocator/preset, without and with cross-thread frees;
- heap-long.png: the long window (rptest_long, issue #26): operations per CPU-second and per wall-second and the
  overhead (% of peak live bytes) against threads, median of the rounds with bars min-max;
- heap-idle.png: RSS after 1 s of idling, as % of the peak, per allocator and thread count;
- heap-programs.png: real programs' wall time and max RSS relative to glibc (median, bars min-max), and the
  realloc growth time per allocator;
- heap-workloads.png: the mimalloc-bench-style workloads: wall time and peak RSS relative to glibc, per
  allocator (the highest thread count each workload ran at)."""
import statistics

from plot import numeric, pyplot, save

STYLE = {  # memspace presets solid, glibc black, peers dashed
    "memspace-unlimited": ("tab:blue", "-", "o"), "memspace-performance": ("tab:green", "-", "o"),
    "memspace-size": ("tab:olive", "-", "o"), "memspace-none": ("tab:cyan", "-", "o"),
    "memspace": ("tab:green", "-", "o"), "glibc": ("black", "-", "s"), "jemalloc": ("tab:red", "--", "^"),
    "mimalloc": ("tab:purple", "--", "v"), "tcmalloc": ("tab:orange", "--", "D"),
    "tbbmalloc": ("tab:brown", "--", "x"),
}


def medians(rows, case, metric):
    """{impl: {threads: median}} of a case's metric (status rows dropped)."""
    acc = {}
    for r in numeric(rows, case=case, metric=metric):
        acc.setdefault(r["impl"], {}).setdefault(int(r["threads"]), []).append(r["value"])
    return {i: {t: statistics.median(v) for t, v in d.items()} for i, d in acc.items()}


def ranges(rows, case, metric):
    """{impl: {threads: (min, max)}} of a case's metric over the rounds"""
    acc = {}
    for r in numeric(rows, case=case, metric=metric):
        acc.setdefault(r["impl"], {}).setdefault(int(r["threads"]), []).append(r["value"])
    return {i: {t: (min(v), max(v)) for t, v in d.items()} for i, d in acc.items()}


def reached_all(r):
    """a realloc run reached its target size (the CSV keeps 9 significant digits)"""
    return r["value"] >= 0.999 * float(r["size_bytes"])


def impl_order(impls):
    known = list(STYLE)
    return sorted(impls, key=lambda i: (known.index(i) if i in known else len(known), i))


def style(impl):
    return STYLE.get(impl, ("gray", ":", "."))


def presets_note(rows, cases):
    """a caption line on the two cached presets, from the data: whether their ranges overlap everywhere"""
    a, b = "memspace-unlimited", "memspace-performance"
    pairs = []
    for case in cases:
        sp = ranges(rows, case, "ops_per_cpu_s")
        for t in sorted(set(sp.get(a, {})) & set(sp.get(b, {}))):
            (alo, ahi), (blo, bhi) = sp[a][t], sp[b][t]
            pairs.append(alo <= bhi and blo <= ahi)
    if pairs and all(pairs):
        return ("memspace-unlimited against memspace-performance: their min-max ranges overlap at every thread count, "
                "so which one is ahead is round-to-round noise in this run")
    return "bars: min-max of the rounds; where two ranges overlap, their order is round-to-round noise"


def plot_rptest(rows, outdir, plt):
    cases = [c for c in ("rptest", "rptest_cross") if numeric(rows, case=c, metric="ops_per_cpu_s")]
    if not cases:
        return
    fig, axes = plt.subplots(len(cases), 2, figsize=(13, 4.6 * len(cases)), squeeze=False)
    for row, case in enumerate(cases):
        ops = medians(rows, case, "ops_per_cpu_s")
        spread = ranges(rows, case, "ops_per_cpu_s")
        over = medians(rows, case, "overhead_bytes")
        live = medians(rows, case, "peak_live_bytes")
        threads = sorted({t for d in ops.values() for t in d})
        pos = {t: i for i, t in enumerate(threads)}  # thread counts side by side, evenly spaced
        order = impl_order(ops)
        for k, impl in enumerate(order):
            color, ls, mk = style(impl)
            th = sorted(ops[impl])
            med = [ops[impl][t] / 1e6 for t in th]
            shift = (k - (len(order) - 1) / 2) * 0.035  # allocators side by side, so the ranges stay readable
            axes[row][0].errorbar([pos[t] + shift for t in th], med,
                                  yerr=[[m - spread[impl][t][0] / 1e6 for m, t in zip(med, th)],
                                        [spread[impl][t][1] / 1e6 - m for m, t in zip(med, th)]],
                                  color=color, ls=ls, marker=mk, label=impl, capsize=2, lw=1.2, elinewidth=0.8)
            th = sorted(t for t in over.get(impl, {}) if live.get(impl, {}).get(t))
            axes[row][1].plot([pos[t] for t in th], [100.0 * over[impl][t] / live[impl][t] for t in th], color=color,
                              ls=ls, marker=mk, label=impl)
        cross = ", cross-thread frees" if case == "rptest_cross" else ""
        axes[row][0].set_title("%s%s: operations per CPU-second\n(median of the rounds, bars min-max)" % (case, cross),
                               fontsize=10)
        axes[row][0].set_ylabel("Mops / CPU-s")
        axes[row][1].set_title("%s%s: overhead\n(peak RSS - peak live)" % (case, cross), fontsize=10)
        axes[row][1].set_ylabel("% of peak live bytes")
        for ax in axes[row]:
            ax.set_xlabel("threads")
            ax.set_xticks(range(len(threads)))
            ax.set_xticklabels([str(t) for t in threads])
            ax.grid(alpha=0.3)
            ax.set_ylim(bottom=0)
    handles, labels = axes[0][0].get_legend_handles_labels()
    low = 0.035 if len(cases) > 1 else 0.06  # the caption below the legend
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, low), ncol=min(len(labels), 5), fontsize=8)
    fig.text(0.5, 0.008, presets_note(rows, cases), ha="center", va="bottom", fontsize=9, style="italic")
    save(fig, "%s/heap-rptest.png" % outdir, (0, 0.11 if len(cases) > 1 else 0.2, 1, 1))


def overhead_pcts(rows, case):
    """{impl: {threads: [overhead % of live, run by run]}}"""
    over, live = {}, {}
    for metric, acc in (("overhead_bytes", over), ("peak_live_bytes", live)):
        for r in numeric(rows, case=case, metric=metric):
            acc.setdefault((r["impl"], int(r["threads"])), []).append(r["value"])
    out = {}
    for (impl, t), o in over.items():
        out.setdefault(impl, {})[t] = [100.0 * a / b for a, b in zip(o, live.get((impl, t), [])) if b > 0]
    return out


def plot_long(rows, outdir, plt):
    case = "rptest_long"
    if not numeric(rows, case=case, metric="ops_per_cpu_s"):
        return
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    over = overhead_pcts(rows, case)
    panels = []
    for metric in ("ops_per_cpu_s", "ops_per_s"):
        acc = {}
        for r in numeric(rows, case=case, metric=metric):
            acc.setdefault(r["impl"], {}).setdefault(int(r["threads"]), []).append(r["value"] / 1e6)
        panels.append(acc)
    panels.append(over)
    threads = sorted({t for d in panels[0].values() for t in d})
    pos = {t: i for i, t in enumerate(threads)}
    order = impl_order(panels[0])
    titles = ("operations per CPU-second", "operations per wall-second", "overhead")
    ylabels = ("Mops / CPU-s", "Mops / wall-s", "% of peak live bytes")
    for ax, data, title, ylabel in zip(axes, panels, titles, ylabels):
        for k, impl in enumerate(order):
            th = sorted(t for t, v in data.get(impl, {}).items() if v)
            if not th:
                continue
            color, ls, mk = style(impl)
            med = [statistics.median(data[impl][t]) for t in th]
            shift = (k - (len(order) - 1) / 2) * 0.035
            ax.errorbar([pos[t] + shift for t in th], med,
                        yerr=[[m - min(data[impl][t]) for m, t in zip(med, th)],
                              [max(data[impl][t]) - m for m, t in zip(med, th)]],
                        color=color, ls=ls, marker=mk, label=impl, capsize=2, lw=1.2, elinewidth=0.8)
        ax.set_title("rptest_long, every loop from an empty heap:\n%s (median, bars min-max)" % title, fontsize=10)
        ax.set_ylabel(ylabel)
        ax.set_xlabel("threads")
        ax.set_xticks(range(len(threads)))
        ax.set_xticklabels([str(t) for t in threads])
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), fontsize=8)
    save(fig, "%s/heap-long.png" % outdir, (0, 0.08, 1, 1))


def plot_idle(rows, outdir, plt):
    idle = {}
    peak = {}
    for r in numeric(rows, case="rptest", metric="idle_rss_bytes"):
        idle.setdefault((r["impl"], int(r["threads"])), r["value"])
    for r in numeric(rows, case="rptest", metric="peak_rss_bytes"):
        peak.setdefault((r["impl"], int(r["threads"])), r["value"])  # the first round's, like idle
    if not idle:
        return
    impls = impl_order({i for i, _ in idle})
    threads = sorted({t for _, t in idle})
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.8 / len(threads)
    for j, t in enumerate(threads):
        vals = [100.0 * idle.get((i, t), 0) / peak[(i, t)] if peak.get((i, t)) else 0 for i in impls]
        ax.bar([x + j * width for x in range(len(impls))], vals, width, label="%d thread%s" % (t, "s" if t > 1 else ""))
    ax.axhline(5, color="red", lw=0.8, ls="--", label="target 5%")
    ax.set_xticks([x + width * (len(threads) - 1) / 2 for x in range(len(impls))])
    ax.set_xticklabels(impls, rotation=20, fontsize=8)
    ax.set_ylabel("RSS after idling, % of peak")
    ax.set_title("rptest: memory kept after freeing everything (threads alive, 1 s idle)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    save(fig, "%s/heap-idle.png" % outdir)


def _ratio_formatter(minor=False):
    from matplotlib.ticker import FuncFormatter
    shown = (0.5, 0.7, 2, 3, 5) if minor else None
    return FuncFormatter(lambda v, _: ("%gx" % v) if (not minor or round(v, 3) in shown) else "")


def plot_programs(rows, outdir, plt):
    progs = [p for p in ("python_pymalloc", "python_malloc", "python_numpy", "sqlite3", "gcc", "shell", "git",
                         "shell_script", "http_server", "rscript") if numeric(rows, case=p, metric="wall_s")]
    grows = [g for g in ("realloc_step_1m", "realloc_double") if numeric(rows, case=g, metric="seconds")]
    if not progs and not grows:
        return
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    impls = impl_order({r["impl"] for p in progs for r in numeric(rows, case=p, metric="wall_s")})
    width = 0.8 / max(1, len(impls))
    for ax, metric, title in ((axes[0], "wall_s", "wall time"), (axes[1], "peak_rss_bytes", "max RSS")):
        for j, impl in enumerate(impls):
            meds, lo, hi = [], [], []
            for p in progs:
                base = [r["value"] for r in numeric(rows, case=p, metric=metric, impl="glibc")]
                vals = [r["value"] for r in numeric(rows, case=p, metric=metric, impl=impl)]
                if not base or not vals:
                    meds.append(0); lo.append(0); hi.append(0)
                    continue
                b = statistics.median(base)
                m = statistics.median(vals) / b
                meds.append(m); lo.append(m - min(vals) / b); hi.append(max(vals) / b - m)
            # bars start at glibc's 1.0 and go up (slower, bigger) or down; log scale, so 2x and 0.5x look alike
            # and one large ratio (a shell under a slow-starting allocator) does not flatten the rest
            ax.bar([x + j * width for x in range(len(progs))], [m - 1 if m else 0 for m in meds], width,
                   bottom=1.0, yerr=[lo, hi], capsize=2, color=style(impl)[0], label=impl)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(_ratio_formatter())
        ax.yaxis.set_minor_formatter(_ratio_formatter(minor=True))
        ax.set_xticks([x + width * (len(impls) - 1) / 2 for x in range(len(progs))])
        ax.set_xticklabels(progs, fontsize=8, rotation=20, ha="right")
        ax.set_ylabel("relative to glibc, log scale (lower is better)")
        ax.set_title("real programs: %s (median, min-max)" % title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    ax = axes[2]
    gimpls = impl_order({r["impl"] for g in grows for r in numeric(rows, case=g, metric="seconds")})
    gw = 0.8 / max(1, len(gimpls))
    for j, impl in enumerate(gimpls):
        secs, stopped = [], []
        for g in grows:
            vals = [r["value"] for r in numeric(rows, case=g, metric="seconds", impl=impl)]
            reached = [r for r in numeric(rows, case=g, metric="max_completed_bytes", impl=impl)]
            secs.append(statistics.median(vals) if vals else 0)
            stopped.append(any(not reached_all(r) for r in reached))
        bars = ax.bar([x + j * gw for x in range(len(grows))], secs, gw, color=style(impl)[0], label=impl)
        for b, s in zip(bars, stopped):
            if s:
                b.set_hatch("//")
    ax.set_xticks([x + gw * (len(gimpls) - 1) / 2 for x in range(len(grows))])
    ax.set_xticklabels(grows, fontsize=8)
    ax.set_ylabel("seconds (hatched: stopped at the time limit)")
    sizes = {int(r["size_bytes"]) for g in grows for r in numeric(rows, case=g, metric="seconds")}
    ax.set_title("one block grown with realloc to %d MiB" % (max(sizes) >> 20 if sizes else 0))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, "%s/heap-programs.png" % outdir)


WORKLOADS = ("larson", "xmalloc", "cache_scratch", "cache_thrash", "mstress", "glibc_simple", "glibc_thread",
             "sh6bench", "sh8bench", "alloc_test", "cxx_map", "malloc_large")


def plot_workloads(rows, outdir, plt):
    cases = [w for w in WORKLOADS if numeric(rows, case=w, metric="seconds")]
    if not cases:
        return
    fig, axes = plt.subplots(2, 1, figsize=(15, 8.5))
    impls = impl_order({r["impl"] for w in cases for r in numeric(rows, case=w, metric="seconds")})
    width = 0.8 / max(1, len(impls))
    for ax, metric, title in ((axes[0], "seconds", "wall time"), (axes[1], "peak_rss_bytes", "peak RSS")):
        for j, impl in enumerate(impls):
            vals = []
            for w in cases:
                thr = max(int(r["threads"]) for r in numeric(rows, case=w, metric=metric))
                base = [r["value"] for r in numeric(rows, case=w, metric=metric, impl="glibc") if int(r["threads"]) == thr]
                mine = [r["value"] for r in numeric(rows, case=w, metric=metric, impl=impl) if int(r["threads"]) == thr]
                vals.append(statistics.median(mine) / statistics.median(base) if base and mine else 0)
            ax.bar([x + j * width for x in range(len(cases))], vals, width, color=style(impl)[0], label=impl)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xticks([x + width * (len(impls) - 1) / 2 for x in range(len(cases))])
        ax.set_xticklabels(cases, fontsize=8)
        ax.set_ylabel("relative to glibc (lower is better)")
        ax.set_title("mimalloc-bench-style workloads: %s (median)" % title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8, ncol=len(impls))
    save(fig, "%s/heap-workloads.png" % outdir)


def plot(rows, outdir, part):
    plt = pyplot()
    plot_rptest(rows, outdir, plt)
    plot_long(rows, outdir, plt)
    plot_idle(rows, outdir, plt)
    plot_programs(rows, outdir, plt)
    plot_workloads(rows, outdir, plt)
