/* DMA buffers: allocation per page size, fallback, contiguity, the scatter/gather list against pagemap read
   independently, coalescing, offset lookup, physical stability (compaction, fork), register/unregister, the
   loopback device over every event size and against corrupted lists, a space inside a buffer, no privilege,
   a tiny RLIMIT_MEMLOCK, bad input. Huge pages come from the dma_huge fixture; what it could not get is skipped
   with the kernel's reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "loopback.h"
#include "ms_test.h"
#include "os.h"

#define MLOCK_OBSERVABLE (!MS_TEST_MLOCK_NOOP) /* ms_test.h */
#define MiB (1024ul * 1024)
#define GiB (1024ul * MiB)
static const size_t event_sizes[] = {200, 1024, 4096, 16384, 65536, 262144, 1048576};

#define read_ll ms_test_read_ll
static long long free_2m(void) { return read_ll("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"); }
static long long free_1g(void) { return read_ll("/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages"); }

static long long status_kb(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long long v = -1;
  size_t len = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, field, len) == 0 && line[len] == ':') { v = atoll(line + len + 1); break; }
  if (f) fclose(f);
  return v;
}

static ms_dma_config_t cfg(size_t page, unsigned flags) {
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.page_size = page;
  c.numa_node = -1;
  c.flags = flags;
  return c;
}

#define SKIP_IF_NO_2M(n)                                                                                        \
  do {                                                                                                         \
    if (free_2m() < (n)) {                                                                                     \
      ms_skip_refused(ENOMEM, "%lld free 2 MiB huge pages, %d needed (the dma_huge fixture could not reserve "  \
                      "them: see its output)", free_2m(), (int)(n));                                           \
    }                                                                                                          \
  } while (0)

/* ms_dma_alloc, skipping the case when the buffer cannot be pinned because it is larger than RLIMIT_MEMLOCK
   (a process without CAP_IPC_LOCK: not root) */
static ms_dma_buffer_t *alloc_pinned(size_t size, const ms_dma_config_t *c) {
  ms_dma_buffer_t *b = ms_dma_alloc(size, c);
  struct rlimit rl;
  if (!b && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && size > rl.rlim_cur)
    ms_skip_refused(errno, "a pinned buffer of %zu bytes, RLIMIT_MEMLOCK %llu without CAP_IPC_LOCK", size,
                    (unsigned long long)rl.rlim_cur);
  return b;
}

/* physical addresses readable here? (root with CAP_SYS_ADMIN) */
static bool phys_readable(ms_dma_buffer_t *b) {
  size_t n;
  if (ms_dma_segments(b, &n)) return true;
  assert_int_equal(errno, EPERM);
  return false;
}
#define SKIP_IF_NO_PHYS(b)                                                                                      \
  do {                                                                                                         \
    if (!phys_readable(b)) {                                                                                   \
      ms_dma_free(b);                                                                                          \
      ms_skip_refused(EPERM, "physical addresses not readable (no CAP_SYS_ADMIN)");                           \
    }                                                                                                          \
  } while (0)

/* the list must match pagemap read independently, cover exactly the buffer, and be coalesced */
static void check_list(ms_dma_buffer_t *b) {
  size_t n = 0, size = ms_dma_size(b);
  const ms_dma_segment_t *s = ms_dma_segments(b, &n);
  assert_non_null(s);
  assert_true(n >= 1);
  size_t pages = (size + LB_PAGE - 1) / LB_PAGE;
  uint64_t *phys = calloc(pages + 1, 8);
  assert_int_equal(lb_phys_of_range(ms_dma_addr(b), size, phys), 0);
  size_t off = 0, largest = 0;
  for (size_t i = 0; i < n; i++) {
    assert_true(s[i].length > 0);
    if (i + 1 < n) assert_true(s[i].phys + s[i].length != s[i + 1].phys); /* coalesced */
    for (size_t o = 0; o < s[i].length; o += LB_PAGE - ((off + o) % LB_PAGE)) {
      size_t at = off + o;
      assert_true(phys[at / LB_PAGE] != 0);
      assert_int_equal(phys[at / LB_PAGE] + at % LB_PAGE, s[i].phys + o);
    }
    if (s[i].length > largest) largest = s[i].length;
    off += s[i].length;
  }
  assert_int_equal(off, size);
  ms_dma_info_t info;
  assert_int_equal(ms_dma_info(b, &info), 0);
  assert_int_equal(info.segments, n);
  assert_int_equal(info.largest_segment, largest);
  /* the page size bounds the number of runs */
  assert_true(n <= (size + ms_dma_page_size(b) - 1) / ms_dma_page_size(b));
  free(phys);
}

/* ---- allocation ---- */
static void alloc_base_pages(void **state) {
  (void)state;
  long long lck0 = status_kb("VmLck");
  ms_stats_t st0, st1;
  ms_stats_get(&st0, sizeof st0);
  ms_dma_config_t c = cfg(4096, 0);
  size_t size = 3 * MiB + 100;
  ms_dma_buffer_t *b = ms_dma_alloc(size, &c);
  assert_non_null(b);
  assert_int_equal(ms_dma_size(b), size);
  assert_int_equal(ms_dma_page_size(b), 4096);
  assert_int_equal(ms_dma_movable(b), 1);
  assert_int_equal((uintptr_t)ms_dma_addr(b) % 4096, 0);
  ms_dma_info_t info;
  assert_int_equal(ms_dma_info(b, &info), 0);
  assert_int_equal(info.mapped_size, 3 * MiB + 4096);
  assert_int_equal(info.registered, 0);
  assert_int_equal(info.fallback, 0);
  if (MLOCK_OBSERVABLE) assert_true(status_kb("VmLck") >= lck0 + (long long)(info.mapped_size / 1024)); /* pinned */
  unsigned char *p = ms_dma_addr(b);
  for (size_t i = 0; i < size; i += 4096) assert_int_equal(p[i], 0);
  ms_stats_get(&st1, sizeof st1);
  assert_int_equal(st1.dma_buffers, st0.dma_buffers + 1);
  assert_int_equal(st1.dma_pinned_bytes, st0.dma_pinned_bytes + info.mapped_size);
  ms_dma_free(b);
  assert_int_equal(status_kb("VmLck"), lck0);
  ms_stats_get(&st1, sizeof st1);
  assert_int_equal(st1.dma_buffers, st0.dma_buffers);
  assert_int_equal(st1.dma_pinned_bytes, st0.dma_pinned_bytes);
}

/* what the kernel says (get_mempolicy): the buffer's policy binds it to node 0 alone, and its first and last
   pages are on node 0 */
