/* SPDX-License-Identifier: MIT */
/* mstress.c: a stress test after mimalloc's test-stress (mimalloc-bench's mstress), written from its
   description: ROUNDS rounds; each round starts --threads new threads (thread churn) which run STEPS random
   steps on their own array of ITEMS blocks: allocate (replacing and freeing what was there), free, or swap a
   block with a random slot of a global transfer array (atomic exchange): blocks move between threads and
   outlive the thread (and round) that allocated them. Sizes are mostly small (1..32 words), 1 in 100 is 10x
   bigger and 1 in 1000 100x bigger (up to ~25 KiB), 1 in 5000 a large block of 64..512 KiB. Each thread also
   keeps RETAIN blocks allocated at its start until it exits (long-lived). Every block is checked before it is
   freed. Output: wl.h's lines (ops = mallocs + frees). */
#include "wl.h"
#include <stdatomic.h>

#define TRANSFERS 1000
#define ITEMS 2000
#define RETAIN 500

typedef struct { size_t size; uint64_t tag; } hdr_t; /* at the start of every block */

static _Atomic(hdr_t *) transfer[TRANSFERS];
static long steps;
static atomic_long total_ops;

static hdr_t *alloc_block(uint64_t *r, uint64_t tag) {
  size_t words = wl_range(r, 1, 32);
  unsigned c = (unsigned)(wl_rand(r) % 5000);
  if (c == 0) words = wl_range(r, 8192, 65536);
  else if (c < 5) words *= 100;
  else if (c < 50) words *= 10;
  size_t size = words * sizeof(uint64_t) + sizeof(hdr_t);
  hdr_t *h = malloc(size);
  if (!h) wl_fail("out of memory");
  h->size = size;
  h->tag = tag;
  ((unsigned char *)h)[size - 1] = (unsigned char)tag;
  return h;
}

static void free_block(hdr_t *h) {
  if (!h) return;
  if (((unsigned char *)h)[h->size - 1] != (unsigned char)h->tag || h->tag >> 48 != 0xB10C) wl_fail("block changed");
  free(h);
}

static void *worker(void *arg) {
  uint64_t r = wl_seed((uint64_t)(uintptr_t)arg);
  uint64_t tag = 0xB10CULL << 48 | ((uint64_t)(uintptr_t)arg << 20);
  long ops = 0;
  hdr_t **data = calloc(ITEMS, sizeof *data), **keep = calloc(RETAIN, sizeof *keep);
  if (!data || !keep) wl_fail("out of memory");
  for (int i = 0; i < RETAIN; i++) keep[i] = alloc_block(&r, tag + (uint64_t)i);
  ops += RETAIN;
  for (long s = 0; s < steps; s++) {
    unsigned c = (unsigned)(wl_rand(&r) % 100);
    size_t k = (size_t)(wl_rand(&r) % ITEMS);
    if (c < 50) {
      if (data[k]) { free_block(data[k]); ops++; }
      data[k] = alloc_block(&r, tag + (uint64_t)s);
      ops++;
    } else if (c < 80) {
      if (data[k]) { free_block(data[k]); ops++; data[k] = NULL; }
    } else {
      size_t t = (size_t)(wl_rand(&r) % TRANSFERS);
      data[k] = atomic_exchange(&transfer[t], data[k]);
    }
  }
  for (int i = 0; i < ITEMS; i++) if (data[i]) { free_block(data[i]); ops++; }
  for (int i = 0; i < RETAIN; i++) free_block(keep[i]);
  ops += RETAIN;
  free(data);
  free(keep);
  atomic_fetch_add(&total_ops, ops);
  return NULL;
}

int main(int argc, char **argv) {
  wl_args_t a = wl_parse(argc, argv, "mstress: thread churn, mixed sizes, blocks swapped between threads");
  long rounds = wl_scaled(100, a.scale, 2);
  steps = 100000;
  pthread_t th[256];
  double t0 = wl_now(), c0 = wl_cpu();
  for (long rd = 0; rd < rounds; rd++) {
    for (int t = 0; t < a.threads; t++)
      if (pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)(rd * a.threads + t)) != 0) wl_fail("pthread_create");
    for (int t = 0; t < a.threads; t++) pthread_join(th[t], NULL);
  }
  for (int i = 0; i < TRANSFERS; i++) {
    hdr_t *h = atomic_exchange(&transfer[i], NULL);
    if (h) { free_block(h); total_ops++; }
  }
  double secs = wl_now() - t0, cpu = wl_cpu() - c0;
  wl_report(secs, cpu, (double)atomic_load(&total_ops));
  return 0;
}
