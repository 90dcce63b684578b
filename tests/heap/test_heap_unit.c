/* Heap unit tests through the ms_* API and the heap's internals: size classes, span and segment bookkeeping,
   thread/global caches, large blocks (in-place and mremap growth), presets, collection and statistics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "memspace.h"
#include "ms_test.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include <sys/wait.h>
#include "heap.h"

/* sizes hidden from the compiler, which otherwise rejects the impossible requests at compile time */
static volatile size_t huge_count = SIZE_MAX / 2, huge_size = SIZE_MAX - 100;


/* A sandboxed program: after its first allocation it forbids open() (seccomp, as Tor's sandbox or systemd's
   SystemCallFilter=); its first blocks of 64 KiB-1 MiB and larger must not open anything (the overcommit mode
   read lazily at the first such block killed it), nor its frees of more than the single-threaded purge's budget
   (a version that read /proc/self/statm there). Runs in a forked child: its exit status, 77 when seccomp is
   refused (the reason on stderr). */
static int sandboxed_large_blocks(void) {
  if (ms_test_forbid_open(SECCOMP_RET_KILL_PROCESS)) {
    fprintf(stderr, "seccomp filter refused: %s\n", strerror(errno));
    return 77;
  }
  char *a = ms_malloc(200000), *b = ms_malloc(3 << 20);
  if (!a || !b) return 1;
  memset(a, 1, 200000);
  memset(b, 2, 3 << 20);
  a = ms_realloc(a, 400000);
  if (!a) return 2;
  ms_free(a);
  ms_free(b);
  enum { N = 48 };
  char *big[N];
  for (int i = 0; i < N; i++) {
    if (!(big[i] = ms_malloc((size_t)4 << 20))) return 3;
    memset(big[i], 3, (size_t)4 << 20);
  }
  for (int i = 0; i < N; i++) ms_free(big[i]);
  return 0;
}

/* waits for child `pid` and fails the case unless it ran sandboxed_large_blocks whole (a skip when refused); a
   child that forked the sandboxed one passes its death by signal S on as exit status SIGNALLED + S (a signal raised
   again would meet cmocka's handlers, inherited from this process) */
enum { SIGNALLED = 100 };
static void sandbox_child_done(pid_t pid) {
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 77) ms_skip_refused(0, "the sandbox (the child's message says why)");
  int sig = WIFSIGNALED(st) ? WTERMSIG(st) : WIFEXITED(st) && WEXITSTATUS(st) > SIGNALLED ? WEXITSTATUS(st) - SIGNALLED : 0;
  if (sig) fail_msg("the sandboxed child died of signal %d (SIGSYS: a system call it forbade)", sig);
  assert_int_equal(WEXITSTATUS(st), 0);
}

/* Runs first: no large block exists yet in this process. */
static void large_blocks_in_a_sandbox(void **state) {
  (void)state;
  void *warm = ms_malloc(100);
  assert_non_null(warm);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(sandboxed_large_blocks());
  ms_free(warm);
  sandbox_child_done(pid);
}

static void *thread_idle(void *arg) { return arg; }
/* The same in the child of a program that has had a second thread, one that never allocated (so no maintenance
   thread started: a worker forked by a threaded server, then sandboxed; under ThreadSanitizer, whose runtime
   starts a thread of its own in every process): the heap's question whether the child has a second thread
   (/proc/self/stat, maint.c second_thread) must not open the file once the child is under a filter it installed
   itself. The threaded program is a first child, so this process stays single-threaded. */
static void large_blocks_in_a_sandbox_after_threads(void **state) {
  (void)state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, thread_idle, NULL) || pthread_join(t, NULL)) _exit(4);
    void *warm = ms_malloc(100);
    pid_t inner = fork();
    if (inner < 0) _exit(5);
    if (inner == 0) _exit(sandboxed_large_blocks());
    int st;
    if (waitpid(inner, &st, 0) != inner) _exit(6);
    ms_free(warm);
    _exit(WIFSIGNALED(st) ? SIGNALLED + WTERMSIG(st) : WIFEXITED(st) ? WEXITSTATUS(st) : 7);
  }
  sandbox_child_done(pid);
}

static void size_classes(void **state) {
  (void)state;
  msi_heap_global_init();
  assert_int_equal(msi_heap_class_size[0], 16);
  assert_int_equal(msi_heap_class_size[MSI_HEAP_CLASSES - 1], MSI_HEAP_SMALL_MAX);
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    uint32_t bs = msi_heap_class_size[c];
    assert_int_equal(bs % 16, 0);
    if (c) {
      assert_true(bs > msi_heap_class_size[c - 1]);
      /* at most 25% rounding waste */
      if (bs > 128) assert_true((bs - msi_heap_class_size[c - 1]) * 4 <= msi_heap_class_size[c - 1]);
    }
    unsigned n = msi_heap_class_chunks[c];
    assert_true(n >= 1 && n <= MSI_HEAP_MAX_SPAN_CHUNKS);
    size_t span = n * MSI_HEAP_CHUNK, cap = span / bs;
    assert_true(cap >= 2);
    assert_true((span - cap * bs) * 8 <= span); /* tail waste below 12.5% */
  }
  for (size_t s = 0; s <= MSI_HEAP_SMALL_REQ; s++) {
    unsigned c = msi_heap_class_of(s);
    assert_true(msi_heap_class_size[c] >= s + MSI_HEAP_CANARY); /* the secure build's canary follows the block */
    if (c) assert_true(msi_heap_class_size[c - 1] < s + MSI_HEAP_CANARY);
  }
}

/* the constant class tables (classes.c CLS_*) against their rules computed by loops: the sizes, each span's chunks
   (the fewest holding 4 blocks with at most 1/64 wasted, else the least waste with 2 blocks), and what a span of
   each class gets: its capacity (less the secure build's guard page), the inverse and shift of its size */
