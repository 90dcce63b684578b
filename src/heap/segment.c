/* SPDX-License-Identifier: MIT */
/* segment.c: segments (4 MiB, a header chunk and 63 chunks of 64 KiB): mapping them in the segment area, finding
   a run of free chunks for a span, a mini span in the header's chunk (msi_heap_mini_take), giving chunks back
   (purged after a delay) and releasing or reclaiming whole segments. */
#include "heap_internal.h"

/* A new segment inside the reservation replaces its first pages, which splits the reservation: the kernel refuses
   that when the process is at vm.max_map_count (its own mappings may take it there; blocks of the slot area take
   at most a quarter: large.c split_max), and small blocks would end there, malloc(100) included, where glibc's brk
   heap grows its one mapping. Then the rest of the reservation goes back (cutting a mapping's head is allowed at
   the limit) and the segment area grows a segment at a time after its last one, which merges with it (as under
   RLIMIT_AS). */
static msi_segment_t *segment_map(void);
/* a segment freshly mapped (zeros): its header set up, counted */
MSI_HOT_TEXT static void segment_init(msi_segment_t *seg) {
#if MSI_HEAP_SECURE
  msi_heap_guard_install((uintptr_t)seg + MSI_HEAP_CHUNK - MSI_HEAP_GUARD); /* between the header and chunk 1 */
#endif
  MSI_SEEN_SET(seg->free_mask, ~(uint64_t)1); /* chunk 0 is the header */
  /* the descriptors are fresh zeros (MSI_SPAN_FREE); each one's base is set when its chunk first starts a span
     (msi_heap_segment_alloc_span: only map[] leads to a descriptor), so a new segment touches one page of its 8 KiB of
     descriptors, not three. desc[0], where map[] sends every chunk outside a span, is set here. */
  msi_seg_span(seg, 0)->base = (uintptr_t)seg;
  atomic_fetch_add_explicit(&msi_heap_counters.segments, 1, memory_order_relaxed);
  msi_os_count_commit(MSI_HEAP_CHUNK); /* the header; chunks count as spans take them (msi_heap_segment_alloc_span) */
  msi_heap_mapped_peak_note();
}
MSI_HOT_TEXT static msi_segment_t *segment_new(void) {
  int saved = errno;
  msi_segment_t *seg = segment_map();
  if (MSI_UNLIKELY(!seg) && (msi_heap_fit_limit_locked() || msi_heap_segments_unreserve()) && (seg = segment_map())) errno = saved;
  return seg;
}

static bool seg_is_released(size_t i);
static bool seg_release_pending(size_t i);
MSI_HOT_TEXT static msi_segment_t *segment_map(void) {
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_relaxed);
  if (top + MSI_HEAP_SEG_SIZE > msi_heap_g.small_size) { errno = ENOMEM; return NULL; }
  void *addr = (void *)(msi_heap_g.base + top);
  bool reserved = top < msi_heap_g.small_reserved;
  void *p = msi_os_mmap(addr, MSI_HEAP_SEG_SIZE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | (reserved ? MAP_FIXED : MAP_FIXED_NOREPLACE), -1, 0);
  size_t last_i = top ? (top >> MSI_HEAP_SEG_SHIFT) - 1 : 0;
  if (p == MAP_FAILED && !reserved && top && errno == ENOMEM && !seg_is_released(last_i) &&
      !seg_release_pending(last_i)) {
    /* at vm.max_map_count the kernel refuses any new mapping, even one that would merge with the last segment;
       growing the last segment's mapping in place makes none (not a released one, nor one being released: mapped
       read-only, it would grow read-only, and the new segment's first write would fault) */
    void *last = (void *)(msi_heap_g.base + top - MSI_HEAP_SEG_SIZE);
    if (msi_os_mremap(last, MSI_HEAP_SEG_SIZE, 2 * MSI_HEAP_SEG_SIZE, 0, NULL) == last) p = addr;
  }
  if (p != addr) {
    if (p == MAP_FAILED && reserved) /* keep the region whole: the failed MAP_FIXED may have unmapped it */
      msi_os_mmap(addr, MSI_HEAP_SEG_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    else if (p != MAP_FAILED) /* a kernel before 4.17 took MAP_FIXED_NOREPLACE for a hint */
      msi_os_munmap(p, MSI_HEAP_SEG_SIZE);
    errno = ENOMEM; /* (unreserved: the address was taken, EEXIST) */
    return NULL;
  }
  msi_segment_t *seg = p;
  segment_init(seg);
  atomic_store_explicit(&msi_heap_g.small_top, top + MSI_HEAP_SEG_SIZE, memory_order_release);
  return seg;
}

/* first run of n free chunks in mask, or -1 */
static int find_run(uint64_t mask, unsigned n) {
  uint64_t m = mask;
  for (unsigned i = 1; i < n; i++) m &= mask >> i;
  return m ? __builtin_ctzll(m) : -1;
}

/* one bit per segment with free chunks (under seg_lock): finding room does not read every segment's header */
MSI_COLD_BSS static uint64_t seg_avail[MAX_SEGMENTS / 64]; /* 32 KiB: a page per 128 GiB of segments */
/* the first 64 segments' word (every process's first segment): on the page of .data the loader has written, not
   on a fresh .bss page that the update's read and write fault in twice (seg_avail[0] is unused) */
