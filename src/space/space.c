/* SPDX-License-Identifier: MIT */
/* space.c: deterministic memory spaces (docs/contract.md §4, docs/spaces.md).

   Design: a binary buddy allocator whose metadata lives entirely OUTSIDE the blocks, in a compact side area:
   - per order k (block size 2^k, k >= 4, i.e. 16 B .. the space size) a hierarchical bitmap of free block
     positions (leaf bit i: the block at offset i*2^k is free; each summary bit says "some bit below is set";
     at most 6 levels for 2^36 positions), plus one 64-bit mask of the orders that have a free block;
   - an allocation map: one nibble per 16-byte granule for allocated blocks of 16 B .. 2 KiB (value k-3),
     one byte per 4 KiB for allocated blocks of 4 KiB and more (value k). Every entry is zero except at the
     first granule of an allocated block, so a free of an interior pointer or a double free reads zero and is
     detected in every build.
   malloc: order k = ceil(log2(size)); j = lowest order >= k with a free block (one ctz on the mask); take the
   lowest-address free block of order j (one ctz per bitmap level); split it down to k (j-k bit sets).
   free: read the map entry; merge with the buddy while the buddy is free (a bit test) and in the same region.
   Neither call reads or writes a byte of the data area: in a virtual machine, touching memory just past a large
   block the program has just walked can take a nested page walk; a header or split remainder next to the
   block would pay that on every call. A heap overflow cannot corrupt the allocator either.
   Worst case per call: (orders) splits or merges x (bitmap depth <= 7; <= 6 up to 1 TiB reserves) word updates, no loops over blocks. */
#include "space_internal.h"
#include "os.h"
#ifndef __has_feature /* track.h tests __has_feature, which older GCC lacks */
#define __has_feature(x) 0
#endif
#include "track.h"
#include "route.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#define GSHIFT 4                  /* granule: 16 bytes, the minimum block and the alignment */
#define LSHIFT 11                 /* large-block map granule: blocks of 2 KiB and more start on it */
#define RSHIFT 12                 /* regions are page-aligned: merges below 4 KiB never cross one */
#define MAX_ORDER 46              /* 64 TiB */
#define MAX_LEVELS 7
#define MAX_REGIONS 64            /* the initial region and up to 63 expansions */
#define SPACE_MAGIC 0x6d7370616365ull /* "mspace" */

enum { REGION_ACTIVE = 1, REGION_PENDING = 2, REGION_RETURNED = 3 };

#define HOT_LEVELS 5              /* level pointers kept in hbm_t: every summary of depth <= 6 (a reserve up to 1 TiB) */
typedef struct {            /* one order's bitmap: a set, clear or search reads this one cache line */
  uint64_t *leaf;           /* leaf words (also level depth-1) */
  uint64_t hint;            /* leaf word where the last search found a block: tried first */
  uint32_t depth, pad;
  uint64_t *lvl[HOT_LEVELS]; /* levels 0 (the top word) .. HOT_LEVELS-1; deeper ones in ms_space_s.deep (LVL) */
} hbm_t;
_Static_assert(sizeof(hbm_t) == 64, "one cache line an order");

/* Block cache (lazy coalescing): freed blocks of 16 B .. 64 KiB wait in per-order LIFO lists (side metadata:
   offsets, never the blocks) and are handed out again without touching the buddy bitmaps. At most QMAX blocks
   (one per 4 KiB of a smaller space) and 1/32 of the committed size. A request that finds no free block in the bitmaps splits a
   larger cached block (O(1)); only when none exists are the cached blocks returned to the buddy system
   (bounded: at most QMAX merges), so the cache never causes an ENOMEM. */
#define QORDERS 13                /* orders 4..16 */
#define QMAX 256

typedef struct {
  size_t start, size;       /* offsets in the data range */
  int state;
} region_t;

struct ms_space_s {
  /* cold first: a mapped space's struct starts a page, and a program writing one byte per page of its blocks
     (pre-faulting, touching) keeps evicting the cache sets of every page's first line */
  void *meta_base;          /* mapping holding this struct and the metadata (NULL for create_in) */
  size_t meta_size;
  size_t data_map_size;     /* length of the data mapping (>= reserved) */
  void *data_map;
  char name[64];            /* the config's name, copied (the caller's string may be a temporary); "" for none */
  void *lock_addr;          /* ms_space_create_in with MS_SPACE_LOCKED: the caller's range it locked */
  size_t lock_len;
  size_t expand;            /* automatic expansion step, 0 = fixed */
  /* hot */
  uint64_t magic;
  int fast;                 /* neither thread-safe nor zeroing: the inline cache paths apply */
  unsigned flags;
  unsigned top;             /* largest order that fits the reserved range */
  int lock_on;
  char *data;               /* data range base */
  uint64_t free_mask;       /* bit k: order k has a free block */
  uint8_t *nib;             /* allocation nibbles, one per granule */
  uint8_t *lmap;            /* allocation bytes, one per 2 KiB */
  size_t end;               /* end of the last region (bump pointer for expansions) */
  uint16_t qn[QORDERS];     /* block cache: blocks cached per order (a stack each: qoff[q*qcap ...]) */
  uint16_t qmask;           /* bit q: order q+4 has cached blocks */
  uint32_t qcount, qcap;    /* blocks cached in all; capacity per order */
  size_t qbytes;             /* bytes in the cache: at most size/32 */
  size_t *qoff;             /* QORDERS stacks of qcap block offsets */
  hbm_t fb[MAX_ORDER + 1] __attribute__((aligned(64))); /* bitmap descriptors, one line each */
  /* one line: what every call counts, and what free's merges test */
  size_t used, peak, size, free_blocks;
  uint64_t allocs, frees;
  size_t reserved;          /* data range length */
  int nregions;
  pthread_mutex_t lock;
  /* colder */
  uint64_t ooms, expands;
  uint64_t *deep[MAX_ORDER + 1][MAX_LEVELS - HOT_LEVELS]; /* levels HOT_LEVELS..: leaf >16 GiB, summaries >1 TiB */
  int in_caller;            /* created with ms_space_create_in */
  int at_pending;           /* MS_SPACE_AT_FIRSTALLOC: initial region not committed yet */
  unsigned page_flags;      /* extra flags for ms_pages_* on commit */
  int numa_node;
  int commit_warned;        /* a refused first-allocation commit was reported */
  int expand_warned;        /* a refused automatic expansion (its lock: RLIMIT_MEMLOCK) was reported */
  int lock_optional;        /* the process space: a refused lock leaves the rest of the space unlocked */
  int lock_dropped;         /* lock_optional and a lock was refused: regions committed from then on stay unlocked */
  int backing_warned;       /* a size beyond what the machine can back was reported */
  struct ms_space_s *prev, *next; /* registry of live spaces (stats) */
  struct ms_space_s *hnext; /* chain of the live-handle hash */
  region_t regions[MAX_REGIONS];
};

/* the name messages give a space: its config's (the first 63 bytes), or "(unnamed)" */
static const char *space_name(const ms_space_t *s) { return s->name[0] ? s->name : "(unnamed)"; }
static const char *config_name(const ms_space_config_t *c) { return c->name && c->name[0] ? c->name : "(unnamed)"; }

/* ------------------------------------------------------------------------------------------------ */
/* registry and statistics                                                                            */
/* ------------------------------------------------------------------------------------------------ */
static msi_lock_t registry_lock = MSI_LOCK_INIT;
static ms_space_t *registry;
static uint64_t dead_ooms, dead_expands;
static _Atomic bool spaces_created; /* statistics: the section is printed once a space was made */
/* live handles by address: a handle is looked up here (never dereferenced) before a call that is allowed a few
   more steps (destroy, check, walk, info, expand, shrink), so a destroyed or foreign handle is reported instead
   of read. Chains through the live spaces only. */
#define LIVE_BUCKETS 1024
static ms_space_t *live_hash[LIVE_BUCKETS];
static inline unsigned live_bucket(const void *s) {
  return (unsigned)((((uintptr_t)s >> 6) * 0x9E3779B97F4A7C15ull) >> 54) & (LIVE_BUCKETS - 1);
}

/* registry_lock taken and given back by this thread's registry calls, with a mark of its own set around the hold:
   a signal handler's statistics (mallinfo2, malloc_stats) that interrupted this thread there, even between the
   lock's taking and its holder's record, see the mark and count no space instead of waiting for themselves */
static _Thread_local volatile sig_atomic_t registry_here;
static void registry_mark(bool on) { /* set before the lock is taken, cleared after it is given back */
  if (!on) atomic_signal_fence(memory_order_seq_cst);
  registry_here = on;
  if (on) atomic_signal_fence(memory_order_seq_cst);
}
static void registry_enter(void) {
  registry_mark(true);
  msi_lock(&registry_lock);
}
static void registry_leave(void) {
  msi_unlock(&registry_lock);
  registry_mark(false);
}

static void registry_add(ms_space_t *s) {
  registry_enter();
  if (!atomic_load_explicit(&spaces_created, memory_order_relaxed)) atomic_store(&spaces_created, true);
  s->prev = NULL;
  s->next = registry;
  if (registry) registry->prev = s;
  registry = s;
  unsigned b = live_bucket(s);
  s->hnext = live_hash[b];
  live_hash[b] = s;
  registry_leave();
}
/* removes a live space (true), or finds that `s` is none (false, nothing touched) */
static bool registry_remove(ms_space_t *s) {
  registry_enter();
  ms_space_t **h = &live_hash[live_bucket(s)];
  while (*h && *h != s) h = &(*h)->hnext;
  if (!*h) { registry_leave(); return false; }
  *h = s->hnext;
  if (s->prev) s->prev->next = s->next;
  else registry = s->next;
  if (s->next) s->next->prev = s->prev;
  dead_ooms += s->ooms;
  dead_expands += s->expands;
  registry_leave();
  return true;
}
bool msi_space_owner_name(const void *p, char *name, size_t cap) {
  /* (around a lock that is only tried: an abort path never waits; a handler's look-up nested in this thread's
     registry call, a foreign block's free, leaves that call's mark set) */
  bool nested = registry_here;
  registry_mark(true);
  const ms_space_t *s = NULL;
  if (msi_trylock(&registry_lock)) {
    s = registry;
    while (s && (uintptr_t)p - (uintptr_t)s->data >= s->reserved) s = s->next;
    if (s) msi_snprintf(name, cap, "%s", space_name(s));
    msi_unlock(&registry_lock);
  }
  if (!nested) registry_mark(false);
  return s != NULL;
}
/* a handle that is not a live space was given: reported naming it, errno EINVAL; fatal in strict mode */
static bool strict_mode(void);
MSI_RARE MSI_NOINLINE static void bad_handle(const void *s, const char *call) {
  if (strict_mode()) msi_fatal("%s(%p): not a live space (destroyed, or never created)", call, s);
  msi_error("%s(%p): not a live space (destroyed, or never created); ignored", call, s);
  errno = EINVAL;
}
/* the allocation calls' check, on their slow paths: a destroyed space in caller memory has its magic cleared
   (a destroyed mapped space is unmapped: reading it is undefined, see the header) */
