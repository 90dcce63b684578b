/* SPDX-License-Identifier: MIT */
/* test_committed: os_committed_bytes follows the heap's and spill's commits (fixed mappings, direct blocks,
   purges: counted through os.h, no system call of their own) and msi_os_reserve's back-off (the reservation of
   the heap's regions, spill's classes and a space's data range). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include "os.h"
#include "route.h"
#include "ms_test.h"

static uint64_t committed(void) {
  ms_stats_t st;
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  return st.os_committed_bytes;
}

#define NSMALL 4000
#define NLARGE 8

/* small blocks (spans of segments), dense slots (200 KiB) and committed slots (3 MiB): the count rises by at least
   what the blocks hold, and falls back once they are freed and the caches purged */
static void heap_blocks(void **state) {
  (void)state;
  ms_free(ms_malloc(100)); /* the heap's start-up: its thread heap and first segment */
  ms_heap_collect(1);
  uint64_t before = committed();
  static void *small[NSMALL], *mid[NLARGE], *big[NLARGE];
  for (int i = 0; i < NSMALL; i++) assert_non_null(small[i] = ms_malloc(1000));
  for (int i = 0; i < NLARGE; i++) assert_non_null(mid[i] = ms_malloc(200 << 10));
  for (int i = 0; i < NLARGE; i++) assert_non_null(big[i] = ms_malloc(3 << 20));
  uint64_t held = (uint64_t)NSMALL * 1000 + (uint64_t)NLARGE * ((200 << 10) + (3 << 20)), during = committed();
  assert_true(during >= before + held);
  for (int i = 0; i < NSMALL; i++) ms_free(small[i]);
  for (int i = 0; i < NLARGE; i++) ms_free(mid[i]), ms_free(big[i]);
  ms_heap_collect(1);
  uint64_t after = committed();
  print_message("os_committed_bytes: %llu before, %llu with %llu bytes of blocks, %llu after the purge\n",
                (unsigned long long)before, (unsigned long long)during, (unsigned long long)held,
                (unsigned long long)after);
  assert_true(after <= before + (256 << 10)); /* (a segment header or a thread cache's block may stay) */
}

static uint64_t heap_mapped(void) {
  ms_stats_t st;
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  return st.heap_mapped_bytes;
}

/* blocks in dense slots (64 KiB - 1 MiB) count in heap_mapped_bytes from their commit to their decommit, also when
   realloc moves their pages out to a larger slot: the count neither misses them nor wraps below zero */
static void heap_mapped_dense(void **state) {
  (void)state;
  ms_free(ms_malloc(100));
  ms_heap_collect(1);
  uint64_t before = heap_mapped();
  static void *mid[NLARGE * 2];
  for (int i = 0; i < NLARGE * 2; i++) assert_non_null(mid[i] = ms_malloc(300000));
  uint64_t during = heap_mapped();
  for (int i = 0; i < NLARGE * 2; i++) assert_non_null(mid[i] = ms_realloc(mid[i], 5 << 20));
  for (int i = 0; i < NLARGE * 2; i++) ms_free(mid[i]);
  ms_heap_collect(1);
  uint64_t after = heap_mapped();
  print_message("heap_mapped_bytes: %llu before, %llu with %d blocks of 300000 bytes, %llu after\n",
                (unsigned long long)before, (unsigned long long)during, NLARGE * 2, (unsigned long long)after);
  assert_true(during >= before + (uint64_t)NLARGE * 2 * 300000);
  assert_true(after <= before + (1 << 20));
}

/* spill's file chunks (fixed mappings in its reservation) count while mapped */
static void spill_chunks(void **state) {
  (void)state;
  uint64_t before = committed();
  size_t n = 5 << 20;
  void *p = msi_spill_malloc(n, 0, true);
  if (!p) ms_skip_refused(errno, "spill unusable here (spill directory)");
  memset(p, 1, n);
  uint64_t during = committed();
  msi_spill_free(p); /* the last block: spill unmaps its chunks */
  uint64_t after = committed();
  print_message("os_committed_bytes: %llu before, %llu with a spilled block of %zu bytes, %llu after\n",
                (unsigned long long)before, (unsigned long long)during, n, (unsigned long long)after);
  assert_true(during >= before + n);
  assert_true(after <= before + (256 << 10)); /* (spill's start-up may take a heap span) */
}

