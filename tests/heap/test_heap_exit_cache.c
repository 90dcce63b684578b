/* SPDX-License-Identifier: MIT */
/* test_heap_exit_cache.c: the span cache of a thread that ends goes to the global cache at its exit (heap.c
   heap_thread_exit), while its heap is otherwise kept whole for the next new thread. A live thread needing a span
   then takes one of those empty spans instead of fresh chunks: a program whose threads come and go (larson, a
   server's pool) does not keep a dead thread's empty spans beside the ones its live threads carve. Run with a long
   MEMSPACE_PURGE_DELAY (CMakeLists.txt): the maintenance thread runs (the exit keeps the heap whole) and no purge
   pass flushes the orphan or gives a cached span back meanwhile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include "heap.h"

#define SIZE_DEAD 1700 /* the ending thread's class */
#define SIZE_LIVE 1000 /* the live thread's: another class of spans as long */
#define SPANS 6
#define MAX_BLOCKS 4096

static msi_span_t *dead_spans[SPANS * 8];
static int n_dead;
static void *blocks[MAX_BLOCKS];

/* a thread with a heap: its exit starts the maintenance thread */
static void *first(void *arg) {
  ms_free(ms_malloc(100));
  return arg;
}

/* fills SPANS spans of its class, frees every block (the spans it does not allocate from go to its span cache) */
static void *fill_and_end(void *arg) {
  (void)arg;
  int n = 0;
  while (n < MAX_BLOCKS) {
    blocks[n] = ms_malloc(SIZE_DEAD);
    msi_span_t *s = msi_heap_span_of(blocks[n++]);
    bool known = false;
    for (int i = 0; i < n_dead; i++) known |= dead_spans[i] == s;
    if (!known) {
      if (n_dead == SPANS + 1) { ms_free(blocks[--n]); break; } /* SPANS full spans, the last one current */
      dead_spans[n_dead++] = s;
    }
  }
  for (int i = 0; i < n; i++) ms_free(blocks[i]);
  return NULL;
}

static void ended_thread_cache_serves_live_thread(void **state) {
  (void)state;
  unsigned dead = msi_heap_class_of(SIZE_DEAD), live = msi_heap_class_of(SIZE_LIVE);
  assert_int_not_equal(dead, live);
  assert_int_equal(msi_heap_class_chunks[dead], msi_heap_class_chunks[live]);
  ms_free(ms_malloc(SIZE_DEAD)); /* this thread's heap, before the other thread's ends (no adoption) */
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, first, NULL), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  for (int i = 0; i < 100 && !msi_maint_running(); i++) {
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (!msi_maint_running()) ms_skip_refused(0, "no maintenance thread: an exit flushes its heap at once");
  assert_int_equal(pthread_create(&t, NULL, fill_and_end, NULL), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(n_dead, SPANS + 1);

  /* this thread's blocks of another class, on spans of the same length: the ended thread's cached spans first */
  int taken = 0, n = 0;
  for (; n < MAX_BLOCKS && taken == 0; n++) {
    blocks[n] = ms_malloc(SIZE_LIVE);
    assert_non_null(blocks[n]);
    msi_span_t *s = msi_heap_span_of(blocks[n]);
    for (int i = 0; i < n_dead; i++) taken += dead_spans[i] == s;
  }
  print_message("a span of the ended thread after %d blocks\n", n);
  assert_true(taken > 0);
  for (int i = 0; i < n; i++) ms_free(blocks[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ended_thread_cache_serves_live_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
