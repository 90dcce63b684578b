/* The promises of the ms_space_* declarations in include/memspace.h, one test each: pointers inside a block
   are refused (free, usable_size, realloc); a locked space takes no page fault on malloc/free (block-cache
   stacks locked too); expansion reuses only a returned region that holds the block asked for; a refused
   first-allocation commit is retried; every call sets errno on failure; MS_SPACE_ZERO zeroes every usable byte;
   destroyed handles are detected where the header says; a locked space in caller memory is unlocked at destroy;
   a refused lock is EPERM; a space the machine cannot back is refused up front (library, process space and
   `memspace run`); aligned_alloc up to the data range's alignment never fails for alignment. Calls that report
   a bad pointer or handle run with MEMSPACE_SECURE off (the death tests cover the fatal mode). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "route.h"
#include "../../src/space/space_internal.h"
#include "space_test.h"
#include "ms_test.h"

static char *self;

/* bad pointers and handles are reported and ignored (not fatal) in this build and mode */
static void lenient(void) {
#if (defined(MEMSPACE_DEBUG) && MEMSPACE_DEBUG) || (defined(MEMSPACE_SECURE_BUILD) && MEMSPACE_SECURE_BUILD)
  ms_skip_refused(0, "this build makes bad pointers fatal (test_space_death covers that)");
#endif
  ms_option_set(MS_OPTION_SECURE, 0);
}

/* RAM + swap of this machine, in bytes */
static uint64_t machine_bytes(void) {
  struct sysinfo si;
  assert_int_equal(sysinfo(&si), 0);
  return ((uint64_t)si.totalram + si.totalswap) * si.mem_unit;
}

/* runs argv with the given environment added ("NAME=value", NULL-terminated); stderr into err; the wait status */
static int run_argv(char *const argv[], char *const env[], char *err, size_t cap) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    for (char *const *e = env; *e; e++) putenv(*e);
    execv(argv[0], argv);
    _exit(99);
  }
  close(fds[1]);
  size_t used = 0;
  ssize_t r;
  while (used + 1 < cap && (r = read(fds[0], err + used, cap - 1 - used)) > 0) used += (size_t)r;
  err[used] = 0;
  close(fds[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return st;
}

/* runs this binary with `mode` */
static int run_mode(const char *mode, char *const env[], char *err, size_t cap) {
  char *argv[] = {self, (char *)mode, NULL};
  return run_argv(argv, env, err, cap);
}

/* runs `mode` in a child: passes on exit 0, skips on 77 (printing the child's reason), else fails */
static void expect_child(const char *mode) {
  char err[4096];
  char *env[] = {NULL};
  int st = run_mode(mode, env, err, sizeof err);
  assert_true(WIFEXITED(st));
  if (WEXITSTATUS(st) == 77) ms_skip_refused(0, "the child could not run: %s", err);
  if (WEXITSTATUS(st) != 0) fail_msg("status %d: %s", WEXITSTATUS(st), err);
}

/* ---- #21-1: a pointer inside a block's first granule is not the block ---- */
static void interior_pointers_refused(void **state) {
  (void)state;
  lenient();
  for (unsigned flags = 0; flags <= MS_SPACE_THREAD_SAFE; flags += MS_SPACE_THREAD_SAFE) { /* fast and locked paths */
    ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_START, flags);
    assert_non_null(s);
    char *p = ms_space_malloc(s, 32), *q = ms_space_malloc(s, 32);
    assert_non_null(p);
    assert_non_null(q);
    memset(q, 0x5a, 32);
    for (int d = 1; d < 16; d += 7) {
      errno = 0;
      ms_space_free(s, p + d);
      assert_int_equal(errno, EINVAL);
      assert_int_equal(ms_space_usable_size(s, p + d), 0);
      errno = 0;
      assert_null(ms_space_realloc(s, p + d, 256));
      assert_int_equal(errno, EINVAL);
    }
    assert_int_equal(ms_space_usable_size(s, p), 32);
    char *r = ms_space_malloc(s, 32);
    assert_non_null(r);
    assert_int_equal((uintptr_t)r % 16, 0);
    assert_true(r != p);
    memset(r, 0x11, 32);
    for (int i = 0; i < 32; i++) assert_int_equal((unsigned char)q[i], 0x5a);
    /* a large block: its interior pointers too */
    char *big = ms_space_malloc(s, 8192);
    assert_non_null(big);
    errno = 0;
    ms_space_free(s, big + 5);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(ms_space_usable_size(s, big + 5), 0);
    assert_int_equal(ms_space_check(s), 0);
    ms_space_free(s, big);
    ms_space_free(s, p);
    ms_space_free(s, q);
    ms_space_free(s, r);
    assert_int_equal(ms_space_check(s), 0);
    ms_space_destroy(s);
  }
}

