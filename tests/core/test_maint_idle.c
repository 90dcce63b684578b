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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

#define QUIET_SWITCHES 5 /* wake-ups allowed in a quiet window of 2 s */

/* the voluntary context switches of the thread named memspace-maint; -1 when there is none */
static long maint_switches(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  long v = -1;
  struct dirent *e;
  while (v < 0 && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[300], buf[4096] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    bool maint = fgets(buf, sizeof buf, f) && strncmp(buf, "memspace-maint", 14) == 0;
    fclose(f);
    if (!maint) continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
    if (!(f = fopen(path, "r"))) continue;
    while (fgets(buf, sizeof buf, f))
      if (sscanf(buf, "voluntary_ctxt_switches: %ld", &v) == 1) break;
    fclose(f);
  }
  closedir(d);
  return v;
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
