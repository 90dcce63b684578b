/* Hardening. Every build: a double free, a free of a pointer inside memspace's ranges that is not the start of a
   live block, and the same through realloc, are detected with a message naming the pointer and the call (also
   run with MEMSPACE_SECURE=1: test_hardening_checks). The secure build (-DMEMSPACE_SECURE=ON, MS_SECURE_BUILD):
   guard pages after spans and large blocks, encoded free-list links, canaries after blocks, a random carving
   order, and a secure heap of 8 GiB with few mappings. Each death case runs in a child process (the heap aborts;
   spaces report and ignore the call); the parent reads the child's stderr or its signal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "ms_test.h"
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include "memspace.h"

/* the child names the pointer its misuse concerns (the message must name exactly that pointer): a line "child
   pointer 0x..." on stderr, before the misuse */
static void expose(void **out, void *p) {
  *out = p;
  fprintf(stderr, "child pointer %p\n", p);
  fflush(stderr);
}
#define EXPOSE(p) expose(out, (p))

/* runs fn in a child with stderr captured: a message must name the pointer the child exposed and one of the words
   (the call); must_abort: the child must die of SIGABRT (the heap), else it may go on (spaces report and ignore) */
static void expect_detected_as(void (*fn)(void **), const char *word, const char *what, bool must_abort) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  void *ptr = NULL;  /* the child's pointer (its message must name it) */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    fn(&ptr);
    _exit(0);  /* not detected */
  }
  close(fds[1]);
  char buf[4096];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof buf - 1 && (r = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
  buf[n] = 0;
  close(fds[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0) {}
  bool died = WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0);
  char ptr_text[40] = "", *msg = buf;
  const char *tag = strstr(buf, "child pointer ");
  if (tag) {
    snprintf(ptr_text, sizeof ptr_text, "%.*s", (int)strcspn(tag + 14, "\n"), tag + 14);
    msg = (char *)tag + 14 + strcspn(tag + 14, "\n");
    msg += *msg == '\n';
  }
  printf("%s: %s; pointer %s; message: %.*s\n", what, died ? "stopped" : "reported, went on", ptr_text,
         (int)strcspn(msg, "\n"), msg);
  if (!ptr_text[0]) fail_msg("%s: the child exposed no pointer", what);
  if (!msg[0]) fail_msg("%s: not detected (no message, the child %s)", what, died ? "died" : "went on");
  if (must_abort && !(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT))
    fail_msg("%s: the child did not die of SIGABRT (status 0x%x)", what, st);
  bool named = false;
  for (const char *w = word; *w; w += strcspn(w, "|"), w += *w == '|') {
    size_t len = strcspn(w, "|");
    char one[32];
    snprintf(one, sizeof one, "%.*s", (int)len, w);
    named |= strstr(buf, one) != NULL;
  }
  if (!named) fail_msg("%s: the message does not name the call (%s): %s", what, word, msg);
  if (!strstr(msg, ptr_text)) fail_msg("%s: the message does not name the pointer %s: %s", what, ptr_text, msg);
}
static void expect_detected(void (*fn)(void **), const char *word, const char *what) {
  expect_detected_as(fn, word, what, true);
}

/* runs fn in a child: it must die of signal sig (a guard page) */
__attribute__((unused))
static void expect_signal(void (*fn)(void **), int sig, const char *what) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    void *ptr;
    signal(SIGSEGV, SIG_DFL); /* cmocka's handler would carry on with the next test in the child */
    signal(SIGBUS, SIG_DFL);
    fn(&ptr);
    _exit(0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0) {}
  printf("%s: %s %d\n", what, WIFSIGNALED(st) ? "killed by signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  if (!WIFSIGNALED(st) || WTERMSIG(st) != sig) fail_msg("%s: expected signal %d", what, sig);
}

