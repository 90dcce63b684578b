/* Deterministic spaces: property tests (random sequences of every call on many seeds, ms_space_check after
   each batch, contents verified), boundaries and bad input, full fixed space and recovery, expansion and
   shrinking, first-allocation commit, thousands of spaces, spaces in caller memory, walk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "space_test.h"

static uint64_t rng_state;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void basics(void **state) {
  (void)state;
  ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_START, 0);
  assert_non_null(s);
  ms_space_info_t in;
  assert_int_equal(ms_space_info(s, &in), 0);
  assert_int_equal(in.size, 1 << 20);
  assert_int_equal(in.used, 0);
  assert_int_equal(in.largest_free_block, 1 << 20);
  for (size_t sz = 1; sz <= (1 << 19); sz *= 2) {
    char *p = ms_space_malloc(s, sz);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % 16, 0);
    assert_true(ms_space_usable_size(s, p) >= sz);
    memset(p, 0xab, sz);
    assert_int_equal(ms_space_check(s), 0);
    ms_space_free(s, p);
  }
  assert_int_equal(ms_space_check(s), 0);
  assert_int_equal(ms_space_info(s, &in), 0);
  assert_int_equal(in.used, 0);
  assert_true(in.free_blocks >= 1); /* small freed blocks may wait in the small-block cache */
  assert_int_equal(ms_space_shrink(s), 0); /* returns the cache to the buddy system: all merged */
  assert_int_equal(ms_space_info(s, &in), 0);
  assert_int_equal(in.free_blocks, 1);
  assert_int_equal(in.allocs, 20);
  assert_int_equal(in.frees, 20);
  /* the whole space in one block */
  void *all = ms_space_malloc(s, 1 << 20);
  assert_non_null(all);
  assert_null(ms_space_malloc(s, 16));
  assert_int_equal(errno, ENOMEM);
  ms_space_free(s, all);
  ms_space_destroy(s);
}

/* an expand step larger than the room a space reserves for expansions (64 GiB, less near the largest space,
   64 TiB) could never be taken, every automatic expansion would fail: refused at creation with EINVAL */
static void expand_step_never_possible(void **state) {
  (void)state;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 1 << 20;
  c.numa_node = -1;
  c.at = MS_SPACE_AT_FIRSTALLOC; /* nothing committed: the valid case costs address space only */
  const size_t bad[] = {(size_t)1 << 63, SIZE_MAX, SIZE_MAX - 5, ((size_t)64 << 30) + 1, (size_t)1 << 40};
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    c.expand_size = bad[i];
    errno = 0;
    ms_space_t *s = ms_space_create(&c);
    if (s) ms_space_destroy(s);
    printf("expand %zu: %s\n", bad[i], s ? "created" : strerror(errno));
    assert_null(s);
    assert_int_equal(errno, EINVAL);
  }
  c.expand_size = (size_t)64 << 30; /* the largest step: one expansion fits */
  ms_space_t *s = ms_space_create(&c);
  assert_non_null(s);
  ms_space_destroy(s);
  c.initial_size = (size_t)1 << 46; /* the largest space: no room to expand at all */
  c.expand_size = 1 << 20;
  errno = 0;
  assert_null(ms_space_create(&c));
  assert_int_equal(errno, EINVAL);
}

/* a reserve above 16 GiB: the bitmaps of the smallest orders are 6 levels deep, their leaves kept outside the
   orders' one-line descriptors (space.c, LVL); allocation, free, merging and the invariants hold there too */
static void deep_bitmaps(void **state) {
  (void)state;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 1 << 20;
  c.expand_size = (size_t)1 << 30; /* reserve: 1 MiB + 63 GiB of address space */
  c.numa_node = -1;
  c.at = MS_SPACE_AT_START;
  ms_space_t *s = ms_space_create(&c);
  assert_non_null(s);
  static void *p[2000];
  for (int i = 0; i < 2000; i++) assert_non_null(p[i] = ms_space_malloc(s, i % 3 ? 16 : 48));
  for (int i = 0; i < 2000; i += 2) ms_space_free(s, p[i]);
  assert_int_equal(ms_space_check(s), 0);
  for (int i = 0; i < 2000; i += 2) assert_non_null(p[i] = ms_space_malloc(s, 32));
  for (int i = 0; i < 2000; i++) ms_space_free(s, p[i]);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_shrink(s);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
}