/* ---- #21-5: a locked space with an expand size takes no page fault in malloc/free ---- */
static long minor_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static void churn(ms_space_t *s) {
  void *keep[64];
  for (int round = 0; round < 300; round++) {
    for (unsigned k = 4; k <= 20; k++) { /* every cached order and beyond */
      char *p = ms_space_malloc(s, (size_t)1 << k);
      if (!p) _exit(3);
      p[0] = 1;
      ms_space_free(s, p);
    }
    for (int i = 0; i < 64; i++) keep[i] = ms_space_malloc(s, 16u << (i % 12));
    for (int i = 0; i < 64; i++) ms_space_free(s, keep[i]);
  }
}

static int faults_child(void) {
  for (int thp = 1; thp >= 0; thp--) { /* transparent huge pages allowed, then not (every 4 KiB page counts) */
    prctl(PR_SET_THP_DISABLE, !thp, 0, 0, 0);
    for (size_t init = 1 << 20; init <= (8 << 20); init *= 8) { /* data below and above a huge page */
      ms_space_t *warm = make(init, 8 << 20, MS_SPACE_AT_START, MS_SPACE_LOCKED);
      if (!warm) {
        fprintf(stderr, "SKIP: mlock refused: %s\n", strerror(errno));
        return 77;
      }
      churn(warm); /* code, stack and libc pages of the loop are resident now */
      ms_space_destroy(warm);
      ms_space_t *s = make(init, 8 << 20, MS_SPACE_AT_START, MS_SPACE_LOCKED);
      if (!s) return 4;
      long before = minor_faults();
      churn(s);
      long faults = minor_faults() - before;
      ms_space_destroy(s);
      if (faults) {
        fprintf(stderr, "%ld page faults in malloc/free of a locked %zu-byte space (THP %s)\n", faults, init,
                thp ? "on" : "off");
        return 1;
      }
    }
  }
  return 0;
}

static void locked_space_takes_no_fault(void **state) {
  (void)state;
  if (MS_TEST_MLOCK_NOOP) ms_skip_refused(0, MS_TEST_MLOCK_NOOP_WHY); /* (a locked space is not locked there) */
  expect_child("--faults");
}

/* ---- #21-8: expansion never reuses a returned region without the block asked for ---- */
static void expansion_reuses_only_fitting_regions(void **state) {
  (void)state;
  const size_t M = 1 << 20;
  ms_space_t *s = make(M, M, MS_SPACE_AT_START, 0);
  assert_non_null(s);
  void *r0 = ms_space_malloc(s, M);   /* fills the initial region [0, 1M) */
  assert_non_null(r0);
  assert_int_equal(ms_space_expand(s, 2 * M), 0); /* [1M, 3M): no 2 MiB-aligned 2 MiB block */
  assert_int_equal(ms_space_expand(s, M), 0);     /* [3M, 4M) */
  void *a = ms_space_malloc(s, M), *b = ms_space_malloc(s, M), *c = ms_space_malloc(s, M);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  ms_space_free(s, a);
  ms_space_free(s, b);
  assert_int_equal(ms_space_shrink(s), 2 * M); /* [1M, 3M) returned; [3M, 4M) stays (c) */
  void *big = ms_space_malloc(s, 2 * M);
  assert_non_null(big);
  assert_int_equal((uintptr_t)big % (2 * M), 0);
  ms_space_info_t in;
  assert_int_equal(ms_space_info(s, &in), 0);
  assert_int_equal(in.oom_count, 0);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
}

