/* stress_signal SIGNALS THREADS: THREADS threads allocate, reallocate and free while another thread sends
   them SIGNALS signals (handlers installed without SA_RESTART, so interrupted system calls return EINTR
   inside the allocator). Handlers only count: malloc is not async-signal-safe. Every block is checked. */
#include "stress_common.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

static atomic_int stop;
static atomic_long handled, ops;

static void handler(int sig) { (void)sig; atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed); }

static void *worker(void *arg) {
  uint64_t s = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 5;
  void *held[128] = {0};
  while (!atomic_load(&stop)) {
    int i = (int)(rnd_next(&s) % 128);
    if (held[i]) blk_free(held[i]);
    held[i] = blk_new(&s);
    if ((rnd_next(&s) & 15) == 0) { /* a big block too: mmap/mremap/madvise paths */
      void *big = malloc(1 << 20);
      if (!big) DIE("malloc(1 MiB) failed");
      memset(big, 1, 1 << 20);
      big = realloc(big, 3 << 20);
      if (!big) DIE("realloc(3 MiB) failed");
      free(big);
    }
    atomic_fetch_add(&ops, 1);
  }
  for (int i = 0; i < 128; i++) if (held[i]) blk_free(held[i]);
  return NULL;
}

int main(int argc, char **argv) {
  long signals = argc > 1 ? atol(argv[1]) : 20000;
  int nthreads = argc > 2 ? atoi(argv[2]) : 4;
  if (nthreads > 64) nthreads = 64;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;  /* no SA_RESTART */
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGUSR2, &sa, NULL);
  pthread_t th[64];
  for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1));
  for (long k = 0; k < signals; k++) {
    pthread_kill(th[k % nthreads], k & 1 ? SIGUSR1 : SIGUSR2);
    usleep(20);  /* let the threads run between signals: most signals then land, few coalesce */
  }
  usleep(10000);
  atomic_store(&stop, 1);
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  printf("stress_signal: %ld signals sent, %ld handled, %ld allocation rounds in %d threads\n", signals,
         atomic_load(&handled), atomic_load(&ops), nthreads);
  return atomic_load(&handled) > 0 ? 0 : 1;
}
