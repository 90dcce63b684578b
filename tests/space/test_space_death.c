/* Death tests for spaces, each in a forked child: with MEMSPACE_SECURE=1 (and always in debug/secure builds) a
   double free, an interior pointer (at a granule or inside the first one), a foreign pointer, a realloc of a
   freed block, a malloc in a destroyed space in caller memory and a double destroy abort with a message naming the pointer; in the default build the same calls are reported and ignored, and the space stays consistent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "ms_test.h"

enum { DOUBLE_FREE, INTERIOR, FOREIGN, REALLOC_FREED, MISALIGNED, DESTROYED, DOUBLE_DESTROY };

/* runs scenario `what` in a child (secure or not); returns the wait status, fills err with its stderr */
static int run_child(int what, int secure, char *err, size_t cap, char *ptr_text, size_t ptr_cap) {
  int fds[2], pfd[2];
  assert_int_equal(pipe(fds), 0);
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    close(pfd[0]);
    ms_option_set(MS_OPTION_SECURE, secure);
    ms_space_config_t c;
    memset(&c, 0, sizeof c);
    c.initial_size = 1 << 20;
    c.numa_node = -1;
    c.name = "death";
    ms_space_t *s = ms_space_create(&c);
    if (!s) _exit(90);
    char *p = ms_space_malloc(s, 200);
    char local[32];
    void *bad = p;
    if (what == DOUBLE_FREE || what == REALLOC_FREED) ms_space_free(s, p);
    if (what == INTERIOR) bad = p + 32;
    if (what == FOREIGN) bad = local;
    if (what == MISALIGNED) bad = p + 1; /* inside the block's first granule */
    static char mem[1 << 16] __attribute__((aligned(64)));
    ms_space_t *in = what == DESTROYED ? ms_space_create_in(mem, sizeof mem, 0) : NULL;
    if (what == DESTROYED) {
      if (!in) _exit(95);
      ms_space_destroy(in);
      bad = in;
    }
    if (what == DOUBLE_DESTROY) {
      ms_space_destroy(s);
      bad = s;
    }
    char text[64];
    int n = snprintf(text, sizeof text, "%p", bad);
    if (write(pfd[1], text, (size_t)n) != n) _exit(91);
    close(pfd[1]);
    if (what == REALLOC_FREED) { if (ms_space_realloc(s, bad, 400)) _exit(92); }
    else if (what == DESTROYED) { if (ms_space_malloc(in, 32)) _exit(92); }
    else if (what == DOUBLE_DESTROY) { ms_space_destroy(s); _exit(errno == EINVAL ? 0 : 93); }
    else ms_space_free(s, bad);
    if (errno != EINVAL) _exit(93);
    if (ms_space_check(s) != 0) _exit(94);
    _exit(0);
  }
  close(fds[1]);
  close(pfd[1]);
  size_t used = 0;
  ssize_t r;
  while (used + 1 < cap && (r = read(fds[0], err + used, cap - 1 - used)) > 0) used += (size_t)r;
  err[used] = 0;
  r = read(pfd[0], ptr_text, ptr_cap - 1);
  ptr_text[r > 0 ? r : 0] = 0;
  close(fds[0]);
  close(pfd[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return status;
}

static void secure_aborts(void **state) {
  (void)state;
  const char *expect[] = {"double free", "not the start of an allocated block", "not a block of this space",
                          "realloc of a freed block", "misaligned", "not a live space", "not a live space"};
  for (int what = DOUBLE_FREE; what <= DOUBLE_DESTROY; what++) {
    char err[2048], ptr[64];
    int st = run_child(what, 1, err, sizeof err, ptr, sizeof ptr);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) fail_msg("scenario %d: expected SIGABRT, status %#x, stderr: %s", what, st, err);
    if (!strstr(err, ptr)) fail_msg("scenario %d: message does not name the pointer %s: %s", what, ptr, err);
    if (!strstr(err, expect[what])) fail_msg("scenario %d: message does not say '%s': %s", what, expect[what], err);
  }
}

static void default_reports_and_survives(void **state) {
  (void)state;
#if (defined(MEMSPACE_DEBUG) && MEMSPACE_DEBUG) || (defined(MEMSPACE_SECURE_BUILD) && MEMSPACE_SECURE_BUILD)
  ms_skip_refused(0, "this build makes bad pointers fatal (the death cases cover that)");
#endif
  for (int what = DOUBLE_FREE; what <= DOUBLE_DESTROY; what++) {
    char err[2048], ptr[64];
    int st = run_child(what, 0, err, sizeof err, ptr, sizeof ptr);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("scenario %d: expected exit 0, status %#x, stderr: %s", what, st, err);
    if (!strstr(err, ptr)) fail_msg("scenario %d: report does not name the pointer %s: %s", what, ptr, err);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(secure_aborts), cmocka_unit_test(default_reports_and_survives)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