static void size_class_tables(void **state) {
  (void)state;
  msi_heap_mini_off = true; /* the layout of each class's normal span (a mini span: test_heap_mini) */
  uint32_t sz[MSI_HEAP_CLASSES];
  unsigned c = 0;
  for (uint32_t s = 16; s <= 128; s += 16) sz[c++] = s;
  for (uint32_t d = 128; d < 4096; d *= 2)
    for (uint32_t i = 1; i <= 8; i++) sz[c++] = d + i * (d / 8);
  for (uint32_t d = 4096; d < 32768; d *= 2)
    for (uint32_t i = 1; i <= 16; i++) sz[c++] = d + i * (d / 16);
  assert_int_equal(c, MSI_HEAP_CLASSES);
  for (c = 0; c < MSI_HEAP_CLASSES; c++) {
    uint32_t bs = sz[c];
    assert_int_equal(msi_heap_class_size[c], bs);
    unsigned best = 1;
    size_t best_waste = SIZE_MAX;
    for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
      size_t bytes = n * MSI_HEAP_CHUNK - MSI_HEAP_GUARD, cap = bytes / bs, waste = bytes - cap * bs;
      if (cap >= 4 && waste * 64 <= bytes) { best = n; break; }
      if (cap >= 2 && waste * 1000 / bytes < best_waste) { best_waste = waste * 1000 / bytes; best = n; }
    }
    assert_int_equal(msi_heap_class_chunks[c], best);
    for (size_t u = c ? (sz[c - 1] >> 4) + 1 : 0; u <= bs >> 4; u++) assert_int_equal(msi_heap_size_lut[u], c);
    void *p = ms_malloc(bs - MSI_HEAP_CANARY), *mini[64];
    assert_non_null(p);
    msi_span_t *s = msi_heap_span_of(p);
    unsigned nmini = 0;
    while (msi_span_is_mini(s)) { /* a mini span an earlier case left current: its blocks, then a normal span */
      assert_true(nmini < 64);
      mini[nmini++] = p;
      assert_non_null(p = ms_malloc(bs - MSI_HEAP_CANARY));
      s = msi_heap_span_of(p);
    }
    while (nmini) ms_free(mini[--nmini]);
    assert_int_equal(s->block_size, bs);
    size_t colour = s->base & (MSI_HEAP_CHUNK - 1); /* (span.c span_colour: blocks start past the chunk) */
    assert_true(colour < 4096 && colour % 64 == 0);
    assert_int_equal(s->capacity, (best * MSI_HEAP_CHUNK - MSI_HEAP_GUARD - colour) / bs);
    assert_int_equal(s->shift, __builtin_ctz(bs));
    assert_true(s->inv * (bs >> __builtin_ctz(bs)) == 1);
    ms_free(p);
  }
  msi_heap_mini_off = false;
}

/* a span on fresh chunks carves its first 1 KiB of blocks (span.c CARVE_FIRST), the rest of its page at its next
   carve: a class a short program uses for a few blocks links no 4 KiB of them. A new thread after a forced purge
   (every cached span back to its segment, its pages dropped) takes a span on fresh chunks */
static void *first_carve_thread(void *arg) {
  uint64_t *carved = arg; /* carved, touched, p in the first 1 KiB, carved after 81 blocks, block size, colour */
  msi_heap_purge(0, true);
  void *p = ms_malloc(16);
  if (!p) return NULL;
  msi_span_t *s = msi_heap_span_of(p);
  carved[0] = s->carved;
  carved[1] = s->touched;
  carved[4] = s->block_size; /* (16, or 32 in the secure build: the canary) */
  carved[2] = (uintptr_t)p - s->base < 1024; /* (the secure build shuffles the batch) */
  for (unsigned i = 0; i < 64; i++) ms_free(ms_malloc(16)); /* (the same block each time) */
  void *q[80];
  for (unsigned i = 0; i < 80; i++) q[i] = ms_malloc(16); /* past the first 1 KiB: the next carve */
  carved[3] = s->carved;
  carved[5] = s->base & (MSI_HEAP_CHUNK - 1); /* its colour (span.c span_colour) */
  for (unsigned i = 0; i < 80; i++) ms_free(q[i]);
  ms_free(p);
  return NULL;
}
/* (in a child: a second thread would leave this process multithreaded for the single-threaded tests after it) */
static int first_carve_child(void) {
  uint64_t carved[6] = {0, 0, 0, 0, 1, 0};
  msi_heap_mini_off = true; /* (a normal span's first carve) */
  pthread_t t;
  if (pthread_create(&t, NULL, first_carve_thread, carved) != 0 || pthread_join(t, NULL) != 0) return 1;
  if (!carved[2]) return 2;
  if (carved[0] != 1024 / carved[4] || carved[1] != 1024) return 3;
  if (carved[3] != (4096 - carved[5] + carved[4] - 1) / carved[4]) return 4; /* then the rest of the page */
  return 0;
}
static void first_carve_small(void **state) {
  (void)state;
  assert_int_equal(ms_test_in_child(first_carve_child), 0);
}

static void alignment_and_usable(void **state) {
  (void)state;
  void *ps[2000];
  for (size_t i = 0; i < 2000; i++) {
    size_t sz = i * 37 % 70000;
    ps[i] = ms_malloc(sz);
    assert_non_null(ps[i]);
    assert_int_equal((uintptr_t)ps[i] % 16, 0);
    assert_true(ms_usable_size(ps[i]) >= sz);
    assert_true(ms_is_ours(ps[i]));
    memset(ps[i], 0xab, ms_usable_size(ps[i]));
  }
  for (size_t i = 0; i < 2000; i++) ms_free(ps[i]);
  for (size_t a = 32; a <= ((size_t)1 << 24); a <<= 1) {
    for (size_t sz = 1; sz < 3 * a && sz < ((size_t)1 << 25); sz = sz * 3 + 7) {
      void *p = ms_aligned_alloc(a, sz);
      assert_non_null(p);
      assert_int_equal((uintptr_t)p % a, 0);
      assert_true(ms_usable_size(p) >= sz);
      memset(p, 1, sz);
      ms_free(p);
    }
  }
  errno = 0;
  assert_null(ms_aligned_alloc(24, 10));
  assert_int_equal(errno, EINVAL);
  assert_null(ms_aligned_alloc(0, 10));
  assert_int_equal(ms_usable_size(NULL), 0);
  assert_false(ms_is_ours(NULL));
  int local;
  assert_false(ms_is_ours(&local));
}

