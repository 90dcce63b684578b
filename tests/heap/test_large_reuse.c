/* Mid-size blocks (over 32 KiB, up to 1 MiB: the dense large slots) freed and allocated again stay resident:
   after a warm-up, loops of malloc/touch every page/free, batches freed and allocated again, and blocks grown by
   realloc through these sizes take no new page fault (ru_minflt is counted, never time). The purge delay is set
   out of reach, so only a forced purge could drop the cached pages, and none is made here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heap.h"

static long minor_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static void touch(char *p, size_t n) {
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  p[n - 1] = 1;
}

/* one block at a time, of every size from 32 KiB + 1 to 1 MiB (an eighth more each step): each slot size's
   cached slot serves the next block of that size or smaller with its pages, and the next larger one of the same
   slot size with the pages a larger block left (a block of 600 KiB after one of 1 MiB keeps the slot's pages) */
static void one_at_a_time(void) {
  for (size_t n = 32769;; n += n / 8) {
    if (n > MSI_MiB) n = MSI_MiB;
    char *p = ms_malloc(n);
    assert_non_null(p);
    touch(p, n);
    ms_free(p);
    if (n == MSI_MiB) break;
  }
}

/* R's pattern: its collector frees hundreds of vectors of 32-48 KB at once, and the program allocates as many
   again (a cache of 64 slots dropped the pages of all but 64) */
enum { BATCH = 300 };
static void batch(size_t n) {
  static char *b[BATCH];
  for (int i = 0; i < BATCH; i++) {
    assert_non_null(b[i] = ms_malloc(n));
    touch(b[i], n);
  }
  for (int i = 0; i < BATCH; i++) ms_free(b[i]);
}

/* one block grown by realloc from 32 KiB + 1 to 1 MiB by 8 KiB steps, every new page written: it moves to each
   larger slot size in turn, whose cached slot holds the pages */
static void grown(void) {
  size_t n = 32769;
  char *p = ms_malloc(n);
  assert_non_null(p);
  touch(p, n);
  while (n < MSI_MiB) {
    size_t m = n + 8192 > MSI_MiB ? MSI_MiB : n + 8192;
    char *q = ms_realloc(p, m);
    assert_non_null(q);
    touch(q + n, m - n);
    p = q;
    n = m;
  }
  ms_free(p);
}

static long long delay_before;
static int setup(void **state) {
  (void)state;
  delay_before = ms_option_get(MS_OPTION_PURGE_DELAY);
  return ms_option_set(MS_OPTION_PURGE_DELAY, 86400000);
}
static int teardown(void **state) {
  (void)state;
  return ms_option_set(MS_OPTION_PURGE_DELAY, delay_before);
}

/* the secure build keeps a guard after every block: a smaller block's guard zaps the pages past it (blocks of one
   size still reuse their pages: batches_fault_nothing runs there too) */
static bool guards_follow_blocks(void) {
  if (!MSI_HEAP_SECURE) return false;
  fprintf(stderr, "skipped: the secure build's guards after each block drop the pages past it\n");
  return true;
}

/* the page faults of a third run of `round`, after two runs as a warm-up */
static long faults_after_warm_up(void (*round)(void), const char *what) {
  round();
  round();
  long f0 = minor_faults();
  round();
  long faults = minor_faults() - f0;
  fprintf(stderr, "%s: %ld page faults\n", what, faults);
  return faults;
}

static void malloc_free_loop_faults_nothing(void **state) {
  (void)state;
  ms_skip_tsan_shadow("no page fault in a loop of blocks of new sizes");
  if (guards_follow_blocks()) ms_skip_refused(0, "the secure build: a guard follows each block, so pages move with it");
  assert_int_equal(faults_after_warm_up(one_at_a_time, "one at a time"), 0);
}

static void batches_fault_nothing(void **state) {
  (void)state;
  ms_skip_tsan_shadow("no page fault in batches of blocks of new sizes");
  batch(40000);
  long f0 = minor_faults();
  batch(40000);
  batch(36000); /* smaller blocks of the same slot size */
  long faults = minor_faults() - f0;
  fprintf(stderr, "batches of %d: %ld page faults\n", BATCH, faults);
  assert_int_equal(faults, 0);
}

static void realloc_growth_faults_little(void **state) {
  (void)state;
  if (guards_follow_blocks()) ms_skip_refused(0, "the secure build: a guard follows each block, so pages move with it");
  /* 256 pages written; a cache that drops slots' pages past their block: ~220 */
  assert_true(faults_after_warm_up(grown, "realloc growth to 1 MiB") <= 8);
}

/* A block grown by realloc past slot after slot moves each time (its pages, no byte copied), one kernel mapping
   more each time (the moved pieces keep theirs, the new slot's tail is committed afresh): each piece is found with
   one probe (the pieces the last move made are remembered), not searched for by halving the length (about ten
   failed probes for a small piece: SQLite's growing buffers made 213 of them in the bench's run). */
