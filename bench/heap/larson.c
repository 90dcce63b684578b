/* SPDX-License-Identifier: MIT */
/* larson.c: a server-like workload after Larson & Krishnan's benchmark (as mimalloc-bench runs it: sizes 8..1000,
   blocks handed between thread generations), written from its published description.
   Each of --threads lineages owns an array of SLOTS blocks, all first allocated by the main thread (so the first
   frees are cross-thread). A generation thread replaces random slots (check and free the old block, allocate a
   new one of random size 8..1000, stamp it) REPL times, then starts the next generation, hands it the array and
   exits: every generation frees blocks that an earlier thread allocated, and threads keep being created.
   Output: wl.h's lines (ops = mallocs + frees). */
#include "wl.h"
#include <stdatomic.h>

#define SLOTS 1000
#define MIN_SIZE 8
#define MAX_SIZE 1000

typedef struct {
  void *p[SLOTS];
  size_t size[SLOTS];
  uint64_t rng;
  long gens_left, repl;
  long ops;
} lineage_t;

static atomic_int running;
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;

static void *generation(void *arg) {
  lineage_t *l = arg;
  for (long i = 0; i < l->repl; i++) {
    size_t k = (size_t)(wl_rand(&l->rng) % SLOTS);
    wl_check(l->p[k], l->size[k], k);
    free(l->p[k]);
    size_t sz = wl_range(&l->rng, MIN_SIZE, MAX_SIZE);
    l->p[k] = malloc(sz);
    if (!l->p[k]) wl_fail("out of memory");
    l->size[k] = sz;
    wl_stamp(l->p[k], sz, k);
  }
  l->ops += 2 * l->repl;
  if (--l->gens_left > 0) {
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, generation, l) != 0) wl_fail("pthread_create");
    pthread_attr_destroy(&at);
    return NULL;
  }
  pthread_mutex_lock(&done_mu);
  if (atomic_fetch_sub(&running, 1) == 1) pthread_cond_signal(&done_cv);
  pthread_mutex_unlock(&done_mu);
  return NULL;
}

int main(int argc, char **argv) {
  wl_args_t a = wl_parse(argc, argv, "larson: thread generations replacing blocks allocated by earlier threads");
  long gens = wl_scaled(60, a.scale, 2), repl = 100000;
  lineage_t *ls = calloc((size_t)a.threads, sizeof *ls);
  if (!ls) return 2;
  for (int t = 0; t < a.threads; t++) {
    ls[t].rng = wl_seed((uint64_t)t);
    ls[t].gens_left = gens;
    ls[t].repl = repl;
    for (size_t k = 0; k < SLOTS; k++) {
      ls[t].size[k] = wl_range(&ls[t].rng, MIN_SIZE, MAX_SIZE);
      ls[t].p[k] = malloc(ls[t].size[k]);
      if (!ls[t].p[k]) return 2;
      wl_stamp(ls[t].p[k], ls[t].size[k], k);
    }
  }
  atomic_store(&running, a.threads);
  double t0 = wl_now(), c0 = wl_cpu();
  for (int t = 0; t < a.threads; t++) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, generation, &ls[t]) != 0) wl_fail("pthread_create");
    pthread_attr_destroy(&at);
  }
  pthread_mutex_lock(&done_mu);
  while (atomic_load(&running) > 0) pthread_cond_wait(&done_cv, &done_mu);
  pthread_mutex_unlock(&done_mu);
  double secs = wl_now() - t0, cpu = wl_cpu() - c0;
  double ops = 0;
  for (int t = 0; t < a.threads; t++) {
    ops += (double)ls[t].ops;
    for (size_t k = 0; k < SLOTS; k++) { wl_check(ls[t].p[k], ls[t].size[k], k); free(ls[t].p[k]); }
  }
  wl_report(secs, cpu, ops);
  free(ls);
  return 0;
}
