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
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <grp.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include "internal.h"
#include "../../src/heap/heap.h"
#include "ms_test.h"


/* child helpers: a failed check exits with a message */
#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "child: " __VA_ARGS__); fputc('\n', stderr); _exit(1); } } while (0)

/* Under ThreadSanitizer the cases on address space and on the mapping count cannot run: its runtime reserves
   ranges of its own and maps shadow memory beside each mapping the program makes, so under a small RLIMIT_AS or
   near the mapping limit its own mmap is refused and it ends the process ("ThreadSanitizer failed to allocate",
   exit 66; under RLIMIT_AS from the start a CHECK of its allocator, SIGSEGV) before the heap sees a refusal */
static void skip_tsan_maps(void) {
  if (MS_TEST_TSAN)
    ms_skip_refused(0, "ThreadSanitizer's runtime maps shadow memory beside every mapping: the limit refuses its "
                       "own mappings, and it ends the process, before the heap's");
}

/* runs fn in a child; 0 ok, 77 skipped */
static void in_child(void (*fn)(void), const char *name) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { fn(); _exit(0); }
  int st;
  while (waitpid(pid, &st, 0) < 0) {}
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77) ms_skip_refused(0, "%s: the child could not run (its message says why)", name);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("%s: child %s %d", name, WIFSIGNALED(st) ? "killed by signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
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

/* ---- RLIMIT_AS: 256 MiB from the start (the heap reserves its address space at start-up, so the limit is set
   before the test binary runs itself again with --as-probe) ---- */
static int as_probe(void) {
  ms_pages_t r;
  int e = ms_pages_reserve(512u << 20, 0, 0, -1, &r);
  CHECK(e == ENOMEM, "512 MiB reservation under a 256 MiB limit returned %d", e);
  CHECK(ms_pages_reserve(1u << 20, 0, MS_PAGES_COMMIT, -1, &r) == 0, "1 MiB reservation failed under the limit");
  ms_pages_release(r.addr, r.size);
  int blocks = 0;
  /* 1 MiB blocks until the heap says NULL + ENOMEM; then it must work again once they are freed */
  static void *b[1024];
  int n = 0;
  for (; n < 1024; n++) {
    errno = 0;
    b[n] = ms_malloc(1u << 20);
    if (!b[n]) { CHECK(errno == ENOMEM, "ms_malloc failed with errno %d, not ENOMEM", errno); break; }
    ((unsigned char *)b[n])[0] = (unsigned char)n;
    ((unsigned char *)b[n])[(1u << 20) - 1] = (unsigned char)n;
  }
  CHECK(n < 1024, "1 GiB allocated under a 256 MiB address space limit");
  blocks = n;
  errno = 0;
  CHECK(ms_malloc(300u << 20) == NULL && errno == ENOMEM, "300 MiB block under the limit");
  for (int k = 0; k < 10000; k++) {  /* small blocks: from memory the heap holds, or NULL + ENOMEM */
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
  ms_space_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.initial_size = 512u << 20;
  cfg.numa_node = -1;
  errno = 0;
  CHECK(ms_space_create(&cfg) == NULL && errno == ENOMEM, "512 MiB space created under the limit (errno %d)", errno);
  cfg.initial_size = 4u << 20;
  ms_space_t *sp = ms_space_create(&cfg);
  CHECK(sp != NULL, "4 MiB space refused under the limit (errno %d)", errno);
  CHECK(ms_space_malloc(sp, 1000) != NULL && ms_space_check(sp) == 0, "small space unusable");
  ms_space_destroy(sp);
  printf("RLIMIT_AS 256 MiB: the heap gave %d blocks of 1 MiB, then NULL + ENOMEM\n", blocks);
  return 0;
}

/* runs this binary again with `arg` under a limit set before exec; exits with its status */
static void reexec_limited(int resource, rlim_t value, const char *arg) {
  struct rlimit rl = {value, value};
  CHECK(setrlimit(resource, &rl) == 0, "setrlimit: %s", strerror(errno));
  char *argv[] = {"test_rlimits", (char *)arg, NULL};
  extern char **environ;
  execve("/proc/self/exe", argv, environ);
  _exit(126);
}
static void as_child(void) { reexec_limited(RLIMIT_AS, 256u << 20, "--as-probe"); }
static void limit_as(void **state) {
  (void)state;
  skip_tsan_maps();
  in_child(as_child, "RLIMIT_AS");
}

/* ---- RLIMIT_AS 1 GiB: 600 live threads, each holding a small block (a segment of its own per thread would take
   2.4 GiB of the limit; the threads' stacks and blocks need about 45 MiB, as under glibc) ---- */
enum { AS_THREADS = 600 };
static pthread_barrier_t as_bar;
static void *as_thread(void *arg) {
  char *p = ms_malloc(100 + (size_t)(uintptr_t)arg);
  if (p) memset(p, 1, 100);
  pthread_barrier_wait(&as_bar); /* every thread holds its block until all have one */
  return p;
}
static int as_threads_probe(void) {
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, 64u << 10);
  pthread_barrier_init(&as_bar, NULL, AS_THREADS);
  static pthread_t t[AS_THREADS];
  for (int i = 0; i < AS_THREADS; i++) {
    int e = pthread_create(&t[i], &at, as_thread, (void *)(uintptr_t)i);
    CHECK(e == 0, "RLIMIT_AS 1 GiB: thread %d of %d not created (%s): the heap took the address space", i + 1,
          AS_THREADS, strerror(e));
  }
  int nulls = 0;
  for (int i = 0; i < AS_THREADS; i++) {
    void *p;
    pthread_join(t[i], &p);
    nulls += p == NULL;
    ms_free(p);
  }
  CHECK(nulls == 0, "RLIMIT_AS 1 GiB: %d of %d threads got NULL for 100 bytes", nulls, AS_THREADS);
  printf("RLIMIT_AS 1 GiB: %d threads each holding a block\n", AS_THREADS);
  return 0;
}
static void as_threads_child(void) { reexec_limited(RLIMIT_AS, 1u << 30, "--as-threads"); }
static void limit_as_threads(void **state) {
  (void)state;
  skip_tsan_maps();
  in_child(as_threads_child, "RLIMIT_AS threads");
}

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
  void *h = ms_malloc(100000);
  CHECK(h != NULL, "heap unusable under RLIMIT_MEMLOCK");
  ms_free(h);
}
static void limit_memlock(void **state) {
  (void)state;
  if (MS_TEST_MLOCK_NOOP) ms_skip_refused(0, MS_TEST_MLOCK_NOOP_WHY);
  in_child(memlock_child, "RLIMIT_MEMLOCK");
}

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
  void *h = ms_malloc(5u << 20);
  CHECK(h != NULL, "heap unusable without descriptors");
  ms_free(h);
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
}
static void no_huge_pages(void **state) { (void)state; in_child(nohuge_child, "no huge pages"); }

