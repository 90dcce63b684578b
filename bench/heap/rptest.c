/* SPDX-License-Identifier: MIT */
/* rptest.c: the seed's (rpmalloc's) random-size workload, for `memspace bench heap`. It calls plain
   malloc/free, so it measures whatever allocator is preloaded; it never links memspace.

   Per thread: `blocks` slots; every loop makes a free pass over `ops` slots (scattered by a prime stride,
   freeing what is there) and an alloc pass over `ops` other slots (scattered by another prime stride,
   freeing what is there and allocating a new block). Sizes come from a fixed table in [min, max] with linear
   falloff (density decreasing linearly from min to max): its evenly spaced quantiles, shuffled by a fixed seed,
   the same for every allocator. Every page of a new block is written, so RSS is real, and checked when the block is freed. No
   cross-thread frees unless --cross: then each loop a thread also allocates ops/4 blocks and hands them to
   the next thread, which frees them at the start of its next loop.

   --warmup W loops run first, untimed: the heap fills from empty (the occupancy is near its steady state after
   2 loops). Operations, CPU and wall time are counted over the --loops measured loops (every
   thread between two barriers); --warmup 0 --loops 30 measures 30 loops from an empty heap, as the seed's
   1000 loops do.

   After the loops each thread frees everything and waits (alive); the main thread samples RSS at once and
   after --idle-ms of idling (Rss and LazyFree of /proc/self/smaps_rollup), then lets the threads exit and
   samples Rss once more.

   The measured loops' CPU time is also printed split into user and system time, with the page faults taken
   meanwhile (minor + major), so a table can tell the allocator's own work from the kernel's.

   Output: one "metric value" line per figure (names are the CSV metrics of docs/bench-heap.md). Exit 0, or
   1 usage, 2 out of memory, 3 a block's contents changed (allocator corruption). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define SIZE_TABLE 8192 /* power of two */

typedef struct batch_s { /* a cross-thread handover: blocks allocated by one thread, freed by another */
  struct batch_s *next;
  size_t count;
  void *block[];
} batch_t;

typedef struct {
  int index;
  pthread_t tid;
  _Atomic(batch_t *) inbox;
  uint64_t ops, ops_warm, ops_done; /* all calls; at the start and the end of the measured loops */
  double end_s;                     /* when it ended the measured loops */
  int corrupt;
  int oom;
} worker_t;

