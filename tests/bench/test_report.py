#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/report.py: the committed README.md and docs/results.md are what the committed bench/results give
(no figure typed by hand, none stale), and the tables come out right on a tiny fixture CSV: ratios against
glibc and the best peer, a peer with status,not_installed rows shown as "not installed", a part without a CSV
or a figure missing from one as "not measured", --check exiting 1 on a stale file; and the plot helpers
that read the CSV's rounded sizes and the rounds' ranges."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("MEMSPACE_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
REPORT = os.path.join(SRC, "bench", "report.py")

HEADER = "part,case,impl,threads,size_bytes,metric,value\n"
# rptest at 1 thread: memspace 6 M, glibc 1 M, mimalloc 3 M, tcmalloc 2 M ops per CPU-s (medians of the rounds);
# jemalloc and tbbmalloc not installed
HEAP = HEADER + "".join(
    f"heap,rptest,{impl},1,0,ops_per_cpu_s,{v}\n" for impl, vs in (
        ("memspace-performance", (5e6, 6e6, 9e6)), ("glibc", (1e6, 1e6, 1.2e6)), ("mimalloc", (3e6, 2e6, 3.5e6)),
        ("tcmalloc", (2e6,))) for v in vs) + \
    "heap,rptest,jemalloc,1,0,status,not_installed\n" \
    "heap,rptest,tbbmalloc,1,0,status,not_installed\n" \
    "heap,rptest,memspace-performance,1,0,peak_rss_bytes,104857600\n" \
    "heap,rptest,glibc,1,0,peak_rss_bytes,52428800\n" \
    "heap,rptest,mimalloc,1,0,peak_rss_bytes,83886080\n" \
    "heap,rptest,tcmalloc,1,0,peak_rss_bytes,157286400\n"
# the long window (issue #26), 1 thread, in round order: memspace 6 M per CPU-s and 4 M per wall-s, mimalloc 3 M
# and 5 M, glibc 1 M and 1 M; overhead (of 100 MiB live) 5%, 4%, 6% for memspace
HEAP += "".join(f"heap,rptest_long,{impl},1,0,{m},{v}\n" for impl, m, vs in (
    ("memspace-performance", "ops_per_cpu_s", (5e6, 6e6, 9e6)), ("memspace-performance", "ops_per_s", (4e6, 3e6, 5e6)),
    ("mimalloc", "ops_per_cpu_s", (3e6, 2e6, 3.5e6)), ("mimalloc", "ops_per_s", (5e6, 5e6, 4e6)),
    ("glibc", "ops_per_cpu_s", (1e6, 1e6, 1e6)), ("glibc", "ops_per_s", (1e6, 1e6, 1e6)),
    ("memspace-performance", "peak_live_bytes", (104857600,) * 3),
    ("memspace-performance", "overhead_bytes", (5242880, 4194304, 6291456))) for v in vs) + \
    "heap,rptest_long,jemalloc,1,0,status,not_installed\nheap,rptest_long,tbbmalloc,1,0,status,not_installed\n"
CMD = ("command: build/memspace bench heap\npart: heap\nmode: quick\ndate: 2031-02-03T04:05:06Z\n"
       "heap parameters: rounds=3 warmup=2 loops=3 long_rounds=5 long_loops=30 blocks=150000\n"
       "machine: cpu=\"Test CPU\" cores=8 memory_bytes=17179869184 kernel=\"Linux 9.9\" arch=x86_64\n"
       "seconds: 90\nexit: 0\n")
README = "# x\n\nbefore\n\n<!-- results:begin -->\nold text\n<!-- results:end -->\n\nafter\n"


def run(*args):
    return subprocess.run([sys.executable, REPORT] + list(args), capture_output=True, text=True)


