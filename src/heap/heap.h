/* SPDX-License-Identifier: MIT */
/* heap.h: the heap's internal structures, shared by the src/heap sources, src/override/ and the heap's unit tests.
   Never installed. See docs/heap.md for the design.

   Address space: one region reserved PROT_NONE at start-up (4 TiB, smaller when refused), asked for one of 64 places
   above the program (region.c region_unlimited: the place below the libraries stays the program's later mappings'). It
   starts with the large slots' table's place (large.c table_get), then 4 MiB segments (bump-allocated, committed
   whole) in the same gibibyte, so that a short process's first segment and table share their upper page-table pages;
   the rest holds large blocks in power-of-two slots, one sub-region per slot size. Under RLIMIT_AS only the slot
   sub-regions are reserved, in proportion to the room under the limit (none when it is small), and the segment area,
   above the program's break, takes address space a segment at a time (region.c msi_heap_region_init); a limit lowered later
   gives the unused reservations back (msi_heap_fit_limit). A pointer is ours when it falls inside the segments in
   use or the slot area: a subtraction and compare each.

   Small blocks (<= MSI_HEAP_SMALL_MAX): a segment is 64 chunks of 64 KiB; chunk 0 holds the segment header (the
   chunk -> span map and the 63 span descriptors), a span is 1..8 chunks of blocks of one size class. A segment
   serves one thread heap (segment.c msi_heap_segment_alloc_span: threads sharing one wrote neighbouring descriptors). A span is
   owned by one thread heap: the owner allocates and frees without atomics; other threads push freed blocks on
   the span's atomic remote list, and the first such push queues the span on the owner's remote-span stack. */
#ifndef MSI_HEAP_H
#define MSI_HEAP_H
#include "internal.h"
#include <time.h>
/* every name declared here is the library's own: the fast paths reach the globals by a direct rip-relative access
   (a declaration without it is read through the GOT: one load more per global on every free) */
#pragma GCC visibility push(hidden)

#define MSI_HEAP_CHUNK_SHIFT 16
#define MSI_HEAP_CHUNK ((size_t)1 << MSI_HEAP_CHUNK_SHIFT)
#define MSI_HEAP_SEG_SHIFT 22
#define MSI_HEAP_SEG_SIZE ((size_t)1 << MSI_HEAP_SEG_SHIFT)
#define MSI_HEAP_SEG_CHUNKS 64
#define MSI_HEAP_CLASSES 96
#define MSI_HEAP_SMALL_MAX 32768
#define MSI_HEAP_MAX_SPAN_CHUNKS 8
#define MSI_HEAP_LARGE_MIN_SHIFT 16   /* smallest large slot: 64 KiB */
#define MSI_HEAP_LARGE_MAX_SHIFT 37   /* largest large slot: 128 GiB */
#define MSI_HEAP_LARGE_CLASSES (MSI_HEAP_LARGE_MAX_SHIFT - MSI_HEAP_LARGE_MIN_SHIFT + 1)

/* The secure build (-DMEMSPACE_SECURE=ON, docs/reliability.md "Hardening"): guard pages after spans and large
   blocks, shuffled carving, a canary after each small block (free-list links are encoded in every build). All of it compiles away in
   the default build (the constants below are 0 there). */
#if MEMSPACE_SECURE_BUILD
#define MSI_HEAP_SECURE 1
#else
#define MSI_HEAP_SECURE 0
#endif
#define MSI_HEAP_GUARD (MSI_HEAP_SECURE ? (size_t)4096 : (size_t)0) /* guard bytes at the end of spans/slots */
#define MSI_HEAP_CANARY (MSI_HEAP_SECURE ? (size_t)8 : (size_t)0)   /* canary bytes at the end of small blocks */
/* guard markers (Linux 6.13+): any access to the pages faults, and the mapping is not split */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#ifndef MADV_GUARD_REMOVE
#define MADV_GUARD_REMOVE 103
#endif
#define MSI_HEAP_SMALL_REQ (MSI_HEAP_SMALL_MAX - MSI_HEAP_CANARY)     /* largest request served by small blocks */

typedef struct msi_block_s {
  struct msi_block_s *next; /* while the block is on a free list: the link ^ its span's key (msi_block_set) */
  uintptr_t cookie; /* while the block is on a free list: the link again (msi_block_set, the checks below) */
} msi_block_t;

struct msi_heap_s;

enum { MSI_SPAN_FREE = 0, MSI_SPAN_CACHED = 1, MSI_SPAN_ACTIVE = 2 };

typedef struct msi_span_s {
  /* the owner's hot fields: one cache line */
  msi_block_t *free;           /* local free list (its end: msi_span_list_end) */
  uint32_t held;               /* blocks handed out and not yet seen free by the owner (msi_span_used), less
                                  used_floor: the local free that takes it to 0 takes the slow path, so the fast
                                  path's test is the flag its decrement sets */
  uint32_t block_size;
  uint64_t inv;                /* the inverse of block_size's odd part mod 2^64: O(1) block-start check with `shift`
                                  (msi_span_block_start) */
  struct msi_heap_s *owner;    /* NULL unless ACTIVE */
  uintptr_t base;              /* blocks [base, msi_span_end) */
  uint64_t carved;             /* blocks carved from base (msi_span_bump); the rest were never handed out (written
                                  by the owner, read by others relaxed) */
  uintptr_t key;               /* free blocks' cookies and links (msi_block_next) */
  uint8_t cls, nchunks, state;
  uint8_t shift;               /* log2 of block_size's power-of-two factor */
  uint32_t used_floor;         /* a local free bringing the blocks used to it takes the slow path (entry.h
                                  msi_heap_free_local): the blocks on a parked remote list (span.c msi_heap_span_collect: the
                                  span may be empty then), or used - 1 in a full span out of the current slot
                                  (heap_internal.h span_detach_full: its first free puts it on the partial list), else 0. Changed
                                  only through msi_span_set_floor */
  /* second line: what other threads touch, and the owner's cold fields */
  _Alignas(64) _Atomic uintptr_t xfree; /* remote-freed blocks + count + queued bit (heap_internal.h XF_*) */
  uint8_t last_cls;            /* class it served last (stats of returned spans) */
  uint8_t guarded;             /* secure build: its last page carries a guard marker */
  uint8_t in_partial;
  uint8_t kept;                /* cached with its blocks of class last_cls still linked on free/rfree (span.c
                                  msi_heap_span_retire): taken again for that class, it needs no carving (msi_heap_span_init) */
  uint32_t spare_mark;         /* back from the owner's spare[] slot: the block SPARE_LOOK deep in its free list
                                  then and the block it linked to, 16 bits each (heap_internal.h spare_note; 0: none) */
  struct msi_span_s *_Atomic rnext;
  struct msi_span_s *next, *prev; /* partial list (ACTIVE) or cache list (CACHED) */
  msi_block_t *rfree;          /* collected remote frees, the owner's second list: taken when `free` runs out
                                  (NULL: none) */
  uint32_t rfree_n;            /* blocks on it */
  uint32_t capacity;           /* blocks in the span */
  uint32_t cached_ms;          /* when it entered a cache (decay) */
  uint32_t touched;            /* bytes from base the span has carved since its chunks became its own: pages that
                                  are resident (span.c msi_heap_span_carve); 0 once they go back to their segment, less once
                                  the global cache trimmed the span (span_cache.c span_trim) */
} msi_span_t;
_Static_assert(__builtin_offsetof(msi_span_t, xfree) == 64, "the owner's hot fields fill one cache line");
_Static_assert(sizeof(msi_span_t) == 128, "a span descriptor takes two cache lines");

