/* SPDX-License-Identifier: MIT */
/* auto_fork_race: under MEMSPACE_SPILL_THRESHOLD=auto (LD_PRELOAD of libmemspace), a process's first large block
   reads the memory budget under a lock. A fork while another thread reads it must leave the child a usable
   allocator: the child's own first large block must not wait for the parent's reader, which the child does not
   have. Each round is a fresh process (the read happens once a process): one thread makes its first 4 MiB
   block while the main thread forks; every child allocates 4 MiB under alarm(10). Exit 0, or 1 naming the round
   whose child hung. A race: one round catches a fork inside the read now and then, so 100 rounds run. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int done;

static void *first_large(void *arg) {
  (void)arg;
  void *p = malloc(4u << 20);
  if (p) memset(p, 1, 4096);
  atomic_store(&done, 1);
  return p;
}

static int child_hung(pid_t pid) {
  int st;
  if (waitpid(pid, &st, 0) != pid) return 0;
  return WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM;
}

static int one_round(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, first_large, NULL) != 0) return 2;
  int hung = 0, forks = 0;
  while (!atomic_load(&done) && forks < 50) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(10);
      void *p = malloc(4u << 20);
      _exit(p ? 0 : 3);
    }
    if (pid > 0) { forks++; hung += child_hung(pid); }
  }
  void *r;
  pthread_join(t, &r);
  free(r);
  return hung ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "round") == 0) return one_round();
  for (int i = 0; i < 100; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], "round", (char *)NULL);
      _exit(2);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) { fprintf(stderr, "round %d: no status\n", i); return 1; }
    if (WEXITSTATUS(st) == 1) { fprintf(stderr, "round %d: a forked child hung in its first large malloc\n", i); return 1; }
    if (WEXITSTATUS(st) != 0) { fprintf(stderr, "round %d: exit %d\n", i, WEXITSTATUS(st)); return 1; }
  }
  printf("100 rounds: no forked child hung\n");
  return 0;
}
