/* SPDX-License-Identifier: MIT */
/* heap.c: the small-block heap's start-up and its allocation and free slow paths (the fast paths are inline in
   entry.h): refilling a class's current span, filing a span at a local free, remote (cross-thread) frees, and the
   mini spans of a class's first blocks. The helpers these paths inline are here or static inline in
   heap_internal.h. The design is described in docs/heap.md (with the map of the heap's files) and heap.h. */
#include "heap_internal.h"

MSI_START_BSS msi_heap_globals_t msi_heap_g;
MSI_START_BSS msi_heap_counters_t msi_heap_counters;
MSI_COLD_BSS _Atomic uint64_t msi_heap_returned_spans[MSI_HEAP_CLASSES];

MSI_START_DATA _Atomic int msi_heap_init_state; /* 0 none, 1 in progress, 2 done (read, then written) */
MSI_START_BSS pthread_key_t msi_heap_key;
MSI_START_BSS bool msi_heap_key_ok;

/* Mini spans (heap.h MSI_HEAP_MINI): a class of at most MSI_HEAP_MINI_MAX bytes that needs a span takes one of 512
   bytes to 2 KiB (msi_heap_mini_granules) from its heap's segment's chunk 0 first, up to MINI_PER_CLASS granules (4
   KiB) of them, while the segment has room: a short-lived program (a shell's commands) using a few blocks of many
   classes shares a page of blocks among several classes, where a span of its own per class would take a page each (a program such as `head` would touch
   several times the pages glibc's heap does). A mini span serves its class while it is current and leaves it when it
   runs out of blocks or took MINI_FREES local frees while current (counted in its cached_ms, which a span that is never
   cached does not use: a count in the heap would write its page at every such free, a copy-on-write fault in a shell's
   subshells): its blocks' frees take the free slow path (map[] leads to desc[0]), which a loop freeing and taking
   blocks of the class would pay at every free. It is never filed on a partial list, cached or given back: it stays its
   heap's, its blocks freed as they come (by its owner or remotely) and never handed out again once it left its class. A
   class's blocks past its mini spans, or once it took a normal span, come from normal spans. A heap takes at most
   MSI_HEAP_MINI_SPANS granules in all (mini_total), whichever segments its spans come from. */
MSI_START_BSS bool msi_heap_mini_off;
#define MINI_FREES 64
static inline bool mini_class(unsigned cls) { return MSI_HEAP_MINI && cls < MSI_HEAP_MINI_CLASSES; }
/* a free by its owner of p in a mini span s (from the free slow path: map[] led to desc[0]): the MINI_FREES-th
   local free of the class's current mini span makes it leave; then the fast path's free (an invalid p aborts) */
MSI_HOT_TEXT static void mini_free(msi_heap_t *h, void *p, msi_span_t *s) {
  unsigned c = s->cls;
  /* (a mini span is never cached: its count here) */
  if (msi_heap_is_current(h, c, s) && ++s->cached_ms >= MINI_FREES) {
    msi_heap_set_current_empty(h, c);
    h->mini_taken[c] = MINI_DONE;
  }
  msi_heap_free_owned(p, s, true);
}

bool msi_heap_ready_seen(void) {
  return atomic_load_explicit(&msi_heap_init_state, memory_order_acquire) == 2 && msi_heap_g.ready;
}

