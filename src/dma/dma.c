/* SPDX-License-Identifier: MIT */
/* dma.c: DMA buffers (ms_dma_*): pinned memory on hugetlb or base pages from the page layer, its physical
   layout as a coalesced scatter/gather list read in bulk from /proc/self/pagemap, registration of existing
   memory, re-translate-and-compare, statistics. The streaming copy is in copy.c.

   Pinning: hugetlb pages are never swapped or compacted; they are pre-faulted (MADV_POPULATE_WRITE), not
   mlocked, so RLIMIT_MEMLOCK does not apply. Base pages are mlocked (which also populates them) and stay
   movable by compaction: they are marked so. Every buffer is MADV_DONTFORK. */
#include "os.h"
#include "../space/space_internal.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define DMA_MAGIC 0x646d616275660a01ull
#define DMA_DEAD 0x646d616275660a00ull /* a freed descriptor */
#define QUARANTINE 64                  /* freed descriptors waiting before one is reused */
#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)
#define PM_PFN_MASK ((1ull << 55) - 1)
#define STACK_ENTRIES 512          /* pagemap entries read through a stack buffer */
#define BULK_ENTRIES (256 * 1024)  /* larger reads go through a mapping of at most 2 MiB (1 GiB of 4 KiB pages) */
#define PRINT_BUFFERS 8            /* buffers listed one by one in the stats */

struct ms_dma_buffer_s {
  _Atomic uint64_t magic; /* read without a lock by every accessor, changed under pin_lock by ms_dma_free */
  char *addr;
  size_t size;        /* asked for */
  size_t mapped;      /* pinned: size rounded up to the page size */
  size_t page;        /* page size obtained */
  int numa_node;
  bool registered, movable, fallback, hugetlb;
  bool locked;        /* memspace mlocked it (munlock on free) */
  bool pending;       /* allocated, freed while registrations lay inside: released when the last of them goes */
  bool dontfork;      /* memspace set MADV_DONTFORK (undo on unregister) */
  msi_lock_t lock;    /* serialises building / updating the list */
  _Atomic bool built; /* set (release) once segs/offs/count are filled */
  size_t count, largest, cap;
  ms_dma_segment_t *segs;  /* cap entries, then cap offsets */
  size_t *offs;            /* buffer offset of each segment */
  void *store;
  size_t store_size;
  struct ms_dma_buffer_s *prev, *next;
};

/* ---- registry and counters ----
   pin_lock serialises registering (from reading smaps to joining the registry) with unregistering (from leaving
   the registry to undoing the lock and mark), so a registration never relies on a lock being undone meanwhile.
   Order: pin_lock, then reg_lock, then a buffer's lock. */
static msi_lock_t pin_lock = MSI_LOCK_INIT;
static msi_lock_t reg_lock = MSI_LOCK_INIT;
static struct ms_dma_buffer_s *reg_head;
/* reg_lock taken and given back with a mark of this thread's set around the hold (as the spaces' registry): the
   statistics of a signal handler (malloc_stats) that interrupted this thread there, even between the lock's taking
   and its holder's record, see the mark and print no buffer line instead of waiting for themselves */
static _Thread_local volatile sig_atomic_t reg_here;
static void reg_enter(void) {
  reg_here = 1;
  atomic_signal_fence(memory_order_seq_cst);
  msi_lock(&reg_lock);
}
static void reg_leave(void) {
  msi_unlock(&reg_lock);
  atomic_signal_fence(memory_order_seq_cst);
  reg_here = 0;
}
static struct {
  _Atomic uint64_t buffers, pinned, huge, base_bytes, m2_bytes, g1_bytes, registered, fallbacks, translations,
      moved, allocs, frees;
  _Atomic int phys_state; /* 0 unknown, 1 readable, 2 not readable */
} ctr;
#define INC(f, v) atomic_fetch_add_explicit(&ctr.f, (uint64_t)(v), memory_order_relaxed)

static void account(const struct ms_dma_buffer_s *b, bool add) {
  size_t h2 = msi_os_huge_size(MS_PAGE_HUGE_2M), h1 = msi_os_huge_size(MS_PAGE_HUGE_1G);
  uint64_t m = add ? b->mapped : -(uint64_t)b->mapped, one = add ? 1 : ~0ull; /* unsigned wrap subtracts */
  INC(buffers, one), INC(pinned, m);
  if (b->hugetlb) INC(huge, m);
  if (b->page == h1 && h1) INC(g1_bytes, m);
  else if (b->page == h2 && h2) INC(m2_bytes, m);
  else INC(base_bytes, m);
  if (b->registered) INC(registered, one);
}

static void reg_link(struct ms_dma_buffer_s *b) {
  reg_enter();
  b->prev = NULL;
  b->next = reg_head;
  if (reg_head) reg_head->prev = b;
  reg_head = b;
  account(b, true);
  reg_leave();
}

static void reg_unlink(struct ms_dma_buffer_s *b) {
  reg_enter();
  if (b->prev) b->prev->next = b->next;
  else reg_head = b->next;
  if (b->next) b->next->prev = b->prev;
  account(b, false);
  reg_leave();
}

static bool valid(const ms_dma_buffer_t *b) { return b && b->magic == DMA_MAGIC; }
/* valid, else errno EINVAL */
static bool check(const ms_dma_buffer_t *b) {
  if (MSI_LIKELY(valid(b))) return true;
  errno = EINVAL;
  return false;
}
/* r stored in errno too when it is a failure */
static int ret(int r) {
  if (r) errno = r;
  return r;
}

/* ---- /proc/self/pagemap: bulk reads at an offset ---- */
static ssize_t pread_full(int fd, void *buf, size_t n, off_t off) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = msi_os_pread(fd, (char *)buf + done, n - done, off + (off_t)done);
    if (r <= 0) return r < 0 ? -1 : (ssize_t)done;
    done += (size_t)r;
  }
  return (ssize_t)done;
}

static unsigned long long memlock_limit(void) {
  struct rlimit rl = {0, 0};
  msi_os_getrlimit(RLIMIT_MEMLOCK, &rl);
  return rl.rlim_cur == RLIM_INFINITY ? ~0ull : (unsigned long long)rl.rlim_cur;
}