static void heap_double_free(void **out) { void *p = ms_malloc(40); EXPOSE(p); ms_free(p); ms_free(p); }
/* the double free comes after other frees of the span (the freed block is not the list head any more) */
static void heap_double_free_later(void **out) {
  void *a[8];
  for (int i = 0; i < 8; i++) a[i] = ms_malloc(100);
  EXPOSE(a[3]);
  ms_free(a[3]);
  for (int i = 4; i < 8; i++) ms_free(a[i]);
  ms_free(a[3]);
}
static void heap_interior_free(void **out) { char *p = ms_malloc(64); EXPOSE(p + 16); ms_free(p + 16); }
static void heap_realloc_freed(void **out) { void *p = ms_malloc(40); EXPOSE(p); ms_free(p); p = ms_realloc(p, 100); }
static void heap_realloc_freed_small(void **out) { void *p = ms_malloc(40); EXPOSE(p); ms_free(p); p = ms_realloc(p, 8); }
static void large_double_free(void **out) { void *p = ms_malloc(1 << 20); EXPOSE(p); ms_free(p); ms_free(p); }
static void large_interior_free(void **out) { char *p = ms_malloc(1 << 20); EXPOSE(p + 4096); ms_free(p + 4096); }
static void large_realloc_freed(void **out) { void *p = ms_malloc(1 << 20); EXPOSE(p); ms_free(p); p = ms_realloc(p, 100); }

/* issue #25. Use after free: a freed block's link overwritten with a plausible pointer (glibc 2.32+: "malloc():
   unaligned tcache chunk detected"); the pop of p1 reports it, naming p1 */
static char uaf_global[64];
static void uaf_link_with(void **out, void *(*alloc)(size_t), void (*release)(void *)) {
  void *p2 = alloc(32), *p1 = alloc(32);
  EXPOSE(p1);
  release(p2);
  release(p1);
  *(void **)p1 = uaf_global;
  void *a = alloc(32), *b = alloc(32);
  fprintf(stderr, "not detected: %p %p\n", a, b);
}
static void heap_uaf_link(void **out) { uaf_link_with(out, ms_malloc, ms_free); }
#if MS_OVERRIDE
/* the same through C++ operator new (the override layer's), whose inline pop hands a block that fails its check to
   the slow path: the report must be the same, naming p1 */
extern void *msi_test_op_new(size_t) __asm__("_Znwm");
extern void msi_test_op_delete(void *) __asm__("_ZdlPv");
static void heap_uaf_link_new(void **out) { uaf_link_with(out, msi_test_op_new, msi_test_op_delete); }
#endif
/* two blocks of `size` next to each other (b right after a's block), or the test fails */
static void adjacent_pair(size_t size, char **a, char **b) {
  char *v[64];
  for (int i = 0; i < 64; i++) v[i] = ms_malloc(size);
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 64; j++)
      if (v[j] > v[i] && (size_t)(v[j] - v[i]) <= ms_usable_size(v[i]) + 8) { *a = v[i], *b = v[j]; return; }
  fprintf(stderr, "no adjacent blocks\n");
  _exit(3);
}
/* Overflows into a free neighbour: strcpy of 16 characters into a 16-byte block writes its NUL into the freed
   block after it (the link's low byte); 16 bytes more overwrite its whole header. The heap reports the pop of b
   (unchecked, the next two malloc(16) would return a again while it is live, or crash later without a message) */
static void heap_overflow(void **out, size_t bytes) {
  char *a, *b;
  adjacent_pair(16, &a, &b);
  EXPOSE(b);
  ms_free(b);
  memset(a, 'A', (size_t)(b - a)); /* (the secure build's canary included: a is never freed) */
  if (bytes == 1) b[-1] = 0, strcpy(b - 16, "0123456789abcdef"); /* 17 bytes from b - 16: the NUL lands on b[0] */
  else memset(b, 'x', bytes);
  char *x = ms_malloc(16), *y = ms_malloc(16);
  fprintf(stderr, "not detected: %p %p (a %p)\n", x, y, a);
}
/* An over-read then an overflow: the xor of a free neighbour's two words is its span's key (docs/heap.md, Checks),
   so both words of the freed b are rewritten to agree on a link to `target`. Returns the two blocks the next two
   malloc(16) hand out when nothing stops them */