/* a free the space reports and ignores (the default build): errno EINVAL */
static void free_refused(ms_space_t *s, void *p) {
  errno = 0;
  ms_space_free(s, p);
  assert_int_equal(errno, EINVAL);
}

static void bad_input(void **state) {
  (void)state;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  errno = 0;
  assert_null(ms_space_create(NULL));
  assert_int_equal(errno, EINVAL);
  assert_null(ms_space_create(&c)); /* initial 0 */
  assert_int_equal(errno, EINVAL);
  c.initial_size = 1 << 20;
  c.numa_node = -1;
  c.reserved[2] = 1;
  assert_null(ms_space_create(&c));
  assert_int_equal(errno, EINVAL);
  c.reserved[2] = 0;
  c.flags = 0x100;
  assert_null(ms_space_create(&c));
  assert_int_equal(errno, EINVAL);
  c.flags = 0;
  c.at = (ms_space_at_t)7;
  assert_null(ms_space_create(&c));
  assert_int_equal(errno, EINVAL);
  c.at = MS_SPACE_AT_START;
  c.initial_size = SIZE_MAX - 5;
  assert_null(ms_space_create(&c));
  assert_int_equal(errno, ENOMEM);

  ms_space_t *s = make(256 << 10, 0, MS_SPACE_AT_START, 0);
  assert_non_null(s);
  errno = 0;
  assert_null(ms_space_malloc(NULL, 16));
  assert_int_equal(errno, EINVAL);
  assert_null(ms_space_malloc(s, 0));
  assert_int_equal(errno, EINVAL);
  assert_null(ms_space_malloc(s, SIZE_MAX));
  assert_int_equal(errno, ENOMEM);
  assert_null(ms_space_malloc(s, SIZE_MAX / 2 + 1));
  assert_int_equal(errno, ENOMEM);
  assert_null(ms_space_calloc(s, SIZE_MAX / 2, 3));
  assert_int_equal(errno, ENOMEM);
  assert_null(ms_space_aligned_alloc(s, 24, 16));
  assert_int_equal(errno, EINVAL);
  assert_null(ms_space_aligned_alloc(s, 0, 16));
  assert_int_equal(errno, EINVAL);
  assert_null(ms_space_realloc(s, NULL, SIZE_MAX));
  assert_int_equal(errno, ENOMEM);
  assert_int_equal(ms_space_info(s, NULL), EINVAL);
  assert_int_equal(ms_space_info(NULL, NULL), EINVAL);
  assert_int_equal(ms_space_walk(s, NULL, NULL), EINVAL);
  assert_int_equal(ms_space_expand(NULL, 10), EINVAL);
  assert_int_equal(ms_space_shrink(NULL), 0);
  assert_int_equal(ms_space_usable_size(s, NULL), 0);
  ms_space_free(s, NULL);   /* ignored */
  ms_space_destroy(NULL);   /* ignored */
  /* foreign, interior and double frees are detected (default build: reported and ignored; debug and secure builds
     abort: test_space_death) */
#if (defined(MEMSPACE_DEBUG) && MEMSPACE_DEBUG) || (defined(MEMSPACE_SECURE_BUILD) && MEMSPACE_SECURE_BUILD)
  ms_space_destroy(s);
  return;
#endif
  char local[64];
  free_refused(s, local);
  char *p = ms_space_malloc(s, 100);
  assert_non_null(p);
  free_refused(s, p + 16);
  ms_space_free(s, p);
  free_refused(s, p);
  assert_int_equal(ms_space_usable_size(s, p), 0);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_info_t in;
  ms_space_info(s, &in);
  assert_int_equal(in.used, 0);
  ms_space_destroy(s);
}

