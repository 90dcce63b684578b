/* Complexity promises of include/memspace.h (O(1), O(log n), O(size), "a bounded number of steps"), checked by
   counting instructions, never by timing: a forked child runs each scenario under ptrace, and the parent
   single-steps every measured call (from the int3 in step_begin to the entry of step_end), so a count is the
   exact number of user-space instructions the call executed (a system call counts as one; a repeated string
   instruction as one per iteration). Deterministic: the same build on the same machine gives the same counts.
   Each promise is checked as the shape of its count when the quantity the promise names grows (the live blocks
   of a space or of the heap, the live buffers, the environment, the size of a block or of a space), never
   against a figure of this machine: O(1) calls must not grow with N = 10, 1,000, 100,000; O(x) calls must grow
   at most in proportion to x. Where ptrace is refused (a sandbox), the cases skip with the kernel's reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include "memspace.h"
#include "ms_test.h"
#include "../space/space_test.h"

/* ---- the counter ---- */

enum { MAX_TAGS = 256, SCALES = 3 };
static const size_t scale_n[SCALES] = {10, 1000, 100000};

/* the child's side: the tag of the call being measured, read by the parent with PTRACE_PEEKDATA */
static volatile long step_tag;
__attribute__((noinline, noclone)) static void step_begin(long tag) {
  step_tag = tag;
  __asm__ volatile("int3" ::: "memory");
}
__attribute__((noinline, noclone)) static void step_end(void) { __asm__ volatile("nop" ::: "memory"); }
/* measures `expr` (a call) under tag (op, scale) */
#define MEASURE(op, scale, expr)                                                                               \
  do {                                                                                                         \
    step_begin((long)(op) * SCALES + (scale));                                                                 \
    expr;                                                                                                      \
    step_end();                                                                                                \
  } while (0)

/* the parent's side: per tag, the most steps one call took and how many calls were measured */
static unsigned long steps_max[MAX_TAGS * SCALES], steps_calls[MAX_TAGS * SCALES];
static const unsigned long STEP_LIMIT = 20000000; /* a call past this is a runaway: the child is killed */

/* runs fn(arg) in a traced child; 0, or -1 with errno when ptrace is refused; fails the case when the child
   fails (exit status non-zero) or a call runs away */
static int trace(int (*fn)(void *), void *arg) {
  memset(steps_max, 0, sizeof steps_max);
  memset(steps_calls, 0, sizeof steps_calls);
  fflush(NULL);
  int pipefd[2];
  assert_int_equal(pipe(pipefd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(pipefd[0]);
    int ok = ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0;
    int e = errno;
    if (write(pipefd[1], &e, sizeof e) != sizeof e || !ok) _exit(77);
    close(pipefd[1]);
    raise(SIGSTOP);
    _exit(fn(arg));
  }
  close(pipefd[1]);
  int e = 0;
  if (read(pipefd[0], &e, sizeof e) != sizeof e) e = EIO;
  close(pipefd[0]);
  int st;
  if (e) {
    waitpid(pid, &st, 0);
    errno = e;
    return -1;
  }
  assert_int_equal(waitpid(pid, &st, 0), pid); /* the SIGSTOP */
  ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)PTRACE_O_EXITKILL);
  const long rip_at = offsetof(struct user_regs_struct, rip);
  int sig = 0;
  for (;;) {
    assert_int_equal(ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig), 0);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    sig = 0;
    if (WIFEXITED(st) || WIFSIGNALED(st)) break;
    if (WSTOPSIG(st) != SIGTRAP) { sig = WSTOPSIG(st); continue; }
    long tag = ptrace(PTRACE_PEEKDATA, pid, (void *)&step_tag, NULL);
    assert_true(tag >= 0 && tag < MAX_TAGS * SCALES);
    unsigned long n = 0;
    for (;;) {
      assert_int_equal(ptrace(PTRACE_SINGLESTEP, pid, NULL, (void *)(long)sig), 0);
      assert_int_equal(waitpid(pid, &st, 0), pid);
      sig = 0;
      if (WIFEXITED(st) || WIFSIGNALED(st)) fail_msg("the traced child ended inside a measured call");
      if (WSTOPSIG(st) != SIGTRAP) { sig = WSTOPSIG(st); continue; }
      n++;
      if ((uintptr_t)ptrace(PTRACE_PEEKUSER, pid, (void *)rip_at, NULL) == (uintptr_t)step_end) break;
      if (n > STEP_LIMIT) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        fail_msg("a call measured as tag %ld ran past %lu instructions", tag, STEP_LIMIT);
      }
    }
    if (n > steps_max[tag]) steps_max[tag] = n;
    steps_calls[tag]++;
  }
  if (WIFSIGNALED(st)) fail_msg("the traced child was killed by signal %d", WTERMSIG(st));
  if (WEXITSTATUS(st) == 77) ms_skip_refused(0, "the traced child could not run (see its message)");
  if (WEXITSTATUS(st) != 0) fail_msg("the traced child failed with status %d (see its message)", WEXITSTATUS(st));
  return 0;
}