class Committed(unittest.TestCase):
    def test_readme_and_results_doc_are_current(self):
        r = run("--check")
        self.assertEqual(r.returncode, 0, "README.md or docs/results.md differ from bench/results "
                                          "(run python3 bench/report.py):\n" + r.stderr)

    def test_committed_csv_follows_the_contract(self):
        """every committed bench/results/*.csv: the contract's header, seven fields a row, impl [a-z0-9-]+, and each
        metric ending in its unit (docs/contract.md §2), or a count, or a status"""
        import re
        units = ("_ns", "_s", "seconds", "_bytes", "_x")
        counts = {"entries", "events_bad", "failed", "instructions", "minor_faults", "moves", "ops", "page_faults",
                  "reallocs", "round", "rounds", "syscalls", "windows", "spill_began_reason"}
        results = os.path.join(SRC, "bench", "results")
        for name in sorted(f for f in os.listdir(results) if f.endswith(".csv")):
            with open(os.path.join(results, name)) as f:
                lines = f.read().splitlines()
            self.assertEqual(lines[0] + "\n", HEADER, name)
            for line in lines[1:]:
                cells = line.split(",")
                self.assertEqual(len(cells), 7, f"{name}: {line}")
                impl, metric, value = cells[2], cells[5], cells[6]
                self.assertRegex(impl, r"^[a-z0-9-]+$", f"{name}: {line}")
                if metric == "status":
                    continue
                ok = metric.endswith(units) or metric in counts or metric.endswith("_page_faults")
                self.assertTrue(ok, f"{name}: metric {metric!r} does not end in its unit: {line}")
                self.assertTrue(re.match(r"^-?[0-9.]+(e[-+]?[0-9]+)?$", value), f"{name}: {line}")


