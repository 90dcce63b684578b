/* SPDX-License-Identifier: MIT */
/* test_heap_populate.c: in a heap holding 64 MiB committed, carving a fresh span faults its pages in a 64 KiB
   window at a time (span.c span_populate: MADV_POPULATE_WRITE) instead of one page per block reached; below that,
   and in the secure build, a fresh span's pages fault in as blocks reach them (test_heap_unit:
   fresh_span_pages_faulted_as_used). Only a thread that has carved 4 MiB itself populates: another thread of the
   same process, using a few blocks, faults in its pages as used. A refused populate changes nothing but the
   residency, and no allocation changes errno. Its own process: the other tests want a small heap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "heap.h"
#include "os.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { BIG = 16000, SPAN_WINDOW = 65536 };

static void skip_without_populate(void) {
  char thp[128] = "";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  thp[f ? fread(thp, 1, sizeof thp - 1, f) : 0] = 0;
  if (f) fclose(f);
  if (strstr(thp, "[always]")) ms_skip_refused(0, "transparent huge pages are 'always': a chunk may be one huge page");
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  void *p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(p != MAP_FAILED);
  int r = madvise(p, ps, MADV_POPULATE_WRITE), err = errno;
  munmap(p, ps);
  if (r != 0) ms_skip_refused(err, "madvise(MADV_POPULATE_WRITE) (Linux 5.14)");
}

/* blocks of BIG bytes, never written, until the heap holds 64 MiB committed (they stay live) */
static void grow_heap(void) {
  static void *keep[8192];
  size_t n = 0;
  while (atomic_load(&msi_os_counters.committed) < ((uintptr_t)64 << 20) + MSI_HEAP_SEG_SIZE) {
    assert_true(n < sizeof keep / sizeof keep[0]);
    assert_non_null(keep[n++] = ms_malloc(BIG));
  }
}

/* the pages of [from, to) resident (mincore) */
static size_t resident_pages(uintptr_t from, uintptr_t to) {
  static unsigned char vec[SPAN_WINDOW / 4096 * 8];
  size_t ps = (size_t)sysconf(_SC_PAGESIZE), pages = (to - from + ps - 1) / ps, n = 0;
  assert_true(pages <= sizeof vec);
  assert_int_equal(mincore((void *)from, to - from, vec), 0);
  for (size_t i = 0; i < pages; i++) n += vec[i] & 1;
  return n;
}

/* the end of a span's first populate window, its start in *chunk: the window counts from the span's chunk (its
   blocks may start at a colour past it, span.c span_colour) and stops at the page holding the span's end */
static uintptr_t first_window(const msi_span_t *s, uintptr_t *chunk) {
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t end = s->base + (uintptr_t)s->capacity * s->block_size;
  *chunk = s->base & ~(MSI_HEAP_CHUNK - 1);
  return *chunk + SPAN_WINDOW <= end ? *chunk + SPAN_WINDOW : (end + ps - 1) & ~(ps - 1);
}

/* one block from a fresh span of its class: the span's first window resident (the default build), one page
   (the secure build). errno as the caller left it */
static void fresh_span_window(void **state) {
  (void)state;
  msi_heap_mini_off = true; /* (a normal span's window: a mini span is resident with its segment's header) */
  skip_without_populate();
  grow_heap();
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  const size_t sizes[] = {48, 1000, 5000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    errno = 1234;
    void *p = ms_malloc(sizes[i]);
    assert_int_equal(errno, 1234);
    assert_non_null(p);
    msi_span_t *s = msi_heap_span_of(p);
    assert_int_equal(msi_span_used(s), 1);
    uintptr_t chunk, to = first_window(s, &chunk);
    size_t want = MSI_HEAP_SECURE ? 0 : (to - chunk) / ps, got = resident_pages(chunk, to);
    if (MSI_HEAP_SECURE) assert_true(got <= (s->block_size + 2 * ps - 1) / ps + 1); /* the block's pages */
    else if (got != want) fail_msg("size %zu: %zu of the span's first %zu pages resident", sizes[i], got, want);
    /* the blocks of the window are handed out without another system call's help, and all work */
    for (uintptr_t b = s->base + s->block_size; b + s->block_size <= to; b += s->block_size) {
      void *q = ms_malloc(sizes[i]);
      assert_non_null(q);
      assert_ptr_equal(msi_heap_span_of(q), s);
      memset(q, 7, sizes[i]);
    }
    memset(p, 7, sizes[i]);
  }
}

/* populate refused (fault injection on madvise): the block is served, its span's further pages are left to
   fault in as used, errno unchanged */
static void refused_populate(void **state) {
  (void)state;
  skip_without_populate();
  grow_heap();
  ms_fault_inject(MS_FAULT_MADVISE, 1, ENOMEM);
  errno = 4321;
  void *p = ms_malloc(3000);
  ms_fault_inject(MS_FAULT_MADVISE, 0, 0);
  assert_int_equal(errno, 4321); /* (the secure build: the refusal hits a guard marker, not the caller either) */
  assert_non_null(p);
  memset(p, 1, 3000);
  msi_span_t *s = msi_heap_span_of(p);
  assert_int_equal(msi_span_used(s), 1);
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  /* the carve wrote the headers of the blocks in the page of the first block: the block's own pages at most */
  uintptr_t chunk = s->base & ~(MSI_HEAP_CHUNK - 1);
  size_t got = resident_pages(chunk, chunk + SPAN_WINDOW);
  if (got > (3000 + ps - 1) / ps + 1) fail_msg("%zu pages of the span's first window resident after a refusal", got);
}

/* a thread's one block of a class, from a fresh span: kept for the main thread to look at (cmocka's checks stay
   there) */
static void *one_block(void *arg) {
  size_t size = *(const size_t *)arg;
  void *p = ms_malloc(size);
  if (p) memset(p, 1, size);
  return p;
}

/* the process holds 64 MiB committed, but a new thread that has carved little faults its pages in as used: a
   pool of hundreds of threads using a few blocks each pre-faults no window per class and thread */
static void other_thread_no_window(void **state) {
  (void)state;
  skip_without_populate();
  grow_heap();
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  const size_t sizes[] = {48, 1000, 5000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    pthread_t t;
    void *p;
    assert_int_equal(pthread_create(&t, NULL, one_block, (void *)&sizes[i]), 0);
    assert_int_equal(pthread_join(t, &p), 0);
    assert_non_null(p);
    msi_span_t *s = msi_heap_span_of(p);
    assert_int_equal(msi_span_used(s), 1); /* the first block of a fresh span */
    uintptr_t chunk, to = first_window(s, &chunk);
    size_t got = resident_pages(chunk, to), most = (sizes[i] + 2 * ps - 1) / ps + 1;
    if (got > most) fail_msg("size %zu: %zu pages of a new thread's span resident", sizes[i], got);
    ms_free(p);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fresh_span_window),
      cmocka_unit_test(refused_populate),
      cmocka_unit_test(other_thread_no_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
