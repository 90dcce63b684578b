/* Remote (cross-thread) frees and their collection: the span's xfree word counts its list, so the owner
   collects remote blocks without walking them (into the free list, else the second list `rfree`; with both in
   use the list stays parked in the word). Checked through the spans' accounting: a span whose blocks all came back (remotely,
   locally or both) must leave its class after collection, and blocks handed out again must be distinct. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "memspace.h"
#include "ms_test.h"
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "heap.h"

typedef struct { void **v; size_t n, step, first; } job_t;

static void *remote_free(void *arg) {
  job_t *j = arg;
  for (size_t i = j->first; i < j->n; i += j->step) ms_free(j->v[i]);
  return NULL;
}

static void free_in_thread(void **v, size_t n, size_t first, size_t step) {
  job_t j = {v, n, step, first};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, remote_free, &j), 0);
  pthread_join(t, NULL);
}

/* n blocks of 64 bytes, each tagged with its index */
static void **alloc_tagged(size_t n) {
  void **v = ms_malloc(n * sizeof *v);
  assert_non_null(v);
  for (size_t i = 0; i < n; i++) {
    v[i] = ms_malloc(64);
    assert_non_null(v[i]);
    memcpy(v[i], &i, sizeof i);
    memset((char *)v[i] + sizeof i, (int)(i & 0xff), 64 - sizeof i);
  }
  return v;
}

static void check_tags(void **v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    size_t k;
    memcpy(&k, v[i], sizeof k);
    assert_int_equal(k, i);
    assert_int_equal(((unsigned char *)v[i])[63], (unsigned char)(i & 0xff));
  }
}

static size_t per_span_64(void) {
  ms_free(ms_malloc(64)); /* the heap's tables are written at its first allocation */
  unsigned cls = msi_heap_class_of(64);
  return msi_heap_class_chunks[cls] * MSI_HEAP_CHUNK / msi_heap_class_size[cls];
}

/* producer/consumer: full spans, every block freed by another thread; the owner allocates again (collecting
   without a walk), then everything goes back and the spans leave the class */
static void full_spans_freed_remotely(void **state) {
  (void)state;
  size_t n = per_span_64() * 4;
  void **v = alloc_tagged(n);
  msi_span_t *s0 = msi_heap_span_of(v[n / 8]);
  free_in_thread(v, n, 0, 1);
  void **w = alloc_tagged(n); /* reuses the collected blocks */
  check_tags(w, n);
  for (size_t i = 0; i < n; i++) ms_free(w[i]);
  ms_free(w);
  ms_heap_collect(1);
  assert_int_not_equal(s0->state, MSI_SPAN_ACTIVE);
  ms_free(v);
}

/* half of each span freed remotely, half locally (both lists non-empty at collection), in both orders */
static void mixed_local_and_remote(void **state) {
  (void)state;
  for (int order = 0; order < 2; order++) {
    size_t n = per_span_64() * 4;
    void **v = alloc_tagged(n);
    msi_span_t *s0 = msi_heap_span_of(v[n / 8]);
    if (order == 0) free_in_thread(v, n, 1, 2);
    for (size_t i = 0; i < n; i += 2) ms_free(v[i]);
    if (order == 1) free_in_thread(v, n, 1, 2);
    /* a few blocks handed out again before the remote ones are collected: both lists non-empty */
    void **w = alloc_tagged(n / 2 + 3);
    check_tags(w, n / 2 + 3);
    for (size_t i = 0; i < n / 2 + 3; i++) ms_free(w[i]);
    ms_free(w);
    ms_heap_collect(1);
    assert_int_not_equal(s0->state, MSI_SPAN_ACTIVE);
    ms_free(v);
  }
}

/* allocates blocks of another class until its span runs out: the allocation path processes the remote stack */
static void **run_out_other_class(size_t *count) {
  unsigned cls = msi_heap_class_of(48);
  size_t n = 2 * (msi_heap_class_chunks[cls] * MSI_HEAP_CHUNK / msi_heap_class_size[cls]) + 2;
  void **o = ms_malloc(n * sizeof *o);
  assert_non_null(o);
  for (size_t i = 0; i < n; i++) assert_non_null(o[i] = ms_malloc(48));
  *count = n;
  return o;
}

/* a span with a local free list and a collected remote list gets a third list, which stays parked; the local free
   that leaves only the parked blocks out retires the span at once, and every block comes back exactly once */
