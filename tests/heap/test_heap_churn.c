/* SPDX-License-Identifier: MIT */
/* test_heap_churn.c: the heaps of exited threads are reused, so threads that come and go keep the heap's memory
   bounded by the most threads alive at once: 100,000 short threads one after another end where the first
   thousand did, and rounds of 1,000 threads alive together, then exited, take no more after the first round (the
   heap descriptors, their pool, the segments). Figures after a forced collect, nothing else purging
   (MEMSPACE_PURGE_DELAY -1): the committed bytes (os_committed_bytes: segments, heap descriptors' pool) and the
   heap's mapped bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "memspace.h"
#include "ms_test.h"
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static pthread_barrier_t held, together;
/* arg non-NULL: the thread waits, its blocks allocated, until all of its round hold theirs */
static void *short_life(void *arg) {
  void *p[8];
  for (int i = 0; i < 8; i++) {
    size_t sz = (size_t)24 << i; /* 24 B to 3 KiB: mini spans and spans of their own */
    if (!(p[i] = ms_malloc(sz))) return (void *)1;
    memset(p[i], 5, sz);
  }
  if (arg) {
    pthread_barrier_wait(&held);
    pthread_barrier_wait(&together);
  }
  for (int i = 0; i < 8; i++) ms_free(p[i]);
  return NULL;
}
static pthread_attr_t small_stack;
/* (a limit on threads or pids refuses the thousandth thread: a skip, not a failure; threads waiting on a barrier
   end with the process) */
static void run(pthread_t *t, bool wait) {
  int e = pthread_create(t, &small_stack, short_life, wait ? (void *)1 : NULL);
  if (e == EAGAIN) ms_skip_refused(e, "creating a thread (a limit on threads or pids)");
  assert_int_equal(e, 0);
}
static void join(pthread_t t) {
  void *r = (void *)-1;
  assert_int_equal(pthread_join(t, &r), 0);
  assert_null(r);
}
typedef struct { uint64_t committed, mapped, threads; } figures_t;
static figures_t settled(void) {
  ms_heap_collect(1);
  ms_heap_collect(1);
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  return (figures_t){st.os_committed_bytes, st.heap_mapped_bytes, st.heap_threads};
}
static void show(const char *what, figures_t f) {
  print_message("%s: committed %llu KiB, heap mapped %llu KiB, live thread caches %llu\n", what,
                (unsigned long long)f.committed >> 10, (unsigned long long)f.mapped >> 10, (unsigned long long)f.threads);
}
#define SLACK ((uint64_t)1 << 20) /* (a segment's header pages, a descriptor pool's page: not a heap per thread) */

static void sequential_threads_stay_flat(void **state) {
  (void)state;
  enum { WARM = 1000, TOTAL = 100000 };
  for (int i = 0; i < WARM; i++) {
    pthread_t t;
    run(&t, false);
    join(t);
  }
  figures_t a = settled();
  show("after 1,000 threads", a);
  for (int i = WARM; i < TOTAL; i++) {
    pthread_t t;
    run(&t, false);
    join(t);
  }
  figures_t b = settled();
  show("after 100,000 threads", b);
  assert_true(b.committed <= a.committed + SLACK);
  assert_true(b.mapped <= a.mapped + SLACK);
  assert_true(b.threads <= 1);
}

static void bursts_of_live_threads_stay_bounded(void **state) {
  (void)state;
  enum { LIVE = 1000, ROUNDS = 4 };
  static pthread_t t[LIVE];
  figures_t first = {0, 0, 0};
  for (int r = 0; r < ROUNDS; r++) {
    assert_int_equal(pthread_barrier_init(&held, NULL, LIVE + 1), 0);
    assert_int_equal(pthread_barrier_init(&together, NULL, LIVE + 1), 0);
    for (int i = 0; i < LIVE; i++) run(&t[i], true);
    pthread_barrier_wait(&held);
    ms_stats_t st;
    ms_stats_get(&st, sizeof st);
    assert_int_equal(st.heap_threads, LIVE + 1); /* all alive together, each with its heap */
    if (r == 0) print_message("1,000 threads alive: committed %llu KiB\n", (unsigned long long)st.os_committed_bytes >> 10);
    pthread_barrier_wait(&together);
    for (int i = 0; i < LIVE; i++) join(t[i]);
    pthread_barrier_destroy(&held);
    pthread_barrier_destroy(&together);
    figures_t f = settled();
    print_message("round %d: ", r);
    show("1,000 threads exited", f);
    if (r == 0) first = f;
    else {
      assert_true(f.committed <= first.committed + SLACK);
      assert_true(f.mapped <= first.mapped + SLACK);
    }
    assert_true(f.threads <= 1);
  }
}

int main(void) {
  pthread_attr_init(&small_stack);
  pthread_attr_setstacksize(&small_stack, 128 * 1024);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sequential_threads_stay_flat),
      cmocka_unit_test(bursts_of_live_threads_stay_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
