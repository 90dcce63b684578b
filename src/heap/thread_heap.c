/* SPDX-License-Identifier: MIT */
/* thread_heap.c: thread heaps: the empty heap a new thread starts with, a heap made or adopted at a thread's
   first allocation, its flush and orphaning at the thread's exit, orphans' spans taken by the living, and the
   collection of orphans by the purge passes. */
#include "heap_internal.h"

/* The empty heap: a new thread's heap pointer starts at the empty heap whose current spans are all its empty
   span, so the fast path needs no initialisation test. Of the empty heap only current_at[] is ever read (the
   fast path's load; every other use compares a heap's address with it first), so only current_at[] exists, with
   the empty span it names: a constant, not a whole heap in .data, where its 3 KiB would take a page more for
   the dynamic loader to copy in every process (heap.h MSI_EMPTY_HEAP). Its entries are offsets, constants, where
   pointers would need a relocation each in every process. */
const struct msi_empty_heap_s msi_empty_heap = {
    .current_at = {[0 ... MSI_HEAP_CLASSES - 1] = MSI_HEAP_EMPTY_AT},
    .empty = {.free = (msi_block_t *)&msi_empty_heap.empty, .key = MSI_EMPTY_SPAN_KEY}};
__thread msi_heap_t *msi_tls_heap = MSI_EMPTY_HEAP;

MSI_START_BSS msi_heap_t *_Atomic msi_heap_all;
MSI_START_BSS msi_heap_t *_Atomic msi_heap_orphans;
MSI_START_BSS static uint32_t heap_count;
/* orphans a collector or a span's taker holds off the list (msi_heap_orphans_collect, msi_heap_orphan_span_take) */
int msi_heap_orphans_busy;
/* those of msi_heap_orphans_busy this thread holds: a fork (msi_fork_heap) or a signal handler's call on it
   (malloc_trim) waits for the others only, since the thread's own end only after the handler returns */
_Thread_local int msi_heap_orphans_held_here;
/* d orphans (or lists) taken off the list (1) or put back (-1) by this thread; under heaps_lock */
static void orphans_hold(int d) {
  msi_heap_orphans_busy += d;
  msi_heap_orphans_held_here += d;
}
/* another thread holds orphans off the list; under heaps_lock */
bool msi_heap_orphans_held_elsewhere(void) { return msi_heap_orphans_busy > msi_heap_orphans_held_here; }
static uint8_t *heap_pool;
static size_t heap_pool_left;
/* The first thread's heap is static storage: a single-threaded program (most processes) maps no pool of heaps,
   one system call and one kernel mapping less at its first allocation. */
MSI_START_BSS static _Alignas(MSI_CACHE_LINE) msi_heap_t first_heap;
MSI_START_BSS static bool first_heap_taken;

/* a zeroed heap's classes, each on the heap's empty span */
static void heap_reset_current(msi_heap_t *h) {
  h->empty.free = msi_span_list_end(&h->empty);
  h->empty.key = MSI_EMPTY_SPAN_KEY;
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) msi_heap_set_current_empty(h, c);
}

/* sz bytes (rounded up to cache lines) of zeroed pool memory, never given back; NULL: no memory (errno set).
   Under heaps_lock */
static void *pool_take(size_t sz) {
  sz = msi_align_up(sz, MSI_CACHE_LINE);
  if (heap_pool_left < sz) {
    int saved = errno;
    void *p = msi_os_commit_map(NULL, 256 * MSI_KiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED && msi_heap_fit_limit()) { /* RLIMIT_AS lowered (msi_heap_fit_limit_locked) */
      p = msi_os_commit_map(NULL, 256 * MSI_KiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) errno = saved;
    }
    if (p == MAP_FAILED) return NULL;
    heap_pool = p;
    heap_pool_left = 256 * MSI_KiB;
  }
  void *p = heap_pool;
  heap_pool += sz;
  heap_pool_left -= sz;
  return p;
}

/* the chains of a heap that has none (heap.h msi_heap_t rb): read-only, no span */
const msi_rchain_t msi_heap_rchains_none[MSI_HEAP_RSLOTS];

