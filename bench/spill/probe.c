/* SPDX-License-Identifier: MIT */
/* probe: an "interactive" process. probe PERIOD_MS MIB [LOG]: touches every page of its own MIB MiB working set
   every PERIOD_MS (idle in between) until SIGTERM, then prints rounds=N p50_ns=.. p99_ns=.. max_ns=..; with LOG,
   also writes each round's start (CLOCK_MONOTONIC, ns) and latency (ns) to that file, one round per line */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_term(int s) { (void)s; stop = 1; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv) {
  long period = argc > 1 ? atol(argv[1]) : 10, mib = argc > 2 ? atol(argv[2]) : 64;
  size_t n = (size_t)mib << 20, cap = 1 << 20, count = 0;
  unsigned char *ws = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  double *lat = mmap(NULL, 2 * cap * sizeof(double), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ws == MAP_FAILED || lat == MAP_FAILED) return 1;
  double *start = lat + cap;
  memset(ws, 1, n);
  signal(SIGTERM, on_term);
  printf("ready\n");
  fflush(stdout);
  while (!stop && count < cap) {
    struct timespec ts = {period / 1000, (period % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    if (stop) break;
    double t0 = now();
    for (size_t i = 0; i < n; i += 4096) ws[i]++;
    double t1 = now();
    start[count] = t0; /* (after the round: a first store to a fresh page of the log is not timed) */
    lat[count++] = t1 - t0;
  }
  FILE *log = argc > 3 ? fopen(argv[3], "w") : NULL;
  for (size_t i = 0; log && i < count; i++) fprintf(log, "%.0f %.0f\n", start[i], lat[i]);
  if (log) fclose(log);
  qsort(lat, count, sizeof(double), cmp);
  if (!count) { printf("rounds=0\n"); return 0; }
  printf("rounds=%zu p50_ns=%.0f p99_ns=%.0f max_ns=%.0f\n", count, lat[count / 2],
         lat[(size_t)(count * 0.99) < count ? (size_t)(count * 0.99) : count - 1], lat[count - 1]);
  return 0;
}
