/* Memory pressure (src/core/maint.c, the heap's slow paths): the look at a cgroup's usage and the machine's memory
   stall from files the test writes (no root, no timing: the clock is a parameter), and what a thread's slow paths
   do under pressure (its empty current spans leave their classes). The cgroup itself is test_heap_cgroup_purge's
   (bench/heap/cgroup_purge.c --test). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "heap.h"

static char dir[64];

static void put(const char *name, const char *text) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* (two buffers in turn: a call may name two files) */
static const char *path_of(const char *name) {
  static char path[2][128];
  static int next;
  char *p = path[next++ & 1];
  snprintf(p, sizeof path[0], "%s/%s", dir, name);
  return p;
}

#define PSI(total) "some avg10=0.00 avg60=0.00 avg300=0.00 total=" #total "\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"

/* a cgroup's usage against its limit: pressure from within a fifth of it */
static void cgroup_usage_near_the_limit(void **state) {
  (void)state;
  msi_pressure_t p;
  msi_pressure_init(&p, 1000000, path_of("usage"), NULL, NULL);
  put("usage", "799999\n");
  assert_false(msi_pressure_look(&p, 1, true));
  assert_int_equal(p.used, 799999);
  put("usage", "800000\n");
  assert_true(msi_pressure_look(&p, 2, true));
  put("usage", "1000000\n");
  assert_true(msi_pressure_look(&p, 3, false));
  put("usage", "10\n");
  assert_false(msi_pressure_look(&p, 4, true));
  /* no limit, or an unreadable usage file: never */
  msi_pressure_init(&p, 0, path_of("usage"), NULL, NULL);
  put("usage", "999999999\n");
  assert_false(msi_pressure_look(&p, 5, true));
  msi_pressure_init(&p, 1000, path_of("missing"), NULL, NULL);
  assert_false(msi_pressure_look(&p, 6, true));
}

/* Pressure found lasts while each look finds the usage 1 MiB or more below the last one (the drain): a release
   that came while the program was still freeing brought the usage under four fifths of the limit, and what the
   program freed after it goes back at the next look, not after the purge delay */
static void pressure_lasts_while_usage_falls(void **state) {
  (void)state;
  msi_pressure_t p;
  msi_pressure_init(&p, 100 << 20, path_of("usage"), NULL, NULL);
  put("usage", "62914560\n");                 /* 60 MiB: no pressure */
  assert_false(msi_pressure_look(&p, 1, true));
  put("usage", "57671680\n");                 /* 55 MiB: falling, but no pressure to last */
  assert_false(msi_pressure_look(&p, 2, true));
  put("usage", "89128960\n");                 /* 85 MiB */
  assert_true(msi_pressure_look(&p, 3, true));
  put("usage", "73400320\n");                 /* 70 MiB: 15 MiB given back since */
  assert_true(msi_pressure_look(&p, 4, true));
  put("usage", "72351744\n");                 /* 69 MiB: 1 MiB more */
  assert_true(msi_pressure_look(&p, 5, true));
  put("usage", "71827456\n");                 /* 68.5 MiB: the drain is over */
  assert_false(msi_pressure_look(&p, 6, true));
  put("usage", "52428800\n");                 /* 50 MiB: falling again, without pressure */
  assert_false(msi_pressure_look(&p, 7, true));
}

#define MEMINFO(total_kb, avail_kb) "MemTotal:       " #total_kb " kB\nMemFree:        1000 kB\nMemAvailable:   " #avail_kb " kB\n"

/* the machine's memory stall: 1% of the time since the last look is pressure (the machine short of memory); the
   first look only reads */
