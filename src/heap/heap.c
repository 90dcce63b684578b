/* SPDX-License-Identifier: MIT */
/* heap.c: the small-block heap. Region and segments, spans, thread heaps with lock-free fast paths, remote
   (cross-thread) frees, span caches (thread -> global -> segment), orphaned heaps, purge/decay, fork.
   The design is described in docs/heap.md and heap.h. */
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

MSI_START_BSS msi_heap_globals_t msi_heap_g;
MSI_START_BSS msi_heap_counters_t msi_heap_counters;
MSI_COLD_BSS _Atomic uint64_t msi_heap_returned_spans[MSI_HEAP_CLASSES];
MSI_START_BSS msi_heap_limits_t msi_heap_limits;

/* Size classes, constant tables (.rodata: shared with every process mapping the library, so a process writes
   none of them and runs no code to fill them):
   - sizes: 16-128 by 16, then 8 classes per doubling up to 4 KiB, then 16 per doubling up to 32 KiB (blocks of
     4-32 KiB hold most of the rounding);
   - a span's chunks: the fewest (1..8) holding at least 4 blocks with at most 1/64 of it wasted; else the count
     wasting the least (per mille, the fewest chunks among equals) with at least 2 blocks (CLS_CHUNKS);
   - its capacity (the secure build's guard page at the span's end left out);
   - for heap.h msi_span_block_start: the size's power-of-two factor and the inverse of its odd part mod 2^64
     (Newton's iteration from d0 itself, right to 3 bits: each step doubles them);
   - the lookup table: units of 16 bytes above the previous class's size, up to this class's, map to it.
   tests/heap test_heap_unit (test_classes) checks them against the same rules computed by loops. */
#define CLS_SUB(c, k) ((c) < (k) ? 0 : (c) - (k)) /* no negative shift count in the branches not taken (clang) */
#define CLS_SIZE(c) ((uint32_t)((c) < 8 ? 16u * ((c) + 1u) \
                                : (c) < 48 ? (128u << CLS_SUB(c, 8) / 8) / 8 * (8u + CLS_SUB(c, 8) % 8 + 1u) \
                                           : (4096u << CLS_SUB(c, 48) / 16) / 16 * (16u + CLS_SUB(c, 48) % 16 + 1u)))
#define CLS_BYTES(n) ((uint64_t)(n) * MSI_HEAP_CHUNK - MSI_HEAP_GUARD)
#define CLS_CAP(n, bs) (CLS_BYTES(n) / (bs))
#define CLS_WASTE(n, bs) (CLS_BYTES(n) - CLS_CAP(n, bs) * (bs))
#define CLS_FITS(n, bs) (CLS_CAP(n, bs) >= 4 && CLS_WASTE(n, bs) * 64 <= CLS_BYTES(n))
#define CLS_FIRST_FIT(bs) (CLS_FITS(1, bs) ? 1 : CLS_FITS(2, bs) ? 2 : CLS_FITS(3, bs) ? 3 : CLS_FITS(4, bs) ? 4 : \
                           CLS_FITS(5, bs) ? 5 : CLS_FITS(6, bs) ? 6 : CLS_FITS(7, bs) ? 7 : CLS_FITS(8, bs) ? 8 : 0)
/* the waste in per mille and n in the low 4 bits: the least key is the least waste, the fewest chunks among equals */
#define CLS_KEY(n, bs) ((CLS_CAP(n, bs) >= 2 ? CLS_WASTE(n, bs) * 1000 / CLS_BYTES(n) : (uint64_t)1 << 40) * 16 + (n))
#define CLS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CLS_LEAST(bs) CLS_MIN(CLS_MIN(CLS_MIN(CLS_KEY(1, bs), CLS_KEY(2, bs)), CLS_MIN(CLS_KEY(3, bs), CLS_KEY(4, bs))), \
                              CLS_MIN(CLS_MIN(CLS_KEY(5, bs), CLS_KEY(6, bs)), CLS_MIN(CLS_KEY(7, bs), CLS_KEY(8, bs))))
#define CLS_CHUNKS(c) ((uint8_t)(CLS_FIRST_FIT(CLS_SIZE(c)) ? CLS_FIRST_FIT(CLS_SIZE(c)) : CLS_LEAST(CLS_SIZE(c)) % 16))
#define CLS_D0(c) ((uint64_t)CLS_SIZE(c) >> __builtin_ctz(CLS_SIZE(c)))
#define CLS_NEWTON(d, x) ((x) * (2 - (d) * (x)))
#define CLS_INV(c) CLS_NEWTON(CLS_D0(c), CLS_NEWTON(CLS_D0(c), CLS_NEWTON(CLS_D0(c), CLS_NEWTON(CLS_D0(c), \
                                                                                  CLS_NEWTON(CLS_D0(c), CLS_D0(c))))))
#define CLS_8(X, b) X(b) X(b + 1) X(b + 2) X(b + 3) X(b + 4) X(b + 5) X(b + 6) X(b + 7)
#define CLS_ALL(X) CLS_8(X, 0) CLS_8(X, 8) CLS_8(X, 16) CLS_8(X, 24) CLS_8(X, 32) CLS_8(X, 40) CLS_8(X, 48) \
                   CLS_8(X, 56) CLS_8(X, 64) CLS_8(X, 72) CLS_8(X, 80) CLS_8(X, 88)
_Static_assert(MSI_HEAP_CLASSES == 96 && CLS_SIZE(95) == MSI_HEAP_SMALL_MAX, "CLS_ALL lists every class");
#define CLS_E_SIZE(c) CLS_SIZE(c),
#define CLS_E_CHUNKS(c) CLS_CHUNKS(c),
#define CLS_E_CAP(c) (uint32_t)CLS_CAP(CLS_CHUNKS(c), CLS_SIZE(c)),
#define CLS_E_INV(c) CLS_INV(c),
#define CLS_E_SHIFT(c) (uint8_t)__builtin_ctz(CLS_SIZE(c)),
#define CLS_E_LUT(c) [(c) ? (CLS_SIZE((c) - 1) >> 4) + 1 : 0 ... CLS_SIZE(c) >> 4] = (c),
const uint32_t msi_heap_class_size[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_SIZE)};
const uint8_t msi_heap_class_chunks[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_CHUNKS)};
const uint8_t msi_heap_size_lut[(MSI_HEAP_SMALL_MAX >> 4) + 1] = {CLS_ALL(CLS_E_LUT)};
static const uint64_t class_inv[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_INV)};
static const uint8_t class_shift[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_SHIFT)};
_Static_assert(MSI_HEAP_CLASSES <= MS_STATS_SIZE_CLASSES + MS_STATS_SIZE_CLASSES_MORE, "every class has its statistics entry");
static const uint32_t class_capacity[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_CAP)};

/* Span colouring. Spans start on 64 KiB chunks, so without it the n-th block of every span of a class lies at the
   same offset in its 4 KiB page, and so in the same sets of a cache indexed by the low address bits (L1: 4 KiB a
   way): the first block of every span at offset 0, and for classes such as 4608 or 7168 (SQLite's page cache: a page
   and its header a block) every block's header in an eighth or a sixteenth of the sets. SQLite building an index then
   misses L1 far more often than under glibc's heap, whose chunks follow each other at no fixed stride. So a span's
   blocks start at a colour past its chunk: a multiple of 64, taken from the chunk's address (Fibonacci hashing: no
   shared counter, and neighbouring chunks differ), among the class's colours: as many as its waste allows (what its
   chunks hold beyond its blocks; at most 64 colours, 4032 bytes), and at least 8 (up to 448 bytes: a span whose colour
   passes its waste holds the blocks that still fit, a few fewer). Blocks stay aligned to 64, and to their size's power
   of two up to that; the powers of two from 128 on keep a single colour (their blocks aligned to their size), and an
   aligned request above 64 bytes takes such a class (small_aligned in api.c). The secure build does not colour (its
   guard page makes every class's waste large, and its carving is shuffled anyway). */
#define CLS_WASTE_COLOURS(c) (CLS_WASTE(CLS_CHUNKS(c), CLS_SIZE(c)) / 64 + 1)
#define CLS_POW2(c) ((CLS_SIZE(c) & (CLS_SIZE(c) - 1)) == 0)
#define CLS_COLOURS(c) (MSI_HEAP_SECURE || (CLS_POW2(c) && CLS_SIZE(c) >= 128) ? 1u \
                        : CLS_WASTE_COLOURS(c) < 8 ? 8u : CLS_MIN(CLS_WASTE_COLOURS(c), 64u))
#define CLS_E_COLOURS(c) (uint8_t)CLS_COLOURS(c),
const uint8_t msi_heap_class_colours[MSI_HEAP_CLASSES] = {CLS_ALL(CLS_E_COLOURS)};
_Static_assert(CLS_COLOURS(7) == 1 && CLS_COLOURS(95) == 1, "the powers of two from 128 on have one colour");

/* the colour of a span of class cls on the chunk at `chunk`: spread over the class's colours by the chunk's index */
static uintptr_t span_colour(uintptr_t chunk, unsigned cls) {
  uint32_t n = msi_heap_class_colours[cls];
  if (n <= 1) return 0;
  uint32_t h = (uint32_t)(chunk >> MSI_HEAP_CHUNK_SHIFT) * 2654435761u;
  return (uintptr_t)((h >> 26) % n) * 64;
}
/* the first chunk of a span (its blocks start at a colour past it) */
static inline uintptr_t span_chunk(const msi_span_t *s) { return s->base & ~(MSI_HEAP_CHUNK - 1); }

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

#define init_lock (msi_fork_page.heap_init) /* internal.h: msi_fork_page_t */
MSI_START_DATA static _Atomic int init_state; /* 0 none, 1 in progress, 2 done (read, then written) */
MSI_START_BSS static pthread_key_t heap_key;
MSI_START_BSS static bool heap_key_ok;

/* segments */
#define seg_lock (msi_fork_page.heap_seg) /* internal.h: msi_fork_page_t */
/* global span cache, one list per span length */
#define global_lock (msi_fork_page.heap_global) /* internal.h: msi_fork_page_t */
MSI_START_BSS static msi_span_list_t global_cache[MSI_HEAP_MAX_SPAN_CHUNKS + 1];
MSI_START_BSS static msi_cache_hold_t global_hold; /* under global_lock unless said */
/* heaps */
#define heaps_lock (msi_fork_page.heap_heaps) /* internal.h: msi_fork_page_t */
MSI_START_BSS static msi_heap_t *_Atomic all_heaps;
MSI_START_BSS static msi_heap_t *_Atomic orphans;
MSI_START_BSS static uint32_t heap_count;
static int orphans_busy; /* orphans a collector or a span's taker holds off the list (orphans_collect, orphan_span_take) */
/* those of orphans_busy this thread holds: a fork (msi_fork_heap) or a signal handler's call on it (malloc_trim)
   waits for the others only, since the thread's own end only after the handler returns */
static _Thread_local int orphans_held_here;
/* d orphans (or lists) taken off the list (1) or put back (-1) by this thread; under heaps_lock */
static void orphans_hold(int d) {
  orphans_busy += d;
  orphans_held_here += d;
}
/* another thread holds orphans off the list; under heaps_lock */
static bool orphans_held_elsewhere(void) { return orphans_busy > orphans_held_here; }
static uint8_t *heap_pool;
static size_t heap_pool_left;
/* The first thread's heap is static storage: a single-threaded program (most processes) maps no pool of heaps,
   one system call and one kernel mapping less at its first allocation. */
MSI_START_BSS static _Alignas(MSI_CACHE_LINE) msi_heap_t first_heap;
MSI_START_BSS static bool first_heap_taken;
MSI_START_BSS static _Atomic uint32_t last_purge_ms;

/* ------------------------------------------------------------------------------------------------------------ */
/* size classes and presets                                                                                     */
/* ------------------------------------------------------------------------------------------------------------ */

