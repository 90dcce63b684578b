/* SPDX-License-Identifier: MIT */
/* bench.h: the benchmark framework every part's driver uses (docs/contract.md §2).
   A driver `int msb_bench_PART(msb_ctx_t *ctx)` writes raw rows with msb_row (one measurement a row, no
   filtering), prints readable tables with msb_printf, and runs peers in separate processes with msb_spawn.
   The tool writes PART.csv (header part,case,impl,threads,size_bytes,metric,value), PART.cmd (command, date,
   machine, library versions) and calls bench/plot.py for PART*.png. */
#ifndef MSB_BENCH_H
#define MSB_BENCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

typedef enum { MSB_DEFAULT = 0, MSB_QUICK = 1, MSB_FULL = 2 } msb_mode_t;

typedef struct msb_ctx_s {
  const char *part;      /* "pages", "heap", ... */
  const char *out_dir;   /* where PART.csv etc. go */
  msb_mode_t mode;
  FILE *csv;             /* opened by the tool; use msb_row */
  FILE *cmd;             /* PART.cmd: drivers may append lines (e.g. the exact child commands) */
} msb_ctx_t;

/* one raw measurement row; impl is [a-z0-9-]+, metric ends in its unit (_ns, _s, _bytes, ops_per_s ...) */
void msb_row(msb_ctx_t *ctx, const char *case_name, const char *impl, int threads, uint64_t size_bytes,
             const char *metric, double value);
/* a peer that is not installed: rows with metric=status,value=not_installed (written as text) */
void msb_row_not_installed(msb_ctx_t *ctx, const char *case_name, const char *impl, int threads);
/* where a part's time goes: "section NAME: 12.3 s" lines in PART.cmd. msb_section(ctx, NAME) ends the running
   section (writing its line) and starts NAME; msb_section(ctx, NULL) ends it. msb_section_line writes the line of
   a section timed elsewhere (a workload script's own sections). */
void msb_section(msb_ctx_t *ctx, const char *name);
void msb_section_line(msb_ctx_t *ctx, const char *name, double seconds);
/* readable output (stdout) */
void msb_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* allocators to compare: glibc (no preload), memspace (build/libmemspace.so) and the Debian peers.
   MSB_HIDE_PEERS=a,b (environment) makes the named peers look not installed (tests of not_installed rows). */
typedef struct msb_alloc_s {
  const char *impl;      /* glibc, memspace, jemalloc, mimalloc, tcmalloc, tbbmalloc */
  const char *preload;   /* absolute path for LD_PRELOAD, NULL for glibc */
  bool installed;
  const char *version;   /* package version when known, else "" */
} msb_alloc_t;
const msb_alloc_t *msb_allocators(size_t *count);
bool msb_installed(void);                  /* the tool runs from an installation, not from build/ */
const char *msb_memspace_lib(void);       /* absolute path of build/libmemspace.so */
const char *msb_binary_dir(void);         /* absolute path of build/ */
const char *msb_source_dir(void);
/* `s` quoted for sh -c (in '...', each ' written as '\''), into buf; "''" when it does not fit (a path is
   never passed cut) */
const char *msb_sh_quote(char *buf, size_t cap, const char *s);

/* Runs argv in a child with LD_PRELOAD=preload (NULL none) and extra "NAME=value" variables (NULL-terminated
   list, may be NULL). Captures up to out_cap-1 bytes of stdout into out (may be NULL). Waits at most
   timeout_s (0 = none; the child is killed after). Fills wall seconds and the child's rusage (ru_maxrss in KiB).
   Returns the exit status (0..255), 128+signal when killed by a signal, or -1 when it could not start.
   With a timeout the child runs in its own process group and the whole group is killed when it expires
   (a hung grandchild cannot block the caller, even while it holds the output pipe). */
int msb_spawn(char *const argv[], const char *preload, char *const env_extra[], char *out, size_t out_cap,
              double timeout_s, double *wall_s, struct rusage *usage);

/* In text made of "key value" lines (a workload program's output), finds key's value; false if absent. */
bool msb_kv(const char *text, const char *key, double *value);

double msb_now(void);                     /* monotonic seconds */
void msb_sort(double *v, size_t n);
double msb_percentile(const double *sorted, size_t n, double p); /* p in [0,100] */
double msb_median(double *v, size_t n);   /* sorts v */
uint64_t msb_rss_bytes(void);             /* Rss of this process from /proc/self/smaps_rollup */
uint64_t msb_lazyfree_bytes(void);        /* LazyFree of this process */
bool msb_is_root(void);
#endif
