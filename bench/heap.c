/* SPDX-License-Identifier: MIT */
/* heap.c: `memspace bench heap` (docs/bench-heap.md). Four figures, every allocator in its own process:
   1. the seed's workload (rpmalloc's benchmark: bench/heap/rptest.c) at 1, 2 and 4 threads, in two windows:
      the short one (2 untimed + 3 measured loops; without and with cross-thread frees, the four memspace
      presets, the secure build, glibc and the Debian peers; the first round also idles 1 s after freeing
      everything; by default only the runs a target or the README reads, in_short) and the long one (30 loops
      from an empty heap, 1000 with --full: the default preset, glibc and the peers); allocators interleaved
      round by round, median and range of the rounds;
   2. real programs under each allocator (python3, numpy, sqlite3, gcc, a shell loop, git, a shell script,
      python's http.server under load, Rscript): wall time and max RSS from wait4, median of the interleaved
      runs with min/max, an empty preloaded library (preload-floor) among the allocators as the floor of
      LD_PRELOAD itself, a short program run more often under the allocators its targets compare;
   3. one block grown with realloc to 1 GiB (bench/heap/realloc_grow.c), by 1 MiB steps and by doubling;
   4. mimalloc-bench-style workloads (bench/heap/larson.c and the others), allocators interleaved round by round.
   Prints tables with ratios against glibc and the best peer of this run, then the targets of issue [heap]
   (PASS/MISS) and of issue #26 (met/MISSED), each with its figure. */
#include "bench.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- parameters ------------------------------------------------------------------------------------ */

typedef struct {
  int rounds, warmup, loops, idle_ms;  /* rptest: untimed warm-up loops, measured loops */
  int long_rounds, long_loops;         /* rptest_long: measured loops from an empty heap */
  int long_threads;                    /* rptest_long: the largest thread count (1, 2, 4) */
  size_t blocks, ops;
  double rptest_timeout_s;
  int runs;                            /* real programs: every allocator's runs */
  double prog_goal_s;                  /* ... up to prog_runs_max runs of the allocators a target compares, until */
  int prog_runs_max;                   /* their runs add up to about prog_goal_s seconds of glibc's reference run */
  int py_waves, py_n, np_rounds, sql_rows, gcc_funcs, shell_cmds;
  int git_files, http_requests, r_n;
  double prog_timeout_s;
  size_t realloc_max;                  /* realloc growth */
  double realloc_limit_s;
  int realloc_runs, realloc_double_runs; /* by 1 MiB steps (the README's and a target's), by doubling */
  bool short_all;                      /* the short window: every allocator at every thread count */
  bool cgroup_peers;                   /* purge under a cgroup: the peers' runs too (no target reads them) */
  double wl_mult, wl_timeout_s;        /* mimalloc-bench-style workloads: times each one's wl_size */
  double wl_fixed_scale;               /* > 0: this scale for every workload instead (--quick) */
  int wl_rounds;                       /* interleaved rounds of every workload */
} hb_params_t;

static hb_params_t params_for(msb_mode_t mode) {
  /* the default fits make bench's 20 minutes (docs/contract.md §1): one round of the short window (the long
     window, 5 rounds of 30 loops at 1 and 2 threads where the targets are, is the headline and takes most of the
     time; 4 threads oversubscribe a 2-core machine, so they run with --full), the short window's runs that a
     target or the README reads (in_short), the real programs at sizes where each run still lasts a good fraction
     of a second (one shorter than a second run up to 10 times under the allocators its targets compare: their rounds
     scatter by several % on a shared machine, so 5 cannot tell 1.02x), realloc growth by doubling once (no target reads it), the workloads in 5 interleaved rounds, each
     run at its wl_size: a window of the steady state, not a moment after start-up */
  hb_params_t p = {.rounds = 1, .warmup = 2, .loops = 3, .idle_ms = 1000, .blocks = 150000, .ops = 75000,
                   .long_rounds = 5, .long_loops = 30, .long_threads = 2, .git_files = 500, .http_requests = 60,
                   .r_n = 4000,
                   .rptest_timeout_s = 300, .runs = 5, .prog_goal_s = 5, .prog_runs_max = 10, .py_waves = 1,
                   .py_n = 25000, .np_rounds = 30,
                   .sql_rows = 400000,
                   .gcc_funcs = 35, .shell_cmds = 150, .prog_timeout_s = 120, .realloc_max = (size_t)1 << 30,
                   .realloc_limit_s = 1.5, .realloc_runs = 3, .realloc_double_runs = 1,
                   .wl_mult = 1, .wl_timeout_s = 60, .wl_rounds = 5};
  if (mode == MSB_QUICK) {
    p.rounds = 1; p.warmup = 1; p.loops = 2; p.idle_ms = 50; p.blocks = 4000; p.ops = 2000; p.rptest_timeout_s = 30;
    p.long_rounds = 2; p.long_loops = 4; p.git_files = 60; p.http_requests = 20; p.r_n = 1000;
    p.runs = 1; p.prog_goal_s = 0; p.py_waves = 1; p.py_n = 3000; p.np_rounds = 5;
    p.sql_rows = 20000; p.gcc_funcs = 4; p.shell_cmds = 10; p.prog_timeout_s = 30;
    p.realloc_max = (size_t)64 << 20; p.realloc_limit_s = 0.5; p.realloc_runs = 1; p.realloc_double_runs = 1;
    p.wl_fixed_scale = 0.02; p.wl_timeout_s = 30; p.wl_rounds = 1;
    p.short_all = true; p.cgroup_peers = true; /* every case and allocator, small: what tests check */
  } else if (mode == MSB_FULL) { /* the seed's parameters: 1000 loops in the long window (hours) */
    p.rounds = 5; p.long_loops = 1000; p.long_threads = 4; p.rptest_timeout_s = 0; p.runs = 10; p.py_waves = 5;
    p.prog_goal_s = 8; p.prog_runs_max = 16;
    p.git_files = 10000; p.http_requests = 2000; p.r_n = 50000;
    p.np_rounds = 400; p.gcc_funcs = 100; p.shell_cmds = 1000;
    p.realloc_limit_s = 30; p.realloc_runs = 5; p.realloc_double_runs = 5; p.prog_timeout_s = 600;
    p.short_all = true; p.cgroup_peers = true;
    p.wl_mult = 2; p.wl_rounds = 7; p.wl_timeout_s = 300;
  }
  return p;
}

/* ---- allocators -------------------------------------------------------------------------------------- */

typedef struct {
  const char *impl;    /* CSV name */
  const char *preload; /* NULL: glibc */
  char *env[2];        /* extra environment (MEMSPACE_CACHE=...) */
  bool installed;
  bool peer;           /* jemalloc, mimalloc, tcmalloc, tbbmalloc: candidates for "best peer" */
} hb_impl_t;

#define MAX_IMPL 10
static hb_impl_t synth[MAX_IMPL], real[MAX_IMPL]; /* rptest: presets + others; real programs: one memspace */
static int n_synth, n_real;
/* the real programs also run under real[n_real], `preload-floor`: an empty preloaded library (bench/heap/floor.c),
   what LD_PRELOAD itself costs; n_prog_impl counts it, the other sections stop at n_real */
static int n_prog_impl;

/* `impl` is named in MSB_HIDE_PEERS=a,b (tests: it behaves as not installed) */
static bool hidden_impl(const char *impl) {
  size_t len = strlen(impl);
  for (const char *p = getenv("MSB_HIDE_PEERS"); p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, impl, len) == 0 && (p[len] == ',' || p[len] == 0)) return true;
  return false;
}
static char preset_env[4][40];

static void setup_impls(void) {
  static const char *presets[] = {"unlimited", "performance", "size", "none"};
  size_t n;
  const msb_alloc_t *a = msb_allocators(&n);
  n_synth = n_real = 0;
  for (size_t i = 0; i < n; i++) {
    bool is_ms = strcmp(a[i].impl, "memspace") == 0, is_glibc = strcmp(a[i].impl, "glibc") == 0;
    hb_impl_t base = {a[i].impl, a[i].preload, {NULL, NULL}, a[i].installed, !is_ms && !is_glibc};
    if (n_real < MAX_IMPL) real[n_real++] = base;
    if (is_ms) {
      for (int k = 0; k < 4 && n_synth < MAX_IMPL; k++) {
        static char names[4][32];
        snprintf(names[k], sizeof names[k], "memspace-%s", presets[k]);
        snprintf(preset_env[k], sizeof preset_env[k], "MEMSPACE_CACHE=%s", presets[k]);
        hb_impl_t p = base;
        p.impl = names[k];
        p.env[0] = preset_env[k];
        synth[n_synth++] = p;
      }
      /* the secure build (guard pages, encoded free lists, canaries, random carving; make bench and make test build
         it in BUILD/secure): its cost against the default build's performance preset, in the same rounds */
      static char secure_lib[PATH_MAX];
      snprintf(secure_lib, sizeof secure_lib, "%s/secure/libmemspace.so", msb_binary_dir());
      if (n_synth < MAX_IMPL)
        synth[n_synth++] = (hb_impl_t){"memspace-secure", secure_lib, {NULL, NULL}, access(secure_lib, R_OK) == 0, false};
    } else if (n_synth < MAX_IMPL) {
      synth[n_synth++] = base;
    }
  }
  static char floor_lib[PATH_MAX];
  snprintf(floor_lib, sizeof floor_lib, "%s/bench/libheap_floor.so", msb_binary_dir());
  n_prog_impl = n_real;
  if (n_real < MAX_IMPL)
    real[n_prog_impl++] = (hb_impl_t){"preload-floor", floor_lib, {NULL, NULL},
                                      access(floor_lib, R_OK) == 0 && !hidden_impl("preload-floor"), false};
}

static int find_impl(const hb_impl_t *list, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(list[i].impl, name) == 0) return i;
  return -1;
}

/* ---- small helpers ----------------------------------------------------------------------------------- */

#define MAX_ROUNDS 16
typedef struct { double v[MAX_ROUNDS]; int n; } series_t;

static void add(series_t *s, double v) {
  if (s->n < MAX_ROUNDS) s->v[s->n++] = v;
}
static double med(const series_t *s) {
  if (!s->n) return NAN;
  double tmp[MAX_ROUNDS];
  memcpy(tmp, s->v, sizeof(double) * (size_t)s->n);
  return msb_median(tmp, (size_t)s->n);
}
static double smin(const series_t *s) {
  double m = NAN;
  for (int i = 0; i < s->n; i++) if (isnan(m) || s->v[i] < m) m = s->v[i];
  return m;
}
static double smax(const series_t *s) {
  double m = NAN;
  for (int i = 0; i < s->n; i++) if (isnan(m) || s->v[i] > m) m = s->v[i];
  return m;
}
static double ratio(double a, double b) { return (b > 0 && !isnan(a) && !isnan(b)) ? a / b : NAN; }
static double mib(double bytes) { return bytes / 1048576.0; }

/* "1.23x" or "-" into buf */
static const char *fx(char *buf, size_t cap, double v, const char *fmt) {
  if (isnan(v)) snprintf(buf, cap, "-");
  else snprintf(buf, cap, fmt, v);
  return buf;
}

/* the allocator that runs i-th of n in round r: round r starts with r % n and goes up on even rounds, down on odd
   ones, so each allocator leads in turn and follows each of its two neighbours in alternate rounds (whatever one
   leaves behind in the machine, page cache or freed memory, does not land on the same successor every round) */
static int turn(int i, int r, int n) { return ((r % n) + (r % 2 ? n - i : i)) % n; }
/* the installed allocators of a[0..n), their indexes in inst[] (MAX_IMPL) and their count: each section's order
   rotates over these alone (turn), so each installed allocator leads in turn whatever is missing */
static int installed_impls(const hb_impl_t *a, int n, int *inst) {
  int m = 0;
  for (int k = 0; k < n; k++)
    if (a[k].installed) inst[m++] = k;
  return m;
}

/* A row's case and impl in the CSV: docs/contract.md §2 keeps configurations in case, impl naming an allocator. The
   empty preloaded library (preload-floor) runs glibc's malloc: case CASE/preload-floor, impl glibc; the secure
   build (memspace-secure, the secure mode's checks compiled in) is memspace: case CASE/secure. bench/plot.py's
   role_view reads them back as this file's names. */
