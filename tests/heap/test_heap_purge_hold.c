/* SPDX-License-Identifier: MIT */
/* test_heap_purge_hold.c: how long a thread's cached spans wait for the purge (span_cache.c msi_heap_cache_hold). A busy
   thread that ran out of a span length soon after the purge took spans of it (it faults those pages in again)
   holds its cached spans twice as long at the next pass, up to 8 times the purge delay; an idle one gives them
   back after the delay; memory pressure takes them at once. The global cache does the same.
   The purge passes are the test's own (msi_heap_purge) on a clock days ahead of the real one, with a purge delay
   of a day: the process has one thread, so no maintenance thread runs, and its slow paths purge only once the
   delay has passed since the last pass, never here. No sleep, no timing: the spans' ages are the test's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <string.h>
#include "heap.h"

enum { DAY = 86400000, SIZE = 3000, SPANS = 8, MAX_BLOCKS = 16384 };
static void *blocks[MAX_BLOCKS];
static unsigned len;       /* chunks of the class's spans: the thread cache's list the test watches */
static msi_heap_t *heap;   /* the thread's */
static uint32_t start;     /* the real clock when the spans were cached: their ages are the passes' times less it */
static long long delay_before;

/* fills `spans` + 1 spans of the class and frees every block: `spans` or more empty spans go to the thread's cache,
   past its room to the global cache (the last one stays the class's current span) */
static void fill_spans(int spans) {
  int n = 0, seen = 1;
  for (; seen <= spans + 1; n++) {
    assert_true(n < MAX_BLOCKS);
    assert_non_null(blocks[n] = ms_malloc(SIZE));
    memset(blocks[n], 1, SIZE);
    if (n && msi_heap_span_of(blocks[n]) != msi_heap_span_of(blocks[n - 1])) seen++;
  }
  for (int i = 0; i < n; i++) ms_free(blocks[i]);
}
static void fill_and_free(void) {
  fill_spans(SPANS);
  assert_true(heap->cache[len].count >= SPANS);
}

static size_t cached(void) { return heap->cache[len].count; }
/* a pass of the purge `ms` after the spans were cached */
static void pass_at(uint32_t ms, bool force) { msi_heap_purge(start + ms, force); }

static int setup(void **state) {
  (void)state;
  if (msi_maint_running()) fail_msg("the maintenance thread runs: its passes would mix with the test's");
  delay_before = ms_option_get(MS_OPTION_PURGE_DELAY);
  if (ms_option_set(MS_OPTION_PURGE_DELAY, DAY) != 0) return 1;
  ms_free(ms_malloc(SIZE)); /* the heap and the class tables */
  heap = msi_tls_heap;
  len = msi_heap_class_chunks[msi_heap_class_of(SIZE)];
  return 0;
}
static int teardown(void **state) {
  (void)state;
  /* (passes on the test's clock stay the last: the real one is days behind) */
  return ms_option_set(MS_OPTION_PURGE_DELAY, delay_before);
}

/* Each case starts from an empty cache (a forced pass) and the hold's state of a heap that has been idle (set
   here: the last case's passes ran days ahead on the test's clock, this one's start from the real clock again).
   Then SPANS or more spans are cached: `start`, their age 0 on the case's clock. */
static void fresh(void) {
  msi_heap_purge(msi_heap_now_ms(), true);
  assert_int_equal(cached(), 0);
  msi_lock(&heap->cache_lock);
  heap->hold.shift = 0;
  heap->hold.ops_seen = heap->hold.ops;
  heap->hold.busy_ms = heap->hold.purged_ms = msi_heap_now_ms() - 2 * (uint32_t)DAY;
  atomic_store(&heap->hold.purged, 0);
  atomic_store(&heap->hold.refilled, 0);
  msi_unlock(&heap->cache_lock);
  start = msi_heap_now_ms();
  fill_and_free();
}

/* a busy thread whose cache ran out of the spans the purge had just taken keeps its spans for twice the delay; once
   idle for the delay it gives them back */
static void refill_doubles_the_hold(void **state) {
  (void)state;
  fresh();
  uint32_t t = DAY + 1000; /* past the delay */
  pass_at(t, false);
  size_t after_first = cached();
  uint8_t shift_first = heap->hold.shift;
  fill_and_free(); /* takes SPANS + 1 spans again: the cache ran out of them (a refill) */
  size_t before = cached();
  pass_at(t + 1000, false); /* spans a delay and 2 s old */
  size_t held = cached();
  uint8_t shift_held = heap->hold.shift;
  pass_at(t + DAY + 2000, false); /* nothing moved since the last pass, a delay ago: idle */
  size_t idle = cached();
  uint8_t shift_idle = heap->hold.shift;
  assert_int_equal(after_first, 0); /* a first pass: the delay */
  assert_int_equal(shift_first, 0);
  assert_int_equal(held, before);
  assert_int_equal(shift_held, 1);
  assert_int_equal(idle, 0);
  assert_int_equal(shift_idle, 0);
}

