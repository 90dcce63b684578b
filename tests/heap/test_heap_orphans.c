/* SPDX-License-Identifier: MIT */
/* test_heap_orphans.c: the heap of a thread that exits (thread_heap.c msi_heap_thread_exit, msi_heap_orphans_collect). With the
   maintenance thread running it stays whole for the next new thread: its current spans, partial lists and span
   cache, so a program starting a thread per task (a server's thread per connection) takes no page fault for the
   blocks its last thread used. The blocks a dead thread left live are freed later by other threads, into the heap
   kept whole, into its adopter's, or after a purge pass flushed it; a pass flushes a heap no thread took within a
   period; a forked child adopts or flushes what its parent's threads left; 10,000 thread lifetimes keep the RSS,
   the heap's mapped bytes and its heaps bounded. */
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
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "heap.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif
#if defined(__SANITIZE_THREAD__)
#define TSAN 1 /* its runtime starts no thread in the child of a multithreaded fork */
#else
#define TSAN 0
#endif

/* a request thread's allocations: SMALL blocks of 16 B-4 KiB (most under 272 B), BIG of 16-32 KiB */
enum { SMALL = 300, BIG = 4, N = SMALL + BIG };

static size_t size_of(unsigned seed, int i) {
  uint32_t r = (seed + (unsigned)i) * 2654435761u;
  if (i >= SMALL) return 16384 + (r >> 8) % 16384;
  return 16 + (r >> 8) % ((r & 3) ? 256 : 4080);
}
/* each block holds its size and a byte derived from its address: an overlap or a foreign write shows */
static void fill(void *p, size_t sz) {
  memcpy(p, &sz, sizeof sz);
  memset((char *)p + sizeof sz, (int)((uintptr_t)p >> 4 & 0xff), sz - sizeof sz);
}
static bool intact(const void *p) {
  size_t sz;
  memcpy(&sz, p, sizeof sz);
  const unsigned char *c = p;
  return sz >= 16 && sz <= 32768 && c[sizeof sz] == (unsigned char)((uintptr_t)p >> 4 & 0xff) &&
         c[sz - 1] == (unsigned char)((uintptr_t)p >> 4 & 0xff);
}

static void msleep(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}
static long thread_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

/* one run of the pattern: allocates and fills N blocks, frees them all but those at i % hand == 0 (hand 0: none
   kept), which go to out[]; faults: the page faults the thread took meanwhile */
typedef struct {
  unsigned seed, hand;
  void **out;
  size_t n_out;
  msi_heap_t *heap;
  long faults;
  bool ok;
  msi_span_t *found[MSI_HEAP_CLASSES], *left[MSI_HEAP_CLASSES]; /* held_span as the thread began and as it ended */
} run_t;
/* the span a heap keeps for a class's next block: its current span, or the empty one it set aside (spare); NULL
   for neither */
static msi_span_t *held_span(msi_heap_t *h, unsigned c) {
  if (msi_heap_current(h, c) != msi_heap_empty_span(h)) return msi_heap_current(h, c);
  return atomic_load_explicit(&h->spare[c], memory_order_relaxed);
}
static void *pattern(void *arg) {
  run_t *r = arg;
  void *p[N];
  ms_free(ms_malloc(16)); /* the thread's heap: a new one, or the one a dead thread left */
  r->heap = msi_tls_heap;
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) r->found[c] = held_span(r->heap, c);
  long f0 = thread_faults();
  r->ok = false;
  for (int i = 0; i < N; i++) {
    size_t sz = size_of(r->seed, i);
    if (!(p[i] = ms_malloc(sz))) return NULL;
    fill(p[i], sz);
  }
  for (int i = 0; i < N; i++)
    if (!intact(p[i])) return NULL;
  r->n_out = 0;
  for (int i = 0; i < N; i++) {
    if (r->hand && i % r->hand == 0) r->out[r->n_out++] = p[i];
    else ms_free(p[i]);
  }
  r->faults = thread_faults() - f0;
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) r->left[c] = held_span(r->heap, c);
  r->ok = true;
  return NULL;
}
static run_t run_thread(unsigned seed, unsigned hand, void **out) {
  run_t r = {.seed = seed, .hand = hand, .out = out};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, pattern, &r), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_true(r.ok);
  return r;
}

