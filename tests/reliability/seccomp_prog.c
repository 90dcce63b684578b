/* seccomp_prog: a plain malloc program under a seccomp filter (issue #25), run under `memspace run` in each mode.
   A sandbox (systemd's SystemCallFilter=, a container runtime, a browser's renderer) may refuse system calls an
   allocator uses, or mmap beyond some length; the filter is inherited across exec, so the library starts up under
   it. glibc goes on there (it takes memory from brk when mmap is refused): so must memspace, never a crash, a hang
   or every malloc failing.
   For each case a child installs the filter (SECCOMP_RET_ERRNO | EPERM) and execs this program with "work", which
   allocates small and large blocks (one of 64 MiB, over the 16 MiB the first case allows), reallocates them (a
   large block grown from 20 to 40 MiB), runs 4 allocating threads and checks every byte it wrote.
   Cases: mmap16m (mmap of 16 MiB or more), madvise, mremap, membarrier, mlock (mlock, mlock2, mlockall), fallocate.
   Exit 0: every case's child printed "work ok"; 1: one did not (its status printed); 77: seccomp refused. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#define KEEP 256
static int check(unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i += 509)
    if (p[i] != v) return -1;
  return n && p[n - 1] != v ? -1 : 0;
}

static void *thread_work(void *arg) {
  (void)arg;
  for (int i = 0; i < 20000; i++) {
    size_t n = (size_t)(i * 131 % 6000 + 1);
    unsigned char *p = malloc(n);
    if (!p) return (void *)1;
    memset(p, 7, n);
    if (check(p, n, 7)) return (void *)1;
    free(p);
  }
  return NULL;
}

static int fail(const char *what, size_t n) {
  printf("FAILED: %s (%zu bytes): errno %d\n", what, n, errno);
  return 2;
}

static int work(void) {
  static unsigned char *keep[KEEP];
  static size_t len[KEEP];
  for (int i = 0; i < 20000; i++) {
    int k = i % KEEP;
    size_t n = i % 97 == 0 ? (size_t)(i % 5 + 1) << 20 : (size_t)(i * 37 % 3000 + 1);
    if (keep[k] && check(keep[k], len[k], (unsigned char)k)) return fail("contents", len[k]);
    if (i % 3 == 0 && keep[k]) {
      unsigned char *q = realloc(keep[k], n);
      if (!q) return fail("realloc", n);
      memset(q, k, n);
      keep[k] = q, len[k] = n;
      continue;
    }
    free(keep[k]);
    if (!(keep[k] = malloc(n))) return fail("malloc", n);
    memset(keep[k], k, len[k] = n);
  }
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    if (pthread_create(&t[i], NULL, thread_work, NULL)) return fail("pthread_create", 0);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    if (r) return fail("a thread's blocks", 0);
  }
  for (int i = 0; i < KEEP; i++) free(keep[i]);
  size_t big = (size_t)64 << 20;
  unsigned char *b = malloc(big);
  if (!b) return fail("malloc", big);
  memset(b, 3, big);
  if (check(b, big, 3)) return fail("contents", big);
  free(b);
  unsigned char *g = malloc((size_t)20 << 20);
  if (!g) return fail("malloc", (size_t)20 << 20);
  memset(g, 5, (size_t)20 << 20);
  unsigned char *g2 = realloc(g, (size_t)40 << 20);
  if (!g2) return fail("realloc", (size_t)40 << 20);
  if (check(g2, (size_t)20 << 20, 5)) return fail("contents after realloc", (size_t)20 << 20);
  free(g2);
  printf("work ok\n");
  return 0;
}

/* the filter: each listed call refused with EPERM when its second argument (a length) is at least minlen */
static int sandbox(const int *nrs, int n, unsigned long minlen) {
  struct sock_filter f[64];
  int k = 0;
  f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  for (int i = 0; i < n; i++) /* to the length check when it matches */
    f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nrs[i], (unsigned char)(n - i), 0);
  f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  /* args[1] >= minlen: its high word non-zero, or its low word >= minlen */
  f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]) + 4);
  f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2);
  f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]));
  f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (unsigned)minlen, 0, 1);
  f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
  f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog prog = {(unsigned short)k, f};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "work")) return work();
  static const struct { const char *name; int nr[3]; int n; unsigned long minlen; } cases[] = {
      {"mmap16m", {SYS_mmap}, 1, 16ul << 20},
      {"madvise", {SYS_madvise}, 1, 0},
      {"mremap", {SYS_mremap}, 1, 0},
      {"membarrier", {SYS_membarrier}, 1, 0},
      {"mlock", {SYS_mlock, SYS_mlock2, SYS_mlockall}, 3, 0},
      {"fallocate", {SYS_fallocate}, 1, 0},
  };
  int failed = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int pfd[2];
    if (pipe(pfd)) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      dup2(pfd[1], 1);
      close(pfd[0]);
      alarm(120); /* a hang ends as SIGALRM, reported below (kept across exec) */
      if (sandbox(cases[c].nr, cases[c].n, cases[c].minlen)) {
        fprintf(stderr, "MS_SKIP refused: seccomp filter: %s\n", strerror(errno));
        _exit(77);
      }
      execl("/proc/self/exe", argv[0], "work", (char *)NULL);
      _exit(126);
    }
    close(pfd[1]);
    char out[512] = "";
    size_t got = 0;
    ssize_t r;
    while (got < sizeof out - 1 && (r = read(pfd[0], out + got, sizeof out - 1 - got)) > 0) got += (size_t)r;
    out[got] = 0;
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) return 77;
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "work ok");
    printf("%-11s %s", cases[c].name, ok ? "ok\n" : "FAILED: ");
    if (!ok) {
      if (WIFSIGNALED(st)) printf("signal %d; ", WTERMSIG(st));
      else printf("exit %d; ", WEXITSTATUS(st));
      printf("%s\n", got ? out : "(no output)");
      failed = 1;
    }
  }
  return failed;
}