static void forge_link(char *b, uintptr_t target) {
  uintptr_t *w = (uintptr_t *)b, key = w[0] ^ w[1];
  w[0] = target ^ key, w[1] = target;
  char *x = ms_malloc(16), *y = ms_malloc(16);
  fprintf(stderr, "not detected: %p %p (the forged link %p)\n", x, y, (void *)target);
}
/* a link to a global whose words look like a free block's: the pop of b reports it, naming b: a forged link leads
   into b's own segment at most, never to the global (unchecked, the second malloc(16) returned the global's address) */
static _Alignas(64) uintptr_t forged_target[8];
static void heap_forged_link(void **out) {
  char *a, *b;
  adjacent_pair(16, &a, &b);
  EXPOSE(b);
  ms_free(b);
  uintptr_t *w = (uintptr_t *)b, key = w[0] ^ w[1], end = w[1];
  forged_target[0] = end ^ key, forged_target[1] = end;
  forge_link(b, (uintptr_t)forged_target);
}
/* a link to the start of b's segment, its descriptor chunk (docs/heap.md: the chunk -> span map, then the span
   descriptors), which the segment check lets through: the pop of b takes it, the next pop finds words there that are
   no free block's and reports that address (the heap's own words, which no program writes, never agree as a free
   block's do: the key's top bit is set), so no part of the descriptors is ever handed out as a block */
#define SEGMENT_SIZE ((uintptr_t)4 << 20) /* the heap's segments (src/heap/heap.h MSI_HEAP_SEG_SIZE) */
static void heap_forged_link_header(void **out) {
  char *a, *b;
  adjacent_pair(16, &a, &b);
  uintptr_t header = (uintptr_t)b & ~(SEGMENT_SIZE - 1);
  EXPOSE((void *)header);
  ms_free(b);
  forge_link(b, header);
}
static void heap_overflow_1(void **out) { heap_overflow(out, 1); }
static void heap_overflow_16(void **out) { heap_overflow(out, 16); }
/* a free of a block start never handed out: one carved into the free list, one in the span's never-used area
   (glibc: "free(): invalid pointer"); before, the next two malloc(16) returned the same pointer */
static void heap_never_allocated(void **out) {
  char *p = ms_malloc(16);
  EXPOSE(p + 16);
  ms_free(p + 16);
  fprintf(stderr, "not detected: %p %p\n", ms_malloc(16), ms_malloc(16));
}
static void heap_never_allocated_far(void **out) {
  char *p = ms_malloc(2000); /* a class of 2 KiB: its span's first batch is 2 blocks */
  char *q = p + 16 * (ms_usable_size(p) + (MS_SECURE_BUILD ? 8 : 0));
  EXPOSE(q);
  ms_free(q);
  fprintf(stderr, "not detected\n");
}
/* a freed block's link redirected to a live block (a bit flip, a use after free): that block is never handed
   out a second time; the pop that would hand it out reports it. Blocks over 2 KiB: a normal span, whose freed blocks
   are handed out again (a mini span, which the first blocks of smaller classes come from, may have left its class
   when its blocks ran out: docs/heap.md "Mini spans") */
static void heap_link_to_live(void **out) {
  char *x = ms_malloc(3000), *y = ms_malloc(3000), *z = ms_malloc(3000);
  EXPOSE(z);
  ms_free(y);
  ms_free(x);
  *(uintptr_t *)x ^= (uintptr_t)y ^ (uintptr_t)z; /* the encoded link now decodes to z */
  char *a = ms_malloc(3000), *b = ms_malloc(3000);
  fprintf(stderr, "not detected: %p %p (z %p)\n", a, b, z);
}
/* a freed block's link overwritten with a wild pointer, then another free of the span: with MEMSPACE_SECURE=1 the
   free's list search reports it (unchecked, it would crash there without a message), else the pop does. Blocks of
   48 bytes: a program's first spans of a class are mini spans, and two blocks share one (a 400-byte block fills a
   512-byte one alone) */
