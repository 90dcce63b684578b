/* SPDX-License-Identifier: MIT */
/* pages.c: `memspace bench pages`, the seed's figure on Linux (Gerstmann, "Memory Mapping on Windows").
   1. Mapping strategies on one region (300 MiB by default): map/commit, write a pattern (memset the region,
      touch one byte per 64 KiB, or per 4 KiB), release; the pattern alone on pre-faulted memory is measured
      too and subtracted. Rounds interleave every strategy and pattern; medians are printed, every round is
      in the CSV. RSS after release is read from /proc/self/smaps_rollup (LazyFree apart).
   2. The frame allocator (ms_frame_*): per-frame cost (median, p99) for every policy, RSS during the run
      and after an idle second, and how long RSS took to fall below 5% of its peak.
   2 MiB hugetlb pages are reserved through /proc/sys/vm/nr_hugepages for the run and the old count is put
   back (also on error and on SIGINT/SIGTERM); when the kernel refuses, the hugetlb rows say why. */
#include "bench.h"
#include "memspace.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << 26)
#endif

#define MiB (1024.0 * 1024.0)
#define MAX_ROUNDS 32
#define MAX_FRAMES 1024

/* ------------------------------------------------------------------------------------------------ */
/* hugetlb pool: reserve for the run, restore always                                                 */
/* ------------------------------------------------------------------------------------------------ */
static const char *nr_path = "/proc/sys/vm/nr_hugepages";
static long huge_added = -1; /* pages this run added to the pool: given back by subtracting, never by
                                 writing an absolute count that would erase another program's reservation */

static long read_long(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long v = -1;
  if (fscanf(f, "%ld", &v) != 1) v = -1;
  fclose(f);
  return v;
}

static int write_long(const char *path, long v) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%ld\n", v);
  int r = write(fd, buf, (size_t)n) == n ? 0 : -1;
  int e = errno;
  close(fd);
  errno = e;
  return r;
}

static void huge_restore(void) {
  if (huge_added > 0) {
    long cur = read_long(nr_path);
    if (cur >= 0) write_long(nr_path, cur > huge_added ? cur - huge_added : 0);
  }
  huge_added = -1;
}

