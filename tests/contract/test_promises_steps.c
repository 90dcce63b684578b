/* Complexity promises of include/memspace.h (O(1), O(log n), O(size), "a bounded number of steps"), checked by
   counting instructions, never by timing: a forked child runs each scenario under ptrace, and the parent
   single-steps every measured call (from the int3 in step_begin to the entry of step_end), so a count is the
   exact number of user-space instructions the call executed (a system call counts as one; a repeated string
   instruction as one per iteration). Deterministic: the same build on the same machine gives the same counts.
   Each promise is checked as the shape of its count when the quantity the promise names grows (the live blocks
   of a space or of the heap, the live buffers, the environment, the size of a block or of a space), never
   against a figure of this machine: O(1) calls must not grow with N = 10, 1,000, 100,000; O(x) calls must grow
   at most in proportion to x. Where ptrace is refused (a sandbox), the cases skip with the kernel's reason.
   Each case prints its counts. MS_STEPS_FILTER=PATTERN runs matching cases only; MS_STEPS_DEBUG=1 prints every
   measured call's count on stderr. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
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

#if !defined(__x86_64__)
/* the tracer reads x86-64 registers (rip, rdi) and plants x86 breakpoints (int3) */
int main(void) {
  puts("MS_SKIP missing: instruction counting by ptrace is written for x86-64 only");
  return MS_TEST_SKIP;
}
#else
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

/* a child stopped (SIGSTOP) under ptrace that runs fn(arg) when continued; its pid, or -1 with errno when ptrace
   is refused */
static pid_t spawn_traced(int (*fn)(void *), void *arg) {
  fflush(NULL);
  int pipefd[2];
  assert_int_equal(pipe(pipefd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(pipefd[0]);
    int ok = ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0;
    int e = ok ? 0 : errno;
    if (write(pipefd[1], &e, sizeof e) != sizeof e || !ok) _exit(77);
    close(pipefd[1]);
    raise(SIGSTOP);
    _exit(fn(arg));
  }
  close(pipefd[1]);
  int e = 0, st;
  if (read(pipefd[0], &e, sizeof e) != sizeof e) e = EIO;
  close(pipefd[0]);
  if (e) {
    waitpid(pid, &st, 0);
    errno = e;
    return -1;
  }
  assert_int_equal(waitpid(pid, &st, 0), pid); /* the SIGSTOP */
  ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)PTRACE_O_EXITKILL);
  return pid;
}

/* the traced child's end: fails the case unless it exited 0 (77: skip, its reason on stderr) */
static void traced_end(int st) {
  if (WIFSIGNALED(st)) fail_msg("the traced child was killed by signal %d", WTERMSIG(st));
  if (WEXITSTATUS(st) == 77) ms_skip_refused(0, "the traced child could not run (see its message)");
  if (WEXITSTATUS(st) != 0) fail_msg("the traced child failed with status %d (see its message)", WEXITSTATUS(st));
}

/* continues the child (passing on any other signal) until its next SIGTRAP: 1, or 0 when it ended (*st) */
static int next_trap(pid_t pid, int *st) {
  int sig = 0;
  for (;;) {
    assert_int_equal(ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig), 0);
    assert_int_equal(waitpid(pid, st, 0), pid);
    if (WIFEXITED(*st) || WIFSIGNALED(*st)) return 0;
    if (WSTOPSIG(*st) == SIGTRAP) return 1;
    sig = WSTOPSIG(*st);
  }
}

/* runs fn(arg) in a traced child, single-stepping every measured call; 0, or -1 with errno when ptrace is
   refused; fails the case when the child fails (exit status non-zero) or a call runs away */
static int trace(int (*fn)(void *), void *arg) {
  memset(steps_max, 0, sizeof steps_max);
  memset(steps_calls, 0, sizeof steps_calls);
  pid_t pid = spawn_traced(fn, arg);
  if (pid < 0) return -1;
  int st;
  const long rip_at = offsetof(struct user_regs_struct, rip);
  int sig = 0;
  while (next_trap(pid, &st)) {
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
    if (getenv("MS_STEPS_DEBUG")) fprintf(stderr, "tag %ld (op %ld scale %ld): %lu\n", tag, tag / SCALES, tag % SCALES, n);
    if (n > steps_max[tag]) steps_max[tag] = n;
    steps_calls[tag]++;
  }
  traced_end(st);
  return 0;
}