/* ---- a read-only spill directory: a directory of a real (disk) file system bind-mounted read-only in a private
   mount namespace; the test binary runs itself again with MEMSPACE_SPILL_DIR set (options are read at start-up).
   (A full disk is tested by tests/spill with a loop device; tmpfs directories are refused by spill itself.) ---- */
static int spill_probe(const char *mode) {
  errno = 0;
  void *big = ms_spill_alloc(8u << 20);
  int e = errno;
  if (big) {
    /* served from RAM (a reported fallback) or a sparse file that the kernel will fill: touch one page only */
    ((char *)big)[0] = 1;
    ms_spill_free(big);
  } else if (e == ENOSYS) {
    return 77;
  } else if (e != ENOMEM && e != ENOSPC && e != EROFS && e != EACCES) {
    fprintf(stderr, "%s: ms_spill_alloc(8 MiB) NULL with errno %d\n", mode, e);
    return 1;
  }
  errno = 0;
  void *small = ms_spill_alloc(64u << 10);
  if (!small && errno != ENOMEM && errno != ENOSPC && errno != EROFS && errno != EACCES) {
    fprintf(stderr, "%s: ms_spill_alloc(64 KiB) NULL with errno %d\n", mode, errno);
    return 1;
  }
  if (small) { memset(small, 2, 64u << 10); ms_spill_free(small); }
  /* malloc with a spill threshold: a block or NULL + ENOMEM, never a crash */
  errno = 0;
  void *m = ms_malloc(4u << 20);
  if (m) { memset(m, 3, 4096); ms_free(m); }
  else if (errno != ENOMEM) { fprintf(stderr, "%s: ms_malloc(4 MiB) NULL with errno %d\n", mode, errno); return 1; }
  void *h = ms_malloc(1000);
  if (!h) { fprintf(stderr, "%s: small ms_malloc failed\n", mode); return 1; }
  ms_free(h);
  printf("%s: 8 MiB spill %s (errno %d), 64 KiB spill %s\n", mode, big ? "served" : "refused", e, small ? "served" : "refused");
  return 0;
}