bool msi_heap_rchains_get(msi_heap_t *h) {
  int saved = errno;
  msi_lock(&heaps_lock);
  msi_rchain_t *rb = pool_take(sizeof(msi_rchain_t) * MSI_HEAP_RSLOTS);
  msi_unlock(&heaps_lock);
  errno = saved; /* (free leaves errno alone) */
  if (!rb) return false;
  h->rb = rb;
  return true;
}

static msi_heap_t *heap_new(void) {
  msi_lock(&heaps_lock);
  msi_heap_t *h = msi_heap_orphans;
  if (h) {
    msi_heap_orphans = h->next_orphan;
    atomic_store_explicit(&h->orphan, 0, memory_order_relaxed);
    h->intact = false; /* (kept whole: the new thread goes on with its spans and cache) */
    h->carved_bytes = 0; /* (the new thread's own figure: span_populate) */
    h->idle_seen = h->reclaimed = h->minis_idle_seen = false;
    if (atomic_load_explicit(&h->gone, memory_order_relaxed)) /* (a forked child's: its thread now) */
      atomic_store_explicit(&h->gone, false, memory_order_relaxed);
    msi_unlock(&heaps_lock);
    return h;
  }
  if (!first_heap_taken) {
    first_heap_taken = true;
    h = &first_heap;
  } else if (!(h = pool_take(sizeof(msi_heap_t)))) {
    msi_unlock(&heaps_lock);
    return NULL;
  }
  /* h is zero already: the first heap is static storage, the others fresh anonymous pages of the pool, each handed
     out once (a heap whose thread ends is kept as an orphan, never given back). No memset: a compiler may make it
     a call into the C library, one more symbol for the loader to bind in every process (test_startup) */
  heap_reset_current(h);
  h->rb = (msi_rchain_t *)msi_heap_rchains_none; /* (never written through: msi_heap_rchains_get replaces it) */
  h->id = ++heap_count;
  h->next_all = atomic_load_explicit(&msi_heap_all, memory_order_relaxed);
  atomic_store_explicit(&msi_heap_all, h, memory_order_release);
  msi_unlock(&heaps_lock);
  return h;
}

/* empties a heap's span cache: into the global cache, or straight back to the OS (release) */
void msi_heap_cache_drain(msi_heap_t *h, bool release) {
  msi_span_t *lists[MSI_HEAP_MAX_SPAN_CHUNKS + 1];
  msi_lock(&h->cache_lock);
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
    lists[n] = h->cache[n].head;
    h->cache[n].head = NULL;
    h->cache[n].count = 0;
  }
  msi_unlock(&h->cache_lock);
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
    if (release) msi_heap_release_chain(lists[n]);
    else
      for (msi_span_t *s = lists[n], *next; s; s = next) {
        next = s->next;
        msi_heap_span_cache_put(NULL, s);
      }
  }
}

/* hands every span of a heap that can go back, keeps the heap's live spans for the next adopter */
void msi_heap_flush(msi_heap_t *h, bool orphaning) {
  msi_heap_remote_process(h, !orphaning, false);
  msi_heap_take_spares(h, !orphaning);
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    if (msi_heap_current_empty(h, c)) continue;
    msi_span_t *s = msi_heap_current(h, c);
    msi_heap_set_current_empty(h, c);
    msi_heap_span_collect(s, true, false); /* a list parked by the allocation path */
    if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) msi_heap_span_retire(h, s, !orphaning);
    else if (span_has_free(s) && !s->in_partial) partial_push(h, s);
    else if (!span_has_free(s) && s->carved < s->capacity && !s->in_partial) { msi_heap_span_carve(h, s); partial_push(h, s); }
    else if (!span_has_free(s)) span_detach_full(s); /* the adopter's first free files it */
  }
  if (orphaning) msi_heap_cache_drain(h, false);
}

/* this thread's heap was orphaned at its exit (msi_heap_thread_exit): a later allocation comes from another key's
   destructor, maybe in glibc's last round of them */
__thread bool msi_heap_exited;