/* the maintenance thread runs (a heap is kept whole only then); false: it cannot (MEMSPACE_PURGE_DELAY=-1) */
static bool maint_up(void) {
  run_thread(1, 0, NULL); /* a second thread: its exit starts the maintenance thread */
  for (int i = 0; i < 100 && !msi_maint_running(); i++) msleep(10);
  return msi_maint_running();
}

/* A thread doing what the last one did takes its heap whole: no page fault for the blocks. A purge pass may flush
   the heap between two threads (the test is descheduled for a period): one clean pair in 8 is asked for. Flushed
   at each exit, every thread faulted some of its pages in again (the global cache trims the spans it gets). */
static void next_thread_takes_the_heap_whole(void **state) {
  (void)state;
  if (!maint_up()) ms_skip_refused(0, "the maintenance thread does not run");
  int clean = -1;
  for (int k = 0; k < 8 && clean < 0; k++) {
    run_t a = run_thread(7, 0, NULL), b = run_thread(7, 0, NULL);
    /* kept whole: b finds the spans a left for each class (but the 16-byte one its first block used); flushed at
       a's exit, b would find none (the empty span) */
    unsigned first = msi_heap_class_of(16), kept = 0, lost = 0;
    for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
      if (c == first || !a.left[c]) continue;
      if (b.found[c] == a.left[c]) kept++;
      else lost++;
    }
    print_message("pair %d: heaps %s, faults %ld then %ld, spans found %u, lost %u\n", k,
                  a.heap == b.heap ? "same" : "differ", a.faults, b.faults, kept, lost);
    if (a.heap == b.heap && kept > 0 && lost == 0 && (SANITIZED || b.faults == 0)) clean = k;
  }
  assert_true(clean >= 0);
}

static uint64_t blocks_in_use(void) {
  static ms_stats_t st;
  memset(&st, 0, sizeof st);
  uint64_t idle, n = 0;
  msi_heap_class_stats(&st, &idle);
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) n += msi_stats_class(&st, c)->allocated;
  return n;
}

/* Blocks a dead thread left live are freed by the main thread: into its heap kept whole (no thread took it yet),
   then into the heap of the thread that takes it, while that thread allocates and frees beside them. Every block
   keeps its contents until freed, no block is handed out twice, and once everything is freed and collected the
   heap holds no block more than before. */
static void dead_threads_blocks_freed_later(void **state) {
  (void)state;
  maint_up();
  ms_heap_collect(1);
  uint64_t base = blocks_in_use();
  static void *left[3][N];
  run_t a = run_thread(11, 2, left[0]); /* half its blocks left live */
  for (size_t i = 0; i < a.n_out; i++) assert_true(intact(left[0][i]));
  for (size_t i = 0; i < a.n_out; i += 2) ms_free(left[0][i]); /* into the dead thread's heap */
  run_t b = run_thread(12, 3, left[1]); /* takes that heap (or a new one: a pass flushed it) */
  for (size_t i = 1; i < a.n_out; i += 2) assert_true(intact(left[0][i]));
  for (size_t i = 0; i < b.n_out; i++) assert_true(intact(left[1][i]));
  for (size_t i = 1; i < a.n_out; i += 2) ms_free(left[0][i]);
  run_t c = run_thread(13, 1, left[2]); /* every block left live */
  for (size_t i = 0; i < b.n_out; i++) assert_true(intact(left[1][i]));
  for (size_t i = 0; i < c.n_out; i++) assert_true(intact(left[2][i]));
  for (size_t i = 0; i < b.n_out; i++) ms_free(left[1][i]);
  for (size_t i = 0; i < c.n_out; i++) ms_free(left[2][i]);
  ms_heap_collect(1);
  uint64_t now = blocks_in_use();
  print_message("blocks in use: %llu before, %llu after\n", (unsigned long long)base, (unsigned long long)now);
  assert_true(now <= base);
}

/* a heap no thread takes is flushed by the maintenance thread within a few purge periods, without a call from
   the program: its classes' empty current spans leave it (to the global cache, or their segment) */