/* a block of 16 B..1 KiB starting on a 2 KiB boundary (its allocation byte is 0, its nibble holds the order) is
   freed like any other small block, with the lock and without (the lock-free path reads the byte first): into the
   block cache (the next malloc of its size returns it), a second free and an interior pointer detected (default
   build: reported and ignored; debug and secure builds abort: test_space_death) */
static void small_block_on_2k_boundary(void **state) {
  (void)state;
  for (unsigned flags = 0; flags <= MS_SPACE_THREAD_SAFE; flags += MS_SPACE_THREAD_SAFE)
    for (size_t size = 16; size <= 1024; size *= 2) {
      ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_START, flags);
      assert_non_null(s);
      char *p = ms_space_malloc(s, size), *q = ms_space_malloc(s, size); /* the lowest block, then its buddy */
      assert_non_null(p);
      assert_non_null(q);
      assert_int_equal((uintptr_t)p % 2048, 0);
      ms_space_info_t in;
      ms_space_free(s, p);
      assert_int_equal(ms_space_info(s, &in), 0);
      assert_int_equal(in.used, size);
      assert_int_equal(in.frees, 1);
      assert_int_equal(ms_space_check(s), 0);
      assert_ptr_equal(ms_space_malloc(s, size), p); /* from the block cache */
#if !((defined(MEMSPACE_DEBUG) && MEMSPACE_DEBUG) || (defined(MEMSPACE_SECURE_BUILD) && MEMSPACE_SECURE_BUILD))
      if (size > 16) free_refused(s, p + 16); /* its second granule (at 16 B, that is q) */
      ms_space_free(s, p);
      free_refused(s, p);
      assert_int_equal(ms_space_info(s, &in), 0);
      assert_int_equal(in.frees, 2);
      assert_int_equal(in.used, size);
      assert_int_equal(ms_space_check(s), 0);
#endif
      ms_space_destroy(s);
    }
}

static void aligned(void **state) {
  (void)state;
  ms_space_t *s = make(4 << 20, 0, MS_SPACE_AT_START, 0);
  assert_non_null(s);
  void *ps[64];
  int n = 0;
  for (size_t a = 1; a <= (1 << 20); a *= 2) {
    void *p = ms_space_aligned_alloc(s, a, 24);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % a, 0);
    ps[n++] = p;
  }
  assert_int_equal(ms_space_check(s), 0);
  for (int i = 0; i < n; i++) ms_space_free(s, ps[i]);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
}

static void realloc_in_place(void **state) {
  (void)state;
  ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_START, 0);
  char *p = ms_space_malloc(s, 100); /* 128-byte block at offset 0: its buddies are free */
  assert_non_null(p);
  memset(p, 7, 100);
  char *q = ms_space_realloc(s, p, 4000);
  assert_ptr_equal(q, p); /* grown in place */
  for (int i = 0; i < 100; i++) assert_int_equal(q[i], 7);
  char *r = ms_space_malloc(s, 16); /* right after it */
  assert_non_null(r);
  char *q2 = ms_space_realloc(s, q, 20);
  assert_ptr_equal(q2, q); /* shrunk in place */
  assert_int_equal(ms_space_usable_size(s, q2), 32);
  assert_int_equal(ms_space_check(s), 0);
  char *q3 = ms_space_realloc(s, q2, 100000); /* must move or grow: contents kept */
  assert_non_null(q3);
  for (int i = 0; i < 20; i++) assert_int_equal(q3[i], 7);
  assert_null(ms_space_realloc(s, q3, 0)); /* size 0 frees */
  ms_space_free(s, r);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_shrink(s);
  ms_space_info_t in;
  ms_space_info(s, &in);
  assert_int_equal(in.used, 0);
  assert_int_equal(in.free_blocks, 1);
  ms_space_destroy(s);
}

/* ---- property test ---- */
typedef struct { unsigned char *p; size_t size; unsigned char tag; } live_t;