/* A program that starts a thread per task (a server's thread per connection, python's ThreadingHTTPServer) has a new
   thread take the heap of the one that just exited. Flushed at the exit, each such thread would give its empty spans to
   the global cache (trimmed there: a madvise) and the next one would take them back from it, faulting the pages in
   again, a few page faults and a system call per thread. So the heap stays whole at the exit (its current spans,
   partial lists and span cache: the next thread goes on where the last one stopped, with no lock, system call or page
   fault) while a maintenance thread is there to flush it: the purge pass that finds it an orphan for a whole period
   (msi_heap_orphans_collect) does what the exit did, so a dead thread's spans reach the global cache at most two
   periods (delay/8 each, 10 ms-1 s) later. Flushed at once without that thread (a process's first exit, a forked child,
   MEMSPACE_PURGE_DELAY=-1), while memory is tight, or with no global cache (preset `none`: nothing is kept). */
static bool heap_keep_at_exit(void) {
  return msi_maint_running() && msi_opt(MS_OPTION_PURGE_DELAY) >= 0 && msi_heap_limits.global_bucket &&
         !(atomic_load_explicit(&msi_maint_tight, memory_order_relaxed) & MSI_TIGHT_MEMORY);
}

void msi_heap_thread_exit(void *arg) {
  msi_heap_t *h = arg;
  if (!h || h == MSI_EMPTY_HEAP) return;
  msi_heap_exited = true;
  msi_heap_remote_flush(h);
  bool keep = heap_keep_at_exit();
  if (!keep) msi_heap_flush(h, true);
  msi_tls_heap = MSI_EMPTY_HEAP;
  atomic_fetch_sub_explicit(&msi_heap_counters.threads_live, 1, memory_order_relaxed);
  msi_lock(&heaps_lock);
  atomic_store_explicit(&h->orphan, 1, memory_order_relaxed);
  h->intact = keep;
  h->orphan_pass = atomic_load_explicit(&msi_heap_counters.purges, memory_order_relaxed);
  h->next_orphan = msi_heap_orphans;
  msi_heap_orphans = h;
  msi_unlock(&heaps_lock);
  msi_maint_kick();
}

/* The maintenance thread (or a purge) acts as owner of orphaned heaps: flushes those kept whole at their exit
   once a whole purge period passed since (all: each of them now), and collects the remote frees of the flushed.
   The list is taken off while it works (msi_heap_orphans_busy counts such lists, under heaps_lock): a thread starting
   meanwhile makes a heap of its own. */

/* An orphan flushed (not kept whole) that holds no live block: no span serving a class (spans_held counts those on its
   partial lists, the full ones detached from them and the spares), nothing on its remote-span stack, and every mini
   span of its own empty (they are never filed: found through mini_seg[]). The caller holds the orphan off the list
   (msi_heap_orphans_collect): no thread adopts it meanwhile, and no other thread frees into it (every block it handed
   out was seen free) */
static bool orphan_empty(msi_heap_t *h) {
  if (h->intact || atomic_load_explicit(&h->spans_held, memory_order_relaxed) ||
      atomic_load_explicit(&h->remote, memory_order_acquire))
    return false;
#if MSI_HEAP_MINI
  for (unsigned i = 0; i < h->mini_nseg; i++) {
    msi_segment_t *seg = h->mini_seg[i];
    for (unsigned d = 0, n = MSI_SEEN(seg->mini_descs); d < n; d++) {
      msi_span_t *m = msi_seg_mini(seg, d);
      if (MSI_SEEN(m->owner) == h &&
          (msi_span_used(m) || atomic_load_explicit(&m->xfree, memory_order_acquire)))
        return false;
    }
  }
#endif
  return true;
}
#if MSI_HEAP_MINI
/* a mini span of h that holds no block (an orphan's: no thread allocates from it again) */
static bool mini_span_empty(const msi_heap_t *h, const msi_segment_t *seg, unsigned d) {
  const msi_span_t *m = msi_seg_mini(seg, d);
  return MSI_SEEN(m->owner) == h && MSI_SEEN(m->state) == MSI_SPAN_ACTIVE &&
         !msi_span_used(m) && !atomic_load_explicit(&m->xfree, memory_order_acquire);
}
#endif
/* A flushed orphan's mini spans that hold no block leave it (state free, no owner: a free of one of their blocks is a
   double free, msi_heap_bad_small); all: every one of them (the orphan holds none). A segment whose mini spans all left
   has its mini area taken back and given back whole, unless it is idle now (msi_heap_segments_reclaim gives back its
   pages); else the area's pages that hold no mini span in use go back. Under seg_lock: no heap takes a mini span there
   meanwhile. */