static void ro_child(void) {
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
    fprintf(stderr, "cannot make a private mount namespace: %s\n", strerror(errno));
    _exit(77);
  }
  char dir[] = "/tmp/memspace-spilltest.XXXXXX";
  if (!mkdtemp(dir)) _exit(77);
  if (mount(dir, dir, NULL, MS_BIND, NULL) != 0 ||
      mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0) {
    fprintf(stderr, "cannot bind-mount %s read-only: %s\n", dir, strerror(errno));
    rmdir(dir);
    _exit(77);
  }
  char env1[300], env2[] = "MEMSPACE_SPILL_THRESHOLD=1M", env3[] = "MEMSPACE_VERBOSE=1";
  snprintf(env1, sizeof env1, "MEMSPACE_SPILL_DIR=%s", dir);
  char *envp[] = {env1, env2, env3, NULL};
  char *argv[] = {"test_rlimits", "--spill-probe", "read-only", NULL};
  pid_t pid = fork();
  if (pid == 0) { execve("/proc/self/exe", argv, envp); _exit(126); }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {}
  umount2(dir, MNT_DETACH);
  rmdir(dir);
  if (WIFSIGNALED(st)) { fprintf(stderr, "spill probe killed by signal %d\n", WTERMSIG(st)); _exit(1); }
  _exit(WEXITSTATUS(st));
}
static void spill_read_only(void **state) { (void)state; in_child(ro_child, "read-only spill directory"); }

/* ---- no privilege: uid nobody, no capabilities ---- */
static void nopriv_child(void) {
  if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) {
    fprintf(stderr, "cannot drop privileges: %s\n", strerror(errno));
    _exit(77);
  }
  struct rlimit rl;
  getrlimit(RLIMIT_MEMLOCK, &rl);
  ms_pages_t r;
  size_t big = rl.rlim_cur == RLIM_INFINITY ? 0 : (size_t)rl.rlim_cur + (4u << 20);
  if (big) {
    int e = ms_pages_reserve(big, 0, MS_PAGES_COMMIT | MS_PAGES_LOCK, -1, &r);
    CHECK(e == EPERM || e == EAGAIN || e == ENOMEM, "locked reservation above RLIMIT_MEMLOCK as nobody: %d", e);
  }
  CHECK(ms_pages_reserve(1u << 20, 0, MS_PAGES_COMMIT, -1, &r) == 0, "plain reservation as nobody failed");
  ms_pages_release(r.addr, r.size);
  errno = 0;
  ms_dma_buffer_t *b = ms_dma_alloc(1u << 20, NULL);
  if (b) {
    size_t count;
    errno = 0;
    CHECK(ms_dma_segments(b, &count) == NULL && errno == EPERM, "physical addresses readable without privilege");
    ms_dma_free(b);
  } else {
    CHECK(errno == EPERM || errno == ENOMEM || errno == EAGAIN, "ms_dma_alloc as nobody: errno %d", errno);
  }
  void *h = ms_malloc(100000);
  CHECK(h != NULL, "heap unusable without privilege");
  ms_free(h);
}
static void no_privilege(void **state) { (void)state; in_child(nopriv_child, "no privilege"); }

/* ---- real programs under `ulimit -v 100000` (RLIMIT_AS ~98 MiB): with memspace preloaded they run as with glibc.
   A heap reserving a fixed 92 MiB whatever the limit would make `ls /` and Python fail "memory exhausted" at
   start-up ---- */
#define SMALL_AS_KIB 100000
static int run_limited(char *const argv[], const char *preload) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    struct rlimit rl = {(rlim_t)SMALL_AS_KIB << 10, (rlim_t)SMALL_AS_KIB << 10};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(126);
    if (preload) setenv("LD_PRELOAD", preload, 1);
    else unsetenv("LD_PRELOAD");
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);
    execvp(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {}
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
static void limit_as_programs(void **state) {
  (void)state;
  skip_tsan_maps(); /* (the limited child is this test's own, before its exec) */
  const char *lib = MEMSPACE_BINARY_DIR "/libmemspace.so";
  if (access(lib, R_OK) != 0) ms_skip_refused(errno, "no %s (a sanitizer build has no preloadable library)", lib);
  char *ls[] = {"ls", "/", NULL}, *py[] = {"python3", "-c", "print(1)", NULL},
       *pyalloc[] = {"python3", "-c", "x = [bytearray(300000) for i in range(40)]; y = [str(i) for i in range(99999)]",
                     NULL},
       *sh[] = {"sh", "-c", "echo ok | cat", NULL};
  char **progs[] = {ls, py, pyalloc, sh};
  int ran = 0;
  for (unsigned i = 0; i < sizeof progs / sizeof progs[0]; i++) {
    int g = run_limited(progs[i], NULL);
    if (g == 127) { printf("%s: not installed\n", progs[i][0]); continue; }
    int m = run_limited(progs[i], lib);
    printf("ulimit -v %d: %s %s: glibc exit %d, memspace exit %d\n", SMALL_AS_KIB, progs[i][0], progs[i][1], g, m);
    assert_int_equal(m, g);
    ran++;
  }
  if (!ran) ms_skip_missing("none of ls, python3, sh is installed");
}

/* the heap's statistics after everything was freed: no counter below zero (a huge unsigned value) */
static void stats_sane(const char *when) {
  ms_stats_t st;
  memset(&st, 0, sizeof st);
  CHECK(ms_stats_get(&st, sizeof st) == 0, "ms_stats_get");
  uint64_t v[] = {st.heap_allocated_bytes, st.heap_mapped_bytes, st.heap_cached_bytes, st.heap_large_bytes};
  for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++)
    CHECK(v[i] < ((uint64_t)1 << 60), "%s: heap statistic %u is %llu (below zero)", when, i, (unsigned long long)v[i]);
}