MSI_START_DATA static uint64_t seg_avail_first;
static inline uint64_t *seg_avail_word(size_t w) { return w ? &seg_avail[w] : &seg_avail_first; }
/* after a change of the segment's free mask: its bit in seg_avail; a segment with every chunk free serves no heap */
static size_t seg_index(const msi_segment_t *seg) { return ((uintptr_t)seg - msi_heap_g.base) >> MSI_HEAP_SEG_SHIFT; }
static msi_segment_t *seg_at(size_t i) { return (msi_segment_t *)(msi_heap_g.base + (i << MSI_HEAP_SEG_SHIFT)); }
static void seg_avail_bit(msi_segment_t *seg) {
  size_t i = seg_index(seg);
  if (seg->free_mask) *seg_avail_word(i / 64) |= 1ull << (i % 64);
  else *seg_avail_word(i / 64) &= ~(1ull << (i % 64));
}
MSI_HOT_TEXT static void seg_avail_update(msi_segment_t *seg) {
  seg_avail_bit(seg);
  if (seg->free_mask == SEG_ALL_FREE && seg->owner) seg->owner = NULL;
}

/* Segments serve one thread heap each (seg->owner). Two threads taking spans from one segment interleave their
   chunks, and so their span descriptors in the header's pages: each thread writes its spans' descriptors at every
   malloc and free, and the hardware prefetchers, reading ahead through a page of descriptors for one core, take the
   other core's lines from it (docs/heap.md, "A segment per thread"). So a heap takes chunks from its own segments
   (its last one first, then the lowest with room), else claims one that serves no live heap (none: every chunk was
   free; its thread ended: an orphan, or gone in a forked child), else maps a new one; only when no segment can be
   mapped, or under an address-space limit it spends too much of (seg_share_first), does it share another heap's.
   A span later taken by another heap from a cache stays where it is. */
static bool seg_claimable(const msi_segment_t *seg) {
  const msi_heap_t *o = seg->owner;
  return !o || atomic_load_explicit(&o->gone, memory_order_relaxed) || atomic_load_explicit(&o->orphan, memory_order_relaxed);
}

/* Under an address-space limit a segment of its own per thread would spend the limit 4 MiB per thread, however
   little each allocates, until the threads' stacks are refused (pthread_create: EAGAIN) where glibc's arenas
   still fit. So once the segments take a quarter of the limit, a heap that needs room shares a segment that has
   it (the false sharing of span descriptors costs time, not memory) and maps a new one only when none has. It
   costs a getrlimit under seg_lock, only under a limit, at each span a heap finds no room for in its own or a
   claimable segment. */
static bool seg_share_first(uintptr_t top) {
  if (!msi_heap_g.as_limited) return false;
  size_t limit = msi_os_as_limit();
  return limit != SIZE_MAX && top >= limit / 4;
}

/* Released segments (msi_heap_segments_reclaim): an idle segment beyond those kept for the next threads goes back
   whole, its range mapped afresh read-only and MAP_NORESERVE (no page, no commit charge; the address stays the heap's,
   so no other mapping lands inside the segment area, and a read of its header finds zeros: no room, no span, which
   every scan of the segments takes as an unused segment). A heap needing room maps the lowest one read-write again
   before it maps a new segment (segment_pick). Under seg_lock; the bitmap's words are read unlocked by the scans
   (MSI_SEEN) to skip them. */
MSI_COLD_BSS static uint64_t seg_released[MAX_SEGMENTS / 64];
/* ThreadSanitizer takes an mmap for a write of the whole range: the scans' unlocked reads of a header (stats, the
   maintenance thread's questions), which find the former header or zeros either way, would be reported as races.
   Its builds give a released segment's pages back with MADV_DONTNEED instead and keep the mapping */
#if defined(__SANITIZE_THREAD__)
#define SEG_REMAP 0
#else
#define SEG_REMAP 1
#endif
MSI_START_BSS size_t msi_heap_seg_released_n;
static bool seg_is_released(size_t i) { return MSI_SEEN(seg_released[i / 64]) >> (i % 64) & 1; }
static void seg_released_set(size_t i, bool on) {
  uint64_t w = seg_released[i / 64], b = 1ull << (i % 64);
  MSI_SEEN_SET(seg_released[i / 64], on ? w | b : w & ~b);
  msi_heap_seg_released_n += on ? 1 : (size_t)-1;
}
/* Segments a reclaim pass took out of the free masks (msi_heap_segments_reclaim) and has not yet given back: to release
   whole (segments_release) or to make bare. The pass works on them without seg_lock, so a fork meanwhile (another
   thread's) would leave them to the child neither in the free masks nor released, counted segments forever: the child
   finishes that work (msi_heap_reclaim_pending_finish, from msi_fork_heap). Under seg_lock; their returned bytes are
   counted when the pass takes them (the child does not count them again). */
MSI_COLD_BSS static uint64_t seg_pending_release[MAX_SEGMENTS / 64], seg_pending_bare[MAX_SEGMENTS / 64];
size_t msi_heap_seg_pending_n;
/* segment i is being released (mapped read-only already, marked released later); under seg_lock */
static bool seg_release_pending(size_t i) { return seg_pending_release[i / 64] >> (i % 64) & 1; }
static void seg_pending_set(uint64_t *bits, const msi_segment_t *seg, bool on) {
  size_t i = seg_index(seg);
  bits[i / 64] = on ? bits[i / 64] | 1ull << (i % 64) : bits[i / 64] & ~(1ull << (i % 64));
  msi_heap_seg_pending_n += on ? 1 : (size_t)-1;
}
void (*msi_heap_reclaim_hook)(msi_segment_t *seg, size_t n);