typedef struct { char case_name[80]; const char *impl; } hb_key_t;
static hb_key_t hb_key(const char *case_name, const char *impl) {
  hb_key_t k = {{0}, impl};
  const char *role = NULL;
  if (strcmp(impl, "preload-floor") == 0) role = impl, k.impl = "glibc";
  if (strcmp(impl, "memspace-secure") == 0) role = "secure", k.impl = "memspace";
  snprintf(k.case_name, sizeof k.case_name, "%s%s%s", case_name, role ? "/" : "", role ? role : "");
  return k;
}
static void hb_row(msb_ctx_t *ctx, const char *case_name, const char *impl, int threads, uint64_t size_bytes,
                   const char *metric, double value) {
  hb_key_t k = hb_key(case_name, impl);
  msb_row(ctx, k.case_name, k.impl, threads, size_bytes, metric, value);
}
static void hb_row_not_installed(msb_ctx_t *ctx, const char *case_name, const char *impl, int threads) {
  hb_key_t k = hb_key(case_name, impl);
  msb_row_not_installed(ctx, k.case_name, k.impl, threads);
}
static void row_status(msb_ctx_t *ctx, const char *case_name, const char *impl, int threads, const char *status) {
  if (!ctx->csv) return;
  hb_key_t k = hb_key(case_name, impl);
  fprintf(ctx->csv, "%s,%s,%s,%d,0,status,%s\n", ctx->part, k.case_name, k.impl, threads, status);
  fflush(ctx->csv);
}

static const char *find_program(const char *name, const char *prefer) {
  static char found[4][PATH_MAX];
  static int used;
  if (prefer && access(prefer, X_OK) == 0) return prefer;
  const char *path = getenv("PATH");
  if (!path) return NULL;
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", path);
  for (char *save = NULL, *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    char full[PATH_MAX];
    snprintf(full, sizeof full, "%s/%s", dir, name);
    if (access(full, X_OK) == 0) {
      char *slot = found[used++ % 4];
      snprintf(slot, PATH_MAX, "%s", full);
      return slot;
    }
  }
  return NULL;
}

static void note_cmd(msb_ctx_t *ctx, const char *what, char *const argv[], const hb_impl_t *im) {
  if (!ctx->cmd) return;
  fprintf(ctx->cmd, "child %s:", what);
  if (im->preload) fprintf(ctx->cmd, " LD_PRELOAD=%s", im->preload);
  for (int i = 0; i < 2 && im->env[i]; i++) fprintf(ctx->cmd, " %s", im->env[i]);
  for (int i = 0; argv[i]; i++) fprintf(ctx->cmd, " %s", argv[i]);
  fprintf(ctx->cmd, "\n");
  fflush(ctx->cmd);
}

/* ---- 1. the seed's workload ---------------------------------------------------------------------------- */

static const int thread_counts[] = {1, 2, 4};
#define N_THR 3
/* rptest and rptest_cross: the short window (untimed warm-up loops, a few measured loops); rptest_long: the long
   window, every loop from an empty heap measured (the steady state a long-running program lives in) */
enum { C_SCATTER, C_CROSS, C_LONG, N_CASES };
static const char *const case_names[N_CASES] = {"rptest", "rptest_cross", "rptest_long"};
enum { M_OPS, M_PEAK, M_LIVE, M_OVER, M_AFTER, M_IDLE, M_LAZY, M_EXIT, M_WOPS, M_NOPS, M_USER, M_SYS, M_FAULTS,
       N_METRICS };
static const char *const metric_names[N_METRICS] = {
    "ops_per_cpu_s", "peak_rss_bytes", "peak_live_bytes", "overhead_bytes",
    "rss_after_free_bytes", "idle_rss_bytes", "idle_lazyfree_bytes", "rss_after_exit_bytes", "ops_per_s",
    "ops", "user_s", "sys_s", "page_faults"};
static series_t res[N_CASES][N_THR][MAX_IMPL][N_METRICS];
static double long_seconds;
static bool failed[N_CASES][N_THR][MAX_IMPL];

static int long_threads = 4; /* set from the parameters before anything runs */
static bool case_has_threads(int c, int t) {
  if (c == C_LONG) return thread_counts[t] <= long_threads;
  return c != C_CROSS || thread_counts[t] > 1;
}

/* the long window runs the default preset, glibc and the peers (the presets' differences show in the short one) */
static bool in_long(int k) {
  return strcmp(synth[k].impl, "memspace-performance") == 0 || strncmp(synth[k].impl, "memspace", 8) != 0;
}

/* the short window's runs by default (--full and --quick: all of them): what a target or the README reads. At 1 thread every
   allocator (the README's idle memory, the presets' and the secure build's figures); at 2 threads the default
   preset, none, glibc and the peers (the targets: the best peer's throughput and peak at 1 and 2 threads, none
   against glibc); at 4 threads, which oversubscribe a 2-core machine, the default preset, none and glibc (the
   targets against glibc); cross-thread frees at 2 threads for the default preset, glibc and the peers */
static bool in_short(const hb_params_t *p, int c, int t, int k) {
  const char *im = synth[k].impl;
  bool perf = strcmp(im, "memspace-performance") == 0, none = strcmp(im, "memspace-none") == 0;
  bool ms = strncmp(im, "memspace", 8) == 0, glibc = strcmp(im, "glibc") == 0;
  if (!case_has_threads(c, t)) return false;
  if (p->short_all) return true;
  if (c == C_CROSS) return thread_counts[t] == 2 && (perf || !ms);
  if (thread_counts[t] == 1) return true;
  return perf || none || glibc || (thread_counts[t] == 2 && !ms);
}

/* the 1 s idle after freeing everything (first round): every allocator at 1 thread (the README's row), the default
   preset at every thread count (the targets); --full: every run of the first round */
static bool idle_wanted(const hb_params_t *p, int t, int k) {
  return p->short_all || thread_counts[t] == 1 || strcmp(synth[k].impl, "memspace-performance") == 0;
}

static void run_rptest(msb_ctx_t *ctx, const hb_params_t *p, int round, int c, int t, int k) {
  const hb_impl_t *im = &synth[k];
  int threads = thread_counts[t];
  char prog[PATH_MAX], a_thr[16], a_warm[16], a_loops[16], a_blocks[32], a_ops[32], a_idle[16];
  snprintf(prog, sizeof prog, "%s/bench/heap_rptest", msb_binary_dir());
  snprintf(a_thr, sizeof a_thr, "%d", threads);
  snprintf(a_warm, sizeof a_warm, "%d", c == C_LONG ? 0 : p->warmup);
  snprintf(a_loops, sizeof a_loops, "%d", c == C_LONG ? p->long_loops : p->loops);
  snprintf(a_blocks, sizeof a_blocks, "%zu", p->blocks);
  snprintf(a_ops, sizeof a_ops, "%zu", p->ops);
  snprintf(a_idle, sizeof a_idle, "%d", (round == 0 && c == C_SCATTER && idle_wanted(p, t, k)) ? p->idle_ms : 0);
  char *argv[] = {prog, "--threads", a_thr, "--warmup", a_warm, "--loops", a_loops, "--blocks", a_blocks, "--ops", a_ops,
                  "--min", "16", "--max", "16000", "--idle-ms", a_idle, c == C_CROSS ? "--cross" : NULL, NULL};
  if (round == 0) note_cmd(ctx, case_names[c], argv, im);
  char out[4096];
  double wall;
  struct rusage ru;
  double timeout = p->rptest_timeout_s > 0 && c == C_LONG ? p->rptest_timeout_s * 2 : p->rptest_timeout_s;
  int st = msb_spawn(argv, im->preload, im->env, out, sizeof out, timeout, &wall, &ru);
  if (st != 0) {
    msb_printf("   %s %s threads=%d: %s (status %d)\n", case_names[c], im->impl, threads,
               st == 128 + 9 ? "timed out or killed" : "failed", st);
    row_status(ctx, case_names[c], im->impl, threads, st == 128 + 9 ? "timeout" : "failed");
    failed[c][t][k] = true;
    return;
  }
  static const char *const extra[] = {"cpu_s", "wall_s"};
  double v;
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
    if (msb_kv(out, extra[i], &v)) hb_row(ctx, case_names[c], im->impl, threads, 0, extra[i], v);
  for (int m = 0; m < N_METRICS; m++)
    if (msb_kv(out, metric_names[m], &v)) {
      hb_row(ctx, case_names[c], im->impl, threads, 0, metric_names[m], v);
      add(&res[c][t][k][m], v);
    }
}

/* the installed peer with the highest median of metric m (M_OPS, M_WOPS) for (case, threads); -1 if none */
static int best_peer_by(int c, int t, int m) {
  int best = -1;
  for (int k = 0; k < n_synth; k++) {
    if (!synth[k].peer || !synth[k].installed || !res[c][t][k][m].n) continue;
    if (best < 0 || med(&res[c][t][k][m]) > med(&res[c][t][best][m])) best = k;
  }
  return best;
}
static int best_peer(int c, int t) { return best_peer_by(c, t, M_OPS); }

/* the range of a/b over the rounds: round by round when both have every round (the allocators of a round ran
   side by side), else the widest (min a / max b, max a / min b) */
static void ratio_range(const series_t *a, const series_t *b, double *lo, double *hi) {
  *lo = *hi = NAN;
  if (!a->n || !b->n) return;
  if (a->n != b->n) { *lo = ratio(smin(a), smax(b)); *hi = ratio(smax(a), smin(b)); return; }
  for (int i = 0; i < a->n; i++) {
    double r = ratio(a->v[i], b->v[i]);
    if (isnan(*lo) || r < *lo) *lo = r;
    if (isnan(*hi) || r > *hi) *hi = r;
  }
}

/* overhead (peak RSS - peak live) in % of the peak live bytes, round by round */
static series_t overhead_series(int c, int t, int k) {
  series_t o = {.n = 0};
  const series_t *ov = &res[c][t][k][M_OVER], *lv = &res[c][t][k][M_LIVE];
  for (int i = 0; i < ov->n && i < lv->n; i++) add(&o, 100.0 * ratio(ov->v[i], lv->v[i]));
  return o;
}

static double overhead_pct(int c, int t, int k) {
  return 100.0 * ratio(med(&res[c][t][k][M_OVER]), med(&res[c][t][k][M_LIVE]));
}

static void print_rptest(const hb_params_t *p, int c) {
  msb_printf("\n-- %s: per thread %zu blocks of 16..16000 B (linear falloff), %d untimed + %d measured loops, "
             "each freeing and allocating %zu blocks in scattered order%s; median of %d round%s\n",
             case_names[c], p->blocks, p->warmup, p->loops, p->ops,
             c == C_CROSS ? ", plus ops/4 blocks a loop handed to the next thread to free" : ", no cross-thread frees",
             p->rounds, p->rounds > 1 ? "s" : "");
  msb_printf("%-22s %3s %11s %8s %12s %11s %9s %9s %9s %9s\n", "impl", "thr", "Mops/CPU-s", "x glibc", "x best-peer",
             "Mops/wall-s", "peak MiB", "live MiB", "overhead", "RSS x glibc");
  int g = find_impl(synth, n_synth, "glibc");
  for (int t = 0; t < N_THR; t++) {
    if (!case_has_threads(c, t)) continue;
    int bp = best_peer(c, t);
    for (int k = 0; k < n_synth; k++) {
      if (!in_short(p, c, t, k)) continue;
      if (!synth[k].installed) { msb_printf("%-22s %3d  not installed\n", synth[k].impl, thread_counts[t]); continue; }
      if (!res[c][t][k][M_OPS].n) { msb_printf("%-22s %3d  failed\n", synth[k].impl, thread_counts[t]); continue; }
      char b1[32], b2[32], b3[32], b4[32];
      double ops = med(&res[c][t][k][M_OPS]);
      msb_printf("%-22s %3d %11.3f %8s %12s %11.3f %9.1f %9.1f %8s%% %9s\n", synth[k].impl, thread_counts[t], ops / 1e6,
                 fx(b1, sizeof b1, g >= 0 ? ratio(ops, med(&res[c][t][g][M_OPS])) : NAN, "%.2fx"),
                 fx(b2, sizeof b2, bp >= 0 ? ratio(ops, med(&res[c][t][bp][M_OPS])) : NAN, "%.2fx"),
                 med(&res[c][t][k][M_WOPS]) / 1e6, mib(med(&res[c][t][k][M_PEAK])), mib(med(&res[c][t][k][M_LIVE])),
                 fx(b3, sizeof b3, overhead_pct(c, t, k), "%.1f"),
                 fx(b4, sizeof b4, g >= 0 ? ratio(med(&res[c][t][k][M_PEAK]), med(&res[c][t][g][M_PEAK])) : NAN,
                    "%.2fx"));
    }
    if (bp >= 0) msb_printf("%-22s %3d (best peer: %s)\n", "", thread_counts[t], synth[bp].impl);
    int sec = find_impl(synth, n_synth, "memspace-secure"), perf = find_impl(synth, n_synth, "memspace-performance");
    if (sec >= 0 && perf >= 0 && res[c][t][sec][M_OPS].n && res[c][t][perf][M_OPS].n)
      msb_printf("%-22s %3d (secure build: %.2fx the default build's speed, %.2fx its peak RSS)\n", "", thread_counts[t],
                 ratio(med(&res[c][t][sec][M_OPS]), med(&res[c][t][perf][M_OPS])),
                 ratio(med(&res[c][t][sec][M_PEAK]), med(&res[c][t][perf][M_PEAK])));
  }
}

