/* SPDX-License-Identifier: MIT */
/* test_heap_steal.c: a span of an ended thread's heap serves a live thread's heap (thread_heap.c msi_heap_orphan_span_take). A
   thread that needs a span of a class and has none cached takes the one an orphaned heap holds for the class, with
   the blocks left free in it and those other threads freed into it, before it takes fresh chunks: a program whose
   threads pile up (each starts its successor and ends later, larson) has as many heaps as threads alive at once,
   and the living would otherwise carve fresh pages beside the dead heaps' free blocks. Run with
   MEMSPACE_PURGE_DELAY=-1 (CMakeLists.txt): no maintenance thread, an exit flushes its heap (the span with live
   blocks stays the orphan's, on its partial list) and no purge pass holds the orphan list meanwhile. The last test
   is a stress of thread generations handing blocks on (also under TSan: a span changes owner while other threads
   free its blocks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <string.h>
#include "heap.h"

#define SIZE 1700 /* class 1792: 36 blocks to a one-chunk span, no other block of the test's of that class */
#define LEFT 32   /* blocks the ended thread allocates (one span), every other one freed before it ends */

static void *left[LEFT];
static msi_span_t *left_span;

static void *allocate_and_end(void *arg) {
  (void)arg;
  for (int i = 0; i < LEFT; i++) left[i] = ms_malloc(SIZE);
  left_span = msi_heap_span_of(left[0]);
  for (int i = 0; i < LEFT; i++)
    if (msi_heap_span_of(left[i]) != left_span) left_span = NULL; /* (the test needs them in one span) */
  for (int i = 0; i < LEFT; i += 2) ms_free(left[i]);
  return NULL;
}

/* the live thread: its heap made before the other thread ends, then its blocks of the class once told to */
typedef struct {
  sem_t ready, go, done, more;
  void *got[LEFT];
  unsigned in_span;  /* its first LEFT / 2 blocks that lie in the ended thread's span */
  unsigned in_span2; /* the next LEFT / 2, after the main thread freed the ended thread's live blocks */
  bool owner_is_mine;
} live_t;

static void *live_thread(void *arg) {
  live_t *l = arg;
  void *warm = ms_malloc(48); /* (its heap, before the other thread ends) */
  sem_post(&l->ready);
  sem_wait(&l->go);
  for (int i = 0; i < LEFT / 2; i++) {
    l->got[i] = ms_malloc(SIZE);
    l->in_span += msi_heap_span_of(l->got[i]) == left_span;
  }
  l->owner_is_mine = left_span && MSI_SEEN(left_span->owner) == msi_tls_heap;
  sem_post(&l->done);
  sem_wait(&l->more);
  for (int i = LEFT / 2; i < LEFT; i++) {
    l->got[i] = ms_malloc(SIZE);
    l->in_span2 += msi_heap_span_of(l->got[i]) == left_span;
  }
  for (int i = 0; i < LEFT; i++) ms_free(l->got[i]);
  ms_free(warm);
  return NULL;
}

/* the blocks an ended thread left free in its span, then those another thread freed into it, serve a live thread
   that needs the class: the span is the live heap's now (on the old tree the live thread carved fresh chunks) */
static void ended_threads_span_serves_a_live_heap(void **state) {
  (void)state;
  msi_heap_mini_off = true; /* (normal spans from the first block) */
  live_t l = {0};
  sem_init(&l.ready, 0, 0), sem_init(&l.go, 0, 0), sem_init(&l.done, 0, 0), sem_init(&l.more, 0, 0);
  pthread_t lt, at;
  assert_int_equal(pthread_create(&lt, NULL, live_thread, &l), 0);
  sem_wait(&l.ready);
  assert_int_equal(pthread_create(&at, NULL, allocate_and_end, NULL), 0);
  pthread_join(at, NULL);
  assert_non_null(left_span);
  sem_post(&l.go);
  sem_wait(&l.done);
  assert_int_equal(l.in_span, LEFT / 2);
  assert_true(l.owner_is_mine);
  for (int i = 1; i < LEFT; i += 2) ms_free(left[i]); /* (remote frees into the live thread's span now) */
  ms_heap_collect(0); /* (this thread's chain of them pushed: docs/heap.md "Cross-thread frees") */
  sem_post(&l.more);
  pthread_join(lt, NULL);
  assert_int_equal(l.in_span2, LEFT / 2);
  msi_heap_mini_off = false;
}

/* thread generations after larson: each replaces random blocks of its lineage (frees a block an earlier thread
   allocated, allocates one of random size, stamps it), starts its successor and ends, while the other lineage runs
   too. Every block keeps its stamp: no block handed out twice, none lost, whichever heap its span went to */
#define SLOTS 400
#define GENS 60
#define REPL 3000
typedef struct {
  unsigned char *p[SLOTS];
  size_t size[SLOTS];
  uint64_t rng;
  int gens_left;
  sem_t *done;
  bool bad;
} lineage_t;

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}
static void stamp(unsigned char *p, size_t n, size_t k) { memset(p, (int)(k & 0xff), n); }
static bool stamped(const unsigned char *p, size_t n, size_t k) {
  return p[0] == (unsigned char)(k & 0xff) && p[n / 2] == (unsigned char)(k & 0xff) && p[n - 1] == (unsigned char)(k & 0xff);
}

static void *generation(void *arg) {
  lineage_t *l = arg;
  for (int i = 0; i < REPL; i++) {
    size_t k = (size_t)(next_rand(&l->rng) % SLOTS);
    if (!stamped(l->p[k], l->size[k], k)) l->bad = true;
    ms_free(l->p[k]);
    l->size[k] = 8 + (size_t)(next_rand(&l->rng) % 993);
    l->p[k] = ms_malloc(l->size[k]);
    if (!l->p[k]) { l->bad = true; break; }
    stamp(l->p[k], l->size[k], k);
  }
  if (!l->bad && --l->gens_left > 0) {
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, generation, l) == 0) {
      pthread_attr_destroy(&at);
      return NULL;
    }
    pthread_attr_destroy(&at);
    l->bad = true;
  }
  sem_post(l->done);
  return NULL;
}

static void thread_generations_keep_their_blocks(void **state) {
  (void)state;
  sem_t done;
  sem_init(&done, 0, 0);
  lineage_t ls[2];
  memset(ls, 0, sizeof ls);
  for (int t = 0; t < 2; t++) {
    ls[t].rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(t + 1) | 1;
    ls[t].gens_left = GENS;
    ls[t].done = &done;
    for (size_t k = 0; k < SLOTS; k++) {
      ls[t].size[k] = 8 + (size_t)(next_rand(&ls[t].rng) % 993);
      ls[t].p[k] = ms_malloc(ls[t].size[k]);
      assert_non_null(ls[t].p[k]);
      stamp(ls[t].p[k], ls[t].size[k], k);
    }
  }
  for (int t = 0; t < 2; t++) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    assert_int_equal(pthread_create(&th, &at, generation, &ls[t]), 0);
    pthread_attr_destroy(&at);
  }
  for (int t = 0; t < 2; t++) sem_wait(&done);
  for (int t = 0; t < 2; t++) {
    assert_false(ls[t].bad);
    for (size_t k = 0; k < SLOTS; k++) {
      assert_true(stamped(ls[t].p[k], ls[t].size[k], k));
      ms_free(ls[t].p[k]);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ended_threads_span_serves_a_live_heap),
      cmocka_unit_test(thread_generations_keep_their_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
