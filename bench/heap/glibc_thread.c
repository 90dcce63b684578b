/* SPDX-License-Identifier: MIT */
/* glibc_thread.c: per-thread random replacement, after glibc's bench-malloc-thread, written from its
   description: each of --threads threads keeps SLOTS blocks and, OPS times, frees a random slot's block and
   allocates a new one of a random size (mostly small: 75% 8..128 B, 20% up to 1 KiB, 5% up to 8 KiB). No block
   crosses threads. Output: wl.h's lines (ops = mallocs + frees). */
#include "wl.h"

#define SLOTS 4096

static long nops;

static size_t pick(uint64_t *r) {
  unsigned c = (unsigned)(wl_rand(r) % 100);
  return c < 75 ? wl_range(r, 8, 128) : c < 95 ? wl_range(r, 129, 1024) : wl_range(r, 1025, 8192);
}

static void *worker(void *arg) {
  uint64_t rng = wl_seed((uint64_t)(uintptr_t)arg);
  void **p = calloc(SLOTS, sizeof *p);
  size_t *sz = calloc(SLOTS, sizeof *sz);
  if (!p || !sz) wl_fail("out of memory");
  for (long i = 0; i < nops; i++) {
    size_t k = (size_t)(wl_rand(&rng) % SLOTS);
    if (p[k]) { wl_check(p[k], sz[k], k); free(p[k]); }
    sz[k] = pick(&rng);
    p[k] = malloc(sz[k]);
    if (!p[k]) wl_fail("out of memory");
    wl_stamp(p[k], sz[k], k);
  }
  for (size_t k = 0; k < SLOTS; k++) if (p[k]) { wl_check(p[k], sz[k], k); free(p[k]); }
  free(p);
  free(sz);
  return NULL;
}

int main(int argc, char **argv) {
  wl_args_t a = wl_parse(argc, argv, "glibc-thread: threads replace random blocks of their own");
  nops = wl_scaled(6000000, a.scale, 1000);
  wl_timed(a.threads, worker, 0, 2.0 * (double)nops * a.threads);
  return 0;
}
