/* The zero-fault, zero-syscall steady state of a space created at start (pre-faulted, locked when permitted):
   a child runs a random malloc/free/realloc/aligned workload (writing every block) and counts page faults with
   getrusage, then runs it again under a seccomp filter that kills the process on any system call but exit.
   Faults must be 0 when the space is pre-faulted (it always is when created at start); the child must not be
   killed (SIGSYS) for a system call. Plain and thread-safe (uncontended priority-inheriting mutex) spaces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "ms_test.h"

enum { LIVE = 512 };
static void *live[LIVE];
static uint64_t x = 12345;

static int workload(ms_space_t *s, int ops) {
  for (int i = 0; i < ops; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    unsigned slot = (unsigned)(x % LIVE);
    size_t size = (size_t)1 << (4 + x % 15); /* 16 B .. 256 KiB */
    size += (x >> 20) % size;
    if (live[slot]) {
      if ((x >> 40) % 4 == 0) {
        void *q = ms_space_realloc(s, live[slot], size);
        if (!q) return 1;
        live[slot] = q;
        memset(q, 1, size);
        continue;
      }
      ms_space_free(s, live[slot]);
      live[slot] = NULL;
    } else {
      void *p = (x >> 40) % 3 == 0 ? ms_space_aligned_alloc(s, 256, size) : ms_space_malloc(s, size);
      if (!p) return 2;
      memset(p, 2, size);
      live[slot] = p;
    }
  }
  return 0;
}

static int child(unsigned flags) {
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 512 << 20;
  c.at = MS_SPACE_AT_START;
  c.flags = flags | MS_SPACE_LOCKED;
  c.numa_node = -1;
  ms_space_t *s = ms_space_create(&c);
  if (!s) { c.flags &= ~MS_SPACE_LOCKED; s = ms_space_create(&c); }
  if (!s) return 10;
  if (workload(s, 20000)) return 11; /* warm up */
  struct rusage a, b;
  getrusage(RUSAGE_SELF, &a);
  if (workload(s, 20000)) return 12;
  getrusage(RUSAGE_SELF, &b);
  /* pre-faulted: no fault allowed (not counted under ThreadSanitizer, whose shadow of the bytes written faults in
     on its own: tests/common/ms_test.h MS_TEST_TSAN; the system calls below are checked there too) */
  if (!MS_TEST_TSAN && (b.ru_minflt != a.ru_minflt || b.ru_majflt != a.ru_majflt)) return 13;
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit_group, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
    fprintf(stderr, "seccomp filter refused: %s\n", strerror(errno));
    return 77;
  }
  if (workload(s, 50000)) return 14;
  return 0;
}

static void run(unsigned flags) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(child(flags));
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77) ms_skip_refused(0, "seccomp (the child's message says why)");
  if (WIFSIGNALED(st)) fail_msg("steady state made a system call (killed by signal %d)", WTERMSIG(st));
  if (WEXITSTATUS(st) == 13) fail_msg("steady state took page faults");
  assert_int_equal(WEXITSTATUS(st), 0);
}

static void steady_plain(void **state) { (void)state; run(0); }
static void steady_thread_safe(void **state) { (void)state; run(MS_SPACE_THREAD_SAFE); }

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(steady_plain), cmocka_unit_test(steady_thread_safe)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