static void on_signal(int sig) {
  huge_restore();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* reserves `want` 2 MiB pages on top of the current pool; returns pages obtained, reason on failure */
static long huge_reserve(long want, char *reason, size_t cap) {
  long old = read_long(nr_path);
  if (old < 0) { snprintf(reason, cap, "%s unreadable", nr_path); return 0; }
  long free0 = read_long("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
  if (free0 >= want) return want;
  atexit(huge_restore);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  int wr = write_long(nr_path, old + want - (free0 > 0 ? free0 : 0));
  int wr_errno = errno;
  long now = read_long(nr_path);
  huge_added = now > old ? now - old : 0;
  if (wr != 0) {
    snprintf(reason, cap, "writing %s refused: %s", nr_path, strerror(wr_errno));
    huge_restore();
    return 0;
  }
  long got = read_long("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
  if (got < want) {
    snprintf(reason, cap, "kernel gave %ld of %ld 2 MiB pages (memory fragmented)", got < 0 ? 0 : got, want);
    huge_restore();
    return 0;
  }
  return got;
}

/* ------------------------------------------------------------------------------------------------ */
/* helpers                                                                                           */
/* ------------------------------------------------------------------------------------------------ */
static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static void *map_aligned(size_t size, size_t align, int flags) {
  size_t total = size + align;
  char *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (p == MAP_FAILED) return NULL;
  char *a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
  if (a > p) munmap(p, (size_t)(a - p));
  size_t tail = (size_t)(p + total - (a + size));
  if (tail) munmap(a + size, tail);
  return a;
}

/* ------------------------------------------------------------------------------------------------ */
/* mapping strategies                                                                                */
/* ------------------------------------------------------------------------------------------------ */
enum { P_MEMSET, P_TOUCH64K, P_TOUCH4K, P_COUNT };
static const char *pattern_names[P_COUNT] = {"memset", "touch64k", "touch4k"};

typedef enum {
  S_ALONE, S_MMAP_MUNMAP, S_DECOMMIT, S_MADV_FREE, S_MEMFD_KEEP, S_MADV_DONTNEED, S_MEMFD_PUNCH, S_POPULATE,
  S_HUGETLB, S_HUGETLB_KEPT, S_THP_KEPT, S_COUNT
} strat_id_t;

typedef struct {
  const char *name, *what, *windows;   /* windows: the blog's row, NULL when none */
  double win_memset, win_touch64k;     /* published ms, memset subtracted */
  char *p;                             /* kept mapping, when the strategy keeps one */
  int fd;
  bool skip;
  char reason[160];
  /* per pattern, per round */
  double map[P_COUNT][MAX_ROUNDS], write[P_COUNT][MAX_ROUNDS], rel[P_COUNT][MAX_ROUNDS], total[P_COUNT][MAX_ROUNDS];
  double faults[P_COUNT][MAX_ROUNDS], rss[P_COUNT][MAX_ROUNDS], lazy[P_COUNT][MAX_ROUNDS], held[P_COUNT][MAX_ROUNDS];
} strat_t;

static strat_t strats[S_COUNT] = {
    [S_ALONE] = {.name = "memset_alone", .what = "the pattern alone on pre-faulted memory",
        .windows = "memset", .win_memset = 21.9, .win_touch64k = 0.1},
    [S_MMAP_MUNMAP] = {.name = "mmap_munmap", .what = "mmap, write, munmap",
        .windows = "VirtualAlloc/VirtualFree", .win_memset = 64.4, .win_touch64k = 4.4},
    [S_DECOMMIT] = {.name = "decommit_mprotect", .what = "mprotect(RW), write, MADV_DONTNEED + mprotect(NONE)",
        .windows = "MEM_DECOMMIT", .win_memset = 116.8, .win_touch64k = 4.6},
    [S_MADV_FREE] = {.name = "madv_free", .what = "kept mapping, write, MADV_FREE",
        .windows = "MEM_RESET", .win_memset = 77.3, .win_touch64k = 4.4},
    [S_MEMFD_KEEP] = {.name = "memfd_keep", .what = "memfd mmap(SHARED), write, munmap; pages stay in the memfd",
        .windows = "UnmapViewOfFile", .win_memset = 103.6, .win_touch64k = 5.6},
    [S_MADV_DONTNEED] = {.name = "madv_dontneed", .what = "kept mapping, write, MADV_DONTNEED"},
    [S_MEMFD_PUNCH] = {.name = "memfd_punch", .what = "as memfd_keep + fallocate(PUNCH_HOLE)"},
    [S_POPULATE] = {.name = "map_populate", .what = "mmap(MAP_POPULATE), write, munmap"},
    [S_HUGETLB] = {.name = "hugetlb2m", .what = "mmap(MAP_HUGETLB 2 MiB), write, munmap"},
    [S_HUGETLB_KEPT] = {.name = "hugetlb2m_dontneed", .what = "kept hugetlb 2 MiB mapping, write, MADV_DONTNEED"},
    [S_THP_KEPT] = {.name = "thp_dontneed", .what = "kept 2 MiB-aligned MADV_HUGEPAGE range, write, MADV_DONTNEED"},
};

static size_t region;
static size_t page;

/* a case that could not run: metric=status, value=skipped (like not_installed for peers); reason in .cmd */
static void row_skipped(msb_ctx_t *ctx, const char *case_name, const char *impl, const char *reason) {
  if (ctx->csv) fprintf(ctx->csv, "%s,%s,%s,1,0,status,skipped\n", ctx->part, case_name, impl);
  if (ctx->cmd) fprintf(ctx->cmd, "skipped: %s: %s\n", case_name, reason);
}

static void do_pattern(char *p, int pattern) {
  switch (pattern) {
  case P_MEMSET: memset(p, 1, region); break;
  case P_TOUCH64K: for (size_t o = 0; o < region; o += 65536) ((volatile char *)p)[o] = 1; break;
  default: for (size_t o = 0; o < region; o += page) ((volatile char *)p)[o] = 1; break;
  }
}

static int strat_setup(strat_id_t id, strat_t *s) {
  switch (id) {
  case S_ALONE:
    s->p = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    break;
  case S_MADV_FREE: case S_MADV_DONTNEED:
    s->p = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    break;
  case S_DECOMMIT:
    s->p = mmap(NULL, region, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    break;
  case S_MEMFD_KEEP: case S_MEMFD_PUNCH:
    s->fd = memfd_create(s->name, MFD_CLOEXEC);
    if (s->fd < 0 || ftruncate(s->fd, (off_t)region) != 0) {
      snprintf(s->reason, sizeof s->reason, "memfd: %s", strerror(errno));
      return -1;
    }
    return 0;
  case S_HUGETLB_KEPT:
    s->p = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
    break;
  case S_THP_KEPT:
    s->p = map_aligned(region, 2 << 20, 0);
    if (s->p && madvise(s->p, region, MADV_HUGEPAGE) != 0) {
      snprintf(s->reason, sizeof s->reason, "MADV_HUGEPAGE refused: %s", strerror(errno));
      munmap(s->p, region);
      s->p = NULL;
      return -1;
    }
    if (!s->p) s->p = MAP_FAILED;
    break;
  default:
    return 0;
  }
  if (s->p == MAP_FAILED || !s->p) {
    snprintf(s->reason, sizeof s->reason, "mmap: %s", strerror(errno));
    s->p = NULL;
    return -1;
  }
  return 0;
}

static void strat_teardown(strat_t *s) {
  if (s->p) munmap(s->p, region);
  if (s->fd > 0) close(s->fd);
  s->p = NULL;
  s->fd = 0;
}

static double resident_bytes(char *p) {
  static unsigned char vec[(1u << 30) / 4096];
  size_t n = region / page;
  if (n > sizeof vec || mincore(p, region, vec) != 0) return 0;
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += vec[i] & 1;
  return (double)c * (double)page;
}

/* one round of one strategy and pattern; returns 0 or -1 (s->reason set) */
static int strat_round(strat_id_t id, strat_t *s, int pattern, int r) {
  double t0 = now_ns(), t1, t2, t3;
  long f0 = minflt();
  char *p = s->p;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
  switch (id) {
  case S_MMAP_MUNMAP: p = mmap(NULL, region, PROT_READ | PROT_WRITE, flags, -1, 0); break;
  case S_POPULATE: p = mmap(NULL, region, PROT_READ | PROT_WRITE, flags | MAP_POPULATE, -1, 0); break;
  case S_HUGETLB: p = mmap(NULL, region, PROT_READ | PROT_WRITE, flags | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0); break;
  case S_MEMFD_KEEP: case S_MEMFD_PUNCH: p = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0); break;
  case S_DECOMMIT: if (mprotect(p, region, PROT_READ | PROT_WRITE) != 0) p = MAP_FAILED; break;
  default: break;
  }
  if (p == MAP_FAILED || !p) {
    snprintf(s->reason, sizeof s->reason, "map failed: %s", strerror(errno));
    return -1;
  }
  t1 = now_ns();
  do_pattern(p, pattern);
  t2 = now_ns();
  double lazy0 = (double)msb_lazyfree_bytes();
  double t2b = now_ns(); /* the smaps read is not timed */
  switch (id) {
  case S_MMAP_MUNMAP: case S_POPULATE: case S_HUGETLB: case S_MEMFD_KEEP: munmap(p, region); break;
  case S_MEMFD_PUNCH:
    munmap(p, region);
    fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)region);
    break;
  case S_MADV_FREE: madvise(p, region, MADV_FREE); break;
  case S_MADV_DONTNEED: case S_HUGETLB_KEPT: case S_THP_KEPT: madvise(p, region, MADV_DONTNEED); break;
  case S_DECOMMIT: madvise(p, region, MADV_DONTNEED); mprotect(p, region, PROT_NONE); break;
  default: break;
  }
  t3 = now_ns();
  s->map[pattern][r] = t1 - t0;
  s->write[pattern][r] = t2 - t1;
  s->rel[pattern][r] = t3 - t2b;
  s->total[pattern][r] = (t2 - t0) + (t3 - t2b);
  s->faults[pattern][r] = (double)(minflt() - f0);
  /* what stays resident: the kept mapping's resident pages (mincore); an unmapped region holds none */
  s->rss[pattern][r] = s->p && id != S_ALONE ? resident_bytes(s->p) : id == S_ALONE ? (double)region : 0;
  double lazy1 = (double)msb_lazyfree_bytes();
  s->lazy[pattern][r] = lazy1 > lazy0 ? lazy1 - lazy0 : 0;
  double held = 0;
  if (s->fd > 0) {
    struct stat st;
    if (fstat(s->fd, &st) == 0) held = (double)st.st_blocks * 512.0;
  } else if (id == S_HUGETLB || id == S_HUGETLB_KEPT) {
    held = (double)region; /* the pages went back to the hugetlb pool, which stays reserved */
  }
  s->held[pattern][r] = held;
  return 0;
}

static double med(const double *v, int n) {
  double tmp[MAX_FRAMES];
  memcpy(tmp, v, (size_t)n * sizeof *v);
  return msb_median(tmp, (size_t)n);
}

static void map_rows(msb_ctx_t *ctx, int rounds) {
  static const char *phase_metric[4] = {"map_ns", "write_ns", "release_ns", "round_ns"};
  for (int id = 0; id < S_COUNT; id++) {
    strat_t *s = &strats[id];
    for (int pt = 0; pt < P_COUNT; pt++) {
      char cs[64];
      snprintf(cs, sizeof cs, "%s/%s", pattern_names[pt], s->name);
      if (s->skip) {
        row_skipped(ctx, cs, "linux", s->reason);
        continue;
      }
      for (int r = 0; r < rounds; r++) {
        const double *ph[4] = {s->map[pt], s->write[pt], s->rel[pt], s->total[pt]};
        for (int k = 0; k < 4; k++) msb_row(ctx, cs, "linux", 1, region, phase_metric[k], ph[k][r]);
        msb_row(ctx, cs, "linux", 1, region, "page_faults", s->faults[pt][r]);
        msb_row(ctx, cs, "linux", 1, region, "rss_after_release_bytes", s->rss[pt][r]);
        msb_row(ctx, cs, "linux", 1, region, "lazyfree_after_release_bytes", s->lazy[pt][r]);
        msb_row(ctx, cs, "linux", 1, region, "held_elsewhere_bytes", s->held[pt][r]);
      }
      double m = med(s->total[pt], rounds), alone = med(strats[S_ALONE].total[pt], rounds);
      msb_row(ctx, cs, "linux", 1, region, "p50_ns", m);
      msb_row(ctx, cs, "linux", 1, region, "p50_net_ns", id == S_ALONE ? m : m - alone);
      if (s->windows && pt != P_TOUCH4K) {
        double w = pt == P_MEMSET ? s->win_memset : s->win_touch64k;
        msb_row(ctx, cs, "gerstmann-published", 1, 300u << 20, id == S_ALONE ? "p50_ns" : "p50_net_ns", w * 1e6);
      }
    }
  }
}

static void print_map_tables(int rounds) {
  double alone[P_COUNT];
  for (int pt = 0; pt < P_COUNT; pt++) alone[pt] = med(strats[S_ALONE].total[pt], rounds) / 1e6;
  msb_printf("\nMemset of the whole region (%.0f MiB): median of %d rounds, ms. net = memset subtracted, raw in "
             "brackets.\nWindows column: gerstmann-published (i7-5960X desktop, blog post), not this run.\n",
             region / MiB, rounds);
  msb_printf("%-20s %-26s %10s %18s %8s %9s %12s %12s %12s\n", "strategy", "Windows analogue", "Windows",
             "Linux net (raw)", "x memset", "faults", "RSS after", "LazyFree", "held else");
  for (int id = 0; id < S_COUNT; id++) {
    strat_t *s = &strats[id];
    if (s->skip) { msb_printf("%-20s skipped: %s\n", s->name, s->reason); continue; }
    double raw = med(s->total[P_MEMSET], rounds) / 1e6, net = id == S_ALONE ? raw : raw - alone[P_MEMSET];
    char win[16] = "", cell[32];
    if (s->windows) snprintf(win, sizeof win, "%.1f", s->win_memset);
    if (id == S_ALONE) snprintf(cell, sizeof cell, "%.1f", raw);
    else snprintf(cell, sizeof cell, "%.1f (%.1f)", net, raw);
    msb_printf("%-20s %-26s %10s %18s %8.1f %9.0f %10.1f M %10.1f M %10.1f M\n", s->name, s->windows ? s->windows : "-",
               win, cell, id == S_ALONE ? 1.0 : net / alone[P_MEMSET], med(s->faults[P_MEMSET], rounds),
               med(s->rss[P_MEMSET], rounds) / MiB, med(s->lazy[P_MEMSET], rounds) / MiB,
               med(s->held[P_MEMSET], rounds) / MiB);
  }
  msb_printf("\nOne byte per 64 KiB (and per 4 KiB page): median ms, memset-alone equivalent subtracted (raw in "
             "brackets)\n");
  msb_printf("%-20s %-26s %10s %18s %18s\n", "strategy", "Windows analogue", "Windows", "Linux 1B/64KiB",
             "Linux 1B/4KiB");
  for (int id = 0; id < S_COUNT; id++) {
    strat_t *s = &strats[id];
    if (s->skip) continue;
    char win[16] = "", c64[32], c4[32];
    if (s->windows) snprintf(win, sizeof win, "%.1f", s->win_touch64k);
    double r64 = med(s->total[P_TOUCH64K], rounds) / 1e6, r4 = med(s->total[P_TOUCH4K], rounds) / 1e6;
    if (id == S_ALONE) {
      snprintf(c64, sizeof c64, "%.2f", r64);
      snprintf(c4, sizeof c4, "%.2f", r4);
    } else {
      snprintf(c64, sizeof c64, "%.1f (%.1f)", r64 - alone[P_TOUCH64K], r64);
      snprintf(c4, sizeof c4, "%.1f (%.1f)", r4 - alone[P_TOUCH4K], r4);
    }
    msb_printf("%-20s %-26s %10s %18s %18s\n", s->name, s->windows ? s->windows : "-", win, c64, c4);
  }
  msb_printf("\nPhases, memset pattern (median ms): map/commit call, write + faults, release call\n");
  for (int id = 1; id < S_COUNT; id++) {
    strat_t *s = &strats[id];
    if (s->skip) continue;
    msb_printf("  %-20s map %8.3f   write %8.1f   release %8.2f\n", s->name, med(s->map[P_MEMSET], rounds) / 1e6,
               med(s->write[P_MEMSET], rounds) / 1e6, med(s->rel[P_MEMSET], rounds) / 1e6);
  }
}

/* ------------------------------------------------------------------------------------------------ */
/* frame allocator                                                                                   */
/* ------------------------------------------------------------------------------------------------ */
typedef struct {
  const char *name;
  ms_frame_policy_t policy;
  bool hugetlb;
} fpol_t;
static const fpol_t fpols[] = {
    {"keep", MS_FRAME_KEEP, false},           {"keep_idle", MS_FRAME_KEEP_IDLE, false},
    {"reset", MS_FRAME_RESET, false},         {"decommit", MS_FRAME_DECOMMIT, false},
    {"release", MS_FRAME_RELEASE, false},     {"huge_thp", MS_FRAME_HUGE, false},
    {"huge_hugetlb", MS_FRAME_HUGE, true},
};
#define NPOL (sizeof fpols / sizeof fpols[0])

typedef struct {
  bool skip;
  char reason[128];
  double frame_ns[MAX_FRAMES], flip_ns[MAX_FRAMES];
  int frames;
  double peak, end_rss, end_lazy, idle_rss, idle_lazy, return_ms, pool_end, pool_idle;
} fres_t;

static void *sleeper(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t xorshift(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static ms_frame_t *frame_make(const fpol_t *pol, size_t range, int idle_ms) {
  ms_option_set(MS_OPTION_HUGE_PAGES, pol->hugetlb ? 2 << 20 : 0);
  ms_frame_config_t cfg = {0};
  cfg.range_size = range;
  cfg.policy = pol->policy;
  cfg.idle_ms = idle_ms;
  ms_frame_t *f = ms_frame_create(&cfg);
  ms_option_set(MS_OPTION_HUGE_PAGES, 0);
  return f;
}

/* one frame: 1-256 KiB blocks, each memset, until frame_bytes; then the flip. Returns frame and flip ns. */
static void frame_one(ms_frame_t *f, size_t frame_bytes, int k, double *frame_ns, double *flip_ns) {
  double t0 = now_ns();
  size_t used = 0;
  while (used < frame_bytes) {
    size_t sz = 1024 + (size_t)(xorshift() % (256 * 1024 - 1024));
    if (sz > frame_bytes - used) sz = frame_bytes - used;
    char *p = ms_frame_alloc(f, sz, 16);
    if (!p) break;
    memset(p, k, sz);
    used += sz;
  }
  double t1 = now_ns();
  ms_frame_flip(f);
  double t2 = now_ns();
  *frame_ns = t2 - t0;
  *flip_ns = t2 - t1;
}

/* Timing: every policy's allocator alive at once, blocks of 10 frames round-robin so that the machine's noise
   spreads evenly; idle_ms is longer than a round, so this is the steady state while frames run. */
static void frame_timing(fres_t *res, size_t range, size_t frame_bytes, int frames, bool have_huge, int warm) {
  ms_frame_t *f[NPOL] = {0};
  for (size_t i = 0; i < NPOL; i++) {
    memset(&res[i], 0, sizeof res[i]);
    if (fpols[i].hugetlb && !have_huge) {
      res[i].skip = true;
      snprintf(res[i].reason, sizeof res[i].reason, "no 2 MiB hugetlb pages reserved");
      continue;
    }
    f[i] = frame_make(&fpols[i], range, 60000);
    if (!f[i]) {
      res[i].skip = true;
      snprintf(res[i].reason, sizeof res[i].reason, "ms_frame_create: %s", strerror(errno));
      continue;
    }
    double a, b;
    for (int k = 0; k < warm; k++) frame_one(f[i], frame_bytes, k, &a, &b); /* warm-up */
  }
  const int block = 10;
  for (int done = 0; done < frames; done += block)
    for (size_t i = 0; i < NPOL; i++) {
      if (!f[i]) continue;
      for (int k = done; k < done + block && k < frames; k++) frame_one(f[i], frame_bytes, k, &res[i].frame_ns[k], &res[i].flip_ns[k]);
    }
  for (size_t i = 0; i < NPOL; i++) {
    res[i].frames = frames;
    ms_frame_destroy(f[i]);
  }
}

/* RSS: one policy at a time (idle_ms 500): peak while frames run, at the last flip, and while idle */
static void frame_rss(const fpol_t *pol, fres_t *res, size_t range, size_t frame_bytes, bool quick) {
  if (res->skip) return;
  uint64_t base_rss = msb_rss_bytes();
  long hp_free0 = read_long("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
  ms_frame_t *f = frame_make(pol, range, 500);
  if (!f) return;
  for (int k = 0; k < (quick ? 6 : 12); k++) {
    double a, b;
    frame_one(f, frame_bytes, k, &a, &b);
    uint64_t rss = msb_rss_bytes();
    if (rss > base_rss && (double)(rss - base_rss) > res->peak) res->peak = (double)(rss - base_rss);
  }
  long hp_end = read_long("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
  if (pol->hugetlb && hp_free0 >= 0 && hp_end >= 0) res->pool_end = (double)(hp_free0 - hp_end) * 2 * MiB;
  uint64_t rss = msb_rss_bytes();
  res->end_rss = rss > base_rss ? (double)(rss - base_rss) : 0;
  res->end_lazy = (double)msb_lazyfree_bytes();
  /* idle: poll for 1.2 s after the last flip; note when RSS first fell below 5% of the peak */
  double t_last = now_ns();
  res->return_ms = -1;
  while (now_ns() - t_last < 1.2e9) {
    usleep(20000);
    rss = msb_rss_bytes();
    double d = rss > base_rss ? (double)(rss - base_rss) : 0;
    if (res->return_ms < 0 && res->peak > 0 && d < 0.05 * res->peak) res->return_ms = (now_ns() - t_last) / 1e6;
    if (quick && (res->return_ms >= 0 || res->peak == 0)) break; /* --quick: stop once it is known */
  }
  rss = msb_rss_bytes();
  res->idle_rss = rss > base_rss ? (double)(rss - base_rss) : 0;
  res->idle_lazy = (double)msb_lazyfree_bytes();
  long hp_free1 = read_long("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
  res->pool_idle = pol->hugetlb && hp_free0 >= 0 && hp_free1 >= 0 ? (double)(hp_free0 - hp_free1) * 2 * MiB : 0;
  ms_frame_destroy(f);
}

static void frame_rows_and_table(msb_ctx_t *ctx, fres_t *res, size_t range, size_t frame_bytes) {
  msb_printf("\nFrame allocator (ms_frame_*): two ranges of %.0f MiB, frames of %.0f MiB in 1-256 KiB blocks, each "
             "memset; %d frames per policy,\ninterleaved in blocks of 10 (steady state). RSS in MiB above the start "
             "(smaps_rollup), from a separate run of 12 frames per policy\nwith idle_ms 500 and the maintenance "
             "thread on; idle = 1.2 s after the last flip; returned = RSS below 5%% of the peak.\n",
             range / MiB, frame_bytes / MiB, res[0].frames);
  msb_printf("%-13s %9s %8s %8s %8s %9s %8s %9s %9s %9s %9s %10s\n", "policy", "med ms", "p99", "max", "x keep",
             "flip ms", "peak", "end RSS", "LazyFree", "idle RSS", "LazyFree", "returned");
  double keep_med = 0;
  for (size_t i = 0; i < NPOL; i++)
    if (fpols[i].policy == MS_FRAME_KEEP && !res[i].skip) keep_med = med(res[i].frame_ns, res[i].frames);
  const char *best = NULL;
  double best_med = 0, pool_end = 0, pool_idle = 0;
  bool pool_note = false;
  for (size_t i = 0; i < NPOL; i++) {
    fres_t *r = &res[i];
    if (fpols[i].hugetlb && !r->skip)
      pool_note = true, pool_end = r->pool_end, pool_idle = r->pool_idle;
    char cs[64];
    snprintf(cs, sizeof cs, "frame/%s", fpols[i].name);
    if (r->skip) {
      msb_printf("%-13s skipped: %s\n", fpols[i].name, r->reason);
      row_skipped(ctx, cs, "memspace", r->reason);
      continue;
    }
    for (int k = 0; k < r->frames; k++) {
      msb_row(ctx, cs, "memspace", 1, frame_bytes, "frame_ns", r->frame_ns[k]);
      msb_row(ctx, cs, "memspace", 1, frame_bytes, "flip_ns", r->flip_ns[k]);
    }
    double tmp[MAX_FRAMES];
    memcpy(tmp, r->frame_ns, (size_t)r->frames * sizeof(double));
    msb_sort(tmp, (size_t)r->frames);
    double m = msb_percentile(tmp, (size_t)r->frames, 50), p99 = msb_percentile(tmp, (size_t)r->frames, 99);
    double mx = tmp[r->frames - 1], fl = med(r->flip_ns, r->frames);
    bool returned = r->return_ms >= 0 && r->return_ms <= 1000; /* the definition: within a second */
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "p50_ns", m);
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "p99_ns", p99);
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "max_ns", mx);
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "flip_p50_ns", fl);
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "peak_rss_bytes", r->peak);
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "end_rss_bytes", r->end_rss);
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "end_lazyfree_bytes", r->end_lazy);
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "idle_rss_bytes", r->idle_rss);
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "idle_lazyfree_bytes", r->idle_lazy);
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "hugetlb_pool_end_bytes", r->pool_end);
    msb_row(ctx, cs, "memspace", 1, frame_bytes, "hugetlb_pool_idle_bytes", r->pool_idle);
    if (returned) msb_row(ctx, cs, "memspace", 1, frame_bytes, "return_s", r->return_ms / 1e3);
    char ret[32];
    if (returned) snprintf(ret, sizeof ret, "%.0f ms", r->return_ms);
    else snprintf(ret, sizeof ret, fpols[i].hugetlb ? "pool" : "no");
    msb_printf("%-13s %9.2f %8.2f %8.2f %8.2f %9.3f %8.1f %9.1f %9.1f %9.1f %9.1f %10s\n", fpols[i].name, m / 1e6,
               p99 / 1e6, mx / 1e6, keep_med > 0 ? m / keep_med : 0, fl / 1e6, r->peak / MiB, r->end_rss / MiB,
               r->end_lazy / MiB, r->idle_rss / MiB, r->idle_lazy / MiB, ret);
    /* hugetlb pool pages are not memory returned to the system */
    if (returned && !fpols[i].hugetlb && (!best || m < best_med)) best = fpols[i].name, best_med = m;
  }
  if (pool_note)
    msb_printf("huge_hugetlb: its pages live in the hugetlb pool, not in RSS: %.0f MiB of the pool in use at the end "
               "of the run, %.0f MiB at idle (the pool stays reserved: never counted as returned)\n",
               pool_end / MiB, pool_idle / MiB);
  if (best)
    msb_printf("fastest policy that returns memory at idle: %s (%.2f ms per frame, %.2fx keep); the default is "
               "keep_idle\n", best, best_med / 1e6, keep_med > 0 ? best_med / keep_med : 0);
}

