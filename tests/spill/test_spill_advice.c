/* SPDX-License-Identifier: MIT */
/* Fault advice beyond memory (src/spill/writeback.c advise_refresh, docs/spill.md *Read-around*): a program's own
   MADV_HUGEPAGE on its spilled block (numpy gives it every array of 4 MiB or more, right after the malloc) is
   undone by the maintenance task a period after the block came, also when the ticks right after the allocation
   fell before the program's madvise, so the block's fill and later faults take 4 KiB folios whatever the order of
   the two. "Beyond memory" is made here by lowering the budget the library found (every machine's anonymous
   memory is then past its 3/4 mark).
   Population ahead of a fill (writeback.c msi_sp_populate_run): while the data fits, the maintenance task populates
   a fresh block from its end, up to half of it, and stops where the program's writes reached, at a freed block,
   and beyond memory or near the 3/4 mark (msi_sp_populate_cap). */
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

/* pages of [p, p + len) in the page cache */
static size_t resident(const void *p, size_t len) {
  static unsigned char vec[(256 * MiB) / 4096];
  size_t ps = 4096, n = 0;
  assert_true(len / ps <= sizeof vec);
  assert_int_equal(mincore((void *)p, len, vec), 0);
  for (size_t i = 0; i < len / ps; i++) n += vec[i] & 1;
  return n * ps;
}

static void test_populate_cap(void **state) {
  (void)state;
  const uint64_t G = 1024 * MiB;
  size_t unit = 2 * MiB;
  /* data that fits: half the block, at most a quarter of the budget, whole units */
  assert_int_equal(msi_sp_populate_cap(G, 512 * MiB, 30 * MiB, 512 * MiB, unit), 256 * MiB);
  assert_int_equal(msi_sp_populate_cap(G, 64 * MiB, 30 * MiB, 64 * MiB, unit), 32 * MiB);
  assert_int_equal(msi_sp_populate_cap(G, 600 * MiB, 0, 600 * MiB, unit), 256 * MiB);
  assert_int_equal(msi_sp_populate_cap(G, 64 * MiB + 4096, 0, 38 * MiB + 4096, unit), 18 * MiB);
  /* small blocks: none */
  assert_int_equal(msi_sp_populate_cap(G, 8 * MiB, 0, 8 * MiB, unit), 0);
  /* near the 3/4 mark (within budget/8 of it) and beyond it: none */
  assert_int_equal(msi_sp_populate_cap(G, 512 * MiB, 160 * MiB, 512 * MiB, unit), 0);
  assert_int_equal(msi_sp_populate_cap(G, 650 * MiB, 0, 512 * MiB, unit), 0);
  assert_int_equal(msi_sp_populate_cap(G, 700 * MiB, 200 * MiB, 512 * MiB, unit), 0);
  assert_int_equal(msi_sp_populate_cap(G, 2 * G, 0, 2 * G, unit), 0);
  assert_int_equal(msi_sp_populate_cap(G, 64 * MiB, 2 * G, 64 * MiB, unit), 0);
  assert_int_equal(msi_sp_populate_cap(G, 64 * MiB, 0, 64 * MiB, 0), 0);
}

#define POP_BLOCK (64 * MiB)
static unsigned char *pop_warm;
static uint64_t pop_limit;
/* spill set up, and a budget the data fits in far from the mark, whatever this machine holds */
static void pop_begin(void) {
  pop_warm = msi_spill_malloc(BLOCK, 0, false);
  if (!pop_warm) ms_skip_refused(errno, "spill is unusable here (no usable spill directory)");
  pop_limit = bud.cg.limit;
  bud.cg.limit = 4096 * MiB;
  atomic_store(&bud.anon, 0);
}
static void pop_end(void) {
  msi_spill_free(pop_warm);
  bud.cg.limit = pop_limit;
}
/* a fresh block while the data fits, left untouched: the task populates its second half, from the end, and no more */
static void test_populate_stops_at_budget(void **state) {
  (void)state;
  pop_begin();
  unsigned char *b = msi_spill_malloc(POP_BLOCK, 0, false);
  assert_non_null(b);
  assert_false(sp.random_adv);
  uint64_t before = msi_sp_populated_bytes();
  tick(0);
  if (msi_sp_populated_bytes() == before && resident(b, POP_BLOCK) == 0)
    ms_skip_refused(EINVAL, "MADV_POPULATE_WRITE refused on the spill mapping (Linux before 5.14?)");
  assert_int_equal(msi_sp_populated_bytes() - before, POP_BLOCK / 2);
  assert_int_equal(resident(b + POP_BLOCK / 2, POP_BLOCK / 2), POP_BLOCK / 2);
  assert_int_equal(resident(b, POP_BLOCK / 2), 0);
  tick(50); /* done: nothing more */
  assert_int_equal(msi_sp_populated_bytes() - before, POP_BLOCK / 2);
  assert_int_equal(resident(b, POP_BLOCK / 2), 0);
  for (size_t i = 0; i < POP_BLOCK; i += 4096) assert_int_equal(b[i], 0); /* populated pages read as zero */
  msi_spill_free(b);
  pop_end();
}

/* the program's writes reached the second half first: population stops at the first granule they touched */
static void test_populate_stops_at_writer(void **state) {
  (void)state;
  pop_begin();
  unsigned char *b = msi_spill_malloc(POP_BLOCK, 0, false);
  assert_non_null(b);
  memset(b + 56 * MiB, 5, 4096); /* the granule [56, 58) MiB */
  uint64_t before = msi_sp_populated_bytes();
  tick(0);
  assert_true(msi_sp_populated_bytes() - before <= 6 * MiB); /* [58, 64) MiB at most */
  assert_int_equal(resident(b, 56 * MiB), 0);
  assert_int_equal(b[56 * MiB], 5);
  msi_spill_free(b);
  pop_end();
}

/* beyond memory, near the mark, or a block freed before the tick: nothing populated */
static void test_populate_skipped(void **state) {
  (void)state;
  pop_begin();
  uint64_t before = msi_sp_populated_bytes();
  unsigned char *b = msi_spill_malloc(POP_BLOCK, 0, false); /* freed before the task runs */
  assert_non_null(b);
  msi_spill_free(b);
  tick(0);
  assert_int_equal(msi_sp_populated_bytes(), before);
  /* near the mark: the block leaves less than budget/8 below 3/4 of the budget */
  bud.cg.limit = 4096 * MiB;
  atomic_store(&bud.anon, 3072 * MiB - POP_BLOCK - 200 * MiB - BLOCK);
  b = msi_spill_malloc(POP_BLOCK, 0, false);
  assert_non_null(b);
  assert_false(sp.random_adv);
  tick(0);
  assert_int_equal(msi_sp_populated_bytes(), before);
  assert_int_equal(resident(b, POP_BLOCK), 0);
  msi_spill_free(b);
  /* beyond memory */
  bud.cg.limit = 16 * MiB;
  b = msi_spill_malloc(POP_BLOCK, 0, false);
  assert_non_null(b);
  assert_true(sp.random_adv);
  tick(0);
  assert_int_equal(msi_sp_populated_bytes(), before);
  assert_int_equal(resident(b, POP_BLOCK), 0);
  msi_spill_free(b);
  pop_end();
  tick(0); /* the advice of data that fits again */
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_advice_after_madvise), cmocka_unit_test(test_populate_cap),
                                     cmocka_unit_test(test_populate_stops_at_budget),
                                     cmocka_unit_test(test_populate_stops_at_writer),
                                     cmocka_unit_test(test_populate_skipped)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
