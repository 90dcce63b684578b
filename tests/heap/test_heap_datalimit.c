/* The large-slot table under RLIMIT_DATA (large.c table_get): refused while it would take more than a quarter of
   the room the limit leaves, its large blocks past the first of each size are mapped on their own; the limit
   raised, the table comes back (looked at again every 256th such block), and later blocks take slots again, so a
   program that raises its limit does not map every large block on its own to its end. In a child (the limit and
   the heap's state stay there). */
#include <errno.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "heap.h"
#include "ms_test.h"

#define BLOCK 200000 /* a dense slot size (256 KiB): one class, the table past its first 16 slots */
enum { FIRST = 24, LATER = 320 };

/* the process's charged data (VmData, bytes), 0 when unreadable */
static uint64_t vm_data(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  unsigned long long kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmData: %llu kB", &kb) == 1) break;
  if (f) fclose(f);
  return (uint64_t)kb << 10;
}

static int table_comes_back(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_DATA, &rl) != 0 || rl.rlim_max != RLIM_INFINITY) return 77;
  uint64_t data = vm_data();
  if (!data) return 77;
  if (data > (1ull << 30)) return 78; /* a sanitizer's shadow: the limit above it leaves the table room */
  struct rlimit low = {(rlim_t)(data + (24u << 20)), RLIM_INFINITY}; /* the table (32 MiB): over a quarter of 24 MiB */
  if (setrlimit(RLIMIT_DATA, &low) != 0) return 77;
  static char *b[LATER];
  for (int i = 0; i < FIRST; i++)
    if (!(b[i] = ms_malloc(BLOCK))) return 10;
  int slotted = 0;
  for (int i = 0; i < FIRST; i++) slotted += msi_heap_in_large(b[i]);
  for (int i = 0; i < FIRST; i++) ms_free(b[i]);
  printf("under %llu KiB: %d of %d blocks in slots\n", (unsigned long long)low.rlim_cur >> 10, slotted, FIRST);
  fflush(stdout);
  if (slotted == FIRST) return 11; /* the table was mapped: nothing to show */
  struct rlimit high = {RLIM_INFINITY, RLIM_INFINITY};
  if (setrlimit(RLIMIT_DATA, &high) != 0) return 12;
  for (int i = 0; i < LATER; i++)
    if (!(b[i] = ms_malloc(BLOCK))) return 13;
  slotted = 0;
  for (int i = 0; i < LATER; i++) slotted += msi_heap_in_large(b[i]);
  int last = msi_heap_in_large(b[LATER - 1]);
  for (int i = 0; i < LATER; i++) ms_free(b[i]);
  printf("no limit: %d of %d blocks in slots, the last %s\n", slotted, LATER, last ? "in one" : "mapped on its own");
  fflush(stdout);
  return last ? 0 : 14;
}

/* a dense-size block first (the heap's start-up, the slot area's size, the first read of RLIMIT_DATA); skips without
   a large-slot area */
static void slot_area_or_skip(void) {
  void *warm = ms_malloc(BLOCK);
  assert_non_null(warm);
  int in = msi_heap_in_large(warm);
  ms_free(warm);
  if (!in) ms_skip_refused(0, "no large-slot area (a reservation cut down: RLIMIT_AS, a sanitizer)");
}

static void large_table_after_limit_raised(void **state) {
  (void)state;
  slot_area_or_skip();
  int r = ms_test_in_child(table_comes_back);
  if (r == 77) ms_skip_refused(0, "RLIMIT_DATA cannot be lowered and raised again here (a hard limit set)");
  if (r == 78) ms_skip_refused(0, "VmData over 1 GiB before the test (a sanitizer's shadow memory): a limit above it "
                                  "leaves the large-slot table room, so nothing is refused");
  assert_int_equal(r, 0);
}

/* msi_large_release_free counts only what it reserved again: a dense size's mapping the kernel would not map
   PROT_NONE (its pages dropped instead, the range still read-write, still charged by RLIMIT_DATA) is not given
   back, so the refused allocation's pass does not take it for room */
