/* SPDX-License-Identifier: MIT */
/* test_heap_mini.c: mini spans (heap.h MSI_HEAP_MINI, docs/heap.md "Mini spans"). A thread's first blocks of the
   classes up to 2 KiB come from spans of 512 bytes to 2 KiB in the tail of its segment's chunk 0, so blocks of many classes
   share pages (a span per class would take a page each). Their frees take the free slow path, which finds the mini
   span; every check of a normal block holds on them (double free, a pointer inside a block, a block never
   handed out, realloc, usable size, remote frees, statistics). A class leaves its mini span after 64 local frees
   or when it runs out, and its blocks then come from normal spans. Each case runs in a child (ms_test_in_child):
   a fresh heap, no maintenance thread. The secure build has no mini spans: the cases skip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "heap.h"
#include "ms_test.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void skip_without_minis(void) {
  if (!MSI_HEAP_MINI) ms_skip_refused(0, "the secure build has no mini spans (a guard page per span)");
}

static bool in_chunk0(const void *p) { return (((uintptr_t)p >> MSI_HEAP_CHUNK_SHIFT) & (MSI_HEAP_SEG_CHUNKS - 1)) == 0; }

/* one block of each class up to MSI_HEAP_MINI_MAX from a fresh thread: all in mini spans, in at most 10 pages
   (38.5 KiB of mini area: 5 classes of one 1 KiB span, 19 of 512 bytes, 8 of 1 KiB, 8 of 2 KiB); a span per class
   would take 40 pages */
#define NCLS MSI_HEAP_MINI_CLASSES
static uintptr_t pages_of[NCLS];
static void *one_of_each(void *arg) {
  void **b = arg;
  for (unsigned c = 0; c < NCLS; c++) {
    b[c] = ms_malloc(msi_heap_class_size[c]);
    if (b[c]) memset(b[c], 1, msi_heap_class_size[c]);
  }
  return NULL;
}
static int layout_child(void) {
  void *b[NCLS];
  pthread_t t;
  if (pthread_create(&t, NULL, one_of_each, b) != 0 || pthread_join(t, NULL) != 0) return 1;
  unsigned pages = 0;
  for (unsigned c = 0; c < NCLS; c++) {
    if (!b[c]) return 2;
    msi_span_t *s = msi_heap_span_of(b[c]);
    if (!in_chunk0(b[c]) || !msi_span_is_mini(s) || s->cls != c) return 3;
    if (ms_usable_size(b[c]) != msi_heap_class_size[c]) return 4;
    if (((uintptr_t)b[c] & 15) != 0) return 5;
    uintptr_t pg = (uintptr_t)b[c] >> 12;
    bool seen = false;
    for (unsigned i = 0; i < pages; i++) seen |= pages_of[i] == pg;
    if (!seen) pages_of[pages++] = pg;
  }
  print_message("blocks of %u classes in %u pages\n", NCLS, pages);
  if (pages > 10) return 6;
  for (unsigned c = 0; c < NCLS; c++) ms_free(b[c]); /* (a dead thread's heap: remote frees) */
  return 0;
}
static void first_blocks_share_pages(void **state) {
  (void)state;
  skip_without_minis();
  assert_int_equal(ms_test_in_child(layout_child), 0);
}

/* a 2 KiB mini span starts on a multiple of 2 KiB; the 1 KiB its alignment skips goes to the next mini span that
   fits it, not left unused (segment.c msi_heap_mini_take): blocks of 16, 2048, 32 and 48 bytes from a fresh thread
   take spans of 1, 2, 1 and 1 KiB at 0, 2, 1 and 4 KiB into the area, so the four classes lie in 5 KiB of it, and
   each block is found and freed */
