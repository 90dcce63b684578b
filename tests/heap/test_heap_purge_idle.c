/* SPDX-License-Identifier: MIT */
/* test_heap_purge_idle.c: a thread's empty spans of a class it used (kept for the class's next block) go back to
   the OS at a forced purge (what memory pressure runs, and ms_heap_collect(1)) while the thread sits idle: the
   owner sets such a span aside when its last block is freed (span.c spare_put), and the purge takes it from any
   thread. And the hand-over races nothing: one thread fills and empties spans (setting them aside, taking them
   back) while another purges with force, every block checked (also under TSan). No sleep, no timing: the threads
   wait for each other on a condition variable. The heap sets spans aside only while a forced purge may come
   (msi_maint_tight: memory tight, a cgroup limit, or a limit not read yet): the test holds memory tight, and the
   last case checks that without a limit and with headroom it does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "heap.h"

enum { SIZE = 200, BLOCKS = 200 }; /* 40 KiB of blocks in one span (of 315 blocks of 208 B) */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase;          /* 1: the worker freed its blocks; 2: the worker may go on; 3: it ended */
static msi_heap_t *worker_heap;
static msi_span_t *worker_span; /* the class's current span when the worker went idle */
static uintptr_t span_base, span_touched;

static void set_phase(int p) {
  pthread_mutex_lock(&mu);
  phase = p;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}
static void wait_phase(int p) {
  pthread_mutex_lock(&mu);
  while (phase < p) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

/* a pool thread: a batch of blocks of one class, all freed, then idle until told */
static void *idle_worker(void *arg) {
  (void)arg;
  void *b[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) {
    b[i] = ms_malloc(SIZE);
    if (!b[i]) return NULL;
    memset(b[i], 0x5a, SIZE);
  }
  msi_span_t *s = msi_heap_current(msi_tls_heap, msi_heap_class_of(SIZE));
  span_base = s->base;
  span_touched = s->touched;
  for (int i = 0; i < BLOCKS; i++) ms_free(b[i]);
  worker_heap = msi_tls_heap;
  worker_span = s;
  set_phase(1);
  wait_phase(2);
  /* the class again: a span to allocate from, whatever the purge took */
  for (int i = 0; i < BLOCKS; i++) {
    b[i] = ms_malloc(SIZE);
    if (!b[i]) return NULL;
    memset(b[i], 0x33, SIZE);
  }
  for (int i = 0; i < BLOCKS; i++) ms_free(b[i]);
  set_phase(3);
  return arg;
}

/* the pages of [addr, addr + len) resident */
static size_t resident_pages(uintptr_t addr, size_t len) {
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  len += addr & (ps - 1); /* (a span's blocks start at its colour: span.c span_colour) */
  addr &= ~(uintptr_t)(ps - 1);
  size_t n = (len + ps - 1) / ps, r = 0;
  unsigned char vec[8 * 16]; /* a span: at most 512 KiB */
  assert_true(n <= sizeof vec);
  assert_int_equal(mincore((void *)addr, n * ps, vec), 0);
  for (size_t i = 0; i < n; i++) r += vec[i] & 1;
  return r;
}

/* The idle thread's empty span goes back at a forced purge from another thread: it leaves the thread's class and
   its pages are no longer resident (kept as the idle thread's current span, it would be out of every purge's
   reach until that thread's next allocation). */
static void idle_threads_span_goes_back(void **state) {
  (void)state;
  phase = 0;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, idle_worker, NULL), 0);
  wait_phase(1);
  unsigned cls = msi_heap_class_of(SIZE);
  assert_true(span_touched > 16384);
  assert_true(resident_pages(span_base, span_touched) > 0);
  msi_heap_purge(msi_heap_now_ms(), true);
  assert_ptr_not_equal(msi_heap_current(worker_heap, cls), worker_span);
  assert_int_not_equal(worker_span->state, MSI_SPAN_ACTIVE);
  assert_int_equal(resident_pages(span_base, span_touched), 0);
  set_phase(2);
  wait_phase(3);
  assert_int_equal(pthread_join(t, NULL), 0);
}

/* ---- the race: an owner filling and emptying spans against forced purges ---- */

enum { ROUNDS = 3000, RACE_BLOCKS = 192 };
static atomic_int racing;

/* rounds of a batch (the span set aside when it empties: a batch carves past the first 16 KiB), then one block
   taken and freed (the span taken back); false when a block did not hold its bytes */
static bool owner_rounds(void) {
  static void *b[RACE_BLOCKS];
  for (unsigned r = 0; r < ROUNDS; r++) {
    unsigned n = RACE_BLOCKS / 2 + r % (RACE_BLOCKS / 2), size = r % 3 ? 3000 : SIZE;
    for (unsigned i = 0; i < n; i++) {
      if (!(b[i] = ms_malloc(size))) return false;
      memset(b[i], (int)(i & 0xff), size);
    }
    for (unsigned i = 0; i < n; i++) {
      const unsigned char *p = b[i];
      for (unsigned j = 0; j < size; j += 97)
        if (p[j] != (unsigned char)(i & 0xff)) return false; /* a block handed out twice, or its pages dropped */
    }
    for (unsigned i = 0; i < n; i++) ms_free(b[r & 1 ? i : n - 1 - i]);
    unsigned char *one = ms_malloc(size);
    if (!one) return false;
    memset(one, 7, size);
    bool ok = one[size - 1] == 7;
    ms_free(one);
    if (!ok) return false;
  }
  return true;
}
static void *owner_loop(void *arg) {
  bool ok = owner_rounds();
  atomic_store(&racing, 0);
  return ok ? arg : NULL;
}

static void owner_races_forced_purge(void **state) {
  (void)state;
  atomic_store(&racing, 1);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, owner_loop, &racing), 0);
  while (atomic_load(&racing)) msi_heap_purge(msi_heap_now_ms(), true);
  void *ret = NULL;
  assert_int_equal(pthread_join(t, &ret), 0);
  assert_ptr_equal(ret, &racing); /* every block held its bytes */
}

/* With headroom (memory not tight) and no cgroup limit the emptied span stays the idle thread's current span: a
   loop that empties a span every turn keeps its fast path. Skipped under a cgroup limit, or when the looks found
   memory tight meanwhile (another process's memory stall counts), or when no look read the limit in 10 s */
static void with_headroom_span_stays_current(void **state) {
  (void)state;
  atomic_fetch_and(&msi_maint_tight, ~MSI_TIGHT_TEST);
  /* (the threads of the cases before started the maintenance thread: its first look reads the limit) */
  for (int i = 0; i < 1000 && (atomic_load(&msi_maint_tight) & MSI_TIGHT_UNSEEN); i++) usleep(10000);
  if (atomic_load(&msi_maint_tight)) skip();
  phase = 0;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, idle_worker, NULL), 0);
  wait_phase(1);
  bool tight = atomic_load(&msi_maint_tight) != 0;
  msi_span_t *cur = msi_heap_current(worker_heap, msi_heap_class_of(SIZE));
  set_phase(2);
  wait_phase(3);
  assert_int_equal(pthread_join(t, NULL), 0);
  if (tight) skip();
  assert_ptr_equal(cur, worker_span);
}

int main(void) {
  ms_free(ms_malloc(16)); /* the heap set up */
  atomic_fetch_or(&msi_maint_tight, MSI_TIGHT_TEST); /* memory held tight (internal.h) for the first two */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(idle_threads_span_goes_back),
      cmocka_unit_test(owner_races_forced_purge),
      cmocka_unit_test(with_headroom_span_stays_current),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