#define TRACE(fn, arg)                                                                                         \
  do {                                                                                                         \
    if (trace((fn), (arg))) ms_skip_refused(errno, "ptrace(PTRACE_TRACEME)");                                 \
  } while (0)

static unsigned long most(int op, int scale) {
  unsigned long m = steps_max[op * SCALES + scale];
  if (!steps_calls[op * SCALES + scale]) fail_msg("op %d at scale %d was never measured", op, scale);
  return m;
}

/* the most instructions a call of `op` took at every scale: at most `bound` (a constant: the call's worst case must
   not depend on N; a loop over blocks, buffers or classes would pass it by far at N = 100,000) */
static void expect_bounded(const char *what, int op, int scales, unsigned long bound) {
  print_message("  %-46s", what);
  for (int s = 0; s < scales; s++) print_message(" N=%-6zu %6lu", scale_n[s], most(op, s));
  print_message("  (bound %lu)\n", bound);
  for (int s = 0; s < scales; s++)
    if (most(op, s) > bound)
      fail_msg("%s: %lu instructions at N=%zu, above the constant %lu: not O(1)", what, most(op, s), scale_n[s], bound);
}
/* a call that takes one path whatever N is: at every N within 1.5x (+16) of its count at the smallest N */
static void expect_flat(const char *what, int op, int scales) {
  unsigned long base = most(op, 0);
  expect_bounded(what, op, scales, base + base / 2 + 16);
}

/* O(x): instructions per unit of x at the larger x at most 1.25x (+ 1 per unit) those at the smaller one */
static void expect_linear(const char *what, double x0, unsigned long s0, double x1, unsigned long s1) {
  print_message("  %-46s x=%-8.0f %8lu  x=%-8.0f %8lu\n", what, x0, s0, x1, s1);
  if ((double)s1 / x1 > 1.25 * (double)s0 / x0 + 1.0)
    fail_msg("%s: %lu instructions at %.0f against %lu at %.0f: grows faster than promised", what, s1, x1, s0, x0);
}

/* a sink the compiler cannot drop */
static volatile uintptr_t sink;

/* ---- deterministic spaces: O(1) calls with 10, 1,000, 100,000 live blocks ---- */

enum { SP_MALLOC, SP_FREE, SP_FREE_OLD, SP_CALLOC, SP_ALIGNED, SP_REALLOC_SHRINK, SP_REALLOC_GROW, SP_REALLOC_MOVE,
       SP_USABLE, SP_INFO, SP_ZERO_SMALL, SP_ZERO_LARGE, SP_SHRINK, SP_OPS };

/* the header's STEP COUNTS: at most L*(D+1)+D+10 word operations, L = log2(reserve / 16), D <= 6 */
static unsigned long word_ops(size_t reserve) {
  unsigned long l = 0;
  while (((size_t)16 << l) < reserve) l++;
  return l * 7 + 6 + 10;
}
/* instructions allowed per word operation (a load or store with its index and mask arithmetic), and for a call's
   own entry, argument checks and return */
enum { PER_WORD_OP = 16, CALL_OVERHEAD = 200 };

/* a growable space (16 MiB, expand 16 MiB: reserve 1 GiB) filled with n blocks of every size from 16 B to 512 B,
   every other one freed (free blocks of every small order that cannot merge), then measured: malloc of every
   order 16 B - 64 KiB, free (new blocks and blocks of the fill), calloc, aligned_alloc, realloc (shrink, grow in
   place, move), usable_size, info, a MS_SPACE_ZERO space's malloc at 64 B and 1 KiB, and shrink */