MSI_STARTUP_TEXT void msi_heap_global_init(void) {
  if (MSI_LIKELY(atomic_load_explicit(&msi_heap_init_state, memory_order_acquire) == 2)) return;
  msi_lock(&init_lock);
  if (atomic_load_explicit(&msi_heap_init_state, memory_order_acquire) != 0) { msi_unlock(&init_lock); return; }
  atomic_store(&msi_heap_init_state, 1);
  msi_init();
  msi_heap_set_preset((int)msi_opt(MS_OPTION_CACHE));
  msi_heap_checks = MSI_HEAP_CHECKS_BUILD || msi_opt(MS_OPTION_SECURE);
  /* secrets: the kernel's 16 random bytes for this process (AT_RANDOM), mixed with an address; the time only
     without them (reading the clock first faults in the vDSO's data page) */
  uint64_t rnd[2];
  if (!msi_heap_kernel_random(rnd)) rnd[0] = msi_now_ns();
  uintptr_t secret = (uintptr_t)rnd[0] * 0x9E3779B97F4A7C15ull;
  secret ^= (uintptr_t)&secret;
  msi_heap_g.secret = secret | 1 | (uintptr_t)1 << 63; /* odd, top bit set: heap.h msi_span_list_end */
  msi_heap_g.canary_secret = (rnd[1] ^ secret) * 0x94D049BB133111EBull;
  if (MSI_HEAP_SECURE && !(msi_heap_g.guard_markers = msi_heap_guard_probe()))
    msi_warning("heap (secure build): guard markers refused (%s: Linux before 6.13, or memory locked by "
                "mlockall): no guard pages between small spans (mprotect would split the heap's mappings), "
                "blocks of 64 KiB-1 MiB each take two mappings", MSI_ERRNO(errno));
  if (!msi_heap_region_init()) {
    msi_warning("heap: cannot reserve address space; every allocation fails");
    atomic_store(&msi_heap_init_state, 2);
    msi_unlock(&init_lock);
    return;
  }
  msi_large_init();
  long long d = msi_opt(MS_OPTION_PURGE_DELAY);
  unsigned period = d <= 0 ? 50 : (unsigned)(d / 8);
  msi_heap_purge_task.period_ms = period < 10 ? 10 : period > 1000 ? 1000 : period;
  msi_heap_g.ready = 1;
  atomic_store_explicit(&msi_heap_init_state, 2, memory_order_release);
  msi_unlock(&init_lock);
  /* these may allocate: the heap works from here on */
  msi_heap_key_ok = pthread_key_create(&msi_heap_key, msi_heap_thread_exit) == 0;
  msi_fork_register(); /* fork.c: before a constructor of another library forks */
  msi_maint_register(&msi_heap_purge_task);
  msi_maint_on_pressure(&msi_heap_release_task);
}

/* pushes the chain head..tail of n blocks freed by a thread that does not own s on s's remote list (one CAS);
   the push that finds the span unqueued queues it on its owner's remote-span stack */
static inline void span_push_remote(msi_span_t *s, msi_block_t *head, msi_block_t *tail, uint32_t n) {
  uintptr_t x = atomic_load_explicit(&s->xfree, memory_order_relaxed), nx;
  do {
    msi_block_link(s, tail, (x & XF_PTR) ? (msi_block_t *)(x & XF_PTR) : msi_span_list_end(s));
    nx = (uintptr_t)head | ((x & ~(XF_ONE - 1)) + (uintptr_t)n * XF_ONE) | 1; /* n more blocks in the count */
  } while (!atomic_compare_exchange_weak_explicit(&s->xfree, &x, nx, memory_order_release, memory_order_relaxed));
  if (!(x & 1)) span_queue(s);
}

/* pushes chain c of h (open) on its span's list; c is closed */
static void chain_push(msi_heap_t *h, msi_rchain_t *c) {
  msi_span_t *s = c->span;
  c->span = NULL;
  h->rb_open &= ~(1u << (c - h->rb));
  span_push_remote(s, c->head, c->tail, c->lim - c->left);
}

/* b, freed by h's thread into s of another heap (validated), starts the chain of its slot c: the chain c held
   (into another span) is pushed */
