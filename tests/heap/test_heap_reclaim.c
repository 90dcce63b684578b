/* SPDX-License-Identifier: MIT */
/* test_heap_reclaim.c: the purge's give-back of a burst's idle segments and of empty orphans' mini spans (segment.c
   msi_heap_segments_reclaim, segments_release; thread_heap.c orphan_reclaim). "returned" counts each byte the heap gives back once per
   use: the test sees every give-back in the segment area itself (its own madvise and mmap, which the library's
   calls reach) and compares. A fork while a pass holds segments it took out of the free masks (the pass paused
   there by the test's hook, another thread forking) leaves them to the child released or kept, never stranded. A
   double free of a block whose mini span an empty orphan gave back is named a double free. Likewise a fork while
   a purge pass holds dirty chunks it took out of the free mask. The maintenance thread
   purges nothing here (MEMSPACE_PURGE_DELAY -1): every pass is the test's. The secure build has no mini spans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "memspace.h"
#include "ms_test.h"
#include <pthread.h>
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heap.h"

enum { THREADS = 96, BLOCKS = 12 };
static pthread_barrier_t all_started;

/* a thread's blocks: small ones (mini spans) and 4 KiB ones (spans of their own), all freed before it exits,
   the threads alive at once (a segment each) */
static void *worker(void *arg) {
  (void)arg;
  void *p[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) {
    size_t sz = i % 2 ? (size_t)4096 : (size_t)32 << (i % 6);
    if (!(p[i] = ms_malloc(sz))) return (void *)1;
    memset(p[i], 1, sz);
  }
  for (int i = 0; i < BLOCKS; i++) ms_free(p[i]);
  pthread_barrier_wait(&all_started);
  return NULL;
}
static void burst(void) {
  pthread_t t[THREADS];
  assert_int_equal(pthread_barrier_init(&all_started, NULL, THREADS), 0);
  for (int k = 0; k < THREADS; k++) assert_int_equal(pthread_create(&t[k], NULL, worker, NULL), 0);
  for (int k = 0; k < THREADS; k++) {
    void *r = (void *)-1;
    assert_int_equal(pthread_join(t[k], &r), 0);
    assert_null(r);
  }
  pthread_barrier_destroy(&all_started);
}

/* the segment a block of the heap's small area lies in */
#define SEG_OF(p) ((msi_segment_t *)((uintptr_t)(p) & ~(MSI_HEAP_SEG_SIZE - 1)))

/* ---- the give-backs the test sees: a byte per page of the segment area, set when a page goes back ---------- */
static _Atomic int seeing;
static unsigned char *given; /* per page from msi_heap_g.base, below `pages` */
static size_t pages, page;
static pthread_mutex_t given_lock = PTHREAD_MUTEX_INITIALIZER;
/* [a, a + n) given back; header_only: only the parts in a segment's chunk 0 (a segment released whole by one
   mmap: its other chunks went back (and counted) when they were purged, or were never used) */
static void note(void *a, size_t n, bool header_only) {
  if (!atomic_load(&seeing)) return;
  pthread_mutex_lock(&given_lock);
  for (uintptr_t x = (uintptr_t)a; x < (uintptr_t)a + n; x += page) {
    size_t i = (x - msi_heap_g.base) / page;
    if (x < msi_heap_g.base || i >= pages) continue;
    if (header_only && (x & (MSI_HEAP_SEG_SIZE - 1)) >= MSI_HEAP_CHUNK) continue;
    given[i] = 1;
  }
  pthread_mutex_unlock(&given_lock);
}
/* the secure build's guard removal refused every way (guard_stuck_keeps_its_chunk): MADV_GUARD_REMOVE and the
   fresh one-page mapping over a guard */
static _Atomic int refuse_guard_remove;
/* the library's madvise and mmap (linux.c) reach these: the executable's definitions come first */
int madvise(void *addr, size_t len, int advice) {
  if (advice == MADV_GUARD_REMOVE && atomic_load(&refuse_guard_remove)) { errno = EAGAIN; return -1; }
  int r = (int)syscall(SYS_madvise, addr, len, advice);
  if (r == 0 && advice == MADV_DONTNEED) note(addr, len, false);
  return r;
}
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if ((flags & MAP_FIXED) && len == MSI_HEAP_GUARD && atomic_load(&refuse_guard_remove)) { errno = ENOMEM; return MAP_FAILED; }
  void *p = (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
  if (p != MAP_FAILED && (flags & MAP_FIXED) && fd == -1) note(p, len, true);
  return p;
}

