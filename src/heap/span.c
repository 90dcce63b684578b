/* SPDX-License-Identifier: MIT */
/* span.c: the spans of a heap: the partial lists, retiring an empty span, the spare span set aside under memory
   pressure, collecting remote frees, a span's set-up for a class (its colour) and the carving of its blocks. */
#include "heap_internal.h"

/* the colour of a span of class cls on the chunk at `chunk`: spread over the class's colours by the chunk's index */
static uintptr_t span_colour(uintptr_t chunk, unsigned cls) {
  uint32_t n = msi_heap_class_colours[cls];
  if (n <= 1) return 0;
  uint32_t h = (uint32_t)(chunk >> MSI_HEAP_CHUNK_SHIFT) * 2654435761u;
  return (uintptr_t)((h >> 26) % n) * 64;
}

#if MSI_HEAP_SECURE
/* the carving order's PRNG (xorshift64*), per thread, seeded from the process secret and the thread */
static __thread uint64_t carve_rng;
static uint32_t carve_random(uint32_t bound) {
  uint64_t x = carve_rng;
  if (MSI_UNLIKELY(!x)) x = (msi_heap_g.canary_secret ^ (uintptr_t)&carve_rng) * 0x9E3779B97F4A7C15ull | 1;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  carve_rng = x;
  return (uint32_t)(((x * 0x2545F4914F6CDD1Dull) >> 32) * bound >> 32);
}
#endif

/* an empty span leaves its class (never while a remote free may still queue it: xfree must be 0). Every block it carved
   is on its free lists then: they stay linked while it is cached (kept), for msi_heap_span_init to take back if the
   same class takes the span again; its segment drops them (msi_heap_segment_release_span) */
void msi_heap_span_retire(msi_heap_t *h, msi_span_t *s, bool to_thread_cache) {
  if (msi_span_is_mini(s)) return; /* stays its heap's (msi_heap_mini_take) */
  atomic_fetch_sub_explicit(&h->spans_held, 1, memory_order_relaxed);
  if (s->in_partial) partial_remove(h, s);
  msi_span_set_floor(s, 0); /* (no block used) */
  s->last_cls = s->cls;
  s->kept = 1;
  msi_heap_span_cache_put(to_thread_cache ? h : NULL, s);
}

/* A class's current span that its last free empties stays the class's for its next block (the preset's
   keep_empty_current). Its owner allocates from a current span without a lock, so no other thread may take it:
   an idle thread (a pool's) would keep a span per class, whatever the memory pressure. So while a forced purge may
   come (msi_maint_tight: a cgroup limits the process, or a second thread allocates before any look read the
   limit, or memory is tight: internal.h) the free that empties a span whose blocks were
   carved past SPARE_MIN bytes and a block sets it aside instead (spare_put): current_at[]
   gets the empty span, the span goes in the atomic spare[] slot; the owner's next allocation of the class finds
   the empty span, takes the slow path and the span back (spare_take); a forced purge (memory pressure) takes it
   from any thread (msi_heap_take_spares). Whoever exchanges the slot for NULL owns the span.
   A span that carved no further (a loop taking and freeing a block or a few) stays current, its pages past the
   blocks it carved given back (span_trim_tail: what a populate window or a former class left resident): such a
   loop keeps its fast paths, and an idle thread keeps at most SPARE_MIN plus a block and a page per class.
   A loop of a few blocks in a span carved further (a batch before it) would set the span aside and take it back
   at every turn: a span that comes back from spare[] notes the block SPARE_LOOK deep in its free list and the block
   it links to, and when it empties with that link still there (the block never taken: at most SPARE_LOOK blocks
   were used meanwhile, or all freed back in reverse order) it is set aside
   uncarved (its lists dropped: it carves afresh from its base, over pages still resident), so the loop's next
   turn carves one batch and goes on in a span that stays current. */
static bool span_spare_worthy(const msi_span_t *s) {
  return msi_span_bump(s) - s->base > SPARE_MIN + s->block_size;
}
static void spare_put(msi_heap_t *h, msi_span_t *s) {
  msi_heap_set_current_empty(h, s->cls); /* first: the owner's fast path no longer reaches it */
  atomic_store_explicit(&h->spare[s->cls], s, memory_order_release);
}
/* the noted block links to the same block (one load; walking the list to it would cost a cache miss a block): it
   was never taken (a block freed above it was taken first: at most SPARE_LOOK blocks used since), or the blocks
   taken were freed back in reverse order (the list as it was) */