MSI_STARTUP_TEXT void msi_heap_set_preset(int preset) {
  msi_heap_limits_t l;
  switch (preset) {
  case 0: l = (msi_heap_limits_t){SIZE_MAX, SIZE_MAX, 64, SIZE_MAX, 30, SIZE_MAX, true}; break;
  case 2: l = (msi_heap_limits_t){256 * MSI_KiB, 1 * MSI_MiB, 4, 8 * MSI_MiB, 22, 4 * MSI_MiB, true}; break;
  case 3: l = (msi_heap_limits_t){0, 0, 0, 0, 0, 0, false}; break;
  default: l = (msi_heap_limits_t){16 * MSI_MiB, 64 * MSI_MiB, 64, 128 * MSI_MiB, 26, 64 * MSI_MiB, true}; break;
  }
  msi_heap_limits = l;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* errors                                                                                                       */
/* ------------------------------------------------------------------------------------------------------------ */

MSI_START_DATA bool msi_heap_checks = MSI_HEAP_CHECKS_BUILD;

/* a local free with checks on: the block must not already be on the span's free list (the cookie catches most
   double frees; this catches one whose cookie was overwritten), and debug builds poison the freed bytes */
void msi_heap_check_free(msi_span_t *s, msi_block_t *b) { /* the caller has checked the cookie */
  /* the cookie catches a double free unless the program wrote over the freed block; the walk also catches the
     most recent frees then. Only the debug build walks the whole list (up to 4096 blocks: too slow for a default build) */
  const unsigned walk = MEMSPACE_DEBUG ? 4096 : 8;
  unsigned n = 0;
  for (msi_block_t *f = s->free; f != msi_span_list_end(s) && n < walk; f = msi_block_next(s, f), n++) /* checked */
    if (f == b) msi_heap_bad_pointer(b, "free(): double free");
  for (msi_block_t *f = s->rfree; f && f != msi_span_list_end(s) && n < walk; f = msi_block_next(s, f), n++) /* remote */
    if (f == b) msi_heap_bad_pointer(b, "free(): double free");
#if MEMSPACE_DEBUG
  if (s->block_size > sizeof(msi_block_t)) memset(b + 1, 0xdf, s->block_size - sizeof(msi_block_t));
#endif
}

_Noreturn void msi_heap_bad_pointer(const void *p, const char *what) {
  msi_error("%s: %p (memspace heap); aborting", what, p);
  abort();
}

/* a free of a block whose cookie says it is on a free list: freed already, or carved and never handed out */
_Noreturn void msi_heap_freed_again(const msi_span_t *s, const void *p, const char *call) {
  bool never = msi_block_state(s, p) == MSI_COOKIE_CARVED && (msi_block_word(p, 1) & MSI_COOKIE_CARVED);
  msi_error("%s(): %s: %p (memspace heap); aborting", call,
            never ? "invalid pointer (a block never allocated)" : call[0] == 'f' ? "double free" : "pointer already freed", p);
  abort();
}

/* a pointer of the small region in no live span. A block of a mini span an empty orphan gave back (orphan_reclaim:
   the descriptor stays, state free and no owner, until a mini span takes its granule again) was freed with every
   other block of its heap, so one of its starts is freed again; anything else is an invalid pointer. Cold: the
   free and realloc paths reach it only to abort */
_Noreturn void msi_heap_bad_small(const void *p, const char *call) {
  bool again = false;
#if MSI_HEAP_MINI
  const msi_segment_t *seg = (const msi_segment_t *)((uintptr_t)p & ~(MSI_HEAP_SEG_SIZE - 1));
  uintptr_t off = (uintptr_t)p & (MSI_HEAP_SEG_SIZE - 1);
  if (off >= MSI_HEAP_MINI_BASE && off < MSI_HEAP_MINI_BASE + MSI_HEAP_MINI_SPANS * MSI_HEAP_MINI_SIZE) {
    uint8_t first = MSI_SEEN(seg->mini_map[(off - MSI_HEAP_MINI_BASE) >> MSI_HEAP_MINI_SHIFT]);
    const msi_span_t *m = first < MSI_HEAP_MINI_SPANS ? msi_seg_mini(seg, first) : NULL;
    again = m && MSI_SEEN(m->state) == MSI_SPAN_FREE && !MSI_SEEN(m->owner) && m->block_size &&
            m->base == (uintptr_t)seg + MSI_HEAP_MINI_BASE + (uintptr_t)first * MSI_HEAP_MINI_SIZE &&
            msi_span_block_start(m, p);
  }
#endif
  msi_error("%s(): %s: %p (memspace heap); aborting", call,
            !again ? "invalid pointer" : call[0] == 'f' ? "double free" : "pointer already freed", p);
  abort();
}

/* the block's link and its copy (heap.h msi_block_set) disagree, and not as a carved block's do. Named for what
   the words say: the copy a link of the span and the link something else (the link word written to; a block in
   use when it leads to one), or neither a link (the header overwritten, or a block in use reached by a link) */
static bool link_plausible(const msi_span_t *s, uintptr_t n) {
  return n == (uintptr_t)msi_span_list_end(s) || (n >= s->base && msi_span_block_start(s, (const void *)n));
}
_Noreturn void msi_heap_corrupt_link(const msi_span_t *s, const void *block) {
  uintptr_t link = msi_block_word(block, 0) ^ s->key, copy = msi_block_word(block, 1) & ~MSI_COOKIE_CARVED;
  if (!link_plausible(s, copy))
    msi_error("free list corrupted at %p (blocks of %u bytes): not a free block (a block in use, reached by "
              "a link written after free; or a free block's header overwritten after free or by an overflow from the "
              "block before) (memspace heap); aborting", block, s->block_size);
  else if (link && link_plausible(s, link) && !msi_block_is_free(s, (const void *)link))
    msi_error("free list corrupted at %p (blocks of %u bytes): its link was changed to lead to %p, a block in use "
              "(written after free, or overflowed into from the block before); that block is not handed out again "
              "(memspace heap); aborting", block, s->block_size, (void *)link);
  else
    msi_error("corrupted free-list link in the free block %p (blocks of %u bytes): decodes to %p, not the link it "
              "holds (%p): the block was written after free, or overflowed into from the block before (memspace "
              "heap); aborting",
              block, s->block_size, (void *)link, (void *)copy);
  abort();
}


/* ------------------------------------------------------------------------------------------------------------ */
/* secure build: guard pages and the carving order                                                              */
/* ------------------------------------------------------------------------------------------------------------ */

/* whether guard markers work here (secure build; msi_heap_g.guard_markers): probed once at start-up on a fresh
   page. Refused (EINVAL): a kernel before 6.13, or memory locked by an mlockall(MCL_FUTURE) made before. */
MSI_STARTUP_TEXT static bool guard_probe(void) {
  void *p = msi_os_mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  bool ok = msi_os_madvise(p, 4096, MADV_GUARD_INSTALL) == 0;
  msi_os_munmap(p, 4096);
  return ok;
}

/* a guard marker refused on locked pages (mlock, mlockall): reported once, for spans and large blocks alike */
void msi_heap_guard_refused(void) {
  MSI_WARN_ONCE("heap (secure build): guard markers refused on locked memory (mlock, mlockall): spans and blocks "
                "of 64 KiB-1 MiB made from now on go without a guard page");
}

#if MSI_HEAP_SECURE
/* a guard page at addr: MADV_GUARD_INSTALL marks the page so that any access faults, without a new mapping (the
   segment stays one VMA). mprotect would split the segment's mapping in three per span, past the kernel's limit
   of ~65,530 mappings in a few GiB of heap, so without markers there is no guard in segments (reported once at
   start-up). true: installed. Refused on locked pages (mlock, mlockall): that span goes without a guard. */
MSI_HOT_TEXT static bool guard_install(uintptr_t addr) {
  if (!msi_heap_g.guard_markers) return false;
  int saved = errno; /* a refusal is not the caller's failure: malloc succeeds with errno as it was */
  if (msi_os_madvise((void *)addr, MSI_HEAP_GUARD, MADV_GUARD_INSTALL) == 0) return true;
  if (errno == EINVAL) msi_heap_guard_refused();
  errno = saved;
  return false; /* (or an injected fault) */
}
/* the page becomes ordinary memory again (a span of another length may put blocks there). Never skipped for a
   span that got its guard: a guard left behind would sit inside the next span's blocks. false: the guard may
   still be there (every way refused, the fresh mapping too: the mapping limit, or a kernel that unmapped the page
   first, a hole), reported once; the caller keeps the page's chunk out of use */
static bool guard_remove(uintptr_t addr) {
  int saved = errno; /* (free leaves errno alone) */
  bool ok = false;
  for (int i = 0; i < 3 && !ok; i++) ok = msi_os_madvise((void *)addr, MSI_HEAP_GUARD, MADV_GUARD_REMOVE) == 0;
  /* still refused: a fresh mapping over the page drops any guard (and merges back into the segment's mapping) */
  if (!ok)
    ok = msi_os_mmap((void *)addr, MSI_HEAP_GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                     0) == (void *)addr;
  if (!ok)
    MSI_WARN_ONCE("heap (secure build): a span's guard page could not be removed (%s): its 64 KiB chunk is left "
                  "unused", MSI_ERRNO(errno));
  errno = saved;
  return ok;
}

/* the carving order's PRNG (xorshift64*), per thread, seeded from the process secret and the thread */
static __thread uint64_t carve_rng;
static uint32_t carve_random(uint32_t bound) {
  uint64_t x = carve_rng;
  if (MSI_UNLIKELY(!x)) x = (msi_heap_g.canary_secret ^ (uintptr_t)&carve_rng) * 0x9E3779B97F4A7C15ull | 1;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  carve_rng = x;
  return (uint32_t)(((x * 0x2545F4914F6CDD1Dull) >> 32) * bound >> 32);
}
#endif

/* ------------------------------------------------------------------------------------------------------------ */
/* region and segments                                                                                          */
/* ------------------------------------------------------------------------------------------------------------ */

/* Under RLIMIT_AS a reservation counts against the limit, and so does every mapping of the program: the heap takes
   a share of the room left under the limit at start-up (the limit less VmSize), never a fixed amount (a fixed 92 MiB
   would make `ls` and Python fail at start-up under `ulimit -v 100000`, which glibc runs). The large slot sizes'
   sub-regions (22 of them) take at most a sixteenth of that room, with sub-regions from 128 GiB down to 64 KiB; with
   less room there is no slot area, and every large block is mapped on its own (direct.c), as glibc maps its large
   blocks. Larger blocks, and blocks finding every slot of their size taken, are direct too. The segment area is not
   reserved at all there (small_reserved 0): it starts 64 GiB (or twice the limit) above the program's break, the far
   end of the kernel's placement in both layouts (top-down from below the stack; bottom-up from a third of the address
   space, below a PIE program), and grows a segment at a time with MAP_FIXED_NOREPLACE (segment_new), which never
   replaces a mapping that landed there (a reservation of a share of the limit would cap small blocks at that share:
   glibc and mimalloc fill nearly the whole limit with 100-byte blocks under `ulimit -v 4000000`). Only where that
   address is unusable is a segment area reserved: an eighth of the room. (Put just below the sub-regions, a program's
   own mappings spread downwards could end the area: many mmaps of which the program keeps a page each leave it almost
   nothing.) A limit lowered later (setrlimit) is met when a mapping is refused: msi_heap_fit_limit. */
#define MAX_SEGMENTS (1u << 18) /* 1 TiB of segments */
#define SMALL_AREA_MAX ((size_t)MAX_SEGMENTS << MSI_HEAP_SEG_SHIFT)
#define BREAK_MARGIN ((size_t)64 << 30) /* room left to the program's break (sbrk) */
static bool small_area_above_break(size_t limit, uintptr_t large_base, size_t large_size) {
  size_t margin = limit < ((size_t)1 << 60) && limit / 4 * 8 > BREAK_MARGIN ? limit / 4 * 8 : BREAK_MARGIN;
  uintptr_t base = msi_align_up((uintptr_t)sbrk(0) + margin, MSI_HEAP_SEG_SIZE);
  if (base < margin || base + SMALL_AREA_MAX < base || (base + SMALL_AREA_MAX) >> 47) return false;
  if (base < large_base + large_size && large_base < base + SMALL_AREA_MAX) return false; /* overlap */
  msi_heap_g.base = base;
  msi_heap_g.small_size = SMALL_AREA_MAX;
  msi_heap_g.small_reserved = 0;
  return true;
}

/* the reservations' alignment slack, before and after each region, and the segments region_skip passes over
   (given back by fit_limit_locked) */
MSI_START_BSS static struct { uintptr_t addr; size_t len; } slack[4];
MSI_START_DATA static unsigned nslack; /* read, then written, at start-up */

/* reserves r with its alignment slack kept (one system call at start-up), recorded for fit_limit_locked; the
   reservation ends below 2^48 (span xfree words hold 48-bit addresses). false when refused */
MSI_STARTUP_TEXT static bool region_reserve(msi_os_reservation_t *r) {
  r->flags |= MSI_OS_RESERVE_KEEP_SLACK;
  if (msi_os_reserve(r) != 0) return false;
  uintptr_t base = (uintptr_t)r->addr, map = (uintptr_t)r->map;
  if (nslack + 2 <= 4) {
    slack[nslack].addr = map, slack[nslack++].len = base - map;
    slack[nslack].addr = base + r->size, slack[nslack++].len = map + r->map_size - (base + r->size);
  }
  return true;
}

static void region_large(uintptr_t base, size_t shift) {
  msi_heap_g.large_base = base;
  msi_heap_g.large_size = base ? MSI_HEAP_LARGE_CLASSES * ((size_t)1 << shift) : 0;
  msi_heap_g.sub_shift = shift; /* below MSI_HEAP_LARGE_MIN_SHIFT: no slot (large.c) */
}

/* The reservation without a limit: 2^37 sub-regions (8 of them for the slot table and the segments), down to `min`
   bytes when refused. It is asked for at least 64 GiB above the program (its headers: getauxval, no system call; its
   break lies between, as under RLIMIT_AS: small_area_above_break; region_place adds 0-63 x 128 GiB, region_skip up
   to 512 MiB more to the segments), not where the kernel puts a mapping without a hint,
   just below the libraries: there it would push every later mapping (the locale archive, a dlopen()ed library, a
   thread's stack) below its 4 TiB, away from the libraries, and each short process would pay for their page-table
   pages of their own. The slot table's place comes first (large.c table_get: the entries past each size's first
   16 slots), the segment area right after it, in the same gibibyte: the first segment and the table share their
   page-table pages above the last level. */
/* the kernel's 16 random bytes for this process (AT_RANDOM), or zeros (false) */
MSI_STARTUP_TEXT static bool kernel_random(uint64_t r[2]) {
  const void *at_random = (const void *)getauxval(AT_RANDOM);
  r[0] = r[1] = 0;
  if (at_random) msi_memcpy(r, at_random, 2 * sizeof *r);
  return at_random != NULL;
}

/* which of 64 places 128 GiB apart above the program the region asks for: the kernel's random bytes and the stack's
   address (randomised apart from the program), so the program's address does not give the heap's. The top bits of
   two products of that value (region_place, region_skip): the 13 bits they show of a mix of the kernel's 128
   random bits leave the heap's secrets (msi_heap_global_init: 64 of those bits and an address) unknown */
MSI_STARTUP_TEXT static uint64_t region_random(void) {
  uint64_t r[2];
  kernel_random(r); /* (zeros without them: the stack's address alone) */
  return (r[0] + r[1] * 0xD6E8FEB86659FD93ull) ^ (uintptr_t)__builtin_frame_address(0);
}
MSI_STARTUP_TEXT static unsigned region_place(uint64_t x) { return (unsigned)((x * 0x9E3779B97F4A7C15ull) >> 58); }
/* The places alone leave a block's address one of about 70 (the program's own place, aligned up to 128 GiB,
   adds about 3 bits): the segment area also starts a random number of segments (below 128, 512 MiB) past the slot
   table, within the gibibyte the table starts (the two keep sharing their page-table page) and a 32nd of the area,
   so that the first blocks' addresses take about 7 more random bits, the part below 4 MiB staying fixed. The
   segments skipped stay reserved and untouched: address space only */
MSI_STARTUP_TEXT static size_t region_skip(uint64_t x, size_t table, size_t area) {
  size_t gib = (size_t)1 << 30, room = table + MSI_HEAP_SEG_SIZE <= gib ? gib - table - MSI_HEAP_SEG_SIZE : 0;
  if (room > area / 32) room = area / 32;
  size_t skip = (size_t)((x * 0xC2B2AE3D27D4EB4Full) >> 57) << MSI_HEAP_SEG_SHIFT;
  while (skip > room) skip >>= 1;
  return skip & ~(MSI_HEAP_SEG_SIZE - 1);
}

MSI_STARTUP_TEXT static bool region_unlimited(size_t min) {
  size_t classes = MSI_HEAP_LARGE_CLASSES, top = (size_t)1 << MSI_HEAP_LARGE_MAX_SHIFT;
  msi_os_reservation_t r = {.want = (8 + classes) * top, .min = min, .align = top, .flags = MSI_OS_RESERVE_HALVE_ALIGN};
  uintptr_t prog = (uintptr_t)getauxval(AT_PHDR);
  uint64_t x = region_random();
  uintptr_t hint = msi_align_up(prog + BREAK_MARGIN, top) + (uintptr_t)region_place(x) * top;
  if (prog && hint > prog && !((hint + r.want + top) >> 47)) r.hint = hint;
  if (!region_reserve(&r)) return false;
  size_t sub = r.got_align, shift = (size_t)__builtin_ctzll(sub);
  size_t table = msi_align_up(msi_large_table_bytes(shift), MSI_HEAP_SEG_SIZE);
  size_t skip = region_skip(x, table, 8 * sub - table);
  if (skip && nslack < 4) { /* reserved, never used: a limit lowered later gets it back (fit_limit_locked) */
    slack[nslack].addr = (uintptr_t)r.addr + table, slack[nslack++].len = skip;
  }
  msi_heap_g.table_area = (uintptr_t)r.addr;
  msi_heap_g.base = (uintptr_t)r.addr + table + skip;
  msi_heap_g.small_size = msi_heap_g.small_reserved = 8 * sub - table - skip;
  region_large((uintptr_t)r.addr + 8 * sub, shift);
  if (sub != top)
    msi_verbose("heap: reserved %zu MiB of address space (less than the usual 3.75 TiB): blocks above %zu MiB "
                "are mapped on their own", r.map_size >> 20, sub >> 20);
  return true;
}

/* The whole reservation is tried first, before RLIMIT_AS is asked for (a system call in every allocating
   process): under a limit the kernel refuses it, as it is larger than any limit set in practice, and a limit
   above it and what the program maps (3.75 TiB and more) is taken for none. */
MSI_STARTUP_TEXT static bool region_init(void) {
  size_t classes = MSI_HEAP_LARGE_CLASSES, top = (size_t)1 << MSI_HEAP_LARGE_MAX_SHIFT;
  if (region_unlimited((8 + classes) * top)) return true;
  size_t limit = msi_os_as_limit();
  msi_heap_g.as_limited = limit != SIZE_MAX;
  if (limit == SIZE_MAX) {
    if (region_unlimited((8 + classes) << 22)) return true;
    /* every such reservation refused (a seccomp filter refusing large mmaps, where glibc goes on with brk): no
       reservation for segments, as under a limit (they grow a segment at a time above the break); slots as large
       as a mapping is allowed */
    msi_verbose("heap: reserving address space refused (%s): segments are mapped one at a time", MSI_ERRNO(errno));
  }
  size_t vm = limit == SIZE_MAX ? 0 : msi_os_vm_size(), room = limit > vm ? limit - vm : 0;
  /* the slot area with one sub-region of slack within a sixteenth of the room, or none */
  msi_os_reservation_t r = {.want = classes * top, .min = classes << MSI_HEAP_LARGE_MIN_SHIFT, .align = top,
                            .budget = room / 16 ? room / 16 : 1,
                            .flags = MSI_OS_RESERVE_HALVE_ALIGN | MSI_OS_RESERVE_STRICT};
  uintptr_t large = region_reserve(&r) ? (uintptr_t)r.addr : 0;
  region_large(large, large ? (size_t)__builtin_ctzll(r.got_align) : MSI_HEAP_LARGE_MIN_SHIFT - 1);
  msi_verbose("heap: RLIMIT_AS %zu MiB, %zu MiB mapped: %s%zu KiB reserved for large blocks", limit >> 20, vm >> 20,
              large ? "" : "nothing ", large ? r.size >> 10 : 0);
  if (small_area_above_break(limit, large, msi_heap_g.large_size)) return true;
  /* no usable address above the break: a reserved segment area, an eighth of the room (at least a segment) */
  size_t want = msi_align_down(room / 8, MSI_HEAP_SEG_SIZE);
  msi_os_reservation_t sm = {.want = want > MSI_HEAP_SEG_SIZE ? want : MSI_HEAP_SEG_SIZE, .min = MSI_HEAP_SEG_SIZE,
                             .align = MSI_HEAP_SEG_SIZE, .unit = MSI_HEAP_SEG_SIZE};
  if (!region_reserve(&sm)) return false;
  msi_heap_g.base = (uintptr_t)sm.addr;
  msi_heap_g.small_size = msi_heap_g.small_reserved = sm.size;
  return true;
}

/* A limit lowered at run time (setrlimit(RLIMIT_AS) below the address space the process holds) makes the kernel
   refuse every mapping, even one that replaces reserved pages (the reservation alone is over the limit): small
   blocks would end at once, and every other mapping of the program (a thread's stack) with them, where glibc goes on.
   After a refusal under a limit the reservations beyond what is in use go back: the segment area's past the
   segments made (it then grows a segment at a time, as when limited from the start) and the slot area's
   (msi_large_release_unused). Seg lock held. true: something went back. */
/* the segment area's reservation past the segments made goes back (seg lock held): its bytes */
static size_t segments_unreserve(void) {
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_relaxed), had = msi_heap_g.small_reserved;
  if (top >= had) return 0;
  msi_heap_g.small_reserved = top; /* first: an address there is no longer a wild pointer of ours */
  if (msi_os_munmap((void *)(msi_heap_g.base + top), had - top) == 0) return had - top;
  msi_heap_g.small_reserved = had;
  return 0;
}

static bool fit_limit_locked(void) {
  size_t limit = msi_os_as_limit();
  if (limit == SIZE_MAX) return false;
  size_t freed = segments_unreserve();
  freed += msi_large_release_unused();
  for (unsigned i = 0; i < nslack; i++)
    if (slack[i].len && msi_os_munmap((void *)slack[i].addr, slack[i].len) == 0) {
      freed += slack[i].len;
      slack[i].len = 0;
    }
  if (freed)
    msi_verbose("heap: RLIMIT_AS is %zu MiB: %zu MiB of reserved address space given back", limit >> 20, freed >> 20);
  return freed != 0;
}

bool msi_heap_fit_limit(void) {
  if (!msi_heap_g.ready) return false;
  msi_lock(&seg_lock);
  bool r = fit_limit_locked();
  msi_unlock(&seg_lock);
  return r;
}

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
  guard_install((uintptr_t)seg + MSI_HEAP_CHUNK - MSI_HEAP_GUARD); /* between the header and chunk 1 */