static uint64_t returned(void) {
  ms_stats_t st;
  ms_stats_get(&st, sizeof st);
  return st.heap_returned_bytes;
}

/* threads exit with their blocks freed; forced purges give back their heaps' mini areas (orphan_reclaim), their
   spans' chunks, the segments kept bare and those released whole: "returned" grows by the bytes seen given back,
   each once (a header chunk counted when bare or its mini area went back, and again when released, was counted
   twice) */
static void returned_counts_each_byte_once(void **state) {
  (void)state;
  ms_free(ms_malloc(100));
  burst();
  page = (size_t)sysconf(_SC_PAGESIZE);
  pages = atomic_load(&msi_heap_g.small_top) / page;
  given = (unsigned char *)syscall(SYS_mmap, NULL, pages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(given != MAP_FAILED);
  uint64_t before = returned();
  atomic_store(&seeing, 1);
  ms_heap_collect(1); /* the orphans reclaimed, their spans purged, the idle segments kept bare or released */
  ms_heap_collect(1);
  atomic_store(&seeing, 0);
  uint64_t counted = returned() - before, seen = 0;
  for (size_t i = 0; i < pages; i++) seen += given[i] ? page : 0;
  print_message("returned %llu KiB, seen given back %llu KiB\n", (unsigned long long)counted >> 10,
                (unsigned long long)seen >> 10);
  assert_true(seen >= (uint64_t)THREADS / 2 * MSI_HEAP_CHUNK); /* (the purges gave back the burst's segments) */
  assert_int_equal(counted, seen);
  syscall(SYS_munmap, given, pages);
}

/* ---- a fork inside a pass's window ---------------------------------------------------------------------- */
static _Atomic int armed; /* 1: pause at the first segment kept bare, 2: at the first release */
static sem_t in_window, go;
static msi_segment_t *win_seg;
/* a test hook met its window: the pass waits there until the test says go */
static void paused(void) {
  sem_post(&in_window);
  while (sem_wait(&go) != 0) {}
}
static void hook(msi_segment_t *seg, size_t n) {
  int want = atomic_load(&armed);
  if (!want || (want == 1) != (n == 0) || !atomic_compare_exchange_strong(&armed, &want, 0)) return;
  win_seg = seg;
  paused();
}
/* a pass in another thread (arg: the hook's armed flag): pass_until_paused arms the flag with `value` and returns
   once the hook paused the pass, or the pass ended without meeting the window (the hook's segment stays NULL) */
static void *pass(void *arg) {
  ms_heap_collect(1);
  if (atomic_exchange((_Atomic int *)arg, 0)) sem_post(&in_window);
  return NULL;
}
static pthread_t pass_until_paused(_Atomic int *flag, int value) {
  assert_int_equal(sem_init(&in_window, 0, 0), 0);
  assert_int_equal(sem_init(&go, 0, 0), 0);
  atomic_store(flag, value);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, pass, (void *)flag), 0);
  while (sem_wait(&in_window) != 0) {}
  return t;
}
/* the child's purge after the fork, then its count of segments and whether the paused one is back (kept: bare in
   the free masks) */