static void calloc_and_errors(void **state) {
  (void)state;
  for (size_t sz = 1; sz < (4u << 20); sz = sz * 5 + 3) {
    unsigned char *p = ms_malloc(sz);
    memset(p, 0xff, sz);
    ms_free(p);
    unsigned char *q = ms_calloc(1, sz);
    assert_non_null(q);
    for (size_t i = 0; i < sz; i += 61) assert_int_equal(q[i], 0);
    assert_int_equal(q[sz - 1], 0);
    ms_free(q);
  }
  errno = 0;
  assert_null(ms_calloc(huge_count, 3));
  assert_int_equal(errno, ENOMEM);
  errno = 0;
  assert_null(ms_malloc(huge_size));
  assert_int_equal(errno, ENOMEM);
  errno = 0;
  assert_null(ms_malloc((size_t)1 << 45));
  assert_int_equal(errno, ENOMEM);
  void *p = ms_malloc(100);
  errno = 0;
  assert_null(ms_realloc(p, huge_count));
  assert_int_equal(errno, ENOMEM);
  ms_free(p);
  void *z = ms_malloc(0);
  assert_non_null(z);
  void *z2 = ms_malloc(0);
  assert_ptr_not_equal(z, z2);
  ms_free(z);
  ms_free(z2);
  ms_free(NULL);
}

static void realloc_in_place(void **state) {
  (void)state;
  char *p = ms_malloc(100);
  memset(p, 7, 100);
  size_t u = ms_usable_size(p);
  assert_ptr_equal(ms_realloc(p, u), p); /* same class: in place */
  char *q = ms_realloc(p, 5000);          /* other class: moves, content kept */
  for (int i = 0; i < 100; i++) assert_int_equal(q[i], 7);
  char *r = ms_realloc(q, 200000);        /* small -> large */
  for (int i = 0; i < 100; i++) assert_int_equal(r[i], 7);
  r[199999] = 3;
  char *s = ms_realloc(r, 250000); /* inside its 256 KiB slot: in place */
  assert_ptr_equal(s, r);
  assert_int_equal(s[199999], 3);
  char *t = ms_realloc(s, 150000); /* shrink in place */
  assert_ptr_equal(t, s);
  char *u2 = ms_realloc(t, 1000); /* large -> small */
  for (int i = 0; i < 100; i++) assert_int_equal(u2[i], 7);
  assert_null(ms_realloc(u2, 0)); /* frees, like glibc */
  char *n = ms_realloc(NULL, 10);
  assert_non_null(n);
  ms_free(n);
}

/* grow one block to 1 GiB touching two bytes per step: copying would fault in every page of the new block */
static void realloc_grow_to_1gib_without_copy(void **state) {
  (void)state;
  size_t before = ms_test_rss_bytes();
  size_t size = 1 << 20;
  char *p = ms_malloc(size);
  assert_non_null(p);
  p[0] = 42;
  while (size < ((size_t)1 << 30)) {
    size_t next = size + size / 2;
    if (next > ((size_t)1 << 30)) next = (size_t)1 << 30;
    p = ms_realloc(p, next);
    assert_non_null(p);
    assert_int_equal(p[0], 42);
    assert_int_equal(p[size - 1], (char)(size & 0x7f));
    p[next - 1] = (char)(next & 0x7f);
    size = next;
  }
  assert_true(ms_usable_size(p) >= ((size_t)1 << 30));
  size_t after = ms_test_rss_bytes();
#if defined(__SANITIZE_ADDRESS__) /* ASan unpoisons (writes shadow for) the whole block */
  after = before;
#endif
  assert_true(after < before + 64 * MSI_MiB);
  ms_free(p);
}

/* grow by 1 MiB steps writing every page (as a vector push_back would): each move must carry every page, also
   when the block has become several kernel mappings (grown tail + moved part), and mappings must not pile up */
static void realloc_grow_by_steps_keeps_every_page(void **state) {
  (void)state;
  const size_t step = 1 << 20, max = 96 << 20, page = 4096;
  int maps_before = ms_test_mapping_count();
  size_t size = 0;
  unsigned char *p = NULL;
  while (size < max) {
    p = ms_realloc(p, size + step);
    assert_non_null(p);
    for (size_t off = size; off < size + step; off += page) p[off] = (unsigned char)(off / page * 7);
    size += step;
  }
  for (size_t off = 0; off < size; off += page) assert_int_equal(p[off], (unsigned char)(off / page * 7));
  assert_true(ms_test_mapping_count() < maps_before + 64);
  ms_free(p);
}

/* the cases below need a single-threaded process, without the maintenance thread: this program starts no thread,
   so one running is a broken precondition (a case added before them that starts one), never a reason to skip */
static void single_threaded(void) {
  if (msi_maint_running()) fail_msg("the maintenance thread runs: an earlier case started a thread");
}

/* a single-threaded program has no maintenance thread: 80 MiB freed must still go back to the OS without any
   further call (MSI_HEAP_ST_PURGE_BYTES), as glibc returns big frees */
static void single_threaded_big_free_returns_memory(void **state) {
  (void)state;
  single_threaded();
  enum { N = 80, SMALL = 20000 };
  void *big[N], **small = ms_malloc(SMALL * sizeof *small);
  assert_non_null(small);
  for (int i = 0; i < N; i++) { big[i] = ms_malloc(1 << 20); assert_non_null(big[i]); memset(big[i], 1, 1 << 20); }
  for (int i = 0; i < SMALL; i++) { small[i] = ms_malloc(4000); assert_non_null(small[i]); memset(small[i], 1, 4000); }
  size_t peak = ms_test_rss_bytes();
  for (int i = 0; i < N; i++) ms_free(big[i]);
  for (int i = 0; i < SMALL; i++) ms_free(small[i]);
  ms_free(small);
  size_t after = ms_test_rss_bytes();
  assert_true(peak > after + 100 * MSI_MiB);
}

/* sets MEMSPACE_PURGE_DELAY out of reach (a day), so that any purge is a forced one; the delay it replaced */
static long long purge_delay_out_of_reach(void) {
  long long delay = ms_option_get(MS_OPTION_PURGE_DELAY);
  assert_int_equal(ms_option_set(MS_OPTION_PURGE_DELAY, 86400000), 0);
  return delay;
}

