/* Resource limits: each case runs in a child process with a small RLIMIT_AS, RLIMIT_MEMLOCK (without
   CAP_IPC_LOCK, which root otherwise has) or RLIMIT_NOFILE, or with an empty huge page pool. Every call must
   fail cleanly (NULL or an error, errno set) or report a fallback; nothing may crash, and what still fits
   must keep working. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"

#include "have.h"

/* child helpers: a failed check exits with a message */
#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "child: " __VA_ARGS__); fputc('\n', stderr); _exit(1); } } while (0)

/* runs fn in a child; 0 ok, 77 skipped */
static void in_child(void (*fn)(void), const char *name) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { fn(); _exit(0); }
  int st;
  while (waitpid(pid, &st, 0) < 0) {}
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77) { printf("%s: skipped\n", name); skip(); }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("%s: child %s %d", name, WIFSIGNALED(st) ? "killed by signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static size_t vm_size(void) {
  char buf[128] = {0};
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  unsigned long pages = 0;
  if (n > 0) sscanf(buf, "%lu", &pages);
  return pages * (size_t)sysconf(_SC_PAGESIZE);
}

static void drop_cap(int cap) {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capget, &hdr, data) != 0) return;
  data[cap / 32].effective &= ~(1u << (cap % 32));
  data[cap / 32].permitted &= ~(1u << (cap % 32));
  syscall(SYS_capset, &hdr, data);
}

/* ---- RLIMIT_AS: 48 MiB above what the process maps now ---- */
static void as_child(void) {
  size_t limit = vm_size() + (48u << 20);
  struct rlimit rl = {limit, limit};
  CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit(RLIMIT_AS): %s", strerror(errno));
  ms_pages_t r;
  CHECK(ms_pages_reserve(256u << 20, 0, 0, -1, &r) == ENOMEM, "256 MiB reservation did not fail with ENOMEM");
  CHECK(ms_pages_reserve(1u << 20, 0, MS_PAGES_COMMIT, -1, &r) == 0, "1 MiB reservation failed under the limit");
  ms_pages_release(r.addr, r.size);
#if MS_HAVE_HEAP
  /* fill the address space with 1 MiB blocks: the heap must answer NULL + ENOMEM, then work again */
  void *b[200];
  int n = 0;
  for (; n < 200; n++) {
    errno = 0;
    b[n] = ms_malloc(1u << 20);
    if (!b[n]) { CHECK(errno == ENOMEM, "ms_malloc failed with errno %d, not ENOMEM", errno); break; }
    memset(b[n], n, 1u << 20);
  }
  CHECK(n < 200, "200 MiB allocated under a 48 MiB address space limit");
  errno = 0;
  CHECK(ms_malloc(64u << 20) == NULL && errno == ENOMEM, "64 MiB block under the limit");
  /* small blocks may still come from memory the heap already holds, or fail cleanly */
  for (int k = 0; k < 1000; k++) {
    errno = 0;
    void *p = ms_malloc(64);
    if (!p) { CHECK(errno == ENOMEM, "small ms_malloc errno %d", errno); break; }
    ms_free(p);
  }
  for (int k = 0; k < n; k++) {
    unsigned char *c = b[k];
    CHECK(c[0] == (unsigned char)k && c[(1u << 20) - 1] == (unsigned char)k, "block %d changed", k);
    ms_free(b[k]);
  }
  ms_heap_collect(1);
  void *p = ms_malloc(1u << 20);
  CHECK(p != NULL, "ms_malloc(1 MiB) fails after everything was freed");
  ms_free(p);
#endif
#if MS_HAVE_SPACE
  ms_space_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.initial_size = 512u << 20;
  cfg.numa_node = -1;
  errno = 0;
  CHECK(ms_space_create(&cfg) == NULL && errno == ENOMEM, "512 MiB space created under the limit (errno %d)", errno);
#endif
}
static void limit_as(void **state) { (void)state; in_child(as_child, "RLIMIT_AS"); }

/* ---- RLIMIT_MEMLOCK: 64 KiB, without CAP_IPC_LOCK ---- */
static void memlock_child(void) {
  drop_cap(CAP_IPC_LOCK);
  struct rlimit rl = {64 << 10, 64 << 10};
  CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "setrlimit(RLIMIT_MEMLOCK): %s", strerror(errno));
  ms_pages_t r;
  int e = ms_pages_reserve(4u << 20, 0, MS_PAGES_COMMIT | MS_PAGES_LOCK, -1, &r);
  CHECK(e == EPERM || e == EAGAIN || e == ENOMEM, "locked 4 MiB reservation returned %d", e);
  CHECK(ms_pages_reserve(4u << 20, 0, MS_PAGES_COMMIT, -1, &r) == 0, "unlocked reservation failed");
  e = ms_pages_lock(r.addr, r.size);
  CHECK(e == EPERM || e == EAGAIN || e == ENOMEM, "ms_pages_lock above the limit returned %d", e);
  CHECK(ms_pages_lock(r.addr, 16 << 10) == 0, "16 KiB lock under the limit failed");
  ms_pages_unlock(r.addr, 16 << 10);
  ms_pages_release(r.addr, r.size);