static bool spare_near(const msi_span_t *s) {
  if (!s->spare_mark) return false;
  const msi_block_t *m = (const msi_block_t *)(s->base + (((uintptr_t)(s->spare_mark >> 16) - 1) << 4));
  return msi_block_is_free(s, m) && spare_unit(s, spare_link(s, m)) == (s->spare_mark & 0xFFFF);
}
/* an empty span drops its free lists: it carves afresh from its base */
static void span_uncarve(msi_span_t *s) {
  s->free = msi_span_list_end(s);
  s->rfree = NULL;
  s->rfree_n = 0;
  __atomic_store_n(&s->carved, 0, __ATOMIC_RELAXED);
}
/* an empty span kept current (owner context): the resident pages past its carved blocks go back */
static void span_trim_tail(msi_span_t *s) {
  uintptr_t ps = msi_os_page_size(), bump = msi_span_bump(s), from = msi_align_up(bump, ps);
  uintptr_t to = msi_align_up(s->base + s->touched, ps);
  if (to > from) {
    int saved = errno;
    bool ok = msi_os_madvise((void *)from, to - from, MADV_DONTNEED) == 0;
    errno = saved;
    if (!ok) return; /* refused: the pages stay, and count */
    msi_heap_span_trimmed(s, from, to);
  }
  s->touched = (uint32_t)(bump - s->base); /* (at most SPARE_MIN and a block: the free path sends it here no more) */
}
/* the free that empties the class's current span, holding more than SPARE_MIN and a block of pages (owner
   context, no remote free pending): set aside, uncarved, or kept with its tail trimmed (above) */
MSI_NOINLINE void msi_heap_span_empty_current(msi_heap_t *h, msi_span_t *s) {
  bool near = spare_near(s);
  s->spare_mark = 0;
  if (near) span_uncarve(s);
  if (near || span_spare_worthy(s)) spare_put(h, s);
  else span_trim_tail(s);
}
/* every spare span of h back to the caches (any thread; the exchange makes it the caller's) */
void msi_heap_take_spares(msi_heap_t *h, bool to_thread_cache) {
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    msi_span_t *s = spare_take(h, c);
    if (s) msi_heap_span_retire(h, s, to_thread_cache);
  }
}

/* links `tail` after the last block of `list` (walked: one cache miss per block) */
static void list_append(const msi_span_t *s, msi_block_t *list, msi_block_t *tail) {
  msi_block_t *last = list, *next;
  MSI_HEAP_VG_OPEN(last);
  while ((next = msi_block_next(s, last)) != msi_span_list_end(s)) {
    MSI_HEAP_VG_CLOSE(last);
    last = next;
    MSI_HEAP_VG_OPEN(last);
  }
  msi_block_set(s, last, tail, 0); /* (remote frees: never a carved block) */
  MSI_HEAP_VG_CLOSE(last);
}

/* moves remote-freed blocks to the owner's lists; keep_flag leaves the "queued" bit alone.
   The word holds the list's length (XF_ONE units). The list becomes `free` when that is empty, else `rfree` (taken
   when `free` runs out), so collecting walks no list: the remote blocks were last written by another core, and
   walking them to a tail is a chain of cache misses. With both lists in use, may_park leaves the list in the word
   and only clears the queued bit (the span is collected when it runs out of blocks, or queued again by the next
   remote free); a span the list would empty is taken whole, walking the shorter of the two lists. */
void msi_heap_span_collect(msi_span_t *s, bool keep_flag, bool may_park) {
  uintptr_t x = atomic_load_explicit(&s->xfree, memory_order_relaxed);
  bool park;
  for (;;) {
    if ((x & ~(uintptr_t)1) == 0 && (keep_flag || x == 0)) return;
    park = may_park && s->free != msi_span_list_end(s) && s->rfree && (uint32_t)(x >> XF_SHIFT) != msi_span_used(s);
    uintptr_t want = park ? (x & ~(uintptr_t)1) : keep_flag ? (x & 1) : 0;
    if (atomic_compare_exchange_weak_explicit(&s->xfree, &x, want, memory_order_acquire, memory_order_relaxed)) break;
  }
  msi_block_t *b = (msi_block_t *)(x & XF_PTR);
  uint32_t n = (uint32_t)(x >> XF_SHIFT);
  if (park) { msi_span_set_floor(s, n); return; }
  msi_span_set_floor(s, 0);
  if (!b) return;
  msi_span_held_add(s, -n);
  if (s->free == msi_span_list_end(s)) {
    s->free = b;
  } else if (!s->rfree) {
    s->rfree = b;
    s->rfree_n = n;
  } else if (n <= s->rfree_n) {
    list_append(s, b, s->rfree);
    s->rfree = b;
    s->rfree_n += n;
  } else {
    list_append(s, s->rfree, b);
    s->rfree_n += n;
  }
}

