/* A seeded random sequence of allocation calls on four spaces at once (fixed and expanding, MS_SPACE_ZERO, created
   MS_SPACE_AT_FIRSTALLOC), with the calls a caller gets wrong mixed in (free and realloc of a block of another
   space). Every block's bytes are checked before each use; every few thousand calls ms_space_check must pass and
   ms_space_walk, ms_space_info and the test's own list of live blocks must agree: the same used bytes and block
   count, blocks in address order tiling the committed size, each a power of two aligned to its size (up to
   4 KiB). MS_FUZZ_SEED picks another seed (the failing one is printed), MS_FUZZ_OPS the length. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

enum { SPACES = 4, SLOTS = 2048, CHECK_EVERY = 4000 };
typedef struct { unsigned char *p; size_t n; unsigned char tag; int sp; } live_t;
static live_t live[SLOTS];
static ms_space_t *sp[SPACES];
static uint64_t rng;
static uint64_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

typedef struct { size_t used, free, nused; int bad; const char *last; size_t last_size; } walk_t;
static int visit(const void *block, size_t size, int used, void *arg) {
  walk_t *w = arg;
  const char *b = block;
  if (w->last && b < w->last + w->last_size) w->bad = 1; /* not in address order, or overlapping (regions may
                                                            leave gaps between them) */
  if (size & (size - 1)) w->bad = 2;
  if ((uintptr_t)b % (size > 4096 ? 4096 : size)) w->bad = 3;
  w->last = b, w->last_size = size;
  if (used) w->used += size, w->nused++;
  else w->free += size;
  return w->bad ? 1 : 0;
}

/* debug and secure builds make a free or realloc through the wrong space fatal (test_space_death checks that
   abort): the misuse calls run only in the default build, after the same random draws, so a seed replays the same
   operations in every build */
#if (defined(MEMSPACE_DEBUG) && MEMSPACE_DEBUG) || (defined(MEMSPACE_SECURE_BUILD) && MEMSPACE_SECURE_BUILD)
#define MISUSE_REPORTED 0
#else
#define MISUSE_REPORTED 1
#endif

/* the misuse reports go to /dev/null (thousands of lines otherwise); stderr is back for everything else */
static void quiet(bool on) {
  static int saved = -1;
  if (on) {
    int null = open("/dev/null", O_WRONLY);
    saved = dup(2);
    dup2(null, 2);
    close(null);
  } else {
    dup2(saved, 2);
    close(saved);
  }
}

static int intact(const live_t *l, size_t n) {
  for (size_t j = 0; j < n; j += 1 + n / 16)
    if (l->p[j] != l->tag) return 0;
  return n == 0 || l->p[n - 1] == l->tag;
}

static void agree(long op) {
  for (int s = 0; s < SPACES; s++) {
    if (ms_space_check(sp[s])) fail_msg("op %ld: ms_space_check of space %d fails (seed above)", op, s);
    walk_t w = {0};
    if (ms_space_walk(sp[s], visit, &w) || w.bad) fail_msg("op %ld: space %d's walk fails (%d)", op, s, w.bad);
    ms_space_info_t in;
    assert_int_equal(ms_space_info(sp[s], &in), 0);
    size_t mine = 0, count = 0;
    for (int j = 0; j < SLOTS; j++)
      if (live[j].p && live[j].sp == s) mine += ms_space_usable_size(sp[s], live[j].p), count++;
    if (w.used != in.used || w.used != mine || w.nused != count || w.used + w.free != in.size || in.free != in.size - in.used)
      fail_msg("op %ld space %d: walk used %zu free %zu blocks %zu; info size %zu used %zu free %zu; live %zu in %zu",
               op, s, w.used, w.free, w.nused, in.size, in.used, in.free, mine, count);
  }
}