typedef struct { uint64_t segments; int kept_back; } child_view_t;
static void fork_in_window(int which) {
  ms_free(ms_malloc(100));
  burst();
  win_seg = NULL;
  msi_heap_reclaim_hook = hook;
  pthread_t t = pass_until_paused(&armed, which);
  if (!win_seg) {
    pthread_join(t, NULL);
    msi_heap_reclaim_hook = NULL;
    fail_msg("the pass met no segment to %s", which == 1 ? "keep bare" : "release");
  }
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork(); /* the pass paused in another thread, its segments out of the free masks */
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    ms_heap_collect(1);
    child_view_t v = {atomic_load(&msi_heap_counters.segments),
                      which == 1 && win_seg->bare && win_seg->free_mask == ~(uint64_t)1};
    _exit(write(fds[1], &v, sizeof v) == (ssize_t)sizeof v ? 0 : 1);
  }
  close(fds[1]);
  sem_post(&go);
  assert_int_equal(pthread_join(t, NULL), 0);
  msi_heap_reclaim_hook = NULL;
  ms_heap_collect(1);
  uint64_t segments = atomic_load(&msi_heap_counters.segments);
  bool kept_back = win_seg->bare && win_seg->free_mask == ~(uint64_t)1;
  child_view_t v = {0, 0};
  assert_int_equal(read(fds[0], &v, sizeof v), (ssize_t)sizeof v);
  close(fds[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  print_message("segments: parent %llu, child %llu\n", (unsigned long long)segments, (unsigned long long)v.segments);
  assert_int_equal(v.segments, segments); /* none stranded in the child: released (or kept) as in the parent */
  if (which == 1) {
    assert_true(kept_back);
    assert_true(v.kept_back);
  }
  sem_destroy(&in_window);
  sem_destroy(&go);
}
static void fork_while_keeping_bare(void **state) {
  (void)state;
  fork_in_window(1);
}
static void fork_while_releasing(void **state) {
  (void)state;
  fork_in_window(2);
}

/* ---- a double free into a reclaimed mini span ------------------------------------------------------------- */
static void *mini_block;
static void *one_mini_block(void *arg) {
  (void)arg;
  mini_block = ms_malloc(48);   /* the thread's first block of its class: a mini span */
  void *big = ms_malloc(8192);  /* and a span of its own, cached at the exit: the segment stays in use */
  ms_free(big);
  return NULL;
}
static int freed_after_reclaim(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, one_mini_block, NULL) || pthread_join(t, NULL)) return 2;
  if (!msi_span_is_mini(msi_heap_span_of(mini_block))) return 3;
  ms_free(mini_block);           /* into the dead thread's heap: now empty */
  msi_heap_orphans_flush();      /* flushed and reclaimed: its mini spans leave it */
  msi_segment_t *seg = (msi_segment_t *)((uintptr_t)mini_block & ~(MSI_HEAP_SEG_SIZE - 1));
  if (seg->mini_used || msi_heap_mini_of(mini_block) != msi_seg_span(seg, 0)) return 4; /* (reclaimed) */
  fprintf(stderr, "pointer %p\n", mini_block);
  ms_free(mini_block);
  return 1;
}
static void double_free_after_mini_reclaim(void **state) {
  (void)state;
  if (!MSI_HEAP_MINI) ms_skip_refused(0, "the secure build has no mini spans (a guard page per span)");
  ms_test_child_aborts(freed_after_reclaim, "free(): double free");
}

/* ---- an orphan holding one live block: its empty mini spans go back ---------------------------------------- */
static void *live_block;
static void *minis_then_one_left(void *arg) {
  (void)arg;
  void *b[MSI_HEAP_MINI_CLASSES];
  for (unsigned c = 0; c < MSI_HEAP_MINI_CLASSES; c++) b[c] = ms_malloc(msi_heap_class_size[c] - MSI_HEAP_CANARY);
  for (unsigned c = 1; c < MSI_HEAP_MINI_CLASSES; c++) ms_free(b[c]);
  live_block = b[0]; /* its class's mini span, the first in the area */
  memset(live_block, 0x5a, msi_heap_class_size[0] - MSI_HEAP_CANARY);
  return NULL;
}
/* fn runs in a thread that ends, leaving live_block, a block of a mini span, to its heap's orphan: that span in
   *live; 2: no thread, 3: not a mini span's block */
