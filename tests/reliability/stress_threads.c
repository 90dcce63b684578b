/* stress_threads N: N short-lived threads (8 at a time) each allocate blocks, free the blocks the previous
   thread left behind (remote frees), leave some for the next and exit. RSS must stay bounded: at the end
   at most twice (and 64 MiB above) what it was after the first tenth of the threads. */
#include "stress_common.h"
#include <pthread.h>
#include <stdatomic.h>

#define LEFT 16
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *left[LEFT];

static void *worker(void *arg) {
  uint64_t s = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 9;
  void *mine[32];
  for (int i = 0; i < 32; i++) mine[i] = blk_new(&s);
  for (int i = 0; i < 32; i += 2) blk_free(mine[i]);
  pthread_mutex_lock(&mu);
  for (int i = 0; i < LEFT; i++) {
    if (left[i]) blk_free(left[i]);   /* a block another (finished) thread allocated */
    left[i] = mine[2 * i + 1];
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000;
  size_t warm = 0, peak = 0;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  for (long t = 0; t < n; t += 8) {
    pthread_t th[8];
    int k = 0;
    for (; k < 8 && t + k < n; k++)
      if (pthread_create(&th[k], &attr, worker, (void *)(uintptr_t)(t + k + 1)) != 0) DIE("pthread_create failed");
    for (int j = 0; j < k; j++) pthread_join(th[j], NULL);
    size_t r = rss_bytes();
    if (r > peak) peak = r;
    if (!warm && t >= n / 10) warm = r;
  }
  for (int i = 0; i < LEFT; i++) if (left[i]) blk_free(left[i]);
  size_t end = rss_bytes();
  size_t limit = warm * 2 > warm + (64u << 20) ? warm * 2 : warm + (64u << 20);
  printf("stress_threads: %ld threads; RSS after %ld: %zu KiB, peak %zu KiB, end %zu KiB (limit %zu KiB)\n", n,
         n / 10, warm >> 10, peak >> 10, end >> 10, limit >> 10);
  return peak <= limit ? 0 : 1;
}
