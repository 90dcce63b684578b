/* Fault-injection sweep: each workload (page layer, frame allocator, heap, spaces, spill) runs once cleanly;
   then for every N and every system call kind (mmap/mremap, madvise, mprotect, fallocate, mlock) the N-th
   call is made to fail (ms_fault_inject) until N passes the number of calls the workload makes. Under every
   fault: each call returns NULL or an error with errno set (no crash), ms_space_check passes, every byte
   written is intact, and the same workload then runs cleanly with the fault gone. Each injected fault must
   have made a system call fail (the failure counter moved), and each workload must have had faults injected
   into every kind of call it is known to make (a sweep that injects nothing tests nothing). The figures
   (faults injected and survived per workload and call) are printed for docs/reliability.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "os.h"


#define MAX_N 3000
static const char *op_names[MS_FAULT_OP_COUNT] = {"mmap", "madvise", "mprotect", "fallocate", "mlock"};
static unsigned long total_injected;

/* strict: no fault is armed, so every call must succeed */
typedef void workload_fn(bool strict);

static void fill(void *p, size_t n, unsigned seed) {
  unsigned char *c = p;
  for (size_t i = 0; i < n; i++) c[i] = (unsigned char)(seed + i * 7 + (i >> 12));
}
static void expect(const void *p, size_t n, unsigned seed, const char *what) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i] != (unsigned char)(seed + i * 7 + (i >> 12)))
      fail_msg("%s: byte %zu of %zu changed", what, i, n);
}
/* an error result: an errno value, and only when a fault may be armed */
static void failed_ok(bool strict, int err, const char *what) {
  if (strict) fail_msg("%s failed (errno %d) with no fault armed", what, err);
  if (err <= 0 || err > 4095) fail_msg("%s failed without a valid errno (%d)", what, err);
}

/* is the fault still waiting (the workload made fewer than n calls of op)? Consumes it. */
static bool still_pending(ms_fault_op_t op, unsigned long n) {
  int err;
  for (unsigned long k = 0; k < n; k++)
    if (msi_fault_hit(op, &err)) return true;
  return false;
}

#define OP(x) (1u << MS_FAULT_##x)
/* need: the kinds of call (OP(MMAP) | ...) the workload makes, each of which must get faults */
static void sweep(const char *name, workload_fn *w, unsigned need) {
  w(true);
  char line[512];
  size_t len = (size_t)snprintf(line, sizeof line, "faults: %-6s", name);
  for (int op = 0; op < MS_FAULT_OP_COUNT; op++) {
    unsigned long n = 1;
    for (; n <= MAX_N; n++) {
      uint64_t failures = atomic_load(&msi_os_counters.failures);
      ms_fault_inject((ms_fault_op_t)op, n, ENOMEM);
      w(false);
      bool pending = still_pending((ms_fault_op_t)op, n);
      ms_fault_inject((ms_fault_op_t)op, 0, 0);
      if (pending) break;
      if (atomic_load(&msi_os_counters.failures) == failures)
        fail_msg("%s: %s call %lu was to fail, but no system call failed", name, op_names[op], n);
      w(true); /* keeps working once the fault is gone */
    }
    if (n == 1 && (need & 1u << op)) fail_msg("%s: no %s fault was injected (the workload made no such call)", name, op_names[op]);
    total_injected += n - 1;
    len += (size_t)snprintf(line + len, sizeof line - len, " %s %lu%s", op_names[op], n - 1, n > MAX_N ? "+" : "");
  }
  printf("%s (every one survived)\n", line);
}

