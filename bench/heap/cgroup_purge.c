/* SPDX-License-Identifier: MIT */
/* cgroup_purge.c: how fast an allocator gives a burst back when its memory cgroup nears its limit (issue #26:
   "under a memory cgroup at 90% of its limit, RSS after a burst falls to within 10% of live bytes in under
   100 ms"). Needs root: it makes a child of its own memory cgroup (v1 or v2), named memspace-purge-PID, and
   removes it at the end; without one it prints "MS_SKIP refused: <reason>" and exits 77.
   A workload child in the cgroup (the allocator under test preloaded, as for every bench program) first runs a
   thread that ends (a program that has run a while: memspace's maintenance thread runs), then holds --live MiB
   (default 64) in blocks of 64-4096 B (powers of two) written by the main thread; a second thread, which stays
   alive and idle afterwards as a pool thread does, allocates a burst of --burst MiB (default 192; blocks of
   16-16,000 B and a fifth of the bytes in 256 KiB blocks, every page written) and frees it all. The main thread
   then reads its RSS every millisecond until it is within 10% of the live bytes, or --wait seconds (default 2).
   Modes:
     (default)   the bench: a first run without a limit measures the cgroup's usage at the burst's peak; the limit
                 is set so that this usage is 90% of it, and a second run measures. Prints "metric value" lines:
                 live_bytes, burst_bytes, limit_bytes, usage_peak_bytes (second run), rss_peak_bytes (before the
                 frees), rss_freed_bytes (first reading after them), rss_end_bytes, reached (1: RSS came within
                 10% of live), purge_s (seconds from the last free to that reading, or to the end of the wait),
                 rss_live_bytes (before the burst), target_bytes (the RSS "reached" compares with).
     --test      the behaviour test (tests/heap/CMakeLists.txt; memspace preloaded with a long purge delay): one
                 run without a limit; the burst thread ends after its frees; then the child sets its cgroup's
                 limit 1/16 above its usage (a forced pressure signal) and reads its RSS every 10 ms for up to
                 --wait seconds (default 60). Exit 0 when RSS came within 10% of live, 1 otherwise; where the live
                 set alone took more before the burst (rss_live_bytes: the secure build's canary moves each
                 power-of-two block up a class and a guard page ends each span), the target is that RSS plus
                 1/16 of live instead (target_bytes). Exit 1 too when RSS could not be read or the burst never
                 took it past the target.
     --idle      (with --test) the burst thread stays alive and idle after its frees, as in the bench: its empty
                 spans come back only through what the pressure takes from another thread. The cgroup gets a
                 limit before the burst too, so that the burst's peak is over half of it, as a container's is;
                 at its peak the burst thread waits until memspace's statistics say memory is tight (docs/stats.md,
                 `memory`; memspace then sets emptied spans aside where a purge can take them) before its frees.
     --roomy     (with --test --idle) the limit is the cgroup's from the child's start, four times the live and
                 burst bytes: memory is never tight (the burst's peak under a third of it) and the burst thread
                 frees without waiting; only knowing that a limit exists (docs/heap.md, memory pressure) makes
                 memspace set the emptied spans aside where the pressure signal's purge can take them.
     --single    (with --test) a single-threaded program (no maintenance thread: memspace looks at the cgroup from
                 its allocation slow paths): the burst is allocated and freed by the main thread, which keeps
                 working after the limit is set (every 10 ms it allocates and frees 1 MiB in 8 KiB blocks).
     --cleanup   removes memspace-purge-* cgroups a killed run left (the CTest cleanup fixture); a live run's
                 cgroup (its PID in the name) stays. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PREFIX "memspace-purge-"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rss_bytes(void) {
  unsigned long long pages = 0, res = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f && fscanf(f, "%llu %llu", &pages, &res) != 2) res = 0;
  if (f) fclose(f);
  return res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static bool write_file(const char *dir, const char *name, unsigned long long v) {
  char path[4200], val[32];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  int len = snprintf(val, sizeof val, "%llu", v);
  bool ok = write(fd, val, (size_t)len) == len;
  int e = errno;
  close(fd);
  errno = e;
  return ok;
}

static unsigned long long read_num(const char *dir, const char *name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  unsigned long long v = 0;
  if (f) {
    if (fscanf(f, "%llu", &v) != 1) v = 0;
    fclose(f);
  }
  return v;
}

/* this process's memory cgroup directory and version (1, 2), or 0 and the reason in dir */
static int own_cgroup(char *dir, size_t cap) {
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (!f) { snprintf(dir, cap, "/proc/self/cgroup: %s", strerror(errno)); return 0; }
  char line[4096], v1[4096] = "", v2[4096] = "";
  bool has_v1 = false, has_v2 = false;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = 0;
    if (!strcmp(line, "0:") || (line[0] == '0' && c1 == line + 1 && c2 == c1 + 1)) { snprintf(v2, sizeof v2, "%s", c2 + 1); has_v2 = true; }
    for (char *save = NULL, *t = strtok_r(c1 + 1, ",", &save); t; t = strtok_r(NULL, ",", &save))
      if (!strcmp(t, "memory")) { snprintf(v1, sizeof v1, "%s", c2 + 1); has_v1 = true; }
  }
  fclose(f);
  struct stat st;
  if (has_v1 && stat("/sys/fs/cgroup/memory", &st) == 0) {
    snprintf(dir, cap, "/sys/fs/cgroup/memory%s", v1);
    return 1;
  }
  if (has_v2) {
    const char *root = stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
    char ctl[256] = "", path[4200];
    snprintf(path, sizeof path, "%s/cgroup.controllers", root);
    FILE *c = fopen(path, "r");
    if (c) { if (!fgets(ctl, sizeof ctl, c)) ctl[0] = 0; fclose(c); }
    if (strstr(ctl, "memory")) {
      snprintf(dir, cap, "%s%s", root, v2);
      return 2;
    }
    snprintf(dir, cap, "cgroup v2 without the memory controller");
    return 0;
  }
  snprintf(dir, cap, "no memory cgroup controller mounted");
  return 0;
}