/* per million operations, round by round: metric m of the run over its operations */
static series_t per_mops(int t, int k, int m) {
  series_t o = {.n = 0};
  const series_t *v = &res[C_LONG][t][k][m], *n = &res[C_LONG][t][k][M_NOPS];
  for (int i = 0; i < v->n && i < n->n; i++) add(&o, 1e6 * ratio(v->v[i], n->v[i]));
  return o;
}

/* where the long window's CPU time went: user and system seconds and page faults per million operations (the
   system time is mostly page faults; the user time holds the allocator's code and the workload's own page
   writes and checks, the same for every allocator) */
static void print_long_cpu(void) {
  msb_printf("\n   where the CPU time went: per million operations, median [min-max] of the rounds\n");
  msb_printf("%-22s %3s %22s %22s %26s\n", "impl", "thr", "user ms [min-max]", "system ms [min-max]",
             "page faults [min-max]");
  for (int t = 0; t < N_THR; t++) {
    if (!case_has_threads(C_LONG, t)) continue;
    for (int k = 0; k < n_synth; k++) {
      if (!in_long(k) || !synth[k].installed || !res[C_LONG][t][k][M_USER].n) continue;
      series_t u = per_mops(t, k, M_USER), y = per_mops(t, k, M_SYS), f = per_mops(t, k, M_FAULTS);
      char c1[48], c2[48], c3[48];
      snprintf(c1, sizeof c1, "%.0f [%.0f-%.0f]", 1e3 * med(&u), 1e3 * smin(&u), 1e3 * smax(&u));
      snprintf(c2, sizeof c2, "%.0f [%.0f-%.0f]", 1e3 * med(&y), 1e3 * smin(&y), 1e3 * smax(&y));
      snprintf(c3, sizeof c3, "%.0f [%.0f-%.0f]", med(&f), smin(&f), smax(&f));
      msb_printf("%-22s %3d %22s %22s %26s\n", synth[k].impl, thread_counts[t], c1, c2, c3);
    }
  }
}

/* the long window: median [min-max] of the rounds, and memspace's ratio to the best peer with its range */
static void print_long(const hb_params_t *p) {
  msb_printf("\n-- rptest_long: the steady state, %d loops from an empty heap, every loop measured (per thread %zu "
             "blocks of 16..16000 B, %zu frees and allocations a loop); median [min-max] of %d interleaved round%s; "
             "x best-peer: median ratio [range of the rounds' ratios]\n",
             p->long_loops, p->blocks, p->ops, p->long_rounds, p->long_rounds > 1 ? "s" : "");
  msb_printf("%-22s %3s %24s %20s %24s %20s %20s\n", "impl", "thr", "Mops/CPU-s [min-max]", "x best-peer",
             "Mops/wall-s [min-max]", "x best-peer", "overhead % [min-max]");
  for (int t = 0; t < N_THR; t++) {
    if (!case_has_threads(C_LONG, t)) continue;
    int bc = best_peer_by(C_LONG, t, M_OPS), bw = best_peer_by(C_LONG, t, M_WOPS);
    for (int k = 0; k < n_synth; k++) {
      if (!in_long(k)) continue;
      if (!synth[k].installed) { msb_printf("%-22s %3d  not installed\n", synth[k].impl, thread_counts[t]); continue; }
      series_t *r = res[C_LONG][t][k];
      if (!r[M_OPS].n) { msb_printf("%-22s %3d  failed\n", synth[k].impl, thread_counts[t]); continue; }
      char c1[48], c2[48], c3[48], c4[48], c5[48];
      const series_t *peers[2] = {bc >= 0 ? &res[C_LONG][t][bc][M_OPS] : NULL,
                                  bw >= 0 ? &res[C_LONG][t][bw][M_WOPS] : NULL};
      const series_t *mine[2] = {&r[M_OPS], &r[M_WOPS]};
      char *cells[2] = {c2, c4};
      for (int i = 0; i < 2; i++) {
        double lo, hi;
        if (!peers[i]) { snprintf(cells[i], 48, "-"); continue; }
        ratio_range(mine[i], peers[i], &lo, &hi);
        snprintf(cells[i], 48, "%.2fx [%.2f-%.2f]", ratio(med(mine[i]), med(peers[i])), lo, hi);
      }
      series_t o = overhead_series(C_LONG, t, k);
      snprintf(c1, sizeof c1, "%.3f [%.3f-%.3f]", med(&r[M_OPS]) / 1e6, smin(&r[M_OPS]) / 1e6, smax(&r[M_OPS]) / 1e6);
      snprintf(c3, sizeof c3, "%.3f [%.3f-%.3f]", med(&r[M_WOPS]) / 1e6, smin(&r[M_WOPS]) / 1e6,
               smax(&r[M_WOPS]) / 1e6);
      snprintf(c5, sizeof c5, "%.1f [%.1f-%.1f]", med(&o), smin(&o), smax(&o));
      msb_printf("%-22s %3d %24s %20s %24s %20s %20s\n", synth[k].impl, thread_counts[t], c1, c2, c3, c4, c5);
    }
    if (bc >= 0)
      msb_printf("%-22s %3d (best peer: %s per CPU-second, %s per wall-second)\n", "", thread_counts[t],
                 synth[bc].impl, bw >= 0 ? synth[bw].impl : "-");
  }
  print_long_cpu();
}

static void print_idle(const hb_params_t *p) {
  msb_printf("\n-- idle: rptest after freeing everything (threads still alive), Rss sampled at once and after %d ms "
             "of idling (first round); LazyFree is counted in Rss\n", p->idle_ms);
  msb_printf("%-22s %3s %9s %11s %11s %9s %11s %11s\n", "impl", "thr", "peak MiB", "freed MiB", "idle MiB",
             "% of peak", "lazyfr MiB", "exited MiB");
  for (int t = 0; t < N_THR; t++)
    for (int k = 0; k < n_synth; k++) {
      series_t *r = res[C_SCATTER][t][k];
      if (!synth[k].installed || !r[M_IDLE].n) continue;
      msb_printf("%-22s %3d %9.1f %11.1f %11.1f %8.1f%% %11.1f %11.1f\n", synth[k].impl, thread_counts[t],
                 mib(r[M_PEAK].v[0]), mib(r[M_AFTER].v[0]), mib(r[M_IDLE].v[0]),
                 100.0 * ratio(r[M_IDLE].v[0], r[M_PEAK].v[0]), mib(r[M_LAZY].v[0]), mib(r[M_EXIT].v[0]));
    }
}

/* ---- 2. real programs ---------------------------------------------------------------------------------- */

enum { P_PY, P_PYMALLOC, P_NUMPY, P_SQL, P_GCC, P_SHELL, P_GIT, P_SCRIPT, P_HTTP, P_R, N_PROGS };
static const char *const prog_names[N_PROGS] = {"python_pymalloc", "python_malloc", "python_numpy", "sqlite3", "gcc",
                                                "shell", "git", "shell_script", "http_server", "rscript"};
/* the many-process programs (every process preloaded): issue #26 holds them to mimalloc's wall time */
static const bool prog_many[N_PROGS] = {[P_SHELL] = true, [P_GIT] = true, [P_SCRIPT] = true};
static const char *const prog_desc[N_PROGS] = {
    "python3 dict/list/string churn (pymalloc on)", "same with PYTHONMALLOC=malloc",
    "numpy temporaries of 1-40 MB, six kept: large blocks of ever different sizes",
    "sqlite3: build, index and query a table", "gcc -O2 -c on a generated file",
    "/bin/sh running /bin/true in a loop: fork, exec and start-up of every process, each preloaded",
    "git init, add -A and commit of a tree of small files, ten more commits, status, log -p: every git preloaded",
    "a shell script of sort, uniq, head, wc, sed and awk pipelines over a 2000-line file: every process preloaded",
    "python3 -m http.server on 127.0.0.1 serving GET requests from a python client, one connection each",
    "Rscript: a vector grown by v <- c(v, x) and a list of vectors"};
enum { R_WALL, R_RSS, R_CPU, N_RMETRICS };
static series_t pres[N_PROGS][MAX_IMPL][N_RMETRICS];
static bool prog_have[N_PROGS]; /* the programs that ran, for the targets printed after section 4 */
static bool pfail[N_PROGS][MAX_IMPL];
static int prog_runs[N_PROGS];  /* runs of the compared allocators (prog_compared); the others run p->runs times */

/* the allocators the targets on the real programs compare memspace with (glibc, mimalloc) and the LD_PRELOAD floor
   that explains them: a short program runs them more often than the others, so their medians resolve a few % */
static bool prog_compared(int k) {
  static const char *const names[] = {"glibc", "memspace", "preload-floor", "mimalloc"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(real[k].impl, names[i]) == 0) return true;
  return false;
}

/* the runs of program pi: p->runs, or for a short one as many as make prog_goal_s seconds of its reference run
   under glibc (ref_s: its CPU seconds, which a loaded machine stretches less than its wall time, so the count and
   the section's work stay about the same from run to run), at most prog_runs_max */
static int runs_for(const hb_params_t *p, double ref_s) {
  int n = p->runs;
  if (p->prog_goal_s > 0 && ref_s > 0) {
    double want = ceil(p->prog_goal_s / ref_s);
    if (want > n) n = want < p->prog_runs_max ? (int)want : p->prog_runs_max;
  }
  return n < MAX_ROUNDS ? n : MAX_ROUNDS;
}

/* the median over the runs of a[i] / b[i]: the runs of a program interleave the allocators, so run i of two of them
   ran side by side (a failure ends an allocator's runs, so index i is run i for both) */
static double paired_median(const series_t *a, const series_t *b) {
  double r[MAX_ROUNDS];
  int n = 0;
  for (int i = 0; i < a->n && i < b->n; i++)
    if (!isnan(ratio(a->v[i], b->v[i]))) r[n++] = ratio(a->v[i], b->v[i]);
  return n ? msb_median(r, (size_t)n) : NAN;
}

typedef struct {
  char dir[PATH_MAX];
  char py[PATH_MAX], churn[PATH_MAX], np_churn[PATH_MAX], a_np[16];
  char sqlite[PATH_MAX], sql[PATH_MAX], db[PATH_MAX], gcc[PATH_MAX];
  char csrc[PATH_MAX], cobj[PATH_MAX];
  char sh_script[256];
  char git_script[2048], script_path[PATH_MAX], http_py[PATH_MAX], a_http[16], rscript[PATH_MAX], r_file[PATH_MAX],
      a_r[16];
  char a_waves[16], a_n[16], a_read[PATH_MAX + 8];
  char ref[N_PROGS][4096]; /* glibc's output: every allocator must print the same */
  double ref_s[N_PROGS];   /* glibc's reference run: user + system seconds */
  bool have[N_PROGS];
} progs_t;

static bool write_sql(const char *path, int rows) {
  FILE *f = fopen(path, "w");
  if (!f) return false;
  fprintf(f,
          "PRAGMA journal_mode=OFF;\nPRAGMA synchronous=OFF;\nPRAGMA cache_size=-65536;\n"
          "CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL);\n"
          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%d)\n"
          "INSERT INTO t SELECT x, x%%1000, printf('name-%%d-%%x', x, (x*2654435761) %% 4294967296), x*0.5 FROM c;\n"
          "CREATE INDEX t_name ON t(name);\n"
          "SELECT name FROM t WHERE name > 'name-5' ORDER BY name LIMIT 3;\n"
          "SELECT grp, count(*), max(name) FROM t WHERE grp < 3 GROUP BY grp;\n"
          "DELETE FROM t WHERE grp %% 5 = 0;\n"
          "SELECT count(*), sum(length(name)) FROM t;\n",
          rows);
  return fclose(f) == 0;
}