static void fuzz(void **state) {
  (void)state;
  const char *e = getenv("MS_FUZZ_SEED"), *o = getenv("MS_FUZZ_OPS");
  rng = e ? strtoull(e, NULL, 0) : 0x5eed5eedull;
  long ops = o ? atol(o) : 2000000;
  if (!rng) rng = 1;
  printf("seed %llu, %ld calls\n", (unsigned long long)rng, ops);
  for (int i = 0; i < SPACES; i++) {
    ms_space_config_t c = {.initial_size = (size_t)(64 << 10) << i, .expand_size = i & 1 ? (size_t)256 << 10 : 0,
                           .numa_node = -1, .flags = i == 2 ? MS_SPACE_ZERO : 0,
                           .at = i == 3 ? MS_SPACE_AT_FIRSTALLOC : MS_SPACE_AT_START, .name = "fuzz"};
    sp[i] = ms_space_create(&c);
    assert_non_null(sp[i]);
  }
  long served = 0;
  for (long op = 0; op < ops; op++) {
    live_t *l = &live[rnd() % SLOTS];
    unsigned what = rnd() % 10;
    if (l->p) {
      if (!intact(l, l->n)) fail_msg("op %ld: a block of %zu bytes in space %d changed", op, l->n, l->sp);
      assert_true(ms_space_usable_size(sp[l->sp], l->p) >= l->n);
      int other = (l->sp + 1 + (int)(rnd() % (SPACES - 1))) % SPACES;
      assert_int_equal(ms_space_usable_size(sp[other], l->p), 0);
      if (what < 4) {
        if (what == 0 && rnd() % 16 == 0 && MISUSE_REPORTED) { /* a block of another space: reported and ignored */
          quiet(true);
          errno = 0;
          ms_space_free(sp[other], l->p);
          int err = errno;
          quiet(false);
          assert_int_equal(err, EINVAL);
        }
        ms_space_free(sp[l->sp], l->p);
        l->p = NULL;
      } else if (what < 8) {
        size_t n = 1 + rnd() % (rnd() % 4 == 0 ? 200000 : 2000);
        if (what == 4 && rnd() % 16 == 0 && MISUSE_REPORTED) { /* realloc through another space: NULL + EINVAL, the block unchanged */
          quiet(true);
          errno = 0;
          void *q = ms_space_realloc(sp[other], l->p, n);
          int err = errno;
          quiet(false);
          assert_null(q);
          assert_int_equal(err, EINVAL);
        }
        size_t old_usable = ms_space_usable_size(sp[l->sp], l->p);
        unsigned char *q = ms_space_realloc(sp[l->sp], l->p, n);
        if (!q) continue; /* full: the block stays as it was */
        size_t keep = n < l->n ? n : l->n, usable = ms_space_usable_size(sp[l->sp], q);
        l->p = q;
        if (!intact(l, keep)) fail_msg("op %ld: realloc %zu -> %zu lost the data", op, l->n, n);
        if (l->sp == 2) /* MS_SPACE_ZERO: the bytes past the old block read as zero */
          for (size_t j = old_usable; j < usable; j++)
            if (q[j]) fail_msg("op %ld: realloc growth byte %zu of %zu not zero", op, j, usable);
        l->n = n;
        memset(q, l->tag, n);
      }
    } else {
      int s = (int)(rnd() % SPACES);
      size_t n = 1 + rnd() % (rnd() % 8 == 0 ? 100000 : 1000);
      unsigned char *p;
      if (what < 3) {
        size_t align = (size_t)1 << (rnd() % 17);
        p = ms_space_aligned_alloc(sp[s], align, n);
        if (p) assert_int_equal((uintptr_t)p % align, 0);
      } else if (what < 5) {
        p = ms_space_calloc(sp[s], 1, n);
        for (size_t j = 0; p && j < n; j++)
          if (p[j]) fail_msg("op %ld: calloc byte %zu not zero", op, j);
      } else {
        p = ms_space_malloc(sp[s], n);
      }
      if (!p) continue;
      if (s == 2)
        for (size_t j = 0, u = ms_space_usable_size(sp[s], p); j < u; j++)
          if (p[j]) fail_msg("op %ld: MS_SPACE_ZERO block byte %zu of %zu not zero", op, j, u);
      *l = (live_t){p, n, (unsigned char)(rnd() | 1), s};
      memset(p, l->tag, n);
      served++;
    }
    if (op % CHECK_EVERY == 0) agree(op);
  }
  agree(ops);
  for (int s = 0; s < SPACES; s++) ms_space_shrink(sp[s]);
  agree(ops);
  for (int s = 0; s < SPACES; s++) ms_space_destroy(sp[s]);
  printf("%ld allocations served\n", served);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(fuzz)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
