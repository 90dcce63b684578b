/* SPDX-License-Identifier: MIT */
/* api.c: the heap's entry points (entry.h) behind the front door (src/core/route.c): allocation of any size and
   alignment, free and realloc of the heap's blocks (small, large, direct), usable size, collection and
   statistics. The heap serves only its own blocks; routing to the other parts is the front door's. */
#include "entry.h"
#include <errno.h>
#include <string.h>

/* smallest class whose blocks are multiples of `alignment` (so naturally aligned inside 64 KiB-aligned spans), with
   a single colour above 64 (a coloured span's blocks start at a multiple of 64 past its chunk: span.c span_colour) */
static void *small_aligned(size_t size, size_t alignment) {
  unsigned c = msi_heap_class_of(size);
  while (c < MSI_HEAP_CLASSES &&
         ((msi_heap_class_size[c] & (alignment - 1)) || (alignment > 64 && msi_heap_class_colours[c] > 1)))
    c++;
  if (c >= MSI_HEAP_CLASSES) return NULL;
  msi_block_t *b = msi_heap_pop(msi_heap_current(msi_tls_heap, c));
  if (MSI_LIKELY(b)) return b;
  return msi_heap_small_alloc_slow(msi_heap_class_size[c] - MSI_HEAP_CANARY);
}

/* a large block refused (ENOMEM) asked for once more after the idle segments went back (msi_heap_release_idle);
   served, the caller's errno as it was */
MSI_NOINLINE MSI_RARE static void *large_again(size_t size, size_t alignment, bool zero, int saved) {
  if (errno != ENOMEM || !msi_heap_release_idle(size)) return NULL;
  void *p = msi_large_alloc(size, alignment, zero);
  if (p) errno = saved;
  return p;
}

