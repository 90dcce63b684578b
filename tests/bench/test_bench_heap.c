/* `memspace bench heap --quick --out DIR` writes the CSV of docs/contract.md §2: header, seven columns, impl names
   [a-z0-9-]+, metric names ending in their unit, not_installed peers as status rows and never numbers, every
   case and allocator present, and the .cmd file. tbbmalloc is hidden (MSB_HIDE_PEERS) so a not_installed
   peer is always exercised, and in a second, programs-only run the LD_PRELOAD floor (preload-floor). The
   mimalloc-bench-style workloads run in 3 interleaved rounds here (MSB_HEAP_WL_ROUNDS; --quick alone runs 1): every
   run's rows carry its round, every allocator runs each workload once a round, a round ends before the next
   begins and the allocators' order rotates. Checks format and behaviour, never timing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ROWS 8000
#define WL_ROUNDS 3 /* the workloads' rounds in the quick run below */
typedef struct {
  char part[16], case_name[64], impl[64], metric[64], value[64];
  long threads;
  unsigned long long size;
} row_t;

static struct {
  char dir[PATH_MAX];
  int status;
  char header[256];
  row_t rows[MAX_ROWS];
  int n, bad_lines;
  char stdout_text[1 << 18];
} B;

static void copy(char *dst, size_t cap, const char *src) { /* truncating copy */
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

static void slurp(const char *path, char *buf, size_t cap) {
  buf[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = 0;
  fclose(f);
}

static int run_bench(void **state) {
  (void)state;
  snprintf(B.dir, sizeof B.dir, "%s/memspace-test-bench-heap-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(B.dir)) return -1;
  char cmd[PATH_MAX * 3];
  snprintf(cmd, sizeof cmd, "MSB_HIDE_PEERS=tbbmalloc MSB_HEAP_WL_ROUNDS=%d '%s/memspace' bench heap --quick --out '%s' >'%s/stdout.txt' 2>&1",
           WL_ROUNDS, MEMSPACE_BINARY_DIR, B.dir, B.dir);
  int st = system(cmd);
  B.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/stdout.txt", B.dir);
  slurp(path, B.stdout_text, sizeof B.stdout_text);
  snprintf(path, sizeof path, "%s/heap.csv", B.dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0; /* the tests below report it */
  char line[512];
  if (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    copy(B.header, sizeof B.header, line);
  }
  while (fgets(line, sizeof line, f) && B.n < MAX_ROWS) {
    line[strcspn(line, "\r\n")] = 0;
    char *field[8];
    int nf = 0;
    for (char *save = NULL, *tok = strtok_r(line, ",", &save); tok && nf < 8; tok = strtok_r(NULL, ",", &save))
      field[nf++] = tok;
    if (nf != 7) { B.bad_lines++; continue; }
    row_t *r = &B.rows[B.n++];
    copy(r->part, sizeof r->part, field[0]);
    copy(r->case_name, sizeof r->case_name, field[1]);
    copy(r->impl, sizeof r->impl, field[2]);
    char *end;
    r->threads = strtol(field[3], &end, 10);
    if (*end) B.bad_lines++;
    r->size = strtoull(field[4], &end, 10);
    if (*end) B.bad_lines++;
    copy(r->metric, sizeof r->metric, field[5]);
    copy(r->value, sizeof r->value, field[6]);
  }
  fclose(f);
  return 0;
}

static int cleanup(void **state) {
  (void)state;
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", B.dir);
  return system(cmd) == 0 ? 0 : -1;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool numeric(const char *v) {
  char *end;
  strtod(v, &end);
  return end != v && *end == 0;
}

static void exit_status_and_header(void **state) {
  (void)state;
  if (B.status != 0) print_error("bench output:\n%s\n", B.stdout_text);
  assert_int_equal(B.status, 0);
  assert_string_equal(B.header, "part,case,impl,threads,size_bytes,metric,value");
  assert_int_equal(B.bad_lines, 0);
  assert_true(B.n > 100);
}

static void columns_names_units(void **state) {
  (void)state;
  static const char *units[] = {"_ns", "_s", "seconds", "_bytes", "ops_per_s", "ops_per_cpu_s", "gb_per_s"};
  static const char *counts[] = {"ops", "moves", "reallocs", "page_faults", "round"};
  for (int i = 0; i < B.n; i++) {
    const row_t *r = &B.rows[i];
    assert_string_equal(r->part, "heap");
    assert_true(r->impl[0] != 0);
    for (const char *c = r->impl; *c; c++)
      if (!(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '-')) fail_msg("impl '%s' is not [a-z0-9-]+", r->impl);
    assert_true(r->threads >= 1);
    if (strcmp(r->metric, "status") == 0) {
      /* failed, timeout, wrong_output: the allocator crashed or gave a wrong result (docs/bench-heap.md) */
      if (strcmp(r->value, "not_installed") != 0)
        fail_msg("status '%s' for %s under %s at %ld threads: the case did not succeed", r->value, r->case_name,
                 r->impl, r->threads);
      continue;
    }
    if (!numeric(r->value)) fail_msg("value '%s' of %s %s %s is not a number", r->value, r->case_name, r->impl, r->metric);
    bool ok = false;
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) ok |= ends_with(r->metric, units[k]);
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) ok |= strcmp(r->metric, counts[k]) == 0;
    if (!ok) fail_msg("metric '%s' does not end in its unit", r->metric);
  }
}

/* a row with a positive number, or (want_number false) a not_installed status row */
static bool has(const char *case_name, const char *impl, long threads, const char *metric, bool want_number) {
  for (int i = 0; i < B.n; i++) {
    const row_t *r = &B.rows[i];
    if (strcmp(r->case_name, case_name) || strcmp(r->impl, impl) || (threads && r->threads != threads) ||
        strcmp(r->metric, metric))
      continue;
    if (want_number ? numeric(r->value) && strtod(r->value, NULL) > 0 : strcmp(r->value, "not_installed") == 0)
      return true;
  }
  return false;
}

/* a row with a number, 0 included */
static bool has_number(const char *case_name, const char *impl, long threads, const char *metric) {
  for (int i = 0; i < B.n; i++) {
    const row_t *r = &B.rows[i];
    if (!strcmp(r->case_name, case_name) && !strcmp(r->impl, impl) && r->threads == threads &&
        !strcmp(r->metric, metric) && numeric(r->value) && strtod(r->value, NULL) >= 0)
      return true;
  }
  return false;
}

/* a hidden peer has status rows, never a number; every case lists it */
static void not_installed_rows(void **state) {
  (void)state;
  static const char *cases[] = {"rptest", "rptest_cross", "rptest_long", "python_pymalloc", "python_malloc",
                                "python_numpy", "sqlite3", "gcc", "shell", "git", "shell_script", "http_server",
                                "rscript", "realloc_step_1m", "realloc_double", "larson", "xmalloc", "cache_scratch",
                                "cache_thrash", "mstress", "glibc_simple", "glibc_thread", "sh6bench", "sh8bench",
                                "alloc_test", "cxx_map", "malloc_large"};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    if (!has(cases[c], "tbbmalloc", 0, "status", false)) fail_msg("no not_installed row for tbbmalloc in %s", cases[c]);
  for (int i = 0; i < B.n; i++) {
    const row_t *r = &B.rows[i];
    if (strcmp(r->impl, "tbbmalloc") != 0) continue;
    assert_string_equal(r->metric, "status");
    assert_string_equal(r->value, "not_installed");
    assert_int_equal(r->size, 0);
  }
}

/* glibc and the four presets have numbers at 1, 2 and 4 threads; the real programs and realloc cases too */
static void cases_and_allocators_present(void **state) {
  (void)state;
  static const char *impls[] = {"glibc", "memspace-unlimited", "memspace-performance", "memspace-size", "memspace-none"};
  static const char *metrics[] = {"ops_per_cpu_s", "ops_per_s", "peak_rss_bytes", "peak_live_bytes",
                                  "rss_after_free_bytes", "idle_rss_bytes", "cpu_s"};
  static const long thr[] = {1, 2, 4};
  for (size_t i = 0; i < sizeof impls / sizeof impls[0]; i++)
    for (size_t t = 0; t < 3; t++) {
      for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++)
        if (!has("rptest", impls[i], thr[t], metrics[m], true))
          fail_msg("no rptest %s for %s at %ld threads", metrics[m], impls[i], thr[t]);
      if (thr[t] > 1 && !has("rptest_cross", impls[i], thr[t], "ops_per_cpu_s", true))
        fail_msg("no rptest_cross for %s at %ld threads", impls[i], thr[t]);
    }
  /* the long window: the default preset and glibc at 1 and 2 threads (4 only with --full), per CPU-second and per
     wall-second, with the figures of the overhead; the other presets are left out of it */
  static const char *long_impls[] = {"glibc", "memspace-performance"};
  static const char *long_metrics[] = {"ops_per_cpu_s", "ops_per_s", "peak_rss_bytes", "peak_live_bytes",
                                       "overhead_bytes", "wall_s", "page_faults"};
  for (size_t i = 0; i < 2; i++)
    for (size_t t = 0; t < 2; t++)
      for (size_t m = 0; m < sizeof long_metrics / sizeof long_metrics[0]; m++)
        if (!has("rptest_long", long_impls[i], thr[t], long_metrics[m], true))
          fail_msg("no rptest_long %s for %s at %ld threads", long_metrics[m], long_impls[i], thr[t]);
  /* the CPU time split into user and system time (either may round to 0 in a quick run's few milliseconds) */
  for (size_t i = 0; i < 2; i++)
    for (size_t t = 0; t < 2; t++)
      for (int m = 0; m < 2; m++)
        if (!has_number("rptest_long", long_impls[i], thr[t], m ? "sys_s" : "user_s"))
          fail_msg("no rptest_long %s for %s at %ld threads", m ? "sys_s" : "user_s", long_impls[i], thr[t]);
  assert_false(has("rptest_long", "memspace-size", 0, "ops_per_cpu_s", false));
  assert_false(has("rptest_long", "glibc", 4, "ops_per_cpu_s", true));
  /* a peer: numbers or not_installed, never neither */
  static const char *peers[] = {"jemalloc", "mimalloc", "tcmalloc"};
  for (size_t i = 0; i < sizeof peers / sizeof peers[0]; i++)
    assert_true(has("rptest", peers[i], 1, "ops_per_cpu_s", true) || has("rptest", peers[i], 1, "status", false));
  assert_true(has("realloc_step_1m", "glibc", 1, "seconds", true));
  assert_true(has("realloc_double", "memspace", 1, "max_completed_bytes", true));
  /* every real program: glibc's wall time or a status (Rscript missing: not_installed, never a number) */
  static const char *progs[] = {"python_pymalloc", "python_malloc", "python_numpy", "sqlite3", "gcc", "shell", "git",
                                "shell_script", "http_server", "rscript"};
  for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++)
    if (!(has(progs[i], "glibc", 1, "wall_s", true) || has(progs[i], "glibc", 1, "status", false)))
      fail_msg("no row for %s under glibc", progs[i]);
  /* the LD_PRELOAD floor (an empty preloaded library, build/bench/libheap_floor.so) ran every program glibc ran */
  /* (its rows: case PROGRAM/preload-floor, impl glibc, whose malloc serves it: docs/contract.md §2) */
  for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
    char floor_case[64];
    snprintf(floor_case, sizeof floor_case, "%s/preload-floor", progs[i]);
    if (has(progs[i], "glibc", 1, "wall_s", true) &&
        !(has(floor_case, "glibc", 1, "wall_s", true) && has(floor_case, "glibc", 1, "peak_rss_bytes", true)))
      fail_msg("no preload-floor rows for %s", progs[i]);
  }
  assert_false(has("rptest_long/preload-floor", "glibc", 0, "wall_s", true)); /* the real programs only */
  assert_false(has("larson/preload-floor", "glibc", 0, "seconds", true));
  for (int i = 0; i < B.n; i++)
    if (!strcmp(B.rows[i].impl, "preload-floor")) fail_msg("impl preload-floor (a configuration) in %s", B.rows[i].case_name);
  /* section 4: every mimalloc-bench-style workload ran under glibc and memspace (glibc_simple, malloc_large at 1
     thread) */
  static const char *wl[] = {"larson", "xmalloc", "cache_scratch", "cache_thrash", "mstress", "glibc_simple",
                             "glibc_thread", "sh6bench", "sh8bench", "alloc_test", "cxx_map", "malloc_large"};
  for (size_t i = 0; i < sizeof wl / sizeof wl[0]; i++)
    for (int k = 0; k < 2; k++) {
      const char *impl = k ? "memspace" : "glibc";
      long thr = strcmp(wl[i], "glibc_simple") == 0 || strcmp(wl[i], "malloc_large") == 0 ? 1 : 2;
      if (!has(wl[i], impl, thr, "seconds", true) || !has(wl[i], impl, thr, "peak_rss_bytes", true))
        fail_msg("no %s rows for %s at %ld threads", wl[i], impl, thr);
    }
}

