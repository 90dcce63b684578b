/* Promises of include/memspace.h that no part's own tests exercised (tests/contract/promises.tsv maps each
   promise to its test): ms_space_check and ms_space_walk report a damaged allocator as EFAULT (never a crash);
   the calls documented thread-safe give right answers when many threads call them at once (labelled tsan, so
   the TSan build checks them for races), creation calls and DMA accessors included. The page layer's mlock errnos are in test_promises_pages.c (TSan's
   runtime makes mlock succeed). A thread-safe space's lock is priority-inheriting: a real-time thread waiting
   for it lends its priority to the holder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "memspace.h"
#include "ms_test.h"

/* ---- ms_space_check / ms_space_walk: EFAULT for an inconsistency ---- */

static int first_block(const void *block, size_t size, int used, void *arg) {
  (void)size, (void)used;
  *(const void **)arg = block;
  return 1;
}
static int count_blocks(const void *block, size_t size, int used, void *arg) {
  (void)block, (void)size, (void)used;
  ++*(size_t *)arg;
  return 0;
}

#define ARENA (256 * 1024)
static _Alignas(4096) unsigned char arena[ARENA];
static unsigned char pristine[ARENA];
/* where the bitmaps and maps start at the latest: below it lies the space's own struct (its pointers to them and
   its region table), which check and walk trust (the header says so) */
#define META 8192

/* A space in caller memory, so the test owns every byte of its metadata: each damaged copy of it (one metadata
   byte flipped or cleared) is checked in a child (a crash there fails the test, naming the offset). check must
   find some of the damage (EFAULT); walk, which only follows the blocks' tiling, may or may not, but never
   crashes and fails only with EFAULT. */
static void check_and_walk_report_corruption(void **state) {
  (void)state;
  ms_option_set(MS_OPTION_SECURE, 0);
  memset(arena, 0xff, ARENA); /* create_in zeroes the metadata it lays out: garbage before it does not count */
  ms_space_t *s = ms_space_create_in(arena, ARENA, 0);
  assert_non_null(s);
  assert_int_equal(ms_space_check(s), 0);
  for (int i = 0; i < 40; i++) assert_non_null(ms_space_malloc(s, (size_t)16 << (i % 8)));
  assert_int_equal(ms_space_check(s), 0);
  const void *data = NULL;
  assert_int_equal(ms_space_walk(s, first_block, &data), 1);
  assert_non_null(data);
  size_t meta_end = (size_t)((const unsigned char *)data - arena);
  assert_true(meta_end > META && meta_end < ARENA);
  memcpy(pristine, arena, ARENA);
  unsigned check_efault = 0, walk_efault = 0, bad = 0;
  for (size_t step = 0; step < 2 * (meta_end - META); step += 97) {
    size_t off = META + step / 2;
    memcpy(arena, pristine, ARENA);
    arena[off] = step & 1 ? 0 : arena[off] ^ 0x5a; /* a flipped byte, or a cleared one */
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      signal(SIGSEGV, SIG_DFL); /* cmocka's handler would carry on with the next test in this child */
      signal(SIGBUS, SIG_DFL);
      int c = ms_space_check(s);
      int ce = errno;
      size_t n = 0;
      int w = ms_space_walk(s, count_blocks, &n);
      int we = errno;
      int bits = (c == EFAULT && ce == EFAULT ? 1 : 0) | (w == EFAULT && we == EFAULT ? 2 : 0);
      if ((c != 0 && c != EFAULT) || (w != 0 && w != EFAULT)) bits = 4;
      _exit(16 | bits); /* 16: the child got this far (a sanitizer's report exits with another code) */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || (WEXITSTATUS(st) & ~3) != 16)
      print_error("metadata byte %zu flipped: check/walk %s %d\n", off, WIFEXITED(st) ? "exited with an unexpected status"
                                                                                  : "died with signal",
               WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    bad += !WIFEXITED(st) || (WEXITSTATUS(st) & ~3) != 16;
    if (!WIFEXITED(st)) continue;
    check_efault += (WEXITSTATUS(st) & 1) != 0;
    walk_efault += (WEXITSTATUS(st) & 2) != 0;
  }
  memcpy(arena, pristine, ARENA);
  assert_int_equal(ms_space_check(s), 0);
  printf("%u damaged copies reported EFAULT by check, %u by walk\n", check_efault, walk_efault);
  assert_int_equal(bad, 0);
  assert_true(check_efault > 0);
  ms_space_destroy(s);
}

