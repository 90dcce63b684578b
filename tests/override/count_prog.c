/* count_prog N: a known number of malloc-family calls for the [malloc] statistics (test_stats_counts.sh). Two
   threads each run N rounds of: malloc, calloc, two reallocs that resize, free of both, a malloc freed by
   realloc(p, 0), a realloc of NULL freed by free: per round 4 allocations (1 calloc), 2 reallocs, 4 frees. The
   threads are created, meet and are joined with N = 0 too, so the difference between two runs is the rounds alone.
   count_prog peak: no thread; one 64 MiB block is held and freed, its usable size written on stderr without stdio
   (which would allocate): the peak is then that size plus what stays live at exit (the C library's blocks). */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long rounds;
static pthread_barrier_t both; /* both threads alive at once in every run: the C library's own blocks are the same */

static void *work(void *arg) {
  (void)arg;
  pthread_barrier_wait(&both);
  for (long i = 0; i < rounds; i++) {
    char *a = malloc(24), *b = calloc(3, 40);
    if (!a || !b) abort();
    a = realloc(a, 200);
    if (!a) abort();
    a = realloc(a, 5000);
    if (!a) abort();
    free(b);
    free(a);
    char *c = malloc(100);
    if (!c) abort();
    if (realloc(c, 0) != NULL) abort(); /* glibc's semantics: frees, returns NULL */
    char *d = realloc(NULL, 16);
    if (!d) abort();
    free(d);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "peak") != 0) {
    rounds = atol(argv[1]);
    if (pthread_barrier_init(&both, NULL, 2)) return 1;
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
      if (pthread_create(&t[i], NULL, work, NULL)) return 1;
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
  }
  char *big = malloc((size_t)64 << 20);
  if (!big) return 1;
  memset(big, 1, 4096);
  char line[64];
  int n = snprintf(line, sizeof line, "usable %zu\n", malloc_usable_size(big));
  free(big);
  if (write(2, line, (size_t)n) != n) return 1;
  return 0;
}