static void realloc_growth_probes_little(void **state) {
  (void)state;
  ms_stats_t s0, s1;
  size_t n = 1100000;
  char *p = ms_malloc(n);
  assert_non_null(p);
  touch(p, n);
  ms_stats_get(&s0, sizeof s0);
  int moves = 0;
  while (n < 96 * MSI_MiB) {
    size_t m = n + n / 2;
    char *q = ms_realloc(p, m);
    assert_non_null(q);
    moves += q != p;
    assert_int_equal(q[n - 1], 1);
    touch(q + n, m - n);
    p = q, n = m;
  }
  ms_stats_get(&s1, sizeof s1);
  ms_free(p);
  uint64_t probes = s1.os_probes - s0.os_probes;
  fprintf(stderr, "realloc growth to %zu MiB: %d moves, %llu probes\n", n >> 20, moves,
          (unsigned long long)probes);
  assert_true(moves >= 5);
  assert_true(probes <= (uint64_t)moves * (moves + 1)); /* a probe a piece: moves * (moves + 1) / 2, and slack */
}

/* resident pages of [p, p + n) */
static size_t resident(const char *p, size_t n) {
  static unsigned char vec[256];
  assert_true(n / 4096 <= sizeof vec);
  assert_int_equal(mincore((void *)p, n, vec), 0);
  size_t r = 0;
  for (size_t i = 0; i < n / 4096; i++) r += vec[i] & 1;
  return r;
}

/* A block grown by realloc out of its dense slot (100 KiB in a 128 KiB slot, to 140 KiB) when no slot of the new size
   (256 KiB) is cached takes the cached slot of the next size (512 KiB) a freed block of 400 KiB left, with its pages:
   the copy and the growth by small steps to 240 KiB (realloc'd in place, each step asking less than the pages the block
   holds) write resident pages, where a fresh slot would fault each of them in (a Python list grown past a dict's freed
   keys table), and the slot keeps no more of them than a slot of the block's own size (256 KiB): the rest go back. */
static void realloc_growth_takes_next_cached(void **state) {
  (void)state;
  if (guards_follow_blocks()) ms_skip_refused(0, "the secure build: a guard follows each block, so pages move with it");
  ms_heap_collect(1); /* no slot cached */
  char *x = ms_malloc(400 << 10);
  assert_non_null(x);
  touch(x, 400 << 10);
  ms_free(x);
  size_t n = 100 << 10;
  char *q = ms_malloc(n);
  assert_non_null(q);
  touch(q, n);
  long f0 = minor_faults();
  static const size_t steps[] = {140 << 10, 160 << 10, 200 << 10, 240 << 10};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    assert_non_null(q = ms_realloc(q, steps[i]));
    touch(q + n, steps[i] - n);
    n = steps[i];
  }
  long faults = minor_faults() - f0;
  fprintf(stderr, "realloc growth out of a dense slot: %ld page faults, %s slot\n", faults,
          q == x ? "the freed 512 KiB" : "another");
  assert_ptr_equal(q, x);
  assert_true(faults <= 4); /* 60 pages written */
  assert_int_equal(resident(x + (256 << 10), 144 << 10), 0);
  ms_free(q);
}

/* numpy's temporaries (bench/heap/numpy_churn.py: a = ones(n); b = a * 2.0; c = b + a, n of 1-40 MB of doubles,
   six results kept and one dropped at random): blocks of six slot sizes, each freed as one of another size is made.
   A block takes a cached slot of a larger size whose pages hold it as they are (large.c cached_fit), else fills
   up from several cached slots (borrow_pages), so the churn faults in less than one and a half times the most it
   holds at once; with one donor's tail per block and the rest faulted in while other slots held pages it faulted
   twice that. A 256 MiB block held untouched keeps the single-threaded budget from dropping cached pages
   (msi_large_trim); the purge delay is out of reach. The mappings stay bounded: a slot is eight at most. */
static void numpy_churn_reuses_cached_pages(void **state) {
  (void)state;
  if (guards_follow_blocks()) ms_skip_refused(0, "the secure build: a guard follows each block, so pages move with it");
  ms_heap_collect(1); /* no slot cached */
  enum { ROUNDS = 40, KEEP = 6 };
  char *hold = ms_malloc(256 * MSI_MiB), *a = NULL, *b = NULL, *kept[KEEP + 1];
  assert_non_null(hold);
  size_t na = 0, nb = 0, nk = 0, nkept[KEEP + 1], live = 0, most = 0;
  uint64_t x = 1;
  int maps_before = ms_test_mapping_count(), maps_max = 0;
  long f0 = minor_faults();
  for (int r = 0; r < ROUNDS; r++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = ((size_t)1 << 20) + (size_t)(x % (39 * MSI_MiB));
    char *v[3];
    for (int i = 0; i < 3; i++) {
      assert_non_null(v[i] = ms_malloc(n));
      touch(v[i], n);
      live += n;
      if (live > most) most = live;
      if (i == 0 && a) ms_free(a), live -= na;
      if (i == 1 && b) ms_free(b), live -= nb;
    }
    a = v[0], na = n, b = v[1], nb = n;
    kept[nk] = v[2], nkept[nk++] = n;
    if (nk > KEEP) {
      size_t j = (size_t)(x >> 32) % nk;
      assert_int_equal(kept[j][nkept[j] - 1], 1);
      ms_free(kept[j]);
      live -= nkept[j];
      kept[j] = kept[--nk], nkept[j] = nkept[nk];
    }
    int maps = ms_test_mapping_count();
    if (maps > maps_max) maps_max = maps;
  }
  long faults = minor_faults() - f0, most_pages = (long)(most / 4096);
  ms_free(a), ms_free(b);
  for (size_t j = 0; j < nk; j++) ms_free(kept[j]);
  ms_free(hold);
  ms_heap_collect(1);
  fprintf(stderr, "numpy churn: %ld page faults, %ld pages live at most; mappings %d before, %d at most\n", faults,
          most_pages, maps_before, maps_max);
  assert_true(faults < most_pages + most_pages / 2);
  assert_true(maps_max < maps_before + 2 * 64 + 9 * (KEEP + 3)); /* a slot: eight at most; cached ones too */
}