/* functions with loops, switches and a call chain: enough for -O2 to work (inlining, unrolling) */
static bool write_c(const char *path, int funcs) {
  FILE *f = fopen(path, "w");
  if (!f) return false;
  fprintf(f, "#include <string.h>\nstruct s { int a, b; double c; char name[16]; };\n"
             "static int f0(struct s *v, int n, int k) { return n + k + v[0].a; }\n");
  for (int i = 1; i < funcs; i++)
    fprintf(f,
            "static int f%d(struct s *v, int n, int k) {\n  int acc = %d;\n  for (int j = 0; j < n; j++) {\n"
            "    switch ((j + k) %% 7) {\n    case 0: acc += v[j].a * %d; break;\n"
            "    case 1: acc ^= v[j].b << %d; break;\n    case 2: v[j].c += acc * 0.5; break;\n"
            "    case 3: if (v[j].name[%d] == 'x') acc--; break;\n"
            "    case 4: memcpy(v[j].name, \"abcdefghijklmno\", %d); break;\n"
            "    default: acc += (int)v[j].c + %d;\n    }\n  }\n"
            "  return acc + (n > %d ? f%d(v, n - 1, k + 1) : 0);\n}\n",
            i, i, i % 13 + 1, i % 5, i % 16, i % 15 + 1, i, i, i - 1);
  fprintf(f, "int run(struct s *v, int n);\nint run(struct s *v, int n) {\n  int acc = 0;\n");
  for (int i = 0; i < funcs; i++) fprintf(f, "  acc += f%d(v, n, %d);\n", i, i);
  fprintf(f, "  return acc;\n}\n");
  return fclose(f) == 0;
}

/* `files` small text files in DIR/tree/dNN/ (100 a directory), the same every time */
static bool write_tree(const char *dir, int files) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/tree", dir);
  if (mkdir(path, 0700) != 0) return false;
  for (int i = 0; i < files; i++) {
    if (i % 100 == 0) {
      snprintf(path, sizeof path, "%s/tree/d%03d", dir, i / 100);
      if (mkdir(path, 0700) != 0) return false;
    }
    snprintf(path, sizeof path, "%s/tree/d%03d/f%05d.txt", dir, i / 100, i);
    FILE *f = fopen(path, "w");
    if (!f) return false;
    for (int l = 0; l < 3 + i % 17; l++) fprintf(f, "line %d of file %d: %x\n", l, i, (unsigned)(i * 2654435761u + l));
    if (fclose(f) != 0) return false;
  }
  return true;
}

/* DIR/words.txt (2000 lines) and DIR/script.sh: `cmds` commands in pipelines of sort, uniq, head, wc, sed, awk */
static bool write_script(const char *dir, const char *script, int cmds) {
  char words[PATH_MAX];
  snprintf(words, sizeof words, "%s/words.txt", dir);
  FILE *f = fopen(words, "w");
  if (!f) return false;
  for (int i = 0; i < 2000; i++) fprintf(f, "word%d alpha%d beta %d\n", (i * 7919) % 611, i % 37, i);
  if (fclose(f) != 0 || !(f = fopen(script, "w"))) return false;
  fprintf(f, "f='%s'; i=0; n=0; m=0\nwhile [ $i -lt %d ]; do\n"
             "  n=$((n + $(sort \"$f\" | uniq -c | sort -rn | head -n 3 | wc -l)))\n"
             "  m=$(sed 's/a/e/g' \"$f\" | awk '{n += length($0)} END {print n}')\n"
             "  i=$((i + 1))\ndone\necho \"$i $n $m\"\n",
          words, cmds / 7 > 0 ? cmds / 7 : 1);
  return fclose(f) == 0;
}

static bool setup_progs(progs_t *pg, const hb_params_t *p) {
  /* the programs' files (git's repository, sqlite's database, gcc's object) live in memory when TMPDIR does not
     say otherwise: the disk's write-back then neither slows one allocator's run nor the next one's */
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(pg->dir, sizeof pg->dir, "%s/memspace-bench-heap-XXXXXX", tmp);
  if (!mkdtemp(pg->dir)) { msb_printf("   cannot create a temporary directory: %s\n", strerror(errno)); return false; }
  const char *py = find_program("python3", "/usr/bin/python3"); /* the system's, not a version manager's shim */
  snprintf(pg->churn, sizeof pg->churn, "%s/bench/heap_churn.py", msb_binary_dir());
  pg->have[P_PY] = pg->have[P_PYMALLOC] = py && access(pg->churn, R_OK) == 0;
  snprintf(pg->np_churn, sizeof pg->np_churn, "%s/bench/heap_numpy_churn.py", msb_binary_dir());
  snprintf(pg->a_np, sizeof pg->a_np, "%d", p->np_rounds);
  pg->have[P_NUMPY] = py && access(pg->np_churn, R_OK) == 0; /* (no numpy: the reference run fails, left out) */
  if (py) snprintf(pg->py, sizeof pg->py, "%s", py);
  snprintf(pg->a_waves, sizeof pg->a_waves, "%d", p->py_waves);
  snprintf(pg->a_n, sizeof pg->a_n, "%d", p->py_n);
  const char *sq = find_program("sqlite3", NULL);
  snprintf(pg->sql, sizeof pg->sql, "%s/build.sql", pg->dir);
  snprintf(pg->db, sizeof pg->db, "%s/bench.db", pg->dir);
  snprintf(pg->a_read, sizeof pg->a_read, ".read %s", pg->sql);
  pg->have[P_SQL] = sq && write_sql(pg->sql, p->sql_rows);
  if (sq) snprintf(pg->sqlite, sizeof pg->sqlite, "%s", sq);
  const char *cc = find_program("gcc", NULL);
  snprintf(pg->csrc, sizeof pg->csrc, "%s/generated.c", pg->dir);
  snprintf(pg->cobj, sizeof pg->cobj, "%s/generated.o", pg->dir);
  pg->have[P_GCC] = cc && write_c(pg->csrc, p->gcc_funcs);
  if (cc) snprintf(pg->gcc, sizeof pg->gcc, "%s", cc);
  snprintf(pg->sh_script, sizeof pg->sh_script, "i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done; echo $i",
           p->shell_cmds);
  pg->have[P_SHELL] = access("/bin/sh", X_OK) == 0 && access("/bin/true", X_OK) == 0;
  /* git: the tree is written once; each run makes the repository again with fixed names and dates (the same
     commits, so the same output), in DIR/tree: init, add -A, commit, ten commits of one new file, status, log -p */
  pg->have[P_GIT] = pg->have[P_SHELL] && find_program("git", NULL) && write_tree(pg->dir, p->git_files);
  snprintf(pg->git_script, sizeof pg->git_script,
           "cd '%s/tree' && export HOME='%s' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=b "
           "GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.com "
           "GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' && rm -rf .git mod && "
           "git -c init.defaultBranch=main init -q && git add -A && git commit -q -m base && mkdir mod && i=0 && "
           "while [ $i -lt 10 ]; do echo \"change $i\" > mod/f$i && git add -A && git commit -q -m \"c $i\" || exit 1; "
           "i=$((i + 1)); done && git status --short | wc -l && git log -p | wc -l && git rev-parse HEAD",
           pg->dir, pg->dir);
  snprintf(pg->script_path, sizeof pg->script_path, "%s/script.sh", pg->dir);
  pg->have[P_SCRIPT] = pg->have[P_SHELL] && find_program("awk", NULL) && find_program("sort", NULL) &&
                       find_program("sed", NULL) && write_script(pg->dir, pg->script_path, p->shell_cmds);
  snprintf(pg->http_py, sizeof pg->http_py, "%s/bench/heap_http_load.py", msb_binary_dir());
  snprintf(pg->a_http, sizeof pg->a_http, "%d", p->http_requests);
  pg->have[P_HTTP] = py && access(pg->http_py, R_OK) == 0;
  const char *rs = find_program("Rscript", NULL);
  snprintf(pg->r_file, sizeof pg->r_file, "%s/bench/heap_r_growth.R", msb_binary_dir());
  snprintf(pg->a_r, sizeof pg->a_r, "%d", p->r_n);
  pg->have[P_R] = rs && access(pg->r_file, R_OK) == 0;
  if (rs) snprintf(pg->rscript, sizeof pg->rscript, "%s", rs);
  return true;
}

static void cleanup_progs(progs_t *pg) {
  char *argv[] = {"rm", "-rf", pg->dir, NULL};
  if (msb_spawn(argv, NULL, NULL, NULL, 0, 60, NULL, NULL) != 0) msb_printf("   could not remove %s\n", pg->dir);
}

/* runs program `pi` under allocator `k`; run < 0 is the untimed reference run under glibc */
static void run_prog(msb_ctx_t *ctx, const hb_params_t *p, progs_t *pg, int pi, int k, int run) {
  const hb_impl_t *im = &real[k];
  char *argv[8] = {0};
  char *env[3] = {im->env[0], NULL, NULL};
  static char pymalloc_env[] = "PYTHONMALLOC=malloc";
  switch (pi) {
  case P_PY:
  case P_PYMALLOC:
    argv[0] = pg->py; argv[1] = pg->churn; argv[2] = pg->a_waves; argv[3] = pg->a_n;
    if (pi == P_PYMALLOC) env[env[0] ? 1 : 0] = pymalloc_env;
    break;
  case P_NUMPY:
    argv[0] = pg->py; argv[1] = pg->np_churn; argv[2] = pg->a_np;
    break;
  case P_SQL:
    unlink(pg->db);
    argv[0] = pg->sqlite; argv[1] = "-bail"; argv[2] = pg->db; argv[3] = pg->a_read;
    break;
  case P_SHELL:
    argv[0] = "/bin/sh"; argv[1] = "-c"; argv[2] = pg->sh_script;
    break;
  case P_GIT:
    argv[0] = "/bin/sh"; argv[1] = "-c"; argv[2] = pg->git_script;
    break;
  case P_SCRIPT:
    argv[0] = "/bin/sh"; argv[1] = pg->script_path;
    break;
  case P_HTTP:
    argv[0] = pg->py; argv[1] = pg->http_py; argv[2] = pg->a_http;
    break;
  case P_R:
    argv[0] = pg->rscript; argv[1] = "--vanilla"; argv[2] = pg->r_file; argv[3] = pg->a_r;
    break;
  default:
    argv[0] = pg->gcc; argv[1] = "-O2"; argv[2] = "-c"; argv[3] = pg->csrc; argv[4] = "-o"; argv[5] = pg->cobj;
    break;
  }
  if (run == 0) {
    hb_impl_t shown = *im;
    shown.env[0] = env[0]; shown.env[1] = env[1];
    note_cmd(ctx, prog_names[pi], argv, &shown);
  }
  char out[4096];
  double wall;
  struct rusage ru;
  int st = msb_spawn(argv, im->preload, env, out, sizeof out, p->prog_timeout_s, &wall, &ru);
  if (run < 0) { /* reference */
    snprintf(pg->ref[pi], sizeof pg->ref[pi], "%s", out);
    pg->ref_s[pi] = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                    ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
    if (st != 0) { /* (python_numpy without numpy) */
      msb_printf("   %s does not run under glibc (status %d): left out\n", prog_names[pi], st);
      row_status(ctx, prog_names[pi], im->impl, 1, "failed");
      pg->have[pi] = false;
    }
    return;
  }
  const char *why = st == 128 + 9 ? "timeout" : st != 0 ? "failed" : strcmp(out, pg->ref[pi]) ? "wrong_output" : NULL;
  if (why) {
    msb_printf("   %s under %s: %s (status %d)\n", prog_names[pi], im->impl, why, st);
    row_status(ctx, prog_names[pi], im->impl, 1, why);
    pfail[pi][k] = true;
    return;
  }
  double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
  double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
  double rss = (double)ru.ru_maxrss * 1024.0;
  hb_row(ctx, prog_names[pi], im->impl, 1, 0, "wall_s", wall);
  hb_row(ctx, prog_names[pi], im->impl, 1, 0, "user_s", user);
  hb_row(ctx, prog_names[pi], im->impl, 1, 0, "sys_s", sys);
  hb_row(ctx, prog_names[pi], im->impl, 1, 0, "peak_rss_bytes", rss);
  add(&pres[pi][k][R_WALL], wall);
  add(&pres[pi][k][R_RSS], rss);
  add(&pres[pi][k][R_CPU], user + sys);
}

