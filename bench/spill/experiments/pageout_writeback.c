/* SPDX-License-Identifier: MIT */
/* Experiment behind docs/spill.md "Next lever": fills SIZE_MIB of a shared file mapping (MADV_RANDOM, like spill
   beyond memory) while a second thread writes back 64 MiB chunks two chunks behind the writer with
   sync_file_range, after MADV_PAGEOUT of the chunk (MODE 1) or not (MODE 0). Run inside a memory cgroup smaller
   than SIZE_MIB (e.g. 1 GiB for 2048). Not built by CMake: cc -O2 -pthread pageout_writeback.c
   Usage: a.out SIZE_MIB MODE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static char *p; static size_t n, chunk = 64ul << 20; static volatile size_t written; static int fd, mode; static volatile int done;
static double wb_cpu;
static void *wb(void *a) {
  (void)a; size_t off = 0;
  while (!done || off + chunk <= written) {
    if (off + 2 * chunk <= written) {
      if (mode == 1) madvise(p + off, chunk, MADV_PAGEOUT);
      sync_file_range(fd, off, chunk, SYNC_FILE_RANGE_WRITE);
      off += chunk;
    } else usleep(5000);
    if (done && off + 2 * chunk > written) break;
  }
  struct rusage r; getrusage(RUSAGE_THREAD, &r);
  wb_cpu = r.ru_stime.tv_sec + r.ru_stime.tv_usec * 1e-6 + r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6;
  return NULL;
}
int main(int argc, char **argv) {
  n = (size_t)atol(argv[1]) << 20; mode = atoi(argv[2]);
  fd = open("/var/tmp", O_TMPFILE | O_RDWR, 0600);
  ftruncate(fd, n); fallocate(fd, 0, 0, n);
  p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  madvise(p, n, MADV_RANDOM);
  pthread_t t; pthread_create(&t, NULL, wb, NULL);
  double t0 = now();
  for (size_t i = 0; i < n; i += 1 << 20) { memset(p + i, 1, 1 << 20); written = i + (1 << 20); }
  double t1 = now(); done = 1; pthread_join(t, NULL);
  struct rusage r; getrusage(RUSAGE_SELF, &r);
  /* random reads afterwards */
  unsigned long long s = 0; unsigned x = 1; double t2 = now();
  for (int k = 0; k < 2000; k++) { x = x * 1103515245 + 12345; s += p[((size_t)x * 4096) % n]; }
  printf("mode=%d fill %.2f s, wb thread cpu %.2f s, process cpu %.2f s, reads %.0f/s (%llu)\n", mode, t1 - t0, wb_cpu,
         r.ru_stime.tv_sec + r.ru_utime.tv_sec + (r.ru_stime.tv_usec + r.ru_utime.tv_usec) * 1e-6, 2000 / (now() - t2), s);
}
