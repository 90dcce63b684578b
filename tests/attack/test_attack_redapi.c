/* A red-team pass over the public API of the spaces, DMA and pages parts, against include/memspace.h's /// promises
   and docs/spaces.md's worst-case memory:
   - with CAP_SYS_ADMIN, ms_dma_segments / ms_dma_phys / ms_dma_verify return the open's errno (EMFILE, ENFILE)
     when /proc/self/pagemap cannot be opened for want of a file descriptor (RLIMIT_NOFILE reached), the
     statistics unchanged, and build the list at the next call once a descriptor is free: EPERM ("without
     CAP_SYS_ADMIN") and "not readable (no CAP_SYS_ADMIN)" there would make a driver give up on physical addresses
     for good;
   - the ENOMEM of those three calls (the list's memory refused), checked here with the page layer's fault
     injection, and the next call builds the list: promises.tsv maps the three promises to this test, one that
     makes the ENOMEM happen;
   - MS_DMA_NO_FALLBACK with page_size 0 means "a huge page of some size, never base pages" (docs/dma.md), and the
     header says so: a buffer above 512 MiB may go from 1 GiB to 2 MiB pages under it;
   - docs/spaces.md's bounds (Bound 1 and 2: no request can fail when H >= ...) count whole frames of n inside one
     region, since a block never crosses a region boundary: a fixed 64 KiB space grown by two ms_space_expand of
     32 KiB (H = 128 KiB = M + n with M = n = 64 KiB, no small block) refuses a 64 KiB block. The bounds hold for
     the space's regions whose sizes are multiples of n, as the document says;
   - MS_SPACE_HUGE_PAGES with MS_SPACE_AT_FIRSTALLOC commits (and pre-faults) the whole space at creation, since
     hugetlb pages are taken when mapped, and the header and the MEMSPACE_VERBOSE message say so;
   - the page layer records a THP range (base pages advised for transparent huge pages) with the kernel's page
     (base) and whether it is THP: ms_pages_release of its first 4 KiB releases 4 KiB (a record of 2 MiB taken for
     hugetlb would unmap 2 MiB of the caller's memory and refuse 4 KiB elsewhere with EINVAL), ms_pages_decommit
     makes the range inaccessible, reset uses MADV_FREE, and a release leaves os_hugetlb_bytes alone and takes
     what it releases off os_thp_bytes;
   - ms_dma_register with MS_DMA_CONTIGUOUS of one page without CAP_SYS_ADMIN registers it, as ms_dma_alloc takes
     one page as contiguous by construction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "memspace.h"
#include "ms_test.h"

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

/* a buffer on base pages (mlocked), or a skip with the kernel's reason */
static ms_dma_buffer_t *base_buffer(size_t size) {
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.numa_node = -1;
  c.page_size = (size_t)sysconf(_SC_PAGESIZE);
  ms_dma_buffer_t *b = ms_dma_alloc(size, &c);
  if (!b) ms_skip_refused(errno, "ms_dma_alloc of %zu bytes on base pages (mlock)", size);
  return b;
}

/* physical addresses readable (CAP_SYS_ADMIN), or a skip */
static void need_phys(void) {
  ms_dma_buffer_t *b = base_buffer(4 * KiB);
  size_t n;
  int e = ms_dma_segments(b, &n) ? 0 : errno;
  ms_dma_free(b);
  if (e == EPERM) ms_skip_refused(e, "physical addresses (/proc/self/pagemap gives PFN 0 without CAP_SYS_ADMIN)");
  assert_int_equal(e, 0);
}

static size_t list_sum(const ms_dma_segment_t *s, size_t n) {
  size_t sum = 0;
  for (size_t i = 0; i < n; i++) sum += s[i].length;
  return sum;
}

