/* SPDX-License-Identifier: MIT */
/* api.c: the heap's public entry points (ms_malloc ...): the lock-free fast paths, routing to spill and the process
   space (route.h), aligned allocation, realloc in place, usable size, collection and statistics. */
#include "heap.h"
#include "route.h"
#include "track.h"
#include <errno.h>
#include <string.h>

/* the small-block fast path: the calling thread's current span of the class, no lock, no atomic */
static inline void *small_alloc(size_t size) {
  msi_span_t *s = msi_tls_heap->current[msi_heap_class_of(size)];
  msi_block_t *b = s->free;
  if (MSI_LIKELY(b)) {
    MSI_HEAP_VG_OPEN(b);
    s->free = msi_block_next(s, b);
    s->used++;
    msi_block_arm(s, b);
    MSI_HEAP_VG_CLOSE(b);
    MSI_TRACK_MALLOC(b, size, false);
    return b;
  }
  void *p = msi_heap_small_alloc_slow(size);
  if (p) MSI_TRACK_MALLOC(p, size, false);
  return p;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* generic paths                                                                                                */
/* ------------------------------------------------------------------------------------------------------------ */

/* smallest class whose blocks are multiples of `alignment` (so naturally aligned inside 64 KiB-aligned spans) */
static void *small_aligned(size_t size, size_t alignment) {
  unsigned c = msi_heap_class_of(size);
  while (c < MSI_HEAP_CLASSES && (msi_heap_class_size[c] & (alignment - 1))) c++;
  if (c >= MSI_HEAP_CLASSES) return NULL;
  msi_heap_t *h = msi_tls_heap;
  msi_span_t *s = h->current[c];
  msi_block_t *b = s->free;
  if (MSI_LIKELY(b)) {
    MSI_HEAP_VG_OPEN(b);
    s->free = msi_block_next(s, b);
    s->used++;
    msi_block_arm(s, b);
    MSI_HEAP_VG_CLOSE(b);
    return b;
  }
  return msi_heap_small_alloc_slow(msi_heap_class_size[c] - MSI_HEAP_CANARY);
}

static void *heap_alloc(size_t size, size_t alignment, bool zero) {
  void *p;
  if (size <= MSI_HEAP_SMALL_REQ && alignment <= 16) {
    p = small_alloc(size);
    if (p && zero) memset(p, 0, size);
    return p;
  }
  if (size <= MSI_HEAP_SMALL_REQ && alignment <= MSI_HEAP_SMALL_MAX) {
    p = small_aligned(size, alignment);
    if (p) {
      MSI_TRACK_MALLOC(p, size, zero);
      if (zero) memset(p, 0, size);
      return p;
    }
  }
  p = msi_large_alloc(size, alignment, zero);
  if (p) MSI_TRACK_MALLOC(p, size, zero);
  return p;
}

/* allocation with routing (CONTRACT §3): spill when the size reaches the threshold, else the process space */
static MSI_NOINLINE void *alloc_generic(size_t size, size_t alignment, bool zero) {
  /* no object is larger than PTRDIFF_MAX: refused here, before any part rounds the size up (past 2^64 it would
     wrap to a small block) */
  if (MSI_UNLIKELY(size > PTRDIFF_MAX || alignment > PTRDIFF_MAX)) { errno = ENOMEM; return NULL; }
  unsigned mask = atomic_load_explicit(&msi_route_mask, memory_order_relaxed);
  if (MSI_UNLIKELY(mask)) {
    if (mask & MSI_ROUTE_SPILL) {
      size_t t = msi_spill_threshold();
      if (t && size >= t) {
        errno = 0;
        void *p = msi_spill_malloc(size, alignment < 16 ? 16 : alignment, zero);
        if (p || errno == ENOMEM) return p;
      }
    }
    if (mask & MSI_ROUTE_SPACE) return msi_proc_space_malloc(size, alignment < 16 ? 16 : alignment, zero);
  }
  return heap_alloc(size, alignment, zero);
}

static MSI_NOINLINE void free_generic(void *p) {
  if (!p) return;
  if (msi_heap_in_large(p)) { MSI_TRACK_FREE(p); msi_large_free(p); return; }
  if (msi_heap_in_reserved_small(p)) msi_heap_bad_pointer(p, "free(): invalid pointer");
  if (msi_spill_owns(p)) { msi_spill_free(p); return; }
  if (msi_proc_space_owns(p)) { msi_proc_space_free(p); return; }
  if (msi_direct_free(p)) { MSI_TRACK_FREE(p); return; }
  msi_foreign_free(p);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* public API                                                                                                   */
/* ------------------------------------------------------------------------------------------------------------ */

void *msi_malloc(size_t size) {
  if (MSI_LIKELY(size <= MSI_HEAP_SMALL_REQ && !atomic_load_explicit(&msi_route_mask, memory_order_relaxed)))
    return small_alloc(size);
  return alloc_generic(size, 0, false);
}

/* pushes a block freed by its owner; the span's bookkeeping runs when it was full or becomes empty. valgrind builds:
   the block is marked free, and its header opened for the heap's own writes only */
static inline void free_local(void *p, msi_span_t *s) {
  msi_block_t *b = p, *head = s->free;
  MSI_TRACK_FREE(p);
  MSI_HEAP_VG_OPEN(b);
  msi_block_link(s, b, head);
  b->cookie = msi_block_freed_cookie(s, b);
  MSI_HEAP_VG_CLOSE(b);
  s->free = b;
  if (MSI_UNLIKELY(--s->used == s->used_floor || !head)) msi_heap_small_free_slow(p, s);
}

static MSI_NOINLINE MSI_COLD void free_local_checked(void *p, msi_span_t *s) {
  msi_heap_check_free(s, p);
  free_local(p, s);
}

/* a local free that failed a check: reports which (not _Noreturn, so the fast path reaches it by a tail jump and
   keeps no stack frame) */
static MSI_NOINLINE MSI_COLD void free_local_error(void *p, msi_span_t *s) {
  if (!msi_span_block_start(s, p)) msi_heap_bad_pointer(p, "free(): invalid pointer");
  if (msi_block_is_free(s, p)) msi_heap_freed_again(s, p, "free");
  msi_heap_bad_pointer(p, "free(): canary after the block overwritten (heap buffer overflow)");
}

/* every call below is a tail call: the fast path saves no register */
void msi_free(void *p) {
  if (MSI_LIKELY(msi_heap_in_small(p))) {
    msi_span_t *s = msi_heap_span_of(p);
    if (MSI_LIKELY(s->owner == msi_tls_heap)) {
      /* a live block start (O(1): the span's reciprocal) whose cookie (second word: the line the link store below
         writes anyway) does not say "free"; the secure build also checks the canary after the block */
      if (MSI_UNLIKELY(!msi_span_block_start(s, p) || msi_block_is_free(s, p) || !msi_block_canary_ok(s, p)))
        return free_local_error(p, s);
      if (MSI_UNLIKELY(msi_heap_checks)) return free_local_checked(p, s);
      return free_local(p, s);
    }
    return msi_heap_small_free_slow(p, s);
  }
  return free_generic(p);
}

void *msi_calloc(size_t count, size_t size) {
  size_t total;
  if (MSI_UNLIKELY(__builtin_mul_overflow(count, size, &total))) { errno = ENOMEM; return NULL; }
  if (MSI_LIKELY(total <= MSI_HEAP_SMALL_REQ && !atomic_load_explicit(&msi_route_mask, memory_order_relaxed))) {
    void *p = small_alloc(total);
    if (p) memset(p, 0, total);
    return p;
  }
  return alloc_generic(total, 0, true);
}

void *msi_aligned_alloc(size_t alignment, size_t size) {
  if (!msi_is_pow2(alignment)) { errno = EINVAL; return NULL; }
  if (alignment <= 16) return msi_malloc(size);
  return alloc_generic(size, alignment, false);
}

/* usable size of a block of ours (0 when not a live block: also a freed small block, by its cookie) */
static size_t usable(const void *p) {
  if (msi_heap_in_small(p)) {
    msi_span_t *s;
    if (!msi_heap_small_valid(p, &s) || msi_block_is_free(s, p)) return 0;
    return s->block_size - MSI_HEAP_CANARY;
  }
  if (msi_heap_in_large(p)) return msi_large_usable(p);
  return 0;
}

size_t msi_usable_size(const void *p) {
  if (!p) return 0;
  if (msi_heap_region_has(p)) return usable(p);
  if (msi_spill_owns(p)) return msi_spill_usable_size(p);
  if (msi_proc_space_owns(p)) return msi_proc_space_usable_size(p);
  size_t d = msi_direct_usable(p);
  return d ? d : msi_foreign_usable(p);
}

/* realloc by a copy into a new block of `alloc` >= size bytes (grown_size), tracked as `size` */
static void *realloc_move(void *p, size_t old_usable, size_t size, size_t alloc) {
  void *n = msi_malloc(alloc);
  if (!n) return NULL;
  if (alloc != size) MSI_TRACK_RESIZE(n, alloc, size); /* valgrind reports writes past what was asked */
  /* the whole usable size is the caller's (valgrind only knows the size asked for: no report for the rest) */
  MSI_HEAP_VG_QUIET(memcpy(n, p, old_usable < size ? old_usable : size));
  msi_free(p);
  return n;
}

/* The size to allocate for a small block of bs usable bytes grown to size. A block growing by small steps (a
   string appended to, realloc'd to its exact length each time) would change class at every step past the next
   class: 16 classes per doubling above 4 KiB are ~6% apart. Grown by less than a quarter, it gets an eighth more,
   at most the largest small class (2,000 strings grown to 20 KB by appends of 1-100 B: 1.35 M moves copying
   8.0 GB, mimalloc 0.57 M moves and 2.1 GB). Not while malloc is routed (spill, a process space): the eighth could
   take a request under the spill threshold over it, or double a space block's order. */
static size_t grown_size(size_t bs, size_t size) {
  if (size <= bs || size >= bs + bs / 4 || size > MSI_HEAP_SMALL_REQ) return size;
  size_t more = size + size / 8;
  return more < MSI_HEAP_SMALL_REQ ? more : MSI_HEAP_SMALL_REQ;
}

void *msi_realloc(void *p, size_t size) {
  if (!p) return msi_malloc(size);
  if (size == 0) { msi_free(p); return NULL; }
  if (size > PTRDIFF_MAX) { errno = ENOMEM; return NULL; }
  unsigned mask = atomic_load_explicit(&msi_route_mask, memory_order_relaxed);
  if (msi_heap_in_small(p)) {
    msi_span_t *s;
    if (MSI_UNLIKELY(!msi_heap_small_valid(p, &s))) msi_heap_bad_pointer(p, "realloc(): invalid pointer");
    if (MSI_UNLIKELY(msi_block_is_free(s, p))) msi_heap_freed_again(s, p, "realloc");
    if (MSI_HEAP_SECURE && MSI_UNLIKELY(!msi_block_canary_ok(s, p)))
      msi_heap_bad_pointer(p, "realloc(): canary after the block overwritten (heap buffer overflow)");
    size_t bs = s->block_size - MSI_HEAP_CANARY;
    if (size <= bs && (size >= bs / 2 || bs <= 64) && !mask) {
      MSI_TRACK_RESIZE(p, bs, size);
      return p;
    }
    return realloc_move(p, bs, size, mask ? size : grown_size(bs, size)); /* (routed: spill threshold, space orders) */
  }
  if (msi_heap_in_large(p)) {
    size_t old = msi_large_usable(p);
    if (MSI_UNLIKELY(!old)) msi_heap_bad_pointer(p, "realloc(): invalid pointer or pointer already freed");
    if (size > MSI_HEAP_SMALL_REQ && !(mask & MSI_ROUTE_SPILL && msi_spill_threshold() && size >= msi_spill_threshold())) {
      void *q = msi_large_realloc(p, size);
      if (q == p) {
        MSI_TRACK_RESIZE(q, old, size);
      } else if (q) { /* moved by mremap: the old block is gone, the new one holds the old bytes */
        MSI_TRACK_FREE(p);
        MSI_TRACK_MALLOC(q, size, false);
        MSI_TRACK_DEFINED(q, old < size ? old : size);
      }
      return q;
    }
    return realloc_move(p, old, size, size);
  }
  if (msi_heap_in_reserved_small(p)) msi_heap_bad_pointer(p, "realloc(): invalid pointer");
  if (msi_spill_owns(p)) return msi_spill_realloc(p, size);
  if (msi_proc_space_owns(p)) return msi_proc_space_realloc(p, size);
  size_t d = msi_direct_usable(p);
  if (d) {
    if (size <= MSI_HEAP_SMALL_REQ || (mask & MSI_ROUTE_SPILL && msi_spill_threshold() && size >= msi_spill_threshold()))
      return realloc_move(p, d, size, size);
    void *q = msi_direct_realloc(p, size);
    if (q) {
      MSI_TRACK_FREE(p);
      MSI_TRACK_MALLOC(q, size, false);
      MSI_TRACK_DEFINED(q, d < size ? d : size);
    }
    return q;
  }
  if (msi_direct_was_freed(p)) msi_heap_bad_pointer(p, "realloc(): pointer already freed");
  return msi_foreign_realloc(p, size);
}

int ms_is_ours(const void *p) {
  if (!p) return 0;
  if (msi_heap_region_has(p)) return 1;
  return msi_spill_owns(p) || msi_proc_space_owns(p) || msi_direct_usable(p);
}

void ms_heap_collect(int force) {
  msi_heap_global_init();
  msi_heap_thread_collect(force != 0);
  msi_heap_purge(msi_heap_now_ms(), force != 0);
}

void msi_heap_options_changed(void) {
  msi_heap_global_init();
  msi_heap_set_preset((int)msi_opt(MS_OPTION_CACHE));
  msi_heap_checks = MSI_HEAP_CHECKS_BUILD || msi_opt(MS_OPTION_SECURE);
  ms_heap_collect(1); /* what the caches hold goes back; they refill under the new limits */
}

/* ------------------------------------------------------------------------------------------------------------ */
/* statistics                                                                                                   */
/* ------------------------------------------------------------------------------------------------------------ */

static void heap_stats_get(ms_stats_t *st) {
  if (!msi_heap_g.ready) return;
  uint64_t cached_spans, large_alloc, large_cached, large_committed;
  msi_heap_class_stats(st, &cached_spans);
  msi_large_stats(&large_alloc, &large_cached, &large_committed);
  uint64_t alloc = 0, cached = cached_spans;
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    const ms_stats_class_t *k = msi_stats_class(st, c);
    alloc += k->allocated * k->block_size;
    cached += k->cached * k->block_size;
  }
  st->heap_allocated_bytes += alloc + large_alloc;
  st->heap_cached_bytes += cached + large_cached;
  uint64_t mapped = atomic_load(&msi_heap_counters.segments) * MSI_HEAP_SEG_SIZE + large_committed;
  uint64_t peak = atomic_load(&msi_heap_mapped_peak);
  st->heap_mapped_bytes += mapped;
  st->heap_mapped_peak_bytes += mapped > peak ? mapped : peak;
  st->heap_returned_bytes += atomic_load(&msi_heap_counters.returned_bytes);
  st->heap_large_bytes += large_alloc;
  st->heap_threads += atomic_load(&msi_heap_counters.threads_live);
  st->heap_purges += atomic_load(&msi_heap_counters.purges);
}

/* the lines without a field (stats.def; the core prints the others) */
static void heap_stats_print(msi_stats_writer_t *w) {
  static const char *presets[] = {"unlimited", "performance", "size", "none"};
  static const char *const keys[] = {"allocated", "cached", "mapped", "returned"};
  ms_stats_t st;
  memset(&st, 0, sizeof st);
  heap_stats_get(&st);
  long long preset = msi_opt(MS_OPTION_CACHE);
  msi_stats_text(w, "preset", preset >= 0 && preset < 4 ? presets[preset] : "?");
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    const ms_stats_class_t *k = msi_stats_class(&st, c);
    if (!k->mapped && !k->returned) continue;
    char name[48];
    msi_snprintf(name, sizeof name, "class %zu", k->block_size);
    const unsigned long long v[] = {k->allocated, k->cached, k->mapped, k->returned};
    msi_stats_numbers(w, name, 4, keys, v);
  }
}