static void *hole_blocks(void *arg) {
  void **b = arg;
  static const size_t sizes[] = {16, 2048, 32, 48};
  for (unsigned i = 0; i < 4; i++) {
    b[i] = ms_malloc(sizes[i]);
    if (b[i]) memset(b[i], 1, sizes[i]);
  }
  return NULL;
}
static int hole_child(void) {
  void *b[4];
  pthread_t t;
  if (pthread_create(&t, NULL, hole_blocks, b) != 0 || pthread_join(t, NULL) != 0) return 1;
  uintptr_t g[4];
  for (unsigned i = 0; i < 4; i++) {
    if (!b[i]) return 2;
    msi_span_t *s = msi_heap_span_of(b[i]);
    if (!in_chunk0(b[i]) || !msi_span_is_mini(s) || (uintptr_t)b[i] - s->base >= 2048) return 3;
    g[i] = (s->base - ((uintptr_t)b[i] & ~(MSI_HEAP_SEG_SIZE - 1)) - MSI_HEAP_MINI_BASE) / 1024;
  }
  print_message("the spans at %zu %zu %zu %zu KiB into the area\n", (size_t)g[0], (size_t)g[1], (size_t)g[2], (size_t)g[3]);
  if (g[0] != 0 || g[1] != 2 || g[2] != 1 || g[3] != 4) return 4;
  if (ms_usable_size(b[2]) != 32 || msi_heap_span_of(b[2])->block_size != 32) return 5;
  for (unsigned i = 0; i < 4; i++) ms_free(b[i]); /* (a dead thread's heap: remote frees) */
  return 0;
}
static void skipped_granule_taken(void **state) {
  (void)state;
  skip_without_minis();
  assert_int_equal(ms_test_in_child(hole_child), 0);
}

/* a loop taking and freeing a block: its class leaves the mini span after 64 local frees (each one takes the free
   slow path); the blocks live in it stay valid, and the class's next blocks come from a normal span */
static int leave_child(void) {
  void *keep = ms_malloc(48), *p = NULL;
  msi_span_t *mini = msi_heap_span_of(keep);
  if (!msi_span_is_mini(mini)) return 1;
  unsigned i;
  for (i = 0; i < 1000; i++) {
    p = ms_malloc(48);
    if (!p) return 2;
    if (!msi_span_is_mini(msi_heap_span_of(p))) break;
    ms_free(p);
  }
  if (i != 64) { fprintf(stderr, "left after %u frees\n", i); return 3; }
  if (in_chunk0(p) || msi_heap_span_of(p)->cls != mini->cls) return 4;
  if (ms_usable_size(keep) != 48) return 5;
  ms_free(p);
  ms_free(keep);
  if (msi_span_used(mini) != 0 || mini->state != MSI_SPAN_ACTIVE) return 6; /* never cached */
  return 0;
}
static void class_leaves_after_frees(void **state) {
  (void)state;
  skip_without_minis();
  assert_int_equal(ms_test_in_child(leave_child), 0);
}

/* realloc of a mini block: in place while it fits, else moved with its bytes; aligned requests stay aligned */
static int realloc_child(void) {
  char *p = ms_malloc(100);
  if (!p || !msi_span_is_mini(msi_heap_span_of(p))) return 1;
  memset(p, 7, 100);
  char *q = ms_realloc(p, 110);
  if (q != p) return 2;
  char *r = ms_realloc(q, 1500);
  if (!r || r == q || r[99] != 7 || r[0] != 7) return 3;
  if (!msi_span_is_mini(msi_heap_span_of(r))) return 4;
  ms_free(r);
  for (size_t a = 16; a <= 2048; a *= 2) {
    void *b = ms_aligned_alloc(a, a);
    if (!b || ((uintptr_t)b & (a - 1))) return 5;
    ms_free(b);
  }
  return 0;
}
static void realloc_and_alignment(void **state) {
  (void)state;
  skip_without_minis();
  assert_int_equal(ms_test_in_child(realloc_child), 0);
}