static void check_on_node0(ms_dma_buffer_t *b) {
  int mode = -1;
  unsigned long mask[16] = {0};
  char *p = ms_dma_addr(b);
  long r = syscall(SYS_get_mempolicy, &mode, mask, 8 * sizeof mask, p, 2ul /* MPOL_F_ADDR */);
  if (r != 0 && errno == ENOSYS) {
    print_message("NUMA policy not checked: the kernel has no get_mempolicy (%s)\n", strerror(errno));
    return;
  }
  assert_int_equal(r, 0);
  assert_int_equal(mode, 2 /* MPOL_BIND */);
  assert_int_equal(mask[0], 1ul);
  for (size_t off = 0; off < ms_dma_size(b); off += ms_dma_size(b) - 1) {
    int node = -1;
    assert_int_equal(syscall(SYS_get_mempolicy, &node, NULL, 0ul, p + off, 3ul /* MPOL_F_NODE | MPOL_F_ADDR */), 0);
    assert_int_equal(node, 0);
  }
}

static void numa_node_binding(void **state) {
  (void)state;
  if (access("/sys/devices/system/node/node0", F_OK) != 0) {
    ms_skip_refused(errno, "no NUMA node information in /sys (/sys/devices/system/node/node0)");
  }
  ms_dma_config_t c = cfg(4096, 0);
  c.numa_node = 0;
  ms_dma_buffer_t *b = ms_dma_alloc(1 * MiB, &c);
  assert_non_null(b);
  ms_dma_info_t info;
  ms_dma_info(b, &info);
  assert_int_equal(info.numa_node, 0); /* bound through the page layer (mbind) */
  check_on_node0(b);
  ms_dma_free(b);
  if (free_2m() >= 1) {
    c.page_size = 2 * MiB;
    b = ms_dma_alloc(2 * MiB, &c);
    assert_non_null(b);
    ms_dma_info(b, &info);
    assert_int_equal(info.numa_node, 0);
    assert_int_equal(ms_dma_page_size(b), 2 * MiB);
    assert_int_equal(ms_test_kernel_page_size(ms_dma_addr(b)), 2 * MiB);
    check_on_node0(b);
    ms_dma_free(b);
  }
}

static void alloc_2m_pages(void **state) {
  (void)state;
  SKIP_IF_NO_2M(3);
  long long lck0 = status_kb("VmLck");
  ms_stats_t st0, st1;
  ms_stats_get(&st0, sizeof st0);
  ms_dma_config_t c = cfg(2 * MiB, MS_DMA_NO_FALLBACK);
  ms_dma_buffer_t *b = ms_dma_alloc(5 * MiB, &c);
  assert_non_null(b);
  assert_int_equal(ms_dma_page_size(b), 2 * MiB);
  assert_int_equal(ms_dma_movable(b), 0);
  assert_int_equal((uintptr_t)ms_dma_addr(b) % (2 * MiB), 0);
  ms_dma_info_t info;
  assert_int_equal(ms_dma_info(b, &info), 0);
  assert_int_equal(info.mapped_size, 6 * MiB);
  assert_int_equal(status_kb("VmLck"), lck0); /* hugetlb: pre-faulted, not mlocked */
  assert_int_equal(ms_test_kernel_page_size(ms_dma_addr(b)), 2 * MiB); /* the kernel's page size */
  ms_stats_get(&st1, sizeof st1);
  assert_int_equal(st1.dma_huge_bytes, st0.dma_huge_bytes + 6 * MiB);
  memset(ms_dma_addr(b), 0x5a, 5 * MiB);
  if (phys_readable(b)) check_list(b);
  ms_dma_free(b);
  ms_stats_get(&st1, sizeof st1);
  assert_int_equal(st1.dma_huge_bytes, st0.dma_huge_bytes);
}

static void alloc_1g_pages(void **state) {
  (void)state;
  if (free_1g() < 1) {
    ms_skip_refused(ENOMEM, "no free 1 GiB huge page (free: %lld; the fixture's reason is in its output)", free_1g());
  }
  ms_dma_buffer_t *b = ms_dma_alloc(600 * MiB, NULL); /* best available: > 512 MiB takes a 1 GiB page */
  assert_non_null(b);
  assert_int_equal(ms_dma_page_size(b), GiB);
  assert_int_equal(ms_dma_movable(b), 0);
  assert_int_equal(ms_test_kernel_page_size(ms_dma_addr(b)), GiB);
  if (phys_readable(b)) {
    size_t n;
    const ms_dma_segment_t *s = ms_dma_segments(b, &n);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].length, 600 * MiB);
    assert_int_equal(s[0].phys % GiB, 0);
  }
  ms_dma_free(b);
}

/* HUGE_PAGES set to 0 through ms_option_set means base pages only, as MEMSPACE_HUGE_PAGES=0 does (the option
   table is the one source: dma read the variable from the environment and missed the call). In a child: the
   option stays set for the process. */
static void huge_pages_zero_by_api(void **state) {
  (void)state;
  if (free_2m() < 2) ms_skip_refused(ENOMEM, "%lld free 2 MiB huge pages, 2 needed (see the dma_huge fixture)", free_2m());
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (ms_option_set(MS_OPTION_HUGE_PAGES, 0) != 0) _exit(2);
    ms_dma_buffer_t *b = ms_dma_alloc(4 * MiB, NULL);
    if (!b) _exit(3);
    int rc = ms_dma_page_size(b) == (size_t)sysconf(_SC_PAGESIZE) ? 0 : 4;
    ms_dma_free(b);
    _exit(rc);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void best_available_and_fallback(void **state) {
  (void)state;
  ms_stats_t st0, st1;
  ms_stats_get(&st0, sizeof st0);
  ms_dma_buffer_t *b = ms_dma_alloc(4 * MiB, NULL);
  assert_non_null(b);
  assert_int_equal(ms_test_kernel_page_size(ms_dma_addr(b)), ms_dma_page_size(b)); /* what it says it got */
  if (free_2m() >= 0 && ms_dma_page_size(b) == 4096) {
    ms_dma_info_t info;
    ms_dma_info(b, &info);
    assert_int_equal(info.fallback, 1); /* 2 MiB pool empty: fallback reported */
  }
  ms_dma_free(b);
  /* more than the 2 MiB pool holds (all of it, free or not, plus one): NO_FALLBACK fails without touching
     memory; otherwise base pages with the fallback reported */
  long long total = read_ll("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages");
  if (total >= 0) {
    size_t too_big = (size_t)(total + 1) * 2 * MiB;
    ms_dma_config_t c = cfg(2 * MiB, MS_DMA_NO_FALLBACK);
    errno = 0;
    assert_null(ms_dma_alloc(too_big, &c));
    assert_int_equal(errno, ENOMEM);
    if (total <= 512) {
      c = cfg(2 * MiB, 0);
      b = alloc_pinned(too_big, &c);
      assert_non_null(b);
      assert_int_equal(ms_dma_page_size(b), 4096);
      ms_dma_info_t info;
      ms_dma_info(b, &info);
      assert_int_equal(info.fallback, 1);
      ms_stats_get(&st1, sizeof st1);
      assert_true(st1.dma_buffers == st0.dma_buffers + 1);
      ms_dma_free(b);
    } else {
      print_message("(2 MiB pool of %lld pages: the base-page fallback of a larger buffer is not tried)\n", total);
    }
  }
  /* 1 GiB pages beyond the pool with NO_FALLBACK: ENOMEM without touching memory */
  if (ms_huge_page_size(MS_PAGE_HUGE_1G)) {
    ms_dma_config_t c = cfg(GiB, MS_DMA_NO_FALLBACK);
    long long g = read_ll("/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages");
    errno = 0;
    assert_null(ms_dma_alloc((size_t)(g + 1) * GiB, &c));
    assert_int_equal(errno, ENOMEM);
  }
}

static void contiguous(void **state) {
  (void)state;
  ms_dma_config_t c = cfg(2 * MiB, MS_DMA_CONTIGUOUS);
  errno = 0;
  assert_null(ms_dma_alloc(3 * MiB, &c)); /* no single 2 MiB page holds 3 MiB */
  assert_int_equal(errno, EINVAL);
  c = cfg(4096, MS_DMA_CONTIGUOUS);
  errno = 0;
  assert_null(ms_dma_alloc(8192, &c));
  assert_int_equal(errno, EINVAL);
  ms_dma_buffer_t *b = ms_dma_alloc(4096, &c); /* one base page: contiguous, though movable */
  assert_non_null(b);
  if (phys_readable(b)) {
    size_t n;
    assert_non_null(ms_dma_segments(b, &n));
    assert_int_equal(n, 1);
  }
  ms_dma_free(b);
  SKIP_IF_NO_2M(1);
  c = cfg(0, MS_DMA_CONTIGUOUS);
  b = ms_dma_alloc(1536 * 1024, &c);
  assert_non_null(b);
  assert_int_equal(ms_dma_page_size(b), 2 * MiB);
  assert_int_equal(ms_test_kernel_page_size(ms_dma_addr(b)), 2 * MiB);
  if (phys_readable(b)) {
    size_t n;
    const ms_dma_segment_t *s = ms_dma_segments(b, &n);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].length, 1536 * 1024);
  }
  ms_dma_free(b);
}

