/* SPDX-License-Identifier: MIT */
/* route.c: the front door (route.h, docs/design.md). Every malloc-family call enters here, from the override
   layer and the ms_* API alike, and goes to exactly one part:

     allocation: route_of(size)  -> spill (reaching the threshold) | the process space (when set) | the heap
     pointer:    owner_of(p)     -> heap | spill | space (their reservations) | else the heap's direct blocks,
                                    else foreign (the C library's)

   The heap is a leaf (src/heap/entry.h): it serves its own blocks and never calls back here. A block changing
   owner in realloc moves through route_move alone. The options that change the routing (ms_option_set) re-read
   it in msi_option_changed.

   Statistics at exit asked for at start (MEMSPACE_SHOW_STATS) set MSI_ROUTE_COUNT: every malloc-family call then
   takes the slow paths, which count it (the [malloc] section); without it the fast paths are those of a program
   that counts nothing, instruction for instruction. */
#include "route.h"
#include "route_fast.h"
#include <errno.h>
#include <string.h>

/* MSI_ROUTE_START until the first allocation, which takes the slow path: it reads the options if msi_init has
   not yet (an allocation from another library's constructor), so the first block is routed and counted as they
   say, and initialises the heap before the fast path first reads its tables (written first, their page takes one
   fault, not a read of the zero page and then a copy). The bit is cleared with release and the mask loaded with
   acquire (free on x86): a thread that sees it clear also sees the tables another thread wrote */
_Atomic unsigned msi_route_mask = MSI_ROUTE_START;

/* malloc's and calloc's fast test in one compare (route_fast.h): requests below small_below are small blocks of the
   heap. MSI_HEAP_SMALL_REQ + 1 while the mask is 0, the smaller of that and the spill threshold while spill alone is
   routed, else 0 (every request takes the slow path). Set after each change of the mask or of the threshold
   (small_below_sync), with the same release/acquire pairing as the mask. free_base: below (msi_free) */
#define FREE_NEVER ((uintptr_t)0xf << 60)
msi_route_fast_t msi_route_fast = {0, FREE_NEVER};

/* small_below under mask m. With spill alone routed (a threshold or auto; no space, nothing counted) a request
   below both the heap's small blocks' limit and the threshold goes to the heap's small blocks whatever spill
   would decide, so the fast path serves it as without spill (the routed path costs a small malloc several times
   its instructions: msi_route_alloc, alloc_routed, alloc_in, the threshold, the heap's general entry) */
static size_t small_below_of(unsigned m) {
  size_t small = (size_t)MSI_HEAP_SMALL_REQ + 1;
  if (!m) return small;
  if (m != MSI_ROUTE_SPILL) return 0;
  size_t t = msi_spill_threshold();
  return t && t < small ? t : small;
}

/* small_below from the mask: stored again until the mask is the one it was computed from (a writer racing another
   sees the other's mask on its check and stores again: the last store follows the last mask) */
MSI_HOT_TEXT static void small_below_sync(void) {
  unsigned m;
  do {
    m = atomic_load_explicit(&msi_route_mask, memory_order_acquire);
    atomic_store_explicit(&msi_route_fast.small_below, small_below_of(m), memory_order_release);
  } while (atomic_load_explicit(&msi_route_mask, memory_order_acquire) != m);
}

size_t msi_route_small_below(void) { return atomic_load_explicit(&msi_route_fast.small_below, memory_order_acquire); }

MSI_HOT_TEXT void msi_route_init(void) {
  unsigned old = atomic_load_explicit(&msi_route_mask, memory_order_acquire), mask = old & MSI_ROUTE_START;
  if (msi_opt(MS_OPTION_SPILL_THRESHOLD) != 0) mask |= MSI_ROUTE_SPILL; /* a size, or auto */
  if (msi_opt(MS_OPTION_SPACE_INITIAL) > 0) mask |= MSI_ROUTE_SPACE;
  /* counting is decided before the first allocation: counts begun later would miss the blocks already live */
  if (old & MSI_ROUTE_START ? msi_opt(MS_OPTION_SHOW_STATS) != 0 : (old & MSI_ROUTE_COUNT) != 0) mask |= MSI_ROUTE_COUNT;
  if (mask != old) atomic_store_explicit(&msi_route_mask, mask, memory_order_relaxed);
  small_below_sync();
}

