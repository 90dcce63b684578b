/* SPDX-License-Identifier: MIT */
/* test_heap_global_cap.c: the global span cache. A purge pass gives back the cache beyond a quarter of the spans
   serving a class (at least 1 MiB) without waiting out the purge delay (purge.c purge, GLOBAL_KEEP_MIN): a dead
   thread's 16 MiB of empty spans, cached at its exit, do not stay resident beside the few spans in use. Run with
   MEMSPACE_PURGE_DELAY=100000 (tests/heap/CMakeLists.txt): nothing here ages out. A span entering the cache gives
   back the pages past what its last class needed (span_cache.c span_trim). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "heap.h"

enum { BLOCK = 1000, SPANS = 256 };

static void *fill_and_free(void *arg) {
  (void)arg;
  size_t n = SPANS * (MSI_HEAP_CHUNK / BLOCK);
  void **b = ms_malloc(n * sizeof *b);
  if (!b) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (!(b[i] = ms_malloc(BLOCK))) return NULL;
    memset(b[i], 1, BLOCK);
  }
  for (size_t i = 0; i < n; i++) ms_free(b[i]);
  ms_free(b);
  return arg;
}

static uint64_t idle_span_bytes(void) {
  static ms_stats_t st;
  memset(&st, 0, sizeof st);
  uint64_t idle;
  msi_heap_class_stats(&st, &idle);
  return idle;
}

static void dead_threads_spans_go_back(void **state) {
  (void)state;
  void *live = ms_malloc(100); /* the main thread's heap: one span in use */
  assert_non_null(live);
  pthread_t t;
  int token;
  void *r = NULL;
  assert_int_equal(pthread_create(&t, NULL, fill_and_free, &token), 0);
  assert_int_equal(pthread_join(t, &r), 0);
  assert_ptr_equal(r, &token);
  /* the thread's empty spans go to the global cache when its heap is flushed (at its exit, or kept whole for the
     next thread until a purge pass: here now); at least SPANS - 1 of them idle then (the maintenance thread may
     have passed already) */
  msi_heap_orphans_flush();
  msi_heap_purge(msi_heap_now_ms(), false);
  uint64_t idle = idle_span_bytes();
  print_message("idle span bytes after a purge pass: %llu\n", (unsigned long long)idle);
  assert_true(idle <= 2 * 16 * MSI_HEAP_CHUNK); /* the kept 1 MiB (and a thread cache's few) */
  ms_free(live);
}

/* A span entering the global cache gives back the pages past what its last class needed (span_cache.c span_trim): a
   class that carved little of it keeps its first page, not the pages a former class wrote there. The thread here
   fills a span with blocks of 8 KiB or more and frees them (the span goes to its thread cache, resident), then a
   class of the same span length carves 2 blocks there, and the thread exits. (Spans of 2-8 chunks, which no
   allocation of the runtime between the thread's exit and the check takes from the cache.) */
enum { RARE_N = 2, MAX_N = 80 };
static size_t wide_size, rare; /* two classes of 8 KiB or more whose spans have the same number of chunks (2-8) */
static void pick_sizes(void) {
  ms_free(ms_malloc(8192)); /* the class tables are set at the first allocation */
  for (unsigned w = msi_heap_class_of(8192); w < MSI_HEAP_CLASSES && !rare; w++)
    for (unsigned k = w + 1; k < MSI_HEAP_CLASSES && !rare && msi_heap_class_chunks[w] >= 2; k++)
      if (msi_heap_class_chunks[k] == msi_heap_class_chunks[w]) {
        wide_size = msi_heap_class_size[w] - MSI_HEAP_CANARY;
        rare = msi_heap_class_size[k] - MSI_HEAP_CANARY;
      }
  assert_true(rare > 0);
}
typedef struct { msi_span_t *span; uint32_t touched, carved; const char *err; } carved_t;

/* fills a span with blocks of wide_size bytes (until a block lands past it) and frees them: the span, no longer its
   class's current one, goes to the thread's cache with its pages resident. NULL: an allocation failed */
static msi_span_t *fill_and_free_span(void) {
  void *b[MAX_N];
  int n = 0;
  do {
    if (n == MAX_N || !(b[n] = ms_malloc(wide_size))) return NULL;
    memset(b[n], 1, wide_size);
  } while (msi_heap_span_of(b[n++]) == msi_heap_span_of(b[0]));
  msi_span_t *wide = msi_heap_span_of(b[0]);
  for (int i = 0; i < n; i++) ms_free(b[i]);
  return wide;
}