#endif
  MSI_SEEN_SET(seg->free_mask, ~(uint64_t)1); /* chunk 0 is the header */
  /* the descriptors are fresh zeros (MSI_SPAN_FREE); each one's base is set when its chunk first starts a span
     (segment_alloc_span: only map[] leads to a descriptor), so a new segment touches one page of its 8 KiB of
     descriptors, not three. desc[0], where map[] sends every chunk outside a span, is set here. */
  msi_seg_span(seg, 0)->base = (uintptr_t)seg;
  atomic_fetch_add_explicit(&msi_heap_counters.segments, 1, memory_order_relaxed);
  msi_os_count_commit(MSI_HEAP_CHUNK); /* the header; chunks count as spans take them (segment_alloc_span) */
  msi_heap_mapped_peak_note();
}
MSI_HOT_TEXT static msi_segment_t *segment_new(void) {
  int saved = errno;
  msi_segment_t *seg = segment_map();
  if (MSI_UNLIKELY(!seg) && (fit_limit_locked() || segments_unreserve()) && (seg = segment_map())) errno = saved;
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
#define SEG_ALL_FREE (~(uint64_t)1) /* every chunk but the header's */
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

/* Released segments (segments_reclaim): an idle segment beyond those kept for the next threads goes back whole, its
   range mapped afresh read-only and MAP_NORESERVE (no page, no commit charge; the address stays the heap's, so no
   other mapping lands inside the segment area, and a read of its header finds zeros: no room, no span, which every
   scan of the segments takes as an unused segment). A heap needing room maps the lowest one read-write again
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
MSI_START_BSS static size_t seg_released_n;
static bool seg_is_released(size_t i) { return MSI_SEEN(seg_released[i / 64]) >> (i % 64) & 1; }
static void seg_released_set(size_t i, bool on) {
  uint64_t w = seg_released[i / 64], b = 1ull << (i % 64);
  MSI_SEEN_SET(seg_released[i / 64], on ? w | b : w & ~b);
  seg_released_n += on ? 1 : (size_t)-1;
}
/* Segments a reclaim pass took out of the free masks (segments_reclaim) and has not yet given back: to release
   whole (segments_release) or to make bare. The pass works on them without seg_lock, so a fork meanwhile (another
   thread's) would leave them to the child neither in the free masks nor released, counted segments forever: the
   child finishes that work (reclaim_pending_finish, from msi_fork_heap). Under seg_lock; their returned bytes are
   counted when the pass takes them (the child does not count them again). */
MSI_COLD_BSS static uint64_t seg_pending_release[MAX_SEGMENTS / 64], seg_pending_bare[MAX_SEGMENTS / 64];
static size_t seg_pending_n;
/* segment i is being released (mapped read-only already, marked released later); under seg_lock */
static bool seg_release_pending(size_t i) { return seg_pending_release[i / 64] >> (i % 64) & 1; }
static void seg_pending_set(uint64_t *bits, const msi_segment_t *seg, bool on) {
  size_t i = seg_index(seg);
  bits[i / 64] = on ? bits[i / 64] | 1ull << (i % 64) : bits[i / 64] & ~(1ull << (i % 64));
  seg_pending_n += on ? 1 : (size_t)-1;
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
  if (!seg && seg_released_n && (seg = segment_revive())) at = 1; /* (no address space more: before sharing) */
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
MSI_HOT_TEXT static msi_span_t *segment_alloc_span(msi_heap_t *h, unsigned n) {
  msi_lock(&seg_lock);
  int at;
  msi_segment_t *seg = segment_pick(h, n, &at);
  if (!seg) { msi_unlock(&seg_lock); return NULL; }
  uint64_t bits = (n == 64 ? ~0ull : ((1ull << n) - 1)) << at;
  MSI_SEEN_SET(seg->free_mask, seg->free_mask & ~bits);
  if (seg->bare) MSI_SEEN_SET(seg->bare, 0); /* (in use again: segments_reclaim) */
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
  s->guarded = guard_install(s->base + (size_t)n * MSI_HEAP_CHUNK - MSI_HEAP_GUARD); /* stays while it is cached */
#endif
  return s;
}

static void chunks_purged(size_t bytes) {
  atomic_fetch_add_explicit(&msi_heap_counters.returned_bytes, bytes, memory_order_relaxed);
}
/* The pages of chunk 0 past its first that a pass gave back and counted returned and that nothing wrote since
   (hdr_back): all of them when the segment goes bare (segments_reclaim), pages of the mini area when an orphan's
   mini spans leave (orphan_minis_reclaim); a span's descriptor and a mini span's pages taken later clear theirs
   (hdr_touch). A later give-back of that chunk counts only the rest, so "returned" counts each byte once per use.
   Under seg_lock, or on a segment out of the free masks (the pass's own) */
#if MSI_HEAP_MINI
#define MINI_AREA_BYTES (MSI_HEAP_CHUNK - MSI_HEAP_GUARD - MSI_HEAP_MINI_BASE)
/* the mini area's pages (none when its start is not on a page: pages larger than 16 KiB) */
static unsigned mini_pages(void) {
  size_t ps = msi_os_page_size();
  return MSI_HEAP_MINI_BASE % ps ? 0 : (unsigned)(MINI_AREA_BYTES / ps);
}
/* the mini area's pages as hdr_back's bits (its first page's bit: mini_pages_at) */
static unsigned mini_pages_at(void) { return (unsigned)(MSI_HEAP_MINI_BASE / msi_os_page_size()); }
static uint16_t mini_pages_all(void) { return (uint16_t)(((1u << mini_pages()) - 1) << mini_pages_at()); }
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
   segment->chunk_back, so the later give-back of the chunks (segments_purge, or segment_release_span at once)
   counts only the rest, also when a span taking the dirty chunks meanwhile never wrote those pages. A span writes
   only below `touched` (span_carve), so its marks below it are stale: span_back_written drops them whenever the
   span trims again or leaves its chunks. [from, to) page-aligned, inside one span */
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
static void span_trimmed(msi_span_t *s, uintptr_t from, uintptr_t to) {
  chunks_purged(to - from);
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
static void segment_release_span(msi_span_t *s, bool purge_now, uint32_t idle_since) {
  span_back_written(s); /* (`touched` counts from its base as it was) */
  s->base = span_chunk(s); /* (the next span here sets its colour) */
  msi_segment_t *seg = span_segment(s);
  unsigned at = (unsigned)((s->base - (uintptr_t)seg) >> MSI_HEAP_CHUNK_SHIFT), n = s->nchunks;
  size_t bytes = (size_t)n * MSI_HEAP_CHUNK;
  uint64_t bits = (n == 64 ? ~0ull : ((1ull << n) - 1)) << at;
#if MSI_HEAP_SECURE
  if (s->guarded && !guard_remove(s->base + bytes - MSI_HEAP_GUARD)) {
    bits &= ~(1ull << (at + n - 1)); /* the guard's chunk never free again: a span there would fault */
    if (!purge_now) msi_heap_note_idle(-(int64_t)MSI_HEAP_CHUNK); /* (nor dirty: no purge takes it off idle) */
  }
  s->guarded = 0;
#endif
  if (purge_now) {
    msi_os_purge((void *)s->base, bytes);
    chunks_purged(bytes - chunks_back_take(seg, bits));
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

/* returns idle dirty chunks to the OS; the chunks leave the free mask while their pages are dropped. A segment
   without dirty chunks, as its mask reads unlocked (MSI_SEEN: a chunk made dirty meanwhile waits for the next pass),
   costs no trip through the segments' lock: each pass of the maintenance thread would otherwise take it once per
   segment, against the threads taking spans. The pass drops the pages without seg_lock, so a fork meanwhile
   (another thread's) would leave the chunks to the child neither free nor dirty, never used again: they are
   noted in segment->purging (seg_purging_n of them) and a child finishes the pass (purge_pending_finish, from
   msi_fork_heap). Their returned bytes are counted when the pass takes them (the child does not count them again) */
static size_t seg_purging_n; /* (under seg_lock) */
/* the segment whose chunks this thread's pass holds (segments_purge): a child forked by a signal handler that
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
  seg_purging_n--;
  seg_avail_update(seg);
}
static void segments_purge(uint32_t now, uint32_t delay, bool force) {
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
    seg_purging_n++;
    purging_here = seg;
    size_t bytes = (size_t)msi_popcount64(m) * MSI_HEAP_CHUNK;
    chunks_purged(bytes - chunks_back_take(seg, m));
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
static void purge_pending_finish(void) {
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_acquire);
  for (uintptr_t off = 0; off < top && seg_purging_n; off += MSI_HEAP_SEG_SIZE) {
    msi_segment_t *seg = (msi_segment_t *)(msi_heap_g.base + off);
    if (seg_is_released(off >> MSI_HEAP_SEG_SHIFT) || !seg->purging || seg == purging_here) continue;
    chunks_drop(seg, seg->purging);
    chunks_purge_done(seg);
  }
}

/* Idle segments. A segment with every chunk free and purged (idle for the purge delay: segments_purge) and no mini
   span, serving no live thread, holds only its header's pages: a program whose burst of threads has ended
   (a thread-per-connection server after a burst of connections) would keep a segment per thread of the burst,
   4 MiB mapped and a few pages resident each, however long it idles. Each pass keeps the lowest SEG_KEEP of them
   mapped with chunk 0 past its first page given back (bare: the next threads' spans take them without a system
   call) and releases the rest whole (segment_release, read back by segment_revive). SEG_KEEP is twice the CPUs
   the process may run on, 4 to 64: a burst of new threads runs that many at a time at most, and the next burst's
   first threads find their segments mapped; each further one maps its segment again (one mmap, beside the one for
   its stack glibc makes past its stack cache). */
static _Atomic unsigned seg_keep_n;
static unsigned seg_keep(void) {
  unsigned k = atomic_load_explicit(&seg_keep_n, memory_order_relaxed);
  if (!k) {
    k = 2 * msi_os_cpu_count();
    k = k < 4 ? 4 : k > 64 ? 64 : k;
    atomic_store_explicit(&seg_keep_n, k, memory_order_relaxed);
  }
  return k;
}
/* n neighbouring idle segments from seg (segments_reclaim), out of the free masks, go back whole in one call (see
   seg_released) */
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
/* an idle segment a pass took (segments_reclaim) to keep mapped: the descriptors past its first page and the mini
   spans' area (a guard's page at its end left alone) go back; then, under seg_lock, it is back in the free masks */
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
static void reclaim_pending_finish(void) {
  for (size_t w = 0; w < MAX_SEGMENTS / 64 && seg_pending_n; w++) {
    while (seg_pending_bare[w]) segment_bare(seg_at(w * 64 + (size_t)__builtin_ctzll(seg_pending_bare[w])));
    while (seg_pending_release[w]) segments_release(seg_at(w * 64 + (size_t)__builtin_ctzll(seg_pending_release[w])), 1);
  }
}
/* this thread's reclaim passes under way: a child forked by a signal handler that interrupted one leaves every
   pending segment as it is (the pass resumes there and finishes its own; another thread's, taken at the same
   time, stays out of use in that child rather than be given back twice) */
static _Thread_local unsigned reclaim_here;
static void segments_reclaim(unsigned keep) {
  int saved = errno; /* (a single-threaded program purges from malloc and free) */
  reclaim_here++;
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
    chunks_purged((release ? MSI_HEAP_CHUNK : MSI_HEAP_CHUNK - MSI_HEAP_GUARD - ps) - header_back(seg));
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
  reclaim_here--;
  errno = saved;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* span caches                                                                                                  */
/* ------------------------------------------------------------------------------------------------------------ */

static void list_push(msi_span_list_t *l, msi_span_t *s) {
  s->next = l->head;
  l->head = s;
  l->count++;
}
static msi_span_t *list_pop(msi_span_list_t *l) {
  msi_span_t *s = l->head;
  if (s) { l->head = s->next; l->count--; }
  return s;
}
/* detaches the spans that entered the cache at or before `cutoff` (the list is newest first) */
static msi_span_t *list_cut_old(msi_span_list_t *l, uint32_t now, uint32_t delay, bool force) {
  msi_span_t *s = l->head, *prev = NULL;
  size_t kept = 0;
  while (s && !(force || now - s->cached_ms >= delay)) { prev = s; s = s->next; kept++; }
  if (prev) prev->next = NULL;
  else l->head = NULL;
  l->count = kept;
  return s;
}
/* cached spans back to their segments as dirty chunks idle since they were cached: the segments_purge that follows
   every call (msi_heap_purge) returns them, neighbouring chunks in one madvise (one call per span would make a
   program like sqlite3 pay one system call per 64 KiB) */
static void release_chain(msi_span_t *s) {
  while (s) {
    msi_span_t *next = s->next;
    segment_release_span(s, false, s->cached_ms);
    s = next;
  }
}

/* A span entering the global cache leaves its thread, and the thread that takes it next may serve another class
   there. A program that replaces its threads (mstress, larson) moves each dead thread's spans through it by the
   dozen; a span keeping every page a former class carved (`touched`) would carry most of a chunk resident to a
   class with one live block. So a span arriving with more than TRIM_ABOVE bytes resident past what its last class
   needed gives the rest back to the OS (one madvise; the chunks stay the span's): a class that carved a quarter of
   the span or more keeps what it carved (a busy class: the next thread's spans of its size are as full, larson's),
   one that carved less keeps the first page (what the next class carves is faulted in again). The thread caches
   keep their pages: a thread reusing its own spans faults nothing in again. Blocks a kept span (span_retire) has
   linked in the pages given back lose their links: such a span is no longer kept, and its next class carves it
   afresh. */
#define TRIM_KEEP ((uintptr_t)4096)
#define TRIM_ABOVE ((uintptr_t)16384)
static void span_trim(msi_span_t *s) {
  uintptr_t carved = msi_span_bump(s) - s->base;
  bool busy = carved * 4 >= (uintptr_t)s->capacity * s->block_size;
  if (s->touched <= (busy ? carved : 0) + TRIM_ABOVE) return;
  size_t ps = msi_os_page_size();
  uintptr_t keep = busy && carved > TRIM_KEEP ? s->base + carved : span_chunk(s) + TRIM_KEEP; /* (its first page) */
  uintptr_t from = msi_align_up(keep, ps), to = msi_align_up(s->base + s->touched, ps);
  if (from >= to) return; /* (pages larger than TRIM_ABOVE) */
  if (msi_os_madvise((void *)from, to - from, MADV_DONTNEED) != 0) return; /* refused: the pages stay, and count */
  if (from < s->base + carved) s->kept = 0; /* its free lists ran through the pages given back */
  span_trimmed(s, from, to);
  s->touched = (uint32_t)(from - s->base);
}

/* a span no longer used by any class: thread cache, else global cache, else back to the segment. Under memory
   pressure a thread's span (h) goes back to the OS at once past a small thread cache (MSI_HEAP_PRESSURE_SPANS):
   a burst freed while the pressure lasts leaves RSS as it goes, whenever the next look comes */
static void span_cache_put(msi_heap_t *h, msi_span_t *s) {
  unsigned n = s->nchunks;
  size_t bytes = (size_t)n * MSI_HEAP_CHUNK, bucket = msi_heap_limits.thread_bucket;
  bool pressed = h && atomic_load_explicit(&msi_maint_pressure, memory_order_relaxed);
  if (pressed && bucket > MSI_HEAP_PRESSURE_SPANS) bucket = MSI_HEAP_PRESSURE_SPANS;
  MSI_SEEN_SET(s->state, MSI_SPAN_CACHED);
  s->owner = NULL;
  s->cached_ms = msi_heap_now_ms();
  msi_heap_note_active(-(int64_t)bytes);
  if (msi_heap_limits.global_bucket) msi_heap_note_idle((int64_t)bytes); /* (else back to the OS at once) */
  if (h && bucket >= bytes) {
    msi_lock(&h->cache_lock);
    h->hold.ops++;
    if ((h->cache[n].count + 1) * bytes <= bucket) {
      list_push(&h->cache[n], s);
      msi_unlock(&h->cache_lock);
      msi_maint_wake(); /* a span cached: work for the purge */
      return;
    }
    msi_unlock(&h->cache_lock);
  }
  if (pressed) {
    if (msi_heap_limits.global_bucket) msi_heap_note_idle(-(int64_t)bytes);
    segment_release_span(s, true, s->cached_ms);
    return;
  }
  if (msi_heap_limits.global_bucket >= bytes) {
    span_trim(s);
    msi_lock(&global_lock);
    global_hold.ops++;
    if ((global_cache[n].count + 1) * bytes <= msi_heap_limits.global_bucket) {
      list_push(&global_cache[n], s);
      msi_unlock(&global_lock);
      msi_maint_wake();
      return;
    }
    msi_unlock(&global_lock);
  }
  segment_release_span(s, msi_heap_limits.global_bucket == 0, s->cached_ms);
}

/* How long a span cache keeps its spans (a thread's, under its cache_lock; the global one, under global_lock), from
   each purge pass: `delay` once the cache is idle (no span into or out of it for the delay, no refill), else
   delay << shift. A thread that finds a span length empty which the purge took spans of within the longest hold
   (hold_miss: the purge came too early, those pages are faulted in again) marks a refill: the hold doubles at the
   next pass, up to HOLD_SHIFT_MAX times, and falls back to the delay once the cache is idle. A loop that frees
   and allocates a varying share of its blocks dips into its caches a little deeper now and then: it keeps their
   spans, while a program that goes idle gets everything back after the delay as before. Free chunks of the
   segments follow the delay alone. */
#define HOLD_SHIFT_MAX 3
static uint32_t cache_hold(msi_cache_hold_t *c, uint32_t now, uint32_t delay) {
  if (atomic_exchange_explicit(&c->refilled, 0, memory_order_relaxed)) {
    atomic_store_explicit(&c->purged, 0, memory_order_relaxed); /* (the next refill follows the next purge) */
    if (c->shift < HOLD_SHIFT_MAX) c->shift++;
    c->busy_ms = now;
  }
  if (c->ops != c->ops_seen) {
    c->ops_seen = c->ops;
    c->busy_ms = now;
  }
  if (atomic_load_explicit(&c->purged, memory_order_relaxed) && (int32_t)(now - c->purged_ms) >= (int32_t)(delay << HOLD_SHIFT_MAX))
    atomic_store_explicit(&c->purged, 0, memory_order_relaxed); /* a refill this late: not the purge's doing */
  if ((int32_t)(now - c->busy_ms) >= (int32_t)delay) c->shift = 0; /* idle */
  return delay << c->shift;
}
/* the pass took spans of the lengths in `cut` (bits) from the cache; force: pressure (a refill after it is no sign
   of a purge too early) */
static void hold_cut(msi_cache_hold_t *c, unsigned cut, uint32_t now, bool force) {
  if (!cut || force) return;
  atomic_store_explicit(&c->purged, (uint16_t)(atomic_load_explicit(&c->purged, memory_order_relaxed) | cut), memory_order_relaxed);
  c->purged_ms = now;
}
/* a thread found the cache without spans of length n: a refill if the purge took some lately */
static inline void hold_miss(msi_cache_hold_t *c, unsigned n) {
  if (MSI_UNLIKELY(atomic_load_explicit(&c->purged, memory_order_relaxed) >> n & 1) &&
      !atomic_load_explicit(&c->refilled, memory_order_relaxed))
    atomic_store_explicit(&c->refilled, 1, memory_order_relaxed);
}

/* a cached span for class cls (NULL: none cached): among the newest CACHE_LOOK, one that served cls and kept its blocks linked (no
   carving: span_init), else the newest. A program allocating batches that outgrow a class's current span retires
   the class's other span at every batch's end and takes one at the next: with the newest of any class, every
   batch carved each such span afresh (a store of both header words per block) */
#define CACHE_LOOK 8
static msi_span_t *list_take(msi_span_list_t *l, unsigned cls) {
  msi_span_t *prev = NULL, *s = l->head;
  for (unsigned i = 0; s && i < CACHE_LOOK; i++, prev = s, s = s->next)
    if (s->kept && s->last_cls == cls) {
      if (prev) prev->next = s->next;
      else l->head = s->next;
      l->count--;
      return s;
    }
  return list_pop(l);
}

MSI_HOT_TEXT static msi_span_t *span_cache_get(msi_heap_t *h, unsigned n, unsigned cls) {
  msi_span_t *s = NULL;
  if (atomic_load_explicit(&h->cache[n].head, memory_order_relaxed)) {
    msi_lock(&h->cache_lock);
    s = list_take(&h->cache[n], cls);
    h->hold.ops += s != NULL;
    msi_unlock(&h->cache_lock);
  }
  if (!s) hold_miss(&h->hold, n);
  if (!s && atomic_load_explicit(&global_cache[n].head, memory_order_relaxed)) {
    msi_lock(&global_lock);
    s = list_take(&global_cache[n], cls);
    global_hold.ops += s != NULL;
    msi_unlock(&global_lock);
  }
  if (!s) hold_miss(&global_hold, n);
  if (!s) return NULL;
  msi_heap_note_idle(-(int64_t)n * MSI_HEAP_CHUNK);
  return s;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* purge                                                                                                        */
/* ------------------------------------------------------------------------------------------------------------ */

static void orphans_collect(bool all, uint32_t now, uint32_t delay);
static void spans_tally(ms_stats_t *st, uint64_t *idle, uint64_t *active);
static void purge_task_run(uint64_t now_ns);

/* The global cache beyond a quarter of the spans serving a class (at least GLOBAL_KEEP_MIN) goes back at each
   purge pass, oldest first, without waiting out the purge delay: dead threads' spans arrive there in bulk (a
   thread's empty spans at its exit, its heap's once other threads freed their blocks), and a program that
   replaces its threads (a server's pool, larson, mstress) would keep a second generation of spans cached beside
   the one in use. The newest are kept (the cache is newest first): the spans a new thread takes next. */
#define GLOBAL_KEEP_MIN (16 * MSI_HEAP_CHUNK)
/* With the maintenance thread the spans in use are tallied (spans_tally: every span descriptor of every segment,
   the owners' hot lines among them, read at each pass: a line its owner writes at its next malloc or free then
   comes back from this core's cache). A pass that finds the global cache as the last tally left it (no span put
   in or taken since: global_hold.ops) keeps that tally's `keep` instead: spans then arrive in bulk only through
   the cache, and those it holds still go after the purge delay. Under global_lock */
static struct { uint32_t ops; bool valid; size_t keep; } keep_memo;
static msi_span_t *list_cut_excess(msi_span_list_t *l, size_t keep) {
  msi_span_t *s = l->head, *prev = NULL;
  size_t kept = 0;
  while (s && kept < keep) { prev = s; s = s->next; kept++; }
  if (!s) return NULL;
  if (prev) prev->next = NULL;
  else l->head = NULL;
  l->count = kept;
  return s;
}
static bool purge_task_busy(void);
static msi_maint_task_t purge_task = {"heap-purge", 100, purge_task_run, purge_task_busy};

/* what has aged; force: all the spans and segments' free chunks (force_large: and the cached large slots) */
/* forced passes begun (orphan_span_take: one that began while an orphan was held off the list missed it) */
static _Atomic uint64_t forced_passes;
/* passes under way: a pass holds what it takes off the lists another pass walks (spans
   cut from a cache, chunks being dropped: seg->purging, segments being given back: seg_pending_*) until it ends,
   and the other pass leaves those alone */
static _Atomic unsigned purges_running;
static _Thread_local unsigned purges_here; /* those of purges_running this thread runs (as orphans_held_here) */
static void purge_pass(uint64_t now_ms_in, bool force, bool force_large);
static void purge(uint64_t now_ms_in, bool force, bool force_large) {
  if (msi_opt(MS_OPTION_PURGE_DELAY) < 0 && !force) return;
  if (force) atomic_fetch_add_explicit(&forced_passes, 1, memory_order_acq_rel);
  purges_here++;
  atomic_fetch_add_explicit(&purges_running, 1, memory_order_relaxed);
  purge_pass(now_ms_in, force, force_large);
  atomic_fetch_sub_explicit(&purges_running, 1, memory_order_release);
  purges_here--;
}
static void purge_pass(uint64_t now_ms_in, bool force, bool force_large) {
  long long d = msi_opt(MS_OPTION_PURGE_DELAY);
  uint32_t now = (uint32_t)now_ms_in, delay = d < 0 ? 0 : (uint32_t)d;
  /* memory idle for `delay` ms is back with the OS by then: take what will reach it before the next pass */
  delay = delay > purge_task.period_ms ? delay - purge_task.period_ms : 0;
  atomic_store_explicit(&last_purge_ms, now, memory_order_relaxed);
  atomic_fetch_add_explicit(&msi_heap_counters.purges, 1, memory_order_relaxed);
  orphans_collect(force, now, delay);
  for (msi_heap_t *h = atomic_load_explicit(&all_heaps, memory_order_acquire); h; h = h->next_all) {
    if (force) msi_lock(&h->cache_lock);
    else if (!msi_trylock(&h->cache_lock)) continue;
    msi_span_t *old[MSI_HEAP_MAX_SPAN_CHUNKS + 1];
    uint32_t hold = cache_hold(&h->hold, now, delay);
    unsigned cut = 0;
    for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
      old[n] = list_cut_old(&h->cache[n], now, hold, force);
      cut |= (old[n] != NULL) << n;
    }
    hold_cut(&h->hold, cut, now, force);
    msi_unlock(&h->cache_lock);
    for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) release_chain(old[n]);
  }
  msi_span_t *old[MSI_HEAP_MAX_SPAN_CHUNKS + 1], *excess[MSI_HEAP_MAX_SPAN_CHUNKS + 1] = {NULL};
  size_t cached = 0, keep = SIZE_MAX;
  msi_lock(&global_lock); /* (the counts only say whether to look further: the tally below takes other locks) */
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) cached += global_cache[n].count * n * MSI_HEAP_CHUNK;
  uint32_t ops = global_hold.ops;
  bool memo = keep_memo.valid && keep_memo.ops == ops;
  size_t memo_keep = keep_memo.keep;
  msi_unlock(&global_lock);
  bool tallied = false;
  if (cached > GLOBAL_KEEP_MIN) { /* the spans in use: counted without the maintenance thread, else tallied */
    uint64_t idle, active = (uint64_t)atomic_load_explicit(&msi_heap_active_spans, memory_order_relaxed);
    bool maint = msi_maint_running();
    if (maint && memo) {
      keep = memo_keep;
    } else {
      if (maint) spans_tally(NULL, &idle, &active);
      keep = active / 4 > GLOBAL_KEEP_MIN ? (size_t)(active / 4) : GLOBAL_KEEP_MIN;
      tallied = maint;
    }
  }
  msi_lock(&global_lock);
  if (tallied) keep_memo.ops = ops, keep_memo.keep = keep, keep_memo.valid = true;
  uint32_t hold = cache_hold(&global_hold, now, delay);
  unsigned cut = 0;
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
    old[n] = list_cut_old(&global_cache[n], now, hold, force);
    cut |= (old[n] != NULL) << n;
    excess[n] = list_cut_excess(&global_cache[n], keep / ((size_t)n * MSI_HEAP_CHUNK));
  }
  hold_cut(&global_hold, cut, now, force);
  msi_unlock(&global_lock);
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
    release_chain(old[n]);
    for (msi_span_t *s = excess[n], *next; s; s = next) { /* idle since the delay ago: segments_purge takes them */
      next = s->next;
      segment_release_span(s, false, now - delay);
    }
  }
  segments_purge(now, delay, force);
  segments_reclaim(seg_keep());
  msi_large_purge(now, delay, force_large);
}
/* force (memory pressure, ms_heap_collect(1)): every thread's spare spans first, so they go back with the rest */
static void heap_take_spares(msi_heap_t *h, bool to_thread_cache);
void msi_heap_purge(uint64_t now_ms, bool force) {
  if (force)
    for (msi_heap_t *h = atomic_load_explicit(&all_heaps, memory_order_acquire); h; h = h->next_all) heap_take_spares(h, false);
  purge(now_ms, force, force);
}

/* ms_heap_collect(1): all of it back on return. A forced pass that another pass (the maintenance thread's)
   overlaps leaves what that pass holds to it (purge_pass), and that pass, preempted mid-way (it runs SCHED_BATCH
   or SCHED_IDLE: on a loaded machine for many ms), would give it back only after the call returned, up to every
   idle segment of a burst of threads that exited. So the call waits for the passes under way to end, and passes
   again when one overlapped its own (another pass began meanwhile, or was under way at its start): a few rounds
   at most (the maintenance thread passes every purge_task.period_ms), each one's overlapping passes waited out.
   A pass of the calling thread's own (a signal handler's call that interrupted it) is not waited for: it ends
   after the handler returns. */
void msi_heap_purge_all(void) {
  for (int round = 0;; round++) {
    uint64_t pass = atomic_load_explicit(&msi_heap_counters.purges, memory_order_relaxed);
    bool alone = atomic_load_explicit(&purges_running, memory_order_acquire) == purges_here;
    msi_heap_purge(msi_heap_now_ms(), true);
    alone = alone && atomic_load_explicit(&msi_heap_counters.purges, memory_order_relaxed) == pass + 1;
    while (atomic_load_explicit(&purges_running, memory_order_acquire) > purges_here) msi_os_sleep_ms(1);
    if (alone || round == 3) return;
  }
}

/* A refused commit (RLIMIT_DATA, vm.overcommit_memory=2: both charge every read-write private mapping, resident
   or not, so idle segments spend the limit as live ones do): the caches go back (the calling thread's, the
   orphans', the global ones, forced) and every idle segment is released whole, none kept mapped (segments_release
   maps them read-only: no charge), and so are the large blocks' cached slots and the dense slot sizes with no
   block in use (msi_large_release_free). Another size then finds the room a freed one left, as glibc's coalesced
   free memory gives it. True when a segment or a large slot's mapping went back, or another thread's pass ended
   meanwhile: the caller tries again. A request larger than all of that (the segments mapped, the large slots
   cached or taken) could not fit in what the pass gives back: no pass (a program halving a refused size until it
   fits keeps its caches). One pass at a time (the others wait for it, then try
   again); a pass that released nothing makes the next ones wait ten times its length (at most 100 ms), so a
   program taking NULL in a loop spends at most about a tenth of its time in them, unless large blocks were freed
   meanwhile (the large cache holds more than at the window's start: the program filled the limit, freed, and asks
   for another size at once). */
MSI_COLD_BSS static _Atomic int release_running;
MSI_COLD_BSS static _Atomic uint64_t release_quiet_until; /* msi_now_ns: no pass before (the last released nothing) */
MSI_COLD_BSS static _Atomic uint64_t release_quiet_cached; /* msi_large_cached_bytes when that window began */
static _Thread_local bool release_here; /* this thread's pass is under way (a signal handler allocating in it) */
#define RELEASE_QUIET_MAX_NS 100000000u /* (a pass stopped or preempted for long: its quiet window stays short) */
MSI_RARE bool msi_heap_release_idle(size_t want) {
  if (!msi_heap_ready_seen() || release_here ||
      want > atomic_load_explicit(&msi_heap_counters.segments, memory_order_relaxed) * MSI_HEAP_SEG_SIZE +
                 msi_large_held_bytes())
    return false;
  int saved = errno;
  msi_heap_thread_collect(true); /* (the caller's own empty spans: a pass of another thread's leaves them) */
  uint64_t t0 = msi_now_ns();
  if (t0 < atomic_load_explicit(&release_quiet_until, memory_order_relaxed) &&
      msi_large_cached_bytes() <= atomic_load_explicit(&release_quiet_cached, memory_order_relaxed)) {
    errno = saved;
    return false;
  }
  int idle = 0;
  if (!atomic_compare_exchange_strong(&release_running, &idle, 1)) {
    while (atomic_load_explicit(&release_running, memory_order_acquire)) msi_os_yield();
    errno = saved;
    return true; /* (another thread's pass ended: what it released may fit) */
  }
  release_here = true;
  msi_lock(&seg_lock);
  size_t before = seg_released_n;
  msi_unlock(&seg_lock);
  uint64_t cached = msi_large_cached_bytes();
  msi_heap_thread_collect(true);
  msi_heap_orphans_flush();
  msi_heap_purge(msi_heap_now_ms(), true);
  segments_reclaim(0);
  bool released = msi_large_release_free() > 0 || msi_large_cached_bytes() < cached;
  msi_lock(&seg_lock);
  released = released || seg_released_n > before;
  msi_unlock(&seg_lock);
  if (!released) {
    uint64_t t1 = msi_now_ns(), d = 10 * (t1 - t0);
    atomic_store_explicit(&release_quiet_cached, msi_large_cached_bytes(), memory_order_relaxed);
    atomic_store_explicit(&release_quiet_until, t1 + (d < RELEASE_QUIET_MAX_NS ? d : RELEASE_QUIET_MAX_NS),
                          memory_order_relaxed);
  }
  release_here = false;
  atomic_store_explicit(&release_running, 0, memory_order_release);
  errno = saved;
  return released;
}

static void purge_task_run(uint64_t now_ns) { msi_heap_purge(now_ns / 1000000u, false); }
/* memory pressure (maint.c): every cache (threads', global, free chunks, large slots) back to the OS now */
static void purge_on_pressure(uint64_t now_ns) { msi_heap_purge(now_ns / 1000000u, true); }
/* The maintenance thread's questions (maint.c plan). The purge has work while anything is cached that a pass
   gives back after the delay: a span in a thread's or the global cache, a segment's resident free chunk, a cached
   large slot, an orphaned heap kept whole at its thread's exit (flushed by a later pass, heap_keep_at_exit), or
   blocks other threads freed into an orphaned heap (collected by the pass). Each of these wakes a sleeping thread
   where it begins (span_cache_put, segment_release_span, large.c cache_put, heap_thread_exit's kick, the remote
   free that queues a span on an orphan). Relaxed loads (heaps_lock for the orphan list): a pass decides under
   the locks. */
static bool purge_task_busy(void) {
  for (msi_heap_t *h = atomic_load_explicit(&all_heaps, memory_order_acquire); h; h = h->next_all)
    for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++)
      if (atomic_load_explicit(&h->cache[n].head, memory_order_relaxed)) return true;
  if (atomic_load_explicit(&orphans, memory_order_relaxed)) {
    bool remote = false;
    msi_lock(&heaps_lock);
    for (msi_heap_t *h = orphans; h && !remote; h = h->next_orphan)
      remote = h->intact || atomic_load_explicit(&h->remote, memory_order_relaxed) != NULL ||
               (h->idle_seen && !h->reclaimed) || h->minis_idle_seen; /* (orphans_collect reclaims after the delay) */
    msi_unlock(&heaps_lock);
    if (remote) return true;
  }
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++)
    if (atomic_load_explicit(&global_cache[n].head, memory_order_relaxed)) return true;
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_acquire);
  for (uintptr_t off = 0; off < top; off += MSI_HEAP_SEG_SIZE)
    if (MSI_SEEN(((msi_segment_t *)(msi_heap_g.base + off))->dirty_mask)) return true;
  return msi_large_cached_bytes() != 0;
}
/* A look at memory pressure has something to take while the purge has work, or while memory is tight and a
   thread has a span set aside (spare_put: only a forced purge takes it), and something to find while the
   committed bytes changed since the last round (the heap grew: a look at the cgroup says whether memory is tight
   now; each growth wakes a sleeping thread, segment_alloc_span and large.c count_commit). Otherwise the thread
   sleeps and makes no look: current and spare spans stay with their threads until these take a slow path. */