static void memlock_error(const char *what, size_t bytes, int err) {
  unsigned long long lim = memlock_limit();
  if (lim == ~0ull)
    msi_error("dma: %s: mlock of %zu bytes refused (%s) although RLIMIT_MEMLOCK is unlimited", what, bytes,
              MSI_ERRNO(err));
  else
    msi_error("dma: %s: cannot pin %zu bytes: mlock refused (%s), RLIMIT_MEMLOCK is %llu bytes; raise it "
              "(ulimit -l, limits.conf, CAP_IPC_LOCK) or use hugetlb pages, which need no mlock",
              what, bytes, MSI_ERRNO(err), lim);
}

/* ---- descriptor and list storage from the page layer ----
   Descriptors are carved from pages that are never unmapped. A freed one keeps DMA_DEAD in its magic word and
   joins a FIFO that hands it out again only once QUARANTINE others wait, so a freed handle used again (a second
   ms_dma_free, ms_dma_size after free) reads a dead descriptor and is refused instead of faulting. */
static msi_lock_t desc_lock = MSI_LOCK_INIT;
static struct ms_dma_buffer_s *dead_head, *dead_tail;
static size_t dead_count;
static char *carve_at, *carve_end;

static struct ms_dma_buffer_s *desc_new(void) {
  struct ms_dma_buffer_s *b = NULL;
  msi_lock(&desc_lock);
  if (dead_count > QUARANTINE) {
    b = dead_head;
    dead_head = b->next;
    if (!dead_head) dead_tail = NULL;
    dead_count--;
  } else {
    size_t sz = msi_round_up(sizeof *b, 64);
    if (carve_end - carve_at < (ptrdiff_t)sz) {
      ms_pages_t p;
      int r = msi_pages_reserve_exact(16 * sz, 0, MS_PAGES_COMMIT, -1, &p);
      if (r) { msi_unlock(&desc_lock); errno = r; return NULL; }
      carve_at = p.addr;
      carve_end = carve_at + p.size;
    }
    b = (struct ms_dma_buffer_s *)carve_at;
    carve_at += sz;
  }
  msi_unlock(&desc_lock);
  memset(b, 0, sizeof *b);
  b->numa_node = -1;
  return b;
}

static void desc_free(struct ms_dma_buffer_s *b) {
  if (b->store) msi_pages_release(b->store, b->store_size);
  b->store = NULL;
  b->magic = DMA_DEAD;
  msi_lock(&desc_lock);
  b->next = NULL;
  if (dead_tail) dead_tail->next = b;
  else dead_head = b;
  dead_tail = b;
  dead_count++;
  msi_unlock(&desc_lock);
}

/* fork.c's hook (part 5 of the lock order): dma.c's own order (pin_lock, reg_lock, each registered buffer's lock),
   then desc_lock; each is held across ms_pages_* (part 7), and no code holding desc_lock takes another of them */
MSI_COLD void msi_fork_dma(msi_fork_phase_t phase, bool locking) {
  if (!locking) return;
  if (phase == MSI_FORK_PREPARE) {
    msi_lock(&pin_lock);
    reg_enter();
    for (struct ms_dma_buffer_s *b = reg_head; b; b = b->next) msi_lock(&b->lock);
    msi_lock(&desc_lock);
  } else if (phase == MSI_FORK_PARENT) {
    msi_unlock(&desc_lock);
    for (struct ms_dma_buffer_s *b = reg_head; b; b = b->next) msi_unlock(&b->lock);
    reg_leave();
    msi_unlock(&pin_lock);
  } else {
    msi_lock_reset(&desc_lock);
    for (struct ms_dma_buffer_s *b = reg_head; b; b = b->next) msi_lock_reset(&b->lock);
    msi_lock_reset(&reg_lock);
    reg_here = 0;
    msi_lock_reset(&pin_lock);
  }
}

/* storage for `cap` segments and offsets; 0 or errno */
static int store_new(size_t cap, void **store, size_t *size) {
  size_t bytes = cap * (sizeof(ms_dma_segment_t) + sizeof(size_t));
  ms_pages_t p;
  int r = msi_pages_reserve_exact(bytes, 0, MS_PAGES_COMMIT, -1, &p);
  if (r) return r;
  *store = p.addr;
  *size = p.size;
  return 0;
}

/* ---- translation ---- */
static int no_privilege(void) {
  atomic_store(&ctr.phys_state, 2);
  static atomic_flag said = ATOMIC_FLAG_INIT;
  if (!atomic_flag_test_and_set(&said))
    msi_error("dma: physical addresses are not readable: /proc/self/pagemap gives PFN 0 without CAP_SYS_ADMIN; "
              "buffers are still allocated and pinned, but ms_dma_segments, ms_dma_phys and ms_dma_verify fail "
              "with EPERM");
  return EPERM;
}

typedef struct {
  ms_dma_segment_t *segs;
  size_t *offs;
  size_t cap, count, largest, off;
} seg_builder_t;

static void seg_add(seg_builder_t *sb, uint64_t phys, size_t len) {
  if (sb->count && sb->segs[sb->count - 1].phys + sb->segs[sb->count - 1].length == phys) {
    sb->segs[sb->count - 1].length += len;
  } else {
    sb->segs[sb->count].phys = phys;
    sb->segs[sb->count].length = len;
    sb->offs[sb->count] = sb->off;
    sb->count++;
  }
  if (sb->segs[sb->count - 1].length > sb->largest) sb->largest = sb->segs[sb->count - 1].length;
  sb->off += len;
}

/* one pagemap entry -> physical address of its page; 0 or errno */
static int entry_phys(uint64_t e, const struct ms_dma_buffer_s *b, size_t off, uint64_t *phys) {
  if (!(e & PM_PRESENT)) {
    msi_error("dma: page at offset %zu of the buffer at %p is not present%s", off, (void *)b->addr,
              (e & PM_SWAPPED) ? " (swapped out)" : "");
    return EFAULT;
  }
  uint64_t pfn = e & PM_PFN_MASK;
  if (pfn == 0) return no_privilege();
  *phys = pfn * (uint64_t)msi_os_page_size();
  return 0;
}

/* translate's answer when the physical addresses cannot be read at all (no privilege, no descriptor, no /proc), as
   opposed to memory that is wrong for a buffer: one page is still contiguous by construction */
static bool phys_unreadable(int r) { return r == EPERM || r == EMFILE || r == ENFILE || r == ENOENT; }