/* processes the owner's remote-span stack: collects and files each span. Owner context only. park: from the
   allocation path (msi_heap_span_collect's may_park); the cold paths collect every list */
void msi_heap_remote_process(msi_heap_t *h, bool to_thread_cache, bool park) {
  msi_span_t *s = atomic_exchange_explicit(&h->remote, NULL, memory_order_acquire);
  while (s) {
    msi_span_t *next = atomic_load_explicit(&s->rnext, memory_order_relaxed);
    /* queued here before another heap took it (msi_heap_orphan_span_take) */
    if (MSI_UNLIKELY(MSI_SEEN(s->owner) != h)) {
      span_queue(s);
      s = next;
      continue;
    }
    msi_heap_span_collect(s, false, park);
    if (!msi_heap_is_current(h, s->cls, s)) {
      if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) msi_heap_span_retire(h, s, to_thread_cache);
      else if (!s->in_partial && span_has_free(s)) partial_push(h, s);
    }
    s = next;
  }
}

/* a span taken from a cache or its segment serves class cls: with no block handed out, or, kept by cls
   (msi_heap_span_retire), with the blocks it carved for cls still linked (its free lists then hold them all: used is
   0) */
MSI_HOT_TEXT void msi_heap_span_init(msi_heap_t *h, msi_span_t *s, unsigned cls) {
  uint32_t bs = msi_heap_class_size[cls];
  s->owner = h;
  if (!s->kept || s->last_cls != cls) {
    uintptr_t base = span_chunk(s) + span_colour(span_chunk(s), cls);
    if (base != s->base) { /* `touched` counts from base */
      intptr_t t = (intptr_t)s->touched + (intptr_t)s->base - (intptr_t)base;
      s->touched = t > 0 ? (uint32_t)t : 0;
      s->base = base;
    }
    MSI_SEEN_SET(s->cls, (uint8_t)cls);
    s->block_size = bs;
    s->inv = msi_heap_class_inv[cls];
    s->shift = msi_heap_class_shift[cls];
    s->key = msi_heap_g.secret ^ s->base ^ bs; /* odd, top bit set (the secret's): heap.h msi_span_list_end */
    uint32_t cap = msi_heap_class_capacity[cls];
    uintptr_t room = span_chunk(s) + (uintptr_t)s->nchunks * MSI_HEAP_CHUNK - MSI_HEAP_GUARD;
    if (s->base + (uintptr_t)cap * bs > room) cap = (uint32_t)((room - s->base) / bs); /* (a colour past its waste) */
    MSI_SEEN_SET(s->capacity, cap);
    s->free = msi_span_list_end(s);
    s->rfree = NULL;
    s->rfree_n = 0;
    __atomic_store_n(&s->carved, 0, __ATOMIC_RELAXED);
  }
  s->kept = 0;
  s->spare_mark = 0; /* (a mark a former use left: spare_near) */
  MSI_SEEN_SET(s->used_floor, 0);
  msi_span_held_set(s, 0);
  s->in_partial = 0;
  s->next = s->prev = NULL;
  MSI_SEEN_SET(s->state, MSI_SPAN_ACTIVE);
  atomic_fetch_add_explicit(&h->spans_held, 1, memory_order_relaxed);
  msi_heap_note_active((int64_t)s->nchunks * MSI_HEAP_CHUNK);
}

/* Carving: never-used blocks from bump go on the free list, each with the cookie of a carved block. Blocks are
   carved where their pages are needed, never ahead: a batch holds the blocks whose headers lie in one 4 KiB
   window from bump (within one page of any size the kernel uses: the page of the block handed out next, which the
   program touches anyway), at least one block. So a fresh span's pages are faulted in one at a time as its blocks
   are used, and a class with a few blocks in use leaves the rest of its span untouched. Below `touched` (pages a
   former use of the same chunks carved: resident) batches take up to 16 KiB, fewer trips through the slow path,
   never past `touched` (a span trimmed to its first page carves the rest a window at a time again). A span
   carving its first blocks (nothing touched yet: fresh chunks) carves CARVE_FIRST bytes, the rest of the page at
   its next carve: a short-lived program uses a few blocks of most classes, and links no 4 KiB of them each. The
   secure build links a batch in a random order, so the addresses of consecutive allocations cannot be
   predicted. */
#define CARVE_WINDOW ((uintptr_t)4096)
#define CARVE_RESIDENT ((uintptr_t)16384)
#define CARVE_FIRST ((uintptr_t)1024)

