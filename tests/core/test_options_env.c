/* Options from the environment: suffixes, enum names, and an invalid value reported once on stderr naming the
   variable while the default is used. The parsing runs in a child started with the variables set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"

static const char *self;

/* runs this binary as "child" with env, captures stdout and stderr */
static int run_child(char *const env[], char *out, size_t out_cap, char *err, size_t err_cap) {
  int po[2], pe[2];
  assert_int_equal(pipe(po), 0);
  assert_int_equal(pipe(pe), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(po[1], 1);
    dup2(pe[1], 2);
    close(po[0]), close(pe[0]);
    char *argv[] = {(char *)self, "child", NULL};
    execve(self, argv, env);
    _exit(127);
  }
  close(po[1]), close(pe[1]);
  size_t no = 0, ne = 0;
  ssize_t n;
  while ((n = read(po[0], out + no, out_cap - 1 - no)) > 0) no += (size_t)n;
  while ((n = read(pe[0], err + ne, err_cap - 1 - ne)) > 0) ne += (size_t)n;
  out[no] = err[ne] = 0;
  close(po[0]), close(pe[0]);
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int count(const char *hay, const char *needle) {
  int c = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) c++;
  return c;
}

static void good_values(void **state) {
  (void)state;
  char *env[] = {"MEMSPACE_SPILL_THRESHOLD=4M", "MEMSPACE_SPACE_INITIAL=2GiB", "MEMSPACE_CACHE=size",
                 "MEMSPACE_PURGE_DELAY=-1", "MEMSPACE_HUGE_PAGES=2MB", "MEMSPACE_VERBOSE=0",
                 "MEMSPACE_SPILL_DIR=/var/tmp", "MEMSPACE_SPACE_AT=firstalloc", "MEMSPACE_SHOW_STATS=no", NULL};
  char out[4096], err[4096];
  assert_int_equal(run_child(env, out, sizeof out, err, sizeof err), 0);
  assert_string_equal(err, "");
  assert_non_null(strstr(out, "SPILL_THRESHOLD=4194304\n"));
  assert_non_null(strstr(out, "SPACE_INITIAL=2147483648\n"));
  assert_non_null(strstr(out, "CACHE=2\n"));
  assert_non_null(strstr(out, "PURGE_DELAY=-1\n"));
  assert_non_null(strstr(out, "HUGE_PAGES=2097152\n"));
  assert_non_null(strstr(out, "SPACE_AT=1\n"));
  assert_non_null(strstr(out, "SPILL_DIR=/var/tmp\n"));
}

static void bad_values(void **state) {
  (void)state;
  char *env[] = {"MEMSPACE_CACHE=fast", "MEMSPACE_SPILL_THRESHOLD=12X", "MEMSPACE_PURGE_DELAY=-7",
                 "MEMSPACE_SECURE=maybe", "MEMSPACE_SPACE_INITIAL=", "MEMSPACE_FRAME_IDLE=99999999999999999999",
                 NULL};
  char out[4096], err[4096];
  assert_int_equal(run_child(env, out, sizeof out, err, sizeof err), 0);
  const char *names[] = {"MEMSPACE_CACHE", "MEMSPACE_SPILL_THRESHOLD", "MEMSPACE_PURGE_DELAY", "MEMSPACE_SECURE",
                         "MEMSPACE_SPACE_INITIAL", "MEMSPACE_FRAME_IDLE"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char key[64];
    snprintf(key, sizeof key, " for %s ", names[i]);
    assert_int_equal(count(err, key), 1); /* reported once, naming the variable, although read many times */
  }
  assert_int_equal(count(err, "memspace: warning: invalid value"), 6);
  /* defaults kept */
  assert_non_null(strstr(out, "CACHE=1\n"));
  assert_non_null(strstr(out, "SPILL_THRESHOLD=0\n"));
  assert_non_null(strstr(out, "SECURE=0\n"));
  assert_non_null(strstr(out, "FRAME_IDLE=500\n"));
}

/* spaces around a value are ignored for every kind, as for sizes (docs/options.md) */
static void surrounding_spaces(void **state) {
  (void)state;
  char *env[] = {"MEMSPACE_PURGE_DELAY= 5", "MEMSPACE_FRAME_IDLE=7 ", "MEMSPACE_SPILL_THRESHOLD= 4M ",
                 "MEMSPACE_CACHE= size ", "MEMSPACE_SPACE_INHERIT=  yes", "MEMSPACE_SPACE_AT=firstalloc  ",
                 "MEMSPACE_SPILL_DIR= /var/tmp  ", "MEMSPACE_STATS_FILE=  /tmp/stats %p.txt ", NULL};
  char out[4096], err[4096];
  assert_int_equal(run_child(env, out, sizeof out, err, sizeof err), 0);
  assert_string_equal(err, "");
  assert_non_null(strstr(out, "PURGE_DELAY=5\n"));
  assert_non_null(strstr(out, "FRAME_IDLE=7\n"));
  assert_non_null(strstr(out, "SPILL_THRESHOLD=4194304\n"));
  assert_non_null(strstr(out, "CACHE=2\n"));
  assert_non_null(strstr(out, "SPACE_INHERIT=1\n"));
  assert_non_null(strstr(out, "SPACE_AT=1\n"));
  assert_non_null(strstr(out, "SPILL_DIR=/var/tmp\n")); /* string options too (docs/contract.md §3) */
  assert_non_null(strstr(out, "STATS_FILE=/tmp/stats %p.txt\n")); /* (spaces inside stay) */
  char *blank[] = {"MEMSPACE_PURGE_DELAY=   ", "MEMSPACE_SPILL_DIR=  ", NULL}; /* nothing but spaces is still invalid */
  assert_int_equal(run_child(blank, out, sizeof out, err, sizeof err), 0);
  assert_int_equal(count(err, " for MEMSPACE_PURGE_DELAY "), 1);
  assert_int_equal(count(err, " for MEMSPACE_SPILL_DIR "), 1);
  assert_non_null(strstr(out, "SPILL_DIR=\n"));
}

static int child(void) {
  for (int rep = 0; rep < 3; rep++) /* reading many times reports once */
    for (int o = 0; o < MS_OPTION_COUNT; o++) (void)ms_option_get((ms_option_t)o);
  for (int o = 0; o < MS_OPTION_COUNT; o++) {
    const char *name = ms_option_name((ms_option_t)o) + 9;
    if (o == MS_OPTION_SPILL_DIR || o == MS_OPTION_STATS_FILE) {
      const char *s = ms_option_get_string((ms_option_t)o);
      printf("%s=%s\n", name, s ? s : "");
    } else {
      printf("%s=%lld\n", name, ms_option_get((ms_option_t)o));
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  self = argv[0];
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child();
  const struct CMUnitTest tests[] = {cmocka_unit_test(good_values), cmocka_unit_test(bad_values), cmocka_unit_test(surrounding_spaces)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