/* kills what is left in the cgroup and removes it */
static void cgroup_remove(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/cgroup.procs", dir);
  for (int tries = 0; tries < 100; tries++) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1) kill((pid_t)pid, SIGKILL);
    fclose(f);
    if (rmdir(dir) == 0 || errno == ENOENT) return;
    usleep(50000);
  }
}

static int cleanup(void) {
  char base[4096];
  int v = own_cgroup(base, sizeof base);
  DIR *d = v ? opendir(base) : NULL;
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) != 0) continue;
    long pid = atol(e->d_name + strlen(PREFIX)); /* a run still alive keeps its cgroup (a bench beside the tests) */
    if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) continue;
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
    cgroup_remove(dir);
    n++;
  }
  closedir(d);
  printf("cleanup: %d cgroups removed\n", n);
  return 0;
}

/* ---- the workload child ---- */

typedef struct {
  size_t burst;
  uint64_t rss_peak;
  double t_freed;
  const char *cg;
  int version;
  unsigned long long usage_peak;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int phase; /* 1: burst freed; 2: measurement over (the worker may end) */
  bool exit_after; /* the worker ends after its frees instead of staying idle */
  bool wait_tight; /* (--test --idle) at the peak, wait until memspace's statistics say memory is tight */
} work_t;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void) {
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1DULL;
}

static void touch(char *p, size_t n) {
  for (size_t i = 0; i < n; i += 4096) p[i] = (char)i;
  p[n - 1] = 1;
}

static const char *usage_file(int version) { return version == 1 ? "memory.usage_in_bytes" : "memory.current"; }