/* ---- the list ---- */
static void list_matches_pagemap(void **state) {
  (void)state;
  ms_dma_config_t c = cfg(4096, 0);
  ms_dma_buffer_t *b = alloc_pinned(8 * MiB + 1000, &c);
  assert_non_null(b);
  SKIP_IF_NO_PHYS(b);
  check_list(b);
  /* a second call returns the same list without translating again */
  size_t n1, n2;
  const ms_dma_segment_t *s1 = ms_dma_segments(b, &n1), *s2 = ms_dma_segments(b, &n2);
  assert_ptr_equal(s1, s2);
  assert_int_equal(n1, n2);
  ms_dma_free(b);
  if (free_2m() >= 8) {
    c = cfg(2 * MiB, MS_DMA_NO_FALLBACK);
    b = ms_dma_alloc(16 * MiB - 4096, &c);
    assert_non_null(b);
    check_list(b);
    size_t n;
    const ms_dma_segment_t *s = ms_dma_segments(b, &n);
    for (size_t i = 0; i < n; i++) {
      assert_int_equal(s[i].phys % (2 * MiB), 0);
      if (i + 1 < n) assert_int_equal(s[i].length % (2 * MiB), 0);
    }
    ms_dma_free(b);
  }
}

static void offset_lookup(void **state) {
  (void)state;
  ms_dma_config_t c = cfg(free_2m() >= 4 ? 2 * MiB : 4096, 0);
  for (int round = 0; round < 2; round++) {
    size_t size = 6 * MiB + 333;
    ms_dma_buffer_t *b = ms_dma_alloc(size, &c);
    assert_non_null(b);
    SKIP_IF_NO_PHYS(b);
    uint64_t *phys = calloc(size / LB_PAGE + 2, 8);
    assert_int_equal(lb_phys_of_range(ms_dma_addr(b), size, phys), 0);
    uint64_t x = 12345, got;
    for (int i = 0; i < 2000; i++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      size_t off = i == 0 ? 0 : i == 1 ? size - 1 : (size_t)(x >> 20) % size;
      assert_int_equal(ms_dma_phys(b, off, &got), 0);
      assert_int_equal(got, phys[off / LB_PAGE] + off % LB_PAGE);
    }
    size_t n;
    const ms_dma_segment_t *s = ms_dma_segments(b, &n);
    size_t off = 0;
    for (size_t i = 0; i < n; off += s[i].length, i++) { /* segment boundaries */
      assert_int_equal(ms_dma_phys(b, off, &got), 0);
      assert_int_equal(got, s[i].phys);
      assert_int_equal(ms_dma_phys(b, off + s[i].length - 1, &got), 0);
      assert_int_equal(got, s[i].phys + s[i].length - 1);
    }
    assert_int_equal(ms_dma_phys(b, size, &got), EINVAL);
    assert_int_equal(ms_dma_phys(b, 0, NULL), EINVAL);
    free(phys);
    ms_dma_free(b);
    c = cfg(4096, 0);
  }
}

/* ---- physical stability ---- */
static void stable_after_compaction(void **state) {
  (void)state;
  SKIP_IF_NO_2M(8);
  ms_dma_config_t ch = cfg(2 * MiB, MS_DMA_NO_FALLBACK), cb = cfg(4096, 0);
  ms_dma_buffer_t *h = alloc_pinned(16 * MiB, &ch), *m = alloc_pinned(16 * MiB, &cb);
  assert_non_null(h);
  assert_non_null(m);
  SKIP_IF_NO_PHYS(h);
  memset(ms_dma_addr(h), 1, 16 * MiB);
  memset(ms_dma_addr(m), 1, 16 * MiB);
  size_t n, moved = 1;
  assert_non_null(ms_dma_segments(h, &n));
  assert_non_null(ms_dma_segments(m, &n));
  FILE *f = fopen("/proc/sys/vm/compact_memory", "w");
  if (!f || fputs("1\n", f) < 0 || fclose(f) != 0) {
    int e = errno;
    ms_dma_free(h), ms_dma_free(m);
    ms_skip_refused(e, "cannot write /proc/sys/vm/compact_memory");
  }
  assert_int_equal(ms_dma_verify(h, &moved), 0); /* hugetlb: not moved */
  assert_int_equal(moved, 0);
  check_list(h);
  assert_int_equal(ms_dma_movable(h), 0);
  assert_int_equal(ms_dma_movable(m), 1); /* base pages: reported movable */
  int r = ms_dma_verify(m, &moved);
  assert_true(r == 0 || r == ESTALE);
  print_message("base-page buffer after compaction: %zu of %d bytes moved (list %s)\n", moved, (int)(16 * MiB),
                r ? "updated" : "unchanged");
  check_list(m); /* updated in place: matches the kernel again */
  ms_dma_free(h), ms_dma_free(m);
}