static inline bool gone(const ms_space_t *s, const char *call) {
  if (MSI_LIKELY(s->magic == SPACE_MAGIC)) return false;
  bad_handle(s, call);
  return true;
}
/* true when `s` is a live space; else false with errno EINVAL (reported unless NULL) */
static bool live(const ms_space_t *s, const char *call) {
  if (!s) { errno = EINVAL; return false; }
  registry_enter();
  const ms_space_t *h = live_hash[live_bucket(s)];
  while (h && h != s) h = h->hnext;
  registry_leave();
  if (!h) bad_handle(s, call);
  return h != NULL;
}

/* the live space whose struct and metadata overlap [lo, hi), or NULL (O(live spaces), nothing reported):
   ms_space_create_in given the memory of a space it made before and not destroyed, at the same start or any other,
   would zero that space's metadata (it hands out its blocks again, or follows garbage) */
static const ms_space_t *live_over(uintptr_t lo, uintptr_t hi) {
  registry_enter();
  const ms_space_t *h = registry;
  for (; h; h = h->next) {
    uintptr_t a = h->meta_base ? (uintptr_t)h->meta_base : (uintptr_t)h; /* create_in: from the struct */
    uintptr_t b = h->meta_base ? a + h->meta_size : (uintptr_t)h->data;   /* ... to its data */
    if (lo < b && a < hi) break;
  }
  registry_leave();
  return h;
}

/* (none counted by a signal handler that interrupted this thread's registry call: registry_enter) */
static void spaces_get(ms_stats_t *st) {
  if (registry_here) return;
  registry_enter();
  uint64_t count = 0, bytes = 0, used = 0, ooms = dead_ooms, expands = dead_expands;
  for (ms_space_t *s = registry; s; s = s->next) {
    count++;
    bytes += __atomic_load_n(&s->size, __ATOMIC_RELAXED);
    used += __atomic_load_n(&s->used, __ATOMIC_RELAXED);
    ooms += __atomic_load_n(&s->ooms, __ATOMIC_RELAXED);
    expands += __atomic_load_n(&s->expands, __ATOMIC_RELAXED);
  }
  registry_leave();
  st->space_count += count;
  st->space_bytes += bytes;
  st->space_used_bytes += used;
  st->space_oom += ooms;
  st->space_expands += expands;
}

/* stats.def's space_N lines: the first PRINT_SPACES live spaces one by one, by the name their config gave
   (docs/contract.md §4: the name is shown in stats), most recently created first */
#define PRINT_SPACES 8
static void spaces_print(msi_stats_writer_t *w) {
  /* every line formatted under one hold of registry_lock (one snapshot: the list as it was), written after it:
     the output callback is the caller's code, which may call ms_space_* or ms_stats_print itself (with the lock
     held, the first would abort as a re-entry), and a space it creates or destroys between two lines neither
     repeats a line nor drops one (1.5 KiB of stack: malloc_stats runs on threads of PTHREAD_STACK_MIN) */
  char text[PRINT_SPACES][192];
  int n = 0;
  if (registry_here) return; /* (see spaces_get) */
  registry_enter();
  for (const ms_space_t *s = registry; s && n < PRINT_SPACES; s = s->next, n++)
    msi_snprintf(text[n], sizeof text[n], "%s: %zu bytes, %zu used, %llu oom, %llu expansions", space_name(s),
                 __atomic_load_n(&s->size, __ATOMIC_RELAXED), __atomic_load_n(&s->used, __ATOMIC_RELAXED),
                 (unsigned long long)__atomic_load_n(&s->ooms, __ATOMIC_RELAXED),
                 (unsigned long long)__atomic_load_n(&s->expands, __ATOMIC_RELAXED));
  registry_leave();
  for (int i = 0; i < n; i++) {
    char line[32];
    for (char *c = text[i]; *c; c++) /* a name's control bytes would split the text line */
      if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    msi_snprintf(line, sizeof line, "space_%d", i);
    msi_stats_text(w, line, text[i]);
  }
}

/* the section once a space was created */
static bool spaces_used(void) { return atomic_load_explicit(&spaces_created, memory_order_relaxed); }
static const msi_stats_source_t spaces_source = {"spaces", spaces_get, spaces_print, spaces_used};
MSI_STARTUP_TEXT __attribute__((constructor(103))) static void spaces_register(void) { msi_stats_register(&spaces_source); }

/* ------------------------------------------------------------------------------------------------ */
/* hierarchical bitmaps                                                                               */
/* ------------------------------------------------------------------------------------------------ */
/* level l of order k's bitmap (an lvalue): 0 the top word .. depth-1 the leaf */
#define LVL(s, k, l) (*((l) < HOT_LEVELS ? &(s)->fb[k].lvl[l] : &(s)->deep[k][(l) - HOT_LEVELS]))
/* blocks of order k that fit in the reserved range */
static inline uint64_t positions(const ms_space_t *s, unsigned k) { return s->reserved >> k; }

static inline void hbm_set(ms_space_t *s, unsigned k, uint64_t pos) {
  hbm_t *h = &s->fb[k];
  s->free_blocks++;
  uint64_t *w = &h->leaf[pos >> 6];
  uint64_t old = *w;
  *w = old | (1ull << (pos & 63));
  if (old) return;
  for (int l = (int)h->depth - 2; l >= 0; l--) {
    pos >>= 6;
    w = &LVL(s, k, l)[pos >> 6];
    old = *w;
    *w = old | (1ull << (pos & 63));
    if (old) return;
  }
  s->free_mask |= 1ull << k;
}

static inline void hbm_clear(ms_space_t *s, unsigned k, uint64_t pos) {
  hbm_t *h = &s->fb[k];
  s->free_blocks--;
  uint64_t *w = &h->leaf[pos >> 6];
  uint64_t nw = *w & ~(1ull << (pos & 63));
  *w = nw;
  if (nw) return;
  for (int l = (int)h->depth - 2; l >= 0; l--) {
    pos >>= 6;
    w = &LVL(s, k, l)[pos >> 6];
    nw = *w & ~(1ull << (pos & 63));
    *w = nw;
    if (nw) return;
  }
  s->free_mask &= ~(1ull << k);
}

static inline bool hbm_test(const ms_space_t *s, unsigned k, uint64_t pos) {
  const hbm_t *h = &s->fb[k];
  if (pos >= positions(s, k)) return false;
  return (h->leaf[pos >> 6] >> (pos & 63)) & 1;
}

/* lowest set position; the order must have a free block */
static inline uint64_t hbm_first(ms_space_t *s, unsigned k) {
  hbm_t *h = &s->fb[k];
  uint64_t w = h->leaf[h->hint];
  if (MSI_LIKELY(w)) return (h->hint << 6) | (uint64_t)__builtin_ctzll(w);
  uint64_t i = 0;
  for (uint32_t l = 0; l + 1 < h->depth; l++) i = (i << 6) | (uint64_t)__builtin_ctzll(LVL(s, k, l)[i]);
  i = (i << 6) | (uint64_t)__builtin_ctzll(h->leaf[i]); /* the leaf from this line, never from s->deep */
  h->hint = i >> 6;
  return i;
}

/* ------------------------------------------------------------------------------------------------ */
/* allocation map                                                                                     */
/* ------------------------------------------------------------------------------------------------ */
static inline unsigned nib_get(const ms_space_t *s, size_t off) {
  size_t g = off >> GSHIFT;
  return (s->nib[g >> 1] >> ((g & 1) * 4)) & 15;
}
static inline void nib_put(ms_space_t *s, size_t off, unsigned v) {
  size_t g = off >> GSHIFT;
  unsigned sh = (unsigned)(g & 1) * 4;
  s->nib[g >> 1] = (uint8_t)((s->nib[g >> 1] & ~(15u << sh)) | (v << sh));
}
/* nibbles: 1..7 allocated order v+3 (16 B..1 KiB), 8..14 cached order v-4; bytes: k allocated, k|0x80 cached */
static inline void map_set(ms_space_t *s, size_t off, unsigned k) {
  if (k >= LSHIFT) s->lmap[off >> LSHIFT] = (uint8_t)k;
  else nib_put(s, off, k - 3);
}
static inline void map_cached(ms_space_t *s, size_t off, unsigned k) {
  if (k >= LSHIFT) s->lmap[off >> LSHIFT] = (uint8_t)(k | 0x80);
  else nib_put(s, off, k + 4);
}
/* order of the allocated block starting at off, 0 when none starts there (an offset inside a granule is
   never a block start: the granule's entry belongs to the block at its first byte) */
static inline unsigned map_get(const ms_space_t *s, size_t off) {
  if (off & ((1u << GSHIFT) - 1)) return 0;
  if (!(off & ((1u << LSHIFT) - 1))) {
    unsigned k = s->lmap[off >> LSHIFT];
    if (k) return k & 0x80 ? 0 : k;
  }
  unsigned v = nib_get(s, off);
  return v && v < 8 ? v + 3 : 0;
}
/* order of the cached free block starting at off, 0 when none */
static inline unsigned cached_at(const ms_space_t *s, size_t off) {
  if (off & ((1u << GSHIFT) - 1)) return 0;
  if (!(off & ((1u << LSHIFT) - 1)) && (s->lmap[off >> LSHIFT] & 0x80)) return s->lmap[off >> LSHIFT] & 0x7f;
  unsigned v = nib_get(s, off);
  return v >= 8 && v < 15 ? v - 4 : 0;
}
static inline void map_clear(ms_space_t *s, size_t off, unsigned k) {
  if (k >= LSHIFT) s->lmap[off >> LSHIFT] = 0;
  else nib_put(s, off, 0);
}