/* blocks of a mini span freed by another thread go back to it; the statistics count its blocks */
static void *free_all(void *arg) {
  void **v = arg;
  for (unsigned i = 0; i < 8; i++) ms_free(v[i]);
  return NULL;
}
static int remote_child(void) {
  void *v[8];
  for (unsigned i = 0; i < 8; i++) v[i] = ms_malloc(64);
  msi_span_t *s = msi_heap_span_of(v[0]);
  if (!msi_span_is_mini(s) || msi_span_used(s) != 8) return 1;
  ms_stats_t st;
  if (ms_stats_get(&st, sizeof st) != 0) return 2;
  if (ms_stats_class(&st, s->cls)->allocated < 8) return 3;
  pthread_t t;
  if (pthread_create(&t, NULL, free_all, v) != 0 || pthread_join(t, NULL) != 0) return 4;
  ms_heap_collect(0); /* the remote frees collected */
  if (msi_span_used(s) != 0) return 5;
  void *again = ms_malloc(64); /* the class's current span: the mini one, its blocks back */
  if (msi_heap_span_of(again) != s) return 6;
  ms_free(again);
  return 0;
}
static void remote_frees_come_back(void **state) {
  (void)state;
  skip_without_minis();
  assert_int_equal(ms_test_in_child(remote_child), 0);
}

/* a heap takes at most one mini area's worth of mini spans (MSI_HEAP_MINI_SPANS granules, docs/heap.md "Mini
   spans"), also when its spans move on to other segments, each with a mini area of its own: a thread taking the
   classes' mini spans a few classes at a time, with 4.5 MiB of normal spans between, would otherwise hold a mini
   area in each segment */
static void *spread_classes(void *arg) {
  unsigned *granules = arg;
  msi_span_t *seen[NCLS * 8];
  unsigned nseen = 0;
  for (unsigned c = 0; c < NCLS; c++) {
    for (unsigned i = 0; i < 4096 / msi_heap_class_size[c] + 1; i++) { /* (past a class's 4 KiB of mini spans) */
      void *p = ms_malloc(msi_heap_class_size[c]);
      if (!p) return NULL;
      msi_span_t *s = msi_heap_span_of(p);
      if (!msi_span_is_mini(s)) break;
      bool known = false;
      for (unsigned j = 0; j < nseen; j++) known |= seen[j] == s;
      if (!known && nseen < NCLS * 8) {
        seen[nseen++] = s;
        *granules += msi_heap_mini_granules(s->block_size);
      }
    }
    if (c % 8 == 7) /* normal spans past the segment's chunks: the heap's next spans come from another segment */
      for (unsigned i = 0; i < 600; i++)
        if (!ms_malloc(8000)) return NULL;
  }
  return arg;
}
static int bound_child(void) {
  unsigned granules = 0;
  pthread_t t;
  void *r;
  if (pthread_create(&t, NULL, spread_classes, &granules) != 0 || pthread_join(t, &r) != 0 || !r) return 1;
  print_message("one heap's mini spans: %zu KiB\n", granules * MSI_HEAP_MINI_SIZE / 1024);
  return granules <= MSI_HEAP_MINI_SPANS ? 0 : 2;
}
static void one_area_per_heap(void **state) {
  (void)state;
  skip_without_minis();
  assert_int_equal(ms_test_in_child(bound_child), 0);
}

/* ---- bad frees of mini blocks abort naming the pointer ---- */

