/* seccomp_tsync: a program that sandboxes itself once it runs: threads allocate (the maintenance thread starts),
   then it installs a seccomp filter on every thread (SECCOMP_FILTER_FLAG_TSYNC, as a browser's renderer or
   libseccomp's TSYNC attribute does) that kills the process for open/openat, more threads allocate and free, and
   the main thread ends with pthread_exit. glibc's malloc opens no file: the process exits 0. Memspace's
   maintenance thread, already running when the filter came, must open no file from then on (its count of threads
   in /proc/self/stat, its memory-pressure looks): the process is neither killed (SIGSYS) nor kept alive.
   Under a spill threshold of 1 MiB (test seccomp_tsync_spill) the large blocks before and after the filter are
   spilled: spill's write-back in that thread samples the memory budget (/proc/meminfo, the cgroup's files) no more.
   Argument `trap`: SECCOMP_RET_TRAP instead of KILL_PROCESS. Argument `frame`: the filter kills for membarrier
   instead, and a frame allocator goes idle after it: the maintenance thread reclaims it without membarrier (a
   sandbox may not know that call). Exit 77 when seccomp is refused. */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include "memspace.h"

static void *work(void *arg) {
  (void)arg;
  for (int r = 0; r < 25; r++) {
    void *v[200];
    for (int i = 0; i < 200; i++) {
      v[i] = malloc((size_t)(100 + i * 50));
      if (v[i]) memset(v[i], 1, 16);
    }
    for (int i = 0; i < 200; i++) free(v[i]);
    usleep(20000); /* the maintenance thread runs rounds meanwhile */
  }
  return NULL;
}

static void *exit_early(void *arg) {
  (void)arg;
  pthread_exit(NULL); /* glibc loads its unwinder (libgcc_s: an open) at the first pthread_exit: before the filter */
}

static void run_thread(void *(*fn)(void *)) {
  pthread_t t;
  if (pthread_create(&t, NULL, fn, NULL) != 0) exit(2);
  pthread_join(t, NULL);
}

int main(int argc, char **argv) {
  bool frame_mode = argc > 1 && strcmp(argv[1], "frame") == 0;
  ms_frame_config_t fc = {.range_size = 1 << 20, .idle_ms = 30};
  ms_frame_t *frame = frame_mode ? ms_frame_create(&fc) : NULL;
  if (frame_mode && !frame) return 2;
  run_thread(exit_early);
  run_thread(work);
  char *big = malloc(4 << 20); /* (spilled under a 1 MiB threshold: spill's file is made before the filter) */
  if (!big) return 2;
  memset(big, 3, 4 << 20);
  unsigned ret = argc > 1 && strcmp(argv[1], "trap") == 0 ? SECCOMP_RET_TRAP : SECCOMP_RET_KILL_PROCESS;
  struct sock_filter f[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, frame_mode ? SYS_membarrier : SYS_openat, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, ret),
#ifdef SYS_open
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, ret),
#endif
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
    printf("skip: seccomp refused (%s)\n", strerror(errno));
    return 77;
  }
  if (frame) { /* used, then idle for ten times its idle time: the maintenance thread reclaims it */
    char *a = ms_frame_alloc(frame, 4096, 0);
    if (!a) return 2;
    memset(a, 5, 4096);
    usleep(300000);
    ms_frame_flip(frame);
    a = ms_frame_alloc(frame, 4096, 0);
    if (!a) return 2;
    memset(a, 6, 4096);
    ms_frame_destroy(frame);
  }
  for (int i = 0; i < 20; i++) { /* spill's write-back samples the memory budget meanwhile */
    char *b = malloc(4 << 20);
    if (!b) return 2;
    memset(b, i, 4 << 20);
    free(b);
    usleep(25000);
  }
  free(big);
  for (int i = 0; i < 4; i++) run_thread(work);
  pthread_t t;
  if (pthread_create(&t, NULL, work, NULL) != 0) return 2;
  puts("main thread ends (pthread_exit); the process must exit 0");
  fflush(stdout);
  pthread_exit(NULL);
}
