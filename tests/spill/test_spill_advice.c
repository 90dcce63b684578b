/* SPDX-License-Identifier: MIT */
/* Fault advice beyond memory (src/spill/writeback.c advise_refresh, docs/spill.md *Read-around*): a program's own
   MADV_HUGEPAGE on its spilled block (numpy gives it every array of 4 MiB or more, right after the malloc) is
   undone by the maintenance task a period after the block came, also when the ticks right after the allocation
   fell before the program's madvise, so the block's fill and later faults take 4 KiB folios whatever the order of
   the two. "Beyond memory" is made here by lowering the budget the library found (every machine's anonymous
   memory is then past its 3/4 mark). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "ms_test.h"
#include "../../src/spill/spill_internal.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)
#define BLOCK (8 * MiB)

static bool flag(const void *p, const char *f) {
  int r = ms_test_vm_flag(p, f);
  assert_true(r >= 0);
  return r;
}

/* one run of spill's maintenance task in this thread, as if at now + ahead_ms (CTest runs this test with
   MEMSPACE_PURGE_DELAY=-1: no maintenance thread, so these are the only ticks) */
static void tick(unsigned ahead_ms) { msi_sp_maint.run(msi_now_ns() + (uint64_t)ahead_ms * 1000000u); }

static void test_advice_after_madvise(void **state) {
  (void)state;
  unsigned char *warm = msi_spill_malloc(BLOCK, 0, false); /* spill and its budget set up */
  if (!warm) ms_skip_refused(errno, "spill is unusable here (no usable spill directory)");
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0)
    ms_skip_refused(0, "this kernel has no transparent huge pages: no huge-page advice to undo");
  uint64_t limit = bud.cg.limit;
  bud.cg.limit = 16 * MiB; /* beyond memory from the next allocation on */
  unsigned char *b = msi_spill_malloc(BLOCK, 0, false);
  assert_non_null(b);
  assert_true(sp.random_adv);
  assert_true(flag(b, "nh") && flag(b, "rr"));
  /* ticks between the malloc and the program's madvise (the allocation woke the maintenance thread) */
  tick(0);
  tick(0);
  tick(1);
  assert_int_equal(madvise(b, BLOCK, MADV_HUGEPAGE), 0); /* as numpy, right after the malloc */
  assert_true(flag(b, "hg"));
  tick(2 * 50);                                /* a period later */
  assert_true(flag(b, "nh"));
  assert_false(flag(b + BLOCK - 4096, "hg"));
  memset(b, 7, BLOCK);
  for (size_t i = 0; i < BLOCK; i += 4096) assert_int_equal(b[i], 7);
  msi_spill_free(b);
  msi_spill_free(warm);
  bud.cg.limit = limit;
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_advice_after_madvise)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
