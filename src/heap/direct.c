/* SPDX-License-Identifier: MIT */
/* direct.c: large blocks the region has no slot for. The region's reservation shrinks when the address space is
   limited (RLIMIT_AS) or refused, and with it the largest slot and the number of slots per size; a block that
   finds no slot is then mapped on its own, where the kernel chooses, as glibc maps its large blocks, and
   recorded in a hash table (open addressing by address, linear probing, grown by doubling; its memory is mapped,
   never malloc'd). free, realloc and usable_size look a pointer up here only when no other part owns it, so the
   table costs nothing until a direct block exists, and O(1) then. The last FREED_RING addresses freed or moved
   away are remembered: a second free or a realloc of one is reported by name. Everything below runs under one
   lock, also the statistic, so a fork (the heap's handlers take the lock) sees table and count agree.
   The secure build and MEMSPACE_SECURE=1 map one page more after each block and make it a guard page (any access
   past the block's end faults, as after the region's slots): a guard marker (MADV_GUARD_INSTALL, no new mapping)
   where the kernel has them, else the page made PROT_NONE (a mapping of its own). */
#include "heap.h"
#include "os.h"
#include <errno.h>
#include <sys/mman.h>

typedef struct {
  uintptr_t addr; /* 0 = empty */
  size_t len;     /* the block's bytes (a page multiple) | its G_* bits */
} entry_t;
#define G_MARKER 1 /* the page after the block carries a guard marker */
#define G_PROT 2   /* the page after the block is PROT_NONE */
#define G_PAGE 4   /* a page is mapped after the block (its guard, unless neither bit above is set) */
#define G_BITS 7
static size_t len_of(size_t f) { return f & ~(size_t)G_BITS; }
static size_t mapped_of(size_t f) { return len_of(f) + (f & G_PAGE ? msi_os_page_size() : 0); }

/* the secure build, or MEMSPACE_SECURE=1: blocks get a guard page */
static size_t guard_bytes(void) { return MSI_HEAP_SECURE || msi_opt(MS_OPTION_SECURE) ? msi_os_page_size() : 0; }
/* makes the mapped page at `at` a guard: the G_* bits of the entry (G_PAGE alone: refused, no guard) */
static size_t guard_put(uintptr_t at) {
  if (msi_os_madvise((void *)at, msi_os_page_size(), MADV_GUARD_INSTALL) == 0) return G_PAGE | G_MARKER;
  if (msi_os_mprotect((void *)at, msi_os_page_size(), PROT_NONE) == 0) return G_PAGE | G_PROT;
  return G_PAGE;
}
/* the guard page after a block of entry value f becomes ordinary memory (the block moves or grows with it); false:
   refused, the guard stays (a block grown over it would fault where the program writes) */
static bool guard_take(uintptr_t at, size_t f) {
  if ((f & G_MARKER) && msi_os_madvise((void *)at, msi_os_page_size(), MADV_GUARD_REMOVE) != 0) return false;
  return !(f & G_PROT) || msi_os_mprotect((void *)at, msi_os_page_size(), PROT_READ | PROT_WRITE) == 0;
}

static entry_t *table;
static size_t cap, count; /* cap: a power of two (0 until the first block) */
#define FREED_RING 64
MSI_COLD_BSS static uintptr_t freed[FREED_RING]; /* (written only by a direct block's free) */
static unsigned freed_next;
/* read without the lock: false = no direct block was ever made, nothing to look up */
MSI_START_BSS static _Atomic bool used;
/* the blocks' bytes: changed under the lock, read without it (msi_direct_bytes) */
static _Atomic uint64_t bytes;
#define direct_lock (msi_fork_page.direct) /* internal.h: msi_fork_page_t */

static size_t slot_of(uintptr_t a) { return (size_t)((a >> 12) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1); }

/* the index of addr's entry, or of the empty slot where it would go; lock held, cap > 0 */
static size_t probe(uintptr_t addr) {
  size_t i = slot_of(addr);
  while (table[i].addr && table[i].addr != addr) i = (i + 1) & (cap - 1);
  return i;
}

/* room for one more entry (load under 1/2); false + ENOMEM; lock held */
static bool reserve_one(void) {
  if ((count + 1) * 2 <= cap) return true;
  size_t ncap = cap ? cap * 2 : 256;
  entry_t *n = msi_os_mmap(NULL, ncap * sizeof *n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (n == MAP_FAILED) { errno = ENOMEM; return false; }
  entry_t *old = table;
  size_t ocap = cap;
  table = n;
  cap = ncap;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].addr) table[probe(old[i].addr)] = old[i];
  if (old) msi_os_munmap(old, ocap * sizeof *old);
  return true;
}

/* removes entry i, shifting back the entries of its probe run (no tombstones); lock held */
static void remove_at(size_t i) {
  size_t j = i;
  for (;;) {
    table[i].addr = 0;
    for (;;) {
      j = (j + 1) & (cap - 1);
      if (!table[j].addr) return;
      size_t home = slot_of(table[j].addr);
      /* j's entry may move to i when its home is not in (i, j] (cyclically) */
      if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) break;
    }
    table[i] = table[j];
    i = j;
  }
}