static int orphan_keeps_mini(void *(*fn)(void *), msi_span_t **live) {
  ms_heap_collect(1);
  pthread_t t;
  if (pthread_create(&t, NULL, fn, NULL) || pthread_join(t, NULL)) return 2;
  *live = msi_heap_span_of(live_block);
  return msi_span_is_mini(*live) ? 0 : 3;
}
static int empty_minis_of_live_orphan(void) {
  msi_span_t *live;
  int e = orphan_keeps_mini(minis_then_one_left, &live);
  if (e) return e;
  msi_segment_t *seg = SEG_OF(live_block);
  size_t ps = (size_t)sysconf(_SC_PAGESIZE), npages = MSI_HEAP_MINI_BASE % ps ? 0 : (MSI_HEAP_CHUNK - MSI_HEAP_GUARD - MSI_HEAP_MINI_BASE) / ps;
  if (npages < 2) return 0; /* (pages larger than the mini area's alignment: nothing to give back by page) */
  unsigned used = seg->mini_used;
  uint64_t before = returned();
  ms_heap_collect(1); /* the dead thread's heap flushed: it keeps live_block, its other mini spans are empty */
  uint64_t back = returned() - before;
  print_message("an orphan with one live block: %llu KiB of its mini area back\n", (unsigned long long)back >> 10);
  if (live->state != MSI_SPAN_ACTIVE || seg->mini_used != used) return 4; /* the live block's span stays */
  const unsigned char *c = live_block;
  if (c[0] != 0x5a || c[msi_heap_class_size[0] - MSI_HEAP_CANARY - 1] != 0x5a) return 5;
  unsigned freed = 0;
#if MSI_HEAP_MINI
  for (unsigned d = 0; d < seg->mini_descs; d++)
    if (msi_seg_mini(seg, d) != live) freed += msi_seg_mini(seg, d)->state == MSI_SPAN_FREE && !msi_seg_mini(seg, d)->owner;
#endif
  if (freed + 1 < MSI_HEAP_MINI_CLASSES) return 6; /* every other mini span left the heap */
  size_t handed = (used * MSI_HEAP_MINI_SIZE + ps - 1) / ps; /* (the pages past them were never written) */
  if (back < (handed - 1) * ps) return 7; /* every page handed out but the live span's went back */
  unsigned char vec[16];
  if (mincore((char *)seg + MSI_HEAP_MINI_BASE, npages * ps, vec) != 0) return 8;
  for (size_t i = 1; i < npages; i++)
    if (vec[i] & 1) return 9; /* (not resident) */
  ms_free(live_block); /* then the orphan is empty: reclaimed whole */
  ms_heap_collect(1);
  if (live->state != MSI_SPAN_FREE) return 10;
  return 0;
}
static void live_orphan_gives_back_empty_minis(void **state) {
  (void)state;
  if (!MSI_HEAP_MINI) ms_skip_refused(0, "the secure build has no mini spans (a guard page per span)");
  assert_int_equal(ms_test_in_child(empty_minis_of_live_orphan), 0);
}

/* ---- an orphan's partial reclaim empties one segment's mini spans, keeps a live one in another -------------- */
/* The dead thread took a mini span in segment S1, moved on to S2 and took another there, then exited with blocks
   live in S2. A collect takes back S1's empty mini span; S1 goes idle and is released. Another thread frees the
   S2 mini block; the next collect reclaims the orphan's mini spans again: it must not reach S1 (released). */
