/* SPDX-License-Identifier: MIT */
/* large.c: blocks above MSI_HEAP_SMALL_MAX. Each lives at the start of a power-of-two slot (2^k bytes, aligned to 2^k,
   so any alignment up to the slot size comes free) in the sub-region of its slot size. A side table holds each slot's
   committed pages and state. Memory is committed with mmap(MAP_FIXED) (accounted by the kernel, so an impossible
   request fails with ENOMEM like glibc's mmap), grows and shrinks in place inside the slot, and moves to a bigger slot
   with mremap (page tables move, bytes are never copied; slots up to 1 MiB are dense, see dense()). Freed slots stay
   committed in a small per-size cache (preset; reused best-fit: cached_take), and are decommitted by the purge after
   MEMSPACE_PURGE_DELAY; a single-threaded program's budget may drop their pages first (msi_large_trim). The secure
   build keeps the last page of every slot (MSI_HEAP_GUARD) unusable: in a dense slot guard markers cover the pages past
   the block (dense_guard), elsewhere the PROT_NONE reservation itself is the guard (the committed part is then a
   mapping of its own). Which of these mechanisms serves a block (a cached slot, a fresh dense or split slot, or a
   mapping of its own in direct.c) is decided in one place: place(); realloc's growth of a dense block alone may take
   the next size's cached slot instead (grown_into_next). */
#include "heap.h"
#include "os.h"
#include "track.h"
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define SLOT_LIVE 0x80000000u
#define SLOT_CACHED 0x40000000u
#define SLOT_CLEAN 0x20000000u /* cached, its pages dropped (msi_large_trim): they read as zero */
#define SLOT_SPLIT 0x10000000u /* live, counted in split_live (split_add) */
#define SLOT_DROPPING 0x08000000u /* neither live nor cached: going back to the system (slot_dropping) */
#define SLOT_PAGES 0x07FFFFFFu
_Static_assert(((uint64_t)1 << (MSI_HEAP_LARGE_MAX_SHIFT - 12)) <= SLOT_PAGES,
               "the largest slot's pages fit SLOT_PAGES");
#define CACHE_MAX 64           /* cached slots of a size above the dense ones */
#define CACHE_MAX_DENSE 2048   /* of a dense size: see mid_cache_room */

typedef struct slot_meta_s {
  uint32_t pages; /* committed pages | state */
  uint32_t link;  /* free list: next index + 1 */
} slot_meta_t;

typedef struct lclass_s {
  uintptr_t base;
  uint64_t nslots, bump;
  uint64_t mapped;    /* a dense size's slots below are mapped read-write (dense_batch) */
  uint32_t free_head; /* index + 1 of an uncommitted free slot */
  _Atomic uint32_t ncached; /* peeked at by the purge without the lock */
  uint32_t cache_max;       /* room of cached[] where it lies now: CACHE_HEAD, or cache_room() once moved */
  size_t cached_bytes;      /* committed bytes of the cached slots */
  struct cache_entry_s *cached; /* the cached slots, oldest first (large_meta.cache_head, then cache_store) */
  /* where the table's mapping holds its entries past the first TABLE_HEAD, less TABLE_HEAD (meta_at) */
  size_t meta_off;
} lclass_t;

/* the slot table's entries kept in .lbss per class (see table_head below) */
#define TABLE_HEAD 16
/* the cached slots a class keeps in .lbss with its class before its cache moves to cache_store (cache_put) */
#define CACHE_HEAD 4
/* slot index and the time it was cached (cache_put) */
typedef struct cache_entry_s {
  uint32_t idx; /* the slot */
  uint32_t ms;  /* when it was cached */
} cache_entry_t;
/* The classes, their first cached slots (cache_head) and the slot table's first entries of each (table_head,
   below), page-aligned together: a program's first large block writes its class and its slot's entry on one page
   of .lbss, and its free caches the slot on that page too, not on a page of cache_store (the classes up to
   512 MiB have all three on the first page) */
MSI_COLD_BSS static _Alignas(4096) struct {
  lclass_t classes[MSI_HEAP_LARGE_CLASSES];
  cache_entry_t cache_head[MSI_HEAP_LARGE_CLASSES][CACHE_HEAD];
  slot_meta_t head[MSI_HEAP_LARGE_CLASSES][TABLE_HEAD];
} large_meta;
_Static_assert(sizeof(lclass_t) * MSI_HEAP_LARGE_CLASSES + sizeof(cache_entry_t) * CACHE_HEAD * MSI_HEAP_LARGE_CLASSES +
                   sizeof(slot_meta_t) * TABLE_HEAD * 14 <= 4096,
               "the classes of 64 KiB-512 MiB have their class, first cached slots and first slots' entries on one page");
#define classes (large_meta.classes)
/* each class's lock, in the fork page (internal.h: msi_fork_page_t) */
_Static_assert(MSI_HEAP_LARGE_CLASSES <= MSI_FORK_LARGE_LOCKS, "a fork-page lock per large class");
#define lock_of(c) (&msi_fork_page.large[(c) - classes].lock)
MSI_START_BSS static _Atomic uint64_t live_bytes, cached_bytes, committed_bytes;
MSI_START_BSS static _Atomic uint64_t dirty_bytes; /* of cached_bytes, in slots whose pages were not dropped */
/* (cached_bytes and dirty_bytes change under the class lock with the cache itself, so a fork, which holds every
   class lock, gives the child totals that agree with its classes) */
MSI_START_BSS static size_t page_size, page_shift;
/* dense slots possible in this build (see dense()); on once the overcommit mode allows */
MSI_START_BSS static bool dense_ok;
#define LARGE_DENSE_MAX_SHIFT 20 /* see dense() */
/* the classes' cached[] once past CACHE_HEAD entries (BSS: a page of it is touched only by a cache that reaches
   it); a slot's index and the time it was cached side by side, so that a class's first entries lie on one page */
#define CACHE_DENSE_CLASSES (LARGE_DENSE_MAX_SHIFT - MSI_HEAP_LARGE_MIN_SHIFT + 1)
#define CACHE_STORE (CACHE_DENSE_CLASSES * CACHE_MAX_DENSE + (MSI_HEAP_LARGE_MAX_SHIFT - LARGE_DENSE_MAX_SHIFT) * CACHE_MAX)
MSI_COLD_BSS static cache_entry_t cache_store[CACHE_STORE];
/* the cached slots class i may keep, and where its room in cache_store starts */
static inline uint32_t cache_room(unsigned i) { return i < CACHE_DENSE_CLASSES ? CACHE_MAX_DENSE : CACHE_MAX; }
static inline size_t cache_store_at(unsigned i) {
  return i < CACHE_DENSE_CLASSES ? (size_t)i * CACHE_MAX_DENSE
                                 : (size_t)CACHE_DENSE_CLASSES * CACHE_MAX_DENSE + (size_t)(i - CACHE_DENSE_CLASSES) * CACHE_MAX;
}
/* of cached_bytes, in slots of the dense sizes (mid_cache_room) */
MSI_START_BSS static _Atomic uint64_t mid_cached_bytes;
/* strict overcommit (mode 2: every committed page is charged, MAP_NORESERVE ignored), read when the heap
   initialises and fixed for the process */
MSI_START_BSS static bool strict;
#define MAP_COUNT_ASSUMED 65530ul /* vm.max_map_count as the heap assumes it (the kernel's default: split_max) */

/* The slot table: a slot_meta_t per slot of every class. Every class's first TABLE_HEAD entries lie together in
   table_head (.lbss: a page written only where a large block is made, next to the library's other pages); the
   rest, class after class, in a NORESERVE mapping made when a class first takes a slot past them (table_get): a
   program making a few large blocks of each size (most short-lived programs: `sort`, `cat`, a shell) makes no
   mapping and no page-table page for it (in one mapping the entries of each class's first slots lie 16, 8, 4...
   MiB apart, a page-table page each). With a whole reservation the mapping has its place there, before the
   segment area (region.c region_unlimited: the first segment's page-table pages serve it too); else (no such place,
   or refused) it is mapped anywhere. The overcommit mode is read from /proc when the heap initialises
   (the first allocation) all the same: read at the first dense
   block it ran under any seccomp filter the program had installed by then (a sandbox may kill it for the open(),
   or for the prctl that would ask whether there is a filter), and two threads whose reads disagreed would place
   blocks under both answers. A probe mapping instead of the read (a
   large writable MAP_NORESERVE range, refused only under mode 2) is no answer: after mlockall(MCL_FUTURE) the
   kernel fills a new mapping with pages at once, and a probe of that size calls the OOM killer. */
#define table_head (large_meta.head)
MSI_START_BSS static size_t table_bytes;
MSI_START_BSS static _Atomic(slot_meta_t *) table;
static _Atomic bool table_refused; /* too large a share of RLIMIT_DATA's room (table_get): not mapped for now */
static _Atomic uint32_t table_refusals; /* table_get calls answered NULL since the refusal (a look every 256th) */
/* its place in the reservation until a table_get or the release takes it */
MSI_START_BSS static _Atomic uintptr_t table_place;

/* class i's slots with sub-regions of 2^shift bytes */
static uint64_t class_slots(unsigned i, size_t shift) {
  unsigned k = MSI_HEAP_LARGE_MIN_SHIFT + i;
  return k <= shift ? (uint64_t)1 << (shift - k) : 0;
}
static uint64_t body_slots(uint64_t nslots) { return nslots > TABLE_HEAD ? nslots - TABLE_HEAD : 0; }

MSI_STARTUP_TEXT size_t msi_large_table_bytes(size_t sub_shift) {
  size_t total = 0;
  for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES; i++) total += body_slots(class_slots(i, sub_shift));
  return msi_round_up(total * sizeof(slot_meta_t), msi_os_page_size());
}

/* The classes' layout (their sub-regions, slots, table entries and cache room) is set at the first large block or
   release (classes_ready), not when the heap initialises: a program whose blocks are all small (a shell's
   commands) never writes the 1.6 KiB of classes[], which would take a page of .bss of its own at its first malloc
   (the start-up's variables share one: internal.h MSI_START_BSS). Until then every class reads as empty (no slot,
   nothing cached): the purge, the statistics and the fork handlers find nothing to do. msi_large_release_unused
   sets them up first, as the next large block would take a released sub-region again. */
static _Atomic bool classes_set MSI_START_BSS;
MSI_STARTUP_TEXT void msi_large_init(void) {
  page_size = msi_os_page_size();
  page_shift = (size_t)__builtin_ctzl(page_size);
  dense_ok = !MSI_HEAP_SECURE || msi_heap_g.guard_markers;
  int saved = errno; /* a refused read of /proc leaves the first malloc's errno alone */
  unsigned long long mode;
  strict = msi_os_read_ull("/proc/sys/vm/overcommit_memory", &mode) && mode == 2;
  errno = saved;
  msi_large_set_map_limit(MAP_COUNT_ASSUMED);
  table_bytes = msi_large_table_bytes(msi_heap_g.sub_shift);
  atomic_store_explicit(&table_place, msi_heap_g.table_area, memory_order_relaxed);
}
/* by one thread, under the first class's lock. Before classes_set is seen (acquire) no thread reads a class but
   its count of cached slots (the purge), which stays 0: the layout's fields are read only after it, or by way of a
   block placed after it. classes[] is written, never read first: a read would fault in the zero page, and the
   write a second fault */
MSI_STARTUP_TEXT static MSI_NOINLINE void classes_setup(void) {
  msi_lock(lock_of(&classes[0]));
  if (!atomic_load_explicit(&classes_set, memory_order_relaxed)) {
    size_t body = 0;
    for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES; i++) {
      lclass_t *c = &classes[i];
      c->cache_max = CACHE_HEAD;
      c->cached = large_meta.cache_head[i];
      c->base = msi_heap_g.large_base + ((uintptr_t)i << msi_heap_g.sub_shift);
      c->meta_off = body - TABLE_HEAD;
      c->nslots = class_slots(i, msi_heap_g.sub_shift);
      body += body_slots(c->nslots);
    }
    atomic_store_explicit(&classes_set, true, memory_order_release);
  }
  msi_unlock(lock_of(&classes[0]));
}
/* the classes' layout is set (classes_setup), before a large block is placed or the unused slots go back */
static inline void classes_ready(void) {
  if (MSI_UNLIKELY(!atomic_load_explicit(&classes_set, memory_order_acquire))) classes_setup();
}

