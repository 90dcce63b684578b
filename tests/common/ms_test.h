/* ms_test.h: small helpers shared by the tests (include path tests/common, set by ms_unit_test).

   Skipping (cmocka tests built by ms_unit_test; shell tests: tests/common/ms_test.sh, the same contract).
   A test that cannot run says why, and which of two kinds of reason it is:
   - ms_skip_refused(err, fmt, ...): the kernel, or a privilege the process lacks, refused an operation the test
     needs (mlock EPERM, an empty huge page pool, seccomp unavailable, THP off). Prints
     "MS_SKIP refused: <fmt...>: <strerror(err)>" (no errno part when err is 0) and skips the cmocka case.
     Allowed everywhere, CI included.
   - ms_skip_missing(fmt, ...): the environment is incomplete (a Debian package, a tool, a Python module that
     `scripts/deps.sh test` installs). Prints "MS_SKIP missing: <fmt...>" and skips the case; when CI=true
     (.ci/run's environment) it FAILS the case instead: CI must have everything the tests need.
   Both are statements (cmocka's skip()/fail_msg() jump out of the case). A plain cmocka skip() still counts as a
   skip ("MS_SKIP unclassified: FILE:LINE" is printed): prefer the two above, which carry the reason.
   When a case skipped and none failed, the program exits MS_TEST_SKIP (77) and CTest reports the test as
   "Skipped", not "Passed"; any failure exits 1. tests/common/ms_test_skip.c does this by wrapping cmocka's
   _skip and _cmocka_run_group_tests (ld --wrap, set by ms_unit_test); tests/CMakeLists.txt gives every CTest
   test SKIP_RETURN_CODE 77. A forked child that finds it cannot run exits MS_TEST_SKIP with its reason on
   stderr and the parent calls ms_skip_refused / ms_skip_missing. */
#ifndef MS_TEST_H
#define MS_TEST_H
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define MS_TEST_SKIP 77

/* whether this run is CI's (CI=true or CI=1 in the environment) */
static inline int ms_test_ci(void) {
  const char *ci = getenv("CI");
  return ci && (!strcmp(ci, "true") || !strcmp(ci, "1"));
}

/* ms_test_skip.c: prints "MS_SKIP KIND: <fmt...>[: strerror(err)]"; returns 1 when the skip is a failure (a
   missing piece of the environment under CI=true) */
