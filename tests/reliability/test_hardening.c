/* Hardening, default build: a double free, a free of a pointer inside memspace's ranges that is not the start
   of a live block, and the same through realloc, are detected with a message naming the pointer and the call.
   Each case runs in a child process (the heap aborts; spaces report and ignore the call); the parent reads the
   child's stderr. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "have.h"
#include "memspace.h"

/* runs fn in a child with stderr captured: a message must name the pointer and one of the words (the call) */
static void expect_detected(void (*fn)(void **), const char *word, const char *what) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  void *ptr = NULL;  /* the child's pointer (its message must name it) */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    fn(&ptr);
    _exit(0);  /* not detected */
  }
  close(fds[1]);
  char buf[4096];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof buf - 1 && (r = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
  buf[n] = 0;
  close(fds[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0) {}
  bool died = WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0);
  printf("%s: %s; message: %.*s\n", what, died ? "stopped" : "reported, went on", (int)strcspn(buf, "\n"), buf);
  if (!buf[0]) fail_msg("%s: not detected (no message, the child %s)", what, died ? "died" : "went on");
  bool named = false;
  for (const char *w = word; *w; w += strcspn(w, "|"), w += *w == '|') {
    size_t len = strcspn(w, "|");
    char one[32];
    snprintf(one, sizeof one, "%.*s", (int)len, w);
    named |= strstr(buf, one) != NULL;
  }
  if (!named) fail_msg("%s: the message does not name the call (%s): %s", what, word, buf);
  if (!strstr(buf, "0x")) fail_msg("%s: the message does not name the pointer: %s", what, buf);
}

#if MS_HAVE_HEAP
static void heap_double_free(void **out) { void *p = ms_malloc(40); *out = p; ms_free(p); ms_free(p); }
static void heap_interior_free(void **out) { char *p = ms_malloc(64); *out = p + 16; ms_free(p + 16); }
static void heap_realloc_freed(void **out) { void *p = ms_malloc(40); *out = p; ms_free(p); p = ms_realloc(p, 100); }
static void large_double_free(void **out) { void *p = ms_malloc(1 << 20); *out = p; ms_free(p); ms_free(p); }
static void large_interior_free(void **out) { char *p = ms_malloc(1 << 20); *out = p + 4096; ms_free(p + 4096); }

static void double_free(void **state) { (void)state; expect_detected(heap_double_free, "free", "heap double free"); }
static void interior_free(void **state) { (void)state; expect_detected(heap_interior_free, "free", "heap interior pointer"); }
static void realloc_freed(void **state) { (void)state; expect_detected(heap_realloc_freed, "realloc|free", "heap realloc of a freed block"); }
static void large_double(void **state) { (void)state; expect_detected(large_double_free, "free", "large block double free"); }
static void large_interior(void **state) { (void)state; expect_detected(large_interior_free, "free", "large block interior pointer"); }
#endif

#if MS_HAVE_SPACE
static ms_space_t *small_space(void) {
  ms_space_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.initial_size = 1 << 20;
  cfg.numa_node = -1;
  return ms_space_create(&cfg);
}
static void space_double_free(void **out) { ms_space_t *s = small_space(); void *p = ms_space_malloc(s, 64); *out = p; ms_space_free(s, p); ms_space_free(s, p); }
static void space_interior_free(void **out) { ms_space_t *s = small_space(); char *p = ms_space_malloc(s, 256); *out = p + 32; ms_space_free(s, p + 32); }
static void space_double(void **state) { (void)state; expect_detected(space_double_free, "free", "space double free"); }
static void space_interior(void **state) { (void)state; expect_detected(space_interior_free, "free", "space interior pointer"); }
#endif

static void parts_present(void **state) {
  (void)state;
  if (!MS_HAVE_HEAP && !MS_HAVE_SPACE) skip();
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(parts_present),
#if MS_HAVE_HEAP
    cmocka_unit_test(double_free), cmocka_unit_test(interior_free), cmocka_unit_test(realloc_freed),
    cmocka_unit_test(large_double), cmocka_unit_test(large_interior),
#endif
#if MS_HAVE_SPACE
    cmocka_unit_test(space_double), cmocka_unit_test(space_interior),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