/* ---- #21-9: a refused first-allocation commit is retried at the next allocation ---- */
static void firstalloc_commit_retried(void **state) {
  (void)state;
  ms_space_t *probe = make(1 << 20, 0, MS_SPACE_AT_START, MS_SPACE_LOCKED);
  if (!probe) ms_skip_refused(errno, "a locked space of 1 MiB");
  ms_space_destroy(probe);
  ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_FIRSTALLOC, MS_SPACE_LOCKED);
  assert_non_null(s);
  ms_fault_inject(MS_FAULT_MLOCK, 1, ENOMEM); /* the lock is refused once, as by RLIMIT_MEMLOCK */
  errno = 0;
  assert_null(ms_space_malloc(s, 100));
  assert_int_equal(errno, ENOMEM);
  ms_fault_inject(MS_FAULT_MLOCK, 0, 0);
  void *p = ms_space_malloc(s, 100); /* headroom is back: the commit is retried */
  assert_non_null(p);
  ms_space_info_t in;
  assert_int_equal(ms_space_info(s, &in), 0);
  assert_int_equal(in.size, 1 << 20);
  assert_int_equal(in.oom_count, 1);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_free(s, p);
  ms_space_destroy(s);
}

/* ---- #21-10: every call sets errno on failure ---- */
static int visit_none(const void *b, size_t n, int used, void *arg) { (void)b, (void)n, (void)used, (void)arg; return 0; }

static void errno_on_failure(void **state) {
  (void)state;
  ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_START, 0);
  assert_non_null(s);
  static char mem[1 << 16] __attribute__((aligned(64)));
  ms_space_t *in = ms_space_create_in(mem, sizeof mem, 0);
  assert_non_null(in);
  ms_space_info_t info;
  errno = 0; assert_int_equal(ms_space_expand(NULL, 4096), EINVAL); assert_int_equal(errno, EINVAL);
  errno = 0; assert_int_equal(ms_space_expand(s, 0), EINVAL); assert_int_equal(errno, EINVAL);
  errno = 0; assert_int_equal(ms_space_expand(in, 4096), ENOMEM); assert_int_equal(errno, ENOMEM);
  errno = 0; assert_int_equal(ms_space_expand(s, SIZE_MAX - 4095), ENOMEM); assert_int_equal(errno, ENOMEM);
  errno = 0; assert_int_equal(ms_space_info(NULL, &info), EINVAL); assert_int_equal(errno, EINVAL);
  errno = 0; assert_int_equal(ms_space_info(s, NULL), EINVAL); assert_int_equal(errno, EINVAL);
  errno = 0; assert_int_equal(ms_space_check(NULL), EINVAL); assert_int_equal(errno, EINVAL);
  errno = 0; assert_int_equal(ms_space_walk(NULL, visit_none, NULL), EINVAL); assert_int_equal(errno, EINVAL);
  errno = 0; assert_int_equal(ms_space_walk(s, NULL, NULL), EINVAL); assert_int_equal(errno, EINVAL);
  errno = 0; assert_int_equal(ms_space_shrink(NULL), 0); assert_int_equal(errno, EINVAL);
  ms_space_destroy(in);
  ms_space_destroy(s);
}

/* ---- #21-11: MS_SPACE_ZERO zeroes every usable byte, on malloc, calloc, aligned_alloc and realloc ---- */
static uint64_t rng = 42;
static uint64_t rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static void all_zero(const unsigned char *p, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (p[i]) fail_msg("byte %zu of a %zu-byte block is %#x, not zero", i, to, p[i]);
}

