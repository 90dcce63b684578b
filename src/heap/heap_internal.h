/* SPDX-License-Identifier: MIT */
/* heap_internal.h: what the small heap's sources (heap.c, classes.c, errors.c, guard.c, region.c, segment.c,
   span_cache.c, purge.c, span.c, thread_heap.c, heap_fork.c, heap_stats.c) share and nothing else includes: their
   locks, the tables and state one part keeps and another reads, and the helpers the allocation and free slow paths
   inline (static inline here: those paths make no call for them). The structures are in heap.h; docs/heap.md
   maps each part of the heap to its file. */
#ifndef MSI_HEAP_INTERNAL_H
#define MSI_HEAP_INTERNAL_H
#include "entry.h"
#include "os.h"
#include "track.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <unistd.h>
/* every name declared here is the library's own (heap.h: a direct rip-relative access, no GOT load) */
#pragma GCC visibility push(hidden)

/* the heap's locks, on the page fork.c's handlers write (internal.h: msi_fork_page_t); their order is
   docs/design.md's */
#define init_lock (msi_fork_page.heap_init)     /* start-up */
#define heaps_lock (msi_fork_page.heap_heaps)   /* the list of thread heaps, the orphans */
#define global_lock (msi_fork_page.heap_global) /* the global span cache */
#define seg_lock (msi_fork_page.heap_seg)       /* segments */

/* classes.c: the tables msi_span_block_start and msi_heap_span_init read */
extern const uint64_t msi_heap_class_inv[MSI_HEAP_CLASSES];
extern const uint8_t msi_heap_class_shift[MSI_HEAP_CLASSES];
extern const uint32_t msi_heap_class_capacity[MSI_HEAP_CLASSES];

/* guard.c: the secure build's guard pages */
bool msi_heap_guard_probe(void);
bool msi_heap_guard_install(uintptr_t addr);
bool msi_heap_guard_remove(uintptr_t addr);

/* region.c: the reservation at start-up, and what goes back under a lowered RLIMIT_AS */
bool msi_heap_kernel_random(uint64_t r[2]);
bool msi_heap_region_init(void);
size_t msi_heap_segments_unreserve(void);
bool msi_heap_fit_limit_locked(void);

/* segment.c: segments, their chunks and their header's pages */
extern size_t msi_heap_seg_released_n;
extern size_t msi_heap_seg_pending_n;
msi_span_t *msi_heap_segment_alloc_span(msi_heap_t *h, unsigned n);
msi_span_t *msi_heap_mini_take(msi_heap_t *h, unsigned cls);
void msi_heap_chunks_purged(size_t bytes);
unsigned msi_heap_mini_pages(void);
unsigned msi_heap_mini_pages_at(void);
uint16_t msi_heap_mini_pages_all(void);
void msi_heap_span_trimmed(msi_span_t *s, uintptr_t from, uintptr_t to);
void msi_heap_segment_release_span(msi_span_t *s, bool purge_now, uint32_t idle_since);
extern size_t msi_heap_seg_purging_n; /* (under seg_lock) */
void msi_heap_segments_purge(uint32_t now, uint32_t delay, bool force);
void msi_heap_purge_pending_finish(void);
unsigned msi_heap_seg_keep(void);
void msi_heap_reclaim_pending_finish(void);
extern _Thread_local unsigned msi_heap_reclaim_here;
void msi_heap_segments_reclaim(unsigned keep);

/* span_cache.c: the thread and global span caches */
extern msi_span_list_t msi_heap_global_cache[MSI_HEAP_MAX_SPAN_CHUNKS + 1];
extern msi_cache_hold_t msi_heap_global_hold;
msi_span_t *msi_heap_list_cut_old(msi_span_list_t *l, uint32_t now, uint32_t delay, bool force);
void msi_heap_release_chain(msi_span_t *s);
void msi_heap_span_cache_put(msi_heap_t *h, msi_span_t *s);
uint32_t msi_heap_cache_hold(msi_cache_hold_t *c, uint32_t now, uint32_t delay);
void msi_heap_hold_cut(msi_cache_hold_t *c, unsigned cut, uint32_t now, bool force);
msi_span_t *msi_heap_span_cache_get(msi_heap_t *h, unsigned n, unsigned cls);

/* purge.c: the purge passes, their tasks and counters */
extern msi_maint_task_t msi_heap_purge_task;
extern _Atomic uint64_t msi_heap_forced_passes;
extern _Atomic unsigned msi_heap_purges_running;
extern _Thread_local unsigned msi_heap_purges_here;
extern _Atomic int msi_heap_release_running;
extern _Atomic uint64_t msi_heap_release_quiet_until;
extern const msi_maint_task_t msi_heap_release_task;
extern _Atomic uint64_t msi_heap_st_large_check;
extern _Atomic uint64_t msi_heap_st_large_live;