/* Not under ThreadSanitizer: its instrumentation calls into its runtime at every memory access, so the counts
   are the runtime's (bounds made for the library's own instructions fail), and single-stepping them all would
   take the test past its 10 minutes */
#define TRACE(fn, arg)                                                                                         \
  do {                                                                                                         \
    if (MS_TEST_TSAN) ms_skip_refused(0, "instruction counts of ThreadSanitizer-instrumented code");          \
    if (trace((fn), (arg))) ms_skip_refused(errno, "ptrace(PTRACE_TRACEME)");                                 \
  } while (0)

static unsigned long most(int op, int scale) {
  unsigned long m = steps_max[op * SCALES + scale];
  if (!steps_calls[op * SCALES + scale]) fail_msg("op %d at scale %d was never measured", op, scale);
  return m;
}

/* the most instructions a call of `op` took at every scale: at most `bound` (a constant: the call's worst case must
   not depend on N; a loop over blocks, buffers or classes would pass it by far at N = 100,000) */
static const size_t *label_n = scale_n; /* the N of each scale, for the messages */
static void expect_bounded(const char *what, int op, int scales, unsigned long bound) {
  print_message("  %-46s", what);
  for (int s = 0; s < scales; s++) print_message(" N=%-6zu %6lu", label_n[s], most(op, s));
  print_message("  (bound %lu)\n", bound);
  for (int s = 0; s < scales; s++)
    if (most(op, s) > bound)
      fail_msg("%s: %lu instructions at N=%zu, above the constant %lu: not O(1)", what, most(op, s), label_n[s], bound);
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

/* an empty directory for the spill files of the traced children (MEMSPACE_SPILL_DIR), in the build directory */
static char spill_dir[4096];
static void spill_dir_make(void) {
  snprintf(spill_dir, sizeof spill_dir, "%s/ms_steps_XXXXXX", MEMSPACE_BINARY_DIR); /* on disk: spill refuses tmpfs */
  assert_non_null(mkdtemp(spill_dir));
  setenv("MEMSPACE_SPILL_DIR", spill_dir, 1);
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

/* traces fn(scale) at every scale, keeping each tag's most over the runs (a run may measure other scales' tags) */
static void trace_scales(int (*fn)(void *), int scales, int ops) {
  unsigned long m[MAX_TAGS * SCALES] = {0}, c[MAX_TAGS * SCALES] = {0};
  for (int scale = 0; scale < scales; scale++) {
    TRACE(fn, (void *)(intptr_t)scale);
    for (int t = 0; t < ops * SCALES; t++) {
      if (steps_max[t] > m[t]) m[t] = steps_max[t];
      c[t] += steps_calls[t];
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

/* ---- the heap, frames, spill, options, stats, page sizes: O(1) with N = 10, 1,000, 100,000 heap blocks ---- */

enum { MI_USABLE_SMALL, MI_USABLE_LARGE, MI_OURS_HEAP, MI_OURS_LARGE, MI_OURS_SPACE, MI_OURS_SPILL, MI_OURS_STACK,
       MI_SPILL_IS, MI_SPILL_IS_HEAP, MI_FRAME_ALLOC, MI_FRAME_USED, MI_VERSION, MI_PAGE_SIZE, MI_HUGE_PAGE_SIZE,
       MI_OPTION_GET, MI_OPTION_GET_STRING, MI_OPTION_NAME, MI_OPTION_SET, MI_STATS_CLASS, MI_STATS_GET, MI_OPS };

/* the heap's mapped bytes at each scale, sent by the child through a pipe; as 64 KiB chunks (the span table's
   entries; the classes and the one thread are the same at every scale) */
static int misc_pipe[2];
static size_t misc_chunks[SCALES];

/* n heap blocks of 16 B - 4 KiB, one in 97 of 300 KiB (a large block; the last one when n < 97); n/4 frame allocations (at least 10) in
   the current frame; min(n, 40) spilled blocks; then every O(1) call of those parts, 16 times */
static int misc_child(void *arg) {
  int scale = (int)(intptr_t)arg;
  size_t n = scale_n[scale], nf = n / 4 > 10 ? n / 4 : 10, ns = n < 40 ? n : 40;
  void **heap = malloc(n * sizeof *heap), *spill[40];
  ms_frame_config_t fc;
  memset(&fc, 0, sizeof fc);
  fc.range_size = 64 << 20;
  fc.idle_ms = -1;
  ms_frame_t *f = ms_frame_create(&fc);
  ms_space_t *sp = make(1 << 20, 0, MS_SPACE_AT_START, 0);
  if (!heap || !f || !sp) return 2;
  size_t large_at = n > 96 ? 96 : n - 1; /* a large block at every N, also below 97 blocks */
  for (size_t i = 0; i < n; i++)
    if (!(heap[i] = ms_malloc(i % 97 == 96 || i == large_at ? 300 << 10 : (size_t)16 << (i % 9)))) return 3;
  for (size_t i = 0; i < nf; i++)
    if (!ms_frame_alloc(f, 16 + i % 200, 0)) return 4;
  /* ms_stats_get before spill is used: once in use, it also samples every page spill has mapped (mincore) */
  ms_stats_t st;
  for (int k = 0; k < 2; k++) MEASURE(MI_STATS_GET, scale, sink = (uintptr_t)ms_stats_get(&st, sizeof st));
  if (write(misc_pipe[1], &st.heap_mapped_bytes, sizeof st.heap_mapped_bytes) != sizeof st.heap_mapped_bytes) return 6;
  for (size_t i = 0; i < ns; i++)
    if (!(spill[i] = ms_spill_alloc(64 << 10))) return 5;
  if (!ms_spill_is(spill[0])) {
    fprintf(stderr, "spill fell back to RAM in %s (its warning says why)\n", getenv("MEMSPACE_SPILL_DIR"));
    return 77;
  }
  void *blk = ms_space_malloc(sp, 100);
  char local = 0;
  for (int k = 0; k < 16; k++) {
    size_t si = (size_t)k * 2654435761u % n;
    while (si % 97 == 96 || si == large_at) si = (si + 1) % n; /* a small block */
    void *small = heap[si], *large = heap[large_at];
    MEASURE(MI_USABLE_SMALL, scale, sink = ms_usable_size(small));
    MEASURE(MI_USABLE_LARGE, scale, sink = ms_usable_size(large));
    MEASURE(MI_OURS_HEAP, scale, sink = (uintptr_t)ms_is_ours(small));
    MEASURE(MI_OURS_LARGE, scale, sink = (uintptr_t)ms_is_ours(large));
    MEASURE(MI_OURS_SPACE, scale, sink = (uintptr_t)ms_is_ours(blk));
    MEASURE(MI_OURS_SPILL, scale, sink = (uintptr_t)ms_is_ours((char *)spill[k % ns] + 100));
    MEASURE(MI_OURS_STACK, scale, sink = (uintptr_t)ms_is_ours(&local));
    MEASURE(MI_SPILL_IS, scale, sink = (uintptr_t)ms_spill_is((char *)spill[k % ns] + 1000));
    MEASURE(MI_SPILL_IS_HEAP, scale, sink = (uintptr_t)ms_spill_is(small));
    MEASURE(MI_FRAME_ALLOC, scale, sink = (uintptr_t)ms_frame_alloc(f, 24 + (size_t)k, (size_t)16 << (k % 6)));
    MEASURE(MI_FRAME_USED, scale, sink = ms_frame_used(f));
    MEASURE(MI_VERSION, scale, sink = (uintptr_t)ms_version());
    MEASURE(MI_PAGE_SIZE, scale, sink = ms_page_size());
    MEASURE(MI_HUGE_PAGE_SIZE, scale, sink = ms_huge_page_size(k % 2 ? MS_PAGE_HUGE_2M : MS_PAGE_HUGE_1G));
    ms_option_t o = (ms_option_t)(k % MS_OPTION_COUNT);
    MEASURE(MI_OPTION_GET, scale, sink = (uintptr_t)ms_option_get(o));
    MEASURE(MI_OPTION_GET_STRING, scale, sink = (uintptr_t)ms_option_get_string(MS_OPTION_SPILL_DIR));
    MEASURE(MI_OPTION_NAME, scale, sink = (uintptr_t)ms_option_name(o));
    /* (the cache preset is O(cached spans and slots) by the header: not this case) */
    MEASURE(MI_OPTION_SET, scale, sink = (uintptr_t)ms_option_set(MS_OPTION_VERBOSE, 0));
    const ms_stats_t *volatile stp = &st;
    MEASURE(MI_STATS_CLASS, scale, sink = (uintptr_t)ms_stats_class(stp, (unsigned)(k * 8)));
  }
  for (size_t i = 0; i < ns; i++) ms_spill_free(spill[i]);
  for (size_t i = 0; i < n; i++) ms_free(heap[i]);
  free(heap);
  ms_frame_destroy(f);
  ms_space_destroy(sp);
  return 0;
}

static void misc_steps(void **state) {
  (void)state;
  spill_dir_make();
  assert_int_equal(pipe(misc_pipe), 0);
  trace_scales(misc_child, SCALES, MI_OPS);
  rmdir(spill_dir);
  for (int sc = 0; sc < SCALES; sc++) {
    uint64_t mapped = 0;
    assert_int_equal(read(misc_pipe[0], &mapped, sizeof mapped), sizeof mapped);
    misc_chunks[sc] = 1 + mapped / (64 << 10);
  }
  close(misc_pipe[0]);
  close(misc_pipe[1]);
  print_message("most instructions per call, N live heap blocks (and N/4 frame allocations, min(N, 40) spilled):\n");
  expect_flat("ms_usable_size (16 B - 4 KiB)", MI_USABLE_SMALL, SCALES);
  expect_flat("ms_usable_size (300 KiB)", MI_USABLE_LARGE, SCALES);
  expect_flat("ms_is_ours (heap block)", MI_OURS_HEAP, SCALES);
  expect_flat("ms_is_ours (large heap block)", MI_OURS_LARGE, SCALES);
  expect_flat("ms_is_ours (space block)", MI_OURS_SPACE, SCALES);
  expect_flat("ms_is_ours (inside a spilled block)", MI_OURS_SPILL, SCALES);
  expect_flat("ms_is_ours (the stack)", MI_OURS_STACK, SCALES);
  expect_flat("ms_spill_is (inside a spilled block)", MI_SPILL_IS, SCALES);
  expect_flat("ms_spill_is (a heap block)", MI_SPILL_IS_HEAP, SCALES);
  expect_flat("ms_frame_alloc (alignment 16 B - 512 B)", MI_FRAME_ALLOC, SCALES);
  expect_flat("ms_frame_used", MI_FRAME_USED, SCALES);
  expect_flat("ms_version", MI_VERSION, SCALES);
  expect_flat("ms_page_size", MI_PAGE_SIZE, SCALES);
  expect_flat("ms_huge_page_size (after the first call)", MI_HUGE_PAGE_SIZE, SCALES);
  expect_flat("ms_option_get (every option)", MI_OPTION_GET, SCALES);
  expect_flat("ms_option_get_string", MI_OPTION_GET_STRING, SCALES);
  expect_flat("ms_option_name", MI_OPTION_NAME, SCALES);
  expect_flat("ms_option_set (MS_OPTION_VERBOSE)", MI_OPTION_SET, SCALES);
  expect_flat("ms_stats_class", MI_STATS_CLASS, SCALES);
  /* O(threads + classes + the heap's span table): the table grows with the heap's mapped memory (one entry per
     64 KiB chunk), not with the blocks in it */
  print_message("instructions of ms_stats_get against the heap's mapped 64 KiB chunks:\n");
  for (int sc = 1; sc < SCALES; sc++)
    expect_linear("ms_stats_get", (double)misc_chunks[0], most(MI_STATS_GET, 0), (double)misc_chunks[sc],
                  most(MI_STATS_GET, sc));
}

/* ---- ms_stats_get: O(threads + classes) ---- */

enum { TH_STATS_GET, TH_OPS };
static const int th_count[2] = {1, 9};
static int th_pipe[2]; /* each scale's child: the heap's mapped bytes after its calls */
static int hold[2], ready[2];
static void *parked(void *arg) {
  void *volatile p = malloc((size_t)(uintptr_t)arg); /* a thread cache of its own (volatile: the optimiser drops a
                                                         free(malloc(n)) pair, and the thread then has none) */
  free(p);
  char c = 1;
  if (write(ready[1], &c, 1) != 1) return NULL;
  return (void *)(intptr_t)read(hold[0], &c, 1); /* parked until the end */
}
static int threads_child(void *arg) {
  int scale = (int)(intptr_t)arg;
  pthread_t t[16];
  if (pipe(hold) || pipe(ready)) return 2;
  for (int i = 1; i < th_count[scale]; i++)
    if (pthread_create(&t[i], NULL, parked, (void *)(uintptr_t)(16 * i))) return 3;
  char c;
  for (int i = 1; i < th_count[scale]; i++)
    if (read(ready[0], &c, 1) != 1) return 4;
  ms_stats_t st;
  for (int k = 0; k < 2; k++) MEASURE(TH_STATS_GET, scale, sink = (uintptr_t)ms_stats_get(&st, sizeof st));
  if (write(th_pipe[1], &st.heap_mapped_bytes, sizeof st.heap_mapped_bytes) != sizeof st.heap_mapped_bytes) return 6;
  close(hold[1]);
  for (int i = 1; i < th_count[scale]; i++) pthread_join(t[i], NULL);
  return 0;
}

/* x: threads + classes + the heap's mapped 64 KiB chunks, the promise's terms (each thread's segment adds a span
   table of 64 chunks to walk: at -O0 that walk, not the threads, is most of the growth) */
static void stats_threads_steps(void **state) {
  (void)state;
  assert_int_equal(pipe(th_pipe), 0);
  trace_scales(threads_child, 2, TH_OPS);
  double x[2];
  int classes = MS_STATS_SIZE_CLASSES + MS_STATS_SIZE_CLASSES_MORE;
  for (int sc = 0; sc < 2; sc++) {
    uint64_t mapped = 0;
    assert_int_equal(read(th_pipe[0], &mapped, sizeof mapped), sizeof mapped);
    x[sc] = th_count[sc] + classes + 1 + (double)(mapped / (64 << 10));
  }
  close(th_pipe[0]);
  close(th_pipe[1]);
  print_message("instructions of ms_stats_get against threads + size classes (%d) + mapped 64 KiB chunks:\n", classes);
  expect_linear("ms_stats_get: threads + classes + chunks", x[0], most(TH_STATS_GET, 0), x[1], most(TH_STATS_GET, 1));
}

/* ---- DMA buffers: O(1) accessors with 10 and 300 live buffers; O(pages), O(log segments) ---- */

enum { DM_ADDR, DM_SIZE, DM_PAGE_SIZE, DM_MOVABLE, DM_INFO, DM_SEGMENTS_AGAIN, DM_PHYS, DM_FENCE, DM_FENCE_AFTER,
       DM_SEGMENTS_FIRST, DM_VERIFY, DM_OPS };
static const size_t dm_count[2] = {10, 300}, dm_pages[2] = {8, 64};
/* dm_count[scale] buffers of one page: the accessors on every tenth buffer; with 10 buffers, buffers of 8 and 64
   pages measured: the list's first build, verify, phys at every page */
static int dma_child(void *arg) {
  int scale = (int)(intptr_t)arg;
  size_t ps = ms_page_size(), nb = dm_count[scale];
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.page_size = ps;
  c.numa_node = -1;
  ms_dma_buffer_t **b = calloc(nb, sizeof *b);
  if (!b) return 2;
  for (size_t i = 0; i < nb; i++)
    if (!(b[i] = ms_dma_alloc(ps, &c))) {
      fprintf(stderr, "ms_dma_alloc of one page: %s\n", strerror(errno));
      return 77;
    }
  /* buffers of 8 and 64 pages (the first run only: the same number of live buffers for both) */
  for (int i = 0; i < 2 && scale == 0; i++) {
    ms_dma_buffer_t *big = ms_dma_alloc(dm_pages[i] * ps, &c);
    if (!big) {
      fprintf(stderr, "ms_dma_alloc of %zu pages: %s\n", dm_pages[i], strerror(errno));
      return 77;
    }
    size_t count = 0;
    const ms_dma_segment_t *segs = NULL;
    MEASURE(DM_SEGMENTS_FIRST, i, segs = ms_dma_segments(big, &count));
    if (!segs) {
      fprintf(stderr, "physical addresses: %s\n", strerror(errno));
      return 77;
    }
    MEASURE(DM_VERIFY, i, sink = (uintptr_t)ms_dma_verify(big, NULL));
    uint64_t phys;
    for (size_t p = 0; p < dm_pages[i]; p++) MEASURE(DM_PHYS, i, sink = (uintptr_t)ms_dma_phys(big, p * ps, &phys));
    ms_dma_free(big);
  }
  ms_dma_buffer_t *big = ms_dma_alloc(64 * ps, &c);
  if (!big) return 3;
  size_t count = 0;
  ms_dma_info_t info;
  char src[4096] = {0};
  for (size_t i = 0; i < nb; i += 10) {
    ms_dma_segments(b[i], &count);
    MEASURE(DM_ADDR, scale, sink = (uintptr_t)ms_dma_addr(b[i]));
    MEASURE(DM_SIZE, scale, sink = ms_dma_size(b[i]));
    MEASURE(DM_PAGE_SIZE, scale, sink = ms_dma_page_size(b[i]));
    MEASURE(DM_MOVABLE, scale, sink = (uintptr_t)ms_dma_movable(b[i]));
    MEASURE(DM_INFO, scale, sink = (uintptr_t)ms_dma_info(b[i], &info));
    MEASURE(DM_SEGMENTS_AGAIN, scale, sink = (uintptr_t)ms_dma_segments(b[i], &count));
    MEASURE(DM_FENCE, scale, ms_dma_fence());
    for (size_t off = 0; off + sizeof src <= 64 * ps; off += sizeof src)
      ms_dma_stream(big, off, src, sizeof src);
    MEASURE(DM_FENCE_AFTER, scale, ms_dma_fence()); /* after pages of outstanding streaming stores */
  }
  for (size_t i = 0; i < nb; i++) ms_dma_free(b[i]);
  ms_dma_free(big);
  free(b);
  return 0;
}

static void dma_steps(void **state) {
  (void)state;
  trace_scales(dma_child, 2, DM_OPS);
  /* the list's length: read here the same way (physical pages differ, the count is what O(log) is about) */
  size_t nsegs[2], ps = ms_page_size();
  for (int i = 0; i < 2; i++) {
    ms_dma_config_t c;
    memset(&c, 0, sizeof c);
    c.page_size = ps;
    c.numa_node = -1;
    ms_dma_buffer_t *big = ms_dma_alloc(dm_pages[i] * ps, &c);
    assert_non_null(big);
    assert_non_null(ms_dma_segments(big, &nsegs[i]));
    ms_dma_free(big);
  }
  print_message("most instructions per call, N live DMA buffers:\n");
  label_n = dm_count;
  expect_flat("ms_dma_addr", DM_ADDR, 2);
  expect_flat("ms_dma_size", DM_SIZE, 2);
  expect_flat("ms_dma_page_size", DM_PAGE_SIZE, 2);
  expect_flat("ms_dma_movable", DM_MOVABLE, 2);
  expect_flat("ms_dma_info", DM_INFO, 2);
  expect_flat("ms_dma_segments (built)", DM_SEGMENTS_AGAIN, 2);
  expect_flat("ms_dma_fence", DM_FENCE, 2);
  if (most(DM_FENCE_AFTER, 1) > most(DM_FENCE, 0) + 2)
    fail_msg("ms_dma_fence after streaming stores: %lu instructions against %lu", most(DM_FENCE_AFTER, 1),
             most(DM_FENCE, 0));
  print_message("instructions per call against a buffer of %zu / %zu pages (%zu / %zu segments here):\n", dm_pages[0],
                dm_pages[1], nsegs[0], nsegs[1]);
  expect_linear("ms_dma_segments (first call): pages", (double)dm_pages[0], most(DM_SEGMENTS_FIRST, 0),
                (double)dm_pages[1], most(DM_SEGMENTS_FIRST, 1));
  expect_linear("ms_dma_verify: pages", (double)dm_pages[0], most(DM_VERIFY, 0), (double)dm_pages[1],
                most(DM_VERIFY, 1));
  expect_linear("ms_dma_phys: log2(segments) + 1", orders(nsegs[0]) + 1, most(DM_PHYS, 0), orders(nsegs[1]) + 1,
                most(DM_PHYS, 1));
  label_n = scale_n;
}

/* ---- ms_dma_register: O(mappings) ---- */

/* ms_dma_register reads /proc/self/smaps in address order up to the end of the range: memory placed below every
   other mapping is described by its own mappings only, so its count is what the cost follows. 16 pages at a low
   address, made of 1 or 8 mappings (neighbours split by alternating THP advice, all writable). */
enum { RG_REGISTER, RG_OPS };
static const int rg_maps[2] = {1, 8};
static int register_child(void *arg) {
  (void)arg;
  size_t ps = ms_page_size(), size = 16 * ps;
  char *low = NULL;
  for (uintptr_t at = 1ul << 28; at < 1ul << 40 && !low; at <<= 1) {
    void *p = mmap((void *)at, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED) low = p;
  }
  if (!low) return 2;
  for (int scale = 0; scale < 2; scale++) {
    size_t part = size / (size_t)rg_maps[scale];
    for (int i = 0; i < rg_maps[scale]; i++)
      if (madvise(low + (size_t)i * part, part, i % 2 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE)) {
        fprintf(stderr, "madvise: %s\n", strerror(errno));
        return 77;
      }
    ms_dma_buffer_t *b = ms_dma_register(low, size, NULL); /* warm: the same path, untimed */
    if (!b) {
      fprintf(stderr, "ms_dma_register of 16 pages: %s\n", strerror(errno));
      return 77;
    }
    ms_dma_free(b);
    MEASURE(RG_REGISTER, scale, b = ms_dma_register(low, size, NULL));
    if (!b) return 3;
    ms_dma_free(b);
  }
  return 0;
}

static void dma_register_steps(void **state) {
  (void)state;
  TRACE(register_child, NULL);
  print_message("instructions of ms_dma_register against the mappings up to the range's end:\n");
  expect_linear("ms_dma_register: mappings", rg_maps[0], most(RG_REGISTER, 0), rg_maps[1], most(RG_REGISTER, 1));
}

/* ---- ms_stats_print is allocation-free ---- */

/* Between step_begin and step_end the parent puts an int3 on the entry of every allocation call (the malloc family,
   which the C library's own allocations reach too, and memspace's ms_* entries) in the child's copy of the text;
   a hit is counted (free only for a non-NULL pointer), stepped over and re-armed. */
static const struct { const char *name; void *fn; } alloc_entries[] = {
    {"malloc", (void *)malloc}, {"calloc", (void *)calloc}, {"realloc", (void *)realloc}, {"free", (void *)free},
    {"aligned_alloc", (void *)aligned_alloc}, {"posix_memalign", (void *)posix_memalign},
    {"ms_malloc", (void *)ms_malloc}, {"ms_calloc", (void *)ms_calloc}, {"ms_realloc", (void *)ms_realloc},
    {"ms_aligned_alloc", (void *)ms_aligned_alloc}, {"ms_free", (void *)ms_free},
    {"ms_spill_alloc", (void *)ms_spill_alloc}};
enum { ALLOC_ENTRIES = sizeof alloc_entries / sizeof alloc_entries[0] };
static unsigned long alloc_hits[MAX_TAGS][ALLOC_ENTRIES];

static long poke_int3(pid_t pid, uintptr_t at) {
  long word = ptrace(PTRACE_PEEKTEXT, pid, (void *)at, NULL);
  assert_int_equal(ptrace(PTRACE_POKETEXT, pid, (void *)at, (void *)((word & ~0xffL) | 0xcc)), 0);
  return word;
}

/* runs fn(arg) in a traced child, counting allocation calls inside every measured call into alloc_hits */
static int trace_allocs(int (*fn)(void *), void *arg) {
  memset(alloc_hits, 0, sizeof alloc_hits);
  pid_t pid = spawn_traced(fn, arg);
  if (pid < 0) return -1;
  uintptr_t at[ALLOC_ENTRIES + 1];
  long saved[ALLOC_ENTRIES + 1];
  int n = 0;
  for (int i = 0; i < ALLOC_ENTRIES; i++) at[i] = (uintptr_t)alloc_entries[i].fn;
  at[ALLOC_ENTRIES] = (uintptr_t)step_end;
  int st;
  struct user_regs_struct r;
  while (next_trap(pid, &st)) {
    assert_int_equal(ptrace(PTRACE_GETREGS, pid, NULL, &r), 0);
    if (!n) { /* step_begin: arm (an address shared by two names, e.g. an alias, once) */
      for (int i = 0; i <= ALLOC_ENTRIES; i++) {
        saved[i] = 0;
        for (int j = 0; j < i; j++)
          if (at[j] == at[i]) at[i] = 0;
        if (at[i]) saved[i] = poke_int3(pid, at[i]);
      }
      n = 1;
      continue;
    }
    long tag = ptrace(PTRACE_PEEKDATA, pid, (void *)&step_tag, NULL);
    int i = 0;
    while (i <= ALLOC_ENTRIES && at[i] != r.rip - 1) i++;
    if (i > ALLOC_ENTRIES) fail_msg("an unexpected breakpoint stop at %#llx", (unsigned long long)r.rip);
    r.rip--;
    assert_int_equal(ptrace(PTRACE_POKETEXT, pid, (void *)at[i], (void *)saved[i]), 0);
    assert_int_equal(ptrace(PTRACE_SETREGS, pid, NULL, &r), 0);
    if (i == ALLOC_ENTRIES) { /* step_end: disarm every entry */
      for (int j = 0; j < ALLOC_ENTRIES; j++)
        if (at[j]) assert_int_equal(ptrace(PTRACE_POKETEXT, pid, (void *)at[j], (void *)saved[j]), 0);
      for (int j = 0; j < ALLOC_ENTRIES; j++) at[j] = (uintptr_t)alloc_entries[j].fn;
      n = 0;
      continue;
    }
    if (!(alloc_entries[i].fn == (void *)free || alloc_entries[i].fn == (void *)ms_free) || r.rdi)
      alloc_hits[tag][i]++;
    /* over the entry's first instruction, then armed again */
    assert_int_equal(ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL), 0);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSTOPPED(st));
    poke_int3(pid, at[i]);
  }
  traced_end(st);
  return 0;
}

enum { PR_TEXT, PR_JSON, PR_STDERR, PR_OPS };
static char print_buf[1 << 16];
static size_t print_len;
static void print_sink(const char *text, void *arg) {
  (void)arg;
  size_t n = strlen(text);
  if (print_len + n < sizeof print_buf) memcpy(print_buf + print_len, text, n), print_len += n;
}
/* every part in use (a space, a frame, a DMA buffer, a spilled block, heap blocks), then ms_stats_print three ways */
static int print_child(void *arg) {
  (void)arg;
  void *h = malloc(1000);
  ms_space_t *s = make(1 << 20, 0, MS_SPACE_AT_START, 0);
  ms_frame_config_t fc;
  memset(&fc, 0, sizeof fc);
  fc.range_size = 1 << 20;
  ms_frame_t *f = ms_frame_create(&fc);
  ms_dma_buffer_t *d = ms_dma_alloc(ms_page_size(), NULL);
  void *sp = ms_spill_alloc(64 << 10);
  if (!h || !s || !f || !sp || !ms_space_malloc(s, 100) || !ms_frame_alloc(f, 100, 0)) return 2;
  if (!d) fprintf(stderr, "(no DMA buffer: %s; its section is left out)\n", strerror(errno));
  ms_stats_print(print_sink, NULL, 0); /* warm: one-time set-up (program name, page sizes) outside the count */
  print_len = 0;
  MEASURE(PR_TEXT, 0, ms_stats_print(print_sink, NULL, 0));
  if (!strstr(print_buf, "space") || !strstr(print_buf, "spill")) return 3;
  print_len = 0;
  MEASURE(PR_JSON, 0, ms_stats_print(print_sink, NULL, MS_STATS_JSON));
  if (print_buf[0] != '{') return 4;
  int e = dup(2), null = open("/dev/null", O_WRONLY);
  if (e < 0 || null < 0 || dup2(null, 2) < 0) return 5;
  MEASURE(PR_STDERR, 0, ms_stats_print(NULL, NULL, 0));
  dup2(e, 2);
  ms_spill_free(sp);
  return 0; /* the rest goes with the child */
}

static void stats_print_allocation_free(void **state) {
  (void)state;
  spill_dir_make();
  int r = trace_allocs(print_child, NULL);
  rmdir(spill_dir);
  if (r) ms_skip_refused(errno, "ptrace(PTRACE_TRACEME)");
  static const char *const how[PR_OPS] = {"text", "JSON", "text to stderr"};
  for (int op = 0; op < PR_OPS; op++)
    for (int i = 0; i < ALLOC_ENTRIES; i++)
      if (alloc_hits[op * SCALES][i])
        fail_msg("ms_stats_print (%s) called %s %lu times", how[op], alloc_entries[i].name, alloc_hits[op * SCALES][i]);
}

int main(void) {
  if (getenv("MS_STEPS_FILTER")) cmocka_set_test_filter(getenv("MS_STEPS_FILTER"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(space_steps),
      cmocka_unit_test(space_linear_steps),
      cmocka_unit_test(misc_steps),
      cmocka_unit_test(stats_threads_steps),
      cmocka_unit_test(dma_steps),
      cmocka_unit_test(dma_register_steps),
      cmocka_unit_test(stats_print_allocation_free),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