/* ... but one that frees and allocates again blocks as big as it holds keeps its caches: mimalloc-bench's
   malloc-large pattern (20 live blocks of 5-25 MiB, one replaced at a time) purged every ~13 frees when every
   64 MiB freed forced a purge (each then committed and faulted its next blocks afresh). The delay is set out of
   reach, so any purge here is a forced one. */
static void single_threaded_churn_keeps_caches(void **state) {
  (void)state;
  single_threaded();
  long long delay = purge_delay_out_of_reach();
  enum { LIVE = 20, ROUNDS = 300 };
  char *live[LIVE] = {0};
  uint64_t before = atomic_load(&msi_heap_counters.purges);
  uint32_t x = 42;
  for (int i = 0; i < ROUNDS; i++) {
    x = x * 1103515245u + 12345u;
    unsigned k = (x >> 8) % LIVE;
    size_t n = ((size_t)5 << 20) + (x >> 4) % ((size_t)20 << 20);
    ms_free(live[k]);
    assert_non_null(live[k] = ms_malloc(n));
    live[k][0] = live[k][n - 1] = 1;
  }
  uint64_t purges = atomic_load(&msi_heap_counters.purges) - before;
  for (int k = 0; k < LIVE; k++) ms_free(live[k]);
  ms_option_set(MS_OPTION_PURGE_DELAY, delay);
  assert_true(purges <= 2); /* every 64 MiB freed: ~25 */
}

/* ... and one that holds little besides does not keep much of what it freed: the large caches' budget follows the
   rest of its heap (a budget keyed to the large bytes in use alone would keep hundreds of MiB of what such a
   program frees). Blocks in use count by their size: one holding 512 MiB it never touched may keep up to
   256 MiB (reading the resident size would open /proc/self/statm, see large_blocks_in_a_sandbox). */
static void single_threaded_free_keeps_little(void **state) {
  (void)state;
  single_threaded();
  enum { HOLD = 4, N = 60 };
  void *hold[HOLD], *b[N];
  size_t base = ms_test_rss_bytes();
  if (base > 64 * MSI_MiB) { /* not a program that holds little: the sanitizer's own memory (ASan: hundreds of MiB) */
    ms_skip_refused(0, "the process has %zu MiB resident already (a sanitizer's runtime)", base >> 20);
  }
  for (int i = 0; i < HOLD; i++) {
    assert_non_null(hold[i] = ms_malloc((size_t)4 << 20));
    memset(hold[i], 1, (size_t)4 << 20);
  }
  for (int i = 0; i < N; i++) { assert_non_null(b[i] = ms_malloc((size_t)4 << 20)); memset(b[i], 1, (size_t)4 << 20); }
  for (int i = 0; i < N; i++) ms_free(b[i]);
  size_t after = ms_test_rss_bytes();
  for (int i = 0; i < HOLD; i++) ms_free(hold[i]);
  assert_true(after < base + 80 * MSI_MiB); /* 16 MiB held, 240 MiB freed; the cache of that size may hold 128 */
}

static long minor_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/* Cached pages of one slot size serve blocks of another (large.c borrow_pages): a freed 24 MiB block (a 32 MiB
   slot) gives a 12 MiB block (a 16 MiB slot) its pages without page faults, calloc's too read as zero, and the
   donor's rest serves a later 20 MiB block. A churn of blocks of 5-40 MiB (numpy's temporaries; mimalloc-bench's
   malloc-large) then faults less than the pages it touches, keeps every byte, and its mapping count stays
   bounded. Purges are out of reach (a forced one would drop the cached pages). */
static void large_pages_move_between_sizes(void **state) {
  (void)state;
  ms_skip_tsan_shadow("borrowed pages fault nothing at their new address");
  long long delay = purge_delay_out_of_reach();
  ms_heap_collect(1); /* no cached slot of the earlier tests' */
  const size_t MiB = MSI_MiB;
  char *hold = ms_malloc(256 * MiB); /* a program holding this much keeps what it frees (single-threaded budget) */
  assert_non_null(hold);
  char *donor = ms_malloc(24 * MiB);
  assert_non_null(donor);
  memset(donor, 0x5a, 24 * MiB);
  ms_free(donor);
  long f0 = minor_faults();
  char *b = ms_calloc(1, 12 * MiB);
  assert_non_null(b);
  for (size_t i = 0; i < 12 * MiB; i += 4096) assert_int_equal(b[i] | b[i + 4095], 0);
  memset(b, 1, 12 * MiB);
  long moved_faults = minor_faults() - f0;
  assert_true(moved_faults < 300); /* 3,072 pages, borrowed: none faulted (fresh: 3,072) */
  char *c = ms_malloc(20 * MiB); /* the donor's slot, 12 MiB of it committed still */
  assert_non_null(c);
  memset(c, 2, 20 * MiB);
  ms_free(b);
  ms_free(c);

  enum { LIVE = 10, ROUNDS = 150 };
  char *live[LIVE] = {0};
  size_t size[LIVE] = {0};
  uint32_t x = 7;
  long touched = 0;
  int maps_before = ms_test_mapping_count(), maps_max = 0;
  f0 = minor_faults();
  for (int r = 0; r < ROUNDS; r++) {
    x = x * 1103515245u + 12345u;
    unsigned k = (x >> 8) % LIVE;
    if (live[k]) {
      for (size_t i = 0; i < size[k]; i += 4096) assert_int_equal((unsigned char)live[k][i], (k * 37 + size[k]) & 0xff);
      ms_free(live[k]);
    }
    size[k] = MiB + (x >> 3) % (39 * MiB);
    assert_non_null(live[k] = ms_malloc(size[k]));
    memset(live[k], (int)((k * 37 + size[k]) & 0xff), size[k]);
    touched += (long)(size[k] / 4096);
    int maps = ms_test_mapping_count();
    if (maps > maps_max) maps_max = maps;
  }
  long faults = minor_faults() - f0;
  for (int k = 0; k < LIVE; k++) ms_free(live[k]);
  ms_free(hold);
  ms_option_set(MS_OPTION_PURGE_DELAY, delay);
  fprintf(stderr, "churn: %ld page faults for %ld pages written; mappings %d before, %d at most\n", faults, touched,
          maps_before, maps_max);
  assert_true(faults < touched / 2);
  assert_true(maps_max < maps_before + 5 * LIVE + 2 * 64); /* a slot: five at most; cached ones too */
}