static void heap_wild_link(void **out) {
  char *x = ms_malloc(48), *y = ms_malloc(48);
  EXPOSE(x);
  ms_free(x);
  *(uintptr_t *)x = (uintptr_t)0x5a5a5a5a5a50;
  ms_free(y);
  fprintf(stderr, "not detected: %p %p\n", ms_malloc(48), ms_malloc(48));
}
static void uaf_link(void **state) { (void)state; expect_detected(heap_uaf_link, "corrupted free-list link", "use after free: link overwritten"); }
#if MS_OVERRIDE
static void uaf_link_new(void **state) {
  (void)state;
  expect_detected(heap_uaf_link_new, "corrupted free-list link", "use after free: link overwritten, then operator new");
}
#endif
static void overflow_1(void **state) { (void)state; expect_detected(heap_overflow_1, "corrupted free-list link", "1-byte overflow into a free block"); }
static void overflow_16(void **state) { (void)state; expect_detected(heap_overflow_16, "free list corrupted", "16-byte overflow into a free block"); }
static void forged_link(void **state) {
  (void)state;
  expect_detected(heap_forged_link, "free list corrupted|corrupted free-list link", "free-list link forged with the key read from a free block");
  expect_detected(heap_forged_link_header, "free list corrupted|corrupted free-list link",
                  "free-list link forged to the segment's descriptor chunk");
}
static void never_allocated(void **state) {
  (void)state;
  expect_detected(heap_never_allocated, "free(): invalid pointer", "free of a block never allocated");
  expect_detected(heap_never_allocated_far, "free(): invalid pointer", "free of a block start in the never-used area");
}
static void link_to_live(void **state) { (void)state; expect_detected(heap_link_to_live, "free list corrupted", "link redirected to a live block"); }
static void wild_link(void **state) { (void)state; expect_detected(heap_wild_link, "corrupted free-list link", "wild link, then a free"); }
static void double_free(void **state) { (void)state; expect_detected(heap_double_free, "free(): double free", "heap double free"); }
static void double_free_later(void **state) { (void)state; expect_detected(heap_double_free_later, "free(): double free", "heap double free, not the list head"); }
static void interior_free(void **state) { (void)state; expect_detected(heap_interior_free, "free", "heap interior pointer"); }
static void realloc_freed(void **state) {
  (void)state;
  expect_detected(heap_realloc_freed, "realloc()", "heap realloc of a freed block");
  expect_detected(heap_realloc_freed_small, "realloc()", "heap realloc (in place) of a freed block");
}
static void large_double(void **state) { (void)state; expect_detected(large_double_free, "free(): double free", "large block double free"); }
static void large_interior(void **state) { (void)state; expect_detected(large_interior_free, "free", "large block interior pointer"); }
static void large_realloc(void **state) { (void)state; expect_detected(large_realloc_freed, "realloc()", "large block realloc of a freed block"); }
/* ms_usable_size of a freed block or an interior pointer: 0 (not a live block), no crash */
static void usable_freed(void **state) {
  (void)state;
  char *p = ms_malloc(40), *q = ms_malloc(1 << 20);
  assert_true(ms_usable_size(p) >= 40);
  assert_int_equal(ms_usable_size(p + 16), 0);
  ms_free(p);
  assert_int_equal(ms_usable_size(p), 0);
  ms_free(q);
  assert_int_equal(ms_usable_size(q), 0);
}

