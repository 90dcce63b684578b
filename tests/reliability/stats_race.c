/* stats_race: the heap's statistics read while another thread allocates, with no synchronisation between the two
   that ThreadSanitizer would count (the threads meet through relaxed atomics only). Every field the statistics
   read from other threads' spans and segments is a relaxed atomic access on both sides (heap.h MSI_SEEN), so
   ThreadSanitizer reports nothing; its exit status is 66 on a report. Built against the library compiled at -O0
   (tests/reliability/CMakeLists.txt), where no accessor is inlined into the statistics' walk. */
#include <memspace.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

static _Atomic int step;

static void wait_step(int s) {
  while (atomic_load_explicit(&step, memory_order_relaxed) < s) { /* the other thread's step */ }
}

static void *worker(void *arg) {
  (void)arg;
  void *p[64];
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < 64; i++) p[i] = ms_malloc((size_t)16 << (i % 8)); /* new spans: their fields written */
    for (int i = 0; i < 64; i += 2) ms_free(p[i]);
    atomic_store_explicit(&step, 2 * round + 1, memory_order_relaxed);
    wait_step(2 * round + 2); /* the main thread reads the statistics meanwhile */
    for (int i = 1; i < 64; i += 2) ms_free(p[i]);
  }
  return NULL;
}

int main(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
  ms_stats_t s;
  for (int round = 0; round < 4; round++) {
    wait_step(2 * round + 1);
    if (ms_stats_get(&s, sizeof s) != 0) return 1;
    ms_stats_print(NULL, NULL, 0); /* the heap's classes too */
    atomic_store_explicit(&step, 2 * round + 2, memory_order_relaxed);
  }
  pthread_join(t, NULL);
  printf("stats_race: done\n");
  return 0;
}
