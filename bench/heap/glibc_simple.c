/* SPDX-License-Identifier: MIT */
/* glibc_simple.c: small mallocs and frees in a tight loop, after glibc's bench-malloc-simple, written from its
   description: each iteration allocates BLOCKS blocks of one size and frees them in allocation order; the size
   cycles over 16, 32, ..., 512 bytes from one iteration to the next. Each of --threads threads runs its own
   loop (the default run uses one). Output: wl.h's lines (ops = mallocs + frees). */
#include "wl.h"

#define BLOCKS 100

static long iters;

static void *worker(void *arg) {
  (void)arg;
  void *p[BLOCKS];
  for (long i = 0; i < iters; i++) {
    size_t size = 16 * (size_t)(1 + i % 32);
    for (int k = 0; k < BLOCKS; k++) {
      p[k] = malloc(size);
      if (!p[k]) wl_fail("out of memory");
      *(volatile unsigned char *)p[k] = (unsigned char)k;
    }
    for (int k = 0; k < BLOCKS; k++) {
      if (*(volatile unsigned char *)p[k] != (unsigned char)k) wl_fail("block contents changed");
      free(p[k]);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  wl_args_t a = wl_parse(argc, argv, "glibc-simple: batches of 100 small blocks allocated and freed");
  iters = wl_scaled(150000, a.scale, 10);
  wl_timed(a.threads, worker, 1, 2.0 * BLOCKS * (double)iters * a.threads);
  return 0;
}
