/* SPDX-License-Identifier: MIT */
/* shbench.c: after MicroQuill SmartHeap's sh6bench and sh8bench (in mimalloc-bench), written from their
   description: each of --threads threads repeatedly allocates a batch of N blocks whose sizes walk through a
   range (mostly 1..1000 bytes, every 64th block up to 10 KiB) and frees them in an order that changes from batch
   to batch: last-in-first-out, first-in-first-out, or every other block first and then the rest. Built twice:
   - heap_sh6bench: every block is freed by the thread that allocated it;
   - heap_sh8bench (CROSS): half of every batch (every other block) goes to the next thread, which frees it
     while working on its own next batch (cross-thread frees under load).
   Output: wl.h's lines (ops = mallocs + frees). */
#include "wl.h"
#include <stdbool.h>

#ifndef CROSS
#define CROSS 0
#endif
#define N 2000

typedef struct mail { struct mail *next; int n; void *p[N / 2]; size_t sz[N / 2]; } mail_t;

#define MAXMAIL 4 /* a sender waits while its receiver has this many batches pending: memory stays bounded */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  mail_t *inbox;
  int pending, id;
  bool done;
} thr_t;

static thr_t thr[256];
static int nthreads;
static long iters;

static void drain(thr_t *me) {
  pthread_mutex_lock(&me->mu);
  mail_t *m = me->inbox;
  me->inbox = NULL;
  me->pending = 0;
  pthread_cond_broadcast(&me->cv);
  pthread_mutex_unlock(&me->mu);
  while (m) {
    mail_t *next = m->next;
    for (int i = 0; i < m->n; i++) { wl_check(m->p[i], m->sz[i], 7); free(m->p[i]); }
    free(m);
    m = next;
  }
}

static void *worker(void *arg) {
  thr_t *me = arg;
  void **p = malloc(N * sizeof *p);
  size_t *sz = malloc(N * sizeof *sz);
  if (!p || !sz) wl_fail("out of memory");
  size_t size = 1;
  for (long it = 0; it < iters; it++) {
    for (int i = 0; i < N; i++) {
      size = size >= 1000 ? 1 : size + 7;
      sz[i] = (i % 64 == 63) ? 1000 + (size * 9) : size;
      p[i] = malloc(sz[i]);
      if (!p[i]) wl_fail("out of memory");
      wl_stamp(p[i], sz[i], 7);
    }
    int first = 0;
    if (CROSS && nthreads > 1) { /* every other block to the next thread */
      mail_t *m = malloc(sizeof *m);
      if (!m) wl_fail("out of memory");
      m->n = 0;
      for (int i = 1; i < N; i += 2) { m->p[m->n] = p[i]; m->sz[m->n++] = sz[i]; p[i] = NULL; }
      thr_t *to = &thr[(me->id + 1) % nthreads];
      pthread_mutex_lock(&to->mu);
      while (to->pending >= MAXMAIL && !to->done) {
        pthread_mutex_unlock(&to->mu);
        drain(me); /* the receiver may be waiting for us: keep our own inbox moving */
        pthread_mutex_lock(&to->mu);
        if (to->pending >= MAXMAIL && !to->done) {
          struct timespec ts;
          clock_gettime(CLOCK_REALTIME, &ts);
          ts.tv_nsec += 1000000;
          if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
          pthread_cond_timedwait(&to->cv, &to->mu, &ts);
        }
      }
      if (to->done) { /* the receiver has finished: free its half here (mailing it would pile up every
                          remaining batch until exit, and the peak RSS would depend on which thread ran first) */
        pthread_mutex_unlock(&to->mu);
        for (int i = 0; i < m->n; i++) { wl_check(m->p[i], m->sz[i], 7); free(m->p[i]); }
        free(m);
      } else {
        to->pending++;
        m->next = to->inbox;
        to->inbox = m;
        pthread_mutex_unlock(&to->mu);
      }
      drain(me);
    }
    switch (it % 3) {
    case 0: for (int i = N - 1; i >= 0; i--) if (p[i]) { wl_check(p[i], sz[i], 7); free(p[i]); } break;
    case 1: for (int i = 0; i < N; i++) if (p[i]) { wl_check(p[i], sz[i], 7); free(p[i]); } break;
    default:
      for (first = 0; first < 2; first++)
        for (int i = first; i < N; i += 2) if (p[i]) { wl_check(p[i], sz[i], 7); free(p[i]); }
    }
  }
  pthread_mutex_lock(&me->mu);
  me->done = true; /* senders stop waiting for us; main frees what is left */
  pthread_cond_broadcast(&me->cv);
  pthread_mutex_unlock(&me->mu);
  free(p);
  free(sz);
  return NULL;
}

int main(int argc, char **argv) {
  wl_args_t a = wl_parse(argc, argv, CROSS ? "sh8bench: batches of mixed sizes, half freed by the next thread"
                                           : "sh6bench: batches of mixed sizes freed in changing orders");
  nthreads = a.threads;
  iters = wl_scaled(3000, a.scale, 3);
  pthread_t th[256];
  for (int t = 0; t < a.threads; t++) { pthread_mutex_init(&thr[t].mu, NULL); pthread_cond_init(&thr[t].cv, NULL); thr[t].id = t; }
  double t0 = wl_now(), c0 = wl_cpu();
  for (int t = 0; t < a.threads; t++)
    if (pthread_create(&th[t], NULL, worker, &thr[t]) != 0) wl_fail("pthread_create");
  for (int t = 0; t < a.threads; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < a.threads; t++) drain(&thr[t]);
  double secs = wl_now() - t0, cpu = wl_cpu() - c0;
  wl_report(secs, cpu, 2.0 * N * (double)iters * a.threads);
  return 0;
}
