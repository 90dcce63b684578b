/* SPDX-License-Identifier: MIT */
/* MEMSPACE_SPILL_THRESHOLD=auto (src/spill/budget.c, docs/spill.md): the option's value, one sample read from fake
   cgroup v1 and v2 trees, /proc/meminfo and /proc/pressure/memory files, and the decision with its hysteresis.
   The switch itself under a real cgroup is spill_scripts.py cgroup_auto / cgroup_autofork. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "ms_test.h"
#include "../../src/spill/spill_internal.h"
#include "fake_files.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define MiB (1ull << 20)

static char root[] = "/tmp/memspace-auto-XXXXXX";

static void put(const char *rel, const char *text) { assert_true(fake_put(root, rel, text)); }
static const char *at(const char *rel) {
  static char path[4][512];
  static int n;
  char *p = path[n++ & 3];
  snprintf(p, 512, "%s/%s", root, rel);
  return p;
}

/* `auto` is the option's value -1 (MEMSPACE_SPILL_THRESHOLD=auto from the environment: spill_scripts.py
   cgroup_auto); other negative values are refused; the routing threshold is auto's minimum */
static void test_option(void **state) {
  (void)state;
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, MSI_SPILL_AUTO), 0);
  assert_int_equal(ms_option_get(MS_OPTION_SPILL_THRESHOLD), MSI_SPILL_AUTO);
  assert_true(msi_spill_auto());
  assert_int_equal(msi_spill_threshold(), MSI_SPILL_AUTO_MIN);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, -2), EINVAL);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 4 * MiB), 0);
  assert_false(msi_spill_auto());
  assert_int_equal(msi_spill_threshold(), 4 * MiB);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, MSI_SPILL_AUTO), 0);
  assert_true(msi_spill_auto());
  char text[512];
  msi_options_describe(text, sizeof text);
  assert_non_null(strstr(text, "SPILL_THRESHOLD=auto"));
}

static void test_read_v2(void **state) {
  (void)state;
  assert_non_null(mkdtemp(root));
  const uint64_t ram = 8192 * MiB;
  put("memory.stat", "anon 1\nfile_dirty 2\n");
  put("app/memory.max", "1073741824\n");
  put("app/memory.high", "max\n");
  put("app/memory.stat", "anon 314572800\nfile 900000000\nshmem 10485760\nfile_dirty 20971520\nfile_writeback 1048576\n");
  put("meminfo", "MemTotal: 8388608 kB\nMemAvailable: 4194304 kB\nSwapFree: 1048576 kB\n");
  put("pressure", "some avg10=23.50 avg60=1.00 avg300=0.00 total=1\nfull avg10=1.00 avg60=0 avg300=0 total=1\n");
  msi_os_cgroup_t cg;
  msi_os_cgroup_find(root, "0::/app\n", ram, &cg);
  assert_int_equal(cg.version, 2);
  assert_int_equal(cg.limit, 1024 * MiB);
  msi_sp_auto_sample_t s;
  msi_sp_auto_read(&cg, at("meminfo"), at("pressure"), &s);
  assert_true(s.ok);
  /* anonymous + shmem + dirty + writeback; the clean page cache ("file") does not count */
  assert_int_equal(s.used, 314572800ull + 10485760 + 20971520 + 1048576);
  assert_int_equal(s.avail, (4194304ull + 1048576) * 1024);
  assert_int_equal(s.pressure, 23);
  assert_int_equal(s.cg_pressure, 0); /* no memory.pressure of its own */
  assert_int_equal(msi_sp_auto_room(&s), 1024 * MiB - s.used); /* the cgroup is the smaller */
  /* the page counter ahead of memory.stat (its per-CPU statistics not folded in yet): memory.current less the
     clean page cache counts; one behind it does not lower the count */
  put("app/memory.current", "1500000000\n");
  msi_sp_auto_read(&cg, at("meminfo"), at("pressure"), &s);
  assert_int_equal(s.used, 1500000000ull - (900000000ull - 10485760 - 20971520 - 1048576));
  put("app/memory.current", "100\n");
  msi_sp_auto_read(&cg, at("meminfo"), at("pressure"), &s);
  assert_int_equal(s.used, 314572800ull + 10485760 + 20971520 + 1048576);
  /* the cgroup's own memory.pressure (v2) */
  put("app/memory.pressure", "some avg10=41.07 avg60=2.00 avg300=0.00 total=9\nfull avg10=3.00 avg60=0 avg300=0 total=1\n");
  msi_sp_auto_read(&cg, at("meminfo"), at("pressure"), &s);
  assert_int_equal(s.cg_pressure, 41);
  assert_int_equal(s.pressure, 23);
  /* a neighbour took the machine's memory: its room bounds ours */
  put("meminfo", "MemTotal: 8388608 kB\nMemAvailable: 102400 kB\nSwapFree: 0 kB\n");
  msi_sp_auto_read(&cg, at("meminfo"), NULL, &s);
  assert_int_equal(msi_sp_auto_room(&s), 100 * MiB);
  assert_int_equal(s.pressure, 0); /* no pressure file */
  /* an unreadable memory.stat: no sample (the previous one serves) */
  msi_snprintf(cg.stat_path, sizeof cg.stat_path, "%s", at("app/missing.stat"));
  msi_sp_auto_read(&cg, at("meminfo"), NULL, &s);
  assert_false(s.ok);
}