/* a page replaced behind the list's back: ms_dma_verify reports ESTALE, the bytes moved, and updates the list */
static void verify_detects_move(void **state) {
  (void)state;
  ms_dma_config_t c = cfg(4096, 0);
  ms_dma_buffer_t *b = ms_dma_alloc(64 * 4096, &c);
  assert_non_null(b);
  SKIP_IF_NO_PHYS(b);
  char *page = (char *)ms_dma_addr(b) + 10 * 4096;
  uint64_t before, after;
  assert_int_equal(ms_dma_phys(b, 10 * 4096, &before), 0);
  /* drop the page (after unlocking it) and let another mapping take the freed frame, then fault it back */
  assert_int_equal(munlock(page, 4096), 0);
  assert_int_equal(madvise(page, 4096, MADV_DONTNEED), 0);
  char *other = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  assert_true(other != MAP_FAILED);
  page[0] = 1;
  assert_int_equal(mlock(page, 4096), 0);
  uint64_t indep[2];
  assert_int_equal(lb_phys_of_range(page, 4096, indep), 0);
  if (indep[0] == before) {
    munmap(other, 16 * 4096);
    ms_dma_free(b);
    ms_skip_refused(0, "the kernel gave the same frame back: no move to detect");
  }
  size_t moved = 0;
  assert_int_equal(ms_dma_verify(b, &moved), ESTALE);
  assert_int_equal(moved, 4096);
  assert_int_equal(ms_dma_phys(b, 10 * 4096 + 5, &after), 0);
  assert_int_equal(after, indep[0] + 5);
  check_list(b);
  assert_int_equal(ms_dma_verify(b, &moved), 0);
  assert_int_equal(moved, 0);
  munmap(other, 16 * 4096);
  ms_dma_free(b);
}

/* whether this process reads `marker` at p (process_vm_readv: no fault where nothing is mapped) */
static int reads_marker(const void *p, uint64_t marker) {
  uint64_t v = 0;
  struct iovec here = {&v, sizeof v}, there = {(void *)p, sizeof v};
  return process_vm_readv(getpid(), &here, 1, &there, 1, 0) == (ssize_t)sizeof v && v == marker;
}

