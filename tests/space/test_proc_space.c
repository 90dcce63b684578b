/* The process space (route.h): msi_proc_space_* directly (the heap routes the malloc family to it when
   MEMSPACE_SPACE_INITIAL is set): ownership, alignment, zeroing, realloc, a full fixed space (ENOMEM, counted),
   recovery; and in a re-executed child, creation at start and the environment cleared (or kept with INHERIT). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "route.h"
#include "../../src/space/space_internal.h"
#include "ms_test.h"

static char *self;

static void direct(void **state) {
  (void)state;
  int local;
  if (getenv("MEMSPACE_SPACE_INITIAL")) ms_skip_refused(0, "MEMSPACE_SPACE_INITIAL is set: malloc is a space here");
  assert_false(msi_proc_space_owns(&local));
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_INITIAL, 4 << 20), 0);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_EXPAND, 0), 0);
  assert_int_equal(ms_option_set(MS_OPTION_SPACE_AT, 1), 0);
  char *p = msi_proc_space_malloc(100, 0, false);
  assert_non_null(p);
  assert_true(msi_proc_space_owns(p));
  assert_false(msi_proc_space_owns(&local));
  assert_true(msi_proc_space_usable_size(p) >= 100);
  memset(p, 0x5a, 100);
  unsigned char *z = msi_proc_space_malloc(5000, 0, true);
  assert_non_null(z);
  for (int i = 0; i < 5000; i++) assert_int_equal(z[i], 0);
  void *a = msi_proc_space_malloc(10, 4096, true);
  assert_non_null(a);
  assert_int_equal((uintptr_t)a % 4096, 0);
  void *zero = msi_proc_space_malloc(0, 0, false);
  assert_non_null(zero);
  char *q = msi_proc_space_realloc(p, 20000);
  assert_non_null(q);
  for (int i = 0; i < 100; i++) assert_int_equal(q[i], 0x5a);
  /* fill the fixed space: ENOMEM, counted */
  void *blocks[1024];
  int n = 0;
  void *b;
  while (n < 1024 && (b = msi_proc_space_malloc(64 << 10, 0, false)) != NULL) blocks[n++] = b;
  assert_true(n < 1024);
  assert_int_equal(errno, ENOMEM);
  ms_space_info_t in;
  assert_int_equal(ms_space_info(msi_proc_space_get(), &in), 0);
  assert_true(in.oom_count >= 1);
  assert_int_equal(in.expand_count, 0);
  assert_null(msi_proc_space_realloc(q, 8 << 20));
  assert_int_equal(errno, ENOMEM);
  for (int i = 0; i < n; i++) msi_proc_space_free(blocks[i]);
  b = msi_proc_space_malloc(64 << 10, 0, false); /* works on after frees */
  assert_non_null(b);
  msi_proc_space_free(b);
  msi_proc_space_free(q);
  msi_proc_space_free(z);
  msi_proc_space_free(a);
  msi_proc_space_free(zero);
  assert_int_equal(ms_space_check(msi_proc_space_get()), 0);
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  assert_true(st.space_oom >= 1);
}

static _Atomic int stop;
static void *hammer(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    void *p = msi_proc_space_malloc(64, 0, false);
    msi_proc_space_free(p);
  }
  return NULL;
}

/* fork while another thread allocates: the child's space (lock included) works (no deadlock, no corruption) */
static void fork_while_allocating(void **state) {
  (void)state;
  if (!msi_proc_space_get()) ms_skip_refused(0, "no process space (MEMSPACE_SPACE_INITIAL unset or refused)");
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, hammer, NULL), 0);
  for (int i = 0; i < 20; i++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      alarm(10);
      void *p = msi_proc_space_malloc(1000, 0, false);
      msi_proc_space_free(p);
      _exit(p && ms_space_check(msi_proc_space_get()) == 0 ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("child %d: status %#x", i, st);
  }
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
}

/* child mode: report whether the space exists and the variable is still set */
static int child_report(void) {
  ms_space_t *s = msi_proc_space_get();
  int code = 0;
  if (s) code |= 1;
  if (getenv("MEMSPACE_SPACE_INITIAL")) code |= 2;
  ms_space_info_t in;
  if (s && ms_space_info(s, &in) == 0 && in.size >= (1 << 20)) code |= 4; /* committed at start */
  void *p = msi_proc_space_malloc(1000, 0, false);
  if (p && msi_proc_space_owns(p)) code |= 8;
  return code;
}

static int run_self(const char *inherit) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("MEMSPACE_SPACE_INITIAL", "1M", 1);
    setenv("MEMSPACE_SPACE_AT", "start", 1);
    if (inherit) setenv("MEMSPACE_SPACE_INHERIT", inherit, 1);
    execl(self, self, "--child", (char *)NULL);
    _exit(99);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st);
}

static void environment(void **state) {
  (void)state;
  assert_int_equal(run_self(NULL), 1 | 4 | 8);    /* created at start, variable removed */
  assert_int_equal(run_self("1"), 1 | 2 | 4 | 8); /* kept with MEMSPACE_SPACE_INHERIT=1 */
}

int main(int argc, char **argv) {
  self = argv[0];
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return child_report();
  const struct CMUnitTest tests[] = {cmocka_unit_test(direct), cmocka_unit_test(fork_while_allocating), cmocka_unit_test(environment)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
