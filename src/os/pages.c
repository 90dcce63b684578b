/* SPDX-License-Identifier: MIT */
/* pages.c: the public page layer (ms_pages_*): reserve, commit, decommit, lazy reset, populate, lock, bind,
   release; hugetlb 1 GiB / 2 MiB, then THP, then the base page, every fallback counted and reported. */
#include "os.h"
#include <errno.h>
#include <pthread.h>
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
size_t ms_huge_page_size(ms_page_kind_t kind) {
  if ((unsigned)kind > MS_PAGE_HUGE_1G) errno = EINVAL;
  return msi_os_huge_size(kind);
}

#define ADD(field, v) atomic_fetch_add_explicit(&msi_os_counters.field, (uint64_t)(v), memory_order_relaxed)
static void sub_clamped(_Atomic uint64_t *c, uint64_t v) {
  uint64_t cur = atomic_load_explicit(c, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(c, &cur, cur > v ? cur - v : 0, memory_order_relaxed,
                                                memory_order_relaxed)) {}
}

/* Every reservation made here, sorted by address, with its page size (a hugetlb range is released in huge-page
   units and stays accessible when decommitted) and the bytes counted committed and locked in it (releasing it
   subtracts what it holds, no more). A growable array: static room for the first ranges, then a mapping that
   doubles (never malloc), so any number of ranges is known, O(log n) per lookup under one lock. Chosen over a
   header page in front of each range (a whole huge page for a hugetlb range, and it shifts the alignment) and
   over reading /proc/self/smaps (an open that a sandbox may forbid, on paths that must not fail). */
/* internal: made for the library's own parts (spaces, frame allocators, DMA buffers and their lists: msi_pages_*),
   which the public calls refuse (ENOMEM, as memory that is not a reservation of this layer) */
/* pinned: an internal range the library locked pages of (a DMA buffer, a locked space), which ms_pages_unlock
   refuses; the caller's own locks on a part's blocks do not set it */
typedef struct { uintptr_t start, end; size_t page, committed, locked; bool internal, pinned, thp; } range_t;
#define STATIC_RANGES 64
static range_t static_ranges[STATIC_RANGES];
static range_t *ranges = static_ranges;
static size_t nranges, cap_ranges = STATIC_RANGES;
static msi_lock_t range_lock = MSI_LOCK_INIT;
static msi_lock_t room_lock = MSI_LOCK_INIT; /* the room look's ("what the machine can still hold", below) */

/* fork.c's hook (part 7 of the lock order, taken after every part that calls ms_pages_* under a lock of its own) */
MSI_COLD void msi_fork_pages(msi_fork_phase_t phase, bool locking) {
  if (!locking) return;
  if (phase == MSI_FORK_PREPARE) msi_lock(&range_lock);
  else if (phase == MSI_FORK_PARENT) msi_unlock(&range_lock);
  else {
    msi_lock_reset(&range_lock);
    msi_lock_reset(&room_lock); /* the room look's scratch (a leaf, below): a parent thread's look is not the child's */
  }
}

/* room for `need` entries; caller holds range_lock; false (errno ENOMEM) when the table cannot grow */
static bool ranges_room(size_t need) {
  if (need <= cap_ranges) return true;
  size_t cap = cap_ranges * 2, bytes = msi_round_up(cap * sizeof(range_t), msi_os_page_size());
  void *p = msi_os_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { errno = ENOMEM; return false; }
  msi_memcpy(p, ranges, nranges * sizeof(range_t));
  if (ranges != static_ranges) msi_os_munmap(ranges, msi_round_up(cap_ranges * sizeof(range_t), msi_os_page_size()));
  ranges = p;
  cap_ranges = bytes / sizeof(range_t);
  return true;
}