/* Mini spans (docs/heap.md "Mini spans"): a thread heap's first blocks of a class of at most MSI_HEAP_MINI_MAX
   bytes come from spans of 512 bytes to 2 KiB (msi_heap_mini_granules) carved from the tail of chunk 0, after the
   header, so a program that uses a few blocks of many classes shares pages among them, where a span of its own
   per class would take a page each. map[0] is 0, so a free of such a block finds desc[0] (no owner, never ACTIVE) and
   takes the free slow path, which finds the mini span's descriptor by the block's offset (msi_heap_span_of). Left
   out of the secure build (a guard page per span). */
#define MSI_HEAP_MINI (!MSI_HEAP_SECURE)
#define MSI_HEAP_MINI_SHIFT 9
#define MSI_HEAP_MINI_SIZE ((size_t)1 << MSI_HEAP_MINI_SHIFT) /* a granule of the mini area */
#define MSI_HEAP_MINI_SPANS 96          /* granules per segment: blocks from after the header to chunk 0's end */
#define MSI_HEAP_MINI_DESCS 48          /* mini spans per segment (their descriptors, handed out in order) */
#define MSI_HEAP_MINI_MAX 2048          /* largest class served from mini spans */
#define MSI_HEAP_MINI_CLASSES 40        /* the classes up to MSI_HEAP_MINI_MAX */
#define MSI_HEAP_MINI_NONE 0xFF         /* mini_map: a granule of no mini span */
#define MSI_HEAP_MINI_DESC (MSI_HEAP_MINI ? MSI_HEAP_MINI_DESCS : 0) /* mini descriptors in a segment */
/* the granules of a mini span of blocks of bs bytes: 1 KiB up to 80 bytes (a short program uses tens of such blocks),
   512 bytes up to 512 (it uses a few: 512 bytes hold 1-5), 1 KiB up to 1 KiB, 2 KiB above; a span starts on a
   multiple of its granules, so a block whose size is a power of two is aligned as its size */
static inline unsigned msi_heap_mini_granules(uint32_t bs) { return bs <= 80 ? 2 : bs <= 512 ? 1 : bs <= 1024 ? 2 : 4; }
/* chunk spans whose descriptors come before the mini spans' (msi_segment_t desc[]): chunk 1's */
#define MSI_HEAP_FRONT_SPANS (MSI_HEAP_MINI ? 1 : 0)

typedef struct msi_segment_s {
  uint8_t map[MSI_HEAP_SEG_CHUNKS];  /* chunk -> its span's descriptor in desc[] (msi_seg_map_of; 0: no span) */
  uint64_t free_mask;                /* chunks free in the segment allocator (under the segment lock) */
  uint64_t dirty_mask;               /* free chunks whose pages are still resident (purged after the delay) */
  uint32_t dirty_ms;                 /* when the first of them became free */
  uint8_t mini_used;                 /* granules of mini spans handed out (under the segment lock; read by any
                                        thread, after mini_map) */
  uint8_t mini_descs;                /* mini spans' descriptors handed out (under the segment lock; read by any
                                        thread, after the descriptor) */
  uint8_t bare;                      /* every chunk free, no mini span, and chunk 0's pages past its first given
                                        back (segment.c msi_heap_segments_reclaim; under the segment lock, read by the pass) */
  uint16_t hdr_back;                 /* pages of chunk 0 past its first (bit n: page n) given back and counted
                                        returned, not written since (segment.c header_back; under the segment lock) */
  struct msi_heap_s *owner;          /* the thread heap whose spans it serves (under the segment lock; NULL: none,
                                        segment.c msi_heap_segment_alloc_span) */
  uint64_t purging;                  /* chunks a purge pass took out of the free mask to give back (segment.c
                                        msi_heap_segments_purge; under the segment lock) */
  uint16_t chunk_back[MSI_HEAP_SEG_CHUNKS]; /* per chunk past chunk 0, its pages (bit n: page n) a span's trim gave
                                        back and counted returned, past the bytes the span wrote since (segment.c
                                        span_back_mark; chunk_back[0] unused: hdr_back). Written by whoever holds
                                        the chunk: its span's owner, or the pass or lock that took it */
#if MSI_HEAP_MINI
  /* granule -> its mini span's descriptor (msi_seg_mini; MSI_HEAP_MINI_NONE: none) */
  uint8_t mini_map[MSI_HEAP_MINI_SPANS];
  uint64_t mini_skipped[2];          /* granules below mini_used that a span's alignment skipped and no span took
                                        since (bit g % 64 of word g / 64; under the segment lock) */
#endif
  /* the descriptors (msi_seg_span, msi_seg_mini): desc[0] an always-empty one (where map[] sends a chunk outside
     any span), then that of the span starting at chunk 1 (MSI_HEAP_FRONT_SPANS), the mini spans', then the other
     chunk spans' (map[] holds a descriptor's index: msi_seg_map_of). The first 27 mini spans' (descriptors are
     handed out in order) share the header's first page with map[], desc[0] and chunk 1's: a short process's blocks
     (`sort` or `head`: 25-26 mini spans and one span at chunk 1, which a block of 4 KiB such as stdio's buffer takes) write one page of the header, not
     two (chunk 1's descriptor after the mini spans' would lie on the next page) */
  _Alignas(64) msi_span_t desc[1 + MSI_HEAP_MINI_DESC + MSI_HEAP_SEG_CHUNKS - 1];
} msi_segment_t;
/* map[]'s entry for the chunks of the span whose first chunk is `at` (>= 1): its descriptor's index */
static inline uint8_t msi_seg_map_of(unsigned at) {
  return (uint8_t)(at <= MSI_HEAP_FRONT_SPANS ? at : at + MSI_HEAP_MINI_DESC);
}
/* the descriptor of the span whose first chunk is `at` (0: the always-empty one); the caller's constness decides */
static inline msi_span_t *msi_seg_span(const msi_segment_t *seg, unsigned at) {
  return (msi_span_t *)&seg->desc[at ? msi_seg_map_of(at) : 0];
}
/* the mini span of descriptor d (mini_map[]'s entry for its granules) */
static inline msi_span_t *msi_seg_mini(const msi_segment_t *seg, size_t d) {
  return (msi_span_t *)&seg->desc[1 + MSI_HEAP_FRONT_SPANS] + d;
}
/* the mini area's offset in its segment: 2 KiB-aligned, as a 2 KiB mini span is (its block aligned as its size) */
#define MSI_HEAP_MINI_BASE ((sizeof(msi_segment_t) + 2048 - 1) & ~(size_t)(2048 - 1))
_Static_assert(!MSI_HEAP_MINI || MSI_HEAP_MINI_BASE + MSI_HEAP_MINI_SPANS * MSI_HEAP_MINI_SIZE <= MSI_HEAP_CHUNK,
               "the mini spans fit in chunk 0");
