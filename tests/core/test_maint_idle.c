/* The maintenance thread sleeps while no part has work: once a burst freed from two threads has gone back to the
   OS (a short purge delay), the thread's voluntary context switches (its wake-ups, /proc/self/task/TID/status)
   over a 2 s window stay below a small bound, where a thread waking on a fixed period (25-100 ms) makes 20-80.
   New work wakes it (its count moves), and it sleeps again after. Behaviour only: the bound is far from both, the
   waits are generous upper bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

#define QUIET_SWITCHES 5 /* wake-ups allowed in a quiet window of 2 s */

/* the thread named memspace-maint; 0 when there is none */
static long maint_tid(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  long tid = 0;
  struct dirent *e;
  while (!tid && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[300], comm[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (fgets(comm, sizeof comm, f) && strncmp(comm, "memspace-maint", 14) == 0) tid = atol(e->d_name);
    fclose(f);
  }
  closedir(d);
  return tid;
}

/* its voluntary context switches (its wake-ups), -1 when unreadable. Without allocating: the test's own frees
   would be work for the thread (read with open/read into the stack, not stdio) */
static long tid;
static long maint_switches(void) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char *v = strstr(buf, "\nvoluntary_ctxt_switches:");
  return v ? atol(v + 26) : -1;
}

/* 16 MiB in blocks of 64 B-64 KiB and a few large ones, written, then freed */
static void *burst(void *arg) {
  (void)arg;
  enum { N = 4096 };
  static _Thread_local void *b[N];
  size_t total = 0;
  for (int i = 0; i < N && total < (16u << 20); i++) {
    size_t size = i % 64 == 0 ? (256u << 10) : (size_t)64 << (i % 11);
    b[i] = ms_malloc(size);
    assert_non_null(b[i]);
    memset(b[i], 1, size);
    total += size;
  }
  for (int i = 0; i < N; i++) ms_free(b[i]);
  return NULL;
}

/* true once a 2 s window shows at most QUIET_SWITCHES wake-ups; tries for up to 60 s */
static bool becomes_quiet(void) {
  for (int tries = 0; tries < 30; tries++) {
    long before = maint_switches();
    sleep(2);
    long after = maint_switches();
    if (before >= 0 && after >= 0 && after - before <= QUIET_SWITCHES) return true;
  }
  return false;
}

static void sleeps_when_idle(void **state) {
  (void)state;
  ms_option_set(MS_OPTION_PURGE_DELAY, 20);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, burst, NULL), 0);
  burst(NULL);
  pthread_join(t, NULL);
  msi_maint_kick(); /* (the burst's frees started it; a no-op then) */
  assert_true(msi_maint_running());
  for (int i = 0; i < 1000 && !(tid = maint_tid()); i++) usleep(10000); /* (it names itself as it starts) */
  assert_true(tid > 0);
  assert_true(becomes_quiet());

  /* new work: the thread wakes (its count moves), gives it back, and sleeps again */
  long before = maint_switches();
  burst(NULL);
  bool woke = false;
  for (int i = 0; i < 500 && !woke; i++) {
    usleep(10000);
    woke = maint_switches() > before;
  }
  assert_true(woke);
  assert_true(becomes_quiet());
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(sleeps_when_idle)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