/* after fork (the child alive) and a parent write, the list is unchanged: MADV_DONTFORK, no copy-on-write */
static int fork_and_write(ms_dma_buffer_t *b, size_t *moved) {
  int go[2];
  if (pipe(go)) return -1;
  const uint64_t marker = 0x6d656d7370616365ull;
  memcpy(ms_dma_addr(b), &marker, sizeof marker);
  pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    /* the buffer is not inherited: the child does not see its bytes. (Its range is unmapped in the child; under
       ThreadSanitizer the thread its runtime starts in the child may take that free range for its stack, so the
       bytes are looked at, not whether something is mapped there.) */
    int mapped = reads_marker(ms_dma_addr(b), marker);
    char c;
    while (read(go[0], &c, 1) < 0 && errno == EINTR) {}
    _exit(mapped ? 3 : 0);
  }
  close(go[0]);
  memset(ms_dma_addr(b), 0x77, ms_dma_size(b)); /* the parent writes while the child lives */
  int r = ms_dma_verify(b, moved);
  close(go[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  return r;
}

static void stable_after_fork(void **state) {
  (void)state;
  ms_dma_config_t c = cfg(4096, 0);
  ms_dma_buffer_t *b = ms_dma_alloc(8 * MiB, &c);
  assert_non_null(b);
  SKIP_IF_NO_PHYS(b);
  size_t moved = 0;
  int r = fork_and_write(b, &moved);
  if (r == ESTALE && moved < 8 * MiB) r = fork_and_write(b, &moved); /* kcompactd moved a page meanwhile: retry */
  assert_int_equal(r, 0);
  assert_int_equal(moved, 0);
  check_list(b);
  ms_dma_free(b);
  if (free_2m() >= 4) {
    c = cfg(2 * MiB, MS_DMA_NO_FALLBACK);
    b = ms_dma_alloc(8 * MiB, &c);
    assert_non_null(b);
    assert_non_null(ms_dma_segments(b, &moved));
    assert_int_equal(fork_and_write(b, &moved), 0);
    assert_int_equal(moved, 0);
    ms_dma_free(b);
  }
}

/* ---- register / unregister ---- */
static void register_memory(void **state) {
  (void)state;
  size_t size = 4 * MiB;
  char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  for (size_t i = 0; i < size; i += 512) m[i] = (char)(i >> 9);
  long long lck0 = status_kb("VmLck");
  ms_dma_buffer_t *b = ms_dma_register(m, size, NULL);
  assert_non_null(b);
  assert_ptr_equal(ms_dma_addr(b), m);
  assert_int_equal(ms_dma_size(b), size);
  assert_int_equal(ms_dma_page_size(b), 4096);
  assert_int_equal(ms_dma_movable(b), 1);
  ms_dma_info_t info;
  ms_dma_info(b, &info);
  assert_int_equal(info.registered, 1);
  if (MLOCK_OBSERVABLE) assert_int_equal(status_kb("VmLck"), lck0 + (long long)(size / 1024));
  if (phys_readable(b)) check_list(b);
  ms_dma_free(b);
  assert_int_equal(status_kb("VmLck"), lck0); /* unpinned */
  for (size_t i = 0; i < size; i += 512) assert_int_equal(m[i], (char)(i >> 9)); /* still mapped, contents kept */
  /* memory the program had locked itself stays locked, also where pre-faulting is mlock + munlock (a kernel
     before 5.14: msi_os_populate_write_hide) */
  assert_int_equal(mlock(m, size), 0);
  for (int hide = 0; hide < 2; hide++) {
    msi_os_populate_write_hide(hide);
    b = ms_dma_register(m, size, NULL);
    msi_os_populate_write_hide(false);
    assert_non_null(b);
    if (MLOCK_OBSERVABLE) assert_int_equal(status_kb("VmLck"), lck0 + (long long)(size / 1024));
    ms_dma_free(b);
    if (MLOCK_OBSERVABLE) assert_int_equal(status_kb("VmLck"), lck0 + (long long)(size / 1024));
  }
  munlock(m, size);
  munmap(m, size);
  /* hugetlb memory: recognised, stable, not mlocked */
  if (free_2m() >= 2) {
    ms_pages_t p;
    assert_int_equal(ms_pages_reserve(4 * MiB, 0, MS_PAGES_HUGE_2M | MS_PAGES_NO_FALLBACK | MS_PAGES_COMMIT, -1, &p), 0);
    b = ms_dma_register(p.addr, 4 * MiB, NULL);
    assert_non_null(b);
    assert_int_equal(ms_dma_page_size(b), 2 * MiB);
    assert_int_equal(ms_dma_movable(b), 0);
    assert_int_equal(status_kb("VmLck"), lck0);
    if (phys_readable(b)) check_list(b);
    ms_dma_free(b);
    ms_pages_release(p.addr, p.size);
  }
}

static void register_bad(void **state) {
  (void)state;
  size_t ps = 4096;
  char *m = mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  errno = 0;
  assert_null(ms_dma_register(m + 1, ps, NULL)); /* unaligned start: EINVAL (documented choice) */
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(ms_dma_register(m, ps + 10, NULL)); /* unaligned size */
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(ms_dma_register(NULL, ps, NULL));
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(ms_dma_register(m, 0, NULL));
  assert_int_equal(errno, EINVAL);
  assert_int_equal(munmap(m + ps, ps), 0); /* a hole in the middle */
  errno = 0;
  assert_null(ms_dma_register(m, 3 * ps, NULL));
  assert_int_equal(errno, EFAULT);
  assert_int_equal(mprotect(m, ps, PROT_READ), 0); /* read-only */
  errno = 0;
  assert_null(ms_dma_register(m, ps, NULL));
  assert_int_equal(errno, EFAULT);
  munmap(m, 3 * ps);
}

/* registrations that overlap: each part stays locked and MADV_DONTFORK while any buffer covering it lives */
static void pinned(const char *m, int yes) {
  if (MLOCK_OBSERVABLE) assert_int_equal(ms_test_vm_flag(m, "lo"), yes);
  assert_int_equal(ms_test_vm_flag(m, "dc"), yes);
}
static void register_overlap(void **state) {
  (void)state;
  char *m = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  /* 1 MiB, then 64 KiB inside it (already locked: no mlock of its own), then the first freed */
  ms_dma_buffer_t *outer = ms_dma_register(m, 1 * MiB, NULL);
  assert_non_null(outer);
  ms_dma_buffer_t *inner = ms_dma_register(m + 256 * 1024, 64 * 1024, NULL);
  assert_non_null(inner);
  ms_dma_free(outer);
  pinned(m + 256 * 1024, 1);
  pinned(m + 320 * 1024 - 4096, 1);
  pinned(m, 0);
  pinned(m + 320 * 1024, 0);
  ms_dma_free(inner); /* takes over undoing its pages */
  pinned(m + 256 * 1024, 0);
  /* two that cross: freeing the second keeps the first's half pinned */
  ms_dma_buffer_t *a = ms_dma_register(m, 1 * MiB, NULL);
  ms_dma_buffer_t *b = ms_dma_register(m + 512 * 1024, 1 * MiB, NULL);
  assert_non_null(a);
  assert_non_null(b);
  ms_dma_free(b);
  pinned(m + 512 * 1024, 1);
  pinned(m + 1 * MiB - 4096, 1);
  pinned(m + 1 * MiB, 0);
  ms_dma_free(a);
  pinned(m, 0);
  pinned(m + 512 * 1024, 0);
  /* one across two adjacent ones: their locks and marks are memspace's (live buffers cover it end to end), not
     the caller's, so it takes them over as the two go, and nothing stays pinned after the last */
  a = ms_dma_register(m, 512 * 1024, NULL);
  b = ms_dma_register(m + 512 * 1024, 512 * 1024, NULL);
  ms_dma_buffer_t *across = ms_dma_register(m + 256 * 1024, 512 * 1024, NULL);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(across);
  ms_dma_free(a);
  ms_dma_free(b);
  pinned(m, 0);
  pinned(m + 256 * 1024, 1);
  pinned(m + 768 * 1024 - 4096, 1);
  pinned(m + 768 * 1024, 0);
  ms_dma_free(across);
  pinned(m + 256 * 1024, 0);
  pinned(m + 512 * 1024, 0);
  munmap(m, 2 * MiB);
}

/* ---- the loopback device ---- */
static void plain_copy(void *d, const void *s, size_t n) { memcpy(d, s, n); }

static void run_loopback(ms_dma_buffer_t *b) {
  size_t n;
  const ms_dma_segment_t *s = ms_dma_segments(b, &n);
  assert_non_null(s);
  for (size_t e = 0; e < MSI_ARRAY_LEN(event_sizes); e++) {
    size_t size = event_sizes[e];
    lb_device_t d;
    if (lb_attach(&d, s, n)) fail_msg("device rejected a good list: %s", d.error);
    assert_int_equal(d.total, ms_dma_size(b));
    size_t slots = lb_slots(d.total, size);
    char *ev = malloc(size);
    uint64_t written = 0;
    for (int lap = 0; lap < 3; lap++) { /* whole laps, then a partial one: every event checked */
      uint64_t batch = lap < 2 ? slots : slots / 2 + 1;
      lb_write_events(&d, size, batch, ev, true, lap == 1 ? plain_copy : ms_dma_copy);
      ms_dma_fence();
      uint64_t first_bad = 0;
      size_t bad = lb_check_events(ms_dma_addr(b), d.total, size, written, batch, true, &first_bad);
      if (bad) fail_msg("event size %zu: %zu of %llu events wrong, first %llu", size, bad,
                        (unsigned long long)batch, (unsigned long long)first_bad);
      written += batch;
    }
    free(ev);
    lb_detach(&d);
  }
}

static void loopback_every_event_size(void **state) {
  (void)state;
  ms_dma_config_t c = cfg(4096, 0);
  ms_dma_buffer_t *b = ms_dma_alloc(6 * MiB + 4096, &c);
  assert_non_null(b);
  SKIP_IF_NO_PHYS(b);
  run_loopback(b);
  ms_dma_free(b);
  SKIP_IF_NO_2M(4);
  c = cfg(2 * MiB, MS_DMA_NO_FALLBACK);
  b = ms_dma_alloc(8 * MiB, &c);
  assert_non_null(b);
  run_loopback(b);
  ms_dma_free(b);
}

static void loopback_rejects_corrupt_list(void **state) {
  (void)state;
  ms_dma_config_t c = cfg(4096, 0);
  ms_dma_buffer_t *b = ms_dma_alloc(4 * MiB, &c);
  assert_non_null(b);
  SKIP_IF_NO_PHYS(b);
  size_t n;
  const ms_dma_segment_t *s = ms_dma_segments(b, &n);
  ms_dma_segment_t *bad = malloc((n + 1) * sizeof *bad);
  lb_device_t d;
  /* a run this process does not have: the first page of physical memory */
  memcpy(bad, s, n * sizeof *bad);
  bad[n / 2].phys = 0x1000;
  assert_int_equal(lb_attach(&d, bad, n), -1);
  print_message("rejected: %s\n", d.error);
  assert_non_null(strstr(d.error, "not have pinned"));
  /* a run shifted by one page past its own end (into memory that is not ours, or overlapping) */
  memcpy(bad, s, n * sizeof *bad);
  bad[0].phys += bad[0].length;
  assert_int_equal(lb_attach(&d, bad, n), -1);
  print_message("rejected: %s\n", d.error);
  /* a run given twice */
  if (n >= 2) {
    memcpy(bad, s, n * sizeof *bad);
    bad[1] = bad[0];
    assert_int_equal(lb_attach(&d, bad, n), -1);
    print_message("rejected: %s\n", d.error);
    assert_non_null(strstr(d.error, "overlap"));
  }
  /* a run of length 0 */
  memcpy(bad, s, n * sizeof *bad);
  bad[n - 1].length = 0;
  assert_int_equal(lb_attach(&d, bad, n), -1);
  /* runs swapped: every page is ours, so the device accepts, but the consumer finds the events misplaced */
  if (n >= 2) {
    memcpy(bad, s, n * sizeof *bad);
    ms_dma_segment_t t = bad[0];
    bad[0] = bad[n - 1], bad[n - 1] = t;
    assert_int_equal(lb_attach(&d, bad, n), 0);
    size_t slots = lb_slots(d.total, 4096);
    char ev[4096];
    lb_write_events(&d, 4096, slots, ev, true, ms_dma_copy);
    ms_dma_fence();
    uint64_t first_bad = 0;
    assert_true(lb_check_events(ms_dma_addr(b), d.total, 4096, 0, slots, true, &first_bad) > 0);
    lb_detach(&d);
  } else {
    print_message("(one physical run: the swap case is not possible here)\n");
  }
  free(bad);
  ms_dma_free(b);
}

/* ---- a deterministic space inside a buffer ---- */
static void space_in_buffer(void **state) {
  (void)state;
  ms_dma_config_t c = cfg(free_2m() >= 2 ? 2 * MiB : 4096, 0);
  ms_dma_buffer_t *b = ms_dma_alloc(2 * MiB, &c);
  assert_non_null(b);
  ms_space_t *sp = ms_space_create_in(ms_dma_addr(b), ms_dma_size(b), 0);
  assert_non_null(sp);
  char *lo = ms_dma_addr(b), *hi = lo + ms_dma_size(b);
  void *blocks[64];
  for (int i = 0; i < 64; i++) {
    blocks[i] = ms_space_malloc(sp, 1000 + (size_t)i * 100);
    assert_non_null(blocks[i]);
    assert_true((char *)blocks[i] >= lo && (char *)blocks[i] < hi);
    memset(blocks[i], i, 1000);
  }
  uint64_t phys;
  int r = ms_dma_phys(b, (size_t)((char *)blocks[10] - lo), &phys);
  assert_true(r == 0 || r == EPERM); /* a descriptor's physical address, for a device */
  for (int i = 0; i < 64; i += 2) ms_space_free(sp, blocks[i]);
  assert_int_equal(ms_space_check(sp), 0);
  ms_space_destroy(sp);
  ms_dma_free(b);
}

/* ---- privilege and limits, in children ---- */
static int drop_caps(const int *caps, int n) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  if (syscall(SYS_capget, &h, d)) return -1;
  for (int i = 0; i < n; i++) {
    prctl(PR_CAPBSET_DROP, caps[i], 0, 0, 0);
    int w = caps[i] / 32;
    unsigned bit = 1u << (caps[i] % 32);
    d[w].effective &= ~bit, d[w].permitted &= ~bit, d[w].inheritable &= ~bit;
  }
  return (int)syscall(SYS_capset, &h, d);
}