/* ------------------------------------------------------------------------------------------------ */
/* regions                                                                                            */
/* ------------------------------------------------------------------------------------------------ */
static inline int region_of(const ms_space_t *s, size_t off) {
  int lo = 0, hi = s->nregions - 1; /* regions are sorted by start and contiguous */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (s->regions[mid].start <= off) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* order of the root block (largest aligned power-of-two piece) of [o, b) starting at o */
static inline unsigned root_order(const ms_space_t *s, size_t o, size_t b) {
  unsigned k = o ? (unsigned)__builtin_ctzll(o) : s->top;
  if (k > s->top) k = s->top;
  while (k > GSHIFT && o + ((size_t)1 << k) > b) k--;
  return k;
}

/* the root blocks of region [a, b): ROOTS_ADD marks them free, ROOTS_REMOVE unmarks them, ROOTS_TEST tells
   whether all are free (a region is wholly free exactly when its roots are: merges never cross regions) */
enum { ROOTS_ADD, ROOTS_TEST, ROOTS_REMOVE };
static bool region_roots(ms_space_t *s, size_t a, size_t b, int op) {
  for (size_t o = a; o < b;) {
    unsigned k = root_order(s, o, b);
    if (op == ROOTS_ADD) hbm_set(s, k, o >> k);
    else if (op == ROOTS_REMOVE) hbm_clear(s, k, o >> k);
    else if (!hbm_test(s, k, o >> k)) return false;
    o += (size_t)1 << k;
  }
  return true;
}
#define region_add_free(s, a, b) region_roots((s), (a), (b), ROOTS_ADD)

/* metadata slices for [a, b) of the data range, as page ranges; fn(addr, len) */
static int meta_apply(ms_space_t *s, size_t a, size_t b, int (*fn)(void *, size_t)) {
  if (s->in_caller) return 0;
  size_t ps = msi_os_page_size();
  if (s->meta_size <= 4 * MSI_MiB) return fn(s->meta_base, s->meta_size);
  struct { uintptr_t lo, hi; } r[2 + (MAX_ORDER + 1) * MAX_LEVELS];
  int n = 0;
  /* the hot prefix (this struct, the block cache's stacks, the summaries and the leaves of large orders, the
     start of the large-block map) whole, up to one huge page: a range locked and faulted in one piece can be
     one transparent huge page, where slices split the mapping into small ones on 4 KiB pages. After any
     interruption that flushes the TLB, malloc and free then take one page walk for their metadata, not one
     per slice. At most 2 MiB more than the slices, and only for a space whose metadata exceeds 4 MiB. */
  /* When that range is refused (a lock past RLIMIT_MEMLOCK), the struct and the stacks alone, as the slices
     below cover the rest: the extra 2 MiB never turn a space that fits the limit into a refused one. */
  size_t hot = msi_os_huge_size(MS_PAGE_THP);
  if (!hot || hot > 2 * MSI_MiB) hot = 2 * MSI_MiB;
  r[n].lo = (uintptr_t)s->meta_base;
  r[n++].hi = (uintptr_t)(s->qoff + QORDERS * s->qcap);
  if (!fn(s->meta_base, hot)) r[0].hi = r[0].lo; /* the prefix is done */
  r[n].lo = (uintptr_t)s->nib + (a >> (GSHIFT + 1));
  r[n++].hi = (uintptr_t)s->nib + (b >> (GSHIFT + 1)) + 1;
  r[n].lo = (uintptr_t)s->lmap + (a >> LSHIFT);
  r[n++].hi = (uintptr_t)s->lmap + (b >> LSHIFT) + 1;
  for (unsigned k = GSHIFT; k <= s->top; k++) {
    const hbm_t *h = &s->fb[k];
    uint64_t plo = a >> k ? (a >> k) - 1 : 0, phi = (b >> k) + 1; /* free tests the buddies on both sides */
    for (int l = (int)h->depth - 1; l >= 0; l--) {
      plo >>= 6;
      phi = (phi >> 6) + 1;
      r[n].lo = (uintptr_t)(LVL(s, k, l) + plo);
      r[n++].hi = (uintptr_t)(LVL(s, k, l) + phi);
    }
  }
  uintptr_t mend = (uintptr_t)s->meta_base + s->meta_size;
  for (int i = 0; i < n; i++) {
    uintptr_t lo = msi_align_down(r[i].lo, ps), hi = msi_align_up(r[i].hi, ps);
    if (hi > mend) hi = mend;
    if (hi > lo) {
      int e = fn((void *)lo, hi - lo);
      if (e) return e;
    }
  }
  return 0;
}

/* ---- what the machine can back ----
   Committed space memory is pre-faulted: a space larger than what can hold it would drive the machine into
   memory pressure and get the process OOM-killed without a word. The limits (read once per process, without
   allocating): RAM (MemTotal), swap (SwapTotal) and the cgroup's memory limit (msi_os_cgroup_budget: v1
   memory.limit_in_bytes, v2 memory.max and memory.high, up the hierarchy). */
static struct { _Atomic int state; uint64_t ram, swap, cgroup; } machine; /* state: 0 unread, 1 reading, 2 read */

static void machine_read(void) {
  int st = 0;
  if (atomic_load_explicit(&machine.state, memory_order_acquire) == 2) return;
  if (!atomic_compare_exchange_strong(&machine.state, &st, 1)) {
    while (atomic_load_explicit(&machine.state, memory_order_acquire) != 2) msi_os_yield();
    return;
  }
  MSI_COLD_BSS static msi_os_cgroup_t cg; /* under machine.state's claim */
  uint64_t ram, swap;
  machine.ram = machine.swap = machine.cgroup = UINT64_MAX;
  if (msi_os_meminfo("MemTotal", &ram) && ram) machine.ram = ram, machine.swap = msi_os_meminfo("SwapTotal", &swap) ? swap : 0;
  msi_os_cgroup_budget(UINT64_MAX, &cg);
  machine.cgroup = cg.limit;
  atomic_store_explicit(&machine.state, 2, memory_order_release);
}


int msi_space_backing(size_t bytes, bool locked, char *why, size_t cap) {
  machine_read();
  uint64_t swap = locked || machine.swap == UINT64_MAX ? 0 : machine.swap;
  uint64_t mach = msi_add_sat(machine.ram, swap), cgl = msi_add_sat(machine.cgroup, swap);
  if (bytes > mach) {
    msi_snprintf(why, cap, "more than the machine's %llu bytes of RAM%s", (unsigned long long)mach,
                 locked ? " (locked memory cannot be swapped)" : swap ? " + swap" : " (no swap)");
    return ENOMEM;
  }
  if (bytes > cgl) {
    msi_snprintf(why, cap, "more than the cgroup's memory limit of %llu bytes%s", (unsigned long long)cgl,
                 swap ? " + swap" : "");
    return ENOMEM;
  }
  return 0;
}

/* 0, or ENOMEM when the space's committed size would grow past what can back it (reported once a space) */
static int backing_check(ms_space_t *s, size_t bytes) {
  char why[160];
  if (msi_space_backing(s->size + bytes, s->flags & MS_SPACE_LOCKED, why, sizeof why) == 0) return 0;
  if (!s->backing_warned) {
    s->backing_warned = 1;
    msi_error("space %s: %zu bytes cannot be backed: %s", space_name(s), s->size + bytes, why);
  }
  return ENOMEM;
}

/* a refused mlock: over RLIMIT_MEMLOCK the kernel says ENOMEM (EPERM when the limit is 0); the space's calls
   report every refused lock as EPERM (EAGAIN: some pages could not be locked), so ENOMEM always means memory */
static int lock_error(int e) { return e == ENOMEM ? EPERM : e; }

/* commits, (LOCKED) locks and pre-faults the data and metadata of [a, b); 0 or an errno value. The lock comes
   first: mlock checks RLIMIT_MEMLOCK before it faults a page in, so a refused lock costs no memory. */
static int region_commit(ms_space_t *s, size_t a, size_t b) {
  if (s->in_caller) return 0;
  int e = backing_check(s, b - a);
  if (e) return e;
  if ((e = msi_pages_commit(s->data + a, b - a))) return e;
  if (s->numa_node >= 0) msi_pages_bind(s->data + a, b - a, s->numa_node);
  bool locked = false;
  if ((s->flags & MS_SPACE_LOCKED) && !s->lock_dropped) {
    if ((e = msi_pages_lock(s->data + a, b - a))) { e = lock_error(e); goto refused; }
    locked = true;
    if ((e = meta_apply(s, a, b, msi_pages_lock))) { e = lock_error(e); goto refused; }
  }
populate:
  if ((e = msi_pages_populate(s->data + a, b - a)) || (e = meta_apply(s, a, b, msi_pages_populate))) goto fail;
  return 0;
refused:
  if (s->lock_optional && (e == EPERM || e == EAGAIN)) {
    /* the process space serves a program's malloc: as at its creation, a refused lock leaves it unlocked rather
       than failing the program's allocations (a daemon that drops its privileges after the space was locked:
       setuid takes CAP_IPC_LOCK away, and RLIMIT_MEMLOCK then refuses every expansion). Said once. The regions
       locked before stay locked, and so does the metadata (its ranges overlap theirs, and mlock does not nest:
       an munlock of them would unlock what the earlier regions locked); region_decommit's munlock is harmless on
       the others. */
    if (locked) msi_pages_unlock(s->data + a, b - a);
    locked = false;
    s->lock_dropped = 1;
    msi_warning("space %s: locking %zu more bytes was refused (%s: RLIMIT_MEMLOCK, without CAP_IPC_LOCK); the "
                "space grows unlocked from here on and may take page faults", space_name(s), b - a, MSI_ERRNO(e));
    goto populate;
  }
fail:
  if (locked) msi_pages_unlock(s->data + a, b - a); /* MADV_DONTNEED refuses locked pages */
  msi_pages_decommit(s->data + a, b - a);
  return e;
}

static void region_decommit(ms_space_t *s, size_t a, size_t b) {
  if (s->in_caller) return;
  MSI_TRACK_UNDEFINED(s->data + a, b - a);
  if (s->flags & MS_SPACE_LOCKED) msi_pages_unlock(s->data + a, b - a);
  msi_pages_decommit(s->data + a, b - a);
}

/* adds [a, a+size) as a new region (committing it); 0 or an errno value */
static int region_append(ms_space_t *s, size_t size, int state) {
  if (s->nregions >= MAX_REGIONS || size > s->reserved - s->end) return ENOMEM;
  size_t a = s->end;
  if (state == REGION_ACTIVE) {
    int e = region_commit(s, a, a + size);
    if (e) return e;
    region_add_free(s, a, a + size);
    s->size += size;
  }
  s->regions[s->nregions++] = (region_t){a, size, state};
  s->end = a + size;
  return 0;
}

/* grows by at least `bytes` (the caller holds the lock) so that a free block of `need` bytes (a power of two,
   aligned to its size; 0: none) exists; reuses a returned region that is large enough and holds such a block */
static int grow(ms_space_t *s, size_t bytes, size_t need) {
  size_t ps = msi_os_page_size();
  size_t want = msi_round_up(bytes, ps);
  if (!want) return ENOMEM;
  for (int i = 0; i < s->nregions; i++) {
    region_t *r = &s->regions[i];
    if (r->state == REGION_RETURNED && r->size >= want &&
        (!need || msi_align_up(r->start, need) + need <= r->start + r->size)) {
      int e = region_commit(s, r->start, r->start + r->size);
      if (e) return e;
      r->state = REGION_ACTIVE;
      region_add_free(s, r->start, r->start + r->size);
      s->size += r->size;
      return 0;
    }
  }
  return region_append(s, want, REGION_ACTIVE);
}

/* ------------------------------------------------------------------------------------------------ */
/* locking and error reports                                                                          */
/* ------------------------------------------------------------------------------------------------ */
static inline void space_lock(ms_space_t *s) {
  /* EDEADLK (an error-checking mutex): this thread holds it, re-entering from a signal handler: reported */
  if (s->lock_on && MSI_UNLIKELY(pthread_mutex_lock(&s->lock) == EDEADLK)) msi_lock_self_wait();
}
static inline void space_unlock(ms_space_t *s) {
  if (s->lock_on) pthread_mutex_unlock(&s->lock);
}

void msi_space_lock_optional(ms_space_t *s) {
  space_lock(s);
  s->lock_optional = 1;
  space_unlock(s);
}

static bool strict_mode(void) {
#if (defined(MEMSPACE_DEBUG) && MEMSPACE_DEBUG) || (defined(MEMSPACE_SECURE_BUILD) && MEMSPACE_SECURE_BUILD)
  return true;
#else
  return msi_opt(MS_OPTION_SECURE) != 0;
#endif
}

/* a bad pointer was given: reported always; fatal in debug/secure builds and with MEMSPACE_SECURE=1 */
MSI_RARE MSI_NOINLINE static void bad_pointer(const ms_space_t *s, const void *p, const char *call, const char *what) {
  if (strict_mode())
    msi_fatal("space %s: %s(%p): %s", space_name(s), call, p, what);
  msi_error("space %s: %s(%p): %s; ignored", space_name(s), call, p, what);
  errno = EINVAL;
}

/* why `off` is not an allocated block start (cold path: may scan the orders) */
MSI_RARE static const char *why_bad(const ms_space_t *s, size_t off, bool is_realloc) {
  const char *freed = is_realloc ? "realloc of a freed block" : "double free (the block is free)";
  if (off & ((1u << GSHIFT) - 1)) return "not a block of this space (misaligned: inside a block)";
  if (cached_at(s, off)) return freed;
  for (unsigned k = GSHIFT; k <= s->top; k++)
    if (!(off & (((size_t)1 << k) - 1)) && hbm_test(s, k, off >> k)) return freed;
  return "not the start of an allocated block of this space (interior pointer or already freed)";
}

/* offset of p in the space's committed range, or SIZE_MAX */
static inline size_t offset_of(const ms_space_t *s, const void *p) {
  size_t off = (size_t)((uintptr_t)p - (uintptr_t)s->data);
  return off < s->end ? off : SIZE_MAX;
}

/* ------------------------------------------------------------------------------------------------ */
/* core allocate / release (lock held)                                                                */
/* ------------------------------------------------------------------------------------------------ */
static void cache_flush(ms_space_t *s);
static inline unsigned order_of(size_t size) {
  if (size <= ((size_t)1 << GSHIFT)) return GSHIFT;
  return 64u - (unsigned)__builtin_clzll(size - 1);
}

/* MS_SPACE_AT_FIRSTALLOC: commits the initial region (lock held); 0 or errno. A refused commit (RLIMIT_MEMLOCK,
   no memory) stays pending: the next request that finds no block, or the next ms_space_expand, tries again, so the
   space works once the limit allows it */
static int commit_pending(ms_space_t *s) {
  region_t *r = &s->regions[0];
  int e = region_commit(s, r->start, r->start + r->size);
  if (e) return e;
  s->at_pending = 0;
  r->state = REGION_ACTIVE;
  region_add_free(s, r->start, r->start + r->size);
  s->size += r->size;
  return 0;
}

MSI_NOINLINE static bool refill(ms_space_t *s, unsigned k) {
  if (s->qmask) {
    cache_flush(s);
    if (s->free_mask >> k) return true;
  }
  if (s->at_pending) {
    int e = commit_pending(s);
    if (e == 0) {
      if (s->free_mask >> k) return true;
    } else if (!s->commit_warned) {
      s->commit_warned = 1;
      msi_warning("space %s: committing the initial %zu bytes at first allocation failed (%s); retried at "
                  "the next allocation", space_name(s), s->regions[0].size, MSI_ERRNO(e));
    }
  }
  if (!s->expand) return false;
  /* the new region must hold an aligned block of order k: [end, align_up(end, 2^k) + 2^k) at least */
  size_t need = (size_t)1 << k;
  size_t step = s->expand, at_least = msi_align_up(s->end, need) + need - s->end;
  if (step < at_least) step = at_least;
  int e = grow(s, step, need);
  if (e != 0) {
    /* a lock refused: every allocation needing room fails from here on, so it is said once (ENOMEM, no room
       left, is what a fixed reserve means and is counted in oom_count) */
    if ((e == EPERM || e == EAGAIN) && !s->expand_warned) {
      s->expand_warned = 1;
      msi_warning("space %s: expanding by %zu bytes failed: locking them was refused (%s: RLIMIT_MEMLOCK, "
                  "without CAP_IPC_LOCK); allocations that need more room fail with ENOMEM",
                  space_name(s), step, MSI_ERRNO(e));
    }
    return false;
  }
  s->expands++;
  msi_verbose("space %s: expanded by %zu bytes (now %zu; expansion %llu)", space_name(s),
              step, s->size, (unsigned long long)s->expands);
  return (s->free_mask >> k) != 0;
}

/* pops the newest cached block of cache order q (which must have one) */
static inline size_t cache_pop(ms_space_t *s, unsigned q) {
  unsigned n = --s->qn[q];
  size_t off = s->qoff[q * s->qcap + n];
  if (!n) s->qmask &= (uint16_t)~(1u << q);
  s->qcount--;
  s->qbytes -= (size_t)1 << (q + GSHIFT);
  return off;
}

static inline void *take(ms_space_t *s, unsigned k) {
  size_t off;
  unsigned j;
  if (k < GSHIFT + QORDERS && s->qn[k - GSHIFT]) {
    off = cache_pop(s, k - GSHIFT);
    goto done;
  }
  uint64_t m = s->free_mask >> k;
  if (MSI_UNLIKELY(!m)) {
    /* a larger cached block, split (O(1) to find) */
    unsigned big = k < GSHIFT + QORDERS ? (unsigned)s->qmask >> (k - GSHIFT) : 0;
    if (big) {
      j = k + (unsigned)__builtin_ctz(big);
      off = cache_pop(s, j - GSHIFT);
      map_clear(s, off, j);
      goto split;
    }
    if (!refill(s, k)) { s->ooms++; return NULL; }
    m = s->free_mask >> k;
  }
  j = k + (unsigned)__builtin_ctzll(m);
  uint64_t pos = hbm_first(s, j);
  hbm_clear(s, j, pos);
  off = (size_t)pos << j;
split:
  while (j > k) {
    j--;
    hbm_set(s, j, (off >> j) + 1);
  }
done:
  map_set(s, off, k);
  s->used += (size_t)1 << k;
  if (s->used > s->peak) s->peak = s->used;
  s->allocs++;
  return s->data + off;
}

static inline bool same_region(const ms_space_t *s, size_t a, size_t b) {
  if (s->nregions == 1) return true;
  return region_of(s, a) == region_of(s, b);
}

/* returns the block to the buddy bitmaps, merging with free buddies (no accounting) */
static inline void merge_free(ms_space_t *s, size_t off, unsigned k) {
  map_clear(s, off, k);
  while (k < s->top) {
    size_t bsz = (size_t)1 << k;
    size_t buddy = off ^ bsz;
    if (!hbm_test(s, k, buddy >> k)) break;
    if (k >= RSHIFT && !same_region(s, off & ~bsz, (off | bsz) + bsz - 1)) break;
    hbm_clear(s, k, buddy >> k);
    off &= ~bsz;
    k++;
  }
  hbm_set(s, k, off >> k);
}

/* every cached block back to the buddy system: at most QMAX merge chains */
MSI_NOINLINE static void cache_flush(ms_space_t *s) {
  for (unsigned q = 0; q < QORDERS; q++)
    while (s->qn[q]) merge_free(s, cache_pop(s, q), q + GSHIFT);
}

/* pushes a block of order k (< GSHIFT + QORDERS) on its cache list; there must be room */
static inline void cache_push(ms_space_t *s, size_t off, unsigned k) {
  unsigned q = k - GSHIFT;
  s->qoff[q * s->qcap + s->qn[q]++] = off;
  s->qmask |= (uint16_t)(1u << q);
  s->qcount++;
  s->qbytes += (size_t)1 << k;
  map_cached(s, off, k); /* a second free is still detected */
}

/* a block leaves the application: into the block cache when it has room, else to the buddy bitmaps */
static inline void release(ms_space_t *s, size_t off, unsigned k) {
  s->used -= (size_t)1 << k;
  s->frees++;
  if (k < GSHIFT + QORDERS && s->qcap) {
    unsigned q = k - GSHIFT;
    if (MSI_UNLIKELY(s->qn[q] >= s->qcap || s->qcount >= QMAX || s->qbytes + ((size_t)1 << k) > (s->size >> 5))) {
      /* full: evict the newest block of the largest other cached order (one merge chain), so the cache
         follows the workload; if that is not enough room, this block goes to the bitmaps */
      unsigned other = s->qmask & ~(1u << q);
      if (other) {
        unsigned o = 31u - (unsigned)__builtin_clz(other);
        merge_free(s, cache_pop(s, o), o + GSHIFT);
      }
      if (s->qn[q] >= s->qcap || s->qcount >= QMAX || s->qbytes + ((size_t)1 << k) > (s->size >> 5)) {
        merge_free(s, off, k);
        return;
      }
    }
    cache_push(s, off, k);
    return;
  }
  merge_free(s, off, k);
}

/* ------------------------------------------------------------------------------------------------ */
/* creation                                                                                           */
/* ------------------------------------------------------------------------------------------------ */
size_t msi_space_reserve_size(size_t initial, size_t expand) {
  /* automatic expansion: room for 63 steps (at most 64 GiB); a fixed space: room to grow to 4x explicitly */
  size_t room = !expand ? (initial > SIZE_MAX / 4 ? initial : initial * 3)
                        : expand > (64 * MSI_GiB) / 63 ? 64 * MSI_GiB : expand * 63;
  size_t r = initial + room;
  if (r < initial || r > ((size_t)1 << MAX_ORDER)) r = (size_t)1 << MAX_ORDER;
  return r;
}

size_t msi_space_expand_max(size_t initial_size) {
  size_t initial = msi_round_up(initial_size, msi_os_page_size());
  if (!initial || initial > ((size_t)1 << MAX_ORDER)) return 0;
  return msi_space_reserve_size(initial, SIZE_MAX) - initial;
}

/* bytes of metadata (bitmaps + maps) for a data range of `reserved` bytes, laid out after the struct.
   Hot and small first: every summary level and the leaves of the orders the block cache does not hold (every
   malloc and free of 128 KiB and more updates them; R/2^19 bytes in all) or that are small, then the large-block
   map, then the big leaves (low orders, whose locality follows the data), then the nibble map. The first 2 MiB
   are locked and pre-faulted whole (meta_apply), so that they can sit on one transparent huge page. */
#define HOT_LEAF(k, words) ((k) >= GSHIFT + QORDERS || (words) <= 8)
static size_t meta_layout(ms_space_t *s, size_t reserved, char *base) {
  size_t off = msi_round_up(sizeof(ms_space_t), 64);
  size_t qcap = reserved >> 12; /* per order: one per 4 KiB of a small space, at most QMAX */
  if (qcap > QMAX) qcap = QMAX;
  if (s) {
    s->qcap = (uint32_t)qcap;
    s->qoff = (size_t *)(base + off);
  }
  off = msi_round_up(off + QORDERS * qcap * sizeof(size_t), 64);
  unsigned top = 63u - (unsigned)__builtin_clzll(reserved);
  if (top > MAX_ORDER) top = MAX_ORDER;
  uint64_t words[MAX_ORDER + 1][MAX_LEVELS]; /* words[k][0] = leaf */
  uint32_t depth[MAX_ORDER + 1];
  for (unsigned k = GSHIFT; k <= top; k++) {
    uint64_t n = reserved >> k;
    depth[k] = 0;
    do {
      n = (n + 63) / 64;
      words[k][depth[k]++] = n;
    } while (n > 1);
    if (s) {
      s->fb[k].depth = depth[k];
    }
  }
/* a hot array never starts a page (see the struct's first line) */
#define PLACE(k, l) do { if (hot && !(off & 4095)) off += 64;                                          \
                         if (s) LVL(s, k, depth[k] - 1 - (l)) = (uint64_t *)(base + off); \
                         off = msi_round_up(off + words[k][l] * 8, 64); } while (0)
  int hot = 1;
  for (unsigned k = top + 1; k-- > GSHIFT;) {
    for (uint32_t l = 1; l < depth[k]; l++) PLACE(k, l);
    if (HOT_LEAF(k, words[k][0])) PLACE(k, 0);
  }
  if (s) s->lmap = (uint8_t *)(base + off);
  off += msi_round_up((reserved >> LSHIFT) + 1, 64);
  hot = 0;
  for (unsigned k = top + 1; k-- > GSHIFT;)
    if (!HOT_LEAF(k, words[k][0])) PLACE(k, 0);
#undef PLACE
  if (s)
    for (unsigned k = GSHIFT; k <= top; k++) s->fb[k].leaf = LVL(s, k, depth[k] - 1);
  if (s) s->nib = (uint8_t *)(base + off);
  off += msi_round_up((reserved >> GSHIFT) / 2 + 1, 64);
  if (s) s->top = top;
  return off;
}