static uint64_t release_seen_committed; /* (the maintenance thread's) */
static bool release_task_busy(void) {
  uint64_t committed = atomic_load_explicit(&msi_os_counters.committed, memory_order_relaxed);
  bool changed = committed != release_seen_committed;
  release_seen_committed = committed;
  if (changed || purge_task_busy()) return true;
  if (!(atomic_load_explicit(&msi_maint_tight, memory_order_relaxed) & MSI_TIGHT_LOOK)) return false;
  for (msi_heap_t *h = atomic_load_explicit(&all_heaps, memory_order_acquire); h; h = h->next_all)
    for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++)
      if (atomic_load_explicit(&h->spare[c], memory_order_relaxed)) return true;
  return false;
}
static const msi_maint_task_t release_task = {"heap-release", 0, purge_on_pressure, release_task_busy};

/* Under memory pressure a thread gives back its classes' empty current spans (kept for the next block of their
   class otherwise) and its spares: the maintenance thread cannot take a current span, since its owner allocates
   from it without a lock (it takes the spares: heap_take_spares). Checked by the slow paths
   (msi_heap_maybe_purge): one relaxed load and a thread-local comparison. */
static __thread uint32_t pressure_seen;
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
static void heap_release_current(msi_heap_t *h);
static inline void pressure_check(void) {
  uint32_t e = atomic_load_explicit(&msi_maint_pressure_epoch, memory_order_relaxed);
  if (MSI_LIKELY(e == pressure_seen)) return;
  pressure_seen = e;
  msi_heap_t *h = msi_tls_heap;
  if (h != MSI_EMPTY_HEAP) heap_release_current(h);
}

/* bytes of idle spans: cached, or free chunks resident in their segment (msi_heap_note_idle) */
MSI_START_BSS _Atomic int64_t msi_heap_idle_spans, msi_heap_active_spans;

/* A single-threaded program's cached large slots may hold as many bytes as the rest of its heap (its spans serving
   a class and large blocks in use), between ST_LARGE_MIN and ST_LARGE_MAX; past it the pages of the longest-cached go back
   (msi_large_trim), down to 3/4 of it. Counted from the heap's own figures, not the resident size: reading that
   (/proc/self/statm) on a free would kill a sandboxed program that forbids open() (test_heap_unit:
   large_blocks_in_a_sandbox), so blocks in use count by their size, touched or not. Measured only when the cache
   rose a step above the lowest it was since the last measurement, when the large blocks in use fell a step below
   the most they were since, or after a purge of the spans (force): most frees read three atomics. */
