/* SPDX-License-Identifier: MIT */
/* span_cache.c: empty spans kept for reuse: each thread's cache, the global cache (one list per span length),
   how long a cache holds its spans, and the trim of a cached span's pages. */
#include "heap_internal.h"

/* global span cache, one list per span length */
MSI_START_BSS msi_span_list_t msi_heap_global_cache[MSI_HEAP_MAX_SPAN_CHUNKS + 1];
MSI_START_BSS msi_cache_hold_t msi_heap_global_hold; /* under global_lock unless said */

static void list_push(msi_span_list_t *l, msi_span_t *s) {
  s->next = l->head;
  l->head = s;
  l->count++;
}
static msi_span_t *list_pop(msi_span_list_t *l) {
  msi_span_t *s = l->head;
  if (s) { l->head = s->next; l->count--; }
  return s;
}
/* detaches the spans that entered the cache at or before `cutoff` (the list is newest first) */
msi_span_t *msi_heap_list_cut_old(msi_span_list_t *l, uint32_t now, uint32_t delay, bool force) {
  msi_span_t *s = l->head, *prev = NULL;
  size_t kept = 0;
  while (s && !(force || now - s->cached_ms >= delay)) { prev = s; s = s->next; kept++; }
  if (prev) prev->next = NULL;
  else l->head = NULL;
  l->count = kept;
  return s;
}
/* cached spans back to their segments as dirty chunks idle since they were cached: the msi_heap_segments_purge that
   follows every call (msi_heap_purge) returns them, neighbouring chunks in one madvise (one call per span would make a
   program like sqlite3 pay one system call per 64 KiB) */
void msi_heap_release_chain(msi_span_t *s) {
  while (s) {
    msi_span_t *next = s->next;
    msi_heap_segment_release_span(s, false, s->cached_ms);
    s = next;
  }
}

/* A span entering the global cache leaves its thread, and the thread that takes it next may serve another class there.
   A program that replaces its threads (mstress, larson) moves each dead thread's spans through it by the dozen; a span
   keeping every page a former class carved (`touched`) would carry most of a chunk resident to a class with one live
   block. So a span arriving with more than TRIM_ABOVE bytes resident past what its last class needed gives the rest
   back to the OS (one madvise; the chunks stay the span's): a class that carved a quarter of the span or more keeps
   what it carved (a busy class: the next thread's spans of its size are as full, larson's), one that carved less keeps
   the first page (what the next class carves is faulted in again). The thread caches keep their pages: a thread reusing
   its own spans faults nothing in again. Blocks a kept span (msi_heap_span_retire) has linked in the pages given back
   lose their links: such a span is no longer kept, and its next class carves it afresh. */
#define TRIM_KEEP ((uintptr_t)4096)
#define TRIM_ABOVE ((uintptr_t)16384)
static void span_trim(msi_span_t *s) {
  uintptr_t carved = msi_span_bump(s) - s->base;
  bool busy = carved * 4 >= (uintptr_t)s->capacity * s->block_size;
  if (s->touched <= (busy ? carved : 0) + TRIM_ABOVE) return;
  size_t ps = msi_os_page_size();
  uintptr_t keep = busy && carved > TRIM_KEEP ? s->base + carved : span_chunk(s) + TRIM_KEEP; /* (its first page) */
  uintptr_t from = msi_align_up(keep, ps), to = msi_align_up(s->base + s->touched, ps);
  if (from >= to) return; /* (pages larger than TRIM_ABOVE) */
  if (msi_os_madvise((void *)from, to - from, MADV_DONTNEED) != 0) return; /* refused: the pages stay, and count */
  if (from < s->base + carved) s->kept = 0; /* its free lists ran through the pages given back */
  msi_heap_span_trimmed(s, from, to);
  s->touched = (uint32_t)(from - s->base);
}

/* a span no longer used by any class: thread cache, else global cache, else back to the segment. Under memory
   pressure a thread's span (h) goes back to the OS at once past a small thread cache (MSI_HEAP_PRESSURE_SPANS):
   a burst freed while the pressure lasts leaves RSS as it goes, whenever the next look comes */
void msi_heap_span_cache_put(msi_heap_t *h, msi_span_t *s) {
  unsigned n = s->nchunks;
  size_t bytes = (size_t)n * MSI_HEAP_CHUNK, bucket = msi_heap_limits.thread_bucket;
  bool pressed = h && atomic_load_explicit(&msi_maint_pressure, memory_order_relaxed);
  if (pressed && bucket > MSI_HEAP_PRESSURE_SPANS) bucket = MSI_HEAP_PRESSURE_SPANS;
  MSI_SEEN_SET(s->state, MSI_SPAN_CACHED);
  s->owner = NULL;
  s->cached_ms = msi_heap_now_ms();
  msi_heap_note_active(-(int64_t)bytes);
  if (msi_heap_limits.global_bucket) msi_heap_note_idle((int64_t)bytes); /* (else back to the OS at once) */
  if (h && bucket >= bytes) {
    msi_lock(&h->cache_lock);
    h->hold.ops++;
    if ((h->cache[n].count + 1) * bytes <= bucket) {
      list_push(&h->cache[n], s);
      msi_unlock(&h->cache_lock);
      msi_maint_wake(); /* a span cached: work for the purge */
      return;
    }
    msi_unlock(&h->cache_lock);
  }
  if (pressed) {
    if (msi_heap_limits.global_bucket) msi_heap_note_idle(-(int64_t)bytes);
    msi_heap_segment_release_span(s, true, s->cached_ms);
    return;
  }
  if (msi_heap_limits.global_bucket >= bytes) {
    span_trim(s);
    msi_lock(&global_lock);
    msi_heap_global_hold.ops++;
    if ((msi_heap_global_cache[n].count + 1) * bytes <= msi_heap_limits.global_bucket) {
      list_push(&msi_heap_global_cache[n], s);
      msi_unlock(&global_lock);
      msi_maint_wake();
      return;
    }
    msi_unlock(&global_lock);
  }
  msi_heap_segment_release_span(s, msi_heap_limits.global_bucket == 0, s->cached_ms);
}