/* the hold doubles at each refill up to 8 times the delay: a busy thread's spans older than that still go */
static void hold_is_bounded(void **state) {
  (void)state;
  fresh();
  uint8_t shifts[5];
  size_t left[5];
  for (int i = 0; i < 5; i++) { /* spans 1, 2, 4, 8 and 16 delays old: each pass takes them, each fill refills */
    pass_at(((uint32_t)DAY << i) + 1000, false);
    shifts[i] = heap->hold.shift;
    left[i] = cached();
    fill_and_free();
  }
  for (int i = 0; i < 5; i++) {
    assert_int_equal(left[i], 0);
    assert_int_equal(shifts[i], i < 3 ? i : 3);
  }
}

/* a refill long after the purge (past the longest hold) is no sign of a purge too early: the hold stays the delay */
static void late_refill_keeps_the_delay(void **state) {
  (void)state;
  fresh();
  uint32_t t = DAY + 1000;
  pass_at(t, false);
  size_t first = cached();
  pass_at(t + 8 * (uint32_t)DAY + 1000, false); /* idle, and the purge's mark is older than the longest hold */
  fill_and_free();
  pass_at(t + 9 * (uint32_t)DAY + 2000, false); /* busy: spans a delay and 1 s old */
  size_t left = cached();
  uint8_t shift = heap->hold.shift;
  assert_int_equal(first, 0);
  assert_int_equal(left, 0);
  assert_int_equal(shift, 0);
}

/* memory pressure (a forced pass) takes the spans a busy thread holds, whatever the hold */
static void pressure_takes_held_spans(void **state) {
  (void)state;
  fresh();
  uint32_t t = DAY + 1000;
  pass_at(t, false);
  fill_and_free(); /* a refill */
  pass_at(t + 1000, false);
  size_t held = cached();
  uint8_t shift = heap->hold.shift;
  pass_at(t + 2000, true);
  size_t forced = cached();
  assert_true(held >= SPANS);
  assert_int_equal(shift, 1);
  assert_int_equal(forced, 0);
}

/* bytes of spans in the global cache: the idle spans (cached, or free chunks still resident) less the thread's cache */
static uint64_t global_bytes(void) {
  static ms_stats_t st;
  uint64_t idle, mine = 0;
  msi_heap_class_stats(&st, &idle);
  for (unsigned k = 1; k <= MSI_HEAP_MAX_SPAN_CHUNKS; k++) mine += (uint64_t)heap->cache[k].count * k * MSI_HEAP_CHUNK;
  return idle - mine;
}

/* the global cache (spans past the thread's room) holds its spans the same way */
static void global_refill_doubles_the_hold(void **state) {
  (void)state;
  size_t room = msi_heap_limits.thread_bucket / ((size_t)len * MSI_HEAP_CHUNK);
  if (room > 1024) ms_skip_refused(0, "a preset whose thread cache has room for %zu spans", room);
  int spans = (int)room + SPANS;
  fresh();
  fill_spans(spans);
  uint64_t first = global_bytes();
  uint32_t t = DAY + 1000;
  pass_at(t, false);
  uint64_t cut = global_bytes();
  fill_spans(spans); /* the global cache ran out of them too */
  uint64_t before = global_bytes();
  pass_at(t + 1000, false);
  uint64_t held = global_bytes();
  pass_at(t + DAY + 2000, false); /* idle */
  uint64_t idle = global_bytes();
  assert_true(first >= SPANS * (uint64_t)len * MSI_HEAP_CHUNK);
  assert_int_equal(cut, 0);
  assert_true(before >= SPANS * (uint64_t)len * MSI_HEAP_CHUNK);
  assert_int_equal(held, before);
  assert_int_equal(idle, 0);
}

/* the caches' stamps (msi_heap_now_ms, the coarse clock) are never ahead of a pass's clock read after them
   (msi_now_ns): a span's age is never negative, whatever the ticks between */
static void stamps_never_ahead_of_passes(void **state) {
  (void)state;
  for (int i = 0; i < 100000; i++) {
    uint32_t stamp = msi_heap_now_ms();
    uint32_t pass = (uint32_t)(msi_now_ns() / 1000000u);
    if ((int32_t)(pass - stamp) < 0) fail_msg("stamp %u ms ahead of the pass's %u ms", stamp, pass);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(stamps_never_ahead_of_passes),
                                     cmocka_unit_test(refill_doubles_the_hold), cmocka_unit_test(hold_is_bounded),
                                     cmocka_unit_test(late_refill_keeps_the_delay),
                                     cmocka_unit_test(pressure_takes_held_spans),
                                     cmocka_unit_test(global_refill_doubles_the_hold)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