/* Strings grown by appends, realloc'd to their exact length: a block moves to a bigger class only every eighth or
   so (realloc gives a block growing by small steps an eighth more), and blocks leaving spans for the next class do
   not count as memory to purge at once (the idle spans are counted net: counted gross, the spans growing strings
   leave would force purges while the next class takes as much again). The delay is set out of reach, so any purge
   here is a forced one. */
static void realloc_growth_by_appends(void **state) {
  (void)state;
  single_threaded();
  long long delay = purge_delay_out_of_reach();
  enum { STRINGS = 400, LEN = 24000 };
  char *str[STRINGS] = {0};
  size_t len[STRINGS] = {0};
  long moves = 0;
  uint64_t before = atomic_load(&msi_heap_counters.purges);
  for (size_t total = 0; total < (size_t)STRINGS * LEN;) {
    unsigned i = (unsigned)((total * 2654435761u) >> 7) % STRINGS, add = 1 + (unsigned)(total % 97);
    if (len[i] >= LEN) { total++; continue; }
    char *q = ms_realloc(str[i], len[i] + add + 1);
    assert_non_null(q);
    moves += q != str[i];
    memset(q + len[i], 'a' + (int)(i % 26), add);
    str[i] = q;
    len[i] += add;
    total += add;
  }
  uint64_t purges = atomic_load(&msi_heap_counters.purges) - before;
  for (unsigned i = 0; i < STRINGS; i++) {
    for (size_t k = 0; k < len[i]; k += 997) assert_int_equal(str[i][k], 'a' + (int)(i % 26));
    ms_free(str[i]);
  }
  ms_option_set(MS_OPTION_PURGE_DELAY, delay);
  assert_int_equal(purges, 0);
  /* 4 KiB to 24 KB is 29 classes; 16..4 KiB another 56: without the headroom every class, ~85 moves a string */
  assert_true(moves < STRINGS * 45);
}

static void span_bookkeeping(void **state) {
  (void)state;
  /* fill several spans of one class, free all: spans leave the class and are cached or returned */
  unsigned cls = msi_heap_class_of(1000);
  uint32_t bs = msi_heap_class_size[cls];
  size_t per_span = msi_heap_class_chunks[cls] * MSI_HEAP_CHUNK / bs, n = per_span * 5;
  void **v = ms_malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = ms_malloc(1000);
  size_t mid = per_span * 2 + 1;
  msi_span_t *s0 = msi_heap_span_of(v[mid]);
  assert_int_equal(s0->state, MSI_SPAN_ACTIVE);
  assert_int_equal(s0->block_size, bs);
  assert_ptr_equal(s0->owner, msi_tls_heap);
  assert_true(msi_heap_small_valid(v[mid], NULL));
  assert_false(msi_heap_small_valid((char *)v[mid] + 16, NULL));
  ms_stats_t st;
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  assert_true(ms_stats_class(&st, cls)->allocated >= n);
  assert_int_equal(ms_stats_class(&st, cls)->block_size, bs);
  assert_true(ms_stats_class(&st, cls)->mapped >= n);
  for (size_t i = 0; i < n; i++) ms_free(v[i]);
  assert_int_not_equal(s0->state, MSI_SPAN_ACTIVE); /* s0 is not the current span: it left the class */
  ms_free(v);
  ms_heap_collect(1);
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  assert_true(ms_stats_class(&st, cls)->allocated < per_span);
  assert_true(st.heap_returned_bytes > 0);
  assert_true(st.heap_purges > 0);
}

/* A fresh span's pages are faulted in as its blocks are used, never ahead of them: after k allocations of one
   size from a fresh span (the program writing nothing), no page past the one holding the end of the last block is
   resident (mincore). A short-lived program that allocates a few blocks of each of many sizes touches one page per
   class (16 KiB batches of carved headers cost `ls` about 110 page faults more than glibc), and a span's further
   pages stay untouched until its blocks reach them. */
static void fresh_span_pages_faulted_as_used(void **state) {
  (void)state;
  char thp[128] = "";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f) {
    if (!fgets(thp, sizeof thp, f)) thp[0] = 0;
    fclose(f);
  }
  if (strstr(thp, "[always]"))
    ms_skip_refused(0, "transparent huge pages are 'always': a fresh span's chunk may be faulted in as one huge page");
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  static unsigned char vec[MSI_HEAP_MAX_SPAN_CHUNKS * MSI_HEAP_CHUNK / 4096];
  const struct { size_t size; unsigned k; } cases[] = {{48, 1}, {48, 300}, {1000, 1}, {1000, 6}, {1000, 40},
                                                       {3000, 3}, {5000, 1}, {5000, 4}, {20000, 1}, {20000, 3}};
  void *v[512], *fill[128];
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ms_heap_collect(1); /* every empty span back to its segment, the free chunks' pages to the OS */
    unsigned k = cases[c].k, n = 0, nfill = 0;
    void *first = ms_malloc(cases[c].size);
    assert_non_null(first);
    msi_span_t *s = msi_heap_span_of(first);
    /* a block of the class still in use keeps its span the class's current one: cmocka's array of this group's test
       states (20 of 48 bytes: the 960-byte class, with the secure build's canary the 1024-byte one of the 1000-byte
       case). That span is filled first, the next block starts a fresh span. */
    while (msi_span_used(s) != 1) {
      assert_true(nfill < sizeof fill / sizeof fill[0]);
      fill[nfill++] = first;
      first = ms_malloc(cases[c].size);
      assert_non_null(first);
      s = msi_heap_span_of(first);
    }
    assert_true((uintptr_t)first - s->base < 4096); /* a fresh span: a block of its first window (span.c msi_heap_span_carve;
                                                       the secure build's order is random) */
    uintptr_t last = (uintptr_t)first;
    for (unsigned i = 1; i < k; i++) {
      void *p = ms_malloc(cases[c].size);
      assert_non_null(p);
      assert_ptr_equal(msi_heap_span_of(p), s);
      if ((uintptr_t)p > last) last = (uintptr_t)p;
      if (i < sizeof v / sizeof v[0]) v[n++] = p;
      else ms_free(p); /* (back on the list: the next one takes it) */
    }
    /* pages up to the end of the last block handed out (the secure build writes its canary there) */
    uintptr_t chunk = s->base & ~(MSI_HEAP_CHUNK - 1); /* (its blocks may start at a colour past it) */
    size_t bytes = (size_t)s->nchunks * MSI_HEAP_CHUNK, pages = bytes / ps, ok = (last + s->block_size - 1 - chunk) / ps;
    assert_true(pages <= sizeof vec);
    assert_int_equal(mincore((void *)chunk, bytes, vec), 0);
    assert_true(vec[0] & 1);
    for (size_t i = ok + 1; i < pages; i++)
      if (vec[i] & 1) fail_msg("size %zu, %u block(s): page %zu of the span resident (blocks reach page %zu)",
                               cases[c].size, k, i, ok);
    for (unsigned i = 0; i < n; i++) ms_free(v[i]);
    for (unsigned i = 0; i < nfill; i++) ms_free(fill[i]);
    ms_free(first);
  }
}