static void *thread_fn(void *arg) { return ms_malloc((size_t)(uintptr_t)arg); }

/* ---- RLIMIT_AS lowered at run time (setrlimit) below the heap's reservation (3.75 TiB of PROT_NONE): the kernel
   then refuses every new mapping, and a heap that kept its reservation would give nothing more, not even 100
   bytes, nor the program a thread stack. glibc serves 64 MiB of small blocks under a 256 MiB limit; so must the
   heap, then NULL + ENOMEM. ---- */
static void lowered_child(void) {
  ms_free(ms_malloc(100));
  ms_free(ms_malloc(3u << 20)); /* the large-block table mapped */
  struct rlimit rl = {256u << 20, 256u << 20};
  CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit: %s", strerror(errno));
  void *list = NULL;
  size_t n = 0;
  for (; n < (64u << 20) / 100; n++) { /* a chain of 100-byte blocks, each holding the previous one */
    void **b = ms_malloc(100);
    CHECK(b != NULL, "ms_malloc(100) number %zu failed (errno %d) after RLIMIT_AS was lowered to 256 MiB", n, errno);
    *b = list;
    list = b;
  }
  FILE *f = fopen("/proc/self/status", "r");
  CHECK(f != NULL, "fopen after RLIMIT_AS was lowered: %s", strerror(errno));
  fclose(f);
  pthread_t t;
  void *tp = NULL;
  CHECK(pthread_create(&t, NULL, thread_fn, (void *)(uintptr_t)1000) == 0, "pthread_create under the lowered limit");
  pthread_join(t, &tp);
  CHECK(tp != NULL, "ms_malloc in a new thread under the lowered limit");
  ms_free(tp);
  void *big[256];
  int nb = 0;
  for (; nb < 256; nb++) {
    errno = 0;
    big[nb] = ms_malloc(1u << 20);
    if (!big[nb]) { CHECK(errno == ENOMEM, "ms_malloc(1 MiB) NULL with errno %d", errno); break; }
    memset(big[nb], 1, 4096);
  }
  CHECK(nb > 16 && nb < 256, "%d blocks of 1 MiB under a 256 MiB limit", nb);
  for (int i = 0; i < nb; i++) ms_free(big[i]);
  while (list) {
    void **b = list;
    list = *b;
    ms_free(b);
  }
  void *p = ms_malloc(1u << 20);
  CHECK(p != NULL, "ms_malloc(1 MiB) after everything was freed");
  ms_free(p);
  ms_heap_collect(1);
  stats_sane("RLIMIT_AS lowered");
  printf("RLIMIT_AS lowered to 256 MiB: %zu small blocks, a thread, %d blocks of 1 MiB, then NULL + ENOMEM\n", n, nb);
  fflush(stdout);
}
static void limit_as_lowered(void **state) {
  (void)state;
  skip_tsan_maps();
  in_child(lowered_child, "RLIMIT_AS lowered");
}

/* ---- vm.max_map_count of 1,000, simulated without touching the system setting: the child fills all but 1,000 of
   the kernel's limit with mappings of its own, and tells the heap the limit it would have read. glibc serves 3,000
   blocks of 1.5 MB in a few dozen mappings (neighbours merge); so must the heap, where two mappings per block in
   its slots would fail from about the 500th, and every malloc after it, 100 bytes and fopen included. ---- */
static size_t count_maps(void) { /* lines of /proc/self/maps */
  int fd = open("/proc/self/maps", O_RDONLY);
  char buf[65536];
  size_t lines = 0;
  for (ssize_t got; fd >= 0 && (got = read(fd, buf, sizeof buf)) > 0;)
    for (char *q = buf; (q = memchr(q, '\n', (size_t)(buf + got - q))); q++) lines++;
  if (fd >= 0) close(fd);
  return lines;
}
/* fills all but `leave` of the kernel's mapping limit with the child's own mappings (alternate pages PROT_NONE /
   PROT_READ, one mapping each); the number of filler mappings */
