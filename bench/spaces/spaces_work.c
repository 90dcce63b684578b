/* SPDX-License-Identifier: MIT */
/* spaces_work: the workload of `memspace bench spaces`. Built twice: spaces_work_space (ms_space_* of a
   locked space created at start) and spaces_work_malloc (plain malloc: glibc, or a peer under LD_PRELOAD;
   with --rt, glibc tuned for real time: no mmap, no trim, mlockall, pre-faulted arena).
   Every call is timed alone (lfence; rdtsc ... rdtscp; lfence), the median cost of an empty timed call is
   subtracted, ticks are converted to ns with a TSC calibration against CLOCK_MONOTONIC. Between calls the
   program writes one byte in each page of the block (untimed), as real code would.
   Output: one line per figure, "key value..." (parsed by bench/spaces.c):
     calib tsc_per_ns
     floor empty_mean empty_p50 empty_p999 empty_max touch_past_{mean,p50,p999} touch_past_nodrain_{mean,p50,p999}
     size ORDER SIZE OP mean p50 p99 p999 max
     mixed OP mean p50 p99 p999 max
     adversarial N ns
     steady faults minor major
   Usage: spaces_work_{space,malloc} [--rt] [--quick | --full] [--seccomp] [--size N [--order fifo|random]
          [--samples N] [--dump NS]]
   --size runs the per-size part for that one block size only (both orders unless --order), --samples sets how
   many calls are timed, --dump prints every call slower than NS ns as "slow ORDER SIZE OP INDEX NS MS" (its
   index among the timed calls and the milliseconds since the first one): whether a tail clusters in time. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#ifdef USE_SPACE
#include "memspace.h"
static ms_space_t *space;
#define ALLOC(n) ms_space_malloc(space, (n))
#define FREE(p) ms_space_free(space, (p))
#else
#define ALLOC(n) malloc(n)
#define FREE(p) free(p)
#endif

static double tsc_per_ns = 1.0;
static double timer_ticks; /* median ticks of an empty timed call */

static inline uint64_t t_start(void) {
  _mm_mfence(); /* earlier (untimed) stores drain first: they must not be charged to the timed call */
  _mm_lfence();
  uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}
