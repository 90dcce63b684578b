/* SPDX-License-Identifier: MIT */
/* cache.c: false sharing of small objects, after Hoard's cache-scratch and cache-thrash (mimalloc-bench runs them
   with 1-byte objects), written from their description. Built twice (bench/heap/CMakeLists.txt):
   - heap_cache_scratch (passive false sharing): the main thread allocates one OBJ-byte object per thread, back
     to back (so they share cache lines), and gives object i to thread i, which frees it and then, ITER times,
     allocates an object, writes it REPS times and frees it. An allocator that hands a thread back the block it
     just freed for another thread's heap puts the threads' hot objects in one cache line;
   - heap_cache_thrash (active false sharing): the same loop without the hand-over: an allocator that serves
     concurrent threads from the same cache line makes them fight over it.
   Output: wl.h's lines (ops = mallocs + frees). With one thread there is nothing to share. */
#include "wl.h"

#ifndef THRASH
#define THRASH 0
#endif
#define OBJ 8

static long iters, reps;

typedef struct { void *given; } arg_t;

static void *worker(void *arg) {
  arg_t *a = arg;
  if (a->given) free(a->given);
  for (long i = 0; i < iters; i++) {
    volatile unsigned char *o = malloc(OBJ);
    if (!o) wl_fail("out of memory");
    for (long r = 0; r < reps; r++)
      for (int k = 0; k < OBJ; k++) o[k] = (unsigned char)(o[k] + 1);
    free((void *)o);
  }
  return NULL;
}

int main(int argc, char **argv) {
  wl_args_t a = wl_parse(argc, argv, THRASH ? "cache-thrash: threads write their own small objects"
                                            : "cache-scratch: threads write small objects after freeing neighbours'");
  iters = wl_scaled(2000, a.scale, 10);
  reps = 20000;
  pthread_t th[256];
  arg_t args[256];
  for (int t = 0; t < a.threads; t++) {
    args[t].given = THRASH ? NULL : malloc(OBJ);
    if (!THRASH && !args[t].given) return 2;
  }
  double t0 = wl_now(), c0 = wl_cpu();
  for (int t = 0; t < a.threads; t++)
    if (pthread_create(&th[t], NULL, worker, &args[t]) != 0) wl_fail("pthread_create");
  for (int t = 0; t < a.threads; t++) pthread_join(th[t], NULL);
  double secs = wl_now() - t0, cpu = wl_cpu() - c0;
  wl_report(secs, cpu, (double)a.threads * (double)(2 * iters + (THRASH ? 0 : 1)));
  return 0;
}