static void stall_since_the_last_look(void **state) {
  (void)state;
  msi_pressure_t p;
  put("meminfo", MEMINFO(1000000, 99999)); /* under a tenth available */
  msi_pressure_init(&p, 0, NULL, path_of("psi"), path_of("meminfo"));
  put("psi", PSI(5000000));
  assert_false(msi_pressure_look(&p, 1000000000ull, true)); /* a first look: nothing to compare */
  put("psi", PSI(5000999));                                 /* 999 us stalled in 100 ms: under 1% */
  assert_false(msi_pressure_look(&p, 1100000000ull, true));
  put("psi", PSI(5002000));                                 /* 1001 us in 100 ms */
  assert_true(msi_pressure_look(&p, 1200000000ull, true));
  put("psi", PSI(9000000));                                 /* not due: not read */
  assert_false(msi_pressure_look(&p, 1300000000ull, false));
  assert_true(msi_pressure_look(&p, 1400000000ull, true)); /* 4 s stalled since 1.2 s */
  put("psi", "garbage\n");                                  /* unreadable: no more looks */
  assert_false(msi_pressure_look(&p, 1500000000ull, true));
  assert_int_equal(p.psi[0], 0);
}

/* The machine's stall counts every task, also one of another cgroup reclaiming at that cgroup's own limit: with a
   tenth of the machine's memory available or more it is no pressure (the program would give back and fault in
   again its working set at every look while another container is at its limit). An unreadable meminfo leaves
   the stall alone to decide */
static void stall_with_memory_available_is_no_pressure(void **state) {
  (void)state;
  msi_pressure_t p;
  put("meminfo", MEMINFO(24000000, 21000000));
  msi_pressure_init(&p, 0, NULL, path_of("psi"), path_of("meminfo"));
  put("psi", PSI(5000000));
  assert_false(msi_pressure_look(&p, 1000000000ull, true));
  put("psi", PSI(5050000));                                 /* 50 ms stalled in 100 ms */
  assert_false(msi_pressure_look(&p, 1100000000ull, true));
  put("meminfo", MEMINFO(24000000, 2400000));              /* a tenth: not short */
  put("psi", PSI(5100000));
  assert_false(msi_pressure_look(&p, 1200000000ull, true));
  put("meminfo", MEMINFO(24000000, 2399999));              /* short */
  put("psi", PSI(5150000));
  assert_true(msi_pressure_look(&p, 1300000000ull, true));
  put("meminfo", MEMINFO(24000000, 21000000));              /* short no more; no stall, no file read */
  put("psi", PSI(5150000));
  assert_false(msi_pressure_look(&p, 1400000000ull, true));
  msi_pressure_init(&p, 0, NULL, path_of("psi"), path_of("missing"));
  assert_false(msi_pressure_look(&p, 1500000000ull, true));
  put("psi", PSI(5200000));
  assert_true(msi_pressure_look(&p, 1600000000ull, true)); /* no meminfo: the stall alone */
}

/* Under pressure a thread's slow paths give back its empty current spans, which the preset otherwise keeps for
   the next block of their class: at the first slow path after a look that found pressure (epoch), and at once
   when the last block of a current span is freed while it lasts (msi_maint_pressure), once per class and look. */
static void empty_current_spans_leave_under_pressure(void **state) {
  (void)state;
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 1), 0); /* performance: empty current spans kept */
  void *a = ms_malloc(3000);
  assert_non_null(a);
  unsigned ca = msi_heap_class_of(3000), cb = msi_heap_class_of(5000), cc = msi_heap_class_of(7000);
  msi_heap_t *h = msi_tls_heap;
  ms_free(a);
  msi_span_t *sa = msi_heap_current(h, ca);
  assert_ptr_not_equal(sa, msi_heap_empty_span(h)); /* kept, empty */
  assert_int_equal(msi_span_used(sa), 0);
  atomic_fetch_add(&msi_maint_pressure_epoch, 1);
  void *b = ms_malloc(5000); /* a class's first block: the slow path */
  assert_non_null(b);
  assert_ptr_equal(msi_heap_current(h, ca), msi_heap_empty_span(h));
  assert_ptr_not_equal(msi_heap_current(h, cb), msi_heap_empty_span(h));
  atomic_store(&msi_maint_pressure, 1);
  ms_free(b); /* the last block of a current span */
  assert_ptr_equal(msi_heap_current(h, cb), msi_heap_empty_span(h));
  b = ms_malloc(5000); /* once per class and look: a loop of one block pays a slow path once */
  assert_non_null(b);
  ms_free(b);
  assert_ptr_not_equal(msi_heap_current(h, cb), msi_heap_empty_span(h));
  atomic_fetch_add(&msi_maint_pressure_epoch, 1); /* the next look */
  b = ms_malloc(5000);
  assert_non_null(b);
  ms_free(b);
  assert_ptr_equal(msi_heap_current(h, cb), msi_heap_empty_span(h));
  atomic_store(&msi_maint_pressure, 0);
  void *c = ms_malloc(7000);
  assert_non_null(c);
  ms_free(c);
  assert_ptr_not_equal(msi_heap_current(h, cc), msi_heap_empty_span(h)); /* no pressure: kept again */
}