enum { SPREAD_HOLDERS = 6, SPREAD_MAX = 200000 };
static pthread_barrier_t spread_hold, spread_done, spread_go;
static void *spread_mini1, *spread_mini2, **spread_blocks;
static void *spread_holder(void *a) { /* a segment of its own, bare once it exits (the ones kept mapped) */
  (void)a;
  void *p = ms_malloc(4096);
  memset(p, 1, 4096);
  pthread_barrier_wait(&spread_hold);
  pthread_barrier_wait(&spread_done);
  ms_free(p);
  return NULL;
}
static void *spread_thread(void *a) {
  (void)a;
  spread_mini1 = ms_malloc(48);
  size_t n = 0;
  while (n < SPREAD_MAX && (spread_blocks[n] = ms_malloc(4096)) && SEG_OF(spread_blocks[n]) == SEG_OF(spread_mini1)) n++;
  spread_mini2 = ms_malloc(100); /* another class: a mini span in the second segment */
  pthread_barrier_wait(&spread_done);
  pthread_barrier_wait(&spread_go);
  for (size_t i = 0; i < n; i++) ms_free(spread_blocks[i]);
  ms_free(spread_mini1); /* the 4 KiB block in the second segment and spread_mini2 stay live */
  return NULL;
}
static int minis_across_segments(void) {
  if ((spread_blocks = mmap(NULL, SPREAD_MAX * sizeof(void *), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
    return 2;
  ms_free(ms_malloc(100));
  pthread_t h[SPREAD_HOLDERS], x;
  pthread_barrier_init(&spread_hold, NULL, SPREAD_HOLDERS + 1);
  pthread_barrier_init(&spread_done, NULL, SPREAD_HOLDERS + 1);
  pthread_barrier_init(&spread_go, NULL, 2);
  for (int k = 0; k < SPREAD_HOLDERS; k++) pthread_create(&h[k], NULL, spread_holder, NULL);
  pthread_barrier_wait(&spread_hold);
  pthread_create(&x, NULL, spread_thread, NULL);
  for (int k = 0; k < SPREAD_HOLDERS; k++) pthread_join(h[k], NULL);
  pthread_barrier_wait(&spread_go);
  pthread_join(x, NULL);
  if (!msi_span_is_mini(msi_heap_span_of(spread_mini2))) return 3;
  if (SEG_OF(spread_mini1) == SEG_OF(spread_mini2)) return 4;
  uint64_t segs = atomic_load(&msi_heap_counters.segments);
  ms_heap_collect(1);
  ms_heap_collect(1);
  ms_heap_collect(1); /* the first segment's mini span taken back, the segment released */
  print_message("segments %llu -> %llu\n", (unsigned long long)segs, (unsigned long long)atomic_load(&msi_heap_counters.segments));
  msi_span_t *m2 = msi_heap_span_of(spread_mini2);
  ms_free(spread_mini2); /* into the orphan's mini span in the second segment */
  ms_heap_collect(1);
  ms_heap_collect(1); /* its mini spans reclaimed again */
  if (m2->state != MSI_SPAN_FREE || m2->owner) return 5;
  return 0;
}
static void partial_reclaim_forgets_emptied_segment(void **state) {
  (void)state;
  if (!MSI_HEAP_MINI) ms_skip_refused(0, "the secure build has no mini spans (a guard page per span)");
  assert_int_equal(ms_test_in_child(minis_across_segments), 0);
}

/* ---- a bare segment used again and given back again, each cycle counted once ------------------------------ */
/* A segment kept bare has chunk 0's pages past its first given back and counted. A thread's block taken there
   (a mini span, or a span whose descriptor lies past page 0) writes a few of them; the next give-back counts those
   and the span's chunk, not the whole header again */
static void *cycle_blocks[MSI_HEAP_CLASSES];
static unsigned cycle_n;
static void *cycle_thread(void *a) { /* a block of one small class, or of each class up to 4 KiB (its own span each) */
  (void)a;
  cycle_n = 0;
  for (unsigned c = 0; c < MSI_HEAP_CLASSES && msi_heap_class_size[c] <= 4096 && (c == 0 || a); c++) {
    size_t sz = msi_heap_class_size[c] - MSI_HEAP_CANARY;
    if (!(cycle_blocks[cycle_n] = ms_malloc(sz))) return (void *)1;
    memset(cycle_blocks[cycle_n++], 3, sz);
  }
  for (unsigned i = 0; i < cycle_n; i++) ms_free(cycle_blocks[i]);
  return NULL;
}
static int bare_reuse_cycles(void) {
  ms_free(ms_malloc(100));
  burst();
  ms_heap_collect(1);
  ms_heap_collect(1); /* the burst's segments bare (those kept) or released */
  size_t ps = (size_t)sysconf(_SC_PAGESIZE), hdr = (MSI_HEAP_CHUNK - MSI_HEAP_GUARD) / ps;
  if (hdr > 16) return 2;
  int checked = 0;
  for (int cycle = 0; cycle < 6; cycle++) {
    pthread_t t;
    void *r = NULL;
    if (pthread_create(&t, NULL, cycle_thread, cycle % 2 ? (void *)1 : NULL) || pthread_join(t, &r) || r) return 3;
    msi_segment_t *seg = (msi_segment_t *)((uintptr_t)cycle_blocks[0] & ~(MSI_HEAP_SEG_SIZE - 1));
    size_t chunks = 0;
    bool one_seg = true;
    for (unsigned i = 0; i < cycle_n; i++) {
      msi_span_t *s = msi_heap_span_of(cycle_blocks[i]);
      one_seg &= (msi_segment_t *)((uintptr_t)cycle_blocks[i] & ~(MSI_HEAP_SEG_SIZE - 1)) == seg;
      bool first = true; /* (a span counted once) */
      for (unsigned j = 0; j < i; j++) first &= msi_heap_span_of(cycle_blocks[j]) != s;
      if (first && !msi_span_is_mini(s)) chunks += s->nchunks;
    }
    unsigned char vec[16];
    if (mincore((char *)seg + ps, (hdr - 1) * ps, vec)) return 4;
    size_t resident = 0;
    for (size_t i = 0; i + 1 < hdr; i++) resident += vec[i] & 1;
    uint64_t before = returned();
    ms_heap_collect(1);
    ms_heap_collect(1);
    uint64_t grew = returned() - before;
    print_message("cycle %d (%u blocks): returned grew %llu KiB, chunk 0 had %zu KiB resident past its first page, "
                  "spans of %zu chunks; bare %d\n", cycle, cycle_n, (unsigned long long)grew >> 10, resident * ps >> 10,
                  chunks, seg->bare);
    if (!seg->bare || !one_seg) continue; /* (released whole, kept in use, or spread: another count) */
    if (grew != resident * ps + chunks * MSI_HEAP_CHUNK) return 10 + cycle;
    checked++;
  }
  return checked ? 0 : 5;
}
static void bare_reuse_counts_its_pages_once(void **state) {
  (void)state;
  assert_int_equal(ms_test_in_child(bare_reuse_cycles), 0);
}

/* ---- a span trimmed in the global cache, then purged: its pages counted once ------------------------------- */
/* A span entering the global cache with pages resident past what its class needed gives them back (span_trim);
   the purge that gives its chunks back later counts only the rest. Likewise a current span emptied with its tail
   trimmed (span_trim_tail) and then purged. "returned" grows by the union of the pages seen given back (each
   thread leaves a block live: its segment never goes bare, whose header pages given back again unwritten count
   once) */
static size_t trim_size;
static unsigned trim_blocks;
static void *trim_worker(void *a) { /* a span carved past TRIM_ABOVE with few blocks of its capacity */
  (void)a;
  void *p[64];
  for (unsigned i = 0; i < trim_blocks; i++) {
    if (!(p[i] = ms_malloc(trim_size))) return (void *)1;
    memset(p[i], 7, trim_size);
  }
  for (unsigned i = 0; i < trim_blocks; i++) ms_free(p[i]);
  return ms_malloc(4096) ? NULL : (void *)1; /* kept: the segment stays in use (never bare: no header given back) */
}
static int trimmed_then_purged(void) {
  ms_free(ms_malloc(100));
  ms_heap_collect(1);
  ms_heap_collect(1);
  page = (size_t)sysconf(_SC_PAGESIZE);
  pages = atomic_load(&msi_heap_g.small_top) / page + 64 * MSI_HEAP_SEG_SIZE / page; /* (room for new segments) */
  given = (unsigned char *)syscall(SYS_mmap, NULL, pages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (given == MAP_FAILED) return 2;
  static const size_t sizes[] = {20000, 12000, 6000, 3000};
  int bad = 0;
  /* each a use of the chunks, counted apart; the first (k = -1) maps the thread's segment, which the test's mmap
     sees as a give-back */
  for (int k = -1; k < (int)(sizeof sizes / sizeof sizes[0]); k++) {
    trim_size = sizes[k < 0 ? 0 : k];
    trim_blocks = (unsigned)(MSI_HEAP_CHUNK / 2 / trim_size) + 1; /* (past TRIM_ABOVE, a small part of a big span) */
    memset(given, 0, pages);
    uint64_t before = returned();
    atomic_store(&seeing, 1);
    pthread_t t;
    void *r = NULL;
    if (pthread_create(&t, NULL, trim_worker, NULL) || pthread_join(t, &r) || r) return 3;
    ms_heap_collect(1); /* the dead thread's spans to the global cache (trimmed), then purged */
    ms_heap_collect(1);
    atomic_store(&seeing, 0);
    uint64_t counted = returned() - before, seen = 0;
    for (size_t i = 0; i < pages; i++) seen += given[i] ? page : 0;
    if (k < 0) continue;
    print_message("%zu-byte blocks trimmed then purged: returned %llu KiB, seen given back %llu KiB\n", trim_size,
                  (unsigned long long)counted >> 10, (unsigned long long)seen >> 10);
    if (seen < MSI_HEAP_CHUNK) return 4; /* (something was given back) */
    bad |= counted != seen;
  }
  return bad ? 5 : 0;
}
static void trimmed_span_counted_once(void **state) {
  (void)state;
  assert_int_equal(ms_test_in_child(trimmed_then_purged), 0);
}

/* ---- an orphan's partial reclaim counts only the pages its mini spans used ---------------------------------- */
/* The dead thread's two mini spans share the area's first page, one of them holding a live block: the pages past
   the granules handed out (mini_used) were never written, so the partial reclaim gives back and counts none of
   them */
static void *two_minis(void *arg) {
  (void)arg;
  live_block = ms_malloc(48);
  void *other = ms_malloc(100);
  memset(live_block, 0x5a, 48);
  ms_free(other);
  return NULL;
}
static int partial_reclaim_counts_used_pages(void) {
  msi_span_t *live;
  int e = orphan_keeps_mini(two_minis, &live);
  if (e) return e;
  msi_segment_t *seg = SEG_OF(live_block);
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  if (MSI_HEAP_MINI_BASE % ps || (MSI_HEAP_CHUNK - MSI_HEAP_GUARD - MSI_HEAP_MINI_BASE) / ps < 2) return 0;
  size_t used_pages = (seg->mini_used * MSI_HEAP_MINI_SIZE + ps - 1) / ps;
  uint64_t before = returned();
  ms_heap_collect(1);
  ms_heap_collect(1); /* the orphan flushed, its empty mini span reclaimed */
  uint64_t back = returned() - before;
  print_message("mini spans in %zu page(s), one live: %llu KiB counted returned\n", used_pages, (unsigned long long)back >> 10);
  if (live->state != MSI_SPAN_ACTIVE || ((unsigned char *)live_block)[47] != 0x5a) return 4;
  return back <= (used_pages - 1) * ps ? 0 : 5; /* (the live span's page stays) */
}
static void partial_reclaim_counts_only_used(void **state) {
  (void)state;
  if (!MSI_HEAP_MINI) ms_skip_refused(0, "the secure build has no mini spans (a guard page per span)");
  assert_int_equal(ms_test_in_child(partial_reclaim_counts_used_pages), 0);
}

/* ---- a fork inside a purge pass's window -------------------------------------------------------------------- */
/* A purge pass takes a segment's dirty chunks out of its free mask and drops their pages without the segments'
   lock. Another thread forks meanwhile (the pass paused there by the test's hook): the child finds the chunks
   back in the free mask, none held for a pass that does not exist there (they were neither free nor dirty: never
   used again) */
static _Atomic int purge_armed;
static msi_segment_t *purge_seg;
static uint64_t purge_chunks;
static void purge_hook(msi_segment_t *seg, uint64_t chunks) {
  int want = 1;
  if (!atomic_compare_exchange_strong(&purge_armed, &want, 0)) return;
  purge_seg = seg;
  purge_chunks = chunks;
  paused();
}
static bool purge_chunks_back(void) {
  return purge_seg && (purge_seg->free_mask & purge_chunks) == purge_chunks && !purge_seg->purging &&
         !(purge_seg->dirty_mask & purge_chunks);
}
static void fork_while_purging(void **state) {
  (void)state;
  void *p[64];
  for (int i = 0; i < 64; i++) assert_non_null(p[i] = ms_malloc(4096));
  for (int i = 0; i < 64; i++) memset(p[i], 2, 4096);
  for (int i = 0; i < 64; i++) ms_free(p[i]); /* spans cached: the collect makes their chunks dirty, then purges */
  purge_seg = NULL;
  msi_heap_purge_hook = purge_hook;
  pthread_t t = pass_until_paused(&purge_armed, 1);
  if (!purge_seg) {
    pthread_join(t, NULL);
    msi_heap_purge_hook = NULL;
    fail_msg("the pass met no dirty chunk to purge");
  }
  fflush(NULL);
  pid_t pid = fork(); /* the pass paused in another thread, its chunks out of the free mask */
  assert_true(pid >= 0);
  if (pid == 0) _exit(purge_chunks_back() ? 0 : 1);
  sem_post(&go);
  assert_int_equal(pthread_join(t, NULL), 0);
  msi_heap_purge_hook = NULL;
  assert_true(purge_chunks_back()); /* (the parent's pass finished) */
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  print_message("chunks %#llx of the purged segment back in the child's free mask: %s\n",
                (unsigned long long)purge_chunks, WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "yes" : "no");
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  sem_destroy(&in_window);
  sem_destroy(&go);
}

/* ---- a guard page that cannot be removed -------------------------------------------------------------------- */
/* The secure build's span ends in a guard page; when the span goes back to its segment the guard goes. Should
   every way of removing it be refused, the chunk holding it stays out of use (a span placed over it would fault
   on its blocks; a warning says so once); spans taken afterwards write all their blocks without a fault */
#if MSI_HEAP_SECURE
static int guard_stuck(void) {
  void *b = ms_malloc(4000);
  if (!b) return 2;
  msi_span_t *s = msi_heap_span_of(b);
  msi_segment_t *seg = SEG_OF(b);
  unsigned last = (unsigned)(((s->base & ~(MSI_HEAP_CHUNK - 1)) - (uintptr_t)seg) >> MSI_HEAP_CHUNK_SHIFT) + s->nchunks - 1;
  if (!s->guarded) return 0; /* (no guard: nothing to remove) */
  int64_t idle = atomic_load(&msi_heap_idle_spans);
  ms_free(b);
  atomic_store(&refuse_guard_remove, 1);
  ms_heap_collect(1); /* the span back to its segment */
  atomic_store(&refuse_guard_remove, 0);
  if (s->guarded) return 3;
  if (seg->free_mask >> last & 1) return 4; /* the guard's chunk free again */
  if (atomic_load(&msi_heap_idle_spans) != idle) return 7; /* the kept chunk still counted idle (cached) */
  enum { N = 4000 };
  static void *p[N];
  for (int i = 0; i < N; i++) { /* blocks of several span lengths over the segment's chunks: written whole */
    size_t sz = (size_t)256 << (i % 7);
    if (!(p[i] = ms_malloc(sz))) return 5;
    memset(p[i], 9, sz);
  }
  for (int i = 0; i < N; i++) ms_free(p[i]);
  return seg->free_mask >> last & 1 ? 6 : 0;
}
static void guard_stuck_keeps_its_chunk(void **state) {
  (void)state;
  if (!msi_heap_g.guard_markers) ms_skip_refused(0, "the secure build's guard pages need guard markers (Linux 6.13+)");
  assert_int_equal(ms_test_in_child(guard_stuck), 0);
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(double_free_after_mini_reclaim), /* (in a child of a process with no dead thread yet: its
                                                            thread's heap is new, not an orphan's adopted) */
      cmocka_unit_test(live_orphan_gives_back_empty_minis),
      cmocka_unit_test(partial_reclaim_forgets_emptied_segment),
      cmocka_unit_test(partial_reclaim_counts_only_used),
      cmocka_unit_test(bare_reuse_counts_its_pages_once),
      cmocka_unit_test(trimmed_span_counted_once),
      cmocka_unit_test(returned_counts_each_byte_once), /* no segment given back before it */
      cmocka_unit_test(fork_while_keeping_bare),
      cmocka_unit_test(fork_while_releasing),
      cmocka_unit_test(fork_while_purging),
#if MSI_HEAP_SECURE
      cmocka_unit_test(guard_stuck_keeps_its_chunk),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