static void fill(live_t *l) { for (size_t i = 0; i < l->size; i++) l->p[i] = (unsigned char)(l->tag + i * 7); }
static void verify(const live_t *l) {
  for (size_t i = 0; i < l->size; i++)
    if (l->p[i] != (unsigned char)(l->tag + i * 7)) fail_msg("block %p (size %zu) corrupted at byte %zu", (void *)l->p, l->size, i);
}

static size_t rand_size(void) {
  unsigned bits = (unsigned)(rnd() % 17); /* log-uniform 1 .. 128 KiB */
  size_t sz = ((size_t)1 << bits) + rnd() % ((size_t)1 << bits);
  return sz ? sz : 1;
}

static void property_run(ms_space_t *s, uint64_t seed, int ops, bool expanding) {
  enum { MAXLIVE = 512 };
  static live_t live[MAXLIVE];
  int n = 0;
  rng_state = seed;
  size_t expect_used = 0;
  for (int op = 0; op < ops; op++) {
    unsigned what = (unsigned)(rnd() % 10);
    if (what < 4 && n < MAXLIVE) {
      size_t sz = rand_size();
      unsigned char *p;
      unsigned kind = (unsigned)(rnd() % 3);
      if (kind == 0) p = ms_space_malloc(s, sz);
      else if (kind == 1) p = ms_space_calloc(s, 1, sz);
      else p = ms_space_aligned_alloc(s, (size_t)1 << (rnd() % 13), sz);
      if (!p) { assert_int_equal(errno, ENOMEM); if (expanding) fail_msg("expanding space ran out"); continue; }
      if (kind == 1) for (size_t i = 0; i < sz; i++) assert_int_equal(p[i], 0);
      assert_true(ms_space_usable_size(s, p) >= sz);
      live[n] = (live_t){p, sz, (unsigned char)rnd()};
      fill(&live[n]);
      expect_used += ms_space_usable_size(s, p);
      n++;
    } else if (what < 7 && n > 0) {
      int i = (int)(rnd() % (unsigned)n);
      verify(&live[i]);
      expect_used -= ms_space_usable_size(s, live[i].p);
      ms_space_free(s, live[i].p);
      live[i] = live[--n];
    } else if (what < 9 && n > 0) {
      int i = (int)(rnd() % (unsigned)n);
      verify(&live[i]);
      size_t old = ms_space_usable_size(s, live[i].p);
      size_t sz = rand_size();
      unsigned char *q = ms_space_realloc(s, live[i].p, sz);
      if (!q) { assert_int_equal(errno, ENOMEM); verify(&live[i]); continue; }
      size_t keep = sz < live[i].size ? sz : live[i].size;
      for (size_t b = 0; b < keep; b++) assert_int_equal(q[b], (unsigned char)(live[i].tag + b * 7));
      expect_used += ms_space_usable_size(s, q) - old;
      live[i].p = q;
      live[i].size = sz;
      fill(&live[i]);
    } else {
      ms_space_info_t in;
      assert_int_equal(ms_space_info(s, &in), 0);
      assert_int_equal(in.used, expect_used);
      assert_true(in.peak_used >= in.used);
      assert_true(in.free == in.size - in.used);
    }
    if (op % 256 == 255) {
      assert_int_equal(ms_space_check(s), 0);
      for (int i = 0; i < n; i++) verify(&live[i]);
    }
  }
  for (int i = 0; i < n; i++) { verify(&live[i]); ms_space_free(s, live[i].p); }
  assert_int_equal(ms_space_check(s), 0);
  ms_space_info_t in;
  ms_space_info(s, &in);
  assert_int_equal(in.used, 0);
}

static void property_fixed(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 12; seed++) {
    ms_space_t *s = make(seed % 2 ? 8 << 20 : 3 << 20, 0, seed % 3 ? MS_SPACE_AT_START : MS_SPACE_AT_FIRSTALLOC,
                         seed % 4 == 0 ? MS_SPACE_ZERO : 0);
    assert_non_null(s);
    property_run(s, seed, 6000, false);
    ms_space_destroy(s);
  }
}