MSI_HOT_TEXT void *msi_heap_alloc(size_t size, size_t alignment, bool zero) {
  void *p;
  if (size <= MSI_HEAP_SMALL_REQ && alignment <= 16) {
    p = msi_heap_malloc_small(size);
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
  int saved = errno;
  p = msi_large_alloc(size, alignment, zero);
  if (MSI_UNLIKELY(!p)) p = large_again(size, alignment, zero, saved);
  if (p) MSI_TRACK_MALLOC(p, size, zero);
  return p;
}

MSI_NOINLINE MSI_COLD void msi_heap_free_checked(void *p, msi_span_t *s) {
  msi_heap_check_free(s, p);
  msi_heap_free_local(p, s);
}

MSI_NOINLINE MSI_RARE void msi_heap_free_error(void *p, msi_span_t *s) {
  if (!msi_span_block_start(s, p)) msi_heap_bad_pointer(p, "free(): invalid pointer");
  if (msi_block_is_free(s, p)) msi_heap_freed_again(s, p, "free");
  msi_heap_bad_pointer(p, "free(): canary after the block overwritten (heap buffer overflow)");
}

MSI_HOT_TEXT void msi_heap_free(void *p) {
  if (msi_heap_in_small(p)) return msi_heap_free_small(p);
  if (msi_heap_in_large(p)) { MSI_TRACK_FREE(p); msi_large_free(p); return; }
  msi_heap_bad_pointer(p, "free(): invalid pointer"); /* in the reservation, in no segment */
}

bool msi_heap_free_direct(void *p) {
  if (!msi_direct_free(p)) return false;
  MSI_TRACK_FREE(p);
  return true;
}

/* usable size of a block in the heap's region (0 when not a live block: also a freed small block, by its cookie) */
static size_t usable(const void *p) {
  if (msi_heap_in_small(p)) return msi_heap_small_usable(p);
  if (msi_heap_in_large(p)) return msi_large_usable(p);
  return 0;
}

size_t msi_heap_usable(const void *p) {
  if (msi_heap_region_has(p)) return usable(p);
  return msi_direct_usable(p);
}

MSI_HOT_TEXT size_t msi_heap_realloc_check(const void *p) {
  if (msi_heap_in_small(p)) {
    msi_span_t *s;
    if (MSI_UNLIKELY(!msi_heap_small_valid(p, &s))) msi_heap_bad_small(p, "realloc");
    if (MSI_UNLIKELY(msi_block_is_free(s, p))) msi_heap_freed_again(s, p, "realloc");
    if (MSI_HEAP_SECURE && MSI_UNLIKELY(!msi_block_canary_ok(s, p)))
      msi_heap_bad_pointer(p, "realloc(): canary after the block overwritten (heap buffer overflow)");
    return s->block_size - MSI_HEAP_CANARY;
  }
  if (msi_heap_in_large(p)) {
    size_t old = msi_large_usable(p);
    if (MSI_UNLIKELY(!old)) msi_heap_bad_pointer(p, "realloc(): invalid pointer or pointer already freed");
    return old;
  }
  if (msi_heap_in_reserved_small(p)) msi_heap_bad_pointer(p, "realloc(): invalid pointer");
  size_t d = msi_direct_usable(p);
  if (!d && msi_direct_was_freed(p)) msi_heap_bad_pointer(p, "realloc(): pointer already freed");
  if (!d && msi_direct_inside(p)) msi_heap_bad_pointer(p, "realloc(): invalid pointer (inside a block)");
  return d;
}

/* realloc by a copy into a new heap block of `alloc` >= size bytes (grown_size), tracked as `size` */
MSI_HOT_TEXT static void *realloc_move(void *p, size_t old_usable, size_t size, size_t alloc) {
  void *n = msi_heap_alloc(alloc, 0, false);
  if (!n) return NULL;
  if (alloc != size) MSI_TRACK_RESIZE(n, alloc, size); /* valgrind reports writes past what was asked */
  /* the whole usable size is the caller's (valgrind only knows the size asked for: no report for the rest) */
  MSI_HEAP_VG_QUIET(msi_memcpy(n, p, old_usable < size ? old_usable : size));
  if (msi_heap_region_has(p)) msi_heap_free(p);
  else msi_heap_free_direct(p);
  return n;
}

/* The size to allocate for a small block of bs usable bytes grown to size. A block growing by small steps (a
   string appended to, realloc'd to its exact length each time) would change class at every step past the next
   class: 16 classes per doubling above 4 KiB are ~6% apart. Grown by less than a quarter, it gets an eighth more,
   at most the largest small class (without it, strings grown by short appends are moved and copied at almost
   every step). Not when the front door asks for the exact size (malloc routed to
   spill or a process space): the eighth could take a request under the spill threshold over it. */
static size_t grown_size(size_t bs, size_t size) {
  if (size <= bs || size >= bs + bs / 4 || size > MSI_HEAP_SMALL_REQ) return size;
  size_t more = size + size / 8;
  return more < MSI_HEAP_SMALL_REQ ? more : MSI_HEAP_SMALL_REQ;
}

MSI_HOT_TEXT void *msi_heap_realloc(void *p, size_t size, bool exact) {
  size_t old = msi_heap_realloc_check(p);
  if (msi_heap_in_small(p)) {
    size_t bs = old;
    if (size <= bs && (size >= bs / 2 || bs <= 64)) { /* (exact too: the block is the heap's either way) */
      MSI_TRACK_RESIZE(p, bs, size);
      return p;
    }
    return realloc_move(p, bs, size, exact ? size : grown_size(bs, size));
  }
  /* large and direct blocks try in place first (mremap): a refused try leaves ENOMEM in errno, which a realloc
     that succeeds by another way must not show (the caller's errno is kept, as glibc keeps it) */
  int saved = errno;
  if (msi_heap_in_large(p)) {
    if (size <= MSI_HEAP_SMALL_REQ) return realloc_move(p, old, size, size);
    void *q = msi_large_realloc(p, size);
    if (q) errno = saved;
    if (q == p) {
      MSI_TRACK_RESIZE(q, old, size);
    } else if (q) { /* moved by mremap: the old block is gone, the new one holds the old bytes */
      MSI_TRACK_FREE(p);
      MSI_TRACK_MALLOC(q, size, false);
      MSI_TRACK_DEFINED(q, old < size ? old : size);
    }
    return q;
  }
  if (size <= MSI_HEAP_SMALL_REQ) return realloc_move(p, old, size, size);
  void *q = msi_direct_realloc(p, size);
  if (q) {
    errno = saved;
    MSI_TRACK_FREE(p);
    MSI_TRACK_MALLOC(q, size, false);
    MSI_TRACK_DEFINED(q, old < size ? old : size);
  }
  return q;
}

void ms_heap_collect(int force) {
  msi_heap_global_init();
  msi_heap_thread_collect(force != 0);
  msi_heap_orphans_flush(); /* what dead threads left, also in heaps kept whole for the next thread */
  if (force) msi_heap_purge_all(); /* (also what a pass of the maintenance thread under way holds) */
  else msi_heap_purge(msi_heap_now_ms(), false);
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
  if (!msi_heap_ready_seen()) return; /* (statistics may be read from another thread while it initialises) */
  uint64_t cached_spans, large_alloc, large_cached, large_committed;
  msi_heap_class_stats(st, &cached_spans);
  msi_large_stats(&large_alloc, &large_cached, &large_committed);
  uint64_t alloc = 0, cached = cached_spans;
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    const ms_stats_class_t *k = msi_stats_class(st, c);
    alloc += k->allocated * (k->block_size - MSI_HEAP_CANARY); /* usable sizes (usable(): less the canary) */
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
  const ms_stats_t *st = msi_stats_snapshot(w);
  long long preset = msi_opt(MS_OPTION_CACHE);
  msi_stats_text(w, "preset", preset >= 0 && preset < 4 ? presets[preset] : "?");
  msi_stats_text(w, "memory", atomic_load_explicit(&msi_maint_pressure, memory_order_relaxed) ? "pressure"
                              : atomic_load_explicit(&msi_maint_tight, memory_order_relaxed) & MSI_TIGHT_MEMORY ? "tight"
                              : "headroom");
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    const ms_stats_class_t *k = ms_stats_class(st, c);
    if (!k->mapped && !k->returned) continue;
    char name[48];
    msi_snprintf(name, sizeof name, "class %zu", k->block_size);
    const unsigned long long v[] = {k->allocated, k->cached, k->mapped, k->returned};
    msi_stats_numbers(w, name, 4, keys, v);
  }
}

static const msi_stats_source_t heap_source = {"heap", heap_stats_get, heap_stats_print, NULL};

/* The heap initialises at its first use (msi_heap_global_init: the reservation, the kernel settings it reads), not
   here: a program that never allocates (`true`, `test`, most of a shell's builtins exec'd) makes none of those
   system calls and touches none of those pages. */
MSI_STARTUP_TEXT __attribute__((constructor(102))) static void heap_constructor(void) { msi_stats_register(&heap_source); }