static int double_free(void) {
  void *p = ms_malloc(32), *q = ms_malloc(32);
  fprintf(stderr, "pointer %p\n", p);
  ms_free(p);
  ms_free(p);
  ms_free(q);
  return 0;
}
static int inside_block(void) {
  char *p = ms_malloc(200);
  fprintf(stderr, "pointer %p\n", (void *)(p + 16));
  ms_free(p + 16);
  return 0;
}
static int never_allocated(void) {
  char *p = ms_malloc(200); /* its mini span carved whole: the next block is carved, never handed out */
  fprintf(stderr, "pointer %p\n", (void *)(p + msi_heap_span_of(p)->block_size));
  ms_free(p + msi_heap_span_of(p)->block_size);
  return 0;
}
static int header_pointer(void) {
  char *p = ms_malloc(200);
  char *h = (char *)((uintptr_t)p & ~(MSI_HEAP_SEG_SIZE - 1)) + 4096; /* the segment header's descriptors */
  fprintf(stderr, "pointer %p\n", (void *)h);
  ms_free(h);
  return 0;
}
static int past_minis(void) {
  char *p = ms_malloc(200); /* the mini area's first span: the granules after it belong to none */
  char *h = p + 8 * MSI_HEAP_MINI_SIZE;
  fprintf(stderr, "pointer %p\n", (void *)h);
  ms_free(h);
  return 0;
}

static void bad_frees_abort(void **state) {
  (void)state;
  skip_without_minis();
  ms_test_child_aborts(double_free, "free(): double free");
  ms_test_child_aborts(inside_block, "free(): invalid pointer");
  ms_test_child_aborts(never_allocated, "a block never allocated");
  ms_test_child_aborts(header_pointer, "free(): invalid pointer");
  ms_test_child_aborts(past_minis, "free(): invalid pointer");
}

/* a short program's blocks (blocks of 27 classes of 1 KiB mini spans, a block of 4 KiB at chunk 1, as stdio's
   buffer is) write one page of their segment's header: chunk 1's descriptor and the first 27 mini spans' share
   its first page with map[] (heap.h msi_segment_t desc[]); the next page stays untouched (mincore) */
static void *short_program(void *arg) {
  void **b = arg;
  for (unsigned c = 0; c < 27; c++) { /* (the classes up to 1 KiB: a mini span of one granule each) */
    b[c] = ms_malloc(msi_heap_class_size[c]);
    if (b[c]) memset(b[c], 1, msi_heap_class_size[c]);
  }
  b[27] = ms_malloc(4096);
  if (b[27]) memset(b[27], 1, 4096);
  return NULL;
}
static int header_child(void) {
  void *b[28];
  pthread_t t;
  if (pthread_create(&t, NULL, short_program, b) != 0 || pthread_join(t, NULL) != 0) return 1;
  for (unsigned c = 0; c < 28; c++)
    if (!b[c]) return 2;
  uintptr_t seg = (uintptr_t)b[0] & ~(MSI_HEAP_SEG_SIZE - 1);
  if (((uintptr_t)b[27] & ~(MSI_HEAP_SEG_SIZE - 1)) != seg) return 3;
  if ((((uintptr_t)b[27] >> MSI_HEAP_CHUNK_SHIFT) & (MSI_HEAP_SEG_CHUNKS - 1)) != 1) return 4; /* chunk 1's span */
  for (unsigned c = 0; c < 27; c++)
    if (!msi_span_is_mini(msi_heap_span_of(b[c]))) return 5;
  unsigned char vec[2];
  if (mincore((void *)seg, 2 * 4096, vec) != 0) return 6;
  print_message("header pages resident: first %d, second %d\n", vec[0] & 1, vec[1] & 1);
  if (!(vec[0] & 1) || (vec[1] & 1)) return 7;
  for (unsigned c = 0; c < 28; c++) ms_free(b[c]);
  return 0;
}
static void short_program_one_header_page(void **state) {
  (void)state;
  skip_without_minis();
  if (sysconf(_SC_PAGESIZE) != 4096) ms_skip_refused(0, "pages of 4 KiB only (the header's layout in pages)");
  assert_int_equal(ms_test_in_child(header_child), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(short_program_one_header_page),
      cmocka_unit_test(first_blocks_share_pages),
      cmocka_unit_test(skipped_granule_taken),
      cmocka_unit_test(class_leaves_after_frees),
      cmocka_unit_test(realloc_and_alignment),
      cmocka_unit_test(remote_frees_come_back),
      cmocka_unit_test(one_area_per_heap),
      cmocka_unit_test(bad_frees_abort),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