#if MS_SECURE_BUILD
/* blocks of 16000 bytes: class 16384, one 64 KiB chunk per span, so the span's last page is at base + 60 KiB */
static void span_guard_write(void **out) {
  char *p = ms_malloc(1000); /* a one-chunk span (larger classes may take several chunks: the guard ends the span) */
  volatile char *base = (volatile char *)((uintptr_t)p & ~(uintptr_t)0xFFFF); /* volatile: not a dead store */
  EXPOSE(p);
  base[65536 - 4096] = 1; /* the guard page: SIGSEGV */
}
static void large_guard_write(void **out) {
  volatile char *p = ms_malloc(1 << 20);
  EXPOSE((void *)p);
  p[ms_usable_size((void *)p)] = 1; /* one byte past the usable size: the slot's guard page */
}
static void dense_guard_write(void **out) { /* a slot of 64 KiB-1 MiB: its guard is a marker, not a mapping */
  volatile char *p = ms_malloc(40000);
  p = ms_realloc((void *)p, 50000); /* grown in place: the markers move past the new size */
  EXPOSE((void *)p);
  p[ms_usable_size((void *)p)] = 1;
}
/* guards made before mlockall must come off when their spans go back (the markers are refused on locked pages
   after it: a secure build that gave up on the refusal would remove none, and a longer span over the chunks of
   short ones would fault inside its own blocks). Exits 77 when mlockall is refused. */
static void mlock_span_guards(void **out) {
  enum { N = 200000 };
  static void *v[N];
  for (int i = 0; i < N; i++) v[i] = ms_malloc(64); /* 1-chunk spans, each with its guard page */
  EXPOSE(v[0]);
  for (int i = 0; i < N; i++) ms_free(v[i]);
  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) _exit(77);
  ms_free(ms_malloc(20000));
  ms_heap_collect(1); /* the spans go back to their segments: their guards come off */
  for (int r = 0; r < 3000; r++) memset(ms_malloc(28000), 1, 28000); /* longer spans over the old chunks */
}
static void link_corrupt(void **out) {
  char *a = ms_malloc(64), *b = ms_malloc(64);
  EXPOSE(a);
  ms_free(a);
  memcpy(a, &b, sizeof b); /* a use after free overwrites the link with a plausible pointer */
  a = ms_malloc(64);       /* pops a: its link decodes outside the span */
  ms_free(b);
}
static void canary_overwrite(void **out) {
  char *p = ms_malloc(40);
  EXPOSE(p);
  size_t u = ms_usable_size(p);
  p[u] = (char)~p[u]; /* one byte past the usable size, the canary's first, changed (a fixed value such as 'x'
                         equals it in 1 run of 256: the canary is the address xor a per-process secret) */
  ms_free(p);
}
static void span_guard(void **state) { (void)state; expect_signal(span_guard_write, SIGSEGV, "guard page after a span"); }
static void large_guard(void **state) { (void)state; expect_signal(large_guard_write, SIGSEGV, "guard page after a large block"); }
static void dense_guard(void **state) { (void)state; expect_signal(dense_guard_write, SIGSEGV, "guard after a 50 KB block"); }
static void mlock_guards(void **state) {
  (void)state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    void *ptr;
    signal(SIGSEGV, SIG_DFL);
    mlock_span_guards(&ptr);
    _exit(0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0) {}
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77) { printf("mlockall refused: skipped\n"); return; }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("blocks faulted after mlockall (status %d)", st);
}
static void encoded_links(void **state) { (void)state; expect_detected(link_corrupt, "corrupted free-list link", "overwritten free-list link"); }
static void canary(void **state) { (void)state; expect_detected(canary_overwrite, "canary", "overwritten canary"); }

/* consecutive allocations of a fresh class are not at consecutive addresses */
static void random_order(void **state) {
  (void)state;
  enum { N = 64 };
  char *a[N];
  for (int i = 0; i < N; i++) a[i] = ms_malloc(200); /* class 208 in the secure build */
  int ascending = 0;
  for (int i = 1; i < N; i++) ascending += a[i] == a[i - 1] + ms_usable_size(a[i - 1]) + 8;
  printf("random order: %d of %d consecutive allocations at the next address\n", ascending, N - 1);
  assert_true(ascending < N / 4);
  for (int i = 0; i < N; i++) ms_free(a[i]);
}