static void orphan_minis_reclaim(msi_heap_t *h, bool all) {
#if MSI_HEAP_MINI
  size_t ps = msi_os_page_size();
  unsigned npages = msi_heap_mini_pages(), per_page = (unsigned)(ps / MSI_HEAP_MINI_SIZE);
  for (unsigned i = 0; i < h->mini_nseg; i++) {
    msi_segment_t *seg = h->mini_seg[i];
    uint16_t busy = 0; /* pages holding a mini span in use (another heap's, or this one's with blocks) */
    bool kept = false; /* a mini span of h's stays here (one with blocks) */
    unsigned used = seg->mini_used;
    for (unsigned d = 0, n = seg->mini_descs; d < n; d++) {
      msi_span_t *m = msi_seg_mini(seg, d);
      if (MSI_SEEN(m->owner) == h && (all || mini_span_empty(h, seg, d))) {
        MSI_SEEN_SET(m->owner, NULL);
        MSI_SEEN_SET(m->state, MSI_SPAN_FREE);
        continue;
      }
      kept |= MSI_SEEN(m->owner) == h;
      if (m->state == MSI_SPAN_ACTIVE && per_page) {
        unsigned g = msi_seg_mini_granule(seg, m), k = msi_heap_mini_granules(m->block_size);
        busy = (uint16_t)(busy | 1u << (g / per_page) | 1u << ((g + k - 1) / per_page));
      } else if (m->state == MSI_SPAN_ACTIVE) {
        busy = 1;
      }
    }
    if (!kept) { /* none of h's mini spans left here: h forgets the segment, which may go idle and be released
                    (msi_heap_segments_reclaim) before h's next reclaim */
      h->mini_seg[i--] = h->mini_seg[--h->mini_nseg];
    }
    if (!busy) {
      if (seg->mini_used) {
        MSI_SEEN_SET(seg->mini_used, 0);
        MSI_SEEN_SET(seg->mini_descs, 0);
        seg->mini_skipped[0] = seg->mini_skipped[1] = 0;
      }
      if (seg->free_mask == SEG_ALL_FREE) continue; /* an idle segment now */
    }
    /* the pages to give back, in runs: free of spans in use, not given back since their last use, and holding a
       granule handed out (those past mini_used were never written since the area was last given back, or since
       the segment was mapped: nothing to give back, nothing to count) */
    unsigned at = msi_heap_mini_pages_at(), below = (unsigned)((used * MSI_HEAP_MINI_SIZE + ps - 1) / ps);
    uint16_t give = (uint16_t)(msi_heap_mini_pages_all() & ~(busy << at) & ~seg->hdr_back & (((1u << below) - 1) << at));
    for (unsigned p = at; p < at + npages;) {
      if (!(give >> p & 1)) { p++; continue; }
      unsigned q = p;
      while (q < at + npages && (give >> q & 1)) q++;
      if (msi_os_madvise((char *)seg + p * ps, (q - p) * ps, MADV_DONTNEED) == 0) {
        msi_heap_chunks_purged((q - p) * ps);
        seg->hdr_back = (uint16_t)(seg->hdr_back | (((1u << q) - 1) & ~((1u << p) - 1))); /* (header_back) */
      }
      p = q;
    }
  }
#else
  (void)h, (void)all;
#endif
}
/* the orphan has mini spans of its own that hold no block (msi_heap_orphans_collect: it holds a live block
   elsewhere) */
