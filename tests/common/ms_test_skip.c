/* ms_test_skip.c: makes cmocka's skips visible to CTest (the contract is at the top of ms_test.h). Linked into
   every ms_unit_test program with -Wl,--wrap=_skip,--wrap=_cmocka_run_group_tests: each skip() is counted
   (and named when no ms_skip_* macro gave its reason), and the group runner's result becomes the exit status
   1 on any failure, else MS_TEST_SKIP (77) when a case skipped, else 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "ms_test.h"

static unsigned skipped;    /* cases skipped in this process */
static int reason_printed;  /* the skip() that follows was announced by ms_test_skip_say */

int ms_test_skip_say(const char *kind, int err, const char *fmt, ...) {
  int fails = !strcmp(kind, "missing") && ms_test_ci();
  fflush(stdout);
  printf("MS_SKIP %s: ", kind);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  if (err) printf(": %s", strerror(err));
  printf("%s\n", fails ? " (CI=true: a failure)" : "");
  fflush(stdout);
  reason_printed = 1;
  return fails;
}

void __real__skip(const char *const file, const int line);
void __wrap__skip(const char *const file, const int line) {
  skipped++;
  if (!reason_printed) {
    fflush(stdout);
    printf("MS_SKIP unclassified: %s:%d (give the reason with ms_skip_refused or ms_skip_missing)\n", file, line);
    fflush(stdout);
  }
  reason_printed = 0;
  __real__skip(file, line);
}

int __real__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests,
                                   const size_t num_tests, CMFixtureFunction group_setup,
                                   CMFixtureFunction group_teardown);
int __wrap__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests,
                                   const size_t num_tests, CMFixtureFunction group_setup,
                                   CMFixtureFunction group_teardown) {
  int failed = __real__cmocka_run_group_tests(group_name, tests, num_tests, group_setup, group_teardown);
  fflush(stdout);
  if (failed) return 1; /* (a count of 256 would read as exit status 0) */
  if (skipped) {
    printf("MS_SKIP: %u case(s) of %s skipped, none failed: exit status %d (CTest: Skipped)\n", skipped, group_name,
           MS_TEST_SKIP);
    fflush(stdout);
    return MS_TEST_SKIP;
  }
  return 0;
}