/* the metadata of a space of `reserved` data bytes, committed. Large metadata goes on transparent huge pages:
   walking the 4 KiB pages of big blocks then does not evict the metadata's TLB entries (separate 2 MiB entries),
   so malloc and free find it without page walks. 0 or an errno. */
static int reserve_meta(size_t reserved, ms_pages_t *mm) {
  size_t msize = msi_round_up(meta_layout(NULL, reserved, NULL), msi_os_page_size());
  return msi_pages_reserve_exact(msize, 0, MS_PAGES_COMMIT | (msize >= MSI_MiB ? MS_PAGES_THP : 0), -1, mm);
}

static void init_lock(ms_space_t *s);
static void init_struct(ms_space_t *s, unsigned flags, const char *name) {
  s->magic = SPACE_MAGIC;
  s->flags = flags;
  s->fast = !(flags & (MS_SPACE_THREAD_SAFE | MS_SPACE_ZERO));
  s->numa_node = -1;
  msi_snprintf(s->name, sizeof s->name, "%s", name ? name : "");
  if (flags & MS_SPACE_THREAD_SAFE) {
    init_lock(s);
    s->lock_on = 1;
  }
}

static void init_lock(ms_space_t *s) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  if (pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT) != 0)
    MSI_WARN_ONCE("spaces: priority-inheriting mutexes unavailable; using a plain mutex");
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK); /* a thread waiting for itself: EDEADLK, not a hang */
  pthread_mutex_init(&s->lock, &a);
  pthread_mutexattr_destroy(&a);
}