/* the index of p's entry, or -1; lock held */
static long find(const void *p) {
  if (!cap) return -1;
  size_t i = probe((uintptr_t)p);
  return table[i].addr ? (long)i : -1;
}

static void remember_freed(uintptr_t a) { freed[freed_next++ % FREED_RING] = a; }

static bool in_freed(uintptr_t a) {
  for (unsigned i = 0; i < FREED_RING; i++)
    if (freed[i] == a) return true;
  return false;
}

/* a block at a (live from now on: no longer in the freed ring); lock held, room reserved */
static void insert(uintptr_t a, size_t len) {
  for (unsigned i = 0; freed_next && i < FREED_RING; i++) /* (the ring's cold page untouched until a free) */
    if (freed[i] == a) freed[i] = 0;
  size_t i = probe(a);
  table[i].addr = a;
  table[i].len = len;
}

/* a mapping of `len` bytes refused for its size alone (a seccomp filter on mmap's length, where glibc takes the
   memory from brk): the largest piece allowed, grown by mremap (which moves it where len fits), else pieces of
   that size mapped below it (MAP_FIXED_NOREPLACE: they merge into one mapping or stay adjacent ones). MAP_FAILED
   when no piece fits or the room below is taken */
static void *map_pieces(size_t len) {
  size_t ps = msi_os_page_size(), piece = len;
  void *m = MAP_FAILED;
  while (m == MAP_FAILED && (piece = msi_align_down(piece / 2, ps)) >= 16 * ps)
    m = msi_os_mmap(NULL, piece, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return MAP_FAILED;
  void *g = msi_os_mremap(m, piece, len, MREMAP_MAYMOVE, NULL);
  if (g != MAP_FAILED) return g;
  uintptr_t lo = (uintptr_t)m, end = lo + piece;
  while (end - lo < len) {
    size_t n = end - lo + piece <= len ? piece : len - (end - lo);
    void *q = lo >= n ? msi_os_mmap((void *)(lo - n), n, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) : MAP_FAILED;
    if (q != (void *)(lo - n)) {
      if (q != MAP_FAILED) msi_os_munmap(q, n); /* a kernel before 4.17 took it for a hint */
      msi_os_munmap((void *)lo, end - lo);
      return MAP_FAILED;
    }
    lo -= n;
  }
  return (void *)lo;
}

void *msi_direct_alloc(size_t size, size_t alignment) {
  size_t ps = msi_os_page_size(), len = msi_round_up(size ? size : 1, ps), g = guard_bytes();
  size_t extra = alignment > ps ? alignment : 0;
  if (len == 0 || len + g + extra < len) { errno = ENOMEM; return NULL; }
  int saved = errno;
  void *m = msi_os_mmap(NULL, len + g + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED && msi_heap_fit_limit()) { /* RLIMIT_AS lowered below the heap's reservations (region.c) */
    m = msi_os_mmap(NULL, len + g + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) errno = saved;
  }
  if (m == MAP_FAILED && errno != ENOMEM) m = map_pieces(len + g + extra); /* refused, not out of memory */
  if (m == MAP_FAILED) { errno = ENOMEM; return NULL; }
  errno = saved;
  uintptr_t a = (uintptr_t)m;
  if (extra) { /* trim to the alignment */
    uintptr_t b = msi_align_up(a, alignment);
    if (b > a) msi_os_munmap(m, b - a);
    if (a + extra > b) msi_os_munmap((void *)(b + len + g), a + extra - b);
    a = b;
  }
  size_t f = len | (g ? guard_put(a + len) : 0);
  msi_lock(&direct_lock);
  if (!reserve_one()) {
    msi_unlock(&direct_lock);
    msi_os_munmap((void *)a, len + g);
    errno = ENOMEM;
    return NULL;
  }
  insert(a, f);
  count++;
  atomic_fetch_add_explicit(&bytes, len, memory_order_relaxed);
  msi_os_count_commit(len);
  atomic_store_explicit(&used, true, memory_order_relaxed);
  msi_unlock(&direct_lock);
  msi_maint_wake(); /* the heap grew: a sleeping maintenance thread looks at the cgroup */
  return (void *)a;
}

size_t msi_direct_usable(const void *p) {
  if (!atomic_load_explicit(&used, memory_order_relaxed) || !p) return 0;
  msi_lock(&direct_lock);
  long i = find(p);
  size_t len = i < 0 ? 0 : len_of(table[i].len);
  msi_unlock(&direct_lock);
  return len;
}

/* p lies inside a live block, past its start (an interior pointer: the C library's free would take the block's
   bytes before it for a chunk header, and may unmap a page of the block without a word). O(blocks), lock held;
   asked only for a pointer no part owns, once a direct block exists */
static bool inside_locked(uintptr_t a) {
  for (size_t i = 0; i < cap; i++)
    if (table[i].addr && a - table[i].addr - 1 < len_of(table[i].len) - 1) return true;
  return false;
}

/* a question about p answered under the lock; false at once while no direct block ever existed */
static bool ask_locked(const void *p, bool (*question)(uintptr_t)) {
  if (!atomic_load_explicit(&used, memory_order_relaxed) || !p) return false;
  msi_lock(&direct_lock);
  bool yes = question((uintptr_t)p);
  msi_unlock(&direct_lock);
  return yes;
}

bool msi_direct_inside(const void *p) { return ask_locked(p, inside_locked); }

bool msi_direct_free(void *p) {
  if (!atomic_load_explicit(&used, memory_order_relaxed) || !p) return false;
  msi_lock(&direct_lock);
  long i = find(p);
  if (i < 0) {
    bool again = in_freed((uintptr_t)p), inside = !again && inside_locked((uintptr_t)p);
    msi_unlock(&direct_lock);
    if (again) msi_heap_bad_pointer(p, "free(): double free");
    if (inside) msi_heap_bad_pointer(p, "free(): invalid pointer (inside a block)");
    return false;
  }
  size_t f = table[i].len, len = len_of(f);
  remove_at((size_t)i);
  count--;
  atomic_fetch_sub_explicit(&bytes, len, memory_order_relaxed);
  msi_os_count_decommit(len);
  remember_freed((uintptr_t)p);
  msi_unlock(&direct_lock);
  /* refused past vm.max_map_count (unmapping the middle of a merged mapping splits it): the pages still go back */
  if (msi_os_munmap(p, mapped_of(f)) != 0) msi_os_madvise(p, len, MADV_DONTNEED);
  return true;
}

/* a block of several mappings (moved here by large.c: move_to_direct) grown to len: mremap refuses several
   mappings (EFAULT), so its pages move into a new mapping piece by piece, or are copied where the kernel refuses
   (msi_large_move_into); g: the guard page's bytes after either; MAP_FAILED: unchanged */
static void *grow_pieces(void *p, size_t old, size_t len, size_t g) {
  void *d = msi_os_mmap(NULL, len + g, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (d == MAP_FAILED) return MAP_FAILED;
  if (!msi_large_move_into(d, p, old, len)) {
    msi_os_munmap(d, len + g);
    return MAP_FAILED;
  }
  if (msi_os_munmap(p, old + g) != 0) msi_os_madvise(p, old, MADV_DONTNEED); /* (reserved again by the move) */
  return d;
}

/* grows or shrinks in place or moves with mremap (pages move, no byte is copied); NULL + ENOMEM: unchanged */
void *msi_direct_realloc(void *p, size_t size) {
  size_t len = msi_round_up(size ? size : 1, msi_os_page_size());
  if (len == 0) { errno = ENOMEM; return NULL; }
  msi_lock(&direct_lock);
  long i = find(p);
  if (i < 0) { msi_unlock(&direct_lock); msi_heap_bad_pointer(p, "realloc(): invalid pointer"); }
  size_t f = table[i].len, old = len_of(f), g = mapped_of(f) - old;
  if (len == old) { msi_unlock(&direct_lock); return p; }
  /* the guard page moves or grows with the block, and is put back after it; refused: the block stays as it is */
  if (!guard_take((uintptr_t)p + old, f)) {
    msi_unlock(&direct_lock);
    errno = ENOMEM;
    return NULL;
  }
  void *q = msi_os_mremap(p, old + g, len + g, MREMAP_MAYMOVE, NULL);
  if (q == MAP_FAILED && errno == EFAULT && len > old) q = grow_pieces(p, old, len, g);
  if (q == MAP_FAILED) {
    if (g) table[i].len = old | guard_put((uintptr_t)p + old);
    msi_unlock(&direct_lock);
    errno = ENOMEM;
    return NULL;
  }
  size_t nf = len | (g ? guard_put((uintptr_t)q + len) : 0);
  atomic_fetch_add_explicit(&bytes, len - old, memory_order_relaxed); /* modulo 2^64: a shrink subtracts */
  if (len > old) msi_os_count_commit(len - old);
  else msi_os_count_decommit(old - len);
  if (len > old) msi_maint_wake(); /* the heap grew (as msi_direct_alloc) */
  if (q == p) {
    table[i].len = nf;
  } else { /* re-keyed: the entry moves with the block (room is there: one out, one in) */
    remove_at((size_t)i);
    remember_freed((uintptr_t)p);
    insert((uintptr_t)q, nf);
  }
  msi_unlock(&direct_lock);
  return q;
}

bool msi_direct_was_freed(const void *p) { return ask_locked(p, in_freed); }

/* without the lock: the statistics of a signal handler (mallinfo2, malloc_stats) that interrupted this thread's
   direct block call read it too */
MSI_HOT_TEXT uint64_t msi_direct_bytes(void) {
  if (!atomic_load_explicit(&used, memory_order_relaxed)) return 0;
  return atomic_load_explicit(&bytes, memory_order_relaxed);
}

void msi_direct_lock(void) { msi_lock(&direct_lock); }
void msi_direct_unlock(bool child) {
  if (child) msi_lock_reset(&direct_lock);
  else msi_unlock(&direct_lock);
}
