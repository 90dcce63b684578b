/* The maintenance thread: not started in a single-threaded program, started when a second thread exists and
   work is kicked, re-created in a forked child, off with MEMSPACE_PURGE_DELAY=-1. A second thread makes the process
   count as limited by a cgroup until the thread's first look has read the limit (MSI_TIGHT_UNSEEN: the heap sets
   emptied spans aside meanwhile). Threads are counted in /proc/self/task. Behaviour only: waits are generous upper bounds, never timing checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "os.h"

static _Atomic int runs;
static void task_run(uint64_t now) { (void)now; atomic_fetch_add(&runs, 1); }
static const msi_maint_task_t task = {"test", 10, task_run, NULL};

static int base; /* threads at start: 1, or 2 when a sanitizer runs its own background thread */
static int threads(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

/* threads named memspace-maint (pthread_setname_np in maint.c) */
static int maint_threads(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[300], comm[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      if (fgets(comm, sizeof comm, f)) n += strncmp(comm, "memspace-maint", 14) == 0;
      fclose(f);
    }
  }
  closedir(d);
  return n;
}

static void *sleeper(void *arg) {
  (void)arg;
  pause();
  return NULL;
}

static bool wait_runs(int at_least) {
  for (int i = 0; i < 1000 && atomic_load(&runs) < at_least; i++) usleep(10000);
  return atomic_load(&runs) >= at_least;
}

/* runs first, in a child forked while the process is still single-threaded */
static void off_with_purge_delay(void **state) {
  (void)state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    ms_option_set(MS_OPTION_PURGE_DELAY, -1);
    msi_maint_register(&task);
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL) != 0) _exit(3);
    msi_maint_note_thread();
    if (atomic_load(&msi_maint_tight) & MSI_TIGHT_UNSEEN) _exit(2); /* (no thread: no look would ever clear it) */
    msi_maint_kick();
    usleep(100000);
    _exit(msi_maint_running() || maint_threads() != 0 ? 1 : 0);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void single_threaded(void **state) {
  (void)state;
  msi_maint_register(&task);
  msi_maint_register(&task); /* idempotent */
  msi_maint_kick();
  usleep(50000);
  assert_false(msi_maint_running());
  assert_int_equal(threads(), base);
  assert_int_equal(atomic_load(&runs), 0);
}

static pthread_t second;

static void started_with_second_thread(void **state) {
  (void)state;
  assert_int_equal(pthread_create(&second, NULL, sleeper, NULL), 0);
  msi_maint_kick();
  assert_true(msi_maint_running());
  assert_true(wait_runs(2));
  assert_int_equal(maint_threads(), 1); /* (it names itself as it starts: looked at once it has run) */
  msi_maint_kick(); /* a second kick starts nothing more */
  assert_int_equal(maint_threads(), 1);
}

static void survives_fork(void **state) {
  (void)state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* the child has only the forking thread; the maintenance thread is gone until kicked again */
    if (msi_maint_running() || maint_threads() != 0) _exit(1);
    msi_maint_kick(); /* still single-threaded: nothing starts although the parent had threads */
    if (msi_maint_running() || maint_threads() != 0) _exit(6);
    usleep(150000);   /* past the rate limit of the thread check */
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL) != 0) _exit(2);
    atomic_store(&runs, 0);
    msi_maint_kick(); /* the second thread is seen without msi_maint_note_thread */
    if (!msi_maint_running()) _exit(3);
    if (!wait_runs(2)) _exit(4);
    _exit(maint_threads() == 1 ? 0 : 5);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  /* the parent's thread still works */
  int before = atomic_load(&runs);
  assert_true(wait_runs(before + 2));
}

/* In a forked child (no look made there yet) a limit the parent read stays known, and a second thread's note sets
   MSI_TIGHT_UNSEEN; the started thread's
   first look takes it away, with MSI_TIGHT_LIMIT saying whether a cgroup limits the process, and later notes do
   not set it again */
static void limit_unseen_until_first_look(void **state) {
  (void)state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* (reset in the child, but for a limit the parent read: the child is in the same cgroup) */
    if ((atomic_load(&msi_maint_tight) & ~MSI_TIGHT_LIMIT) || msi_maint_running()) _exit(1);
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL) != 0) _exit(2);
    msi_maint_note_thread();
    if (!(atomic_load(&msi_maint_tight) & MSI_TIGHT_UNSEEN)) _exit(3);
    msi_maint_kick();
    for (int i = 0; i < 1000 && (atomic_load(&msi_maint_tight) & MSI_TIGHT_UNSEEN); i++) usleep(10000);
    if (atomic_load(&msi_maint_tight) & MSI_TIGHT_UNSEEN) _exit(4);
    msi_os_cgroup_t cg;
    msi_os_cgroup_budget(UINT64_MAX, &cg);
    char usage[4200];
    bool limited = cg.limit != UINT64_MAX &&
                   msi_os_cgroup_file(&cg, cg.version == 1 ? "memory.usage_in_bytes" : "memory.current", usage,
                                      sizeof usage);
    if (limited != ((atomic_load(&msi_maint_tight) & MSI_TIGHT_LIMIT) != 0)) _exit(5);
    msi_maint_note_thread();
    _exit(atomic_load(&msi_maint_tight) & MSI_TIGHT_UNSEEN ? 6 : 0);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* the sleeping thread's bound on its look at whether it is alone: never without a limit once no other thread is
   left (the program's last thread may end between two looks without a kick: one without a heap, or one whose
   kick found the thread awake) */
static void alone_wait_bounds(void **state) {
  (void)state;
  unsigned iv = 10;
  assert_int_equal(msi_maint_alone_wait(3, false, 2, &iv), 0);   /* main + one heap thread + this one */
  assert_int_equal(iv, 10);
  assert_int_not_equal(msi_maint_alone_wait(1, false, 0, &iv), 0); /* only the maintenance thread */
  assert_int_not_equal(msi_maint_alone_wait(2, true, 0, &iv), 0);  /* and the main thread's zombie */
  assert_int_not_equal(msi_maint_alone_wait(2, true, 5, &iv), 0);  /* heaps counted that are gone already */
  unsigned a = msi_maint_alone_wait(3, true, 0, &iv);              /* a thread without a heap: growing waits */
  unsigned b = msi_maint_alone_wait(3, true, 0, &iv);
  assert_true(a > 0 && b > a);
  for (int i = 0; i < 20; i++) b = msi_maint_alone_wait(3, true, 0, &iv);
  assert_true(b > 0 && b <= 1000);
}

int main(void) {
  base = threads();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(off_with_purge_delay), cmocka_unit_test(single_threaded),
      cmocka_unit_test(started_with_second_thread), cmocka_unit_test(survives_fork),
      cmocka_unit_test(limit_unseen_until_first_look), cmocka_unit_test(alone_wait_bounds)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