#define ST_LARGE_MIN (MSI_HEAP_ST_PURGE_BYTES / 2)
#define ST_LARGE_MAX (4 * MSI_HEAP_ST_PURGE_BYTES)
#define ST_LARGE_STEP (MSI_HEAP_ST_PURGE_BYTES / 2)
static _Atomic uint64_t st_large_check = ST_LARGE_MIN;
MSI_START_BSS static _Atomic uint64_t st_large_live;
MSI_HOT_TEXT static void st_large_budget(bool force) {
  uint64_t cached = msi_large_dirty_bytes(), check = atomic_load_explicit(&st_large_check, memory_order_relaxed);
  uint64_t live = msi_large_live_bytes(), top = atomic_load_explicit(&st_large_live, memory_order_relaxed);
  if (live > top) atomic_store_explicit(&st_large_live, live, memory_order_relaxed); /* the most held since */
  if (live + ST_LARGE_STEP < top) {
    force = true; /* the program holds less: its budget shrinks (the cache may not grow: its limits) */
  } else if (!force && cached + ST_LARGE_STEP < check) { /* lower again: measure after a rise from here */
    atomic_store_explicit(&st_large_check, cached + ST_LARGE_STEP, memory_order_relaxed);
    return;
  }
  if (!force && cached <= check) return;
  atomic_store_explicit(&st_large_live, live, memory_order_relaxed);
  int64_t spans = atomic_load_explicit(&msi_heap_active_spans, memory_order_relaxed);
  uint64_t rest = (spans > 0 ? (uint64_t)spans : 0) + live;
  uint64_t keep = rest < ST_LARGE_MIN ? ST_LARGE_MIN : rest > ST_LARGE_MAX ? ST_LARGE_MAX : rest;
  if (cached > keep) msi_large_trim(keep / 4 * 3);
  atomic_store_explicit(&st_large_check, msi_large_dirty_bytes() + ST_LARGE_STEP, memory_order_relaxed);
}

/* Without the maintenance thread nothing else watches the cgroup: the slow paths look (maint.c
   msi_maint_pressure_poll, at most every 25 ms) while the heap holds ST_PRESSURE_MIN or more (its spans and large
   blocks, cached or not): less is not worth a look, and a small or short-lived program (a shell's commands, a
   sandbox forbidding open()) never opens a file from malloc. Pressure found: every cache went back (the release
   task), and this thread's empty current spans go too, straight back with them (into the caches they would wait
   for the next look that finds pressure, or the purge delay). */
#define ST_PRESSURE_MIN (MSI_HEAP_ST_PURGE_BYTES / 4)
MSI_START_BSS static _Atomic uint64_t st_pressure_next; /* (the poll has its own rate limit: this only spares the sums) */
static void st_pressure(uint64_t now_ns) {
  if (now_ns < atomic_load_explicit(&st_pressure_next, memory_order_relaxed)) return;
  atomic_store_explicit(&st_pressure_next, now_ns + 25000000u, memory_order_relaxed);
  int64_t spans = atomic_load_explicit(&msi_heap_idle_spans, memory_order_relaxed) +
                  atomic_load_explicit(&msi_heap_active_spans, memory_order_relaxed);
  uint64_t held = spans > 0 ? (uint64_t)spans : 0;
  if (held < ST_PRESSURE_MIN) held += msi_large_live_bytes() + msi_large_dirty_bytes();
  if (held < ST_PRESSURE_MIN || !msi_maint_pressure_poll(now_ns)) return;
  pressure_check();
  msi_heap_purge(now_ns / 1000000u, true);
}

/* From the malloc/free slow paths: a single-threaded program has no maintenance thread (one would make
   unshare(CLONE_NEWUSER) fail), so nothing would purge while it sleeps. It purges here once the delay has passed
   since the last purge, and at once, as glibc returns big frees:
   - every span cache and free chunk when they hold MSI_HEAP_ST_PURGE_BYTES (counted net: spans reused count
     back: counting every span retired since the last purge, a program growing strings by realloc, whose blocks
     leave their spans for the next class, would purge again and again and fault every page in afresh);
   - the longest-cached large slots past the budget of st_large_budget().
   Large slots do not go with the spans: a program replacing blocks as big as those it holds (mimalloc-bench's
   malloc-large: 20 live of 5-25 MiB) would be purged every few frees and fault each new block in afresh. A budget
   that follows what the rest of the heap holds keeps the slots a program reuses, and lets one that holds little
   keep little. */
MSI_HOT_TEXT void msi_heap_maybe_purge(void) {
  pressure_check();
  long long d = msi_opt(MS_OPTION_PURGE_DELAY);
  if (d < 0 || msi_maint_running()) return;
  /* Nothing idle (no span cached, no free chunk resident, no cached large slot holding pages) and too little held
     for the pressure look: a pass would take nothing, and the clock is not read (a short-lived program's first
     read of the vDSO's data page is a page fault) */
  int64_t idle = atomic_load_explicit(&msi_heap_idle_spans, memory_order_relaxed);
  if (idle <= 0 && msi_large_dirty_bytes() == 0 &&
      (uint64_t)atomic_load_explicit(&msi_heap_active_spans, memory_order_relaxed) + msi_large_live_bytes() < ST_PRESSURE_MIN) {
    st_large_budget(false);
    return;
  }
  uint64_t now_ns = msi_now_ns();
  st_pressure(now_ns);
  uint32_t now = (uint32_t)(now_ns / 1000000u);
  bool spans = idle >= (int64_t)MSI_HEAP_ST_PURGE_BYTES;
  st_large_budget(false);
  /* the delay counts from the first look with something idle (0: none yet) */
  uint32_t last = atomic_load_explicit(&last_purge_ms, memory_order_relaxed);
  if (!last) atomic_compare_exchange_strong_explicit(&last_purge_ms, &last, now | 1, memory_order_relaxed, memory_order_relaxed);
  /* (signed: a pass stamped later than this thread's clock reading, by another thread or a test's own clock, is recent) */
  if (!spans && (int32_t)(now - atomic_load_explicit(&last_purge_ms, memory_order_relaxed)) < (int32_t)(d < 10 ? 10 : d)) return;
  purge(now, spans, false);
  if (spans) st_large_budget(true); /* the program holds less now */
}

/* ------------------------------------------------------------------------------------------------------------ */
/* spans of a heap                                                                                              */
/* ------------------------------------------------------------------------------------------------------------ */

/* a span's xfree word: bit 0 says the span is queued on its owner's remote stack; bits 4..47 are the first
   remote-freed block (16-byte aligned; region_init keeps the segment area below 2^48); bits 48..63 count the
   blocks of that list (a span holds at most 4096 blocks: no overflow) */
#define XF_SHIFT 48
#define XF_ONE ((uintptr_t)1 << XF_SHIFT)
#define XF_PTR (XF_ONE - 16)

/* A span joins its class's partial list at the tail, and the allocation path takes the head: the span that had
   longest to gather free blocks. Taking the newest (a span that has just got its first block back) would switch
   spans after a block or two, scattering consecutive allocations over many spans and their cache lines. */
static void partial_push(msi_heap_t *h, msi_span_t *s) {
  if (msi_span_is_mini(s)) return; /* (serves its class only while current: mini_take) */
  msi_span_t *tail = h->partial_tail[s->cls];
  s->next = NULL;
  s->prev = tail;
  if (tail) tail->next = s;
  else h->partial[s->cls] = s;
  h->partial_tail[s->cls] = s;
  s->in_partial = 1;
}
static void partial_remove(msi_heap_t *h, msi_span_t *s) {
  if (s->prev) s->prev->next = s->next;
  else h->partial[s->cls] = s->next;
  if (s->next) s->next->prev = s->prev;
  else h->partial_tail[s->cls] = s->prev;
  s->in_partial = 0;
  s->next = s->prev = NULL;
}

/* an empty span leaves its class (never while a remote free may still queue it: xfree must be 0). Every block it
   carved is on its free lists then: they stay linked while it is cached (kept), for span_init to take back if the
   same class takes the span again; its segment drops them (segment_release_span) */
static void span_retire(msi_heap_t *h, msi_span_t *s, bool to_thread_cache) {
  if (msi_span_is_mini(s)) return; /* stays its heap's (mini_take) */
  atomic_fetch_sub_explicit(&h->spans_held, 1, memory_order_relaxed);
  if (s->in_partial) partial_remove(h, s);
  msi_span_set_floor(s, 0); /* (no block used) */
  s->last_cls = s->cls;
  s->kept = 1;
  span_cache_put(to_thread_cache ? h : NULL, s);
}

/* A class's current span that its last free empties stays the class's for its next block (the preset's
   keep_empty_current). Its owner allocates from a current span without a lock, so no other thread may take it:
   an idle thread (a pool's) would keep a span per class, whatever the memory pressure. So while a forced purge may
   come (msi_maint_tight: a cgroup limits the process, or a second thread allocates before any look read the
   limit, or memory is tight: internal.h) the free that empties a span whose blocks were
   carved past SPARE_MIN bytes and a block sets it aside instead (spare_put): current_at[]
   gets the empty span, the span goes in the atomic spare[] slot; the owner's next allocation of the class finds
   the empty span, takes the slow path and the span back (spare_take); a forced purge (memory pressure) takes it
   from any thread (heap_take_spares). Whoever exchanges the slot for NULL owns the span.
   A span that carved no further (a loop taking and freeing a block or a few) stays current, its pages past the
   blocks it carved given back (span_trim_tail: what a populate window or a former class left resident): such a
   loop keeps its fast paths, and an idle thread keeps at most SPARE_MIN plus a block and a page per class.
   A loop of a few blocks in a span carved further (a batch before it) would set the span aside and take it back
   at every turn: a span that comes back from spare[] notes the block SPARE_LOOK deep in its free list and the block
   it links to, and when it empties with that link still there (the block never taken: at most SPARE_LOOK blocks
   were used meanwhile, or all freed back in reverse order) it is set aside
   uncarved (its lists dropped: it carves afresh from its base, over pages still resident), so the loop's next
   turn carves one batch and goes on in a span that stays current. */
#define SPARE_MIN ((uintptr_t)16384)
#define SPARE_LOOK 16
static bool span_spare_worthy(const msi_span_t *s) {
  return msi_span_bump(s) - s->base > SPARE_MIN + s->block_size;
}
static void spare_put(msi_heap_t *h, msi_span_t *s) {
  msi_heap_set_current_empty(h, s->cls); /* first: the owner's fast path no longer reaches it */
  atomic_store_explicit(&h->spare[s->cls], s, memory_order_release);
}
static msi_span_t *spare_take(msi_heap_t *h, unsigned cls) {
  if (!atomic_load_explicit(&h->spare[cls], memory_order_relaxed)) return NULL;
  return atomic_exchange_explicit(&h->spare[cls], NULL, memory_order_acquire);
}
/* a block of the span in 16-byte units from its base, + 1 (a span's 512 KiB: 15 bits); 0 for the list's end */
_Static_assert(((size_t)MSI_HEAP_MAX_SPAN_CHUNKS << MSI_HEAP_CHUNK_SHIFT) >> 4 < 0xFFFF, "spare_mark's halves");
static uint32_t spare_unit(const msi_span_t *s, const msi_block_t *b) {
  return b == msi_span_list_end(s) ? 0 : (uint32_t)(((uintptr_t)b - s->base) >> 4) + 1;
}
/* a free block's link, its header opened under valgrind */
static msi_block_t *spare_link(const msi_span_t *s, const msi_block_t *b) {
  MSI_HEAP_VG_OPEN(b);
  msi_block_t *n = msi_block_next(s, b);
  MSI_HEAP_VG_CLOSE(b);
  return n;
}
/* a span back from spare[] with its blocks linked: the block SPARE_LOOK deep and the one it links to noted */
static void spare_note(msi_span_t *s) {
  msi_block_t *b = s->free;
  for (unsigned i = 0; i < SPARE_LOOK && b != msi_span_list_end(s); i++) b = spare_link(s, b);
  s->spare_mark = b == msi_span_list_end(s) ? 0 : spare_unit(s, b) << 16 | spare_unit(s, spare_link(s, b));
}
/* the noted block links to the same block (one load; walking the list to it would cost a cache miss a block): it
   was never taken (a block freed above it was taken first: at most SPARE_LOOK blocks used since), or the blocks
   taken were freed back in reverse order (the list as it was) */
static bool spare_near(const msi_span_t *s) {
  if (!s->spare_mark) return false;
  const msi_block_t *m = (const msi_block_t *)(s->base + (((uintptr_t)(s->spare_mark >> 16) - 1) << 4));
  return msi_block_is_free(s, m) && spare_unit(s, spare_link(s, m)) == (s->spare_mark & 0xFFFF);
}
/* an empty span drops its free lists: it carves afresh from its base */
static void span_uncarve(msi_span_t *s) {
  s->free = msi_span_list_end(s);
  s->rfree = NULL;
  s->rfree_n = 0;
  __atomic_store_n(&s->carved, 0, __ATOMIC_RELAXED);
}
/* an empty span kept current (owner context): the resident pages past its carved blocks go back */
static void span_trim_tail(msi_span_t *s) {
  uintptr_t ps = msi_os_page_size(), bump = msi_span_bump(s), from = msi_align_up(bump, ps);
  uintptr_t to = msi_align_up(s->base + s->touched, ps);
  if (to > from) {
    int saved = errno;
    bool ok = msi_os_madvise((void *)from, to - from, MADV_DONTNEED) == 0;
    errno = saved;
    if (!ok) return; /* refused: the pages stay, and count */
    span_trimmed(s, from, to);
  }
  s->touched = (uint32_t)(bump - s->base); /* (at most SPARE_MIN and a block: the free path sends it here no more) */
}
/* the free that empties the class's current span, holding more than SPARE_MIN and a block of pages (owner
   context, no remote free pending): set aside, uncarved, or kept with its tail trimmed (above) */
static MSI_NOINLINE void span_empty_current(msi_heap_t *h, msi_span_t *s) {
  bool near = spare_near(s);
  s->spare_mark = 0;
  if (near) span_uncarve(s);
  if (near || span_spare_worthy(s)) spare_put(h, s);
  else span_trim_tail(s);
}
/* every spare span of h back to the caches (any thread; the exchange makes it the caller's) */
static void heap_take_spares(msi_heap_t *h, bool to_thread_cache) {
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    msi_span_t *s = spare_take(h, c);
    if (s) span_retire(h, s, to_thread_cache);
  }
}

/* links `tail` after the last block of `list` (walked: one cache miss per block) */
static void list_append(const msi_span_t *s, msi_block_t *list, msi_block_t *tail) {
  msi_block_t *last = list, *next;
  MSI_HEAP_VG_OPEN(last);
  while ((next = msi_block_next(s, last)) != msi_span_list_end(s)) {
    MSI_HEAP_VG_CLOSE(last);
    last = next;
    MSI_HEAP_VG_OPEN(last);
  }
  msi_block_set(s, last, tail, 0); /* (remote frees: never a carved block) */
  MSI_HEAP_VG_CLOSE(last);
}

/* moves remote-freed blocks to the owner's lists; keep_flag leaves the "queued" bit alone.
   The word holds the list's length (XF_ONE units). The list becomes `free` when that is empty, else `rfree` (taken
   when `free` runs out), so collecting walks no list: the remote blocks were last written by another core, and
   walking them to a tail is a chain of cache misses. With both lists in use, may_park leaves the list in the word
   and only clears the queued bit (the span is collected when it runs out of blocks, or queued again by the next
   remote free); a span the list would empty is taken whole, walking the shorter of the two lists. */
/* remote frees wait in s's word (bit 0 alone: queued, no block): what span_collect(s, true, ...) would find */
static inline bool span_remote_waits(const msi_span_t *s) {
  return atomic_load_explicit(&s->xfree, memory_order_relaxed) > 1;
}
static void span_collect(msi_span_t *s, bool keep_flag, bool may_park) {
  uintptr_t x = atomic_load_explicit(&s->xfree, memory_order_relaxed);
  bool park;
  for (;;) {
    if ((x & ~(uintptr_t)1) == 0 && (keep_flag || x == 0)) return;
    park = may_park && s->free != msi_span_list_end(s) && s->rfree && (uint32_t)(x >> XF_SHIFT) != msi_span_used(s);
    uintptr_t want = park ? (x & ~(uintptr_t)1) : keep_flag ? (x & 1) : 0;
    if (atomic_compare_exchange_weak_explicit(&s->xfree, &x, want, memory_order_acquire, memory_order_relaxed)) break;
  }
  msi_block_t *b = (msi_block_t *)(x & XF_PTR);
  uint32_t n = (uint32_t)(x >> XF_SHIFT);
  if (park) { msi_span_set_floor(s, n); return; }
  msi_span_set_floor(s, 0);
  if (!b) return;
  msi_span_held_add(s, -n);
  if (s->free == msi_span_list_end(s)) {
    s->free = b;
  } else if (!s->rfree) {
    s->rfree = b;
    s->rfree_n = n;
  } else if (n <= s->rfree_n) {
    list_append(s, b, s->rfree);
    s->rfree = b;
    s->rfree_n += n;
  } else {
    list_append(s, s->rfree, b);
    s->rfree_n += n;
  }
}

/* a full span leaves the current slot (owner context, nothing parked: span_collect just ran): the owner's first
   local free takes the slow path (used_floor, heap.h), which puts the span on the partial list. Remote frees
   reach the partial list through the owner's remote-span stack (heap_remote_process), which collects the span
   and so clears the mark */
static void span_detach_full(msi_span_t *s) { msi_span_set_floor(s, msi_span_used(s) - 1); }

/* `free` is empty: the collected remote frees become it */
static bool span_take_rfree(msi_span_t *s) {
  if (!s->rfree) return false;
  s->free = s->rfree;
  s->rfree = NULL;
  s->rfree_n = 0;
  return true;
}

static bool span_has_free(const msi_span_t *s) { return s->free != msi_span_list_end(s) || s->rfree; }
static bool span_free_empty(const msi_span_t *s) { return s->free == msi_span_list_end(s); }

/* pushes s, its queued bit set, on its owner's remote-span stack: at the first remote free into it (the push that
   set the bit), or handed on by the heap whose stack it was queued on before its owner changed (orphan_span_take) */
static void span_queue(msi_span_t *s) {
  msi_heap_t *owner = MSI_SEEN(s->owner);
  msi_span_t *top = atomic_load_explicit(&owner->remote, memory_order_relaxed);
  do atomic_store_explicit(&s->rnext, top, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&owner->remote, &top, s, memory_order_release, memory_order_relaxed));
  /* an ended thread's heap: its remote frees wait for the maintenance thread (a live owner takes its own; the
     owner's exit, which set the flag, kicked the thread long before a stale read could matter) */
  if (atomic_load_explicit(&owner->orphan, memory_order_relaxed)) msi_maint_wake();
}

/* processes the owner's remote-span stack: collects and files each span. Owner context only. park: from the
   allocation path (span_collect's may_park); the cold paths collect every list */
