/* SPDX-License-Identifier: MIT */
/* test_spill: the spill API directly (msi_spill_* of route.h and ms_spill_*), and one scenario per process
   through spill_helper (directory refused or missing, RLIMIT_FSIZE, kill -9, fork, 100,000 blocks, realloc). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "ms_test.h"
#include "os.h"
#include "route.h"
#include "fake_files.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
#define HELPER MEMSPACE_BINARY_DIR "/spill_helper"

static void test_basic(void **state) {
  (void)state;
  size_t n = 5 << 20;
  unsigned char *p = msi_spill_malloc(n, 0, true);
  assert_non_null(p);
  assert_true(msi_spill_owns(p));
  assert_true(ms_spill_is(p));
  assert_true(ms_spill_is(p + n - 1));
  assert_true(msi_spill_usable_size(p) >= n);
  for (size_t i = 0; i < n; i += 4096) assert_int_equal(p[i], 0); /* calloc: file pages read as zero */
  memset(p, 0xab, n);
  ms_stats_t st;
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  assert_int_equal(st.spill_blocks, 1);
  assert_true(st.spill_disk_bytes >= n);
  msi_spill_free(p);
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  assert_int_equal(st.spill_blocks, 0);
  assert_true(st.spill_disk_bytes < n); /* released at once */
  /* the slot is reused and reads as zero again */
  unsigned char *q = msi_spill_malloc(n, 0, true);
  assert_non_null(q);
  for (size_t i = 0; i < n; i += 4096) assert_int_equal(q[i], 0);
  msi_spill_free(q);
  assert_false(msi_spill_owns(&n));
  assert_false(ms_spill_is(NULL));
  /* the public pair: ms_spill_alloc backs the block with a file (its mapping names one), its disk reserved at once
     (the statistics count it before a byte is written); ms_spill_free gives the disk back at once */
  unsigned char *r = ms_spill_alloc(n);
  assert_non_null(r);
  assert_true(ms_spill_is(r) && ms_spill_is(r + n - 1));
  char maps_line[4096] = "";
  FILE *maps = fopen("/proc/self/maps", "r");
  assert_non_null(maps);
  while (fgets(maps_line, sizeof maps_line, maps)) {
    unsigned long lo, hi;
    if (sscanf(maps_line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)r >= lo && (uintptr_t)r < hi) break;
    maps_line[0] = 0;
  }
  fclose(maps);
  if (!strchr(maps_line, '/')) fail_msg("the block of ms_spill_alloc is not a file's mapping: '%s'", maps_line);
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  assert_int_equal(st.spill_blocks, 1);
  assert_true(st.spill_disk_bytes >= n);
  memset(r, 0x5a, n);
  ms_spill_free(r);
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  assert_int_equal(st.spill_blocks, 0);
  assert_true(st.spill_disk_bytes < n);
}

/* malloc served by spill (a block at or above the threshold) leaves the caller's errno as it was: C's library
   functions never set errno to zero */
static void test_routed_keeps_errno(void **state) {
  (void)state;
  if (!MS_TEST_OVERRIDE) /* (tests/spill/CMakeLists.txt) */
    ms_skip_refused(0, "this build has no override layer (a sanitizer build): malloc is not memspace's");
  long long old = ms_option_get(MS_OPTION_SPILL_THRESHOLD);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, 1 << 20), 0);
  errno = EINTR;
  void *p = malloc(4 << 20);
  assert_non_null(p);
  assert_true(ms_spill_is(p));
  assert_int_equal(errno, EINTR);
  free(p);
  assert_int_equal(ms_option_set(MS_OPTION_SPILL_THRESHOLD, old), 0);
}