static void free_base_reset(void);
void msi_option_changed(ms_option_t o) {
  switch (o) {
  case MS_OPTION_SPILL_THRESHOLD:
  case MS_OPTION_SPACE_INITIAL: msi_route_init(); break;
  case MS_OPTION_CACHE: msi_heap_options_changed(); break;
  case MS_OPTION_SECURE:
    msi_heap_options_changed();
    free_base_reset(); /* free's fast test never passes while the heap's extra checks are on */
    break;
  default: break; /* read where they are used: on each call, or when a space, frame or buffer is created */
  }
}

/* ------------------------------------------------------------------------------------------------------------ */
/* the two decisions                                                                                            */
/* ------------------------------------------------------------------------------------------------------------ */

typedef enum { OWNER_HEAP, OWNER_SPILL, OWNER_SPACE, OWNER_OTHER } owner_t;

/* the spill threshold in force under `mask` (0: spill off; under auto the smallest block auto may spill) */
static inline size_t spill_threshold(unsigned mask) { return mask & MSI_ROUTE_SPILL ? msi_spill_threshold() : 0; }

/* The one spill predicate: a request of `size` bytes that grows the process by `grow` bytes (a realloc: the
   difference) goes to spill. A fixed threshold decides by size alone; auto (MEMSPACE_SPILL_THRESHOLD=auto) asks
   spill's budget for blocks from its minimum up (src/spill/budget.c): smaller blocks pay one compare. */
static inline bool spill_wants(size_t size, size_t grow, unsigned mask) {
  size_t t = spill_threshold(mask);
  return t && size >= t && (!msi_spill_auto() || msi_spill_auto_wants(grow));
}

/* where a request of `size` bytes goes (mask: msi_route_mask, loaded once by the caller) */
static inline owner_t route_of(size_t size, unsigned mask) {
  if (spill_wants(size, size, mask)) return OWNER_SPILL;
  return mask & MSI_ROUTE_SPACE ? OWNER_SPACE : OWNER_HEAP;
}

/* The one ownership lookup: which part's reservation holds p. Three O(1) lock-free range checks over disjoint
   reservations (the heap's small and large areas inline, then spill's and the process space's); OWNER_OTHER is a
   direct heap block (its own mapping, looked up by the heap), a foreign pointer, or NULL. */