static void heap_remote_process(msi_heap_t *h, bool to_thread_cache, bool park) {
  msi_span_t *s = atomic_exchange_explicit(&h->remote, NULL, memory_order_acquire);
  while (s) {
    msi_span_t *next = atomic_load_explicit(&s->rnext, memory_order_relaxed);
    if (MSI_UNLIKELY(MSI_SEEN(s->owner) != h)) { /* queued here before another heap took it (orphan_span_take) */
      span_queue(s);
      s = next;
      continue;
    }
    span_collect(s, false, park);
    if (!msi_heap_is_current(h, s->cls, s)) {
      if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) span_retire(h, s, to_thread_cache);
      else if (!s->in_partial && span_has_free(s)) partial_push(h, s);
    }
    s = next;
  }
}

/* a span taken from a cache or its segment serves class cls: with no block handed out, or, kept by cls (span_retire),
   with the blocks it carved for cls still linked (its free lists then hold them all: used is 0) */
MSI_HOT_TEXT static void span_init(msi_heap_t *h, msi_span_t *s, unsigned cls) {
  uint32_t bs = msi_heap_class_size[cls];
  s->owner = h;
  if (!s->kept || s->last_cls != cls) {
    uintptr_t base = span_chunk(s) + span_colour(span_chunk(s), cls);
    if (base != s->base) { /* `touched` counts from base */
      intptr_t t = (intptr_t)s->touched + (intptr_t)s->base - (intptr_t)base;
      s->touched = t > 0 ? (uint32_t)t : 0;
      s->base = base;
    }
    MSI_SEEN_SET(s->cls, (uint8_t)cls);
    s->block_size = bs;
    s->inv = class_inv[cls];
    s->shift = class_shift[cls];
    s->key = msi_heap_g.secret ^ s->base ^ bs; /* odd, top bit set (the secret's): heap.h msi_span_list_end */
    uint32_t cap = class_capacity[cls];
    uintptr_t room = span_chunk(s) + (uintptr_t)s->nchunks * MSI_HEAP_CHUNK - MSI_HEAP_GUARD;
    if (s->base + (uintptr_t)cap * bs > room) cap = (uint32_t)((room - s->base) / bs); /* (a colour past its waste) */
    MSI_SEEN_SET(s->capacity, cap);
    s->free = msi_span_list_end(s);
    s->rfree = NULL;
    s->rfree_n = 0;
    __atomic_store_n(&s->carved, 0, __ATOMIC_RELAXED);
  }
  s->kept = 0;
  s->spare_mark = 0; /* (a mark a former use left: spare_near) */
  MSI_SEEN_SET(s->used_floor, 0);
  msi_span_held_set(s, 0);
  s->in_partial = 0;
  s->next = s->prev = NULL;
  MSI_SEEN_SET(s->state, MSI_SPAN_ACTIVE);
  atomic_fetch_add_explicit(&h->spans_held, 1, memory_order_relaxed);
  msi_heap_note_active((int64_t)s->nchunks * MSI_HEAP_CHUNK);
}

/* Carving: never-used blocks from bump go on the free list, each with the cookie of a carved block. Blocks are
   carved where their pages are needed, never ahead: a batch holds the blocks whose headers lie in one 4 KiB
   window from bump (within one page of any size the kernel uses: the page of the block handed out next, which the
   program touches anyway), at least one block. So a fresh span's pages are faulted in one at a time as its blocks
   are used, and a class with a few blocks in use leaves the rest of its span untouched. Below `touched` (pages a
   former use of the same chunks carved: resident) batches take up to 16 KiB, fewer trips through the slow path,
   never past `touched` (a span trimmed to its first page carves the rest a window at a time again). A span
   carving its first blocks (nothing touched yet: fresh chunks) carves CARVE_FIRST bytes, the rest of the page at
   its next carve: a short-lived program uses a few blocks of most classes, and links no 4 KiB of them each. The
   secure build links a batch in a random order, so the addresses of consecutive allocations cannot be
   predicted. */
#define CARVE_WINDOW ((uintptr_t)4096)
#define CARVE_RESIDENT ((uintptr_t)16384)
#define CARVE_FIRST ((uintptr_t)1024)

/* A thread that has carved POPULATE_CARVED of blocks, in a process holding POPULATE_MIN committed (spans, resident
   free chunks, large blocks), is one that fills: carving reaches fresh pages there by the thousand (a program
   building a large data structure), each taking a page fault when the program writes it. There a span's fresh
   pages are faulted in POPULATE_WINDOW at a time from the carve position (MADV_POPULATE_WRITE: one system call, no
   exception per page, a quarter less kernel time per page than faulting them one by one) and count as touched, so
   carving takes them in CARVE_RESIDENT batches. The cost: at most one window of pages ahead of the blocks handed
   out per span such a thread is carving (a class's current span). The thread's own figure keeps the many threads
   of a large process that each use a few blocks of many classes (a pool of hundreds) from each pre-faulting a
   window per class. Below either figure (a process that gave its memory back is below it again) and in the
   secure build (a span's last page carries a guard marker), pages fault in as blocks reach them. A refusal (a
   kernel before 5.14, no memory: the pages then fault as used) changes nothing else. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define POPULATE_MIN ((uintptr_t)64 << 20)
#define POPULATE_WINDOW ((uintptr_t)65536)
#define POPULATE_CARVED ((uint64_t)4 << 20)
static void span_populate(const msi_heap_t *h, msi_span_t *s, uintptr_t p, uintptr_t end) {
#if MSI_HEAP_SECURE
  (void)h, (void)s, (void)p, (void)end;
#else
  if (h->carved_bytes < POPULATE_CARVED ||
      atomic_load_explicit(&msi_os_counters.committed, memory_order_relaxed) < POPULATE_MIN ||
      !msi_os_has_populate_write())
    return;
  uintptr_t ps = msi_os_page_size(), from = p & ~(ps - 1), to = from + (POPULATE_WINDOW > ps ? POPULATE_WINDOW : ps);
  end = (end + ps - 1) & ~(ps - 1);
  if (to > end) to = end;
  int saved = errno;
  if (msi_os_madvise((void *)from, to - from, MADV_POPULATE_WRITE) == 0) s->touched = (uint32_t)(to - s->base);
  errno = saved;
#endif
}

MSI_HOT_TEXT static void span_carve(msi_heap_t *h, msi_span_t *s) {
  uint32_t bs = s->block_size;
  uintptr_t p = msi_span_bump(s), end = msi_span_end(s), key = s->key;
  if (p - s->base >= s->touched) span_populate(h, s, p, end);
  uintptr_t lim = (p | (CARVE_WINDOW - 1)) + 1, res = s->base + s->touched;
  if (res > lim) lim = res < p + CARVE_RESIDENT ? res : p + CARVE_RESIDENT; /* resident pages: a bigger batch */
  else if (!s->touched && p + CARVE_FIRST < lim) lim = p + CARVE_FIRST; /* (p is base then: within its page) */
  size_t n = ((lim < end ? lim : end) - p + bs - 1) / bs; /* the blocks starting below lim: at least one */
#if MSI_HEAP_SECURE
  uint16_t order[CARVE_RESIDENT / 16];
  for (size_t i = 0; i < n; i++) order[i] = (uint16_t)i;
  for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
    uint32_t j = carve_random((uint32_t)i + 1);
    uint16_t t = order[i]; order[i] = order[j]; order[j] = t;
  }
  msi_block_t *head = s->free;
  for (size_t i = 0; i < n; i++) {
    msi_block_t *b = (msi_block_t *)(p + (uintptr_t)order[i] * bs);
    MSI_HEAP_VG_OPEN(b);
    msi_block_set_key(key, b, head, MSI_COOKIE_CARVED);
    MSI_HEAP_VG_CLOSE(b);
    head = b;
  }
  s->free = head;
#else
  uintptr_t last = p + (n - 1) * bs;
  for (uintptr_t b = p; b < last; b += bs) {
    MSI_HEAP_VG_OPEN((msi_block_t *)b);
    msi_block_set_key(key, (msi_block_t *)b, (msi_block_t *)(b + bs), MSI_COOKIE_CARVED);
    MSI_HEAP_VG_CLOSE((msi_block_t *)b);
  }
  MSI_HEAP_VG_OPEN((msi_block_t *)last);
  msi_block_set_key(key, (msi_block_t *)last, s->free, MSI_COOKIE_CARVED);
  MSI_HEAP_VG_CLOSE((msi_block_t *)last);
  s->free = (msi_block_t *)p;
#endif
  p += n * bs;
  h->carved_bytes += n * bs;
  __atomic_store_n(&s->carved, s->carved + n, __ATOMIC_RELAXED);
  if (p - s->base > s->touched) s->touched = (uint32_t)(p - s->base);
}

/* Mini spans (heap.h MSI_HEAP_MINI): a class of at most MSI_HEAP_MINI_MAX bytes that needs a span takes one of 1 KiB (2
   KiB above 1 KiB) from its heap's segment's chunk 0 first, up to MINI_PER_CLASS KiB of them, while the segment has
   room: a short-lived program (a shell's commands) using a few blocks of many classes shares a page of blocks among
   several classes, where a span of its own per class would take a page each (a program such as `head` would touch
   several times the pages glibc's heap does). A mini span serves its class while it is current and leaves it when it
   runs out of blocks or took MINI_FREES local frees while current (counted in its cached_ms, which a span that is never
   cached does not use: a count in the heap would write its page at every such free, a copy-on-write fault in a shell's
   subshells): its blocks' frees take the free slow path (map[] leads to desc[0]), which a loop freeing and taking
   blocks of the class would pay at every free. It is never filed on a partial list, cached or given back: it stays its
   heap's, its blocks freed as they come (by its owner or remotely) and never handed out again once it left its class. A
   class's blocks past its mini spans, or once it took a normal span, come from normal spans. A heap takes at most
   MSI_HEAP_MINI_SPANS granules in all (mini_total), whichever segments its spans come from. */
MSI_START_BSS bool msi_heap_mini_off;
#define MINI_PER_CLASS 4
#define MINI_DONE UINT8_MAX
#define MINI_FREES 64
static inline bool mini_class(unsigned cls) { return MSI_HEAP_MINI && cls < MSI_HEAP_MINI_CLASSES; }
#if MSI_HEAP_MINI
_Static_assert(CLS_SIZE(MSI_HEAP_MINI_CLASSES - 1) == MSI_HEAP_MINI_MAX && CLS_SIZE(MSI_HEAP_MINI_CLASSES) > MSI_HEAP_MINI_MAX,
               "the mini classes are those up to MSI_HEAP_MINI_MAX");
_Static_assert(MSI_HEAP_MINI_MAX <= 2 * MSI_HEAP_MINI_SIZE, "a mini span holds a block of its class");
#endif
/* a mini span of class cls for h, current and carved; NULL: no room left in h's segment (the class takes no more) */
MSI_HOT_TEXT static msi_span_t *mini_take(msi_heap_t *h, unsigned cls) {
#if MSI_HEAP_MINI
  uint32_t bs = msi_heap_class_size[cls];
  unsigned k = bs > MSI_HEAP_MINI_SIZE ? 2 : 1; /* granules */
  msi_lock(&seg_lock);
  msi_segment_t *seg = h->seg;
  int at;
  if (!seg && (seg = segment_pick(h, 1, &at))) /* a new heap's first span: the segment its spans will come from */
    seg_avail_bit(seg); /* (its room seen by a heap looking for some: its chunks are all free, it stays h's) */
  unsigned g = seg ? (unsigned)(seg->mini_used + k - 1) & ~(k - 1) : 0; /* (2 KiB ones 2 KiB-aligned) */
  /* (a heap whose spans moved to another segment would find room in its mini area too: the heap's own total
     keeps its mini spans to one area's worth, what docs/heap.md bounds) */
  unsigned si = 0; /* (its place in h's mini_seg[]: a heap's mini spans are found there, orphan_empty) */
  while (si < h->mini_nseg && h->mini_seg[si] != seg) si++;
  if (!seg || seg->owner != h || g + k > MSI_HEAP_MINI_SPANS || h->mini_total + k > MSI_HEAP_MINI_SPANS ||
      si == sizeof h->mini_seg / sizeof h->mini_seg[0]) {
    msi_unlock(&seg_lock);
    h->mini_taken[cls] = MINI_DONE;
    return NULL;
  }
  if (si == h->mini_nseg) h->mini_seg[h->mini_nseg++] = seg;
  if (seg->bare) MSI_SEEN_SET(seg->bare, 0); /* (in use again: segments_reclaim) */
  if (seg->hdr_back) { /* the pages written here are in use again (header_back) */
    hdr_touch(seg, &seg->mini_map[seg->mini_used], g + k - seg->mini_used);
    hdr_touch(seg, msi_seg_mini(seg, g), sizeof(msi_span_t));
    hdr_touch(seg, (char *)seg + MSI_HEAP_MINI_BASE + (size_t)g * MSI_HEAP_MINI_SIZE, k * MSI_HEAP_MINI_SIZE);
  }
  for (unsigned i = seg->mini_used; i < g + k; i++) MSI_SEEN_SET(seg->mini_map[i], i < g ? MSI_HEAP_MINI_NONE : (uint8_t)g);
  msi_span_t *s = msi_seg_mini(seg, g);
  s->base = (uintptr_t)seg + MSI_HEAP_MINI_BASE + (uintptr_t)g * MSI_HEAP_MINI_SIZE;
  MSI_SEEN_SET(s->owner, h); /* (read by the purge pass looking at an orphan's mini spans: orphan_empty) */
  MSI_SEEN_SET(s->cls, (uint8_t)cls); /* (the fields spans_tally reads from other threads: MSI_SEEN) */
  s->last_cls = (uint8_t)cls;
  s->block_size = bs;
  s->inv = class_inv[cls];
  s->shift = class_shift[cls];
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
  MSI_SEEN_SET(seg->mini_used, (uint8_t)(g + k)); /* (its blocks are handed out after this: any free finds it) */
  msi_unlock(&seg_lock);
  h->mini_total = (uint8_t)(h->mini_total + k);
  h->mini_taken[cls] = h->mini_taken[cls] + k >= MINI_PER_CLASS ? MINI_DONE : (uint8_t)(h->mini_taken[cls] + k);
  msi_heap_set_current(h, cls, s);
  span_carve(h, s);
  return s;
#else
  (void)h, (void)cls;
  return NULL;
#endif
}
/* a free by its owner of p in a mini span s (from the free slow path: map[] led to desc[0]): the MINI_FREES-th
   local free of the class's current mini span makes it leave; then the fast path's free (an invalid p aborts) */
MSI_HOT_TEXT static void mini_free(msi_heap_t *h, void *p, msi_span_t *s) {
  unsigned c = s->cls;
  if (msi_heap_is_current(h, c, s) && ++s->cached_ms >= MINI_FREES) { /* (a mini span is never cached: its count here) */
    msi_heap_set_current_empty(h, c);
    h->mini_taken[c] = MINI_DONE;
  }
  msi_heap_free_owned(p, s, true);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* thread heaps                                                                                                 */
/* ------------------------------------------------------------------------------------------------------------ */

/* a zeroed heap's classes, each on the heap's empty span */
static void heap_reset_current(msi_heap_t *h) {
  h->empty.free = msi_span_list_end(&h->empty);
  h->empty.key = MSI_EMPTY_SPAN_KEY;
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) msi_heap_set_current_empty(h, c);
}

static msi_heap_t *heap_new(void) {
  msi_lock(&heaps_lock);
  msi_heap_t *h = orphans;
  if (h) {
    orphans = h->next_orphan;
    atomic_store_explicit(&h->orphan, 0, memory_order_relaxed);
    h->intact = false; /* (kept whole: the new thread goes on with its spans and cache) */
    h->carved_bytes = 0; /* (the new thread's own figure: span_populate) */
    h->idle_seen = h->reclaimed = h->minis_idle_seen = false;
    if (atomic_load_explicit(&h->gone, memory_order_relaxed)) /* (a forked child's: its thread now) */
      atomic_store_explicit(&h->gone, false, memory_order_relaxed);
    msi_unlock(&heaps_lock);
    return h;
  }
  size_t sz = msi_align_up(sizeof(msi_heap_t), MSI_CACHE_LINE);
  if (!first_heap_taken) {
    first_heap_taken = true;
    h = &first_heap;
  } else {
    if (heap_pool_left < sz) {
      int saved = errno;
      void *p = msi_os_commit_map(NULL, 256 * MSI_KiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED && msi_heap_fit_limit()) { /* RLIMIT_AS lowered (fit_limit_locked) */
        p = msi_os_commit_map(NULL, 256 * MSI_KiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) errno = saved;
      }
      if (p == MAP_FAILED) { msi_unlock(&heaps_lock); return NULL; }
      heap_pool = p;
      heap_pool_left = 256 * MSI_KiB;
    }
    h = (msi_heap_t *)heap_pool;
    heap_pool += sz;
    heap_pool_left -= sz;
  }
  /* h is zero already: the first heap is static storage, the others fresh anonymous pages of the pool, each handed
     out once (a heap whose thread ends is kept as an orphan, never given back). No memset: a compiler may make it
     a call into the C library, one more symbol for the loader to bind in every process (test_startup) */
  heap_reset_current(h);
  h->id = ++heap_count;
  h->next_all = atomic_load_explicit(&all_heaps, memory_order_relaxed);
  atomic_store_explicit(&all_heaps, h, memory_order_release);
  msi_unlock(&heaps_lock);
  return h;
}

/* empties a heap's span cache: into the global cache, or straight back to the OS (release) */
static void heap_cache_drain(msi_heap_t *h, bool release) {
  msi_span_t *lists[MSI_HEAP_MAX_SPAN_CHUNKS + 1];
  msi_lock(&h->cache_lock);
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
    lists[n] = h->cache[n].head;
    h->cache[n].head = NULL;
    h->cache[n].count = 0;
  }
  msi_unlock(&h->cache_lock);
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
    if (release) release_chain(lists[n]);
    else
      for (msi_span_t *s = lists[n], *next; s; s = next) {
        next = s->next;
        span_cache_put(NULL, s);
      }
  }
}

/* hands every span of a heap that can go back, keeps the heap's live spans for the next adopter */
static void heap_flush(msi_heap_t *h, bool orphaning) {
  heap_remote_process(h, !orphaning, false);
  heap_take_spares(h, !orphaning);
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    if (msi_heap_current_empty(h, c)) continue;
    msi_span_t *s = msi_heap_current(h, c);
    msi_heap_set_current_empty(h, c);
    span_collect(s, true, false); /* a list parked by the allocation path */
    if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) span_retire(h, s, !orphaning);
    else if (span_has_free(s) && !s->in_partial) partial_push(h, s);
    else if (!span_has_free(s) && s->carved < s->capacity && !s->in_partial) { span_carve(h, s); partial_push(h, s); }
    else if (!span_has_free(s)) span_detach_full(s); /* the adopter's first free files it */
  }
  if (orphaning) heap_cache_drain(h, false);
}