/* A thread that has carved POPULATE_CARVED of blocks, in a process holding POPULATE_MIN committed (spans, resident
   free chunks, large blocks), is one that fills: carving reaches fresh pages there by the thousand (a program
   building a large data structure), each taking a page fault when the program writes it. There a span's fresh
   pages are faulted in POPULATE_WINDOW at a time from the carve position (MADV_POPULATE_WRITE: one system call, no
   exception per page, a quarter less kernel time per page than faulting them one by one) and count as touched, so
   carving takes them in CARVE_RESIDENT batches. The cost: at most one window of pages ahead of the blocks handed
   out per span such a thread is carving (a class's current span). The thread's own figure keeps the many threads
   of a large process that each use a few blocks of many classes (a pool of hundreds) from each pre-faulting a
   window per class. Below either figure (a process that gave its memory back is below it again) and in the
   secure build (a span's last page carries a guard marker), pages fault in as blocks reach them. A refusal (a
   kernel before 5.14, no memory: the pages then fault as used) changes nothing else. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define POPULATE_MIN ((uintptr_t)64 << 20)
#define POPULATE_WINDOW ((uintptr_t)65536)
#define POPULATE_CARVED ((uint64_t)4 << 20)
static void span_populate(const msi_heap_t *h, msi_span_t *s, uintptr_t p, uintptr_t end) {
#if MSI_HEAP_SECURE
  (void)h, (void)s, (void)p, (void)end;
#else
  if (h->carved_bytes < POPULATE_CARVED ||
      atomic_load_explicit(&msi_os_counters.committed, memory_order_relaxed) < POPULATE_MIN ||
      !msi_os_has_populate_write())
    return;
  uintptr_t ps = msi_os_page_size(), from = p & ~(ps - 1), to = from + (POPULATE_WINDOW > ps ? POPULATE_WINDOW : ps);
  end = (end + ps - 1) & ~(ps - 1);
  if (to > end) to = end;
  int saved = errno;
  if (msi_os_madvise((void *)from, to - from, MADV_POPULATE_WRITE) == 0) s->touched = (uint32_t)(to - s->base);
  errno = saved;
#endif
}

MSI_HOT_TEXT void msi_heap_span_carve(msi_heap_t *h, msi_span_t *s) {
  uint32_t bs = s->block_size;
  uintptr_t p = msi_span_bump(s), end = msi_span_end(s), key = s->key;
  if (p - s->base >= s->touched) span_populate(h, s, p, end);
  uintptr_t lim = (p | (CARVE_WINDOW - 1)) + 1, res = s->base + s->touched;
  if (res > lim) lim = res < p + CARVE_RESIDENT ? res : p + CARVE_RESIDENT; /* resident pages: a bigger batch */
  else if (!s->touched && p + CARVE_FIRST < lim) lim = p + CARVE_FIRST; /* (p is base then: within its page) */
  size_t n = ((lim < end ? lim : end) - p + bs - 1) / bs; /* the blocks starting below lim: at least one */
#if MSI_HEAP_SECURE
  uint16_t order[CARVE_RESIDENT / 16];
  for (size_t i = 0; i < n; i++) order[i] = (uint16_t)i;
  for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
    uint32_t j = carve_random((uint32_t)i + 1);
    uint16_t t = order[i]; order[i] = order[j]; order[j] = t;
  }
  msi_block_t *head = s->free;
  for (size_t i = 0; i < n; i++) {
    msi_block_t *b = (msi_block_t *)(p + (uintptr_t)order[i] * bs);
    MSI_HEAP_VG_OPEN(b);
    msi_block_set_key(key, b, head, MSI_COOKIE_CARVED);
    MSI_HEAP_VG_CLOSE(b);
    head = b;
  }
  s->free = head;
#else
  uintptr_t last = p + (n - 1) * bs;
  for (uintptr_t b = p; b < last; b += bs) {
    MSI_HEAP_VG_OPEN((msi_block_t *)b);
    msi_block_set_key(key, (msi_block_t *)b, (msi_block_t *)(b + bs), MSI_COOKIE_CARVED);
    MSI_HEAP_VG_CLOSE((msi_block_t *)b);
  }
  MSI_HEAP_VG_OPEN((msi_block_t *)last);
  msi_block_set_key(key, (msi_block_t *)last, s->free, MSI_COOKIE_CARVED);
  MSI_HEAP_VG_CLOSE((msi_block_t *)last);
  s->free = (msi_block_t *)p;
#endif
  p += n * bs;
  h->carved_bytes += n * bs;
  __atomic_store_n(&s->carved, s->carved + n, __ATOMIC_RELAXED);
  if (p - s->base > s->touched) s->touched = (uint32_t)(p - s->base);
}

