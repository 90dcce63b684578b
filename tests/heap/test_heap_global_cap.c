/* SPDX-License-Identifier: MIT */
/* test_heap_global_cap.c: a purge pass gives back the global span cache beyond a quarter of the spans serving a
   class (at least 1 MiB) without waiting out the purge delay (heap.c purge, GLOBAL_KEEP_MIN): a dead thread's
   16 MiB of empty spans, cached at its exit, do not stay resident beside the few spans in use. Run with
   MEMSPACE_PURGE_DELAY=100000 (tests/heap/CMakeLists.txt): nothing here ages out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <pthread.h>
#include <string.h>
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
  /* the thread's empty spans went to the global cache at its exit: at least SPANS - 1 of them idle now (the
     maintenance thread may have passed already) */
  msi_heap_purge(msi_heap_now_ms(), false);
  uint64_t idle = idle_span_bytes();
  print_message("idle span bytes after a purge pass: %llu\n", (unsigned long long)idle);
  assert_true(idle <= 2 * 16 * MSI_HEAP_CHUNK); /* the kept 1 MiB (and a thread cache's few) */
  ms_free(live);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(dead_threads_spans_go_back)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
