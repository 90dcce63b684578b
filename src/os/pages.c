/* SPDX-License-Identifier: MIT */
/* pages.c: the public page layer (ms_pages_*): reserve, commit, decommit, lazy reset, populate, lock, bind,
   release; hugetlb 1 GiB / 2 MiB, then THP, then the base page, every fallback counted and reported. */
#include "os.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

size_t ms_page_size(void) { return msi_os_page_size(); }
size_t ms_huge_page_size(ms_page_kind_t kind) { return msi_os_huge_size(kind); }

#define ADD(field, v) atomic_fetch_add_explicit(&msi_os_counters.field, (uint64_t)(v), memory_order_relaxed)
static void sub_clamped(_Atomic uint64_t *c, uint64_t v) {
  uint64_t cur = atomic_load_explicit(c, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(c, &cur, cur > v ? cur - v : 0, memory_order_relaxed,
                                                memory_order_relaxed)) {}
}

/* A small table of hugetlb reservations: release must know their page size and pool accounting. */
#define MAX_HUGE 256
static struct { uintptr_t start, end; size_t page; } huge_table[MAX_HUGE];
static msi_lock_t huge_lock = MSI_LOCK_INIT;

static void huge_note(void *addr, size_t size, size_t page) {
  msi_lock(&huge_lock);
  for (int i = 0; i < MAX_HUGE; i++)
    if (huge_table[i].start == 0) {
      huge_table[i].start = (uintptr_t)addr;
      huge_table[i].end = (uintptr_t)addr + size;
      huge_table[i].page = page;
      break;
    }
  msi_unlock(&huge_lock);
}

/* page size of the hugetlb mapping holding addr, or 0; forget=true removes [addr,addr+size) from the table */
static size_t huge_lookup(void *addr, size_t size, bool forget) {
  uintptr_t a = (uintptr_t)addr;
  size_t page = 0;
  msi_lock(&huge_lock);
  for (int i = 0; i < MAX_HUGE; i++)
    if (huge_table[i].start && a >= huge_table[i].start && a < huge_table[i].end) {
      page = huge_table[i].page;
      if (forget) {
        if (a == huge_table[i].start && a + size >= huge_table[i].end) huge_table[i].start = 0;
        else if (a == huge_table[i].start) huge_table[i].start = a + size;
        else if (a + size >= huge_table[i].end) huge_table[i].end = a;
      }
      break;
    }
  msi_unlock(&huge_lock);
  return page;
}

static const char *kind_name(ms_page_kind_t k) {
  static const char *names[] = {"base", "thp", "2MiB hugetlb", "1GiB hugetlb"};
  return (unsigned)k < 4 ? names[k] : "?";
}