static void parked_list_then_local_frees(void **state) {
  (void)state;
  size_t n = per_span_64() * 3;
  void **v = alloc_tagged(n);
  msi_span_t *s = msi_heap_span_of(v[n / 2]);
  size_t idx[4096], m = 0;
  for (size_t i = 0; i < n; i++)
    if (msi_heap_span_of(v[i]) == s) idx[m++] = i;
  assert_true(m >= 16 && msi_span_used(s) == m);
  void **mine = ms_malloc(m * sizeof *mine);
  assert_non_null(mine);
  for (size_t k = 0; k < m; k++) mine[k] = v[idx[k]];
  for (size_t k = 0; k < m; k += 4) ms_free(mine[k]);          /* local: the free list */
  free_in_thread(mine, m, 1, 4);                                /* remote, collected into rfree */
  size_t c1, c2;
  void **o1 = run_out_other_class(&c1);
  assert_non_null(s->rfree);
  free_in_thread(mine, m, 2, 4);                                /* remote again: both lists in use, parked */
  void **o2 = run_out_other_class(&c2);
  assert_int_not_equal(s->used_floor, 0);
  assert_int_equal(s->state, MSI_SPAN_ACTIVE);
  for (size_t k = 3; k < m; k += 4) ms_free(mine[k]);          /* the last live blocks, freed locally */
  assert_int_not_equal(s->state, MSI_SPAN_ACTIVE);              /* retired by the last free, no collect call */
  for (size_t i = 0; i < n; i++)
    if (msi_heap_span_of(v[i]) != s) ms_free(v[i]);
  for (size_t i = 0; i < c1; i++) ms_free(o1[i]);
  for (size_t i = 0; i < c2; i++) ms_free(o2[i]);
  ms_free(o1);
  ms_free(o2);
  ms_free(mine);
  ms_free(v);
  void **w = alloc_tagged(n); /* blocks handed out again are distinct (check_tags would see an overlap) */
  check_tags(w, n);
  for (size_t i = 0; i < n; i++) ms_free(w[i]);
  ms_free(w);
}

/* An owner whose span ran out of free blocks takes the blocks other threads freed before it carves never-used
   ones (heap.c msi_heap_small_alloc_slow): carving first faulted in the span's further pages while as many of its
   blocks waited on the remote list, and a thread whose blocks mostly come back from other threads (mstress) had
   every span carved to its end */
static void remote_frees_taken_before_carving(void **state) {
  (void)state;
  enum { MAX = 4096, SIZE = 200 };
  static void *v[MAX], *mine[MAX];
  size_t n = 0, m = 0;
  msi_span_t *s = NULL;
  while (!s) { /* until the current span's lists are empty with never-used room left: the next block is carved */
    assert_true(n < MAX);
    assert_non_null(v[n] = ms_malloc(SIZE));
    msi_span_t *cur = msi_heap_span_of(v[n++]);
    if (cur->free == msi_span_list_end(cur) && !cur->rfree && msi_span_bump(cur) < msi_span_end(cur) &&
        atomic_load(&cur->xfree) == 0)
      s = cur;
  }
  for (size_t i = 0; i < n; i++)
    if (msi_heap_span_of(v[i]) == s) mine[m++] = v[i];
  assert_true(m >= 1);
  uintptr_t bump = msi_span_bump(s);
  free_in_thread(mine, m, 0, 1); /* every block of the span this thread holds, freed by another thread */
  void *p = ms_malloc(SIZE);
  assert_non_null(p);
  assert_ptr_equal(msi_heap_span_of(p), s);
  assert_int_equal(msi_span_bump(s), bump); /* nothing carved */
  bool found = false;
  for (size_t k = 0; k < m; k++) found |= mine[k] == p;
  assert_true(found);
  ms_free(p);
  for (size_t i = 0; i < n; i++)
    if (msi_heap_span_of(v[i]) != s) ms_free(v[i]);
}

/* ---- chained remote frees (heap.h msi_heap_t rb): a thread's remote frees into one span are chained in its own
   heap, one chain per slot (the span's class modulo MSI_HEAP_RSLOTS), and pushed on the span's list with one CAS:
   at a free into another span of the same slot, past the chain's limit (MSI_HEAP_RBATCH blocks, MSI_HEAP_RBYTES
   bytes), at the thread's next allocation slow path, ms_heap_collect and its exit (the tests above: after a join);
   in a forked child, the parent's other threads' chains by the fork handler ---- */
static uint32_t xfree_count(msi_span_t *s) { return (uint32_t)(atomic_load(&s->xfree) >> 48); }

/* n blocks of `size` bytes in one span (the calling thread's), in v; not `avoid` (NULL: any span) */
static msi_span_t *blocks_of_span_but(void **v, size_t n, size_t size, msi_span_t *avoid) {
  static void *kept[4096]; /* blocks of `avoid`, kept until the class moved on to another span */
  size_t nkept = 0;
  void *first;
  while (msi_heap_span_of(first = ms_malloc(size)) == avoid) {
    assert_true(nkept < sizeof kept / sizeof kept[0]);
    kept[nkept++] = first;
  }
  assert_non_null(first);
  msi_span_t *s = msi_heap_span_of(first);
  v[0] = first;
  for (size_t k = 1; k < n;) {
    void *p = ms_malloc(size);
    assert_non_null(p);
    if (msi_heap_span_of(p) == s) v[k++] = p;
    else ms_free(p); /* (another span: the class moved on) */
  }
  while (nkept) ms_free(kept[--nkept]);
  return s;
}
static msi_span_t *blocks_of_one_span(void **v, size_t n, size_t size) { return blocks_of_span_but(v, n, size, NULL); }