static MSI_NOINLINE void chain_open(msi_heap_t *h, msi_rchain_t *c, msi_span_t *s, msi_block_t *b) {
  if (MSI_UNLIKELY(h->rb == msi_heap_rchains_none)) { /* its first remote free */
    static _Thread_local uint16_t refused; /* frees left before the table is asked for again after a refusal */
    if (refused || !msi_heap_rchains_get(h)) { /* (no table: each block pushed alone, no system call a free) */
      refused = refused ? refused - 1 : 1023;
      msi_block_link(s, b, msi_span_list_end(s));
      return span_push_remote(s, b, b, 1);
    }
    c = &h->rb[c - msi_heap_rchains_none];
  }
  msi_span_t *to = c->span;
  msi_block_t *head = c->head, *tail = c->tail;
  uint32_t n = c->lim - c->left;
  msi_block_link(s, b, msi_span_list_end(s)); /* (free from here on: a second free of it is reported) */
  c->span = s;
  c->head = c->tail = b;
  c->lim = s->block_size <= MSI_HEAP_RBYTES / MSI_HEAP_RBATCH ? MSI_HEAP_RBATCH : MSI_HEAP_RBYTES / s->block_size;
  c->left = c->lim - 1;
  h->rb_open |= 1u << (c - h->rb);
  if (to) span_push_remote(to, head, tail, n);
}

/* b, as chain_open: one more block for its slot's chain when that chain is into s (plain stores, no atomic) */
static inline void chain_add(msi_heap_t *h, msi_span_t *s, msi_block_t *b) {
  msi_rchain_t *c = &h->rb[s->cls & (MSI_HEAP_RSLOTS - 1)];
  if (MSI_UNLIKELY(c->span != s)) return chain_open(h, c, s, b);
  msi_block_link(s, b, c->head);
  c->head = b;
  if (--c->left == 0) chain_push(h, c);
}

/* the blocks h's thread freed into other heaps' spans and chained (heap.h msi_heap_t rb) go to their spans */
void msi_heap_remote_flush(msi_heap_t *h) {
  for (uint32_t open = h->rb_open; open; open &= open - 1) chain_push(h, &h->rb[__builtin_ctz(open)]);
}

MSI_HOT_TEXT static void *alloc_from(msi_span_t *s) {
  msi_block_t *b = s->free;
  MSI_HEAP_VG_OPEN(b); /* a freed block: its link is ours to read */
  s->free = msi_block_next(s, b);
  msi_span_held_add(s, 1);
  msi_block_arm(s, b);
  MSI_HEAP_VG_CLOSE(b); /* until the caller marks the block allocated */
  return b;
}

/* a block from a span of class cls taken from an orphan (msi_heap_orphan_span_take), made h's current span; NULL: none
   (out of the allocation slow path's text: a short process never runs it) */
static MSI_NOINLINE void *alloc_from_orphan(msi_heap_t *h, unsigned cls) {
  msi_span_t *o = msi_heap_orphan_span_take(h, cls);
  if (!o) return NULL;
  msi_heap_set_current(h, cls, o);
  msi_heap_span_collect(o, true, false);
  if (!span_free_empty(o) || span_take_rfree(o)) return alloc_from(o);
  if (o->carved < o->capacity) { msi_heap_span_carve(h, o); return alloc_from(o); }
  span_detach_full(o); /* (no block left: another thread's frees are on their way) */
  msi_heap_set_current_empty(h, cls);
  return NULL;
}

/* no span for the class: asked for once more after the idle segments went back (msi_heap_release_idle); a block
   served leaves errno as the caller had it (saved) */
MSI_NOINLINE MSI_RARE static void *small_again(msi_heap_t *h, unsigned cls, int saved) {
  unsigned chunks = msi_heap_class_chunks[cls];
  msi_span_t *n = NULL;
  if (msi_heap_release_idle((size_t)chunks * MSI_HEAP_CHUNK) && !(n = msi_heap_span_cache_get(h, chunks, cls)))
    n = msi_heap_segment_alloc_span(h, chunks);
  if (!n) { errno = ENOMEM; return NULL; }
  errno = saved;
  msi_heap_span_init(h, n, cls);
  msi_heap_set_current(h, cls, n);
  if (span_free_empty(n) && !span_take_rfree(n)) msi_heap_span_carve(h, n);
  return alloc_from(n);
}