/* MS_SPACE_HUGE_PAGES's page sizes: MEMSPACE_HUGE_PAGES=1G tries 1 GiB first; an explicit, valid 0 (the variable
   or ms_option_set) is the operator's switch: none, base pages (as for DMA); unset (or invalid, reported): 2 MiB */
static unsigned huge_flags(void) {
  long long hp = msi_opt(MS_OPTION_HUGE_PAGES);
  if (hp >= (long long)MSI_GiB) return MS_PAGES_HUGE_1G | MS_PAGES_HUGE_2M;
  if (msi_huge_pages_off()) return 0;
  return MS_PAGES_HUGE_2M;
}

ms_space_t *ms_space_create(const ms_space_config_t *c) {
  msi_init();
  if (!c || c->initial_size == 0 || (c->at != MS_SPACE_AT_START && c->at != MS_SPACE_AT_FIRSTALLOC) ||
      (c->flags & ~(MS_SPACE_LOCKED | MS_SPACE_ZERO | MS_SPACE_THREAD_SAFE | MS_SPACE_HUGE_PAGES)) ||
      c->reserved[0] || c->reserved[1] || c->reserved[2] || c->reserved[3] || c->numa_node < -1) {
    errno = EINVAL;
    return NULL;
  }
  size_t ps = msi_os_page_size();
  size_t initial = msi_round_up(c->initial_size, ps), expand = c->expand_size ? msi_round_up(c->expand_size, ps) : 0;
  if (!initial || initial > ((size_t)1 << MAX_ORDER)) { errno = ENOMEM; return NULL; }
  /* a step larger than the room reserved for expansions could never be taken: every expansion would fail. A
     caller's error, refused here (rounding up past SIZE_MAX included) */
  if (c->expand_size && (!expand || expand > msi_space_expand_max(initial))) {
    errno = EINVAL;
    return NULL;
  }
  ms_pages_t dm, mm;
  size_t reserved;
  int e;
  bool huge = c->flags & MS_SPACE_HUGE_PAGES;
  char why[160];
  if (!huge && msi_space_backing(initial, c->flags & MS_SPACE_LOCKED, why, sizeof why)) {
    msi_error("space %s: %zu bytes cannot be backed: %s", config_name(c), initial, why);
    errno = ENOMEM;
    return NULL;
  }
  if (huge) {
    /* hugetlb memory is committed when mapped: a huge-page space is fixed at its (rounded) initial size */
    unsigned hf = huge_flags(), pf = hf | MS_PAGES_COMMIT | MS_PAGES_POPULATE;
    e = msi_pages_reserve_exact(initial, 2 * MSI_MiB, pf, c->numa_node, &dm);
    if (e) { errno = e; return NULL; }
    if ((c->flags & MS_SPACE_LOCKED) && (e = msi_pages_lock(dm.addr, dm.size))) {
      msi_pages_release(dm.addr, dm.size);
      errno = lock_error(e);
      return NULL;
    }
    if (!hf) msi_verbose("space %s: MS_SPACE_HUGE_PAGES under MEMSPACE_HUGE_PAGES=0: %s base pages", config_name(c),
                         msi_pages_name(dm.page_size));
    else if (dm.fallback && dm.kind == MS_PAGE_THP)
      msi_verbose("space %s: hugetlb pages unavailable, using transparent huge pages (%s where the kernel finds them)",
                  config_name(c), msi_pages_name(dm.page_size));
    else if (dm.fallback)
      msi_verbose("space %s: the huge pages asked for are unavailable, using %s %s pages", config_name(c),
                  msi_pages_name(dm.page_size), dm.kind == MS_PAGE_BASE ? "base" : "hugetlb");
    reserved = initial = dm.size;
    expand = 0;
  } else {
    reserved = msi_round_up(msi_space_reserve_size(initial, expand), ps);
    /* under RLIMIT_AS (ulimit -v: sandboxes, batch systems) the reserve for later expansions must not take the
       program's address space: at most a quarter of the limit (the heap takes at most half), never less than
       the initial size; a refused reservation is retried with half the expansion room down to the initial size */
    size_t cap = msi_os_as_share(4);
    if (reserved > cap) reserved = msi_round_up(cap > initial ? cap : initial, ps);
    /* transparent huge pages where the space is big enough: every committed byte is pre-faulted anyway, so THP
       costs no memory, and a fork copies one entry per 2 MiB instead of 512 (bash and Python's subprocess fork a
       lot); pre-faulting is faster and big blocks take fewer TLB misses. Falls back to 4 KiB pages silently (THP disabled, no free huge page). */
    unsigned thp = msi_os_huge_size(MS_PAGE_THP) && initial >= msi_os_huge_size(MS_PAGE_THP) ? MS_PAGES_THP : 0;
    /* the data range is aligned to its largest block (at most 1 GiB; it costs address space only), so a block's
       alignment relative to the range is its address's alignment: aligned_alloc up to that never fails for it */
    size_t align = (size_t)1 << (63 - __builtin_clzll(reserved));
    if (align > MSI_GiB) align = MSI_GiB;
    if (align < 2 * MSI_MiB) align = 2 * MSI_MiB;
    for (;;) { /* RLIMIT_AS: less slack, then half the expansion room, down to the initial size */
      e = msi_pages_reserve(reserved, initial, align, 2 * MSI_MiB, thp, c->numa_node, &dm);
      if (e) { errno = e; return NULL; }
      if (dm.size < reserved) reserved = dm.size;
      if (!(e = reserve_meta(reserved, &mm))) break;
      msi_pages_release(dm.addr, dm.size);
      if (e != ENOMEM || reserved == initial) { errno = e; return NULL; }
      size_t smaller = msi_round_up(initial + (reserved - initial) / 2, ps);
      reserved = smaller < reserved ? smaller : initial;
      align = 2 * MSI_MiB;
    }
    if (reserved < msi_space_reserve_size(initial, expand))
      msi_verbose("space %s: address space limited (RLIMIT_AS): %zu bytes reserved, room for %zu bytes of expansion",
                  config_name(c), reserved, reserved - initial);
  }
  if (huge && (e = reserve_meta(reserved, &mm))) { msi_pages_release(dm.addr, dm.size); errno = e; return NULL; }
  ms_space_t *s = mm.addr;
  meta_layout(s, reserved, mm.addr);
  init_struct(s, c->flags, c->name);
  s->numa_node = c->numa_node;
  s->data = dm.addr;
  s->data_map = dm.addr;
  s->data_map_size = dm.size;
  s->reserved = reserved;
  s->expand = expand;
  s->meta_base = mm.addr;
  s->meta_size = mm.size;
  if (huge) {
    s->in_caller = 1; /* already committed, populated and locked: region_commit has nothing to do */
    e = region_append(s, initial, REGION_ACTIVE);
    s->in_caller = 0;
    if (!e && (c->flags & MS_SPACE_LOCKED)) e = lock_error(meta_apply(s, 0, initial, msi_pages_lock));
    if (!e) e = meta_apply(s, 0, initial, msi_pages_populate);
  } else if (c->at == MS_SPACE_AT_FIRSTALLOC) {
    e = region_append(s, initial, REGION_PENDING);
    s->at_pending = 1;
  } else {
    e = region_append(s, initial, REGION_ACTIVE);
  }
  if (e) {
    if (s->lock_on) pthread_mutex_destroy(&s->lock);
    msi_pages_release(dm.addr, dm.size);
    msi_pages_release(mm.addr, mm.size);
    errno = e;
    return NULL;
  }
  registry_add(s);
  msi_verbose("space %s: created: %zu bytes%s, expand %zu, %zu bytes of address space reserved, %zu of metadata",
              space_name(s), initial,
              c->at != MS_SPACE_AT_FIRSTALLOC ? ""
              : huge ? " committed now (huge pages are taken when mapped: MS_SPACE_AT_FIRSTALLOC has no effect)"
                     : " at first allocation",
              expand, reserved, mm.size);
  return s;
}