static void test_read_v1_and_none(void **state) {
  (void)state;
  const uint64_t ram = 8192 * MiB;
  put("memory/job/memory.limit_in_bytes", "536870912\n");
  put("memory/job/memory.stat", "cache 1\nrss 5\ntotal_rss 209715200\ntotal_shmem 0\ntotal_dirty 4194304\n"
                                "total_writeback 0\ntotal_cache 400000000\n");
  put("meminfo", "MemTotal: 8388608 kB\nMemAvailable: 4194304 kB\n"); /* no swap line */
  msi_os_cgroup_t cg;
  msi_os_cgroup_find(root, "5:memory:/job\n0::/\n", ram, &cg);
  assert_int_equal(cg.version, 1);
  assert_int_equal(cg.limit, 512 * MiB);
  msi_sp_auto_sample_t s;
  msi_sp_auto_read(&cg, at("meminfo"), NULL, &s);
  assert_true(s.ok);
  assert_int_equal(s.used, 209715200ull + 4194304);
  assert_int_equal(s.avail, 4096 * MiB);
  assert_int_equal(s.cg_pressure, 0); /* v1 has no memory.pressure */
  /* v1's page counter ahead of memory.stat: usage less the clean page cache (total_cache - dirty - writeback) */
  put("memory/job/memory.usage_in_bytes", "700000000\n");
  msi_sp_auto_read(&cg, at("meminfo"), NULL, &s);
  assert_int_equal(s.used, 700000000ull - (400000000ull - 4194304));
  put("memory/job/memory.usage_in_bytes", "garbage\n");
  msi_sp_auto_read(&cg, at("meminfo"), NULL, &s);
  assert_int_equal(s.used, 209715200ull + 4194304);
  assert_int_equal(msi_sp_auto_room(&s), 512 * MiB - s.used);
  /* no cgroup limit: the room is MemAvailable + SwapFree */
  msi_os_cgroup_find(root, "0::/\n", ram, &cg);
  assert_string_equal(cg.stat_path, "");
  put("meminfo", "MemTotal: 8388608 kB\nMemAvailable: 2097152 kB\nSwapFree: 1048576 kB\n");
  msi_sp_auto_read(&cg, at("meminfo"), NULL, &s);
  assert_true(s.ok);
  assert_int_equal(msi_sp_auto_room(&s), 3072 * MiB);
  /* no readable meminfo (a chroot or a container without /proc): sysinfo's free memory and swap, not no room */
  msi_sp_auto_read(&cg, at("missing-meminfo"), NULL, &s);
  assert_true(s.ok);
  uint64_t free_ram, total;
  assert_true(msi_os_sysinfo_value("MemAvailable", &free_ram));
  assert_true(msi_os_sysinfo_value("MemTotal", &total));
  assert_true(s.avail >= free_ram / 2 && s.avail != UINT64_MAX);
  assert_true(free_ram > 0 && free_ram <= total);
  assert_false(msi_os_sysinfo_value("Cached", &total));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

static bool decide(uint64_t cg_room, uint64_t machine_room, unsigned pressure, unsigned cg_pressure, bool spilling,
                   uint64_t block, int *why) {
  msi_sp_auto_view_t v = {.budget = 1024 * MiB, .cg_room = cg_room, .machine_room = machine_room,
                          .pressure = pressure, .cg_pressure = cg_pressure, .spilling = spilling};
  return msi_sp_auto_decide(&v, block, why);
}

/* RAM while room - block keeps a quarter of the budget; spilling until it keeps a quarter plus an eighth (no
   flapping around the mark); pressure past 10% raises the mark of its own scope */
static void test_decide(void **state) {
  (void)state;
  const uint64_t lots = 20000 * MiB;
  int why = 0;
  assert_false(decide(300 * MiB, lots, 0, 0, false, 40 * MiB, &why));
  assert_true(decide(300 * MiB, lots, 0, 0, false, 50 * MiB, &why));
  assert_int_equal(why, MSI_SP_AUTO_BUDGET);
  assert_true(decide(lots, 300 * MiB, 0, 0, false, 50 * MiB, &why));
  assert_int_equal(why, MSI_SP_AUTO_MACHINE);
  assert_true(decide(10 * MiB, lots, 0, 0, false, 20 * MiB, &why)); /* larger than the room */
  /* hysteresis: spilling, the same room and block stay in spill until room - block >= 3/8 of the budget */
  assert_true(decide(300 * MiB, lots, 0, 0, true, 40 * MiB, &why));
  assert_true(decide(400 * MiB, lots, 0, 0, true, 40 * MiB, &why));
  assert_false(decide(430 * MiB, lots, 0, 0, true, 40 * MiB, &why));
  /* the machine's pressure: 5% is a busy machine's noise; 30% raises the machine room's mark by 20% of the
     budget, and only the machine's: with gigabytes free a block that fits the cgroup stays in RAM */
  assert_false(decide(300 * MiB, 300 * MiB, 5, 0, false, 40 * MiB, &why));
  assert_true(decide(300 * MiB, 300 * MiB, 30, 0, false, 40 * MiB, &why));
  assert_int_equal(why, MSI_SP_AUTO_PRESSURE);
  assert_false(decide(300 * MiB, 520 * MiB, 30, 0, false, 40 * MiB, &why));
  assert_false(decide(878 * MiB, lots, 60, 0, false, 512 * MiB, &why)); /* numpy at 0.5x: 146 MiB counted */
  /* the cgroup's own pressure (v2 memory.pressure) raises the cgroup room's mark */
  assert_true(decide(300 * MiB, lots, 0, 30, false, 40 * MiB, &why));
  assert_int_equal(why, MSI_SP_AUTO_PRESSURE);
  assert_false(decide(520 * MiB, lots, 0, 30, false, 40 * MiB, &why));
  assert_string_equal(msi_sp_auto_reason_name(MSI_SP_AUTO_PRESSURE), "pressure");
}

/* a fake cgroup v1 tree under root: a 1 GiB limit with `rss` bytes counted, a machine with room and no pressure,
   made the budget's and auto's files (the budget is found once: the fake tree replaces it, before auto's set-up) */
static void fake_job(uint64_t rss) {
  strcpy(root, "/tmp/memspace-auto-XXXXXX");
  assert_non_null(mkdtemp(root));
  char stat[256];
  snprintf(stat, sizeof stat, "total_rss %llu\ntotal_shmem 0\ntotal_dirty 0\ntotal_writeback 0\ntotal_cache 0\n",
           (unsigned long long)rss);
  put("memory/job/memory.limit_in_bytes", "1073741824\n");
  put("memory/job/memory.stat", stat);
  put("meminfo", "MemTotal: 67108864 kB\nMemAvailable: 60000000 kB\nSwapFree: 0 kB\n");
  put("pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n");
  msi_sp_budget_find();
  msi_os_cgroup_find(root, "5:memory:/job\n0::/\n", 65536 * MiB, &msi_spill_budget.cg);
  assert_int_equal(msi_spill_budget.cg.limit, 1024 * MiB);
  static char meminfo[512], pressure[512]; /* (kept by auto) */
  snprintf(meminfo, sizeof meminfo, "%s", at("meminfo"));
  snprintf(pressure, sizeof pressure, "%s", at("pressure"));
  msi_sp_auto_set_files(meminfo, pressure);
  msi_sp_auto_init();
}

/* When a sample is taken. A program whose data fits (R at half a 1 GiB limit: its 512 MiB vector, then a 1.6 MB
   temporary of a gather) takes no sample for the small block that follows a large one: the bytes sent to RAM
   count in the estimate, which leaves the block far from the mark (reading the files would land inside R's
   timed gather; they are read again once the bytes sent to RAM pass budget/64). Large blocks, blocks near
   the mark and a spilling program sample every 50 ms; small blocks far from the mark every second. */
static void test_samples(void **state) {
  (void)state;
  fake_job(10 * MiB);
  uint64_t n0 = msi_sp_auto_samples(), t0 = msi_now_ns();
  assert_false(msi_spill_auto_wants(512 * MiB)); /* the first candidate: a sample, RAM */
  assert_int_equal(msi_sp_auto_samples(), n0 + 1);
  put("memory/job/memory.stat", "total_rss 548405248\ntotal_shmem 0\ntotal_dirty 0\ntotal_writeback 0\ntotal_cache 0\n");
  assert_false(msi_spill_auto_wants(1600 * 1024)); /* far from the mark: the estimate serves */
  assert_false(msi_spill_auto_wants(1600 * 1024));
  if (msi_now_ns() - t0 < 1000000000ull) /* (a second's stall in between would make a sample due: not a failure) */
    assert_int_equal(msi_sp_auto_samples(), n0 + 1);
  /* the rule itself (1 GiB budget, 16 MiB large blocks): the estimate's age, the block, the distance to the mark */
  const uint64_t ms = 1000000;
  msi_sp_auto_view_t far = {.budget = 1024 * MiB, .cg_room = 466 * MiB, .machine_room = 60000 * MiB};
  msi_sp_auto_view_t near = far, spilling = far;
  near.cg_room = 380 * MiB;
  spilling.spilling = true;
  assert_false(msi_sp_auto_stale(&far, 2 * MiB, 16 * MiB, 40 * ms));   /* within 50 ms: never */
  assert_false(msi_sp_auto_stale(&near, 2 * MiB, 16 * MiB, 40 * ms));
  assert_false(msi_sp_auto_stale(&far, 2 * MiB, 16 * MiB, 900 * ms));  /* small, far: up to a second */
  assert_true(msi_sp_auto_stale(&far, 2 * MiB, 16 * MiB, 1000 * ms));
  assert_true(msi_sp_auto_stale(&far, 16 * MiB, 16 * MiB, 60 * ms));   /* large */
  assert_true(msi_sp_auto_stale(&near, 2 * MiB, 16 * MiB, 60 * ms));   /* near the mark */
  assert_true(msi_sp_auto_stale(&spilling, 2 * MiB, 16 * MiB, 60 * ms));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

/* A program spilling that allocates and frees a spilled block in a loop reads the budget's files at most once per
   period, plus once per eighth of the budget (the hysteresis margin) of spilled bytes freed, not at every free's
   next allocation (a sample per malloc/free pair of 1 MiB, where the 64M threshold reads none). The bound counts
   the periods the loop took (its allocations' and the maintenance tick's samples), so a slow machine loosens it
   and never fails it. */
static void test_free_loop_samples(void **state) {
  (void)state;
  fake_job(1000 * MiB); /* 1000 MiB counted of 1024: every candidate block goes to spill */
  msi_sp_auto_fork_child(); /* (the next candidate takes a sample, as a forked child's first one does) */
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, MSI_SPILL_AUTO), 0);
  void *p = ms_malloc(MiB);
  assert_non_null(p);
  if (!ms_spill_is(p)) { /* no usable spill directory here: the block stayed in RAM */
    ms_free(p);
    ms_skip_refused(0, "no usable spill directory (a block of 1 MiB stayed in RAM)");
  }
  ms_free(p);
  const int loops = 200;
  uint64_t n0 = msi_sp_auto_samples(), t0 = msi_now_ns();
  for (int i = 0; i < loops; i++) {
    p = ms_malloc(MiB);
    assert_non_null(p);
    assert_true(ms_spill_is(p));
    ((char *)p)[0] = 1;
    ms_free(p);
  }
  uint64_t periods = (msi_now_ns() - t0) / 50000000ull + 1, freed_steps = (uint64_t)loops * MiB / (128 * MiB);
  uint64_t samples = msi_sp_auto_samples() - n0;
  print_message("%llu samples for %d malloc/free pairs of spilled 1 MiB blocks in %llu periods of 50 ms\n",
                (unsigned long long)samples, loops, (unsigned long long)periods);
  assert_true(samples <= 2 * periods + freed_steps + 2);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 0), 0);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

