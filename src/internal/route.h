/* SPDX-License-Identifier: MIT */
/* route.h: the front door (src/core/route.c, docs/design.md): every malloc-family call, from the override layer
   and the ms_* API alike, enters there and goes to one part (docs/contract.md §3): a request reaching the spill threshold
   to spill, else to the process space if one is set, else to the heap; a pointer to the part whose reservation
   holds it (one ownership lookup), else to the heap's direct blocks, else to the C library (foreign).
   The parts' entry points the front door calls are declared here (spill, the process space, foreign) and in
   src/heap/entry.h (the heap, which knows nothing of the others). */
#ifndef MSI_ROUTE_H
#define MSI_ROUTE_H
#include "internal.h"

/* ---- the front door (src/core/route.c): the ms_* entry points under internal (hidden, direct-call) names ---- */
void *msi_malloc(size_t size);
void msi_free(void *p);
void *msi_calloc(size_t count, size_t size);
void *msi_realloc(void *p, size_t size);
void *msi_aligned_alloc(size_t alignment, size_t size);
size_t msi_usable_size(const void *p);

/* Bit set in msi_route_mask once a mode is active (read with one relaxed load on the hot path). Any bit sends
   every allocation through the front door's slow path (route.c). */
#define MSI_ROUTE_SPILL 0x1u
#define MSI_ROUTE_SPACE 0x2u
#define MSI_ROUTE_COUNT 0x4u /* statistics at exit asked for at start: every call is counted (route.c) */
#define MSI_ROUTE_START 0x8u /* no allocation yet (the initial value): the first one reads the options first */
extern _Atomic unsigned msi_route_mask;
void msi_route_init(void);  /* reads the options (msi_init, and ms_option_set of a routing option); sets msi_route_mask */
size_t msi_route_small_below(void); /* requests below it take malloc's fast path to the heap's small blocks (tests) */
/* the [malloc] statistics section: the counts of the malloc family's calls, printed when they were counted */
extern const msi_stats_source_t msi_route_stats_source;
/* the heap re-reads the cache preset and the secure checks (src/heap/api.c): caches past a smaller preset's
   limits are emptied at once */
void msi_heap_options_changed(void);

/* ---- spill (src/spill/) ---- */
size_t msi_spill_threshold(void);                    /* 0 = off; under auto, MSI_SPILL_AUTO_MIN */
/* `memspace run`: checks the spill directory `dir` (NULL: the default) and warns when unusable (src/spill/files.c) */
bool msi_spill_dir_report(const char *dir);
/* MEMSPACE_SPILL_THRESHOLD=auto (the option's value -1): a block of MSI_SPILL_AUTO_MIN bytes or more goes to
   spill when msi_spill_auto_wants says the memory budget runs short (src/spill/budget.c, docs/spill.md) */
#define MSI_SPILL_AUTO (-1)
#define MSI_SPILL_AUTO_MIN ((size_t)1 << 20)
static inline bool msi_spill_auto(void) { return msi_opt(MS_OPTION_SPILL_THRESHOLD) == MSI_SPILL_AUTO; }
/* whether a block growing the process by `grow` bytes goes to spill (false: RAM, counted until the next sample) */
bool msi_spill_auto_wants(size_t grow);
/* NULL + ENOMEM when the disk cannot hold it; NULL + errno 0 when spill is unusable (no directory...):
   the caller then serves the request from RAM. `zero` asks for zeroed memory (file pages already are). */
void *msi_spill_malloc(size_t size, size_t alignment, bool zero);
bool msi_spill_owns(const void *p);
void msi_spill_free(void *p);
size_t msi_spill_usable_size(const void *p);
/* resize within spill (mremap over the grown file); NULL + errno on failure, the block then unchanged; NULL +
   errno 0 when spill cannot hold the new size (the front door then moves the block to RAM). A block shrinking
   below the threshold is the front door's to move. */
void *msi_spill_realloc(void *p, size_t size);

/* ---- the process space (src/space/): MEMSPACE_SPACE_INITIAL serves the whole malloc family ---- */
bool msi_proc_space_owns(const void *p);
void *msi_proc_space_malloc(size_t size, size_t alignment, bool zero);  /* NULL + ENOMEM when full */
void msi_proc_space_free(void *p);
size_t msi_proc_space_usable_size(const void *p);
void *msi_proc_space_realloc(void *p, size_t size);  /* NULL + ENOMEM, block unchanged */
bool msi_proc_space_info(ms_space_info_t *info);     /* false when there is no process space (mallinfo2) */
/* p lies in a live ms_space_create space's data range: its name (the first cap-1 bytes) copied to `name`, true.
   For the report of a malloc-family call given a space's block; false also when another thread holds the registry */
bool msi_space_owner_name(const void *p, char *name, size_t cap);

/* ---- foreign pointers (not ours): the override layer hands them to the C library (src/override/override.c;
   without it, the C library's functions in route.c) ---- */
void msi_foreign_free(void *p);
void *msi_foreign_realloc(void *p, size_t size);
size_t msi_foreign_usable(const void *p);
/* true in a copy of the library that serves no malloc call: the process's malloc is another definition (another
   copy of memspace linked into the program, another allocator); that copy stays inert (src/override/override.c).
   Weak: options.c is also linked alone into a test, where the address is null */
bool msi_malloc_elsewhere(void) __attribute__((weak));
void msi_malloc_elsewhere_note(void); /* MEMSPACE_VERBOSE's line saying so, naming who serves malloc */
#endif