/* maps [addr, addr + bytes) reserved again (no access, no commit charge), replacing what is there at once. Refused
   (a process past vm.max_map_count, which direct blocks may take it to: see msi_large_alloc), the pages are
   dropped instead: the memory goes back and the range stays accessible, reading zeros. True when reserved (the
   range no longer charged by RLIMIT_DATA). */
static bool reserve(uintptr_t addr, size_t bytes) {
  if (msi_os_mmap((void *)addr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) !=
      MAP_FAILED)
    return true;
  msi_os_madvise((void *)addr, bytes, MADV_DONTNEED);
  return false;
}

/* the slot table, mapped on first use (two threads racing both may map one, one keeps its copy);
   NULL when refused: the caller maps its block on its own (direct.c) */
static slot_meta_t *table_map(void);
MSI_HOT_TEXT static slot_meta_t *table_get(void) {
  slot_meta_t *t = atomic_load_explicit(&table, memory_order_acquire);
  return MSI_LIKELY(t) ? t : table_map();
}
/* table_get's first call, and its calls while refused: out of the hot text (once a process, or with a mapping) */
MSI_NOINLINE MSI_COLD static slot_meta_t *table_map(void) {
  slot_meta_t *t = NULL; /* (the table's expected value: none yet) */
  /* Under a data limit (RLIMIT_DATA charges every read-write private mapping, resident or not) the whole table
     (32 MiB with the whole reservation) would take a share of the limit the program's blocks need (Python under
     `ulimit -d 24000` failed with MemoryError holding 12 MB): above a quarter of the room the limit leaves (the
     limit less the heap's own mappings: segments, large pages committed, direct blocks; the program's other
     mappings are not known without reading /proc) it is not mapped, and large blocks past the slots table_head
     describes are mapped on their own, as glibc maps its large blocks. One getrlimit the first time a class passes
     its table_head slots; refused, one more every 256th block mapped on its own (each a mapping call already), so
     that a limit raised, or room freed, brings the table back. */
  bool refused = atomic_load_explicit(&table_refused, memory_order_relaxed);
  if (refused && (atomic_fetch_add_explicit(&table_refusals, 1, memory_order_relaxed) + 1) % 256) return NULL;
  struct rlimit rl;
  if (msi_os_getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    uint64_t held = atomic_load_explicit(&msi_heap_counters.segments, memory_order_relaxed) * MSI_HEAP_SEG_SIZE +
                    atomic_load_explicit(&committed_bytes, memory_order_relaxed) + msi_direct_bytes();
    uint64_t room = rl.rlim_cur > held ? rl.rlim_cur - held : 0;
    if (table_bytes > room / 4) {
      if (!refused) {
        atomic_store_explicit(&table_refused, true, memory_order_relaxed);
        msi_verbose("heap: the large-block table (%zu KiB) is more than a quarter of the room RLIMIT_DATA (%llu KiB) "
                    "leaves (%llu KiB): large blocks past the first of each size are mapped on their own",
                    table_bytes >> 10, (unsigned long long)rl.rlim_cur >> 10, (unsigned long long)room >> 10);
      }
      return NULL;
    }
  }
  if (refused) atomic_store_explicit(&table_refused, false, memory_order_relaxed);
  /* one thread takes the place: a second MAP_FIXED there would drop what the first wrote */
  uintptr_t place = atomic_exchange_explicit(&table_place, 0, memory_order_relaxed);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  void *p = place ? msi_os_mmap((void *)place, table_bytes, PROT_READ | PROT_WRITE, flags | MAP_FIXED, -1, 0) : MAP_FAILED;
  if (p == MAP_FAILED) p = msi_os_mmap(NULL, table_bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED && msi_heap_fit_limit()) return NULL; /* RLIMIT_AS lowered: no slot is left to take */
  if (p == MAP_FAILED) {
    MSI_WARN_ONCE("heap: no memory for the large-block table (%s); large blocks are mapped on their own",
                  MSI_ERRNO(errno));
    return NULL;
  }
  if (!atomic_compare_exchange_strong_explicit(&table, &t, (slot_meta_t *)p, memory_order_acq_rel, memory_order_acquire)) {
    if (place && (uintptr_t)p == place) reserve(place, table_bytes); /* the place stays the region's, not a hole */
    else msi_os_munmap(p, table_bytes);
    return t;
  }
  return p;
}

/* slot idx's entry of class c; only for a slot taken (past the first TABLE_HEAD: after table_get) */
static inline slot_meta_t *meta_at(const lclass_t *c, uint64_t idx) {
  if (idx < TABLE_HEAD) return &table_head[c - classes][idx];
  return atomic_load_explicit(&table, memory_order_relaxed) + (c->meta_off + idx); /* (meta_off may wrap) */
}

/* every commit and decommit of a block's pages, dense slots' included, counts in the heap's mapped bytes and
   the OS layer's committed bytes, once each way */
static void count_commit(size_t bytes) {
  atomic_fetch_add_explicit(&committed_bytes, bytes, memory_order_relaxed);
  msi_os_count_commit(bytes);
  msi_heap_mapped_peak_note();
  msi_maint_wake(); /* the heap grew: a sleeping maintenance thread looks at the cgroup (purge.c release_task_busy) */
}
static void count_decommit(size_t bytes) {
  atomic_fetch_sub_explicit(&committed_bytes, bytes, memory_order_relaxed);
  msi_os_count_decommit(bytes);
}

MSI_HOT_TEXT static void *commit(uintptr_t addr, size_t bytes) {
  void *p = msi_os_mmap((void *)addr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) {
    reserve(addr, bytes);
    errno = ENOMEM;
    return NULL;
  }
  count_commit(bytes);
  return p;
}

static size_t dense_rest(uintptr_t end);
static void decommit(uintptr_t addr, size_t bytes) {
  if (!bytes) return;
  reserve(addr, bytes + dense_rest(addr + bytes));
  count_decommit(bytes);
  atomic_fetch_add_explicit(&msi_heap_counters.returned_bytes, bytes, memory_order_relaxed);
}

/* Dense slot sizes (64 KiB .. 1 MiB; in the secure build only with guard markers, see dense_guard): a slot
   is mapped read-write whole when it is first taken from the bump (a batch of them at a time: dense_batch) and
   stays so; freed pages go back with MADV_DONTNEED. Adjacent slots are then one kernel mapping. Committing only
   the block's pages would make each live block two mappings (its pages, and the reserved rest of its slot), and
   the kernel's limit (vm.max_map_count, 65,530 by default) would stop a program at about 32,750 live blocks of
   40 KB, where glibc's heap holds 50,000 and more; past the limit even the decommits fail (mmap refused), so the
   memory never comes back. Dense slots are mapped MAP_NORESERVE: with the kernel's default overcommit (modes 0
   and 1) no request of 1 MiB is ever refused anyway, and an accounted mapping growing with every slot ever used
   would keep its commit charge after the frees (Committed_AS growing with each phase of a program that allocates
   and frees) and make fork() fail once one class's mapping passes RAM + swap. Under strict overcommit (mode 2,
   every page accounted) they are off: slots are committed
   per block as the larger ones. A block leaving a dense slot by realloc is copied (at most 1 MiB): moved pages
   would split the mapping. */
/* Under a data limit (RLIMIT_DATA) below DENSE_DATA_LIMIT the same holds as under strict overcommit: the limit
   charges every read-write private mapping, resident or not, MAP_NORESERVE or not, so a dense size's mapping,
   which only grows, would keep the charge of every slot it ever held, and a block of 257 KiB the charge of its
   512 KiB slot, where glibc's freed memory serves the next blocks of any size. Below the bound the limit stops a
   program before the mapping limit would (a block in a slot of its own, at least 32 KiB, is two mappings: 32,750
   such blocks charge over 1 GiB). Read at the first question (a large block's first dense-size placement,
   before which no dense slot exists, or a trim or release of the large slots, which may come first): one
   getrlimit, in programs with large blocks. A limit lowered after that read (a C++ program's exception pool, a
   dense-size block taken before main) is met as a refused mapping: msi_large_release_free reads it again and turns
   dense slots off for the rest of the process (data_limit_lowered). */
#define DENSE_DATA_LIMIT ((rlim_t)1 << 30)
MSI_START_BSS static _Atomic uint8_t data_limited; /* 0: not read; 1: no limit below the bound; 2: one */
/* RLIMIT_DATA's soft limit (RLIM_INFINITY when it cannot be read); keeps errno */
static rlim_t data_limit(void) {
  int saved = errno;
  struct rlimit rl;
  rlim_t cur = msi_os_getrlimit(RLIMIT_DATA, &rl) == 0 ? rl.rlim_cur : RLIM_INFINITY;
  errno = saved;
  return cur;
}
MSI_NOINLINE MSI_COLD static bool data_limited_read(void) {
  uint8_t v = data_limit() < DENSE_DATA_LIMIT ? 2 : 1, none = 0;
  if (!atomic_compare_exchange_strong_explicit(&data_limited, &none, v, memory_order_relaxed, memory_order_relaxed))
    v = none; /* (another thread's answer: the same for every block) */
  return v == 2;
}
/* every committed page charged (strict overcommit, or a data limit below DENSE_DATA_LIMIT) */
static bool charged(void) {
  if (strict) return true;
  uint8_t v = atomic_load_explicit(&data_limited, memory_order_relaxed);
  return MSI_LIKELY(v) ? v == 2 : data_limited_read();
}
/* a size dense slots serve when nothing is charged (dense) */
static bool dense_size(unsigned k) { return dense_ok && k <= LARGE_DENSE_MAX_SHIFT; }
static bool dense(unsigned k) { return dense_size(k) && !charged(); }
MSI_COLD_BSS static _Atomic bool dense_dropped; /* data_limit_lowered turned dense slots off */
/* the bytes from `end` (a block's last committed page's end) to its slot's end when the slot may be one taken
   dense before data_limit_lowered (its pages past the block mapped read-write, charged: they go back with the
   block's), else 0 */
static size_t dense_rest(uintptr_t end) {
  if (MSI_LIKELY(!atomic_load_explicit(&dense_dropped, memory_order_relaxed))) return 0;
  unsigned i = (unsigned)((end - 1 - msi_heap_g.large_base) >> msi_heap_g.sub_shift);
  if (i + MSI_HEAP_LARGE_MIN_SHIFT > LARGE_DENSE_MAX_SHIFT) return 0;
  uintptr_t mask = ((uintptr_t)1 << (i + MSI_HEAP_LARGE_MIN_SHIFT)) - 1;
  return (mask + 1 - ((end - classes[i].base) & mask)) & mask;
}
/* After a refused mapping: true once, for the call that finds RLIMIT_DATA lowered below DENSE_DATA_LIMIT since the
   first read and turns dense slots off (data_limited 1 -> 2; never back). The slots taken meanwhile keep their
   read-write mappings until their blocks are freed (decommit gives such a slot back whole: dense_rest); from then
   on every size commits per block. */
MSI_RARE static bool data_limit_lowered(void) {
  uint8_t one = 1;
  if (strict || atomic_load_explicit(&data_limited, memory_order_relaxed) != 1) return false;
  rlim_t limit = data_limit();
  if (limit >= DENSE_DATA_LIMIT || !atomic_compare_exchange_strong_explicit(&data_limited, &one, 2, memory_order_relaxed,
                                                       memory_order_relaxed))
    return false;
  atomic_store_explicit(&dense_dropped, true, memory_order_relaxed);
  msi_verbose("heap: RLIMIT_DATA lowered to %llu KiB after the first large block: slots of 64 KiB-1 MiB are "
              "committed per block from now on", (unsigned long long)limit >> 10);
  return true;
}