/* index of the first range ending after a (nranges when none); caller holds range_lock */
static size_t ranges_after(uintptr_t a) {
  size_t lo = 0, hi = nranges;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ranges[mid].end <= a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* records a fresh mapping; entries it overlaps are stale (the kernel handed these addresses out again) */
static bool range_add(void *addr, size_t size, size_t page, size_t committed, bool internal, bool thp) {
  uintptr_t s = (uintptr_t)addr, e = s + size;
  msi_fork_register(); /* fork.c */
  msi_lock(&range_lock);
  size_t i = ranges_after(s), j = i;
  while (j < nranges && ranges[j].start < e) j++;
  bool ok = j > i || ranges_room(nranges + 1);
  if (ok) {
    memmove(&ranges[i + 1], &ranges[j], (nranges - j) * sizeof(range_t));
    nranges = nranges + 1 - (j - i);
    ranges[i] = (range_t){s, e, page, committed, 0, internal, false, thp};
  }
  msi_unlock(&range_lock);
  return ok;
}

/* the page size of the reservation holding addr (0: not one of ours) */
static size_t range_page(const void *addr) {
  uintptr_t a = (uintptr_t)addr;
  msi_lock(&range_lock);
  size_t i = ranges_after(a), page = i < nranges && ranges[i].start <= a ? ranges[i].page : 0;
  msi_unlock(&range_lock);
  return page;
}
static bool is_hugetlb(const void *addr) { return range_page(addr) > msi_os_page_size(); }

/* true when reservations of this layer cover [a, a+size) without a gap: commit, decommit, reset and release
   change only such memory (the kernel would apply them to any mapping: a neighbour's data or the caller's own
   mmap, zeroed or unmapped); ENOMEM otherwise, as for a hole */
static bool reserved_here(const void *addr, size_t size) {
  uintptr_t cur = (uintptr_t)addr, end = cur + size;
  msi_lock(&range_lock);
  for (size_t i = ranges_after(cur); cur < end && i < nranges && ranges[i].start <= cur; i++) cur = ranges[i].end;
  msi_unlock(&range_lock);
  return cur >= end;
}

/* Counts [a, a+size) as committed (field COMMITTED) or locked (LOCKED) when add, else as no longer so. Inside a
   reservation a count stays between 0 and the reservation's size; memory that is not a reservation of this
   layer (ms_pages_lock on the caller's memory) counts as asked. The global counter changes by the same. */
enum { COMMITTED, LOCKED };
static void count_range(uintptr_t a, size_t size, int field, bool add) {
  _Atomic uint64_t *global = field == COMMITTED ? &msi_os_counters.committed : &msi_os_counters.locked;
  uintptr_t end = a + size, cur = a;
  size_t delta = 0;
  msi_lock(&range_lock);
  for (size_t i = ranges_after(a); cur < end; i++) {
    if (i == nranges || ranges[i].start >= end) { delta += end - cur; break; }
    range_t *r = &ranges[i];
    if (r->start > cur) delta += r->start - cur; /* foreign memory before this range */
    size_t o = (end < r->end ? end : r->end) - (r->start > cur ? r->start : cur);
    size_t *held = field == COMMITTED ? &r->committed : &r->locked, room = add ? r->end - r->start - *held : *held;
    size_t d = o < room ? o : room;
    *held = add ? *held + d : *held - d;
    delta += d;
    cur = end < r->end ? end : r->end;
  }
  msi_unlock(&range_lock);
  if (add) atomic_fetch_add_explicit(global, delta, memory_order_relaxed);
  else sub_clamped(global, delta);
}

/* forgets [a, a+size) before it is unmapped, subtracting what it held from the counters; false (ENOMEM) when
   splitting a range needs an entry the table cannot get (nothing changed then) */
static bool range_forget(uintptr_t a, size_t size) {
  uintptr_t end = a + size;
  size_t reserved = 0, committed = 0, locked = 0, huge = 0, thp = 0;
  msi_lock(&range_lock);
  size_t i = ranges_after(a);
  if (i < nranges && ranges[i].start < a && ranges[i].end > end && !ranges_room(nranges + 1)) {
    msi_unlock(&range_lock);
    return false;
  }
  while (i < nranges && ranges[i].start < end) {
    range_t *r = &ranges[i];
    uintptr_t os = r->start > a ? r->start : a, oe = r->end < end ? r->end : end;
    size_t o = oe - os, c = o < r->committed ? o : r->committed, l = o < r->locked ? o : r->locked;
    reserved += o, committed += c, locked += l;
    if (r->page > msi_os_page_size()) huge += o;
    if (r->thp) thp += o;
    size_t keep_c = r->committed - c, keep_l = r->locked - l;
    if (os == r->start && oe == r->end) { /* whole range */
      memmove(r, r + 1, (nranges - i - 1) * sizeof(range_t));
      nranges--;
      continue;
    }
    if (os > r->start && oe < r->end) { /* a middle part: split in two */
      memmove(r + 1, r, (nranges - i) * sizeof(range_t));
      nranges++;
      r[1].start = oe;
      r->end = os;
      size_t left = os - r->start, right = r[1].end - oe;
      r->committed = keep_c < left ? keep_c : left, r[1].committed = keep_c - r->committed;
      r->locked = keep_l < left ? keep_l : left, r[1].locked = keep_l - r->locked;
      if (r[1].committed > right) r[1].committed = right;
      if (r[1].locked > right) r[1].locked = right;
      break;
    }
    if (os == r->start) r->start = oe;
    else r->end = os;
    size_t left = r->end - r->start;
    r->committed = keep_c < left ? keep_c : left;
    r->locked = keep_l < left ? keep_l : left;
    i++;
  }
  msi_unlock(&range_lock);
  sub_clamped(&msi_os_counters.reserved, reserved);
  sub_clamped(&msi_os_counters.committed, committed);
  sub_clamped(&msi_os_counters.locked, locked);
  sub_clamped(&msi_os_counters.hugetlb, huge);
  sub_clamped(&msi_os_counters.thp, thp);
  return true;
}

static const char *kind_name(ms_page_kind_t k) {
  static const char *names[] = {"base", "thp", "2MiB hugetlb", "1GiB hugetlb"};
  return (unsigned)k < 4 ? names[k] : "?";
}

static int try_hugetlb(size_t size, size_t alignment, ms_page_kind_t kind, ms_pages_t *out) {
  size_t hs = msi_os_huge_size(kind);
  if (!hs) return ENOENT;
  size_t rsize = msi_round_up(size, hs);
  if (!rsize) return ENOMEM;
  int log2 = __builtin_ctzl(hs);
  /* never MAP_NORESERVE: the pool reservation happens now, so a later fault cannot raise SIGBUS */
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (log2 << MAP_HUGE_SHIFT);
  msi_os_reservation_t r = {.want = rsize, .align = alignment, .unit = hs, .prot = PROT_READ | PROT_WRITE,
                            .map_flags = flags};
  if (msi_os_reserve(&r)) return errno ? errno : ENOMEM;
  out->addr = r.addr;
  out->size = rsize;
  out->page_size = hs;
  out->kind = kind;
  return 0;
}

/* ---- the huge page fallback (ms_pages_reserve, DMA buffers) ---- */
const char *msi_pages_name(size_t page) {
  if (page == MSI_GiB) return "1 GiB";
  if (page == 2 * MSI_MiB) return "2 MiB";
  if (page == 4 * MSI_KiB) return "4 KiB";
  if (page == 16 * MSI_KiB) return "16 KiB";
  if (page == 64 * MSI_KiB) return "64 KiB";
  return "base";
}

long long msi_pages_huge_free(size_t page) {
  char path[96];
  unsigned long long v;
  msi_snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%zukB/free_hugepages", page >> 10);
  return msi_os_read_ull(path, &v) ? (long long)v : -1;
}

const char *msi_pages_unavailable(int err) {
  return err == ENOENT ? "the kernel has none" : err == ENOMEM ? "the pool has too few free pages" : "refused";
}

/* one fallback: counted, and said under MEMSPACE_VERBOSE */
static void fallback_note(const char *who, const char *from, size_t bytes, const char *why, long long free_pages,
                          const char *to) {
  ADD(huge_fallbacks, 1);
  if (free_pages >= 0)
    msi_verbose("%s: %s pages for %zu bytes unavailable (%s, free %lld); falling back to %s pages", who, from, bytes,
                why, free_pages, to);
  else
    msi_verbose("%s: %s pages for %zu bytes unavailable (%s); falling back to %s pages", who, from, bytes, why, to);
}

int msi_pages_fallback(const char *who, size_t bytes, const size_t *pages, int n, msi_pages_try_fn try_one,
                       void *arg, int *err) {
  size_t ps = msi_os_page_size();
  *err = ENOMEM;
  for (int i = 0; i < n; i++) {
    *err = try_one(pages[i], arg);
    if (!*err) return i;
    if (i + 1 < n)
      fallback_note(who, msi_pages_name(pages[i]), bytes, msi_pages_unavailable(*err),
                    pages[i] > ps ? msi_pages_huge_free(pages[i]) : -1, msi_pages_name(pages[i + 1]));
  }
  return -1;
}

/* ---- what the machine can still hold ----
   Faulting in more anonymous memory than the machine or the memory cgroup can hold does not fail: the kernel
   reclaims, swaps, then its OOM killer kills this process or another one. MS_PAGES_POPULATE and MS_PAGES_LOCK
   fault in every page of a fresh base-page reservation, so ms_pages_reserve refuses them (ENOMEM) before a page is
   touched when the range exceeds the room left now: the machine's MemAvailable + SwapFree (MemAvailable alone
   when locked: locked pages cannot be swapped), and the memory cgroup's limit (msi_os_cgroup_budget: the
   smallest up the hierarchy) less its working set (its usage less its inactive page cache, which reclaim frees
   first), plus free swap where the cgroup may swap. A look at a moment: memory others take meanwhile is not
   counted. Hugetlb ranges take their pages from the pool when mapped and need no look. Cold path (a few small
   files read); the lock guards the static scratch (the cgroup paths, 4 KiB each, do not belong on a stack). */

/* the file `name` beside the cgroup's memory.stat, read as one number; false when absent or not a number */
static bool cgroup_number(const msi_os_cgroup_t *cg, const char *name, uint64_t *v) {
  char path[sizeof cg->stat_path + 32];
  unsigned long long x;
  if (!msi_os_cgroup_file(cg, name, path, sizeof path) || !msi_os_read_ull(path, &x)) return false;
  *v = x;
  return true;
}

/* whether the limiting cgroup may swap: v2 memory.swap.max not 0, v1 memory.memsw.limit_in_bytes (when the
   kernel accounts swap) above memory.limit_in_bytes */
static bool cgroup_may_swap(const msi_os_cgroup_t *cg) {
  uint64_t v;
  if (cg->version == 2) return !cgroup_number(cg, "memory.swap.max", &v) || v > 0; /* "max": not a number */
  return !cgroup_number(cg, "memory.memsw.limit_in_bytes", &v) || v > cg->limit;
}

/* 0 when `bytes` more resident (locked: unswappable) memory fit the room left now, else ENOMEM with the limit
   said under MEMSPACE_VERBOSE */
static int room_check(size_t bytes, bool locked) {
  MSI_COLD_BSS static msi_os_cgroup_t cg;
  MSI_COLD_BSS static char stat[8192];
  uint64_t avail, swap = 0, room = UINT64_MAX;
  const char *what = NULL;
  if (msi_os_meminfo("MemAvailable", &avail)) {
    if (!locked && !msi_os_meminfo("SwapFree", &swap)) swap = 0;
    room = avail + swap;
    what = locked ? "the machine's available memory (locked pages cannot be swapped)"
                  : "the machine's available memory and free swap";
  }
  msi_lock(&room_lock);
  msi_os_cgroup_budget(UINT64_MAX, &cg);
  uint64_t usage, inactive = 0;
  if (cg.limit != UINT64_MAX && cg.stat_path[0] &&
      cgroup_number(&cg, cg.version == 1 ? "memory.usage_in_bytes" : "memory.current", &usage)) {
    if (msi_os_read_file(cg.stat_path, stat, sizeof stat) > 0)
      msi_os_text_value(stat, cg.version == 1 ? "total_inactive_file" : "inactive_file", &inactive);
    uint64_t set = usage > inactive ? usage - inactive : 0;
    uint64_t cg_room = (cg.limit > set ? cg.limit - set : 0) + (!locked && cgroup_may_swap(&cg) ? swap : 0);
    if (cg_room < room) room = cg_room, what = "the memory cgroup's limit less its working set";
  }
  msi_unlock(&room_lock);
  if (bytes <= room) return 0;
  msi_verbose("pages: %zu bytes %s refused before a page is touched: more than %s, %llu bytes", bytes,
              locked ? "to lock" : "to pre-fault", what, (unsigned long long)room);
  return ENOMEM;
}

static int finish_flags(ms_pages_t *out, unsigned flags, int numa_node) {
  if (numa_node >= 0 && msi_pages_bind(out->addr, out->size, numa_node) == 0) out->numa_node = numa_node;
  /* a lock mlock will refuse (RLIMIT_MEMLOCK, without CAP_IPC_LOCK) fails before the populate faults every page in */
  if ((flags & MS_PAGES_LOCK) && out->kind < MS_PAGE_HUGE_2M && !msi_os_may_lock(out->size)) {
    struct rlimit rl = {1, 1};
    msi_os_getrlimit(RLIMIT_MEMLOCK, &rl);
    return rl.rlim_cur ? ENOMEM : EPERM; /* what mlock gives */
  }
  /* so does one the machine cannot hold (room_check) */
  if ((flags & (MS_PAGES_POPULATE | MS_PAGES_LOCK)) && out->kind < MS_PAGE_HUGE_2M) {
    int r = room_check(out->size, flags & MS_PAGES_LOCK);
    if (r) return r;
  }
  if ((flags & MS_PAGES_POPULATE) && out->kind < MS_PAGE_HUGE_2M) {
    int r = msi_pages_populate(out->addr, out->size);
    if (r) return r;
    out->flags |= MS_PAGES_POPULATE;
  } else if (flags & MS_PAGES_POPULATE) {
    msi_pages_populate(out->addr, out->size);
    out->flags |= MS_PAGES_POPULATE;
  }
  if (flags & MS_PAGES_LOCK) {
    int r = msi_pages_lock(out->addr, out->size);
    if (r) return r;
    out->flags |= MS_PAGES_LOCK;
  }
  return 0;
}

/* errno is set as well as returned, so callers may use either */
#define FAIL(e) do { errno = (e); return (e); } while (0)

/* one page size of msi_pages_reserve: hugetlb, or base pages (transparent huge pages where asked); 0 or errno */
typedef struct {
  size_t size, min, alignment, min_align;
  unsigned flags;
  ms_pages_t *out;
} reserve_arg_t;
static int reserve_one(size_t page, void *arg) {
  reserve_arg_t *a = arg;
  ms_pages_t *out = a->out;
  size_t ps = msi_os_page_size(), size = a->size, alignment = a->alignment;
  unsigned flags = a->flags;
  if (page > ps) {
    int err = try_hugetlb(size, alignment, page == MSI_GiB ? MS_PAGE_HUGE_1G : MS_PAGE_HUGE_2M, out);
    if (!err) out->flags = MS_PAGES_COMMIT | (out->kind == MS_PAGE_HUGE_1G ? MS_PAGES_HUGE_1G : MS_PAGES_HUGE_2M);
    return err;
  }
  bool thp = (flags & (MS_PAGES_THP | MS_PAGES_HUGE_2M | MS_PAGES_HUGE_1G)) && msi_os_huge_size(MS_PAGE_THP);
  size_t thp_size = thp ? msi_os_huge_size(MS_PAGE_THP) : ps, rsize = msi_round_up(size, thp_size);
  if (!rsize) return ENOMEM;
  if (alignment < thp_size) alignment = thp_size;
  bool commit = flags & MS_PAGES_COMMIT;
  msi_os_reservation_t r = {.want = rsize, .min = a->min ? a->min : size, .align = alignment,
                            .min_align = a->min_align, .unit = thp_size,
                            .prot = commit ? PROT_READ | PROT_WRITE : PROT_NONE};
  if (msi_os_reserve(&r)) return errno ? errno : ENOMEM;
  out->addr = r.addr;
  out->size = r.size;
  out->page_size = ps;
  out->kind = MS_PAGE_BASE;
  out->flags = flags & MS_PAGES_COMMIT;
  if (thp && msi_os_madvise(r.addr, r.size, MADV_HUGEPAGE) == 0) {
    out->kind = MS_PAGE_THP;
    out->page_size = thp_size;
    out->flags |= MS_PAGES_THP; /* (counted once recorded: reserve) */
  } else if (flags & MS_PAGES_THP) {
    out->fallback = 1;
    fallback_note("pages", "transparent huge", size, thp ? "refused" : "the kernel has none or THP is off", -1,
                  msi_pages_name(ps));
  }
  return 0;
}

#define PAGES_FLAGS (MS_PAGES_COMMIT | MS_PAGES_POPULATE | MS_PAGES_LOCK | MS_PAGES_HUGE_2M | MS_PAGES_HUGE_1G | \
                     MS_PAGES_THP | MS_PAGES_NO_FALLBACK)