static void zero_flag_zeroes_usable_size(void **state) {
  (void)state;
  ms_space_t *s = make(4 << 20, 0, MS_SPACE_AT_START, MS_SPACE_ZERO);
  assert_non_null(s);
  unsigned char *held[64] = {0};
  for (int it = 0; it < 4000; it++) {
    int i = (int)(rnd() % 64);
    if (held[i]) { /* dirty every usable byte, then realloc (grow) or free */
      size_t n = ms_space_usable_size(s, held[i]);
      memset(held[i], 0xa5, n);
      if (n < 16384 && rnd() % 3 == 0) {
        unsigned char *q = ms_space_realloc(s, held[i], n + 1 + rnd() % (2 * n));
        assert_non_null(q);
        all_zero(q, n, ms_space_usable_size(s, q));
        memset(q, 0xa5, ms_space_usable_size(s, q));
        held[i] = q;
        continue;
      }
      ms_space_free(s, held[i]);
      held[i] = NULL;
      continue;
    }
    size_t size = 1 + rnd() % 5000;
    int how = (int)(rnd() % 3);
    held[i] = how == 0 ? ms_space_malloc(s, size) : how == 1 ? ms_space_calloc(s, 1, size)
                                                              : ms_space_aligned_alloc(s, 64, size);
    assert_non_null(held[i]);
    all_zero(held[i], 0, ms_space_usable_size(s, held[i]));
  }
  for (int i = 0; i < 64; i++) ms_space_free(s, held[i]);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
}

/* ---- #21-13: destroyed handles ---- */
static void destroyed_handles_detected(void **state) {
  (void)state;
  lenient();
  ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_START, 0);
  assert_non_null(s);
  ms_space_destroy(s);
  errno = 0;
  ms_space_destroy(s); /* double destroy: reported, ignored */
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_space_check(s), EINVAL);
  assert_int_equal(errno, EINVAL);
  ms_space_info_t info;
  assert_int_equal(ms_space_info(s, &info), EINVAL);
  assert_int_equal(ms_space_walk(s, visit_none, NULL), EINVAL);
  assert_int_equal(ms_space_expand(s, 4096), EINVAL);
  errno = 0;
  assert_int_equal(ms_space_shrink(s), 0);
  assert_int_equal(errno, EINVAL);
  /* a space in caller memory: every call sees the cleared magic */
  static char mem[1 << 18] __attribute__((aligned(4096)));
  for (unsigned flags = 0; flags <= MS_SPACE_THREAD_SAFE; flags += MS_SPACE_THREAD_SAFE) {
    ms_space_t *in = ms_space_create_in(mem, sizeof mem, flags);
    assert_non_null(in);
    void *p = ms_space_malloc(in, 64), *big = ms_space_malloc(in, 100000);
    assert_non_null(p);
    assert_non_null(big);
    ms_space_destroy(in);
    errno = 0;
    assert_null(ms_space_malloc(in, 64));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(ms_space_malloc(in, 100000));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(ms_space_calloc(in, 1, 64));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(ms_space_aligned_alloc(in, 64, 64));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(ms_space_realloc(in, p, 128));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    ms_space_free(in, p);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(ms_space_usable_size(in, big), 0);
    errno = 0;
    ms_space_destroy(in);
    assert_int_equal(errno, EINVAL);
  }
}

/* ---- #21-7: destroying a locked space in caller memory unlocks it ---- */
static long vm_locked_kb(void) {
  char buf[4096];
  int fd = open("/proc/self/status", O_RDONLY);
  assert_true(fd >= 0);
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  assert_true(n > 0);
  buf[n] = 0;
  const char *l = strstr(buf, "VmLck:");
  assert_non_null(l);
  return atol(l + 6);
}

static void create_in_locked_unlocks_at_destroy(void **state) {
  (void)state;
  if (MS_TEST_MLOCK_NOOP) ms_skip_refused(0, MS_TEST_MLOCK_NOOP_WHY);
  size_t len = 1 << 20;
  void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(mem != MAP_FAILED);
  long before = vm_locked_kb();
  ms_space_t *s = ms_space_create_in(mem, len, MS_SPACE_LOCKED);
  if (!s) {
    int e = errno;
    munmap(mem, len);
    ms_skip_refused(e, "a locked space in 1 MiB of caller memory");
  }
  assert_true(vm_locked_kb() >= before + 1024);
  ms_space_destroy(s);
  assert_int_equal(vm_locked_kb(), before);
  munmap(mem, len);
}

