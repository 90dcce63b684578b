/* Messages: the allocation-free formatter (every conversion, width, truncation) and the write path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

#define CHECK(expect, ...) do { char b_[256]; size_t n_ = msi_snprintf(b_, sizeof b_, __VA_ARGS__); \
    assert_string_equal(b_, expect); assert_int_equal(n_, strlen(expect)); } while (0)

static void conversions(void **state) {
  (void)state;
  CHECK("plain", "plain");
  CHECK("a b", "%s %s", "a", "b");
  const char *volatile nul = NULL;
  CHECK("(null)", "%s", nul);
  CHECK("x", "%c", 'x');
  CHECK("-42 42 0", "%d %i %d", -42, 42, 0);
  CHECK("4294967295", "%u", 4294967295u);
  CHECK("ff", "%x", 255u);
  CHECK("-9223372036854775808", "%lld", (long long)INT64_MIN);
  CHECK("18446744073709551615", "%llu", (unsigned long long)UINT64_MAX);
  CHECK("ffffffffffffffff", "%llx", (unsigned long long)UINT64_MAX);
  CHECK("-5 7 1f", "%ld %lu %lx", -5L, 7UL, 31UL);
  CHECK("123 -4 abc", "%zu %zd %zx", (size_t)123, (ptrdiff_t)-4, (size_t)0xabc);
  CHECK("0x1000", "%p", (void *)0x1000);
  CHECK("100%", "100%%");
  CHECK("   42|42   |00042", "%5d|%-5d|%05d", 42, 42, 42);
  CHECK("  ab|ab  ", "%4s|%-4s", "ab", "ab");
  /* an unknown conversion is copied as is (called through a pointer: compilers would refuse the literal) */
  size_t (*fmt)(char *, size_t, const char *, ...) = msi_snprintf;
  char b[16];
  assert_int_equal(fmt(b, sizeof b, "%q"), 2);
  assert_string_equal(b, "%q");
}

static void truncation(void **state) {
  (void)state;
  char b[8];
  memset(b, 'Z', sizeof b);
  size_t n = msi_snprintf(b, sizeof b, "%s", "0123456789");
  assert_int_equal(n, 10);            /* the length it would have had */
  assert_string_equal(b, "0123456");  /* always terminated */
  assert_int_equal(msi_snprintf(b, 1, "abc"), 3);
  assert_string_equal(b, "");
  assert_int_equal(msi_snprintf(NULL, 0, "abc%d", 12), 5);
}

static void writes_to_stderr(void **state) {
  (void)state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  int saved = dup(2);
  dup2(fds[1], 2);
  errno = 1234;
  msi_warning("careful: %d", 7);
  msi_error("broken %s", "thing");
  ms_option_set(MS_OPTION_VERBOSE, 0);
  msi_verbose("hidden");
  ms_option_set(MS_OPTION_VERBOSE, 1);
  msi_verbose("shown %zu", (size_t)3);
  ms_option_set(MS_OPTION_VERBOSE, 0);
  assert_int_equal(errno, 1234); /* messages keep errno */
  dup2(saved, 2);
  close(fds[1]);
  char buf[512] = "";
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  assert_true(n > 0);
  buf[n] = 0;
  close(fds[0]);
  assert_string_equal(buf, "memspace: warning: careful: 7\nmemspace: error: broken thing\nmemspace: shown 3\n");
}

static void long_message_cut(void **state) {
  (void)state;
  char big[3000];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = 0;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  int saved = dup(2);
  dup2(fds[1], 2);
  msi_warning("%s", big);
  dup2(saved, 2);
  close(fds[1]);
  char buf[4096];
  ssize_t n = read(fds[0], buf, sizeof buf);
  close(fds[0]);
  assert_true(n > 0 && n <= 1024);
  assert_int_equal(buf[n - 1], '\n');
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(conversions), cmocka_unit_test(truncation),
                                     cmocka_unit_test(writes_to_stderr), cmocka_unit_test(long_message_cut)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