static void *carve_and_free(void *arg) {
  carved_t *c = arg;
  void *b[RARE_N];
  msi_span_t *wide = fill_and_free_span();
  c->err = "allocation failed";
  if (!wide) return NULL;
  c->err = "the emptied span is not cached";
  if (wide->state != MSI_SPAN_CACHED) return NULL;
  for (int i = 0; i < RARE_N; i++) {
    c->err = "allocation failed";
    if (!(b[i] = ms_malloc(rare))) return NULL;
    memset(b[i], 1, rare);
  }
  c->err = "the other class did not take the cached span";
  if (msi_heap_span_of(b[0]) != wide) return NULL;
  c->span = wide;
  c->touched = wide->touched;
  c->carved = (uint32_t)(msi_span_bump(wide) - wide->base);
  for (int i = 0; i < RARE_N; i++) ms_free(b[i]);
  return arg; /* the span, empty, leaves with the thread: into the global cache */
}

/* runs fn in a thread that then exits (its spans into the global cache once its heap is flushed) */
static carved_t in_thread(void *(*fn)(void *)) {
  pick_sizes();
  carved_t c = {NULL, 0, 0, "allocation failed"};
  pthread_t t;
  void *r = NULL;
  assert_int_equal(pthread_create(&t, NULL, fn, &c), 0);
  assert_int_equal(pthread_join(t, &r), 0);
  if (r != &c) fail_msg("%s", c.err);
  msi_heap_orphans_flush(); /* (a heap kept whole at the exit for the next thread: flushed now) */
  return c;
}

static void span_trimmed_in_global_cache(void **state) {
  (void)state;
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  if (ps > 4096) ms_skip_refused(0, "pages larger than 4 KiB: the first page kept is most of the span");
  carved_t c = in_thread(carve_and_free);
  msi_span_t *s = c.span;
  size_t bytes = (size_t)s->nchunks * MSI_HEAP_CHUNK;
  print_message("span of %u chunks: resident mark %u, %u carved by its last class; now state %d, mark %u\n",
                s->nchunks, c.touched, c.carved, s->state, s->touched);
  assert_true(c.touched > 16384 + c.carved); /* the span of the wide blocks, taken by the rare class */
  assert_int_equal(s->state, MSI_SPAN_CACHED);
  uintptr_t chunk = s->base & ~(MSI_HEAP_CHUNK - 1); /* (its blocks may start at a colour past it) */
  assert_int_equal(s->base + s->touched, chunk + ps);   /* the first page kept */
  static unsigned char vec[MSI_HEAP_MAX_SPAN_CHUNKS * MSI_HEAP_CHUNK / 4096];
  assert_int_equal(mincore((void *)chunk, bytes, vec), 0);
  for (size_t i = 1; i < bytes / ps; i++)
    if (vec[i] & 1) fail_msg("page %zu of the cached span resident (resident mark %u before)", i, c.touched);
  /* the rare class's blocks past the first page were linked there: the span is no longer kept, and the class
     taking it again carves it afresh instead of following links the trim zeroed */
  assert_true(c.carved > ps);
  assert_false(s->kept);
  void *b[RARE_N + 2];
  for (int i = 0; i < RARE_N + 2; i++) {
    assert_non_null(b[i] = ms_malloc(rare));
    memset(b[i], 2, rare);
  }
  for (int i = 0; i < RARE_N + 2; i++) ms_free(b[i]);
}

/* a span its last class carved whole keeps its pages in the global cache (the next thread's spans of a busy class
   are as full: trimmed, each would be faulted in again) */
static void *fill_and_exit(void *arg) {
  carved_t *c = arg;
  msi_span_t *wide = fill_and_free_span();
  if (!wide) return NULL;
  c->span = wide;
  c->touched = wide->touched;
  c->carved = (uint32_t)(msi_span_bump(wide) - wide->base);
  return arg; /* the thread's cache goes to the global cache */
}

static void busy_span_keeps_its_pages(void **state) {
  (void)state;
  carved_t c = in_thread(fill_and_exit);
  msi_span_t *s = c.span;
  assert_int_equal(s->state, MSI_SPAN_CACHED);
  assert_int_equal(c.touched, c.carved);
  assert_int_equal(s->touched, c.touched);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(span_trimmed_in_global_cache),
                                     cmocka_unit_test(busy_span_keeps_its_pages),
                                     cmocka_unit_test(dead_threads_spans_go_back)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