static void remote_flush(msi_heap_t *h);

/* this thread's heap was orphaned at its exit (heap_thread_exit): a later allocation comes from another key's
   destructor, maybe in glibc's last round of them */
static __thread bool heap_exited;

/* A program that starts a thread per task (a server's thread per connection, python's ThreadingHTTPServer) has a
   new thread take the heap of the one that just exited. Flushed at the exit, each such thread would give its
   empty spans to the global cache (trimmed there: a madvise) and the next one would take them back from it,
   faulting the pages in again, a few page faults and a system call per thread. So the heap stays whole at the
   exit (its current spans, partial lists and span cache: the next thread goes on where the last one stopped,
   with no lock, system call or page fault) while a maintenance thread is there to flush it: the purge pass that
   finds it an orphan for a whole period (orphans_collect) does what the exit did, so a dead thread's spans reach
   the global cache at most two periods (delay/8 each, 10 ms-1 s) later. Flushed at once without that thread (a
   process's first exit, a forked child, MEMSPACE_PURGE_DELAY=-1), while memory is tight, or with no global cache
   (preset `none`: nothing is kept). */
static bool heap_keep_at_exit(void) {
  return msi_maint_running() && msi_opt(MS_OPTION_PURGE_DELAY) >= 0 && msi_heap_limits.global_bucket &&
         !(atomic_load_explicit(&msi_maint_tight, memory_order_relaxed) & MSI_TIGHT_MEMORY);
}

static void heap_thread_exit(void *arg) {
  msi_heap_t *h = arg;
  if (!h || h == MSI_EMPTY_HEAP) return;
  heap_exited = true;
  remote_flush(h);
  bool keep = heap_keep_at_exit();
  if (!keep) heap_flush(h, true);
  msi_tls_heap = MSI_EMPTY_HEAP;
  atomic_fetch_sub_explicit(&msi_heap_counters.threads_live, 1, memory_order_relaxed);
  msi_lock(&heaps_lock);
  atomic_store_explicit(&h->orphan, 1, memory_order_relaxed);
  h->intact = keep;
  h->orphan_pass = atomic_load_explicit(&msi_heap_counters.purges, memory_order_relaxed);
  h->next_orphan = orphans;
  orphans = h;
  msi_unlock(&heaps_lock);
  msi_maint_kick();
}

/* The maintenance thread (or a purge) acts as owner of orphaned heaps: flushes those kept whole at their exit
   once a whole purge period passed since (all: each of them now), and collects the remote frees of the flushed.
   The list is taken off while it works (orphans_busy counts such lists, under heaps_lock): a thread starting
   meanwhile makes a heap of its own. */

/* An orphan flushed (not kept whole) that holds no live block: no span serving a class (spans_held counts those
   on its partial lists, the full ones detached from them and the spares), nothing on its remote-span stack, and
   every mini span of its own empty (they are never filed: found through mini_seg[]). The caller holds the orphan
   off the list (orphans_collect): no thread adopts it meanwhile, and no other thread frees into it (every block
   it handed out was seen free) */
static bool orphan_empty(msi_heap_t *h) {
  if (h->intact || atomic_load_explicit(&h->spans_held, memory_order_relaxed) ||
      atomic_load_explicit(&h->remote, memory_order_acquire))
    return false;
#if MSI_HEAP_MINI
  for (unsigned i = 0; i < h->mini_nseg; i++) {
    msi_segment_t *seg = h->mini_seg[i];
    for (unsigned g = 0, n = MSI_SEEN(seg->mini_used); g < n; g++) {
      msi_span_t *m = msi_seg_mini(seg, g);
      if (MSI_SEEN(seg->mini_map[g]) == g && MSI_SEEN(m->owner) == h &&
          (msi_span_used(m) || atomic_load_explicit(&m->xfree, memory_order_acquire)))
        return false;
    }
  }
#endif
  return true;
}
#if MSI_HEAP_MINI
/* a mini span of h that holds no block (an orphan's: no thread allocates from it again) */
static bool mini_span_empty(const msi_heap_t *h, const msi_segment_t *seg, unsigned g) {
  const msi_span_t *m = msi_seg_mini(seg, g);
  return MSI_SEEN(seg->mini_map[g]) == g && MSI_SEEN(m->owner) == h && MSI_SEEN(m->state) == MSI_SPAN_ACTIVE &&
         !msi_span_used(m) && !atomic_load_explicit(&m->xfree, memory_order_acquire);
}
#endif
/* A flushed orphan's mini spans that hold no block leave it (state free, no owner: a free of one of their blocks
   is a double free, msi_heap_bad_small); all: every one of them (the orphan holds none). A segment whose mini spans
   all left has its mini area taken back and given back whole, unless it is idle now (segments_reclaim gives back
   its pages); else the area's pages that hold no mini span in use go back. Under seg_lock: no heap takes a mini
   span there meanwhile. */
static void orphan_minis_reclaim(msi_heap_t *h, bool all) {
#if MSI_HEAP_MINI
  size_t ps = msi_os_page_size();
  unsigned npages = mini_pages(), per_page = (unsigned)(ps / MSI_HEAP_MINI_SIZE);
  for (unsigned i = 0; i < h->mini_nseg; i++) {
    msi_segment_t *seg = h->mini_seg[i];
    uint16_t busy = 0; /* pages holding a mini span in use (another heap's, or this one's with blocks) */
    bool kept = false; /* a mini span of h's stays here (one with blocks) */
    unsigned used = seg->mini_used;
    for (unsigned g = 0, n = used; g < n; g++) {
      msi_span_t *m = msi_seg_mini(seg, g);
      if (seg->mini_map[g] != g) continue;
      if (MSI_SEEN(m->owner) == h && (all || mini_span_empty(h, seg, g))) {
        MSI_SEEN_SET(m->owner, NULL);
        MSI_SEEN_SET(m->state, MSI_SPAN_FREE);
        continue;
      }
      kept |= MSI_SEEN(m->owner) == h;
      if (m->state == MSI_SPAN_ACTIVE && per_page) {
        unsigned k = m->block_size > MSI_HEAP_MINI_SIZE ? 2 : 1;
        busy = (uint16_t)(busy | 1u << (g / per_page) | 1u << ((g + k - 1) / per_page));
      } else if (m->state == MSI_SPAN_ACTIVE) {
        busy = 1;
      }
    }
    if (!kept) { /* none of h's mini spans left here: h forgets the segment, which may go idle and be released
                    (segments_reclaim) before h's next reclaim */
      h->mini_seg[i--] = h->mini_seg[--h->mini_nseg];
    }
    if (!busy) {
      if (seg->mini_used) MSI_SEEN_SET(seg->mini_used, 0);
      if (seg->free_mask == SEG_ALL_FREE) continue; /* an idle segment now */
    }
    /* the pages to give back, in runs: free of spans in use, not given back since their last use, and holding a
       granule handed out (those past mini_used were never written since the area was last given back, or since
       the segment was mapped: nothing to give back, nothing to count) */
    unsigned at = mini_pages_at(), below = (unsigned)((used * MSI_HEAP_MINI_SIZE + ps - 1) / ps);
    uint16_t give = (uint16_t)(mini_pages_all() & ~(busy << at) & ~seg->hdr_back & (((1u << below) - 1) << at));
    for (unsigned p = at; p < at + npages;) {
      if (!(give >> p & 1)) { p++; continue; }
      unsigned q = p;
      while (q < at + npages && (give >> q & 1)) q++;
      if (msi_os_madvise((char *)seg + p * ps, (q - p) * ps, MADV_DONTNEED) == 0) {
        chunks_purged((q - p) * ps);
        seg->hdr_back = (uint16_t)(seg->hdr_back | (((1u << q) - 1) & ~((1u << p) - 1))); /* (header_back) */
      }
      p = q;
    }
  }
#else
  (void)h, (void)all;
#endif
}
/* the orphan has mini spans of its own that hold no block (orphans_collect: it holds a live block elsewhere) */
static bool orphan_minis_idle(const msi_heap_t *h) {
#if MSI_HEAP_MINI
  for (unsigned i = 0; i < h->mini_nseg; i++)
    for (unsigned g = 0, n = MSI_SEEN(h->mini_seg[i]->mini_used); g < n; g++)
      if (mini_span_empty(h, h->mini_seg[i], g)) return true;
#else
  (void)h;
#endif
  return false;
}
/* An empty orphan idle for the purge delay goes back to a new heap's state: its mini spans leave it
   (orphan_minis_reclaim). Its segments, once every chunk is free, are then idle segments (segments_reclaim). The
   heap itself stays on the orphan list, for the next new thread. */
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
static void orphans_collect(bool all, uint32_t now, uint32_t delay) {
  if (!atomic_load_explicit(&orphans, memory_order_relaxed)) return;
  uint64_t pass = atomic_load_explicit(&msi_heap_counters.purges, memory_order_relaxed);
  msi_lock(&heaps_lock);
  msi_heap_t *list = orphans;
  orphans = NULL;
  if (list) orphans_hold(1);
  msi_unlock(&heaps_lock);
  if (!list) return;
  msi_heap_t *last = NULL;
  for (msi_heap_t *h = list; h; h = h->next_orphan) {
    last = h;
    if (h->intact && (all || pass - h->orphan_pass >= 2)) { /* (the pass after its exit may come at once) */
      heap_flush(h, true);
      h->intact = false;
    }
    if (h->intact) continue; /* its adopter collects its remote frees */
    heap_remote_process(h, false, false);
    for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++)
      for (msi_span_t *s = h->partial[c], *next; s; s = next) {
        next = s->next;
        span_collect(s, true, false); /* parked lists */
        if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) span_retire(h, s, false);
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
  last->next_orphan = orphans;
  orphans = list;
  orphans_hold(-1);
  msi_unlock(&heaps_lock);
}

/* every orphan flushed, also those another collector held when this one looked (it puts them back soon); those
   the calling thread holds itself (orphans_held_here) are not waited for */
void msi_heap_orphans_flush(void) {
  msi_heap_t *me = msi_tls_heap;
  if (me != MSI_EMPTY_HEAP) remote_flush(me); /* the caller's chain may hold blocks of the orphans */
  for (;;) {
    orphans_collect(true, 0, 0);
    msi_lock(&heaps_lock);
    bool busy = orphans_held_elsewhere();
    msi_unlock(&heaps_lock);
    if (!busy) return;
    msi_os_yield();
  }
}

uint64_t msi_heap_threads_live(void) {
  if (!heap_key_ok) return 0; /* no thread-exit destructor: no exit kicks the maintenance thread */
  return atomic_load_explicit(&msi_heap_counters.threads_live, memory_order_relaxed);
}