/* classes from 64 on are reported in heap_class_more; a version-1 caller (its struct ends before that array)
   still gets its prefix, the same figures */
static void stats_classes_past_64(void **state) {
  (void)state;
  void *p = ms_malloc(20000);
  assert_non_null(p);
  unsigned cls = msi_heap_class_of(20000);
  assert_true(cls >= MS_STATS_SIZE_CLASSES && cls < MS_STATS_SIZE_CLASSES + MS_STATS_SIZE_CLASSES_MORE);
  ms_stats_t st;
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  assert_int_equal(st.version, MS_STATS_VERSION);
  assert_ptr_equal(ms_stats_class(&st, cls), &st.heap_class_more[cls - MS_STATS_SIZE_CLASSES]);
  assert_int_equal(ms_stats_class(&st, cls)->block_size, msi_heap_class_size[cls]);
  assert_true(ms_stats_class(&st, cls)->allocated >= 1);
  ms_stats_t v1;
  size_t v1_size = offsetof(ms_stats_t, heap_class_more);
  memset(&v1, 0xee, sizeof v1);
  assert_int_equal(ms_stats_get(&v1, v1_size), 0);
  assert_int_equal(v1.size, v1_size);
  assert_int_equal(v1.version, 1); /* the layout that caller knows */
  assert_int_equal(ms_stats_class(&v1, cls)->block_size, 0); /* past what was filled in: zeros */
  assert_int_equal(v1.heap_class[3].block_size, st.heap_class[3].block_size);
  assert_int_equal(((unsigned char *)&v1)[v1_size], 0xee); /* nothing written past the caller's size */
  ms_free(p);
}

static void caches_and_presets(void **state) {
  (void)state;
  /* 'none': an empty span goes back to the OS at once */
  msi_heap_set_preset(3);
  ms_heap_collect(1);
  ms_stats_t a, b;
  ms_stats_get(&a, sizeof a);
  void *v[400];
  for (int i = 0; i < 400; i++) v[i] = ms_malloc(3000);
  for (int i = 0; i < 400; i++) ms_free(v[i]);
  ms_stats_get(&b, sizeof b);
  assert_true(b.heap_returned_bytes >= a.heap_returned_bytes + 400 * 3000 / 2);
  assert_true(b.heap_cached_bytes < 2 * MSI_MiB);
  /* 'performance': empty spans stay in the caches, are reused, and collect gives them back */
  msi_heap_set_preset(1);
  for (int i = 0; i < 400; i++) v[i] = ms_malloc(3000);
  for (int i = 0; i < 400; i++) ms_free(v[i]);
  ms_stats_get(&a, sizeof a);
  assert_true(a.heap_cached_bytes >= 400 * 3000 / 2);
  for (int i = 0; i < 400; i++) v[i] = ms_malloc(3000);
  ms_stats_get(&b, sizeof b);
  assert_int_equal(b.heap_returned_bytes, a.heap_returned_bytes); /* served from the cache */
  for (int i = 0; i < 400; i++) ms_free(v[i]);
  ms_heap_collect(1);
  ms_stats_get(&b, sizeof b);
  assert_true(b.heap_cached_bytes < a.heap_cached_bytes);
  /* large blocks: cached, then decommitted by collect */
  void *l = ms_malloc(1 << 20);
  memset(l, 1, 1 << 20);
  ms_free(l);
  ms_stats_get(&a, sizeof a);
  assert_true(a.heap_cached_bytes >= (1 << 20));
  void *l2 = ms_malloc(1 << 20);
  assert_ptr_equal(l, l2);
  ms_free(l2);
  ms_heap_collect(1);
  ms_stats_get(&b, sizeof b);
  assert_true(b.heap_cached_bytes + (1 << 20) <= a.heap_cached_bytes);
}

static int print_lines;
static void count_out(const char *text, void *arg) {
  (void)arg;
  if (strstr(text, "class ")) print_lines++;
}

static void stats_print(void **state) {
  (void)state;
  void *p = ms_malloc(48);
  print_lines = 0;
  ms_stats_print(count_out, NULL, 0);
  assert_true(print_lines > 0);
  ms_free(p);
}

/* A span that leaves its class empty (retired to a cache) keeps its blocks linked; taken again by the same class
   (msi_heap_span_cache_get prefers such a span among the newest cached) it hands them out as they were freed, carving none.
   A batch program (sh6bench: each class's batch outgrows its current span) paid a carving of a whole span per
   class per batch. Another class taking the span starts it afresh. The checks hold on a kept span: a block freed
   before the span was cached is a double free, a block carved and never handed out is one never allocated (both
   abort naming the pointer), also after the span went from an exited thread's heap to another thread. Each part
   runs in a child (ms_test_in_child: no maintenance thread, no purge, so the caches hold what this test put
   there): status 0, or the number of the check that failed. */