_Static_assert(!MSI_HEAP_MINI || MSI_HEAP_MINI_SPANS <= 128, "mini_skipped has a bit per granule");
/* the first granule of mini span m */
static inline unsigned msi_seg_mini_granule(const msi_segment_t *seg, const msi_span_t *m) {
  return (unsigned)((m->base - (uintptr_t)seg - MSI_HEAP_MINI_BASE) >> MSI_HEAP_MINI_SHIFT);
}

typedef struct msi_span_list_s {
  msi_span_t *_Atomic head; /* written under a lock, peeked at without */
  size_t count;
} msi_span_list_t;

/* how long a span cache keeps its spans (span_cache.c msi_heap_cache_hold): under the cache's lock unless said */
typedef struct msi_cache_hold_s {
  uint32_t ops;              /* spans put in the cache or taken from it */
  uint32_t ops_seen, busy_ms; /* ops at the last purge pass; the last pass that found them moved */
  uint32_t purged_ms;        /* the last pass that took spans from the cache */
  _Atomic uint16_t purged;   /* span lengths (bit n) that pass took: read unlocked */
  _Atomic uint8_t refilled;  /* a thread found one of them empty since (written unlocked) */
  uint8_t shift;             /* while the cache is busy its spans wait the purge delay << shift */
} msi_cache_hold_t;

/* a chain of blocks a thread freed into one span of another heap, not yet on the span's list (msi_heap_t rb) */
#define MSI_HEAP_RSLOTS 32
#define MSI_HEAP_RBATCH 64          /* blocks a chain holds at most */
#define MSI_HEAP_RBYTES (64 * 1024) /* and bytes: a chain of blocks above RBYTES / RBATCH bytes holds fewer */
typedef struct msi_rchain_s {
  msi_span_t *span;                 /* NULL: no chain */
  msi_block_t *head, *tail;
  uint32_t lim, left;               /* its blocks: lim - left; pushed when left reaches 0 */
} msi_rchain_t;
_Static_assert(MSI_HEAP_RSLOTS <= 32 && (MSI_HEAP_RSLOTS & (MSI_HEAP_RSLOTS - 1)) == 0, "one bit a slot in rb_open");
_Static_assert(MSI_HEAP_RBYTES / MSI_HEAP_SMALL_MAX >= 2, "a chain holds two blocks of any class");
typedef struct msi_heap_s {
  /* the span allocations of each class come from, as its address less the heap's (msi_heap_current); never none:
     the heap's own empty span (MSI_HEAP_EMPTY_AT). The empty heap's entries are then link-time constants, no table
     of 96 pointers for the dynamic loader to relocate in every process; the fast path's loads address the span as
     heap + entry at no cost, and the slow paths' tests and stores of "empty" take an immediate */
  uintptr_t current_at[MSI_HEAP_CLASSES];
  /* the empty span: no block (its list ends at itself: msi_span_list_end, and its key's top bit is set, so a pop
     fails on it and writes nothing), never owned, never written after the heap's creation (thread_heap.c heap_new) */
  msi_span_t empty;
  msi_span_t *partial[MSI_HEAP_CLASSES];  /* other spans with free blocks, oldest first (heap_internal.h partial_push) */
  msi_span_t *partial_tail[MSI_HEAP_CLASSES];
  /* spans with remote frees to collect: pushed by other threads (a CAS at the first remote free into a span),
     in a line of its own: with the owner's cache_lock and cache[] (written at every span it retires or takes) it
     bounced between the freeing thread's core and the owner's */
  _Alignas(MSI_CACHE_LINE) msi_span_t *_Atomic remote;
  _Alignas(MSI_CACHE_LINE) msi_lock_t cache_lock; /* guards cache[]: the maintenance thread purges it */
  msi_span_list_t cache[MSI_HEAP_MAX_SPAN_CHUNKS + 1];
  struct msi_heap_s *next_all;            /* every heap ever made (append-only) */
  struct msi_heap_s *next_orphan;
  _Atomic int orphan;                /* its thread ended (msi_heap_thread_exit): the maintenance thread collects it */
  /* an orphan kept whole at its thread's exit (thread_heap.c msi_heap_thread_exit): its current spans, partial lists and span
     cache wait for the next new thread, or for the purge pass that flushes it (orphan_pass: the purge passes
     counted when it was orphaned) */
  bool intact;
  _Atomic bool gone;                 /* a forked child's copy of another thread's heap: no thread of the child
                                        owns it (its segments go to whichever heap needs room: msi_heap_segment_alloc_span) */
  uint64_t orphan_pass;
  /* an orphan that holds no live block (thread_heap.c orphan_empty): the pass that first found it so (idle_ms), and
     whether its mini spans went back with its segments' pages since (reclaimed: it is then as a new heap; under
     the orphan list's ownership, msi_heap_orphans_collect) */
  bool idle_seen, reclaimed;
  uint32_t idle_ms;
  /* a flushed orphan still holding a live block, with mini spans of its own now empty (never used again: mini spans
     are never filed): the pass that first found them (thread_heap.c msi_heap_orphans_collect) */
  bool minis_idle_seen;
  uint32_t minis_idle_ms;
  _Atomic uint32_t spans_held;       /* normal spans serving its classes (msi_heap_span_init to msi_heap_span_retire; the spares
                                        taken by a forced purge from another thread too: atomic) */
  struct msi_segment_s *mini_seg[4]; /* the segments its mini spans lie in (segment.c msi_heap_mini_take: no mini span elsewhere) */
  uint8_t mini_nseg;
  uint32_t id;
  /* blocks this thread freed into spans of other heaps, chained per slot (a span's class modulo MSI_HEAP_RSLOTS: a
     thread freeing blocks of mixed sizes keeps one chain per class) and each pushed on its span's remote list with
     one CAS (heap.c msi_heap_remote_flush): at the next remote free into another span of the same slot, when the
     chain reaches its limit (msi_rchain_t lim: MSI_HEAP_RBATCH blocks, fewer above MSI_HEAP_RBYTES bytes), at the
     thread's next allocation slow path, collect and exit. The slots lie out of the heap (the first heap is static
     storage: its pages are the library's), taken at the thread's first remote free (thread_heap.c
     msi_heap_rchains_get); until then rb is msi_heap_rchains_none. Written by its own thread only (or by whoever
     owns the heap: its adopter; a forked child drops the chains of the parent's other threads unread) */
  uint32_t rb_open;                  /* the slots holding a chain, one bit each */
  msi_rchain_t *rb;
  uint64_t carved_bytes;             /* bytes of blocks its spans carved, ever (span.c span_populate) */
  struct msi_segment_s *seg;         /* the segment it takes fresh spans from first (under the segment lock) */
  uint8_t mini_taken[MSI_HEAP_MINI_CLASSES]; /* granules of mini spans a class took (segment.c msi_heap_mini_take; MINI_DONE: no more) */
  uint8_t mini_total;                /* granules of mini spans it took, in all its segments (at most
                                        MSI_HEAP_MINI_SPANS: segment.c msi_heap_mini_take) */
  uint8_t pressure_retired[MSI_HEAP_CLASSES]; /* heap_internal.h pressure_retire: the pressure look (epoch, low byte) that last took a
                                                 class's empty current span */
  msi_cache_hold_t hold;                  /* how long cache[] keeps its spans (under cache_lock unless said) */
  /* a class's empty span, set aside out of current_at[] by the free that emptied it (span.c spare_put): the owner
     takes it back at its next allocation of the class, a forced purge (memory pressure) from any thread; whoever
     exchanges the pointer for NULL owns the span. Non-NULL only while current_at[] names the empty span */
  msi_span_t *_Atomic spare[MSI_HEAP_CLASSES];
} msi_heap_t;
_Static_assert(__builtin_offsetof(msi_heap_t, cache_lock) - __builtin_offsetof(msi_heap_t, remote) >= MSI_CACHE_LINE,
               "the remote-span stack shares no line with the owner's span cache");

