/* soak SECONDS THREADS CSV: hours of mixed multi-threaded load (make soak). Threads allocate, reallocate,
   free (also each other's blocks) with sizes from 1 byte to 4 MiB; every block carries a pattern checked
   before it is freed; every 10 s every held block is checked, spaces (when built) run ms_space_check, and a
   CSV row is written: elapsed_s,rss_bytes,operations,checked_blocks,errors. Exit 0 when no error was seen.
   Linked with the static library (its override layer makes malloc memspace's). */
#include "stress_common.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include "memspace.h"

#define HELD 512
#define SHARED 256
static atomic_int stop;
static atomic_long ops, errors;
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static void *shared[SHARED];

typedef struct { pthread_mutex_t mu; void *held[HELD]; int id; } worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  uint64_t s = (uint64_t)w->id * 0x9E3779B97F4A7C15ull + 77;
  ms_space_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.initial_size = 1 << 20;
  cfg.expand_size = 1 << 20;
  cfg.numa_node = -1;
  ms_space_t *sp = ms_space_create(&cfg);
  void *sb[64] = {0};
  while (!atomic_load(&stop)) {
    uint64_t r = rnd_next(&s);
    int i = (int)(r % HELD);
    pthread_mutex_lock(&w->mu);
    if (w->held[i]) blk_free(w->held[i]);
    w->held[i] = blk_new(&s);
    pthread_mutex_unlock(&w->mu);
    if ((r >> 20) % 64 == 0) { /* exchange a block with other threads */
      pthread_mutex_lock(&shared_mu);
      int k = (int)((r >> 30) % SHARED);
      if (shared[k]) blk_free(shared[k]);
      shared[k] = blk_new(&s);
      pthread_mutex_unlock(&shared_mu);
    }
    if ((r >> 40) % 4096 == 0) { /* a big block through realloc */
      size_t n = (size_t)(r % (4u << 20)) + 1;
      unsigned char *p = malloc(n);
      if (!p) { atomic_fetch_add(&errors, 1); continue; }
      memset(p, 0x5a, n);
      p = realloc(p, n * 2);
      if (!p || p[n - 1] != 0x5a) atomic_fetch_add(&errors, 1);
      free(p);
    }
    if (sp) {
      int k = (int)((r >> 8) % 64);
      if (sb[k]) ms_space_free(sp, sb[k]);
      sb[k] = ms_space_malloc(sp, (size_t)(r >> 16) % 3000 + 1);
      if ((r >> 50) % 1024 == 0 && ms_space_check(sp) != 0) atomic_fetch_add(&errors, 1);
    }
    atomic_fetch_add_explicit(&ops, 1, memory_order_relaxed);
  }
  if (sp) { if (ms_space_check(sp) != 0) atomic_fetch_add(&errors, 1); ms_space_destroy(sp); }
  return NULL;
}

int main(int argc, char **argv) {
  long seconds = argc > 1 ? atol(argv[1]) : 3600;
  int nthreads = argc > 2 ? atoi(argv[2]) : 4;
  const char *csv = argc > 3 ? argv[3] : "soak.csv";
  if (nthreads < 1) nthreads = 1;
  if (nthreads > 64) nthreads = 64;
  FILE *out = fopen(csv, "w");
  if (!out) { perror(csv); return 2; }
  fprintf(out, "elapsed_s,rss_bytes,operations,checked_blocks,errors\n");
  static worker_t w[64];
  pthread_t th[64];
  for (int i = 0; i < nthreads; i++) {
    pthread_mutex_init(&w[i].mu, NULL);
    w[i].id = i + 1;
    pthread_create(&th[i], NULL, worker, &w[i]);
  }
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    sleep(seconds < 10 ? 1 : 10);
    clock_gettime(CLOCK_MONOTONIC, &now);
    long el = now.tv_sec - t0.tv_sec;
    long checked = 0;
    for (int i = 0; i < nthreads; i++) {  /* blk_check exits on corruption */
      pthread_mutex_lock(&w[i].mu);
      for (int k = 0; k < HELD; k++) if (w[i].held[k]) { blk_check(w[i].held[k]); checked++; }
      pthread_mutex_unlock(&w[i].mu);
    }
    fprintf(out, "%ld,%zu,%ld,%ld,%ld\n", el, rss_bytes(), atomic_load(&ops), checked, atomic_load(&errors));
    fflush(out);
    printf("soak: %ld s, RSS %zu MiB, %ld operations, %ld errors\n", el, rss_bytes() >> 20, atomic_load(&ops),
           atomic_load(&errors));
    fflush(stdout);
    if (el >= seconds) break;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < nthreads; i++)
    for (int k = 0; k < HELD; k++) if (w[i].held[k]) blk_free(w[i].held[k]);
  for (int k = 0; k < SHARED; k++) if (shared[k]) blk_free(shared[k]);
  fclose(out);
  return atomic_load(&errors) ? 1 : 0;
}
