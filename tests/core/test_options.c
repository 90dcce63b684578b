/* Option table and size parsing: suffixes, invalid values, defaults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include "internal.h"

static void parse_sizes(void **state) {
  (void)state;
  size_t v;
  assert_int_equal(ms_parse_size("0", &v), 0); assert_int_equal(v, 0);
  assert_int_equal(ms_parse_size("4096", &v), 0); assert_int_equal(v, 4096);
  assert_int_equal(ms_parse_size("4K", &v), 0); assert_int_equal(v, 4096);
  assert_int_equal(ms_parse_size("2m", &v), 0); assert_int_equal(v, 2u << 20);
  assert_int_equal(ms_parse_size("1G", &v), 0); assert_int_equal(v, 1u << 30);
  assert_int_equal(ms_parse_size("3GiB", &v), 0); assert_int_equal(v, 3ull << 30);
  assert_int_equal(ms_parse_size("5MB", &v), 0); assert_int_equal(v, 5u << 20);
  assert_int_equal(ms_parse_size("12B", &v), 0); assert_int_equal(v, 12);
  /* T, as docs/options.md and docs/contract.md §3 say */
  assert_int_equal(ms_parse_size("2T", &v), 0); assert_int_equal(v, 2ull << 40);
  assert_int_equal(ms_parse_size("1tib", &v), 0); assert_int_equal(v, 1ull << 40);
  assert_int_equal(ms_parse_size("3TB", &v), 0); assert_int_equal(v, 3ull << 40);
  assert_int_equal(ms_parse_size("16777215T", &v), 0); assert_int_equal(v, 16777215ull << 40);
  assert_int_equal(ms_parse_size("16777216T", &v), ERANGE); /* 2^64 */
  assert_int_equal(ms_parse_size("1P", &v), EINVAL);        /* no larger suffix */
  assert_int_equal(ms_parse_size("", &v), EINVAL);
  assert_int_equal(ms_parse_size("K", &v), EINVAL);
  assert_int_equal(ms_parse_size("-1", &v), EINVAL);
  assert_int_equal(ms_parse_size("1X", &v), EINVAL);
  assert_int_equal(ms_parse_size("1Gi", &v), EINVAL);
  assert_int_equal(ms_parse_size("99999999999999999999", &v), ERANGE);
  assert_int_equal(ms_parse_size("99999999999999G", &v), ERANGE);
  assert_int_equal(ms_parse_size(NULL, &v), EINVAL);
}

static void names_and_set(void **state) {
  (void)state;
  assert_string_equal(ms_option_name(MS_OPTION_CACHE), "MEMSPACE_CACHE");
  assert_string_equal(ms_option_name(MS_OPTION_SPILL_DIR), "MEMSPACE_SPILL_DIR");
  assert_null(ms_option_name(MS_OPTION_COUNT));
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 3), 0);
  assert_int_equal(ms_option_get(MS_OPTION_CACHE), 3);
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 7), EINVAL);
  assert_int_equal(ms_option_set(MS_OPTION_PURGE_DELAY, -1), 0);
  assert_int_equal(ms_option_set(MS_OPTION_COUNT, 1), EINVAL);
  /* docs/contract.md §3: MEMSPACE_HUGE_PAGES is 0, 2M or 1G, nothing else */
  assert_int_equal(ms_option_set(MS_OPTION_HUGE_PAGES, 3 << 20), EINVAL);
  assert_int_equal(ms_option_set(MS_OPTION_HUGE_PAGES, 4096), EINVAL);
  assert_int_equal(ms_option_set(MS_OPTION_HUGE_PAGES, 2 << 20), 0);
  assert_int_equal(ms_option_set(MS_OPTION_HUGE_PAGES, 1 << 30), 0);
  assert_int_equal(ms_option_set(MS_OPTION_HUGE_PAGES, 0), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(parse_sizes), cmocka_unit_test(names_and_set)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