/* memspace's statistics text (ms_stats_print, found at run time: the program runs under any allocator) */
typedef void stats_out_fn(const char *text, void *arg);
typedef void stats_print_fn(stats_out_fn *out, void *arg, unsigned flags);
static char stats_text[1 << 16];
static size_t stats_len;
static void stats_collect(const char *text, void *arg) {
  (void)arg;
  size_t n = strlen(text);
  if (stats_len + n < sizeof stats_text) memcpy(stats_text + stats_len, text, n), stats_len += n;
  stats_text[stats_len] = 0;
}
/* waits (up to 60 s) until the `memory` line says tight or pressure; false when it never did */
static bool wait_memory_tight(void) {
  stats_print_fn *print = (stats_print_fn *)dlsym(RTLD_DEFAULT, "ms_stats_print");
  if (!print) return true; /* not memspace: nothing to wait for */
  for (double t_end = now_s() + 60; now_s() < t_end; usleep(2000)) {
    stats_len = 0;
    print(stats_collect, NULL, 0);
    const char *m = strstr(stats_text, "\n  memory "), *end = m ? strchr(m + 1, '\n') : NULL;
    if (!m || !end) continue;
    char line[128];
    snprintf(line, sizeof line, "%.*s", (int)(end - m), m);
    if (strstr(line, "tight") || strstr(line, "pressure"))
      return true;
  }
  return false;
}

