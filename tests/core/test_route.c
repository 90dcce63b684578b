/* The front door (src/core/route.c, docs/design.md): a block changing owner in realloc keeps its bytes and lands
   where a request of its new size goes: a heap block growing past the spill threshold in spill, a spilled block
   shrinking below it in the heap, a heap block (small or large) in the process space once one is set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>
#include "memspace.h"

static size_t space_used(void) {
  ms_stats_t st;
  memset(&st, 0, sizeof st);
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  return st.space_used_bytes;
}

static void check_bytes(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i += 4093) assert_int_equal(p[i], v);
  assert_int_equal(p[n - 1], v);
}

static void spill_threshold_both_ways(void **state) {
  (void)state;
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 1 << 20), 0);
  unsigned char *p = ms_malloc(512 << 10);
  assert_non_null(p);
  assert_false(ms_spill_is(p));
  memset(p, 0x3c, 512 << 10);
  p = ms_realloc(p, 3 << 20); /* past the threshold: spilled */
  assert_non_null(p);
  assert_true(ms_spill_is(p));
  check_bytes(p, 512 << 10, 0x3c);
  memset(p, 0x4d, 3 << 20);
  p = ms_realloc(p, 256 << 10); /* below it: back in RAM */
  assert_non_null(p);
  assert_false(ms_spill_is(p));
  assert_true(ms_is_ours(p));
  check_bytes(p, 256 << 10, 0x4d);
  ms_free(p);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 0), 0);
}

static void heap_blocks_move_into_the_space(void **state) {
  (void)state;
  unsigned char *small = ms_malloc(100), *large = ms_malloc(300 << 10);
  assert_non_null(small);
  assert_non_null(large);
  memset(small, 0x11, 100);
  memset(large, 0x22, 300 << 10);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_AT, 1), 0);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_INITIAL, 16 << 20), 0);
  size_t used = space_used();
  small = ms_realloc(small, 200);
  assert_non_null(small);
  check_bytes(small, 100, 0x11);
  assert_true(space_used() >= used + 200);
  used = space_used();
  large = ms_realloc(large, 400 << 10);
  assert_non_null(large);
  check_bytes(large, 300 << 10, 0x22);
  assert_true(space_used() >= used + (400 << 10));
  ms_free(large);
  ms_free(small);
  assert_true(space_used() < used);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_INITIAL, 0), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(spill_threshold_both_ways),
      cmocka_unit_test(heap_blocks_move_into_the_space), /* last: the process space stays */
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