static inline uint64_t t_stop(void) {
  unsigned aux;
  uint64_t t = __rdtscp(&aux);
  _mm_lfence();
  return t;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void calibrate(void) {
  double t0 = now_ns();
  uint64_t c0 = __rdtsc();
  while (now_ns() - t0 < 50e6) {}
  double t1 = now_ns();
  uint64_t c1 = __rdtsc();
  tsc_per_ns = (double)(c1 - c0) / (t1 - t0);
  enum { N = 20001 };
  static uint64_t v[N];
  for (int i = 0; i < N; i++) {
    uint64_t a = t_start();
    uint64_t b = t_stop();
    v[i] = b - a;
  }
  qsort(v, N, sizeof v[0], cmp_u64);
  timer_ticks = (double)v[N / 2];
}

/* statistics of n tick samples (sorted in place), net of the timer cost, in ns */
typedef struct { double mean, p50, p99, p999, max; } st_t;
static st_t stats(uint64_t *v, size_t n) {
  st_t s = {0, 0, 0, 0, 0};
  if (!n) return s;
  qsort(v, n, sizeof v[0], cmp_u64);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += (double)v[i];
#define NET(x) ((((double)(x)) - timer_ticks) > 0 ? (((double)(x)) - timer_ticks) / tsc_per_ns : 0.0)
  s.mean = NET(sum / (double)n);
  s.p50 = NET(v[n / 2]);
  s.p99 = NET(v[(size_t)((double)(n - 1) * 0.99)]);
  s.p999 = NET(v[(size_t)((double)(n - 1) * 0.999)]);
  s.max = NET(v[n - 1]);
  return s;
}

static uint64_t rng = 88172645463325252ull;
static inline uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static size_t page;
static inline void touch(void *p, size_t n) {
  volatile char *c = p;
  for (size_t o = 0; o < n; o += page) c[o] = 1;
  c[n - 1] = 1;
}

/* ---- per-size latency ---- */
static size_t only_size, only_samples; /* --size, --samples: 0 = all sizes, the default count */
static int only_order = -1;            /* --order: 0 fifo, 1 random, -1 both */
static double dump_ns;                 /* --dump: calls slower than this are listed (0: none) */

static void dump_slow(const char *on, size_t size, const char *op, const uint64_t *v, const uint64_t *at, size_t n) {
  if (dump_ns <= 0) return;
  for (size_t i = 0; i < n; i++) {
    double ns = ((double)v[i] - timer_ticks) / tsc_per_ns;
    if (ns > dump_ns) printf("slow %s %zu %s %zu %.1f %.3f\n", on, size, op, i, ns, (double)(at[i] - at[0]) / tsc_per_ns / 1e6);
  }
}

static void per_size(int quick) {
  static uint64_t ta[20000], tf[20000], wa[20000], wf[20000];
  static void *blk[512];
  static int idx[512];
  for (int order = 0; order < 2; order++) {
    if (only_order >= 0 && order != only_order) continue;
    for (size_t size = 16; size <= ((size_t)4 << 20); size *= 2) {
      if (only_size && size != only_size) continue;
      size_t batch = (size_t)(48u << 20) / size;
      if (batch > 256) batch = 256;
      if (batch < 8) batch = 8;
      size_t target = size <= 65536 ? (quick ? 2000 : 8000) : (quick ? 300 : 1000);
      if (only_samples) target = only_samples < 20000 - batch ? only_samples : 20000 - batch;
      size_t rounds = (target + batch - 1) / batch + 1, n = 0;
      for (size_t r = 0; r < rounds; r++) {
        for (size_t i = 0; i < batch; i++) {
          uint64_t a = t_start();
          void *p = ALLOC(size);
          uint64_t b = t_stop();
          if (!p) { fprintf(stderr, "spaces_work: allocation of %zu failed\n", size); exit(3); }
          touch(p, size);
          blk[i] = p;
          if (r) { ta[n + i] = b - a; wa[n + i] = a; }
          idx[i] = (int)i;
        }
        if (order == 1)
          for (size_t i = batch - 1; i > 0; i--) {
            size_t j = rnd() % (i + 1);
            int t = idx[i]; idx[i] = idx[j]; idx[j] = t;
          }
        for (size_t i = 0; i < batch; i++) {
          void *p = blk[idx[i]];
          uint64_t a = t_start();
          FREE(p);
          uint64_t b = t_stop();
          if (r) { tf[n + i] = b - a; wf[n + i] = a; }
        }
        if (r) n += batch;
        if (n + batch > 20000) break;
      }
      const char *on = order ? "random" : "fifo";
      dump_slow(on, size, "malloc", ta, wa, n);
      dump_slow(on, size, "free", tf, wf, n);
      st_t s = stats(ta, n);
      printf("size %s %zu malloc %.1f %.1f %.1f %.1f %.1f\n", on, size, s.mean, s.p50, s.p99, s.p999, s.max);
      s = stats(tf, n);
      printf("size %s %zu free %.1f %.1f %.1f %.1f %.1f\n", on, size, s.mean, s.p50, s.p99, s.p999, s.max);
      fflush(stdout);
    }
  }
}

/* ---- mixed workload: sizes log-uniform 16 B .. 256 KiB, a live set of 1000 blocks ---- */
static size_t mixed_size(void) {
  double u = (double)(rnd() % 1000000) / 1e6;
  double lg = 4.0 + u * 14.0; /* 2^4 .. 2^18 */
  size_t s = (size_t)__builtin_exp2(lg);
  return s < 16 ? 16 : s;
}
static void mixed_loop(size_t ops, uint64_t *ta, uint64_t *tf, size_t *na, size_t *nf, int timed) {
  enum { LIVE = 1000 };
  static void *live[LIVE];
  static size_t lsz[LIVE];
  static int init;
  if (!init) {
    for (int i = 0; i < LIVE; i++) { lsz[i] = mixed_size(); live[i] = ALLOC(lsz[i]); touch(live[i], lsz[i]); }
    init = 1;
  }
  for (size_t op = 0; op < ops; op++) {
    size_t i = rnd() % LIVE;
    uint64_t a = t_start();
    FREE(live[i]);
    uint64_t b = t_stop();
    if (timed) tf[(*nf)++] = b - a;
    size_t s = mixed_size();
    a = t_start();
    void *p = ALLOC(s);
    b = t_stop();
    if (!p) { fprintf(stderr, "spaces_work: mixed allocation failed\n"); exit(3); }
    if (timed) ta[(*na)++] = b - a;
    touch(p, s);
    live[i] = p;
    lsz[i] = s;
  }
}

static void mixed(int quick) {
  static uint64_t ta[100000], tf[100000];
  size_t na = 0, nf = 0, ops = quick ? 20000 : 100000;
  mixed_loop(5000, NULL, NULL, &na, &nf, 0);
  mixed_loop(ops, ta, tf, &na, &nf, 1);
  st_t s = stats(ta, na);
  printf("mixed malloc %.1f %.1f %.1f %.1f %.1f\n", s.mean, s.p50, s.p99, s.p999, s.max);
  s = stats(tf, nf);
  printf("mixed free %.1f %.1f %.1f %.1f %.1f\n", s.mean, s.p50, s.p99, s.p999, s.max);
  fflush(stdout);
}

/* ---- adversarial: free N non-adjacent 1 KiB blocks, then time one malloc(2 KiB) ---- */
static void adversarial(size_t n) {
  void **v = mmap(NULL, 2 * n * sizeof(void *), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (v == MAP_FAILED) return;
  uint64_t best[5];
  for (int rep = 0; rep < 5; rep++) {
    for (size_t i = 0; i < 2 * n; i++) { v[i] = ALLOC(1024); if (!v[i]) { printf("adversarial %zu -1\n", n); return; } }
    for (size_t i = 0; i < 2 * n; i += 2) FREE(v[i]);
    uint64_t a = t_start();
    void *p = ALLOC(2048);
    uint64_t b = t_stop();
    best[rep] = b - a;
    FREE(p);
    for (size_t i = 1; i < 2 * n; i += 2) FREE(v[i]);
  }
  qsort(best, 5, sizeof best[0], cmp_u64);
  double ns = ((double)best[2] - timer_ticks) / tsc_per_ns;
  printf("adversarial %zu %.1f %.1f\n", n, ns, ((double)best[4] - timer_ticks) / tsc_per_ns);
  munmap(v, 2 * n * sizeof(void *));
  fflush(stdout);
}

/* ---- platform floor: empty timed call; first touch just past a block that was just walked ---- */
static void platform_floor(void) {
  enum { N = 20001 };
  static uint64_t v[N];
  for (int i = 0; i < N; i++) { uint64_t a = t_start(); uint64_t b = t_stop(); v[i] = b - a; }
  st_t e = stats(v, N);
  size_t blk = 4u << 20, span = 64u << 20;
  char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (m == MAP_FAILED) return;
  memset(m, 1, span);
  enum { T = 400 };
  static uint64_t tt[T], tn[T];
  for (int i = 0; i < 2 * T; i++) {
    size_t base = (rnd() % (span / blk - 1)) * blk;
    touch(m + base, blk); /* walk the block */
    volatile char *past = m + base + blk;
    uint64_t a;
    if (i & 1) { /* without draining the walk's stores first: what a call right after the walk pays */
      _mm_lfence();
      a = __rdtsc();
      _mm_lfence();
    } else {
      a = t_start();
    }
    *past = 2;
    uint64_t b = t_stop();
    if (i & 1) tn[i / 2] = b - a;
    else tt[i / 2] = b - a;
  }
  st_t t = stats(tt, T), u = stats(tn, T);
  printf("floor %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f\n", e.mean, e.p50, e.p999, e.max, t.mean, t.p50,
         t.p999, u.mean, u.p50, u.p999);
  munmap(m, span);
  fflush(stdout);
}

/* ---- steady state: faults from getrusage, then the same loop under a seccomp filter that kills on any
   system call but exit/exit_group: the process's exit status tells whether a system call was made ---- */
static void steady(int use_seccomp) {
  size_t na = 0, nf = 0;
  mixed_loop(20000, NULL, NULL, &na, &nf, 0); /* warm up: reach the steady state */
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  mixed_loop(20000, NULL, NULL, &na, &nf, 0);
  getrusage(RUSAGE_SELF, &r1);
  printf("steady faults %ld %ld\n", r1.ru_minflt - r0.ru_minflt, r1.ru_majflt - r0.ru_majflt);
  fflush(stdout);
  if (!use_seccomp) return;
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit_group, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
    printf("steady seccomp_unavailable\n");
    return;
  }
  mixed_loop(20000, NULL, NULL, &na, &nf, 0);
  _exit(0); /* exit_group only: no stdio flush (stdout was flushed above) */
}

int main(int argc, char **argv) {
  int quick = 0, rt = 0, sec = 0, adv_n = 100000, full = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--rt")) rt = 1;
    else if (!strcmp(argv[i], "--seccomp")) sec = 1;
    else if (!strcmp(argv[i], "--full")) full = 1; /* the seed's own space: RtssRun /i 4194292 (KiB) /e 0 */
    else if (!strcmp(argv[i], "--size") && i + 1 < argc) only_size = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--samples") && i + 1 < argc) only_samples = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--order") && i + 1 < argc) only_order = !strcmp(argv[++i], "random");
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump_ns = strtod(argv[++i], NULL);
  }
  if (quick) adv_n = 20000;
  page = (size_t)sysconf(_SC_PAGESIZE);
  /* pin to the last CPU; SCHED_FIFO when permitted (quietly not otherwise) */
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((int)sysconf(_SC_NPROCESSORS_ONLN) - 1, &set);
  sched_setaffinity(0, sizeof set, &set);
  struct sched_param sp = {.sched_priority = 10};
  int fifo = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