static void property_expanding(void **state) {
  (void)state;
  for (uint64_t seed = 100; seed < 106; seed++) {
    ms_space_t *s = make(256 << 10, 512 << 10, MS_SPACE_AT_START, MS_SPACE_THREAD_SAFE);
    assert_non_null(s);
    property_run(s, seed, 6000, true);
    ms_space_info_t in;
    ms_space_info(s, &in);
    assert_true(in.expand_count > 0);
    size_t before = in.size;
    size_t given = ms_space_shrink(s);
    assert_true(given > 0);
    ms_space_info(s, &in);
    assert_int_equal(in.size, before - given);
    assert_int_equal(in.size, 256 << 10); /* everything free: only the initial region remains */
    assert_int_equal(ms_space_check(s), 0);
    property_run(s, seed + 1000, 2000, true); /* and it works on, expanding again */
    ms_space_destroy(s);
  }
}

static void property_caller_memory(void **state) {
  (void)state;
  size_t size = 6 << 20;
  void *mem = aligned_alloc(4096, size);
  assert_non_null(mem);
  for (uint64_t seed = 200; seed < 204; seed++) {
    ms_space_t *s = ms_space_create_in((char *)mem + seed % 3 * 8, size - 64, 0);
    assert_non_null(s);
    property_run(s, seed, 5000, false);
    assert_int_equal(ms_space_expand(s, 4096), ENOMEM);
    ms_space_destroy(s);
  }
  free(mem);
}

static void full_and_recovery(void **state) {
  (void)state;
  ms_space_t *s = make(64 << 10, 0, MS_SPACE_AT_START, 0);
  void *ps[4096];
  int n = 0;
  void *p;
  while ((p = ms_space_malloc(s, 48)) != NULL) ps[n++] = p;
  assert_int_equal(errno, ENOMEM);
  assert_int_equal(n, (64 << 10) / 64);
  ms_space_info_t in;
  ms_space_info(s, &in);
  assert_int_equal(in.oom_count, 1);
  assert_int_equal(in.free, 0);
  assert_int_equal(in.largest_free_block, 0);
  assert_null(ms_space_malloc(s, 16));
  ms_space_info(s, &in);
  assert_int_equal(in.oom_count, 2);
  assert_int_equal(in.expand_count, 0);
  /* free every other block: 64-byte holes; a 128-byte request still fails, a 64-byte one succeeds */
  for (int i = 0; i < n; i += 2) ms_space_free(s, ps[i]);
  assert_null(ms_space_malloc(s, 128));
  p = ms_space_malloc(s, 64);
  assert_non_null(p);
  ms_space_free(s, p);
  for (int i = 1; i < n; i += 2) ms_space_free(s, ps[i]);
  assert_int_equal(ms_space_check(s), 0);
  p = ms_space_malloc(s, 64 << 10); /* everything merged back */
  assert_non_null(p);
  ms_space_free(s, p);
  /* explicit expansion of a fixed space */
  assert_int_equal(ms_space_expand(s, 100000), 0);
  ms_space_info(s, &in);
  assert_int_equal(in.expand_count, 1);
  assert_true(in.size >= (64 << 10) + 100000);
  assert_int_equal(ms_space_expand(s, 1 << 20), ENOMEM); /* beyond the reserved room of a fixed space */
  p = ms_space_malloc(s, 64 << 10);
  void *q = ms_space_malloc(s, 64 << 10);
  assert_non_null(p);
  assert_non_null(q);
  ms_space_free(s, q);
  ms_space_free(s, p);
  assert_true(ms_space_shrink(s) >= 100000);
  ms_space_info(s, &in);
  assert_int_equal(in.size, 64 << 10);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
}

