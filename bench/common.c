/* SPDX-License-Identifier: MIT */
/* common.c: the benchmark framework (see bench.h). Runs in the memspace tool, never inside the library. */
#include "bench.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <gnu/libc-version.h>
#include <unistd.h>

extern char **environ;

void msb_row(msb_ctx_t *ctx, const char *case_name, const char *impl, int threads, uint64_t size_bytes,
             const char *metric, double value) {
  if (!ctx->csv) return;
  fprintf(ctx->csv, "%s,%s,%s,%d,%llu,%s,%.9g\n", ctx->part, case_name, impl, threads,
          (unsigned long long)size_bytes, metric, value);
  fflush(ctx->csv);
}

void msb_row_not_installed(msb_ctx_t *ctx, const char *case_name, const char *impl, int threads) {
  if (!ctx->csv) return;
  fprintf(ctx->csv, "%s,%s,%s,%d,0,status,not_installed\n", ctx->part, case_name, impl, threads);
  fflush(ctx->csv);
}

void msb_section_line(msb_ctx_t *ctx, const char *name, double seconds) {
  if (!ctx->cmd) return;
  fprintf(ctx->cmd, "section %s: %.1f s\n", name, seconds);
  fflush(ctx->cmd);
}

void msb_section(msb_ctx_t *ctx, const char *name) {
  static char running[64];
  static double started;
  double now = msb_now();
  if (running[0]) msb_section_line(ctx, running, now - started);
  snprintf(running, sizeof running, "%s", name ? name : "");
  started = now;
}

void msb_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

static char bin_dir[PATH_MAX], src_dir[PATH_MAX], lib_path[PATH_MAX], exe_dir[PATH_MAX];
static int installed = -1;

/* the tool's own directory, and whether it is an installed copy (no CMakeCache.txt beside it: not build/) */
static void locate_tool(void) {
  if (installed >= 0) return;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(exe_dir, sizeof exe_dir, "%s", MEMSPACE_BINARY_DIR);
    installed = 0;
    return;
  }
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (slash) *slash = 0;
  snprintf(exe_dir, sizeof exe_dir, "%s", exe);
  char cache[PATH_MAX];
  snprintf(cache, sizeof cache, "%s/CMakeCache.txt", exe_dir);
  installed = access(cache, R_OK) != 0;
}

bool msb_installed(void) {
  locate_tool();
  return installed == 1;
}

const char *msb_binary_dir(void) {
  if (!bin_dir[0]) {
    locate_tool(); /* build/ holds the helpers; an installed tool has them in libexec/memspace */
    if (installed) snprintf(bin_dir, sizeof bin_dir, "%s/%s", exe_dir, MEMSPACE_BIN_TO_HELPERS);
    else snprintf(bin_dir, sizeof bin_dir, "%s", exe_dir);
  }
  return bin_dir;
}

const char *msb_source_dir(void) {
  if (!src_dir[0]) {
    locate_tool(); /* the scripts: the source tree, or share/memspace installed */
    if (installed) snprintf(src_dir, sizeof src_dir, "%s/%s", exe_dir, MEMSPACE_BIN_TO_DATA);
    else snprintf(src_dir, sizeof src_dir, "%s", MEMSPACE_SOURCE_DIR);
  }
  return src_dir;
}

const char *msb_memspace_lib(void) {
  if (!lib_path[0]) {
    locate_tool();
    if (installed) snprintf(lib_path, sizeof lib_path, "%s/%s/libmemspace.so", exe_dir, MEMSPACE_BIN_TO_LIB);
    else snprintf(lib_path, sizeof lib_path, "%s/libmemspace.so", exe_dir);
  }
  return lib_path;
}

static const char *find_lib(const char *name) {
  static const char *dirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                               "/usr/lib", "/usr/local/lib"};
  static char found[8][PATH_MAX];
  static int used;
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dirs[i], name);
    if (access(path, R_OK) == 0 && used < 8) {
      snprintf(found[used], PATH_MAX, "%s", path);
      return found[used++];
    }
  }
  return NULL;
}

static const char *pkg_version(const char *pkg) {
  static char versions[8][64];
  static int used;
  if (used >= 8) return "";
  char cmd[256];
  snprintf(cmd, sizeof cmd, "dpkg-query -W -f='${Version}' %s 2>/dev/null", pkg);
  FILE *f = popen(cmd, "r");
  if (!f) return "";
  char *v = versions[used];
  size_t n = fread(v, 1, 63, f);
  v[n] = 0;
  pclose(f);
  if (!n) return "";
  used++;
  return v;
}

static bool hidden(const char *list, const char *impl) {
  size_t len = strlen(impl);
  for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, impl, len) == 0 && (p[len] == ',' || p[len] == 0)) return true;
  return false;
}

const msb_alloc_t *msb_allocators(size_t *count) {
  static msb_alloc_t list[6];
  static bool done;
  if (!done) {
    static const struct { const char *impl, *lib, *pkg; } peers[] = {
        {"jemalloc", "libjemalloc.so.2", "libjemalloc2"},
        {"mimalloc", "libmimalloc.so.2", "libmimalloc2.0"},
        {"tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"},
        {"tbbmalloc", "libtbbmalloc_proxy.so.2", "libtbbmalloc2"},
    };
    list[0] = (msb_alloc_t){"glibc", NULL, true, gnu_get_libc_version()};
    list[1] = (msb_alloc_t){"memspace", msb_memspace_lib(), access(msb_memspace_lib(), R_OK) == 0, "0.1.0"};
    const char *hide = getenv("MSB_HIDE_PEERS"); /* tests: "tbbmalloc,..." behave as not installed */
    for (int i = 0; i < 4; i++) {
      const char *lib = hidden(hide, peers[i].impl) ? NULL : find_lib(peers[i].lib);
      list[2 + i] = (msb_alloc_t){peers[i].impl, lib, lib != NULL, lib ? pkg_version(peers[i].pkg) : ""};
    }
    done = true;
  }
  *count = 6;
  return list;
}