#define KEPT_SIZE 1000
static void *kept_v[4 * 64];
static int kept_reuse(void) {
  msi_heap_mini_off = true; /* (spans that go to the caches: no mini span) */
  ms_heap_collect(1); /* every cache empty: the spans below are the only ones cached */
  void *first = ms_malloc(KEPT_SIZE);
  msi_span_t *s0 = msi_heap_span_of(first);
  unsigned cap = s0->capacity, cls = s0->cls;
  if (cap > 64) return 1;
  kept_v[0] = first;
  for (unsigned i = 1; i < 3 * cap; i++) kept_v[i] = ms_malloc(KEPT_SIZE);
  msi_span_t *s1 = msi_heap_span_of(kept_v[cap]), *s2 = msi_heap_span_of(kept_v[2 * cap]);
  if (s0 == s1 || s1 == s2 || msi_heap_span_of(kept_v[2 * cap - 1]) != s1) return 2;
  uintptr_t bump1 = msi_span_bump(s1);
  for (unsigned i = 0; i < 3 * cap; i++) ms_free(kept_v[i]); /* s0 then s1 retire; s2 stays current */
  if (s0->state != MSI_SPAN_CACHED || s1->state != MSI_SPAN_CACHED || !s0->kept || !s1->kept) return 3;
  if (s2->state != MSI_SPAN_ACTIVE) return 4;
  for (unsigned i = 0; i < cap; i++)
    if (msi_heap_span_of(ms_malloc(KEPT_SIZE)) != s2) return 14; /* s2's blocks */
  void *p = ms_malloc(KEPT_SIZE); /* s2 is full: the newest kept span of the class, s1 */
  if (msi_heap_span_of(p) != s1 || s1->state != MSI_SPAN_ACTIVE || s1->kept) return 5;
  if (p != kept_v[2 * cap - 1]) return 6; /* its last freed block first: no carving (carving starts at the base) */
  if (msi_span_bump(s1) != bump1 || msi_span_used(s1) != 1 || s1->cls != cls) return 7;
  for (unsigned i = 1; i < cap; i++) /* the rest in the order they were freed, the newest first */
    if (ms_malloc(KEPT_SIZE) != kept_v[2 * cap - 1 - i]) return 8;
  if (msi_span_used(s1) != cap) return 9;
  /* another class of the same span length takes s0 (the only span cached) and starts it afresh */
  unsigned other = msi_heap_class_of(900);
  if (other == cls || msi_heap_class_chunks[other] != msi_heap_class_chunks[cls]) return 10;
  void *q = ms_malloc(900);
  msi_span_t *sq = msi_heap_span_of(q);
  if (sq == s0) {
    if (sq->cls != other || sq->block_size != msi_heap_class_size[other] || sq->kept) return 11;
    /* carved from its base: one batch (16 KiB and the block that starts below its end: span.c msi_heap_span_carve) */
    if ((uintptr_t)q >= msi_span_bump(sq) || msi_span_bump(sq) - sq->base > 16384 + sq->block_size) return 12;
  } else if (sq->state != MSI_SPAN_ACTIVE) {
    return 13;
  }
  ms_free(q);
  return 0;
}
/* a free of a block of a kept span, retired and taken again, that is still on its free list */
static int kept_double_free(void) {
  msi_heap_mini_off = true; /* (spans that go to the caches: no mini span) */
  ms_heap_collect(1);
  void *first = ms_malloc(KEPT_SIZE);
  unsigned cap = msi_heap_span_of(first)->capacity;
  kept_v[0] = first;
  for (unsigned i = 1; i < 2 * cap; i++) kept_v[i] = ms_malloc(KEPT_SIZE);
  for (unsigned i = 0; i < 2 * cap; i++) ms_free(kept_v[i]); /* the first span retires, kept */
  for (unsigned i = 0; i < cap + 1; i++) ms_malloc(KEPT_SIZE); /* the current one's blocks, then the kept span's last */
  fprintf(stderr, "pointer %p\n", kept_v[cap - 2]);
  ms_free(kept_v[cap - 2]); /* freed before the span was cached, not handed out since */
  return 1;
}
/* a thread allocates one block (its span carves a first batch), frees it and exits: its empty current span goes
   to the global cache, kept; this thread takes it for the same class and frees a block carved but never handed out */
static void *kept_thread(void *arg) {
  void *p = ms_malloc(48);
  *(void **)arg = p;
  ms_free(p);
  return NULL;
}
static int kept_never_allocated(void) {
  msi_heap_mini_off = true; /* (spans that go to the caches: no mini span) */
  ms_heap_collect(1);
  void *theirs = NULL;
  pthread_t t;
  if (pthread_create(&t, NULL, kept_thread, &theirs) != 0 || pthread_join(t, NULL) != 0) return 2;
  msi_span_t *s = msi_heap_span_of(theirs);
  if (s->state != MSI_SPAN_CACHED || !s->kept) return 3;
  msi_heap_t *h = msi_tls_heap;
  unsigned cls = msi_heap_class_of(48);
  if (h != MSI_EMPTY_HEAP && msi_heap_current(h, cls) != msi_heap_empty_span(h)) { /* this thread's own span of the class: used up */
    for (int i = 0; i < 100000 && msi_heap_span_of(ms_malloc(48)) != s; i++) {
    }
  } else if (msi_heap_span_of(ms_malloc(48)) != s) {
    return 4;
  }
  if (s->state != MSI_SPAN_ACTIVE || s->owner != msi_tls_heap || msi_span_bump(s) - s->base < 2 * s->block_size) return 5;
  /* a carved block that no thread had: its cookie still says carved */
  uintptr_t never = msi_span_bump(s) - s->block_size;
  if (never == (uintptr_t)theirs) never -= s->block_size;
  fprintf(stderr, "pointer %p\n", (void *)never);
  ms_free((void *)never);
  return 1;
}
static void kept_spans_need_no_carving(void **state) {
  (void)state;
  assert_int_equal(ms_test_in_child(kept_reuse), 0);
  ms_test_child_aborts(kept_double_free, "free(): double free");
  ms_test_child_aborts(kept_never_allocated, "a block never allocated");
}