static bool orphan_minis_idle(const msi_heap_t *h) {
#if MSI_HEAP_MINI
  for (unsigned i = 0; i < h->mini_nseg; i++)
    for (unsigned d = 0, n = MSI_SEEN(h->mini_seg[i]->mini_descs); d < n; d++)
      if (mini_span_empty(h, h->mini_seg[i], d)) return true;
#else
  (void)h;
#endif
  return false;
}
/* An empty orphan idle for the purge delay goes back to a new heap's state: its mini spans leave it
   (orphan_minis_reclaim). Its segments, once every chunk is free, are then idle segments (msi_heap_segments_reclaim).
   The heap itself stays on the orphan list, for the next new thread. */
static void orphan_reclaim(msi_heap_t *h) {
  int saved = errno;
  msi_lock(&seg_lock);
  orphan_minis_reclaim(h, true);
  h->mini_nseg = 0;
  h->mini_total = 0;
  memset(h->mini_taken, 0, sizeof h->mini_taken);
  h->seg = NULL;
  msi_unlock(&seg_lock);
  h->reclaimed = true;
  errno = saved;
}

/* a state of an orphan (`idle`: empty, or with empty mini spans) seen by consecutive passes: true when it has
   lasted `delay` ms since the pass that first saw it (*since), or at once under `all`; *seen is cleared when it
   ends or is acted on */
static bool idle_for(bool idle, bool *seen, uint32_t *since, bool all, uint32_t now, uint32_t delay) {
  if (idle && !all && !*seen) {
    *seen = true;
    *since = now;
    return false;
  }
  bool due = idle && (all || now - *since >= delay);
  if (!idle || due) *seen = false;
  return due;
}

/* all: every orphan flushed, and the empty ones reclaimed at once; else after `delay` ms idle (purge's) */
void msi_heap_orphans_collect(bool all, uint32_t now, uint32_t delay) {
  if (!atomic_load_explicit(&msi_heap_orphans, memory_order_relaxed)) return;
  uint64_t pass = atomic_load_explicit(&msi_heap_counters.purges, memory_order_relaxed);
  msi_lock(&heaps_lock);
  msi_heap_t *list = msi_heap_orphans;
  msi_heap_orphans = NULL;
  if (list) orphans_hold(1);
  msi_unlock(&heaps_lock);
  if (!list) return;
  msi_heap_t *last = NULL;
  for (msi_heap_t *h = list; h; h = h->next_orphan) {
    last = h;
    if (h->intact && (all || pass - h->orphan_pass >= 2)) { /* (the pass after its exit may come at once) */
      msi_heap_flush(h, true);
      h->intact = false;
    }
    if (h->intact) continue; /* its adopter collects its remote frees */
    msi_heap_remote_process(h, false, false);
    for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++)
      for (msi_span_t *s = h->partial[c], *next; s; s = next) {
        next = s->next;
        msi_heap_span_collect(s, true, false); /* parked lists */
        if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) msi_heap_span_retire(h, s, false);
      }
    if (h->reclaimed) continue;
    bool empty = orphan_empty(h);
    if (idle_for(empty, &h->idle_seen, &h->idle_ms, all, now, delay)) {
      orphan_reclaim(h);
    } else if (!empty && idle_for(orphan_minis_idle(h), &h->minis_idle_seen, &h->minis_idle_ms, all, now, delay)) {
      /* a live block left: its empty mini spans go back after the delay all the same */
      int saved = errno;
      msi_lock(&seg_lock);
      orphan_minis_reclaim(h, false);
      msi_unlock(&seg_lock);
      errno = saved;
    }
  }
  msi_lock(&heaps_lock);
  last->next_orphan = msi_heap_orphans;
  msi_heap_orphans = list;
  orphans_hold(-1);
  msi_unlock(&heaps_lock);
}

/* every orphan flushed, also those another collector held when this one looked (it puts them back soon); those
   the calling thread holds itself (msi_heap_orphans_held_here) are not waited for */
