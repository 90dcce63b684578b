/* ms_pages_commit, decommit, reset and release change only memory this layer reserved (the header: "inside a
   reservation", ENOMEM for a hole; release: ENOMEM for foreign memory). Memory the caller mapped itself, and a
   range running past the end of a reservation into a neighbouring mapping, are refused with ENOMEM and left as
   they were: not zeroed, not unmapped, not made accessible. */
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(foreign_mapping),
      cmocka_unit_test(past_a_reservation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
