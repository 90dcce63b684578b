/* test_promises_pi: a thread-safe space's lock is priority-inheriting: a real-time thread waiting for it lends
   its priority to the holder (docs/contract.md §4). A program of its own: a process refused SCHED_FIFO threads
   (no CAP_SYS_NICE, no RLIMIT_RTPRIO) skips this case alone, and test_promises reports its cases passed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "memspace.h"
#include "ms_test.h"

/* A SCHED_FIFO thread of priority 10 holds the space's lock (inside ms_space_walk's visit, which runs under it)
   while one of priority 30 calls ms_space_malloc on the same space: with priority inheritance the holder runs at
   30 until it lets go, which the kernel shows as its effective priority (/proc/self/task/TID/stat field 18:
   -1 - the real-time priority). Behaviour, not timing: the wait for the boost is only bounded, never measured. */
#define PI_LOW 10
#define PI_HIGH 30
static ms_space_t *pi_space;
static atomic_int pi_holding, pi_release, pi_low_tid;

static int pi_hold(const void *block, size_t size, int used, void *arg) {
  (void)block, (void)size, (void)used, (void)arg;
  atomic_store(&pi_holding, 1);
  while (!atomic_load(&pi_release)) usleep(1000);
  return 1;
}
static void *pi_low(void *arg) {
  (void)arg;
  atomic_store(&pi_low_tid, (int)syscall(SYS_gettid));
  return ms_space_walk(pi_space, pi_hold, NULL) == 1 ? NULL : "ms_space_walk";
}
static void *pi_high(void *arg) {
  (void)arg;
  void *p = ms_space_malloc(pi_space, 64);
  ms_space_free(pi_space, p);
  return p ? NULL : "ms_space_malloc";
}
/* the effective priority the kernel gives thread `tid` (field 18 of its stat line), or 0 when unreadable */
static int kernel_prio(int tid) {
  char path[64], line[1024];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = 0;
  const char *p = strrchr(line, ')'); /* past the command name, which may hold spaces */
  int prio = 0;
  for (int field = 2; p && *p; p++)
    if (*p == ' ' && ++field == 18) { prio = atoi(p + 1); break; }
  return prio;
}
static int fifo_thread(pthread_t *t, int prio, void *(*fn)(void *)) {
  pthread_attr_t a;
  struct sched_param sp = {.sched_priority = prio};
  pthread_attr_init(&a);
  pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
  pthread_attr_setschedpolicy(&a, SCHED_FIFO);
  pthread_attr_setschedparam(&a, &sp);
  int r = pthread_create(t, &a, fn, NULL);
  pthread_attr_destroy(&a);
  return r;
}
static int wait_prio(int tid, int want) {
  int prio = 0;
  for (int i = 0; i < 20000 && (prio = kernel_prio(tid)) != want; i++) usleep(500); /* (a bound: 10 s) */
  return prio;
}

static void thread_safe_lock_inherits_priority(void **state) {
  (void)state;
  pi_space = ms_space_create(&(ms_space_config_t){.initial_size = 1 << 20, .flags = MS_SPACE_THREAD_SAFE, .numa_node = -1});
  assert_non_null(pi_space);
  atomic_store(&pi_holding, 0), atomic_store(&pi_release, 0), atomic_store(&pi_low_tid, 0);
  pthread_t low, high;
  int r = fifo_thread(&low, PI_LOW, pi_low);
  if (r) {
    ms_space_destroy(pi_space);
    ms_skip_refused(r, "a SCHED_FIFO thread (CAP_SYS_NICE or RLIMIT_RTPRIO)");
  }
  for (int i = 0; i < 10000 && !atomic_load(&pi_holding); i++) usleep(1000); /* (a bound: 10 s) */
  if (!atomic_load(&pi_holding)) {
    void *low_r = NULL;
    pthread_join(low, &low_r);
    fail_msg("ms_space_walk never called its visit: %s", low_r ? (const char *)low_r : "(returned)");
  }
  int tid = atomic_load(&pi_low_tid);
  int before = wait_prio(tid, -1 - PI_LOW);
  r = fifo_thread(&high, PI_HIGH, pi_high);
  int boosted = r ? 0 : wait_prio(tid, -1 - PI_HIGH);
  atomic_store(&pi_release, 1);
  void *low_r = NULL, *high_r = NULL;
  assert_int_equal(pthread_join(low, &low_r), 0);
  if (!r) assert_int_equal(pthread_join(high, &high_r), 0);
  ms_space_destroy(pi_space);
  if (r) ms_skip_refused(r, "a second SCHED_FIFO thread");
  if (low_r || high_r) fail_msg("%s failed", low_r ? (const char *)low_r : (const char *)high_r);
  assert_int_equal(before, -1 - PI_LOW);
  if (boosted != -1 - PI_HIGH)
    fail_msg("the lock holder's priority is %d while a priority-%d thread waits for the lock, not %d: the lock of "
             "a MS_SPACE_THREAD_SAFE space does not inherit priority", boosted, PI_HIGH, -1 - PI_HIGH);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(thread_safe_lock_inherits_priority),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