/* a secure heap of 8 GiB: 2048 large blocks of 4 MiB (committed, one byte touched each) and 1024 spans of small
   blocks, each span with its guard page. The guards must not split the heap's mappings: the small spans add a
   handful of mappings, each large block at most two (its pages and its slot's uncommitted rest). */
static void secure_8g(void **state) {
  (void)state;
  enum { LARGE = 2048, SMALL = 3 * 1024 };
  int m0 = ms_test_mapping_count();
  static char *small[SMALL];
  for (int i = 0; i < SMALL; i++) {
    small[i] = ms_malloc(16000); /* 3 per span: 1024 spans, 1024 guard pages */
    assert_non_null(small[i]);
    small[i][0] = 1;
  }
  int m1 = ms_test_mapping_count();
  static char *large[LARGE];
  for (int i = 0; i < LARGE; i++) {
    large[i] = ms_malloc((size_t)4 << 20);
    if (!large[i]) fail_msg("large block %d of 4 MiB: %s", i, strerror(errno));
    large[i][i * 4096 % ((size_t)4 << 20)] = 1;
  }
  int m2 = ms_test_mapping_count();
  printf("secure heap: %d small blocks in %d spans: mappings %d -> %d; + %d x 4 MiB = %d GiB: -> %d mappings\n",
         SMALL, SMALL / 3, m0, m1, LARGE, LARGE * 4 / 1024, m2);
  assert_true(m1 - m0 <= 16);
  assert_true(m2 - m1 <= 2 * LARGE + 16);
  assert_true(m2 < 65530 / 4);
  for (int i = 0; i < LARGE; i++) ms_free(large[i]);
  for (int i = 0; i < SMALL; i++) ms_free(small[i]);
  ms_heap_collect(1);
}
#endif
static ms_space_t *small_space(void) {
  ms_space_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.initial_size = 1 << 20;
  cfg.numa_node = -1;
  return ms_space_create(&cfg);
}
static void space_double_free(void **out) { ms_space_t *s = small_space(); void *p = ms_space_malloc(s, 64); EXPOSE(p); ms_space_free(s, p); ms_space_free(s, p); }
static void space_interior_free(void **out) { ms_space_t *s = small_space(); char *p = ms_space_malloc(s, 256); EXPOSE(p + 32); ms_space_free(s, p + 32); }
static void space_double(void **state) { (void)state; expect_detected_as(space_double_free, "free", "space double free", false); }
static void space_interior(void **state) { (void)state; expect_detected_as(space_interior_free, "free", "space interior pointer", false); }

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(double_free), cmocka_unit_test(double_free_later), cmocka_unit_test(interior_free),
    cmocka_unit_test(realloc_freed), cmocka_unit_test(large_double), cmocka_unit_test(large_interior),
    cmocka_unit_test(large_realloc), cmocka_unit_test(usable_freed), cmocka_unit_test(uaf_link),
#if MS_OVERRIDE
    cmocka_unit_test(uaf_link_new),
#endif
    cmocka_unit_test(overflow_1), cmocka_unit_test(overflow_16), cmocka_unit_test(forged_link),
    cmocka_unit_test(never_allocated),
    cmocka_unit_test(link_to_live), cmocka_unit_test(wild_link),
#if MS_SECURE_BUILD
    cmocka_unit_test(span_guard), cmocka_unit_test(large_guard), cmocka_unit_test(dense_guard),
    cmocka_unit_test(mlock_guards), cmocka_unit_test(encoded_links),
    cmocka_unit_test(canary), cmocka_unit_test(random_order), cmocka_unit_test(secure_8g),
#endif
    cmocka_unit_test(space_double), cmocka_unit_test(space_interior),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