static void expansion_counted(void **state) {
  (void)state;
  ms_space_t *s = make(64 << 10, 64 << 10, MS_SPACE_AT_START, 0);
  void *ps[64];
  for (int i = 0; i < 8; i++) { ps[i] = ms_space_malloc(s, 60 << 10); assert_non_null(ps[i]); }
  ms_space_info_t in;
  ms_space_info(s, &in);
  assert_int_equal(in.expand_count, 7);
  assert_int_equal(in.oom_count, 0);
  assert_int_equal(in.size, 8 * (64 << 10));
  /* a request larger than the step expands by enough */
  void *big = ms_space_malloc(s, 1 << 20);
  assert_non_null(big);
  ms_space_info(s, &in);
  assert_int_equal(in.expand_count, 8);
  ms_stats_t st;
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  assert_true(st.space_expands >= 8);
  assert_true(st.space_count >= 1);
  assert_true(st.space_used_bytes >= (1 << 20));
  ms_space_free(s, big);
  for (int i = 0; i < 8; i++) ms_space_free(s, ps[i]);
  assert_int_equal(ms_space_check(s), 0);
  assert_true(ms_space_shrink(s) > 0);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
}

static void first_alloc(void **state) {
  (void)state;
  ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_FIRSTALLOC, MS_SPACE_ZERO);
  ms_space_info_t in;
  ms_space_info(s, &in);
  assert_int_equal(in.size, 0);
  unsigned char *p = ms_space_malloc(s, 1000);
  assert_non_null(p);
  for (int i = 0; i < 1000; i++) assert_int_equal(p[i], 0);
  memset(p, 0xff, 1000);
  ms_space_free(s, p);
  p = ms_space_malloc(s, 1000); /* MS_SPACE_ZERO: zeroed again */
  for (int i = 0; i < 1000; i++) assert_int_equal(p[i], 0);
  ms_space_info(s, &in);
  assert_int_equal(in.size, 1 << 20);
  assert_int_equal(in.expand_count, 0);
  ms_space_destroy(s);
}

static void thousands(void **state) {
  (void)state;
  enum { N = 3000 };
  static ms_space_t *sp[N];
  static void *blk[N];
  for (int i = 0; i < N; i++) {
    sp[i] = make(16 << 10, 0, MS_SPACE_AT_START, (i % 5 == 0) ? MS_SPACE_THREAD_SAFE : 0);
    assert_non_null(sp[i]);
    blk[i] = ms_space_malloc(sp[i], 100 + (size_t)i % 1000);
    assert_non_null(blk[i]);
    memset(blk[i], i & 0xff, 100);
  }
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  assert_true(st.space_count >= N);
  for (int i = 0; i < N; i++) {
    assert_int_equal(((unsigned char *)blk[i])[99], i & 0xff);
    ms_space_free(sp[i], blk[i]);
    assert_int_equal(ms_space_check(sp[i]), 0);
    ms_space_destroy(sp[i]);
  }
}

static int count_visit(const void *b, size_t size, int used, void *arg) {
  (void)b;
  size_t *c = arg;
  c[used] += size;
  c[2]++;
  return 0;
}
static int stop_visit(const void *b, size_t size, int used, void *arg) { (void)b, (void)size, (void)used, (void)arg; return 42; }

static void walk(void **state) {
  (void)state;
  ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_START, 0);
  void *a = ms_space_malloc(s, 100), *b = ms_space_malloc(s, 5000);
  size_t c[3] = {0, 0, 0};
  assert_int_equal(ms_space_walk(s, count_visit, c), 0);
  assert_int_equal(c[1], 128 + 8192);
  assert_int_equal(c[0] + c[1], 1 << 20);
  assert_int_equal(ms_space_walk(s, stop_visit, NULL), 42);
  ms_space_free(s, a);
  ms_space_free(s, b);
  ms_space_destroy(s);
}

