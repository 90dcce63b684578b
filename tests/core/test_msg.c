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

/* what `stmt` writes to stderr, into the array buf */
#define CAPTURE(buf, stmt) do { int p_[2]; assert_int_equal(pipe(p_), 0); int s_ = dup(2); dup2(p_[1], 2); stmt; \
    dup2(s_, 2); close(s_); close(p_[1]); ssize_t n_ = read(p_[0], buf, sizeof buf - 1); close(p_[0]); \
    buf[n_ > 0 ? n_ : 0] = 0; } while (0)

/* an errno value in a message by its name and meaning, a number only for one the table lacks (no "(error 12)") */
static void errno_names(void **state) {
  (void)state;
  char b[32];
  assert_string_equal(msi_errtext(ENOMEM, b, sizeof b), "ENOMEM: out of memory");
  assert_string_equal(msi_errtext(ENXIO, b, sizeof b), "ENXIO: no such device or address");
  assert_string_equal(msi_errtext(EPIPE, b, sizeof b), "EPIPE: broken pipe");
  assert_string_equal(msi_errtext(4095, b, sizeof b), "error code 4095");
  assert_string_equal(msi_errtext(-5, b, sizeof b), "error code -5");
  assert_string_equal(msi_strerror(4095), "an unlisted error code"); /* unchanged for its callers */
  char out[256];
  CAPTURE(out, msi_warning("mlock refused (%s), then (%s)", MSI_ERRNO(EPERM), MSI_ERRNO(9999)));
  assert_string_equal(out, "memspace: warning: mlock refused (EPERM: operation not permitted), then (error code 9999)\n");
}

/* a size in the largest unit it holds one of, a tenth shown when not whole: never "0 MiB" for 512 KiB */
static void size_units(void **state) {
  (void)state;
  char b[24];
  assert_string_equal(msi_sizetext(0, b, sizeof b), "0 bytes");
  assert_string_equal(msi_sizetext(1, b, sizeof b), "1 byte");
  assert_string_equal(msi_sizetext(1023, b, sizeof b), "1023 bytes");
  assert_string_equal(msi_sizetext(1024, b, sizeof b), "1 KiB");
  assert_string_equal(msi_sizetext(1536, b, sizeof b), "1.5 KiB");
  assert_string_equal(msi_sizetext(2047, b, sizeof b), "1.9 KiB"); /* cut, not rounded up to 2 */
  assert_string_equal(msi_sizetext(512 << 10, b, sizeof b), "512 KiB");
  assert_string_equal(msi_sizetext((1 << 20) - 1, b, sizeof b), "1023.9 KiB");
  assert_string_equal(msi_sizetext(3 << 20, b, sizeof b), "3 MiB");
  assert_string_equal(msi_sizetext(3ull << 29, b, sizeof b), "1.5 GiB");
  assert_string_equal(msi_sizetext(5ull << 40, b, sizeof b), "5 TiB");
  assert_string_equal(msi_sizetext(5ull << 50, b, sizeof b), "5120 TiB");
  assert_string_equal(msi_sizetext(UINT64_MAX, b, sizeof b), "16777215.9 TiB");
}

/* spill's full-disk warning gives both sizes in a unit that shows them: a 512 KiB block on a disk with nothing
   free read "(0 MiB free, 0 MiB asked for)" */
void msi_sp_report_disk_full(size_t need);
static void disk_full_sizes(void **state) {
  (void)state;
  char buf[1024];
  CAPTURE(buf, msi_sp_report_disk_full(512 << 10));
  printf("%s", buf);
  assert_non_null(strstr(buf, "is full (0 bytes free, 512 KiB asked for)"));
}


/* A message's arguments show their control bytes escaped: a space name "\x1b[2J" or a MEMSPACE_SPILL_DIR with an
   escape sequence reached the terminal raw (and cleared it). Plain and UTF-8 text stays as it is; the format's own
   text, and msi_snprintf (paths, file contents), are untouched. */
static void controls_escaped(void **state) {
  (void)state;
  char buf[1024];
  CAPTURE(buf, msi_warning("space %s: dir %s; %c", "\x1b[2J\x07", "/tmp/a\nb\r\x7f", '\t'));
  assert_string_equal(buf, "memspace: warning: space \\x1b[2J\\x07: dir /tmp/a\\x0ab\\x0d\\x7f; \\x09\n");
  /* UTF-8 stays readable; C1 controls (U+009B CSI as UTF-8, a bare 0x9b) do not pass */
  CAPTURE(buf, msi_error("%s|%s|%s", "caf\xc3\xa9 \xe2\x82\xac", "\xc2\x9b" "2J", "a\x9b" "b"));
  assert_string_equal(buf, "memspace: error: caf\xc3\xa9 \xe2\x82\xac|\\xc2\\x9b2J|a\\x9bb\n");
  /* a bare C1 byte after a complete character or a byte no sequence starts with is escaped too; the
     continuation bytes of a character (0x82 of the euro sign) stay as they are */
  CAPTURE(buf, msi_error("%s|%s|%s", "\xff\x9b" "2J", "\xc3\xa9\x9b" "2J", "\xe2\x82\xac\xe2\x82\x9b"));
  assert_string_equal(buf, "memspace: error: \xff\\x9b2J|\xc3\xa9\\x9b2J|\xe2\x82\xac\xe2\x82\x9b\n");
  /* a width counts the escaped text */
  CAPTURE(buf, msi_error("[%6s]", "\x1b"));
  assert_string_equal(buf, "memspace: error: [  \\x1b]\n");
  /* a cut long argument escapes both of its ends */
  char arg[2000];
  memset(arg, 'a', sizeof arg - 1), arg[sizeof arg - 1] = 0, arg[0] = 0x1b, arg[sizeof arg - 2] = 0x1b;
  CAPTURE(buf, msi_error("%s", arg));
  assert_null(strchr(buf, 0x1b));
  assert_non_null(strstr(buf, "\\x1baaa"));
  assert_non_null(strstr(buf, "...aaa"));
  assert_non_null(strstr(buf, "a\\x1b\n"));
  char plain[64];
  msi_snprintf(plain, sizeof plain, "%s", "a\x1b\n");
  assert_string_equal(plain, "a\x1b\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(conversions),      cmocka_unit_test(truncation),
                                     cmocka_unit_test(writes_to_stderr), cmocka_unit_test(long_message_cut),
                                     cmocka_unit_test(errno_names),      cmocka_unit_test(size_units),
                                     cmocka_unit_test(disk_full_sizes),
                                     cmocka_unit_test(controls_escaped)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