static void print_progs(const hb_params_t *p, const progs_t *pg) {
  msb_printf("\n-- real programs: wall time and max RSS (wait4), median of the runs [min-max], allocators interleaved; "
             "%d runs each, a short program more (up to %d) for glibc, memspace, mimalloc and preload-floor (an empty "
             "preloaded library: what LD_PRELOAD itself costs)\n", p->runs, p->prog_runs_max);
  msb_printf("%-16s %-13s %4s %22s %8s %10s %9s %8s %9s\n", "program", "impl", "runs", "wall s [min-max]", "x glibc",
             "x mimalloc", "RSS MiB", "x glibc", "cpu x gl");
  int g = find_impl(real, n_real, "glibc"), mi = find_impl(real, n_real, "mimalloc");
  for (int pi = 0; pi < N_PROGS; pi++) {
    if (!pg->have[pi]) { msb_printf("%-16s (not available on this machine)\n", prog_names[pi]); continue; }
    for (int k = 0; k < n_prog_impl; k++) {
      if (!real[k].installed) { msb_printf("%-16s %-13s not installed\n", prog_names[pi], real[k].impl); continue; }
      series_t *w = &pres[pi][k][R_WALL], *r = &pres[pi][k][R_RSS];
      if (!w->n) { msb_printf("%-16s %-13s failed\n", prog_names[pi], real[k].impl); continue; }
      char span[64], b1[16], b2[16], b3[16], b4[16];
      snprintf(span, sizeof span, "%.3f [%.3f-%.3f]", med(w), smin(w), smax(w));
      msb_printf("%-16s %-13s %4d %22s %8s %10s %9.1f %8s %9s\n", prog_names[pi], real[k].impl, w->n, span,
                 fx(b1, sizeof b1, g >= 0 ? ratio(med(w), med(&pres[pi][g][R_WALL])) : NAN, "%.3fx"),
                 fx(b2, sizeof b2, mi >= 0 ? ratio(med(w), med(&pres[pi][mi][R_WALL])) : NAN, "%.3fx"),
                 mib(med(r)), fx(b3, sizeof b3, g >= 0 ? ratio(med(r), med(&pres[pi][g][R_RSS])) : NAN, "%.2fx"),
                 fx(b4, sizeof b4, g >= 0 ? ratio(med(&pres[pi][k][R_CPU]), med(&pres[pi][g][R_CPU])) : NAN, "%.3fx"));
    }
    msb_printf("%-16s (%s)\n", "", prog_desc[pi]);
  }
}

/* ---- 3. realloc growth ----------------------------------------------------------------------------------- */

enum { G_STEP, G_DOUBLE, N_GROW };
static const char *const grow_names[N_GROW] = {"realloc_step_1m", "realloc_double"};
enum { G_SECONDS, G_REACHED, G_MOVES, G_RSS, N_GMETRICS };
static const char *const grow_metrics[N_GMETRICS] = {"seconds", "max_completed_bytes", "moves", "peak_rss_bytes"};
static series_t gres[N_GROW][MAX_IMPL][N_GMETRICS];

static void run_grow(msb_ctx_t *ctx, const hb_params_t *p, int gi, int k, int run, bool *stop) {
  const hb_impl_t *im = &real[k];
  char prog[PATH_MAX], a_max[32], a_lim[32];
  snprintf(prog, sizeof prog, "%s/bench/heap_realloc_grow", msb_binary_dir());
  snprintf(a_max, sizeof a_max, "%zu", p->realloc_max);
  snprintf(a_lim, sizeof a_lim, "%g", p->realloc_limit_s);
  char *argv[12];
  int a = 0;
  argv[a++] = prog;
  if (gi == G_STEP) { argv[a++] = "--step"; argv[a++] = "1048576"; }
  else { argv[a++] = "--double"; argv[a++] = "--start"; argv[a++] = "1048576"; }
  argv[a++] = "--max"; argv[a++] = a_max;
  argv[a++] = "--limit-s"; argv[a++] = a_lim;
  argv[a] = NULL;
  if (run == 0) note_cmd(ctx, grow_names[gi], argv, im);
  char out[1024];
  double wall;
  struct rusage ru;
  int st = msb_spawn(argv, im->preload, im->env, out, sizeof out, p->realloc_limit_s * 4 + 30, &wall, &ru);
  if (st != 0) {
    msb_printf("   %s under %s: failed (status %d)\n", grow_names[gi], im->impl, st);
    row_status(ctx, grow_names[gi], im->impl, 1, st == 128 + 9 ? "timeout" : "failed");
    *stop = true;
    return;
  }
  double v;
  for (int m = 0; m < N_GMETRICS; m++)
    if (msb_kv(out, grow_metrics[m], &v)) {
      hb_row(ctx, grow_names[gi], im->impl, 1, p->realloc_max, grow_metrics[m], v);
      add(&gres[gi][k][m], v);
      if (m == G_REACHED && v < (double)p->realloc_max) *stop = true; /* hit the time limit: once is enough */
    }
  if (msb_kv(out, "reallocs", &v)) hb_row(ctx, grow_names[gi], im->impl, 1, p->realloc_max, "reallocs", v);
}

static void print_grow(const hb_params_t *p) {
  msb_printf("\n-- realloc growth: one block grown to %zu MiB, every new page written; a run stops after %g s "
             "(an allocator that copies is quadratic); median\n", p->realloc_max >> 20, p->realloc_limit_s);
  msb_printf("%-16s %-10s %9s %8s %12s %6s %9s\n", "case", "impl", "seconds", "x glibc", "reached MiB", "moves",
             "RSS MiB");
  int g = find_impl(real, n_real, "glibc");
  for (int gi = 0; gi < N_GROW; gi++)
    for (int k = 0; k < n_real; k++) {
      series_t *r = gres[gi][k];
      if (!real[k].installed) { msb_printf("%-16s %-10s not installed\n", grow_names[gi], real[k].impl); continue; }
      if (!r[G_SECONDS].n) { msb_printf("%-16s %-10s failed\n", grow_names[gi], real[k].impl); continue; }
      char b1[16];
      bool full = med(&r[G_REACHED]) >= (double)p->realloc_max;
      msb_printf("%-16s %-10s %9.3f %8s %12.0f %6.0f %9.1f%s\n", grow_names[gi], real[k].impl, med(&r[G_SECONDS]),
                 fx(b1, sizeof b1, full && g >= 0 ? ratio(med(&r[G_SECONDS]), med(&gres[gi][g][G_SECONDS])) : NAN, "%.2fx"),
                 mib(med(&r[G_REACHED])), med(&r[G_MOVES]), mib(med(&r[G_RSS])), full ? "" : "  (stopped: copies)");
    }
}

/* ---- 4. mimalloc-bench-style workloads ------------------------------------------------------------------ */

/* bench/heap/{larson,xmalloc,cache,mstress,glibc_simple,glibc_thread,shbench,alloc_test,malloc_large}.c and cxx_map.cpp:
   our own programs written from the published descriptions of the classic workloads (docs/bench-heap.md §4).
   Each is fixed work (--scale), prints wl.h's lines; the table compares wall seconds (lower is better). */
enum { W_LARSON, W_XMALLOC, W_SCRATCH, W_THRASH, W_MSTRESS, W_GSIMPLE, W_GTHREAD, W_SH6, W_SH8, W_ALLOC, W_CXX, W_MLARGE, N_WL };
static const char *const wl_names[N_WL] = {"larson", "xmalloc", "cache_scratch", "cache_thrash", "mstress",
                                           "glibc_simple", "glibc_thread", "sh6bench", "sh8bench", "alloc_test",
                                           "cxx_map", "malloc_large"};
static const bool wl_single[N_WL] = {[W_GSIMPLE] = true, [W_MLARGE] = true}; /* default run: one thread */
/* each workload's --scale in the default run: its work sized so that a run is a window of the steady state, not
   a moment after start-up that one scheduler hiccup moves; --full runs wl_mult times that, --quick one small fixed
   scale */
static const double wl_size[N_WL] = {[W_LARSON] = 6, [W_XMALLOC] = 2, [W_SCRATCH] = 5, [W_THRASH] = 5,
                                     [W_MSTRESS] = 1.6, [W_GSIMPLE] = 6, [W_GTHREAD] = 5, [W_SH6] = 6, [W_SH8] = 1.5,
                                     [W_ALLOC] = 3.5, [W_CXX] = 4, [W_MLARGE] = 0.4};
static double wl_scale_of(const hb_params_t *p, int w) {
  return p->wl_fixed_scale > 0 ? p->wl_fixed_scale : wl_size[w] * p->wl_mult;
}
enum { WM_SEC, WM_CPU, WM_OPS, WM_RSS, N_WM };
static const char *const wl_metrics[N_WM] = {"seconds", "cpu_s", "ops_per_s", "peak_rss_bytes"};
#define WL_MAX_THR 4
static series_t wres[N_WL][WL_MAX_THR][MAX_IMPL][N_WM];
static bool wfail[N_WL][WL_MAX_THR][MAX_IMPL];
static int wl_thr[WL_MAX_THR], n_wl_thr;

/* threads of (workload, index): a single-threaded workload runs at 1 when only one count is asked for */
static int wl_threads(int w, int ti) { return wl_single[w] && n_wl_thr == 1 ? 1 : wl_thr[ti]; }

static void run_wl(msb_ctx_t *ctx, const hb_params_t *p, int w, int ti, int k, int round) {
  const hb_impl_t *im = &real[k];
  char prog[PATH_MAX], a_thr[16], a_scale[32];
  snprintf(prog, sizeof prog, "%s/bench/heap_%s", msb_binary_dir(), wl_names[w]);
  snprintf(a_thr, sizeof a_thr, "%d", wl_threads(w, ti));
  snprintf(a_scale, sizeof a_scale, "%g", wl_scale_of(p, w));
  char *argv[] = {prog, "--threads", a_thr, "--scale", a_scale, NULL};
  if (round == 0) note_cmd(ctx, wl_names[w], argv, im);
  char out[1024];
  double wall;
  struct rusage ru;
  int st = msb_spawn(argv, im->preload, im->env, out, sizeof out, p->wl_timeout_s, &wall, &ru);
  double v, fig[N_WM];
  bool figures = true; /* (a run without all its figures fails: rounds stay paired) */
  for (int m = 0; m < N_WM; m++) figures = figures && msb_kv(out, wl_metrics[m], &fig[m]);
  if (st != 0 || !figures) {
    msb_printf("   %s under %s threads=%d: %s (status %d)\n", wl_names[w], im->impl, wl_threads(w, ti),
               st == 128 + 9 ? "timed out or killed" : st != 0 ? "failed" : "printed not all its figures", st);
    row_status(ctx, wl_names[w], im->impl, wl_threads(w, ti), st == 128 + 9 ? "timeout" : "failed");
    wfail[w][ti][k] = true;
    return;
  }
  /* the round (1, 2...) of the rows that follow: a run's rows carry it, so a failed run elsewhere does not shift
     which rows were measured side by side */
  hb_row(ctx, wl_names[w], im->impl, wl_threads(w, ti), 0, "round", round + 1);
  if (msb_kv(out, "ops", &v)) hb_row(ctx, wl_names[w], im->impl, wl_threads(w, ti), 0, "ops", v);
  for (int m = 0; m < N_WM; m++) {
    hb_row(ctx, wl_names[w], im->impl, wl_threads(w, ti), 0, wl_metrics[m], fig[m]);
    add(&wres[w][ti][k][m], fig[m]);
  }
}

/* the installed peer with the lowest median of metric m (seconds or peak RSS); -1 if none */
static int wl_best_peer(int w, int ti, int m) {
  int best = -1;
  for (int k = 0; k < n_real; k++) {
    if (!real[k].peer || !real[k].installed || !wres[w][ti][k][m].n) continue;
    if (best < 0 || med(&wres[w][ti][k][m]) < med(&wres[w][ti][best][m])) best = k;
  }
  return best;
}

/* " (3 of 5 rounds)" after a row whose allocator failed in a later round: its medians cover fewer rounds */
static const char *wl_partial(size_t n, int rounds) {
  static char buf[32];
  if (n >= (size_t)rounds) return "";
  snprintf(buf, sizeof buf, " (%zu of %d rounds)", n, rounds);
  return buf;
}