void msi_heap_orphans_flush(void) {
  msi_heap_t *me = msi_tls_heap;
  if (me != MSI_EMPTY_HEAP) msi_heap_remote_flush(me); /* the caller's chain may hold blocks of the orphans */
  for (;;) {
    msi_heap_orphans_collect(true, 0, 0);
    msi_lock(&heaps_lock);
    bool busy = msi_heap_orphans_held_elsewhere();
    msi_unlock(&heaps_lock);
    if (!busy) return;
    msi_os_yield();
  }
}

uint64_t msi_heap_threads_live(void) {
  if (!msi_heap_key_ok) return 0; /* no thread-exit destructor: no exit kicks the maintenance thread */
  return atomic_load_explicit(&msi_heap_counters.threads_live, memory_order_relaxed);
}

MSI_HOT_TEXT msi_heap_t *msi_heap_thread_init(void) {
  msi_heap_global_init();
  if (!msi_heap_g.ready) return NULL;
  msi_heap_t *h = heap_new();
  if (!h) return NULL;
  msi_tls_heap = h; /* before pthread_setspecific, which may allocate */
  if (atomic_fetch_add_explicit(&msi_heap_counters.threads_live, 1, memory_order_relaxed) >= 1 || h->id > 1)
    msi_maint_note_thread();
  if (msi_heap_key_ok) pthread_setspecific(msi_heap_key, h);
  return h;
}

/* An allocation by an exiting thread after its heap was orphaned (another key's destructor, a C++ thread_local's):
   served by a heap taken for this one allocation and orphaned again at once. A heap kept would stay attached to
   the dead thread when glibc runs no further round of destructors: each such thread would lose its heap's spans */
MSI_NOINLINE void *msi_heap_alloc_exiting(size_t size) {
  msi_heap_exited = false;
  void *p = msi_heap_small_alloc_slow(size);
  msi_heap_t *h = msi_tls_heap;
  if (h != MSI_EMPTY_HEAP) {
    /* orphaned here: the key's destructor must not again */
    if (msi_heap_key_ok) pthread_setspecific(msi_heap_key, NULL);
    msi_heap_thread_exit(h);
  }
  msi_heap_exited = true;
  return p;
}

/* A span of class cls from an orphaned heap (its thread ended, no thread adopted it yet) for h, which needs one and
   has none cached: the orphan's current span of the class, else the head of its partial list, when it holds free
   blocks or blocks other threads freed into it. A program whose threads pile up (each starts its successor and
   ends later: larson) has as many heaps as threads alive at once, and the heaps the ended ones left hold spans
   whose blocks the successors freed, out of reach of the living until a new thread adopts the whole heap or a
   purge pass flushes it, while the living carve fresh pages: taken span by span, they serve the classes instead.
   The orphan is taken off the list while it is looked at (as a purge pass takes the list: msi_heap_orphans_busy), its
   remote-span stack processed as its owner would (empty spans to the global cache), and the span changes owner
   (a relaxed store: the remote path reads the owner once the block is pushed). A remote free that read the old
   owner queues the span on the orphan's stack, before or after the change: msi_heap_remote_process hands it on
   (span_queue); the span is never retired meanwhile (its queued bit is set). At most STEAL_LOOK orphans are looked
   at, under heaps_lock: one holding a span of the class first, else one with remote frees waiting (which may give
   one). The orphan goes back where it was, so that the next thread adopts the heap its predecessor left intact
   (heap_new takes the list's head), not the one a span was taken from. */