/* runs fn in a child with stderr captured into msg; returns its exit status (77: skipped) */
static int in_child(int (*fn)(void), char *msg, size_t cap) {
  int pfd[2];
  if (pipe(pfd)) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    dup2(pfd[1], 2);
    _exit(fn());
  }
  close(pfd[1]);
  size_t used = 0;
  ssize_t r;
  while ((r = read(pfd[0], msg + used, cap - 1 - used)) > 0 || (r < 0 && errno == EINTR))
    if (r > 0) used += (size_t)r;
  msg[used] = 0;
  close(pfd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int child_no_privilege(void) {
  int caps[] = {CAP_SYS_ADMIN};
  if (drop_caps(caps, 1)) return 77;
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  unsigned long long eff = ~0ull;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "CapEff:", 7) == 0) eff = strtoull(line + 7, NULL, 16);
  if (f) fclose(f);
  if (eff & (1ull << CAP_SYS_ADMIN)) return 10;
  ms_dma_config_t c = cfg(4096, 0);
  ms_dma_buffer_t *b = ms_dma_alloc(2 * MiB, &c); /* allocation and pinning still work */
  if (!b) return 11;
  size_t n = 99;
  errno = 0;
  if (ms_dma_segments(b, &n) || errno != EPERM || n != 0) return 12;
  uint64_t phys;
  if (ms_dma_phys(b, 0, &phys) != EPERM) return 13;
  if (ms_dma_verify(b, NULL) != EPERM) return 14;
  char src[4096];
  memset(src, 9, sizeof src);
  ms_dma_write(b, 100, src, sizeof src);
  if (((char *)ms_dma_addr(b))[100 + 4095] != 9) return 15;
  ms_dma_free(b);
  if (free_2m() >= 1) {
    c = cfg(2 * MiB, MS_DMA_NO_FALLBACK);
    b = ms_dma_alloc(2 * MiB, &c);
    if (!b) return 16;
    if (ms_dma_segments(b, &n) || errno != EPERM) return 17;
    ms_dma_free(b);
  }
  return 0;
}

/* a freed handle used again: reported naming it, errno EINVAL, no crash */
static int child_double_free(void) {
  ms_dma_config_t c = cfg(4096, 0);
  ms_dma_buffer_t *b = ms_dma_alloc(64 * 1024, &c);
  if (!b) return 10;
  fprintf(stderr, "handle=%p\n", (void *)b);
  ms_dma_free(b);
  errno = 0;
  ms_dma_free(b);
  if (errno != EINVAL) return 11;
  errno = 0;
  if (ms_dma_size(b) != 0 || errno != EINVAL) return 12;
  ms_dma_info_t info;
  if (ms_dma_info(b, &info) != EINVAL) return 13;
  char *m = mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ms_dma_buffer_t *r = ms_dma_register(m, 64 * 1024, NULL);
  if (!r) return 14;
  ms_dma_free(r);
  errno = 0;
  ms_dma_free(r);
  if (errno != EINVAL || ms_dma_addr(r) != NULL) return 15;
  return 0;
}

/* runs fn in a child that prints "KEY=POINTER" before the call under test; its message must contain
   BEFORE POINTER AFTER */
static void expect_message_naming(int (*fn)(void), const char *key, const char *before, const char *after) {
  char msg[4096];
  int st = in_child(fn, msg, sizeof msg);
  print_message("child said: %s", msg);
  assert_int_equal(st, 0);
  char *h = strstr(msg, key);
  assert_non_null(h);
  h += strlen(key);
  char want[128];
  snprintf(want, sizeof want, "%s%.*s%s", before, (int)strcspn(h, "\n"), h, after);
  assert_non_null(strstr(msg, want));
}

static void double_free(void **state) {
  (void)state;
  expect_message_naming(child_double_free, "handle=", "ms_dma_free(", "): freed already");
}

/* ms_stats_print's output callback is the caller's code and may call the library: a DMA call from it (and a nested
   ms_stats_print, which prints the DMA section again) works. The buffers' lines were written holding the buffer
   registry's lock, so such a call aborted as a re-entry ("entered again ... holding its lock"). In a child: the
   failure was an abort. */
static ms_dma_buffer_t *print_buffer;
static int print_calls, print_depth;
static void print_reentering(const char *text, void *arg) {
  (void)text;
  (void)arg;
  print_calls++;
  ms_dma_info_t info;
  if (ms_dma_info(print_buffer, &info) != 0) _exit(12);
  ms_dma_buffer_t *b = ms_dma_alloc(4096, NULL);
  ms_dma_free(b);
  if (print_depth++ == 0) ms_stats_print(print_reentering, NULL, 0);
  print_depth--;
}
static int print_reentering_child(void) {
  print_buffer = ms_dma_alloc(4096, NULL);
  if (!print_buffer) return 10;
  ms_stats_print(print_reentering, NULL, 0);
  ms_stats_print(print_reentering, NULL, MS_STATS_JSON);
  ms_dma_free(print_buffer);
  return print_calls > 0 ? 0 : 11;
}
/* The buffer_N lines are one snapshot of the buffers: an output callback that makes a buffer, or frees the one
   listed next, between two lines neither repeats a buffer nor drops one (lines each taken under the registry's
   lock by position would repeat the line before after a buffer made, and skip one after a buffer freed). In a
   child. */