class Fixture(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.results = os.path.join(d, "results")
        os.mkdir(self.results)
        with open(os.path.join(self.results, "heap.csv"), "w") as f:
            f.write(HEAP)
        with open(os.path.join(self.results, "heap.cmd"), "w") as f:
            f.write(CMD)
        self.readme, self.doc = os.path.join(d, "README.md"), os.path.join(d, "docs", "results.md")
        with open(self.readme, "w") as f:
            f.write(README)
        self.args = ["--results", self.results, "--readme", self.readme, "--doc", self.doc]

    def tearDown(self):
        self.tmp.cleanup()

    def write(self):
        r = run(*self.args)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.readme) as f:
            readme = f.read()
        with open(self.doc) as f:
            doc = f.read()
        return readme, doc

    def row(self, text, start):
        line = next((l for l in text.splitlines() if l.startswith(start)), None)
        self.assertIsNotNone(line, f"no line starting {start!r} in:\n{text}")
        return [c.strip() for c in line.strip("|").split("|")]

    def test_tables(self):
        readme, doc = self.write()
        # the block is replaced, the text around it kept
        self.assertTrue(readme.startswith("# x\n\nbefore\n\n<!-- results:begin -->\n"))
        self.assertTrue(readme.endswith("<!-- results:end -->\n\nafter\n"))
        self.assertNotIn("old text", readme)
        # the long window, median of the rounds: memspace 6 M, 6x glibc's 1 M, 2x the best installed peer (mimalloc
        # 3 M); per wall-second 4 M, 0.8x mimalloc's 5 M
        cells = self.row(readme, "| seed workload, 30 loops from an empty heap, 1 thread: memory operations per CPU")
        self.assertEqual(cells[1:], ["6.00 M", "6.00x (1.00 M)", "2.00x (mimalloc: 3.00 M)"])
        cells = self.row(readme, "| seed workload, 30 loops from an empty heap, 1 thread: memory operations per wall")
        self.assertEqual(cells[1:], ["4.00 M", "4.00x (1.00 M)", "0.80x (mimalloc: 5.00 M)"])
        # overhead in % of live bytes, median of the rounds
        cells = self.row(readme, "| seed workload, 30 loops, 1 thread: overhead")
        self.assertEqual(cells[1], "5.0%")
        # not in the CSV: not measured; no threads=2 rows at all
        cells = self.row(readme, "| seed workload, 30 loops from an empty heap, 2 threads: memory operations per CPU")
        self.assertEqual(cells[1:], ["not measured", "not measured", "jemalloc not installed; mimalloc not measured; "
                                     "tcmalloc not measured; tbbmalloc not installed"])
        self.assertIn("Not installed in this run: jemalloc, tbbmalloc.", readme)
        # date and machine from heap.cmd
        self.assertIn("Run 2031-02-03 04:05 UTC, `build/memspace bench heap` (quick mode), Test CPU, 8 cores, "
                      "16.0 GiB, Linux 9.9, x86_64.", readme)
        # a part without a CSV
        self.assertIn("not measured: no `bench/results/spaces.csv`.", readme)
        # the long form: every allocator's row, ranges, the not installed peers named as such
        self.assertEqual(self.row(doc, "| 1 | memspace-performance")[2:4], ["6.00 M [5.00 M-9.00 M]", "6.00x"])
        self.assertEqual(self.row(doc, "| 1 | jemalloc")[2], "not installed")
        self.assertEqual(self.row(doc, "| 1 | tbbmalloc")[2], "not installed")
        self.assertIn("- met: performance preset throughput >= the best peer's at 1 thread: 6.00 M against "
                      "mimalloc 3.00 M (2.00x)", doc)
        self.assertIn("- **missed**: performance preset peak RSS <= 1.1x that peer's at 1 thread: 100 MiB against "
                      "80 MiB (1.25x)", doc)
        self.assertIn("- not measured: performance preset >= 2.5x glibc's throughput at 2 threads", doc)
        # issue #26 from the long window: the ratio of the medians and the range of the rounds' ratios (5/3, 6/2,
        # 9/3.5; 4/5, 3/5, 5/4)
        self.assertIn("- met: seed workload over 30 loops, 1 thread: at least 1.1x the best peer's operations per "
                      "CPU-second: 2.00x [1.67-3.00] (mimalloc)", doc)
        self.assertIn("- **missed**: seed workload over 30 loops, 1 thread: at least 1.1x the best peer's operations "
                      "per wall-second: 0.80x [0.60-1.25] (mimalloc)", doc)
        self.assertIn("- met: seed workload over 30 loops, 1 thread: overhead at most 6% of live bytes: "
                      "5.0% [4.0%-6.0%]", doc)
        self.assertEqual(self.row(doc, "| 1 | memspace-performance | 6.00 M [5.00 M-9.00 M] | 2.00x")[3:],
                         ["2.00x [1.67-3.00] (mimalloc)", "4.00 M [3.00 M-5.00 M]", "0.80x [0.60-1.25] (mimalloc)",
                          "5.0% [4.0%-6.0%]"])

    def test_programs_and_floor(self):
        # shell, 5 runs in round order: glibc 0.100 (median), memspace 0.107 (1.070x; the runs' ratios 1.10, 1.03,
        # 1.05, 1.00, 1.07: median 1.050x), the empty preloaded library 0.103 (1.030x; ratios' median 1.030x);
        # git: the floor's library not installed
        walls = {"glibc": (0.100, 0.100, 0.120, 0.100, 0.100), "memspace": (0.110, 0.103, 0.126, 0.100, 0.107),
                 "preload-floor": (0.105, 0.102, 0.126, 0.101, 0.103)}
        with open(os.path.join(self.results, "heap.csv"), "a") as f:
            # (the floor's rows as the bench writes them: case PROGRAM/preload-floor, impl glibc)
            f.write("".join(f"heap,{p}/preload-floor,glibc,1,0,wall_s,{v}\n" if i == "preload-floor" else
                            f"heap,{p},{i},1,0,wall_s,{v}\n" for p in ("shell", "git") for i, vs in walls.items()
                            if not (p == "git" and i == "preload-floor") for v in vs))
            f.write("heap,git/preload-floor,glibc,1,0,status,not_installed\n")
        _, doc = self.write()
        self.assertIn("- **missed**: shell: wall time within 1.02x glibc's: 1.070x [1.000-1.100], runs' median 1.050x "
                      "over 5 runs (an empty preloaded library: 1.030x, runs' median 1.030x)", doc)
        self.assertIn("git: wall time within 1.02x glibc's: 1.070x [1.000-1.100], runs' median 1.050x over 5 runs (an "
                      "empty preloaded library: not installed)", doc)
        self.assertEqual(self.row(doc, "| shell | preload-floor")[2:5], ["5", "0.103 [0.101-0.126]", "1.030x"])
        self.assertEqual(self.row(doc, "| git | preload-floor")[2], "not installed")
        self.assertIn("`preload-floor` is an empty library preloaded like the peers", doc)

    def test_workloads_rounds(self):
        # larson at 2 threads in 5 interleaved rounds (each run's rows: round, seconds, peak RSS): memspace's median
        # 0.30 s [0.20-0.90], glibc 0.60 [0.50-0.70], mimalloc 0.25 [0.10-0.40] (the fastest peer), tcmalloc 0.40;
        # the ratios are of the medians (0.30/0.60, 0.30/0.25), not medians of the rounds' ratios; peak RSS 10 MiB
        # [8-12] against glibc's 5 and tcmalloc's 8 (the smallest peer); jemalloc and tbbmalloc not installed
        secs = {"memspace": (0.2, 0.9, 0.3, 0.25, 0.35), "glibc": (0.5, 0.7, 0.6, 0.55, 0.65),
                "mimalloc": (0.1, 0.4, 0.25, 0.2, 0.3), "tcmalloc": (0.4, 0.4, 0.4, 0.4, 0.4)}
        rss = {"memspace": (8, 12, 10, 9, 11), "glibc": (5,) * 5, "mimalloc": (9,) * 5, "tcmalloc": (8,) * 5}
        with open(os.path.join(self.results, "heap.csv"), "a") as f:
            f.write("heap,larson,jemalloc,2,0,status,not_installed\nheap,larson,tbbmalloc,2,0,status,not_installed\n")
            for r in range(5):
                for i in secs:
                    f.write(f"heap,larson,{i},2,0,round,{r + 1}\nheap,larson,{i},2,0,seconds,{secs[i][r]}\n"
                            f"heap,larson,{i},2,0,peak_rss_bytes,{rss[i][r] * 1048576}\n")
        with open(os.path.join(self.results, "heap.cmd"), "a") as f:
            f.write("heap workloads: rounds=5 threads=2 scales=larson:6,xmalloc:2\n")
        _, doc = self.write()
        self.assertNotIn("one round each", doc)
        self.assertIn("#### mimalloc-bench-style workloads (our own programs): wall seconds and peak RSS, median "
                      "[min-max] of the interleaved rounds", doc)
        self.assertIn("Work per run (`--scale`): `larson` 6, `xmalloc` 2.", doc)
        self.assertEqual(self.row(doc, "| larson | 2 | memspace")[3:],
                         ["5", "0.300 [0.200-0.900]", "0.50x", "1.20x (mimalloc)", "10.0 [8.0-12.0]", "2.00x",
                          "1.25x (tcmalloc)"])
        self.assertEqual(self.row(doc, "| larson | 2 | glibc")[3:],
                         ["5", "0.600 [0.500-0.700]", "1.00x", "2.40x", "5.0 [5.0-5.0]", "1.00x", "0.62x"])
        self.assertEqual(self.row(doc, "| larson | 2 | mimalloc")[3:6], ["5", "0.250 [0.100-0.400]", "0.42x"])
        self.assertEqual(self.row(doc, "| larson | 2 | jemalloc")[3:], ["not installed"] + [""] * 6)
        self.assertEqual(self.row(doc, "| larson | 2 | tbbmalloc")[3], "not installed")
        # issue #26's larson target: the medians' ratio and the range of the rounds' ratios (no jemalloc: not
        # measured)
        self.assertIn("- not measured: larson, 2 threads: peak RSS within 1.1x jemalloc's", doc)

    def test_no_peer_installed(self):
        with open(os.path.join(self.results, "heap.csv"), "w") as f:
            f.write(HEADER + "heap,rptest,memspace-performance,1,0,ops_per_cpu_s,2e6\n"
                    "heap,rptest,glibc,1,0,ops_per_cpu_s,1e6\n" +
                    "".join(f"heap,rptest,{p},1,0,status,not_installed\n"
                            for p in ("jemalloc", "mimalloc", "tcmalloc", "tbbmalloc")))
        readme, _ = self.write()
        cells = self.row(readme, "| seed workload, long window (rptest_long): this run has none")
        self.assertEqual(cells[1:], ["not measured"] * 3)
        cells = self.row(self.write()[1], "| 1 | memspace-performance")
        self.assertEqual(cells[2:4], ["2.00 M", "2.00x"])
        cells = self.row(readme, "| memory kept 1 s after")
        self.assertEqual(cells[1:], ["not measured", "not measured", "jemalloc not installed; mimalloc not installed; "
                                     "tcmalloc not installed; tbbmalloc not installed"])

    def test_check(self):
        self.assertEqual(run("--check", *self.args).returncode, 1)  # the document does not exist yet
        self.write()
        self.assertEqual(run("--check", *self.args).returncode, 0)
        with open(self.readme, "a") as f:
            f.write("edited\n")
        self.assertEqual(run("--check", *self.args).returncode, 0)  # outside the block: not the script's
        with open(self.readme) as f:
            text = f.read()
        with open(self.readme, "w") as f:
            f.write(text.replace("6.00x", "6.10x", 1))
        r = run("--check", *self.args)
        self.assertEqual(r.returncode, 1)
        self.assertIn("is stale", r.stderr)

    def test_document_alone(self):
        # an installed memspace bench has no README: --readme '' writes the document only
        r = run("--results", self.results, "--readme", "", "--doc", self.doc)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.readme) as f:
            self.assertEqual(f.read(), README)
        with open(self.doc) as f:
            self.assertIn("| 1 | memspace-performance | 6.00 M [5.00 M-9.00 M] |", f.read())

    def test_check_cost(self):
        """bench/heap/check_cost.sh's CSV becomes a section of the document: instructions with and without the
        checks and their difference, times as median [min-max]; without the CSV there is no such section"""
        self.assertNotIn("free-list checks cost", self.write()[1])
        with open(os.path.join(self.results, "check_cost.csv"), "w") as f:
            f.write(HEADER + "check_cost,sqlite3/checked,memspace,1,0,instructions,1020000000\n"
                    "check_cost,sqlite3/unchecked,memspace,1,0,instructions,1000000000\n" +
                    "".join(f"check_cost,sqlite3/{impl},memspace,1,0,{m},{v}\n" for impl, m, vs in (
                        ("checked", "cpu_s", (.3, .5, .4)), ("unchecked", "cpu_s", (.2, .4, .3)),
                        ("checked", "wall_s", (.6, 1.0, .8)), ("unchecked", "wall_s", (.5, .9, .7))) for v in vs))
        with open(os.path.join(self.results, "check_cost.cmd"), "w") as f:
            f.write("command: bench/heap/check_cost.sh --runs 3\nsource: 0123456789abcdef0123\n")
        readme, doc = self.write()
        self.assertIn("## heap: what the free-list checks cost", doc)
        self.assertIn("`bench/heap/check_cost.sh --runs 3` (source 0123456789ab)", doc)
        self.assertIn("median [min-max] of 3 interleaved runs", doc)
        self.assertEqual(self.row(doc, "| sqlite3")[1:], ["1020.0 M", "1000.0 M", "+2.00%", "0.400 [0.300-0.500]",
                                                          "0.300 [0.200-0.400]", "0.800 [0.600-1.000]",
                                                          "0.700 [0.500-0.900]"])
        self.assertNotIn("check_cost", readme)

    def test_spill_fill_usage(self):
        # the rounds at 0.5x a 1 GiB limit with what each run spent (issue #23): plain and auto, three rounds each;
        # auto's fill 2x plain's wall time with the same faults and CPU time: the table's medians, the target
        # line's context (the median of the rounds' CPU ratios)
        half = 512 << 20
        csv_rows = ["spill,spill,python,1,1073741824,max_completed_bytes,3221225472"]
        for cfg, walls, users, syss in (("plain", (0.1, 0.2, 0.3), (0.03, 0.03, 0.03), (0.07, 0.17, 0.1)),
                                        ("auto", (0.2, 0.4, 0.6), (0.03, 0.03, 0.03), (0.07, 0.17, 0.1))):
            for i in range(3):
                for m, v in (("alloc_s", walls[i]), ("read_ops_per_s", 1e7), ("write_ops_per_s", 2e7),
                             ("fill_page_faults", 768), ("fill_user_s", users[i]), ("fill_sys_s", syss[i]),
                             ("read_page_faults", 392), ("write_page_faults", 0), ("read_cpu_s", 0.012)):
                    csv_rows.append(f"spill,pair-run-{cfg},python,1,{half},{m},{v}")
        for m, v in (("alloc_x", 2.0), ("reads_x", 1.0), ("writes_x", 1.0), ("alloc_min_x", 2.0), ("alloc_max_x", 2.0),
                     ("reads_min_x", 1.0), ("reads_max_x", 1.0), ("writes_min_x", 1.0), ("writes_max_x", 1.0)):
            csv_rows.append(f"spill,pair-ratio-auto,python,1,{half},{m},{v}")
        with open(os.path.join(self.results, "spill.csv"), "w") as f:
            f.write(HEADER + "\n".join(csv_rows) + "\n")
        _, doc = self.write()
        self.assertEqual(self.row(doc, "| python | 512 MiB | auto |")[3:],
                         ["0.400", "768", "0.030", "0.100", "0.200", "392", "0.0120"])
        self.assertEqual(self.row(doc, "| python | 512 MiB | plain |")[3:],
                         ["0.200", "768", "0.030", "0.100", "0.000", "392", "0.0120"])
        self.assertIn("beside it the fill's CPU time 1.00x [1.00-1.00] plain's (median and range of the rounds' "
                      "ratios: user 0.030 + system 0.100 s against 0.030 + 0.100 s), page faults 768 against 768", doc)

    def write_spill_past(self, csv_rows, s, runs, ratios):
        """spill.csv of csv_rows, then each config's rounds at size s (runs: config -> [{metric: value}], rows
        past-run-CONFIG) and the rows past-ratio-auto (ratios: (metric, value)); the report's text"""
        for cfg, each in runs.items():
            csv_rows += [f"spill,past-run-{cfg},python,1,{s},{m},{v}" for d in each for m, v in d.items()]
        csv_rows += [f"spill,past-ratio-auto,python,1,{s},{m},{v}" for m, v in ratios]
        with open(os.path.join(self.results, "spill.csv"), "w") as f:
            f.write(HEADER + "\n".join(csv_rows) + "\n")
        return self.write()[1]

    def test_spill_past_rounds(self):
        # past the limit (issue #23): auto and the 64M threshold in turn, three rounds at 1.5x a 1 GiB limit
        # (round 1 the sweeps' runs): each round's allocation times, the median of the rounds' own ratios and
        # their range judge the target, not the sweeps' one run of each (auto 1.5 s against 1.0 s there: 1.50x);
        # at 3x only the sweeps' runs: the one-run ratio, said so
        lim, s, s3 = 1 << 30, 3 << 29, 3 << 30
        csv_rows = ["spill,spill,python,1,1073741824,max_completed_bytes,3221225472",
                    f"spill,spill,python,1,{s},alloc_s,1.0", f"spill,auto,python,1,{s},alloc_s,1.5",
                    f"spill,spill,python,1,{s3},alloc_s,2.0", f"spill,auto,python,1,{s3},alloc_s,2.4"]
        runs = {cfg: [{"alloc_s": w, "read_ops_per_s": 1e4, "write_ops_per_s": 1e4, "fill_page_faults": 1000,
                       "fill_user_s": 0.1, "fill_sys_s": 0.4} for w in walls]
                for cfg, walls in (("spill", (1.0, 2.0, 3.0)), ("auto", (1.5, 2.0, 2.7)))}
        doc = self.write_spill_past(csv_rows, s, runs, (
            ("alloc_x", 1.0), ("alloc_min_x", 0.9), ("alloc_max_x", 1.5), ("reads_x", 1.0), ("reads_min_x", 1.0),
            ("reads_max_x", 1.0), ("writes_x", 1.0), ("writes_min_x", 1.0), ("writes_max_x", 1.0), ("rounds", 3)))
        self.assertIn("- met: python: auto at 1.5x the limit completes, allocation within 1.1x the 64M threshold's: "
                      "1.00x (in turn, median of 3 rounds' ratios, round 1 the sweeps' runs; range 0.90-1.50; the "
                      "rounds: 1.50x, 1.00x, 0.90x); beside it the fill's CPU time 1.00x [1.00-1.00] the 64M "
                      "threshold's", doc)
        self.assertIn("- **missed**: python: auto at 3x the limit completes, allocation within 1.1x the 64M "
                      "threshold's: 1.20x (one run of each, in their own sweeps)", doc)
        self.assertEqual(self.row(doc, "| python | 1536 MiB | 1.5x | 1.00 / 1.50, 2.00 / 2.00, 3.00 / 2.70 |")[4:],
                         ["1.00x [0.90-1.50]", "1.00x [1.00-1.00]", "1.00x [1.00-1.00]"])
        # a run that failed in the rounds misses the target, whatever the sweeps' ratio
        with open(os.path.join(self.results, "spill.csv"), "a") as f:
            f.write(f"spill,past-run-auto,python,1,{s3},failed,1\n")
        _, doc = self.write()
        self.assertIn("- **missed**: python: auto at 3x the limit completes, allocation within 1.1x the 64M "
                      "threshold's: auto failed in the rounds in turn", doc)

    def test_spill_past_thread_split(self):
        # past the limit (issue #23): beside the rounds' ratio, the fill split by thread (seed.py), medians of auto's
        # rounds against the threshold's, so that a round whose maintenance thread found no CPU (its write-back
        # behind, the program's thread waiting for a CPU) reads as the machine's, not as auto's
        s = 3 << 29
        csv_rows = ["spill,spill,python,1,1073741824,max_completed_bytes,1610612736",
                    f"spill,spill,python,1,{s},alloc_s,1.0", f"spill,auto,python,1,{s},alloc_s,1.6"]
        runs = {cfg: [{"alloc_s": 1.0 + wait, "read_ops_per_s": 1e4, "write_ops_per_s": 1e4, "fill_main_cpu_s": main,
                       "fill_main_wait_s": wait, "fill_maint_cpu_s": maint, "fill_dirty_bytes": dirty}
                      for main, wait, maint, dirty in split]
                for cfg, split in (("spill", ((1.1, 0.0, 0.3, 80 << 20),) * 3),
                                   ("auto", ((1.1, 0.5, 0.05, 500 << 20), (1.2, 0.4, 0.1, 400 << 20),
                                             (1.0, 0.6, 0.0, 600 << 20))))}
        doc = self.write_spill_past(csv_rows, s, runs, (("alloc_x", 1.5), ("alloc_min_x", 1.4), ("alloc_max_x", 1.6),
                                                        ("rounds", 3)))
        self.assertIn("rounds: 1.50x, 1.40x, 1.60x); the fill's threads (medians, auto against the threshold): the "
                      "program's 1.10 s on a CPU and 0.50 s waiting for one against 1.10 and 0.00 s, the maintenance "
                      "thread's 0.05 s against 0.30 s, dirty at the fill's end 500 MiB against 80 MiB", doc)

    def test_spill_auto_probe_past_the_limit(self):
        # auto's probe target (issue #23, past the limit) is judged on auto's runs in the rounds in turn against the
        # idle windows between them (rows past-auto, past-idle), not on its whole sweep (data that fits included,
        # other minutes of the machine): 2.60 ms against 1.40 ms there meets it, the sweep's 3.79 ms against 1.74 ms
        # would not; without the rounds' rows the sweep's figures are judged, as before
        sweep = ["spill,spill,python,1,1073741824,max_completed_bytes,3221225472",
                 "spill,auto,python,1,536870912,alloc_s,0.5",
                 "spill,auto/probe-10ms,memspace,1,67108864,p99_ns,3790000",
                 "spill,idle/probe-10ms,glibc,1,67108864,p99_ns,1740000"]
        past = ["spill,past-auto/probe-10ms,memspace,1,67108864,p99_ns,2600000",
                "spill,past-auto/probe-10ms,memspace,1,67108864,rounds,2500",
                "spill,past-spill/probe-10ms,memspace,1,67108864,p99_ns,2700000",
                "spill,past-idle/probe-10ms,glibc,1,67108864,p99_ns,1400000",
                "spill,past-idle/probe-10ms,glibc,1,67108864,window_p99_min_ns,800000",
                "spill,past-idle/probe-10ms,glibc,1,67108864,window_p99_max_ns,3100000"]
        with open(os.path.join(self.results, "spill.csv"), "w") as f:
            f.write(HEADER + "\n".join(sweep) + "\n")
        _, doc = self.write()
        self.assertIn("- **missed**: auto: the 10-ms probe's p99 3.79 ms against the idle machine's 1.74 ms (<= 2x: "
                      "2.18x)", doc)
        with open(os.path.join(self.results, "spill.csv"), "w") as f:
            f.write(HEADER + "\n".join(sweep + past) + "\n")
        _, doc = self.write()
        self.assertIn("- met: auto: the 10-ms probe's p99 past the limit 2.60 ms against the idle machine's 1.40 ms "
                      "(<= 2x: 1.86x; over auto's runs in the rounds in turn, 2500 rounds; the 64M threshold's 2.70 ms "
                      "in the same rounds; idle windows between the runs, their p99s 0.80 ms-3.10 ms)", doc)

    def test_without_markers(self):
        with open(self.readme, "w") as f:
            f.write("# no block\n")
        r = run(*self.args)
        self.assertEqual(r.returncode, 2)
        self.assertIn("results:begin", r.stderr)