/* Live blocks in slots that are not dense: two kernel mappings each (the block's pages, the reserved rest of its
   slot). The kernel's limit (vm.max_map_count, 65,530 by default) stops a program at ~32,750 such blocks, where
   glibc, jemalloc and mimalloc hold 40,000 blocks of 1.5 MB in a few dozen mappings; and once a split takes the
   count past the limit, every mmap fails, also the reservations that give freed blocks back and the segments of
   small blocks. Past a quarter of the limit (16,382 live blocks) a new block is mapped on its own
   (direct.c) where the kernel chooses: neighbouring blocks merge into one mapping, as with the peers, and half the
   limit at least stays for the program's other mappings and the heap's small blocks. (Cached slots add at most
   CACHE_MAX per size.) The limit is the kernel's default, not read from /proc/sys/vm/max_map_count: a read at
   start-up costs every process three system calls, and a read on the allocation path could kill a sandboxed
   program (see msi_large_init). A higher limit leaves more room than assumed; a lower one is met when the
   kernel refuses a slot's pages (direct_after_refusal), as with an unreadable /proc. */
MSI_START_BSS static _Atomic uint32_t split_live, split_max;
void msi_large_set_map_limit(unsigned long max_map_count) {
  unsigned long q = max_map_count / 4;
  atomic_store_explicit(&split_max, q > UINT32_MAX ? UINT32_MAX : (uint32_t)q, memory_order_relaxed);
}
/* a new block of slot size 2^k, its slot's entry m: counted when its slot is not dense, and marked so (SLOT_SPLIT),
   so that its free takes back what was counted, whether dense slots were turned off in between
   (data_limit_lowered) or not */
static void split_add(slot_meta_t *m, unsigned k) {
  if (dense(k)) return;
  m->pages |= SLOT_SPLIT;
  atomic_fetch_add_explicit(&split_live, 1, memory_order_relaxed);
}
/* a block leaving its slot, its entry's pages as they were */
static void split_sub(uint32_t pages) {
  if (pages & SLOT_SPLIT) atomic_fetch_sub_explicit(&split_live, 1, memory_order_relaxed);
}
static bool split_full(void) {
  return atomic_load_explicit(&split_live, memory_order_relaxed) >= atomic_load_explicit(&split_max, memory_order_relaxed);
}
/* a block mapped on its own after the kernel refused its slot's pages: when that works, the refusal was the
   mapping limit, not memory (the program's other mappings count too, and freed direct blocks split merged
   ones), so from then on every new block of a split slot size is mapped on its own (otherwise a program that frees
   every other block and allocates again keeps failing while the freed slots take the new blocks) */
static void *direct_after_refusal(size_t size, size_t alignment) {
  void *p = msi_direct_alloc(size, alignment);
  if (!p && msi_large_purge(0, 0, true)) /* refused too: the cached slots' mappings and commit charge go back */
    p = msi_direct_alloc(size, alignment);
  if (p) atomic_store_explicit(&split_max, 0, memory_order_relaxed);
  return p;
}

/* the secure build's guards in dense slots: markers (MADV_GUARD_INSTALL) on the slot's pages past its block and
   on a freed block's pages, so that any access there faults while the slots stay one mapping (guard pages as
   PROT_NONE reservations would split them, and the secure build would stop at ~32,750 live blocks of 40 KB, half
   the kernel's mapping limit). Installing zaps the pages. Kernels before 6.13 have no markers: no dense slots in the
   secure build there. true: done; false + errno: refused (mlock'd pages) */
static bool dense_guard(uintptr_t addr, size_t bytes, bool on) {
  if (!MSI_HEAP_SECURE || !bytes) return true;
  if (msi_os_madvise((void *)addr, bytes, on ? MADV_GUARD_INSTALL : MADV_GUARD_REMOVE) == 0) return true;
  if (on && errno == EINVAL) msi_heap_guard_refused(); /* installing on locked pages (mlock, mlockall) */
  return false;
}

/* a dense slot's range mapped read-write afresh (zero pages, no commit charge); false + errno. Never transparent
   huge pages (with THP "always" a 2 MiB page would back one 64 KiB block and its free neighbours: 32x its RSS),
   as for a block mapped on its own under 2 MiB: ranges past the first DENSE_PLAIN bytes of their
   size's sub-region are advised MADV_NOHUGEPAGE, and merge with each other. Ranges inside the first DENSE_PLAIN
   bytes go without the advice (dense_plain), one system call instead of two: a program using a few blocks of a
   dense size (git's directory reads, `ls`) maps them there. They merge with each other, not with the advised
   rest of the sub-region (its flags differ), and perhaps with an unadvised mapping just below the sub-region (a
   heap segment); either way the unadvised part of a sub-region is [base, base + 1 MiB) of a sub-region aligned
   to its size (2 MiB or more), so the only 2 MiB-aligned range holding its slots, [base, base + 2 MiB), is never
   one unadvised mapping: no PMD huge page backs them. (A multi-size THP setting that enables folios of
   128 KiB-1 MiB as "always", not the kernel's default, could back several of its slots with one folio: at most
   that first MiB of each dense size.) */
#define DENSE_PLAIN ((uintptr_t)1 << LARGE_DENSE_MAX_SHIFT)
static bool dense_plain(uintptr_t addr, size_t bytes) {
  size_t shift = msi_heap_g.sub_shift;
  if (shift <= LARGE_DENSE_MAX_SHIFT) return false; /* sub-regions of 1 MiB or less: every range is advised */
  uintptr_t base = msi_heap_g.large_base + ((addr - msi_heap_g.large_base) >> shift << shift);
  return addr + bytes <= base + DENSE_PLAIN;
}
MSI_HOT_TEXT static bool dense_map(uintptr_t addr, size_t bytes) {
  if (msi_os_mmap((void *)addr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
                  -1, 0) == MAP_FAILED)
    return false;
  if (!dense_plain(addr, bytes)) msi_os_madvise((void *)addr, bytes, MADV_NOHUGEPAGE);
  return true;
}

/* the pages [addr, addr + bytes) of a live block in a slot of size 2^k become usable; NULL + ENOMEM */
static void *slot_commit(unsigned k, uintptr_t addr, size_t bytes) {
  if (!dense(k)) return commit(addr, bytes);
  if (dense_guard(addr, bytes, false)) { /* (refused: the slot stays as it was, mapped) */
    count_commit(bytes); /* a dense slot's pages count from their block's commit to its decommit */
    return (void *)addr;
  }
  errno = ENOMEM;
  return NULL;
}
/* the system calls that give the pages [addr, addr + bytes) of a slot back, d: a dense slot (dense(), read once:
   data_limit_lowered may turn it off meanwhile); their counts are slot_decommit_count's. Done again, they change
   nothing more. true: the pages went back */
static bool slot_decommit_pages(bool d, uintptr_t addr, size_t bytes) {
  if (!bytes) return false;
  if (!d) {
    reserve(addr, bytes + dense_rest(addr + bytes)); /* (refused: its fallback drops them) */
    return true;
  }
  if ((MSI_HEAP_SECURE ? dense_guard(addr, bytes, true) : msi_os_madvise((void *)addr, bytes, MADV_DONTNEED) == 0) ||
      dense_map(addr, bytes))
    return true; /* (both advices are refused on locked pages: mlock, mlockall) */
  /* both refused: pages past a block must read as zero all the same */
  MSI_HEAP_VG_QUIET(memset((void *)addr, 0, bytes));
  return false;
}
static void slot_decommit_count(size_t bytes, bool returned) {
  count_decommit(bytes);
  if (returned) atomic_fetch_add_explicit(&msi_heap_counters.returned_bytes, bytes, memory_order_relaxed);
}
/* the pages [addr, addr + bytes) of a slot of size 2^k go back to the system */
static void slot_decommit(unsigned k, uintptr_t addr, size_t bytes) {
  slot_decommit_count(bytes, slot_decommit_pages(dense(k), addr, bytes));
}
/* a fresh slot's first pages for a block of `need` bytes: a dense slot taken from the bump is committed whole */
static bool slot_commit_fresh(unsigned k, uintptr_t addr, size_t need, bool bumped) {
  if (!dense(k)) return commit(addr, need) != NULL;
  if (!bumped) return slot_commit(k, addr, need) != NULL;
  if (dense_map(addr, (size_t)1 << k)) {
    dense_guard(addr + need, ((size_t)1 << k) - need, true); /* refused (mlockall): no guard */
    count_commit(need);
    return true;
  }
  reserve(addr, (size_t)1 << k); /* a failed MAP_FIXED may have unmapped it */
  return false;
}

static unsigned slot_shift_for(size_t bytes) {
  unsigned k = bytes <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(bytes - 1);
  return k < MSI_HEAP_LARGE_MIN_SHIFT ? MSI_HEAP_LARGE_MIN_SHIFT : k;
}

/* Never-used slots of a dense size are mapped a batch at a time, up to DENSE_BATCH bytes (a quarter of the slots
   taken so far, at least one): a program that allocates thousands of blocks of 40 KB before it frees any (R
   between two collections) makes a mapping call and an madvise per batch, not per block. The batch is mapped
   under the class lock, so no thread takes a slot of it before it is mapped. Mapped slots not taken yet hold no
   page and no commit charge (MAP_NORESERVE); the secure build's guard markers cover them whole. Refused: the
   slot is mapped alone as before (slot_commit_fresh). Class lock held. */
#define DENSE_BATCH ((size_t)2 << 20)
MSI_HOT_TEXT static void dense_batch(lclass_t *c, unsigned k) {
  uint64_t n = c->bump / 4 + 1, most = DENSE_BATCH >> k;
  if (n > most) n = most;
  if (n > c->nslots - c->bump) n = c->nslots - c->bump;
  uintptr_t addr = c->base + ((uintptr_t)c->bump << k);
  if (n <= 1 || !dense_map(addr, (size_t)n << k)) return;
  dense_guard(addr, (size_t)n << k, true); /* refused (mlockall): no guard */
  c->mapped = c->bump + n;
}

/* a free uncommitted slot index of class c (*bumped: never used before, and not mapped yet), or -1; class lock
   held */
static int64_t slot_take_fresh(lclass_t *c, bool *bumped) {
  *bumped = false;
  if (c->free_head) {
    uint32_t idx = c->free_head - 1;
    c->free_head = meta_at(c, idx)->link;
    meta_at(c, idx)->link = 0;
    return idx;
  }
  if (c->bump >= c->nslots) return -1;
  if (c->bump >= TABLE_HEAD && !atomic_load_explicit(&table, memory_order_acquire)) return -1; /* (see place) */
  unsigned k = (unsigned)(c - classes) + MSI_HEAP_LARGE_MIN_SHIFT;
  if (dense(k) && c->bump >= c->mapped) dense_batch(c, k);
  *bumped = c->bump >= c->mapped;
  uint64_t idx = c->bump;
  __atomic_store_n(&c->bump, idx + 1, __ATOMIC_RELAXED); /* (place reads it without the lock) */
  return (int64_t)idx;
}
static void slot_put_fresh(lclass_t *c, uint32_t idx) {
  meta_at(c, idx)->pages = 0;
  meta_at(c, idx)->link = c->free_head;
  c->free_head = idx + 1;
}

/* the class and slot of a live large block, or NULL */
MSI_HOT_TEXT static lclass_t *slot_lookup(const void *p, uint32_t *idx_out) {
  uintptr_t off = (uintptr_t)p - msi_heap_g.large_base;
  if (off >= msi_heap_g.large_size) return NULL;
  unsigned i = (unsigned)(off >> msi_heap_g.sub_shift);
  lclass_t *c = &classes[i];
  uintptr_t in = (uintptr_t)p - c->base;
  unsigned k = MSI_HEAP_LARGE_MIN_SHIFT + i;
  if (in & (((uintptr_t)1 << k) - 1)) return NULL;
  uint64_t idx = in >> k;
  if (idx >= __atomic_load_n(&c->nslots, __ATOMIC_RELAXED) ||
      (idx >= TABLE_HEAD && !atomic_load_explicit(&table, memory_order_relaxed)))
    return NULL; /* past the slots kept (msi_large_release_unused), or past table_head with no table yet */
  *idx_out = (uint32_t)idx;
  return c;
}

/* A dense slot (at most 1 MiB) keeps all its committed pages for a block of more than half its size, whether the
   slot is reused (cached_take) or the block shrinks or grows by realloc: a block of 600 KiB after one of 1 MiB
   in the same slot, and the next of 1 MiB again, or a block grown through the slot sizes by realloc, fault
   nothing in, and the pages a block holds stay below twice its size (its slot's). The secure build's guard
   follows the block instead. */