static char listing[1 << 16];
static size_t listing_len;
static ms_dma_buffer_t *listed[3], *made;
static int list_action; /* 1: make a buffer at the buffer_0 line; 2: there, free listed[2] (listed next) */
static void listing_sink(const char *text, void *arg) {
  (void)arg;
  size_t len = strlen(text);
  if (listing_len + len < sizeof listing) memcpy(listing + listing_len, text, len + 1), listing_len += len;
  if (!strstr(text, "buffer_0")) return;
  if (list_action == 1 && !made) made = ms_dma_alloc(9 * 4096, NULL);
  if (list_action == 2 && listed[2]) {
    ms_dma_free(listed[2]);
    listed[2] = NULL;
  }
}
static int listed_times(const char *what) {
  int n = 0;
  for (const char *p = listing; (p = strstr(p, what)); p += strlen(what)) n++;
  return n;
}
static int listing_child(void) {
  const char *sizes[3] = {"20480 bytes at", "24576 bytes at", "28672 bytes at"};
  for (int i = 0; i < 3; i++)
    if (!(listed[i] = ms_dma_alloc((size_t)(5 + i) * 4096, NULL))) return 10;
  for (list_action = 1; list_action <= 2; list_action++) {
    listing_len = 0;
    listing[0] = 0;
    ms_stats_print(listing_sink, NULL, 0);
    for (int i = 0; i < 3; i++)
      if (listed_times(sizes[i]) != 1) {
        printf("%s: listed %d times (callback action %d):\n%s", sizes[i], listed_times(sizes[i]), list_action, listing);
        fflush(stdout);
        return 10 + list_action;
      }
  }
  return made ? 0 : 13;
}
static void stats_listing_is_a_snapshot(void **state) {
  (void)state;
  ms_dma_buffer_t *probe = alloc_pinned(4096, NULL);
  assert_non_null(probe);
  ms_dma_free(probe);
  assert_int_equal(ms_test_in_child(listing_child), 0);
}

static void stats_print_callback_reenters(void **state) {
  (void)state;
  ms_dma_buffer_t *probe = alloc_pinned(4096, NULL);
  assert_non_null(probe);
  ms_dma_free(probe);
  assert_int_equal(ms_test_in_child(print_reentering_child), 0);
}

/* the message of a refused registration names the first address that is not writable */
static int child_readonly(void) {
  char *m = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED || mprotect(m + 2 * 4096, 4096, PROT_READ)) return 10;
  fprintf(stderr, "readonly=%p\n", (void *)(m + 2 * 4096));
  errno = 0;
  if (ms_dma_register(m, 4 * 4096, NULL) || errno != EFAULT) return 11;
  return 0;
}

static void register_readonly_names_address(void **state) {
  (void)state;
  expect_message_naming(child_readonly, "readonly=", "address ", " is not writable");
}

static void no_privilege(void **state) {
  (void)state;
  if (geteuid() != 0) {
    ms_skip_refused(EPERM, "not root (the privileged path cannot be compared)");
  }
  char msg[4096];
  int st = in_child(child_no_privilege, msg, sizeof msg);
  if (st == 77) {
    ms_skip_refused(EPERM, "capset refused: cannot drop CAP_SYS_ADMIN");
  }
  print_message("child said: %s", msg);
  assert_int_equal(st, 0);
  assert_non_null(strstr(msg, "CAP_SYS_ADMIN"));
  assert_non_null(strstr(msg, "PFN 0"));
}

static int child_tiny_memlock(void) {
  int caps[] = {CAP_IPC_LOCK};
  if (drop_caps(caps, 1)) return 77;
  struct rlimit rl = {64 * 1024, 64 * 1024};
  if (setrlimit(RLIMIT_MEMLOCK, &rl)) return 77;
  ms_dma_config_t c = cfg(4096, 0);
  /* refused before its pages are faulted in: the peak RSS does not grow by the buffer's 256 MiB */
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  long peak = ru.ru_maxrss;
  errno = 0;
  if (ms_dma_alloc(256 * MiB, &c) || errno != ENOMEM) return 27;
  getrusage(RUSAGE_SELF, &ru);
  if (ru.ru_maxrss - peak > 64 * 1024) return 28; /* KiB */
  ms_pages_t pg; /* the same for the page layer's MS_PAGES_POPULATE | MS_PAGES_LOCK */
  if (ms_pages_reserve(256 * MiB, 0, MS_PAGES_POPULATE | MS_PAGES_LOCK, -1, &pg) != ENOMEM) return 29;
  getrusage(RUSAGE_SELF, &ru);
  if (ru.ru_maxrss - peak > 64 * 1024) return 30;
  errno = 0;
  if (ms_dma_alloc(4 * MiB, &c)) return 20; /* over a non-zero limit: refused with ENOMEM (mlock's answer) */
  if (errno != ENOMEM) return 21;
  ms_dma_buffer_t *b = ms_dma_alloc(16 * 1024, &c); /* under it: fine */
  if (!b) return 22;
  ms_dma_free(b);
  char *m = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  errno = 0;
  if (ms_dma_register(m, 4 * MiB, NULL) || errno != ENOMEM) return 23;
  struct rlimit zero = {0, 0}; /* a limit of 0: EPERM */
  if (setrlimit(RLIMIT_MEMLOCK, &zero)) return 77;
  errno = 0;
  if (ms_dma_alloc(16 * 1024, &c) || errno != EPERM) return 25;
  errno = 0;
  if (ms_dma_register(m, 64 * 1024, NULL) || errno != EPERM) return 26;
  if (free_2m() >= 2) { /* hugetlb needs no mlock: works under the tiny limit */
    c = cfg(2 * MiB, MS_DMA_NO_FALLBACK);
    b = ms_dma_alloc(4 * MiB, &c);
    if (!b) return 24;
    ms_dma_free(b);
  }
  return 0;
}

static void tiny_memlock_limit(void **state) {
  (void)state;
  if (!MLOCK_OBSERVABLE) {
    ms_skip_refused(0, MS_TEST_MLOCK_NOOP_WHY);
  }
  char msg[4096];
  int st = in_child(child_tiny_memlock, msg, sizeof msg);
  if (st == 77) {
    ms_skip_refused(EPERM, "cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK");
  }
  print_message("child said: %s", msg);
  assert_int_equal(st, 0);
  assert_non_null(strstr(msg, "RLIMIT_MEMLOCK is 65536 bytes"));
}