static int reserve(size_t size, size_t min, size_t alignment, size_t min_align, unsigned flags, int numa_node,
                   ms_pages_t *out, bool internal);
int ms_pages_reserve(size_t size, size_t alignment, unsigned flags, int numa_node, ms_pages_t *out) {
  if (flags & ~PAGES_FLAGS) FAIL(EINVAL); /* a flag this library does not know: not silently left out */
  return reserve(size, size, alignment, alignment, flags, numa_node, out, false);
}
int msi_pages_reserve_exact(size_t size, size_t alignment, unsigned flags, int numa_node, ms_pages_t *out) {
  return reserve(size, size, alignment, alignment, flags, numa_node, out, true);
}
int msi_pages_reserve(size_t size, size_t min, size_t alignment, size_t min_align, unsigned flags, int numa_node,
                      ms_pages_t *out) {
  return reserve(size, min, alignment, min_align, flags, numa_node, out, true);
}

static int reserve(size_t size, size_t min, size_t alignment, size_t min_align, unsigned flags, int numa_node,
                   ms_pages_t *out, bool internal) {
  if (!out || size == 0 || min > size || (alignment && !msi_is_pow2(alignment)) ||
      (min_align && !msi_is_pow2(min_align)))
    FAIL(EINVAL);
  if (numa_node < -1 || (numa_node >= 0 && !msi_os_numa_node_ok(numa_node))) FAIL(EINVAL);
  if (flags & (MS_PAGES_POPULATE | MS_PAGES_LOCK)) flags |= MS_PAGES_COMMIT; /* both need accessible pages */
  memset(out, 0, sizeof *out);
  out->numa_node = -1;
  size_t ps = msi_os_page_size();
  if (alignment < ps) alignment = ps;
  size_t rsize = msi_round_up(size, ps);
  if (!rsize || rsize > (SIZE_MAX >> 2)) FAIL(ENOMEM);
  /* 1 GiB, 2 MiB hugetlb as asked, then the base page (with THP where asked) unless MS_PAGES_NO_FALLBACK */
  size_t pages[3];
  int n = 0, err;
  if (flags & MS_PAGES_HUGE_1G) pages[n++] = MSI_GiB;
  if (flags & MS_PAGES_HUGE_2M) pages[n++] = 2 * MSI_MiB;
  if (!n || !(flags & MS_PAGES_NO_FALLBACK)) pages[n++] = ps;
  reserve_arg_t a = {size, min, alignment, min_align, flags, out};
  int got = msi_pages_fallback("pages", size, pages, n, reserve_one, &a, &err);
  if (got < 0) {
    memset(out, 0, sizeof *out);
    FAIL(pages[n - 1] > ps ? ENOMEM : err);
  }
  out->fallback = got > 0 || out->fallback;
  bool huge = out->kind >= MS_PAGE_HUGE_2M;
  size_t committed = (out->flags & MS_PAGES_COMMIT) ? out->size : 0;
  /* the record keeps the kernel's page: a THP range is base pages (page_size says what the advice asks for), so
     its parts are released, decommitted (PROT_NONE) and reset (MADV_FREE) page by page as base ranges are, and it
     never counts as hugetlb */
  if (!range_add(out->addr, out->size, huge ? out->page_size : ps, committed, internal, out->kind == MS_PAGE_THP)) {
    msi_os_munmap(out->addr, out->size);
    memset(out, 0, sizeof *out);
    FAIL(ENOMEM);
  }
  ADD(reserved, out->size);
  ADD(committed, committed);
  if (huge) ADD(hugetlb, out->size);
  if (out->kind == MS_PAGE_THP) ADD(thp, out->size);
  int r = finish_flags(out, flags, numa_node);
  if (r) {
    msi_pages_release(out->addr, out->size);
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
/* CHECK, then the rounded range must lie in this layer's reservations */
#define CHECK_OURS(addr, size)                                                                                    \
  do {                                                                                                            \
    CHECK(addr, size);                                                                                            \
    if (!reserved_here(addr, page_round(size))) FAIL(ENOMEM);                                                     \
  } while (0)

int msi_pages_commit(void *addr, size_t size) {
  CHECK_OURS(addr, size);
  size = page_round(size);
  if (msi_os_mprotect(addr, size, PROT_READ | PROT_WRITE)) return errno;
  count_range((uintptr_t)addr, size, COMMITTED, true);
  return 0;
}

int msi_pages_decommit(void *addr, size_t size) {
  CHECK_OURS(addr, size);
  size = page_round(size);
  if (msi_os_madvise(addr, size, MADV_DONTNEED)) return errno;
  if (!is_hugetlb(addr) && msi_os_mprotect(addr, size, PROT_NONE)) return errno;
  count_range((uintptr_t)addr, size, COMMITTED, false);
  return 0;
}

int msi_pages_reset(void *addr, size_t size) {
  CHECK_OURS(addr, size);
  size = page_round(size);
  if (is_hugetlb(addr) || !msi_os_has_madv_free()) {
    if (msi_os_madvise(addr, size, MADV_DONTNEED)) return errno;
  } else if (msi_os_madvise(addr, size, MADV_FREE)) {
    if (errno != EINVAL || msi_os_madvise(addr, size, MADV_DONTNEED)) return errno;
  }
  ADD(reset, size);
  return 0;
}

/* ---- pre-faulting before Linux 5.14 ----
   Without MADV_POPULATE_WRITE, mlock faults the pages in (and fails cleanly on a hole or PROT_NONE) and munlock
   keeps them. mlock does not nest, so munlock would undo every lock in the range, also one the caller (or a DMA
   buffer) holds: the munlock leaves out the parts that were locked before. None are when VmLck in
   /proc/self/status is 0 (nothing in the process is locked: one small file); otherwise /proc/self/smaps tells,
   per mapping (VmFlags "lo"). A lock taken on fault (mlock2 MLOCK_ONFAULT) stays a lock and now holds every page.
   A lock taken by another thread between the look and the munlock is not seen. When smaps is needed and cannot be
   read, the lock state is unknown and the range is not pre-faulted: the open's errno. */
#define UNLOCKED_RUNS 16 /* runs without a lock found per smaps pass; more take another pass */

/* VmLck of /proc/self/status in kB into *kb; false when unreadable */
static bool locked_kb(uint64_t *kb) {
  msi_os_lines_t r;
  if (!msi_os_lines_open(&r, "/proc/self/status")) return false;
  bool found = false;
  while (!found && msi_os_lines_next(&r)) {
    if (strncmp(r.line, "VmLck:", 6) != 0) continue;
    const char *p = r.line + 6;
    while (*p == ' ' || *p == '\t') p++;
    uint64_t v;
    msi_os_parse_u64(p, 10, &v);
    *kb = v, found = true;
  }
  msi_os_lines_close(&r);
  return found;
}

/* the runs of [from, e) in mappings without VmFlags "lo", at most UNLOCKED_RUNS, in address order (a hole ends a
   run); next: where the runs found stop covering the range (e when they cover it) */
typedef struct {
  uintptr_t from, e, next;
  uintptr_t (*runs)[2];
  size_t n;
} unlocked_runs_t;

static bool unlocked_run(const msi_os_mapping_t *m, void *arg) {
  unlocked_runs_t *u = arg;
  if (msi_os_vmflag(m->vmflags, "lo")) return true;
  uintptr_t ps = m->start > u->from ? m->start : u->from, pe = m->end < u->e ? m->end : u->e;
  if (u->n && u->runs[u->n - 1][1] == ps) u->runs[u->n - 1][1] = pe;
  else if (u->n == UNLOCKED_RUNS) { u->next = ps; return false; }
  else u->runs[u->n][0] = ps, u->runs[u->n][1] = pe, u->n++;
  return true;
}

/* pre-faults [s, e) by mlock, then munlocks the parts that were not locked before; 0 or errno */
static int populate_by_lock(uintptr_t s, uintptr_t e) {
  if (msi_os_mapped((void *)s, e - s) != 0) return errno;
  uint64_t kb = 1;
  if (locked_kb(&kb) && kb == 0) { /* nothing in the process is locked */
    int r = msi_os_mlock((void *)s, e - s) != 0 ? errno : 0; /* on failure a part may be locked: undone too */
    msi_os_munlock((void *)s, e - s);
    return r;
  }
  for (uintptr_t cur = s; cur < e;) {
    uintptr_t runs[UNLOCKED_RUNS][2];
    unlocked_runs_t u = {cur, e, e, runs, 0};
    int r = msi_os_smaps_walk(cur, e, unlocked_run, &u);
    if (r) {
      msi_verbose("pages: pre-faulting %zu bytes at %p refused: the lock state of the range is not readable "
                  "(/proc/self/smaps: %s) and mlock + munlock would undo the locks in it", e - s, (void *)s,
                  MSI_ERRNO(r));
      return r;
    }
    r = msi_os_mlock((void *)cur, u.next - cur) != 0 ? errno : 0;
    for (size_t i = 0; i < u.n; i++) msi_os_munlock((void *)runs[i][0], runs[i][1] - runs[i][0]);
    if (r) return r;
    cur = u.next;
  }
  return 0;
}

int msi_pages_populate(void *addr, size_t size) {
  CHECK(addr, size);
  size = page_round(size);
  if (msi_os_has_populate_write()) {
    /* ENOMEM (hole), EINVAL (PROT_NONE), EFAULT (not writable): reported, never a crash */
    return msi_os_madvise(addr, size, MADV_POPULATE_WRITE) == 0 ? 0 : errno;
  }
  return populate_by_lock((uintptr_t)addr, (uintptr_t)addr + size);
}

static struct rlimit memlock_limit(void) {
  struct rlimit rl = {0, 0};
  getrlimit(RLIMIT_MEMLOCK, &rl);
  return rl;
}

static int lock_pages(void *addr, size_t size);
/* the library's lock: its ranges become pinned */
int msi_pages_lock(void *addr, size_t size) {
  int r = lock_pages(addr, size);
  if (r) return r;
  uintptr_t a = (uintptr_t)addr, end = a + page_round(size);
  msi_lock(&range_lock);
  for (size_t i = ranges_after(a); i < nranges && ranges[i].start < end; i++) ranges[i].pinned = ranges[i].internal;
  msi_unlock(&range_lock);
  return 0;
}
static int lock_pages(void *addr, size_t size) {
  CHECK(addr, size);
  size = page_round(size);
  if (msi_os_mlock(addr, size)) {
    int e = errno;
    struct rlimit rl = memlock_limit();
    if (rl.rlim_cur == RLIM_INFINITY)
      msi_verbose("pages: mlock of %zu bytes refused (%s)", size, MSI_ERRNO(e));
    else
      msi_verbose("pages: mlock of %zu bytes refused (%s); RLIMIT_MEMLOCK is %llu bytes", size, MSI_ERRNO(e),
                  (unsigned long long)rl.rlim_cur);
    errno = e;
    return e;
  }
  count_range((uintptr_t)addr, size, LOCKED, true);
  return 0;
}

int msi_pages_unlock(void *addr, size_t size) {
  CHECK(addr, size);
  size = page_round(size);
  if (msi_os_munlock(addr, size)) return errno;
  count_range((uintptr_t)addr, size, LOCKED, false);
  return 0;
}

int msi_pages_bind(void *addr, size_t size, int node) {
  CHECK(addr, size);
  if (!msi_os_numa_node_ok(node)) FAIL(EINVAL);
  if (msi_os_mbind(addr, page_round(size), node)) {
    int e = errno;
    msi_verbose("pages: binding %zu bytes to NUMA node %d failed (%s)", size, node, MSI_ERRNO(e));
    errno = e;
    return e;
  }
  return 0;
}

int msi_pages_release(void *addr, size_t size) {
  CHECK(addr, size);
  size_t ps = msi_os_page_size(), hp = range_page(addr);
  if (hp > ps && ((uintptr_t)addr & (hp - 1))) FAIL(EINVAL); /* inside a huge page */
  /* each part rounds to its own range's page: the end to the page of the range holding the last byte (a huge
     page whole; a base-page neighbour past a hugetlb range only as far as asked) */
  uintptr_t end = msi_align_up((uintptr_t)addr + page_round(size), ps);
  size_t ep = range_page((void *)(end - 1));
  if (ep > ps) end = msi_align_up(end, ep);
  if (end <= (uintptr_t)addr) FAIL(EINVAL);
  size = end - (uintptr_t)addr;
  if (!reserved_here(addr, size)) FAIL(ENOMEM); /* foreign memory: not unmapped */
  /* munmap succeeds on a hole: a range that is not (entirely) mapped is a caller error, reported */
  if (msi_os_mapped(addr, size) != 0) return errno;
  /* forgotten first: until the munmap below nobody else can be given these addresses */
  if (!range_forget((uintptr_t)addr, size)) FAIL(ENOMEM);
  if (msi_os_munmap(addr, size)) return errno;
  return 0;
}

/* ---- the public calls: the caller's own reservations (and its other memory where a call takes it), never the
   library's where the call would take memory from under its owner (internal ranges: a space's data, a frame
   allocator's ranges, a pinned DMA buffer): commit, decommit, reset and release of them are refused, and unlock
   of one the library locked (a DMA buffer, a locked space). Populate, lock and bind change nothing an owner relies
   on: the caller may use them on blocks the library gave it (a space's block, a frame's object, malloc's memory
   under a process space) ---- */
static bool touches_internal(const void *addr, size_t size, bool pinned_only) {
  uintptr_t a = (uintptr_t)addr, end = a + page_round(size);
  if (!addr || !size || end <= a) return false; /* (the call's own checks refuse it) */
  bool hit = false;
  msi_lock(&range_lock);
  for (size_t i = ranges_after(a); !hit && i < nranges && ranges[i].start < end; i++)
    hit = ranges[i].internal && (!pinned_only || ranges[i].pinned);
  msi_unlock(&range_lock);
  return hit;
}
#define PUBLIC(addr, size) do { if (touches_internal(addr, size, false)) FAIL(ENOMEM); } while (0)
int ms_pages_commit(void *addr, size_t size) { PUBLIC(addr, size); return msi_pages_commit(addr, size); }
int ms_pages_decommit(void *addr, size_t size) { PUBLIC(addr, size); return msi_pages_decommit(addr, size); }
int ms_pages_reset(void *addr, size_t size) { PUBLIC(addr, size); return msi_pages_reset(addr, size); }
int ms_pages_populate(void *addr, size_t size) { return msi_pages_populate(addr, size); }
int ms_pages_lock(void *addr, size_t size) { return lock_pages(addr, size); }
int ms_pages_unlock(void *addr, size_t size) {
  if (touches_internal(addr, size, true)) FAIL(ENOMEM);
  return msi_pages_unlock(addr, size);
}
int ms_pages_bind(void *addr, size_t size, int node) { return msi_pages_bind(addr, size, node); }
int ms_pages_release(void *addr, size_t size) { PUBLIC(addr, size); return msi_pages_release(addr, size); }