MSI_HOT_TEXT void *msi_heap_small_alloc_slow(size_t size) {
  msi_heap_t *h = msi_tls_heap;
  if (MSI_UNLIKELY(h == MSI_EMPTY_HEAP)) {
    if (MSI_UNLIKELY(msi_heap_exited)) return msi_heap_alloc_exiting(size);
    h = msi_heap_thread_init();
    if (!h) { errno = ENOMEM; return NULL; }
  }
  if (h->rb_open) msi_heap_remote_flush(h);
  unsigned cls = msi_heap_class_of(size);
  msi_span_t *s = msi_heap_current(h, cls);
  if (!span_free_empty(s) || span_take_rfree(s)) return alloc_from(s);
  msi_span_t *sp = msi_heap_current_empty(h, cls) ? spare_take(h, cls) : NULL; /* the class's span set aside */
  if (sp) {
    msi_heap_set_current(h, cls, sp);
    /* uncarved (else its blocks are linked) */
    if (span_free_empty(sp) && !span_take_rfree(sp)) msi_heap_span_carve(h, sp);
    else spare_note(sp);
    return alloc_from(sp);
  }
  if (!msi_heap_current_empty(h, cls)) {
    /* blocks freed by other threads first, never-used ones after: carving while remote frees wait would fault
       in the span's further pages with as many of its blocks free */
    if (span_remote_waits(s)) {
      msi_heap_span_collect(s, true, false);
      if (!span_free_empty(s)) return alloc_from(s);
    }
    if (s->carved < s->capacity) { msi_heap_span_carve(h, s); return alloc_from(s); }
    span_detach_full(s); /* full: it leaves the current slot; a free will put it on the partial list */
  }
  if (atomic_load_explicit(&h->remote, memory_order_relaxed)) {
    msi_heap_remote_process(h, true, true);
    if (!span_free_empty(s) || span_take_rfree(s)) return alloc_from(s);
  }
  msi_span_t *p = h->partial[cls];
  if (p) {
    partial_remove(h, p);
    msi_heap_set_current(h, cls, p);
    if (span_free_empty(p) && !span_take_rfree(p)) msi_heap_span_carve(h, p);
    return alloc_from(p);
  }
  if (mini_class(cls) && h->mini_taken[cls] != MINI_DONE && !msi_heap_mini_off) {
    msi_span_t *m = msi_heap_mini_take(h, cls);
    if (m) return alloc_from(m);
  }
  msi_heap_maybe_purge();
  if (mini_class(cls)) h->mini_taken[cls] = MINI_DONE; /* (a normal span: the class is past its first blocks) */
  msi_span_t *n = msi_heap_span_cache_get(h, msi_heap_class_chunks[cls], cls);
  if (!n && atomic_load_explicit(&msi_heap_orphans, memory_order_relaxed)) {
    void *p = alloc_from_orphan(h, cls); /* an ended thread's span of the class before fresh chunks */
    if (p) return p;
  }
  int saved = errno; /* (a refused segment sets it: a block the retry serves leaves it as it was) */
  if (!n) n = msi_heap_segment_alloc_span(h, msi_heap_class_chunks[cls]);
  if (MSI_UNLIKELY(!n)) return small_again(h, cls, saved);
  msi_heap_span_init(h, n, cls);
  msi_heap_set_current(h, cls, n);
  if (span_free_empty(n) && !span_take_rfree(n)) msi_heap_span_carve(h, n);
  return alloc_from(n);
}

MSI_HOT_TEXT bool msi_heap_small_valid(const void *p, msi_span_t **span_out) {
  if (!msi_heap_in_small(p)) return false;
  msi_span_t *s = msi_heap_span_of(p);
  if (s->state != MSI_SPAN_ACTIVE) return false;
  if (!msi_span_block_start(s, p)) return false;
  if (span_out) *span_out = s;
  return true;
}

