/* Huge pages through the page layer: hugetlb 2 MiB from the pool the fixture reserved (tests/os/huge_pool.sh),
   1 GiB and an exhausted pool falling back (reported) or failing with MS_PAGES_NO_FALLBACK.
   Exit 77 (skip) with the kernel's reason when no 2 MiB page can be had. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
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

/* a space created with MS_SPACE_HUGE_PAGES: on 2 MiB hugetlb pages from the pool, and on base pages once
   MEMSPACE_HUGE_PAGES is 0 (here ms_option_set, which the variable sets the same way: the operator's switch), still
   fixed at its size, with a MEMSPACE_VERBOSE line saying so. In children: the option stays set for the process. */
static int huge_space_pages(void) {
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 4u << 20;
  c.flags = MS_SPACE_HUGE_PAGES;
  c.numa_node = -1;
  c.name = "huge_test";
  ms_space_t *s = ms_space_create(&c);
  if (!s) return 100;
  char *p = ms_space_malloc(s, 1u << 20);
  if (!p) return 101;
  p[0] = 1;
  size_t got = ms_test_kernel_page_size(p);
  int fixed = ms_space_expand(s, 1u << 20) == ENOMEM;
  ms_space_destroy(s);
  if (!fixed) return 102;
  return got == 2u << 20 ? 2 : got == (size_t)sysconf(_SC_PAGESIZE) ? 1 : 103;
}
static int huge_space_off(void) {
  char path[] = "/tmp/memspace-huge-space.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 104;
  unlink(path);
  fflush(stderr);
  if (dup2(fd, 2) < 0) return 105;
  if (ms_option_set(MS_OPTION_HUGE_PAGES, 0) != 0 || ms_option_set(MS_OPTION_VERBOSE, 1) != 0) return 106;
  int r = huge_space_pages();
  char buf[4096] = {0};
  if (pread(fd, buf, sizeof buf - 1, 0) < 0) return 107;
  if (!strstr(buf, "space huge_test: MS_SPACE_HUGE_PAGES under MEMSPACE_HUGE_PAGES=0")) return 108;
  return r;
}
static void space_huge_pages_zero(void **state) {
  (void)state;
  if (free_pages() < 2) ms_skip_refused(ENOMEM, "%ld free 2 MiB huge pages, 2 needed (the fixture could not reserve them)", free_pages());
  assert_int_equal(ms_test_in_child(huge_space_pages), 2);
  assert_int_equal(ms_test_in_child(huge_space_off), 1);
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

static uint64_t hugetlb_bytes(void) {
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  return st.os_hugetlb_bytes;
}

/* a 2 MiB hugetlb reservation at `want`, in a hole of base-page reservations: the kernel places a hugetlb
   mapping at the top of the highest gap of at least 4 MiB - 4 KiB (its size and the alignment slack), so the
   reservations that land elsewhere (a higher gap) are kept until one lands at `want`, then given back */
static ms_pages_t hugetlb_at(char *want) {
  ms_pages_t held[8], got = {0};
  int n = 0;
  while (n < 8 && ms_pages_reserve(2u << 20, 0, MS_PAGES_HUGE_2M | MS_PAGES_NO_FALLBACK, -1, &held[n]) == 0) {
    if (held[n].addr == want) { got = held[n]; break; }
    n++;
  }
  for (int i = 0; i < n; i++) assert_int_equal(ms_pages_release(held[i].addr, held[i].size), 0);
  return got;
}

/* whether the page at p is mapped (mincore fails with ENOMEM on a hole) */
static int mapped(const void *p) {
  unsigned char v;
  return mincore((void *)((uintptr_t)p & ~(uintptr_t)(ms_page_size() - 1)), 1, &v) == 0;
}

/* Releases beside a hugetlb range change only what they name, each part rounded to its own range's page (a
   hugetlb part to whole huge pages, from a huge page's start; a base part to base pages), and a refused one
   changes nothing. Three layouts from an 8 MiB base-page reservation B: a hole [B+2M, B+6M) gets the hugetlb
   range at its top, a base range just above it; a hole [B+2M, B+6M-4K) gets it at its bottom, a base range just
   below (twice: a release beside it, and one from the base range into it). */
static void release_beside_hugetlb(void **state) {
  (void)state;
  size_t h = 2u << 20, ps = ms_page_size();
  for (int mode = 0; mode < 3; mode++) {
    bool below = mode > 0;
    ms_pages_t b;
    assert_int_equal(ms_pages_reserve(4 * h, h, MS_PAGES_COMMIT, -1, &b), 0);
    char *base = b.addr, *hole = base + h, *hole_end = base + 3 * h - (below ? ps : 0), *top = base + 4 * h;
    assert_int_equal(ms_pages_release(hole, (size_t)(hole_end - hole)), 0);
    char *at = below ? hole : hole_end - h;
    ms_pages_t hr = hugetlb_at(at);
    if (!hr.addr) {
      ms_pages_release(base, h);
      ms_pages_release(hole_end, (size_t)(top - hole_end));
      ms_skip_refused(0, "no 2 MiB hugetlb mapping landed in a hole of base pages (other gaps above it)");
    }
    assert_int_equal(ms_test_kernel_page_size(at), h);
    uint64_t huge0 = hugetlb_bytes();
    if (mode == 0) { /* base pages just above: hi */
      char *hi = at + h;
      assert_int_equal(ms_pages_release(at + ps, h), EINVAL); /* from inside the huge page: nothing goes */
      assert_true(mapped(at + ps) && mapped(hi));
      assert_int_equal(hugetlb_bytes(), huge0);
      assert_int_equal(ms_pages_release(at, h + 1), 0); /* the huge page, one base page above, no more */
      assert_int_equal(hugetlb_bytes(), huge0 - h);
      assert_true(!mapped(at) && !mapped(hi) && mapped(hi + ps));
      assert_int_equal(ms_pages_release(hi + ps, (size_t)(top - hi - ps)), 0);
      assert_int_equal(ms_pages_release(base, h), 0);
    } else if (mode == 1) { /* base pages just below */
      assert_int_equal(ms_pages_release(at - ps, ps), 0); /* the last base page below it */
      assert_true(mapped(at) && mapped(at - 2 * ps));
      assert_int_equal(hugetlb_bytes(), huge0);
      assert_int_equal(ms_pages_release(at - 2 * ps, 2 * ps + 1), ENOMEM); /* a hole: nothing goes */
      assert_true(mapped(at) && mapped(at - 2 * ps));
      assert_int_equal(hugetlb_bytes(), huge0);
      assert_int_equal(ms_pages_release(at, 1), 0);
      assert_int_equal(ms_pages_release(base, h - ps), 0);
      assert_int_equal(ms_pages_release(hole_end, (size_t)(top - hole_end)), 0);
    } else { /* from the base range below into the hugetlb range: its huge page whole */
      assert_int_equal(ms_pages_release(at - ps, ps + 1), 0);
      assert_int_equal(hugetlb_bytes(), huge0 - h);
      assert_true(!mapped(at - ps) && !mapped(at) && !mapped(at + h - ps) && mapped(at - 2 * ps));
      assert_int_equal(ms_pages_release(base, h - ps), 0);
      assert_int_equal(ms_pages_release(hole_end, (size_t)(top - hole_end)), 0);
    }
    assert_int_equal(hugetlb_bytes(), huge0 - h);
  }
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
      cmocka_unit_test(space_huge_pages_zero), /* first: frame_hugetlb leaves HUGE_PAGES set to 0 */
      cmocka_unit_test(hugetlb_2m),
      cmocka_unit_test(pool_exhausted),
      cmocka_unit_test(gigantic),
      cmocka_unit_test(frame_hugetlb),
      cmocka_unit_test(many_hugetlb_ranges),
      cmocka_unit_test(release_beside_hugetlb),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