static void print_wl(const hb_params_t *p) {
  msb_printf("\n-- mimalloc-bench-style workloads (our own programs, docs/bench-heap.md section 4): wall seconds of "
             "fixed work (scales in heap.cmd), median [min-max] of %d interleaved round%s; ratios of the medians, "
             "> 1 is slower / bigger\n", p->wl_rounds, p->wl_rounds > 1 ? "s" : "");
  msb_printf("%-14s %3s %-10s %9s %15s %8s %9s %9s %9s %13s %8s %9s\n", "workload", "thr", "impl", "seconds",
             "[min-max]", "x glibc", "x best-pr", "cpu x gl", "peak MiB", "[min-max]", "x glibc", "x best-pr");
  int g = find_impl(real, n_real, "glibc"), ms = find_impl(real, n_real, "memspace");
  for (int w = 0; w < N_WL; w++)
    for (int ti = 0; ti < n_wl_thr; ti++) {
      int bt = wl_best_peer(w, ti, WM_SEC), br = wl_best_peer(w, ti, WM_RSS);
      for (int k = 0; k < n_real; k++) {
        series_t *r = wres[w][ti][k];
        if (!real[k].installed || !r[WM_SEC].n) {
          msb_printf("%-14s %3d %-10s %s\n", wl_names[w], wl_threads(w, ti), real[k].impl,
                     real[k].installed ? "failed" : "not installed");
          continue;
        }
        char b1[16], b2[16], b3[16], b4[16], b5[16], rs[32], rr[32];
        double s = med(&r[WM_SEC]), rss = med(&r[WM_RSS]);
        snprintf(rs, sizeof rs, "[%.3f-%.3f]", smin(&r[WM_SEC]), smax(&r[WM_SEC]));
        snprintf(rr, sizeof rr, "[%.1f-%.1f]", mib(smin(&r[WM_RSS])), mib(smax(&r[WM_RSS])));
        msb_printf("%-14s %3d %-10s %9.3f %15s %8s %9s %9s %9.1f %13s %8s %9s%s\n", wl_names[w], wl_threads(w, ti),
                   real[k].impl, s, rs,
                   fx(b1, sizeof b1, g >= 0 ? ratio(s, med(&wres[w][ti][g][WM_SEC])) : NAN, "%.2fx"),
                   fx(b2, sizeof b2, bt >= 0 ? ratio(s, med(&wres[w][ti][bt][WM_SEC])) : NAN, "%.2fx"),
                   fx(b3, sizeof b3, g >= 0 ? ratio(med(&r[WM_CPU]), med(&wres[w][ti][g][WM_CPU])) : NAN, "%.2fx"),
                   mib(rss), rr, fx(b4, sizeof b4, g >= 0 ? ratio(rss, med(&wres[w][ti][g][WM_RSS])) : NAN, "%.2fx"),
                   fx(b5, sizeof b5, br >= 0 ? ratio(rss, med(&wres[w][ti][br][WM_RSS])) : NAN, "%.2fx"),
                   wl_partial(r[WM_SEC].n, p->wl_rounds));
      }
      if (bt >= 0) msb_printf("%-14s %3d (fastest peer: %s, smallest peak: %s)\n", "", wl_threads(w, ti), real[bt].impl,
                              br >= 0 ? real[br].impl : "-");
    }
  /* one line per workload: memspace against the best peer, flagged past 1.15x time or 1.3x peak RSS */
  msb_printf("\n-- memspace against the best peer (FLAG: > 1.15x time or > 1.3x peak RSS; PART: a run of "
             "memspace or of that peer failed, its medians cover fewer rounds)\n");
  for (int w = 0; w < N_WL; w++)
    for (int ti = 0; ti < n_wl_thr; ti++) {
      if (ms < 0 || !wres[w][ti][ms][WM_SEC].n) continue;
      int bt = wl_best_peer(w, ti, WM_SEC), br = wl_best_peer(w, ti, WM_RSS);
      double tr = bt >= 0 ? ratio(med(&wres[w][ti][ms][WM_SEC]), med(&wres[w][ti][bt][WM_SEC])) : NAN;
      double rr = br >= 0 ? ratio(med(&wres[w][ti][ms][WM_RSS]), med(&wres[w][ti][br][WM_RSS])) : NAN;
      bool bad = (!isnan(tr) && tr > 1.15) || (!isnan(rr) && rr > 1.3);
      bool part = wfail[w][ti][ms] || (bt >= 0 && wfail[w][ti][bt]) || (br >= 0 && wfail[w][ti][br]);
      char b1[16], b2[16];
      msb_printf("%s %-14s %d thr: time %s %s, peak RSS %s %s\n", bad && part ? "FLAG PART" : bad ? "FLAG" : part ? "PART" : "ok  ", wl_names[w],
                 wl_threads(w, ti), fx(b1, sizeof b1, tr, "%.2fx"), bt >= 0 ? real[bt].impl : "-",
                 fx(b2, sizeof b2, rr, "%.2fx"), br >= 0 ? real[br].impl : "-");
    }
}

static void run_wl_section(msb_ctx_t *ctx, const hb_params_t *p) {
  for (int w = 0; w < N_WL; w++)
    for (int ti = 0; ti < n_wl_thr; ti++)
      for (int k = 0; k < n_real; k++)
        if (!real[k].installed) hb_row_not_installed(ctx, wl_names[w], real[k].impl, wl_threads(w, ti));
  /* round by round, every workload under every installed allocator, the order rotating with the round and the
     workload */
  int inst[MAX_IMPL], n_inst = installed_impls(real, n_real, inst);
  for (int r = 0; r < p->wl_rounds; r++)
    for (int w = 0; w < N_WL; w++)
      for (int ti = 0; ti < n_wl_thr; ti++)
        for (int i = 0; i < n_inst; i++) {
          int k = inst[turn(i, r + w, n_inst)];
          if (!wfail[w][ti][k]) run_wl(ctx, p, w, ti, k, r);
        }
}

/* ---- 5. purge under a memory cgroup (bench/heap/cgroup_purge.c; root, else skipped with the reason) ---------- */

static const char *const cg_metrics[] = {"live_bytes", "limit_bytes", "usage_peak_bytes", "rss_peak_bytes",
                                         "rss_freed_bytes", "rss_end_bytes", "reached", "purge_s"};
#define N_CGM (sizeof cg_metrics / sizeof cg_metrics[0])
static double cgres[MAX_IMPL][N_CGM]; /* memspace: its median run; a peer: its one run. NAN when not measured */
#define CG_RUNS 5                      /* memspace's runs (a peer's one shows it keeps its caches: 2 s and more) */
static double cg_lo, cg_hi;           /* memspace: the fastest and slowest run to 1.1x live (2 s: not reached) */
static int cg_runs, cg_missed;        /* memspace: runs made, runs that did not reach 1.1x live */
static char cg_skip[256];

/* one run of allocator k into v (N_CGM values, NAN when absent); false when skipped or failed */
static bool cg_run(msb_ctx_t *ctx, char **argv, int k, double *v) {
  for (size_t m = 0; m < N_CGM; m++) v[m] = NAN;
  char out[2048];
  double wall;
  struct rusage ru;
  int st = msb_spawn(argv, real[k].preload, real[k].env, out, sizeof out, 60, &wall, &ru);
  if (st == 77) { /* "MS_SKIP refused: <reason>": the same for every allocator; no rows */
    snprintf(cg_skip, sizeof cg_skip, "%.*s", (int)strcspn(out, "\n"), out);
    return false;
  }
  if (st != 0 && st != 1) { row_status(ctx, "cgroup_purge", real[k].impl, 2, "failed"); return false; }
  for (size_t m = 0; m < N_CGM; m++)
    if (msb_kv(out, cg_metrics[m], &v[m]) && m != 6) /* reached: from the rest */
      hb_row(ctx, "cgroup_purge", real[k].impl, 2, 0, cg_metrics[m], v[m]);
  return !isnan(v[7]);
}

/* a run's time to 1.1x live for ordering the runs: a run that did not reach it counts as the longest */
static double cg_key(const double *v) { return v[6] > 0 ? v[7] : INFINITY; }

static void run_cgroup_section(msb_ctx_t *ctx, const hb_params_t *p) {
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/bench/heap_cgroup_purge", msb_binary_dir());
  char *argv[] = {prog, NULL};
  cg_skip[0] = 0;
  cg_runs = cg_missed = 0;
  cg_lo = cg_hi = NAN;
  int ms = find_impl(real, n_real, "memspace");
  double runs[CG_RUNS][N_CGM];
  for (int k = 0; k < n_real; k++) {
    for (size_t m = 0; m < N_CGM; m++) cgres[k][m] = NAN;
    if (!real[k].installed && (p->cgroup_peers || !real[k].peer))
      hb_row_not_installed(ctx, "cgroup_purge", real[k].impl, 2);
  }
  for (int r = 0; r < CG_RUNS && !cg_skip[0]; r++) /* memspace's runs between the peers' */
    for (int k = 0; k < n_real && !cg_skip[0]; k++) {
      if (!real[k].installed || (r > 0 && k != ms) || (real[k].peer && !p->cgroup_peers)) continue;
      if (r == 0) note_cmd(ctx, "cgroup_purge", argv, &real[k]);
      if (k != ms) { cg_run(ctx, argv, k, cgres[k]); continue; }
      if (!cg_run(ctx, argv, k, runs[cg_runs])) continue;
      cg_missed += runs[cg_runs][6] <= 0;
      cg_runs++;
    }
  if (ms >= 0 && cg_runs > 0) { /* the median run by time to 1.1x live (insertion sort of the few runs) */
    int order[CG_RUNS];
    for (int i = 0; i < cg_runs; i++) {
      int j = i;
      for (; j > 0 && cg_key(runs[order[j - 1]]) > cg_key(runs[i]); j--) order[j] = order[j - 1];
      order[j] = i;
    }
    memcpy(cgres[ms], runs[order[cg_runs / 2]], sizeof cgres[ms]);
    cg_lo = runs[order[0]][7];
    cg_hi = runs[order[cg_runs - 1]][7];
  }
  msb_printf("\n-- purge under a memory cgroup at 90%% of its limit (64 MiB live, a 192 MiB burst freed by an idle pool "
             "thread; RSS read every ms for 2 s; memspace: its median run of %d; %s)\n", cg_runs,
             p->cgroup_peers ? "a peer: its one run" : "glibc's one run, the peers' with --full");
  if (cg_skip[0]) { msb_printf("   %s\n", cg_skip); return; }
  msb_printf("%-10s %10s %10s %10s %10s %12s\n", "impl", "live MiB", "peak MiB", "freed MiB", "end MiB", "to 1.1x live");
  for (int k = 0; k < n_real; k++) {
    const double *r = cgres[k];
    if (isnan(r[7])) continue;
    char b[32];
    msb_printf("%-10s %10.1f %10.1f %10.1f %10.1f %12s\n", real[k].impl, mib(r[0]), mib(r[3]), mib(r[4]), mib(r[5]),
               r[6] > 0 ? fx(b, sizeof b, r[7] * 1e3, "%.0f ms") : "not in 2 s");
  }
  if (cg_runs > 1)
    msb_printf("memspace's %d runs: %.0f-%.0f ms, %d not within 1.1x live in 2 s\n", cg_runs, cg_lo * 1e3, cg_hi * 1e3,
               cg_missed);
}

/* ---- targets (issue [heap]) -------------------------------------------------------------------------- */

