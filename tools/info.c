/* SPDX-License-Identifier: MIT */
/* info.c: `memspace info` (docs/contract.md §2): what this machine offers a memory allocator, and which settings
   weaken real-time guarantees. Reads /proc and /sys only; never changes anything. */
#include "bench.h"
#include "internal.h"
#include "memspace.h"
#include "os.h"
#include "tool.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <linux/capability.h>
#include <sys/utsname.h>
#include <unistd.h>

/* first line of a file without its newline; false when unreadable (the library's reader: os.h) */
static bool read_line(const char *path, char *buf, size_t cap) {
  if (msi_os_read_file(path, buf, cap) < 0) return false;
  buf[strcspn(buf, "\n")] = 0;
  return true;
}

static long long read_ll(const char *path, long long def) {
  char buf[64];
  if (!read_line(path, buf, sizeof buf)) return def;
  return strtoll(buf, NULL, 10);
}

/* "kB" value of a /proc/meminfo field, -1 when absent */
static long long meminfo_kb(const char *field) {
  uint64_t bytes;
  return msi_os_meminfo(field, &bytes) ? (long long)(bytes / 1024) : -1;
}

static void human(char *buf, size_t cap, unsigned long long bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) snprintf(buf, cap, "%llu GiB", bytes >> 30);
  else if (bytes >= (1ull << 30)) snprintf(buf, cap, "%.1f GiB", (double)bytes / (1 << 30));
  else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) snprintf(buf, cap, "%llu MiB", bytes >> 20);
  else if (bytes >= (1ull << 20)) snprintf(buf, cap, "%.1f MiB", (double)bytes / (1 << 20));
  else if (bytes >= 1024) snprintf(buf, cap, "%llu KiB", bytes >> 10);
  else snprintf(buf, cap, "%llu B", bytes);
}
/* a resource limit: "unlimited" or its size */
static void limit_text(char *buf, size_t cap, rlim_t v) {
  if (v == RLIM_INFINITY) snprintf(buf, cap, "unlimited");
  else human(buf, cap, v);
}