/* translates [addr, addr+size) into sb (capacity: pages covering size); 0 or errno */
static int translate(const struct ms_dma_buffer_s *b, seg_builder_t *sb) {
  int fd = msi_os_open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    /* a refused open is the privilege's answer (EPERM); anything else (no descriptor left: EMFILE, ENFILE; no /proc:
       ENOENT) says nothing about privilege and is returned as it is, so the caller can tell "no CAP_SYS_ADMIN"
       from "try again with a descriptor free" */
    int oe = errno, e = oe == EACCES || oe == EPERM ? EPERM : oe ? oe : EIO;
    msi_error("dma: cannot open /proc/self/pagemap (%s): physical addresses are not available", MSI_ERRNO(oe));
    if (e == EPERM) atomic_store(&ctr.phys_state, 2);
    return e;
  }
  size_t ps = msi_os_page_size();
  sb->count = sb->largest = sb->off = 0;
  int err = 0;
  if (b->page > ps) {
    /* hugetlb: one entry per huge page (the head sub-page's PFN) */
    size_t n = (b->size + b->page - 1) / b->page;
    for (size_t i = 0; i < n && !err; i++) {
      uint64_t e = 0, phys = 0;
      off_t at = (off_t)(((uintptr_t)b->addr + i * b->page) / ps * 8);
      if (pread_full(fd, &e, 8, at) != 8) { err = errno ? errno : EIO; break; }
      err = entry_phys(e, b, i * b->page, &phys);
      if (!err) seg_add(sb, phys, i + 1 < n ? b->page : b->size - i * b->page);
    }
  } else {
    /* base pages: bulk reads of up to BULK_ENTRIES entries */
    size_t n = (b->size + ps - 1) / ps;
    uint64_t stack_buf[STACK_ENTRIES], *buf = stack_buf;
    size_t chunk = STACK_ENTRIES;
    ms_pages_t tmp = {0};
    if (n > STACK_ENTRIES) {
      chunk = n < BULK_ENTRIES ? n : BULK_ENTRIES;
      err = msi_pages_reserve_exact(chunk * 8, 0, MS_PAGES_COMMIT, -1, &tmp);
      buf = tmp.addr;
    }
    for (size_t i = 0; i < n && !err; i += chunk) {
      size_t k = n - i < chunk ? n - i : chunk;
      off_t at = (off_t)(((uintptr_t)b->addr / ps + i) * 8);
      if (pread_full(fd, buf, k * 8, at) != (ssize_t)(k * 8)) { err = errno ? errno : EIO; break; }
      for (size_t j = 0; j < k && !err; j++) {
        uint64_t phys = 0;
        size_t off = (i + j) * ps;
        err = entry_phys(buf[j], b, off, &phys);
        if (!err) seg_add(sb, phys, off + ps <= b->size ? ps : b->size - off);
      }
    }
    if (tmp.addr) msi_pages_release(tmp.addr, tmp.size);
  }
  msi_os_close(fd);
  if (!err) {
    atomic_store(&ctr.phys_state, 1);
    INC(translations, 1);
  }
  return err;
}

static size_t cap_for(const struct ms_dma_buffer_s *b) { return (b->size + b->page - 1) / b->page + 1; }

/* builds the list if not yet built; caller holds b->lock; 0 or errno */
static int build_locked(struct ms_dma_buffer_s *b) {
  if (b->built) return 0;
  if (!b->store) {
    b->cap = cap_for(b);
    int r = store_new(b->cap, &b->store, &b->store_size);
    if (r) return r;
    b->segs = b->store;
    b->offs = (size_t *)(b->segs + b->cap);
  }
  seg_builder_t sb = {b->segs, b->offs, b->cap, 0, 0, 0};
  int r = translate(b, &sb);
  if (r) return r;
  b->count = sb.count;
  b->largest = sb.largest;
  atomic_store_explicit(&b->built, true, memory_order_release);
  return 0;
}

static int build(const ms_dma_buffer_t *cb) {
  struct ms_dma_buffer_s *b = (struct ms_dma_buffer_s *)cb;
  if (atomic_load_explicit(&b->built, memory_order_acquire)) return 0;
  msi_lock(&b->lock);
  int r = build_locked(b);
  msi_unlock(&b->lock);
  return r;
}

const ms_dma_segment_t *ms_dma_segments(const ms_dma_buffer_t *buffer, size_t *count) {
  if (count) *count = 0;
  if (!check(buffer)) return NULL;
  int r = build(buffer);
  if (r) { errno = r; return NULL; }
  msi_lock((msi_lock_t *)&buffer->lock); /* ms_dma_verify may be updating the list */
  if (count) *count = buffer->count;
  msi_unlock((msi_lock_t *)&buffer->lock);
  return buffer->segs;
}

int ms_dma_phys(const ms_dma_buffer_t *buffer, size_t offset, uint64_t *phys) {
  if (!valid(buffer) || !phys || offset >= buffer->size) return ret(EINVAL);
  int r = build(buffer);
  if (r) return ret(r);
  msi_lock((msi_lock_t *)&buffer->lock); /* ms_dma_verify may rewrite the list */
  size_t lo = 0, hi = buffer->count;     /* last segment whose offset <= offset */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (buffer->offs[mid] <= offset) lo = mid;
    else hi = mid;
  }
  *phys = buffer->segs[lo].phys + (offset - buffer->offs[lo]);
  msi_unlock((msi_lock_t *)&buffer->lock);
  return 0;
}

/* bytes whose physical address differs between two lists of the same total length */
static size_t moved_bytes(const ms_dma_segment_t *a, size_t na, const ms_dma_segment_t *b, size_t nb) {
  size_t i = 0, j = 0, ai = 0, bj = 0, moved = 0;
  while (i < na && j < nb) {
    size_t la = a[i].length - ai, lb = b[j].length - bj, step = la < lb ? la : lb;
    if (a[i].phys + ai != b[j].phys + bj) moved += step;
    ai += step, bj += step;
    if (ai == a[i].length) i++, ai = 0;
    if (bj == b[j].length) j++, bj = 0;
  }
  return moved;
}