/* How long a span cache keeps its spans (a thread's, under its cache_lock; the global one, under global_lock), from
   each purge pass: `delay` once the cache is idle (no span into or out of it for the delay, no refill), else
   delay << shift. A thread that finds a span length empty which the purge took spans of within the longest hold
   (hold_miss: the purge came too early, those pages are faulted in again) marks a refill: the hold doubles at the
   next pass, up to HOLD_SHIFT_MAX times, and falls back to the delay once the cache is idle. A loop that frees
   and allocates a varying share of its blocks dips into its caches a little deeper now and then: it keeps their
   spans, while a program that goes idle gets everything back after the delay as before. Free chunks of the
   segments follow the delay alone. */
#define HOLD_SHIFT_MAX 3
uint32_t msi_heap_cache_hold(msi_cache_hold_t *c, uint32_t now, uint32_t delay) {
  if (atomic_exchange_explicit(&c->refilled, 0, memory_order_relaxed)) {
    atomic_store_explicit(&c->purged, 0, memory_order_relaxed); /* (the next refill follows the next purge) */
    if (c->shift < HOLD_SHIFT_MAX) c->shift++;
    c->busy_ms = now;
  }
  if (c->ops != c->ops_seen) {
    c->ops_seen = c->ops;
    c->busy_ms = now;
  }
  if (atomic_load_explicit(&c->purged, memory_order_relaxed) && (int32_t)(now - c->purged_ms) >= (int32_t)(delay << HOLD_SHIFT_MAX))
    atomic_store_explicit(&c->purged, 0, memory_order_relaxed); /* a refill this late: not the purge's doing */
  if ((int32_t)(now - c->busy_ms) >= (int32_t)delay) c->shift = 0; /* idle */
  return delay << c->shift;
}
/* the pass took spans of the lengths in `cut` (bits) from the cache; force: pressure (a refill after it is no sign
   of a purge too early) */
void msi_heap_hold_cut(msi_cache_hold_t *c, unsigned cut, uint32_t now, bool force) {
  if (!cut || force) return;
  atomic_store_explicit(&c->purged, (uint16_t)(atomic_load_explicit(&c->purged, memory_order_relaxed) | cut), memory_order_relaxed);
  c->purged_ms = now;
}
/* a thread found the cache without spans of length n: a refill if the purge took some lately */
static inline void hold_miss(msi_cache_hold_t *c, unsigned n) {
  if (MSI_UNLIKELY(atomic_load_explicit(&c->purged, memory_order_relaxed) >> n & 1) &&
      !atomic_load_explicit(&c->refilled, memory_order_relaxed))
    atomic_store_explicit(&c->refilled, 1, memory_order_relaxed);
}

/* a cached span for class cls (NULL: none cached): among the newest CACHE_LOOK, one that served cls and kept its blocks
   linked (no carving: msi_heap_span_init), else the newest. A program allocating batches that outgrow a class's current
   span retires the class's other span at every batch's end and takes one at the next: with the newest of any class,
   every batch carved each such span afresh (a store of both header words per block) */
#define CACHE_LOOK 8
static msi_span_t *list_take(msi_span_list_t *l, unsigned cls) {
  msi_span_t *prev = NULL, *s = l->head;
  for (unsigned i = 0; s && i < CACHE_LOOK; i++, prev = s, s = s->next)
    if (s->kept && s->last_cls == cls) {
      if (prev) prev->next = s->next;
      else l->head = s->next;
      l->count--;
      return s;
    }
  return list_pop(l);
}

MSI_HOT_TEXT msi_span_t *msi_heap_span_cache_get(msi_heap_t *h, unsigned n, unsigned cls) {
  msi_span_t *s = NULL;
  if (atomic_load_explicit(&h->cache[n].head, memory_order_relaxed)) {
    msi_lock(&h->cache_lock);
    s = list_take(&h->cache[n], cls);
    h->hold.ops += s != NULL;
    msi_unlock(&h->cache_lock);
  }
  if (!s) hold_miss(&h->hold, n);
  if (!s && atomic_load_explicit(&msi_heap_global_cache[n].head, memory_order_relaxed)) {
    msi_lock(&global_lock);
    s = list_take(&msi_heap_global_cache[n], cls);
    msi_heap_global_hold.ops += s != NULL;
    msi_unlock(&global_lock);
  }
  if (!s) hold_miss(&msi_heap_global_hold, n);
  if (!s) return NULL;
  msi_heap_note_idle(-(int64_t)n * MSI_HEAP_CHUNK);
  return s;
}