static struct {
  int threads, warmup, loops, cross;
  size_t blocks, ops, min, max;
  long idle_ms;
  size_t page;
  size_t sizes[SIZE_TABLE];
  size_t stride_free, stride_alloc;
  worker_t *w;
  pthread_barrier_t warm, go, done_loops, counted, freed, leave;
  _Atomic int64_t live, peak_live;
} g;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* the process's CPU time (user, system) and page faults (minor + major) so far */
typedef struct { double user, sys, faults; } usage_t;
static usage_t usage_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (usage_t){(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6,
                   (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6,
                   (double)ru.ru_minflt + (double)ru.ru_majflt};
}

/* "Field:   123 kB" from a /proc file, read without stdio (no allocation while we measure idle memory) */
static uint64_t proc_kb(const char *path, const char *field) {
  char buf[8192];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  size_t len = strlen(field);
  for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
    if (strncmp(line, field, len) == 0 && line[len] == ':') return strtoull(line + len + 1, NULL, 10) * 1024;
  return 0;
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void add_live(int64_t delta) {
  int64_t now = atomic_fetch_add(&g.live, delta) + delta;
  int64_t peak = atomic_load(&g.peak_live);
  while (now > peak && !atomic_compare_exchange_weak(&g.peak_live, &peak, now)) {}
}

/* writes the size in the first word and one byte in every page, so the block is resident */
static void *get_block(worker_t *w, size_t size) {
  unsigned char *p = malloc(size);
  w->ops++;
  if (!p) { w->oom = 1; return NULL; }
  memcpy(p, &size, sizeof size);
  for (size_t off = g.page; off < size; off += g.page) p[off] = 1;
  p[size - 1] = 1;
  return p;
}

/* checks the size word and the byte written in every page before freeing */
static size_t put_block(worker_t *w, void *p) {
  size_t size;
  memcpy(&size, p, sizeof size);
  if (size < g.min || size > g.max) {
    w->corrupt = 1;
  } else {
    const unsigned char *b = p;
    for (size_t off = g.page; off < size; off += g.page) w->corrupt |= b[off] != 1;
    w->corrupt |= b[size - 1] != 1;
  }
  free(p);
  w->ops++;
  return size;
}

static void drain_inbox(worker_t *w) {
  batch_t *b = atomic_exchange(&w->inbox, NULL);
  int64_t freed = 0;
  while (b) {
    batch_t *next = b->next;
    for (size_t i = 0; i < b->count; i++) freed += (int64_t)put_block(w, b->block[i]);
    freed += (int64_t)(sizeof *b + b->count * sizeof(void *));
    free(b);
    w->ops++;
    b = next;
  }
  if (freed) add_live(-freed);
}

static void *worker(void *arg) {
  worker_t *w = arg;
  void **slot = calloc(g.blocks, sizeof *slot);
  w->ops++;
  if (!slot) { w->oom = 1; }
  else add_live((int64_t)(g.blocks * sizeof *slot));
  size_t fi = (size_t)w->index * 7919 % g.blocks, ai = (size_t)w->index * 104729 % g.blocks;
  size_t si = (size_t)w->index * 1031;
  for (int loop = 0; loop < g.warmup + g.loops; loop++) {
    if (loop == g.warmup) { /* every thread reaches the barriers, even after a failure */
      w->ops_warm = w->ops;
      pthread_barrier_wait(&g.warm);
      pthread_barrier_wait(&g.go); /* the main thread has read the clocks */
    }
    if (!slot || w->oom || w->corrupt) continue;
    if (g.cross) drain_inbox(w);
    int64_t delta = 0;
    for (size_t i = 0; i < g.ops; i++) {
      if (slot[fi]) { delta -= (int64_t)put_block(w, slot[fi]); slot[fi] = NULL; }
      fi += g.stride_free;
      if (fi >= g.blocks) fi -= g.blocks;
    }
    add_live(delta);
    delta = 0;
    for (size_t i = 0; i < g.ops; i++) {
      if (slot[ai]) delta -= (int64_t)put_block(w, slot[ai]);
      size_t size = g.sizes[si++ & (SIZE_TABLE - 1)];
      slot[ai] = get_block(w, size);
      if (!slot[ai]) break;
      delta += (int64_t)size;
      ai += g.stride_alloc;
      if (ai >= g.blocks) ai -= g.blocks;
    }
    if (g.cross && g.threads > 1 && !w->oom) {
      size_t count = g.ops / 4;
      batch_t *b = malloc(sizeof *b + count * sizeof(void *));
      w->ops++;
      if (!b) { w->oom = 1; continue; }
      b->count = 0;
      delta += (int64_t)(sizeof *b + count * sizeof(void *));
      for (size_t i = 0; i < count; i++) {
        size_t size = g.sizes[si++ & (SIZE_TABLE - 1)];
        void *p = get_block(w, size);
        if (!p) break;
        b->block[b->count++] = p;
        delta += (int64_t)size;
      }
      worker_t *to = &g.w[(w->index + 1) % g.threads];
      b->next = atomic_load(&to->inbox);
      while (!atomic_compare_exchange_weak(&to->inbox, &b->next, b)) {}
    }
    add_live(delta);
  }
  w->ops_done = w->ops;
  w->end_s = now_s();
  pthread_barrier_wait(&g.done_loops);
  pthread_barrier_wait(&g.counted); /* the main thread has read the CPU time: the frees below are not in it */
  if (g.cross) drain_inbox(w);
  if (slot) {
    int64_t delta = 0;
    for (size_t i = 0; i < g.blocks; i++)
      if (slot[i]) delta -= (int64_t)put_block(w, slot[i]);
    free(slot);
    w->ops++;
    add_live(delta - (int64_t)(g.blocks * sizeof *slot));
  }
  pthread_barrier_wait(&g.freed);
  pthread_barrier_wait(&g.leave);
  return NULL;
}

static size_t coprime_stride(size_t n, size_t from) {
  static const size_t primes[] = {7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73};
  for (size_t i = 0; i < sizeof primes / sizeof primes[0]; i++)
    if (primes[i] > from && n % primes[i] != 0) return primes[i];
  return 1;
}

static int usage(void) {
  fprintf(stderr, "usage: rptest [--threads N] [--warmup W] [--loops L] [--blocks B] [--ops O] [--min BYTES] [--max BYTES]"
                  " [--cross] [--idle-ms MS]\n");
  return 1;
}

int main(int argc, char **argv) {
  g.threads = 1; g.loops = 30; g.blocks = 150000; g.ops = 75000; g.min = 16; g.max = 16000; g.idle_ms = 1000;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--cross") == 0) { g.cross = 1; continue; }
    if (!v) return usage();
    i++;
    if (strcmp(a, "--threads") == 0) g.threads = atoi(v);
    else if (strcmp(a, "--loops") == 0) g.loops = atoi(v);
    else if (strcmp(a, "--warmup") == 0) g.warmup = atoi(v);
    else if (strcmp(a, "--blocks") == 0) g.blocks = strtoull(v, NULL, 10);
    else if (strcmp(a, "--ops") == 0) g.ops = strtoull(v, NULL, 10);
    else if (strcmp(a, "--min") == 0) g.min = strtoull(v, NULL, 10);
    else if (strcmp(a, "--max") == 0) g.max = strtoull(v, NULL, 10);
    else if (strcmp(a, "--idle-ms") == 0) g.idle_ms = atol(v);
    else return usage();
  }
  if (g.threads < 1 || g.threads > 256 || g.loops < 1 || g.warmup < 0 || g.blocks < 2 || g.ops < 1 || g.ops > g.blocks ||
      g.min < sizeof(size_t) || g.max < g.min)
    return usage();
  g.page = (size_t)sysconf(_SC_PAGESIZE);
  uint64_t seed = 0x5eed0002;
  /* the inverse CDF of the density 2(1-x) on [0,1] at the table's evenly spaced quantiles (so the table's mean is
     the distribution's: random draws can put it a percent off, and the overhead over live bytes with it), then
     shuffled by the fixed seed */
  for (size_t i = 0; i < SIZE_TABLE; i++) {
    double u = ((double)i + 0.5) / SIZE_TABLE;
    double x = 1.0 - sqrt(1.0 - u);
    g.sizes[i] = g.min + (size_t)(x * (double)(g.max - g.min) + 0.5);
  }
  for (size_t i = SIZE_TABLE - 1; i > 0; i--) {
    size_t j = (size_t)(splitmix(&seed) % (i + 1)), t = g.sizes[i];
    g.sizes[i] = g.sizes[j];
    g.sizes[j] = t;
  }
  g.stride_free = coprime_stride(g.blocks, 6);
  g.stride_alloc = coprime_stride(g.blocks, g.stride_free);
  g.w = calloc((size_t)g.threads, sizeof *g.w);
  if (!g.w) return 2;
  pthread_barrier_init(&g.warm, NULL, (unsigned)g.threads + 1);
  pthread_barrier_init(&g.go, NULL, (unsigned)g.threads + 1);
  pthread_barrier_init(&g.done_loops, NULL, (unsigned)g.threads + 1);
  pthread_barrier_init(&g.counted, NULL, (unsigned)g.threads + 1);
  pthread_barrier_init(&g.freed, NULL, (unsigned)g.threads + 1);
  pthread_barrier_init(&g.leave, NULL, (unsigned)g.threads + 1);
  for (int t = 0; t < g.threads; t++) {
    g.w[t].index = t;
    if (pthread_create(&g.w[t].tid, NULL, worker, &g.w[t]) != 0) { fprintf(stderr, "rptest: pthread_create failed\n"); return 2; }
  }
  /* the window's start is read while every worker waits between `warm` and `go`, its end is the last worker's own
     clock: a main thread scheduled late (2 threads on 2 CPUs) leaves no measured loop out of the window. The CPU
     time is the process's: the workers wait blocked at the barriers around the reads (`warm`/`go` at the start,
     `done_loops`/`counted` at the end, before they free their blocks) */
  pthread_barrier_wait(&g.warm);
  usage_t u0 = usage_now();
  double t0 = now_s();
  pthread_barrier_wait(&g.go);
  pthread_barrier_wait(&g.done_loops);
  usage_t u1 = usage_now();
  pthread_barrier_wait(&g.counted);
  double t1 = t0;
  for (int t = 0; t < g.threads; t++) t1 = g.w[t].end_s > t1 ? g.w[t].end_s : t1;
  double wall = t1 - t0, user = u1.user - u0.user, sys = u1.sys - u0.sys, cpu = user + sys;
  pthread_barrier_wait(&g.freed);
  uint64_t hwm = proc_kb("/proc/self/status", "VmHWM");
  uint64_t rss_after = proc_kb("/proc/self/smaps_rollup", "Rss");
  uint64_t idle_rss = rss_after, idle_lazy = proc_kb("/proc/self/smaps_rollup", "LazyFree");
  if (g.idle_ms > 0) {
    struct timespec ts = {g.idle_ms / 1000, (g.idle_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    idle_rss = proc_kb("/proc/self/smaps_rollup", "Rss");
    idle_lazy = proc_kb("/proc/self/smaps_rollup", "LazyFree");
  }
  pthread_barrier_wait(&g.leave);
  uint64_t ops = 0;
  int corrupt = 0, oom = 0;
  for (int t = 0; t < g.threads; t++) {
    pthread_join(g.w[t].tid, NULL);
    ops += g.w[t].ops_done - g.w[t].ops_warm;
    corrupt |= g.w[t].corrupt;
    oom |= g.w[t].oom;
  }
  uint64_t rss_exit = proc_kb("/proc/self/smaps_rollup", "Rss"); /* the threads' caches may go at exit */
  if (corrupt) { fprintf(stderr, "rptest: a block's contents changed while it was allocated\n"); return 3; }
  if (oom) { fprintf(stderr, "rptest: out of memory\n"); return 2; }
  int64_t peak_live = atomic_load(&g.peak_live);
  printf("ops %llu\n", (unsigned long long)ops);
  printf("cpu_s %.6f\nwall_s %.6f\n", cpu, wall);
  printf("user_s %.6f\nsys_s %.6f\npage_faults %.0f\n", user, sys, u1.faults - u0.faults);
  printf("ops_per_cpu_s %.1f\n", cpu > 0 ? (double)ops / cpu : 0.0);
  printf("ops_per_s %.1f\n", wall > 0 ? (double)ops / wall : 0.0);
  printf("peak_rss_bytes %llu\n", (unsigned long long)hwm);
  printf("peak_live_bytes %lld\n", (long long)peak_live);
  printf("overhead_bytes %lld\n", (long long)hwm - (long long)peak_live);
  printf("rss_after_free_bytes %llu\n", (unsigned long long)rss_after);
  if (g.idle_ms > 0) {
    printf("idle_rss_bytes %llu\n", (unsigned long long)idle_rss);
    printf("idle_lazyfree_bytes %llu\n", (unsigned long long)idle_lazy);
  }
  printf("rss_after_exit_bytes %llu\n", (unsigned long long)rss_exit);
  return 0;
}