/* the lowest released segment mapped read-write again, set up as a new one (under seg_lock); NULL: refused */
static msi_segment_t *segment_revive(void) {
  for (size_t w = 0; w < MAX_SEGMENTS / 64; w++) {
    if (!seg_released[w]) continue;
    size_t i = w * 64 + (size_t)__builtin_ctzll(seg_released[w]);
    msi_segment_t *seg = seg_at(i);
    int saved = errno;
    void *p = SEG_REMAP ? msi_os_mmap(seg, MSI_HEAP_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
                        : (void *)seg;
    if (p != (void *)seg) { /* (the commit charge or the mapping limit): the range stays the heap's, unused */
      msi_os_mmap(seg, MSI_HEAP_SEG_SIZE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
      errno = saved;
      return NULL;
    }
    seg_released_set(i, false);
    segment_init(seg);
    return seg;
  }
  return NULL;
}

/* a segment with a run of n free chunks for h (at: its first chunk), now h's (under seg_lock); NULL: none */
MSI_HOT_TEXT static msi_segment_t *segment_pick(msi_heap_t *h, unsigned n, int *at_out) {
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_relaxed);
  msi_segment_t *seg = NULL, *claim = NULL, *shared = NULL;
  int at = -1, claim_at = -1, shared_at = -1;
  if (h->seg && h->seg->owner == h && (at = find_run(h->seg->free_mask, n)) >= 0) seg = h->seg;
  size_t nsegs = top >> MSI_HEAP_SEG_SHIFT;
  for (size_t w = 0; !seg && w * 64 < nsegs; w++)
    for (uint64_t m = *seg_avail_word(w); m && !seg; m &= m - 1) {
      msi_segment_t *s = (msi_segment_t *)(msi_heap_g.base + ((w * 64 + (size_t)__builtin_ctzll(m)) << MSI_HEAP_SEG_SHIFT));
      int a = find_run(s->free_mask, n);
      if (a < 0) continue;
      if (s->owner == h) seg = s, at = a;
      else if (!claim && seg_claimable(s)) claim = s, claim_at = a;
      else if (!shared) shared = s, shared_at = a;
    }
  if (!seg && claim) seg = claim, at = claim_at;
  if (!seg && msi_heap_seg_released_n && (seg = segment_revive())) at = 1; /* (no address space more: before sharing) */
  if (!seg && shared && seg_share_first(top)) seg = shared, at = shared_at;
  if (!seg) {
    int saved = errno;
    seg = segment_new();
    at = 1;
    if (!seg && shared) { /* no room for a segment of its own */
      seg = shared, at = shared_at;
      errno = saved;
    }
    if (!seg) return NULL;
  }
  if (seg != shared) seg->owner = h;
  h->seg = seg;
  *at_out = at;
  return seg;
}

static void hdr_touch(msi_segment_t *seg, const void *p, size_t n);
MSI_HOT_TEXT msi_span_t *msi_heap_segment_alloc_span(msi_heap_t *h, unsigned n) {
  msi_lock(&seg_lock);
  int at;
  msi_segment_t *seg = segment_pick(h, n, &at);
  if (!seg) { msi_unlock(&seg_lock); return NULL; }
  uint64_t bits = (n == 64 ? ~0ull : ((1ull << n) - 1)) << at;
  MSI_SEEN_SET(seg->free_mask, seg->free_mask & ~bits);
  if (seg->bare) MSI_SEEN_SET(seg->bare, 0); /* (in use again: msi_heap_segments_reclaim) */
  hdr_touch(seg, msi_seg_span(seg, at), sizeof(msi_span_t)); /* (its descriptor written: header_back) */
  unsigned dirty = msi_popcount64(seg->dirty_mask & bits);
  msi_heap_note_idle(-(int64_t)dirty * MSI_HEAP_CHUNK);
  MSI_SEEN_SET(seg->dirty_mask, seg->dirty_mask & ~bits); /* reused while still resident: no page faults */
  if (dirty < n) { /* fresh or purged chunks: the heap grew (a sleeping maintenance thread looks at the cgroup) */
    msi_os_count_commit((size_t)(n - dirty) * MSI_HEAP_CHUNK);
    msi_maint_wake();
  }
  seg_avail_update(seg);
  msi_span_t *s = msi_seg_span(seg, at);
  s->base = (uintptr_t)seg + (uintptr_t)at * MSI_HEAP_CHUNK; /* (segment_map leaves it to the first use) */
  MSI_SEEN_SET(s->nchunks, (uint8_t)n);
  MSI_SEEN_SET(s->state, MSI_SPAN_CACHED);
  for (unsigned i = 0; i < n; i++) MSI_SEEN_SET(seg->map[at + i], msi_seg_map_of(at));
  msi_unlock(&seg_lock);
#if MSI_HEAP_SECURE
  /* stays while it is cached */
  s->guarded = msi_heap_guard_install(s->base + (size_t)n * MSI_HEAP_CHUNK - MSI_HEAP_GUARD);
#endif
  return s;
}

/* a mini span (the first blocks of a class; freed into in heap.c) of class cls for h, in chunk 0 of h's segment:
   current and carved; NULL: no room left in h's segment (the class takes no more) */
MSI_HOT_TEXT msi_span_t *msi_heap_mini_take(msi_heap_t *h, unsigned cls) {
#if MSI_HEAP_MINI
  uint32_t bs = msi_heap_class_size[cls];
  unsigned k = msi_heap_mini_granules(bs);
  msi_lock(&seg_lock);
  msi_segment_t *seg = h->seg;
  int at;
  if (!seg && (seg = segment_pick(h, 1, &at))) /* a new heap's first span: the segment its spans will come from */
    seg_avail_bit(seg); /* (its room seen by a heap looking for some: its chunks are all free, it stays h's) */
  unsigned g = seg ? (unsigned)(seg->mini_used + k - 1) & ~(k - 1) : 0; /* (on a multiple of its granules) */
  unsigned from = seg ? seg->mini_used : 0; /* the first granule whose map entry this span sets */
  /* granules a larger span's alignment skipped go to the next span that fits them, so a short process's classes
     pack without gaps: k of them on a multiple of k (the groups never straddle a word) */
  for (unsigned w = 0; seg && w < 2; w++) {
    uint64_t m = seg->mini_skipped[w];
    if (k >= 2) m &= m >> 1;
    if (k >= 4) m &= m >> 2;
    m &= k == 1 ? ~(uint64_t)0 : k == 2 ? 0x5555555555555555u : 0x1111111111111111u;
    if (m) {
      g = from = w * 64 + (unsigned)__builtin_ctzll(m);
      break;
    }
  }
  unsigned d = seg ? seg->mini_descs : 0;
  /* (a heap whose spans moved to another segment would find room in its mini area too: the heap's own total
     keeps its mini spans to one area's worth, what docs/heap.md bounds) */
  unsigned si = 0; /* (its place in h's mini_seg[]: a heap's mini spans are found there, orphan_empty) */
  while (si < h->mini_nseg && h->mini_seg[si] != seg) si++;
  if (!seg || seg->owner != h || g + k > MSI_HEAP_MINI_SPANS || d >= MSI_HEAP_MINI_DESCS ||
      h->mini_total + k > MSI_HEAP_MINI_SPANS || si == sizeof h->mini_seg / sizeof h->mini_seg[0]) {
    msi_unlock(&seg_lock);
    h->mini_taken[cls] = MINI_DONE;
    return NULL;
  }
  if (si == h->mini_nseg) h->mini_seg[h->mini_nseg++] = seg;
  if (seg->bare) MSI_SEEN_SET(seg->bare, 0); /* (in use again: msi_heap_segments_reclaim) */
  if (seg->hdr_back) { /* the pages written here are in use again (header_back) */
    hdr_touch(seg, &seg->mini_map[from], g + k - from);
    hdr_touch(seg, msi_seg_mini(seg, d), sizeof(msi_span_t));
    hdr_touch(seg, (char *)seg + MSI_HEAP_MINI_BASE + (size_t)g * MSI_HEAP_MINI_SIZE, k * MSI_HEAP_MINI_SIZE);
  }
  for (unsigned i = from; i < g; i++) {
    MSI_SEEN_SET(seg->mini_map[i], MSI_HEAP_MINI_NONE);
    seg->mini_skipped[i / 64] |= (uint64_t)1 << (i % 64);
  }
  seg->mini_skipped[g / 64] &= ~((((uint64_t)1 << k) - 1) << (g % 64)); /* (taken, if they were skipped) */
  msi_span_t *s = msi_seg_mini(seg, d);
  s->base = (uintptr_t)seg + MSI_HEAP_MINI_BASE + (uintptr_t)g * MSI_HEAP_MINI_SIZE;
  MSI_SEEN_SET(s->owner, h); /* (read by the purge pass looking at an orphan's mini spans: orphan_empty) */
  MSI_SEEN_SET(s->cls, (uint8_t)cls); /* (the fields msi_heap_spans_tally reads from other threads: MSI_SEEN) */
  s->last_cls = (uint8_t)cls;
  s->block_size = bs;
  s->inv = msi_heap_class_inv[cls];
  s->shift = msi_heap_class_shift[cls];
  s->key = msi_heap_g.secret ^ s->base ^ bs;
  MSI_SEEN_SET(s->capacity, (uint32_t)(k * MSI_HEAP_MINI_SIZE / bs));
  s->free = msi_span_list_end(s);
  s->rfree = NULL; /* (a descriptor an orphan's mini span left: orphan_reclaim) */
  s->rfree_n = 0;
  __atomic_store_n(&s->carved, 0, __ATOMIC_RELAXED);
  MSI_SEEN_SET(s->used_floor, 0);
  msi_span_held_set(s, 0);
  s->cached_ms = 0; /* (its local frees while current: mini_free) */
  s->touched = (uint32_t)(k * MSI_HEAP_MINI_SIZE); /* resident with the header's chunk: carved whole, never populated */
  MSI_SEEN_SET(s->state, MSI_SPAN_ACTIVE);
  /* (its blocks are handed out after this: any free finds it; a skipped granule's span is found once its map entry is
     set, after its descriptor) */
  MSI_SEEN_SET(seg->mini_descs, (uint8_t)(d + 1));
  for (unsigned i = g; i < g + k; i++) MSI_SEEN_SET(seg->mini_map[i], (uint8_t)d);
  if (g + k > seg->mini_used) MSI_SEEN_SET(seg->mini_used, (uint8_t)(g + k));
  msi_unlock(&seg_lock);
  h->mini_total = (uint8_t)(h->mini_total + k);
  h->mini_taken[cls] = h->mini_taken[cls] + k >= MINI_PER_CLASS ? MINI_DONE : (uint8_t)(h->mini_taken[cls] + k);
  msi_heap_set_current(h, cls, s);
  msi_heap_span_carve(h, s);
  return s;
#else
  (void)h, (void)cls;
  return NULL;
#endif
}

void msi_heap_chunks_purged(size_t bytes) {
  atomic_fetch_add_explicit(&msi_heap_counters.returned_bytes, bytes, memory_order_relaxed);
}
/* The pages of chunk 0 past its first that a pass gave back and counted returned and that nothing wrote since
   (hdr_back): all of them when the segment goes bare (msi_heap_segments_reclaim), pages of the mini area when an
   orphan's mini spans leave (orphan_minis_reclaim); a span's descriptor and a mini span's pages taken later clear
   theirs (hdr_touch). A later give-back of that chunk counts only the rest, so "returned" counts each byte once per
   use. Under seg_lock, or on a segment out of the free masks (the pass's own) */
#if MSI_HEAP_MINI
#define MINI_AREA_BYTES (MSI_HEAP_CHUNK - MSI_HEAP_GUARD - MSI_HEAP_MINI_BASE)
/* the mini area's pages (none when its start is not on a page: pages larger than 16 KiB) */
unsigned msi_heap_mini_pages(void) {
  size_t ps = msi_os_page_size();
  return MSI_HEAP_MINI_BASE % ps ? 0 : (unsigned)(MINI_AREA_BYTES / ps);
}
/* the mini area's pages as hdr_back's bits (its first page's bit: msi_heap_mini_pages_at) */
unsigned msi_heap_mini_pages_at(void) { return (unsigned)(MSI_HEAP_MINI_BASE / msi_os_page_size()); }
uint16_t msi_heap_mini_pages_all(void) { return (uint16_t)(((1u << msi_heap_mini_pages()) - 1) << msi_heap_mini_pages_at()); }
#endif
_Static_assert(MSI_HEAP_CHUNK / 4096 <= 16, "hdr_back has a bit per page of chunk 0");
/* every page of chunk 0 past its first, a guard's page at its end left out (a segment gone bare) */
static uint16_t hdr_pages_all(void) {
  return (uint16_t)(((1u << ((MSI_HEAP_CHUNK - MSI_HEAP_GUARD) / msi_os_page_size())) - 1) & ~1u);
}
static size_t header_back(const msi_segment_t *seg) {
  return (size_t)msi_popcount64(seg->hdr_back) * msi_os_page_size();
}
/* [p, p + n) in chunk 0 written: its pages are resident again, no longer counted returned */
static void hdr_touch(msi_segment_t *seg, const void *p, size_t n) {
  if (!seg->hdr_back) return;
  size_t ps = msi_os_page_size(), off = (size_t)((uintptr_t)p - (uintptr_t)seg);
  unsigned p0 = (unsigned)(off / ps), p1 = (unsigned)((off + n - 1) / ps);
  seg->hdr_back = (uint16_t)(seg->hdr_back & ~(((2u << p1) - 1) & ~((1u << p0) - 1)));
}

/* Pages of a span's chunks its trims gave back and counted returned (span_trim, span_trim_tail): marked in
   segment->chunk_back, so the later give-back of the chunks (msi_heap_segments_purge, or msi_heap_segment_release_span
   at once) counts only the rest, also when a span taking the dirty chunks meanwhile never wrote those pages. A span
   writes only below `touched` (msi_heap_span_carve), so its marks below it are stale: span_back_written drops them
   whenever the span trims again or leaves its chunks. [from, to) page-aligned, inside one span */
static void span_back_mark(msi_segment_t *seg, uintptr_t from, uintptr_t to, bool on) {
  size_t ps = msi_os_page_size();
  while (from < to) {
    uintptr_t off = from - (uintptr_t)seg, end = ((off >> MSI_HEAP_CHUNK_SHIFT) + 1) << MSI_HEAP_CHUNK_SHIFT;
    unsigned c = (unsigned)(off >> MSI_HEAP_CHUNK_SHIFT), p0 = (unsigned)((off & (MSI_HEAP_CHUNK - 1)) / ps);
    if (end > to - (uintptr_t)seg) end = to - (uintptr_t)seg;
    uint32_t bits = ((1u << (p0 + (unsigned)((end - off) / ps))) - 1) & ~((1u << p0) - 1);
    seg->chunk_back[c] = (uint16_t)(on ? seg->chunk_back[c] | bits : seg->chunk_back[c] & ~bits);
    from = (uintptr_t)seg + end;
  }
}
static msi_segment_t *span_segment(const msi_span_t *s) {
  return (msi_segment_t *)(s->base & ~(MSI_HEAP_SEG_SIZE - 1));
}
/* the pages s wrote (below `touched`) are resident: no longer marked given back */
static void span_back_written(msi_span_t *s) {
  span_back_mark(span_segment(s), span_chunk(s), msi_align_up(s->base + s->touched, msi_os_page_size()), false);
}
/* s's pages [from, to), below `touched`, given back by a trim: counted, and marked until written again */
void msi_heap_span_trimmed(msi_span_t *s, uintptr_t from, uintptr_t to) {
  msi_heap_chunks_purged(to - from);
  span_back_written(s);
  span_back_mark(span_segment(s), from, to, true);
}
/* the bytes marked given back in the chunks of mask m, unmarked: their give-back now counts the rest */
static size_t chunks_back_take(msi_segment_t *seg, uint64_t m) {
  size_t pages = 0;
  for (; m; m &= m - 1) {
    unsigned c = (unsigned)__builtin_ctzll(m);
    pages += (size_t)msi_popcount64(seg->chunk_back[c]);
    seg->chunk_back[c] = 0;
  }
  return pages * msi_os_page_size();
}

/* gives a span's chunks back to its segment. purge_now: the pages go back to the OS at once (MADV_DONTNEED: not
   MADV_FREE, which leaves them in RSS); else they stay resident ("dirty") until the purge finds them idle for
   MEMSPACE_PURGE_DELAY, and a span allocated meanwhile reuses them without page faults. */
void msi_heap_segment_release_span(msi_span_t *s, bool purge_now, uint32_t idle_since) {
  span_back_written(s); /* (`touched` counts from its base as it was) */
  s->base = span_chunk(s); /* (the next span here sets its colour) */
  msi_segment_t *seg = span_segment(s);
  unsigned at = (unsigned)((s->base - (uintptr_t)seg) >> MSI_HEAP_CHUNK_SHIFT), n = s->nchunks;
  size_t bytes = (size_t)n * MSI_HEAP_CHUNK;
  uint64_t bits = (n == 64 ? ~0ull : ((1ull << n) - 1)) << at;
#if MSI_HEAP_SECURE
  if (s->guarded && !msi_heap_guard_remove(s->base + bytes - MSI_HEAP_GUARD)) {
    bits &= ~(1ull << (at + n - 1)); /* the guard's chunk never free again: a span there would fault */
    if (!purge_now) msi_heap_note_idle(-(int64_t)MSI_HEAP_CHUNK); /* (nor dirty: no purge takes it off idle) */
  }
  s->guarded = 0;
#endif
  if (purge_now) {
    msi_os_purge((void *)s->base, bytes);
    msi_heap_chunks_purged(bytes - chunks_back_take(seg, bits));
  }
  atomic_fetch_add_explicit(&msi_heap_returned_spans[s->last_cls], 1, memory_order_relaxed);
  s->touched = 0; /* the chunks may be purged, or taken by a span starting elsewhere */
  s->kept = 0;    /* (and its free lists with them) */
  msi_lock(&seg_lock);
  for (unsigned i = 0; i < n; i++) MSI_SEEN_SET(seg->map[at + i], 0);
  MSI_SEEN_SET(s->state, MSI_SPAN_FREE);
  MSI_SEEN_SET(s->nchunks, 0);
  MSI_SEEN_SET(seg->free_mask, seg->free_mask | bits);
  seg_avail_update(seg);
  if (!purge_now) { /* the segment's dirty_ms: when its oldest dirty chunk became idle */
    if (!seg->dirty_mask || (int32_t)(idle_since - seg->dirty_ms) < 0) seg->dirty_ms = idle_since;
    MSI_SEEN_SET(seg->dirty_mask, seg->dirty_mask | bits);
  }
  msi_heap_t *o = seg->owner; /* its owner looks at the lowest segment with room first */
  if (o && (!o->seg || seg < o->seg)) o->seg = seg;
  msi_unlock(&seg_lock);
  if (!purge_now) msi_maint_wake(); /* resident chunks for the purge (a sleeping maintenance thread wakes) */
}

/* returns idle dirty chunks to the OS; the chunks leave the free mask while their pages are dropped. A segment without
   dirty chunks, as its mask reads unlocked (MSI_SEEN: a chunk made dirty meanwhile waits for the next pass), costs no
   trip through the segments' lock: each pass of the maintenance thread would otherwise take it once per segment,
   against the threads taking spans. The pass drops the pages without seg_lock, so a fork meanwhile (another thread's)
   would leave the chunks to the child neither free nor dirty, never used again: they are noted in segment->purging
   (msi_heap_seg_purging_n of them) and a child finishes the pass (msi_heap_purge_pending_finish, from msi_fork_heap).
   Their returned bytes are counted when the pass takes them (the child does not count them again) */
size_t msi_heap_seg_purging_n; /* (under seg_lock) */
/* the segment whose chunks this thread's pass holds (msi_heap_segments_purge): a child forked by a signal handler that
   interrupted the pass leaves them to it, since the pass resumes there and finishes them itself */
static _Thread_local msi_segment_t *purging_here;
void (*msi_heap_purge_hook)(msi_segment_t *seg, uint64_t chunks);
/* the pages of seg's chunks in m dropped, neighbouring chunks in one call */
static void chunks_drop(msi_segment_t *seg, uint64_t m) {
  for (unsigned i = 0; i < MSI_HEAP_SEG_CHUNKS;) {
    if (!(m >> i & 1)) { i++; continue; }
    unsigned j = i;
    while (j < MSI_HEAP_SEG_CHUNKS && (m >> j & 1)) j++;
    msi_os_purge((char *)seg + (size_t)i * MSI_HEAP_CHUNK, (size_t)(j - i) * MSI_HEAP_CHUNK);
    i = j;
  }
}
/* the chunks a pass took (seg->purging) back in the free mask (under seg_lock) */
static void chunks_purge_done(msi_segment_t *seg) {
  MSI_SEEN_SET(seg->free_mask, seg->free_mask | seg->purging);
  seg->purging = 0;
  msi_heap_seg_purging_n--;
  seg_avail_update(seg);
}
void msi_heap_segments_purge(uint32_t now, uint32_t delay, bool force) {
  msi_segment_t *outer = purging_here; /* (a pass in a signal handler that interrupted this thread's own) */
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_acquire);
  for (uintptr_t off = 0; off < top; off += MSI_HEAP_SEG_SIZE) {
    msi_segment_t *seg = (msi_segment_t *)(msi_heap_g.base + off);
    if (!MSI_SEEN(seg->dirty_mask)) continue;
    msi_lock(&seg_lock);
    uint64_t m = seg->dirty_mask;
    if (!m || seg->purging || !(force || now - seg->dirty_ms >= delay)) { /* (another pass's: the next one's) */
      msi_unlock(&seg_lock);
      continue;
    }
    MSI_SEEN_SET(seg->dirty_mask, 0);
    MSI_SEEN_SET(seg->free_mask, seg->free_mask & ~m);
    seg_avail_update(seg);
    seg->purging = m;
    msi_heap_seg_purging_n++;
    purging_here = seg;
    size_t bytes = (size_t)msi_popcount64(m) * MSI_HEAP_CHUNK;
    msi_heap_chunks_purged(bytes - chunks_back_take(seg, m));
    msi_heap_note_idle(-(int64_t)bytes);
    msi_unlock(&seg_lock);
    if (msi_heap_purge_hook) msi_heap_purge_hook(seg, m);
    chunks_drop(seg, m);
    msi_lock(&seg_lock);
    chunks_purge_done(seg);
    purging_here = outer;
    msi_unlock(&seg_lock);
  }
}
/* a child forked while another thread's purge pass held chunks (seg->purging) does that pass's work */
void msi_heap_purge_pending_finish(void) {
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_acquire);
  for (uintptr_t off = 0; off < top && msi_heap_seg_purging_n; off += MSI_HEAP_SEG_SIZE) {
    msi_segment_t *seg = (msi_segment_t *)(msi_heap_g.base + off);
    if (seg_is_released(off >> MSI_HEAP_SEG_SHIFT) || !seg->purging || seg == purging_here) continue;
    chunks_drop(seg, seg->purging);
    chunks_purge_done(seg);
  }
}