static void *burst_thread(void *arg) {
  work_t *w = arg;
  size_t cap = w->burst / 16 + 1024, n = 0, bytes = 0, large = 0;
  void **blocks = malloc(cap * sizeof *blocks);
  if (!blocks) exit(2);
  while (bytes < w->burst && n < cap) {
    size_t sz = large < bytes / 5 ? 256 * 1024 : 16 + (size_t)(next_rand() % 15985); /* a fifth of the bytes large */
    char *p = malloc(sz);
    if (!p) { fprintf(stderr, "burst: out of memory\n"); exit(2); }
    touch(p, sz);
    blocks[n++] = p;
    bytes += sz;
    if (sz == 256 * 1024) large += sz;
  }
  w->rss_peak = rss_bytes();
  w->usage_peak = read_num(w->cg, usage_file(w->version));
  if (w->wait_tight && !wait_memory_tight()) { fprintf(stderr, "burst: memory never tight in 60 s\n"); exit(1); }
  for (size_t i = 0; i < n; i++) free(blocks[i]);
  free(blocks);
  pthread_mutex_lock(&w->mu);
  w->t_freed = now_s();
  w->phase = 1;
  pthread_cond_broadcast(&w->cv);
  while (w->phase < 2 && !w->exit_after) pthread_cond_wait(&w->cv, &w->mu); /* a pool thread: alive, idle */
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static void *warm_up(void *arg) {
  free(malloc(100));
  return arg;
}

/* --single's work between two readings: a program that goes on allocating (1 MiB in 8 KiB blocks, freed) */
static void keep_working(void) {
  static void *b[128];
  for (int i = 0; i < 128; i++) {
    b[i] = malloc(8192);
    if (!b[i]) exit(2);
    touch(b[i], 8192);
  }
  for (int i = 0; i < 128; i++) free(b[i]);
}

static int child(const char *cg, int version, size_t live, size_t burst, double wait_s, bool test, bool single,
                 bool idle, bool roomy) {
  /* a program that has run a while: a thread came and went (memspace's maintenance thread runs from then on) */
  pthread_t th = 0;
  if (!single && (pthread_create(&th, NULL, warm_up, NULL) != 0 || pthread_join(th, NULL) != 0)) return 2;
  /* the live set: blocks of 64-4096 B (powers of two: no class rounding in the way), written */
  size_t n = 0, cap = live / 64 + 16, bytes = 0;
  void **blocks = malloc(cap * sizeof *blocks);
  if (!blocks) return 2;
  while (bytes < live && n < cap) {
    size_t sz = (size_t)64 << (next_rand() % 7);
    char *p = malloc(sz);
    if (!p) return 2;
    touch(p, sz);
    blocks[n++] = p;
    bytes += sz;
  }
  uint64_t rss_live = rss_bytes(), target = bytes + bytes / 10;
  if (test && rss_live + bytes / 16 > target) target = rss_live + bytes / 16;
  work_t w = {.burst = burst, .cg = cg, .version = version, .mu = PTHREAD_MUTEX_INITIALIZER,
              .cv = PTHREAD_COND_INITIALIZER, .exit_after = test && !idle, .wait_tight = idle && !roomy};
  if (idle && !roomy) { /* the burst's peak over half the limit (memory tight), far from it (no pressure) */
    unsigned long long u = read_num(cg, usage_file(version)), lim = ((u + burst) * 8 / 5 + 4095) & ~4095ull;
    if (!write_file(cg, version == 1 ? "memory.limit_in_bytes" : "memory.max", lim)) {
      printf("MS_SKIP refused: setting the memory limit of %s: %s\n", cg, strerror(errno));
      return 77;
    }
  }
  if (single) burst_thread(&w); /* (exit_after: returns after its frees) */
  else if (pthread_create(&th, NULL, burst_thread, &w) != 0) return 2;
  pthread_mutex_lock(&w.mu);
  while (w.phase < 1) pthread_cond_wait(&w.cv, &w.mu);
  pthread_mutex_unlock(&w.mu);
  uint64_t rss_freed = rss_bytes(), rss = rss_freed;
  if (test && !idle && th && pthread_join(th, NULL) == 0) th = 0; /* its heap left to the caches at its exit */
  if (test) { /* the forced pressure signal: the limit 1/16 above the usage */
    unsigned long long u = read_num(cg, usage_file(version)), lim = (u + u / 16 + 4095) & ~4095ull;
    if (!write_file(cg, version == 1 ? "memory.limit_in_bytes" : "memory.max", lim)) {
      printf("MS_SKIP refused: setting the memory limit of %s: %s\n", cg, strerror(errno));
      return 77;
    }
    printf("limit_bytes %llu\nusage_bytes %llu\n", lim, u);
  }
  double t_end = w.t_freed + wait_s, t = now_s();
  while (rss > target && t < t_end) {
    usleep(test ? 10000 : 1000);
    if (single) keep_working();
    rss = rss_bytes();
    t = now_s();
  }
  printf("live_bytes %zu\nburst_bytes %zu\nusage_peak_bytes %llu\nrss_peak_bytes %llu\nrss_freed_bytes %llu\n"
         "rss_end_bytes %llu\nreached %d\npurge_s %.4f\nrss_live_bytes %llu\ntarget_bytes %llu\n", bytes, burst,
         w.usage_peak, (unsigned long long)w.rss_peak, (unsigned long long)rss_freed, (unsigned long long)rss,
         rss <= target, (t - w.t_freed), (unsigned long long)rss_live, (unsigned long long)target);
  fflush(stdout);
  pthread_mutex_lock(&w.mu);
  w.phase = 2;
  pthread_cond_broadcast(&w.cv);
  pthread_mutex_unlock(&w.mu);
  if (th) pthread_join(th, NULL);
  for (size_t i = 0; i < n; i++) free(blocks[i]);
  free(blocks);
  /* (the test proves nothing unless the live set was seen resident and the burst took RSS past the target) */
  if (test && (rss_live < bytes || w.rss_peak <= target)) {
    printf("FAIL: the resident set was not seen (/proc/self/statm unread) or the burst never passed the target\n");
    return 1;
  }
  return rss <= target ? 0 : 1;
}

/* runs this program as the workload child inside cg; its output goes to ours, or into out when not NULL */
static int run_child(const char *self, const char *cg, int version, char *const args[], char *out, size_t cap) {
  int fds[2];
  if (out && pipe(fds) != 0) return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (!write_file(cg, "cgroup.procs", (unsigned long long)getpid())) {
      printf("MS_SKIP refused: joining %s: %s\n", cg, strerror(errno));
      _exit(77);
    }
    if (out) { dup2(fds[1], 1); close(fds[0]); close(fds[1]); }
    char v[8];
    snprintf(v, sizeof v, "%d", version);
    char *argv[16] = {(char *)self, "--child", (char *)cg, v};
    int k = 4;
    for (int i = 0; args[i] && k < 15; i++) argv[k++] = args[i];
    argv[k] = NULL;
    execv(self, argv);
    _exit(127);
  }
  size_t len = 0;
  if (out) {
    close(fds[1]);
    for (ssize_t r; len + 1 < cap && (r = read(fds[0], out + len, cap - 1 - len)) != 0;)
      if (r > 0) len += (size_t)r;
      else if (errno != EINTR) break;
    out[len] = 0;
    close(fds[0]);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[1], "--child")) {
    size_t live = 64, burst = 192;
    double wait_s = -1;
    bool test = false, single = false, idle = false, roomy = false;
    for (int i = 4; i < argc; i++) {
      if (!strcmp(argv[i], "--live") && i + 1 < argc) live = (size_t)atol(argv[++i]);
      else if (!strcmp(argv[i], "--burst") && i + 1 < argc) burst = (size_t)atol(argv[++i]);
      else if (!strcmp(argv[i], "--wait") && i + 1 < argc) wait_s = atof(argv[++i]);
      else if (!strcmp(argv[i], "--test")) test = true;
      else if (!strcmp(argv[i], "--single")) single = true;
      else if (!strcmp(argv[i], "--idle")) idle = true;
      else if (!strcmp(argv[i], "--roomy")) roomy = true;
    }
    if (wait_s < 0) wait_s = test ? 60 : 2;
    idle = idle && test && !single;
    return child(argv[2], atoi(argv[3]), live << 20, burst << 20, wait_s, test, single && test, idle, roomy && idle);
  }
  if (argc >= 2 && !strcmp(argv[1], "--cleanup")) return cleanup();
  bool test = false, roomy = false;
  unsigned long long live = 64, burst = 192;
  char *args[12];
  int na = 0;
  for (int i = 1; i < argc && na < 11; i++) {
    test |= !strcmp(argv[i], "--test");
    roomy |= !strcmp(argv[i], "--roomy");
    if (!strcmp(argv[i], "--live") && i + 1 < argc) live = strtoull(argv[i + 1], NULL, 10);
    if (!strcmp(argv[i], "--burst") && i + 1 < argc) burst = strtoull(argv[i + 1], NULL, 10);
    args[na++] = argv[i];
  }
  args[na] = NULL;
  char base[4096], cg[4400];
  int version = own_cgroup(base, sizeof base);
  if (geteuid() != 0) { printf("MS_SKIP refused: making a memory cgroup needs root\n"); return 77; }
  if (!version) { printf("MS_SKIP refused: %s\n", base); return 77; }
  snprintf(cg, sizeof cg, "%s/%s%d", base, PREFIX, (int)getpid());
  if (version == 2) { /* children get the memory controller where the parent may hand it down (else refused below) */
    char ctl[4200];
    snprintf(ctl, sizeof ctl, "%s/cgroup.subtree_control", base);
    FILE *f = fopen(ctl, "w");
    if (f) { fputs("+memory", f); fclose(f); }
  }
  if (mkdir(cg, 0755) != 0) {
    printf("MS_SKIP refused: creating a memory cgroup under %s: %s\n", base, strerror(errno));
    return 77;
  }
  int rc;
  if (test && roomy && !write_file(cg, version == 1 ? "memory.limit_in_bytes" : "memory.max", (live + burst) << 22)) {
    printf("MS_SKIP refused: setting the memory limit of %s: %s\n", cg, strerror(errno));
    rc = 77;
  } else if (test) {
    rc = run_child("/proc/self/exe", cg, version, args, NULL, 0);
  } else {
    /* the first run measures the usage at the peak; the limit makes it 90% */
    char out[4096];
    rc = run_child("/proc/self/exe", cg, version, args, out, sizeof out);
    char *u = strstr(out, "usage_peak_bytes ");
    unsigned long long peak = u ? strtoull(u + 17, NULL, 10) : 0, lim = (peak + peak / 9 + 4095) & ~4095ull;
    if (rc == 77 || !peak) {
      printf("%s", rc == 77 ? out : "MS_SKIP refused: the cgroup's usage is unreadable\n");
      rc = 77;
    } else if (!write_file(cg, version == 1 ? "memory.limit_in_bytes" : "memory.max", lim)) {
      printf("MS_SKIP refused: setting the memory limit of %s: %s\n", cg, strerror(errno));
      rc = 77;
    } else {
      printf("limit_bytes %llu\nfirst_usage_peak_bytes %llu\n", lim, peak);
      rc = run_child("/proc/self/exe", cg, version, args, NULL, 0);
    }
  }
  cgroup_remove(cg);
  return rc;
}
