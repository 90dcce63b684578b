/* Statistics: ms_stats_get (size/version prefix), ms_stats_print as text and as JSON (checked by python3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

static char out[65536];
static void to_buf(const char *text, void *arg) {
  (void)arg;
  size_t n = strlen(out);
  snprintf(out + n, sizeof out - n, "%s", text);
}

static void get(void **state) {
  (void)state;
  ms_stats_t s;
  assert_int_equal(ms_stats_get(NULL, sizeof s), EINVAL);
  assert_int_equal(ms_stats_get(&s, 4), EINVAL);
  memset(&s, 0xff, sizeof s);
  assert_int_equal(ms_stats_get(&s, sizeof s), 0);
  assert_int_equal(s.size, sizeof s);
  assert_int_equal(s.version, MS_STATS_VERSION);
  /* an older caller knowing only the page-layer prefix gets exactly that */
  ms_pages_t r;
  assert_int_equal(ms_pages_reserve(1 << 16, 0, MS_PAGES_COMMIT, -1, &r), 0);
  size_t prefix = offsetof(ms_stats_t, os_committed_bytes) + sizeof(uint64_t);
  unsigned char buf[sizeof(ms_stats_t)];
  memset(buf, 0xee, sizeof buf);
  assert_int_equal(ms_stats_get((ms_stats_t *)buf, prefix), 0);
  ms_stats_t *p = (ms_stats_t *)buf;
  assert_int_equal(p->size, prefix);
  assert_true(p->os_reserved_bytes >= 1 << 16);
  assert_int_equal(buf[prefix], 0xee); /* nothing written beyond */
  ms_pages_release(r.addr, r.size);
}

static void text(void **state) {
  (void)state;
  out[0] = 0;
  ms_stats_print(to_buf, NULL, 0);
  assert_non_null(strstr(out, "memspace "));
  assert_non_null(strstr(out, "[pages]"));
  assert_non_null(strstr(out, "  reserved "));
  assert_non_null(strstr(out, "syscalls"));
}

static void json(void **state) {
  (void)state;
  out[0] = 0;
  ms_stats_print(to_buf, NULL, MS_STATS_JSON);
  assert_int_equal(out[0], '{');
  char path[] = "/tmp/ms_stats_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs(out, f);
  fclose(f);
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert \"pages\" in d and "
           "isinstance(d[\"pages\"][\"reserved\"], int)' %s", path);
  int rc = system(cmd);
  unlink(path);
  assert_int_equal(rc, 0);
}

/* a text value longer than any print buffer, with a two-byte UTF-8 "é" at bytes 248-249 (where a 256-byte
   escape buffer cut it), a quote, a backslash, a control character and a byte that is not UTF-8 */
static char long_text[700];
static void long_text_print(msi_stats_writer_t *w) { msi_stats_text(w, "spill_dir", long_text); }
static const msi_stats_source_t long_source = {"long_text", NULL, long_text_print};

static void long_utf8_text(void **state) {
  (void)state;
  memset(long_text, 'a', 248);
  memcpy(long_text + 248, "\xc3\xa9", 2);
  memset(long_text + 250, 'b', 400);
  strcpy(long_text + 650, "\"q\\\x01 \xff end");
  msi_stats_register(&long_source);
  out[0] = 0;
  ms_stats_print(to_buf, NULL, MS_STATS_JSON);
  char path[] = "/tmp/ms_stats_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, out, strlen(out)), (ssize_t)strlen(out));
  close(fd);
  /* valid UTF-8 JSON, the whole value back with U+FFFD for the invalid byte */
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding=\"utf-8\")); "
           "v=d[\"long_text\"][\"spill_dir\"]; "
           "w=\"a\"*248+\"\\u00e9\"+\"b\"*400+\"\\\"q\\\\\\x01 \\ufffd end\"; "
           "sys.exit(0 if v==w else print(repr(v[240:260]), len(v)) or 1)' %s", path);
  int rc = system(cmd);
  unlink(path);
  assert_int_equal(rc, 0);
  out[0] = 0;
  ms_stats_print(to_buf, NULL, 0);
  assert_non_null(strstr(out, long_text)); /* text form: whole */
}

/* every call sets errno on failure */
static void errno_on_failure(void **state) {
  (void)state;
  ms_stats_t s;
  errno = 0;
  assert_int_equal(ms_stats_get(NULL, sizeof s), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_stats_get(&s, 4), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_option_set(MS_OPTION_COUNT, 1), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_option_set(MS_OPTION_CACHE, 99), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_DIR, 1), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(ms_option_name(MS_OPTION_COUNT));
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(ms_option_get_string(MS_OPTION_CACHE));
  assert_int_equal(errno, EINVAL);
  size_t v;
  errno = 0;
  assert_int_equal(ms_parse_size("12Q", &v), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_parse_size("99999999999999999999999", &v), ERANGE);
  assert_int_equal(errno, ERANGE);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(get), cmocka_unit_test(text), cmocka_unit_test(json),
                                     cmocka_unit_test(long_utf8_text), cmocka_unit_test(errno_on_failure)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