static void row(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void row(const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("  %-30s ", name);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

static void section(const char *name) { printf("%s\n", name); }

/* the selected word of a "[x] y z" sysfs mode file */
static const char *selected(const char *line, char *buf, size_t cap) {
  const char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
  if (!a || !b) { snprintf(buf, cap, "%s", line); return buf; }
  snprintf(buf, cap, "%.*s", (int)(b - a - 1), a + 1);
  return buf;
}

/* A file of /proc or /sys that cannot be read says nothing about the kernel when the whole tree is hidden (a
   container or sandbox without /proc or /sys mounted): the line then says "unknown", never "not in this kernel". */
static bool readable_dir(const char *path) { return access(path, R_OK | X_OK) == 0; }

static void pages(void) {
  char buf[256], sel[64], h[32];
  bool sysfs_mm = readable_dir("/sys/kernel/mm");
  section("Pages");
  human(h, sizeof h, ms_page_size());
  row("base page", "%s", h);
  size_t thp = ms_huge_page_size(MS_PAGE_THP);
  if (read_line("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf)) {
    human(h, sizeof h, thp);
    row("transparent huge pages", "enabled=%s (page %s)", selected(buf, sel, sizeof sel), thp ? h : "-");
    if (read_line("/sys/kernel/mm/transparent_hugepage/defrag", buf, sizeof buf))
      row("THP defrag", "%s", selected(buf, sel, sizeof sel));
    if (read_line("/sys/kernel/mm/transparent_hugepage/shmem_enabled", buf, sizeof buf))
      row("THP for shmem", "%s", selected(buf, sel, sizeof sel));
  } else {
    row("transparent huge pages", "%s", sysfs_mm ? "not available (kernel without THP)" : "unknown (/sys/kernel/mm not readable)");
  }
  DIR *d = opendir("/sys/kernel/mm/hugepages");
  int sizes = 0;
  if (d) {
    struct dirent *e;
    char names[8][64];
    while ((e = readdir(d)) && sizes < 8)
      if (strncmp(e->d_name, "hugepages-", 10) == 0) snprintf(names[sizes++], 64, "%s", e->d_name);
    closedir(d);
    /* smallest first */
    for (int i = 0; i < sizes; i++)
      for (int j = i + 1; j < sizes; j++)
        if (atoll(names[j] + 10) < atoll(names[i] + 10)) {
          char t[64];
          memcpy(t, names[i], 64), memcpy(names[i], names[j], 64), memcpy(names[j], t, 64);
        }
    uint64_t deflt = 0;
    if (!msi_os_meminfo("Hugepagesize", &deflt)) deflt = 0;
    for (int i = 0; i < sizes; i++) {
      char path[256], label[64];
      unsigned long long kb = strtoull(names[i] + 10, NULL, 10);
      human(h, sizeof h, kb * 1024);
      snprintf(label, sizeof label, "hugetlb %s pages", h);
      snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/%s/nr_hugepages", names[i]);
      long long nr = read_ll(path, -1);
      snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/%s/free_hugepages", names[i]);
      long long fr = read_ll(path, -1);
      snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/%s/resv_hugepages", names[i]);
      long long rs = read_ll(path, -1);
      /* /proc/sys/vm/nr_hugepages reserves pages of the default size (meminfo's Hugepagesize) only; every size
         has its own sysfs file */
      char hint[320] = "";
      snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/%s/nr_hugepages", names[i]);
      if (nr == 0)
        snprintf(hint, sizeof hint, "  (reserve with %s%s)", kb * 1024 == deflt ? "/proc/sys/vm/nr_hugepages or " : "", path);
      row(label, "reserved %lld, free %lld, promised to mappings %lld%s", nr, fr, rs, hint);
    }
  }
  if (!sizes) row("hugetlb pages", "%s", sysfs_mm ? "not available (kernel without hugetlbfs)" : "unknown (/sys/kernel/mm not readable)");
}

static void memory(void) {
  char h[32], h2[32];
  section("Memory");
  long long total = meminfo_kb("MemTotal"), avail = meminfo_kb("MemAvailable");
  human(h, sizeof h, (unsigned long long)(total > 0 ? total : 0) * 1024);
  human(h2, sizeof h2, (unsigned long long)(avail > 0 ? avail : 0) * 1024);
  row("RAM", "%s total, %s available", h, h2);
  long long st = meminfo_kb("SwapTotal"), sf = meminfo_kb("SwapFree");
  if (st > 0) {
    human(h, sizeof h, (unsigned long long)st * 1024);
    human(h2, sizeof h2, (unsigned long long)(sf > 0 ? sf : 0) * 1024);
    row("swap", "%s total, %s free (swappiness %lld)", h, h2, read_ll("/proc/sys/vm/swappiness", -1));
  } else {
    row("swap", "none");
  }
  long long oc = read_ll("/proc/sys/vm/overcommit_memory", -1);
  const char *ocs = oc == 0 ? "0 (heuristic)" : oc == 1 ? "1 (always)" : oc == 2 ? "2 (strict: commit limit)" : "unknown";
  if (oc == 2) row("overcommit", "%s, ratio %lld%%", ocs, read_ll("/proc/sys/vm/overcommit_ratio", -1));
  else row("overcommit", "%s", ocs);
  struct rlimit rl;
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
    limit_text(h, sizeof h, rl.rlim_cur);
    limit_text(h2, sizeof h2, rl.rlim_max);
    row("RLIMIT_MEMLOCK", "%s (hard %s)%s", h, h2, msi_os_has_cap(CAP_IPC_LOCK) ? "; this process has CAP_IPC_LOCK: not enforced" : "");
  }
  if (getrlimit(RLIMIT_AS, &rl) == 0) { /* the heap's reservation counts against it (docs/heap.md) */
    limit_text(h, sizeof h, rl.rlim_cur);
    if (rl.rlim_cur == RLIM_INFINITY) {
      row("RLIMIT_AS (ulimit -v)", "%s", h);
    } else {
      human(h2, sizeof h2, rl.rlim_cur / 8);
      row("RLIMIT_AS (ulimit -v)", "%s: the heap reserves %s of it for small blocks (and a smaller region for large "
          "ones); larger blocks are mapped one by one", h, h2);
    }
  }
  /* Free page reporting (virtio-balloon in a VM guest): freed blocks of 2^order pages go back to the host, which
     backs them again at the next touch (README "Results"); the delay files exist in some kernels only. */
  long long order = read_ll("/sys/module/page_reporting/parameters/page_reporting_order", -1);
  if (order >= 0 && order < 40) {
    char more[96] = "";
    long long ms = read_ll("/sys/module/page_reporting/parameters/min_free_ms", -1);
    long long mib = read_ll("/sys/module/page_reporting/parameters/max_waiting_mib", -1);
    if (ms >= 0 && mib >= 0) snprintf(more, sizeof more, "; delay min_free_ms=%lld, max_waiting_mib=%lld", ms, mib);
    human(h, sizeof h, (unsigned long long)ms_page_size() << order);
    row("free page reporting", "in the kernel: freed blocks of %s and more go back to the host where a balloon device "
        "takes them%s", h, more);
  } else {
    row("free page reporting", "%s", readable_dir("/sys/module") ? "none visible (no /sys/module/page_reporting)"
                                                          : "unknown (/sys/module not readable)");
  }
  /* the cgroup memory limit spill and spaces work within (os.h: v1 memory.limit_in_bytes, else v2 memory.max and
     memory.high, up the hierarchy, with v2 at the root or under unified/) */
  static msi_os_cgroup_t cg;
  msi_os_cgroup_budget(UINT64_MAX, &cg);
  if (cg.version == 0) {
    row("cgroup memory limit", "unknown (no memory controller visible)");
  } else if (cg.limit != UINT64_MAX) {
    char at[sizeof cg.stat_path];
    snprintf(at, sizeof at, "%s", cg.stat_path);
    char *slash = strrchr(at, '/');
    if (slash) *slash = 0;
    human(h, sizeof h, cg.limit);
    row("cgroup memory limit", "%s (v%d, set at %s; own cgroup %s)", h, cg.version, at, cg.cgroup);
  } else {
    row("cgroup memory limit", "none (v%d, own cgroup %s)", cg.version, cg.cgroup);
  }
}

static void numa(void) {
  section("NUMA and physical addresses");
  char buf[256];
  /* every nodeN directory: node numbers may have gaps (a node offline or absent: "0,2") */
  int nodes = 0;
  DIR *d = opendir("/sys/devices/system/node");
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9') nodes++;
    closedir(d);
  }
  if (read_line("/sys/devices/system/node/online", buf, sizeof buf)) row("NUMA nodes", "%d (online %s)", nodes, buf);
  else if (readable_dir("/sys/devices/system")) row("NUMA nodes", "1 (no NUMA support in the kernel)");
  else row("NUMA nodes", "unknown (/sys/devices/system not readable)");
  /* a present page's PFN from pagemap: 0 without CAP_SYS_ADMIN */
  long ps = sysconf(_SC_PAGESIZE);
  char *p = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const char *answer = "unknown";
  char why[160] = "";
  if (p != MAP_FAILED) {
    p[0] = 1;
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    uint64_t e = 0;
    if (fd < 0) {
      answer = "no";
      snprintf(why, sizeof why, " (/proc/self/pagemap: %s)", strerror(errno));
    } else {
      if (pread(fd, &e, sizeof e, (off_t)((uintptr_t)p / (uintptr_t)ps * 8)) == (ssize_t)sizeof e) {
        bool present = e >> 63 & 1;
        uint64_t pfn = e & ((1ull << 55) - 1);
        answer = present && pfn ? "yes" : "no";
        if (!pfn) snprintf(why, sizeof why, " (PFN reads as 0: CAP_SYS_ADMIN needed)");
      }
      close(fd);
    }
    munmap(p, (size_t)ps);
  }
  row("physical addresses readable", "%s%s", answer, why);
}

static void realtime(void) {
  section("Settings that weaken real-time guarantees");
  long long cu = read_ll("/proc/sys/vm/compact_unevictable_allowed", -1);
  row("vm.compact_unevictable_allowed", "%lld%s", cu,
      cu == 1 ? "  (compaction may move mlocked 4 KiB pages: page faults on locked memory; hugetlb is safe)"
              : cu == 0 ? "  (locked pages stay put)" : "  (unknown)");
  long long nb = read_ll("/proc/sys/kernel/numa_balancing", -1);
  const char *nbs = nb > 0 ? "  (NUMA hinting faults on any page)" : nb == 0 ? "  (off)" : "  (unknown)";
  if (nb < 0 && readable_dir("/proc/sys/kernel")) nbs = "  (not in this kernel)";
  row("kernel.numa_balancing", "%lld%s", nb, nbs);
  long long rt = read_ll("/proc/sys/kernel/sched_rt_runtime_us", -2), per = read_ll("/proc/sys/kernel/sched_rt_period_us", -1);
  if (rt == -1) row("kernel.sched_rt_runtime_us", "-1  (RT throttling off)");
  else if (rt >= 0) row("kernel.sched_rt_runtime_us", "%lld of %lld  (RT tasks throttled to %.0f%% of each period)", rt, per,
                        per > 0 ? 100.0 * (double)rt / (double)per : 0);
  else row("kernel.sched_rt_runtime_us", "unknown");
  char buf[128];
  if (read_line("/sys/kernel/mm/transparent_hugepage/defrag", buf, sizeof buf)) {
    char sel[64];
    selected(buf, sel, sizeof sel);
    row("THP defrag", "%s%s", sel, strcmp(sel, "always") == 0 ? "  (page faults may stall for compaction)" : "");
  }
}

static void peers(void) {
  section("Allocators for `memspace bench` (LD_PRELOAD peers)");
  size_t n;
  const msb_alloc_t *a = msb_allocators(&n);
  for (size_t i = 0; i < n; i++) {
    char v[160];
    if (!a[i].installed) snprintf(v, sizeof v, "not installed");
    else if (a[i].preload) snprintf(v, sizeof v, "%s  %s", a[i].version[0] ? a[i].version : "installed", a[i].preload);
    else snprintf(v, sizeof v, "%s (the system allocator)", a[i].version);
    row(a[i].impl, "%s", v);
  }
}

static void settings(void) {
  section("memspace settings in the environment (docs/options.md)");
  int n = 0;
  for (int o = 0; o < MS_OPTION_COUNT; o++) {
    const char *name = ms_option_name((ms_option_t)o), *raw = getenv(name);
    if (!raw) continue;
    /* a value's control bytes shown escaped (\xNN: 4 bytes each): an escape sequence must not reach the terminal */
    size_t cap = strlen(raw) * 4 + 1;
    char *buf = malloc(cap);
    const char *v = buf ? msi_escape(raw, buf, cap) : "(no memory to show it)";
    /* an empty value, or one with spaces at an end (read without them; nothing but spaces is invalid), in quotes:
       otherwise it would print as blank */
    size_t len = strlen(raw);
    const char *q = !len || raw[0] == ' ' || raw[len - 1] == ' ' ? "'" : "";
    if (msi_option_invalid((ms_option_t)o)) row(name, "%s%s%s  (invalid: ignored, the default applies)", q, v, q);
    else row(name, "%s%s%s", q, v, q);
    free(buf);
    n++;
  }
  /* a MEMSPACE_* variable that names no option (a misspelling): the program's library ignores it, with a warning */
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    int best = eq ? msi_option_suggest(*e, (size_t)(eq - *e)) : -2;
    if (best == -2) continue;
    char raw[64], name[64 * 4 + 1]; /* (its control bytes escaped, as a value's) */
    snprintf(raw, sizeof raw, "%.*s", (int)(eq - *e) < 63 ? (int)(eq - *e) : 63, *e);
    msi_escape(raw, name, sizeof name);
    if (best >= 0) row(name, "(unknown: not an option, ignored; did you mean %s?)", ms_option_name((ms_option_t)best));
    else row(name, "(unknown: not an option, ignored)");
    n++;
  }
  if (!n) row("(none set)", "defaults apply");
}

int tool_info(int argc, char **argv) {
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) { /* as run and bench take it */
    printf("usage: memspace info   (what this machine offers a memory allocator: docs/stats.md \"memspace info\")\n");
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "memspace info: unknown argument '%s' (it takes none)\nusage: memspace info\n", argv[1]);
    return 2;
  }
  int v = ms_version();
  char host[128] = "?";
  gethostname(host, sizeof host);
  char kernel[256] = "";
  struct utsname u; /* (uname needs no /proc) */
  if (uname(&u) == 0) snprintf(kernel, sizeof kernel, "%s", u.release);
  printf("memspace %d.%d.%d on %s (Linux %s, %ld CPUs)\n\n", v / 10000, v / 100 % 100, v % 100, host, kernel,
         sysconf(_SC_NPROCESSORS_ONLN));
  pages();
  printf("\n");
  memory();
  printf("\n");
  numa();
  printf("\n");
  realtime();
  printf("\n");
  settings();
  printf("\n");
  peers();
  return 0;
}