/* ---- page layer ---- */
static void pages_workload(bool strict) {
  ms_pages_t a, b, c, d;
  int e = ms_pages_reserve(1 << 20, 0, MS_PAGES_COMMIT, -1, &a);
  if (e) { failed_ok(strict, e, "reserve committed"); return; }
  fill(a.addr, 64 << 10, 1);
  char *base = a.addr;
  if ((e = ms_pages_decommit(base + (64 << 10), 64 << 10))) failed_ok(strict, e, "decommit");
  if ((e = ms_pages_commit(base + (64 << 10), 64 << 10))) failed_ok(strict, e, "commit");
  if ((e = ms_pages_reset(base + (128 << 10), 64 << 10))) failed_ok(strict, e, "reset");
  if ((e = ms_pages_populate(base + (256 << 10), 128 << 10))) failed_ok(strict, e, "populate");
  if ((e = ms_pages_lock(base + (512 << 10), 64 << 10))) failed_ok(strict, e, "lock");
  else ms_pages_unlock(base + (512 << 10), 64 << 10);
  expect(base, 64 << 10, 1, "committed range after decommit/reset of its neighbours");
  e = ms_pages_reserve(4 << 20, 2 << 20, 0, -1, &b);
  if (e) failed_ok(strict, e, "reserve aligned");
  else {
    assert_int_equal((uintptr_t)b.addr & ((2 << 20) - 1), 0);
    if ((e = ms_pages_commit(b.addr, 256 << 10))) failed_ok(strict, e, "commit part");
    else { fill(b.addr, 256 << 10, 2); expect(b.addr, 256 << 10, 2, "committed part"); }
    assert_int_equal(ms_pages_release(b.addr, b.size), 0);
  }
  e = ms_pages_reserve(256 << 10, 0, MS_PAGES_COMMIT | MS_PAGES_POPULATE | MS_PAGES_LOCK, -1, &c);
  if (e) failed_ok(strict, e, "reserve populated locked");
  else { fill(c.addr, c.size, 3); expect(c.addr, c.size, 3, "locked"); ms_pages_unlock(c.addr, c.size); ms_pages_release(c.addr, c.size); }
  e = ms_pages_reserve(4 << 20, 2 << 20, MS_PAGES_COMMIT | MS_PAGES_THP, -1, &d);
  if (e) failed_ok(strict, e, "reserve thp");
  else { fill(d.addr, 8192, 4); expect(d.addr, 8192, 4, "thp"); ms_pages_release(d.addr, d.size); }
  expect(base, 64 << 10, 1, "committed range at the end");
  assert_int_equal(ms_pages_release(a.addr, a.size), 0);
}
static void faults_pages(void **state) { (void)state; sweep("pages", pages_workload, OP(MMAP) | OP(MADVISE) | OP(MPROTECT) | OP(MLOCK)); }

/* ---- frame allocator ---- */
static void frame_workload(bool strict) {
  static const ms_frame_policy_t pol[] = {MS_FRAME_KEEP_IDLE, MS_FRAME_RESET, MS_FRAME_DECOMMIT, MS_FRAME_RELEASE};
  for (unsigned k = 0; k < MSI_ARRAY_LEN(pol); k++) {
    ms_frame_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.range_size = 256 << 10;
    cfg.policy = pol[k];
    errno = 0;
    ms_frame_t *f = ms_frame_create(&cfg);
    if (!f) { failed_ok(strict, errno, "ms_frame_create"); continue; }
    for (int frame = 0; frame < 4; frame++) {
      void *p[8];
      for (int i = 0; i < 8; i++) {
        errno = 0;
        p[i] = ms_frame_alloc(f, 10000, 64);
        if (!p[i]) failed_ok(strict, errno, "ms_frame_alloc");
        else fill(p[i], 10000, (unsigned)(i + frame));
      }
      for (int i = 0; i < 8; i++)
        if (p[i]) expect(p[i], 10000, (unsigned)(i + frame), "frame block");
      ms_frame_flip(f);
    }
    ms_frame_idle(f);
    ms_frame_destroy(f);
  }
}
static void faults_frame(void **state) { (void)state; sweep("frame", frame_workload, OP(MMAP) | OP(MADVISE)); }