static int space_child(void *arg) {
  int scale = (int)(intptr_t)arg;
  size_t n = scale_n[scale];
  ms_space_t *s = make(16 << 20, 16 << 20, MS_SPACE_AT_START, 0);
  ms_space_t *z = make(1 << 20, 0, MS_SPACE_AT_START, MS_SPACE_ZERO);
  void **live = malloc(n * sizeof *live);
  if (!s || !z || !live) return 2;
  for (size_t i = 0; i < n; i++)
    if (!(live[i] = ms_space_malloc(s, (size_t)16 << (i % 6)))) return 3;
  for (size_t i = 0; i < n; i += 2) ms_space_free(s, live[i]);
  ms_space_info_t info;
  for (int k = 0; k < 13; k++) {
    size_t size = (size_t)16 << k; /* 16 B .. 64 KiB */
    void *p = NULL, *q = NULL;
    MEASURE(SP_MALLOC, scale, p = ms_space_malloc(s, size));
    if (!p) return 4;
    MEASURE(SP_USABLE, scale, sink = ms_space_usable_size(s, p));
    MEASURE(SP_REALLOC_SHRINK, scale, p = ms_space_realloc(s, p, size / 2 + 1));
    MEASURE(SP_REALLOC_GROW, scale, q = ms_space_realloc(s, p, size)); /* into the buddy it just freed */
    if (!q) return 5;
    MEASURE(SP_FREE, scale, ms_space_free(s, q));
    if (k < 5) { /* a move: malloc + copy + free; small blocks keep the copy short */
      p = ms_space_malloc(s, size);
      void *pin = ms_space_malloc(s, size); /* its likely buddy: growing has to move */
      MEASURE(SP_REALLOC_MOVE, scale, q = ms_space_realloc(s, p, 2 * size + 1));
      if (!q) return 6;
      ms_space_free(s, q);
      ms_space_free(s, pin);
    }
    MEASURE(SP_CALLOC, scale, p = ms_space_calloc(s, 1, 48));
    MEASURE(SP_ALIGNED, scale, q = ms_space_aligned_alloc(s, (size_t)64 << (k % 7), 100));
    if (!p || !q) return 7;
    ms_space_free(s, p);
    ms_space_free(s, q);
    size_t old = (size_t)(k * 2654435761u % n) | 1; /* an allocated block of the fill */
    if (old < n && live[old]) {
      MEASURE(SP_FREE_OLD, scale, ms_space_free(s, live[old]));
      live[old] = NULL;
    }
    MEASURE(SP_INFO, scale, sink = (uintptr_t)ms_space_info(s, &info));
    MEASURE(SP_ZERO_SMALL, scale, p = ms_space_malloc(z, 64));
    MEASURE(SP_ZERO_LARGE, scale, q = ms_space_malloc(z, 1024));
    if (!p || !q) return 8;
    ms_space_free(z, p);
    ms_space_free(z, q);
  }
  MEASURE(SP_SHRINK, scale, sink = ms_space_shrink(s));
  ms_space_destroy(z);
  ms_space_destroy(s);
  free(live);
  return 0;
}

/* traces fn(scale) at every scale, keeping each op's most at each scale */
static void trace_scales(int (*fn)(void *), int scales, int ops) {
  unsigned long m[MAX_TAGS * SCALES] = {0}, c[MAX_TAGS * SCALES] = {0};
  for (int scale = 0; scale < scales; scale++) {
    TRACE(fn, (void *)(intptr_t)scale);
    for (int op = 0; op < ops; op++) {
      m[op * SCALES + scale] = steps_max[op * SCALES + scale];
      c[op * SCALES + scale] = steps_calls[op * SCALES + scale];
    }
  }
  memcpy(steps_max, m, sizeof m);
  memcpy(steps_calls, c, sizeof c);
}