/* ---- thread safety: many threads calling the calls documented thread-safe ---- */

#define THREADS 4
#define ROUNDS 2000

/* runs `fn` in THREADS threads (argument: the thread's index); a thread returns NULL or the call that failed */
static void run_threads(void *(*fn)(void *)) {
  pthread_t t[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&t[i], NULL, fn, (void *)i), 0);
  for (int i = 0; i < THREADS; i++) {
    void *r = NULL;
    assert_int_equal(pthread_join(t[i], &r), 0);
    if (r) fail_msg("%s gave a wrong answer under concurrency", (const char *)r);
  }
}

static void sink(const char *text, void *arg) {
  *(size_t *)arg += strlen(text);
}

static void *readers(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  void *mine = ms_malloc(64);
  for (int i = 0; i < ROUNDS; i++) {
    if (ms_version() != MEMSPACE_VERSION_MAJOR * 10000 + MEMSPACE_VERSION_MINOR * 100 + MEMSPACE_VERSION_PATCH)
      return "ms_version";
    if (ms_page_size() != (size_t)sysconf(_SC_PAGESIZE)) return "ms_page_size";
    size_t v = 0;
    if (ms_parse_size("3K", &v) || v != 3072) return "ms_parse_size";
    if (ms_option_get(MS_OPTION_VERBOSE) != 0) return "ms_option_get";
    ms_option_set(MS_OPTION_PURGE_DELAY, (long long)(id * 10 + (unsigned)i % 10));
    if (ms_option_get(MS_OPTION_PURGE_DELAY) < 0) return "ms_option_get after ms_option_set";
    errno = 0;
    if (ms_option_get_string(MS_OPTION_CACHE) || errno != EINVAL) return "ms_option_get_string";
    if (!ms_is_ours(mine) || ms_spill_is(mine)) return "ms_is_ours/ms_spill_is";
    if (i % 500 == 0) {
      ms_stats_t st;
      if (ms_stats_get(&st, sizeof st) || st.version != MS_STATS_VERSION) return "ms_stats_get";
      const ms_stats_class_t *c = ms_stats_class(&st, 0);
      if (c->block_size == 0) return "ms_stats_class";
      size_t bytes = 0;
      ms_output_fn *out = sink;
      ms_stats_print(out, &bytes, i % 1000 ? 0 : MS_STATS_JSON);
      if (bytes == 0) return "ms_stats_print";
    }
  }
  ms_free(mine);
  return NULL;
}

/* ---- MS_SPACE_THREAD_SAFE: a priority-inheriting lock (docs/contract.md §4) ---- */
/* A SCHED_FIFO thread of priority 10 holds the space's lock (inside ms_space_walk's visit, which runs under it)
   while one of priority 30 calls ms_space_malloc on the same space: with priority inheritance the holder runs at
   30 until it lets go, which the kernel shows as its effective priority (/proc/self/task/TID/stat field 18:
   -1 - the real-time priority). Behaviour, not timing: the wait for the boost is only bounded, never measured. */
#define PI_LOW 10
#define PI_HIGH 30
static ms_space_t *pi_space;
static atomic_int pi_holding, pi_release, pi_low_tid;