/* ENOMEM from the list's memory: each call fails with count 0 and builds the list at the next call */
static void dma_list_enomem(void **state) {
  (void)state;
  need_phys();
  for (int call = 0; call < 3; call++) {
    size_t size = call == 2 ? 4 * MiB + 100 : 3 * 4 * KiB + 5; /* 4 MiB: the scratch list of a bulk read too */
    ms_dma_buffer_t *b = base_buffer(size);
    size_t n = 99, moved = 99;
    uint64_t phys = 0;
    ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
    errno = 0;
    if (call == 0) {
      assert_null(ms_dma_segments(b, &n));
      assert_int_equal(errno, ENOMEM);
      assert_int_equal(n, 0);
    } else if (call == 1) {
      assert_int_equal(ms_dma_phys(b, 0, &phys), ENOMEM);
      assert_int_equal(errno, ENOMEM);
    } else {
      assert_int_equal(ms_dma_verify(b, &moved), ENOMEM); /* the first verify builds the list */
      assert_int_equal(errno, ENOMEM);
      assert_int_equal(moved, 0);
    }
    ms_fault_inject(MS_FAULT_MMAP, 0, 0);
    ms_dma_info_t info;
    assert_int_equal(ms_dma_info(b, &info), 0);
    assert_int_equal(info.segments, 0); /* not built */
    const ms_dma_segment_t *s = ms_dma_segments(b, &n);
    assert_non_null(s);
    assert_true(n >= 1);
    assert_int_equal(list_sum(s, n), size);
    if (call == 2) { /* a built list: verify's scratch list refused */
      ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
      errno = 0;
      assert_int_equal(ms_dma_verify(b, &moved), ENOMEM);
      assert_int_equal(errno, ENOMEM);
      ms_fault_inject(MS_FAULT_MMAP, 0, 0);
      int r = ms_dma_verify(b, &moved);
      assert_true(r == 0 || r == ESTALE);
      s = ms_dma_segments(b, &n);
      assert_int_equal(list_sum(s, n), size);
    }
    ms_dma_free(b);
  }
}

/* the child of dma_list_no_descriptor: 0, or the number of the check that failed */
static int no_descriptor_child(void) {
  ms_dma_buffer_t *b = base_buffer(8 * KiB);
  ms_dma_config_t hc;
  memset(&hc, 0, sizeof hc);
  hc.numa_node = -1;
  hc.page_size = 2 * MiB;
  hc.flags = MS_DMA_CONTIGUOUS;
  int fds[64], nfd = 0;
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = 48;
  if (setrlimit(RLIMIT_NOFILE, &rl)) return 90;
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;)
    if (nfd < 64) fds[nfd++] = fd;
  if (errno != EMFILE) return 91;
  size_t n = 7;
  uint64_t phys;
  errno = 0;
  if (ms_dma_segments(b, &n) || n != 0) return 1;
  if (errno != EMFILE) return 2; /* not EPERM: nothing about privilege */
  if (ms_dma_phys(b, 0, &phys) != EMFILE || errno != EMFILE) return 3;
  if (ms_dma_verify(b, NULL) != EMFILE || errno != EMFILE) return 4;
  /* one 2 MiB page is contiguous by construction: allocated even when its layout cannot be read */
  ms_dma_buffer_t *h = ms_dma_alloc(4 * KiB, &hc);
  if (!h && errno != ENOMEM) return 5; /* ENOMEM: no free 2 MiB page, nothing to check */
  ms_dma_free(h);
  for (int i = 0; i < nfd; i++) close(fds[i]);
  const ms_dma_segment_t *s = ms_dma_segments(b, &n);
  if (!s || list_sum(s, n) != 8 * KiB) return 6;
  if (ms_dma_phys(b, 4 * KiB, &phys) || phys == 0) return 7;
  ms_dma_free(b);
  return 0;
}

/* runs fn in a forked child; its exit status (the number of the check that failed, 0, or MS_TEST_SKIP) */
static int in_child(int (*fn)(void)) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(fn());
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  if (WEXITSTATUS(st) && WEXITSTATUS(st) != MS_TEST_SKIP) print_message("child failed at check %d\n", WEXITSTATUS(st));
  return WEXITSTATUS(st);
}

/* no file descriptor left to open /proc/self/pagemap: EMFILE, never EPERM, and the list once one is free */
static void dma_list_no_descriptor(void **state) {
  (void)state;
  need_phys();
  assert_int_equal(in_child(no_descriptor_child), 0);
}

/* page_size 0 with MS_DMA_NO_FALLBACK: a huge page of some size or ENOMEM, never base pages */
static void dma_best_no_fallback_never_base(void **state) {
  (void)state;
  long long total = ms_test_read_ll("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages");
  if (total < 0) ms_skip_refused(ENOENT, "the kernel has no 2 MiB huge pages");
  size_t too_big = (size_t)(total + 1) * 2 * MiB; /* more than the whole 2 MiB pool */
  if (too_big > 512 * MiB) {
    print_message("(2 MiB pool of %lld pages: a buffer beyond it would try 1 GiB pages first; not tried)\n", total);
    return;
  }
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.numa_node = -1;
  c.flags = MS_DMA_NO_FALLBACK;
  errno = 0;
  ms_dma_buffer_t *b = ms_dma_alloc(too_big, &c);
  if (b) { /* the pool grew meanwhile (another program): then on huge pages */
    assert_true(ms_dma_page_size(b) >= 2 * MiB);
    ms_dma_free(b);
  } else {
    assert_int_equal(errno, ENOMEM);
  }
  /* small enough for base pages, which the flag never gives: 2 MiB pages or ENOMEM */
  b = ms_dma_alloc(4 * KiB, &c);
  if (b) assert_int_equal(ms_dma_page_size(b), 2 * MiB);
  else assert_int_equal(errno, ENOMEM);
  ms_dma_free(b);
}

