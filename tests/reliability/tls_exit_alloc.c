/* tls_exit_alloc: threads whose pthread_key destructor allocates in every round glibc runs (issue #25): the last
   round comes after memspace's own key destructor orphaned the thread's heap. Each allocation there must not leave
   a heap attached to the dead thread: 4,000 such threads, resident memory from the 500th to the last may grow by
   at most 16 MiB (a heap kept per thread grew it by ~26 KiB a thread, 90 MiB; glibc: under 1 MiB).
   Exit 0: bounded; 1: grew (figures printed). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_key_t key;

static void destructor(void *v) {
  free(v);
  char *p = malloc(50);
  if (p) memset(p, 1, 50);
  pthread_setspecific(key, p); /* glibc runs another round, up to PTHREAD_DESTRUCTOR_ITERATIONS; the last leaks p */
}

static void *thread_main(void *arg) {
  (void)arg;
  pthread_setspecific(key, malloc(100));
  void *x[64];
  for (int i = 0; i < 64; i++) x[i] = malloc((size_t)i * 64 + 16);
  for (int i = 0; i < 64; i++) free(x[i]);
  return NULL;
}

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
    fclose(f);
  }
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(void) {
  pthread_key_create(&key, destructor);
  long before = 0;
  for (int i = 0; i < 4000; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL)) { printf("pthread_create failed\n"); return 1; }
    pthread_join(t, NULL);
    if (i == 500) before = rss_kib();
  }
  long after = rss_kib();
  printf("resident: %ld KiB after 500 threads, %ld KiB after 4000\n", before, after);
  if (after - before > 16 * 1024) { printf("FAILED: grew by %ld KiB\n", after - before); return 1; }
  return 0;
}
