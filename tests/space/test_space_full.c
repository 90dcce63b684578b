/* A full fixed-size space (expand 0): every allocation call answers NULL + ENOMEM, counts the failure in
   oom_count and, under MEMSPACE_VERBOSE, says so naming the space at the 1st, 2nd, 4th, 8th... failure (a loop
   retrying on a full space gets a few lines, not one per call). The process space (MEMSPACE_SPACE_INITIAL with
   MEMSPACE_SPACE_EXPAND=0) says it as "space process". */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "memspace.h"
#include "ms_test.h"

static const char *self;

/* allocation-free: the library's calls to the malloc family are wrapped (ld --wrap, tests/space/CMakeLists.txt)
   and counted while `failing` is set, around the failing calls and their messages */
void *__real_malloc(size_t);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
int __real_posix_memalign(void **, size_t, size_t);
void *__real_aligned_alloc(size_t, size_t);
static volatile int failing, calls;
#define COUNTED(call) (failing ? (calls++, __real_##call) : __real_##call)
void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n) { return COUNTED(malloc(n)); }
void *__wrap_calloc(size_t c, size_t n);
void *__wrap_calloc(size_t c, size_t n) { return COUNTED(calloc(c, n)); }
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n) { return COUNTED(realloc(p, n)); }
int __wrap_posix_memalign(void **out, size_t a, size_t n);
int __wrap_posix_memalign(void **out, size_t a, size_t n) { return COUNTED(posix_memalign(out, a, n)); }
void *__wrap_aligned_alloc(size_t a, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n) { return COUNTED(aligned_alloc(a, n)); }

static const char *capture_stderr(void (*fn)(void)) {
  static char text[16384];
  char path[] = "/tmp/ms_space_full_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  int saved = dup(2);
  assert_true(saved >= 0);
  assert_int_equal(dup2(fd, 2), 2);
  fn();
  assert_int_equal(dup2(saved, 2), 2);
  close(saved);
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  text[n > 0 ? n : 0] = 0;
  return text;
}