#define DENSE_BLOCK 600000 /* the 1 MiB dense slot size */
static int refused_reserve_not_counted(void) {
  msi_large_purge(0, 0, true);
  msi_large_release_free(); /* every size already free goes back: the next call sees the blocks below alone */
  void *b[4];
  for (int i = 0; i < 4; i++)
    if (!(b[i] = ms_malloc(DENSE_BLOCK))) return 10;
  int slotted = msi_heap_in_large(b[0]);
  for (int i = 0; i < 4; i++) ms_free(b[i]);
  if (!slotted) return 77;
  msi_large_purge(0, 0, true);
  ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
  size_t refused = msi_large_release_free();
  ms_fault_inject(MS_FAULT_MMAP, 0, 0);
  size_t again = msi_large_release_free(); /* (the size's slots are still all free: reserved now) */
  printf("release with the reservation refused: %zu bytes, then %zu\n", refused, again);
  fflush(stdout);
  return refused == 0 && again >= 4 * (size_t)DENSE_BLOCK ? 0 : 1;
}
static void release_free_counts_reserved_only(void **state) {
  (void)state;
  int r = ms_test_in_child(refused_reserve_not_counted);
  if (r == 77) ms_skip_refused(0, "no large-slot area (a reservation cut down: RLIMIT_AS, a sanitizer)");
  assert_int_equal(r, 0);
}

/* The count of live blocks in split slots (large.c split_live, against a quarter of the mapping limit) counts a
   block of a dense size taken before RLIMIT_DATA was lowered as it was placed: not split. Its free after the
   switch-off (dense slots off) leaves the count as it is, so the blocks over 1 MiB that follow go on their own
   past the same number of split blocks as before. */
#define SPLIT_BLOCK (1536u << 10) /* a 2 MiB slot */
enum { SPLIT_MAX = 6, SPLIT_FIRST = 3, DENSE_LIVE = 8, SPLIT_LATER = 6 };
static int split_count_kept(void) {
  uint64_t data = vm_data();
  if (!data) return 77;
  if (data > (1ull << 29)) return 78;
  msi_large_set_map_limit(4 * SPLIT_MAX); /* split_max SPLIT_MAX */
  void *s[SPLIT_FIRST + SPLIT_LATER], *d[DENSE_LIVE];
  for (int i = 0; i < SPLIT_FIRST; i++)
    if (!(s[i] = ms_malloc(SPLIT_BLOCK)) || !msi_heap_in_large(s[i])) return 10;
  for (int i = 0; i < DENSE_LIVE; i++)
    if (!(d[i] = ms_malloc(BLOCK)) || !msi_heap_in_large(d[i])) return 11;
  struct rlimit low = {(rlim_t)(data + (256u << 20)), RLIM_INFINITY}; /* below 1 GiB: dense slots off */
  if (setrlimit(RLIMIT_DATA, &low) != 0) return 77;
  msi_large_release_free(); /* (as after a refused commit: reads the limit again and turns dense slots off) */
  for (int i = 0; i < DENSE_LIVE; i++) ms_free(d[i]);
  int slotted = 0;
  for (int i = SPLIT_FIRST; i < SPLIT_FIRST + SPLIT_LATER; i++) {
    if (!(s[i] = ms_malloc(SPLIT_BLOCK))) return 12;
    slotted += msi_heap_in_large(s[i]);
  }
  for (int i = 0; i < SPLIT_FIRST + SPLIT_LATER; i++) ms_free(s[i]);
  printf("after the switch-off: %d of %d blocks over 1 MiB in split slots (room for %d)\n", slotted, SPLIT_LATER,
         SPLIT_MAX - SPLIT_FIRST);
  fflush(stdout);
  return slotted == SPLIT_MAX - SPLIT_FIRST ? 0 : 1;
}
static void split_count_after_dense_off(void **state) {
  (void)state;
  slot_area_or_skip();
  int r = ms_test_in_child(split_count_kept);
  if (r == 77) ms_skip_refused(0, "RLIMIT_DATA cannot be lowered here, or VmData unreadable");
  if (r == 78) ms_skip_refused(0, "VmData over 512 MiB before the test (a sanitizer's shadow memory): no limit below "
                                  "1 GiB leaves room");
  assert_int_equal(r, 0);
}

/* msi_heap_release_idle (the pass after a refused commit) says true only for room given back: a cached large slot
   that a new block takes meanwhile (here in the pass's purge hook, standing for another thread) gives nothing back,
   so the pass says false (and its quiet window starts) */
