/* skip_probe: one case that passes and one that skips or fails as MS_PROBE says (test_skip_contract.sh runs it):
   refused (ms_skip_refused), missing (ms_skip_missing), plain (cmocka skip()), fail; unset: both pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include "ms_test.h"

static void passes(void **state) { (void)state; }
static void probe(void **state) {
  (void)state;
  const char *m = getenv("MS_PROBE");
  if (!m) return;
  if (!strcmp(m, "refused")) ms_skip_refused(EPERM, "mlock of %d pages", 4);
  if (!strcmp(m, "missing")) ms_skip_missing("python3-numpy");
  if (!strcmp(m, "plain")) skip();
  fail_msg("MS_PROBE=%s", m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(passes), cmocka_unit_test(probe)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
