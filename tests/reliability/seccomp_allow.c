/* seccomp_allow: a single-threaded program that sandboxes itself once it runs, allowing only the system calls
   docs/design.md lists for allocating (the heap's row) and what the program itself makes (write, exit_group): blocks
   of 16 B to 64 MiB, reallocated, freed, malloc_trim, three rounds. A call outside the list traps (SIGSYS): its
   number printed, exit 1 (glibc's malloc: brk, 12). Exit 0: "ok"; 77: seccomp refused. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

static void trapped(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)uc;
  char msg[] = "system call 000 outside the list\n";
  unsigned nr = (unsigned)si->si_syscall % 1000;
  msg[12] = (char)('0' + nr / 100), msg[13] = (char)('0' + nr / 10 % 10), msg[14] = (char)('0' + nr % 10);
  (void)!write(1, msg, sizeof msg - 1);
  _exit(1);
}

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

int main(void) {
  free(malloc(100)); /* the heap's start-up, before the filter (the program's first allocation) */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = trapped;
  sa.sa_flags = SA_SIGINFO;
  if (sigaction(SIGSYS, &sa, NULL) != 0) return 2;
  struct sock_filter f[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    ALLOW(SYS_mmap), ALLOW(SYS_munmap), ALLOW(SYS_mremap), ALLOW(SYS_madvise), ALLOW(SYS_mprotect),
    ALLOW(SYS_prlimit64), ALLOW(SYS_futex), ALLOW(SYS_sched_yield), ALLOW(SYS_nanosleep),
    ALLOW(SYS_clock_nanosleep), ALLOW(SYS_sched_getaffinity), ALLOW(SYS_prctl),
    ALLOW(SYS_write), ALLOW(SYS_exit_group), ALLOW(SYS_rt_sigreturn),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
    printf("skip: seccomp refused (%s)\n", strerror(errno));
    return 77;
  }
  static const size_t sizes[] = {16, 1000, 40000, 100000, 300000, 1 << 20, 3 << 20, 20 << 20, 64 << 20};
  for (int round = 0; round < 3; round++) {
    void *v[sizeof sizes / sizeof sizes[0]][8];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
      for (int j = 0; j < 8; j++) {
        if (!(v[i][j] = malloc(sizes[i]))) return 2;
        memset(v[i][j], j, sizes[i] < 4096 ? sizes[i] : 4096);
      }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
      for (int j = 0; j < 8; j += 2)
        if (!(v[i][j] = realloc(v[i][j], sizes[i] * 2 + 1))) return 2;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
      for (int j = 0; j < 8; j++) free(v[i][j]);
    malloc_trim(0);
  }
  (void)!write(1, "ok\n", 3);
  return 0;
}