/* ms_space_create_in from its overlap check to its registration: two calls on overlapping memory at once would
   both pass the check and both zero the metadata. Taken before registry_lock (msi_fork_spaces). */
static msi_lock_t create_in_lock = MSI_LOCK_INIT;
static ms_space_t *create_in(void *memory, size_t size, unsigned flags, uintptr_t lo, uintptr_t hi);

ms_space_t *ms_space_create_in(void *memory, size_t size, unsigned flags) {
  msi_init();
  if (!memory || (flags & ~(MS_SPACE_LOCKED | MS_SPACE_ZERO | MS_SPACE_THREAD_SAFE))) { errno = EINVAL; return NULL; }
  uintptr_t lo = msi_align_up((uintptr_t)memory, 64), hi = (uintptr_t)memory + size;
  if (hi < (uintptr_t)memory || hi <= lo) { errno = EINVAL; return NULL; }
  msi_lock(&create_in_lock);
  ms_space_t *s = create_in(memory, size, flags, lo, hi);
  int e = errno;
  msi_unlock(&create_in_lock);
  errno = e;
  return s;
}

static ms_space_t *create_in(void *memory, size_t size, unsigned flags, uintptr_t lo, uintptr_t hi) {
  const ms_space_t *over = live_over(lo, hi);
  if (over) {
    msi_error("ms_space_create_in(%p, %zu): the memory holds live space %p (its struct and metadata; destroy it "
              "first)", memory, size, (const void *)over);
    errno = EINVAL;
    return NULL;
  }
  /* data = the largest multiple of 16 that fits beside its metadata; align it to 4 KiB when that costs little */
  size_t avail = hi - lo;
  size_t data = avail;
  for (int i = 0; i < 8; i++) {
    size_t need = meta_layout(NULL, data < 16 ? 16 : data, NULL);
    if (need >= avail) { data = 0; break; }
    size_t fit = (avail - need) & ~(size_t)15;
    if (fit >= data) break;
    data = fit;
  }
  if (data < 16) { errno = EINVAL; return NULL; }
  size_t need = meta_layout(NULL, data, NULL);
  uintptr_t dbase = msi_align_up(lo + need, 16);
  uintptr_t dpage = msi_align_up(lo + need, 4096);
  if (dpage + (data > 8 * 4096 ? data - 4096 : data) <= hi && data > 8 * 4096) {
    dbase = dpage;
    data -= 4096;
  }
  if (dbase + data > hi) data = (hi - dbase) & ~(size_t)15;
  data &= ~(size_t)15;
  if (data < 16) { errno = EINVAL; return NULL; }
  ms_space_t *s = (ms_space_t *)lo;
  memset(s, 0, need);
  meta_layout(s, data, (char *)lo);
  init_struct(s, flags, NULL);
  s->in_caller = 1;
  s->data = (char *)dbase;
  s->reserved = data;
  if (flags & MS_SPACE_LOCKED) {
    size_t ps = msi_os_page_size();
    uintptr_t a = msi_align_down((uintptr_t)memory, ps), b = msi_align_up(hi, ps);
    int e = msi_pages_lock((void *)a, b - a);
    if (e) { if (s->lock_on) pthread_mutex_destroy(&s->lock); errno = lock_error(e); return NULL; }
    s->lock_addr = (void *)a;
    s->lock_len = b - a;
  }
  region_append(s, data, REGION_ACTIVE);
  registry_add(s);
  return s;
}

void ms_space_destroy(ms_space_t *s) {
  if (!s) return;
  if (!registry_remove(s)) { bad_handle(s, "ms_space_destroy"); return; }
  s->magic = 0;
  s->fast = 0; /* a destroyed space in caller memory: every call takes a path that checks the magic */
  if (s->lock_on) pthread_mutex_destroy(&s->lock);
  MSI_TRACK_UNDEFINED(s->data, s->reserved); /* freed blocks were poisoned: the range outlives the space */
  if (s->in_caller) {
    if (s->lock_len) msi_pages_unlock(s->lock_addr, s->lock_len);
    return;
  }
  if (s->flags & MS_SPACE_LOCKED) {
    for (int i = 0; i < s->nregions; i++)
      if (s->regions[i].state == REGION_ACTIVE) msi_pages_unlock(s->data + s->regions[i].start, s->regions[i].size);
  }
  void *dmap = s->data_map, *mbase = s->meta_base;
  size_t dsize = s->data_map_size, msize = s->meta_size;
  msi_pages_release(dmap, dsize);
  msi_pages_release(mbase, msize);
}

/* ------------------------------------------------------------------------------------------------ */
/* the allocation calls                                                                               */
/* ------------------------------------------------------------------------------------------------ */
/* A request the space cannot serve: NULL + ENOMEM, counted in oom_count (`n`: the count take() reached, 0: count it
   here) and said under MEMSPACE_VERBOSE naming the space at its 1st, 2nd, 4th, 8th... failure, so that a loop
   retrying on a full space does not flood stderr. The process space's first failure of a request that could fit
   is a warning without MEMSPACE_VERBOSE too: the program's malloc fails, and the program seldom says why. Written
   outside the space's lock. */
static _Atomic bool proc_room_said; /* the process space's "no room" warning was given (no_room) */

MSI_NOINLINE MSI_RARE static void *no_room(ms_space_t *s, size_t size, uint64_t n, size_t align) {
  space_lock(s);
  if (!n) n = ++s->ooms;
  size_t used = s->used, total = s->size;
  space_unlock(s);
  /* `align`: an alignment no block of the space has (ms_space_aligned_alloc), whatever room is left */
  char why[128];
  size_t most = (size_t)1 << s->top;
  bool never = align || size > most; /* no block of the space, expanded to its whole reservation, could serve it */
  if (align) {
    size_t data = (size_t)((uintptr_t)s->data & -(uintptr_t)s->data);
    msi_snprintf(why, sizeof why, "aligned to %zu: blocks of this space are aligned to %zu at most", align,
                 data && data < most ? data : most);
  } else if (never) {
    msi_snprintf(why, sizeof why, "larger than the largest block the space can ever hold, %zu bytes", most);
  } else {
    msi_snprintf(why, sizeof why, "%s", s->expand ? "could not expand" : "fixed size");
  }
  /* the process space's one warning is kept for a request that could fit: a malloc(SIZE_MAX / 2) probing for
     failure must not spend it before the space really runs out */
  if (!never && s == msi_proc_space_get() && !atomic_exchange_explicit(&proc_room_said, true, memory_order_relaxed))
    msi_warning("space process: no room for %zu bytes (%zu of %zu bytes in use, %s): malloc returns NULL with ENOMEM; "
                "raise MEMSPACE_SPACE_INITIAL or MEMSPACE_SPACE_EXPAND (said once; MEMSPACE_VERBOSE says more)", size,
                used, total, why);
  else if ((n & (n - 1)) == 0)
    msi_verbose("space %s: no room for %zu bytes (%zu of %zu bytes in use, %s): NULL + ENOMEM; failure %llu (said "
                "at the 1st, 2nd, 4th, 8th... failure)", space_name(s), size, used, total, why,
                (unsigned long long)n);
  errno = ENOMEM;
  return NULL;
}

static inline void *alloc_order(ms_space_t *s, unsigned k, size_t size, bool zero) {
  space_lock(s);
  void *p = take(s, k);
  uint64_t n = p ? 0 : s->ooms;
  space_unlock(s);
  if (MSI_UNLIKELY(!p)) return no_room(s, size, n, 0);
  MSI_TRACK_MALLOC(p, (size_t)1 << k, zero); /* the usable size is the whole block */
  if (s->flags & MS_SPACE_ZERO) memset(p, 0, (size_t)1 << k); /* every usable byte (ms_space_usable_size) */
  else if (zero) memset(p, 0, size);
  return p;
}