static void cmd_file_and_tables(void **state) {
  (void)state;
  char path[PATH_MAX + 16], text[1 << 18];
  snprintf(path, sizeof path, "%s/heap.cmd", B.dir);
  slurp(path, text, sizeof text);
  assert_non_null(strstr(text, "command:"));
  assert_non_null(strstr(text, "machine:"));
  assert_non_null(strstr(text, "heap parameters:"));
  assert_non_null(strstr(text, "heap_rptest"));
  /* where the time went: a "section NAME: S s" line per section (bench/common.c msb_section) */
  static const char *sections[] = {"rptest", "rptest_long", "programs", "realloc", "workloads", "cgroup"};
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
    char want[64];
    snprintf(want, sizeof want, "\nsection %s: ", sections[i]);
    if (!strstr(text, want)) fail_msg("heap.cmd has no 'section %s: S s' line", sections[i]);
  }
  assert_non_null(strstr(B.stdout_text, "x best-peer"));
  assert_non_null(strstr(B.stdout_text, "-- targets"));
  assert_non_null(strstr(B.stdout_text, "-- mimalloc-bench-style workloads"));
  assert_non_null(strstr(text, "heap_larson"));
  assert_true(strstr(B.stdout_text, "PASS ") || strstr(B.stdout_text, "MISS "));
  /* issue #26: the long window's table and its target lines, each met or MISSED with its figure */
  assert_non_null(strstr(B.stdout_text, "-- rptest_long"));
  assert_non_null(strstr(B.stdout_text, "where the CPU time went: per million operations"));
  const char *t26 = strstr(B.stdout_text, "-- targets (steady state");
  assert_non_null(t26);
  static const char *targets[] = {"operations per CPU-second", "operations per wall-second",
                                  "overhead at most 6% of live bytes",
                                  "within 1.02x glibc's", "at or below the best peer's", "at or below mimalloc's",
                                  "within 1.05x the fastest peer's", "within 1.1x jemalloc's"};
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
    const char *at = strstr(t26, targets[i]); /* in issue #26's lines, printed last */
    if (!at) fail_msg("no target line '%s'", targets[i]);
    const char *line = at;
    while (line > t26 && line[-1] != '\n') line--;
    if (strncmp(line, "met: ", 5) && strncmp(line, "MISSED: ", 8) && strncmp(line, "not measured: ", 14))
      fail_msg("target line without met/MISSED: %.80s", line);
  }
}

