/* SPDX-License-Identifier: MIT */
/* bench.c: `memspace bench PART [--out DIR] [--quick | --full]`. Opens PART.csv and PART.cmd, calls the
   part's driver (msb_bench_PART, defined in bench/PART.c), then bench/plot.py for the plots. */
#include "bench.h"
#include "tool.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* A part whose driver is not linked yet reports so instead of failing the build. */
__attribute__((weak)) int msb_bench_pages(msb_ctx_t *ctx);
__attribute__((weak)) int msb_bench_spaces(msb_ctx_t *ctx);
__attribute__((weak)) int msb_bench_heap(msb_ctx_t *ctx);
__attribute__((weak)) int msb_bench_spill(msb_ctx_t *ctx);
__attribute__((weak)) int msb_bench_dma(msb_ctx_t *ctx);

static const struct { const char *name; int (*fn)(msb_ctx_t *); } parts[] = {
    {"pages", msb_bench_pages}, {"spaces", msb_bench_spaces}, {"heap", msb_bench_heap},
    {"spill", msb_bench_spill}, {"dma", msb_bench_dma},
};

static void mkdirs(const char *path) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') { *p = 0; mkdir(tmp, 0755); *p = '/'; }
  mkdir(tmp, 0755);
}

static void write_machine(FILE *f) {
  struct utsname u;
  uname(&u);
  char model[256] = "unknown";
  FILE *c = fopen("/proc/cpuinfo", "r");
  if (c) {
    char line[512];
    while (fgets(line, sizeof line, c))
      if (strncmp(line, "model name", 10) == 0) {
        char *v = strchr(line, ':');
        if (v) { snprintf(model, sizeof model, "%s", v + 2); model[strcspn(model, "\n")] = 0; }
        break;
      }
    fclose(c);
  }
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  fprintf(f, "machine: cpu=\"%s\" cores=%ld memory_bytes=%lld kernel=\"%s %s\" arch=%s\n", model,
          sysconf(_SC_NPROCESSORS_ONLN), (long long)pages * psize, u.sysname, u.release, u.machine);
  size_t n;
  const msb_alloc_t *a = msb_allocators(&n);
  fprintf(f, "libraries:");
  for (size_t i = 0; i < n; i++)
    fprintf(f, " %s=%s", a[i].impl, a[i].installed ? (a[i].version[0] ? a[i].version : "installed") : "not_installed");
  fprintf(f, "\n");
}

/* Free page reporting (virtio-balloon in a VM guest) gives memory the guest freed back to its host, which backs it
   again at the next touch: the same fill then costs many times more in some runs than in others, whatever the
   allocator, more than any ratio the bench judges. Where the guest's kernel lets the delay be set, the bench keeps
   freed memory in the guest while it runs (as a machine without a host does) and puts the values back when it ends,
   also on SIGINT, SIGTERM and SIGHUP. --quick leaves them alone unless MSB_PAGE_REPORTING_DIR names the directory
   of the two files (tests name a fixture). */
static struct held {
  const char *name, *value;
  char old[32];
  bool changed;
} held[] = {{"min_free_ms", "300000", "", false}, {"max_waiting_mib", "65536", "", false}};
static char held_dir[PATH_MAX], held_line[256];
static pid_t held_by;

static bool write_param(const char *name, const char *value) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%s", held_dir, name);
  int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return false;
  size_t n = strlen(value);
  bool ok = write(fd, value, n) == (ssize_t)n;
  return close(fd) == 0 && ok;
}

/* async-signal-safe: open, write, close */
static void release_host(void) {
  if (getpid() != held_by) return; /* a forked child of the bench */
  for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
    if (held[i].changed) held[i].changed = !write_param(held[i].name, held[i].old);
}