/* span.c: the spans of a heap */
void msi_heap_span_retire(msi_heap_t *h, msi_span_t *s, bool to_thread_cache);
MSI_NOINLINE void msi_heap_span_empty_current(msi_heap_t *h, msi_span_t *s);
void msi_heap_take_spares(msi_heap_t *h, bool to_thread_cache);
void msi_heap_span_collect(msi_span_t *s, bool keep_flag, bool may_park);
void msi_heap_remote_process(msi_heap_t *h, bool to_thread_cache, bool park);
void msi_heap_span_init(msi_heap_t *h, msi_span_t *s, unsigned cls);
void msi_heap_span_carve(msi_heap_t *h, msi_span_t *s);

/* thread_heap.c: thread heaps and orphans (msi_heap_all, msi_heap_orphans,
   msi_heap_orphans_busy: under heaps_lock) */
extern msi_heap_t *_Atomic msi_heap_all;
extern msi_heap_t *_Atomic msi_heap_orphans;
extern int msi_heap_orphans_busy;
extern _Thread_local int msi_heap_orphans_held_here;
bool msi_heap_orphans_held_elsewhere(void);
void msi_heap_cache_drain(msi_heap_t *h, bool release);
void msi_heap_flush(msi_heap_t *h, bool orphaning);
extern __thread bool msi_heap_exited;
void msi_heap_thread_exit(void *arg);
void msi_heap_orphans_collect(bool all, uint32_t now, uint32_t delay);
msi_heap_t *msi_heap_thread_init(void);
MSI_NOINLINE void *msi_heap_alloc_exiting(size_t size);
MSI_NOINLINE msi_span_t *msi_heap_orphan_span_take(msi_heap_t *h, unsigned cls);
void msi_heap_release_current(msi_heap_t *h);

/* heap_stats.c: the walk of the segments for the statistics */
void msi_heap_spans_tally(ms_stats_t *st, uint64_t *idle, uint64_t *active);

/* heap.c: start-up, the pending chain of remote frees */
extern _Atomic int msi_heap_init_state;
extern pthread_key_t msi_heap_key;
extern bool msi_heap_key_ok;
void msi_heap_remote_flush(msi_heap_t *h);
/* the chains' slots of h, taken from the heaps' pool when it has none yet (heap.h msi_heap_t rb); false: no memory
   (h's remote frees are pushed one by one). errno kept */
bool msi_heap_rchains_get(msi_heap_t *h);
extern const msi_rchain_t msi_heap_rchains_none[MSI_HEAP_RSLOTS];

/* the first chunk of a span (its blocks start at a colour past it) */
static inline uintptr_t span_chunk(const msi_span_t *s) { return s->base & ~(MSI_HEAP_CHUNK - 1); }

/* the segment area holds at most MAX_SEGMENTS segments (region.c), each with its availability bit (segment.c) */
#define MAX_SEGMENTS (1u << 18) /* 1 TiB of segments */
/* a segment's free_mask with every chunk free (segment.c) */
#define SEG_ALL_FREE (~(uint64_t)1) /* every chunk but the header's */
/* the single-threaded purge's first budget of large bytes (purge.c st_large_budget; the fork child's reset) */
#define ST_LARGE_MIN (MSI_HEAP_ST_PURGE_BYTES / 2)

/* mini spans (taken in segment.c, freed in heap.c): the granules a class takes at most (4 KiB), and its mark once it
   takes no more */
#define MINI_PER_CLASS (4096 / MSI_HEAP_MINI_SIZE)
#define MINI_DONE UINT8_MAX

/* a span's xfree word: bit 0 says the span is queued on its owner's remote stack; bits 4..47 are the first
   remote-freed block (16-byte aligned; msi_heap_region_init keeps the segment area below 2^48); bits 48..63 count the
   blocks of that list (a span holds at most 4096 blocks: no overflow) */
#define XF_SHIFT 48
#define XF_ONE ((uintptr_t)1 << XF_SHIFT)
#define XF_PTR (XF_ONE - 16)

/* the span helpers the allocation and free slow paths (heap.c, span.c) inline, defined here */
/* A span joins its class's partial list at the tail, and the allocation path takes the head: the span that had
   longest to gather free blocks. Taking the newest (a span that has just got its first block back) would switch
   spans after a block or two, scattering consecutive allocations over many spans and their cache lines. */
