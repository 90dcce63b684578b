/* Statistics in a static link that uses the heap but never calls ms_pages_*: the page-layer counters are still
   reported (their source is registered beside the system-call wrappers, not with the page API). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "internal.h"

static void page_counters_without_page_api(void **state) {
  (void)state;
  void *p = ms_malloc(1 << 20);
  assert_non_null(p);
  ms_stats_t s;
  assert_int_equal(ms_stats_get(&s, sizeof s), 0);
  assert_true(s.os_calls > 0); /* the heap's own reservation (os_reserved_bytes counts ms_pages_* only) */
  ms_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(page_counters_without_page_api)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