static bool slot_keeps(unsigned k, uint32_t npages) {
  return dense(k) && !MSI_HEAP_SECURE && ((size_t)npages << page_shift) > ((size_t)1 << (k - 1));
}

/* A live block in a dense slot keeps the `have` pages committed to it when realloc makes it npages long while they
   are no more than a slot of its own size holds (at most twice the block): slot_keeps, and a block that realloc
   moved into the next larger size's slot (grown_into_next), whose pages past its end are there for its growth */
static bool live_keeps(unsigned k, uint32_t have, uint32_t npages) {
  size_t own = (size_t)1 << slot_shift_for((size_t)npages << page_shift);
  return slot_keeps(k, npages) || (dense(k) && !MSI_HEAP_SECURE && ((size_t)have << page_shift) <= own);
}

/* Committed pages a reused slot keeps past its new block. Dropping every excess of a quarter (as realloc's shrink
   does) would cost a system call in a good share of the reuses of a churn of blocks of one slot size (1 B ..
   4 MiB), and the commit that the next, bigger block then needs another: most malloc-free pairs would make a
   system call, where glibc's heap makes few. Kept up to half the block, a slot's pages stay committed for the
   sizes it serves (the RSS they hold is at most 1.5x the block's, and usable: malloc_usable_size counts them); the
   purge returns them once the slot is idle. */
static bool excess_dropped(unsigned k, uint32_t have, uint32_t npages) {
  uint32_t excess = have - npages;
  if (slot_keeps(k, npages)) return false;
  return excess >= 16 && excess > (MSI_HEAP_SECURE ? npages / 4 : npages / 2);
}

/* the accounting of cached slot idx of class c leaving the cache (class lock held): its committed bytes; *clean:
   its pages had been dropped */
static size_t cached_unlink(lclass_t *c, uint32_t idx, bool *clean) {
  uint32_t pg = meta_at(c, idx)->pages;
  size_t bytes = (size_t)(pg & SLOT_PAGES) << page_shift;
  meta_at(c, idx)->pages = pg & SLOT_PAGES;
  c->cached_bytes -= bytes;
  atomic_fetch_sub_explicit(&cached_bytes, bytes, memory_order_relaxed);
  if (dense((unsigned)(c - classes) + MSI_HEAP_LARGE_MIN_SHIFT))
    atomic_fetch_sub_explicit(&mid_cached_bytes, bytes, memory_order_relaxed);
  *clean = pg & SLOT_CLEAN;
  if (!*clean) atomic_fetch_sub_explicit(&dirty_bytes, bytes, memory_order_relaxed);
  return bytes;
}

/* takes entry j out of class c's cache, the others keeping their order (oldest first): the slot's committed bytes;
   *clean: its pages had been dropped (class lock held) */
static size_t cached_remove(lclass_t *c, uint32_t j, bool *clean) {
  uint32_t idx = c->cached[j].idx, n = c->ncached - 1;
  size_t bytes = cached_unlink(c, idx, clean);
  memmove(&c->cached[j], &c->cached[j + 1], (n - j) * sizeof c->cached[0]);
  c->ncached = n;
  return bytes;
}

/* the entry of class c's cache that holds slot idx, c->ncached when none does (taken meanwhile; class lock held) */
static uint32_t cached_find(const lclass_t *c, uint32_t idx) {
  uint32_t j = c->ncached;
  while (j-- > 0 && c->cached[j].idx != idx) {}
  return j < c->ncached ? j : c->ncached;
}

/* Slots going back to the system (a freed block the cache does not keep, cached slots the purge or the trim drops)
   leave the class lock for their system calls (slot_give_back): a fork meanwhile (another thread's) would leave
   them to the child neither free nor cached, their pages mapped and counted committed for ever. Their entries say
   so (SLOT_DROPPING, set and cleared under the class lock with dropping_n) and the child finishes them
   (msi_large_unlock_all), unless a drop of its own thread's is under way (dropping_here: a signal handler forked,
   and the drop resumes in the child, which finishes its own). */
MSI_COLD_BSS static _Atomic uint32_t dropping_n;
static _Thread_local uint32_t dropping_here;
void (*msi_large_drop_hook)(void);
/* slot idx of class c, neither live nor cached, is going back (class lock held) */
static void slot_dropping(lclass_t *c, uint32_t idx) {
  meta_at(c, idx)->pages |= SLOT_DROPPING;
  atomic_fetch_add_explicit(&dropping_n, 1, memory_order_relaxed);
  dropping_here++;
}
/* slot idx of class c (slot_dropping), its pages given back and counted, free again (class lock held) */
static void slot_dropped(lclass_t *c, uint32_t idx) {
  slot_put_fresh(c, idx);
  atomic_fetch_sub_explicit(&dropping_n, 1, memory_order_relaxed);
}
/* slot idx of class c (slot_dropping), its first `bytes` committed, given back and free again */
static void slot_give_back(lclass_t *c, uint32_t idx, size_t bytes) {
  unsigned k = (unsigned)(c - classes) + MSI_HEAP_LARGE_MIN_SHIFT;
  if (msi_large_drop_hook) msi_large_drop_hook();
  bool returned = slot_decommit_pages(dense(k), c->base + ((uintptr_t)idx << k), bytes);
  msi_lock(lock_of(c));
  slot_decommit_count(bytes, returned);
  slot_dropped(c, idx);
  dropping_here--;
  msi_unlock(lock_of(c));
}
/* in a forked child holding every class lock: the slots other threads were giving back, given back */
static void dropping_finish(void) {
  for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES && atomic_load_explicit(&dropping_n, memory_order_relaxed); i++) {
    lclass_t *c = &classes[i];
    unsigned k = MSI_HEAP_LARGE_MIN_SHIFT + i;
    for (uint64_t idx = 0; idx < c->bump; idx++) {
      uint32_t pg = meta_at(c, idx)->pages;
      if (!(pg & SLOT_DROPPING)) continue;
      slot_decommit(k, c->base + ((uintptr_t)idx << k), (size_t)(pg & SLOT_PAGES) << page_shift);
      slot_dropped(c, (uint32_t)idx);
    }
  }
}

/* takes the `n` oldest entries out of class c's cache (class lock held) to be given back (slot_dropping), their
   indexes into old[] and committed bytes into bytes[]: one move of the rest, however many go */
static void cached_cut(lclass_t *c, uint32_t n, uint32_t *old, size_t *bytes) {
  for (uint32_t j = 0; j < n; j++) {
    bool clean;
    old[j] = c->cached[j].idx;
    bytes[j] = cached_unlink(c, old[j], &clean);
    slot_dropping(c, old[j]);
  }
  memmove(&c->cached[0], &c->cached[n], (c->ncached - n) * sizeof c->cached[0]);
  c->ncached -= n;
}

/* the cached slots' committed bytes given back so far (slot_drop_cached), by any thread: not those a new block took */
MSI_COLD_BSS static _Atomic uint64_t dropped_bytes;
uint64_t msi_large_dropped_bytes(void) { return atomic_load_explicit(&dropped_bytes, memory_order_relaxed); }
/* a slot taken out of the cache (slot_dropping) goes back to the system: decommitted and free again; its bytes */
static size_t slot_drop_cached(lclass_t *c, uint32_t idx, size_t bytes) {
  slot_give_back(c, idx, bytes);
  atomic_fetch_add_explicit(&dropped_bytes, bytes, memory_order_relaxed);
  return bytes;
}

/* The mid-size cache: freed blocks of the dense slot sizes (64 KiB-1 MiB slots: blocks over 32 KiB up to 1 MiB)
   stay resident in their slots, up to CACHE_MAX_DENSE slots per size and the preset's large_mid_bytes of
   committed pages over all these sizes together (64 MiB by default), whatever their count: a program that frees
   and allocates again such blocks in batches (R's vectors freed by its collector by the thousand; compression
   contexts, parsers' buffers) reuses their pages with no system call and no page fault, as glibc's heap reuses
   them, where a cache of 64 slots would drop the pages of all but 64 and fault every page of the next blocks in
   again. The purge returns them after MEMSPACE_PURGE_DELAY like the other cached slots, and a single-threaded
   program's budget drops their pages first (msi_large_trim). The bound is checked without a common lock: threads
   caching at once may pass it by a slot each. */
static bool mid_cache_room(size_t bytes) {
  return atomic_load_explicit(&mid_cached_bytes, memory_order_relaxed) + bytes <= msi_heap_limits.large_mid_bytes;
}

/* Caches slot idx of class c with its `have` committed (dirty) pages, cached at `ms`, when the preset's limits allow it
   (class lock held); false: not cached. Entries stay oldest first (the purge and the trim rely on it): a donor's rest
   (borrow_pages) goes back where its time puts it. (The limit counts committed bytes, not slot sizes: blocks of 16-25
   MiB in slots of 32 MiB fitted 4 to the 128 MiB of the default preset, too few for mimalloc-bench's malloc-large,
   which then committed afresh.) */
MSI_HOT_TEXT static bool cache_put(lclass_t *c, uint32_t idx, uint32_t have, uint32_t ms) {
  unsigned k = (unsigned)(c - classes) + MSI_HEAP_LARGE_MIN_SHIFT;
  size_t bytes = (size_t)have << page_shift;
  if (MSI_UNLIKELY(c->ncached >= c->cache_max)) {
    if (c->cache_max != CACHE_HEAD) return false;
    unsigned i = (unsigned)(c - classes); /* its head is full: the entries move to its room in cache_store */
    cache_entry_t *room = &cache_store[cache_store_at(i)];
    msi_memcpy(room, c->cached, CACHE_HEAD * sizeof c->cached[0]);
    c->cached = room;
    c->cache_max = cache_room(i);
  }
  if (k > msi_heap_limits.large_max_shift ||
      (atomic_load_explicit(&msi_maint_pressure, memory_order_relaxed) && /* (heap.h) */
       atomic_load_explicit(&cached_bytes, memory_order_relaxed) + bytes > MSI_HEAP_PRESSURE_LARGE) ||
      c->cached_bytes + bytes > msi_heap_limits.large_bytes ||
      (dense(k) ? !mid_cache_room(bytes) : c->ncached >= msi_heap_limits.large_slots))
    return false;
  uint32_t j = c->ncached;
  while (j > 0 && (int32_t)(c->cached[j - 1].ms - ms) > 0) j--;
  memmove(&c->cached[j + 1], &c->cached[j], (c->ncached - j) * sizeof c->cached[0]);
  if (dense(k)) atomic_fetch_add_explicit(&mid_cached_bytes, bytes, memory_order_relaxed);
  c->cached_bytes += bytes;
  meta_at(c, idx)->pages = SLOT_CACHED | have;
  c->cached[j] = (cache_entry_t){idx, ms};
  c->ncached++;
  atomic_fetch_add_explicit(&cached_bytes, bytes, memory_order_relaxed);
  atomic_fetch_add_explicit(&dirty_bytes, bytes, memory_order_relaxed);
  msi_maint_wake(); /* work for the purge (a sleeping maintenance thread wakes) */
  return true;
}

/* the cached slot of class c to reuse for a block of npages (class lock held, c->ncached > 0): among the
   CACHE_SCAN most recently cached, the smallest that holds the block without an excess dropped, else the one
   committed furthest (the fewest pages to commit); where the slot keeps its pages whatever it holds (slot_keeps),
   the one committed furthest (the pages resident are the same whichever is taken, and a later growth by realloc
   faults fewest); taken out of the cache (*clean: see cached_remove) */
#define CACHE_SCAN 16
static uint32_t cached_take(lclass_t *c, uint32_t npages, bool *clean) {
  unsigned k = (unsigned)(c - classes) + MSI_HEAP_LARGE_MIN_SHIFT;
  uint32_t n = c->ncached, best = n - 1, best_have = 0;
  bool fits = false, keep = slot_keeps(k, npages);
  for (uint32_t j = n, seen = 0; j-- > 0 && seen < CACHE_SCAN; seen++) {
    uint32_t have = meta_at(c, c->cached[j].idx)->pages & SLOT_PAGES;
    bool f = have >= npages && !excess_dropped(k, have, npages);
    if (keep ? have > best_have : (f && (!fits || have < best_have)) || (!f && !fits && have > best_have)) {
      best = j;
      best_have = have;
      fits = f;
    }
  }
  uint32_t idx = c->cached[best].idx;
  cached_remove(c, best, clean);
  return idx;
}