/* maps `size` bytes aligned to `align` by over-mapping and trimming; hugetlb trims in huge-page units */
static void *map_aligned(size_t size, size_t align, int prot, int flags, size_t unit) {
  if (align <= unit) {
    void *p = msi_os_mmap(NULL, size, prot, flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
  }
  size_t total = size + align - unit;
  if (total < size) { errno = ENOMEM; return NULL; }
  void *p = msi_os_mmap(NULL, total, prot, flags, -1, 0);
  if (p == MAP_FAILED) return NULL;
  uintptr_t start = msi_align_up((uintptr_t)p, align);
  size_t head = start - (uintptr_t)p, tail = total - head - size;
  if (head) msi_os_munmap(p, head);
  if (tail) msi_os_munmap((void *)(start + size), tail);
  return (void *)start;
}

static int try_hugetlb(size_t size, size_t alignment, ms_page_kind_t kind, ms_pages_t *out) {
  size_t hs = msi_os_huge_size(kind);
  if (!hs) return ENOENT;
  size_t rsize = msi_round_up(size, hs);
  if (!rsize) return ENOMEM;
  int log2 = __builtin_ctzl(hs);
  /* never MAP_NORESERVE: the pool reservation happens now, so a later fault cannot raise SIGBUS */
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (log2 << MAP_HUGE_SHIFT);
  void *p = map_aligned(rsize, alignment, PROT_READ | PROT_WRITE, flags, hs);
  if (!p) return errno ? errno : ENOMEM;
  out->addr = p;
  out->size = rsize;
  out->page_size = hs;
  out->kind = kind;
  huge_note(p, rsize, hs);
  ADD(hugetlb, rsize);
  ADD(committed, rsize);
  return 0;
}

static void report_fallback(ms_pages_t *out, ms_page_kind_t wanted, size_t size, int err) {
  out->fallback = 1;
  ADD(huge_fallbacks, 1);
  msi_verbose("pages: %s pages for %zu bytes unavailable (%s); falling back", kind_name(wanted), size,
              err == ENOENT ? "kernel has none" : err == ENOMEM ? "pool empty or too small" : "refused");
}

static int finish_flags(ms_pages_t *out, unsigned flags, int numa_node) {
  if (numa_node >= 0 && ms_pages_bind(out->addr, out->size, numa_node) == 0) out->numa_node = numa_node;
  if ((flags & MS_PAGES_POPULATE) && out->kind < MS_PAGE_HUGE_2M) {
    int r = ms_pages_populate(out->addr, out->size);
    if (r) return r;
    out->flags |= MS_PAGES_POPULATE;
  } else if (flags & MS_PAGES_POPULATE) {
    ms_pages_populate(out->addr, out->size);
    out->flags |= MS_PAGES_POPULATE;
  }
  if (flags & MS_PAGES_LOCK) {
    int r = ms_pages_lock(out->addr, out->size);
    if (r) return r;
    out->flags |= MS_PAGES_LOCK;
  }
  return 0;
}

/* errno is set as well as returned, so callers may use either */
#define FAIL(e) do { errno = (e); return (e); } while (0)

int ms_pages_reserve(size_t size, size_t alignment, unsigned flags, int numa_node, ms_pages_t *out) {
  if (!out || size == 0 || (alignment && !msi_is_pow2(alignment))) FAIL(EINVAL);
  if (numa_node >= msi_os_numa_nodes() || numa_node < -1) FAIL(EINVAL);
  if (flags & (MS_PAGES_POPULATE | MS_PAGES_LOCK)) flags |= MS_PAGES_COMMIT; /* both need accessible pages */
  memset(out, 0, sizeof *out);
  out->numa_node = -1;
  size_t ps = msi_os_page_size();
  if (alignment < ps) alignment = ps;
  size_t rsize = msi_round_up(size, ps);
  if (!rsize || rsize > (SIZE_MAX >> 2)) FAIL(ENOMEM);
  int err = 0;
  if (flags & MS_PAGES_HUGE_1G) {
    err = try_hugetlb(size, alignment, MS_PAGE_HUGE_1G, out);
    if (err) {
      if ((flags & MS_PAGES_NO_FALLBACK) && !(flags & MS_PAGES_HUGE_2M)) FAIL(ENOMEM);
      report_fallback(out, MS_PAGE_HUGE_1G, size, err);
    }
  }
  if (!out->addr && (flags & MS_PAGES_HUGE_2M)) {
    err = try_hugetlb(size, alignment, MS_PAGE_HUGE_2M, out);
    if (err) {
      if (flags & MS_PAGES_NO_FALLBACK) FAIL(ENOMEM);
      report_fallback(out, MS_PAGE_HUGE_2M, size, err);
    }
  }
  if (out->addr) {
    out->flags = MS_PAGES_COMMIT | (out->kind == MS_PAGE_HUGE_1G ? MS_PAGES_HUGE_1G : MS_PAGES_HUGE_2M);
  } else {
    bool thp = (flags & (MS_PAGES_THP | MS_PAGES_HUGE_2M | MS_PAGES_HUGE_1G)) && msi_os_huge_size(MS_PAGE_THP);
    size_t thp_size = thp ? msi_os_huge_size(MS_PAGE_THP) : ps;
    if (thp) {
      rsize = msi_round_up(size, thp_size);
      if (!rsize) FAIL(ENOMEM);
      if (alignment < thp_size) alignment = thp_size;
    }
    bool commit = flags & MS_PAGES_COMMIT;
    int prot = commit ? PROT_READ | PROT_WRITE : PROT_NONE;
    void *p = map_aligned(rsize, alignment, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, ps);
    if (!p) FAIL(errno ? errno : ENOMEM);
    out->addr = p;
    out->size = rsize;
    out->page_size = ps;
    out->kind = MS_PAGE_BASE;
    out->flags = flags & MS_PAGES_COMMIT;
    if (commit) ADD(committed, rsize);
    if (thp) {
      if (msi_os_madvise(p, rsize, MADV_HUGEPAGE) == 0) {
        out->kind = MS_PAGE_THP;
        out->page_size = thp_size;
        out->flags |= MS_PAGES_THP;
        ADD(thp, rsize);
      } else if (flags & MS_PAGES_THP) {
        report_fallback(out, MS_PAGE_THP, size, errno);
      }
    } else if (flags & MS_PAGES_THP) {
      report_fallback(out, MS_PAGE_THP, size, ENOENT);
    }
  }
  ADD(reserved, out->size);
  int r = finish_flags(out, flags, numa_node);
  if (r) {
    ms_pages_release(out->addr, out->size);
    memset(out, 0, sizeof *out);
    FAIL(r);
  }
  msi_verbose("pages: reserved %zu bytes at %p with %s pages%s", out->size, out->addr, kind_name(out->kind),
              out->fallback ? " (fallback)" : "");
  return 0;
}

static int check_range(void *addr, size_t size) {
  if (!addr || size == 0 || ((uintptr_t)addr & (msi_os_page_size() - 1))) return EINVAL;
  if ((uintptr_t)addr + size < (uintptr_t)addr || !msi_round_up(size, msi_os_page_size())) return EINVAL;
  return 0;
}
#define CHECK(addr, size) do { int c_ = check_range(addr, size); if (c_) FAIL(c_); } while (0)
static size_t page_round(size_t size) { return msi_round_up(size, msi_os_page_size()); }

int ms_pages_commit(void *addr, size_t size) {
  CHECK(addr, size);
  size = page_round(size);
  if (msi_os_mprotect(addr, size, PROT_READ | PROT_WRITE)) return errno;
  ADD(committed, size);
  return 0;
}

int ms_pages_decommit(void *addr, size_t size) {
  CHECK(addr, size);
  size = page_round(size);
  if (msi_os_madvise(addr, size, MADV_DONTNEED)) return errno;
  if (!huge_lookup(addr, size, false) && msi_os_mprotect(addr, size, PROT_NONE)) return errno;
  sub_clamped(&msi_os_counters.committed, size);
  return 0;
}

int ms_pages_reset(void *addr, size_t size) {
  CHECK(addr, size);
  size = page_round(size);
  if (huge_lookup(addr, size, false) || !msi_os_has_madv_free()) {
    if (msi_os_madvise(addr, size, MADV_DONTNEED)) return errno;
  } else if (msi_os_madvise(addr, size, MADV_FREE)) {
    if (errno != EINVAL || msi_os_madvise(addr, size, MADV_DONTNEED)) return errno;
  }
  ADD(reset, size);
  return 0;
}

int ms_pages_populate(void *addr, size_t size) {
  CHECK(addr, size);
  size = page_round(size);
  if (msi_os_has_populate_write()) {
    /* ENOMEM (hole), EINVAL (PROT_NONE), EFAULT (not writable): reported, never a crash */
    return msi_os_madvise(addr, size, MADV_POPULATE_WRITE) == 0 ? 0 : errno;
  }
  /* kernel before 5.14: mlock faults the pages in (and fails cleanly on a hole or PROT_NONE), munlock keeps them */
  if (msi_os_mapped(addr, size) != 0) return errno;
  if (msi_os_mlock(addr, size) != 0) return errno;
  msi_os_munlock(addr, size);
  return 0;
}

static struct rlimit memlock_limit(void) {
  struct rlimit rl = {0, 0};
  getrlimit(RLIMIT_MEMLOCK, &rl);
  return rl;
}

int ms_pages_lock(void *addr, size_t size) {
  CHECK(addr, size);
  size = page_round(size);
  if (msi_os_mlock(addr, size)) {
    int e = errno;
    struct rlimit rl = memlock_limit();
    if (rl.rlim_cur == RLIM_INFINITY)
      msi_verbose("pages: mlock of %zu bytes refused (error %d)", size, e);
    else
      msi_verbose("pages: mlock of %zu bytes refused (error %d); RLIMIT_MEMLOCK is %llu bytes", size, e,
                  (unsigned long long)rl.rlim_cur);
    errno = e;
    return e;
  }
  ADD(locked, size);
  return 0;
}

int ms_pages_unlock(void *addr, size_t size) {
  CHECK(addr, size);
  size = page_round(size);
  if (msi_os_munlock(addr, size)) return errno;
  sub_clamped(&msi_os_counters.locked, size);
  return 0;
}

int ms_pages_bind(void *addr, size_t size, int node) {
  CHECK(addr, size);
  if (node < 0 || node >= msi_os_numa_nodes()) FAIL(EINVAL);
  if (msi_os_mbind(addr, page_round(size), node)) {
    int e = errno;
    msi_verbose("pages: binding %zu bytes to NUMA node %d failed (error %d)", size, node, e);
    errno = e;
    return e;
  }
  return 0;
}

int ms_pages_release(void *addr, size_t size) {
  CHECK(addr, size);
  /* munmap succeeds on a hole: a range that is not (entirely) mapped is a caller error, reported */
  if (msi_os_mapped(addr, msi_round_up(size, msi_os_page_size())) != 0) return errno;
  size_t hp = huge_lookup(addr, size, false);
  size = msi_round_up(size, hp ? hp : msi_os_page_size());
  if (msi_os_munmap(addr, size)) return errno;
  if (hp) {
    huge_lookup(addr, size, true);
    sub_clamped(&msi_os_counters.hugetlb, size);
  }
  sub_clamped(&msi_os_counters.reserved, size);
  sub_clamped(&msi_os_counters.committed, size);
  return 0;
}
