/* ms_pages_commit, decommit, reset and release change only memory this layer reserved for the caller (the header:
   "inside a reservation", ENOMEM for a hole; release: ENOMEM for foreign memory). Memory the caller mapped itself,
   a range running past the end of a reservation into a neighbouring mapping, and the memory of the library's own
   parts, are refused with ENOMEM and left as they were: not zeroed, not unmapped, not made accessible. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include "memspace.h"
#include "ms_test.h"

/* 1 when the page at p is mapped (madvise fails with ENOMEM on a hole) */
static int mapped(void *p) { return madvise(p, 1, MADV_NORMAL) == 0; }

static void foreign_mapping(void **state) {
  (void)state;
  size_t pg = ms_page_size();
  char *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  memset(m, 7, 4 * pg);
  errno = 0;
  assert_int_equal(ms_pages_decommit(m, pg), ENOMEM);
  assert_int_equal(errno, ENOMEM);
  assert_int_equal(m[0], 7); /* not zeroed, still accessible */
  assert_int_equal(ms_pages_reset(m + pg, pg), ENOMEM);
  assert_int_equal(m[pg], 7);
  assert_int_equal(ms_pages_release(m + 2 * pg, pg), ENOMEM);
  assert_true(mapped(m + 2 * pg));
  assert_int_equal(m[2 * pg], 7);
  assert_int_equal(mprotect(m + 3 * pg, pg, PROT_NONE), 0);
  assert_int_equal(ms_pages_commit(m + 3 * pg, pg), ENOMEM); /* the caller's guard page stays a guard page */
  munmap(m, 4 * pg);
}

static void past_a_reservation(void **state) {
  (void)state;
  size_t pg = ms_page_size(), size = 64 * pg;
  ms_pages_t r, held[8];
  char *n = MAP_FAILED;
  int tries = 0;
  /* a reservation whose next page is free for the neighbour below: another mapping may sit right after one (the
     kernel places mappings next to each other), so up to 8 are tried, the ones that do not fit held meanwhile */
  for (; tries < 8; tries++) {
    assert_int_equal(ms_pages_reserve(size, 2 * size, MS_PAGES_COMMIT, -1, &r), 0);
    char *end = (char *)r.addr + r.size;
    n = mmap(end, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (n == end) break;
    if (n != MAP_FAILED) munmap(n, pg);
    held[tries] = r;
  }
  for (int i = 0; i < tries; i++) ms_pages_release(held[i].addr, held[i].size);
  if (tries == 8) skip(); /* every next page taken: nothing to test against */
  n[0] = 9;
  assert_int_equal(ms_pages_decommit(r.addr, r.size + pg), ENOMEM);
  assert_int_equal(n[0], 9);
  assert_int_equal(ms_pages_reset(r.addr, r.size + pg), ENOMEM);
  assert_int_equal(ms_pages_commit(r.addr, r.size + pg), ENOMEM);
  assert_int_equal(ms_pages_release(r.addr, r.size + pg), ENOMEM);
  assert_true(mapped(n));
  assert_int_equal(n[0], 9);
  /* the reservation itself, and whole-page parts of it, still work */
  assert_int_equal(ms_pages_decommit((char *)r.addr + pg, pg), 0);
  assert_int_equal(ms_pages_commit((char *)r.addr + pg, pg), 0);
  assert_int_equal(ms_pages_reset(r.addr, r.size), 0);
  assert_int_equal(ms_pages_release((char *)r.addr + r.size - pg, pg), 0);
  assert_int_equal(ms_pages_release(r.addr, r.size - pg), 0);
  assert_int_equal(n[0], 9);
  munmap(n, pg);
}

/* the memory of the library's own parts (a space's data, a frame allocator's range, a pinned DMA buffer) is not
   the caller's reservation: commit, decommit, reset and release refuse it with ENOMEM and leave it to its owner,
   and so does unlock where the library locked it (a DMA buffer); lock, unlock and populate of a space's block are
   the caller's (a release or decommit of a space block's page would leave the space's block unmapped: SIGSEGV at
   its next use; a release of a DMA buffer's address would unmap the pinned buffer under its handle) */
static void parts_memory(void **state) {
  (void)state;
  size_t pg = ms_page_size();
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = 1 << 20;
  ms_space_t *s = ms_space_create(&c);
  assert_non_null(s);
  char *b = ms_space_malloc(s, 100);
  assert_non_null(b);
  memset(b, 5, 100);
  void *page = (void *)((uintptr_t)b & ~(uintptr_t)(pg - 1));
  errno = 0;
  assert_int_equal(ms_pages_release(page, pg), ENOMEM);
  assert_int_equal(errno, ENOMEM);
  assert_int_equal(ms_pages_decommit(page, pg), ENOMEM);
  assert_int_equal(ms_pages_reset(page, pg), ENOMEM);
  assert_int_equal(ms_pages_commit(page, pg), ENOMEM);
  /* lock, unlock and populate of a block the space gave: the caller's to use (RLIMIT_MEMLOCK may refuse a lock) */
  int locked = ms_pages_lock(page, pg);
  assert_true(locked == 0 || locked == ENOMEM || locked == EPERM || locked == EAGAIN);
  assert_int_equal(ms_pages_unlock(page, pg), 0);
  assert_int_equal(ms_pages_populate(page, pg), 0);
  assert_int_equal(b[99], 5); /* mapped, contents kept */
  ms_space_free(s, b);
  assert_int_equal(ms_space_check(s), 0);
  ms_space_destroy(s);
  ms_frame_config_t fc;
  memset(&fc, 0, sizeof fc);
  fc.range_size = 1 << 20;
  ms_frame_t *f = ms_frame_create(&fc);
  assert_non_null(f);
  char *q = ms_frame_alloc(f, 64, 0);
  assert_non_null(q);
  q[0] = 3;
  assert_int_equal(ms_pages_release((void *)((uintptr_t)q & ~(uintptr_t)(pg - 1)), pg), ENOMEM);
  assert_int_equal(q[0], 3);
  ms_frame_destroy(f);
  ms_dma_config_t dc; /* base pages: the library mlocks them (hugetlb pages need no lock) */
  memset(&dc, 0, sizeof dc);
  dc.page_size = pg;
  dc.numa_node = -1;
  ms_dma_buffer_t *d = ms_dma_alloc(2 * pg, &dc);
  if (d) { /* (pinning may be refused without CAP_IPC_LOCK: nothing to attack then) */
    char *a = ms_dma_addr(d);
    a[0] = 4;
    assert_int_equal(ms_pages_release(a, 2 * pg), ENOMEM);
    assert_int_equal(ms_pages_unlock(a, 2 * pg), ENOMEM);
    assert_int_equal(ms_pages_decommit(a, pg), ENOMEM);
    assert_int_equal(a[0], 4);
    ms_dma_free(d);
  }
  /* the caller's own reservation beside them still works */
  ms_pages_t r;
  assert_int_equal(ms_pages_reserve(2 * pg, 0, MS_PAGES_COMMIT, -1, &r), 0);
  assert_int_equal(ms_pages_decommit(r.addr, pg), 0);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(parts_memory),
      cmocka_unit_test(foreign_mapping),
      cmocka_unit_test(past_a_reservation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