/* the cache's bound: the 'size' preset keeps at most 4 MiB of them over all their sizes */
static void bounded_in_bytes(void **state) {
  (void)state;
  msi_heap_set_preset(2);
  ms_heap_collect(1);
  static char *b[BATCH];
  for (int i = 0; i < BATCH; i++) {
    assert_non_null(b[i] = ms_malloc(40000));
    touch(b[i], 40000);
  }
  for (int i = 0; i < BATCH; i++) ms_free(b[i]);
  uint64_t allocated, cached, committed;
  msi_large_stats(&allocated, &cached, &committed);
  msi_heap_set_preset(1);
  ms_heap_collect(1);
  fprintf(stderr, "size preset: %llu KiB cached\n", (unsigned long long)(cached >> 10));
  assert_true(cached <= 4 * MSI_MiB);
  assert_true(cached >= 2 * MSI_MiB);
}

/* A fork while another thread gives a cached slot back (the purge paused by the test's hook between the slot's
   leaving the cache and its return to the free list) leaves the slot to the child given back: after a forced purge
   the child holds the committed large bytes the parent holds, none more */
#define DROP_BLOCK (3u << 20)
static sem_t drop_in, drop_go;
static _Atomic int drop_armed;
static void drop_paused(void) {
  int one = 1;
  if (!atomic_compare_exchange_strong(&drop_armed, &one, 0)) return;
  sem_post(&drop_in);
  while (sem_wait(&drop_go) != 0) {}
}
static void *drop_pass(void *arg) {
  (void)arg;
  msi_large_purge(0, 0, true);
  if (atomic_exchange(&drop_armed, 0)) sem_post(&drop_in); /* (no slot met: the test fails below) */
  return NULL;
}
static uint64_t large_committed(void) {
  uint64_t allocated, cached, committed;
  msi_large_purge(0, 0, true);
  msi_large_stats(&allocated, &cached, &committed);
  return committed;
}
static void fork_while_dropping(void **state) {
  (void)state;
  char *p = ms_malloc(DROP_BLOCK);
  assert_non_null(p);
  if (!msi_heap_in_large(p)) {
    ms_free(p);
    ms_skip_refused(0, "no large-slot area (a reservation cut down: RLIMIT_AS, a sanitizer)");
  }
  memset(p, 1, DROP_BLOCK);
  ms_free(p); /* cached */
  assert_int_equal(sem_init(&drop_in, 0, 0), 0);
  assert_int_equal(sem_init(&drop_go, 0, 0), 0);
  atomic_store(&drop_armed, 1);
  msi_large_drop_hook = drop_paused;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, drop_pass, NULL), 0);
  while (sem_wait(&drop_in) != 0) {}
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork(); /* the drop paused in another thread, its slot out of the cache */
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    uint64_t c = large_committed();
    _exit(write(fds[1], &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
  }
  close(fds[1]);
  sem_post(&drop_go);
  assert_int_equal(pthread_join(t, NULL), 0);
  msi_large_drop_hook = NULL;
  uint64_t parent = large_committed(), child = UINT64_MAX;
  assert_int_equal(read(fds[0], &child, sizeof child), (ssize_t)sizeof child);
  close(fds[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  print_message("committed large bytes after a forced purge: parent %llu KiB, child %llu KiB\n",
                (unsigned long long)parent >> 10, (unsigned long long)child >> 10);
  assert_int_equal(child, parent);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(malloc_free_loop_faults_nothing),
      cmocka_unit_test(batches_fault_nothing),
      cmocka_unit_test(realloc_growth_faults_little),
      cmocka_unit_test(realloc_growth_probes_little),
      cmocka_unit_test(realloc_growth_takes_next_cached),
      cmocka_unit_test(numpy_churn_reuses_cached_pages),
      cmocka_unit_test(bounded_in_bytes),
      cmocka_unit_test(fork_while_dropping),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