/* the layout, fixed at start-up */
typedef struct msi_heap_globals_s {
  uintptr_t base;          /* region start */
  uintptr_t small_size;    /* bytes of the segment area (its capacity) */
  uintptr_t small_reserved; /* bytes of it reserved up front: all of it, or 0 under RLIMIT_AS (region.c msi_heap_region_init) */
  _Atomic uintptr_t small_top; /* bytes of the segment area in use (segments below are committed) */
  uintptr_t table_area;    /* the large slots' table's place, before the segment area (0: none; large.c table_get) */
  uintptr_t large_base;    /* large slot area */
  uintptr_t large_size;
  size_t sub_shift;        /* log2 of each large class's sub-region */
  uintptr_t secret;        /* spans' keys (odd): free blocks' cookies and links */
  uintptr_t canary_secret; /* secure build: canaries */
  bool guard_markers;      /* secure build: guard markers work (guard.c msi_heap_guard_probe) */
  bool as_limited;         /* RLIMIT_AS was set at start-up (region.c msi_heap_region_init) */
  int ready;
  _Atomic bool large_trimmed; /* the slot area's unused reservation went back (msi_heap_fit_limit): large.c's
                                 msi_large_kept tells its addresses from other mappings that landed there */
} msi_heap_globals_t;
extern msi_heap_globals_t msi_heap_g;

/* size classes */
extern const uint32_t msi_heap_class_size[MSI_HEAP_CLASSES];
extern const uint8_t msi_heap_class_chunks[MSI_HEAP_CLASSES];
extern const uint8_t msi_heap_size_lut[(MSI_HEAP_SMALL_MAX >> 4) + 1];
/* the colours of a class's spans (span.c span_colour): 1, its blocks start on their chunk and are aligned to their
   size's power of two; more, they start up to 4032 bytes past it, a multiple of 64 (aligned to 64 at most) */
extern const uint8_t msi_heap_class_colours[MSI_HEAP_CLASSES];
/* the class of a request of `size` <= MSI_HEAP_SMALL_REQ bytes (room for the canary in the secure build) */
/* bits set in x. Not __builtin_popcountll: without the popcnt instruction (the build targets every x86-64) it
   calls libgcc's __popcountdi2, linked at the end of the library's text, a page the first malloc touched for it */
static inline unsigned msi_popcount64(uint64_t x) {
#if defined(__POPCNT__) || !defined(__x86_64__)
  return (unsigned)__builtin_popcountll(x);
#else
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return (unsigned)((x * 0x0101010101010101ull) >> 56);
#endif
}

static inline unsigned msi_heap_class_of(size_t size) { return msi_heap_size_lut[(size + MSI_HEAP_CANARY + 15) >> 4]; }

/* presets: cache limits in bytes */
typedef struct msi_heap_limits_s {
  size_t thread_bucket, global_bucket; /* span caches, per span length */
  unsigned large_slots;                /* cached large blocks per slot size */
  size_t large_bytes;                  /* and at most this many slot bytes per slot size */
  unsigned large_max_shift;            /* no caching above this slot size */
  size_t large_mid_bytes;              /* cached slots of 64 KiB-1 MiB, all these sizes together (large.c
                                          mid_cache_room: large_slots does not apply to them) */
  bool keep_empty_current;             /* keep an empty span as a class's current span */
} msi_heap_limits_t;
extern msi_heap_limits_t msi_heap_limits;

void msi_heap_global_init(void);      /* idempotent */
/* the heap is initialised and serves, as another thread sees it (acquire: what the initialisation wrote is seen) */
bool msi_heap_ready_seen(void);
void msi_heap_set_preset(int preset); /* 0 unlimited, 1 performance, 2 size, 3 none */

/* small blocks */
void *msi_heap_small_alloc_slow(size_t size);
void msi_heap_small_free_slow(void *p, msi_span_t *span);
bool msi_heap_small_valid(const void *p, msi_span_t **span_out); /* block start of a live span */
void msi_heap_thread_collect(bool force);
void msi_heap_orphans_flush(void); /* dead threads' heaps kept whole (thread_heap.c msi_heap_thread_exit) flushed now */
void msi_heap_purge(uint64_t now_ms, bool force);
/* after a refused allocation of `want` bytes: caches emptied and idle segments released whole (purge.c); true: try
   again */
bool msi_heap_release_idle(size_t want);
/* ms_heap_collect(1)'s purge: forced, and the other passes under way waited out, so that
   what they held is back too (purge.c) */
