/* SPDX-License-Identifier: MIT */
/* route.h: how a malloc-family request is routed between the parts (CONTRACT §3): a block goes to spill if
   it reaches the spill threshold, else to the process space if one is set, else to the heap.
   The heap's public entry points (ms_malloc ... in src/heap/) do the routing, so the override layer and the
   ms_* API behave the same. Ownership tests are O(1), lock-free address-range checks.
   Implemented by src/spill/ (msi_spill_*) and src/space/ (msi_proc_space_*). */
#ifndef MSI_ROUTE_H
#define MSI_ROUTE_H
#include "internal.h"

/* Bit set in msi_route_mask once a mode is active (read with one relaxed load on the hot path). */
#define MSI_ROUTE_SPILL 0x1u
#define MSI_ROUTE_SPACE 0x2u
extern _Atomic unsigned msi_route_mask;
void msi_route_init(void);  /* reads the options (msi_init, and ms_option_set of a routing option); sets msi_route_mask */
/* the heap re-reads the cache preset and the secure checks (src/heap/heap.c): caches past a smaller preset's
   limits are emptied at once */
void msi_heap_options_changed(void);

/* ---- spill (src/spill/) ---- */
size_t msi_spill_threshold(void);                    /* 0 = off */
/* NULL + ENOMEM when the disk cannot hold it; NULL + errno 0 when spill is unusable (no directory...):
   the caller then serves the request from RAM. `zero` asks for zeroed memory (file pages already are). */
void *msi_spill_malloc(size_t size, size_t alignment, bool zero);
bool msi_spill_owns(const void *p);
void msi_spill_free(void *p);
size_t msi_spill_usable_size(const void *p);
/* resize within spill (mremap over the grown file); NULL + errno on failure, the block then unchanged */
void *msi_spill_realloc(void *p, size_t size);

/* ---- the process space (src/space/): MEMSPACE_SPACE_INITIAL serves the whole malloc family ---- */
bool msi_proc_space_owns(const void *p);
void *msi_proc_space_malloc(size_t size, size_t alignment, bool zero);  /* NULL + ENOMEM when full */
void msi_proc_space_free(void *p);
size_t msi_proc_space_usable_size(const void *p);
void *msi_proc_space_realloc(void *p, size_t size);  /* NULL + ENOMEM, block unchanged */
#endif