static size_t move_pages(uintptr_t from, uintptr_t to, size_t bytes);
static size_t one_mapping(uintptr_t from, size_t len);

/* the longest tail of [from, from + len) that lies in one kernel mapping (one_mapping from each mapping's start
   on: one call per mapping the range spans) */
static size_t tail_mapping(uintptr_t from, size_t len) {
  for (size_t first; (first = one_mapping(from, len)) < len; from += first, len -= first) {}
  return len;
}

/* the kernel mappings [addr, addr + len) spans, counted up to most + 1 (probed: one_mapping) */
static unsigned mappings_in(uintptr_t addr, size_t len, unsigned most) {
  unsigned n = 0;
  for (size_t first; len && n <= most; addr += first, len -= first, n++) first = one_mapping(addr, len);
  return n;
}

/* Other cached slots' pages for the pages [have, have + n) of the block at `block` (slot sizes above the dense
   ones; only while its first `have` pages and the pieces moved in are BORROW_MAPPINGS kernel mappings at most, see
   grow_pages), moved there with
   mremap: no page fault and no zeroing for them (a fresh 16 MiB block faults 4,096 pages). Caches are per slot
   size, so frees of one size and allocations of another committed afresh while the cache held pages
   (blocks of 5-25 MiB fall in slots of 8, 16 and 32 MiB; numpy's temporaries of 1-40 MB in six sizes). Donors are
   cached slots whose pages were not dropped, of any size above the dense ones, the block's own included (a cached
   slot of its size committed short of it): donor_pick. The tail of a donor's pages moves, up to what the block
   still needs, as far as it is one kernel mapping (a donor built of pieces gives its last one), and the donor
   stays cached with the rest (from any page, not a 2 MiB boundary: keeping transparent huge pages whole this way
   costs more page faults than it saves). Up to BORROW_PIECES donors fill one block, so a block finds the pages
   of the cache wherever they lie (with one donor's tail per block, a churn such as numpy's faults the rest of each
   block in while other donors hold as many pages, and faults more than it ever holds); while BORROW_MANY_LIVE
   split blocks or more live, one (a moved piece is a kernel mapping of its own: see grow_pages). Pieces under
   BORROW_PIECE_MIN stay
   where they are. Returns the pages moved (the kernel refusing a move ends it: that donor's pages are returned,
   and those moved into the block so far stay); they hold the donors' old contents. */
#define BORROW_PIECES 4
#define BORROW_MAPPINGS 6
#define BORROW_MANY_LIVE 1024
#define BORROW_PIECE_MIN ((size_t)256 << 10)
#define BORROW_SKIP 8

/* The donor for `rest` more bytes of a block of slot size 2^k: among every size's CACHE_SCAN most recently cached
   slots with their pages (and not in skip[], slot indexes with their class in the top bits), the one committed
   least that holds `rest` (a donor given whole leaves no piece behind, and a large one stays for a large block),
   else the one committed furthest (the fewest pieces); between equals the nearest size, larger first. Its class
   (NULL: none) and *idx. Takes each class lock in turn. */
static lclass_t *donor_pick(unsigned k, size_t rest, const uint64_t *skip, unsigned nskip, uint32_t *idx) {
  lclass_t *best = NULL;
  size_t best_bytes = 0;
  unsigned best_far = 0;
  for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES; i++) {
    lclass_t *d = &classes[i];
    unsigned kd = i + MSI_HEAP_LARGE_MIN_SHIFT, far = kd >= k ? 2 * (kd - k) : 2 * (k - kd) + 1;
    if (kd > msi_heap_g.sub_shift || dense(kd) || !atomic_load_explicit(&d->ncached, memory_order_relaxed)) continue;
    msi_lock(lock_of(d));
    for (uint32_t j = d->ncached, seen = 0; j-- > 0 && seen < CACHE_SCAN; seen++) {
      uint32_t pg = meta_at(d, d->cached[j].idx)->pages;
      size_t bytes = (size_t)(pg & SLOT_PAGES) << page_shift;
      uint64_t key = (uint64_t)i << 32 | d->cached[j].idx;
      bool skipped = pg & SLOT_CLEAN;
      for (unsigned s = 0; s < nskip && !skipped; s++) skipped = skip[s] == key;
      if (skipped) continue;
      bool holds = bytes >= rest, best_holds = best_bytes >= rest;
      if (!best || (holds && !best_holds) ||
          (holds == best_holds && (holds ? bytes < best_bytes : bytes > best_bytes)) ||
          (bytes == best_bytes && far < best_far)) {
        best = d, best_bytes = bytes, best_far = far, *idx = d->cached[j].idx;
      }
    }
    msi_unlock(lock_of(d));
  }
  return best;
}

static uint32_t borrow_pages(unsigned k, uintptr_t block, uint32_t have, uint32_t npages) {
  uintptr_t to = block + ((uintptr_t)have << page_shift);
  size_t want = (size_t)npages << page_shift, got = 0;
  bool probed = !have; /* the block's own mappings are probed (system calls) only once a donor may exist */
  unsigned pieces = atomic_load_explicit(&split_live, memory_order_relaxed) < BORROW_MANY_LIVE ? BORROW_PIECES : 1;
  uint64_t skip[BORROW_SKIP];
  unsigned nskip = 0;
  uint32_t idx = 0;
  lclass_t *d;
  while (got < want && pieces && nskip < BORROW_SKIP && (d = donor_pick(k, want - got, skip, nskip, &idx))) {
    if (!probed) { /* the block's own pages and the pieces moved in: BORROW_MAPPINGS at most */
      unsigned most = pieces > 1 ? BORROW_MAPPINGS : 3, m = mappings_in(block, (size_t)have << page_shift, most);
      if (m >= most) return 0;
      if (pieces > most - m) pieces = most - m;
      probed = true;
    }
    unsigned kd = (unsigned)(d - classes) + MSI_HEAP_LARGE_MIN_SHIFT;
    msi_lock(lock_of(d));
    uint32_t j = cached_find(d, idx);
    if (j == d->ncached || (meta_at(d, idx)->pages & SLOT_CLEAN)) { /* taken or trimmed meanwhile */
      msi_unlock(lock_of(d));
      continue;
    }
    uint32_t ms = d->cached[j].ms;
    uintptr_t slot = d->base + ((uintptr_t)idx << kd);
    size_t pages = (size_t)(meta_at(d, idx)->pages & SLOT_PAGES) << page_shift;
    size_t bytes = pages < want - got ? pages : want - got;
    bytes = tail_mapping(slot + pages - bytes, bytes); /* (the class lock keeps the slot's mappings as they are) */
    if (bytes < BORROW_PIECE_MIN && bytes < want - got) { /* a piece not worth a mapping: another donor */
      msi_unlock(lock_of(d));
      skip[nskip++] = (uint64_t)(d - classes) << 32 | idx;
      continue;
    }
    size_t left = pages - bytes;
    bool clean;
    cached_remove(d, j, &clean);
    msi_unlock(lock_of(d));
    size_t moved = move_pages(slot + left, to + got, bytes);
    if (moved < bytes) { /* refused (the mapping limit): the donor's pages go back, and what moved of them */
      decommit(slot, left);
      decommit(slot + left + moved, bytes - moved);
      decommit(to + got, moved);
      left = moved = 0;
      pieces = 1;
    }
    got += moved;
    pieces--;
    msi_lock(lock_of(d));
    if (!left || !cache_put(d, idx, (uint32_t)(left >> page_shift), ms)) {
      msi_unlock(lock_of(d));
      decommit(slot, left);
      msi_lock(lock_of(d));
      slot_put_fresh(d, idx);
    }
    msi_unlock(lock_of(d));
  }
  return (uint32_t)(got >> page_shift);
}

/* The pages [have, npages) of the block at addr, in a slot of size 2^k, become usable (have 0: a fresh slot,
   `bumped` as slot_take_fresh said): other cached slots' pages where they can move in (borrow_pages), the rest
   committed; zero: the borrowed pages are cleared. A moved piece never merges with its neighbours (committed
   pages merge with committed ones before them), so pages move in only while the block's pages and the pieces
   moved in stay within BORROW_MAPPINGS mappings (three, one piece, while BORROW_MANY_LIVE split blocks or more
   live): a slot is then eight at most (five), with a commit after the moved pieces and one more after a later
   growth, plus one for each time realloc moved the block to a bigger slot (move_block moves it piece by piece
   and commits its tail, as before borrowing), and the program's mapping count stays bounded by its slots in use
   (vm.max_map_count; see LARGE_SPLIT_MAX). false + errno: refused (the pages from `have` on reserved again). */
MSI_HOT_TEXT static bool grow_pages(unsigned k, uintptr_t addr, uint32_t have, uint32_t npages, bool zero, bool bumped) {
  size_t start = (size_t)have << page_shift, need = (size_t)npages << page_shift;
  uint32_t got = dense(k) ? 0 : borrow_pages(k, addr, have, npages - have);
  size_t mid = start + ((size_t)got << page_shift);
  if (got && zero) {
    MSI_TRACK_UNDEFINED((void *)(addr + start), mid - start); /* a freed block's pages */
    memset((void *)(addr + start), 0, mid - start);
  }
  if (mid == need) return true;
  bool ok = !have && !got ? slot_commit_fresh(k, addr, need, bumped) : slot_commit(k, addr + mid, need - mid) != NULL;
  if (!ok && got) decommit(addr + start, mid - start);
  return ok;
}

/* A cached slot of the block's size or larger (above the dense sizes) whose pages hold a block of npages as they
   are: committed to npages or more, and no more than the block keeps (excess_dropped), the one committed least
   among each size's CACHE_SCAN most recently cached; taken out of the cache (*clean: see cached_remove), its
   class (NULL: none). The block lives at the start of the larger slot as in its own (any alignment of its size
   holds there): no page moves, no system call and no page fault, where its own size's cache would have it borrow
   those pages piece by piece (each piece a kernel mapping) or fault them in. Not in the secure build, whose
   guard follows the block. */
static lclass_t *cached_fit(unsigned k, uint32_t npages, uint32_t *idx, bool *clean) {
  if (MSI_HEAP_SECURE || dense(k)) return NULL;
  lclass_t *best = NULL;
  uint32_t best_have = 0;
  for (unsigned kd = k; kd <= msi_heap_g.sub_shift && kd < MSI_HEAP_LARGE_MIN_SHIFT + MSI_HEAP_LARGE_CLASSES; kd++) {
    lclass_t *d = &classes[kd - MSI_HEAP_LARGE_MIN_SHIFT];
    if (!atomic_load_explicit(&d->ncached, memory_order_relaxed)) continue;
    msi_lock(lock_of(d));
    for (uint32_t j = d->ncached, seen = 0; j-- > 0 && seen < CACHE_SCAN; seen++) {
      uint32_t pg = meta_at(d, d->cached[j].idx)->pages, have = pg & SLOT_PAGES;
      if (!(pg & SLOT_CLEAN) && have >= npages && !excess_dropped(kd, have, npages) && (!best || have < best_have))
        best = d, best_have = have, *idx = d->cached[j].idx;
    }
    msi_unlock(lock_of(d));
  }
  if (!best) return NULL;
  msi_lock(lock_of(best));
  uint32_t j = cached_find(best, *idx);
  if (j == best->ncached || meta_at(best, *idx)->pages != (SLOT_CACHED | best_have)) { /* taken meanwhile */
    msi_unlock(lock_of(best));
    return NULL;
  }
  cached_remove(best, j, clean);
  meta_at(best, *idx)->pages |= SLOT_LIVE;
  msi_unlock(lock_of(best));
  return best;
}

/* Which mechanism serves a new large block, from its slot size 2^k and the heap's state: the one decision.
     no slot of its size (past the largest slot; a region reduced by RLIMIT_AS, or none; no slot table) -> DIRECT
     a cached slot of its size or larger whose pages hold it as they are (cached_fit), else a cached slot
     of its size (its pages resident, or dropped by the trim)                                             -> CACHED
     a fresh slot: dense sizes (64 KiB-1 MiB, dense()) always, larger ones under the mapping limit      -> FRESH
     larger sizes past the mapping limit (split_full: for good), or every slot of the size taken         -> DIRECT
   DIRECT is a mapping of its own (direct.c), and so is a slot whose pages the kernel refuses afterwards
   (direct_after_refusal). realloc moves a block out of its slot by the same rules (want_cached false: pages move
   into a reserved slot, never a cached one), else into a mapping of its own (realloc_to_direct).
   CACHED: the slot is live already, *clean set; FRESH: *bumped as slot_take_fresh says. Takes c's lock. */
