/* SPDX-License-Identifier: MIT */
/* route.c: the front door (route.h, docs/design.md). Every malloc-family call enters here, from the override
   layer and the ms_* API alike, and goes to exactly one part:

     allocation: route_of(size)  -> spill (reaching the threshold) | the process space (when set) | the heap
     pointer:    owner_of(p)     -> heap | spill | space (their reservations) | else the heap's direct blocks,
                                    else foreign (the C library's)

   The heap is a leaf (src/heap/entry.h): it serves its own blocks and never calls back here. A block changing
   owner in realloc moves through route_move alone. The options that change the routing (ms_option_set) re-read
   it in msi_option_changed. */
#include "route.h"
#include "../heap/entry.h"
#include <errno.h>
#include <string.h>

_Atomic unsigned msi_route_mask;

void msi_route_init(void) {
  unsigned mask = 0;
  if (msi_opt(MS_OPTION_SPILL_THRESHOLD) != 0) mask |= MSI_ROUTE_SPILL; /* a size, or auto */
  if (msi_opt(MS_OPTION_SPACE_INITIAL) > 0) mask |= MSI_ROUTE_SPACE;
  atomic_store_explicit(&msi_route_mask, mask, memory_order_relaxed);
}

void msi_option_changed(ms_option_t o) {
  switch (o) {
  case MS_OPTION_SPILL_THRESHOLD:
  case MS_OPTION_SPACE_INITIAL: msi_route_init(); break;
  case MS_OPTION_CACHE:
  case MS_OPTION_SECURE: msi_heap_options_changed(); break;
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

/* any request but the small one with nothing routed. Spill answers NULL + errno 0 when it is unusable (no
   directory...): the request is then served from RAM */
static MSI_NOINLINE void *route_alloc(size_t size, size_t alignment, bool zero) {
  /* no object is larger than PTRDIFF_MAX: refused here, before any part rounds the size up (past 2^64 it would
     wrap to a small block) */
  if (MSI_UNLIKELY(size > PTRDIFF_MAX || alignment > PTRDIFF_MAX)) { errno = ENOMEM; return NULL; }
  unsigned mask = atomic_load_explicit(&msi_route_mask, memory_order_relaxed);
  if (MSI_UNLIKELY(mask)) {
    if (route_of(size, mask) == OWNER_SPILL) {
      errno = 0;
      void *p = msi_spill_malloc(size, alignment < 16 ? 16 : alignment, zero);
      if (p || errno == ENOMEM) return p;
    }
    if (mask & MSI_ROUTE_SPACE) return msi_proc_space_malloc(size, alignment < 16 ? 16 : alignment, zero);
  }
  return msi_heap_alloc(size, alignment, zero);
}

/* every pointer but a small heap block's (NULL included) */
static MSI_NOINLINE void route_free(void *p) {
  switch (owner_of(p)) {
  case OWNER_HEAP: msi_heap_free(p); return;
  case OWNER_SPILL: msi_spill_free(p); return;
  case OWNER_SPACE: msi_proc_space_free(p); return;
  case OWNER_OTHER:
    if (p && !msi_heap_free_direct(p)) msi_foreign_free(p);
    return;
  }
}

/* the fast paths: one relaxed load of the route mask on malloc; on free the heap's small-block test first */
void *msi_malloc(size_t size) {
  if (MSI_LIKELY(size <= MSI_HEAP_SMALL_REQ && !atomic_load_explicit(&msi_route_mask, memory_order_relaxed)))
    return msi_heap_malloc_small(size);
  return route_alloc(size, 0, false);
}

void msi_free(void *p) {
  if (MSI_LIKELY(msi_heap_in_small(p))) return msi_heap_free_small(p);
  return route_free(p);
}

void *msi_calloc(size_t count, size_t size) {
  size_t total;
  if (MSI_UNLIKELY(__builtin_mul_overflow(count, size, &total))) { errno = ENOMEM; return NULL; }
  if (MSI_LIKELY(total <= MSI_HEAP_SMALL_REQ && !atomic_load_explicit(&msi_route_mask, memory_order_relaxed))) {
    void *p = msi_heap_malloc_small(total);
    if (p) memset(p, 0, total);
    return p;
  }
  return route_alloc(total, 0, true);
}

void *msi_aligned_alloc(size_t alignment, size_t size) {
  if (!msi_is_pow2(alignment)) { errno = EINVAL; return NULL; }
  if (alignment <= 16) return msi_malloc(size);
  return route_alloc(size, alignment, false);
}

size_t msi_usable_size(const void *p) {
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
static void *route_move(void *p, size_t old, size_t size, owner_t from, bool away) {
  void *q = route_alloc(size, 0, false);
  if (!q) return NULL;
  if (away && owner_of(q) == from) {
    route_free(q);
    return NULL;
  }
  /* the whole usable size is the caller's (valgrind only knows the size asked for: no report for the rest) */
  MSI_HEAP_VG_QUIET(memcpy(q, p, old < size ? old : size));
  if (from == OWNER_SPILL) msi_spill_free(p);
  else route_free(p);
  return q;
}

static void *realloc_spilled(void *p, size_t size, unsigned mask) {
  size_t old = msi_spill_usable_size(p), t = spill_threshold(mask);
  if (old && t && size < t) { /* below the threshold: to RAM, else (no RAM) shrunk in place */
    void *q = route_move(p, old, size, OWNER_SPILL, true);
    if (q) return q;
  }
  errno = 0;
  void *q = msi_spill_realloc(p, size);
  if (q || errno != 0) return q;
  q = route_move(p, old, size, OWNER_SPILL, false); /* spill cannot hold the new size: RAM */
  if (!q) errno = ENOMEM;
  return q;
}

void *msi_realloc(void *p, size_t size) {
  if (!p) return msi_malloc(size);
  if (size == 0) { msi_free(p); return NULL; }
  if (size > PTRDIFF_MAX) { errno = ENOMEM; return NULL; }
  unsigned mask = atomic_load_explicit(&msi_route_mask, memory_order_relaxed);
  owner_t o = owner_of(p);
  if (o == OWNER_SPILL) return realloc_spilled(p, size, mask);
  if (o == OWNER_SPACE) return msi_proc_space_realloc(p, size);
  /* the heap's check aborts naming p when it is the heap's but no live block; 0: a direct block it is not */
  if (o == OWNER_OTHER && !msi_heap_realloc_check(p)) return msi_foreign_realloc(p, size);
  if (MSI_UNLIKELY(mask)) { /* to spill (counting only the growth), or into the process space */
    size_t t = spill_threshold(mask), old = t && size >= t ? msi_heap_realloc_check(p) : 0;
    if (spill_wants(size, old < size ? size - old : 0, mask) || (mask & MSI_ROUTE_SPACE))
      return route_move(p, old ? old : msi_heap_realloc_check(p), size, OWNER_HEAP, false);
  }
  return msi_heap_realloc(p, size, mask != 0); /* (checks p) */
}

/* the exported names are aliases: calls inside the library stay direct (no PLT) */
void *ms_malloc(size_t size) __attribute__((alias("msi_malloc")));
void ms_free(void *p) __attribute__((alias("msi_free")));
void *ms_calloc(size_t count, size_t size) __attribute__((alias("msi_calloc")));
void *ms_realloc(void *p, size_t size) __attribute__((alias("msi_realloc")));
void *ms_aligned_alloc(size_t alignment, size_t size) __attribute__((alias("msi_aligned_alloc")));
size_t ms_usable_size(const void *p) __attribute__((alias("msi_usable_size")));

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
