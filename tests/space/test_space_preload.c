/* The process space by preload (MEMSPACE_SPACE_INITIAL, docs/contract.md §3): a C program, a C++ program and python3
   with PYTHONMALLOC=malloc, each under LD_PRELOAD=libmemspace.so with a fixed space: ENOMEM surfaces as NULL,
   std::bad_alloc and MemoryError (not a crash), the space's OOM count shows it (MEMSPACE_SHOW_STATS=1), and the
   settings are not inherited by children unless MEMSPACE_SPACE_INHERIT=1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[1 << 16], err[1 << 16];

/* runs argv with the library preloaded and `env` ("NAME=value", NULL-terminated) added; returns exit status */
static int run(char *const argv[], char *const env[]) {
  int po[2], pe[2];
  assert_int_equal(pipe(po), 0);
  assert_int_equal(pipe(pe), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(po[1], 1);
    dup2(pe[1], 2);
    close(po[0]);
    close(pe[0]);
    setenv("LD_PRELOAD", MEMSPACE_BINARY_DIR "/libmemspace.so", 1);
    for (char *const *e = env; *e; e++) putenv(*e);
    execvp(argv[0], argv);
    _exit(127);
  }
  close(po[1]);
  close(pe[1]);
  size_t no = 0, ne = 0;
  for (;;) { /* small outputs: read stdout to the end, then stderr */
    ssize_t r = read(po[0], out + no, sizeof out - 1 - no);
    if (r <= 0) break;
    no += (size_t)r;
  }
  for (;;) {
    ssize_t r = read(pe[0], err + ne, sizeof err - 1 - ne);
    if (r <= 0) break;
    ne += (size_t)r;
  }
  out[no] = 0;
  err[ne] = 0;
  close(po[0]);
  close(pe[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (WIFSIGNALED(st)) fail_msg("%s killed by signal %d; stderr: %s", argv[0], WTERMSIG(st), err);
  return WEXITSTATUS(st);
}

/* the "oom" figure of the spaces section printed by MEMSPACE_SHOW_STATS=1 */
static long oom_count(void) {
  const char *s = strstr(err, "spaces");
  if (!s) return -1;
  const char *o = strstr(s, "oom");
  if (!o) return -1;
  while (*o && (*o < '0' || *o > '9')) o++;
  return strtol(o, NULL, 10);
}

static char *space_env[] = {"MEMSPACE_SPACE_INITIAL=8M", "MEMSPACE_SPACE_EXPAND=0", "MEMSPACE_SPACE_AT=start",
                            "MEMSPACE_SHOW_STATS=1", NULL};

static void c_program(void **state) {
  (void)state;
  char *argv[] = {MEMSPACE_BINARY_DIR "/space_preload_c", NULL};
  int st = run(argv, space_env);
  if (st != 0) fail_msg("exit %d: %s / %s", st, out, err);
  assert_non_null(strstr(out, "ok"));
  assert_true(oom_count() >= 1);
}

static void cpp_program(void **state) {
  (void)state;
  char *argv[] = {MEMSPACE_BINARY_DIR "/space_preload_cpp", NULL};
  int st = run(argv, space_env);
  if (st != 0) fail_msg("exit %d: %s / %s", st, out, err);
  assert_non_null(strstr(out, "ok"));
  assert_true(oom_count() >= 2);
}

/* MEMSPACE_SPACE_EXPAND above the largest step a space can take is an invalid value: said naming the variable,
   and the default (0, a fixed space) used */
static void expand_step_too_large(void **state) {
  (void)state;
  char *argv[] = {MEMSPACE_BINARY_DIR "/space_preload_c", NULL};
  char *env[] = {"MEMSPACE_SPACE_INITIAL=8M", "MEMSPACE_SPACE_EXPAND=1024G", "MEMSPACE_SPACE_AT=start",
                 "MEMSPACE_SHOW_STATS=1", NULL};
  int st = run(argv, env);
  if (st != 0) fail_msg("exit %d: %s / %s", st, out, err);
  assert_non_null(strstr(out, "ok"));
  if (!strstr(err, "MEMSPACE_SPACE_EXPAND=1099511627776")) fail_msg("no message naming MEMSPACE_SPACE_EXPAND: %s", err);
  assert_true(oom_count() >= 1);
}

static const char *python(void) { return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3"; }

static void python_memory_error(void **state) {
  (void)state;
  char *argv[] = {(char *)python(), "-c",
                  "import os\n"
                  "assert 'MEMSPACE_SPACE_INITIAL' not in os.environ\n"
                  "x = [bytearray(1000) for i in range(1000)]\n"
                  "try:\n    y = bytearray(256 * 1024 * 1024)\n    print('no error')\n"
                  "except MemoryError:\n    print('MemoryError')\n"
                  "z = bytearray(1024 * 1024)\nprint('recovered', len(z) + len(x))\n",
                  NULL};
  char *env[] = {"MEMSPACE_SPACE_INITIAL=64M", "MEMSPACE_SPACE_EXPAND=0", "MEMSPACE_SPACE_AT=start",
                 "MEMSPACE_SHOW_STATS=1", "PYTHONMALLOC=malloc", NULL};
  int st = run(argv, env);
  if (st != 0) fail_msg("python exit %d: %s / %s", st, out, err);
  if (!strstr(out, "MemoryError")) fail_msg("no MemoryError: %s", out);
  assert_non_null(strstr(out, "recovered"));
  assert_true(oom_count() >= 1);
}

static void children_do_not_inherit(void **state) {
  (void)state;
  char *argv[] = {"/bin/sh", "-c", "echo \"child:${MEMSPACE_SPACE_INITIAL:-unset}\"", NULL};
  char *env[] = {"MEMSPACE_SPACE_INITIAL=8M", NULL};
  assert_int_equal(run(argv, env), 0);
  assert_non_null(strstr(out, "child:unset"));
  char *env2[] = {"MEMSPACE_SPACE_INITIAL=8M", "MEMSPACE_SPACE_INHERIT=1", NULL};
  assert_int_equal(run(argv, env2), 0);
  assert_non_null(strstr(out, "child:8M"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(c_program), cmocka_unit_test(cpp_program),
                                     cmocka_unit_test(expand_step_too_large),
                                     cmocka_unit_test(python_memory_error), cmocka_unit_test(children_do_not_inherit)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