static void test_aligned(void **state) {
  (void)state;
  void *p = msi_spill_malloc(5000, (size_t)1 << 20, false);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p & ((1 << 20) - 1), 0);
  msi_spill_free(p);
  errno = 0;
  assert_null(msi_spill_malloc(5000, 3, false));
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_null(msi_spill_malloc(SIZE_MAX - 10, 0, false));
  assert_int_equal(errno, ENOMEM);
  errno = 0;
  assert_null(ms_spill_alloc(SIZE_MAX - 8191)); /* (a wrapped class mapped the file at address 0) */
  assert_int_equal(errno, ENOMEM);
  errno = 0;
  assert_null(msi_spill_malloc(4096, SIZE_MAX / 2 + 1, false)); /* beyond the largest class: RAM (errno 0) */
  assert_int_equal(errno, 0);
}

static void test_fallocate_failure(void **state) {
  (void)state;
  void *warm = msi_spill_malloc(4 << 20, 0, false); /* files exist; 4 MiB: a block of its own granules (a smaller one may share a reserved granule) */
  assert_non_null(warm);
  ms_fault_inject(MS_FAULT_FALLOCATE, 1, ENOSPC);
  errno = 0;
  assert_null(msi_spill_malloc(4 << 20, 0, false));
  assert_int_equal(errno, ENOMEM);
  ms_fault_inject(MS_FAULT_FALLOCATE, 0, 0);
  void *p = msi_spill_malloc(4 << 20, 0, false);
  assert_non_null(p);
  msi_spill_free(p);
  msi_spill_free(warm);
}

static void test_realloc_direct(void **state) {
  (void)state;
  size_t n = 3 << 20;
  unsigned char *p = msi_spill_malloc(n, 0, false);
  assert_non_null(p);
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7);
  unsigned char *q = msi_spill_realloc(p, 4 << 20); /* same slot: in place */
  assert_ptr_equal(p, q);
  q = msi_spill_realloc(q, 64 << 20);               /* beyond the slot: moved inside the kernel */
  assert_non_null(q);
  for (size_t i = 0; i < n; i++) assert_int_equal(q[i], (unsigned char)(i * 7));
  for (size_t i = 4 << 20; i < (size_t)(64 << 20); i += 4096) assert_int_equal(q[i], 0);
  unsigned char *r = msi_spill_realloc(q, 1 << 20);  /* shrink in place */
  assert_ptr_equal(q, r);
  for (size_t i = 0; i < (1 << 20); i++) assert_int_equal(r[i], (unsigned char)(i * 7));
  errno = 0;
  assert_null(msi_spill_realloc(&n, 10));
  assert_int_equal(errno, EINVAL);
  msi_spill_free(r);
}

/* Blocks under 2 MiB share 2 MiB granules of disk (see SP_FOLIO_MAX): a granule is reserved whole while any of
   its blocks lives, and given back with the last one; a block freed beside live ones reads as zero again. */
static uint64_t disk_now(void) {
  ms_stats_t st;
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  return st.spill_disk_bytes;
}
static void test_small_granules(void **state) {
  (void)state;
  enum { N = 64 << 10, PER = (2 << 20) / N };
  unsigned char *b[2 * PER];
  uint64_t d0 = disk_now();
  for (int i = 0; i < 2 * PER; i++) {
    b[i] = msi_spill_malloc(N, 0, false);
    assert_non_null(b[i]);
    memset(b[i], i + 1, N);
  }
  uint64_t d1 = disk_now();
  assert_true(d1 - d0 >= (4u << 20) && d1 - d0 <= (4u << 20) + (256u << 10)); /* two granules, whole */
  uintptr_t g = (uintptr_t)b[0] >> 21;
  int mates = 0, other = -1;
  for (int i = 1; i < 2 * PER; i++) {
    if ((uintptr_t)b[i] >> 21 == g) mates++;
    else other = i;
  }
  assert_int_equal(mates, PER - 1);
  ms_spill_free(b[0]); /* beside live blocks: the granule stays (the header of ms_spill_free) */
  assert_int_equal(disk_now(), d1);
  unsigned char *z = msi_spill_malloc(N, 0, true); /* the freed slot again: zero */
  assert_ptr_equal(z, b[0]);
  for (size_t j = 0; j < N; j += 512) assert_int_equal(z[j], 0);
  b[0] = z;
  memset(z, 1, N);
  for (int i = 0; i < 2 * PER; i++)
    if ((uintptr_t)b[i] >> 21 == g) msi_spill_free(b[i]);
  assert_true(disk_now() <= d1 - (2u << 20)); /* the granule's last block: given back */
  for (size_t j = 0; j < N; j++) assert_int_equal(b[other][j], other + 1);
  for (int i = 0; i < 2 * PER; i++)
    if ((uintptr_t)b[i] >> 21 != g) msi_spill_free(b[i]);
}

