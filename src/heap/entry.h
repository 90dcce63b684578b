/* SPDX-License-Identifier: MIT */
/* entry.h: the heap's entry points, as the front door (src/core/route.c) calls them. The heap is a leaf: it
   serves and frees its own blocks (small, large, direct) and knows nothing of the other parts; which part a
   request or a pointer goes to is the front door's decision. The small-block fast paths are inline here, so the
   front door's malloc and free compile to the heap's own code: no call, one relaxed load of the route mask. */
#ifndef MSI_HEAP_ENTRY_H
#define MSI_HEAP_ENTRY_H
#include "heap.h"
#include "track.h"

/* the span's first free block, taken off the free list (NULL: none, or a block whose check fails). The list's end
   fails the block's check (heap.h msi_span_list_end): an empty list costs the fast path no test. A failed check
   sends the caller to the slow path (msi_heap_small_alloc_slow), which takes the same span's first block again
   (heap.c alloc_from) and reports the corrupted link there, naming the block: the fast paths that inline the pop
   (malloc, operator new) make no call of their own and set up no stack frame */
static inline msi_block_t *msi_heap_pop(msi_span_t *s) {
  msi_block_t *b = s->free;
  uintptr_t next;
  MSI_HEAP_VG_OPEN(b); /* (harmless on the span's own first words) */
  if (MSI_UNLIKELY(!msi_block_take(s, b, &next))) return NULL;
  s->free = (msi_block_t *)next;
  msi_span_held_add(s, 1);
  msi_block_arm(s, b);
  MSI_HEAP_VG_CLOSE(b);
  return b;
}

/* the usable size of p, which lies in the small blocks' area (msi_heap_in_small): its block's size less the canary
   when p starts a live block, else 0 (a freed or never handed out block, an interior pointer, a retired span).
   Inline for the front door's malloc_usable_size: programs that keep their own count of the bytes they hold (redis
   calls it at every allocation and free) take it as often as malloc and free */
static inline size_t msi_heap_small_usable(const void *p) {
  msi_span_t *s = msi_heap_span_of(p);
  if (s->state != MSI_SPAN_ACTIVE || !msi_span_block_start(s, p) || msi_block_is_free(s, p)) return 0;
  return s->block_size - MSI_HEAP_CANARY;
}

/* a request of `size` <= MSI_HEAP_SMALL_REQ bytes: a block of the calling thread's current span of the class, no
   lock, no atomic; NULL when that span has none (then msi_heap_malloc_small_slow) */
static inline void *msi_heap_malloc_small_pop(size_t size) {
  msi_block_t *b = msi_heap_pop(msi_heap_current(msi_tls_heap, msi_heap_class_of(size)));
  if (MSI_LIKELY(b)) MSI_TRACK_MALLOC(b, size, false);
  return b;
}
/* the same request when the pop found no block: NULL + ENOMEM */
static inline void *msi_heap_malloc_small_slow(size_t size) {
  void *p = msi_heap_small_alloc_slow(size);
  if (p) MSI_TRACK_MALLOC(p, size, false);
  return p;
}
static inline void *msi_heap_malloc_small(size_t size) {
  void *b = msi_heap_malloc_small_pop(size);
  return MSI_LIKELY(b != NULL) ? b : msi_heap_malloc_small_slow(size);
}

/* pushes a block freed by its owner; the span's bookkeeping runs when the blocks used reach their floor, `held`
   reaching 0 (heap.h: the span becomes empty, or was full out of the current slot, or has remote frees parked). valgrind builds: the block is
   marked free, and its header opened for the heap's own writes only */
static inline void msi_heap_free_local(void *p, msi_span_t *s) {
  msi_block_t *b = p;
  MSI_TRACK_FREE(p);
  msi_block_link(s, b, s->free);
  s->free = b;
  if (MSI_UNLIKELY(msi_span_held_add(s, (uint32_t)-1) == 0)) msi_heap_small_free_slow(p, s);
}

/* the local free's cold ends (api.c): with the extra checks (msi_heap_checks), and the report of a failed check
   (not _Noreturn, so the fast path reaches it by a tail jump and keeps no stack frame) */
MSI_COLD void msi_heap_free_checked(void *p, msi_span_t *s);
MSI_RARE void msi_heap_free_error(void *p, msi_span_t *s);

/* p in the small area (msi_heap_in_small); `checks`: msi_heap_checks may be set (the extra checks run when it
   is). Every call is a tail call: the fast path saves no register */
/* a free of p by the owner of its span s: a live block start (O(1): heap.h msi_span_block_start) whose cookie
   (second word: the line the link store writes anyway) does not say "free"; the secure build also checks the canary
   after the block. An invalid p is reported (msi_heap_free_error) */
static inline void msi_heap_free_owned(void *p, msi_span_t *s, bool checks) {
  if (MSI_UNLIKELY(!msi_span_block_start_in(s, p, s->carved) || msi_block_is_free(s, p) || !msi_block_canary_ok(s, p)))
    return msi_heap_free_error(p, s);
  if (checks && MSI_UNLIKELY(msi_heap_checks)) return msi_heap_free_checked(p, s);
  return msi_heap_free_local(p, s);
}
static inline void msi_heap_free_small_as(void *p, bool checks) {
  msi_span_t *s = msi_heap_span_at(p); /* (a mini span's block: desc[0], whose owner never matches) */
  /* (a relaxed load: msi_heap_orphan_span_take hands a live span to another heap) */
  if (MSI_LIKELY(MSI_SEEN(s->owner) == msi_tls_heap)) return msi_heap_free_owned(p, s, checks);
  return msi_heap_small_free_slow(p, s);
}
static inline void msi_heap_free_small(void *p) { msi_heap_free_small_as(p, true); }
/* the front door's fast free, which never runs while msi_heap_checks is set (src/core/route.c free_base): no test
   of the flag */
static inline void msi_heap_free_small_unchecked(void *p) { msi_heap_free_small_as(p, false); }

/* any request (small, small aligned, large, direct); alignment 0 or a power of two. NULL + ENOMEM */
void *msi_heap_alloc(size_t size, size_t alignment, bool zero);
/* p in the heap's region (msi_heap_region_has): freed, or a wild pointer into the reservation reported */
void msi_heap_free(void *p);
/* false: p is no direct block (a double free of a recently freed one aborts naming it) */
bool msi_heap_free_direct(void *p);
/* a live block's usable size; 0 when p is no live block of the heap (region or direct) */
size_t msi_heap_usable(const void *p);
/* realloc's check of p: its usable size, 0 when p is not the heap's; aborts naming p when it is the heap's but
   no live block (freed, inside a block, a wild pointer into the reservation) */
size_t msi_heap_realloc_check(const void *p);
/* p the heap's (its region, or a direct block msi_heap_realloc_check found), size in 1..PTRDIFF_MAX: checked
   as msi_heap_realloc_check does, then resized or moved within the heap. `exact`: no room for growth is added
   (the front door routes requests by size). NULL + errno: p unchanged */
void *msi_heap_realloc(void *p, size_t size, bool exact);
#endif