int ms_dma_verify(ms_dma_buffer_t *b, size_t *moved_out) {
  if (moved_out) *moved_out = 0;
  if (!valid(b)) return ret(EINVAL);
  msi_lock(&b->lock);
  int r = 0;
  if (!b->built) {
    r = build_locked(b); /* nothing to compare with yet: the fresh list is the reference */
    msi_unlock(&b->lock);
    return ret(r);
  }
  void *store;
  size_t store_size;
  r = store_new(b->cap, &store, &store_size);
  if (!r) {
    seg_builder_t sb = {store, (size_t *)((ms_dma_segment_t *)store + b->cap), b->cap, 0, 0, 0};
    r = translate(b, &sb);
    if (!r) {
      size_t moved = moved_bytes(b->segs, b->count, sb.segs, sb.count);
      if (moved || sb.count != b->count) {
        msi_memcpy(b->segs, sb.segs, sb.count * sizeof *sb.segs);
        msi_memcpy(b->offs, sb.offs, sb.count * sizeof *sb.offs);
        b->count = sb.count;
        b->largest = sb.largest;
        if (moved) {
          INC(moved, 1);
          msi_verbose("dma: %zu of %zu bytes of the buffer at %p moved physically (%s pages); list updated", moved,
                      b->size, (void *)b->addr, msi_pages_name(b->page));
          r = ESTALE;
        }
      }
      if (moved_out) *moved_out = moved;
    }
    msi_pages_release(store, store_size);
  }
  msi_unlock(&b->lock);
  return ret(r);
}

/* ---- allocation ---- */
/* the page sizes to try in order; returns how many (0: none possible, *why explains) */
static int candidates(size_t size, const ms_dma_config_t *c, size_t out[3], const char **why) {
  size_t ps = msi_os_page_size(), h2 = msi_os_huge_size(MS_PAGE_HUGE_2M), h1 = msi_os_huge_size(MS_PAGE_HUGE_1G);
  size_t all[3] = {MSI_GiB, 2 * MSI_MiB, ps}; /* descending; a size the kernel lacks fails like an empty pool */
  size_t list[3];
  int n = 0;
  bool nofb = c->flags & MS_DMA_NO_FALLBACK, contig = c->flags & MS_DMA_CONTIGUOUS;
  if (c->page_size) {
    int k = 0;
    while (k < 3 && all[k] != c->page_size) k++;
    n = 3 - k; /* the sizes from the one asked down (a copy loop here a compiler makes a memcpy call) */
    msi_memcpy(list, all + k, (size_t)n * sizeof list[0]);
    if (nofb) n = 1;
  } else {
    long long cap = msi_opt(MS_OPTION_HUGE_PAGES);
    /* an explicit, valid 0 (MEMSPACE_HUGE_PAGES=0 or ms_option_set) means base pages only; unset or invalid
       (reported, default kept) means best available */
    bool base_only = msi_huge_pages_off();
    if (!base_only && (cap == 0 || cap >= (long long)MSI_GiB) && (size > 512 * MSI_MiB || (contig && size > h2)))
      list[n++] = MSI_GiB;
    if (!base_only) list[n++] = 2 * MSI_MiB;
    if (!nofb || base_only) list[n++] = ps;
  }
  (void)h1;
  if (contig) {
    /* only a page that holds the whole buffer is physically contiguous; prefer hugetlb (not movable) */
    size_t keep[3];
    int m = 0;
    for (int i = n - 1; i >= 0; i--)
      if (list[i] >= size && list[i] != ps) keep[m++] = list[i];
    for (int i = 0; i < n; i++)
      if (list[i] >= size && list[i] == ps) keep[m++] = list[i];
    if (!m) {
      *why = "no page size allowed here holds the buffer in one page, and only a single (huge) page is known to be "
             "physically contiguous from user space";
      return 0;
    }
    if (nofb && m > 1) m = 1;
    msi_memcpy(list, keep, sizeof keep);
    n = m;
  }
  msi_memcpy(out, list, (size_t)n * sizeof *list);
  return n;
}

/* tries one page size (msi_pages_fallback); 0 or errno (ENOENT: the kernel has no such page) */
typedef struct {
  size_t size;
  int node;
  ms_pages_t *p;
} try_arg_t;
static int try_page(size_t page, void *arg) {
  try_arg_t *a = arg;
  size_t size = a->size, ps = msi_os_page_size();
  int node = a->node;
  ms_pages_t *p = a->p;
  if (page == ps) {
    /* refused before the populate below faults in every page: more than the machine can back would end in the OOM
       killer's SIGKILL, and a size mlock refuses anyway (RLIMIT_MEMLOCK) would be faulted in for nothing */
    char why[160];
    if (msi_space_backing(size, true, why, sizeof why)) {
      msi_error("dma: ms_dma_alloc: %zu bytes cannot be pinned: %s", size, why);
      return ENOMEM;
    }
    if (!msi_os_may_lock(size)) {
      int e = memlock_limit() ? ENOMEM : EPERM; /* what mlock gives without CAP_IPC_LOCK */
      memlock_error("ms_dma_alloc", size, e);
      return e;
    }
    int r = msi_pages_reserve_exact(size, 0, MS_PAGES_COMMIT, node, p);
    if (r) return r;
    /* populate for writing first: mlock would too, but sanitizer runtimes replace mlock with a no-op */
    r = msi_pages_populate(p->addr, p->size);
    if (r) {
      msi_pages_release(p->addr, p->size);
      return r;
    }
    r = msi_pages_lock(p->addr, p->size);
    if (r) {
      memlock_error("ms_dma_alloc", p->size, r);
      msi_pages_release(p->addr, p->size);
      return r;
    }
  } else {
    ms_page_kind_t kind = page == MSI_GiB ? MS_PAGE_HUGE_1G : MS_PAGE_HUGE_2M;
    if (msi_os_huge_size(kind) != page) return ENOENT;
    unsigned flags = (kind == MS_PAGE_HUGE_1G ? MS_PAGES_HUGE_1G : MS_PAGES_HUGE_2M) | MS_PAGES_NO_FALLBACK |
                     MS_PAGES_COMMIT;
    int r = msi_pages_reserve_exact(size, page, flags, node, p);
    if (r) return r == ENOENT ? ENOENT : ENOMEM;
    /* pre-fault instead of mlock: hugetlb pages are never swapped; a fault failing here (e.g. the node's pool
       is empty) is an error now instead of SIGBUS later */
    r = msi_pages_populate(p->addr, p->size);
    if (r) {
      msi_pages_release(p->addr, p->size);
      return ENOMEM;
    }
  }
  if (node >= 0 && p->numa_node != node)
    msi_verbose("dma: could not bind %zu bytes to NUMA node %d; memory stays where the kernel put it", p->size, node);
  if (msi_os_madvise(p->addr, p->size, MADV_DONTFORK)) {
    int r = errno;
    msi_error("dma: MADV_DONTFORK refused (%s)", MSI_ERRNO(r));
    msi_pages_release(p->addr, p->size);
    return r;
  }
  return 0;
}

