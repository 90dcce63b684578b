/* signal_trim: a signal handler calling malloc_trim while the thread it interrupted is inside the heap's purge pass
   or holds the list of orphaned heaps (the outcome rule of signal_reentry.c: harmless or one message and SIGABRT,
   never a hang). Counted as another thread's, such a pass or list would be waited for, and it ends only after the
   handler returns: malloc_trim in the handler would sleep in 1 ms steps for ever. With _fork the handler forks
   instead, and the child allocates blocks in the handler, then, once the interrupted pass ends there, checks them,
   allocates, frees and calls malloc_trim: the pass counted twice (once by the fork's reset, once when it ends)
   would make that malloc_trim wait for ever, and the pass's held chunks and segments given back twice (by the
   child's fork handler, then by the pass) would drop the pages of the blocks the handler took.
   Deterministic as signal_reentry.c: this program defines madvise, munmap and mprotect (exported, -rdynamic); a
   child process runs the mode's calls with the k-th of the library's calls of them raising SIGUSR1, whose handler
   calls malloc_trim, for k = 1, 2, ... until a child makes fewer calls (each point of the calls reached once, with
   or without a lock held). glibc's malloc_trim calls its internal madvise: under glibc no handler runs. Modes:
   trim     malloc_trim after blocks of several sizes were freed (the pass gives their pages back);
   orphan   the same with a thread that ended holding blocks main frees then (the orphaned heap's collection);
   refused  under RLIMIT_DATA, small blocks up to the limit, all freed, then large blocks: the refused block's
            release of the idle segments (msi_heap_release_idle's pass);
   orphan_fork  orphan's calls with the handler forking (above).
   Exit 0: every child harmless (exit 0) or detected (SIGABRT: one message, from the library's re-entry check);
   1: a child hung (ended by its SIGALRM) or died otherwise. */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t armed, in_handler, calls, fire_at, handler_forks, forked_child, child_bad;
static char *taken[256]; /* the handler's child's blocks, taken inside the handler */

static long fire(long r) {
  if (armed && !in_handler && ++calls == fire_at) raise(SIGUSR1); /* delivered before raise returns */
  return r;
}
#define EXPORT __attribute__((visibility("default"))) /* the build's default is hidden */
EXPORT int madvise(void *addr, size_t len, int advice) { return (int)fire(syscall(SYS_madvise, addr, len, advice)); }
EXPORT int munmap(void *addr, size_t len) { return (int)fire(syscall(SYS_munmap, addr, len)); }
EXPORT int mprotect(void *addr, size_t len, int prot) { return (int)fire(syscall(SYS_mprotect, addr, len, prot)); }

static void handler(int sig) {
  (void)sig;
  in_handler = 1;
  if (!handler_forks) {
    malloc_trim(0);
  } else {
    pid_t p = fork();
    if (p == 0) { /* the child takes blocks, goes on with the interrupted call, then run() ends it */
      forked_child = 1;
      alarm(20);
      for (int i = 0; i < 256; i++)
        if ((taken[i] = malloc((size_t)(i % 64 + 1) * 1000))) memset(taken[i], 0xab, 1000);
    } else if (p > 0) {
      int st;
      if (waitpid(p, &st, 0) == p && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        child_bad = WIFSIGNALED(st) ? 100 + WTERMSIG(st) : WEXITSTATUS(st);
    }
  }
  in_handler = 0;
}

#define BLOCKS 256
static char *blocks[BLOCKS];
static void *fill(void *arg) {
  (void)arg;
  for (int i = 0; i < BLOCKS; i++) {
    blocks[i] = malloc((size_t)(i % 64 + 1) * 1000);
    if (blocks[i]) memset(blocks[i], 1, 1000);
  }
  return NULL;
}
static void drop(void) {
  for (int i = 0; i < BLOCKS; i++) free(blocks[i]);
}
/* blocks of `size` until malloc refuses (at most `max`), chained through their first word */
static void *chain(size_t size, size_t max) {
  void *prev = NULL;
  for (size_t n = 0; n < max; n++) {
    void **p = malloc(size);
    if (!p) break;
    memset(p, 1, size < 4096 ? size : 4096);
    *p = prev;
    prev = p;
  }
  return prev;
}
static void unchain(void *c) {
  while (c) {
    void *next = *(void **)c;
    free(c);
    c = next;
  }
}

/* the mode's calls with the fire_at-th call raising the signal; exit 0 when it was reached, 3 when not */
static int run(const char *mode) {
  alarm(30); /* (a hang; a loaded machine fills the limit in a few seconds) */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigaction(SIGUSR1, &sa, NULL);
  if (strcmp(mode, "refused") == 0) {
    struct rlimit rl = {(size_t)64 << 20, (size_t)64 << 20};
    if (setrlimit(RLIMIT_DATA, &rl) != 0) { perror("setrlimit"); return 2; }
    unchain(chain(16, (size_t)1 << 24));
    armed = 1;
    void *large = chain(40000, 1 << 16);
    armed = 0;
    unchain(large);
  } else {
    if (strcmp(mode, "orphan") == 0) {
      pthread_t t;
      if (pthread_create(&t, NULL, fill, NULL) != 0 || pthread_join(t, NULL) != 0) return 2;
    } else {
      fill(NULL);
    }
    drop();
    armed = 1;
    malloc_trim(0);
    armed = 0;
  }
  if (forked_child) { /* the handler's child: the heap after the interrupted pass ended here */
    for (int i = 0; i < 256; i++)
      for (int j = 0; taken[i] && j < 1000; j++)
        if ((unsigned char)taken[i][j] != 0xab) _exit(9); /* a block's page dropped under it */
    for (int i = 0; i < 3; i++) fill(NULL), drop();
    malloc_trim(0);
    _exit(0);
  }
  if (child_bad) {
    printf("the handler's fork child: %s %d\n", child_bad > 100 ? "signal" : "exit status",
           child_bad > 100 ? child_bad - 100 : child_bad);
    return 5;
  }
  return calls >= fire_at ? 0 : 3;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "trim";
  handler_forks = strcmp(mode, "orphan_fork") == 0;
  if (handler_forks) mode = "orphan";
  int harmless = 0, detected = 0;
  for (int k = 1; k <= 500; k++) {
    fflush(stdout);
    pid_t c = fork();
    if (c < 0) { perror("fork"); return 2; }
    if (c == 0) {
      fire_at = k;
      _exit(run(mode));
    }
    int st;
    if (waitpid(c, &st, 0) != c) { perror("waitpid"); return 2; }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 3) break;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) harmless++;
    else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT) detected++;
    else {
      printf("%s: the handler at the library's call %d: %s %d%s\n", mode, k,
             WIFSIGNALED(st) ? "signal" : "exit status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
             WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? " (SIGALRM: a hang)" : "");
      return 1;
    }
  }
  printf("%s: the handler ran at %d calls: %d harmless, %d detected\n", mode, harmless + detected, harmless, detected);
  return harmless + detected ? 0 : 1;
}