/* Idle segments. A segment with every chunk free and purged (idle for the purge delay: msi_heap_segments_purge) and no
   mini span, serving no live thread, holds only its header's pages: a program whose burst of threads has ended (a
   thread-per-connection server after a burst of connections) would keep a segment per thread of the burst, 4 MiB mapped
   and a few pages resident each, however long it idles. Each pass keeps the lowest SEG_KEEP of them mapped with chunk 0
   past its first page given back (bare: the next threads' spans take them without a system call) and releases the rest
   whole (segment_release, read back by segment_revive). SEG_KEEP is twice the CPUs the process may run on, 4 to 64: a
   burst of new threads runs that many at a time at most, and the next burst's first threads find their segments mapped;
   each further one maps its segment again (one mmap, beside the one for its stack glibc makes past its stack cache). */
static _Atomic unsigned seg_keep_n;
unsigned msi_heap_seg_keep(void) {
  unsigned k = atomic_load_explicit(&seg_keep_n, memory_order_relaxed);
  if (!k) {
    k = 2 * msi_os_cpu_count();
    k = k < 4 ? 4 : k > 64 ? 64 : k;
    atomic_store_explicit(&seg_keep_n, k, memory_order_relaxed);
  }
  return k;
}
/* n neighbouring idle segments from seg (msi_heap_segments_reclaim), out of the free masks, go back whole in one call
   (see seg_released) */