/* MEMSPACE_SECURE's extra checks switched on at run time (ms_option_set): the next free searches the span's free
   list, so a double free whose header was overwritten (the block no longer reads as free) aborts naming it. The
   front door's fast free has no test of the option: it is turned away while the checks are on (route.c free_base) */
static int checks_switched_on(void) {
  char *p = ms_malloc(400), *q = ms_malloc(400);
  ms_free(q); /* the fast path, the checks off */
  if (ms_option_set(MS_OPTION_SECURE, 1) != 0) return 2;
  ms_free(p);
  ((uintptr_t *)p)[1] = 0; /* its second word written over after free: its words no longer agree as a free block's */
  fprintf(stderr, "pointer %p\n", (void *)p);
  ms_free(p);
  return 1;
}
static void extra_checks_switched_at_run_time(void **state) {
  (void)state;
  ms_test_child_aborts(checks_switched_on, "free(): double free");
}

/* The block-start check (heap.h msi_span_block_start: the exact-division test by the block size's odd part and
   power of two) against the plain arithmetic, for every class: every byte offset of a span and around it, a few
   counts of carved blocks, and pointers far from the span (below its base, across the address space) */
static void block_start_check_is_exact(void **state) {
  (void)state;
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++) {
    size_t bs = msi_heap_class_size[c];
    void *p = ms_malloc(bs - MSI_HEAP_CANARY);
    assert_non_null(p);
    const msi_span_t *s = msi_heap_span_of(p);
    assert_int_equal(s->block_size, bs);
    uint64_t cap = s->capacity, counts[] = {0, 1, cap / 2 + 1, cap};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
      uint64_t carved = counts[k];
      size_t step = carved == cap ? 1 : 7; /* every byte for the full span, a sample for the others */
      for (int64_t off = -8192; off < (int64_t)(cap * bs) + 8192; off += (int64_t)step) {
        bool want = off >= 0 && (uint64_t)off % bs == 0 && (uint64_t)off / bs < carved;
        if (msi_span_block_start_in(s, (const void *)(s->base + (uintptr_t)off), carved) != want)
          fail_msg("class %u (%zu bytes), %llu carved: offset %lld taken for %s", c, bs, (unsigned long long)carved,
                   (long long)off, want ? "no block start" : "a block start");
      }
      for (int sh = 20; sh < 64; sh++)
        for (int sign = 0; sign < 2; sign++) {
          uintptr_t far = sign ? s->base - ((uintptr_t)1 << sh) : s->base + ((uintptr_t)1 << sh);
          if (msi_span_block_start_in(s, (const void *)far, carved)) fail_msg("class %u: %p taken", c, (void *)far);
        }
    }
    ms_free(p);
  }
}

/* malloc's and calloc's fast test is one compare with a limit the front door sets from its routing mask (route.c
   small_below): a routing option set at run time sends small requests to their part at once, and back to the heap
   when it is unset (the process space here: it needs no directory). In a child: the process space stays. */
static int small_requests_follow_routing(void) {
  void *h1 = ms_malloc(100), *h2 = ms_calloc(1, 100);
  if (!msi_heap_in_small(h1) || !msi_heap_in_small(h2)) return 2;
  if (ms_option_set(MS_OPTION_SPACE_AT, 1) != 0 || ms_option_set(MS_OPTION_SPACE_INITIAL, 16 << 20) != 0) return 3;
  unsigned char *s1 = ms_malloc(100), *s2 = ms_calloc(1, 100);
  if (!s1 || !s2 || msi_heap_in_small(s1) || msi_heap_in_small(s2) || !ms_is_ours(s1) || s2[99] != 0) return 4;
  ms_free(s1);
  ms_free(s2);
  if (ms_option_set(MS_OPTION_SPACE_INITIAL, 0) != 0) return 5;
  void *b1 = ms_malloc(100), *b2 = ms_calloc(1, 100);
  if (!msi_heap_in_small(b1) || !msi_heap_in_small(b2)) return 6;
  ms_free(b1), ms_free(b2), ms_free(h1), ms_free(h2);
  return 0;
}
static void small_requests_follow_routing_changes(void **state) {
  (void)state;
  assert_int_equal(ms_test_in_child(small_requests_follow_routing), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(large_blocks_in_a_sandbox),
      cmocka_unit_test(large_blocks_in_a_sandbox_after_threads),
      cmocka_unit_test(size_classes),
      cmocka_unit_test(size_class_tables),
      cmocka_unit_test(first_carve_small),
      cmocka_unit_test(alignment_and_usable),
      cmocka_unit_test(calloc_and_errors),
      cmocka_unit_test(realloc_in_place),
      cmocka_unit_test(realloc_grow_to_1gib_without_copy),
      cmocka_unit_test(realloc_grow_by_steps_keeps_every_page),
      cmocka_unit_test(single_threaded_big_free_returns_memory),
      cmocka_unit_test(single_threaded_churn_keeps_caches),
      cmocka_unit_test(single_threaded_free_keeps_little),
      cmocka_unit_test(realloc_growth_by_appends),
      cmocka_unit_test(large_pages_move_between_sizes),
      cmocka_unit_test(span_bookkeeping),
      cmocka_unit_test(fresh_span_pages_faulted_as_used),
      cmocka_unit_test(stats_classes_past_64),
      cmocka_unit_test(caches_and_presets),
      cmocka_unit_test(stats_print),
  };
  /* a group of their own: cmocka's array of test states is a heap block (this binary's malloc is memspace's) that
     lives while its group runs, and kept_spans_need_no_carving expects the class of the 1000-byte blocks alone;
     the array of the group above (20 entries, with the secure build's canary) is in that class */
  const struct CMUnitTest more[] = {
      cmocka_unit_test(kept_spans_need_no_carving),
      cmocka_unit_test(extra_checks_switched_at_run_time),
      cmocka_unit_test(block_start_check_is_exact),
      cmocka_unit_test(small_requests_follow_routing_changes),
  };
  /* each returns 1 on a failure, else MS_TEST_SKIP once any case of either group skipped (ms_test_skip.c) */
  int first = cmocka_run_group_tests(tests, NULL, NULL), second = cmocka_run_group_tests(more, NULL, NULL);
  return first == 1 ? 1 : second;
}