/* ---- #21-14: a refused lock is EPERM (as an ordinary user under a small RLIMIT_MEMLOCK) ---- */
static int lock_child(void) {
  if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                         setresuid(65534, 65534, 65534) != 0)) {
    fprintf(stderr, "SKIP: cannot become an ordinary user: %s\n", strerror(errno));
    return 77;
  }
  int code = 0;
  for (rlim_t lim = 65536;; lim = 0) { /* a small limit (the kernel says ENOMEM), then none (EPERM) */
    struct rlimit rl = {lim, lim};
    if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) return 5;
    errno = 0;
    ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_START, MS_SPACE_LOCKED);
    if (s || errno != EPERM) {
      fprintf(stderr, "limit %llu: create: %p errno %d, not NULL + EPERM\n", (unsigned long long)lim, (void *)s, errno);
      ms_space_destroy(s);
      code = 1;
    }
    ms_space_t *f = make(1 << 20, 0, MS_SPACE_AT_FIRSTALLOC, MS_SPACE_LOCKED);
    if (!f) return 6;
    errno = 0;
    if (ms_space_expand(f, 1 << 20) != EPERM || errno != EPERM) {
      fprintf(stderr, "limit %llu: expand: errno %d, not EPERM\n", (unsigned long long)lim, errno);
      code = 1;
    }
    ms_space_destroy(f);
    void *mem = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    errno = 0;
    ms_space_t *in = ms_space_create_in(mem, 1 << 20, MS_SPACE_LOCKED);
    if (in || errno != EPERM) {
      fprintf(stderr, "limit %llu: create_in: %p errno %d, not NULL + EPERM\n", (unsigned long long)lim, (void *)in, errno);
      ms_space_destroy(in);
      code = 1;
    }
    munmap(mem, 1 << 20);
    if (!lim) break;
  }
  return code;
}

static void refused_lock_is_eperm(void **state) {
  (void)state;
  if (MS_TEST_MLOCK_NOOP) ms_skip_refused(0, MS_TEST_MLOCK_NOOP_WHY);
  expect_child("--lock");
}

/* ---- #25-13: a space larger than the machine is refused up front ---- */
static int backing_child(void) {
  /* MEMSPACE_SPACE_INITIAL is twice the machine: the process space is refused at start, malloc fails */
  errno = 0;
  void *p = msi_proc_space_malloc(100, 0, false);
  return !p && errno == ENOMEM && !msi_proc_space_get() ? 0 : 1;
}

static void unbackable_space_refused(void **state) {
  (void)state;
  uint64_t too_big = 2 * machine_bytes();
  errno = 0;
  /* at first allocation: only reserved at creation, so the unchanged tree fails here without committing */
  assert_null(make((size_t)too_big, 0, MS_SPACE_AT_FIRSTALLOC, 0));
  assert_int_equal(errno, ENOMEM);
  errno = 0;
  assert_null(make((size_t)too_big, 0, MS_SPACE_AT_START, MS_SPACE_LOCKED));
  assert_int_equal(errno, ENOMEM);
  /* an expansion beyond it too (the reserve has room for it) */
  ms_space_t *s = make(1 << 20, 1 << 30, MS_SPACE_AT_START, 0);
  assert_non_null(s);
  errno = 0;
  assert_int_equal(ms_space_expand(s, (size_t)too_big), ENOMEM);
  assert_int_equal(errno, ENOMEM);
  ms_space_info_t in;
  assert_int_equal(ms_space_info(s, &in), 0);
  assert_int_equal(in.size, 1 << 20);
  ms_space_destroy(s);
  /* the process space: one line naming the limit, malloc fails with ENOMEM */
  char err[4096], env_initial[64];
  snprintf(env_initial, sizeof env_initial, "MEMSPACE_SPACE_INITIAL=%llu", (unsigned long long)too_big);
  char *env[] = {env_initial, "MEMSPACE_SPACE_AT=firstalloc", NULL};
  int st = run_mode("--backing", env, err, sizeof err);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("process space: status %#x: %s", st, err);
  if (!strstr(err, "cannot be backed: more than")) fail_msg("process space: no message naming the limit: %s", err);
  /* memspace run: exit 2 with the reason, the program never started */
  char size[32];
  snprintf(size, sizeof size, "%llu", (unsigned long long)too_big);
  char *run[] = {MEMSPACE_BINARY_DIR "/memspace", "run", "--space-initial", size, "--space-at", "firstalloc", "--",
                 "/nonexistent/program", NULL};
  char *none[] = {NULL};
  st = run_argv(run, none, err, sizeof err);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 2) fail_msg("memspace run: status %#x: %s", st, err);
  if (!strstr(err, "cannot be backed: more than")) fail_msg("memspace run: no reason given: %s", err);
}