class PlotHelpers(unittest.TestCase):
    """bench/plots/heap.py's helpers (plain Python: matplotlib is imported only to draw)"""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(SRC, "bench"))
        sys.path.insert(0, os.path.join(SRC, "bench", "plots"))
        import heap  # noqa: E402
        cls.heap = heap

    def test_reached_all_reads_the_csv_digits(self):
        # the CSV keeps 9 significant digits: a block that reached 1 GiB reads 1.07374182e+09 < 2^30
        self.assertTrue(self.heap.reached_all({"value": 1.07374182e+09, "size_bytes": "1073741824"}))
        self.assertFalse(self.heap.reached_all({"value": 424673280.0, "size_bytes": "1073741824"}))

    def test_presets_note_follows_the_data(self):
        def rows(perf, unl):
            return [{"part": "heap", "case": "rptest", "impl": i, "threads": "1", "size_bytes": "0",
                     "metric": "ops_per_cpu_s", "value": str(v)}
                    for i, vs in (("memspace-performance", perf), ("memspace-unlimited", unl)) for v in vs]
        note = self.heap.presets_note(rows((6, 12, 14), (7, 8, 11)), ["rptest"])
        self.assertIn("overlap at every thread count", note)
        self.assertNotIn("every thread count", self.heap.presets_note(rows((12, 13, 14), (7, 8, 9)), ["rptest"]))

    def test_plots_from_the_committed_csv(self):
        py = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
        if subprocess.run([py, "-c", "import matplotlib"], capture_output=True).returncode != 0:
            self.skipTest("no matplotlib for " + py)
        with tempfile.TemporaryDirectory() as d:
            for part, png in (("heap", "heap-programs.png"),):  # (each part takes seconds: one is enough here)
                csv_path = os.path.join(SRC, "bench", "results", part + ".csv")
                r = subprocess.run([py, os.path.join(SRC, "bench", "plot.py"), csv_path, d], capture_output=True,
                                   text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(os.path.getsize(os.path.join(d, png)) > 0)


if __name__ == "__main__":
    unittest.main()
