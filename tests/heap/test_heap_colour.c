/* SPDX-License-Identifier: MIT */
/* test_heap_colour.c: span colouring (span.c span_colour). Spans start on 64 KiB chunks; a class whose chunks
   hold more than its blocks starts each span's blocks at a colour (a multiple of 64 up to that waste), so the
   first blocks of its spans, and their n-th blocks alike, do not all share the same offset in their pages (the
   same sets of a cache indexed by the low address bits). Without it SQLite's page cache (blocks of 4368 bytes,
   class 4608: 8 offsets in a page for every one of its thousands of blocks) takes far more L1 misses than under
   glibc's heap. The secure build does not colour. Aligned requests above 64 bytes still get aligned
   blocks: they take a class with a single colour. Its own process: the test makes spans by the hundred. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <stdint.h>
#include <string.h>
#include "heap.h"

enum { SPANS = 64 };

/* blocks of `size` until SPANS spans of its class have started: the number of distinct offsets in a 4 KiB page
   of their first blocks; every block stays inside its span's chunks */
static unsigned first_block_offsets(size_t size) {
  static void *keep[SPANS * 64];
  static uintptr_t firsts[SPANS];
  unsigned spans = 0, kept = 0;
  msi_span_t *last = NULL;
  while (spans < SPANS) {
    assert_true(kept < sizeof keep / sizeof keep[0]);
    void *p = keep[kept++] = ms_malloc(size);
    assert_non_null(p);
    memset(p, 1, size);
    msi_span_t *s = msi_heap_span_of(p);
    uintptr_t chunk = s->base & ~(MSI_HEAP_CHUNK - 1);
    assert_true((uintptr_t)p >= chunk && (uintptr_t)p + s->block_size <= chunk + (size_t)s->nchunks * MSI_HEAP_CHUNK);
    assert_true(((uintptr_t)p & 15) == 0);
    if (s != last) { /* a new span: its first block (a fresh span hands out its first block first) */
      bool seen = false;
      for (unsigned i = 0; i < spans; i++) seen |= firsts[i] == s->base;
      if (!seen) firsts[spans++] = s->base;
      last = s;
    }
  }
  unsigned distinct = 0;
  for (unsigned i = 0; i < SPANS; i++) {
    bool dup = false;
    for (unsigned j = 0; j < i; j++) dup |= (firsts[j] & 4095) == (firsts[i] & 4095);
    distinct += !dup;
  }
  for (unsigned i = 0; i < kept; i++) ms_free(keep[i]);
  return distinct;
}

/* SQLite's page-cache blocks (4368 bytes: class 4608, 1 KiB of waste a chunk) and a class of mid-size blocks
   (1100 bytes: class 1152) */
static void spans_start_at_several_offsets(void **state) {
  (void)state;
  msi_heap_mini_off = true; /* (normal spans: a mini span's blocks lie in chunk 0) */
  const size_t sizes[] = {4368, 1100};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    unsigned colours = msi_heap_class_colours[msi_heap_class_of(sizes[i])];
    unsigned d = first_block_offsets(sizes[i]);
    print_message("blocks of %zu bytes: first blocks of %d spans at %u offsets in their page (%u colours)\n",
                  sizes[i], SPANS, d, colours);
    if (MSI_HEAP_SECURE) {
      assert_int_equal(colours, 1);
      continue;
    }
    assert_true(colours >= 8);
    assert_true(d >= 8); /* without colouring: 1 (every span's first block at its chunk's start) */
  }
  msi_heap_mini_off = false;
}

/* every aligned request small enough for a class gets a block aligned as asked, however many spans its class has */
static void aligned_blocks_stay_aligned(void **state) {
  (void)state;
  static void *keep[4096];
  const size_t sizes[] = {1, 24, 100, 300, 1000, 1100, 3000, 4368, 7000, 12000, 20000};
  for (size_t a = 32; a <= 8192; a *= 2)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      size_t n = 0, total = 0;
      while (n < sizeof keep / sizeof keep[0] && total < ((size_t)4 << 20)) { /* several spans of the class */
        void *p = ms_aligned_alloc(a, sizes[i]);
        assert_non_null(p);
        if ((uintptr_t)p & (a - 1)) fail_msg("ms_aligned_alloc(%zu, %zu) = %p: misaligned", a, sizes[i], p);
        memset(p, 2, sizes[i]);
        keep[n++] = p;
        total += sizes[i] > a ? sizes[i] : a;
      }
      while (n) ms_free(keep[--n]);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(spans_start_at_several_offsets),
      cmocka_unit_test(aligned_blocks_stay_aligned),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