/* ---- #25-14: aligned blocks up to the data range's alignment never fail for their alignment ---- */
static int aligned_child(void) {
  /* the process space of the report, smaller: every power-of-two alignment, sizes 1, al, 3 al, 100 */
  for (int round = 0; round < 2; round++)
    for (size_t al = 8; al <= (4 << 20); al *= 2) {
      size_t sizes[] = {1, al, 3 * al, 100};
      for (int i = 0; i < 4; i++) {
        void *p = msi_proc_space_malloc(sizes[i], al, false);
        if (!p || (uintptr_t)p % al) {
          fprintf(stderr, "alignment %zu size %zu: %p (errno %d)\n", al, sizes[i], p, errno);
          return 1;
        }
        msi_proc_space_free(p);
      }
    }
  return 0;
}

static void aligned_alloc_up_to_range_alignment(void **state) {
  (void)state;
  for (int i = 0; i < 8; i++) { /* one data range in 8 was 16 MiB-aligned before */
    ms_space_t *s = make(32 << 20, 0, MS_SPACE_AT_FIRSTALLOC, 0);
    assert_non_null(s);
    void *p = ms_space_aligned_alloc(s, 16 << 20, 1);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % (16 << 20), 0);
    ms_space_free(s, p);
    ms_space_destroy(s);
  }
  char err[4096];
  char *env[] = {"MEMSPACE_SPACE_INITIAL=64M", "MEMSPACE_SPACE_EXPAND=16M", "MEMSPACE_SPACE_AT=firstalloc", NULL};
  for (int run = 0; run < 6; run++) { /* each run reserves its own range */
    int st = run_mode("--aligned", env, err, sizeof err);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("run %d: status %#x: %s", run, st, err);
  }
}

/* ---- a locked space's hot metadata: its first 2 MiB locked and pre-faulted as one range ----
   The struct, the block-cache stacks, the bitmap summaries, the leaves of the orders the block cache does not
   hold and the start of the allocation map come first in the metadata; locked in slices they fell on many small
   mappings of 4 KiB pages (one page walk each after a TLB flush); locked whole they form one mapping that can be
   one transparent huge page. Checked in /proc/self/smaps: the mapping that starts at the space's struct (the
   handle) has at least 2 MiB locked. */
static long smaps_field(uintptr_t start, const char *field) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  int in = 0;
  long v = -1;
  size_t fl = strlen(field);
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) in = lo == start;
    else if (in && strncmp(line, field, fl) == 0 && line[fl] == ':') { v = atol(line + fl + 1); break; }
  }
  fclose(f);
  return v;
}

static void hot_metadata_locked_whole(void **state) {
  (void)state;
  if (MS_TEST_MLOCK_NOOP) ms_skip_refused(0, MS_TEST_MLOCK_NOOP_WHY);
  /* 32 MiB fixed: a 128 MiB reserve, about 6 MiB of metadata (above 4 MiB, where it is locked in slices) */
  ms_space_config_t c = {.initial_size = 32 << 20, .at = MS_SPACE_AT_START, .flags = MS_SPACE_LOCKED,
                         .numa_node = -1, .name = "hot"};
  ms_space_t *s = ms_space_create(&c);
  if (!s) ms_skip_refused(errno, "a locked space of 32 MiB");
  long locked = smaps_field((uintptr_t)s, "Locked"), thp = smaps_field((uintptr_t)s, "AnonHugePages");
  if (locked < 2048)
    fprintf(stderr, "the mapping at the space's struct %p has %ld kB locked, not the whole first 2 MiB\n", (void *)s,
            locked);
  else if (thp < 2048)
    fprintf(stderr, "note: the hot metadata is on 4 KiB pages (AnonHugePages %ld kB: THP off or no free huge page)\n", thp);
  void *p = ms_space_malloc(s, 4 << 20);
  assert_non_null(p);
  ms_space_free(s, p);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
  assert_true(locked >= 2048);
}

