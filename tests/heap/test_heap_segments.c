/* SPDX-License-Identifier: MIT */
/* test_heap_segments.c: each segment serves one thread heap (segment.c msi_heap_segment_alloc_span). Two threads taking spans
   at the same time take them from segments of their own, never chunks of one segment between them (their span
   descriptors would share the header's pages, which each thread writes at every malloc and free). A segment whose
   thread ended (an orphaned heap), or whose thread is not the child's after a fork, has its room taken by the
   heap that needs it before any new segment is mapped. Each case runs in a child of the single-threaded test
   process: a heap with no other thread's segments or cached spans yet. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heap.h"

static uintptr_t seg_of(const void *p) { return (uintptr_t)p & ~(MSI_HEAP_SEG_SIZE - 1); }

static uint64_t segments(void) { return atomic_load(&msi_heap_counters.segments); }

/* the case's checks, in the child: the first one that fails ends it */
#define CHECK(c)                                                                                                   \
  do {                                                                                                             \
    if (!(c)) {                                                                                                    \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);                                                      \
      _exit(1);                                                                                                    \
    }                                                                                                              \
  } while (0)

/* runs a case in a child process; it exits 0 when its checks hold */
static void in_child(void (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- two threads taking spans in turns ---- */

#define ROUNDS 12
static pthread_barrier_t turn;
typedef struct { int role; void *p[ROUNDS]; } taker_t;

/* one block of a class new to the thread per round (a span from a segment: its caches are empty), the two threads
   in turns */
static void *taker(void *arg) {
  taker_t *t = arg;
  for (int r = 0; r < ROUNDS; r++) {
    if (t->role == 0) t->p[r] = ms_malloc((size_t)16 * (r + 1));
    pthread_barrier_wait(&turn);
    if (t->role == 1) t->p[r] = ms_malloc((size_t)16 * (r + 1));
    pthread_barrier_wait(&turn);
  }
  return NULL;
}

static void two_takers(void) {
  taker_t t[2] = {{.role = 0}, {.role = 1}};
  pthread_t th[2];
  CHECK(pthread_barrier_init(&turn, NULL, 2) == 0);
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, taker, &t[i]) == 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&turn);
  for (int i = 0; i < 2; i++)
    for (int r = 0; r < ROUNDS; r++) {
      CHECK(t[i].p[r]);
      CHECK(seg_of(t[i].p[r]) == seg_of(t[i].p[0])); /* one segment per thread */
    }
  CHECK(seg_of(t[0].p[0]) != seg_of(t[1].p[0]));
  for (int i = 0; i < 2; i++)
    for (int r = 0; r < ROUNDS; r++) ms_free(t[i].p[r]);
}
static void threads_take_spans_from_segments_of_their_own(void **state) {
  (void)state;
  in_child(two_takers);
}

/* ---- room of segments whose threads are gone ---- */

/* blocks of the largest small class: more spans than one segment's chunks hold */
typedef struct { size_t n; void **p; } fill_t;
static fill_t fill_alloc(void) {
  size_t size = MSI_HEAP_SMALL_REQ;
  unsigned cls = msi_heap_class_of(size), chunks = msi_heap_class_chunks[cls];
  size_t per_span = (size_t)chunks * MSI_HEAP_CHUNK / msi_heap_class_size[cls];
  fill_t f = {((MSI_HEAP_SEG_CHUNKS - 1) / chunks + 1) * per_span, NULL};
  f.p = ms_malloc(f.n * sizeof *f.p);
  CHECK(f.p);
  for (size_t i = 0; i < f.n; i++) {
    f.p[i] = ms_malloc(size);
    CHECK(f.p[i]);
  }
  return f;
}
static void fill_free(fill_t f) {
  for (size_t i = 0; i < f.n; i++) ms_free(f.p[i]);
  ms_free(f.p);
}

static void *one_block(void *arg) {
  *(void **)arg = ms_malloc(100); /* its heap's first span: a segment claimed or mapped for it */
  return NULL;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase;
static void wait_phase(int want) {
  pthread_mutex_lock(&mu);
  while (phase < want) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}
static void set_phase(int p) {
  pthread_mutex_lock(&mu);
  phase = p;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

/* a live thread whose segment is full takes the room of a dead thread's segment (its heap an orphan, one live
   block in it), not a new segment */
static uint64_t grown;
static void *filler(void *arg) {
  void **mine = arg;
  *mine = ms_malloc(100); /* its own segment first */
  set_phase(1);
  wait_phase(2); /* the other thread has taken a segment and ended */
  uint64_t before = segments();
  fill_t f = fill_alloc();
  grown = segments() - before;
  fill_free(f);
  return NULL;
}

static void dead_and_live(void) {
  void *live = NULL, *dead = NULL;
  pthread_t l, d;
  CHECK(pthread_create(&l, NULL, filler, &live) == 0);
  wait_phase(1);
  CHECK(pthread_create(&d, NULL, one_block, &dead) == 0);
  pthread_join(d, NULL); /* its heap an orphan now, its block still live */
  CHECK(dead);
  set_phase(2);
  pthread_join(l, NULL);
  CHECK(seg_of(live) != seg_of(dead));
  CHECK(grown == 0);
  ms_free(dead);
  ms_free(live);
}
static void dead_threads_segments_taken_before_new_ones(void **state) {
  (void)state;
  in_child(dead_and_live);
}

/* a forked child: the segment of a parent's thread (alive in the parent, not in the child) gives its room to the
   forking thread's heap, its own segment full, before a new segment is mapped */
static void *holder(void *arg) {
  *(void **)arg = ms_malloc(100);
  set_phase(1);
  wait_phase(2);
  return NULL;
}

static void fork_with_holder(void) {
  void *mine = ms_malloc(100), *held = NULL; /* this thread's heap and segment first */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, holder, &held) == 0);
  wait_phase(1);
  CHECK(mine && held && seg_of(held) != seg_of(mine));
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    uint64_t before = segments();
    fill_t f = fill_alloc(); /* fills this heap's segment, then takes room elsewhere */
    uint64_t grew = segments() - before;
    fill_free(f);
    if (grew) fprintf(stderr, "the child mapped %llu segments\n", (unsigned long long)grew);
    _exit(grew ? 1 : 0);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  set_phase(2);
  pthread_join(t, NULL);
  ms_free(held);
  ms_free(mine);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
static void fork_child_takes_other_threads_segments(void **state) {
  (void)state;
  in_child(fork_with_holder);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(threads_take_spans_from_segments_of_their_own),
      cmocka_unit_test(dead_threads_segments_taken_before_new_ones),
      cmocka_unit_test(fork_child_takes_other_threads_segments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