MSI_NOINLINE static void *malloc_slow(ms_space_t *s, size_t size) {
  if (MSI_UNLIKELY(!s || size == 0)) { errno = EINVAL; return NULL; }
  if (gone(s, "ms_space_malloc")) return NULL;
  if (MSI_UNLIKELY(size > ((size_t)1 << s->top))) return no_room(s, size, 0, 0);
  return alloc_order(s, order_of(size), size, false);
}

/* the fast path: a cached block of the right order, no lock, no zeroing; everything else in malloc_slow */
void *ms_space_malloc(ms_space_t *s, size_t size) {
  if (MSI_LIKELY(s && size - 1 < ((size_t)1 << (GSHIFT + QORDERS - 1)) && s->fast)) {
    unsigned k = order_of(size);
    if (MSI_LIKELY(s->qn[k - GSHIFT])) {
      size_t off = cache_pop(s, k - GSHIFT);
      map_set(s, off, k);
      s->used += (size_t)1 << k;
      if (s->used > s->peak) s->peak = s->used;
      s->allocs++;
      void *p = s->data + off;
      MSI_TRACK_MALLOC(p, (size_t)1 << k, 0);
      return p;
    }
  }
  return malloc_slow(s, size);
}

void *ms_space_calloc(ms_space_t *s, size_t count, size_t size) {
  size_t total;
  if (MSI_UNLIKELY(!s)) { errno = EINVAL; return NULL; }
  if (gone(s, "ms_space_calloc")) return NULL;
  if (__builtin_mul_overflow(count, size, &total)) { errno = ENOMEM; return NULL; }
  if (total == 0) { errno = EINVAL; return NULL; }
  if (MSI_UNLIKELY(total > ((size_t)1 << s->top))) return no_room(s, total, 0, 0);
  return alloc_order(s, order_of(total), total, true);
}

void *ms_space_aligned_alloc(ms_space_t *s, size_t alignment, size_t size) {
  if (MSI_UNLIKELY(!s || size == 0 || !msi_is_pow2(alignment))) { errno = EINVAL; return NULL; }
  if (gone(s, "ms_space_aligned_alloc")) return NULL;
  if (size > ((size_t)1 << s->top)) return no_room(s, size, 0, 0);
  if (alignment > ((size_t)1 << s->top)) return no_room(s, size, 0, alignment);
  unsigned k = order_of(size);
  unsigned a = (unsigned)__builtin_ctzll(alignment);
  if (a > k) k = a;
  /* blocks of order k are aligned to 2^k relative to the data base */
  if (((uintptr_t)s->data & (alignment - 1)) != 0) return no_room(s, size, 0, alignment);
  return alloc_order(s, k, size, false);
}

MSI_NOINLINE static void block_free_slow(ms_space_t *s, void *p) {
  if (MSI_UNLIKELY(!s)) { errno = EINVAL; return; }
  if (gone(s, "ms_space_free")) return;
  size_t off = offset_of(s, p);
  if (MSI_UNLIKELY(off == SIZE_MAX)) { bad_pointer(s, p, "free", "not a block of this space"); return; }
  space_lock(s);
  unsigned k = map_get(s, off);
  if (MSI_UNLIKELY(!k)) {
    const char *why = why_bad(s, off, false);
    space_unlock(s);
    bad_pointer(s, p, "free", why);
    return;
  }
  MSI_TRACK_FREE(p);
  MSI_TRACK_NOACCESS(p, (size_t)1 << k);
  release(s, off, k);
  space_unlock(s);
}

/* the fast path: an allocated block of at most 64 KiB into the block cache when it has room, no lock;
   everything else (merging, bad pointers, locking) in block_free_slow */
void ms_space_free(ms_space_t *s, void *p) {
  if (!p) return;
  if (MSI_LIKELY(s && s->fast)) {
    size_t off = (size_t)((uintptr_t)p - (uintptr_t)s->data);
    if (MSI_LIKELY(off < s->end && !(off & ((1u << GSHIFT) - 1)))) { /* inside a granule: block_free_slow reports it */
      unsigned k, v;
      if (!(off & ((1u << LSHIFT) - 1)) && (v = s->lmap[off >> LSHIFT]) != 0) {
        k = v < GSHIFT + QORDERS ? v : 0; /* also excludes cached markers (0x80) */
      } else { /* 16 B..1 KiB, also one starting on a 2 KiB boundary (its byte is 0): the nibble, as map_get */
        v = nib_get(s, off);
        k = v - 1u < 7u ? v + 3 : 0;
      }
      if (MSI_LIKELY(k && s->qn[k - GSHIFT] < s->qcap && s->qcount < QMAX &&
                     s->qbytes + ((size_t)1 << k) <= (s->size >> 5))) {
        MSI_TRACK_FREE(p);
        MSI_TRACK_NOACCESS(p, (size_t)1 << k);
        s->used -= (size_t)1 << k;
        s->frees++;
        cache_push(s, off, k);
        return;
      }
    }
  }
  block_free_slow(s, p);
}

size_t ms_space_usable_size(const ms_space_t *cs, const void *p) {
  ms_space_t *s = (ms_space_t *)cs;
  if (!s || !p) return 0;
  if (gone(s, "ms_space_usable_size")) return 0;
  size_t off = offset_of(s, p);
  if (off == SIZE_MAX) return 0;
  space_lock(s);
  unsigned k = map_get(s, off);
  space_unlock(s);
  return k ? (size_t)1 << k : 0;
}

void *ms_space_realloc(ms_space_t *s, void *p, size_t size) {
  if (!s) { errno = EINVAL; return NULL; }
  if (gone(s, "ms_space_realloc")) return NULL;
  if (!p) return ms_space_malloc(s, size);
  if (size == 0) { ms_space_free(s, p); return NULL; }
  size_t off = offset_of(s, p);
  if (off == SIZE_MAX) { bad_pointer(s, p, "realloc", "not a block of this space"); return NULL; }
  if (size > ((size_t)1 << s->top)) return no_room(s, size, 0, 0);
  unsigned n = order_of(size);
  space_lock(s);
  unsigned k = map_get(s, off);
  if (!k) {
    const char *why = why_bad(s, off, true);
    space_unlock(s);
    bad_pointer(s, p, "realloc", why);
    return NULL;
  }
  if (n <= k) {
    /* shrink in place: the upper halves become free (their buddies are ours, so no merging) */
    if (n < k) {
      map_clear(s, off, k);
      for (unsigned l = k; l > n; l--) hbm_set(s, l - 1, (off >> (l - 1)) + 1);
      map_set(s, off, n);
      s->used -= ((size_t)1 << k) - ((size_t)1 << n);
    }
    space_unlock(s);
    MSI_TRACK_RESIZE(p, (size_t)1 << k, (size_t)1 << n);
    if (n < k) MSI_TRACK_NOACCESS((char *)p + ((size_t)1 << n), ((size_t)1 << k) - ((size_t)1 << n));
    return p;
  }
  /* grow in place when every buddy up to order n is free, we are the lower half and it stays in one region */
  bool ok = n <= s->top && !(off & (((size_t)1 << n) - 1)) && same_region(s, off, off + ((size_t)1 << n) - 1);
  for (unsigned l = k; ok && l < n; l++) ok = hbm_test(s, l, (off >> l) + 1);
  if (ok) {
    for (unsigned l = k; l < n; l++) hbm_clear(s, l, (off >> l) + 1);
    map_clear(s, off, k);
    map_set(s, off, n);
    s->used += ((size_t)1 << n) - ((size_t)1 << k);
    if (s->used > s->peak) s->peak = s->used;
    space_unlock(s);
    MSI_TRACK_RESIZE(p, (size_t)1 << k, (size_t)1 << n);
    if (s->flags & MS_SPACE_ZERO) memset((char *)p + ((size_t)1 << k), 0, ((size_t)1 << n) - ((size_t)1 << k));
    return p;
  }
  void *q = take(s, n);
  uint64_t oom = q ? 0 : s->ooms;
  space_unlock(s);
  if (!q) return no_room(s, size, oom, 0);
  MSI_TRACK_MALLOC(q, (size_t)1 << n, 0);
  msi_memcpy(q, p, (size_t)1 << k);
  if (s->flags & MS_SPACE_ZERO) memset((char *)q + ((size_t)1 << k), 0, ((size_t)1 << n) - ((size_t)1 << k));
  space_lock(s);
  MSI_TRACK_FREE(p);
  MSI_TRACK_NOACCESS(p, (size_t)1 << k);
  release(s, off, k);
  space_unlock(s);
  return q;
}

/* ------------------------------------------------------------------------------------------------ */
/* expansion, shrinking, information                                                                  */
/* ------------------------------------------------------------------------------------------------ */
int ms_space_expand(ms_space_t *s, size_t bytes) {
  if (!live(s, "ms_space_expand")) return EINVAL;
  if (bytes == 0) return errno = EINVAL;
  if (s->in_caller) return errno = ENOMEM;
  space_lock(s);
  /* MS_SPACE_AT_FIRSTALLOC before the first allocation: the initial size first. Else the first allocations would
     take the expansion and the initial size would be committed later, by an allocation that finds no block */
  int e = s->at_pending ? commit_pending(s) : 0;
  if (!e) e = grow(s, bytes, 0);
  if (!e) s->expands++;
  space_unlock(s);
  if (e) errno = e;
  return e;
}

size_t ms_space_shrink(ms_space_t *s) {
  if (!live(s, "ms_space_shrink")) return 0;
  if (s->in_caller) return 0;
  size_t given = 0;
  space_lock(s);
  cache_flush(s);
  for (int i = 1; i < s->nregions; i++) {
    region_t *r = &s->regions[i];
    if (r->state != REGION_ACTIVE || !region_roots(s, r->start, r->start + r->size, ROOTS_TEST)) continue;
    region_roots(s, r->start, r->start + r->size, ROOTS_REMOVE);
    region_decommit(s, r->start, r->start + r->size);
    r->state = REGION_RETURNED;
    s->size -= r->size;
    given += r->size;
  }
  /* returned regions at the end give their address range back to the bump pointer */
  while (s->nregions > 1 && s->regions[s->nregions - 1].state == REGION_RETURNED) {
    s->nregions--;
    s->end = s->regions[s->nregions].start;
  }
  space_unlock(s);
  return given;
}

