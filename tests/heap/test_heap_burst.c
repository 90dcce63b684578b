/* SPDX-License-Identifier: MIT */
/* test_heap_burst.c: the memory of a burst of threads that have exited goes back (thread_heap.c orphan_reclaim,
   msi_heap_segments_reclaim). BURST threads start at once, each allocates and frees blocks of 64 B-8 KiB (a thread per
   connection), leaves some blocks live to the main thread, and exits; once the main thread has freed those blocks
   (cross-thread frees into the dead threads' heaps) and a purge has run (forced, then the maintenance thread's own
   passes), the heap's segments fall to the few kept for the next threads and their committed pages with them. The
   same burst runs again on those heaps and segments (adopted orphans, segments mapped again), with its blocks
   intact, and while blocks of a dead thread are still live its heap keeps them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "heap.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define BURST 160
#else
#define BURST 256
#endif
#if defined(__SANITIZE_THREAD__)
#define TSAN 1
#else
#define TSAN 0
#endif
enum { BLOCKS = 16, LEFT = 2 };
/* what a purge keeps of the burst: the idle segments kept mapped (segment.c msi_heap_seg_keep: at most 64), and a few for the
   main and maintenance threads and the global cache */
#define KEEP_SEGMENTS (64 + 8)

static pthread_barrier_t all_started;
static void *left[BURST][LEFT];

static size_t size_of(int i) { return (size_t)64 << (i % 8); }
static void fill(void *p, size_t sz) { memset(p, (int)((uintptr_t)p >> 6 & 0xff), sz); }
static bool intact(const void *p, size_t sz) {
  const unsigned char *c = p;
  unsigned char v = (unsigned char)((uintptr_t)p >> 6 & 0xff);
  return c[0] == v && c[sz / 2] == v && c[sz - 1] == v;
}

/* a connection's thread: BLOCKS blocks, all but LEFT freed here; the LEFT go to the main thread */
static void *connection(void *arg) {
  intptr_t k = (intptr_t)arg;
  void *p[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) {
    if (!(p[i] = ms_malloc(size_of(i)))) return (void *)1;
    fill(p[i], size_of(i));
  }
  for (int i = 0; i < BLOCKS; i++)
    if (!intact(p[i], size_of(i))) return (void *)2;
  for (int i = 0; i < BLOCKS; i++) {
    if (i < LEFT) left[k][i] = p[i];
    else ms_free(p[i]);
  }
  pthread_barrier_wait(&all_started); /* every thread alive at once: a segment each */
  return NULL;
}

static void burst(void) {
  static pthread_t t[BURST];
  assert_int_equal(pthread_barrier_init(&all_started, NULL, BURST), 0);
  for (intptr_t k = 0; k < BURST; k++) assert_int_equal(pthread_create(&t[k], NULL, connection, (void *)k), 0);
  for (int k = 0; k < BURST; k++) {
    void *r = (void *)-1;
    assert_int_equal(pthread_join(t[k], &r), 0);
    assert_null(r);
  }
  pthread_barrier_destroy(&all_started);
}

static void left_check_and_free(bool free_them) {
  for (int k = 0; k < BURST; k++)
    for (int i = 0; i < LEFT; i++) {
      if (!intact(left[k][i], size_of(i))) fail_msg("thread %d: a block left live lost its contents", k);
      if (free_them) ms_free(left[k][i]); /* into a dead thread's heap */
    }
}

typedef struct { uint64_t segments, committed, mapped; } figures_t;
static figures_t figures(void) {
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  return (figures_t){atomic_load(&msi_heap_counters.segments), st.os_committed_bytes, st.heap_mapped_bytes};
}
static void show(const char *when, figures_t f) {
  print_message("%-34s segments %4llu, mapped %5llu MiB, committed %6llu KiB\n", when,
                (unsigned long long)f.segments, (unsigned long long)f.mapped >> 20,
                (unsigned long long)f.committed >> 10);
}
/* the burst's segments and their committed pages are back: within KEEP_SEGMENTS of what the program held before */
static bool back_to(figures_t now, figures_t base) {
  return now.segments <= base.segments + KEEP_SEGMENTS &&
         now.committed <= base.committed + KEEP_SEGMENTS * MSI_HEAP_CHUNK + 2 * MSI_MiB;
}