/* ---- heap ---- */
static void heap_workload(bool strict) {
  static const size_t sizes[] = {8, 24, 100, 700, 4000, 20000, 70000, 300000, 1 << 20, 5 << 19};
  enum { N = 33 };
  void *b[N];
  size_t sz[N];
  for (int i = 0; i < N; i++) {
    sz[i] = sizes[i % MSI_ARRAY_LEN(sizes)] + (size_t)i;
    errno = 0;
    b[i] = i % 5 == 4 ? ms_aligned_alloc((size_t)1 << (6 + i % 16), sz[i]) : i % 5 == 3 ? ms_calloc(1, sz[i]) : ms_malloc(sz[i]);
    if (!b[i]) { failed_ok(strict, errno, "heap allocation"); assert_int_equal(errno, ENOMEM); continue; }
    fill(b[i], sz[i], (unsigned)i);
  }
  for (int i = 0; i < N; i += 3) {
    if (!b[i]) continue;
    size_t n = sz[i] * 2 + 5000;
    errno = 0;
    void *p = ms_realloc(b[i], n);
    if (!p) { failed_ok(strict, errno, "ms_realloc"); assert_int_equal(errno, ENOMEM); continue; }
    expect(p, sz[i], (unsigned)i, "realloc'd block");
    b[i] = p;
    fill(b[i], n, (unsigned)i);
    sz[i] = n;
  }
  for (int i = 0; i < N; i += 2)
    if (b[i]) { expect(b[i], sz[i], (unsigned)i, "heap block"); ms_free(b[i]); b[i] = NULL; }
  ms_heap_collect(1);
  for (int i = 0; i < N; i++)
    if (b[i]) { expect(b[i], sz[i], (unsigned)i, "heap block after collect"); ms_free(b[i]); }
  ms_heap_collect(1);
}
static void faults_heap(void **state) { (void)state; sweep("heap", heap_workload, OP(MMAP) | OP(MADVISE)); }

/* The heap's first calls (start-up: address space reservation, first segment) in a fresh process: the N-th
   mmap fails, then the fault is gone and the heap must work. Run as `test_faults --init-fault N`. */
static int init_fault_child(unsigned long n) {
  ms_fault_inject(MS_FAULT_MMAP, n, ENOMEM);
  void *first[4];
  for (int i = 0; i < 4; i++) {
    errno = 0;
    first[i] = ms_malloc(i == 3 ? (size_t)3 << 20 : 100);
    if (!first[i] && errno != ENOMEM) return 2;
  }
  bool pending = still_pending(MS_FAULT_MMAP, n);
  ms_fault_inject(MS_FAULT_MMAP, 0, 0);
  for (int i = 0; i < 4; i++) ms_free(first[i]);
  void *p = ms_malloc(100), *q = ms_malloc((size_t)3 << 20);
  if (!p || !q) {
    fprintf(stderr, "init fault %lu: the heap stays broken after one failed mmap (%p %p)\n", n, p, q);
    return 1;
  }
  ms_free(p);
  ms_free(q);
  return pending ? 3 : 0;  /* 3: fewer than n mmaps at start-up: the sweep is over */
}