/* whether the mapping holding p carries the VmFlags flag `flag` (fails the test when smaps is unreadable) */
static bool vm_flag(const void *p, const char *flag) {
  int r = ms_test_vm_flag(p, flag);
  assert_true(r >= 0);
  return r;
}

/* a small class's first blocks get no read-around (a lone small block's first fault would zero the device's
   read-ahead window of page cache); from its ninth block on, the class takes the default advice (while the data
   fits): the read-around's large folios then serve the neighbouring blocks */
static void test_small_class_advice(void **state) {
  (void)state;
  enum { N = 300 << 10, FEW = 8 }; /* 512 KiB slots: a class no other test here uses */
  unsigned char *b[FEW + 1];
  /* a machine whose memory the spill budget counts as full (another process's anonymous memory counts too)
     advises every class beyond memory: nothing to check then. While the data fits, a class of 2 MiB slots and
     up reads exactly a 2 MiB folio per fault: huge-page and random advice (advise_range) */
  unsigned char *big = msi_spill_malloc(4 << 20, 0, false);
  assert_non_null(big);
  bool beyond = vm_flag(big, "nh");
  if (!beyond) { /* (without THP in the kernel: neither, the default advice) */
    bool huge = vm_flag(big, "hg");
    assert_int_equal(huge, vm_flag(big, "rr"));
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0) assert_true(huge);
  }
  msi_spill_free(big);
  if (beyond) ms_skip_refused(0, "the spill budget counts this machine's memory as full: every class is advised beyond it");
  for (int i = 0; i < FEW; i++) {
    b[i] = msi_spill_malloc(N, 0, false);
    assert_non_null(b[i]);
    assert_true(vm_flag(b[i], "rr"));
  }
  b[FEW] = msi_spill_malloc(N, 0, false);
  assert_non_null(b[FEW]);
  for (int i = 0; i <= FEW; i++) {
    assert_false(vm_flag(b[i], "rr"));
    memset(b[i], i + 1, N);
  }
  /* a forked child's own blocks (above the inherited ones, in a file of its own) start the rule again */
  pid_t pid = fork();
  if (pid == 0) {
    unsigned char *own = msi_spill_malloc(N, 0, false);
    _exit(own && vm_flag(own, "rr") && own[0] == 0 && b[FEW][0] == FEW + 1 ? 0 : 1);
  }
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  for (int i = 0; i <= FEW; i++) {
    assert_int_equal(b[i][N - 1], i + 1);
    msi_spill_free(b[i]);
  }
}

/* a sandbox that answers open() with EPERM after start (seccomp): a spilled allocation that needs a new file
   falls back to RAM (NULL + errno 0 for the heap, counted in spill_fallbacks, reported once), never crashes. A
   forked child opens a file of its own for every class, so the child has no file yet. */