/* An ordinary user whose RLIMIT_MEMLOCK holds a locked space's data and metadata slices but not 2 MiB more: the
   whole hot prefix is refused, the space locks its slices instead and is created (1 MiB of data, a reserve of
   about 1 GiB: more than 4 MiB of metadata, where the slices are used). */
static int hotlock_child(void) {
  if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                         setresuid(65534, 65534, 65534) != 0)) {
    fprintf(stderr, "SKIP: cannot become an ordinary user: %s\n", strerror(errno));
    return 77;
  }
  struct rlimit rl = {2 << 20, 2 << 20};
  if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) return 5;
  ms_space_t *s = make(1 << 20, 64 << 20, MS_SPACE_AT_START, MS_SPACE_LOCKED);
  if (!s) {
    fprintf(stderr, "a locked 1 MiB space under a 2 MiB RLIMIT_MEMLOCK refused: %s\n", strerror(errno));
    return 1;
  }
  void *p = ms_space_malloc(s, 512 << 10);
  int code = !p || ms_space_check(s) != 0;
  ms_space_free(s, p);
  ms_space_destroy(s);
  return code;
}

static void hot_prefix_refused_falls_back(void **state) {
  (void)state;
  expect_child("--hotlock");
}

/* ---- docs/contract.md §4: the config's name is shown in the statistics (space_N lines), text and JSON ---- */
static char stats_text[1 << 16];
static void stats_sink(const char *text, void *arg) {
  size_t *n = arg;
  size_t len = strlen(text);
  if (*n + len < sizeof stats_text) memcpy(stats_text + *n, text, len), *n += len, stats_text[*n] = 0;
}
static void name_shown_in_stats(void **state) {
  (void)state;
  char name[] = "audio-in";
  ms_space_config_t c = {.initial_size = 1 << 20, .numa_node = -1, .name = name};
  ms_space_t *s = ms_space_create(&c);
  assert_non_null(s);
  ms_space_t *anon = ms_space_create(&(ms_space_config_t){.initial_size = 1 << 20, .numa_node = -1}); /* (unnamed) */
  assert_non_null(anon);
  assert_non_null(ms_space_malloc(s, 1000));
  name[0] = 'X'; /* copied at creation: the caller's buffer may change */
  size_t n = 0;
  ms_stats_print(stats_sink, &n, 0);
  if (!strstr(stats_text, "audio-in: 1048576 bytes, 1024 used"))
    fail_msg("the space's name is not in the statistics:\n%s", stats_text);
  assert_non_null(strstr(stats_text, "(unnamed): 1048576 bytes, 0 used"));
  n = 0;
  ms_stats_print(stats_sink, &n, MS_STATS_JSON);
  if (!strstr(stats_text, "\"audio-in: 1048576 bytes"))
    fail_msg("the space's name is not in the JSON statistics:\n%s", stats_text);
  ms_space_destroy(anon);
  ms_space_destroy(s);
  n = 0;
  ms_stats_print(stats_sink, &n, 0);
  assert_null(strstr(stats_text, "audio-in")); /* destroyed: no longer listed */
}

/* ms_stats_print's output callback is the caller's code and may call the library: a space call from it (and a
   nested ms_stats_print, which lists the spaces again) works, where the space_N lines written under the registry's
   lock made it abort as a re-entry. In a child: the failure is an abort. A name's control bytes do not split the
   line. */
