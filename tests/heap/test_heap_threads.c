/* Multi-threaded heap tests: cross-thread frees under thread churn, 10,000 short-lived threads without growth,
   and memory going back to the OS once the program is idle (maintenance thread, no call from the program). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "heap.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#define SLOTS 2048
static _Atomic(uintptr_t) slots[SLOTS];

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* each block carries its size and a pattern: a corrupted or shared block is caught at free time */
static void *make_block(uint64_t *seed) {
  uint64_t r = rnd(seed);
  size_t sz = (r & 15) == 0 ? 40000 + (r >> 40) % 200000 : 16 + (r >> 40) % 3000;
  unsigned char *p = ms_malloc(sz);
  assert_non_null(p);
  memcpy(p, &sz, sizeof sz);
  memset(p + sizeof sz, (int)(sz & 0xff), sz - sizeof sz);
  return p;
}
static void check_free(void *v) {
  unsigned char *p = v;
  size_t sz;
  memcpy(&sz, p, sizeof sz);
  assert_true(sz >= 16 && sz < 300000);
  assert_int_equal(p[sz - 1], (unsigned char)(sz & 0xff));
  assert_int_equal(p[sizeof sz], (unsigned char)(sz & 0xff));
  ms_free(p);
}

static void *exchanger(void *arg) {
  uint64_t seed = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  int iters = SANITIZED ? 20000 : 150000;
  for (int i = 0; i < iters; i++) {
    void *p = make_block(&seed);
    uintptr_t old = atomic_exchange(&slots[rnd(&seed) % SLOTS], (uintptr_t)p);
    if (old) check_free((void *)old);
  }
  return NULL;
}

static void *short_lived(void *arg) {
  uint64_t seed = (uintptr_t)arg + 7;
  void *keep = make_block(&seed);
  for (int i = 0; i < 20; i++) check_free(make_block(&seed));
  /* leave one block behind for another thread to free */
  uintptr_t old = atomic_exchange(&slots[rnd(&seed) % SLOTS], (uintptr_t)keep);
  if (old) check_free((void *)old);
  return NULL;
}

static void cross_thread_stress(void **state) {
  (void)state;
  pthread_t t[4];
  for (uintptr_t i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, exchanger, (void *)i), 0);
  for (uintptr_t i = 0; i < (SANITIZED ? 200u : 2000u); i++) {
    pthread_t c;
    assert_int_equal(pthread_create(&c, NULL, short_lived, (void *)i), 0);
    pthread_join(c, NULL);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < SLOTS; i++) {
    uintptr_t p = atomic_exchange(&slots[i], 0);
    if (p) check_free((void *)p);
  }
}

static void *tiny_thread(void *arg) {
  void *a = ms_malloc(64 + (uintptr_t)arg % 1000), *b = ms_malloc(20000), *c = ms_malloc(100000);
  memset(a, 1, 64);
  ms_free(b);
  ms_free(c);
  return a; /* freed by the main thread: a cross-thread free into an exited thread's heap */
}

static void ten_thousand_threads(void **state) {
  (void)state;
  int n = SANITIZED ? 1000 : 10000;
  ms_stats_t before, after;
  for (int i = 0; i < 200; i++) { /* warm up: the heaps and caches reach their steady state */
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, tiny_thread, (void *)(uintptr_t)i);
    pthread_join(t, &r);
    ms_free(r);
  }
  ms_stats_get(&before, sizeof before);
  for (int i = 0; i < n; i += 4) {
    pthread_t t[4];
    void *r;
    for (int j = 0; j < 4; j++) assert_int_equal(pthread_create(&t[j], NULL, tiny_thread, (void *)(uintptr_t)(i + j)), 0);
    for (int j = 0; j < 4; j++) {
      pthread_join(t[j], &r);
      ms_free(r);
    }
  }
  ms_stats_get(&after, sizeof after);
  /* thread caches are reused, not leaked: threads back to where they were, memory bounded */
  assert_true(after.heap_threads <= before.heap_threads + 1);
  assert_true(after.heap_mapped_bytes <= before.heap_mapped_bytes + 32 * MSI_MiB);
}

static void *filler(void *arg) {
  void **v = arg;
  for (int i = 0; i < 40000; i++) {
    v[i] = ms_malloc(16 + (size_t)(i * 7919) % 8000);
    memset(v[i], 1, 16);
  }
  return NULL;
}


/* after a workload frees everything, RSS falls without a call from the program (maintenance thread) */
static void idle_purge(void **state) {
  (void)state;
  if (SANITIZED) ms_skip_refused(0, "a sanitizer's runtime keeps its own memory resident");
  ms_heap_collect(1);
  size_t base = ms_test_rss_bytes();
  static void *v[40000];
  pthread_t t;
  pthread_create(&t, NULL, filler, v); /* a second thread: the maintenance thread may start */
  pthread_join(t, NULL);
  for (int i = 0; i < 40000; i++) {
    memset(v[i], 2, ms_usable_size(v[i]));
  }
  size_t peak = ms_test_rss_bytes() - base;
  assert_true(peak > 100 * MSI_MiB);
  for (int i = 0; i < 40000; i++) ms_free(v[i]);
  size_t now = 0;
  for (int i = 0; i < 60; i++) { /* up to 6 s on a loaded machine; normally about one purge delay */
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    now = ms_test_rss_bytes();
    if (now < base + peak / 20) break;
  }
  printf("peak %zu MiB above base, %zu MiB now above base\n", peak >> 20, (now > base ? now - base : 0) >> 20);
  assert_true(now < base + peak / 20);
}

/* A fork child of a multithreaded parent is single-threaded: no maintenance thread, so its frees purge as a
   single-threaded program's do. The counters behind that are not kept while the parent's maintenance thread runs:
   uncounted, the 256 MiB of spans the parent cached and the child reuses would take the idle count 256 MiB below
   zero, and the child would keep all of the 256 MiB it then frees. The child counts them afresh. */
static void fork_child_of_threads_purges(void **state) {
  (void)state;
  if (SANITIZED) ms_skip_refused(0, "a sanitizer's runtime keeps its own memory resident");
  enum { N = 256 * 1024 };
  void **v = ms_malloc(N * sizeof *v);
  assert_non_null(v);
  for (int i = 0; i < N; i++) { assert_non_null(v[i] = ms_malloc(1000)); memset(v[i], 1, 1000); }
  for (int i = 0; i < N; i++) ms_free(v[i]);
  if (!msi_maint_running()) { /* (idle_purge ran before: the thread runs by now, unless purging is off) */
    ms_free(v);
    ms_skip_refused(0, "the maintenance thread does not run (MEMSPACE_PURGE_DELAY=-1?)");
  }
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    for (int i = 0; i < N; i++) { v[i] = ms_malloc(1000); memset(v[i], 1, 1000); }
    size_t held = ms_test_rss_bytes();
    for (int i = 0; i < N; i++) ms_free(v[i]);
    size_t after = ms_test_rss_bytes();
    printf("child: %zu MiB held, %zu MiB after the frees\n", held >> 20, after >> 20);
    _exit(after + 150 * MSI_MiB < held ? 0 : 1);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  ms_free(v);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cross_thread_stress),
      cmocka_unit_test(ten_thousand_threads),
      cmocka_unit_test(idle_purge),
      cmocka_unit_test(fork_child_of_threads_purges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