static void test_sandbox_refuses_files(void **state) {
  (void)state;
  int efd[2];
  assert_int_equal(pipe(efd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(efd[1], 2);
    close(efd[0]);
    if (ms_test_forbid_open(SECCOMP_RET_ERRNO | EPERM)) {
      fprintf(stderr, "seccomp filter refused: %s\n", strerror(errno));
      _exit(77);
    }
    ms_stats_t st0, st1;
    if (ms_stats_get(&st0, sizeof st0)) _exit(2);
    for (int i = 0; i < 3; i++) {
      errno = 12345;
      void *p = msi_spill_malloc(3 << 20, 0, false);
      if (p || errno != 0) _exit(3);
    }
    if (ms_stats_get(&st1, sizeof st1) || st1.spill_fallbacks < st0.spill_fallbacks + 3) _exit(4);
    _exit(0);
  }
  close(efd[1]);
  char err[2048];
  size_t used = 0;
  ssize_t r;
  while (used + 1 < sizeof err && (r = read(efd[0], err + used, sizeof err - 1 - used)) > 0) used += (size_t)r;
  err[used] = 0;
  close(efd[0]);
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77) ms_skip_refused(0, "the sandbox: %s", err);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  /* the warning says what failed and why, by name (it said "errno 1"; others said "errno 0" or "errno 9") */
  print_message("%s", err);
  assert_non_null(strstr(err, "creating a file"));
  assert_non_null(strstr(err, "EPERM: operation not permitted"));
  assert_null(strstr(err, "errno"));
}

/* Misuse of spilled blocks gets the heap's answer: a message naming the pointer, then abort. Each case runs in a
   forked child (stderr captured): a double free (through the internal free and the public ms_free), a realloc
   of a freed block, a free of a pointer inside a block, and a double free once every other block is gone (the
   regions were reset). */
enum { MIS_DOUBLE, MIS_DOUBLE_PUBLIC, MIS_REALLOC_FREED, MIS_INTERIOR, MIS_DOUBLE_EMPTY, MIS_COUNT };
static void misuse_child(int what, int err_fd, int ptr_fd) {
  dup2(err_fd, 2);
  unsigned char *keep = what == MIS_DOUBLE_EMPTY ? NULL : msi_spill_malloc(1 << 20, 0, false);
  unsigned char *p = msi_spill_malloc(3 << 20, 0, false);
  if (!p || (what != MIS_DOUBLE_EMPTY && !keep)) _exit(90);
  unsigned char *bad = what == MIS_INTERIOR ? p + 8192 : p;
  char text[64];
  int n = snprintf(text, sizeof text, "%p", (void *)bad);
  if (write(ptr_fd, text, (size_t)n) != n) _exit(91);
  close(ptr_fd);
  if (what != MIS_INTERIOR) msi_spill_free(p);
  if (what == MIS_DOUBLE_PUBLIC) ms_free(bad);
  else if (what == MIS_REALLOC_FREED) (void)msi_spill_realloc(bad, 5 << 20);
  else msi_spill_free(bad);
  _exit(0); /* carried on: the test fails */
}
static void test_misuse_aborts(void **state) {
  (void)state;
  const char *expect[MIS_COUNT] = {"free(): double free", "free(): double free", "realloc(): pointer already freed",
                                   "free(): invalid pointer", "free(): double free"};
  for (int what = 0; what < MIS_COUNT; what++) {
    int efd[2], pfd[2];
    assert_int_equal(pipe(efd), 0);
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      close(efd[0]);
      close(pfd[0]);
      misuse_child(what, efd[1], pfd[1]);
    }
    close(efd[1]);
    close(pfd[1]);
    char err[4096], ptr[64];
    size_t used = 0;
    ssize_t r;
    while (used + 1 < sizeof err && (r = read(efd[0], err + used, sizeof err - 1 - used)) > 0) used += (size_t)r;
    err[used] = 0;
    r = read(pfd[0], ptr, sizeof ptr - 1);
    ptr[r > 0 ? r : 0] = 0;
    close(efd[0]);
    close(pfd[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT)
      fail_msg("case %d: expected SIGABRT, status %#x, stderr: %s", what, st, err);
    if (!ptr[0] || !strstr(err, ptr)) fail_msg("case %d: the message does not name the pointer %s: %s", what, ptr, err);
    if (!strstr(err, expect[what])) fail_msg("case %d: the message does not say '%s': %s", what, expect[what], err);
  }
}

