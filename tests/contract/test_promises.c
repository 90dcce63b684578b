/* Promises of include/memspace.h that no part's own tests exercised (tests/contract/promises.tsv maps each
   promise to its test): ms_space_check and ms_space_walk report a damaged allocator as EFAULT (never a crash);
   the calls documented thread-safe give right answers when many threads call them at once (labelled tsan, so
   the TSan build checks them for races), creation calls and DMA accessors included. The page layer's mlock errnos are in test_promises_pages.c (TSan's
   runtime makes mlock succeed); the priority-inheriting lock of a thread-safe space in test_promises_pi.c (its
   case needs SCHED_FIFO threads, which a process without CAP_SYS_NICE or RLIMIT_RTPRIO is refused: a skip of its
   own). */
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
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