static msi_span_t *last_span;
static void *use_and_exit(void *arg) {
  (void)arg;
  void *p = ms_malloc(3000);
  if (p) {
    memset(p, 1, 3000);
    last_span = msi_heap_span_of(p);
  }
  ms_free(p); /* the class's current span, empty: kept for the class's next block while the heap lives */
  return p;
}
static void unused_heap_flushed_by_a_pass(void **state) {
  (void)state;
  if (!maint_up()) ms_skip_refused(0, "the maintenance thread does not run");
  pthread_t t;
  void *r = NULL;
  assert_int_equal(pthread_create(&t, NULL, use_and_exit, NULL), 0);
  assert_int_equal(pthread_join(t, &r), 0);
  assert_non_null(r);
  int state_now = -1;
  for (int i = 0; i < 200; i++) { /* up to 10 s on a loaded machine; normally two purge periods (50 ms) */
    state_now = MSI_SEEN(last_span->state);
    if (state_now != MSI_SPAN_ACTIVE) break;
    msleep(50);
  }
  assert_int_not_equal(state_now, MSI_SPAN_ACTIVE);
}

/* a forked child of a parent whose thread left a heap kept whole: a thread of the child takes it and serves
   correctly (not under TSan), the child frees the blocks left live, and ms_heap_collect flushes what is left */
static void fork_child_takes_dead_heaps(void **state) {
  (void)state;
  maint_up();
  static void *left[N];
  run_t a = run_thread(21, 4, left);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int bad = 0;
    for (int k = 0; k < (TSAN ? 0 : 3); k++) {
      static void *more[N];
      run_t r = {.seed = 22 + (unsigned)k, .hand = 2, .out = more};
      pthread_t t;
      if (pthread_create(&t, NULL, pattern, &r) || pthread_join(t, NULL) || !r.ok) _exit(2);
      for (size_t i = 0; i < r.n_out; i++) {
        bad += !intact(more[i]);
        ms_free(more[i]);
      }
    }
    for (size_t i = 0; i < a.n_out; i++) {
      bad += !intact(left[i]);
      ms_free(left[i]);
    }
    ms_heap_collect(1);
    _exit(bad ? 1 : 0);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  for (size_t i = 0; i < a.n_out; i++) {
    assert_true(intact(left[i]));
    ms_free(left[i]);
  }
}

/* 10,000 threads, one after another, each leaving a fifth of its blocks to the main thread: the heaps are reused,
   the RSS and the heap's mapped bytes stay where the first hundred threads took them */
static void thread_churn_bounded(void **state) {
  (void)state;
  int n = SANITIZED ? 1000 : 10000;
  static void *left[N];
  ms_stats_t before, after;
  for (int i = 0; i < 100; i++) { /* warm up: the heaps and caches reach their steady state */
    run_t r = run_thread((unsigned)i, 5, left);
    for (size_t j = 0; j < r.n_out; j++) ms_free(left[j]);
  }
  ms_stats_get(&before, sizeof before);
  size_t rss0 = ms_test_rss_bytes();
  for (int i = 0; i < n; i++) {
    run_t r = run_thread((unsigned)(100 + i), 5, left);
    for (size_t j = 0; j < r.n_out; j++) {
      if (!intact(left[j])) fail_msg("thread %d: a block left live lost its contents", i);
      ms_free(left[j]);
    }
  }
  ms_stats_get(&after, sizeof after);
  size_t rss1 = ms_test_rss_bytes();
  print_message("heaps live %llu -> %llu, mapped %llu -> %llu MiB, RSS %zu -> %zu MiB\n",
                (unsigned long long)before.heap_threads, (unsigned long long)after.heap_threads,
                (unsigned long long)before.heap_mapped_bytes >> 20, (unsigned long long)after.heap_mapped_bytes >> 20,
                rss0 >> 20, rss1 >> 20);
  assert_true(after.heap_threads <= before.heap_threads + 1);
  assert_true(after.heap_mapped_bytes <= before.heap_mapped_bytes + 16 * MSI_MiB);
  if (!SANITIZED) assert_true(rss1 <= rss0 + 16 * MSI_MiB);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(next_thread_takes_the_heap_whole),
      cmocka_unit_test(dead_threads_blocks_freed_later),
      cmocka_unit_test(unused_heap_flushed_by_a_pass),
      cmocka_unit_test(fork_child_takes_dead_heaps),
      cmocka_unit_test(thread_churn_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