static ms_space_t *print_space;
static int print_calls, print_depth;
static void print_reentering(const char *text, void *arg) {
  (void)arg;
  if (strstr(text, "line\nbreak")) _exit(13);
  print_calls++;
  ms_space_info_t info;
  if (ms_space_info(print_space, &info) != 0) _exit(12);
  ms_space_t *t = ms_space_create(&(ms_space_config_t){.initial_size = 1 << 16, .numa_node = -1});
  if (!t) _exit(14);
  ms_space_destroy(t);
  if (print_depth++ == 0) ms_stats_print(print_reentering, NULL, 0);
  print_depth--;
}
static int print_reentering_child(void) {
  print_space = ms_space_create(&(ms_space_config_t){.initial_size = 1 << 20, .numa_node = -1, .name = "line\nbreak"});
  if (!print_space) return 10;
  ms_stats_print(print_reentering, NULL, 0);
  ms_stats_print(print_reentering, NULL, MS_STATS_JSON);
  ms_space_destroy(print_space);
  return print_calls > 0 ? 0 : 11;
}
static void stats_print_callback_reenters(void **state) {
  (void)state;
  assert_int_equal(ms_test_in_child(print_reentering_child), 0);
}

/* The space_N lines are one snapshot of the spaces: an output callback that creates a space, or destroys the one
   just listed, between two lines neither repeats a space nor drops one (lines each taken under the registry's
   lock by position would repeat the one before after a space created, and skip one after a space destroyed) */
static ms_space_t *listed[3];
static ms_space_t *made;
static int list_action; /* 1: create a space at the space_0 line; 2: there, destroy listed[2] (listed next) */
static void listing_sink(const char *text, void *arg) {
  stats_sink(text, arg);
  if (!strstr(text, "space_0")) return;
  if (list_action == 1 && !made)
    made = ms_space_create(&(ms_space_config_t){.initial_size = 1 << 16, .numa_node = -1, .name = "late"});
  if (list_action == 2 && listed[2]) {
    ms_space_destroy(listed[2]);
    listed[2] = NULL;
  }
}
static int count_of(const char *text, const char *what) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
  return n;
}
static void stats_listing_is_a_snapshot(void **state) {
  (void)state;
  const char *names[3] = {"list-a:", "list-b:", "list-c:"};
  for (int i = 0; i < 3; i++) {
    listed[i] = ms_space_create(&(ms_space_config_t){.initial_size = 1 << 16, .numa_node = -1, .name = names[i]});
    assert_non_null(listed[i]);
  }
  for (list_action = 1; list_action <= 2; list_action++) {
    size_t n = 0;
    stats_text[0] = 0;
    ms_stats_print(listing_sink, &n, 0);
    for (int i = 0; i < 3; i++)
      if (count_of(stats_text, names[i]) != 1)
        fail_msg("%s listed %d times (callback action %d):\n%s", names[i], count_of(stats_text, names[i]), list_action,
                 stats_text);
    if (list_action == 1) assert_int_equal(count_of(stats_text, "late:"), 0); /* created after the snapshot */
  }
  assert_non_null(made);
  ms_space_destroy(made);
  ms_space_destroy(listed[1]);
  ms_space_destroy(listed[0]);
}

int main(int argc, char **argv) {
  self = argv[0];
  if (argc > 1 && strcmp(argv[1], "--faults") == 0) return faults_child();
  if (argc > 1 && strcmp(argv[1], "--lock") == 0) return lock_child();
  if (argc > 1 && strcmp(argv[1], "--hotlock") == 0) return hotlock_child();
  if (argc > 1 && strcmp(argv[1], "--backing") == 0) return backing_child();
  if (argc > 1 && strcmp(argv[1], "--aligned") == 0) return aligned_child();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(interior_pointers_refused),     cmocka_unit_test(locked_space_takes_no_fault),
      cmocka_unit_test(expansion_reuses_only_fitting_regions), cmocka_unit_test(firstalloc_commit_retried),
      cmocka_unit_test(errno_on_failure),              cmocka_unit_test(zero_flag_zeroes_usable_size),
      cmocka_unit_test(destroyed_handles_detected),    cmocka_unit_test(create_in_locked_unlocks_at_destroy),
      cmocka_unit_test(refused_lock_is_eperm),         cmocka_unit_test(unbackable_space_refused),
      cmocka_unit_test(aligned_alloc_up_to_range_alignment), cmocka_unit_test(hot_metadata_locked_whole),
      cmocka_unit_test(hot_prefix_refused_falls_back),     cmocka_unit_test(name_shown_in_stats),
      cmocka_unit_test(stats_print_callback_reenters), cmocka_unit_test(stats_listing_is_a_snapshot),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