#ifdef USE_SPACE
  (void)rt;
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = full ? (size_t)4194292 << 10 : (size_t)512 << 20; /* locked and pre-faulted at start */
  c.at = MS_SPACE_AT_START;
  c.flags = MS_SPACE_LOCKED;
  c.numa_node = -1;
  c.name = "bench";
  space = ms_space_create(&c);
  if (!space) { c.flags = 0; space = ms_space_create(&c); }
  if (!space) { fprintf(stderr, "spaces_work: cannot create the space\n"); return 2; }
  printf("config locked=%d fifo=%d\n", (c.flags & MS_SPACE_LOCKED) != 0, fifo);
#else
  (void)full;
  if (rt) {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT32_MAX);
    mallopt(M_TOP_PAD, 64 << 20);
    mallopt(M_ARENA_MAX, 1);
    mlockall(MCL_CURRENT | MCL_FUTURE);
    void *warm = malloc((size_t)512 << 20); /* pre-fault the arena */
    if (warm) { memset(warm, 0, (size_t)512 << 20); free(warm); }
  }
  printf("config locked=%d fifo=%d\n", rt, fifo);
#endif
  calibrate();
  printf("calib %.4f %.1f\n", tsc_per_ns, timer_ticks);
  fflush(stdout);
  platform_floor();
  per_size(quick);
  if (only_size) return 0;
  mixed(quick);
  adversarial((size_t)adv_n);
  steady(sec);
  return 0;
}
