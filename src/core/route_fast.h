/* SPDX-License-Identifier: MIT */
/* route_fast.h: the front door's malloc fast path (src/core/route.c), inline for the C++ operator new
   (src/override/override.c): a block popped off a free list is returned at once, with no call to malloc, and the
   rest (the test for NULL, the new-handler's loop) lies behind one tail call. */
#ifndef MSI_ROUTE_FAST_H
#define MSI_ROUTE_FAST_H
#include "route.h"
#include "../heap/entry.h"
/* (hidden: the fast paths read the words by a direct rip-relative access, not through the GOT) */
#pragma GCC visibility push(hidden)

/* The words malloc's and free's fast tests read, in one cache line, never written after the first allocation unless
   an option changes (route.c says how each is kept). small_below: requests below it are small blocks of the heap
   (one compare); free_base: the heap's small area's start as free's fast test sees it */
typedef struct msi_route_fast_s {
  _Alignas(16) _Atomic size_t small_below;
  uintptr_t free_base;
} msi_route_fast_t;
extern msi_route_fast_t msi_route_fast;

/* any request but the small one with nothing routed (route.c); NULL + errno */
void *msi_route_alloc(size_t size, size_t alignment, bool zero);

/* malloc's fast path: one compare with small_below, then the heap's small-block pop; NULL when the request takes
   a slow path (msi_malloc_slow) */
static inline __attribute__((always_inline)) void *msi_malloc_pop(size_t size) {
  if (MSI_LIKELY(size < atomic_load_explicit(&msi_route_fast.small_below, memory_order_acquire)))
    return msi_heap_malloc_small_pop(size);
  return NULL;
}
/* malloc after msi_malloc_pop answered NULL (route.c); NULL + errno */
void *msi_malloc_slow(size_t size);
#pragma GCC visibility pop
#endif
