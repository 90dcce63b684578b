/* The worst-case RSS above live bytes of docs/heap.md ("Caches and presets": the bound per preset), checked after a
   churn in a child process per preset (its own RSS baseline):
   - once idle for the purge delay (here: the delay set to 0 and one ms_heap_collect(0), so no clock is involved),
     RSS - live <= one empty span per class for the thread (0 with `none`) + this test's live fragmentation (the
     live set is allocated first, of exact class sizes: at most one partly used span per class) + metadata;
   - with `none`, at once after the frees, without any purge (MEMSPACE_PURGE_DELAY=-1): the same bound.
   Under ThreadSanitizer, of the heap region's resident pages (rss() below).
   Deterministic: a fixed PRNG seed, one thread, no timing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heap.h"

#define LIVE_N 8192
#define CHURN_N 4096
#define OPS 200000
static void *live[LIVE_N], *churn[CHURN_N];

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void) {
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1DULL;
}

/* one empty span per class: what a thread's classes keep once idle (heap.c msi_heap_small_free_slow, keep_empty_current) */
static size_t current_spans_bytes(void) {
  size_t b = 0;
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) b += (size_t)msi_heap_class_chunks[c] * MSI_HEAP_CHUNK;
  return b;
}

static size_t churn_size(void) {
  uint64_t r = next_rand();
  if (r % 16 == 0) return 32768 + (size_t)(next_rand() % (4u << 20)); /* large: 32 KiB-4 MiB */
  return 16 + (size_t)(next_rand() % 32752);                         /* small: every class */
}

/* The resident bytes the bound is about: the process's (/proc/self/statm). Under ThreadSanitizer the heap
   region's alone (its mappings' Rss in /proc/self/smaps): the runtime's shadow of every byte the churn wrote lies
   in mappings of its own and stays resident when the heap gives the pages back (RSS - live there is several
   times the region's own), while metadata outside the region is left out. */
static size_t rss(void) {
  if (!MS_TEST_TSAN) return ms_test_rss_bytes();
  uintptr_t lo = msi_heap_g.table_area ? msi_heap_g.table_area : msi_heap_g.base;
  uintptr_t hi = msi_heap_g.base + msi_heap_g.small_size;
  if (msi_heap_g.large_size && msi_heap_g.large_base < lo) lo = msi_heap_g.large_base;
  if (msi_heap_g.large_size && msi_heap_g.large_base + msi_heap_g.large_size > hi)
    hi = msi_heap_g.large_base + msi_heap_g.large_size;
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return 0;
  char line[512];
  size_t kb = 0, v;
  bool in = false;
  while (fgets(line, sizeof line, f)) {
    unsigned long a, b;
    if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
      in = a >= lo && b <= hi;
    else if (in && sscanf(line, "Rss: %zu kB", &v) == 1)
      kb += v;
  }
  fclose(f);
  return kb * 1024;
}

/* in a child: 0 when the bound holds, 1 when not (the figures on stderr) */
static int run_preset(int preset) {
  if (ms_option_set(MS_OPTION_CACHE, preset) != 0 || ms_option_set(MS_OPTION_PURGE_DELAY, -1) != 0) return 2;
  ms_free(ms_malloc(64)); /* the heap set up */
  size_t base = rss(), live_bytes = 0;
  for (int i = 0; i < LIVE_N; i++) { /* exact class sizes 64-4096 B: no rounding */
    size_t sz = (size_t)64 << (i % 7);
    live[i] = ms_malloc(sz);
    if (!live[i]) return 2;
    memset(live[i], 1, sz);
    live_bytes += sz;
  }
  for (int op = 0; op < OPS; op++) {
    int k = (int)(next_rand() % CHURN_N);
    if (churn[k]) {
      ms_free(churn[k]);
      churn[k] = NULL;
    } else {
      size_t sz = churn_size();
      churn[k] = ms_malloc(sz);
      if (!churn[k]) return 2;
      memset(churn[k], 2, sz < 8192 ? sz : 8192);
      ((char *)churn[k])[sz - 1] = 3;
    }
  }
  for (int k = 0; k < CHURN_N; k++) ms_free(churn[k]);
  /* live fragmentation: one partly used span per class of the live set (7 classes); metadata: segment headers
     and the thread heap, under 1 MiB here */
  size_t frag = 7 * 8 * MSI_HEAP_CHUNK, meta = 1 << 20;
  size_t spans = preset == 3 ? 0 : current_spans_bytes();
  size_t bound = spans + frag + meta;
  int bad = 0;
  if (preset == 3) {
    size_t over = rss() - base - live_bytes;
    if (over > bound) {
      fprintf(stderr, "none, at once: RSS - live = %zu > bound %zu\n", over, bound);
      bad = 1;
    }
  }
  ms_option_set(MS_OPTION_PURGE_DELAY, 0);
  ms_heap_collect(0); /* what has been idle for the purge delay */
  size_t now = rss(), over = now > base + live_bytes ? now - base - live_bytes : 0;
  fprintf(stderr, "preset %d: live %zu, RSS - live %zu once idle (bound %zu: spans %zu)\n", preset, live_bytes, over,
          bound, spans);
  if (over > bound) bad = 1;
  for (int i = 0; i < LIVE_N; i++) ms_free(live[i]);
  return bad;
}

static void check(int preset) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(run_preset(preset));
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

static void bound_unlimited(void **state) { (void)state; check(0); }
static void bound_performance(void **state) { (void)state; check(1); }
static void bound_size(void **state) { (void)state; check(2); }
static void bound_none(void **state) { (void)state; check(3); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bound_unlimited),
      cmocka_unit_test(bound_performance),
      cmocka_unit_test(bound_size),
      cmocka_unit_test(bound_none),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