void msi_heap_purge_all(void);
/* tests only (NULL otherwise): called by a purge pass with n idle segments from seg it took out of the free masks,
   before it gives them back whole (n 0: the one segment it keeps mapped, bare); segment.c msi_heap_segments_reclaim */
extern void (*msi_heap_reclaim_hook)(msi_segment_t *seg, size_t n);
/* tests only (NULL otherwise): called by a purge pass with the dirty chunks of seg it took out of the free mask,
   before it gives them back; segment.c msi_heap_segments_purge */
extern void (*msi_heap_purge_hook)(msi_segment_t *seg, uint64_t chunks);
void msi_heap_maybe_purge(void); /* single-threaded programs: purge from the slow paths (purge.c) */
#define MSI_HEAP_ST_PURGE_BYTES ((uint64_t)64 << 20)
extern _Atomic int64_t msi_heap_idle_spans;
/* `bytes` of spans became idle (cached, or free chunks left resident in their segment), or busy again (negative:
   taken from a cache or reused while resident), or went back to the OS (negative): the idle spans' bytes, counted
   only where no maintenance thread purges (a single-threaded program), so threads do not share a counter line
   on their slow paths */
static inline void msi_heap_note_idle(int64_t bytes) {
  if (!msi_maint_running()) atomic_fetch_add_explicit(&msi_heap_idle_spans, bytes, memory_order_relaxed);
}
/* the bytes of spans serving a class (taken: positive; retired: negative), counted as msi_heap_note_idle */
extern _Atomic int64_t msi_heap_active_spans;
static inline void msi_heap_note_active(int64_t bytes) {
  if (!msi_maint_running()) atomic_fetch_add_explicit(&msi_heap_active_spans, bytes, memory_order_relaxed);
}
void msi_heap_class_stats(ms_stats_t *st, uint64_t *cached_spans_bytes);
/* Under memory pressure (msi_maint_pressure) a freeing thread gives back at once what the caches would hold until
   the next look: a thread's span cache keeps at most MSI_HEAP_PRESSURE_SPANS bytes per span length (span_cache.c
   msi_heap_span_cache_put), the large slots' cache MSI_HEAP_PRESSURE_LARGE bytes over all sizes (large.c cache_put); the
   rest goes back to the OS from the free */
#define MSI_HEAP_PRESSURE_SPANS ((size_t)128 << 10)
#define MSI_HEAP_PRESSURE_LARGE ((size_t)1 << 20)
/* class c's entry of a snapshot being filled (heap_class, then heap_class_more; ms_stats_class reads a filled one) */
static inline ms_stats_class_t *msi_stats_class(ms_stats_t *st, unsigned c) {
  return c < MS_STATS_SIZE_CLASSES ? &st->heap_class[c] : &st->heap_class_more[c - MS_STATS_SIZE_CLASSES];
}

/* the fast paths' state (initial-exec TLS) */
extern __thread msi_heap_t *msi_tls_heap;
/* the empty heap (thread_heap.c): a heap's current_at[] and empty span alone, read-only, aligned as a heap; reached as a
   msi_heap_t whose other members are never read (a write would fault). Nothing in it but the empty span's link to
   itself needs relocating */
extern const struct msi_empty_heap_s {
  _Alignas(msi_heap_t) uintptr_t current_at[MSI_HEAP_CLASSES];
  msi_span_t empty;
} msi_empty_heap;
_Static_assert(__builtin_offsetof(msi_heap_t, current_at) == 0, "the empty heap is a heap's current_at[]");
_Static_assert(__builtin_offsetof(msi_heap_t, empty) == __builtin_offsetof(struct msi_empty_heap_s, empty),
               "the empty heap's empty span lies where a heap's does");
#define MSI_EMPTY_HEAP ((msi_heap_t *)(void *)&msi_empty_heap)
/* an empty span's key: the top bit set, as no free block's link agrees with it */
#define MSI_EMPTY_SPAN_KEY ((uintptr_t)1 << 63)
/* current_at[] of a class whose current span is the heap's empty span */
#define MSI_HEAP_EMPTY_AT ((uintptr_t)__builtin_offsetof(msi_heap_t, empty))
/* h's empty span */
static inline msi_span_t *msi_heap_empty_span(const msi_heap_t *h) {
  return (msi_span_t *)(void *)((const char *)h + MSI_HEAP_EMPTY_AT);
}
/* class c's current span of heap h (the fast path's: one load, the span addressed as h + entry) */
static inline msi_span_t *msi_heap_current(const msi_heap_t *h, size_t c) {
  return (msi_span_t *)(void *)((const char *)h + h->current_at[c]);
}
static inline void msi_heap_set_current(msi_heap_t *h, size_t c, msi_span_t *s) {
  h->current_at[c] = (uintptr_t)s - (uintptr_t)h;
}
static inline void msi_heap_set_current_empty(msi_heap_t *h, size_t c) { h->current_at[c] = MSI_HEAP_EMPTY_AT; }
static inline bool msi_heap_current_empty(const msi_heap_t *h, size_t c) { return h->current_at[c] == MSI_HEAP_EMPTY_AT; }
/* s is class c's current span of h (a compare with the entry in memory) */
static inline bool msi_heap_is_current(const msi_heap_t *h, size_t c, const msi_span_t *s) {
  return h->current_at[c] == (uintptr_t)s - (uintptr_t)h;
}

/* large blocks */
void msi_large_init(void);
size_t msi_large_table_bytes(size_t sub_shift); /* the slot table's bytes, with sub-regions of 2^sub_shift bytes */
void *msi_large_alloc(size_t size, size_t alignment, bool zero);
void msi_large_free(void *p);
size_t msi_large_usable(const void *p);
void *msi_large_realloc(void *p, size_t size); /* NULL + errno: unchanged */
/* direct.c: large blocks mapped on their own when the region has no slot for them (a limited address space) */
void *msi_direct_alloc(size_t size, size_t alignment); /* NULL + ENOMEM */
bool msi_direct_free(void *p);                          /* false: not a direct block; a double free of a recent one aborts */
size_t msi_direct_usable(const void *p);                /* 0: not a direct block */
void *msi_direct_realloc(void *p, size_t size);         /* p direct; NULL + ENOMEM: unchanged */
bool msi_direct_was_freed(const void *p);              /* one of the last blocks freed here (a double free) */
bool msi_direct_inside(const void *p);                 /* p inside a live direct block, past its start */
uint64_t msi_direct_bytes(void);
void msi_direct_lock(void);
void msi_direct_unlock(bool child);
size_t msi_large_purge(uint64_t now_ms, uint32_t delay, bool force); /* cached slots idle >= delay ms */
void msi_large_stats(uint64_t *allocated, uint64_t *cached, uint64_t *committed);
uint64_t msi_large_dirty_bytes(void); /* cached large slots' bytes that may hold pages */
uint64_t msi_large_cached_bytes(void); /* cached large slots' committed bytes (the purge gives them back) */
uint64_t msi_large_dropped_bytes(void); /* cached slots' bytes given back since start (not those reused) */
/* tests only (NULL otherwise): called as a slot leaving its cache, or a freed block's, goes back (large.c
   slot_give_back), before its system calls */