MSI_HOT_TEXT static msi_heap_t *heap_thread_init(void) {
  msi_heap_global_init();
  if (!msi_heap_g.ready) return NULL;
  msi_heap_t *h = heap_new();
  if (!h) return NULL;
  msi_tls_heap = h; /* before pthread_setspecific, which may allocate */
  if (atomic_fetch_add_explicit(&msi_heap_counters.threads_live, 1, memory_order_relaxed) >= 1 || h->id > 1)
    msi_maint_note_thread();
  if (heap_key_ok) pthread_setspecific(heap_key, h);
  return h;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* fork                                                                                                         */
/* ------------------------------------------------------------------------------------------------------------ */

/* A child of a multithreaded parent has no maintenance thread: the single-threaded purge's counters, not kept
   while that thread ran, are counted afresh from the spans (a child reusing spans its parent cached uncounted would
   take the counter below zero and keep everything it frees). O(segments); the child holds every lock. */
static void spans_tally(ms_stats_t *st, uint64_t *idle, uint64_t *active);
static void span_counts_recount(void) {
  uint64_t idle, active;
  spans_tally(NULL, &idle, &active);
  atomic_store_explicit(&msi_heap_idle_spans, (int64_t)idle, memory_order_relaxed);
  atomic_store_explicit(&msi_heap_active_spans, (int64_t)active, memory_order_relaxed);
  atomic_store_explicit(&st_large_check, ST_LARGE_MIN, memory_order_relaxed);
  atomic_store_explicit(&st_large_live, 0, memory_order_relaxed);
}

/* fork.c's hook (part 4 of the lock order): init_lock, the thread heaps' list, each thread cache, the global span
   cache, segments, then large.c's classes and the direct blocks; released and reset in the reverse order */
MSI_COLD void msi_fork_heap(msi_fork_phase_t phase, bool locking) {
  if (!locking) return; /* the parent had one thread: no lock held, the thread count unchanged */
  if (phase == MSI_FORK_PREPARE) {
    msi_lock(&init_lock);
    msi_lock(&heaps_lock);
    /* orphans another thread holds off the list (orphans_collect's list, orphan_span_take's orphan: heaps_lock not
       held while it works on them) would be lost to the child with their spans: waited for, as a lock is. The
       holder takes no lock held by now (the earlier parts' and init_lock: the heap takes none of them there), so
       its hold ends; yields first, then sleeps of 1 ms (a real-time thread forking leaves the holder its CPU), for
       at most a second: a holder stopped in a signal handler that waits for this fork (its own fork, a lock the
       prepare holds) would hang both, and a child without that orphan only leaks its spans. A
       hold of this thread's own (a fork from a signal handler that interrupted it) cannot end first: it resumes
       after the fork in both processes, the child's count kept for it (below). Meanwhile the list is kept aside,
       and so are the orphans put back or made (threads exiting) during each wait, so that no new hold begins
       (threads taking spans one after another would keep the count up). */
    if (orphans_held_elsewhere()) {
      msi_heap_t *aside = orphans;
      orphans = NULL;
      for (int i = 0; orphans_held_elsewhere() && i < 1100; i++) {
        msi_unlock(&heaps_lock);
        if (i < 100) msi_os_yield();
        else msi_os_sleep_ms(1);
        msi_lock(&heaps_lock);
        if (orphans) { /* put back or made during the wait: aside too, ahead of the rest */
          msi_heap_t *last = orphans;
          while (last->next_orphan) last = last->next_orphan;
          last->next_orphan = aside;
          aside = orphans;
          orphans = NULL;
        }
      }
      orphans = aside;
    }
    for (msi_heap_t *h = atomic_load(&all_heaps); h; h = h->next_all) msi_lock(&h->cache_lock);
    msi_lock(&global_lock);
    msi_lock(&seg_lock);
    msi_large_lock_all();
  } else if (phase == MSI_FORK_PARENT) {
    msi_large_unlock_all(false);
    msi_unlock(&seg_lock);
    msi_unlock(&global_lock);
    for (msi_heap_t *h = atomic_load(&all_heaps); h; h = h->next_all) msi_unlock(&h->cache_lock);
    msi_unlock(&heaps_lock);
    msi_unlock(&init_lock);
  } else {
    /* init_lock was held: the heap is set up (2) or was never started (0) */
    if (atomic_load_explicit(&init_state, memory_order_relaxed) == 2 && msi_heap_g.ready) span_counts_recount();
    msi_large_unlock_all(true);
    msi_lock_reset(&seg_lock);
    msi_lock_reset(&global_lock);
    for (msi_heap_t *h = atomic_load(&all_heaps); h; h = h->next_all) {
      msi_lock_reset(&h->cache_lock);
      if (h != msi_tls_heap && !atomic_load_explicit(&h->gone, memory_order_relaxed)) /* its thread is not the child's */
        atomic_store_explicit(&h->gone, true, memory_order_relaxed);
    }
    /* the blocks the parent's other threads had chained for remote spans stay out of use in the child (at most
       MSI_HEAP_RBATCH per thread, in spans that stay in use): such a thread took no lock, so the fork may have
       copied its chain half written (a new span with the old head), and a push of it would corrupt a span */
    for (msi_heap_t *h = atomic_load(&all_heaps); h; h = h->next_all)
      if (h != msi_tls_heap && h->rb_span) h->rb_span = NULL; /* (written only if set: a page copied at fork) */
    msi_lock_reset(&heaps_lock);
    msi_lock_reset(&init_lock);
    atomic_store_explicit(&release_running, 0, memory_order_relaxed); /* (a pass of another thread's: not the child's) */
    atomic_store_explicit(&release_quiet_until, 0, memory_order_relaxed);
    if (seg_pending_n && !reclaim_here) reclaim_pending_finish(); /* (another thread's pass held segments) */
    if (seg_purging_n) purge_pending_finish();   /* (or chunks) */
    if (orphans_busy != orphans_held_here) orphans_busy = orphans_held_here; /* (this thread's holds end there) */
    /* (the parent's passes: their held work finished above, but for a pass of this thread's own, interrupted by
       the handler that forked, which resumes in the child, finishes its work and counts itself out) */
    if (purges_running != purges_here) purges_running = purges_here;
    uint64_t live = msi_tls_heap != MSI_EMPTY_HEAP; /* written only when it changes: a write is a page copy */
    if (msi_heap_counters.threads_live != live) msi_heap_counters.threads_live = live;
  }
}

/* ------------------------------------------------------------------------------------------------------------ */
/* start-up                                                                                                     */
/* ------------------------------------------------------------------------------------------------------------ */

bool msi_heap_ready_seen(void) {
  return atomic_load_explicit(&init_state, memory_order_acquire) == 2 && msi_heap_g.ready;
}

MSI_STARTUP_TEXT void msi_heap_global_init(void) {
  if (MSI_LIKELY(atomic_load_explicit(&init_state, memory_order_acquire) == 2)) return;
  msi_lock(&init_lock);
  if (atomic_load_explicit(&init_state, memory_order_acquire) != 0) { msi_unlock(&init_lock); return; }
  atomic_store(&init_state, 1);
  msi_init();
  msi_heap_set_preset((int)msi_opt(MS_OPTION_CACHE));
  msi_heap_checks = MSI_HEAP_CHECKS_BUILD || msi_opt(MS_OPTION_SECURE);
  /* secrets: the kernel's 16 random bytes for this process (AT_RANDOM), mixed with an address; the time only
     without them (reading the clock first faults in the vDSO's data page) */
  uint64_t rnd[2];
  if (!kernel_random(rnd)) rnd[0] = msi_now_ns();
  uintptr_t secret = (uintptr_t)rnd[0] * 0x9E3779B97F4A7C15ull;
  secret ^= (uintptr_t)&secret;
  msi_heap_g.secret = secret | 1 | (uintptr_t)1 << 63; /* odd, top bit set: heap.h msi_span_list_end */
  msi_heap_g.canary_secret = (rnd[1] ^ secret) * 0x94D049BB133111EBull;
  if (MSI_HEAP_SECURE && !(msi_heap_g.guard_markers = guard_probe()))
    msi_warning("heap (secure build): guard markers refused (%s: Linux before 6.13, or memory locked by "
                "mlockall): no guard pages between small spans (mprotect would split the heap's mappings), "
                "blocks of 64 KiB-1 MiB each take two mappings", MSI_ERRNO(errno));
  if (!region_init()) {
    msi_warning("heap: cannot reserve address space; every allocation fails");
    atomic_store(&init_state, 2);
    msi_unlock(&init_lock);
    return;
  }
  msi_large_init();
  long long d = msi_opt(MS_OPTION_PURGE_DELAY);
  unsigned period = d <= 0 ? 50 : (unsigned)(d / 8);
  purge_task.period_ms = period < 10 ? 10 : period > 1000 ? 1000 : period;
  msi_heap_g.ready = 1;
  atomic_store_explicit(&init_state, 2, memory_order_release);
  msi_unlock(&init_lock);
  /* these may allocate: the heap works from here on */
  heap_key_ok = pthread_key_create(&heap_key, heap_thread_exit) == 0;
  msi_fork_register(); /* fork.c: before a constructor of another library forks */
  msi_maint_register(&purge_task);
  msi_maint_on_pressure(&release_task);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* small allocation and free                                                                                    */
/* ------------------------------------------------------------------------------------------------------------ */

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

/* the blocks h's thread freed into another heap's span and chained (heap.h rb_span) go to that span */
static void remote_flush(msi_heap_t *h) {
  msi_span_t *s = h->rb_span;
  if (!s) return;
  h->rb_span = NULL;
  span_push_remote(s, h->rb_head, h->rb_tail, h->rb_n);
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

/* An allocation by an exiting thread after its heap was orphaned (another key's destructor, a C++ thread_local's):
   served by a heap taken for this one allocation and orphaned again at once. A heap kept would stay attached to
   the dead thread when glibc runs no further round of destructors: each such thread would lose its heap's spans */
static MSI_NOINLINE void *alloc_exiting(size_t size) {
  heap_exited = false;
  void *p = msi_heap_small_alloc_slow(size);
  msi_heap_t *h = msi_tls_heap;
  if (h != MSI_EMPTY_HEAP) {
    if (heap_key_ok) pthread_setspecific(heap_key, NULL); /* orphaned here: the key's destructor must not again */
    heap_thread_exit(h);
  }
  heap_exited = true;
  return p;
}

/* A span of class cls from an orphaned heap (its thread ended, no thread adopted it yet) for h, which needs one and
   has none cached: the orphan's current span of the class, else the head of its partial list, when it holds free
   blocks or blocks other threads freed into it. A program whose threads pile up (each starts its successor and
   ends later: larson) has as many heaps as threads alive at once, and the heaps the ended ones left hold spans
   whose blocks the successors freed, out of reach of the living until a new thread adopts the whole heap or a
   purge pass flushes it, while the living carve fresh pages: taken span by span, they serve the classes instead.
   The orphan is taken off the list while it is looked at (as a purge pass takes the list: orphans_busy), its
   remote-span stack processed as its owner would (empty spans to the global cache), and the span changes owner
   (a relaxed store: the remote path reads the owner once the block is pushed). A remote free that read the old
   owner queues the span on the orphan's stack, before or after the change: heap_remote_process hands it on
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
    msi_heap_t *o = orphans, *p = NULL;
    for (unsigned i = 0; o && i < STEAL_LOOK; i++, p = o, o = o->next_orphan)
      if (orphan_has_span(o, cls, remote)) {
        if (p) p->next_orphan = o->next_orphan;
        else orphans = o->next_orphan;
        *prev = p;
        return o;
      }
  }
  return NULL;
}
/* o back after prev when prev is still among the first orphans, else at the head; under heaps_lock */
static void orphan_put_back(msi_heap_t *o, msi_heap_t *prev) {
  msi_heap_t *p = orphans;
  for (unsigned i = 0; prev && p && p != prev && i < 2 * STEAL_LOOK; i++) p = p->next_orphan;
  if (prev && p == prev) {
    o->next_orphan = p->next_orphan;
    p->next_orphan = o;
  } else {
    o->next_orphan = orphans;
    orphans = o;
  }
}
static MSI_NOINLINE msi_span_t *orphan_span_take(msi_heap_t *h, unsigned cls) {
  uint64_t forced = atomic_load_explicit(&forced_passes, memory_order_acquire);
  msi_lock(&heaps_lock);
  msi_heap_t *prev = NULL, *o = orphan_pick(cls, &prev);
  if (o) orphans_hold(1);
  msi_unlock(&heaps_lock);
  if (!o) return NULL;
  heap_remote_process(o, false, false);
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
  if (o->intact && atomic_load_explicit(&forced_passes, memory_order_acquire) != forced) {
    heap_flush(o, true); /* a forced pass (memory pressure, ms_heap_collect(1)) began meanwhile and missed it */
    o->intact = false;
  }
  msi_lock(&heaps_lock);
  orphan_put_back(o, prev);
  orphans_hold(-1);
  msi_unlock(&heaps_lock);
  return s;
}

/* a block from a span of class cls taken from an orphan (orphan_span_take), made h's current span; NULL: none
   (out of the allocation slow path's text: a short process never runs it) */
static MSI_NOINLINE void *alloc_from_orphan(msi_heap_t *h, unsigned cls) {
  msi_span_t *o = orphan_span_take(h, cls);
  if (!o) return NULL;
  msi_heap_set_current(h, cls, o);
  span_collect(o, true, false);
  if (!span_free_empty(o) || span_take_rfree(o)) return alloc_from(o);
  if (o->carved < o->capacity) { span_carve(h, o); return alloc_from(o); }
  span_detach_full(o); /* (no block left: another thread's frees are on their way) */
  msi_heap_set_current_empty(h, cls);
  return NULL;
}

/* no span for the class: asked for once more after the idle segments went back (msi_heap_release_idle); a block
   served leaves errno as the caller had it (saved) */
MSI_NOINLINE MSI_RARE static void *small_again(msi_heap_t *h, unsigned cls, int saved) {
  unsigned chunks = msi_heap_class_chunks[cls];
  msi_span_t *n = NULL;
  if (msi_heap_release_idle((size_t)chunks * MSI_HEAP_CHUNK) && !(n = span_cache_get(h, chunks, cls)))
    n = segment_alloc_span(h, chunks);
  if (!n) { errno = ENOMEM; return NULL; }
  errno = saved;
  span_init(h, n, cls);
  msi_heap_set_current(h, cls, n);
  if (span_free_empty(n) && !span_take_rfree(n)) span_carve(h, n);
  return alloc_from(n);
}

MSI_HOT_TEXT void *msi_heap_small_alloc_slow(size_t size) {
  msi_heap_t *h = msi_tls_heap;
  if (MSI_UNLIKELY(h == MSI_EMPTY_HEAP)) {
    if (MSI_UNLIKELY(heap_exited)) return alloc_exiting(size);
    h = heap_thread_init();
    if (!h) { errno = ENOMEM; return NULL; }
  }
  if (h->rb_span) remote_flush(h);
  unsigned cls = msi_heap_class_of(size);
  msi_span_t *s = msi_heap_current(h, cls);
  if (!span_free_empty(s) || span_take_rfree(s)) return alloc_from(s);
  msi_span_t *sp = msi_heap_current_empty(h, cls) ? spare_take(h, cls) : NULL; /* the class's span set aside */
  if (sp) {
    msi_heap_set_current(h, cls, sp);
    if (span_free_empty(sp) && !span_take_rfree(sp)) span_carve(h, sp); /* uncarved (else its blocks are linked) */
    else spare_note(sp);
    return alloc_from(sp);
  }
  if (!msi_heap_current_empty(h, cls)) {
    /* blocks freed by other threads first, never-used ones after: carving while remote frees wait would fault
       in the span's further pages with as many of its blocks free */
    if (span_remote_waits(s)) {
      span_collect(s, true, false);
      if (!span_free_empty(s)) return alloc_from(s);
    }
    if (s->carved < s->capacity) { span_carve(h, s); return alloc_from(s); }
    span_detach_full(s); /* full: it leaves the current slot; a free will put it on the partial list */
  }
  if (atomic_load_explicit(&h->remote, memory_order_relaxed)) {
    heap_remote_process(h, true, true);
    if (!span_free_empty(s) || span_take_rfree(s)) return alloc_from(s);
  }
  msi_span_t *p = h->partial[cls];
  if (p) {
    partial_remove(h, p);
    msi_heap_set_current(h, cls, p);
    if (span_free_empty(p) && !span_take_rfree(p)) span_carve(h, p);
    return alloc_from(p);
  }
  if (mini_class(cls) && h->mini_taken[cls] != MINI_DONE && !msi_heap_mini_off) {
    msi_span_t *m = mini_take(h, cls);
    if (m) return alloc_from(m);
  }
  msi_heap_maybe_purge();
  if (mini_class(cls)) h->mini_taken[cls] = MINI_DONE; /* (a normal span: the class is past its first blocks) */
  msi_span_t *n = span_cache_get(h, msi_heap_class_chunks[cls], cls);
  if (!n && atomic_load_explicit(&orphans, memory_order_relaxed)) {
    void *p = alloc_from_orphan(h, cls); /* an ended thread's span of the class before fresh chunks */
    if (p) return p;
  }
  int saved = errno; /* (a refused segment sets it: a block the retry serves leaves it as it was) */
  if (!n) n = segment_alloc_span(h, msi_heap_class_chunks[cls]);
  if (MSI_UNLIKELY(!n)) return small_again(h, cls, saved);
  span_init(h, n, cls);
  msi_heap_set_current(h, cls, n);
  if (span_free_empty(n) && !span_take_rfree(n)) span_carve(h, n);
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

/* free of a block whose span is not owned by the calling thread's heap, or a local free needing bookkeeping */
MSI_HOT_TEXT void msi_heap_small_free_slow(void *p, msi_span_t *s) {
  msi_heap_t *h = msi_tls_heap;
  if (MSI_UNLIKELY(s->state != MSI_SPAN_ACTIVE)) {
    s = msi_heap_mini_of(p); /* map[] led to desc[0]: p lies in chunk 0, maybe in a mini span */
    if (MSI_UNLIKELY(s->state != MSI_SPAN_ACTIVE)) msi_heap_bad_small(p, "free");
    if (MSI_SEEN(s->owner) == h) return mini_free(h, p, s); /* (a mini span's owner changes at adoption) */
    goto remote;
  }
  if (MSI_SEEN(s->owner) == h) { /* (a mini span's too, from mini_free: its owner is written relaxed) */
    /* local free already linked by the fast path: file the span */
    if (MSI_UNLIKELY(s->used_floor) && s->held == 0) { /* a parked list (maybe empty now), or full */
      msi_span_set_floor(s, 0);
      if (span_remote_waits(s)) span_collect(s, true, false); /* (a full span's first free: mostly nothing) */
    }
    if (msi_span_is_mini(s)) return; /* (never filed: mini_take) */
    if (msi_heap_is_current(h, s->cls, s)) {
      if (msi_span_used(s) != 0) return;
      uint32_t tight;
      if ((!msi_heap_limits.keep_empty_current || pressure_retire(h, s->cls)) &&
          atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) {
        msi_heap_set_current_empty(h, s->cls);
        span_retire(h, s, true);
        msi_maint_kick();
      } else if (s->touched > SPARE_MIN + s->block_size &&
                 (tight = atomic_load_explicit(&msi_maint_tight, memory_order_relaxed)) != 0 &&
                 atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) {
        span_empty_current(h, s); /* kept where a forced purge can take it, or with little resident */
        if (tight & MSI_TIGHT_UNSEEN) msi_maint_kick(); /* the maintenance thread's start: its look reads the limit */
      }
      return;
    }
    if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) {
      span_retire(h, s, true);
      msi_maint_kick();
      msi_heap_maybe_purge();
    } else if (!s->in_partial) {
      partial_push(h, s);
    }
    return;
  }
  /* remote free: validate, then push on the span's list; the first push queues the span on its owner */
remote:
  if (MSI_UNLIKELY(!msi_span_block_start(s, p))) msi_heap_bad_pointer(p, "free(): invalid pointer");
  msi_block_t *b = p;
  if (MSI_UNLIKELY(msi_block_is_free(s, b))) msi_heap_freed_again(s, p, "free");
  if (MSI_HEAP_SECURE && MSI_UNLIKELY(!msi_block_canary_ok(s, p)))
    msi_heap_bad_pointer(p, "free(): canary after the block overwritten (heap buffer overflow)");
  if (MSI_UNLIKELY(h == MSI_EMPTY_HEAP) && !heap_exited) { /* a thread that only frees: a heap for its chain */
    int saved = errno; /* (free leaves errno alone: a refused mapping or key must not show) */
    h = heap_thread_init();
    errno = saved;
    if (h && MSI_SEEN(s->owner) == h) return msi_heap_free_small(p); /* (it adopted the orphan owning the block) */
  }
  MSI_TRACK_FREE(p); /* before the push: once published, the owner may hand the block out again at once */
  msi_span_t *to = s; /* the chain to push now: this block alone, or the one it ends */
  msi_block_t *head = b, *tail = b;
  uint32_t n = 1;
  if (MSI_LIKELY(h && h != MSI_EMPTY_HEAP)) {
    if (h->rb_span == s) { /* one more for the pending chain: a plain store, no atomic */
      msi_block_link(s, b, h->rb_head);
      h->rb_head = b;
      if (++h->rb_n >= MSI_HEAP_RBATCH) remote_flush(h);
      return;
    }
    to = h->rb_span, head = h->rb_head, tail = h->rb_tail, n = h->rb_n;
    msi_block_link(s, b, msi_span_list_end(s)); /* (free from here on: a second free of it is reported) */
    h->rb_span = s; /* a new chain */
    h->rb_head = h->rb_tail = b;
    h->rb_n = 1;
    if (!to) return;
  }
  span_push_remote(to, head, tail, n);
}

/* the empty current spans of the calling thread's heap leave their classes (memory pressure), its spares too */
static void heap_release_current(msi_heap_t *h) {
  heap_take_spares(h, false);
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    msi_span_t *s = msi_heap_current(h, c);
    if (msi_heap_current_empty(h, c) || msi_span_used(s) != 0) continue;
    span_collect(s, true, false); /* a list parked by the allocation path */
    if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) {
      msi_heap_set_current_empty(h, c);
      span_retire(h, s, false);
    }
  }
}

/* ms_heap_collect for the calling thread: collect remote frees, give back empty spans and the thread's cache */
void msi_heap_thread_collect(bool force) {
  msi_heap_t *h = msi_tls_heap;
  if (h == MSI_EMPTY_HEAP) return;
  remote_flush(h);
  heap_remote_process(h, false, false);
  if (force) heap_take_spares(h, false);
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    for (msi_span_t *s = h->partial[c], *next; s; s = next) {
      next = s->next;
      span_collect(s, true, false); /* parked lists */
      if (msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) span_retire(h, s, false);
    }
    if (msi_heap_current_empty(h, c)) continue;
    msi_span_t *s = msi_heap_current(h, c);
    span_collect(s, true, false);
    if (force && msi_span_used(s) == 0 && atomic_load_explicit(&s->xfree, memory_order_acquire) == 0) {
      msi_heap_set_current_empty(h, c);
      span_retire(h, s, false);
    }
  }
  heap_cache_drain(h, force);
}

/* statistics: walks every segment without the segments' lock, a snapshot while other threads allocate. The fields
   it reads are written with relaxed atomic stores (MSI_SEEN_SET, heap.h) and read here with relaxed loads: each
   value one that was stored, a span maybe counted in its former state */
/* walks the segments: the bytes of idle spans (free chunks still resident, cached spans) and of spans serving a
   class; with st, each active span's blocks into its class's entry */
static void tally_blocks(ms_stats_t *st, const msi_span_t *s) {
  ms_stats_class_t *c = msi_stats_class(st, MSI_SEEN(s->cls));
  uint32_t used = msi_span_used_seen(s), cap = MSI_SEEN(s->capacity);
  if (used > cap) used = cap;
  c->allocated += used;
  c->cached += cap - used;
  c->mapped += cap;
}
static void spans_tally(ms_stats_t *st, uint64_t *idle, uint64_t *active) {
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_acquire);
  *idle = *active = 0;
  for (uintptr_t off = 0; off < top; off += MSI_HEAP_SEG_SIZE) {
    msi_segment_t *seg = (msi_segment_t *)(msi_heap_g.base + off);
    *idle += (uint64_t)msi_popcount64(MSI_SEEN(seg->dirty_mask)) * MSI_HEAP_CHUNK;
    for (unsigned i = 1; i < MSI_HEAP_SEG_CHUNKS; i++) {
      msi_span_t *s = msi_seg_span(seg, i);
      if (MSI_SEEN(seg->map[i]) != msi_seg_map_of(i)) continue;
      uint8_t state = MSI_SEEN(s->state);
      uint64_t bytes = (uint64_t)MSI_SEEN(s->nchunks) * MSI_HEAP_CHUNK;
      if (state == MSI_SPAN_CACHED) { *idle += bytes; continue; }
      if (state != MSI_SPAN_ACTIVE) continue;
      *active += bytes;
      if (st) tally_blocks(st, s);
    }
#if MSI_HEAP_MINI
    for (unsigned g = 0, n = MSI_SEEN(seg->mini_used); st && g < n; g++) /* (no bytes: the header's chunk) */
      if (MSI_SEEN(seg->mini_map[g]) == g && MSI_SEEN(msi_seg_mini(seg, g)->state) == MSI_SPAN_ACTIVE) tally_blocks(st, msi_seg_mini(seg, g));
#endif
  }
}

void msi_heap_class_stats(ms_stats_t *st, uint64_t *cached_spans_bytes) {
  uint64_t active;
  spans_tally(st, cached_spans_bytes, &active);
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    msi_stats_class(st, c)->block_size = msi_heap_class_size[c];
    msi_stats_class(st, c)->returned = atomic_load_explicit(&msi_heap_returned_spans[c], memory_order_relaxed);
  }
}