/* the exported names are aliases: calls inside the library stay direct (no PLT) */
void *ms_malloc(size_t size) __attribute__((alias("msi_malloc")));
void ms_free(void *p) __attribute__((alias("msi_free")));
void *ms_calloc(size_t count, size_t size) __attribute__((alias("msi_calloc")));
void *ms_realloc(void *p, size_t size) __attribute__((alias("msi_realloc")));
void *ms_aligned_alloc(size_t alignment, size_t size) __attribute__((alias("msi_aligned_alloc")));
size_t ms_usable_size(const void *p) __attribute__((alias("msi_usable_size")));

static const msi_stats_source_t heap_source = {"heap", heap_stats_get, heap_stats_print, NULL};

__attribute__((constructor(102))) static void heap_constructor(void) {
  msi_heap_global_init();
  msi_stats_register(&heap_source);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* foreign pointers when the override layer is not built: the C library's own functions                       */
/* ------------------------------------------------------------------------------------------------------------ */
#if !MEMSPACE_OVERRIDE
#include <malloc.h>
#include <stdlib.h>
void msi_foreign_free(void *p) { free(p); }
void *msi_foreign_realloc(void *p, size_t size) { return realloc(p, size); }
size_t msi_foreign_usable(const void *p) { return malloc_usable_size((void *)p); }
#endif