#define STEAL_LOOK 8
static bool steal_worthy(msi_span_t *s) {
  return !msi_span_is_mini(s) && (span_has_free(s) || span_remote_waits(s));
}
static bool orphan_has_span(msi_heap_t *o, unsigned cls, bool remote) {
  if (remote) return atomic_load_explicit(&o->remote, memory_order_relaxed) != NULL;
  return (!msi_heap_current_empty(o, cls) && steal_worthy(msi_heap_current(o, cls))) || o->partial[cls];
}
/* the orphan to take a span from, unlinked (*prev: its predecessor then), or NULL; under heaps_lock */
static msi_heap_t *orphan_pick(unsigned cls, msi_heap_t **prev) {
  for (int remote = 0; remote < 2; remote++) {
    msi_heap_t *o = msi_heap_orphans, *p = NULL;
    for (unsigned i = 0; o && i < STEAL_LOOK; i++, p = o, o = o->next_orphan)
      if (orphan_has_span(o, cls, remote)) {
        if (p) p->next_orphan = o->next_orphan;
        else msi_heap_orphans = o->next_orphan;
        *prev = p;
        return o;
      }
  }
  return NULL;
}
/* o back after prev when prev is still among the first orphans, else at the head; under heaps_lock */
static void orphan_put_back(msi_heap_t *o, msi_heap_t *prev) {
  msi_heap_t *p = msi_heap_orphans;
  for (unsigned i = 0; prev && p && p != prev && i < 2 * STEAL_LOOK; i++) p = p->next_orphan;
  if (prev && p == prev) {
    o->next_orphan = p->next_orphan;
    p->next_orphan = o;
  } else {
    o->next_orphan = msi_heap_orphans;
    msi_heap_orphans = o;
  }
}
MSI_NOINLINE msi_span_t *msi_heap_orphan_span_take(msi_heap_t *h, unsigned cls) {
  uint64_t forced = atomic_load_explicit(&msi_heap_forced_passes, memory_order_acquire);
  msi_lock(&heaps_lock);
  msi_heap_t *prev = NULL, *o = orphan_pick(cls, &prev);
  if (o) orphans_hold(1);
  msi_unlock(&heaps_lock);
  if (!o) return NULL;
  msi_heap_remote_process(o, false, false);
  msi_span_t *s = NULL;
  if (!msi_heap_current_empty(o, cls) && steal_worthy(msi_heap_current(o, cls))) {
    s = msi_heap_current(o, cls);
    msi_heap_set_current_empty(o, cls);
  } else if ((s = o->partial[cls])) {
    partial_remove(o, s);
  }
  if (s) {
    atomic_fetch_sub_explicit(&o->spans_held, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->spans_held, 1, memory_order_relaxed);
    MSI_SEEN_SET(s->owner, h);
  }
  if (o->intact && atomic_load_explicit(&msi_heap_forced_passes, memory_order_acquire) != forced) {
    msi_heap_flush(o, true); /* a forced pass (memory pressure, ms_heap_collect(1)) began meanwhile and missed it */
    o->intact = false;
  }
  msi_lock(&heaps_lock);
  orphan_put_back(o, prev);
  orphans_hold(-1);
  msi_unlock(&heaps_lock);
  return s;
}

/* the empty current spans of the calling thread's heap leave their classes (memory pressure), its spares too */
void msi_heap_release_current(msi_heap_t *h) {
  msi_heap_take_spares(h, false);
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    msi_span_t *s = msi_heap_current(h, c);
    if (msi_heap_current_empty(h, c) || msi_span_used(s) != 0) continue;
    msi_heap_span_collect(s, true, false); /* a list parked by the allocation path */
    if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) {
      msi_heap_set_current_empty(h, c);
      msi_heap_span_retire(h, s, false);
    }
  }
}

/* ms_heap_collect for the calling thread: collect remote frees, give back empty spans and the thread's cache */
void msi_heap_thread_collect(bool force) {
  msi_heap_t *h = msi_tls_heap;
  if (h == MSI_EMPTY_HEAP) return;
  msi_heap_remote_flush(h);
  msi_heap_remote_process(h, false, false);
  if (force) msi_heap_take_spares(h, false);
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    for (msi_span_t *s = h->partial[c], *next; s; s = next) {
      next = s->next;
      msi_heap_span_collect(s, true, false); /* parked lists */
      if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) msi_heap_span_retire(h, s, false);
    }
    if (msi_heap_current_empty(h, c)) continue;
    msi_span_t *s = msi_heap_current(h, c);
    msi_heap_span_collect(s, true, false);
    if (force && msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) {
      msi_heap_set_current_empty(h, c);
      msi_heap_span_retire(h, s, false);
    }
  }
  msi_heap_cache_drain(h, force);
}