extern void (*msi_large_drop_hook)(void);
uint64_t msi_large_live_bytes(void);  /* in large blocks in use, slots and direct */
void msi_large_trim(uint64_t keep);   /* drops the longest-cached slots' pages until at most `keep` such bytes */
bool msi_large_move_into(void *d, void *p, size_t old, size_t len); /* a block's pages into a new mapping */
/* address space: a mapping was refused; under RLIMIT_AS (lowered at run time) the reservations beyond what is in
   use go back (region.c); true: some did, worth a second try. msi_large_release_unused: the slot area's part */
bool msi_heap_fit_limit(void);
size_t msi_large_release_unused(void);
/* a refused commit (purge.c msi_heap_release_idle): the dense slot sizes with no block live or cached go back whole
   (their mapping stays charged under RLIMIT_DATA otherwise); their bytes */
size_t msi_large_release_free(void);
uint64_t msi_large_held_bytes(void); /* at most what a forced purge and msi_large_release_free give back */
/* vm.max_map_count as the heap assumes it (the kernel's default; tests set another): slot sizes whose blocks take two
   mappings each take at most a quarter of it */
void msi_large_set_map_limit(unsigned long max_map_count);
void msi_large_lock_all(void);
void msi_large_unlock_all(bool child);

/* extra checks (the free list searched on every local free: O(free blocks of the span)): debug builds, or
   MEMSPACE_SECURE=1 in any build. The double-free cookie is checked in every build. */
#if MEMSPACE_DEBUG
#define MSI_HEAP_CHECKS_BUILD 1
#else
#define MSI_HEAP_CHECKS_BUILD 0
#endif
extern bool msi_heap_checks;
void msi_heap_check_free(msi_span_t *s, msi_block_t *b); /* after the cookie: a short free-list walk */
void msi_heap_guard_refused(void); /* secure build: a guard marker refused on locked memory (reported once) */

/* errors */
_Noreturn void msi_heap_bad_pointer(const void *p, const char *what);
_Noreturn void msi_heap_freed_again(const msi_span_t *s, const void *p, const char *call); /* cookie says free */
_Noreturn void msi_heap_bad_small(const void *p, const char *call); /* in no live span: a reclaimed mini span's block names a double free */
_Noreturn void msi_heap_corrupt_link(const msi_span_t *s, const void *block); /* a pop's check */

/* counters */
typedef struct msi_heap_counters_s {
  _Atomic uint64_t returned_bytes, purges, segments, threads_live;
} msi_heap_counters_t;
extern msi_heap_counters_t msi_heap_counters;
/* spans of each class returned to their segment (apart from msi_heap_counters, which every allocating process
   writes: these 768 bytes are written only as spans return) */
extern _Atomic uint64_t msi_heap_returned_spans[MSI_HEAP_CLASSES];
/* statistics (large.c): the most segments + committed large slots have been, noted where either grows (direct
   blocks are added when the statistics are read) */
extern _Atomic uint64_t msi_heap_mapped_peak;
void msi_heap_mapped_peak_note(void);

/* milliseconds of CLOCK_MONOTONIC_COARSE: the caches' stamps (a span or slot entering a cache, at every retire on
   a program's slow paths) and the purge's clock. The coarse clock is CLOCK_MONOTONIC as of the last timer tick
   (at most a tick, 1-10 ms, behind msi_now_ns, never ahead): the vDSO reads it without the time-stamp counter and
   its scaling, a fraction of CLOCK_MONOTONIC's cost in a virtual machine. A stamp compared with a pass's
   msi_now_ns makes a cached span look at most a tick older */
static inline uint32_t msi_heap_now_ms(void) { return msi_now_coarse_ms(); }

static inline bool msi_heap_in_small(const void *p) {
  return (uintptr_t)p - msi_heap_g.base < atomic_load_explicit(&msi_heap_g.small_top, memory_order_relaxed);
}
bool msi_large_kept(const void *p); /* p, in the slot area, lies in its part still reserved */
static inline bool msi_heap_in_large(const void *p) {
  return (uintptr_t)p - msi_heap_g.large_base < msi_heap_g.large_size &&
         (MSI_LIKELY(!atomic_load_explicit(&msi_heap_g.large_trimmed, memory_order_acquire)) || msi_large_kept(p));
}
/* p lies in the heap's reservation but in no segment: a wild pointer (never true for another part's memory) */
static inline bool msi_heap_in_reserved_small(const void *p) {
  return (uintptr_t)p - msi_heap_g.base < msi_heap_g.small_reserved;
}
/* p is the heap's: a block, or a wild pointer into its reservation */
static inline bool msi_heap_region_has(const void *p) {
  return msi_heap_in_small(p) || msi_heap_in_large(p) || msi_heap_in_reserved_small(p);
}
/* p is the start of one of the span's blocks carved so far (below its never-used area: a block there was never
   handed out): O(1), a multiplication, a rotation and one compare. For a block size d = d0 * 2^shift (d0 odd) and
   inv the inverse of d0 mod 2^64, the offset n = p - base (mod 2^64) rotated, ror(n * inv, shift), is n / d when d
   divides n, and above (2^64 - 1) / d otherwise (Granlund and Montgomery's exact division test): below the blocks
   carved exactly when p is one of their starts, whatever p (below base too). `carved`: the span's, as the caller
   reads it */
static inline bool msi_span_block_start_in(const msi_span_t *s, const void *p, uint64_t carved) {
  uint64_t q = ((uintptr_t)p - s->base) * s->inv;
  unsigned r = s->shift;
  q = q >> r | q << ((64 - r) & 63);
  return q < carved;
}
/* any thread: carved read relaxed (other threads check blocks the owner handed out, below any value they can see).
   The owner reads it plainly (msi_span_block_start_in): a compare with memory, no load of its own */
static inline bool msi_span_block_start(const msi_span_t *s, const void *p) {
  return msi_span_block_start_in(s, p, __atomic_load_n(&s->carved, __ATOMIC_RELAXED));
}
/* the start of the span's never-used area */
static inline uintptr_t msi_span_bump(const msi_span_t *s) {
  return s->base + (uintptr_t)__atomic_load_n(&s->carved, __ATOMIC_RELAXED) * s->block_size;
}
/* a field that statistics read from other threads without a lock (heap_stats.c msi_heap_spans_tally: dirty_mask, map, state,
   nchunks, cls, capacity, held, used_floor): written with relaxed atomic stores, read there with relaxed loads (the
   plain load and store instructions on x86-64 and aarch64); its writer reads it plainly */
