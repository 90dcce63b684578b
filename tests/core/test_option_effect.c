/* ms_option_set takes effect for the rest of the process (memspace.h): the spill threshold and the process space
   route the next allocations, the cache preset empties and limits the caches at once, the secure checks follow;
   a refused value sets errno. Each case reads the part's own statistics, not the option's value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "memspace.h"

static ms_stats_t stats(void) {
  ms_stats_t st;
  memset(&st, 0, sizeof st);
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  return st;
}

static void spill_threshold_routes_at_once(void **state) {
  (void)state;
  assert_int_equal(ms_option_get(MS_OPTION_SPILL_THRESHOLD), 0);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 1 << 20), 0);
  char *p = ms_malloc(4 << 20);
  assert_non_null(p);
  memset(p, 0x5a, 4 << 20);
  ms_stats_t st = stats();
  assert_int_equal(st.spill_blocks, 1);
  char *small = ms_malloc(512 << 10);                        /* under the threshold: the heap */
  assert_non_null(small);
  assert_int_equal(stats().spill_blocks, st.spill_blocks);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 0), 0);
  char *q = ms_malloc(4 << 20); /* spill off again: RAM */
  assert_non_null(q);
  assert_int_equal(stats().spill_blocks, st.spill_blocks);
  assert_int_equal(p[(4 << 20) - 1], 0x5a);
  ms_free(q);
  ms_free(small);
  ms_free(p);
  assert_int_equal(stats().spill_blocks, 0);
}

static void process_space_routes_at_once(void **state) {
  (void)state;
  void *before = ms_malloc(100);
  assert_int_equal(stats().space_count, 0);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_AT, 1), 0);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_INITIAL, 8 << 20), 0);
  void *in = ms_malloc(100);
  assert_non_null(in);
  ms_stats_t st = stats();
  assert_int_equal(st.space_count, 1);
  assert_true(st.space_used_bytes >= 100);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_INITIAL, 0), 0);
  void *after = ms_malloc(100); /* the heap again; the space keeps what it holds */
  assert_int_equal(stats().space_used_bytes, st.space_used_bytes);
  ms_free(in); /* each block goes back to its owner */
  assert_true(stats().space_used_bytes < st.space_used_bytes);
  ms_free(before);
  ms_free(after);
}

static void cache_preset_applies_at_once(void **state) {
  (void)state;
  assert_int_equal(ms_option_set(MS_OPTION_PURGE_DELAY, 86400000), 0); /* nothing purged behind the test's back */
  void *blocks[8];
  for (int i = 0; i < 8; i++) blocks[i] = ms_malloc(1 << 20);
  for (int i = 0; i < 8; i++) ms_free(blocks[i]);
  /* heap_cached_bytes also counts the free blocks of spans in use: under 1 MiB here */
  assert_true(stats().heap_cached_bytes >= (8u << 20)); /* the default preset caches freed large blocks */
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 3), 0); /* none */
  assert_true(stats().heap_cached_bytes < (1u << 20));
  for (int i = 0; i < 8; i++) blocks[i] = ms_malloc(1 << 20);
  for (int i = 0; i < 8; i++) ms_free(blocks[i]);
  assert_true(stats().heap_cached_bytes < (1u << 20));
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 1), 0);
}

static void refusals_set_errno(void **state) {
  (void)state;
  errno = 0;
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 7), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_option_set(MS_OPTION_COUNT, 1), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_DIR, 1), EINVAL);
  assert_int_equal(errno, EINVAL);
}

int main(void) {
  if (getenv("MEMSPACE_SPILL_THRESHOLD") || getenv("MEMSPACE_SPACE_INITIAL") || getenv("MEMSPACE_CACHE")) {
    fprintf(stderr, "test_option_effect: run without MEMSPACE_SPILL_THRESHOLD, MEMSPACE_SPACE_INITIAL, MEMSPACE_CACHE\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(spill_threshold_routes_at_once), cmocka_unit_test(process_space_routes_at_once),
      cmocka_unit_test(cache_preset_applies_at_once), cmocka_unit_test(refusals_set_errno)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