/* huge pages (hugetlb when the pool has pages, else a reported fallback) and a NUMA node: the space works */
static void huge_and_numa(void **state) {
  (void)state;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 4 << 20;
  c.flags = MS_SPACE_HUGE_PAGES;
  c.numa_node = -1;
  ms_space_t *s = ms_space_create(&c);
  assert_non_null(s);
  ms_space_info_t in;
  ms_space_info(s, &in);
  assert_true(in.size >= (4 << 20));
  void *p = ms_space_malloc(s, 1 << 20);
  assert_non_null(p);
  memset(p, 1, 1 << 20);
  assert_int_equal(ms_space_expand(s, 1 << 20), ENOMEM); /* huge-page spaces are fixed */
  ms_space_free(s, p);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
  c.flags = 0;
  c.numa_node = 0; /* node 0 exists on every Linux machine */
  s = ms_space_create(&c);
  assert_non_null(s);
  p = ms_space_malloc(s, 5000);
  assert_non_null(p);
  ms_space_free(s, p);
  ms_space_destroy(s);
  c.numa_node = 4096;
  assert_null(ms_space_create(&c));
}

/* the adversarial case of the bench: many non-adjacent free blocks, then a larger request */
static void adversarial(void **state) {
  (void)state;
  ms_space_t *s = make(64 << 20, 0, MS_SPACE_AT_START, 0);
  enum { N = 20000 };
  static void *ps[N];
  for (int i = 0; i < N; i++) { ps[i] = ms_space_malloc(s, 1024); assert_non_null(ps[i]); }
  for (int i = 0; i < N; i += 2) ms_space_free(s, ps[i]);
  void *p = ms_space_malloc(s, 2048);
  assert_non_null(p);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_free(s, p);
  for (int i = 1; i < N; i += 2) ms_space_free(s, ps[i]);
  ms_space_shrink(s);
  ms_space_info_t in;
  ms_space_info(s, &in);
  assert_int_equal(in.free_blocks, 1);
  ms_space_destroy(s);
}

/* A space keeps its own copy of the config's name: a name built in a buffer the caller reuses or frees (a loop
   creating "worker%d" spaces) named the wrong space in later messages, or read freed memory. A name longer than
   the copy is cut, never read past. */
static void name_copied(void **state) {
  (void)state;
  char *name = malloc(32);
  assert_non_null(name);
  snprintf(name, 32, "worker%d", 7);
  ms_space_config_t c = {.initial_size = 1 << 16, .numa_node = -1, .name = name};
  ms_space_t *s = ms_space_create(&c);
  assert_non_null(s);
  memset(name, 'X', 31), name[31] = 0;
  free(name);
  char out[512], local = 0;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
#if (defined(MEMSPACE_DEBUG) && MEMSPACE_DEBUG) || (defined(MEMSPACE_SECURE_BUILD) && MEMSPACE_SECURE_BUILD)
  /* this build makes the bad free fatal: it runs in a child, which aborts with the message naming the space */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) dup2(fds[1], 2), ms_space_free(s, &local), _exit(0);
  close(fds[1]);
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#else
  int saved = dup(2);
  dup2(fds[1], 2);
  ms_space_free(s, &local); /* not a block of the space: reported, naming it */
  dup2(saved, 2);
  close(saved), close(fds[1]);
#endif
  ssize_t n = read(fds[0], out, sizeof out - 1);
  close(fds[0]);
  out[n > 0 ? n : 0] = 0;
  printf("%s", out);
  assert_non_null(strstr(out, "space worker7: free("));
  ms_space_destroy(s);
  char longname[300];
  memset(longname, 'n', sizeof longname - 1), longname[sizeof longname - 1] = 0;
  c.name = longname;
  s = ms_space_create(&c);
  assert_non_null(s);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(basics),          cmocka_unit_test(bad_input), cmocka_unit_test(expand_step_never_possible), cmocka_unit_test(deep_bitmaps),
      cmocka_unit_test(aligned),         cmocka_unit_test(realloc_in_place),
      cmocka_unit_test(property_fixed),  cmocka_unit_test(property_expanding),
      cmocka_unit_test(property_caller_memory), cmocka_unit_test(full_and_recovery),
      cmocka_unit_test(expansion_counted), cmocka_unit_test(first_alloc),
      cmocka_unit_test(thousands),       cmocka_unit_test(walk),
      cmocka_unit_test(adversarial),     cmocka_unit_test(huge_and_numa), cmocka_unit_test(name_copied),
      cmocka_unit_test(small_block_on_2k_boundary),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