static bool config_ok(const ms_dma_config_t *c) {
  for (int i = 0; i < 4; i++)
    if (c->reserved[i]) return false;
  if (c->flags & ~(MS_DMA_CONTIGUOUS | MS_DMA_NO_FALLBACK)) return false;
  if (c->numa_node < -1) return false;
  return true;
}

ms_dma_buffer_t *ms_dma_alloc(size_t size, const ms_dma_config_t *config) {
  ms_dma_config_t def = {0, -1, 0, {0, 0, 0, 0}};
  const ms_dma_config_t *c = config ? config : &def;
  size_t ps = msi_os_page_size();
  if (size == 0 || !config_ok(c) || (c->numa_node >= 0 && !msi_os_numa_node_ok(c->numa_node))) {
    errno = EINVAL;
    return NULL;
  }
  if (c->page_size && c->page_size != ps && c->page_size != 2 * MSI_MiB && c->page_size != MSI_GiB) {
    msi_error("dma: page size %zu is not one of %zu, 2 MiB, 1 GiB", c->page_size, ps);
    errno = EINVAL;
    return NULL;
  }
  if (size > (SIZE_MAX >> 2) || !msi_round_up(size, MSI_GiB)) { errno = ENOMEM; return NULL; }
  size_t list[3];
  const char *why = NULL;
  int n = candidates(size, c, list, &why);
  if (n == 0) {
    msi_error("dma: MS_DMA_CONTIGUOUS buffer of %zu bytes (page size asked: %zu) refused: %s", size, c->page_size,
              why);
    errno = EINVAL;
    return NULL;
  }
  ms_pages_t p;
  int err;
  try_arg_t arg = {size, c->numa_node, &p};
  int i = msi_pages_fallback("dma", size, list, n, try_page, &arg, &err);
  INC(fallbacks, i < 0 ? (uint64_t)n - 1 : (uint64_t)i);
  if (i < 0) {
    if (list[n - 1] != ps) {
      msi_error("dma: %s pages for %zu bytes unavailable (%s, free %lld)%s", msi_pages_name(list[n - 1]), size,
                msi_pages_unavailable(err), msi_pages_huge_free(list[n - 1]),
                (c->flags & MS_DMA_CONTIGUOUS) ? "; MS_DMA_CONTIGUOUS needs one huge page holding the buffer"
                : (c->flags & MS_DMA_NO_FALLBACK) ? "; MS_DMA_NO_FALLBACK set" : "");
      err = ENOMEM;
    }
    errno = err;
    return NULL;
  }
  bool fell = i > 0;
  size_t got = list[i];
  struct ms_dma_buffer_s *b = desc_new();
  if (!b) {
    int e = errno;
    msi_pages_release(p.addr, p.size);
    errno = e;
    return NULL;
  }
  b->addr = p.addr;
  b->size = size;
  b->mapped = p.size;
  b->page = got;
  b->hugetlb = got > ps;
  b->movable = !b->hugetlb;
  b->locked = !b->hugetlb;
  b->dontfork = true;
  b->fallback = fell || (c->page_size && got != c->page_size);
  b->numa_node = p.numa_node;
  b->magic = DMA_MAGIC;
  if (c->flags & MS_DMA_CONTIGUOUS) {
    int r = build(b);
    if (r == 0 && b->count != 1) {
      msi_error("dma: MS_DMA_CONTIGUOUS buffer of %zu bytes on one %s page is in %zu physical runs", size,
                msi_pages_name(got), b->count);
      r = EIO;
    } else if (phys_unreadable(r)) {
      r = 0; /* one page is contiguous by construction; it just cannot be shown (no privilege, no descriptor) */
    }
    if (r) {
      msi_pages_release(p.addr, p.size);
      desc_free(b);
      errno = r;
      return NULL;
    }
  }
  reg_link(b);
  INC(allocs, 1);
  msi_verbose("dma: %zu bytes at %p on %s pages (%s)%s", size, (void *)b->addr, msi_pages_name(got),
              b->movable ? "movable" : "stable against compaction", b->fallback ? ", fallback" : "");
  return b;
}

/* ---- registration ---- */
typedef struct {
  uintptr_t hole;      /* first unmapped address, 0 if none */
  uintptr_t readonly;  /* first address that is not writable, 0 if none */
  size_t min_page;     /* smallest KernelPageSize seen */
  bool all_hugetlb, all_locked, all_dontfork, writable;
  bool any_locked, any_dontfork; /* a part no live buffer covers already has it: the caller's own mlock / mark */
  size_t n_unlocked, n_unmarked; /* runs of the range without "lo" / "dc" before registering: pre_runs */
  uintptr_t runs_end;            /* the runs describe [s, runs_end): more than RUNS runs end it early */
} range_facts_t;

/* The runs of a range being registered that were not locked ("lo") or not marked MADV_DONTFORK ("dc") before:
   what a failed registration undoes, and nothing else (the caller's own locks and marks, those of other live
   buffers, stay). Static storage under pin_lock (range_scan fills it, register_locked reads it). */
#define RUNS 256
MSI_COLD_BSS static uintptr_t pre_runs[2][RUNS][2];

/* adds [a, e) to runs list k of f (joined to the last run when adjacent); false when full */
static bool run_add(range_facts_t *f, int k, uintptr_t a, uintptr_t e) {
  size_t *n = k ? &f->n_unmarked : &f->n_unlocked;
  if (*n && pre_runs[k][*n - 1][1] == a) pre_runs[k][*n - 1][1] = e;
  else if (*n == RUNS) return false;
  else pre_runs[k][*n][0] = a, pre_runs[k][(*n)++][1] = e;
  return true;
}

/* the one overlap walk of the registry: the next live buffer after `o` (NULL: from the head) overlapping [s, e),
   registered memory only when `registered`, or NULL; caller holds reg_lock */
static struct ms_dma_buffer_s *overlapping(struct ms_dma_buffer_s *o, uintptr_t s, uintptr_t e, bool registered) {
  for (o = o ? o->next : reg_head; o; o = o->next)
    if ((!registered || o->registered) && (uintptr_t)o->addr < e && (uintptr_t)o->addr + o->mapped > s) return o;
  return NULL;
}