int ms_test_skip_say(const char *kind, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define ms_skip_refused(err, ...)                                                                              \
  do {                                                                                                         \
    ms_test_skip_say("refused", (err), __VA_ARGS__);                                                           \
    skip();                                                                                                    \
  } while (0)
#define ms_skip_missing(...)                                                                                   \
  do {                                                                                                         \
    if (ms_test_skip_say("missing", 0, __VA_ARGS__)) fail_msg("a missing piece is a failure under CI=true");   \
    skip();                                                                                                    \
  } while (0)

/* For a program run with the library preloaded (`memspace run`, LD_PRELOAD naming libmemspace): 0 when malloc
   really is memspace's (the loader may ignore a preload: a wrong path, a setuid program), else -1 with a message
   on stderr. 0 too when LD_PRELOAD does not name libmemspace (a reference run under glibc). Needs _GNU_SOURCE
   (dladdr). */
#ifdef _GNU_SOURCE
static inline int ms_test_preload_check(void) {
  const char *pre = getenv("LD_PRELOAD");
  if (!pre || !strstr(pre, "libmemspace")) return 0;
  Dl_info info;
  void *m = dlsym(RTLD_DEFAULT, "malloc");
  if (m && dladdr(m, &info) && info.dli_fname && strstr(info.dli_fname, "libmemspace") &&
      dlsym(RTLD_DEFAULT, "ms_version"))
    return 0;
  fprintf(stderr, "LD_PRELOAD=%s, but malloc is not memspace's (it comes from %s)\n", pre,
          m && dladdr(m, &info) && info.dli_fname ? info.dli_fname : "nowhere");
  return -1;
}
#endif

/* MS_TEST_TSAN: 1 in a ThreadSanitizer build. Its runtime gives every byte of application memory a shadow
   (several bytes a byte, in mappings of its own) that each access reads or writes, so page-fault counts and the
   process's RSS measure the shadow too: the first write to a byte whose shadow page was never written takes a fault though
   the byte's own page is resident (a buffer written at one byte a page takes several faults a page, and the same
   pages written again at every 64th byte several more), and the shadow of the pages the heap gives
   back (madvise) stays resident. A test bounding either says so with ms_skip_tsan_shadow, or measures the heap's
   own mappings instead. */
#if defined(__SANITIZE_THREAD__)
#define MS_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MS_TEST_TSAN 1
#endif
#endif
#ifndef MS_TEST_TSAN
#define MS_TEST_TSAN 0
#endif
/* MS_TEST_MLOCK_NOOP: 1 under AddressSanitizer or ThreadSanitizer, whose runtimes replace mlock, munlock,
   mlockall and munlockall with no-ops that return 0 (sanitizer_common's interceptors): no lock is observable
   there (VmLck, the "lo" flag, residency), nor RLIMIT_MEMLOCK's refusals */
#if MS_TEST_TSAN || defined(__SANITIZE_ADDRESS__)
#define MS_TEST_MLOCK_NOOP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MS_TEST_MLOCK_NOOP 1
#endif
#endif
#ifndef MS_TEST_MLOCK_NOOP
#define MS_TEST_MLOCK_NOOP 0
#endif
#define MS_TEST_MLOCK_NOOP_WHY "this sanitizer build's runtime replaces mlock and munlock with no-ops"

/* skips the cmocka case under ThreadSanitizer: `what` counts page faults its runtime's shadow memory adds to */
#define ms_skip_tsan_shadow(what)                                                                              \
  do {                                                                                                         \
    if (MS_TEST_TSAN)                                                                                          \
      ms_skip_refused(0, "%s: ThreadSanitizer's shadow memory faults in where the application's pages are "    \
                         "resident already (tests/common/ms_test.h MS_TEST_TSAN)", (what));                   \
  } while (0)

/* the number a file starts with (a /sys or /proc setting); -1 when unreadable */
static inline long long ms_test_read_ll(const char *path) {
  FILE *f = fopen(path, "r");
  long long v = -1;
  if (f) {
    if (fscanf(f, "%lld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

/* resident bytes of this process, from /proc/self/statm; 0 when unreadable */
static inline size_t ms_test_rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0, res = 0;
  if (f) {
    if (fscanf(f, "%lu %lu", &pages, &res) != 2) res = 0;
    fclose(f);
  }
  return res * (size_t)sysconf(_SC_PAGESIZE);
}

/* mappings of this process (lines of /proc/self/maps); -1 when unreadable */
static inline int ms_test_mapping_count(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  int n = 0, c;
  while ((c = getc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

/* whether the mapping holding p carries the VmFlags flag `flag` ("rr", "hg": /proc/self/smaps): 1 or 0, -1 when
   unreadable */
static inline int ms_test_vm_flag(const void *p, const char *flag) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  int in = 0, has = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    } else if (in && !strncmp(line, "VmFlags:", 8)) {
      for (char *t = strtok(line + 8, " \n"); t; t = strtok(NULL, " \n")) has |= !strcmp(t, flag);
      break;
    }
  }
  fclose(f);
  return has;
}

/* the field `field` ("FilePmdMapped", "KernelPageSize") of the mapping holding p in /proc/self/smaps, in kB; 0 when
   p is not mapped, the field is absent or smaps is unreadable */
static inline size_t ms_test_smaps_kb(const void *p, const char *field) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return 0;
  char line[512];
  int in = 0;
  size_t kb = 0, len = strlen(field);
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    else if (in && !strncmp(line, field, len) && line[len] == ':' && sscanf(line + len + 1, " %zu kB", &kb) == 1)
      break;
  }
  fclose(f);
  return in ? kb : 0;
}

/* the kernel's KernelPageSize in bytes of the mapping holding p (/proc/self/smaps): 2 MiB or 1 GiB for hugetlb
   memory; 0 when p is not mapped or smaps is unreadable */
static inline size_t ms_test_kernel_page_size(const void *p) { return ms_test_smaps_kb(p, "KernelPageSize") * 1024; }

/* a sandbox from here on (seccomp, as Tor's sandbox or systemd's SystemCallFilter=): open() and openat() answer
   with `action` (SECCOMP_RET_KILL_PROCESS, or SECCOMP_RET_ERRNO | EPERM); 0, or -1 when refused (skip) */
static inline int ms_test_forbid_open(unsigned action) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, action),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, action),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -1 : 0;
}
/* `text` written whole to a new file made from the mkstemp template `path` (the name is left in it); 0 or -1 */
static inline int ms_test_temp_file(char *path, const char *text) {
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  size_t n = strlen(text);
  int r = write(fd, text, n) == (ssize_t)n ? 0 : -1;
  close(fd);
  return r;
}

#ifdef MEMSPACE_H
#include <signal.h>
#include <sys/wait.h>
/* fn run in a forked child with one thread and MEMSPACE_PURGE_DELAY -1, so no maintenance thread runs and
   idleness happens only where the test says: the child's exit status (fn's result), -1 when it did not exit */
static inline int ms_test_in_child(int (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ms_option_set(MS_OPTION_PURGE_DELAY, -1);
    _exit(fn());
  }
  int st;
  return waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#ifdef CMOCKA_H_
/* a death test (cmocka): fn run in a forked child (MEMSPACE_PURGE_DELAY -1) with stderr captured must die of
   SIGABRT with a message holding `what` and the pointer it printed on a line "pointer 0x..." */
static inline void ms_test_child_aborts(int (*fn)(void), const char *what) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    ms_option_set(MS_OPTION_PURGE_DELAY, -1);
    _exit(fn());
  }
  close(fds[1]);
  char buf[4096];
  FILE *in = fdopen(fds[0], "r");
  assert_non_null(in);
  buf[fread(buf, 1, sizeof buf - 1, in)] = 0; /* (to the child's end: it writes two lines) */
  fclose(in);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  fprintf(stderr, "%s", buf);
  char ptr[40] = "";
  const char *tag = strstr(buf, "pointer 0x");
  if (tag) snprintf(ptr, sizeof ptr, "%.*s", (int)strcspn(tag + 8, "\n"), tag + 8);
  if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT)) fail_msg("%s: the child did not abort (status 0x%x)", what, st);
  assert_true(ptr[0]);
  const char *msg = strstr(buf, what);
  if (!msg || !strstr(msg, ptr)) fail_msg("no '%s' naming %s in: %s", what, ptr, buf);
}
#endif
#endif
#endif
