/* SPDX-License-Identifier: MIT */
/* malloc_large.c: large blocks replaced one at a time, after mimalloc-bench's malloc-large, written from its
   description: 20 live buffers of 5-25 MiB; each iteration replaces a random one with a new buffer of a random
   size, zero-filled (the original value-initialises it: every page is written). Each of --threads threads runs
   its own buffers (the default run uses one). Output: wl.h's lines (ops = mallocs + frees). */
#include "wl.h"

#define BUFFERS 20
#define MIN_SIZE ((size_t)5 << 20)
#define MAX_SIZE ((size_t)25 << 20)

static long iters;

static void *worker(void *arg) {
  uint64_t seed = wl_seed((uintptr_t)arg);
  unsigned char *buf[BUFFERS] = {0};
  size_t size[BUFFERS] = {0};
  for (long i = 0; i < iters; i++) {
    unsigned k = (unsigned)(wl_rand(&seed) % BUFFERS);
    if (buf[k]) {
      wl_check(buf[k], size[k], k);
      free(buf[k]);
    }
    size[k] = wl_range(&seed, MIN_SIZE, MAX_SIZE);
    if (!(buf[k] = malloc(size[k]))) wl_fail("out of memory");
    memset(buf[k], 0, size[k]);
    wl_stamp(buf[k], size[k], k);
  }
  for (unsigned k = 0; k < BUFFERS; k++) free(buf[k]);
  return NULL;
}

int main(int argc, char **argv) {
  wl_args_t a = wl_parse(argc, argv, "malloc-large: 20 live zero-filled buffers of 5-25 MiB replaced one at a time");
  iters = wl_scaled(500, a.scale, 40);
  wl_timed(a.threads, worker, 1, 2.0 * (double)iters * a.threads);
  return 0;
}
