/* SPDX-License-Identifier: MIT */
/* xmalloc.c: producer/consumer after xmalloc-test (Lever & Boreham; mimalloc-bench runs `-w N -t 5 -s 64`),
   written from its description: --threads producers allocate 64-byte blocks in batches of BATCH and queue each
   batch; --threads consumers take batches and free every block. Every block is freed by a thread that did not
   allocate it. The queue holds at most QMAX batches (producers wait), so memory stays bounded.
   Output: wl.h's lines (ops = mallocs + frees). */
#include "wl.h"

#define BATCH 512
#define QMAX 64
#define SIZE 64

typedef struct batch { struct batch *next; void *p[BATCH]; } batch_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static batch_t *head, *tail;
static int queued, producers_left;
static long per_producer;

static void *producer(void *arg) {
  uint64_t tag = (uint64_t)(uintptr_t)arg;
  for (long b = 0; b < per_producer; b++) {
    batch_t *bt = malloc(sizeof *bt);
    if (!bt) wl_fail("out of memory");
    for (int i = 0; i < BATCH; i++) {
      bt->p[i] = malloc(SIZE);
      if (!bt->p[i]) wl_fail("out of memory");
      wl_stamp(bt->p[i], SIZE, tag + (uint64_t)i);
    }
    bt->next = NULL;
    pthread_mutex_lock(&mu);
    while (queued >= QMAX) pthread_cond_wait(&not_full, &mu);
    if (tail) tail->next = bt; else head = bt;
    tail = bt;
    queued++;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&mu);
  }
  pthread_mutex_lock(&mu);
  producers_left--;
  pthread_cond_broadcast(&not_empty);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void *consumer(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&mu);
    while (!head && producers_left > 0) pthread_cond_wait(&not_empty, &mu);
    batch_t *bt = head;
    if (!bt) { pthread_mutex_unlock(&mu); return NULL; }
    head = bt->next;
    if (!head) tail = NULL;
    queued--;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < BATCH; i++) {
      uint64_t v;
      memcpy(&v, bt->p[i], sizeof v);
      if (((v ^ SIZE) - (uint64_t)i) % 1000 != 0) wl_fail("block contents changed");
      free(bt->p[i]);
    }
    free(bt);
  }
}

int main(int argc, char **argv) {
  wl_args_t a = wl_parse(argc, argv, "xmalloc: N producer threads allocate 64-byte blocks, N consumers free them");
  per_producer = wl_scaled(8000, a.scale, 4);
  producers_left = a.threads;
  pthread_t th[512];
  double t0 = wl_now(), c0 = wl_cpu();
  for (int t = 0; t < a.threads; t++) {
    if (pthread_create(&th[t], NULL, producer, (void *)(uintptr_t)(t * 1000)) != 0) wl_fail("pthread_create");
    if (pthread_create(&th[a.threads + t], NULL, consumer, NULL) != 0) wl_fail("pthread_create");
  }
  for (int t = 0; t < 2 * a.threads; t++) pthread_join(th[t], NULL);
  double secs = wl_now() - t0, cpu = wl_cpu() - c0;
  wl_report(secs, cpu, 2.0 * (double)a.threads * (double)per_producer * (BATCH + 1));
  return 0;
}