/* a forced purge gives the burst's memory back (shown under `when`), also what a pass of the maintenance thread
   under way meanwhile holds (ms_heap_collect(1) waits it out: purge.c msi_heap_purge_all) */
static void purge_forced_back_to(const char *when, figures_t base) {
  ms_heap_collect(1);
  figures_t now = figures();
  show(when, now);
  assert_true(back_to(now, base));
}

static void msleep(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void burst_memory_goes_back(void **state) {
  (void)state;
  ms_free(ms_malloc(100));
  ms_heap_collect(1);
  figures_t base = figures();
  show("before", base);

  burst();
  figures_t peak = figures();
  show("after the burst", peak);
  assert_true(peak.segments >= base.segments + BURST / 2); /* (a segment per thread: the bound below means something) */

  /* blocks still live in the dead threads' heaps: those heaps keep them through a forced purge */
  ms_heap_collect(1);
  left_check_and_free(true);
  purge_forced_back_to("blocks freed, purge forced", base);

  /* the same burst again: adopted heaps, segments kept or mapped again; then the maintenance thread's passes
     alone (no forced purge) give it back once idle for the purge delay */
  burst();
  show("second burst", figures());
  left_check_and_free(true);
  figures_t idle = figures();
  bool maint = msi_maint_running();
  for (int i = 0; i < 400 && maint && !back_to(idle, base); i++) { /* up to 20 s; normally the delay and a few passes */
    msleep(50);
    idle = figures();
  }
  show("second burst, idle", idle);
  if (maint) assert_true(back_to(idle, base));

  /* and a third time, forced: every thread's blocks intact on reused memory */
  burst();
  left_check_and_free(true);
  purge_forced_back_to("third burst, purge forced", base);
}

/* a forked child of a process whose burst's memory went back starts the burst itself, on the parent's released
   and kept segments (under TSan, whose runtime starts no thread in the child of a multithreaded fork, the child's
   main thread does each thread's work in turn) */
static void fork_child_after_release(void **state) {
  (void)state;
  burst();
  left_check_and_free(true);
  ms_heap_collect(1);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    static pthread_t t[BURST];
    if (pthread_barrier_init(&all_started, NULL, TSAN ? 1 : BURST)) _exit(3);
    for (intptr_t k = 0; k < BURST; k++)
      if (TSAN ? connection((void *)k) != NULL : pthread_create(&t[k], NULL, connection, (void *)k) != 0) _exit(4);
    for (int k = 0; k < (TSAN ? 0 : BURST); k++) {
      void *r = (void *)-1;
      if (pthread_join(t[k], &r) || r) _exit(5);
    }
    for (int k = 0; k < BURST; k++)
      for (int i = 0; i < LEFT; i++) {
        if (!intact(left[k][i], size_of(i))) _exit(6);
        ms_free(left[k][i]);
      }
    ms_heap_collect(1);
    _exit(0);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

/* a purge that finds the process at its mapping limit (vm.max_map_count) cannot release segments (the read-only
   remap splits a mapping): they stay as they were and counted, and a later purge, with the limit away, releases
   them; the statistics follow what is mapped throughout */
static void release_at_mapping_limit(void **state) {
  (void)state;
  if (TSAN) ms_skip_refused(0, "ThreadSanitizer's runtime maps and unmaps memory of its own, which the mapping limit refuses");
  ms_free(ms_malloc(100));
  ms_heap_collect(1);
  figures_t base = figures();
  burst();
  left_check_and_free(true);
  size_t ps = (size_t)sysconf(_SC_PAGESIZE), n = 1u << 17; /* past the default limit of 65530 mappings */
  char *fill = mmap(NULL, n * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  assert_true(fill != MAP_FAILED);
  size_t made = 0;
  while (made < n && mprotect(fill + made * ps, ps, PROT_READ) == 0) made += 2; /* a mapping each */
  if (made >= n) {
    munmap(fill, n * ps);
    ms_skip_refused(0, "the mapping limit (vm.max_map_count) is above %zu: not reached", n / 2);
  }
  ms_heap_collect(1);
  show("purge at the mapping limit", figures());
  munmap(fill, n * ps);
  purge_forced_back_to("purge after it", base);
  burst();
  left_check_and_free(true);
  purge_forced_back_to("a burst more, purge forced", base);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(release_at_mapping_limit),
      cmocka_unit_test(burst_memory_goes_back),
      cmocka_unit_test(fork_child_after_release),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