static void release_on_signal(int sig) {
  release_host();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Holds what can be held and says so in `host:` (PART.cmd); nothing at all where the files are absent. */
static void hold_host(char *line, size_t cap, msb_mode_t mode) {
  const char *dir = getenv("MSB_PAGE_REPORTING_DIR");
  line[0] = 0;
  if (mode == MSB_QUICK && !(dir && *dir)) return; /* the tests' short runs judge nothing: the host is left alone */
  snprintf(held_dir, sizeof held_dir, "%s", dir && *dir ? dir : "/sys/module/page_reporting/parameters");
  held_by = getpid();
  size_t at = 0;
  for (size_t i = 0; i < sizeof held / sizeof held[0] && at < cap; i++) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", held_dir, held[i].name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    bool got = fgets(held[i].old, sizeof held[i].old, f) != NULL;
    fclose(f);
    held[i].old[strcspn(held[i].old, "\n")] = 0;
    if (!got || !held[i].old[0]) continue;
    held[i].changed = write_param(held[i].name, held[i].value);
    at += (size_t)snprintf(line + at, cap - at, "%s%s=%s (was %s%s)", at ? " " : "", held[i].name,
                           held[i].changed ? held[i].value : held[i].old, held[i].old,
                           held[i].changed ? "" : "; not changed: refused");
  }
  if (!line[0]) return;
  atexit(release_host);
  struct sigaction sa = {0};
  sa.sa_handler = release_on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

/* The variables that change what a run measures (MEMSPACE_* for the library, MSB_* for the drivers): part of
   the exact command. */
static void write_environment(FILE *f) {
  extern char **environ;
  fprintf(f, "environment:");
  for (char **e = environ; *e; e++)
    if (strncmp(*e, "MEMSPACE_", 9) == 0 || strncmp(*e, "MSB_", 4) == 0) fprintf(f, " %s", *e);
  fprintf(f, "\n");
}

/* The results tables (bench/report.py, standard library only) from every CSV in out_dir: the README's block and
   docs/results.md when out_dir is the source tree's bench/results, else out_dir/results.md alone. */
static void write_report(const char *py, const char *out_dir) {
  char tree_results[PATH_MAX], a[PATH_MAX], b[PATH_MAX], cmd[PATH_MAX * 12];
  char q_report[PATH_MAX * 4 + 8], q_out[PATH_MAX * 4 + 8], q_doc[PATH_MAX * 4 + 8], path[PATH_MAX + 32];
  snprintf(tree_results, sizeof tree_results, "%s/bench/results", msb_source_dir());
  bool in_tree = !msb_installed() && realpath(out_dir, a) && realpath(tree_results, b) && strcmp(a, b) == 0;
  snprintf(path, sizeof path, "%s/bench/report.py", msb_source_dir());
  msb_sh_quote(q_report, sizeof q_report, path);
  msb_sh_quote(q_out, sizeof q_out, out_dir);
  snprintf(path, sizeof path, "%s/results.md", out_dir);
  msb_sh_quote(q_doc, sizeof q_doc, path);
  if (in_tree)
    snprintf(cmd, sizeof cmd, "%s -B %s --results %s >/dev/null 2>&1", py, q_report, q_out);
  else
    snprintf(cmd, sizeof cmd, "%s -B %s --results %s --readme '' --doc %s >/dev/null 2>&1", py, q_report, q_out, q_doc);
  if (system(cmd) != 0) msb_printf("(results tables not written: %s failed)\n", cmd);
}

/* one word of the `command:` line, as a shell reads it back: in '...' when it holds anything but letters, digits
   and -_./=:,+@% (a directory with a space or a quote), so that the line is the exact command (docs/contract.md §2) */
static void write_word(FILE *f, const char *w) {
  char q[PATH_MAX * 4 + 8];
  bool plain = *w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == strlen(w);
  const char *quoted = plain ? w : msb_sh_quote(q, sizeof q, w);
  fprintf(f, " %s", quoted == q || plain ? quoted : w); /* (longer than q can hold: as it is) */
}

static int run_part(int idx, const char *out_dir, msb_mode_t mode, int argc, char **argv) {
  msb_ctx_t ctx = {parts[idx].name, out_dir, mode, NULL, NULL};
  if (!parts[idx].fn) {
    msb_printf("== bench %s: not built yet in this version\n", ctx.part);
    return 0;
  }
  /* written beside as PART.csv.partial and PART.cmd.partial, renamed once the part is done: an interrupted run
     leaves the previous results whole */
  char csv_path[PATH_MAX], cmd_path[PATH_MAX], tmp[PATH_MAX + 16];
  snprintf(csv_path, sizeof csv_path, "%s/%s.csv", out_dir, ctx.part);
  snprintf(cmd_path, sizeof cmd_path, "%s/%s.cmd", out_dir, ctx.part);
  snprintf(tmp, sizeof tmp, "%s.partial", csv_path);
  ctx.csv = fopen(tmp, "w");
  snprintf(tmp, sizeof tmp, "%s.partial", cmd_path);
  ctx.cmd = fopen(tmp, "w");
  if (!ctx.csv || !ctx.cmd) {
    fprintf(stderr, "memspace bench: cannot write to %s: %s\n", out_dir, strerror(errno));
    return 1;
  }
  fprintf(ctx.csv, "part,case,impl,threads,size_bytes,metric,value\n");
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  fprintf(ctx.cmd, "command:");
  for (int i = 0; i < argc; i++) write_word(ctx.cmd, argv[i]);
  fprintf(ctx.cmd, "\npart: %s\nmode: %s\ndate: %s\n", ctx.part,
          mode == MSB_QUICK ? "quick" : mode == MSB_FULL ? "full" : "default", date);
  write_environment(ctx.cmd);
  if (held_line[0]) fprintf(ctx.cmd, "host: free page reporting %s\n", held_line);
  write_machine(ctx.cmd);
  fflush(ctx.cmd);
  msb_printf("== bench %s (%s)\n", ctx.part, mode == MSB_QUICK ? "quick" : mode == MSB_FULL ? "full" : "default");
  double t0 = msb_now();
  int r = parts[idx].fn(&ctx);
  fprintf(ctx.cmd, "seconds: %.1f\nexit: %d\n", msb_now() - t0, r);
  bool written = fclose(ctx.csv) == 0;
  written = fclose(ctx.cmd) == 0 && written;
  snprintf(tmp, sizeof tmp, "%s.partial", csv_path);
  if (!written || rename(tmp, csv_path) != 0) {
    fprintf(stderr, "memspace bench: cannot write %s: %s\n", csv_path, strerror(errno));
    return 1;
  }
  snprintf(tmp, sizeof tmp, "%s.partial", cmd_path);
  if (rename(tmp, cmd_path) != 0) {
    fprintf(stderr, "memspace bench: cannot write %s: %s\n", cmd_path, strerror(errno));
    return 1;
  }
  char plot[PATH_MAX * 12], q_plot[PATH_MAX * 4 + 8], q_csv[PATH_MAX * 4 + 8], q_out[PATH_MAX * 4 + 8];
  char path[PATH_MAX + 32];
  /* Debian's python3 has python3-matplotlib; a python3 earlier in PATH (pyenv, venv) may not. Its scripts run with
     -B (here, in write_report and in bench spill): the modules they import write no __pycache__ into the source
     tree or an installed prefix, which `make uninstall` would leave behind. */
  const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  snprintf(path, sizeof path, "%s/bench/plot.py", msb_source_dir());
  msb_sh_quote(q_plot, sizeof q_plot, path);
  msb_sh_quote(q_csv, sizeof q_csv, csv_path);
  msb_sh_quote(q_out, sizeof q_out, out_dir);
  snprintf(plot, sizeof plot, "%s -B %s %s %s >/dev/null 2>&1", py, q_plot, q_csv, q_out);
  if (system(plot) != 0) msb_printf("(plots for %s not written: python3 with matplotlib is needed)\n", ctx.part);
  write_report(py, out_dir);
  return r;
}

/* an argument this command reads as its own: never taken as the value of --out ("--out --quick" lacks a directory;
   it does not name one "--quick" and run the default mode) */
static bool bench_word(const char *a) {
  static const char *const words[] = {"--quick", "--full", "--out", "--help", "-h", "--"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcmp(a, words[i]) == 0) return true;
  return false;
}

int tool_bench(int argc, char **argv) {
  const char *part = NULL, *out = NULL;
  msb_mode_t mode = MSB_DEFAULT;
  for (int i = 1; i < argc; i++) {
    msb_mode_t asked = strcmp(argv[i], "--quick") == 0 ? MSB_QUICK : strcmp(argv[i], "--full") == 0 ? MSB_FULL : MSB_DEFAULT;
    if (asked != MSB_DEFAULT && mode != MSB_DEFAULT && asked != mode) {
      fprintf(stderr, "memspace bench: --quick and --full exclude each other\n");
      return 2;
    }
    if (asked != MSB_DEFAULT) mode = asked;
    else if (strncmp(argv[i], "--out=", 6) == 0 && argv[i][6]) out = argv[i] + 6;
    else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc && argv[i + 1][0] && !bench_word(argv[i + 1])) out = argv[++i];
    else if (strncmp(argv[i], "--out", 5) == 0 && (argv[i][5] == 0 || argv[i][5] == '=')) {
      fprintf(stderr, "memspace bench: --out needs a directory\n"); /* "--out" last, "--out=", or an empty name */
      return 2;
    }
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: memspace bench PART [--out DIR] [--quick | --full]\n"
             "  PART: pages spaces heap spill dma all; results in DIR (default bench/results from build/, ./memspace-results installed): PART.csv, PART.cmd, plots\n");
      return 0;
    } else if (argv[i][0] != '-' && !part) part = argv[i];
    else if (argv[i][0] != '-') {
      fprintf(stderr, "memspace bench: one PART at a time ('%s' and '%s' given; all runs every part)\n", part, argv[i]);
      return 2;
    } else { fprintf(stderr, "memspace bench: unknown argument '%s'\n", argv[i]); return 2; }
  }
  if (!part) { fprintf(stderr, "usage: memspace bench PART [--out DIR] [--quick | --full]\n"); return 2; }
  /* an unknown part is refused before the output directory is made: a refused command leaves nothing behind */
  bool known = strcmp(part, "all") == 0;
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) known |= strcmp(part, parts[i].name) == 0;
  if (!known) { fprintf(stderr, "memspace bench: unknown part '%s' (pages spaces heap spill dma all)\n", part); return 2; }
  char def_out[PATH_MAX];
  if (!out) {
    /* from build/: the source tree's bench/results; installed: ./memspace-results */
    if (msb_installed()) snprintf(def_out, sizeof def_out, "memspace-results");
    else snprintf(def_out, sizeof def_out, "%s/bench/results", msb_source_dir());
    out = def_out;
  }
  mkdirs(out);
  struct stat st; /* refused before the host's settings are held: a refused command changes nothing */
  int e = stat(out, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : access(out, W_OK | X_OK) != 0 ? errno : 0;
  if (e) {
    fprintf(stderr, "memspace bench: cannot write to %s: %s\n", out, strerror(e));
    return 1;
  }
  hold_host(held_line, sizeof held_line, mode);
  if (held_line[0]) msb_printf("free page reporting to the host held while the bench runs: %s\n", held_line);
  int status = 0;
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (strcmp(part, "all") == 0 || strcmp(part, parts[i].name) == 0)
      status |= run_part((int)i, out, mode, argc + 1, argv - 1);
  return status ? 1 : 0;
}