#define MSI_SEEN_SET(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELAXED)
#define MSI_SEEN(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
/* `held` and `used_floor` are written by the span's owner alone and read by other threads for statistics
   (heap_stats.c msi_heap_spans_tally: a snapshot, off by the blocks in flight): those reads are relaxed atomic loads
   (msi_span_used_seen) and the owner's writes relaxed atomic stores (on x86-64 and aarch64 the plain load and
   store instructions). The owner reads its own fields plainly. In malloc's and free's fast paths (entry.h) the
   change of `held` is a plain read-modify-write outside ThreadSanitizer builds, as free's fast test reads free_base
   (route.c): the compiler makes it one add or sub on memory, where the atomic form is a load, the add and a store
   (two instructions more on each call). */
static inline void msi_span_held_set(msi_span_t *s, uint32_t held) { MSI_SEEN_SET(s->held, held); }
/* the owner's change of `held` by d (mod 2^32), the new value returned */
static inline uint32_t msi_span_held_add(msi_span_t *s, uint32_t d) {
#if defined(__SANITIZE_THREAD__)
  uint32_t held = s->held + d;
  msi_span_held_set(s, held);
  return held;
#else
  return s->held += d;
#endif
}
/* the blocks handed out and not yet seen free by the owner (the owner's view) */
static inline uint32_t msi_span_used(const msi_span_t *s) { return s->held + s->used_floor; }
/* the same from another thread: each field as it was at some moment of the owner's */
static inline uint32_t msi_span_used_seen(const msi_span_t *s) {
  return MSI_SEEN(s->held) + MSI_SEEN(s->used_floor);
}
/* a new floor, the blocks used unchanged (floor <= msi_span_used) */
static inline void msi_span_set_floor(msi_span_t *s, uint32_t floor) {
  msi_span_held_set(s, s->held + s->used_floor - floor);
  MSI_SEEN_SET(s->used_floor, floor);
}
/* the end of the span's blocks */
static inline uintptr_t msi_span_end(const msi_span_t *s) { return s->base + (uintptr_t)s->capacity * s->block_size; }
/* the descriptor of the span holding p's chunk. The descriptor's offset is opaque to the compiler, so the address
   is made once (shift, lea) in a register that every field access then uses (left to itself the compiler folds
   part of it into each access's displacement and computes it a second time for the callers that need the
   pointer itself) */
static inline msi_span_t *msi_heap_span_at(const void *p) {
  msi_segment_t *seg = (msi_segment_t *)((uintptr_t)p & ~(MSI_HEAP_SEG_SIZE - 1));
  uintptr_t at = (uintptr_t)seg->map[((uintptr_t)p >> MSI_HEAP_CHUNK_SHIFT) & (MSI_HEAP_SEG_CHUNKS - 1)] * sizeof(msi_span_t);
  __asm__("" : "+r"(at));
  return (msi_span_t *)((uintptr_t)seg->desc + at);
}
/* p in chunk 0 of its segment: the mini span holding it, else the always-empty descriptor (heap.h MSI_HEAP_MINI) */
static inline msi_span_t *msi_heap_mini_of(const void *p) {
  msi_segment_t *seg = (msi_segment_t *)((uintptr_t)p & ~(MSI_HEAP_SEG_SIZE - 1));
#if MSI_HEAP_MINI
  uintptr_t g = (((uintptr_t)p & (MSI_HEAP_SEG_SIZE - 1)) - MSI_HEAP_MINI_BASE) >> MSI_HEAP_MINI_SHIFT;
  if (g < MSI_SEEN(seg->mini_used)) { /* (below the area g wraps past any count) */
    uint8_t first = MSI_SEEN(seg->mini_map[g]);
    if (first != MSI_HEAP_MINI_NONE) return msi_seg_mini(seg, first);
  }
#endif
  return msi_seg_span(seg, 0);
}
/* the descriptor of the span holding p: map[] (msi_heap_span_at, the free fast path's), or a mini span in chunk 0 */
static inline msi_span_t *msi_heap_span_of(const void *p) {
  if (MSI_HEAP_MINI && MSI_UNLIKELY((((uintptr_t)p >> MSI_HEAP_CHUNK_SHIFT) & (MSI_HEAP_SEG_CHUNKS - 1)) == 0))
    return msi_heap_mini_of(p);
  return msi_heap_span_at(p);
}
/* no mini spans are taken while set: tests of the layout of a class's normal spans set it */
extern bool msi_heap_mini_off;
/* a mini span (nchunks 0: every other span that serves a class has chunks) */
static inline bool msi_span_is_mini(const msi_span_t *s) { return MSI_HEAP_MINI && s->nchunks == 0; }

/* valgrind build only: the heap reads and writes the header (link, cookie) of blocks it marked free */
#if defined(MEMSPACE_VALGRIND) && MEMSPACE_VALGRIND
#include <valgrind/memcheck.h>
#define MSI_HEAP_VG_OPEN(b) VALGRIND_MAKE_MEM_DEFINED((b), sizeof(msi_block_t))
#define MSI_HEAP_VG_CLOSE(b) VALGRIND_MAKE_MEM_NOACCESS((b), sizeof(msi_block_t))
#define MSI_HEAP_VG_QUIET(stmt) do { VALGRIND_DISABLE_ERROR_REPORTING; stmt; VALGRIND_ENABLE_ERROR_REPORTING; } while (0)
#else
#define MSI_HEAP_VG_OPEN(b) ((void)(b))
#define MSI_HEAP_VG_CLOSE(b) ((void)(b))
#define MSI_HEAP_VG_QUIET(stmt) do { stmt; } while (0)
#endif

/* The free-list checks of every build (MSI_HEAP_LIST_CHECKS is 0 only in the build bench/heap/check_cost.sh
   measures them against: plain links and an address cookie, no check on the pop; the hardening tests fail there).
   Each span has a key, secret ^ base ^ block size (span.c msi_heap_span_init): odd, top bit set, and another one for
   another place or class. A block on a free list holds its link twice: the first word next ^ key, the second next
   itself, with MSI_COOKIE_CARVED set while the block was carved from the never-used area and not handed out yet.
   Its state, first ^ key ^ second (msi_block_state), is 0 on a freed block and MSI_COOKIE_CARVED on a carved one.
   Each pop compares the two words (msi_block_take: one compare, of the line it reads anyway): a use after free or
   an overflow that changed either word of a free block is reported at that block's pop, naming it. So the link a
   pop takes is the one the heap wrote, a block of the span or the list's end (the next pop reads nothing else),
   unless both words were rewritten to agree under the span's key, which the xor of a free block's two words gives
   to a program that reads them: such a forged link still leads into the block's own segment (msi_block_same_segment).
   The pop that hands a block out clears its first word (msi_block_arm), leaving its state key ^ next: the key's
   random bits, which nothing the program writes over either word, or part of one, undoes unless it holds the key.
   So a live block is never taken for a free one, by a pop (never handed out twice) or by free's double-free check
   (msi_block_is_free). */
