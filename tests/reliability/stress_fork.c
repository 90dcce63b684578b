/* stress_fork FORKS THREADS: THREADS threads allocate and free without pause while the main thread forks
   FORKS times; every child allocates, checks and frees blocks (in a second thread too) and exits. A child
   that deadlocks (an allocator lock held across fork) is killed by its alarm and fails the test. */
#include "stress_common.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

static atomic_int stop;
static atomic_long ops;

static void *worker(void *arg) {
  uint64_t s = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  void *held[64] = {0};
  while (!atomic_load(&stop)) {
    int i = (int)(rnd_next(&s) % 64);
    if (held[i]) blk_free(held[i]);
    held[i] = blk_new(&s);
    atomic_fetch_add(&ops, 1);
  }
  for (int i = 0; i < 64; i++) if (held[i]) blk_free(held[i]);
  return NULL;
}

static void *child_thread(void *arg) {
  uint64_t s = (uintptr_t)arg;
  for (int k = 0; k < 200; k++) blk_free(blk_new(&s));
  return NULL;
}

static void child(int n) {
  alarm(30);
  uint64_t s = (uint64_t)n * 7919 + 3;
  void *b[100];
  for (int i = 0; i < 100; i++) b[i] = blk_new(&s);
  pthread_t t;
  if (pthread_create(&t, NULL, child_thread, (void *)(uintptr_t)(n + 11)) == 0) pthread_join(t, NULL);
  for (int i = 0; i < 100; i++) {
    b[i] = realloc(b[i], 16 + (size_t)i * 40);
    if (!b[i]) DIE("child realloc failed");
    free(b[i]);
  }
  exit(0);
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 1000, nthreads = argc > 2 ? atoi(argv[2]) : 4;
  pthread_t th[64];
  if (nthreads > 64) nthreads = 64;
  for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1));
  int bad = 0;
  for (int f = 0; f < forks; f++) {
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); bad++; continue; }
    if (pid == 0) child(f);
    int st;
    while (waitpid(pid, &st, 0) < 0) {}
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "child %d failed: %s %d\n", f, WIFSIGNALED(st) ? "signal" : "exit",
              WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
      if (++bad > 5) break;
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  printf("stress_fork: %d forks with %d allocating threads (%ld parent operations): %d failed children\n",
         forks, nthreads, atomic_load(&ops), bad);
  return bad ? 1 : 0;
}