typedef enum { PLACE_DIRECT, PLACE_CACHED, PLACE_FRESH } place_t;
MSI_HOT_TEXT static place_t place(unsigned k, uint32_t npages, bool want_cached, lclass_t **c_out, uint32_t *idx, bool *clean,
                     bool *bumped) {
  lclass_t *c = k <= msi_heap_g.sub_shift ? &classes[k - MSI_HEAP_LARGE_MIN_SHIFT] : NULL;
  if (!c || MSI_UNLIKELY(!__atomic_load_n(&c->nslots, __ATOMIC_RELAXED))) return PLACE_DIRECT;
  /* the table's mapping before a fresh slot past table_head (table_get takes locks under a lowered RLIMIT_AS, so
     not under c's: a slot taken meanwhile by another thread may leave the fresh one without it, then DIRECT). With
     every slot taken none is fresh: the cached and free ones have their entries already */
  uint64_t bump = __atomic_load_n(&c->bump, __ATOMIC_RELAXED);
  if (bump >= TABLE_HEAD && bump < __atomic_load_n(&c->nslots, __ATOMIC_RELAXED) && MSI_UNLIKELY(!table_get()))
    return PLACE_DIRECT;
  if (want_cached && (*c_out = cached_fit(k, npages, idx, clean))) return PLACE_CACHED;
  *c_out = c;
  place_t w = PLACE_DIRECT;
  msi_lock(lock_of(c));
  if (want_cached && c->ncached) {
    *idx = cached_take(c, npages, clean);
    meta_at(c, *idx)->pages |= SLOT_LIVE;
    w = PLACE_CACHED;
  } else if (!dense(k) && split_full()) {
    /* and for good: frees in between would hand split slots to new blocks again, while the direct blocks freed
       meanwhile split the kernel's merged mappings again; a block mapped on its own fills such a hole and merges
       again, as with glibc */
    atomic_store_explicit(&split_max, 0, memory_order_relaxed);
  } else {
    int64_t i = slot_take_fresh(c, bumped);
    if (i >= 0) {
      *idx = (uint32_t)i;
      w = PLACE_FRESH;
    }
  }
  msi_unlock(lock_of(c));
  return w;
}

/* a cached slot (place: CACHED) made ready for a block of npages: committed further where short of it, its excess
   dropped where the preset says, cleared for calloc. NULL: refused (the slot free again) */
static void *cached_ready(lclass_t *c, unsigned k, uint32_t idx, uint32_t npages, bool zero, bool clean) {
  slot_meta_t *m = meta_at(c, idx);
  uint32_t have = m->pages & SLOT_PAGES;
  uintptr_t addr = c->base + ((uintptr_t)idx << k);
  if (have < npages) {
    if (!grow_pages(k, addr, have, npages, zero, false)) {
      msi_lock(lock_of(c));
      slot_decommit(k, addr, (size_t)have << page_shift);
      slot_put_fresh(c, idx);
      msi_unlock(lock_of(c));
      return NULL;
    }
  } else if ((!clean || MSI_HEAP_SECURE) && excess_dropped(k, have, npages)) {
    /* (a clean slot's pages are gone already, but the secure build's guard must follow the block) */
    slot_decommit(k, addr + ((uintptr_t)npages << page_shift), (size_t)(have - npages) << page_shift);
    have = npages;
  }
  if (zero && !clean) {
    MSI_TRACK_UNDEFINED((void *)addr, (size_t)(have < npages ? have : npages) << page_shift); /* a freed block */
    memset((void *)addr, 0, (size_t)(have < npages ? have : npages) << page_shift);
  }
  if (have < npages) have = npages;
  m->pages = SLOT_LIVE | have;
  atomic_fetch_add_explicit(&live_bytes, (uint64_t)have << page_shift, memory_order_relaxed);
  split_add(m, k);
  return (void *)addr;
}

/* A block that realloc moves out of a dense slot into the slot size 2^k, when no slot of that size is cached:
   the cached slot of the next larger dense size, 2^(k+1), with its pages, as glibc grows a block into the free
   memory beside it. Its pages past 2^k go back, so the block holds at most what a slot of its own size would
   (twice its size), and a block still growing writes the rest without a page fault where the slot's pages are
   resident (not a clean slot: its pages are gone already and stay counted, as in cached_ready). A block grown by
   small steps through the dense sizes (a Python list, a vector) would otherwise fault each size's fresh slot in
   while the larger slot a freed block left stays cached unused. Only for realloc's growth: a malloc of one size after
   frees of the next would cost an madvise per block and leave the next size's blocks to fault afresh. The
   secure build's guard follows the block: not there. NULL: no such slot (then msi_large_alloc) */
static void *grown_into_next(unsigned k, uint32_t npages) {
  if (MSI_HEAP_SECURE || !dense(k) || !dense(k + 1) || k + 1 > msi_heap_g.sub_shift) return NULL;
  lclass_t *c = &classes[k - MSI_HEAP_LARGE_MIN_SHIFT], *b = c + 1;
  if (atomic_load_explicit(&c->ncached, memory_order_relaxed) ||
      !atomic_load_explicit(&b->ncached, memory_order_relaxed))
    return NULL;
  msi_lock(lock_of(b));
  if (!b->ncached) {
    msi_unlock(lock_of(b));
    return NULL;
  }
  bool clean;
  uint32_t own = (uint32_t)(((size_t)1 << k) >> page_shift);
  uint32_t idx = cached_take(b, own, &clean); /* the slot whose pages come closest to what the block keeps */
  slot_meta_t *m = meta_at(b, idx);
  m->pages |= SLOT_LIVE;
  msi_unlock(lock_of(b));
  uint32_t have = m->pages & SLOT_PAGES;
  if (have > own && !clean) {
    slot_decommit(k + 1, b->base + ((uintptr_t)idx << (k + 1)) + ((uintptr_t)own << page_shift),
                  (size_t)(have - own) << page_shift);
    m->pages = SLOT_LIVE | own;
    have = own;
  }
  return cached_ready(b, k + 1, idx, npages > have ? npages : have, false, clean);
}

/* a fresh slot (place: FRESH) committed for a block of npages. NULL: refused (the slot free again; a dense one
   taken from the bump whose mapping failed goes back to the bump when it is still the last taken, else it is left
   out: the free list holds mapped ones only, and msi_large_release_free gives back only a size whose slots below
   the bump are all free) */
static void *fresh_ready(lclass_t *c, unsigned k, uint32_t idx, uint32_t npages, bool zero, bool bumped) {
  uintptr_t addr = c->base + ((uintptr_t)idx << k);
  if (!grow_pages(k, addr, 0, npages, zero, bumped)) {
    msi_lock(lock_of(c));
    if (!dense(k) || !bumped) slot_put_fresh(c, idx);
    else if (c->bump == (uint64_t)idx + 1) __atomic_store_n(&c->bump, idx, __ATOMIC_RELAXED);
    msi_unlock(lock_of(c));
    return NULL;
  }
  meta_at(c, idx)->pages = SLOT_LIVE | npages;
  atomic_fetch_add_explicit(&live_bytes, (uint64_t)npages << page_shift, memory_order_relaxed);
  split_add(meta_at(c, idx), k);
  return (void *)addr;
}

MSI_HOT_TEXT void *msi_large_alloc(size_t size, size_t alignment, bool zero) {
  if (size > ((size_t)1 << MSI_HEAP_LARGE_MAX_SHIFT) || alignment > ((size_t)1 << MSI_HEAP_LARGE_MAX_SHIFT)) {
    errno = ENOMEM;
    return NULL;
  }
  msi_heap_global_init();
  classes_ready();
  size_t need = msi_round_up(size ? size : 1, page_size);
  uint32_t npages = (uint32_t)(need >> page_shift), idx = 0;
  unsigned k = slot_shift_for(need + MSI_HEAP_GUARD > alignment ? need + MSI_HEAP_GUARD : alignment);
  lclass_t *c = NULL;
  bool clean = false, bumped = false;
  place_t w = place(k, npages, true, &c, &idx, &clean, &bumped);
  if (w == PLACE_DIRECT) return msi_direct_alloc(size, alignment);
  k = (unsigned)(c - classes) + MSI_HEAP_LARGE_MIN_SHIFT; /* (a cached slot may be of a larger size: cached_fit) */
  void *p = w == PLACE_CACHED ? cached_ready(c, k, idx, npages, zero, clean) : fresh_ready(c, k, idx, npages, zero, bumped);
  /* Refused: the commit limit (strict overcommit), where a mapping of its own fails too (ENOMEM), or the kernel's
     mapping limit (vm.max_map_count, 65,530): a block in a slot whose rest stays reserved is two mappings, so
     ~32,750 live blocks over 1 MiB reach it (see dense()). A block mapped where the kernel chooses merges with
     its neighbours, as glibc's and mimalloc's large blocks do, so the program goes on. */
  return p ? p : direct_after_refusal(size, alignment);
}

MSI_HOT_TEXT void msi_large_free(void *p) {
  uint32_t idx;
  lclass_t *c = slot_lookup(p, &idx);
  if (!c) msi_heap_bad_pointer(p, "free(): invalid pointer");
  msi_lock(lock_of(c));
  slot_meta_t *m = meta_at(c, idx);
  if (!(m->pages & SLOT_LIVE)) {
    msi_unlock(lock_of(c));
    msi_heap_bad_pointer(p, m->pages & SLOT_CACHED ? "free(): double free" : "free(): invalid pointer");
  }
  uint32_t have = m->pages & SLOT_PAGES;
  size_t bytes = (size_t)have << page_shift;
  atomic_fetch_sub_explicit(&live_bytes, bytes, memory_order_relaxed);
  split_sub(m->pages);
  if (cache_put(c, idx, have, msi_heap_now_ms())) {
    msi_unlock(lock_of(c));
    msi_maint_kick();
    msi_heap_maybe_purge();
    return;
  }
  m->pages = have; /* neither live nor cached: a second free is caught */
  slot_dropping(c, idx);
  msi_unlock(lock_of(c));
  slot_give_back(c, idx, bytes);
  msi_heap_maybe_purge(); /* the program holds less: the cache's budget too */
}

size_t msi_large_usable(const void *p) {
  uint32_t idx;
  lclass_t *c = slot_lookup(p, &idx);
  if (!c) return 0;
  uint32_t pg = meta_at(c, idx)->pages;
  return pg & SLOT_LIVE ? (size_t)(pg & SLOT_PAGES) << page_shift : 0;
}

/* bytes from `from`, at most `len`, that lie in one kernel mapping. Probed without side effects: growing a range
   in place by a page fails with EFAULT when the range spans mappings, else with ENOMEM (in the region a mapping
   is always followed by another one; if it did grow, into a gap, it shrinks back). O(log pages) calls. */
static size_t one_mapping(uintptr_t from, size_t len) {
  while (len > page_size) {
    void *r = msi_os_mremap_probe((void *)from, len, len + page_size);
    if (r != MAP_FAILED) msi_os_mremap(r, len + page_size, len, 0, NULL);
    if (r != MAP_FAILED || errno != EFAULT) return len;
    len = msi_round_up(len / 2, page_size);
  }
  return len;
}

/* Moves the pages of [from, from + bytes) to `to` (reserved or committed), no byte copied, and reserves each moved
   piece of `from` again. Never a hole in the region, not even for a moment: another thread's mmap (a thread
   stack) landing there would be replaced by the reservation (the maintenance thread's 256 KiB stack, say, under
   tests/reliability/stress_signal). So each piece moves with MREMAP_DONTUNMAP (its old range stays mapped, empty, until
   reserved), within one mapping (one_mapping: mremap moves within one only, and a block grown in place or moved
   before is several, the kernel not merging a moved mapping with its new neighbours; probing by a failing move
   would unmap the target first on kernels before 6.17), and at most LARGE_MOVE_PIECE at a time (the kernel charges
   a DONTUNMAP move's pages twice to the commit limit until the source goes). Kernels without MREMAP_DONTUNMAP
   (before 5.7) move plainly, with the moment's hole. Returns the bytes moved (fewer only when the kernel
   refused, errno set). */