/* true when live buffers cover [a, e): their pins are memspace's (caller holds pin_lock) */
static bool buffers_cover(uintptr_t a, uintptr_t e) {
  reg_enter();
  for (bool moved = true; a < e && moved;) {
    moved = false;
    for (struct ms_dma_buffer_s *o = NULL; (o = overlapping(o, a, a + 1, false));)
      a = (uintptr_t)o->addr + o->mapped, moved = true;
  }
  reg_leave();
  return a >= e;
}

/* range_scan's walk: the range [s, e), how far the mappings seen cover it */
typedef struct {
  uintptr_t s, e, cursor;
  range_facts_t *f;
} scan_t;

static bool scan_mapping(const msi_os_mapping_t *m, void *arg) {
  scan_t *c = arg;
  range_facts_t *f = c->f;
  if (m->start > c->cursor) return false; /* a hole before this mapping */
  uintptr_t piece = m->start > c->s ? m->start : c->s, pe = m->end < c->e ? m->end : c->e;
  c->cursor = m->end;
  if (!m->writable && f->writable) f->writable = false, f->readonly = piece;
  if (m->page && m->page < f->min_page) f->min_page = m->page;
  bool ht = msi_os_vmflag(m->vmflags, "ht"), lo = msi_os_vmflag(m->vmflags, "lo"), dc = msi_os_vmflag(m->vmflags, "dc");
  f->all_hugetlb &= ht, f->all_locked &= lo, f->all_dontfork &= dc;
  if (f->runs_end == piece && (lo || run_add(f, 0, piece, pe)) && (dc || run_add(f, 1, piece, pe))) f->runs_end = pe;
  if ((lo && !f->any_locked) || (dc && !f->any_dontfork)) {
    bool ours = buffers_cover(piece, pe);
    f->any_locked |= lo && !ours, f->any_dontfork |= dc && !ours;
  }
  return m->end < c->e;
}

/* walks /proc/self/smaps for the mappings covering [s, e); 0 or errno */
static int range_scan(uintptr_t s, uintptr_t e, range_facts_t *f) {
  memset(f, 0, sizeof *f);
  f->all_hugetlb = f->all_locked = f->all_dontfork = f->writable = true;
  f->min_page = SIZE_MAX;
  f->runs_end = s;
  scan_t c = {s, e, s, f};
  int r = msi_os_smaps_walk(s, e, scan_mapping, &c);
  if (r) return r;
  if (c.cursor < e) f->hole = c.cursor;
  if (f->min_page == SIZE_MAX) f->min_page = msi_os_page_size();
  return 0;
}

/* undoes what a failed registration of [memory, memory+size) took, its mlock (locked) and its MADV_DONTFORK
   (marked), on the runs that had neither before (pre_runs): the caller's own locks and marks and those of live
   buffers stay. Past runs_end (a range of more than RUNS runs) the state before is not known: left as it is, and
   said. Caller holds pin_lock. */
static void undo_pins(void *memory, size_t size, const range_facts_t *f, bool locked, bool marked) {
  for (int k = 0; k < 2; k++) {
    if (!(k ? marked : locked)) continue;
    size_t n = k ? f->n_unmarked : f->n_unlocked;
    for (size_t i = 0; i < n; i++) {
      uintptr_t a = pre_runs[k][i][0], e = pre_runs[k][i][1] < f->runs_end ? pre_runs[k][i][1] : f->runs_end;
      if (a >= e) break;
      if (k) msi_os_madvise((void *)a, e - a, MADV_DOFORK);
      else msi_pages_unlock((void *)a, e - a);
    }
  }
  uintptr_t end = (uintptr_t)memory + size;
  if ((locked || marked) && f->runs_end < end)
    msi_verbose("dma: ms_dma_register(%p, %zu) failed: %zu bytes from %p, in more than %d runs of lock state, "
                "keep what the registration took", memory, size, (size_t)(end - f->runs_end),
                (void *)f->runs_end, RUNS);
}

static ms_dma_buffer_t *register_locked(void *memory, size_t size, const ms_dma_config_t *c);

ms_dma_buffer_t *ms_dma_register(void *memory, size_t size, const ms_dma_config_t *config) {
  ms_dma_config_t def = {0, -1, 0, {0, 0, 0, 0}};
  const ms_dma_config_t *c = config ? config : &def;
  size_t ps = msi_os_page_size();
  uintptr_t s = (uintptr_t)memory;
  if (!memory || size == 0 || !config_ok(c) || s + size < s) { errno = EINVAL; return NULL; }
  if ((s & (ps - 1)) || (size & (ps - 1))) {
    msi_error("dma: ms_dma_register(%p, %zu): memory and size must be multiples of the page size (%zu); rounding "
              "would pin and hide from forked children the neighbours sharing those pages", memory, size, ps);
    errno = EINVAL;
    return NULL;
  }
  msi_lock(&pin_lock);
  ms_dma_buffer_t *b = register_locked(memory, size, c);
  int e = errno;
  msi_unlock(&pin_lock);
  errno = e;
  return b;
}