/* ------------------------------------------------------------------------------------------------ */
int msb_bench_pages(msb_ctx_t *ctx) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  int rounds, frames;
  size_t range, frame_bytes;
  switch (ctx->mode) {
  case MSB_QUICK: region = 64u << 20, rounds = 3, frames = 20, range = 16u << 20, frame_bytes = 12u << 20; break;
  case MSB_FULL: region = 300u << 20, rounds = 15, frames = 300, range = 64u << 20, frame_bytes = 48u << 20; break;
  default: region = 300u << 20, rounds = 9, frames = 120, range = 64u << 20, frame_bytes = 48u << 20; break;
  }
  fprintf(ctx->cmd, "parameters: region_bytes=%zu rounds=%d (+1 warm-up) frames=%d range_bytes=%zu frame_bytes=%zu\n",
          region, rounds, frames, range, frame_bytes);
  /* hugetlb: one fresh mapping and one kept mapping of the region, plus both frame ranges */
  long want = (long)(2 * region / (2u << 20)) + (long)(2 * range / (2u << 20)) + 2;
  char huge_reason[160] = "";
  long got = huge_reserve(want, huge_reason, sizeof huge_reason);
  bool have_huge = got >= want;
  fprintf(ctx->cmd, "hugetlb: %s\n", have_huge ? "2 MiB pages reserved for the run, old count restored after" : huge_reason);
  bool thp = access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) == 0;
  msb_printf("region %.0f MiB, %d rounds (+1 warm-up), patterns memset / 1 B per 64 KiB / 1 B per 4 KiB; hugetlb: %s\n",
             region / MiB, rounds, have_huge ? "reserved" : huge_reason);

  msb_section(ctx, "map"); /* "section NAME: S s" in pages.cmd: the mapping strategies, then the frame allocator */
  for (int id = 0; id < S_COUNT; id++) {
    strat_t *s = &strats[id];
    if ((id == S_HUGETLB || id == S_HUGETLB_KEPT) && !have_huge) {
      s->skip = true;
      snprintf(s->reason, sizeof s->reason, "%s", huge_reason);
      continue;
    }
    if (id == S_THP_KEPT && !thp) {
      s->skip = true;
      snprintf(s->reason, sizeof s->reason, "kernel without transparent huge pages");
      continue;
    }
    if (strat_setup((strat_id_t)id, s) != 0) s->skip = true;
  }
  for (int r = -1; r < rounds; r++) {
    int slot = r < 0 ? 0 : r; /* the warm-up round is overwritten */
    for (int pt = 0; pt < P_COUNT; pt++)
      for (int id = 0; id < S_COUNT; id++) {
        strat_t *s = &strats[id];
        if (s->skip) continue;
        if (strat_round((strat_id_t)id, s, pt, slot) != 0) s->skip = true;
      }
  }
  for (int id = 0; id < S_COUNT; id++) strat_teardown(&strats[id]);
  map_rows(ctx, rounds);
  print_map_tables(rounds);

  /* the frame allocator; a second thread lets the maintenance thread start, as in a real program */
  pthread_t t;
  bool thread = pthread_create(&t, NULL, sleeper, NULL) == 0;
  static fres_t res[NPOL];
  msb_section(ctx, "frame_timing");
  frame_timing(res, range, frame_bytes, frames, have_huge, ctx->mode == MSB_QUICK ? 2 : 8);
  msb_section(ctx, "frame_rss");
  for (size_t i = 0; i < NPOL; i++) frame_rss(&fpols[i], &res[i], range, frame_bytes, ctx->mode == MSB_QUICK);
  msb_section(ctx, NULL);
  frame_rows_and_table(ctx, res, range, frame_bytes);
  if (thread) {
    pthread_cancel(t);
    pthread_join(t, NULL);
  }
  huge_restore();
  return 0;
}