static void space_steps(void **state) {
  (void)state;
  trace_scales(space_child, SCALES, SP_OPS);
  unsigned long ops = word_ops((size_t)1 << 30), bound = PER_WORD_OP * ops + CALL_OVERHEAD;
  print_message("most instructions per call, N live blocks in the space (%lu word operations at most):\n", ops);
  expect_bounded("ms_space_malloc (16 B - 64 KiB)", SP_MALLOC, SCALES, bound);
  /* free: one merge chain, or two when a full cache evicts a block first */
  expect_bounded("ms_space_free", SP_FREE, SCALES, 2 * bound);
  expect_bounded("ms_space_free (a block of the fill)", SP_FREE_OLD, SCALES, 2 * bound);
  expect_bounded("ms_space_calloc (48 B)", SP_CALLOC, SCALES, bound + 100);
  expect_bounded("ms_space_aligned_alloc (64 B - 4 KiB)", SP_ALIGNED, SCALES, bound);
  expect_bounded("ms_space_realloc (shrink in place)", SP_REALLOC_SHRINK, SCALES, 2 * bound);
  expect_bounded("ms_space_realloc (grow in place)", SP_REALLOC_GROW, SCALES, 2 * bound);
  expect_bounded("ms_space_realloc (move: malloc, copy 256 B, free)", SP_REALLOC_MOVE, SCALES, 3 * bound + 200);
  expect_flat("ms_space_usable_size", SP_USABLE, SCALES);
  expect_flat("ms_space_info", SP_INFO, SCALES);
  /* MS_SPACE_ZERO: O(block) */
  unsigned long zb = PER_WORD_OP * word_ops(4 << 20) + CALL_OVERHEAD;
  expect_bounded("ms_space_malloc, MS_SPACE_ZERO, 64 B", SP_ZERO_SMALL, SCALES, zb);
  expect_linear("MS_SPACE_ZERO: malloc of 64 B / 1 KiB", 64, most(SP_ZERO_SMALL, 2), 1024, most(SP_ZERO_LARGE, 2));
  if (most(SP_ZERO_LARGE, 2) > zb + 1024) fail_msg("MS_SPACE_ZERO: more than one instruction per byte zeroed");
  /* shrink: O(regions x log(size)) plus the block cache (at most 256 blocks) given back to the buddy system */
  expect_bounded("ms_space_shrink", SP_SHRINK, SCALES, (2 + 256) * 2 * bound);
}

/* ---- ms_space_create_in O(size), ms_space_check O(size/16), ms_space_walk O(blocks x orders) ---- */

enum { LS_CREATE_IN, LS_CHECK, LS_WALK, LS_OPS };
static const size_t ls_size[2] = {16 << 10, 32 << 10};
static int count_block(const void *b, size_t size, int used, void *arg) {
  (void)b, (void)size, (void)used;
  ++*(size_t *)arg;
  return 0;
}
static int linear_space_child(void *arg) {
  int scale = (int)(intptr_t)arg;
  size_t size = ls_size[scale];
  void *mem = aligned_alloc(4096, size);
  if (!mem) return 2;
  ms_space_t *s = NULL;
  MEASURE(LS_CREATE_IN, scale, s = ms_space_create_in(mem, size, 0));
  if (!s) return 3;
  void *b[4096];
  size_t n = 0;
  while (n < 4096 && (b[n] = ms_space_malloc(s, 48))) n++;
  for (size_t i = 0; i < n; i += 2) ms_space_free(s, b[i]); /* fragmented: free blocks everywhere */
  int r = 0;
  MEASURE(LS_CHECK, scale, r = ms_space_check(s));
  if (r) return 4;
  size_t blocks = 0;
  MEASURE(LS_WALK, scale, r = ms_space_walk(s, count_block, &blocks));
  if (r) return 5;
  ms_space_destroy(s);
  free(mem);
  return 0;
}

static double orders(size_t granules) {
  double l = 1;
  while (((size_t)1 << (size_t)l) < granules) l++;
  return l;
}

static void space_linear_steps(void **state) {
  (void)state;
  size_t blocks[2], granules[2];
  trace_scales(linear_space_child, 2, LS_OPS);
  /* the child's data area and block counts: the fill is deterministic, so count them here the same way */
  for (int i = 0; i < 2; i++) {
    void *mem = aligned_alloc(4096, ls_size[i]);
    ms_space_t *s = ms_space_create_in(mem, ls_size[i], 0);
    assert_non_null(s);
    ms_space_info_t info;
    assert_int_equal(ms_space_info(s, &info), 0);
    granules[i] = info.size / 16;
    void *b[4096];
    size_t n = 0;
    while (n < 4096 && (b[n] = ms_space_malloc(s, 48))) n++;
    for (size_t j = 0; j < n; j += 2) ms_space_free(s, b[j]);
    blocks[i] = 0;
    assert_int_equal(ms_space_walk(s, count_block, &blocks[i]), 0);
    ms_space_destroy(s);
    free(mem);
  }
  print_message("instructions per call against the size of a space in caller memory:\n");
  expect_linear("ms_space_create_in: size", (double)ls_size[0], most(LS_CREATE_IN, 0), (double)ls_size[1],
                most(LS_CREATE_IN, 1));
  expect_linear("ms_space_check: size/16 (the data area's)", (double)granules[0], most(LS_CHECK, 0),
                (double)granules[1], most(LS_CHECK, 1));
  expect_linear("ms_space_walk: blocks x orders", (double)blocks[0] * orders(granules[0]), most(LS_WALK, 0),
                (double)blocks[1] * orders(granules[1]), most(LS_WALK, 1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(space_steps),
      cmocka_unit_test(space_linear_steps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