static int lines_with(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static ms_space_t *full_space;
static int failures;

/* 40 failing calls, ten of each allocation call, every one NULL + ENOMEM */
static void fail_forty(void) {
  failing = 1;
  for (int i = 0; i < 10; i++) {
    void *p;
    errno = 0;
    p = ms_space_malloc(full_space, 64);
    if (!p && errno == ENOMEM) failures++;
    errno = 0;
    p = ms_space_calloc(full_space, 4, 16);
    if (!p && errno == ENOMEM) failures++;
    errno = 0;
    p = ms_space_aligned_alloc(full_space, 64, 64);
    if (!p && errno == ENOMEM) failures++;
    errno = 0;
    p = ms_space_malloc(full_space, (size_t)1 << 40); /* larger than the space: the same answer */
    if (!p && errno == ENOMEM) failures++;
  }
  failing = 0;
}

static void full_fixed_space(void **state) {
  (void)state;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 64 << 10;
  c.numa_node = -1;
  c.name = "red2-full";
  full_space = ms_space_create(&c);
  assert_non_null(full_space);
  size_t held = 0;
  while (ms_space_malloc(full_space, 16)) held += 16;
  assert_int_equal(errno, ENOMEM);
  assert_true(held > 0);
  ms_space_info_t info;
  assert_int_equal(ms_space_info(full_space, &info), 0);
  uint64_t before = info.oom_count;
  assert_int_equal(before, 1);
  /* quiet without MEMSPACE_VERBOSE */
  assert_int_equal(ms_option_set(MS_OPTION_VERBOSE, 0), 0);
  failures = 0;
  const char *text = capture_stderr(fail_forty);
  assert_int_equal(failures, 40);
  assert_int_equal(lines_with(text, "red2-full"), 0);
  /* failures 42..81 under MEMSPACE_VERBOSE: said at the 64th only */
  assert_int_equal(ms_option_set(MS_OPTION_VERBOSE, 1), 0);
  failures = 0;
  text = capture_stderr(fail_forty);
  assert_int_equal(ms_option_set(MS_OPTION_VERBOSE, 0), 0);
  printf("%s", text);
  assert_int_equal(failures, 40);
  assert_int_equal(calls, 0);
  assert_int_equal(lines_with(text, "space red2-full: no room for "), 1);
  assert_non_null(strstr(text, "failure 64 "));
  assert_non_null(strstr(text, "fixed size"));
  assert_int_equal(ms_space_info(full_space, &info), 0);
  assert_int_equal(info.oom_count, before + 80);
  ms_space_destroy(full_space);
}

/* the child: the process space of MEMSPACE_SPACE_INITIAL=256K, fixed; two requests it could never serve, then
   allocates until NULL, then 15 more */
static int child(void) {
  int n = 0;
  /* requests no block of the space could ever serve: ENOMEM, and the one warning is kept for the real exhaustion */
  errno = 0;
  if (ms_malloc(SIZE_MAX / 2) || errno != ENOMEM) return 6;
  errno = 0;
  if (ms_malloc((size_t)1 << 40) || errno != ENOMEM) return 7;
  while (ms_malloc(4096)) n++;
  if (errno != ENOMEM) return 2;
  failing = 1;
  for (int i = 0; i < 15; i++) {
    errno = 0;
    if (ms_malloc(4096) || errno != ENOMEM) return 3;
  }
  failing = 0;
  if (calls) return 5;
  return n > 0 ? 0 : 4;
}

static int child_status;
static int child_verbose; /* MEMSPACE_VERBOSE for run_child */

/* runs this program's child with the process space's settings (stderr: capture_stderr's file) */
static void run_child(void) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("MEMSPACE_SPACE_INITIAL", "256K", 1);
    setenv("MEMSPACE_SPACE_EXPAND", "0", 1);
    setenv("MEMSPACE_SPACE_AT", "firstalloc", 1);
    setenv("MEMSPACE_VERBOSE", child_verbose ? "1" : "0", 1);
    execl(self, self, "--child", (char *)NULL);
    _exit(127);
  }
  child_status = -1;
  if (pid > 0) waitpid(pid, &child_status, 0);
}

/* the child's stderr, with or without MEMSPACE_VERBOSE; the child must have exited 0 */
static const char *process_space_said(int verbose) {
  child_verbose = verbose;
  const char *text = capture_stderr(run_child);
  printf("%s", text);
  assert_true(WIFEXITED(child_status));
  assert_int_equal(WEXITSTATUS(child_status), 0);
  return text;
}

static void process_space(void **state) {
  (void)state;
  /* 18 failures, the first two requests no block could serve: said at the 1st, 2nd, 4th, 8th and 16th, and the
     warning at the first failure of a 4096-byte request (the 3rd) */
  const char *text = process_space_said(1);
  assert_int_equal(lines_with(text, "space process: no room for "), 6);
  assert_int_equal(lines_with(text, "can ever hold"), 2);
  assert_int_equal(lines_with(text, "raise MEMSPACE_SPACE_INITIAL"), 1);
}

/* without MEMSPACE_VERBOSE the process space's first failure is still said, once, with what to raise */
static void process_space_quiet(void **state) {
  (void)state;
  const char *text = process_space_said(0);
  assert_int_equal(lines_with(text, "space process: no room for "), 1);
  assert_int_equal(lines_with(text, "space process: no room for 4096 bytes"), 1);
  assert_int_equal(lines_with(text, "raise MEMSPACE_SPACE_INITIAL"), 1);
}

int main(int argc, char **argv) {
  self = argv[0];
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return child();
  const struct CMUnitTest tests[] = {cmocka_unit_test(full_fixed_space), cmocka_unit_test(process_space),
                                     cmocka_unit_test(process_space_quiet)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