static int pi_hold(const void *block, size_t size, int used, void *arg) {
  (void)block, (void)size, (void)used, (void)arg;
  atomic_store(&pi_holding, 1);
  while (!atomic_load(&pi_release)) usleep(1000);
  return 1;
}
static void *pi_low(void *arg) {
  (void)arg;
  atomic_store(&pi_low_tid, (int)syscall(SYS_gettid));
  return ms_space_walk(pi_space, pi_hold, NULL) == 1 ? NULL : "ms_space_walk";
}
static void *pi_high(void *arg) {
  (void)arg;
  void *p = ms_space_malloc(pi_space, 64);
  ms_space_free(pi_space, p);
  return p ? NULL : "ms_space_malloc";
}
/* the effective priority the kernel gives thread `tid` (field 18 of its stat line), or 0 when unreadable */
static int kernel_prio(int tid) {
  char path[64], line[1024];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = 0;
  const char *p = strrchr(line, ')'); /* past the command name, which may hold spaces */
  int prio = 0;
  for (int field = 2; p && *p; p++)
    if (*p == ' ' && ++field == 18) { prio = atoi(p + 1); break; }
  return prio;
}
static int fifo_thread(pthread_t *t, int prio, void *(*fn)(void *)) {
  pthread_attr_t a;
  struct sched_param sp = {.sched_priority = prio};
  pthread_attr_init(&a);
  pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
  pthread_attr_setschedpolicy(&a, SCHED_FIFO);
  pthread_attr_setschedparam(&a, &sp);
  int r = pthread_create(t, &a, fn, NULL);
  pthread_attr_destroy(&a);
  return r;
}
static int wait_prio(int tid, int want) {
  int prio = 0;
  for (int i = 0; i < 20000 && (prio = kernel_prio(tid)) != want; i++) usleep(500); /* (a bound: 10 s) */
  return prio;
}

static void thread_safe_lock_inherits_priority(void **state) {
  (void)state;
  pi_space = ms_space_create(&(ms_space_config_t){.initial_size = 1 << 20, .flags = MS_SPACE_THREAD_SAFE, .numa_node = -1});
  assert_non_null(pi_space);
  atomic_store(&pi_holding, 0), atomic_store(&pi_release, 0), atomic_store(&pi_low_tid, 0);
  pthread_t low, high;
  int r = fifo_thread(&low, PI_LOW, pi_low);
  if (r) {
    ms_space_destroy(pi_space);
    ms_skip_refused(r, "a SCHED_FIFO thread (CAP_SYS_NICE or RLIMIT_RTPRIO)");
  }
  for (int i = 0; i < 10000 && !atomic_load(&pi_holding); i++) usleep(1000); /* (a bound: 10 s) */
  if (!atomic_load(&pi_holding)) {
    void *low_r = NULL;
    pthread_join(low, &low_r);
    fail_msg("ms_space_walk never called its visit: %s", low_r ? (const char *)low_r : "(returned)");
  }
  int tid = atomic_load(&pi_low_tid);
  int before = wait_prio(tid, -1 - PI_LOW);
  r = fifo_thread(&high, PI_HIGH, pi_high);
  int boosted = r ? 0 : wait_prio(tid, -1 - PI_HIGH);
  atomic_store(&pi_release, 1);
  void *low_r = NULL, *high_r = NULL;
  assert_int_equal(pthread_join(low, &low_r), 0);
  if (!r) assert_int_equal(pthread_join(high, &high_r), 0);
  ms_space_destroy(pi_space);
  if (r) ms_skip_refused(r, "a second SCHED_FIFO thread");
  if (low_r || high_r) fail_msg("%s failed", low_r ? (const char *)low_r : (const char *)high_r);
  assert_int_equal(before, -1 - PI_LOW);
  if (boosted != -1 - PI_HIGH)
    fail_msg("the lock holder's priority is %d while a priority-%d thread waits for the lock, not %d: the lock of "
             "a MS_SPACE_THREAD_SAFE space does not inherit priority", boosted, PI_HIGH, -1 - PI_HIGH);
}

static void concurrent_thread_safe_calls(void **state) {
  (void)state;
  ms_option_set(MS_OPTION_VERBOSE, 0);
  run_threads(readers);
}