/* pages of [addr, addr + len) resident */
static size_t resident(uintptr_t addr, size_t len) {
  static unsigned char vec[1024];
  size_t ps = (size_t)sysconf(_SC_PAGESIZE), n = (len + ps - 1) / ps, r = 0;
  assert_true(n <= sizeof vec);
  assert_int_equal(mincore((void *)addr, n * ps, vec), 0);
  for (size_t i = 0; i < n; i++) r += vec[i] & 1;
  return r;
}

/* While pressure lasts, what a thread frees goes back to the OS from the free itself, past a small thread cache
   (128 KiB per span length) and a small large-slot cache (1 MiB): a burst freed under pressure leaves RSS as it
   goes, whenever the next look comes (not cached until the next look's purge) */
enum { BURST = 2048, BURST_SIZE = 1000, LARGE_N = 8, LARGE_SIZE = 256 << 10 };
static void frees_under_pressure_go_back_at_once(void **state) {
  (void)state;
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 1), 0);
  msi_heap_mini_off = true; /* (normal spans: mini spans stay in their segment's header chunk) */
  static void *b[BURST], *l[LARGE_N];
  static msi_span_t *spans[BURST];
  size_t nspans = 0;
  for (int i = 0; i < BURST; i++) {
    assert_non_null(b[i] = ms_malloc(BURST_SIZE));
    memset(b[i], 1, BURST_SIZE);
    msi_span_t *s = msi_heap_span_of(b[i]);
    if (!nspans || spans[nspans - 1] != s) spans[nspans++] = s;
  }
  for (int i = 0; i < LARGE_N; i++) {
    assert_non_null(l[i] = ms_malloc(LARGE_SIZE));
    memset(l[i], 1, LARGE_SIZE);
  }
  atomic_store(&msi_maint_pressure, 1);
  for (int i = 0; i < BURST; i++) ms_free(b[i]);
  for (int i = 0; i < LARGE_N; i++) ms_free(l[i]);
  atomic_store(&msi_maint_pressure, 0);
  size_t kept = 0, gone_large = 0;
  for (size_t i = 0; i < nspans; i++) kept += resident(spans[i]->base & ~(MSI_HEAP_CHUNK - 1), MSI_HEAP_CHUNK) != 0;
  for (int i = 0; i < LARGE_N; i++) gone_large += resident((uintptr_t)l[i], LARGE_SIZE) == 0;
  print_message("%zu of %zu spans resident after the frees, %zu of %d large blocks' pages gone\n", kept, nspans,
                gone_large, LARGE_N);
  assert_true(nspans >= 16);
  assert_true(kept <= 3); /* the thread cache's two spans of one chunk, and the current one */
  assert_true(gone_large >= LARGE_N - 4);
  msi_heap_mini_off = false;
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/ms-pressure-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cgroup_usage_near_the_limit),
      cmocka_unit_test(pressure_lasts_while_usage_falls),
      cmocka_unit_test(stall_since_the_last_look),
      cmocka_unit_test(stall_with_memory_available_is_no_pressure),
      cmocka_unit_test(empty_current_spans_leave_under_pressure),
      cmocka_unit_test(frees_under_pressure_go_back_at_once),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  unlink(path_of("usage"));
  unlink(path_of("psi"));
  rmdir(dir);
  return rc;
}