/* section 4 in rounds: each run of a workload writes `round` (1, 2...) beside its figures; every allocator that ran
   a workload ran it once in each round, in round order; the rounds interleave the allocators (a round's runs all
   come before the next round's, the whole section round by round) and their order turns (the allocator that goes
   first changes from one round to the next, and no allocator follows the same one in rounds 1 and 2); the hidden peer has no round rows */
static void workload_rounds(void **state) {
  (void)state;
  static const char *wl[] = {"larson", "xmalloc", "cache_scratch", "cache_thrash", "mstress", "glibc_simple",
                             "glibc_thread", "sh6bench", "sh8bench", "alloc_test", "cxx_map", "malloc_large"};
  static const char *impls[] = {"glibc", "memspace", "jemalloc", "mimalloc", "tcmalloc", "tbbmalloc"};
  enum { N_IMPLS = sizeof impls / sizeof impls[0] };
  bool is_wl[MAX_ROWS] = {false};
  long last_round = 0;
  for (size_t w = 0; w < sizeof wl / sizeof wl[0]; w++) {
    /* one pass over the rows of the workload: each allocator's rounds in order and its seconds rows, the allocator
       of each round's first run, and the order of rounds 1 and 2 */
    long next[N_IMPLS];
    int seconds[N_IMPLS] = {0}, rounds[N_IMPLS] = {0};
    for (size_t k = 0; k < N_IMPLS; k++) next[k] = 1;
    char first[WL_ROUNDS + 1][64] = {{0}};
    char order[2][N_IMPLS][64];
    int n_order[2] = {0, 0};
    for (int i = 0; i < B.n; i++) {
      const row_t *r = &B.rows[i];
      if (strcmp(r->case_name, wl[w])) continue;
      size_t k = 0;
      while (k < N_IMPLS && strcmp(r->impl, impls[k])) k++;
      is_wl[i] = k < N_IMPLS;
      if (k < N_IMPLS && !strcmp(r->metric, "seconds")) seconds[k]++;
      if (strcmp(r->metric, "round")) continue;
      long v = strtol(r->value, NULL, 10);
      if (k < N_IMPLS) {
        if (v != next[k]) fail_msg("%s under %s: round %ld where round %ld comes next", wl[w], impls[k], v, next[k]);
        next[k]++;
        rounds[k]++;
      }
      if (v >= 1 && v <= WL_ROUNDS && !first[v][0]) copy(first[v], sizeof first[v], r->impl);
      if ((v == 1 || v == 2) && n_order[v - 1] < N_IMPLS) copy(order[v - 1][n_order[v - 1]++], sizeof order[0][0], r->impl);
    }
    int ran = 0;
    for (size_t k = 0; k < N_IMPLS; k++) {
      if (!strcmp(impls[k], "tbbmalloc")) {
        if (rounds[k]) fail_msg("the hidden tbbmalloc has round rows for %s", wl[w]);
        continue;
      }
      if (!rounds[k] && !has(wl[w], impls[k], 0, "status", false)) fail_msg("%s under %s: no rounds", wl[w], impls[k]);
      if (!rounds[k]) continue;
      ran++;
      if (rounds[k] != WL_ROUNDS) fail_msg("%s under %s: %d rounds, not %d", wl[w], impls[k], rounds[k], WL_ROUNDS);
      if (seconds[k] != rounds[k])
        fail_msg("%s under %s: %d seconds rows for %d rounds", wl[w], impls[k], seconds[k], rounds[k]);
    }
    assert_true(ran >= 2); /* glibc and memspace at least */
    for (int r = 1; r < WL_ROUNDS; r++) {
      if (!first[r][0] || !first[r + 1][0]) fail_msg("%s: no first allocator in round %d or %d", wl[w], r, r + 1);
      if (!strcmp(first[r], first[r + 1]))
        fail_msg("%s: %s goes first in rounds %d and %d: the order does not rotate", wl[w], first[r], r, r + 1);
    }
    /* the direction turns: an allocator that follows another in round 1 does not follow it in round 2 */
    for (int a = 1; a < n_order[0]; a++)
      for (int b = 1; b < n_order[1]; b++)
        if (!strcmp(order[0][a], order[1][b]) && !strcmp(order[0][a - 1], order[1][b - 1]))
          fail_msg("%s: %s follows %s in rounds 1 and 2", wl[w], order[0][a], order[0][a - 1]);
  }
  /* round by round over the whole section: the round rows of all workloads in file order never go back */
  for (int i = 0; i < B.n; i++) {
    if (!is_wl[i] || strcmp(B.rows[i].metric, "round")) continue;
    long v = strtol(B.rows[i].value, NULL, 10);
    if (v < last_round) fail_msg("line %d: round %ld after round %ld: the rounds do not interleave", i + 2, v, last_round);
    last_round = v;
  }
  assert_int_equal(last_round, WL_ROUNDS);
  char want[96];
  snprintf(want, sizeof want, "median [min-max] of %d interleaved rounds", WL_ROUNDS);
  assert_non_null(strstr(B.stdout_text, want));
  assert_non_null(strstr(B.stdout_text, "larson           2 tbbmalloc  not installed"));
}

