/* Death tests: a double free and an invalid pointer inside memspace's ranges abort with a message naming the
   pointer (debug library, and the release one, which checks them too); a foreign pointer is freed by glibc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* runs the victim with `lib` preloaded; returns the wait status, fills out/err */
static const char *extra_env; /* NAME=VALUE put in the victim's environment, or NULL */
static int run_victim(const char *lib, const char *mode, char *out, size_t outcap, char *err, size_t errcap) {
  int po[2], pe[2];
  if (pipe(po) || pipe(pe)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(po[1], 1);
    dup2(pe[1], 2);
    close(po[0]);
    close(pe[0]);
    setenv("LD_PRELOAD", lib, 1);
    if (extra_env) putenv((char *)extra_env);
    execl(MS_VICTIM_PATH, MS_VICTIM_PATH, mode, (char *)NULL);
    _exit(127);
  }
  close(po[1]);
  close(pe[1]);
  size_t no = 0, ne = 0;
  ssize_t r;
  while ((r = read(po[0], out + no, outcap - 1 - no)) > 0) no += (size_t)r;
  while ((r = read(pe[0], err + ne, errcap - 1 - ne)) > 0) ne += (size_t)r;
  out[no] = err[ne] = 0;
  close(po[0]);
  close(pe[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

static void expect_abort(const char *lib, const char *mode, const char *what) {
  char out[256], err[4096];
  int st = run_victim(lib, mode, out, sizeof out, err, sizeof err);
  out[strcspn(out, "\n")] = 0;
  printf("%s %s: stdout '%s' stderr '%s'\n", lib, mode, out, err);
  assert_true(WIFSIGNALED(st));
  assert_int_equal(WTERMSIG(st), SIGABRT);
  assert_true(strlen(out) > 2);
  assert_non_null(strstr(err, out)); /* the message names the pointer */
  assert_non_null(strstr(err, what));
}

static void double_free_debug(void **state) {
  (void)state;
  expect_abort(MS_DEBUG_LIB, "double_free", "double free");
  expect_abort(MS_DEBUG_LIB, "double_free_large", "double free");
}
static void invalid_pointer_debug(void **state) {
  (void)state;
  expect_abort(MS_DEBUG_LIB, "invalid_pointer", "invalid pointer");
  expect_abort(MS_DEBUG_LIB, "invalid_large", "invalid pointer");
}
/* a block of a memory space given to free or realloc: the message names the space (the first block's header
   bytes lie in no mapping, so the C library's free would fault on it without a word) */
static void space_block_named(void **state) {
  (void)state;
  expect_abort(MS_RELEASE_LIB, "space_block", "is a block of memory space \"rt-space\"");
  expect_abort(MS_RELEASE_LIB, "space_block_realloc", "is a block of memory space \"rt-space\"");
}
/* the release build checks pointers always, and double frees too with MEMSPACE_SECURE=1 */
static void release_build_checks(void **state) {
  (void)state;
  expect_abort(MS_RELEASE_LIB, "invalid_pointer", "invalid pointer");
  expect_abort(MS_RELEASE_LIB, "invalid_large", "invalid pointer");
  expect_abort(MS_RELEASE_LIB, "double_free_large", "double free");
  extra_env = "MEMSPACE_SECURE=1";
  expect_abort(MS_RELEASE_LIB, "double_free", "double free");
  extra_env = NULL;
}
static void foreign_pointer_no_complaint(void **state) {
  (void)state;
  const char *libs[] = {MS_RELEASE_LIB, MS_DEBUG_LIB};
  for (int i = 0; i < 2; i++) {
    char out[256], err[4096];
    int st = run_victim(libs[i], "foreign", out, sizeof out, err, sizeof err);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_string_equal(out, "foreign ok\n");
    assert_string_equal(err, "");
  }
}

/* lookups of `name` the audit library hid, from its line in err; -1 when absent */
static long hidden_lookups(const char *err, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "lookups of %s\n", name);
  for (const char *l = strstr(err, "audit: hid "); l; l = strstr(l + 1, "audit: hid "))
    if (!strncmp(strchr(l + 11, ' ') + 1, key, strlen(key))) return strtol(l + 11, NULL, 10);
  return -1;
}

/* The C library without mallinfo2 (glibc before 2.33), then without mallinfo too (a static program, another C
   library): an audit library hides them from dlsym. The lookup is made once, its failure kept (not two symbol
   walks per foreign free). Without mallinfo2 the check asks mallinfo and the blocks go to glibc as before;
   without either nothing tells glibc's blocks from forged ones: they are kept (leaked, said once), neither
   handed over nor reported */
static void foreign_without_mallinfo2(void **state) {
  (void)state;
  static char audit[] = "LD_AUDIT=" MS_AUDIT_LIB;
  extra_env = audit;
  char out[256], err[4096];
  setenv("MS_AUDIT_HIDE", "mallinfo2", 1);
  int st = run_victim(MS_RELEASE_LIB, "foreign", out, sizeof out, err, sizeof err);
  printf("mallinfo2 hidden: stdout '%s' stderr '%s'\n", out, err);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_string_equal(out, "foreign ok\n");
  assert_null(strstr(err, "memspace")); /* handed to glibc: no word */
  long n = hidden_lookups(err, "mallinfo2");
  assert_true(n >= 1 && n <= 2); /* dlsym(RTLD_NEXT), then libc.so.6's own table: once */
  setenv("MS_AUDIT_HIDE", "mallinfo2,mallinfo", 1);
  st = run_victim(MS_RELEASE_LIB, "foreign", out, sizeof out, err, sizeof err);
  printf("both hidden: stdout '%s' stderr '%s'\n", out, err);
  unsetenv("MS_AUDIT_HIDE");
  extra_env = NULL;
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_string_equal(out, "foreign ok\n");
  assert_non_null(strstr(err, "leaked"));
  n = hidden_lookups(err, "mallinfo2");
  assert_true(n >= 1 && n <= 2);
  n = hidden_lookups(err, "mallinfo");
  assert_true(n >= 1 && n <= 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(double_free_debug),
      cmocka_unit_test(invalid_pointer_debug),
      cmocka_unit_test(release_build_checks),
      cmocka_unit_test(space_block_named),
      cmocka_unit_test(foreign_pointer_no_complaint),
      cmocka_unit_test(foreign_without_mallinfo2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