static inline void partial_push(msi_heap_t *h, msi_span_t *s) {
  if (msi_span_is_mini(s)) return; /* (serves its class only while current: msi_heap_mini_take) */
  msi_span_t *tail = h->partial_tail[s->cls];
  s->next = NULL;
  s->prev = tail;
  if (tail) tail->next = s;
  else h->partial[s->cls] = s;
  h->partial_tail[s->cls] = s;
  s->in_partial = 1;
}
static inline void partial_remove(msi_heap_t *h, msi_span_t *s) {
  if (s->prev) s->prev->next = s->next;
  else h->partial[s->cls] = s->next;
  if (s->next) s->next->prev = s->prev;
  else h->partial_tail[s->cls] = s->prev;
  s->in_partial = 0;
  s->next = s->prev = NULL;
}
#define SPARE_MIN ((uintptr_t)16384)
#define SPARE_LOOK 16
static inline msi_span_t *spare_take(msi_heap_t *h, unsigned cls) {
  if (!atomic_load_explicit(&h->spare[cls], memory_order_relaxed)) return NULL;
  return atomic_exchange_explicit(&h->spare[cls], NULL, memory_order_acquire);
}
_Static_assert(((size_t)MSI_HEAP_MAX_SPAN_CHUNKS << MSI_HEAP_CHUNK_SHIFT) >> 4 < 0xFFFF, "spare_mark's halves");
/* a block of the span in 16-byte units from its base, + 1 (a span's 512 KiB: 15 bits); 0 for the list's end */
static inline uint32_t spare_unit(const msi_span_t *s, const msi_block_t *b) {
  return b == msi_span_list_end(s) ? 0 : (uint32_t)(((uintptr_t)b - s->base) >> 4) + 1;
}
/* a free block's link, its header opened under valgrind */
static inline msi_block_t *spare_link(const msi_span_t *s, const msi_block_t *b) {
  MSI_HEAP_VG_OPEN(b);
  msi_block_t *n = msi_block_next(s, b);
  MSI_HEAP_VG_CLOSE(b);
  return n;
}
/* a span back from spare[] with its blocks linked: the block SPARE_LOOK deep and the one it links to noted */
static inline void spare_note(msi_span_t *s) {
  msi_block_t *b = s->free;
  for (unsigned i = 0; i < SPARE_LOOK && b != msi_span_list_end(s); i++) b = spare_link(s, b);
  s->spare_mark = b == msi_span_list_end(s) ? 0 : spare_unit(s, b) << 16 | spare_unit(s, spare_link(s, b));
}
/* remote frees wait in s's word (bit 0 alone: queued, no block): what msi_heap_span_collect(s, true, ...) would find */
static inline bool span_remote_waits(const msi_span_t *s) {
  return atomic_load_explicit(&s->xfree, memory_order_relaxed) > 1;
}
/* a full span leaves the current slot (owner context, nothing parked: msi_heap_span_collect just ran): the owner's
   first local free takes the slow path (used_floor, heap.h), which puts the span on the partial list. Remote frees
   reach the partial list through the owner's remote-span stack (msi_heap_remote_process), which collects the span and
   so clears the mark */
static inline void span_detach_full(msi_span_t *s) { msi_span_set_floor(s, msi_span_used(s) - 1); }
/* `free` is empty: the collected remote frees become it */
static inline bool span_take_rfree(msi_span_t *s) {
  if (!s->rfree) return false;
  s->free = s->rfree;
  s->rfree = NULL;
  s->rfree_n = 0;
  return true;
}
static inline bool span_has_free(const msi_span_t *s) { return s->free != msi_span_list_end(s) || s->rfree; }
static inline bool span_free_empty(const msi_span_t *s) { return s->free == msi_span_list_end(s); }
/* pushes s, its queued bit set, on its owner's remote-span stack: at the first remote free into it (the push that set
   the bit), or handed on by the heap whose stack it was queued on before its owner changed
   (msi_heap_orphan_span_take) */
static inline void span_queue(msi_span_t *s) {
  msi_heap_t *owner = MSI_SEEN(s->owner);
  msi_span_t *top = atomic_load_explicit(&owner->remote, memory_order_relaxed);
  do atomic_store_explicit(&s->rnext, top, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&owner->remote, &top, s, memory_order_release, memory_order_relaxed));
  /* an ended thread's heap: its remote frees wait for the maintenance thread (a live owner takes its own; the
     owner's exit, which set the flag, kicked the thread long before a stale read could matter) */
  if (atomic_load_explicit(&owner->orphan, memory_order_relaxed)) msi_maint_wake();
}
/* While pressure lasts, the free that empties a class's current span gives it up too, once per class and look:
   an idle thread (a pool's) keeps no span from what it freed, and a loop freeing and taking one block pays a slow
   path at most once per look, not per block. */
static inline bool pressure_retire(msi_heap_t *h, unsigned cls) {
  if (MSI_LIKELY(!atomic_load_explicit(&msi_maint_pressure, memory_order_relaxed))) return false;
  uint8_t e = (uint8_t)atomic_load_explicit(&msi_maint_pressure_epoch, memory_order_relaxed);
  if (h->pressure_retired[cls] == e) return false;
  h->pressure_retired[cls] = e;
  return true;
}

#pragma GCC visibility pop
#endif