#ifndef MSI_HEAP_LIST_CHECKS
#define MSI_HEAP_LIST_CHECKS 1
#endif
/* the end of a span's free lists (the link of each list's last block; `free` when empty): the span descriptor's
   own address. Read as a block, its words are `free` and `used`/`block_size`, which never agree as a free block's
   do (the key's top bit is set, and no address or size has it): the pop's compare fails there, so the fast path
   needs no test for an empty list */
static inline msi_block_t *msi_span_list_end(const msi_span_t *s) { return (msi_block_t *)s; }
#define MSI_COOKIE_CARVED ((uintptr_t)1)
/* word i (0: link, 1: cookie) of a block. Under valgrind it may lie past the caller's size or in a freed block:
   read without a report, the value taken as defined */
static inline uintptr_t msi_block_word(const void *p, int i) {
#if defined(MEMSPACE_VALGRIND) && MEMSPACE_VALGRIND
  volatile uintptr_t c;
  VALGRIND_DISABLE_ERROR_REPORTING;
  c = ((const uintptr_t *)p)[i];
  VALGRIND_ENABLE_ERROR_REPORTING;
  VALGRIND_MAKE_MEM_DEFINED(&c, sizeof c);
  return c;
#else
  return ((const uintptr_t *)p)[i];
#endif
}
/* writes a free block's header: its link to next under the span's key; carved: MSI_COOKIE_CARVED (never handed
   out yet) or 0. (The key is passed by value: a loop writing many headers keeps it in a register, where a load
   through the span would be repeated after every store) */
static inline void msi_block_set_key(uintptr_t key, msi_block_t *b, msi_block_t *next, uintptr_t carved) {
#if MSI_HEAP_LIST_CHECKS
  b->next = (msi_block_t *)((uintptr_t)next ^ key);
  b->cookie = (uintptr_t)next ^ carved;
#else
  b->next = next;
  b->cookie = (uintptr_t)b ^ key ^ carved;
#endif
}
static inline void msi_block_set(const msi_span_t *s, msi_block_t *b, msi_block_t *next, uintptr_t carved) {
  msi_block_set_key(s->key, b, next, carved);
}
/* a freed block's link to `next` written (its header opened for that write alone under valgrind) */
static inline void msi_block_link(const msi_span_t *s, msi_block_t *b, msi_block_t *next) {
  MSI_HEAP_VG_OPEN(b);
  msi_block_set(s, b, next, 0);
  MSI_HEAP_VG_CLOSE(b);
}
/* 0: a freed block; MSI_COOKIE_CARVED: carved and never handed out; else live (or overwritten). Two loads of
   the line a free writes anyway */
static inline uintptr_t msi_block_state(const msi_span_t *s, const void *p) {
#if MSI_HEAP_LIST_CHECKS
  return msi_block_word(p, 0) ^ s->key ^ msi_block_word(p, 1);
#else
  return msi_block_word(p, 1) ^ (uintptr_t)p ^ s->key;
#endif
}
/* the block is on a free list (freed, or carved and not handed out yet) */
static inline bool msi_block_is_free(const msi_span_t *s, const void *p) {
  return msi_block_state(s, p) <= MSI_COOKIE_CARVED;
}
/* a link and the block holding it lie in one segment: every block of a span and the end of its lists (the span's
   descriptor, in the segment's header) do. The key is no secret from a program that reads a free block's two
   words (their xor), so a forged pair of words passes the compare: this test keeps what it leads to inside the
   block's own heap segment, never a stack, a global or another mapping (an xor and a shift, no load) */
static inline bool msi_block_same_segment(const msi_block_t *b, uintptr_t link) {
  return (((uintptr_t)b ^ link) >> MSI_HEAP_SEG_SHIFT) == 0;
}
/* a pop's check: the link of a block being taken off a free list (its header opened under valgrind); false when
   its words disagree (a corrupted list: msi_heap_corrupt_link names the block). A carved block's compare fails
   and the second one (off the fast path: a few instructions, no call) takes it: the mark in its second word, so
   a link with a flipped low bit is no carved block's */
static inline bool msi_block_take(const msi_span_t *s, const msi_block_t *b, uintptr_t *next) {
  /* (false at the list's end too: msi_span_list_end) */
#if MSI_HEAP_LIST_CHECKS
  uintptr_t copy = b->cookie, n = (uintptr_t)b->next ^ s->key;
  if (MSI_LIKELY(((copy ^ n) | (((uintptr_t)b ^ copy) >> MSI_HEAP_SEG_SHIFT)) == 0)) { /* equal, same segment */
    /* the link handed on is the plain copy: a run of pops is a chain of loads (the list head, then the link in
       the block it names), and the decoding xor stays off it, beside the chain, in the compare. The empty asm
       keeps the compiler from handing on the decoded value it knows equal */
    __asm__("" : "+r"(copy));
    *next = copy;
    return true;
  }
  *next = n;
  return copy == (n | MSI_COOKIE_CARVED) && msi_block_same_segment(b, n);
#else
  *next = (uintptr_t)b->next;
  return b != msi_span_list_end(s);
#endif
}
static inline msi_block_t *msi_block_next(const msi_span_t *s, const msi_block_t *b) {
  uintptr_t n;
  if (MSI_UNLIKELY(!msi_block_take(s, b, &n))) msi_heap_corrupt_link(s, b);
  return (msi_block_t *)n;
}
/* a block leaving the free list: its first word cleared (its state becomes the key ^ its old link; without the
   checks, its cookie cleared); the secure build writes its canary (last 8 bytes) */
static inline void msi_block_arm(const msi_span_t *s, msi_block_t *b) {
#if MSI_HEAP_LIST_CHECKS
  b->next = NULL;
#else
  b->cookie = 0;
#endif
#if MSI_HEAP_SECURE
  *(uintptr_t *)((char *)b + s->block_size - MSI_HEAP_CANARY) = (uintptr_t)b ^ msi_heap_g.canary_secret;
#else
  (void)s;
#endif
}
/* secure build: the canary of a block being freed is intact */
static inline bool msi_block_canary_ok(const msi_span_t *s, const void *p) {
#if MSI_HEAP_SECURE
  return *(const uintptr_t *)((const char *)p + s->block_size - MSI_HEAP_CANARY) == ((uintptr_t)p ^ msi_heap_g.canary_secret);
#else
  (void)s, (void)p;
  return true;
#endif
}
#pragma GCC visibility pop
#endif