static void faults_heap_init(void **state) {
  (void)state;
  unsigned long n = 1;
  for (; n <= 64; n++) {
    char arg[32];
    snprintf(arg, sizeof arg, "%lu", n);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      char *argv[] = {"test_faults", "--init-fault", arg, NULL};
      execv("/proc/self/exe", argv);
      _exit(126);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {}
    if (WIFEXITED(st) && WEXITSTATUS(st) == 3) break;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("heap start-up with mmap %lu failing: child %s %d", n, WIFSIGNALED(st) ? "killed by signal" : "exited",
               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  }
  if (n == 1) fail_msg("heap start-up: no mmap fault was injected (the heap made no mmap call at start-up)");
  total_injected += n - 1;
  printf("faults: heap start-up: mmap %lu (every one survived)\n", n - 1);
}

/* ---- spaces ---- */
static void space_workload(bool strict) {
  for (int v = 0; v < 3; v++) {
    ms_space_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.initial_size = 64 << 10;
    cfg.expand_size = v == 2 ? 0 : 64 << 10;
    cfg.at = v == 1 ? MS_SPACE_AT_FIRSTALLOC : MS_SPACE_AT_START;
    cfg.flags = v == 2 ? MS_SPACE_LOCKED | MS_SPACE_ZERO : MS_SPACE_THREAD_SAFE;
    cfg.numa_node = -1;
    errno = 0;
    ms_space_t *sp = ms_space_create(&cfg);
    if (!sp) { failed_ok(strict, errno, "ms_space_create"); continue; }
    enum { N = 40 };
    void *b[N];
    size_t sz[N];
    for (int i = 0; i < N; i++) {
      sz[i] = (size_t)(i % 7) * 1500 + 32;
      errno = 0;
      b[i] = i % 4 == 3 ? ms_space_aligned_alloc(sp, 256, sz[i]) : ms_space_malloc(sp, sz[i]);
      if (!b[i]) {
        /* a fixed space may be full: that is ENOMEM even without a fault */
        if (!(cfg.expand_size == 0 && errno == ENOMEM)) failed_ok(strict, errno, "space allocation");
      } else {
        fill(b[i], sz[i], (unsigned)i);
      }
      assert_int_equal(ms_space_check(sp), 0);
    }
    for (int i = 0; i < N; i += 2)
      if (b[i]) { expect(b[i], sz[i], (unsigned)i, "space block"); ms_space_free(sp, b[i]); b[i] = NULL; }
    assert_int_equal(ms_space_check(sp), 0);
    int e = ms_space_expand(sp, 128 << 10);
    if (e && cfg.expand_size) failed_ok(strict, e, "ms_space_expand");
    assert_int_equal(ms_space_check(sp), 0);
    for (int i = 1; i < N; i += 4) {
      if (!b[i]) continue;
      errno = 0;
      void *p = ms_space_realloc(sp, b[i], sz[i] + 20000);
      if (!p) {
        if (!(cfg.expand_size == 0 && errno == ENOMEM)) failed_ok(strict, errno, "ms_space_realloc");
      } else {
        b[i] = p;
        fill(p, sz[i] + 20000, (unsigned)i);
        sz[i] += 20000;
      }
      assert_int_equal(ms_space_check(sp), 0);
    }
    for (int i = 1; i < N; i += 2)
      if (b[i]) { expect(b[i], sz[i], (unsigned)i, "space block"); ms_space_free(sp, b[i]); }
    ms_space_shrink(sp);
    assert_int_equal(ms_space_check(sp), 0);
    ms_space_destroy(sp);
  }
}
static void faults_space(void **state) { (void)state; sweep("space", space_workload, OP(MMAP) | OP(MADVISE) | OP(MPROTECT) | OP(MLOCK)); }

/* ---- spill ---- */
static void spill_workload(bool strict) {
  static const size_t sizes[] = {100000, 1 << 20, 3 << 20};
  void *b[3];
  for (int i = 0; i < 3; i++) {
    errno = 0;
    b[i] = ms_spill_alloc(sizes[i]);
    if (!b[i]) { failed_ok(strict, errno, "ms_spill_alloc"); continue; }
    fill(b[i], sizes[i], (unsigned)i);
  }
  for (int i = 0; i < 3; i++)
    if (b[i]) { expect(b[i], sizes[i], (unsigned)i, "spilled block"); ms_spill_free(b[i]); }
}
static void faults_spill(void **state) {
  (void)state;
  void *p = ms_spill_alloc(4096);
  assert_non_null(p);
  ms_spill_free(p);
  sweep("spill", spill_workload, OP(MMAP) | OP(FALLOCATE));
}

static int report(void **state) {
  (void)state;
  printf("faults: %lu injected in all, every one survived\n", total_injected);
  return total_injected > 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "--init-fault")) return init_fault_child(strtoul(argv[2], NULL, 10));
  (void)argc, (void)argv;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(faults_pages),
    cmocka_unit_test(faults_frame),
    cmocka_unit_test(faults_heap),
    cmocka_unit_test(faults_heap_init),
    cmocka_unit_test(faults_space),
    cmocka_unit_test(faults_spill),
  };
  return cmocka_run_group_tests(tests, NULL, report);
}
