/* exit_last_thread: a process whose last thread leaves with pthread_exit must end (POSIX: as if exit(0)),
   however many background threads the allocator started. CPython's test_threading does this after a fork
   from a thread. Run under `memspace run`: a child forks from a thread, allocates from several threads, then
   its last application thread calls pthread_exit; the parent waits up to 30 s for the child to end. */
#include "stress_common.h"
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

static void *churn(void *arg) {
  uint64_t s = (uintptr_t)arg + 1;
  for (int i = 0; i < 20000; i++) blk_free(blk_new(&s));
  return NULL;
}

/* in the child: the forking thread is the only one; start allocating threads, join them, leave */
static void *forker(void *arg) {
  (void)arg;
  pid_t pid = fork();
  if (pid < 0) DIE("fork failed");
  if (pid == 0) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)i);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    struct timespec ts = {0, 300000000};  /* give a background thread time to start */
    nanosleep(&ts, NULL);
    pthread_exit(NULL);  /* the last application thread of the child */
  }
  for (int waited = 0; waited < 300; waited++) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(st) && WEXITSTATUS(st) == 0) { printf("exit_last_thread: the child ended with status 0\n"); exit(0); }
      DIE("the child ended badly (status 0x%x)", st);
    }
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  DIE("exit_last_thread: the child's last thread called pthread_exit 30 s ago and the process is still alive "
      "(a background thread keeps it running)");
  return NULL;
}

int main(void) {
  pthread_t t;
  churn(NULL);
  pthread_create(&t, NULL, forker, NULL);
  pthread_join(t, NULL);
  return 1;
}
