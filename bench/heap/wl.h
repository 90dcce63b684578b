/* SPDX-License-Identifier: MIT */
/* wl.h: what the mimalloc-bench-style workload programs of `memspace bench heap` share (docs/bench-heap.md,
   section 4): a clock, peak RSS, a small PRNG, argument parsing and the "metric value" output.
   Every program takes --threads N and --scale X (work multiplier: the driver passes a small scale for --quick),
   checks its blocks' contents (exit 3 when a block changed) and prints:
     seconds S         wall time of the timed part
     cpu_s S           user + system CPU of the process over the timed part
     ops N             allocator calls (malloc/new + free/delete) in the timed part
     ops_per_s X       ops / seconds
     peak_rss_bytes B  VmHWM of the process
   Header-only (static functions) so each program stays one C file plus this. */
#ifndef WL_H
#define WL_H
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static inline double wl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double wl_cpu(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
         (double)ru.ru_stime.tv_usec * 1e-6;
}

static inline uint64_t wl_hwm(void) {
  char buf[8192];
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  char *p = strstr(buf, "VmHWM:");
  return p ? strtoull(p + 6, NULL, 10) * 1024 : 0;
}

/* xorshift64*: deterministic per seed, never 0 */
static inline uint64_t wl_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}
static inline uint64_t wl_seed(uint64_t k) { return 0x9E3779B97F4A7C15ULL * (k + 1) | 1; }
/* uniform in [lo, hi] */
static inline size_t wl_range(uint64_t *s, size_t lo, size_t hi) { return lo + (size_t)(wl_rand(s) % (hi - lo + 1)); }

typedef struct { int threads; double scale; } wl_args_t;

/* --threads N --scale X; anything else: usage and exit 1 */
static inline wl_args_t wl_parse(int argc, char **argv, const char *usage) {
  wl_args_t a = {1, 1.0};
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--threads") == 0) a.threads = atoi(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--scale") == 0) a.scale = atof(argv[++i]);
    else { fprintf(stderr, "usage: %s [--threads N] [--scale X]\n%s\n", argv[0], usage); exit(1); }
  }
  if (a.threads < 1 || a.threads > 256 || !(a.scale > 0)) { fprintf(stderr, "%s: bad arguments\n", argv[0]); exit(1); }
  return a;
}

/* n scaled, at least min */
static inline long wl_scaled(double n, double scale, long min) {
  long v = (long)(n * scale);
  return v < min ? min : v;
}

static inline void wl_fail(const char *what) {
  fprintf(stderr, "workload: %s\n", what);
  exit(3);
}

static inline void wl_report(double seconds, double cpu_s, double ops) {
  printf("seconds %.6f\ncpu_s %.6f\nops %.0f\nops_per_s %.1f\npeak_rss_bytes %llu\n", seconds, cpu_s, ops,
         seconds > 0 ? ops / seconds : 0.0, (unsigned long long)wl_hwm());
}

/* runs fn in n threads (argument: the thread's index as a pointer-sized integer) and joins them */
static inline void wl_run_threads(int n, void *(*fn)(void *)) {
  pthread_t th[256];
  for (int t = 0; t < n; t++)
    if (pthread_create(&th[t], NULL, fn, (void *)(uintptr_t)t) != 0) wl_fail("pthread_create");
  for (int t = 0; t < n; t++) pthread_join(th[t], NULL);
}

/* the timed part and its report: fn on n threads (on the calling thread, argument NULL, when n is 1 and
   inline_one), then wl_report with `ops` */
static inline void wl_timed(int n, void *(*fn)(void *), int inline_one, double ops) {
  double t0 = wl_now(), c0 = wl_cpu();
  if (n == 1 && inline_one) fn(NULL);
  else wl_run_threads(n, fn);
  double secs = wl_now() - t0, cpu = wl_cpu() - c0;
  wl_report(secs, cpu, ops);
}

/* a block's first word holds its size ^ a tag, checked before it is freed */
static inline void wl_stamp(void *p, size_t size, uint64_t tag) {
  if (size >= sizeof(uint64_t)) { uint64_t v = (uint64_t)size ^ tag; memcpy(p, &v, sizeof v); }
  else memset(p, (int)(tag & 0xff), size);
  if (size > 8) ((unsigned char *)p)[size - 1] = (unsigned char)tag;
}
static inline void wl_check(const void *p, size_t size, uint64_t tag) {
  if (size >= sizeof(uint64_t)) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    if (v != ((uint64_t)size ^ tag)) wl_fail("block contents changed");
  }
  if (size > 8 && ((const unsigned char *)p)[size - 1] != (unsigned char)tag) wl_fail("block tail changed");
}
#endif