/* ms_dma_register once the arguments are checked; caller holds pin_lock */
static ms_dma_buffer_t *register_locked(void *memory, size_t size, const ms_dma_config_t *c) {
  size_t ps = msi_os_page_size();
  uintptr_t s = (uintptr_t)memory;
  range_facts_t f;
  int r = range_scan(s, s + size, &f);
  if (r) { errno = r; return NULL; }
  if (f.hole) {
    msi_error("dma: ms_dma_register(%p, %zu): address %p is not mapped", memory, size, (void *)f.hole);
    errno = EFAULT;
    return NULL;
  }
  if (!f.writable) {
    msi_error("dma: ms_dma_register(%p, %zu): address %p is not writable", memory, size, (void *)f.readonly);
    errno = EFAULT;
    return NULL;
  }
  size_t page = f.all_hugetlb ? f.min_page : ps;
  if ((s & (page - 1)) || (size & (page - 1)) || (c->page_size && c->page_size != page)) {
    msi_error("dma: ms_dma_register(%p, %zu): memory on %s pages (page size asked: %zu) must be aligned to them",
              memory, size, msi_pages_name(page), c->page_size);
    errno = EINVAL;
    return NULL;
  }
  r = msi_pages_populate(memory, size);
  if (r) {
    /* mapped and writable, yet a page cannot be faulted in (a file mapping past the end of its file, a hole in a
       memfd with seals): the first such page, found by halving (pages before it fault in fine) */
    size_t lo = 0, hi = size / page; /* the first page failing lies in [lo, hi) */
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      if (msi_pages_populate((char *)memory + lo * page, (mid - lo) * page) == 0) lo = mid;
      else hi = mid;
    }
    msi_error("dma: ms_dma_register(%p, %zu): pre-faulting failed (%s) at address %p", memory, size, MSI_ERRNO(r),
              (void *)((char *)memory + lo * page));
    errno = r == ENOMEM ? ENOMEM : EFAULT;
    return NULL;
  }
  /* locked, dontfork: memspace undoes them when the buffer goes. Not where the caller had locked or marked a part
     of the range: mlock does not nest and smaps tells no owner, so undoing them would undo the caller's own pin
     (its real-time memory swappable again, another driver's buffer copied on fork); that range keeps them */
  bool locked = false, dontfork = false, did_lock = false, did_mark = false;
  if (!f.all_hugetlb && !f.all_locked) {
    did_lock = true;
    r = msi_pages_lock(memory, size);
    if (r) {
      memlock_error("ms_dma_register", size, r);
      undo_pins(memory, size, &f, true, false); /* a failed mlock may leave the range locked in part */
      errno = r;
      return NULL;
    }
    locked = !f.any_locked;
  }
  if (!f.all_dontfork) {
    did_mark = true;
    if (msi_os_madvise(memory, size, MADV_DONTFORK)) {
      r = errno;
      msi_error("dma: ms_dma_register: MADV_DONTFORK refused (%s)", MSI_ERRNO(r));
      undo_pins(memory, size, &f, did_lock, true);
      errno = r;
      return NULL;
    }
    dontfork = !f.any_dontfork;
  }
  struct ms_dma_buffer_s *b = desc_new();
  if (!b) {
    r = errno;
    undo_pins(memory, size, &f, did_lock, did_mark);
    errno = r;
    return NULL;
  }
  b->addr = memory;
  b->size = b->mapped = size;
  b->page = page;
  b->registered = true;
  b->hugetlb = f.all_hugetlb;
  b->movable = !f.all_hugetlb;
  b->locked = locked;
  b->dontfork = dontfork;
  b->magic = DMA_MAGIC;
  if (c->flags & MS_DMA_CONTIGUOUS) {
    r = build(b);
    if (r == 0 && b->count != 1) {
      msi_error("dma: ms_dma_register(%p, %zu) with MS_DMA_CONTIGUOUS: the memory is in %zu physical runs", memory,
                size, b->count);
      r = EINVAL;
    } else if (size == page && phys_unreadable(r)) {
      r = 0; /* one page is contiguous by construction, as for ms_dma_alloc; it just cannot be shown */
    }
    if (r) {
      undo_pins(memory, size, &f, did_lock, did_mark);
      desc_free(b);
      errno = r;
      return NULL;
    }
  }
  reg_link(b);
  msi_verbose("dma: registered %zu bytes at %p (%s pages, %s)", size, memory, msi_pages_name(page),
              b->movable ? "movable" : "stable against compaction");
  return b;
}

/* Undoes what registering b did (munlock, MADV_DOFORK) on the parts of it that no other live buffer covers. A
   buffer registered inside or across b found its pages locked and marked and relied on that: the parts it
   covers stay pinned, and it takes over undoing them when it is freed. b has left the registry; caller holds
   pin_lock. */
static void unpin_uncovered(struct ms_dma_buffer_s *b) {
  reg_enter();
  uintptr_t cur = (uintptr_t)b->addr, end = cur + b->size;
  for (struct ms_dma_buffer_s *o = NULL; (o = overlapping(o, cur, end, true));) {
    o->locked |= b->locked;
    o->dontfork |= b->dontfork;
  }
  while (cur < end) {
    uintptr_t covered = cur, next = end; /* covered: end of the run of other buffers holding cur */
    for (struct ms_dma_buffer_s *o = reg_head; o; o = o->next) {
      uintptr_t os = (uintptr_t)o->addr, oe = os + o->mapped;
      if (oe <= cur || os >= end) continue;
      if (os <= cur) covered = oe > covered ? oe : covered;
      else if (os < next) next = os;
    }
    if (covered > cur) { cur = covered; continue; }
    if (b->dontfork) msi_os_madvise((void *)cur, next - cur, MADV_DOFORK);
    if (b->locked) msi_pages_unlock((void *)cur, next - cur);
    cur = next;
  }
  reg_leave();
}

/* a live registration overlapping allocated buffer b, or NULL (caller holds reg_lock) */
static struct ms_dma_buffer_s *registered_in(const struct ms_dma_buffer_s *b) {
  return overlapping(NULL, (uintptr_t)b->addr, (uintptr_t)b->addr + b->mapped, true);
}

/* an allocated buffer's pages back to the kernel; b has left the registry (caller holds pin_lock) */
static void release_pages(struct ms_dma_buffer_s *b) {
  if (b->locked) msi_pages_unlock(b->addr, b->mapped);
  msi_pages_release(b->addr, b->mapped);
}

/* Releases the pending buffers (freed while registrations lay inside them) overlapping [s, e) that no live
   registration overlaps any more: the registration just freed was the last inside them. Caller holds pin_lock,
   which every removal from the registry takes, so a buffer found stays linked until unlinked here. */
static void release_pending(uintptr_t s, uintptr_t e) {
  for (;;) {
    struct ms_dma_buffer_s *z = NULL;
    reg_enter();
    for (struct ms_dma_buffer_s *o = NULL; !z && (o = overlapping(o, s, e, false));)
      if (o->pending && !registered_in(o)) z = o;
    reg_leave();
    if (!z) return;
    reg_unlink(z);
    release_pages(z);
    msi_verbose("dma: %zu bytes at %p released: the last registration inside them is freed", z->mapped,
                (void *)z->addr);
    desc_free(z);
  }
}

