/* SPDX-License-Identifier: MIT */
/* alloc_test.c: many live blocks of random small sizes, after OLogN's alloc-test (mimalloc-bench's alloc-test1 and
   alloc-testN), written from its description: each of --threads threads keeps SLOTS slots (about 16 MiB live per
   thread) and runs rounds of three phases: replace random slots one at a time (free + malloc of a random size in
   8..1024, skewed towards small), free a contiguous run of slots, refill the run. Output: wl.h's lines
   (ops = mallocs + frees). */
#include "wl.h"

#define SLOTS (1 << 16)
#define RUN 4096

static long rounds;

static size_t pick(uint64_t *r) {
  size_t x = (size_t)(wl_rand(r) % 1024); /* density falls linearly from 8 to 1024 */
  size_t y = (size_t)(wl_rand(r) % 1024);
  return 8 + (x < y ? x : y);
}

static void *worker(void *arg) {
  uint64_t r = wl_seed(100 + (uint64_t)(uintptr_t)arg);
  void **p = calloc(SLOTS, sizeof *p);
  uint16_t *sz = calloc(SLOTS, sizeof *sz);
  if (!p || !sz) wl_fail("out of memory");
  for (size_t k = 0; k < SLOTS; k++) {
    sz[k] = (uint16_t)pick(&r);
    if (!(p[k] = malloc(sz[k]))) wl_fail("out of memory");
    wl_stamp(p[k], sz[k], k);
  }
  for (long rd = 0; rd < rounds; rd++) {
    for (int i = 0; i < 4 * RUN; i++) {
      size_t k = (size_t)(wl_rand(&r) % SLOTS);
      wl_check(p[k], sz[k], k);
      free(p[k]);
      sz[k] = (uint16_t)pick(&r);
      if (!(p[k] = malloc(sz[k]))) wl_fail("out of memory");
      wl_stamp(p[k], sz[k], k);
    }
    size_t start = (size_t)(wl_rand(&r) % (SLOTS - RUN));
    for (size_t k = start; k < start + RUN; k++) { wl_check(p[k], sz[k], k); free(p[k]); }
    for (size_t k = start; k < start + RUN; k++) {
      sz[k] = (uint16_t)pick(&r);
      if (!(p[k] = malloc(sz[k]))) wl_fail("out of memory");
      wl_stamp(p[k], sz[k], k);
    }
  }
  for (size_t k = 0; k < SLOTS; k++) { wl_check(p[k], sz[k], k); free(p[k]); }
  free(p);
  free(sz);
  return NULL;
}

int main(int argc, char **argv) {
  wl_args_t a = wl_parse(argc, argv, "alloc-test: random sizes 8..1024, 64K live blocks per thread");
  rounds = wl_scaled(150, a.scale, 2);
  wl_timed(a.threads, worker, 0, (2.0 * SLOTS + (double)rounds * (8.0 * RUN + 2.0 * RUN)) * a.threads);
  return 0;
}