#define LARGE_MOVE_PIECE ((size_t)64 << 20)
/* The pieces (kernel mappings) of the block a move made last: the ones it moved, then its committed tail (move_block).
   A block growing by realloc moves again and again (SQLite's and Python's growing buffers), each time one piece more;
   with this record each piece costs one probe that confirms it, where one_mapping's search halves from the whole
   length, a failed probe a step, down to a small piece. Owned by one thread at a time (hint_busy taken with an
   exchange: a thread finding it taken moves without it); a piece that no longer matches (the block changed since) is
   searched for as before. */
#define HINT_PIECES 8
static struct { uintptr_t at; uint32_t n; uint32_t pages[HINT_PIECES]; } hint;
static _Atomic bool hint_busy;

/* the length of the piece at `from` (at most len): the hint's when one probe confirms it lies in one mapping */
static size_t piece_at(uintptr_t from, size_t len, size_t hinted) {
  if (hinted && hinted < len) {
    void *r = msi_os_mremap_probe((void *)from, hinted, hinted + page_size);
    if (r != MAP_FAILED) msi_os_mremap(r, hinted + page_size, hinted, 0, NULL);
    if (r != MAP_FAILED || errno != EFAULT) return hinted;
  }
  return one_mapping(from, len);
}

static size_t move_pages(uintptr_t from, uintptr_t to, size_t bytes) {
  static _Atomic int plain; /* MREMAP_DONTUNMAP refused with EINVAL once */
  size_t done = 0;
  bool own = !atomic_exchange_explicit(&hint_busy, true, memory_order_acquire);
  uint32_t used = 0, n = own && hint.at == from ? hint.n : 0, made = 0, pages[HINT_PIECES];
  while (done < bytes) {
    size_t rest = bytes - done < LARGE_MOVE_PIECE ? bytes - done : LARGE_MOVE_PIECE;
    uint32_t used_before = used;
    size_t len = piece_at(from + done, rest, used < n ? (size_t)hint.pages[used++] << page_shift : 0);
    if (made < HINT_PIECES) pages[made] = (uint32_t)(len >> page_shift);
    made++;
    int flags = MREMAP_MAYMOVE | MREMAP_FIXED | (atomic_load_explicit(&plain, memory_order_relaxed) ? 0 : MREMAP_DONTUNMAP);
    void *r = msi_os_mremap((void *)(from + done), len, len, flags, (void *)(to + done));
    if (r == MAP_FAILED && errno == EINVAL && (flags & MREMAP_DONTUNMAP)) {
      atomic_store_explicit(&plain, 1, memory_order_relaxed);
      used = used_before, made--; /* the same piece again, moved plainly */
      continue;
    }
    if (r == MAP_FAILED) {
      int e = errno;
      reserve(to + done, len); /* a refused move may have unmapped its target already */
      if (own) { /* the record no longer matches any block; the next move may make one */
        hint.at = 0;
        atomic_store_explicit(&hint_busy, false, memory_order_release);
      }
      errno = e;
      return done;
    }
    reserve(from + done, len);
    done += len;
  }
  if (own) {
    hint.at = made <= HINT_PIECES && done == bytes ? to : 0;
    hint.n = made <= HINT_PIECES ? made : 0;
    msi_memcpy(hint.pages, pages, hint.n * sizeof pages[0]);
    atomic_store_explicit(&hint_busy, false, memory_order_release);
  }
  return done;
}

/* the block at `at` (whose pieces a move just recorded) has a tail committed after them: a piece more */
static void hint_tail(uintptr_t at, size_t bytes) {
  if (atomic_exchange_explicit(&hint_busy, true, memory_order_acquire)) return;
  if (hint.at == at && hint.n < HINT_PIECES) hint.pages[hint.n++] = (uint32_t)(bytes >> page_shift);
  else hint.at = 0;
  atomic_store_explicit(&hint_busy, false, memory_order_release);
}

/* after move_pages moved the first `moved` bytes of the block [p, p + old) to [d, d + moved) and the kernel refused
   the rest (near vm.max_map_count it refuses every move): the rest is copied, as glibc does, into [d + moved,
   d + len) made writable again first (move_pages reserved the refused piece; whole mappings to the end: no split,
   no new mapping). Moving the moved pieces back could be refused as well, so they stay where they went.
   false: nothing had moved and d could not be made writable again (the block unchanged) */
static bool copy_rest(void *d, void *p, size_t moved, size_t old, size_t len) {
  if (msi_os_mprotect((char *)d + moved, len - moved, PROT_READ | PROT_WRITE) != 0) {
    if (!moved) return false;
    msi_fatal("realloc(): the kernel refused to move a block of %zu bytes at %p and to restore its new mapping",
              old, p);
  }
  MSI_HEAP_VG_QUIET(msi_memcpy((char *)d + moved, (char *)p + moved, old - moved));
  reserve((uintptr_t)p + moved, old - moved);
  return true;
}

/* moves a block of `old_bytes` at `from` into the reserved slot at `to`, committed to `new_bytes` (its tail first,
   then the pages move; `from` is reserved again; what the kernel refuses to move once some pieces moved is
   copied). MAP_FAILED (errno ENOMEM) when the kernel refused the tail or the first move (commit limit, out of
   mappings): the block is where it was and `to` reserved. */
static void *move_block(uintptr_t from, uintptr_t to, size_t old_bytes, size_t new_bytes) {
  if (!commit(to + old_bytes, new_bytes - old_bytes)) return MAP_FAILED;
  size_t moved = move_pages(from, to, old_bytes);
  if (moved == old_bytes) {
    hint_tail(to, new_bytes - old_bytes);
    return (void *)to;
  }
  if (moved) { /* some pieces moved: the rest is copied (moving them back could be refused as well) */
    copy_rest((void *)to, (void *)from, moved, old_bytes, new_bytes);
    return (void *)to;
  }
  decommit(to + old_bytes, new_bytes - old_bytes);
  errno = ENOMEM;
  return MAP_FAILED;
}

/* Moves the block [p, p + old) into the fresh read-write mapping [d, d + len) (len >= old): its pages, no byte
   copied (move_pages: piecewise, each source piece reserved again); what the kernel refuses to move (the mapping
   limit), all of it or a rest, is copied (copy_rest) and its range reserved again. false: nothing moved and d
   could not be made writable again (the block unchanged; the caller unmaps d). */
bool msi_large_move_into(void *d, void *p, size_t old, size_t len) {
  size_t moved = move_pages((uintptr_t)p, (uintptr_t)d, old);
  return moved == old || copy_rest(d, p, moved, old, len);
}

/* A block that leaves its slot when the slots are out (every slot of the size taken, direct blocks only from now
   on, or the mapping limit) moves into a mapping of its own where the kernel chooses (direct.c), as glibc's
   mremap does: a copy would commit every page of a block that may be sparse (sparse blocks grown past the slots
   of their size would each take their whole size in RAM; glibc's move keeps them sparse). NULL + ENOMEM (the
   block where it was) when no mapping can be made. */
static void *move_to_direct(void *p, size_t old_bytes, size_t size) {
  void *d = msi_direct_alloc(size, 0);
  if (!d || msi_large_move_into(d, p, old_bytes, msi_round_up(size, page_size))) return d;
  msi_direct_free(d);
  errno = ENOMEM;
  return NULL;
}

/* a live block's slot after its pages moved out (its range reserved again by the move) */
static void slot_vacate(lclass_t *c, uint32_t idx, uint32_t have) {
  atomic_fetch_sub_explicit(&live_bytes, (uint64_t)have << page_shift, memory_order_relaxed);
  count_decommit((size_t)have << page_shift);
  split_sub(meta_at(c, idx)->pages);
  msi_lock(lock_of(c));
  slot_put_fresh(c, idx);
  msi_unlock(lock_of(c));
}

/* a block leaving its slot for a mapping of its own (move_to_direct), or NULL */
static void *realloc_to_direct(lclass_t *c, uint32_t idx, unsigned k, uint32_t have, size_t size) {
  void *q = move_to_direct((void *)(c->base + ((uintptr_t)idx << k)), (size_t)have << page_shift, size);
  if (q) slot_vacate(c, idx, have);
  return q;
}

/* realloc by a copy into `q` (NULL: refused, p unchanged) */
static void *by_copy(void *p, size_t old_bytes, size_t size, void *q) {
  if (!q) return NULL;
  MSI_HEAP_VG_QUIET(msi_memcpy(q, p, old_bytes < size ? old_bytes : size)); /* committed pages beyond the block too */
  msi_large_free(p);
  return q;
}

void *msi_large_realloc(void *p, size_t size) {
  uint32_t idx;
  lclass_t *c = slot_lookup(p, &idx);
  if (!c || !(meta_at(c, idx)->pages & SLOT_LIVE)) msi_heap_bad_pointer(p, "realloc(): invalid pointer");
  if (size > ((size_t)1 << MSI_HEAP_LARGE_MAX_SHIFT)) { errno = ENOMEM; return NULL; }
  unsigned k = (unsigned)(c - classes) + MSI_HEAP_LARGE_MIN_SHIFT;
  size_t need = msi_round_up(size, page_size);
  uint32_t npages = (uint32_t)(need >> page_shift), have = meta_at(c, idx)->pages & SLOT_PAGES;
  uintptr_t addr = (uintptr_t)p;
  if (need + MSI_HEAP_GUARD <= ((size_t)1 << k)) { /* in place inside the slot */
    if (npages > have) {
      if (!slot_commit(k, addr + ((uintptr_t)have << page_shift), (size_t)(npages - have) << page_shift))
        return realloc_to_direct(c, idx, k, have, size); /* refused: the mapping limit */
    } else if (have - npages >= 16 && have - npages >= have / 4 && !live_keeps(k, have, npages)) {
      slot_decommit(k, addr + ((uintptr_t)npages << page_shift), (size_t)(have - npages) << page_shift);
    } else {
      return p; /* what is committed stays usable */
    }
    meta_at(c, idx)->pages = (meta_at(c, idx)->pages & SLOT_SPLIT) | SLOT_LIVE | npages;
    atomic_fetch_add_explicit(&live_bytes, (uint64_t)npages << page_shift, memory_order_relaxed);
    atomic_fetch_sub_explicit(&live_bytes, (uint64_t)have << page_shift, memory_order_relaxed);
    return p;
  }
  if (dense(k)) { /* <= 1 MiB */
    void *q = grown_into_next(slot_shift_for(need + MSI_HEAP_GUARD), npages);
    return by_copy(p, (size_t)have << page_shift, size, q ? q : msi_large_alloc(size, 0, false));
  }
  /* move to a bigger slot with mremap: the pages move, nothing is copied (move_block). The new slot is committed
     whole, so further growth inside it needs no system call. Only the pages touched count in RSS. */
  unsigned k2 = slot_shift_for(need + MSI_HEAP_GUARD);
  uint32_t idx2 = 0;
  lclass_t *c2 = NULL;
  bool clean, bumped;
  if (place(k2, 0, false, &c2, &idx2, &clean, &bumped) == PLACE_DIRECT)
    return realloc_to_direct(c, idx, k, have, size); /* no slot for it: see place() */
  uintptr_t addr2 = c2->base + ((uintptr_t)idx2 << k2);
  size_t old_bytes = (size_t)have << page_shift, new_bytes = ((size_t)1 << k2) - MSI_HEAP_GUARD;
  void *q = move_block(addr, addr2, old_bytes, new_bytes);
  if (q == MAP_FAILED) { /* the whole slot refused (commit limit): just what is needed */
    new_bytes = need;
    q = move_block(addr, addr2, old_bytes, new_bytes);
  }
  if (q == MAP_FAILED) { /* refused: the commit limit, or the mapping limit */
    msi_lock(lock_of(c2));
    slot_put_fresh(c2, idx2);
    msi_unlock(lock_of(c2));
    return realloc_to_direct(c, idx, k, have, size);
  }
  atomic_fetch_add_explicit(&live_bytes, new_bytes - old_bytes, memory_order_relaxed);
  meta_at(c2, idx2)->pages = (meta_at(c, idx)->pages & SLOT_SPLIT) | SLOT_LIVE | (uint32_t)(new_bytes >> page_shift);
  msi_lock(lock_of(c));
  slot_put_fresh(c, idx);
  msi_unlock(lock_of(c));
  return q;
}

