/* Huge pages through the page layer: hugetlb 2 MiB from the pool the fixture reserved (tests/os/huge_pool.sh),
   1 GiB and an exhausted pool falling back (reported) or failing with MS_PAGES_NO_FALLBACK.
   Exit 77 (skip) with the kernel's reason when no 2 MiB page can be had. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "internal.h"
#include "ms_test.h"

static long free_pages(void) {
  FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "r");
  long v = -1;
  if (f) {
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

static void hugetlb_2m(void **state) {
  (void)state;
  size_t h = 2u << 20;
  ms_pages_t r;
  assert_int_equal(ms_pages_reserve(3 * h - 5, 0, MS_PAGES_HUGE_2M | MS_PAGES_NO_FALLBACK, -1, &r), 0);
  assert_int_equal(r.kind, MS_PAGE_HUGE_2M);
  assert_int_equal(r.page_size, h);
  assert_int_equal(r.size, 3 * h);
  assert_int_equal((uintptr_t)r.addr % h, 0);
  assert_int_equal(r.fallback, 0);
  memset(r.addr, 1, r.size); /* committed at once: no SIGBUS possible */
  assert_int_equal(ms_test_kernel_page_size(r.addr), h); /* what the kernel really mapped */
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  assert_true(st.os_hugetlb_bytes >= r.size);
  assert_int_equal(ms_pages_reset(r.addr, h), 0);      /* hugetlb: MADV_DONTNEED */
  assert_int_equal(ms_pages_decommit(r.addr, h), 0);   /* stays mapped (pool pages return to the pool) */
  ((char *)r.addr)[0] = 2;
  assert_int_equal(ms_pages_populate(r.addr, h), 0);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
  ms_stats_get(&st, sizeof st);
  assert_int_equal(st.os_hugetlb_bytes, 0);
  /* an aligned hugetlb reservation */
  assert_int_equal(ms_pages_reserve(h, 8 * h, MS_PAGES_HUGE_2M | MS_PAGES_NO_FALLBACK, -1, &r), 0);
  assert_int_equal((uintptr_t)r.addr % (8 * h), 0);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

static void pool_exhausted(void **state) {
  (void)state;
  long fr = free_pages();
  if (fr < 0) ms_skip_refused(ENOENT, "no 2 MiB huge page pool (free_hugepages unreadable)");
  size_t want = (size_t)(fr + 4) * (2u << 20);
  ms_pages_t r;
  errno = 0;
  assert_int_equal(ms_pages_reserve(want, 0, MS_PAGES_HUGE_2M | MS_PAGES_NO_FALLBACK, -1, &r), ENOMEM);
  assert_int_equal(errno, ENOMEM);
  ms_stats_t a, b;
  ms_stats_get(&a, sizeof a);
  assert_int_equal(ms_pages_reserve(want, 0, MS_PAGES_HUGE_2M, -1, &r), 0);
  assert_int_equal(r.fallback, 1);
  assert_true(r.kind == MS_PAGE_THP || r.kind == MS_PAGE_BASE);
  ms_stats_get(&b, sizeof b);
  assert_true(b.os_huge_fallbacks > a.os_huge_fallbacks);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

static void gigantic(void **state) {
  (void)state;
  ms_pages_t r;
  int e = ms_pages_reserve(1u << 20, 0, MS_PAGES_HUGE_1G | MS_PAGES_NO_FALLBACK, -1, &r);
  if (e == 0) { /* a 1 GiB page was free */
    assert_int_equal(r.kind, MS_PAGE_HUGE_1G);
    assert_int_equal(ms_test_kernel_page_size(r.addr), 1u << 30);
    assert_int_equal(ms_pages_release(r.addr, r.size), 0);
  } else {
    assert_int_equal(e, ENOMEM);
  }
  /* 1 GiB, then 2 MiB: falls back to the pool the fixture reserved */
  e = ms_pages_reserve(2u << 20, 0, MS_PAGES_HUGE_1G | MS_PAGES_HUGE_2M, -1, &r);
  assert_int_equal(e, 0);
  assert_true(r.kind == MS_PAGE_HUGE_1G || r.kind == MS_PAGE_HUGE_2M);
  assert_int_equal(ms_test_kernel_page_size(r.addr), r.page_size); /* the kernel agrees */
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

static void frame_hugetlb(void **state) {
  (void)state;
  ms_option_set(MS_OPTION_HUGE_PAGES, 2 << 20);
  ms_frame_config_t c;
  memset(&c, 0, sizeof c);
  c.range_size = 2u << 20;
  c.policy = MS_FRAME_HUGE;
  c.idle_ms = -1;
  ms_frame_t *f = ms_frame_create(&c);
  ms_option_set(MS_OPTION_HUGE_PAGES, 0);
  assert_non_null(f);
  for (int k = 0; k < 4; k++) {
    char *p = ms_frame_alloc(f, 1u << 20, 0);
    assert_non_null(p);
    memset(p, k, 1u << 20);
    ms_frame_flip(f);
  }
  /* the kernel backs the ranges with 2 MiB pages (hugetlb, or THP when the pool ran dry: then AnonHugePages) */
  char *p = ms_frame_alloc(f, 4096, 0);
  assert_non_null(p);
  p[0] = 1;
  assert_int_equal(ms_test_kernel_page_size(p), 2u << 20);
  /* idle gives back the last frame's 1 MiB, rounded to the 2 MiB page, and the page just touched */
  assert_true(ms_frame_idle(f) >= 2u << 20);
  assert_int_equal(p[0], 0);
  ms_frame_destroy(f);
}

/* more hugetlb reservations than a fixed table of 256 holds: each one's page size stays known, so a decommit
   keeps it accessible and a whole-page release of a part of it works */
static void many_hugetlb_ranges(void **state) {
  (void)state;
  enum { N = 260 };
  size_t h = 2u << 20;
  long fr = free_pages();
  if (fr < N) {
    ms_skip_refused(ENOMEM, "%d free 2 MiB pages needed, the pool has %ld (the fixture could not reserve them)", N, fr);
  }
  static ms_pages_t r[N];
  for (int i = 0; i < N; i++) {
    assert_int_equal(ms_pages_reserve(i == N - 1 ? 2 * h : h, 0, MS_PAGES_HUGE_2M | MS_PAGES_NO_FALLBACK, -1, &r[i]), 0);
    assert_int_equal(r[i].kind, MS_PAGE_HUGE_2M);
  }
  char *last = r[N - 1].addr;
  last[0] = 5;
  assert_int_equal(ms_pages_decommit(last, h), 0);
  assert_int_equal(last[0], 0);           /* still accessible, contents gone */
  assert_int_equal(ms_pages_release(last + h, h), 0); /* the second huge page of it */
  assert_int_equal(ms_pages_release(last, 1), 0);     /* rounded up to the huge page */
  for (int i = 0; i < N - 1; i++) assert_int_equal(ms_pages_release(r[i].addr, r[i].size), 0);
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  assert_int_equal(st.os_hugetlb_bytes, 0);
}

int main(void) {
  ms_pages_t r;
  int e = ms_pages_reserve(2u << 20, 0, MS_PAGES_HUGE_2M | MS_PAGES_NO_FALLBACK, -1, &r);
  if (e) {
    printf("SKIP: no 2 MiB hugetlb page available (%s; free in pool: %ld)\n", strerror(e), free_pages());
    return 77;
  }
  ms_pages_release(r.addr, r.size);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hugetlb_2m),
      cmocka_unit_test(pool_exhausted),
      cmocka_unit_test(gigantic),
      cmocka_unit_test(frame_hugetlb),
      cmocka_unit_test(many_hugetlb_ranges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