/* Kills the child's whole process group (a hung grandchild, e.g. cc1 under a peer allocator that breaks fork,
   would otherwise keep the output pipe open forever). */
static void kill_child(pid_t pid) {
  kill(-pid, SIGKILL); /* the group exists only when a timeout was given; harmless otherwise */
  kill(pid, SIGKILL);
}

int msb_spawn(char *const argv[], const char *preload, char *const env_extra[], char *out, size_t out_cap,
              double timeout_s, double *wall_s, struct rusage *usage) {
  int pipefd[2] = {-1, -1};
  if (out && out_cap && pipe2(pipefd, O_CLOEXEC) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  double t0 = msb_now();
  pid_t pid = fork();
  if (pid < 0) {
    if (pipefd[0] >= 0) { close(pipefd[0]); close(pipefd[1]); }
    return -1;
  }
  if (pid == 0) {
    if (timeout_s > 0) setpgid(0, 0); /* own process group: a timeout kills the children it started too */
    if (pipefd[1] >= 0) dup2(pipefd[1], 1);
    unsetenv("LD_PRELOAD");
    if (preload) setenv("LD_PRELOAD", preload, 1);
    for (char *const *e = env_extra; e && *e; e++) putenv(*e);
    execvp(argv[0], argv);
    fprintf(stderr, "bench: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  if (timeout_s > 0) setpgid(pid, pid); /* both sides, so the group exists before either acts on it */
  bool killed = false;
  size_t used = 0;
  if (pipefd[1] >= 0) {
    close(pipefd[1]);
    for (;;) {
      int wait_ms = -1;
      if (timeout_s > 0) {
        double left = timeout_s - (msb_now() - t0);
        if (left <= 0) {
          if (!killed) kill_child(pid);
          killed = true;
          break; /* a grandchild may still hold the pipe: stop reading */
        }
        wait_ms = (int)(left * 1000) + 1;
      }
      struct pollfd pfd = {pipefd[0], POLLIN, 0};
      int r = poll(&pfd, 1, wait_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) continue; /* timeout: handled at the top */
      char tmp[4096];
      ssize_t n = read(pipefd[0], tmp, sizeof tmp);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      size_t room = out_cap - 1 - used;
      size_t take = (size_t)n < room ? (size_t)n : room;
      memcpy(out + used, tmp, take);
      used += take;
    }
    close(pipefd[0]);
    out[used] = 0;
  }
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  for (;;) {
    pid_t r = wait4(pid, &status, timeout_s > 0 ? WNOHANG : 0, &ru);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return -1;
    if (timeout_s > 0 && !killed && msb_now() - t0 > timeout_s) { kill_child(pid); killed = true; }
    if (r == 0) usleep(2000);
  }
  if (killed) kill(-pid, SIGKILL); /* leftovers of the group */
  if (killed && timeout_s > 0 && !WIFSIGNALED(status)) status = SIGKILL; /* exited while being killed */
  if (wall_s) *wall_s = msb_now() - t0;
  if (usage) *usage = ru;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

double msb_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
void msb_sort(double *v, size_t n) { qsort(v, n, sizeof *v, cmp_double); }
double msb_percentile(const double *s, size_t n, double p) {
  if (!n) return 0;
  double idx = p / 100.0 * (double)(n - 1);
  size_t lo = (size_t)idx;
  if (lo + 1 >= n) return s[n - 1];
  return s[lo] + (s[lo + 1] - s[lo]) * (idx - (double)lo);
}
double msb_median(double *v, size_t n) {
  msb_sort(v, n);
  return msb_percentile(v, n, 50);
}

static uint64_t smaps_field(const char *field) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  size_t len = strlen(field);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, len) == 0 && line[len] == ':') { kb = strtoull(line + len + 1, NULL, 10); break; }
  fclose(f);
  return kb * 1024;
}
uint64_t msb_rss_bytes(void) { return smaps_field("Rss"); }
uint64_t msb_lazyfree_bytes(void) { return smaps_field("LazyFree"); }
bool msb_is_root(void) { return geteuid() == 0; }

bool msb_kv(const char *text, const char *key, double *value) {
  size_t len = strlen(key);
  for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (strncmp(line, key, len) != 0 || (line[len] != ' ' && line[len] != '\t')) continue;
    char *end;
    double v = strtod(line + len, &end);
    if (end == line + len) return false;
    *value = v;
    return true;
  }
  return false;
}

const char *msb_sh_quote(char *buf, size_t cap, const char *s) {
  size_t n = 0;
  if (cap < 3) return "''";
  buf[n++] = '\'';
  for (; *s; s++) {
    const char *piece = *s == '\'' ? "'\\''" : NULL;
    size_t len = piece ? 4 : 1;
    if (n + len + 2 > cap) return "''";
    if (piece) memcpy(buf + n, piece, len);
    else buf[n] = *s;
    n += len;
  }
  buf[n++] = '\'';
  buf[n] = 0;
  return buf;
}