static inline owner_t owner_of(const void *p) {
  if (msi_heap_region_has(p)) return OWNER_HEAP;
  if (msi_spill_owns(p)) return OWNER_SPILL;
  if (msi_proc_space_owns(p)) return OWNER_SPACE;
  return OWNER_OTHER;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* allocation, free                                                                                             */
/* ------------------------------------------------------------------------------------------------------------ */

/* ---- the counts (MSI_ROUTE_COUNT) ---- */

/* per-thread counts: each thread takes a slot of its own at its first counted call (the last slot is shared by
   the threads past the others); a slot outlives its thread, so the sums at exit include every thread's calls */
typedef struct { _Alignas(MSI_CACHE_LINE) _Atomic uint64_t allocs, callocs, reallocs, frees; } tally_t;
#define TALLIES 128
MSI_COLD_BSS static tally_t tallies[TALLIES];
static _Atomic unsigned tallies_taken;
static _Thread_local tally_t *my_tally;
/* the usable bytes of the live blocks counted, and the most there were: one counter in a single order of
   changes, so the peak is exact (a realloc is one change: old size to new) */
static _Atomic int64_t live_bytes, peak_bytes;

static tally_t *tally(void) {
  tally_t *t = my_tally;
  if (MSI_UNLIKELY(!t)) {
    unsigned i = atomic_fetch_add_explicit(&tallies_taken, 1, memory_order_relaxed);
    my_tally = t = &tallies[i < TALLIES ? i : TALLIES - 1];
  }
  return t;
}

static void add_live(int64_t delta) {
  int64_t now = atomic_fetch_add_explicit(&live_bytes, delta, memory_order_relaxed) + delta;
  int64_t peak = atomic_load_explicit(&peak_bytes, memory_order_relaxed);
  while (now > peak && !atomic_compare_exchange_weak_explicit(&peak_bytes, &peak, now, memory_order_relaxed,
                                                              memory_order_relaxed)) {
  }
}

static void count(_Atomic uint64_t *counter) { atomic_fetch_add_explicit(counter, 1, memory_order_relaxed); }

/* ---- allocation ---- */

/* where a request goes under `mask` (nothing counted). Spill answers NULL + errno 0 when it is unusable (no
   directory...): the request is then served from RAM. The caller's errno is kept when spill serves it (C: no
   library function sets errno to zero) */
MSI_HOT_TEXT static void *alloc_in(size_t size, size_t alignment, bool zero, unsigned mask) {
  if (MSI_UNLIKELY(mask & (MSI_ROUTE_SPILL | MSI_ROUTE_SPACE))) {
    if (route_of(size, mask) == OWNER_SPILL) {
      int saved = errno;
      errno = 0;
      void *p = msi_spill_malloc(size, alignment < 16 ? 16 : alignment, zero);
      if (p) errno = saved;
      if (p || errno == ENOMEM) return p;
      errno = saved;
    }
    if (mask & MSI_ROUTE_SPACE) return msi_proc_space_malloc(size, alignment < 16 ? 16 : alignment, zero);
  }
  return msi_heap_alloc(size, alignment, zero);
}

static size_t usable_ours(const void *p);

/* The start of the heap's small area as free's fast test sees it: the heap's (msi_heap_g.base), copied at the
   first allocation (first_alloc) or by the first free of a small block that finds it not yet copied; FREE_NEVER
   while calls are counted, so that every free takes the slow path, which counts it, and while the heap's extra
   checks are on (msi_heap_checks: MEMSPACE_SECURE=1, debug builds), so that the fast path needs no test of them.
   p - FREE_NEVER is at least 2^60 for any user-space address, past any small top.
   The fast test reads it as a plain word, so that it stays one subtraction from memory as the heap's own test is;
   it changes from FREE_NEVER to the base (and back while the checks are switched on), and either value gives a
   right answer. The heap's small top likewise, a compare with memory: it only grows, and a stale value sends a
   block of a new segment to free_slow, which is right too (ThreadSanitizer builds read both atomically). */
#if defined(__SANITIZE_THREAD__)
#define FREE_BASE() __atomic_load_n(&msi_route_fast.free_base, __ATOMIC_RELAXED)
#define FREE_TOP() atomic_load_explicit(&msi_heap_g.small_top, memory_order_relaxed)
#else
#define FREE_BASE() msi_route_fast.free_base
#define FREE_TOP() (*(const uintptr_t *)&msi_heap_g.small_top)
#endif

/* the first allocation: the options read, the heap initialised when it serves (route_of: without a process space;
   with spill it serves what stays below the threshold, small requests through the fast path), free's fast test
   given the heap's base when calls are not counted */
static MSI_NOINLINE MSI_COLD unsigned first_alloc(void) {
  msi_init();
  unsigned mask = atomic_load_explicit(&msi_route_mask, memory_order_acquire);
  if (!(mask & MSI_ROUTE_SPACE)) {
    msi_heap_global_init();
    if (msi_heap_g.ready && !(mask & MSI_ROUTE_COUNT) && !msi_heap_checks)
      __atomic_store_n(&msi_route_fast.free_base, msi_heap_g.base, __ATOMIC_RELAXED);
  }
  atomic_fetch_and_explicit(&msi_route_mask, ~MSI_ROUTE_START, memory_order_release);
  small_below_sync();
  return mask & ~MSI_ROUTE_START;
}

/* a request under a non-zero mask: the first allocation's work, then the call counted when asked */
static MSI_NOINLINE MSI_COLD void *alloc_routed(size_t size, size_t alignment, bool zero, unsigned mask) {
  if (mask & MSI_ROUTE_START) mask = first_alloc();
  void *p = alloc_in(size, alignment, zero, mask);
  if (p && (mask & MSI_ROUTE_COUNT)) {
    tally_t *t = tally();
    count(&t->allocs);
    if (zero) count(&t->callocs);
    add_live((int64_t)usable_ours(p));
  }
  return p;
}

/* any request but the small one with nothing routed (route_fast.h) */
MSI_HOT_TEXT MSI_NOINLINE void *msi_route_alloc(size_t size, size_t alignment, bool zero) {
  /* no object is larger than PTRDIFF_MAX: refused here, before any part rounds the size up (past 2^64 it would
     wrap to a small block) */
  if (MSI_UNLIKELY(size > PTRDIFF_MAX || alignment > PTRDIFF_MAX)) { errno = ENOMEM; return NULL; }
  unsigned mask = atomic_load_explicit(&msi_route_mask, memory_order_acquire);
  if (MSI_UNLIKELY(mask)) return alloc_routed(size, alignment, zero, mask);
  return msi_heap_alloc(size, alignment, zero);
}

/* every pointer but a small heap block's (NULL included); nothing counted */
MSI_HOT_TEXT static void route_free(void *p) {
  switch (owner_of(p)) {
  case OWNER_HEAP: msi_heap_free(p); return;
  case OWNER_SPILL: msi_spill_free(p); return;
  case OWNER_SPACE: msi_proc_space_free(p); return;
  case OWNER_OTHER:
    if (p && !msi_heap_free_direct(p)) msi_foreign_free(p);
    return;
  }
}


static MSI_NOINLINE MSI_COLD void free_counted(void *p) {
  size_t size = usable_ours(p); /* 0: not a live block of ours (foreign, or freed: the part reports it) */
  if (size) {
    count(&tally()->frees);
    add_live(-(int64_t)size);
  }
  route_free(p);
}

/* every pointer but a small heap block whose base the fast test knows */
MSI_HOT_TEXT static MSI_NOINLINE void free_slow(void *p) {
  if (!p) return;
  if (MSI_UNLIKELY(atomic_load_explicit(&msi_route_mask, memory_order_acquire) & MSI_ROUTE_COUNT)) return free_counted(p);
  if (msi_heap_in_small(p)) { /* the heap's small area exists: its base is set for good (extra checks off) */
    if (!msi_heap_checks) __atomic_store_n(&msi_route_fast.free_base, msi_heap_g.base, __ATOMIC_RELAXED);
    return msi_heap_free_small(p);
  }
  route_free(p);
}

/* the fast paths: malloc's is route_fast.h's (operator new inlines the same); on free the small-block test first */
MSI_HOT_TEXT void *msi_malloc(size_t size) {
  void *p = msi_malloc_pop(size);
  return MSI_LIKELY(p != NULL) ? p : msi_malloc_slow(size);
}

/* route_fast.h: msi_malloc_pop found no block, or the request is not a small one (small_below read again: an
   option may have changed it since) */
MSI_HOT_TEXT MSI_NOINLINE void *msi_malloc_slow(size_t size) {
  if (size < atomic_load_explicit(&msi_route_fast.small_below, memory_order_acquire)) return msi_heap_malloc_small_slow(size);
  return msi_route_alloc(size, 0, false);
}

MSI_HOT_TEXT void msi_free(void *p) {
  if (MSI_LIKELY((uintptr_t)p - FREE_BASE() < FREE_TOP()))
    return msi_heap_free_small_unchecked(p);
  return free_slow(p);
}

/* the extra checks switched (ms_option_set): free's fast test fails until a free finds them off (free_slow) */
static void free_base_reset(void) { __atomic_store_n(&msi_route_fast.free_base, FREE_NEVER, __ATOMIC_RELAXED); }

MSI_HOT_TEXT void *msi_calloc(size_t count, size_t size) {
  size_t total;
  if (MSI_UNLIKELY(__builtin_mul_overflow(count, size, &total))) { errno = ENOMEM; return NULL; }
  if (MSI_LIKELY(total < atomic_load_explicit(&msi_route_fast.small_below, memory_order_acquire))) {
    void *p = msi_heap_malloc_small(total);
    if (p) memset(p, 0, total);
    return p;
  }
  return msi_route_alloc(total, 0, true);
}

MSI_HOT_TEXT void *msi_aligned_alloc(size_t alignment, size_t size) {
  if (!msi_is_pow2(alignment)) { errno = EINVAL; return NULL; }
  if (alignment <= 16) return msi_malloc(size);
  return msi_route_alloc(size, alignment, false);
}

MSI_HOT_TEXT size_t msi_usable_size(const void *p) {
  if (MSI_LIKELY(msi_heap_in_small(p))) return msi_heap_small_usable(p); /* (the heap's common case, inline) */
  switch (owner_of(p)) {
  case OWNER_HEAP: return msi_heap_usable(p);
  case OWNER_SPILL: return msi_spill_usable_size(p);
  case OWNER_SPACE: return msi_proc_space_usable_size(p);
  case OWNER_OTHER: break;
  }
  if (!p) return 0;
  size_t d = msi_heap_usable(p);
  return d ? d : msi_foreign_usable(p);
}

/* a live block's usable size when it is ours (any part's), else 0 (foreign, NULL, freed) */
static size_t usable_ours(const void *p) {
  switch (owner_of(p)) {
  case OWNER_HEAP: return msi_heap_usable(p);
  case OWNER_SPILL: return msi_spill_usable_size(p);
  case OWNER_SPACE: return msi_proc_space_usable_size(p);
  case OWNER_OTHER: break;
  }
  return p ? msi_heap_usable(p) : 0;
}

int ms_is_ours(const void *p) {
  if (!p) return 0;
  return owner_of(p) != OWNER_OTHER || msi_heap_usable(p) != 0;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* realloc                                                                                                      */
/* ------------------------------------------------------------------------------------------------------------ */

/* The one move between parts: p (of part `from`, `old` usable bytes) to a new block where a request of `size`
   goes now, the bytes copied, p freed by its owner. NULL + errno: p unchanged. `away`: NULL also when the new
   block is `from`'s again (spill's threshold changed meanwhile: the caller resizes within spill instead) */
static void *route_move(void *p, size_t old, size_t size, owner_t from, bool away, unsigned mask) {
  void *q = alloc_in(size, 0, false, mask);
  if (!q) return NULL;
  if (away && owner_of(q) == from) {
    route_free(q);
    return NULL;
  }
  /* the whole usable size is the caller's (valgrind only knows the size asked for: no report for the rest) */
  MSI_HEAP_VG_QUIET(msi_memcpy(q, p, old < size ? old : size));
  if (from == OWNER_SPILL) msi_spill_free(p);
  else route_free(p);
  return q;
}

/* A spilled block resized (spill's own answer uses errno 0 for "not here, RAM instead") */
static void *realloc_spilled_in(void *p, size_t size, unsigned mask) {
  size_t old = msi_spill_usable_size(p), t = spill_threshold(mask);
  if (old && t && size < t) { /* below the threshold: to RAM, else (no RAM) shrunk in place */
    void *q = route_move(p, old, size, OWNER_SPILL, true, mask);
    if (q) return q;
  }
  errno = 0;
  void *q = msi_spill_realloc(p, size);
  if (q || errno != 0) return q;
  q = route_move(p, old, size, OWNER_SPILL, false, mask); /* spill cannot hold the new size: RAM */
  if (!q) errno = ENOMEM;
  return q;
}
/* the caller's errno kept on success (C: no library function sets errno to zero) */
static void *realloc_spilled(void *p, size_t size, unsigned mask) {
  int saved = errno;
  void *q = realloc_spilled_in(p, size, mask);
  if (q) errno = saved;
  return q;
}

/* p resized under `mask` (nothing counted; a foreign block moved in is counted by the malloc that takes it) */
static inline void *realloc_in(void *p, size_t size, unsigned mask) {
  mask &= MSI_ROUTE_SPILL | MSI_ROUTE_SPACE;
  owner_t o = owner_of(p);
  if (o == OWNER_SPILL) return realloc_spilled(p, size, mask);
  if (o == OWNER_SPACE) return msi_proc_space_realloc(p, size);
  /* the heap's check aborts naming p when it is the heap's but no live block; 0: a direct block it is not */
  if (o == OWNER_OTHER && !msi_heap_realloc_check(p)) return msi_foreign_realloc(p, size);
  bool exact = false;
  if (MSI_UNLIKELY(mask)) { /* to spill (counting only the growth), or into the process space */
    size_t t = spill_threshold(mask), old = t && size >= t ? msi_heap_realloc_check(p) : 0;
    if (spill_wants(size, old < size ? size - old : 0, mask) || (mask & MSI_ROUTE_SPACE))
      return route_move(p, old ? old : msi_heap_realloc_check(p), size, OWNER_HEAP, false, mask);
    /* the exact size only where the heap's extra eighth for a growing block could reach the threshold */
    exact = t && size + size / 8 >= t;
  }
  return msi_heap_realloc(p, size, exact); /* (checks p) */
}

static MSI_NOINLINE MSI_COLD void *realloc_routed(void *p, size_t size, unsigned mask) {
  if (!(mask & MSI_ROUTE_COUNT)) return realloc_in(p, size, mask);
  size_t old = usable_ours(p);
  void *q = realloc_in(p, size, mask);
  if (q && old) {
    count(&tally()->reallocs);
    add_live((int64_t)usable_ours(q) - (int64_t)old);
  }
  return q;
}

MSI_HOT_TEXT void *msi_realloc(void *p, size_t size) {
  if (!p) return msi_malloc(size);
  if (size == 0) { msi_free(p); return NULL; }
  if (size > PTRDIFF_MAX) { errno = ENOMEM; return NULL; }
  unsigned mask = atomic_load_explicit(&msi_route_mask, memory_order_acquire);
  if (MSI_UNLIKELY(mask)) return realloc_routed(p, size, mask);
  return realloc_in(p, size, 0);
}

/* ---- the [malloc] statistics section (stats.def) ---- */

static bool counts_used(void) {
  return (atomic_load_explicit(&msi_route_mask, memory_order_acquire) & MSI_ROUTE_COUNT) != 0;
}

static void counts_print(msi_stats_writer_t *w) {
  uint64_t sum[4] = {0, 0, 0, 0};
  unsigned n = atomic_load_explicit(&tallies_taken, memory_order_relaxed);
  for (unsigned i = 0; i < n && i < TALLIES; i++) {
    sum[0] += atomic_load_explicit(&tallies[i].allocs, memory_order_relaxed);
    sum[1] += atomic_load_explicit(&tallies[i].callocs, memory_order_relaxed);
    sum[2] += atomic_load_explicit(&tallies[i].reallocs, memory_order_relaxed);
    sum[3] += atomic_load_explicit(&tallies[i].frees, memory_order_relaxed);
  }
  int64_t live = atomic_load_explicit(&live_bytes, memory_order_relaxed);
  msi_stats_field(w, "allocations", sum[0], "");
  msi_stats_field(w, "callocs", sum[1], "");
  msi_stats_field(w, "reallocs", sum[2], "");
  msi_stats_field(w, "frees", sum[3], "");
  msi_stats_field(w, "allocated", live > 0 ? (uint64_t)live : 0, "bytes");
  msi_stats_field(w, "allocated_peak", (uint64_t)atomic_load_explicit(&peak_bytes, memory_order_relaxed), "bytes");
}

const msi_stats_source_t msi_route_stats_source = {"malloc", NULL, counts_print, counts_used};

/* the exported names are aliases: calls inside the library stay direct (no PLT) */
void *ms_malloc(size_t size) __attribute__((alias("msi_malloc")));
void ms_free(void *p) __attribute__((alias("msi_free")));
void *ms_calloc(size_t count, size_t size) __attribute__((alias("msi_calloc")));
void *ms_realloc(void *p, size_t size) __attribute__((alias("msi_realloc")));
void *ms_aligned_alloc(size_t alignment, size_t size) __attribute__((alias("msi_aligned_alloc")));
size_t ms_usable_size(const void *p) __attribute__((alias("msi_usable_size")));
#if MEMSPACE_OVERRIDE
/* the replacement's malloc, free, calloc and realloc (src/override/override.c defines the rest of the family): the
   front door's functions themselves, not a jump to them from a page of override.c's that a short-lived program
   then faults in for its first calloc or realloc */
#include <stdlib.h>
MS_API void *malloc(size_t size) __attribute__((alias("msi_malloc")));
MS_API void free(void *p) __attribute__((alias("msi_free")));
MS_API void *calloc(size_t count, size_t size) __attribute__((alias("msi_calloc")));
MS_API void *realloc(void *p, size_t size) __attribute__((alias("msi_realloc")));
/* The C++ operator delete in every form is free itself under its mangled name (src/override/override.c defines the
   operator new forms): the size, alignment and nothrow arguments change nothing, and the registers that carry them
   are the caller's, so each form is free's entry point, not a jump to it from a definition of its own */
#define DELETE_AS_FREE(name, sym) MS_API void name(void *p) __asm__(sym) __attribute__((alias("msi_free")))
DELETE_AS_FREE(op_del, "_ZdlPv");
DELETE_AS_FREE(op_del_arr, "_ZdaPv");
DELETE_AS_FREE(op_del_sz, "_ZdlPvm");
DELETE_AS_FREE(op_del_arr_sz, "_ZdaPvm");
DELETE_AS_FREE(op_del_nt, "_ZdlPvRKSt9nothrow_t");
DELETE_AS_FREE(op_del_arr_nt, "_ZdaPvRKSt9nothrow_t");
DELETE_AS_FREE(op_del_al, "_ZdlPvSt11align_val_t");
DELETE_AS_FREE(op_del_arr_al, "_ZdaPvSt11align_val_t");
DELETE_AS_FREE(op_del_sz_al, "_ZdlPvmSt11align_val_t");
DELETE_AS_FREE(op_del_arr_sz_al, "_ZdaPvmSt11align_val_t");
DELETE_AS_FREE(op_del_al_nt, "_ZdlPvSt11align_val_tRKSt9nothrow_t");
DELETE_AS_FREE(op_del_arr_al_nt, "_ZdaPvSt11align_val_tRKSt9nothrow_t");
#endif

/* ------------------------------------------------------------------------------------------------------------ */
/* foreign pointers when the override layer is not built: the C library's own functions                       */
/* ------------------------------------------------------------------------------------------------------------ */
#if !MEMSPACE_OVERRIDE
#include <malloc.h>
#include <stdlib.h>
bool msi_malloc_elsewhere(void) { return false; } /* no malloc of ours: nothing to leave to another copy */
void msi_malloc_elsewhere_note(void) {}
void msi_foreign_free(void *p) { free(p); }
void *msi_foreign_realloc(void *p, size_t size) { return realloc(p, size); }
size_t msi_foreign_usable(const void *p) { return malloc_usable_size((void *)p); }
#endif