enum { THEN_HOLD, THEN_COLLECT, THEN_ALLOC, THEN_OTHER_SPAN };
typedef struct {
  void **v;
  size_t n;
  int then;
  void *other; /* THEN_OTHER_SPAN: a block of another span, freed after v */
  sem_t done, go;
} hold_job_t;
/* frees j->v remotely, then the step `then`, and holds whatever is left chained until told to go */
static void *free_then_hold(void *arg) {
  hold_job_t *j = arg;
  for (size_t i = 0; i < j->n; i++) ms_free(j->v[i]);
  if (j->then == THEN_COLLECT) ms_heap_collect(0);
  if (j->then == THEN_ALLOC) ms_free(ms_malloc(5000)); /* a class it has no span of: the allocation slow path */
  if (j->then == THEN_OTHER_SPAN) ms_free(j->other);
  sem_post(&j->done);
  sem_wait(&j->go);
  return NULL;
}
/* runs fn (free_then_hold, alloc_then_hold) in a thread until it says done; hold_end lets it go */
static void hold_start_with(hold_job_t *j, pthread_t *t, void *(*fn)(void *)) {
  assert_int_equal(sem_init(&j->done, 0, 0), 0);
  assert_int_equal(sem_init(&j->go, 0, 0), 0);
  assert_int_equal(pthread_create(t, NULL, fn, j), 0);
  while (sem_wait(&j->done) != 0) {}
}
static void hold_start(hold_job_t *j, pthread_t *t) { hold_start_with(j, t, free_then_hold); }
static void hold_end(hold_job_t *j, pthread_t t) {
  sem_post(&j->go);
  pthread_join(t, NULL);
  sem_destroy(&j->done);
  sem_destroy(&j->go);
}

/* each way a live thread's chain reaches the span: the span's list counts the blocks while the thread still runs */
static void chained_frees_reach_the_span(void **state) {
  (void)state;
  static void *v[MSI_HEAP_RBATCH + 8];
  const int thens[] = {THEN_COLLECT, THEN_ALLOC, THEN_OTHER_SPAN, THEN_HOLD};
  for (size_t i = 0; i < sizeof thens / sizeof thens[0]; i++) {
    size_t n = thens[i] == THEN_HOLD ? MSI_HEAP_RBATCH : 10; /* THEN_HOLD: the batch's limit pushes it */
    msi_span_t *s = blocks_of_one_span(v, n, 64);
    void *other; /* a block of another span of the class: the same slot */
    blocks_of_span_but(&other, 1, 64, s);
    uint32_t before = xfree_count(s);
    hold_job_t j = {.v = v, .n = n, .then = thens[i], .other = other};
    pthread_t t;
    hold_start(&j, &t);
    assert_int_equal(xfree_count(s), before + n);
    hold_end(&j, t);
    if (thens[i] != THEN_OTHER_SPAN) ms_free(other);
  }
  ms_heap_collect(1);
}

/* blocks of mixed sizes freed remotely in turn: each class keeps its chain open while the others grow (none is
   pushed until the thread's allocation slow path) */
static void *free_list_then_alloc(void *arg) {
  hold_job_t *j = arg;
  for (size_t i = 0; i < j->n; i++) ms_free(j->v[i]);
  sem_post(&j->done);
  sem_wait(&j->go);
  ms_free(ms_malloc(5000)); /* a class it has no span of: the allocation slow path */
  sem_post(&j->done);
  sem_wait(&j->go);
  return NULL;
}
static void chains_of_classes_side_by_side(void **state) {
  (void)state;
  enum { KINDS = 3, EACH = 8 };
  const size_t sizes[KINDS] = {32, 64, 200}; /* (classes 1, 3, 12: three slots) */
  static void *v[KINDS][EACH], *order[KINDS * EACH];
  msi_span_t *s[KINDS];
  uint32_t before[KINDS];
  for (size_t k = 0; k < KINDS; k++) {
    s[k] = blocks_of_one_span(v[k], EACH, sizes[k]);
    before[k] = xfree_count(s[k]);
  }
  for (size_t i = 0; i < EACH; i++)
    for (size_t k = 0; k < KINDS; k++) order[i * KINDS + k] = v[k][i];
  hold_job_t j = {.v = order, .n = KINDS * EACH};
  pthread_t t;
  hold_start_with(&j, &t, free_list_then_alloc);
  for (size_t k = 0; k < KINDS; k++) assert_int_equal(xfree_count(s[k]), before[k]); /* all chained */
  sem_post(&j.go);
  while (sem_wait(&j.done) != 0) {}
  for (size_t k = 0; k < KINDS; k++) assert_int_equal(xfree_count(s[k]), before[k] + EACH);
  hold_end(&j, t);
  ms_heap_collect(1);
}