/* ---- bad input ---- */
static void bad_input(void **state) {
  (void)state;
  ms_dma_config_t c = cfg(0, 0);
  errno = 0;
  assert_null(ms_dma_alloc(0, NULL));
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(ms_dma_alloc(SIZE_MAX, NULL));
  assert_int_equal(errno, ENOMEM);
  errno = 0;
  assert_null(ms_dma_alloc(SIZE_MAX - 4095, &c));
  assert_int_equal(errno, ENOMEM);
  c.reserved[2] = 1;
  errno = 0;
  assert_null(ms_dma_alloc(4096, &c));
  assert_int_equal(errno, EINVAL);
  c = cfg(0, 0x80);
  errno = 0;
  assert_null(ms_dma_alloc(4096, &c));
  assert_int_equal(errno, EINVAL);
  c = cfg(12345, 0);
  errno = 0;
  assert_null(ms_dma_alloc(4096, &c));
  assert_int_equal(errno, EINVAL);
  c = cfg(0, 0);
  c.numa_node = 4096;
  errno = 0;
  assert_null(ms_dma_alloc(4096, &c));
  assert_int_equal(errno, EINVAL);
  /* NULL buffers */
  size_t n = 5;
  uint64_t phys;
  ms_dma_info_t info;
  errno = 0;
  assert_null(ms_dma_addr(NULL));
  assert_int_equal(errno, EINVAL);
  assert_int_equal(ms_dma_size(NULL), 0);
  errno = 0;
  assert_int_equal(ms_dma_page_size(NULL), 0);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(ms_dma_segments(NULL, &n));
  assert_int_equal(errno, EINVAL);
  assert_int_equal(n, 0);
  errno = 0;
  assert_int_equal(ms_dma_phys(NULL, 0, &phys), EINVAL);
  assert_int_equal(errno, EINVAL); /* every call sets errno on failure */
  assert_int_equal(ms_dma_movable(NULL), -1);
  errno = 0;
  assert_int_equal(ms_dma_verify(NULL, NULL), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_dma_info(NULL, &info), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_dma_size(NULL), 0);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  ms_dma_write(NULL, 0, &n, sizeof n);
  assert_int_equal(errno, EINVAL);
  ms_dma_free(NULL);
  /* writes outside the buffer write nothing */
  c = cfg(4096, 0);
  ms_dma_buffer_t *b = ms_dma_alloc(8192, &c);
  assert_non_null(b);
  char src[64];
  memset(src, 7, sizeof src);
  errno = 0;
  ms_dma_write(b, 8192 - 32, src, 64);
  assert_int_equal(errno, EINVAL);
  assert_int_equal(((char *)ms_dma_addr(b))[8192 - 32], 0);
  errno = 0;
  ms_dma_write(b, SIZE_MAX - 8, src, 64);
  assert_int_equal(errno, EINVAL);
  ms_dma_write(b, 8192 - 64, src, 64);
  assert_int_equal(((char *)ms_dma_addr(b))[8191], 7);
  ms_dma_free(b);
}

/* ---- the streaming copy ---- */
static void streaming_copy(void **state) {
  (void)state;
  size_t cap = 1 * MiB + 256;
  char *src = malloc(cap), *dst = malloc(cap + 64), *ref = malloc(cap + 64);
  for (size_t i = 0; i < cap; i++) src[i] = (char)(i * 31 + 7);
  size_t lens[] = {0, 1, 63, 64, 65, 200, 255, 256, 257, 1000, 4096, 4097, 65536 + 17, 1 * MiB};
  for (size_t l = 0; l < MSI_ARRAY_LEN(lens); l++)
    for (size_t da = 0; da < 64; da += 13)
      for (size_t sa = 0; sa < 64; sa += 21) {
        memset(dst, 0, cap + 64), memset(ref, 0, cap + 64);
        ms_dma_copy(dst + da, src + sa, lens[l]);
        ms_dma_fence();
        memcpy(ref + da, src + sa, lens[l]);
        assert_memory_equal(dst, ref, cap + 64);
      }
  free(src), free(ref);
  /* through a buffer: fenced and unfenced */
  ms_dma_config_t c = cfg(4096, 0);
  ms_dma_buffer_t *b = ms_dma_alloc(2 * MiB, &c);
  assert_non_null(b);
  for (size_t l = 0; l < MSI_ARRAY_LEN(lens); l++) {
    memset(ms_dma_addr(b), 0, 2 * MiB);
    ms_dma_write(b, 3, dst, lens[l]);
    assert_memory_equal((char *)ms_dma_addr(b) + 3, dst, lens[l]);
    ms_dma_stream(b, 2 * MiB - lens[l], dst + 5, lens[l]);
    ms_dma_fence();
    assert_memory_equal((char *)ms_dma_addr(b) + 2 * MiB - lens[l], dst + 5, lens[l]);
  }
  errno = 0;
  ms_dma_stream(b, 1, dst, 2 * MiB);
  assert_int_equal(errno, EINVAL);
  ms_dma_free(b);
  free(dst);
}

static void append(const char *text, void *arg) {
  char *out = arg;
  size_t used = strlen(out), n = strlen(text);
  if (used + n < 16384) memcpy(out + used, text, n + 1);
}

static void stats_lines(void **state) {
  (void)state;
  ms_dma_config_t c = cfg(4096, 0);
  ms_dma_buffer_t *b = ms_dma_alloc(64 * 1024, &c);
  assert_non_null(b);
  static char out[16384];
  out[0] = 0;
  ms_stats_print(append, out, 0);
  assert_non_null(strstr(out, "[dma]"));
  assert_non_null(strstr(out, "pinned_base_pages"));
  assert_non_null(strstr(out, "65536 bytes at"));
  assert_non_null(strstr(out, "4 KiB pages, movable"));
  out[0] = 0;
  ms_stats_print(append, out, MS_STATS_JSON);
  assert_non_null(strstr(out, "\"dma\": {"));
  ms_dma_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(alloc_base_pages),
      cmocka_unit_test(numa_node_binding),
      cmocka_unit_test(alloc_2m_pages),
      cmocka_unit_test(alloc_1g_pages),
      cmocka_unit_test(best_available_and_fallback),
      cmocka_unit_test(contiguous),
      cmocka_unit_test(list_matches_pagemap),
      cmocka_unit_test(offset_lookup),
      cmocka_unit_test(stable_after_compaction),
      cmocka_unit_test(verify_detects_move),
      cmocka_unit_test(stable_after_fork),
      cmocka_unit_test(register_memory),
      cmocka_unit_test(register_bad),
      cmocka_unit_test(register_overlap),
      cmocka_unit_test(double_free),
      cmocka_unit_test(stats_print_callback_reenters),
      cmocka_unit_test(stats_listing_is_a_snapshot),
      cmocka_unit_test(register_readonly_names_address),
      cmocka_unit_test(loopback_every_event_size),
      cmocka_unit_test(loopback_rejects_corrupt_list),
      cmocka_unit_test(space_in_buffer),
      cmocka_unit_test(no_privilege),
      cmocka_unit_test(tiny_memlock_limit),
      cmocka_unit_test(bad_input),
      cmocka_unit_test(streaming_copy),
      cmocka_unit_test(stats_lines),
      cmocka_unit_test(huge_pages_zero_by_api),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