static size_t largest_free(ms_space_t *s) {
  ms_space_info_t i;
  assert_int_equal(ms_space_info(s, &i), 0);
  return i.largest_free_block;
}

/* Bound 2 of docs/spaces.md, H >= M + n (N_s + 1), with M = n = 64 KiB and no small block: it holds when the
   space's regions are multiples of n, and a block never spans two regions, so regions smaller than n do not count */
static void space_bound_needs_whole_regions(void **state) {
  (void)state;
  const size_t n = 64 * KiB;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = n;
  c.numa_node = -1;
  for (int split = 0; split < 2; split++) {
    ms_space_t *s = ms_space_create(&c);
    assert_non_null(s);
    void *a = ms_space_malloc(s, n); /* M = n */
    assert_non_null(a);
    if (split) { /* H = 2n in two regions of n/2 */
      assert_int_equal(ms_space_expand(s, n / 2), 0);
      assert_int_equal(ms_space_expand(s, n / 2), 0);
    } else { /* H = 2n in regions of n */
      assert_int_equal(ms_space_expand(s, n), 0);
    }
    ms_space_info_t i;
    assert_int_equal(ms_space_info(s, &i), 0);
    assert_int_equal(i.size, 2 * n);
    void *b = ms_space_malloc(s, n);
    if (split) {
      assert_null(b); /* the free n bytes are two regions: no block of n */
      assert_int_equal(errno, ENOMEM);
      assert_int_equal(largest_free(s), n / 2);
    } else {
      assert_non_null(b);
    }
    assert_int_equal(ms_space_check(s), 0);
    ms_space_destroy(s);
  }
}

/* MS_SPACE_HUGE_PAGES with MS_SPACE_AT_FIRSTALLOC: committed at creation (hugetlb pages are taken when mapped),
   which ms_space_info shows before any allocation, as it does for MS_SPACE_AT_START */
static void huge_space_committed_at_creation(void **state) {
  (void)state;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 4 * MiB;
  c.at = MS_SPACE_AT_FIRSTALLOC;
  c.flags = MS_SPACE_HUGE_PAGES;
  c.numa_node = -1;
  ms_stats_t st0, st1;
  assert_int_equal(ms_stats_get(&st0, sizeof st0), 0);
  ms_space_t *s = ms_space_create(&c);
  if (!s) ms_skip_refused(errno, "a 4 MiB huge-page space");
  ms_space_info_t i;
  assert_int_equal(ms_space_info(s, &i), 0);
  assert_true(i.size >= c.initial_size); /* committed now, not at the first allocation */
  assert_int_equal(i.used, 0);
  assert_int_equal(ms_stats_get(&st1, sizeof st1), 0);
  assert_true(st1.os_hugetlb_bytes + st1.os_thp_bytes + st1.os_committed_bytes >=
              st0.os_hugetlb_bytes + st0.os_thp_bytes + st0.os_committed_bytes + c.initial_size);
  void *p = ms_space_malloc(s, 100);
  assert_non_null(p);
  ms_space_info_t j;
  assert_int_equal(ms_space_info(s, &j), 0);
  assert_int_equal(j.size, i.size);
  assert_int_equal(j.expand_count, 0);
  ms_space_destroy(s);
}

/* 1 when the byte at p can be read (a forked child reads it: SIGSEGV otherwise) */
static int readable(const volatile char *p) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL); /* cmocka's handler would carry on with the next test */
    _exit(p[0] == 0x5a ? 0 : 1);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st);
}

/* a THP range (MS_PAGE_THP: base pages advised, page_size 2 MiB) is released, decommitted and reset page by
   page as the base pages it is: a 4 KiB release takes 4 KiB, not the 2 MiB around it, a decommitted page is
   inaccessible, and a hugetlb range's bytes in the statistics stay what they are */