#if MS_HAVE_SPACE
  ms_space_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.initial_size = 4u << 20;
  cfg.flags = MS_SPACE_LOCKED;
  cfg.numa_node = -1;
  errno = 0;
  ms_space_t *sp = ms_space_create(&cfg);
  CHECK(sp == NULL && (errno == EPERM || errno == EAGAIN || errno == ENOMEM),
        "locked 4 MiB space above RLIMIT_MEMLOCK: %p errno %d", (void *)sp, errno);
  cfg.flags = 0;
  sp = ms_space_create(&cfg);
  CHECK(sp != NULL, "unlocked space failed: errno %d", errno);
  void *p = ms_space_malloc(sp, 1000);
  CHECK(p != NULL && ms_space_check(sp) == 0, "unlocked space unusable");
  ms_space_destroy(sp);
#endif
#if MS_HAVE_HEAP
  void *h = ms_malloc(100000);
  CHECK(h != NULL, "heap unusable under RLIMIT_MEMLOCK");
  ms_free(h);
#endif
}
static void limit_memlock(void **state) { (void)state; in_child(memlock_child, "RLIMIT_MEMLOCK"); }

/* ---- RLIMIT_NOFILE: no descriptor left ---- */
static void nofile_child(void) {
  /* every descriptor up to the limit is taken */
  int fds = 0;
  struct rlimit rl = {16, 16};
  CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit(RLIMIT_NOFILE): %s", strerror(errno));
  while (open("/dev/null", O_RDONLY) >= 0) fds++;
  CHECK(errno == EMFILE, "open stopped with errno %d", errno);
  errno = 0;
  void *s = ms_spill_alloc(1u << 20);
  if (s) {
    memset(s, 1, 1u << 20);  /* served from RAM: a reported fallback */
    ms_spill_free(s);
  } else {
    CHECK(errno == ENOSYS || errno == EMFILE || errno == ENOMEM || errno == ENFILE,
          "ms_spill_alloc without descriptors: errno %d", errno);
  }
  ms_pages_t r;
  CHECK(ms_pages_reserve(1u << 20, 0, MS_PAGES_COMMIT, -1, &r) == 0, "page layer needs a descriptor?");
  ms_pages_release(r.addr, r.size);
#if MS_HAVE_HEAP
  void *h = ms_malloc(5u << 20);
  CHECK(h != NULL, "heap unusable without descriptors");
  ms_free(h);
#endif
  (void)fds;
}
static void limit_nofile(void **state) { (void)state; in_child(nofile_child, "RLIMIT_NOFILE"); }

/* ---- no huge pages: a request larger than the free 2 MiB pool (an empty pool when nothing else uses it) ---- */
static long meminfo(const char *key) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, n)) { v = atol(line + n); break; }
  fclose(f);
  return v;
}
static void nohuge_child(void) {
  long free_pages = meminfo("HugePages_Free:");
  if (ms_huge_page_size(MS_PAGE_HUGE_2M) == 0 || free_pages < 0 || meminfo("Hugepagesize:") != 2048) {
    fprintf(stderr, "no 2 MiB hugetlb pool on this kernel: the fallback is the only path\n");
    _exit(77);
  }
  size_t want = (size_t)(free_pages + 64) << 21; /* more than the pool holds */
  ms_pages_t r;
  CHECK(ms_pages_reserve(want, 0, MS_PAGES_HUGE_2M | MS_PAGES_NO_FALLBACK, -1, &r) == ENOMEM,
        "hugetlb beyond the pool without fallback did not fail with ENOMEM");
  CHECK(ms_pages_reserve(want, 0, MS_PAGES_HUGE_2M | MS_PAGES_COMMIT, -1, &r) == 0, "fallback failed");
  CHECK(r.fallback == 1 && r.kind != MS_PAGE_HUGE_2M, "fallback not reported");
  memset(r.addr, 1, 1 << 20);
  ms_pages_release(r.addr, r.size);
#if MS_HAVE_SPACE
  ms_space_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.initial_size = want;
  cfg.flags = MS_SPACE_HUGE_PAGES;
  cfg.at = MS_SPACE_AT_FIRSTALLOC;
  cfg.numa_node = -1;
  ms_space_t *sp = ms_space_create(&cfg);
  CHECK(sp != NULL, "huge-page space beyond the pool: no fallback (errno %d)", errno);
  void *p = ms_space_malloc(sp, 100000);
  CHECK(p != NULL, "space unusable after fallback");
  memset(p, 1, 100000);
  CHECK(ms_space_check(sp) == 0, "space check after fallback");
  ms_space_destroy(sp);
#endif
}
static void no_huge_pages(void **state) { (void)state; in_child(nohuge_child, "no huge pages"); }

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(limit_as), cmocka_unit_test(limit_memlock), cmocka_unit_test(limit_nofile),
    cmocka_unit_test(no_huge_pages),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