/* the floor's library missing (hidden here, as an installed tool without it would be): status rows, never a
   number, and "not installed" in the table. MSB_HEAP_ONLY=programs runs the real programs alone, the peers hidden
   to keep it short */
static void floor_not_installed(void **state) {
  (void)state;
  char dir[PATH_MAX + 8], cmd[PATH_MAX * 4], path[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s/floor", B.dir);
  snprintf(cmd, sizeof cmd, "MSB_HEAP_ONLY=programs MSB_HIDE_PEERS=jemalloc,preload-floor,mimalloc,tcmalloc,tbbmalloc "
           "'%s/memspace' bench heap --quick --out '%s' >'%s.txt' 2>&1", MEMSPACE_BINARY_DIR, dir, dir);
  int st = system(cmd);
  static char text[1 << 18];
  snprintf(path, sizeof path, "%s.txt", dir);
  slurp(path, text, sizeof text);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("bench heap (programs) failed:\n%s", text);
  snprintf(path, sizeof path, "%s/heap.csv", dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[512];
  int status_rows = 0, glibc_rows = 0;
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, ",glibc,1,0,wall_s,")) glibc_rows++;
    if (!strstr(line, "/preload-floor,")) continue;
    line[strcspn(line, "\r\n")] = 0;
    if (!ends_with(line, "/preload-floor,glibc,1,0,status,not_installed"))
      fail_msg("the hidden floor has a row that is not a not_installed status: %s", line);
    status_rows++;
  }
  fclose(f);
  assert_true(glibc_rows > 0);
  assert_int_equal(status_rows, 10); /* one a program */
  assert_non_null(strstr(text, "preload-floor not installed"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(exit_status_and_header),
      cmocka_unit_test(columns_names_units),
      cmocka_unit_test(not_installed_rows),
      cmocka_unit_test(cases_and_allocators_present),
      cmocka_unit_test(cmd_file_and_tables),
      cmocka_unit_test(workload_rounds),
      cmocka_unit_test(floor_not_installed),
  };
  return cmocka_run_group_tests(tests, run_bench, cleanup);
}
