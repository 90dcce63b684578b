/* SPDX-License-Identifier: MIT */
/* probe: an "interactive" process. probe PERIOD_MS MIB [LOG]: touches every page of its own MIB MiB working set
   every PERIOD_MS (idle in between) until SIGTERM, then prints rounds=N p50_ns=.. p99_ns=.. max_ns=..; with LOG,
   also writes each round's start (CLOCK_MONOTONIC, ns) and latency (ns) to that file, one round per line.
   With PROBE_SPLIT=1 in the environment (experiments/probe_split.py) each line also says where the round went,
   read outside the timed walk: the thread's CPU time (CLOCK_THREAD_CPUTIME_ID, which leaves out the host's steal
   under paravirt steal-time accounting), its wait on a run queue (/proc/thread-self/schedstat: another task had
   its CPU), the machine's steal (/proc/stat, clock ticks, all CPUs) and the thread's page faults. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_term(int s) { (void)s; stop = 1; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

/* PROBE_SPLIT's figures: thread CPU ns, run-queue wait ns, steal ticks, page faults */
enum { SPLIT_N = 4 };
static int sched_fd = -1, stat_fd = -1;
static double number_after(int fd, int skip) { /* the number after `skip` blank-separated fields of fd's text */
  char b[256];
  ssize_t n = fd < 0 ? -1 : pread(fd, b, sizeof b - 1, 0);
  if (n <= 0) return 0;
  b[n] = 0;
  char *p = b;
  for (int i = 0; i < skip && p; i++) p = strchr(p + 1, ' ');
  return p ? atof(p) : 0;
}
static void split_now(double *v) {
  struct timespec t;
  struct rusage u;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  getrusage(RUSAGE_THREAD, &u);
  v[0] = t.tv_sec * 1e9 + t.tv_nsec;
  v[1] = number_after(sched_fd, 1);
  v[2] = number_after(stat_fd, 9); /* "cpu  user nice system idle iowait irq softirq steal": two blanks after cpu */
  v[3] = (double)(u.ru_minflt + u.ru_majflt);
}

int main(int argc, char **argv) {
  long period = argc > 1 ? atol(argv[1]) : 10, mib = argc > 2 ? atol(argv[2]) : 64;
  size_t n = (size_t)mib << 20, cap = 1 << 20, count = 0;
  int split = getenv("PROBE_SPLIT") && !strcmp(getenv("PROBE_SPLIT"), "1");
  size_t per = 2 + (split ? SPLIT_N : 0); /* each round's latency, start and split */
  unsigned char *ws = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  double *lat = mmap(NULL, per * cap * sizeof(double), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ws == MAP_FAILED || lat == MAP_FAILED) return 1;
  double *start = lat + cap, *parts = lat + 2 * cap;
  memset(ws, 1, n);
  if (split) {
    sched_fd = open("/proc/thread-self/schedstat", O_RDONLY);
    stat_fd = open("/proc/stat", O_RDONLY);
  }
  signal(SIGTERM, on_term);
  printf("ready\n");
  fflush(stdout);
  while (!stop && count < cap) {
    struct timespec ts = {period / 1000, (period % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    if (stop) break;
    double s0[SPLIT_N], s1[SPLIT_N];
    if (split) split_now(s0);
    double t0 = now();
    for (size_t i = 0; i < n; i += 4096) ws[i]++;
    double t1 = now();
    if (split) {
      split_now(s1);
      for (int k = 0; k < SPLIT_N; k++) parts[count * SPLIT_N + k] = s1[k] - s0[k];
    }
    start[count] = t0; /* (after the round: a first store to a fresh page of the log is not timed) */
    lat[count++] = t1 - t0;
  }
  FILE *log = argc > 3 ? fopen(argv[3], "w") : NULL;
  for (size_t i = 0; log && i < count; i++) {
    fprintf(log, "%.0f %.0f", start[i], lat[i]);
    for (int k = 0; split && k < SPLIT_N; k++) fprintf(log, " %.0f", parts[i * SPLIT_N + k]);
    fprintf(log, "\n");
  }
  if (log) fclose(log);
  qsort(lat, count, sizeof(double), cmp);
  if (!count) { printf("rounds=0\n"); return 0; }
  printf("rounds=%zu p50_ns=%.0f p99_ns=%.0f max_ns=%.0f\n", count, lat[count / 2],
         lat[(size_t)(count * 0.99) < count ? (size_t)(count * 0.99) : count - 1], lat[count - 1]);
  return 0;
}