/* Small requests under spill take malloc's fast path to the heap's small blocks, as without spill: under auto
   and a fixed threshold every malloc took the routed path (route_alloc, alloc_routed, alloc_in, the threshold,
   the heap's general entry), 109 instructions where the fast path takes 21 (callgrind, 1,000,000 malloc/free
   pairs of 16-271 bytes preloaded: 165 M instructions under auto against 76 M without spill). Below a threshold
   smaller than the heap's small blocks the fast path stops at the threshold. */
static void test_fast_path(void **state) {
  (void)state;
  ms_free(ms_malloc(32)); /* (the first allocation: its slow path reads the options) */
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 0), 0);
  size_t plain = msi_route_small_below();
  assert_true(plain > 256);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, MSI_SPILL_AUTO), 0);
  assert_int_equal(msi_route_small_below(), plain);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 64 * MiB), 0);
  assert_int_equal(msi_route_small_below(), plain);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 200), 0);
  assert_int_equal(msi_route_small_below(), 200);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, MSI_SPILL_AUTO), 0);
  void *p = ms_malloc(100);
  assert_non_null(p);
  assert_false(ms_spill_is(p));
  ms_free(p);
}

/* Odd limit files: a number past 2^64 (no kernel writes one, a fake or broken cgroupfs may) is no limit, not the
   value it wraps to; "max", an empty file, a negative or non-numeric value are no limit either; 0 is a limit */