/* a remote free (validated) by a thread without a heap: it gets one for its chains (or the block is pushed alone) */
static MSI_NOINLINE MSI_COLD void remote_free_heapless(void *p, msi_span_t *s) {
  msi_heap_t *h = MSI_EMPTY_HEAP;
  if (!msi_heap_exited) {
    int saved = errno; /* (free leaves errno alone: a refused mapping or key must not show) */
    h = msi_heap_thread_init();
    errno = saved;
    if (h && MSI_SEEN(s->owner) == h) return msi_heap_free_small(p); /* (it adopted the orphan owning the block) */
  }
  MSI_TRACK_FREE(p); /* before the push: once published, the owner may hand the block out again at once */
  if (h && h != MSI_EMPTY_HEAP) return chain_add(h, s, p);
  msi_block_link(s, p, msi_span_list_end(s));
  span_push_remote(s, p, p, 1);
}

/* a local free that needs bookkeeping (msi_heap_free_local: the block is linked): the span s of h is filed */
static MSI_NOINLINE MSI_HOT_TEXT void local_file(msi_heap_t *h, msi_span_t *s) {
  if (MSI_UNLIKELY(s->used_floor) && s->held == 0) { /* a parked list (maybe empty now), or full */
    msi_span_set_floor(s, 0);
    if (span_remote_waits(s)) msi_heap_span_collect(s, true, false); /* (a full span's first free: mostly nothing) */
  }
  if (msi_span_is_mini(s)) return; /* (never filed: msi_heap_mini_take) */
  if (msi_heap_is_current(h, s->cls, s)) {
    if (msi_span_used(s) != 0) return;
    uint32_t tight;
    if ((!msi_heap_limits.keep_empty_current || pressure_retire(h, s->cls)) &&
        atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) {
      msi_heap_set_current_empty(h, s->cls);
      msi_heap_span_retire(h, s, true);
      msi_maint_kick();
    } else if (s->touched > SPARE_MIN + s->block_size &&
               (tight = atomic_load_explicit(&msi_maint_tight, memory_order_relaxed)) != 0 &&
               atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) {
      msi_heap_span_empty_current(h, s); /* kept where a forced purge can take it, or with little resident */
      if (tight & MSI_TIGHT_UNSEEN) msi_maint_kick(); /* the maintenance thread's start: its look reads the limit */
    }
    return;
  }
  if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) {
    msi_heap_span_retire(h, s, true);
    msi_maint_kick();
    msi_heap_maybe_purge();
  } else if (!s->in_partial) {
    partial_push(h, s);
  }
}

/* free of a block whose span is not owned by the calling thread's heap, or a local free needing bookkeeping. The
   remote free's common case (a block for an open chain) calls nothing: no register saved */
MSI_HOT_TEXT void msi_heap_small_free_slow(void *p, msi_span_t *s) {
  msi_heap_t *h = msi_tls_heap;
  if (MSI_UNLIKELY(s->state != MSI_SPAN_ACTIVE)) {
    s = msi_heap_mini_of(p); /* map[] led to desc[0]: p lies in chunk 0, maybe in a mini span */
    if (MSI_UNLIKELY(s->state != MSI_SPAN_ACTIVE)) msi_heap_bad_small(p, "free");
    if (MSI_SEEN(s->owner) == h) return mini_free(h, p, s); /* (a mini span's owner changes at adoption) */
  } else if (MSI_SEEN(s->owner) == h) { /* (a mini span's too, from mini_free: its owner is written relaxed) */
    return local_file(h, s);
  }
  /* remote free: validate, then chain it (heap.h msi_heap_t rb) */
  if (MSI_UNLIKELY(!msi_span_block_start(s, p))) msi_heap_bad_pointer(p, "free(): invalid pointer");
  if (MSI_UNLIKELY(msi_block_is_free(s, p))) msi_heap_freed_again(s, p, "free");
  if (MSI_HEAP_SECURE && MSI_UNLIKELY(!msi_block_canary_ok(s, p)))
    msi_heap_bad_pointer(p, "free(): canary after the block overwritten (heap buffer overflow)");
  if (MSI_UNLIKELY(h == MSI_EMPTY_HEAP || !h)) return remote_free_heapless(p, s);
  MSI_TRACK_FREE(p); /* before the push: once published, the owner may hand the block out again at once */
  chain_add(h, s, p);
}
