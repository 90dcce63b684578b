/* SPDX-License-Identifier: MIT */
/* spaces.c: `memspace bench spaces` (issue [spaces]): time to allocate and to free per size (16 B .. 4 MiB,
   FIFO and random free order; mean, p50, p99, p99.9, max) for a memspace space and for malloc under glibc,
   glibc-rt, jemalloc, mimalloc and tcmalloc, each in its own process (build/spaces_work_*); a mixed workload
   (log-uniform 16 B .. 256 KiB); the adversarial case (N free 1 KiB holes, one malloc(2 KiB)); page faults and
   system calls in steady state (getrusage; seccomp filter that kills on any system call); the platform floor.
   Every allocator runs 5 times (1 with --quick), the runs interleaved: round r runs every allocator once (the
   order rotating from round to round) before round r+1 starts, so a change of the machine's load reaches every
   allocator alike. The CSV has each run's figures (a `round` row before them); the tables print the median of the
   runs and the targets their range. The seed's RTX64 4.x means are printed beside ours as impl=rtx64-published
   (another machine: indicative only). */
#include "bench.h"
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSIZES 19 /* 16 B .. 4 MiB */
#define MAXRUNS 5
#define NIMPL 6
enum { ST_MEAN, ST_P50, ST_P99, ST_P999, ST_MAX, NST };
static const char *st_metric[NST] = {"mean_ns", "p50_ns", "p99_ns", "p999_ns", "max_ns"};

typedef struct {
  const char *impl;
  bool ok;
  int runs;
  double size[2][NSIZES][2][NST][MAXRUNS]; /* [order fifo/random][size][op malloc/free][stat][run] */
  double mixed[2][NST][MAXRUNS];
  double adv[2][MAXRUNS];                  /* median of 5 reps, max of 5 reps */
  double faults[MAXRUNS];
  double syscalls[MAXRUNS];                /* 0, 1 (at least one: killed), -1 (seccomp unavailable) */
  double floor_[10][MAXRUNS];
  size_t adv_n;
  int locked;
  const char *prog, *preload; /* the workload program, the peer's library (NULL: none) */
  bool rt;
  double seconds;             /* wall time of its runs */
} result_t;

/* RTX64 4.x local memory, published means (seed 000_a1dfe2fe2b84ba62.txt), ns; 0 = not given */
static const double rtx_malloc[NSIZES] = {23.38768, 23.01449, 23.15399, 25.75604, 90.31643, 49.82428, 81.39553,
                                          64.51812, 64.33333, 91.58333, 177.5531, 387.8605, 413.2421, 488.2693,
                                          588.6057, 567.5217, 627.3231, 773.4124, 1151.443};
static const double rtx_free[NSIZES] = {26.80978, 25.91908, 26.64674, 25.95652, 26.72886, 26.00966, 26.68418,
                                        38.94867, 51.17633, 103.4777, 116.6129, 203.5175, 224.3593, 204.7120,
                                        275.7748, 413.9511, 581.1775, 818.0930, 993.7319};

static double med(const double *v, int n) {
  double t[MAXRUNS];
  memcpy(t, v, sizeof(double) * (size_t)n);
  return msb_median(t, (size_t)n);
}

static int size_index(size_t size) {
  int i = 0;
  while (((size_t)16 << i) < size) i++;
  return i;
}

static void parse(result_t *r, int run, char *out) {
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    char order[16], op[16];
    size_t size, n;
    double v[10];
    int locked, fifo;
    if (sscanf(line, "size %15s %zu %15s %lf %lf %lf %lf %lf", order, &size, op, &v[0], &v[1], &v[2], &v[3], &v[4]) == 8) {
      int o = strcmp(order, "random") == 0, f = strcmp(op, "free") == 0, si = size_index(size);
      if (si < NSIZES)
        for (int s = 0; s < NST; s++) r->size[o][si][f][s][run] = v[s];
    } else if (sscanf(line, "mixed %15s %lf %lf %lf %lf %lf", op, &v[0], &v[1], &v[2], &v[3], &v[4]) == 6) {
      int f = strcmp(op, "free") == 0;
      for (int s = 0; s < NST; s++) r->mixed[f][s][run] = v[s];
    } else if (sscanf(line, "adversarial %zu %lf %lf", &n, &v[0], &v[1]) == 3) {
      r->adv_n = n;
      r->adv[0][run] = v[0];
      r->adv[1][run] = v[1];
    } else if (sscanf(line, "steady faults %lf %lf", &v[0], &v[1]) == 2) {
      r->faults[run] = v[0] + v[1];
    } else if (strncmp(line, "steady seccomp_unavailable", 26) == 0) {
      r->syscalls[run] = -1;
    } else if (sscanf(line, "floor %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                      &v[6], &v[7], &v[8], &v[9]) == 10) {
      for (int i = 0; i < 10; i++) r->floor_[i][run] = v[i];
    } else if (sscanf(line, "config locked=%d fifo=%d", &locked, &fifo) == 2) {
      r->locked = locked;
    }
  }
}