static void test_odd_limits(void **state) {
  (void)state;
  mkdir(root, 0700); /* (the tests before may have removed it) */
  const uint64_t ram = 8192 * MiB;
  msi_os_cgroup_t cg;
  static const char *const none[] = {"max\n", "", "-1\n", " 12\n", "junk\n", "18446744073709551617\n",
                                     "36893488147419103232\n", "99999999999999999999999999999999\n"};
  for (unsigned i = 0; i < sizeof none / sizeof *none; i++) {
    put("odd/memory.stat", "anon 1\nfile_dirty 2\n");
    put("odd/memory.max", none[i]);
    put("odd/memory.high", "max\n");
    msi_os_cgroup_find(root, "0::/odd\n", ram, &cg);
    assert_int_equal(cg.version, 2);
    if (cg.limit != ram) fprintf(stderr, "memory.max '%s' taken as a limit of %llu\n", none[i], (unsigned long long)cg.limit);
    assert_int_equal(cg.limit, ram);
    assert_string_equal(cg.stat_path, "");
  }
  /* memory.high below memory.max: the smaller; a value ending without a newline */
  put("odd/memory.max", "1073741824");
  put("odd/memory.high", "536870912\n");
  msi_os_cgroup_find(root, "0::/odd\n", ram, &cg);
  assert_int_equal(cg.limit, 512 * MiB);
  /* a usage counter or memory.stat value past 2^64 counts as the most (no room), not as what it wraps to */
  put("odd/memory.stat", "anon 1048576\nshmem 0\nfile_dirty 0\nfile_writeback 0\nfile 0\n");
  put("odd/memory.current", "18446744073709551617\n");
  msi_sp_auto_sample_t s;
  msi_sp_auto_read(&cg, NULL, NULL, &s);
  assert_true(s.ok);
  assert_int_equal(msi_sp_auto_cg_room(&s), 0);
  put("odd/memory.current", "0\n");
  put("odd/memory.stat", "anon 18446744073709551617\nshmem 4096\nfile_dirty 0\nfile_writeback 0\nfile 0\n");
  msi_sp_auto_read(&cg, NULL, NULL, &s);
  assert_int_equal(msi_sp_auto_cg_room(&s), 0);
  /* a /proc/meminfo figure in kB whose bytes pass 2^64 (a faked file) is the most, not what kB * 1024 wraps to
     (2^54 kB wrapped to 0 bytes available: every large block spilled) */
  uint64_t b;
  assert_true(msi_os_text_kb("MemAvailable: 18014398509481984 kB\n", "MemAvailable:", &b));
  assert_true(b == UINT64_MAX);
  assert_true(msi_os_text_kb("Dirty: 18014398509481983 kB\n", "Dirty", &b));
  assert_true(b == UINT64_MAX - 1023);
  assert_true(msi_os_text_kb("Dirty: 99999999999999999999999 kB\n", "Dirty", &b));
  assert_true(b == UINT64_MAX);
  put("meminfo", "MemTotal: 8388608 kB\nMemAvailable: 18014398509481984 kB\nSwapFree: 0 kB\n");
  msi_sp_auto_read(&cg, at("meminfo"), NULL, &s);
  assert_true(s.avail == UINT64_MAX);
  put("meminfo", "MemTotal: 8388608 kB\nMemAvailable: 18014398509481983 kB\nSwapFree: 18014398509481983 kB\n");
  msi_sp_auto_read(&cg, at("meminfo"), NULL, &s);
  assert_true(s.avail == UINT64_MAX);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_option), cmocka_unit_test(test_read_v2), cmocka_unit_test(test_read_v1_and_none),
      cmocka_unit_test(test_decide), cmocka_unit_test(test_samples), cmocka_unit_test(test_fast_path),
      cmocka_unit_test(test_free_loop_samples), cmocka_unit_test(test_odd_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