/* a chain of large blocks holds at most MSI_HEAP_RBYTES: the free that reaches it pushes the chain, one below
   it leaves the chain open */
static void chain_of_large_blocks_bounded(void **state) {
  (void)state;
  enum { SIZE = 16384, LIM = MSI_HEAP_RBYTES / SIZE };
  static void *v[LIM];
  for (size_t n = LIM; n >= LIM - 1; n--) {
    msi_span_t *s = blocks_of_one_span(v, n, SIZE - MSI_HEAP_CANARY);
    assert_int_equal(s->block_size, SIZE);
    uint32_t before = xfree_count(s);
    hold_job_t j = {.v = v, .n = n, .then = THEN_HOLD};
    pthread_t t;
    hold_start(&j, &t);
    assert_int_equal(xfree_count(s), n == LIM ? before + LIM : before);
    hold_end(&j, t);
  }
  ms_heap_collect(1);
}

/* a fork while another thread holds a chain: the child leaves the chain unread (the fork may have copied it half
   written), so the span's list does not get its blocks and no block of it is handed out again */
static msi_span_t *fork_span;
static uint32_t fork_expect;
static void *fork_chained[10];
static int chain_in_child(void) {
  if (xfree_count(fork_span) != fork_expect) return 1;
  static void *got[4 * 64];
  int bad = 0;
  for (size_t i = 0; i < sizeof got / sizeof got[0]; i++) {
    got[i] = ms_malloc(64);
    for (size_t k = 0; k < 10; k++) bad |= got[i] == fork_chained[k];
  }
  for (size_t i = 0; i < sizeof got / sizeof got[0]; i++) ms_free(got[i]);
  return bad ? 2 : 0;
}
static void chain_left_in_forked_child(void **state) {
  (void)state;
  void **v = fork_chained;
  fork_span = blocks_of_one_span(v, 10, 64);
  fork_expect = xfree_count(fork_span);
  hold_job_t j = {.v = v, .n = 10, .then = THEN_HOLD};
  pthread_t t;
  hold_start(&j, &t);
  assert_int_equal(ms_test_in_child(chain_in_child), 0);
  hold_end(&j, t);
  ms_heap_collect(1);
}

/* a block waiting in a chain is free: freed again by the chaining thread, or by its owner, it is a double free.
   The chaining thread is the child's own (a ThreadSanitizer child starts no thread): it frees blocks of a parent's
   thread, whose heap no thread of the child owns */
static void *held_block;
static void *alloc_then_hold(void *arg) {
  hold_job_t *j = arg;
  held_block = ms_malloc(64);
  j->other = ms_malloc(64); /* (the span keeps a live block) */
  sem_post(&j->done);
  sem_wait(&j->go);
  ms_free(held_block);
  ms_free(j->other);
  return NULL;
}
static int chained_freed_again(void) {
  fprintf(stderr, "pointer %p\n", held_block);
  ms_free(held_block); /* chained: another heap's span */
  ms_free(held_block);
  return 1;
}
static int chained_freed_by_owner(void) {
  static void *v[2];
  blocks_of_one_span(v, 2, 64);
  hold_job_t j = {.v = v, .n = 1, .then = THEN_HOLD};
  pthread_t t;
  hold_start(&j, &t);
  fprintf(stderr, "pointer %p\n", v[0]);
  ms_free(v[0]);
  return 1;
}
static void chained_block_freed_again(void **state) {
  (void)state;
  hold_job_t j = {0};
  pthread_t t;
  hold_start_with(&j, &t, alloc_then_hold);
  ms_test_child_aborts(chained_freed_again, "double free");
  hold_end(&j, t);
  if (!MS_TEST_TSAN) ms_test_child_aborts(chained_freed_by_owner, "double free"); /* (a thread in the child) */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(full_spans_freed_remotely),
      cmocka_unit_test(mixed_local_and_remote),
      cmocka_unit_test(parked_list_then_local_frees),
      cmocka_unit_test(remote_frees_taken_before_carving),
      cmocka_unit_test(chained_frees_reach_the_span),
      cmocka_unit_test(chains_of_classes_side_by_side),
      cmocka_unit_test(chain_of_large_blocks_bounded),
      cmocka_unit_test(chain_left_in_forked_child),
      cmocka_unit_test(chained_block_freed_again),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