static char *child_argv(msb_ctx_t *ctx, const result_t *r, char *path, size_t cap, char **argv) {
  snprintf(path, cap, "%s/%s", msb_binary_dir(), r->prog);
  int a = 0;
  argv[a++] = path;
  if (r->rt) argv[a++] = "--rt";
  if (ctx->mode == MSB_QUICK) argv[a++] = "--quick";
  if (ctx->mode == MSB_FULL) argv[a++] = "--full";
  argv[a++] = "--seccomp";
  argv[a] = NULL;
  return path;
}

static void emit_run(msb_ctx_t *ctx, const result_t *r, int run, int round);

/* one run of one allocator (round `round`, from 1): its figures go to r's slot r->runs and to the CSV */
static void run_once(msb_ctx_t *ctx, result_t *r, int round) {
  char path[4096], *argv[6];
  child_argv(ctx, r, path, sizeof path, argv);
  static char tun[] = "GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4611686018427387904";
  char *env_rt[] = {tun, NULL};
  static char out[1 << 16];
  struct rusage ru;
  double wall, t0 = msb_now();
  int st = msb_spawn(argv, r->preload, r->rt ? env_rt : NULL, out, sizeof out, ctx->mode == MSB_QUICK ? 60 : 120,
                     &wall, &ru);
  r->seconds += msb_now() - t0;
  if (st != 0 && st != 128 + SIGSYS) {
    msb_printf("  %s: run %d failed (status %d)\n", r->impl, round, st);
    return;
  }
  r->syscalls[r->runs] = st == 0 ? 0 : 1;
  parse(r, r->runs, out);
  emit_run(ctx, r, r->runs, round);
  r->runs++;
  r->ok = true;
}

static void note_child(msb_ctx_t *ctx, const result_t *r, int runs) {
  if (!ctx->cmd) return;
  char path[4096], *argv[6];
  child_argv(ctx, r, path, sizeof path, argv);
  fprintf(ctx->cmd, "child: %s%s%s %s%s--seccomp (x%d)\n", r->preload ? "LD_PRELOAD=" : "", r->preload ? r->preload : "",
          r->rt ? " GLIBC_TUNABLES=...mmap_max=0:trim_threshold=2^62" : "", path, r->rt ? " --rt " : " ", runs);
  if (ctx->mode == MSB_QUICK) fprintf(ctx->cmd, "  (with --quick)\n");
  fflush(ctx->cmd);
}

static double M(const result_t *r, int o, int si, int f, int s) { return med(r->size[o][si][f][s], r->runs); }