/* a second free, or a pointer that never was a handle: reported, errno EINVAL */
static void free_refused(const ms_dma_buffer_t *b) {
  msi_error("dma: ms_dma_free(%p): %s", (void *)b, b->magic == DMA_DEAD ? "freed already" : "not a DMA buffer");
  errno = EINVAL;
}
void ms_dma_free(ms_dma_buffer_t *b) {
  if (!b) return;
  msi_lock(&pin_lock);
  if (!valid(b)) { /* checked under the lock: of two frees of one handle racing, the second is refused */
    msi_unlock(&pin_lock);
    free_refused(b);
    return;
  }
  INC(frees, 1);
  if (!b->registered) {
    reg_enter();
    struct ms_dma_buffer_s *in = registered_in(b);
    if (in) {
      /* unmapping now would leave `in` describing pages the kernel hands to the next mapping (a device writing
         through its list would write into them): the handle goes, the pages stay mapped and pinned, in the
         registry, until release_pending finds no registration inside */
      b->pending = true;
      b->magic = DMA_DEAD;
      reg_leave();
      msi_unlock(&pin_lock);
      msi_verbose("dma: ms_dma_free(%p): the buffer at %p holds memory registered as %p, still live; its pages "
                  "are released when the last registration inside them is freed", (void *)b, (void *)b->addr,
                  (void *)in);
      return;
    }
    reg_leave();
  }
  reg_unlink(b);
  b->magic = DMA_DEAD;
  if (b->registered) {
    unpin_uncovered(b);
    release_pending((uintptr_t)b->addr, (uintptr_t)b->addr + b->mapped);
  } else {
    release_pages(b);
  }
  msi_unlock(&pin_lock);
  desc_free(b);
}

/* ---- accessors ---- */
void *ms_dma_addr(const ms_dma_buffer_t *b) { return check(b) ? b->addr : NULL; }
size_t ms_dma_size(const ms_dma_buffer_t *b) { return check(b) ? b->size : 0; }
size_t ms_dma_page_size(const ms_dma_buffer_t *b) { return check(b) ? b->page : 0; }
int ms_dma_movable(const ms_dma_buffer_t *b) { return check(b) ? b->movable : -1; }

int ms_dma_info(const ms_dma_buffer_t *b, ms_dma_info_t *info) {
  if (!valid(b) || !info) return ret(EINVAL);
  memset(info, 0, sizeof *info);
  info->addr = b->addr;
  info->size = b->size;
  info->mapped_size = b->mapped;
  info->page_size = b->page;
  msi_lock((msi_lock_t *)&b->lock);
  if (atomic_load_explicit(&b->built, memory_order_acquire)) {
    info->segments = b->count;
    info->largest_segment = b->largest;
  }
  msi_unlock((msi_lock_t *)&b->lock);
  info->numa_node = b->numa_node;
  info->registered = b->registered;
  info->movable = b->movable;
  info->fallback = b->fallback;
  return 0;
}

void msi_dma_copy_fenced(void *dst, const void *src, size_t length); /* copy.c */

static inline bool write_ok(const ms_dma_buffer_t *b, size_t offset, const void *src, size_t length) {
  if (MSI_LIKELY(valid(b) && (src || !length) && offset <= b->size && length <= b->size - offset)) return true;
  errno = EINVAL;
  return false;
}

void ms_dma_write(ms_dma_buffer_t *b, size_t offset, const void *src, size_t length) {
  if (write_ok(b, offset, src, length)) msi_dma_copy_fenced(b->addr + offset, src, length);
}

void ms_dma_stream(ms_dma_buffer_t *b, size_t offset, const void *src, size_t length) {
  if (write_ok(b, offset, src, length)) ms_dma_copy(b->addr + offset, src, length);
}

/* ---- statistics ---- */
static void dma_get(ms_stats_t *s) {
  s->dma_buffers = atomic_load(&ctr.buffers);
  s->dma_pinned_bytes = atomic_load(&ctr.pinned);
  s->dma_huge_bytes = atomic_load(&ctr.huge);
}

/* the lines without a field (stats.def; the core prints the others); the section once a buffer was made */
static bool dma_used(void) { return atomic_load(&ctr.allocs) || atomic_load(&ctr.registered) || atomic_load(&ctr.buffers); }
static void dma_print(msi_stats_writer_t *w) {
  /* stats.def's rows pinned_1g_pages .. moves_detected, in its order */
  const unsigned long long run[] = {atomic_load(&ctr.g1_bytes),  atomic_load(&ctr.m2_bytes), atomic_load(&ctr.base_bytes),
                                    atomic_load(&ctr.registered), atomic_load(&ctr.allocs),  atomic_load(&ctr.frees),
                                    atomic_load(&ctr.fallbacks), atomic_load(&ctr.translations), atomic_load(&ctr.moved)};
  msi_stats_run(w, "pinned_1g_pages", "moves_detected", MSI_ARRAY_LEN(run), run);
  int st = atomic_load(&ctr.phys_state);
  msi_stats_text(w, "physical_addresses", st == 1 ? "readable" : st == 2 ? "not readable (no CAP_SYS_ADMIN)"
                                                                          : "not read yet");
  /* every buffer's line formatted under one hold of reg_lock (one snapshot), written after it: the output callback
     is the caller's code, which may call ms_dma_* or ms_stats_print itself (reg_lock held, the first would abort as
     a re-entry), and a buffer it makes or frees between two lines neither repeats a line nor drops one */
  char text[PRINT_BUFFERS][192];
  int n = 0;
  if (reg_here) return; /* (see reg_enter) */
  reg_enter();
  for (struct ms_dma_buffer_s *b = reg_head; b && n < PRINT_BUFFERS; b = b->next, n++) {
    /* the buffer's lock only tried (order: registry, then buffer): a handler's print that interrupted this
       thread inside ms_dma_info/verify/phys/segments on it would wait for ever */
    char segs[32] = "segments being read";
    if (msi_trylock(&b->lock)) {
      size_t n_segs = atomic_load_explicit(&b->built, memory_order_acquire) ? b->count : 0;
      msi_snprintf(segs, sizeof segs, "%zu segments", n_segs);
      msi_unlock(&b->lock);
    }
    msi_snprintf(text[n], sizeof text[n], "%zu bytes at %p, %s pages, %s%s%s%s, %s", b->size, (void *)b->addr,
                 msi_pages_name(b->page), b->movable ? "movable" : "stable", b->registered ? ", registered" : "",
                 b->fallback ? ", fallback" : "", b->pending ? ", freed (registrations inside)" : "", segs);
  }
  reg_leave();
  for (int i = 0; i < n; i++) {
    char name[32];
    msi_snprintf(name, sizeof name, "buffer_%d", i);
    msi_stats_text(w, name, text[i]);
  }
}

static const msi_stats_source_t dma_source = {"dma", dma_get, dma_print, dma_used};
MSI_STARTUP_TEXT __attribute__((constructor(103))) static void dma_register_stats(void) { msi_stats_register(&dma_source); }