static size_t fill_map_count(unsigned long leave) {
  unsigned long long max = 0;
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  if (!f || fscanf(f, "%llu", &max) != 1) { fprintf(stderr, "vm.max_map_count unreadable\n"); _exit(77); }
  fclose(f);
  if (max < 4 * leave) { fprintf(stderr, "vm.max_map_count is %llu already\n", max); _exit(77); }
  size_t pages = (size_t)(max - leave), ps = (size_t)sysconf(_SC_PAGESIZE);
  char *fill = mmap(NULL, pages * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(fill != MAP_FAILED, "filler mapping: %s", strerror(errno));
  for (size_t i = 1; i < pages; i += 2)
    CHECK(mprotect(fill + i * ps, ps, PROT_READ) == 0, "filler split %zu: %s", i, strerror(errno));
  return pages;
}

/* after large blocks: 10 MB of small blocks (new segments) and fopen, then everything freed */
static void small_after_large(void **b, int n, const char *when) {
  for (int i = 0; i < 100000; i++)
    CHECK(ms_malloc(100) != NULL, "ms_malloc(100) number %d failed %s", i, when);
  FILE *f = fopen("/proc/self/status", "r");
  CHECK(f != NULL, "fopen %s: %s", when, strerror(errno));
  fclose(f);
  for (int i = 0; i < n; i++) ms_free(b[i]);
  ms_heap_collect(1);
  stats_sane(when);
}

static void mapcount_child(void) {
  const unsigned long sim = 1000;
  size_t pages = fill_map_count(sim);
  msi_large_set_map_limit(sim);
  size_t before = count_maps();
  static void *b[3000];
  for (int i = 0; i < 3000; i++) {
    errno = 0;
    b[i] = ms_malloc(1500000);
    CHECK(b[i] != NULL, "block %d of 1.5 MB failed (errno %d) under a mapping limit of %lu (%zu mappings at the start)",
          i, errno, sim, before);
    ((char *)b[i])[i % 1500000] = 1;
  }
  size_t after = count_maps();
  small_after_large(b, 3000, "after 3,000 large blocks");
  printf("mapping limit %lu (simulated): 3,000 blocks of 1.5 MB, %zu mappings of the process before them, %zu after "
         "(with %zu filler)\n", sim, before - pages, after - pages, pages);
  fflush(stdout);
}
static void map_count_limit(void **state) {
  (void)state;
  skip_tsan_maps();
  in_child(mapcount_child, "vm.max_map_count");
}

/* ---- the same filler, the heap not told: its blocks reach the kernel's limit (~485 of 1.5 MB), and the refusal
   is NULL + ENOMEM; small blocks go on (a new segment split the reservation, which the kernel refuses at the limit:
   malloc stopped at the current segment's end, 35,685 blocks of 100 B, where glibc's brk heap grows) ---- */
static void exhausted_child(void) {
  fill_map_count(1000);
  static void *b[3000];
  int n = 0;
  for (; n < 3000; n++) {
    errno = 0;
    if (!(b[n] = ms_malloc(1500000))) break;
    ((char *)b[n])[0] = 1;
  }
  CHECK(n == 3000 || errno == ENOMEM, "block %d of 1.5 MB: NULL with errno %d", n, errno);
  small_after_large(b, n, "after the mapping limit refused a large block");
  printf("mapping limit reached by the process's own mappings: %d blocks of 1.5 MB, then small blocks go on\n", n);
  fflush(stdout);
}
static void map_count_exhausted(void **state) {
  (void)state;
  skip_tsan_maps();
  in_child(exhausted_child, "mapping limit reached");
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "--spill-probe")) return spill_probe(argv[2]);
  if (argc > 1 && !strcmp(argv[1], "--as-probe")) return as_probe();
  if (argc > 1 && !strcmp(argv[1], "--as-threads")) return as_threads_probe();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(limit_as), cmocka_unit_test(limit_as_threads), cmocka_unit_test(limit_memlock), cmocka_unit_test(limit_nofile),
    cmocka_unit_test(no_huge_pages), cmocka_unit_test(spill_read_only),
    cmocka_unit_test(no_privilege), cmocka_unit_test(limit_as_programs),
    cmocka_unit_test(limit_as_lowered), cmocka_unit_test(map_count_limit), cmocka_unit_test(map_count_exhausted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