/* one run's figures, each a row, after a `round` row (docs/contract.md §2) */
static void emit_run(msb_ctx_t *ctx, const result_t *r, int run, int round) {
  static const char *cases[2][2] = {{"malloc_fifo", "free_fifo"}, {"malloc_random", "free_random"}};
  msb_row(ctx, "round", r->impl, 1, 0, "round", round);
  for (int o = 0; o < 2; o++)
    for (int si = 0; si < NSIZES; si++)
      for (int f = 0; f < 2; f++)
        for (int s = 0; s < NST; s++)
          msb_row(ctx, cases[o][f], r->impl, 1, (uint64_t)16 << si, st_metric[s], r->size[o][si][f][s][run]);
  for (int f = 0; f < 2; f++)
    for (int s = 0; s < NST; s++)
      msb_row(ctx, f ? "mixed_free" : "mixed_malloc", r->impl, 1, 0, st_metric[s], r->mixed[f][s][run]);
  msb_row(ctx, "adversarial_malloc_2k", r->impl, 1, 2048, "entries", (double)r->adv_n);
  msb_row(ctx, "adversarial_malloc_2k", r->impl, 1, 2048, "p50_ns", r->adv[0][run]);
  msb_row(ctx, "adversarial_malloc_2k", r->impl, 1, 2048, "max_ns", r->adv[1][run]);
  msb_row(ctx, "steady_state", r->impl, 1, 0, "page_faults", r->faults[run]);
  msb_row(ctx, "steady_state", r->impl, 1, 0, "syscalls", r->syscalls[run]);
  if (strcmp(r->impl, "memspace") == 0) { /* the platform floor, measured in the memspace process */
    static const char *fm[4] = {"mean_ns", "p50_ns", "p999_ns", "max_ns"};
    for (int i = 0; i < 4; i++) msb_row(ctx, "floor_empty_timed_call", "memspace", 1, 0, fm[i], r->floor_[i][run]);
    for (int i = 0; i < 3; i++)
      msb_row(ctx, "floor_touch_past_walked_block", "memspace", 1, 4 << 20, fm[i], r->floor_[4 + i][run]);
    for (int i = 0; i < 3; i++)
      msb_row(ctx, "floor_touch_past_walked_block_nodrain", "memspace", 1, 4 << 20, fm[i], r->floor_[7 + i][run]);
  }
}

/* lowest and highest of a figure over the runs */
static void range_of(const double *v, int n, double *lo, double *hi) {
  *lo = *hi = n ? v[0] : 0;
  for (int i = 1; i < n; i++) { *lo = fmin(*lo, v[i]); *hi = fmax(*hi, v[i]); }
}

static void cell(char *buf, size_t cap, double mean, double p999) {
  if (mean >= 100000) snprintf(buf, cap, "%.0fk/%.0fk", mean / 1000, p999 / 1000);
  else if (p999 >= 100000) snprintf(buf, cap, "%.0f/%.0fk", mean, p999 / 1000);
  else snprintf(buf, cap, "%.0f/%.0f", mean, p999);
}

static void size_table(result_t *res, int nimpl, int o, int f) {
  msb_printf("\n%s, %s free order: mean/p99.9 ns per call (median of runs)%s\n", f ? "free" : "malloc",
             o ? "random" : "FIFO", o == 0 ? "; rtx64 = published 4.x mean, another machine" : "");
  msb_printf("%9s", "size");
  for (int i = 0; i < nimpl; i++)
    if (res[i].ok) msb_printf(" %13s", res[i].impl);
  if (o == 0) msb_printf(" %8s", "rtx64");
  msb_printf("  %s\n", "glibc/ms");
  for (int si = 0; si < NSIZES; si++) {
    size_t size = (size_t)16 << si;
    char sz[16];
    if (size >= (1 << 20)) snprintf(sz, sizeof sz, "%zuM", size >> 20);
    else if (size >= 1024) snprintf(sz, sizeof sz, "%zuK", size >> 10);
    else snprintf(sz, sizeof sz, "%zu", size);
    msb_printf("%9s", sz);
    for (int i = 0; i < nimpl; i++) {
      if (!res[i].ok) continue;
      char c[32];
      cell(c, sizeof c, M(&res[i], o, si, f, ST_MEAN), M(&res[i], o, si, f, ST_P999));
      msb_printf(" %13s", c);
    }
    if (o == 0) {
      double pub = f ? rtx_free[si] : rtx_malloc[si];
      msb_printf(" %8.0f", pub);
    }
    double ms = M(&res[0], o, si, f, ST_MEAN), gl = res[1].ok ? M(&res[1], o, si, f, ST_MEAN) : 0;
    msb_printf("  %7.1fx\n", ms > 0 ? gl / ms : 0);
  }
}

/* a target's figure: the worst cell's median, and that cell's runs */
typedef struct { double v; const double *runs; } worst_t;
static void worse(worst_t *w, const double *runs, int n) {
  double v = med(runs, n);
  if (!w->runs || v > w->v) { w->v = v; w->runs = runs; }
}
static void target(const char *label, double bound, const worst_t *w, int n, int digits) {
  double lo, hi;
  range_of(w->runs, n, &lo, &hi);
  msb_printf("  %s: %s (%.*f [%.*f-%.*f])\n", label, w->v <= bound ? "met" : "MISSED", digits, w->v, digits, lo, digits, hi);
}