/* the page layer: every thread reserves, commits, resets, decommits, locks and releases its own ranges */
static void *pager(void *arg) {
  (void)arg;
  size_t ps = ms_page_size();
  for (int i = 0; i < 200; i++) {
    ms_pages_t p;
    if (ms_pages_reserve(16 * ps, 0, 0, -1, &p)) return "ms_pages_reserve";
    if (ms_pages_commit(p.addr, 4 * ps)) return "ms_pages_commit";
    memset(p.addr, 0xab, 4 * ps);
    if (ms_pages_populate(p.addr, 4 * ps)) return "ms_pages_populate";
    if (ms_pages_reset(p.addr, ps)) return "ms_pages_reset";
    if (ms_pages_decommit((char *)p.addr + ps, ps)) return "ms_pages_decommit";
    int l = ms_pages_lock(p.addr, ps);
    if (l && l != EPERM && l != ENOMEM && l != EAGAIN) return "ms_pages_lock";
    if (!l && ms_pages_unlock(p.addr, ps)) return "ms_pages_unlock";
    if (ms_pages_commit((char *)p.addr + ps, ps) || ((unsigned char *)p.addr)[ps] != 0) return "decommit zero";
    if (ms_pages_release(p.addr, p.size)) return "ms_pages_release";
  }
  return NULL;
}

static void concurrent_pages(void **state) {
  (void)state;
  run_threads(pager);
}

/* creation calls and the DMA accessors from several threads: each thread makes and destroys its own space in
   caller memory, frame allocator and DMA buffer (a refused mlock leaves the DMA part out), and injects and
   disarms faults on an operation no other step here uses */
static _Alignas(4096) unsigned char areas[THREADS][64 * 1024];

static void *creator(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  unsigned char src[4096];
  memset(src, (int)id + 1, sizeof src);
  for (int i = 0; i < 50; i++) {
    ms_fault_op_t op = MS_FAULT_FALLOCATE;
    ms_fault_inject(op, 0, 0);
    ms_space_t *s = ms_space_create_in(areas[id], sizeof areas[id], MS_SPACE_ZERO);
    if (!s) return "ms_space_create_in";
    unsigned char *b = ms_space_malloc(s, 100);
    if (!b || b[99] != 0 || ((uintptr_t)b & 15)) return "ms_space_malloc in a create_in space";
    ms_space_destroy(s);
    ms_frame_config_t fc;
    memset(&fc, 0, sizeof fc);
    fc.range_size = 64 * 1024;
    fc.idle_ms = -1;
    ms_frame_t *f = ms_frame_create(&fc);
    if (!f || !ms_frame_alloc(f, 100, 0)) return "ms_frame_create";
    ms_frame_destroy(f);
    ms_dma_config_t dc;
    memset(&dc, 0, sizeof dc);
    dc.page_size = ms_page_size();
    dc.numa_node = -1;
    ms_dma_buffer_t *d = ms_dma_alloc(sizeof src, &dc);
    if (!d) {
      if (errno == EPERM || errno == ENOMEM || errno == EAGAIN) continue;
      return "ms_dma_alloc";
    }
    if (ms_dma_movable(d) != 1 || ms_dma_page_size(d) != ms_page_size()) return "ms_dma_movable/ms_dma_page_size";
    ms_dma_copy(ms_dma_addr(d), src, sizeof src);
    ms_dma_fence();
    if (memcmp(ms_dma_addr(d), src, sizeof src) != 0) return "ms_dma_copy";
    ms_dma_free(d);
    ms_dma_buffer_t *r = ms_dma_register(areas[id], sizeof areas[id], NULL); /* whole pages, unused by then */
    if (!r) {
      if (errno == EPERM || errno == ENOMEM || errno == EAGAIN) continue;
      return "ms_dma_register";
    }
    if (ms_dma_size(r) != sizeof areas[id] || ms_dma_addr(r) != areas[id]) return "ms_dma_register's buffer";
    ms_dma_free(r);
  }
  return NULL;
}

static void concurrent_creation(void **state) {
  (void)state;
  run_threads(creator);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(check_and_walk_report_corruption),
      cmocka_unit_test(concurrent_thread_safe_calls),
      cmocka_unit_test(concurrent_pages),
      cmocka_unit_test(concurrent_creation),
      cmocka_unit_test(thread_safe_lock_inherits_priority),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