#define CACHED_BLOCK (3u << 20) /* a 4 MiB slot */
static void *taken_in_pass;
static void take_cached(msi_segment_t *seg, uint64_t chunks) {
  (void)seg, (void)chunks;
  if (!taken_in_pass) taken_in_pass = ms_malloc(CACHED_BLOCK);
}
static int reuse_not_release(void) {
  void *keep = ms_malloc(64); /* (its segment stays in use: not released by the pass) */
  msi_heap_release_idle(1); /* every idle segment and free dense size back first (its quiet window, if it starts,
                               ends at the cache's growth below) */
  void *big = ms_malloc(CACHED_BLOCK);
  if (!big || !msi_heap_in_large(big)) return 77;
  memset(big, 1, 4096);
  ms_free(big); /* cached */
  if (msi_large_cached_bytes() == 0) return 10;
  static void *s[64];
  for (int i = 0; i < 64; i++) /* spans freed into the pass: dirty chunks, which call the purge hook */
    if (!(s[i] = ms_malloc(4096))) return 11;
  for (int i = 0; i < 64; i++) ms_free(s[i]);
  msi_heap_purge_hook = take_cached;
  bool released = msi_heap_release_idle(1u << 20);
  msi_heap_purge_hook = NULL;
  printf("a cached slot taken during the pass (%s): the pass says %s\n", taken_in_pass == big ? "the same" : "another",
         released ? "released" : "nothing released");
  fflush(stdout);
  if (!taken_in_pass) return 12; /* (the hook was not called: nothing shown) */
  ms_free(taken_in_pass);
  ms_free(keep);
  return released ? 1 : 0;
}
static void release_idle_not_reuse(void **state) {
  (void)state;
  int r = ms_test_in_child(reuse_not_release);
  if (r == 77) ms_skip_refused(0, "no large-slot area (a reservation cut down: RLIMIT_AS, a sanitizer)");
  assert_int_equal(r, 0);
}

/* A refused allocation whose release pass gave back nothing starts a quiet window (ten times the pass, at most
   100 ms) in which later refusals run no pass. Small blocks freed meanwhile end it: a program that filled the
   limit with them, freed them all and asks for a large block gets it, however long the pass took (a pass
   preempted on a loaded machine made the window outlast the frees). The window is set past the end of the test
   here, as such a pass leaves it. */
extern _Atomic uint64_t msi_heap_release_quiet_until; /* (purge.c, the library's hidden header) */
static int small_frees_end_quiet_window(void) {
  uint64_t data = vm_data();
  if (!data) return 77;
  if (data > (1ull << 30)) return 78;
  struct rlimit low = {(rlim_t)(data + (16u << 20)), RLIM_INFINITY};
  if (setrlimit(RLIMIT_DATA, &low) != 0) return 77;
  void *chain = NULL, **p;
  size_t n = 0;
  for (; (p = ms_malloc(16)) != NULL; n++) {
    *p = chain;
    chain = p;
  }
  atomic_store(&msi_heap_release_quiet_until, UINT64_MAX); /* the refusal's pass, as if it had lasted long */
  while (chain) {
    void *next = *(void **)chain;
    ms_free(chain);
    chain = next;
  }
  char *mid = ms_malloc(40000);
  printf("%zu blocks of 16 B freed in the quiet window; then malloc(40000) %p\n", n, (void *)mid);
  fflush(stdout);
  if (!n || !mid) return 1;
  memset(mid, 1, 40000);
  ms_free(mid);
  return 0;
}
static void small_frees_end_the_quiet_window(void **state) {
  (void)state;
  int r = ms_test_in_child(small_frees_end_quiet_window);
  if (r == 77) ms_skip_refused(0, "RLIMIT_DATA cannot be lowered here, or VmData unreadable");
  if (r == 78) ms_skip_refused(0, "VmData over 1 GiB before the test (a sanitizer's shadow memory)");
  assert_int_equal(r, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(release_free_counts_reserved_only),
      cmocka_unit_test(large_table_after_limit_raised),
      cmocka_unit_test(split_count_after_dense_off),
      cmocka_unit_test(release_idle_not_reuse),
      cmocka_unit_test(small_frees_end_the_quiet_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