static void thp_range_parts_are_base_pages(void **state) {
  (void)state;
  const size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  ms_pages_t t;
  assert_int_equal(ms_pages_reserve(4 * MiB, 0, MS_PAGES_THP | MS_PAGES_COMMIT, -1, &t), 0);
  if (t.kind != MS_PAGE_THP) {
    ms_pages_release(t.addr, t.size);
    ms_skip_refused(0, "no transparent huge pages (THP off, or madvise refused)");
  }
  assert_int_equal(t.page_size, 2 * MiB);
  char *a = t.addr;
  memset(a, 0x5a, t.size);
  ms_pages_t h;
  int hr = ms_pages_reserve(2 * MiB, 0, MS_PAGES_HUGE_2M | MS_PAGES_NO_FALLBACK, -1, &h);
  ms_stats_t st0, st1;
  assert_int_equal(ms_stats_get(&st0, sizeof st0), 0);
  /* one base page at the start, one in the middle of the first 2 MiB */
  assert_int_equal(ms_pages_release(a, ps), 0);
  assert_int_equal(ms_pages_release(a + 8 * ps, ps), 0);
  assert_int_equal(ms_stats_get(&st1, sizeof st1), 0);
  assert_int_equal(st1.os_reserved_bytes, st0.os_reserved_bytes - 2 * ps);
  assert_int_equal(st1.os_hugetlb_bytes, st0.os_hugetlb_bytes); /* a THP range is no hugetlb memory */
  assert_int_equal(st1.os_thp_bytes, st0.os_thp_bytes - 2 * ps);   /* and what it advises shrinks by the parts */
  for (size_t off = ps; off < 2 * MiB; off += 7 * ps)
    if (off != 8 * ps) assert_int_equal(a[off], 0x5a); /* the rest kept, mapped and intact */
  assert_int_equal(a[2 * MiB - 1], 0x5a);
  /* decommit: inaccessible (PROT_NONE) until committed again, then zero */
  assert_int_equal(ms_pages_decommit(a + 2 * MiB, ps), 0);
  assert_int_equal(readable(a + 2 * MiB), 0);
  assert_int_equal(readable(a + 2 * MiB + ps), 1);
  assert_int_equal(ms_pages_commit(a + 2 * MiB, ps), 0);
  assert_int_equal(a[2 * MiB], 0);
  assert_int_equal(ms_pages_reset(a + 3 * MiB, ps), 0);
  assert_int_equal(ms_pages_release(a + ps, 7 * ps), 0);
  assert_int_equal(ms_pages_release(a + 9 * ps, t.size - 9 * ps), 0);
  assert_int_equal(ms_stats_get(&st1, sizeof st1), 0);
  assert_int_equal(st1.os_thp_bytes, st0.os_thp_bytes - t.size); /* released: advised no more */
  if (hr == 0) {
    assert_int_equal(ms_pages_release(h.addr, h.size), 0);
  }
}

/* the child of dma_register_contiguous_one_page: without privilege (uid nobody: no CAP_SYS_ADMIN, pagemap gives
   PFN 0) one page registers with MS_DMA_CONTIGUOUS, two pages are EPERM (their layout cannot be read) */
static int register_contiguous_child(void) {
  const size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  char *m = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 90;
  if (setgid(65534) || setuid(65534)) return MS_TEST_SKIP;
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.numa_node = -1;
  c.flags = MS_DMA_CONTIGUOUS;
  errno = 0;
  ms_dma_buffer_t *b = ms_dma_register(m, ps, &c);
  if (!b) return errno == ENOMEM || errno == EAGAIN ? MS_TEST_SKIP : 1; /* (mlock refused: nothing to check) */
  if (ms_dma_size(b) != ps) return 2;
  ms_dma_free(b);
  errno = 0;
  if (ms_dma_register(m, 2 * ps, &c)) return 3;
  if (errno != EPERM) return 4;
  return 0;
}

/* ms_dma_register with MS_DMA_CONTIGUOUS without CAP_SYS_ADMIN: one page is contiguous by construction, as for
   ms_dma_alloc */
static void dma_register_contiguous_one_page(void **state) {
  (void)state;
  int st = in_child(register_contiguous_child);
  if (st == MS_TEST_SKIP) ms_skip_refused(EPERM, "setuid(nobody), or the lock of one page, refused");
  assert_int_equal(st, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(dma_list_enomem),
    cmocka_unit_test(dma_list_no_descriptor),
    cmocka_unit_test(dma_best_no_fallback_never_base),
    cmocka_unit_test(space_bound_needs_whole_regions),
    cmocka_unit_test(huge_space_committed_at_creation),
    cmocka_unit_test(thp_range_parts_are_base_pages),
    cmocka_unit_test(dma_register_contiguous_one_page),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