int ms_space_info(const ms_space_t *cs, ms_space_info_t *info) {
  ms_space_t *s = (ms_space_t *)cs;
  if (!info) return errno = EINVAL;
  if (!live(s, "ms_space_info")) return EINVAL;
  space_lock(s);
  memset(info, 0, sizeof *info);
  info->size = s->size;
  info->used = s->used;
  info->free = s->size - s->used;
  info->peak_used = s->peak;
  info->largest_free_block = s->free_mask ? (size_t)1 << (63 - __builtin_clzll(s->free_mask)) : 0;
  for (unsigned q = 0; q < QORDERS; q++)
    if (s->qn[q] && ((size_t)1 << (q + GSHIFT)) > info->largest_free_block) info->largest_free_block = (size_t)1 << (q + GSHIFT);
  info->free_blocks = s->free_blocks + s->qcount;
  info->allocs = s->allocs;
  info->frees = s->frees;
  info->oom_count = s->ooms;
  info->expand_count = s->expands;
  space_unlock(s);
  return 0;
}

/* fork.c's hook (part 2 of the lock order): ms_space_create_in's lock, the registry's lock, then the lock of every
   live thread-safe space (the process space among them), so the child never inherits a half-done operation nor a held lock (ms_space_info,
   check, walk, expand, shrink and destroy take registry_lock). No code holds a space's lock and takes registry_lock
   or another space's lock; a space's lock is held across ms_pages_* (part 7). The child re-creates each mutex (a
   priority-inheriting mutex records its owner's thread id, which changes in the child). */
static void init_lock(ms_space_t *s);
MSI_COLD void msi_fork_spaces(msi_fork_phase_t phase, bool locking) {
  if (!locking) return;
  if (phase == MSI_FORK_PREPARE) {
    msi_lock(&create_in_lock);
    registry_enter(); /* (its mark held across the fork: a handler's statistics then skip the spaces) */
    for (ms_space_t *s = registry; s; s = s->next) space_lock(s);
  } else if (phase == MSI_FORK_PARENT) {
    for (ms_space_t *s = registry; s; s = s->next) space_unlock(s);
    registry_leave();
    msi_unlock(&create_in_lock);
  } else {
    registry_here = 0;
    for (ms_space_t *s = registry; s; s = s->next)
      if (s->lock_on) init_lock(s);
    msi_lock_reset(&registry_lock);
    msi_lock_reset(&create_in_lock);
  }
}

void msi_space_range(const ms_space_t *s, uintptr_t *lo, size_t *span) {
  *lo = (uintptr_t)s->data;
  *span = s->reserved;
}

/* ------------------------------------------------------------------------------------------------ */
/* walk and check                                                                                     */
/* ------------------------------------------------------------------------------------------------ */
/* order of the free block starting at off, 0 when none */
static unsigned free_order_at(const ms_space_t *s, size_t off) {
  for (unsigned k = GSHIFT; k <= s->top; k++) {
    if (off & (((size_t)1 << k) - 1)) break;
    if (hbm_test(s, k, off >> k)) return k;
  }
  return 0;
}

typedef int (*visit_fn)(const void *, size_t, int, void *);

/* walks every block of the active regions; returns the visitor's non-zero value, or -EFAULT-like codes < 0
   for an inconsistency (reported through *why) */
static int walk_blocks(const ms_space_t *s, visit_fn visit, void *arg, const char **why, size_t *bad_off) {
  for (int i = 0; i < s->nregions; i++) {
    const region_t *r = &s->regions[i];
    if (r->state != REGION_ACTIVE) continue;
    for (size_t off = r->start; off < r->start + r->size;) {
      unsigned k = map_get(s, off);
      int used = k != 0;
      if (!k) k = cached_at(s, off); /* a cached block: free */
      if (!k) k = free_order_at(s, off);
      if (!k) { *why = "a granule belongs to no block"; *bad_off = off; return -1; }
      if (off + ((size_t)1 << k) > r->start + r->size) { *why = "a block crosses its region's end"; *bad_off = off; return -1; }
      if (visit) {
        int v = visit(s->data + off, (size_t)1 << k, used, arg);
        if (v) return v;
      }
      off += (size_t)1 << k;
    }
  }
  return 0;
}

int ms_space_walk(const ms_space_t *cs, int (*visit)(const void *, size_t, int, void *), void *arg) {
  ms_space_t *s = (ms_space_t *)cs;
  if (!visit) return errno = EINVAL;
  if (!live(s, "ms_space_walk")) return EINVAL;
  space_lock(s);
  const char *why = NULL;
  size_t bad = 0;
  int r = walk_blocks(s, visit, arg, &why, &bad);
  space_unlock(s);
  if (r < 0) {
    msi_error("space %s: walk stopped at offset %zu: %s", space_name(s), bad, why);
    return errno = EFAULT;
  }
  return r;
}

typedef struct { const ms_space_t *s; size_t used, free_blocks, nalloc, cached; const char *why; size_t bad; } check_t;

static int check_visit(const void *block, size_t size, int used, void *arg) {
  check_t *c = arg;
  const ms_space_t *s = c->s;
  size_t off = (size_t)((const char *)block - s->data);
  unsigned k = (unsigned)__builtin_ctzll(size);
  if (off & (size - 1)) { c->why = "a block is not aligned to its size"; c->bad = off; return 1; }
  if (used) {
    c->used += size;
    c->nalloc++;
    if (free_order_at(s, off)) { c->why = "an allocated block is also marked free"; c->bad = off; return 1; }
  } else if (cached_at(s, off) == k) {
    c->cached++;
    if (free_order_at(s, off)) { c->why = "a cached block is also in the free bitmaps"; c->bad = off; return 1; }
  } else {
    c->free_blocks++;
    /* no two free buddies inside one region: they would have merged */
    size_t buddy = off ^ size;
    if (k < s->top && hbm_test(s, k, buddy >> k) && same_region(s, off & ~size, (off | size) + size - 1)) {
      c->why = "two free buddies were not merged"; c->bad = off; return 1;
    }
  }
  return 0;
}

int ms_space_check(const ms_space_t *cs) {
  ms_space_t *s = (ms_space_t *)cs;
  if (!live(s, "ms_space_check")) return EINVAL;
  space_lock(s);
  const char *why = NULL;
  size_t bad = 0;
  /* 1. every summary bit matches its child word; the order mask matches the top words */
  for (unsigned k = GSHIFT; k <= s->top && !why; k++) {
    const hbm_t *h = &s->fb[k];
    if (h->leaf != LVL(s, k, h->depth - 1)) { why = "a leaf pointer is wrong"; bad = k; }
    if (((s->free_mask >> k) & 1) != (LVL(s, k, 0)[0] != 0)) { why = "the order mask disagrees with a bitmap"; bad = k; }
    for (uint32_t l = 0; l + 1 < h->depth && !why; l++) {
      uint64_t nw = positions(s, k); /* words at level l+1 */
      for (uint32_t d = h->depth; d > l + 1; d--) nw = (nw + 63) >> 6;
      for (uint64_t i = 0; i < nw; i++) {
        bool child = LVL(s, k, l + 1)[i] != 0;
        bool summary = (LVL(s, k, l)[i >> 6] >> (i & 63)) & 1;
        if (child != summary) { why = "a summary bit disagrees with its word"; bad = k; break; }
      }
    }
    /* no free bit beyond the positions or outside the active regions is checked by the walk count below */
  }
  if (s->free_mask & ((1ull << GSHIFT) - 1)) why = "the order mask has orders below the minimum";
  /* 2. walk: every granule of every active region is in exactly one block */
  check_t c = {s, 0, 0, 0, 0, NULL, 0};
  if (!why) {
    int r = walk_blocks(s, check_visit, &c, &why, &bad);
    if (r > 0) { why = c.why; bad = c.bad; }
  }
  /* 3. counters; free bits only where the walk found free blocks; map entries only at allocated blocks */
  if (!why && c.used != s->used) why = "the used counter disagrees with the blocks";
  if (!why && c.free_blocks != s->free_blocks) why = "free bits exist outside the blocks (or the free count is wrong)";
  if (!why) {
    uint64_t bits = 0;
    for (unsigned k = GSHIFT; k <= s->top; k++) {
      const hbm_t *h = &s->fb[k];
      /* one step per set bit (free bits are few): no __builtin_popcountll, which without the popcnt
         instruction calls libgcc's __popcountdi2 for every word and leaves the static library needing it */
      for (uint64_t i = 0; i < (positions(s, k) + 63) / 64; i++)
        for (uint64_t w = h->leaf[i]; w; w &= w - 1) bits++;
    }
    if (bits != s->free_blocks) why = "stray free bits";
  }
  if (!why) {
    size_t entries = 0;
    for (int i = 0; i < s->nregions; i++) {
      const region_t *r = &s->regions[i];
      if (r->state != REGION_ACTIVE) continue;
      for (size_t o = r->start; o < r->start + r->size; o += (size_t)1 << GSHIFT) entries += nib_get(s, o) != 0;
      for (size_t o = r->start; o < r->start + r->size; o += (size_t)1 << LSHIFT) entries += s->lmap[o >> LSHIFT] != 0;
    }
    if (entries != c.nalloc + c.cached) why = "stray allocation-map entries";
  }
  if (!why) { /* the cache stacks hold exactly the cached blocks */
    size_t listed = 0, bytes = 0;
    for (unsigned q = 0; q < QORDERS && !why; q++) {
      if (((s->qmask >> q) & 1) != (s->qn[q] != 0)) why = "the block cache mask is wrong";
      if (s->qn[q] > s->qcap) why = "a block cache stack overflows";
      for (unsigned i = 0; i < s->qn[q] && !why; i++) {
        listed++;
        bytes += (size_t)1 << (q + GSHIFT);
        if (cached_at(s, s->qoff[q * s->qcap + i]) != q + GSHIFT) why = "a cache entry does not point at a cached block";
      }
    }
    if (!why && (listed != c.cached || listed != s->qcount || listed > QMAX)) why = "the block cache stacks are inconsistent";
    if (!why && bytes != s->qbytes) why = "the block cache byte count is wrong";
  }
  if (!why && s->used > s->size) why = "used exceeds size";
  if (!why && s->peak < s->used) why = "peak below used";
  space_unlock(s);
  if (why) {
    msi_error("space %s: invariant broken: %s (at %zu)", space_name(s), why, bad);
    return errno = EFAULT;
  }
  return 0;
}