/* one target line: not measured, met or missed, then the text; style 0: issue [heap]'s words, 1: issue #26's */
static void target_line(int style, bool known, bool pass, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void target_line(int style, bool known, bool pass, const char *fmt, ...) {
  static const char *const word[2][3] = {{"N/A ", "PASS", "MISS"}, {"not measured:", "met:", "MISSED:"}};
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  msb_printf("%s %s\n", word[style][!known ? 0 : pass ? 1 : 2], line);
}
#define verdict(...) target_line(0, __VA_ARGS__)
#define met(...) target_line(1, __VA_ARGS__)

static void print_targets(const hb_params_t *p, const progs_t *pg) {
  msb_printf("\n-- targets (heap; from this one run)\n");
  int perf = find_impl(synth, n_synth, "memspace-performance"), none = find_impl(synth, n_synth, "memspace-none");
  int g = find_impl(synth, n_synth, "glibc");
  for (int t = 0; t < 2; t++) { /* 1 and 2 threads */
    int bp = best_peer(C_SCATTER, t);
    series_t *m = perf >= 0 ? res[C_SCATTER][t][perf] : NULL;
    bool known = m && m[M_OPS].n && bp >= 0;
    double mo = known ? med(&m[M_OPS]) : NAN, po = known ? med(&res[C_SCATTER][t][bp][M_OPS]) : NAN;
    verdict(known, mo >= po, "performance preset throughput >= best peer at %d thread%s: %.3f vs %s %.3f Mops/CPU-s (%.2fx)",
            thread_counts[t], t ? "s" : "", mo / 1e6, bp >= 0 ? synth[bp].impl : "-", po / 1e6, ratio(mo, po));
    double mr = known ? med(&m[M_PEAK]) : NAN, pr = known ? med(&res[C_SCATTER][t][bp][M_PEAK]) : NAN;
    verdict(known, mr <= 1.1 * pr, "performance preset peak RSS <= 1.1x that peer's at %d thread%s: %.1f vs %.1f MiB (%.2fx)",
            thread_counts[t], t ? "s" : "", mib(mr), mib(pr), ratio(mr, pr));
  }
  for (int t = 0; t < N_THR; t++) {
    series_t *m = perf >= 0 ? res[C_SCATTER][t][perf] : NULL;
    bool known = m && m[M_OPS].n && g >= 0 && res[C_SCATTER][t][g][M_OPS].n;
    double r = known ? ratio(med(&m[M_OPS]), med(&res[C_SCATTER][t][g][M_OPS])) : NAN;
    verdict(known, r >= 2.5, "performance preset >= 2.5x glibc's throughput at %d thread%s: %.2fx", thread_counts[t],
            t ? "s" : "", r);
  }
  for (int t = 0; t < N_THR; t++) {
    series_t *m = perf >= 0 ? res[C_SCATTER][t][perf] : NULL;
    bool known = m && m[M_IDLE].n;
    double pct = known ? 100.0 * ratio(m[M_IDLE].v[0], m[M_PEAK].v[0]) : NAN;
    verdict(known, pct < 5, "performance preset idle RSS after %d ms < 5%% of peak at %d thread%s: %.1f%% (%.1f of %.1f MiB)",
            p->idle_ms, thread_counts[t], t ? "s" : "", pct, known ? mib(m[M_IDLE].v[0]) : NAN,
            known ? mib(m[M_PEAK].v[0]) : NAN);
  }
  for (int t = 0; t < N_THR; t++) {
    series_t *m = none >= 0 ? res[C_SCATTER][t][none] : NULL;
    bool known = m && m[M_OPS].n && g >= 0 && res[C_SCATTER][t][g][M_OPS].n;
    double r = known ? ratio(med(&m[M_OPS]), med(&res[C_SCATTER][t][g][M_OPS])) : NAN;
    double om = known ? overhead_pct(C_SCATTER, t, none) : NAN, og = known ? overhead_pct(C_SCATTER, t, g) : NAN;
    verdict(known, r > 1.0, "none preset faster than glibc at %d thread%s: %.2fx", thread_counts[t], t ? "s" : "", r);
    verdict(known, om - og <= 5.0, "none preset overhead within 5 points of glibc's at %d thread%s: %.1f%% vs %.1f%% of live bytes",
            thread_counts[t], t ? "s" : "", om, og);
  }
  int rg = find_impl(real, n_real, "glibc"), rm = find_impl(real, n_real, "memspace"), rmi = find_impl(real, n_real, "mimalloc");
  double logsum = 0;
  int nlog = 0;
  for (int pi = 0; pi < N_PROGS; pi++) {
    bool known = pg->have[pi] && rm >= 0 && rg >= 0 && pres[pi][rm][R_WALL].n && pres[pi][rg][R_WALL].n;
    double w = known ? ratio(med(&pres[pi][rm][R_WALL]), med(&pres[pi][rg][R_WALL])) : NAN;
    double r = known ? ratio(med(&pres[pi][rm][R_RSS]), med(&pres[pi][rg][R_RSS])) : NAN;
    verdict(known, w <= 1.02, "%s: memspace wall time <= 1.02x glibc's: %.3fx", prog_names[pi], w);
    verdict(known, r <= 1.15, "%s: memspace max RSS <= 1.15x glibc's: %.2fx", prog_names[pi], r);
    if (pg->have[pi] && rm >= 0 && rmi >= 0 && pres[pi][rm][R_WALL].n && pres[pi][rmi][R_WALL].n) {
      logsum += log(ratio(med(&pres[pi][rm][R_WALL]), med(&pres[pi][rmi][R_WALL])));
      nlog++;
    }
  }
  double gm = nlog ? exp(logsum / nlog) : NAN;
  verdict(nlog > 0, gm <= 1.0, "real programs: memspace on average at least as fast as mimalloc: geometric mean %.3fx "
          "mimalloc's wall time over %d programs", gm, nlog);
  bool known = rm >= 0 && rg >= 0 && gres[G_STEP][rm][G_SECONDS].n && gres[G_STEP][rg][G_SECONDS].n;
  bool reached = known && med(&gres[G_STEP][rm][G_REACHED]) >= (double)p->realloc_max;
  double gr = known ? ratio(med(&gres[G_STEP][rm][G_SECONDS]), med(&gres[G_STEP][rg][G_SECONDS])) : NAN;
  verdict(known, reached && gr <= 2.0, "realloc growth by 1 MiB steps to %zu MiB without copying (reached, <= 2x "
          "glibc's mremap time; copying is quadratic): %s, %.2fx glibc", p->realloc_max >> 20,
          reached ? "reached" : "stopped", gr);
}

/* ---- targets of issue #26 (the steady state, real programs, workloads): met / MISSED with the figure ---------- */

/* geometric mean over the programs of impl k's median wall time over glibc's; *n: programs counted; every
   program of `want` must have figures, else NAN */
static double prog_geomean(int k, int g, const bool want[N_PROGS], int *n) {
  double logsum = 0;
  *n = 0;
  for (int pi = 0; pi < N_PROGS; pi++) {
    if (!want[pi]) continue;
    double r = ratio(med(&pres[pi][k][R_WALL]), med(&pres[pi][g][R_WALL]));
    if (isnan(r) || r <= 0) return NAN;
    logsum += log(r);
    (*n)++;
  }
  return *n ? exp(logsum / *n) : NAN;
}

static void print_targets26(const hb_params_t *p) {
  msb_printf("\n-- targets (steady state; from this one run: medians of the interleaved rounds, [range of the rounds' "
             "ratios])\n");
  int perf = find_impl(synth, n_synth, "memspace-performance");
  for (int t = 0; t < 2; t++) { /* 1 and 2 threads */
    const char *ts = t ? "s" : "";
    for (int m = 0; m < 2; m++) {
      int metric = m ? M_WOPS : M_OPS, bp = best_peer_by(C_LONG, t, metric);
      bool known = perf >= 0 && bp >= 0 && res[C_LONG][t][perf][metric].n;
      double lo = NAN, hi = NAN, r = NAN;
      if (known) {
        r = ratio(med(&res[C_LONG][t][perf][metric]), med(&res[C_LONG][t][bp][metric]));
        ratio_range(&res[C_LONG][t][perf][metric], &res[C_LONG][t][bp][metric], &lo, &hi);
      }
      met(known, r >= 1.1, "seed workload over %d loops, %d thread%s: at least 1.1x the best peer's operations per "
          "%s-second: %.2fx [%.2f-%.2f] %s", p->long_loops, thread_counts[t], ts, m ? "wall" : "CPU", r, lo, hi,
          bp >= 0 ? synth[bp].impl : "-");
    }
    series_t o = perf >= 0 ? overhead_series(C_LONG, t, perf) : (series_t){.n = 0};
    met(o.n > 0, med(&o) <= 6.0, "seed workload over %d loops, %d thread%s: overhead at most 6%% of live bytes: "
        "%.1f%% [%.1f-%.1f]", p->long_loops, thread_counts[t], ts, med(&o), smin(&o), smax(&o));
  }
  int g = find_impl(real, n_real, "glibc"), ms = find_impl(real, n_real, "memspace");
  int mi = find_impl(real, n_real, "mimalloc"), fl = find_impl(real, n_prog_impl, "preload-floor");
  bool want[N_PROGS] = {false};
  for (int pi = 0; pi < N_PROGS; pi++) {
    bool known = prog_have[pi] && ms >= 0 && g >= 0 && pres[pi][ms][R_WALL].n && pres[pi][g][R_WALL].n;
    want[pi] = known;
    const series_t *gw = g >= 0 ? &pres[pi][g][R_WALL] : NULL;
    double lo = NAN, hi = NAN, r = known ? ratio(med(&pres[pi][ms][R_WALL]), med(gw)) : NAN;
    if (known) ratio_range(&pres[pi][ms][R_WALL], gw, &lo, &hi);
    if (!prog_have[pi]) { msb_printf("not measured: %s (not available on this machine)\n", prog_names[pi]); continue; }
    /* beside the ratio of the medians: the median of the runs' ratios, and what an empty preloaded library costs
       against glibc in the same runs (the floor every preloaded allocator starts from) */
    char floor_s[96] = "not installed";
    if (fl >= 0 && real[fl].installed && known && pres[pi][fl][R_WALL].n)
      snprintf(floor_s, sizeof floor_s, "%.3fx, runs' median %.3fx", ratio(med(&pres[pi][fl][R_WALL]), med(gw)),
               paired_median(&pres[pi][fl][R_WALL], gw));
    else if (fl >= 0 && real[fl].installed)
      snprintf(floor_s, sizeof floor_s, "failed");
    met(known, r <= 1.02, "%s: wall time within 1.02x glibc's: %.3fx [%.3f-%.3f], runs' median %.3fx over %d runs "
        "(an empty preloaded library: %s)", prog_names[pi], r, lo, hi,
        known ? paired_median(&pres[pi][ms][R_WALL], gw) : NAN, known ? gw->n : 0, floor_s);
  }
  int n = 0, bp = -1, bn = 0;
  double gm = ms >= 0 && g >= 0 ? prog_geomean(ms, g, want, &n) : NAN, best = NAN;
  for (int k = 0; k < n_real && g >= 0; k++) {
    int kn;
    double v = real[k].peer && real[k].installed ? prog_geomean(k, g, want, &kn) : NAN;
    if (!isnan(v) && (isnan(best) || v < best)) { best = v; bp = k; bn = kn; }
  }
  met(!isnan(gm) && bp >= 0, gm <= best, "real programs: geometric mean of the wall time over glibc's at or below the "
      "best peer's: %.3fx against %s %.3fx (%d programs)", gm, bp >= 0 ? real[bp].impl : "-", best, n ? n : bn);
  for (int pi = 0; pi < N_PROGS; pi++) {
    if (!prog_many[pi] || !prog_have[pi]) continue;
    bool known = ms >= 0 && mi >= 0 && pres[pi][ms][R_WALL].n && pres[pi][mi][R_WALL].n;
    double lo = NAN, hi = NAN, r = known ? ratio(med(&pres[pi][ms][R_WALL]), med(&pres[pi][mi][R_WALL])) : NAN;
    if (known) ratio_range(&pres[pi][ms][R_WALL], &pres[pi][mi][R_WALL], &lo, &hi);
    met(known, r <= 1.0, "%s (many processes): wall time at or below mimalloc's: %.3fx [%.3f-%.3f]", prog_names[pi], r,
        lo, hi);
  }
  int cms = find_impl(real, n_real, "memspace");
  const double *c = cms >= 0 ? cgres[cms] : NULL;
  bool cknown = c && !isnan(c[7]);
  met(cknown, cknown && c[6] > 0 && c[7] < 0.1, "under a memory cgroup at 90%% of its limit, RSS after a burst within 10%% "
      "of live bytes in under 100 ms: %.0f ms, median of %d runs [%.0f-%.0f ms], %d not reached in 2 s (RSS %.1f MiB, "
      "live %.1f MiB)%s", cknown ? c[7] * 1e3 : NAN, cg_runs, cg_lo * 1e3, cg_hi * 1e3, cg_missed,
      cknown ? mib(c[5]) : NAN, cknown ? mib(c[0]) : NAN, cknown && c[6] <= 0 ? ", not reached" : cg_skip[0] ? cg_skip : "");
  static const int fast[] = {W_SH6, W_GSIMPLE}, lean[] = {W_LARSON, W_MSTRESS};
  int wms = find_impl(real, n_real, "memspace"), je = find_impl(real, n_real, "jemalloc");
  for (int ti = 0; ti < n_wl_thr; ti++) {
    for (int i = 0; i < 2; i++) {
      int w = fast[i], bt = wl_best_peer(w, ti, WM_SEC);
      bool known = wms >= 0 && bt >= 0 && wres[w][ti][wms][WM_SEC].n;
      double lo = NAN, hi = NAN, r = known ? ratio(med(&wres[w][ti][wms][WM_SEC]), med(&wres[w][ti][bt][WM_SEC])) : NAN;
      if (known) ratio_range(&wres[w][ti][wms][WM_SEC], &wres[w][ti][bt][WM_SEC], &lo, &hi);
      met(known, r <= 1.05, "%s, %d thread%s: wall time within 1.05x the fastest peer's: %.3fx [%.3f-%.3f] %s",
          wl_names[w], wl_threads(w, ti), wl_threads(w, ti) > 1 ? "s" : "", r, lo, hi, bt >= 0 ? real[bt].impl : "-");
    }
    for (int i = 0; i < 2; i++) {
      int w = lean[i];
      bool known = wms >= 0 && je >= 0 && wres[w][ti][wms][WM_RSS].n && wres[w][ti][je][WM_RSS].n;
      double lo = NAN, hi = NAN, r = known ? ratio(med(&wres[w][ti][wms][WM_RSS]), med(&wres[w][ti][je][WM_RSS])) : NAN;
      if (known) ratio_range(&wres[w][ti][wms][WM_RSS], &wres[w][ti][je][WM_RSS], &lo, &hi);
      met(known, r <= 1.1, "%s, %d thread%s: peak RSS within 1.1x jemalloc's: %.3fx [%.3f-%.3f]", wl_names[w],
          wl_threads(w, ti), wl_threads(w, ti) > 1 ? "s" : "", r, lo, hi);
    }
  }
}

/* 2. real programs: a reference run under glibc, then runs interleaving the allocators (the floor among them),
   the order rotating each run; a short program's extra runs interleave the compared allocators only */
static void run_programs(msb_ctx_t *ctx, const hb_params_t *p, progs_t *pg, double t0) {
  memset(pg, 0, sizeof *pg);
  msb_section(ctx, "programs");
  msb_printf("   real programs (%.0f s so far)\n", msb_now() - t0);
  bool have_dir = setup_progs(pg, p);
  int g = find_impl(real, n_real, "glibc"), most = p->runs;
  for (int pi = 0; pi < N_PROGS; pi++) {
    if (!pg->have[pi]) {
      for (int k = 0; k < n_prog_impl; k++) row_status(ctx, prog_names[pi], real[k].impl, 1, "not_installed");
      continue;
    }
    for (int k = 0; k < n_prog_impl; k++)
      if (!real[k].installed) hb_row_not_installed(ctx, prog_names[pi], real[k].impl, 1);
    if (g >= 0) run_prog(ctx, p, pg, pi, g, -1);
    prog_runs[pi] = runs_for(p, pg->ref_s[pi]);
    if (pg->have[pi] && prog_runs[pi] > most) most = prog_runs[pi];
  }
  if (ctx->cmd) {
    fprintf(ctx->cmd, "heap program runs:");
    for (int pi = 0; pi < N_PROGS; pi++)
      if (pg->have[pi]) fprintf(ctx->cmd, " %s=%d", prog_names[pi], prog_runs[pi]);
    fprintf(ctx->cmd, " (glibc, memspace, preload-floor, mimalloc; the others %d)\n", p->runs);
  }
  int inst[MAX_IMPL], n_inst = installed_impls(real, n_prog_impl, inst);
  for (int run = 0; run < most; run++)
    for (int pi = 0; pi < N_PROGS; pi++) {
      if (!pg->have[pi] || run >= prog_runs[pi]) continue;
      for (int i = 0; i < n_inst; i++) {
        int k = inst[turn(i, run, n_inst)];
        if (!pfail[pi][k] && (run < p->runs || prog_compared(k))) run_prog(ctx, p, pg, pi, k, run);
      }
    }
  if (have_dir) cleanup_progs(pg);
  memcpy(prog_have, pg->have, sizeof prog_have);
}

/* sections 1-3 and the targets (left out with MSB_HEAP_ONLY=workloads) */
static void run_classic(msb_ctx_t *ctx, const hb_params_t *p, double t0) {
  long_threads = p->long_threads;
  /* 1. rptest: round by round, every allocator once per (case, threads), rotating the order */
  for (int k = 0; k < n_synth; k++)
    if (!synth[k].installed)
      for (int c = 0; c < N_CASES; c++)
        for (int t = 0; t < N_THR; t++)
          if (c == C_LONG ? case_has_threads(c, t) && in_long(k) : in_short(p, c, t, k))
            hb_row_not_installed(ctx, case_names[c], synth[k].impl, thread_counts[t]);
  msb_section(ctx, "rptest");
  int inst[MAX_IMPL], n_inst = installed_impls(synth, n_synth, inst);
  for (int r = 0; r < p->rounds; r++) {
    msb_printf("   rptest round %d/%d (%.0f s so far)\n", r + 1, p->rounds, msb_now() - t0);
    for (int c = 0; c < C_LONG; c++)
      for (int t = 0; t < N_THR; t++) { /* the order rotates over the allocators this (case, threads) runs */
        int sub[MAX_IMPL], n_sub = 0;
        for (int i = 0; i < n_inst; i++)
          if (in_short(p, c, t, inst[i])) sub[n_sub++] = inst[i];
        for (int i = 0; i < n_sub; i++) {
          int k = sub[turn(i, r, n_sub)];
          if (!failed[c][t][k]) run_rptest(ctx, p, r, c, t, k);
        }
      }
  }
  /* the long window: round-robin over the allocators (A, B, C..., then again), the order rotating each round */
  msb_section(ctx, "rptest_long");
  double t_long = msb_now();
  int lng[MAX_IMPL], n_lng = 0; /* the order rotates over the allocators the long window runs */
  for (int i = 0; i < n_inst; i++)
    if (in_long(inst[i])) lng[n_lng++] = inst[i];
  for (int r = 0; r < p->long_rounds; r++) {
    msb_printf("   rptest_long round %d/%d (%.0f s so far)\n", r + 1, p->long_rounds, msb_now() - t0);
    for (int t = 0; t < N_THR; t++)
      for (int i = 0; i < n_lng && case_has_threads(C_LONG, t); i++) {
        int k = lng[turn(i, r, n_lng)];
        if (!failed[C_LONG][t][k]) run_rptest(ctx, p, r, C_LONG, t, k);
      }
  }
  long_seconds = msb_now() - t_long;
  print_rptest(p, C_SCATTER);
  print_rptest(p, C_CROSS);
  print_long(p);
  msb_printf("   (the long window took %.0f s)\n", long_seconds);
  print_idle(p);

  /* 2. real programs */
  progs_t pg;
  run_programs(ctx, p, &pg, t0);

  /* 3. realloc growth */
  msb_section(ctx, "realloc");
  msb_printf("   realloc growth (%.0f s so far)\n", msb_now() - t0);
  bool stop[N_GROW][MAX_IMPL];
  memset(stop, 0, sizeof stop);
  for (int gi = 0; gi < N_GROW; gi++)
    for (int k = 0; k < n_real; k++)
      if (!real[k].installed) hb_row_not_installed(ctx, grow_names[gi], real[k].impl, 1);
  for (int run = 0; run < p->realloc_runs; run++)
    for (int gi = 0; gi < N_GROW; gi++)
      for (int i = 0; i < n_real && run < (gi == G_DOUBLE ? p->realloc_double_runs : p->realloc_runs); i++) {
        int k = (i + run) % n_real;
        if (real[k].installed && !stop[gi][k]) run_grow(ctx, p, gi, k, run, &stop[gi][k]);
      }

  msb_section(ctx, NULL);
  print_progs(p, &pg);
  print_grow(p);
  print_targets(p, &pg);
}

/* ---- driver ----------------------------------------------------------------------------------------- */

int msb_bench_heap(msb_ctx_t *ctx) {
  hb_params_t p = params_for(ctx->mode);
  setup_impls();
  memset(res, 0, sizeof res); memset(pres, 0, sizeof pres); memset(gres, 0, sizeof gres);
  memset(failed, 0, sizeof failed); memset(pfail, 0, sizeof pfail);
  memset(wres, 0, sizeof wres); memset(wfail, 0, sizeof wfail); memset(prog_have, 0, sizeof prog_have);
  char prog[PATH_MAX];
  snprintf(prog, sizeof prog, "%s/bench/heap_rptest", msb_binary_dir());
  if (access(prog, X_OK) != 0) {
    msb_printf("heap: %s is missing (build the bench programs: make build)\n", prog);
    return 1;
  }
  if (ctx->cmd)
    fprintf(ctx->cmd, "heap parameters: rounds=%d warmup=%d loops=%d long_rounds=%d long_loops=%d long_threads=%d blocks=%zu ops=%zu "
            "sizes=16..16000(linear falloff) idle_ms=%d short_window=%s runs=%d prog_goal_s=%g prog_runs_max=%d "
            "py_waves=%d py_n=%d np_rounds=%d sql_rows=%d "
            "gcc_funcs=%d shell_cmds=%d git_files=%d http_requests=%d r_n=%d realloc_max=%zu realloc_limit_s=%g "
            "realloc_runs=%d realloc_double_runs=%d cgroup_peers=%d\n",
            p.rounds, p.warmup, p.loops, p.long_rounds, p.long_loops, p.long_threads, p.blocks, p.ops, p.idle_ms,
            p.short_all ? "all" : "targets", p.runs, p.prog_goal_s, p.prog_runs_max, p.py_waves,
            p.py_n, p.np_rounds, p.sql_rows, p.gcc_funcs, p.shell_cmds, p.git_files, p.http_requests, p.r_n,
            p.realloc_max, p.realloc_limit_s, p.realloc_runs, p.realloc_double_runs, p.cgroup_peers);
  double t0 = msb_now();

  /* "workloads": sections 4-5 only, "cgroup": 5, "programs": 2 and its table (diagnosis runs, tests) */
  const char *only = getenv("MSB_HEAP_ONLY");
  if (only && strcmp(only, "programs") == 0) {
    progs_t pg;
    run_programs(ctx, &p, &pg, t0);
    msb_section(ctx, NULL);
    print_progs(&p, &pg);
    return 0;
  }
  if (only && strcmp(only, "cgroup") == 0) {
    msb_section(ctx, "cgroup");
    run_cgroup_section(ctx, &p);
    msb_section(ctx, NULL);
    print_targets26(&p);
    return 0;
  }
  if (!only || strcmp(only, "workloads") != 0) run_classic(ctx, &p, t0);

  /* 4. mimalloc-bench-style workloads: threads 2 (glibc_simple, malloc_large 1); --full and MSB_HEAP_WL_THREADS=1,2: both */
  n_wl_thr = 0;
  const char *thr_env = getenv("MSB_HEAP_WL_THREADS");
  for (const char *c = thr_env ? thr_env : ctx->mode == MSB_FULL ? "1,2" : "2"; c && *c && n_wl_thr < WL_MAX_THR;
       c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL)
    if (atoi(c) > 0) wl_thr[n_wl_thr++] = atoi(c);
  if (getenv("MSB_HEAP_WL_ROUNDS") && atoi(getenv("MSB_HEAP_WL_ROUNDS")) > 0)
    p.wl_rounds = atoi(getenv("MSB_HEAP_WL_ROUNDS")) < MAX_ROUNDS ? atoi(getenv("MSB_HEAP_WL_ROUNDS")) : MAX_ROUNDS;
  if (ctx->cmd) {
    fprintf(ctx->cmd, "heap workloads: rounds=%d threads=%s scales=", p.wl_rounds,
            thr_env ? thr_env : ctx->mode == MSB_FULL ? "1,2" : "2");
    for (int w = 0; w < N_WL; w++) fprintf(ctx->cmd, "%s%s:%g", w ? "," : "", wl_names[w], wl_scale_of(&p, w));
    fprintf(ctx->cmd, "\n");
  }
  msb_printf("   mimalloc-bench-style workloads (%.0f s so far)\n", msb_now() - t0);
  msb_section(ctx, "workloads");
  run_wl_section(ctx, &p);
  print_wl(&p);
  msb_section(ctx, "cgroup");
  run_cgroup_section(ctx, &p);
  msb_section(ctx, NULL);
  print_targets26(&p);
  msb_printf("\n   heap bench: %.0f s\n", msb_now() - t0);
  return 0;
}