size_t msi_large_purge(uint64_t now_ms, uint32_t delay, bool force) {
  uint32_t now = (uint32_t)now_ms;
  size_t total = 0;
  for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES; i++) {
    lclass_t *c = &classes[i];
    uint32_t old[CACHE_MAX], n = CACHE_MAX;
    size_t bytes[CACHE_MAX];
    /* the entries are oldest first: those aged are a prefix, taken CACHE_MAX at a time */
    while (n == CACHE_MAX && atomic_load_explicit(&c->ncached, memory_order_relaxed)) {
      msi_lock(lock_of(c));
      for (n = 0; n < c->ncached && n < CACHE_MAX && (force || now - c->cached[n].ms >= delay); n++) {}
      cached_cut(c, n, old, bytes);
      msi_unlock(lock_of(c));
      for (uint32_t j = 0; j < n; j++) total += slot_drop_cached(c, old[j], bytes[j]);
    }
  }
  return total;
}

MSI_HOT_TEXT uint64_t msi_large_live_bytes(void) { return atomic_load_explicit(&live_bytes, memory_order_relaxed) + msi_direct_bytes(); }
MSI_HOT_TEXT uint64_t msi_large_dirty_bytes(void) { return atomic_load_explicit(&dirty_bytes, memory_order_relaxed); }
uint64_t msi_large_cached_bytes(void) { return atomic_load_explicit(&cached_bytes, memory_order_relaxed); }

/* the class of the longest-cached slot whose pages were not dropped (*j_out: its entry), or NULL; takes each
   class lock in turn */
static lclass_t *oldest_dirty(uint32_t now, uint32_t *j_out) {
  lclass_t *best = NULL;
  uint32_t best_age = 0;
  for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES; i++) {
    lclass_t *c = &classes[i];
    if (!atomic_load_explicit(&c->ncached, memory_order_relaxed)) continue;
    msi_lock(lock_of(c));
    uint32_t j = 0; /* entries are oldest first */
    while (j < c->ncached && (meta_at(c, c->cached[j].idx)->pages & SLOT_CLEAN)) j++;
    if (j < c->ncached && (!best || now - c->cached[j].ms > best_age)) {
      best = c;
      best_age = now - c->cached[j].ms;
      *j_out = j;
    }
    msi_unlock(lock_of(c));
  }
  return best;
}

/* Drops the pages of the longest-cached slots until at most `keep` cached bytes hold pages. The slots stay
   cached, committed: reusing one needs no system call, only the page faults of a fresh block (and calloc no
   memset), and a cache of barely touched blocks costs an madvise each, not a decommit and a commit (a churn of
   blocks of 1 B-16 MiB touching one page each would otherwise make two system calls per reuse). Pages
   the kernel will not drop (mlock) go back with their slot, and so does every slot when every page is charged
   (charged(): a kept slot would keep its commit charge, which later allocations may need). */
void msi_large_trim(uint64_t keep) {
  uint32_t now = msi_heap_now_ms(), j = 0;
  lclass_t *c;
  while (atomic_load_explicit(&dirty_bytes, memory_order_relaxed) > keep && (c = oldest_dirty(now, &j))) {
    unsigned k = (unsigned)(c - classes) + MSI_HEAP_LARGE_MIN_SHIFT;
    msi_lock(lock_of(c));
    if (j >= c->ncached || (meta_at(c, c->cached[j].idx)->pages & SLOT_CLEAN)) { /* changed meanwhile */
      msi_unlock(lock_of(c));
      continue;
    }
    uint32_t idx = c->cached[j].idx;
    size_t bytes = (size_t)(meta_at(c, idx)->pages & SLOT_PAGES) << page_shift;
    if (!charged() && msi_os_madvise((void *)(c->base + ((uintptr_t)idx << k)), bytes, MADV_DONTNEED) == 0) {
      meta_at(c, idx)->pages |= SLOT_CLEAN;
      atomic_fetch_sub_explicit(&dirty_bytes, bytes, memory_order_relaxed);
      msi_unlock(lock_of(c));
      atomic_fetch_add_explicit(&msi_heap_counters.returned_bytes, bytes, memory_order_relaxed);
      continue;
    }
    bool clean;
    cached_remove(c, j, &clean);
    slot_dropping(c, idx);
    msi_unlock(lock_of(c));
    slot_drop_cached(c, idx, bytes);
  }
}

/* statistics: heap_mapped_peak_bytes, kept at each commit (a system call: the note costs nothing beside it) */
MSI_START_BSS _Atomic uint64_t msi_heap_mapped_peak;
MSI_HOT_TEXT void msi_heap_mapped_peak_note(void) {
  uint64_t m = atomic_load_explicit(&msi_heap_counters.segments, memory_order_relaxed) * MSI_HEAP_SEG_SIZE +
               atomic_load_explicit(&committed_bytes, memory_order_relaxed);
  uint64_t p = atomic_load_explicit(&msi_heap_mapped_peak, memory_order_relaxed);
  while (m > p && !atomic_compare_exchange_weak_explicit(&msi_heap_mapped_peak, &p, m, memory_order_relaxed,
                                                         memory_order_relaxed)) {}
}

void msi_large_stats(uint64_t *allocated, uint64_t *cached, uint64_t *committed) {
  uint64_t direct = msi_direct_bytes();
  *allocated = atomic_load_explicit(&live_bytes, memory_order_relaxed) + direct;
  *cached = atomic_load_explicit(&cached_bytes, memory_order_relaxed);
  *committed = atomic_load_explicit(&committed_bytes, memory_order_relaxed) + direct;
}

bool msi_large_kept(const void *p) {
  unsigned i = (unsigned)(((uintptr_t)p - msi_heap_g.large_base) >> msi_heap_g.sub_shift);
  const lclass_t *c = &classes[i];
  return ((uintptr_t)p - c->base) >> (MSI_HEAP_LARGE_MIN_SHIFT + i) < __atomic_load_n(&c->nslots, __ATOMIC_ACQUIRE);
}

/* Gives back each class's sub-region beyond the slots it ever took (its bump: the slots below stay reserved, in
   use, cached or free), and their entries of the slot table. From then on the class takes no slot there, and an
   address there is not the heap's: a direct block, or any mapping, may land in it (msi_large_kept). Returns the
   bytes given back. Takes each class lock in turn. */
size_t msi_large_release_unused(void) {
  size_t total = 0;
  classes_ready(); /* (a class set up later would take its whole sub-region again) */
  slot_meta_t *t = atomic_load_explicit(&table, memory_order_acquire);
  for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES; i++) {
    lclass_t *c = &classes[i];
    unsigned k = MSI_HEAP_LARGE_MIN_SHIFT + i;
    msi_lock(lock_of(c));
    uint64_t keep = c->bump, had = c->nslots;
    if (c->mapped > keep) c->mapped = keep; /* (unmapped below) */
    if (keep < had) {
      atomic_store_explicit(&msi_heap_g.large_trimmed, true, memory_order_release);
      __atomic_store_n(&c->nslots, keep, __ATOMIC_RELEASE); /* before the range can hold another mapping */
      uintptr_t from = c->base + ((uintptr_t)keep << k);
      size_t len = (size_t)(had - keep) << k;
      if (msi_os_munmap((void *)from, len) == 0) total += len;
      if (t && had > TABLE_HEAD) { /* the table's pages wholly of the given-back slots */
        uintptr_t a = msi_align_up((uintptr_t)meta_at(c, keep > TABLE_HEAD ? keep : TABLE_HEAD), page_size);
        uintptr_t b = msi_align_down((uintptr_t)meta_at(c, had), page_size);
        if (a < b && msi_os_munmap((void *)a, b - a) == 0) total += b - a;
      }
    }
    msi_unlock(lock_of(c));
  }
  uintptr_t place = atomic_exchange_explicit(&table_place, 0, memory_order_relaxed); /* a table never made */
  if (place && msi_os_munmap((void *)place, table_bytes) == 0) total += table_bytes;
  return total;
}

/* A dense size's free slots stay mapped read-write, their pages dropped (slot_decommit), and RLIMIT_DATA charges
   every read-write private mapping, resident or not: a program that freed all its blocks of 100 KB would keep
   that whole mapping charged, and a block of another size would be refused (a commit refused:
   msi_heap_release_idle).
   Here a dense size none of whose slots is live or cached (every slot below its bump is on its free list) goes
   back whole: its range reserved again (PROT_NONE, no charge), its bump and free list emptied, so that its next
   block maps a batch afresh (dense_batch). A size with a block live or cached keeps its mapping (a slot given
   back alone would split it: see dense()). When the refusal is RLIMIT_DATA lowered since its first read
   (data_limit_lowered: dense slots off from then on), every dense size's free slots and mapped slots not taken
   yet are reserved again one by one, whatever is live. Returns the bytes given back (a range the kernel would not
   reserve again, its pages dropped only, still charged, is not counted). Takes each class lock in turn;
   O(slots taken). */
size_t msi_large_release_free(void) {
  size_t total = 0;
  if (!atomic_load_explicit(&classes_set, memory_order_acquire)) return 0;
  bool lowered = data_limit_lowered();
  for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES; i++) {
    lclass_t *c = &classes[i];
    unsigned k = MSI_HEAP_LARGE_MIN_SHIFT + i;
    if (!(lowered ? dense_size(k) : dense(k)) || !__atomic_load_n(&c->bump, __ATOMIC_RELAXED))
      continue;
    msi_lock(lock_of(c));
    uint64_t top = c->mapped > c->bump ? c->mapped : c->bump, nfree = 0;
    if (lowered) { /* (the class lock keeps the free list's slots unused: a slot taken commits afresh) */
      for (uint32_t f = c->free_head; f; f = meta_at(c, f - 1)->link)
        if (reserve(c->base + ((uintptr_t)(f - 1) << k), (size_t)1 << k)) total += (size_t)1 << k;
      if (top > c->bump && reserve(c->base + ((uintptr_t)c->bump << k), (size_t)(top - c->bump) << k))
        total += (size_t)(top - c->bump) << k;
      c->mapped = 0;
      msi_unlock(lock_of(c));
      continue;
    }
    for (uint32_t f = c->free_head; f && nfree <= c->bump; f = meta_at(c, f - 1)->link) nfree++;
    /* (refused, the slots stay as they are, free and mapped, their pages dropped: a later pass tries again) */
    if (top && !c->ncached && nfree == c->bump && reserve(c->base, (size_t)top << k)) {
      total += (size_t)top << k;
      for (uint64_t j = 0; j < c->bump; j++) *meta_at(c, j) = (slot_meta_t){0, 0};
      c->free_head = 0;
      c->mapped = 0;
      __atomic_store_n(&c->bump, 0, __ATOMIC_RELAXED); /* (place reads it without the lock) */
    }
    msi_unlock(lock_of(c));
  }
  return total;
}

/* what msi_large_release_free and a forced purge could give back at most: the cached slots' committed bytes and
   the dense sizes' slots taken (a bound: read without the locks) */
uint64_t msi_large_held_bytes(void) {
  uint64_t total = atomic_load_explicit(&cached_bytes, memory_order_relaxed);
  if (!atomic_load_explicit(&classes_set, memory_order_acquire)) return total;
  for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES; i++) {
    unsigned k = MSI_HEAP_LARGE_MIN_SHIFT + i;
    if (dense(k)) total += __atomic_load_n(&classes[i].bump, __ATOMIC_RELAXED) << k;
  }
  return total;
}

void msi_large_lock_all(void) {
  for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES; i++) msi_lock(lock_of(&classes[i]));
  msi_direct_lock();
}
void msi_large_unlock_all(bool child) {
  if (child && atomic_load_explicit(&dropping_n, memory_order_relaxed) && !dropping_here) dropping_finish();
  msi_direct_unlock(child);
  for (unsigned i = 0; i < MSI_HEAP_LARGE_CLASSES; i++) {
    if (child) msi_lock_reset(lock_of(&classes[i]));
    else msi_unlock(lock_of(&classes[i]));
  }
}