int msb_bench_spaces(msb_ctx_t *ctx) {
  int runs = ctx->mode == MSB_QUICK ? 1 : MAXRUNS;
  size_t na;
  const msb_alloc_t *al = msb_allocators(&na);
  static result_t res[NIMPL];
  memset(res, 0, sizeof res);
  const char *names[NIMPL] = {"memspace", "glibc", "glibc-rt", "jemalloc", "mimalloc", "tcmalloc"};
  int have[NIMPL], nh = 0; /* the allocators that run, in the first round's order */
  for (int i = 0; i < NIMPL; i++) {
    result_t *r = &res[i];
    r->impl = names[i];
    r->prog = i == 0 ? "spaces_work_space" : "spaces_work_malloc";
    r->rt = i == 2;
    if (i >= 3) {
      const msb_alloc_t *p = NULL;
      for (size_t j = 0; j < na; j++)
        if (strcmp(al[j].impl, names[i]) == 0) p = &al[j];
      if (!p || !p->installed) {
        msb_row_not_installed(ctx, "malloc_fifo", names[i], 1);
        msb_printf("  %s: not installed\n", names[i]);
        continue;
      }
      r->preload = p->preload;
    }
    have[nh++] = i;
    note_child(ctx, r, runs);
  }
  msb_printf("spaces: %d interleaved round(s), each running every allocator once in its own process pinned to one CPU "
             "(SCHED_FIFO when permitted)\n", runs);
  for (int round = 0; round < runs; round++) {
    char order[256];
    size_t len = 0;
    for (int j = 0; j < nh; j++) { /* the order rotates: each allocator runs first in some round */
      result_t *r = &res[have[(round + j) % nh]];
      run_once(ctx, r, round + 1);
      len += (size_t)snprintf(order + len, sizeof order - len, "%s%s", j ? " " : "", r->impl);
    }
    msb_printf("  round %d of %d done: %s\n", round + 1, runs, order);
    if (ctx->cmd) { fprintf(ctx->cmd, "round %d: %s\n", round + 1, order); fflush(ctx->cmd); }
  }
  for (int j = 0; j < nh; j++) msb_section_line(ctx, res[have[j]].impl, res[have[j]].seconds); /* "section NAME: S s" */
  if (!res[0].ok) { msb_printf("spaces: the memspace workload did not run\n"); return 1; }
  for (int si = 0; si < NSIZES; si++) {
    msb_row(ctx, "malloc", "rtx64-published", 1, (uint64_t)16 << si, "mean_ns", rtx_malloc[si]);
    msb_row(ctx, "free", "rtx64-published", 1, (uint64_t)16 << si, "mean_ns", rtx_free[si]);
  }
  result_t *m = &res[0];
  double fl[10];
  for (int i = 0; i < 10; i++) fl[i] = med(m->floor_[i], m->runs);
  msb_printf("\nplatform floor: empty timed call mean %.1f ns, p99.9 %.0f ns, max %.0f ns (net of the timer's median)\n",
             fl[0], fl[2], fl[3]);
  msb_printf("first touch just past a 4 MiB block just walked: %.0f ns mean, p99.9 %.0f ns (stores drained first);\n"
             "  %.0f ns mean, p99.9 %.0f ns when the walk's stores are still in flight\n", fl[4], fl[6], fl[7], fl[9]);
  msb_printf("space: %s\n", m->locked ? "created at start, pre-faulted and locked" : "created at start, pre-faulted (lock refused)");

  size_table(res, NIMPL, 0, 0);
  size_table(res, NIMPL, 0, 1);
  size_table(res, NIMPL, 1, 0);
  size_table(res, NIMPL, 1, 1);

  msb_printf("\nmixed workload (log-uniform 16 B .. 256 KiB, 1000 live blocks): ns per call\n%10s %8s %8s %8s %8s %8s %8s\n",
             "impl", "m.mean", "m.p99", "m.p99.9", "f.mean", "f.p99", "f.p99.9");
  for (int i = 0; i < NIMPL; i++)
    if (res[i].ok)
      msb_printf("%10s %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f\n", res[i].impl, med(res[i].mixed[0][ST_MEAN], res[i].runs),
                 med(res[i].mixed[0][ST_P99], res[i].runs), med(res[i].mixed[0][ST_P999], res[i].runs),
                 med(res[i].mixed[1][ST_MEAN], res[i].runs), med(res[i].mixed[1][ST_P99], res[i].runs),
                 med(res[i].mixed[1][ST_P999], res[i].runs));
  msb_printf("\nadversarial: free %zu non-adjacent 1 KiB blocks, then one malloc(2 KiB); steady state (20000 mixed ops)\n"
             "%10s %12s %12s %12s %18s\n", m->adv_n, "impl", "p50_ns", "max_ns", "page_faults", "syscalls(seccomp)");
  for (int i = 0; i < NIMPL; i++) {
    if (!res[i].ok) continue;
    double sc = med(res[i].syscalls, res[i].runs);
    msb_printf("%10s %12.0f %12.0f %12.0f %18s\n", res[i].impl, med(res[i].adv[0], res[i].runs), med(res[i].adv[1], res[i].runs),
               med(res[i].faults, res[i].runs), sc < 0 ? "n/a" : sc == 0 ? "0" : ">=1 (killed)");
  }

  /* targets (issue [spaces]) for the memspace space: the worst cell's median, and that cell's range over the runs */
  worst_t wm1 = {0, NULL}, wm64 = {0, NULL}, wm4 = {0, NULL}, wf1 = {0, NULL}, wf = {0, NULL}, wp = {0, NULL},
          mixp = {0, NULL};
  int beat = 0, given = 0;
  for (int o = 0; o < 2; o++)
    for (int si = 0; si < NSIZES; si++) {
      size_t size = (size_t)16 << si;
      const double *am = m->size[o][si][0][ST_MEAN], *fm_ = m->size[o][si][1][ST_MEAN];
      if (size <= 1024) { worse(&wm1, am, m->runs); worse(&wf1, fm_, m->runs); }
      else if (size <= 65536) worse(&wm64, am, m->runs);
      else worse(&wm4, am, m->runs);
      worse(&wf, fm_, m->runs);
      worse(&wp, m->size[o][si][0][ST_P999], m->runs);
      worse(&wp, m->size[o][si][1][ST_P999], m->runs);
      if (o == 0) {
        given += 2;
        beat += (med(am, m->runs) < rtx_malloc[si]) + (med(fm_, m->runs) < rtx_free[si]);
      }
    }
  worse(&mixp, m->mixed[0][ST_P999], m->runs);
  worse(&mixp, m->mixed[1][ST_P999], m->runs);
  double advn = med(m->adv[0], m->runs), faults = med(m->faults, m->runs), sc = med(m->syscalls, m->runs);
#define T(ok) ((ok) ? "met" : "MISSED")
  msb_printf("\ntargets (memspace space, worst over sizes and both orders: median of the runs [their range]):\n");
  target("malloc mean <= 20 ns up to 1 KiB", 20, &wm1, m->runs, 1);
  target("malloc mean <= 50 ns up to 64 KiB", 50, &wm64, m->runs, 1);
  target("malloc mean <= 200 ns up to 4 MiB", 200, &wm4, m->runs, 1);
  target("free mean <= 15 ns up to 1 KiB", 15, &wf1, m->runs, 1);
  target("free mean <= 60 ns at any size", 60, &wf, m->runs, 1);
  target("p99.9 <= 500 ns at every size, FIFO and random", 500, &wp, m->runs, 0);
  target("p99.9 <= 500 ns in the mixed workload", 500, &mixp, m->runs, 0);
  msb_printf("  adversarial malloc <= 2 us with N = %zu: %s (%.0f ns)%s\n", m->adv_n, T(advn <= 2000), advn,
             m->adv_n < 100000 ? " [--quick uses a smaller N]" : "");
  msb_printf("  zero page faults and zero system calls in steady state: %s (%.0f faults, %s)\n",
             T(faults == 0 && sc == 0), faults, sc == 0 ? "no system call" : sc < 0 ? "seccomp unavailable" : "system call made");
  msb_printf("  faster than RTX64 4.x published mean: %d of %d size/op pairs (FIFO)\n", beat, given);
  if (ctx->cmd)
    fprintf(ctx->cmd, "note: %d interleaved run(s) of each allocator, each run's figures in the CSV; timer cost "
            "subtracted; TSC calibrated\n", runs);
  return 0;
}