/* regions halving with their alignment, one unit fewer per halving (spill's classes), within a budget */
static void reserve_drop_unit(void **state) {
  (void)state;
  size_t ps = msi_os_page_size(), ms = (size_t)__builtin_ctzll(ps);
  /* a budget taking region size 2^26 at most: (26 - ms) regions plus one region of slack */
  msi_os_reservation_t r = {.want = (39 - ms) << 39, .min = (24 - ms) << 24, .align = (size_t)1 << 39,
                            .budget = ((26 - ms) + 1) << 26,
                            .flags = MSI_OS_RESERVE_HALVE_ALIGN | MSI_OS_RESERVE_DROP_UNIT};
  assert_int_equal(msi_os_reserve(&r), 0);
  assert_int_equal(r.got_align, (size_t)1 << 26);
  assert_int_equal(r.size, (26 - ms) << 26);
  assert_int_equal((uintptr_t)r.addr % r.got_align, 0);
  assert_ptr_equal(r.map, r.addr); /* trimmed */
  assert_int_equal(msi_os_munmap(r.addr, r.size), 0);
  /* STRICT: nothing fits, nothing is mapped */
  msi_os_reservation_t s = {.want = (size_t)30 << 30, .min = (size_t)30 << 20, .align = (size_t)1 << 30,
                            .budget = (size_t)16 << 20, .flags = MSI_OS_RESERVE_HALVE_ALIGN | MSI_OS_RESERVE_STRICT};
  assert_int_equal(msi_os_reserve(&s), ENOMEM);
  assert_null(s.addr);
  /* without STRICT the smallest is taken over the budget */
  s.flags = MSI_OS_RESERVE_HALVE_ALIGN | MSI_OS_RESERVE_KEEP_SLACK;
  assert_int_equal(msi_os_reserve(&s), 0);
  assert_int_equal(s.size, (size_t)30 << 20);
  assert_int_equal(s.got_align, (size_t)1 << 20);
  assert_true((uintptr_t)s.map <= (uintptr_t)s.addr &&
              (uintptr_t)s.addr + s.size <= (uintptr_t)s.map + s.map_size); /* the slack stays mapped */
  assert_int_equal(msi_os_munmap(s.map, s.map_size), 0);
}

/* refusals: first the smaller alignment at the same size, then half the room above min */
static void reserve_refusals(void **state) {
  (void)state;
  size_t mib = (size_t)1 << 20;
  msi_os_reservation_t r = {.want = 64 * mib, .min = 8 * mib, .align = 64 * mib, .min_align = 2 * mib};
  ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
  assert_int_equal(msi_os_reserve(&r), 0);
  assert_int_equal(r.size, 64 * mib);
  assert_int_equal(r.got_align, 2 * mib);
  assert_int_equal((uintptr_t)r.addr % (2 * mib), 0);
  assert_int_equal(msi_os_munmap(r.addr, r.size), 0);
  /* over the budget: half the room above min (no slack counted without halving alignments) */
  msi_os_reservation_t h = {.want = 64 * mib, .min = 8 * mib, .align = 2 * mib, .budget = 40 * mib};
  assert_int_equal(msi_os_reserve(&h), 0);
  assert_int_equal(h.size, 36 * mib);
  assert_int_equal(msi_os_munmap(h.addr, h.size), 0);
  /* refused with nothing smaller to try: the refusal's errno, nothing mapped */
  msi_os_reservation_t f = {.want = 8 * mib, .align = 2 * mib};
  ms_fault_inject(MS_FAULT_MMAP, 1, EAGAIN);
  assert_int_equal(msi_os_reserve(&f), EAGAIN);
  ms_fault_inject(MS_FAULT_MMAP, 0, 0);
  assert_null(f.addr);
  msi_os_reservation_t bad = {.want = mib, .align = 3 * mib};
  assert_int_equal(msi_os_reserve(&bad), EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(heap_blocks),
      cmocka_unit_test(heap_mapped_dense), cmocka_unit_test(spill_chunks),
      cmocka_unit_test(reserve_drop_unit), cmocka_unit_test(reserve_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