static void segments_release(msi_segment_t *seg, size_t n) {
  if (msi_heap_reclaim_hook) msi_heap_reclaim_hook(seg, n);
  size_t bytes = n * MSI_HEAP_SEG_SIZE;
  void *p = SEG_REMAP ? msi_os_mmap(seg, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0)
                      : (msi_os_madvise(seg, bytes, MADV_DONTNEED), (void *)seg);
  bool fresh = p != (void *)seg && /* refused (the mapping limit: a read-only range inside the segments splits
                                      their mapping): mapped afresh, new segments' zeros (the refused call may have
                                      unmapped them) */
               msi_os_mmap(seg, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == (void *)seg;
  /* both refused: at the mapping limit the kernel refuses before it changes anything, so the segments are as they
     were and go back to the free masks (a later pass tries again); a range the refused calls unmapped is released */
  bool intact = p != (void *)seg && !fresh && msi_os_madvise(seg, bytes, MADV_NORMAL) == 0;
  msi_lock(&seg_lock);
  for (size_t i = 0; i < n; i++) {
    msi_segment_t *s = (msi_segment_t *)((uintptr_t)seg + i * MSI_HEAP_SEG_SIZE);
    seg_pending_set(seg_pending_release, s, false);
    if (fresh) {
      atomic_fetch_sub_explicit(&msi_heap_counters.segments, 1, memory_order_relaxed);
      msi_os_count_decommit(MSI_HEAP_CHUNK);
      segment_init(s);
      seg_avail_update(s);
      continue;
    }
    if (intact) { /* (its header's bytes were counted returned: not given back) */
      atomic_fetch_sub_explicit(&msi_heap_counters.returned_bytes, MSI_HEAP_CHUNK - header_back(s), memory_order_relaxed);
      MSI_SEEN_SET(s->free_mask, SEG_ALL_FREE);
      seg_avail_update(s);
      continue;
    }
    seg_released_set(seg_index(s), true); /* (segment_revive maps it again) */
    atomic_fetch_sub_explicit(&msi_heap_counters.segments, 1, memory_order_relaxed);
    msi_os_count_decommit(MSI_HEAP_CHUNK); /* its header's chunk (segment_init); the others were purged */
  }
  msi_unlock(&seg_lock);
}
/* an idle segment a pass took (msi_heap_segments_reclaim) to keep mapped: the descriptors past its first page and
   the mini spans' area (a guard's page at its end left alone) go back; then, under seg_lock, it is back in the free
   masks */
static void segment_bare(msi_segment_t *seg) {
  uintptr_t ps = msi_os_page_size();
  msi_os_madvise((char *)seg + ps, MSI_HEAP_CHUNK - MSI_HEAP_GUARD - ps, MADV_DONTNEED);
  msi_lock(&seg_lock);
  seg_pending_set(seg_pending_bare, seg, false);
  MSI_SEEN_SET(seg->bare, 1);
  MSI_SEEN_SET(seg->free_mask, SEG_ALL_FREE);
  seg_avail_update(seg);
  msi_unlock(&seg_lock);
}
/* a child forked while another thread's pass held segments (seg_pending_release) does that pass's work */
void msi_heap_reclaim_pending_finish(void) {
  for (size_t w = 0; w < MAX_SEGMENTS / 64 && msi_heap_seg_pending_n; w++) {
    while (seg_pending_bare[w]) segment_bare(seg_at(w * 64 + (size_t)__builtin_ctzll(seg_pending_bare[w])));
    while (seg_pending_release[w]) segments_release(seg_at(w * 64 + (size_t)__builtin_ctzll(seg_pending_release[w])), 1);
  }
}
/* this thread's reclaim passes under way: a child forked by a signal handler that interrupted one leaves every
   pending segment as it is (the pass resumes there and finishes its own; another thread's, taken at the same
   time, stays out of use in that child rather than be given back twice) */
_Thread_local unsigned msi_heap_reclaim_here;
void msi_heap_segments_reclaim(unsigned keep) {
  int saved = errno; /* (a single-threaded program purges from malloc and free) */
  msi_heap_reclaim_here++;
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_acquire);
  unsigned kept = 0;
  uintptr_t ps = msi_os_page_size();
  msi_segment_t *run = NULL; /* neighbouring segments to release, from run */
  size_t run_n = 0;
  for (uintptr_t off = 0; off < top; off += MSI_HEAP_SEG_SIZE) {
    msi_segment_t *seg = (msi_segment_t *)(msi_heap_g.base + off);
    if (run_n && (uintptr_t)run + run_n * MSI_HEAP_SEG_SIZE != (uintptr_t)seg) {
      segments_release(run, run_n);
      run_n = 0;
    }
    if (seg_is_released(off >> MSI_HEAP_SEG_SHIFT) || MSI_SEEN(seg->free_mask) != SEG_ALL_FREE ||
        MSI_SEEN(seg->dirty_mask) || MSI_SEEN(seg->mini_used))
      continue;
    if (kept < keep && MSI_SEEN(seg->bare)) { kept++; continue; }
    msi_lock(&seg_lock);
    if (seg->free_mask != SEG_ALL_FREE || seg->dirty_mask || seg->mini_used || !seg_claimable(seg)) {
      msi_unlock(&seg_lock);
      continue;
    }
    bool release = kept >= keep;
    MSI_SEEN_SET(seg->free_mask, 0); /* no heap takes it meanwhile */
    seg_avail_update(seg);
    seg->owner = NULL;
    /* its header's bytes not yet counted returned: all of chunk 0 (released), or past its first page (bare) */
    msi_heap_chunks_purged((release ? MSI_HEAP_CHUNK : MSI_HEAP_CHUNK - MSI_HEAP_GUARD - ps) - header_back(seg));
    if (!release) seg->hdr_back = hdr_pages_all(); /* (given back next: segment_bare; a release refused
                                                        finds the segment as it was) */
    seg_pending_set(release ? seg_pending_release : seg_pending_bare, seg, true);
    msi_unlock(&seg_lock);
    if (release) {
      if (!run_n++) run = seg;
      continue;
    }
    if (msi_heap_reclaim_hook) msi_heap_reclaim_hook(seg, 0);
    segment_bare(seg);
    kept++;
  }
  if (run_n) segments_release(run, run_n);
  msi_heap_reclaim_here--;
  errno = saved;
}