/* msi_strerror: errno values by name and meaning, without allocating (spill's warnings use it) */
static void test_strerror(void **state) {
  (void)state;
  assert_string_equal(msi_strerror(EBADF), "EBADF: bad file descriptor");
  assert_string_equal(msi_strerror(ENOSPC), "ENOSPC: no space left on device");
  assert_non_null(strstr(msi_strerror(EFBIG), "RLIMIT_FSIZE"));
  assert_string_equal(msi_strerror(0), "no error code set");
  assert_string_equal(msi_strerror(-5), "an unlisted error code");
}

/* runs the helper with extra environment; returns its exit status, stdout+stderr in out */
static int run_helper(const char *const args[], const char *const env_extra[], char *out, size_t cap) {
  char *argv[8];
  int a = 0;
  argv[a++] = (char *)HELPER;
  for (int i = 0; args[i] && a < 7; i++) argv[a++] = (char *)args[i];
  argv[a] = NULL;
  char *envp[256];
  int e = 0;
  for (int i = 0; env_extra && env_extra[i]; i++) envp[e++] = (char *)env_extra[i];
  for (char **v = environ; *v && e < 254; v++)
    if (strncmp(*v, "MEMSPACE_", 9) != 0 && strncmp(*v, "LD_PRELOAD=", 11) != 0) envp[e++] = *v;
  envp[e] = NULL;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  pid_t pid;
  int r = posix_spawn(&pid, HELPER, &fa, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  assert_int_equal(r, 0);
  size_t len = 0;
  ssize_t k;
  while ((k = read(fds[0], out + len, cap - 1 - len)) > 0) len += (size_t)k;
  out[len] = 0;
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  print_message("%s", out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* runs the helper in `mode` with one variable set: exit 0 and every string of `want` (NULL-terminated) in its
   output */
static void helper_says(const char *mode, const char *setting, const char *const want[]) {
  char out[4096];
  const char *args[] = {mode, NULL};
  const char *env[] = {setting, NULL};
  assert_int_equal(run_helper(args, env, out, sizeof out), 0);
  for (int i = 0; want[i]; i++) assert_non_null(strstr(out, want[i]));
}

static void test_missing_dir(void **state) {
  (void)state;
  const char *want[] = {"fallback", "missing", "/nonexistent/memspace-spill", NULL};
  helper_says("dir", "MEMSPACE_SPILL_DIR=/nonexistent/memspace-spill", want);
}

static void test_tmpfs_refused(void **state) {
  (void)state;
  struct statfs st;
  if (statfs("/dev/shm", &st) != 0 || st.f_type != 0x01021994) ms_skip_refused(0, "/dev/shm is not a tmpfs here");
  const char *want[] = {"fallback", "tmpfs", NULL};
  helper_says("dir", "MEMSPACE_SPILL_DIR=/dev/shm", want);
}

/* runs the helper in `mode` (no extra environment): exit 0 and, when given, `want` in its output */
static void helper_ok(const char *mode, const char *want) {
  char out[4096];
  const char *args[] = {mode, NULL};
  assert_int_equal(run_helper(args, NULL, out, sizeof out), 0);
  if (want) assert_non_null(strstr(out, want));
}

static void test_fsize(void **state) {
  (void)state;
  helper_ok("fsize", "ok fsize");
  helper_ok("fsizelow", "ok fsizelow");
}
static void test_fork(void **state) { (void)state; helper_ok("fork", "ok fork"); }
/* the parent frees, replaces and shrinks blocks a forked child still reads: the child reads their bytes */
static void test_forkhole(void **state) { (void)state; helper_ok("forkhole", "ok forkhole"); }
/* the child cannot map the parent's file privately: its inherited blocks are read-only, never the parent's */
static void test_forkro(void **state) {
  (void)state;
  const char *want[] = {"ok forkro", "read-only in it", NULL};
  helper_says("forkro", "MEMSPACE_PURGE_DELAY=-1", want);
}
/* the same in a program under a seccomp filter that kills it for an open: the child's handler opens nothing */
static void test_forkro_sandbox(void **state) {
  (void)state;
  const char *want[] = {"ok forkro sandboxed", "read-only in it", NULL};
  helper_says("forkro_sandbox", "MEMSPACE_PURGE_DELAY=-1", want);
}
/* the child maps a first chunk privately, then a mapping is refused: the private chunk's small blocks keep the
   fork's bytes (forksnap); a refusal that unmapped its chunk (kernels before 6.12) leaves no later chunk
   writable (forkseal) */
static void test_forkfall(void **state) {
  (void)state;
  const char *snap[] = {"ok forksnap", "read-only in it", NULL};
  helper_says("forksnap", "MEMSPACE_PURGE_DELAY=-1", snap);
  const char *seal[] = {"ok forkseal", "read-only in it", NULL};
  helper_says("forkseal", "MEMSPACE_PURGE_DELAY=-1", seal);
  const char *lost[] = {"ok forklost", "inaccessible", "moving the private copy", NULL};
  helper_says("forklost", "MEMSPACE_PURGE_DELAY=-1", lost);
}
/* the program closes spill's descriptor or dup2s its own file onto it: spill never touches the number again */
static void test_closeall(void **state) { (void)state; helper_ok("closeall", "ok closeall"); }
/* at most two descriptors however many classes hold blocks (ulimit -n 20) */
static void test_fdbudget(void **state) { (void)state; helper_ok("fdbudget", "ok fdbudget"); }
static void test_realloc_helper(void **state) { (void)state; helper_ok("realloc", "ok realloc"); }
/* no spill descriptor before spilling or after the last free; while spilling only high, close-on-exec ones */
static void test_fds_high(void **state) { (void)state; helper_ok("fds", "ok fds"); }

static void test_many(void **state) {
  (void)state;
  char out[4096];
  const char *args[] = {"many", "20000", NULL}; /* 100,000 through malloc: spill_preload_many */
  assert_int_equal(run_helper(args, NULL, out, sizeof out), 0);
}

static size_t dir_entries(const char *path) {
  DIR *d = opendir(path);
  size_t n = 0;
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static void test_kill9_leaves_nothing(void **state) {
  (void)state;
  char dir[] = "/var/tmp/memspace-spill-kill9-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char env_dir[128];
  snprintf(env_dir, sizeof env_dir, "MEMSPACE_SPILL_DIR=%s", dir);
  char *argv[] = {(char *)HELPER, (char *)"hold", NULL};
  char *envp[] = {env_dir, NULL};
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  pid_t pid;
  assert_int_equal(posix_spawn(&pid, HELPER, &fa, NULL, argv, envp), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  char buf[64] = {0};
  assert_true(read(fds[0], buf, sizeof buf - 1) > 0);
  close(fds[0]);
  assert_non_null(strstr(buf, "ready"));
  assert_int_equal(dir_entries(dir), 0); /* unnamed files even while running */
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(dir_entries(dir), 0);
  assert_int_equal(rmdir(dir), 0);
}

/* ---- the memory budget from a cgroup tree (msi_os_cgroup_find over a fake mount root) ---- */
static char fake_root[] = "/tmp/memspace-cgroup-XXXXXX";

/* writes `text` to fake_root/rel, making its directories */
static void fake_file(const char *rel, const char *text) { assert_true(fake_put(fake_root, rel, text)); }

static void expect_budget(const char *proc_cgroup, uint64_t ram, uint64_t limit, const char *stat_rel,
                          const char *dirty_key) {
  static msi_os_cgroup_t b;
  msi_os_cgroup_find(fake_root, proc_cgroup, ram, &b);
  char want[512] = "";
  if (stat_rel) snprintf(want, sizeof want, "%s/%s", fake_root, stat_rel);
  assert_int_equal(b.limit, limit);
  assert_string_equal(b.stat_path, want);
  assert_string_equal(b.dirty_key, dirty_key);
}

static void test_budget_cgroups(void **state) {
  (void)state;
  const uint64_t G = 1ull << 30, ram = 8 * G;
  assert_non_null(mkdtemp(fake_root));
  /* cgroup v2 (a systemd slice): "max" is no limit; the smallest of memory.max and memory.high up the tree */
  fake_file("memory.stat", "anon 1\nfile_dirty 2\n");
  fake_file("user.slice/memory.stat", "anon 1\nfile_dirty 2\n");
  fake_file("user.slice/memory.max", "1073741824\n");
  fake_file("user.slice/memory.high", "max\n");
  fake_file("user.slice/app.scope/memory.stat", "anon 1\nfile_dirty 2\n");
  fake_file("user.slice/app.scope/memory.max", "max\n");
  fake_file("user.slice/app.scope/memory.high", "max\n");
  expect_budget("0::/user.slice/app.scope\n", ram, G, "user.slice/memory.stat", "file_dirty");
  fake_file("user.slice/app.scope/memory.high", "536870912\n");
  expect_budget("0::/user.slice/app.scope\n", ram, G / 2, "user.slice/app.scope/memory.stat", "file_dirty");
  expect_budget("0::/user.slice/app.scope\n", G / 4, G / 4, NULL, "Dirty"); /* RAM is smaller */
  expect_budget("0::/\n", ram, ram, NULL, "Dirty");                          /* the root: no limit */
  /* hybrid: memory in v1, with other controllers on its line; v1 wins over the v2 line */
  fake_file("memory/a/memory.stat", "total_rss 1\ntotal_dirty 2\n");
  fake_file("memory/a/memory.limit_in_bytes", "268435456\n");
  fake_file("memory/a/b/memory.stat", "total_rss 1\ntotal_dirty 2\n");
  fake_file("memory/a/b/memory.limit_in_bytes", "9223372036854771712\n");
  expect_budget("12:pids:/\n4:cpu,memory:/a/b\n0::/user.slice/app.scope\n", ram, G / 4, "memory/a/memory.stat",
                "total_dirty");
  /* hybrid with memory not in v1: v2 under unified/ */
  fake_file("unified/s/memory.stat", "anon 1\nfile_dirty 2\n");
  fake_file("unified/s/memory.max", "2147483648\n");
  expect_budget("1:name=systemd:/s\n0::/s\n", ram, 2 * G, "unified/s/memory.stat", "file_dirty");
  /* nothing readable: RAM */
  expect_budget("", ram, ram, NULL, "Dirty");
  expect_budget("garbage without colons", ram, ram, NULL, "Dirty");
  expect_budget("4:memory:/missing\n", ram, ram, NULL, "Dirty");
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fake_root);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic),          cmocka_unit_test(test_aligned),
      cmocka_unit_test(test_routed_keeps_errno),
      cmocka_unit_test(test_fallocate_failure), cmocka_unit_test(test_realloc_direct),
      cmocka_unit_test(test_small_granules), cmocka_unit_test(test_small_class_advice),
      cmocka_unit_test(test_sandbox_refuses_files),
      cmocka_unit_test(test_missing_dir),    cmocka_unit_test(test_tmpfs_refused),
      cmocka_unit_test(test_fsize),          cmocka_unit_test(test_fork), cmocka_unit_test(test_forkhole),
      cmocka_unit_test(test_forkro),
      cmocka_unit_test(test_forkro_sandbox),
      cmocka_unit_test(test_forkfall),
      cmocka_unit_test(test_realloc_helper), cmocka_unit_test(test_many),
      cmocka_unit_test(test_closeall),       cmocka_unit_test(test_fdbudget),
      cmocka_unit_test(test_misuse_aborts),  cmocka_unit_test(test_strerror),
      cmocka_unit_test(test_kill9_leaves_nothing), cmocka_unit_test(test_fds_high),
      cmocka_unit_test(test_budget_cgroups),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
