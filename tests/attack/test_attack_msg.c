/* A message whose string argument (a spill directory, a file name) is longer than the message buffer keeps its
   reason: the long argument is cut in its middle ("..."), the text after it stays whole. Cut at the end, a long
   MEMSPACE_SPILL_DIR would print "spill directory /a/b/c..." without saying what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

static size_t message_of(char *out, size_t cap, const char *arg) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  msi_error_to(fds[1], "spill directory %s is not usable (%s): tail %d", arg, "missing", 42);
  close(fds[1]);
  ssize_t n = read(fds[0], out, cap - 1);
  close(fds[0]);
  assert_true(n > 0);
  out[n] = 0;
  return (size_t)n;
}

static void long_argument_keeps_reason(void **state) {
  (void)state;
  static char arg[6000], out[4096];
  memset(arg, 'e', sizeof arg - 1);
  memcpy(arg, "/head", 5);
  memcpy(arg + sizeof arg - 6, "/last", 5);
  size_t n = message_of(out, sizeof out, arg);
  assert_true(n <= 1024);
  assert_non_null(strstr(out, "memspace: error: spill directory /head"));
  assert_non_null(strstr(out, "...")); /* the cut */
  assert_non_null(strstr(out, "/last is not usable (missing): tail 42\n"));
}

static void short_argument_whole(void **state) {
  (void)state;
  char out[2048], arg[600];
  memset(arg, 'f', sizeof arg - 1);
  arg[sizeof arg - 1] = 0;
  message_of(out, sizeof out, arg);
  assert_non_null(strstr(out, arg)); /* fits: printed whole, no cut */
  assert_null(strstr(out, "..."));
  assert_non_null(strstr(out, "(missing): tail 42\n"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(long_argument_keeps_reason), cmocka_unit_test(short_argument_whole)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
