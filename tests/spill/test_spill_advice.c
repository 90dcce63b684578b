/* SPDX-License-Identifier: MIT */
/* Fault advice beyond memory (src/spill/writeback.c behind_sweep, docs/spill.md *Read-around*): a program's
   own MADV_HUGEPAGE on its spilled block (numpy gives it every array of 4 MiB or more, right after the malloc)
   stands where the program has not touched the block, whatever the maintenance task's ticks, so its fill faults
   the same folios in every run; the write-back passes advise what the program touched MADV_NOHUGEPAGE and evict
   it once written back, so a 4 KiB write after the fill dirties (and writes back) about 4 KiB, not a 2 MiB
   folio. "Beyond memory" is made here by lowering the budget the library found (every machine's anonymous memory
   is then past its 3/4 mark). */
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
#include <sys/resource.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)
#define BLOCK (8 * MiB)
#define UNITS 32 /* the amplification block: 2 MiB units */

static bool flag(const void *p, const char *f) {
  int r = ms_test_vm_flag(p, f);
  assert_true(r >= 0);
  return r;
}

/* one run of spill's maintenance task in this thread, as if at now + ahead_ms (CTest runs this test with
   MEMSPACE_PURGE_DELAY=-1: no maintenance thread, so these are the only ticks) */
static void tick(unsigned ahead_ms) { msi_sp_maint.run(msi_now_ns() + (uint64_t)ahead_ms * 1000000u); }

static uint64_t limit_found;

/* spill set up, then beyond memory from the next allocation on; skips where spill or THP is unavailable */
static unsigned char *beyond_memory(void) {
  unsigned char *warm = msi_spill_malloc(BLOCK, 0, false); /* spill and its budget set up */
  if (!warm) ms_skip_refused(errno, "spill is unusable here (no usable spill directory)");
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0)
    ms_skip_refused(0, "this kernel has no transparent huge pages: no huge-page advice to keep or undo");
  limit_found = bud.cg.limit;
  bud.cg.limit = 16 * MiB;
  return warm;
}

/* a spilled block of len bytes the program advised MADV_HUGEPAGE, as numpy does right after the malloc */
static unsigned char *hg_block(size_t len) {
  unsigned char *b = msi_spill_malloc(len, 0, false);
  assert_non_null(b);
  assert_int_equal(madvise(b, len, MADV_HUGEPAGE), 0);
  return b;
}

static void test_advice_after_madvise(void **state) {
  (void)state;
  unsigned char *warm = beyond_memory();
  unsigned char *b = msi_spill_malloc(BLOCK, 0, false);
  assert_non_null(b);
  assert_true(sp.random_adv);
  assert_true(flag(b, "nh") && flag(b, "rr"));
  tick(0); /* ticks between the malloc and the program's madvise (the allocation woke the maintenance thread) */
  tick(1);
  assert_int_equal(madvise(b, BLOCK, MADV_HUGEPAGE), 0); /* as numpy, right after the malloc */
  assert_true(flag(b, "hg"));
  for (unsigned i = 1; i <= 20; i++) tick(i * 50); /* full passes over the untouched block */
  assert_true(flag(b, "hg") && flag(b + BLOCK - 4096, "hg"));
  memset(b, 7, BLOCK / 2); /* the fill's first half */
  for (unsigned i = 21; i <= 21 + SP_FRONT_SWEEPS; i++) tick(i * 50);
  /* the fill's front unit too, swept once it has stayed the front SP_FRONT_SWEEPS sweeps (the fill stopped there) */
  assert_true(flag(b, "nh") && flag(b + BLOCK / 2 - 4096, "nh"));
  /* the units after it keep the program's advice */
  assert_true(flag(b + BLOCK / 2, "hg") && flag(b + BLOCK - 4096, "hg"));
  assert_true(flag(b, "rr"));
  memset(b, 7, BLOCK);
  for (size_t i = 0; i < BLOCK; i += 4096) assert_int_equal(b[i], 7);
  msi_spill_free(b);
  /* the slot's next block starts from spill's advice, not from the last block's (half hg, half nh) */
  unsigned char *again = msi_spill_malloc(BLOCK, 0, true);
  assert_ptr_equal(again, b);
  assert_true(flag(again, "nh") && flag(again + BLOCK - 4096, "nh") && flag(again + BLOCK - 4096, "rr"));
  for (size_t u = 0; u < BLOCK / SP_UNIT; u++) assert_int_equal(again[u * SP_UNIT], 0);
  msi_spill_free(again);
  msi_spill_free(warm);
  bud.cg.limit = limit_found;
}

/* the counter `key` ("read_bytes", "write_bytes") of /proc/self/io; 0 when unreadable */
static unsigned long long io_count(const char *key) {
  FILE *f = fopen("/proc/self/io", "r");
  if (!f) return 0;
  char line[128];
  unsigned long long v = 0;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, kl) == 0 && line[kl] == ':' && sscanf(line + kl + 1, "%llu", &v) == 1) break;
  fclose(f);
  return v;
}
static unsigned long long write_bytes(void) { return io_count("write_bytes"); }
static unsigned long long read_bytes(void) { return io_count("read_bytes"); }

/* A block filled under the program's MADV_HUGEPAGE (2 MiB folios), written back by the passes, then one 4 KiB write
   into each of its 2 MiB units: the bytes the process dirties for those writes (write_bytes, counted when a folio
   is dirtied, in whole folios) stay near 4 KiB a write. With the fill's 2 MiB folios still in the page cache each
   write dirties 2 MiB (512 times as much). */
static void test_random_write_amplification(void **state) {
  (void)state;
  unsigned char *warm = beyond_memory();
  size_t len = UNITS * SP_UNIT;
  unsigned char *b = hg_block(len);
  memset(b, 1, len); /* the fill, before any tick */
  size_t pmd = ms_test_smaps_kb(b, "FilePmdMapped");
  if (access("/proc/self/io", R_OK) != 0 || write_bytes() == 0)
    ms_skip_refused(errno, "this kernel keeps no per-process I/O accounting (/proc/self/io write_bytes)");
  if (pmd == 0)
    ms_skip_refused(0, "the spill file's filesystem gives this kernel's page cache no 2 MiB folios (FilePmdMapped 0 "
                       "after a MADV_HUGEPAGE fill): no folio to amplify a write");
  for (unsigned i = 1; i <= SP_FRONT_SWEEPS + 2; i++) tick(i * 50); /* passes: written back and evicted (the last
                                                                      unit too, a front for SP_FRONT_SWEEPS sweeps) */
  unsigned long long w0 = write_bytes();
  for (size_t u = 0; u < UNITS; u++) b[u * SP_UNIT + ((u * 97 + 13) % 512) * 4096 + 8] = 2;
  unsigned long long w1 = write_bytes();
  print_message("write_bytes for %d 4 KiB writes: %llu (FilePmdMapped after the fill: %zu kB)\n", UNITS, w1 - w0, pmd);
  assert_true(w1 - w0 <= (unsigned long long)UNITS * 64 * 1024); /* generous: 16 pages a write; 2 MiB folios: 512 */
  for (size_t u = 0; u < UNITS; u++) assert_int_equal(b[u * SP_UNIT + ((u * 97 + 13) % 512) * 4096 + 8], 2);
  assert_int_equal(b[len - 1], 1);
  msi_spill_free(b);
  msi_spill_free(warm);
  bud.cg.limit = limit_found;
}

/* the mappings (VMAs, /proc/self/maps) that overlap [p, p + len) */
static unsigned vma_count(const void *p, size_t len) {
  FILE *f = fopen("/proc/self/maps", "r");
  assert_non_null(f);
  char line[512];
  unsigned n = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && lo < (uintptr_t)p + len && hi > (uintptr_t)p) n++;
  }
  fclose(f);
  return n;
}

/* A block advised MADV_HUGEPAGE and touched sparsely (two units in every four), then swept: the swept units'
   advice is one range from the block's start, so the block stays at most three mappings (one per swept unit
   would split it into 16 or more); its units after the last swept one keep the program's advice. */
static void test_sparse_block_mappings(void **state) {
  (void)state;
  unsigned char *warm = beyond_memory();
  size_t len = UNITS * SP_UNIT;
  unsigned char *b = hg_block(len);
  for (size_t u = 0; u < UNITS; u += 4) memset(b + u * SP_UNIT, 3, 2 * SP_UNIT);
  for (unsigned i = 1; i <= 10; i++) tick(i * 50);
  unsigned n = vma_count(b, len);
  print_message("mappings of a 64 MiB block touched in 16 pairs of units, after the sweeps: %u\n", n);
  assert_true(n <= 3);
  assert_true(flag(b, "nh") && flag(b + (UNITS - 4) * SP_UNIT, "nh")); /* swept */
  assert_true(flag(b + (UNITS - 2) * SP_UNIT, "hg") && flag(b + len - 4096, "hg")); /* after the last swept unit */
  for (size_t u = 0; u < UNITS; u++) assert_int_equal(b[u * SP_UNIT + 4096], u % 4 < 2 ? 3 : 0);
  msi_spill_free(b);
  msi_spill_free(warm);
  bud.cg.limit = limit_found;
}

/* The allocating thread's write-back pass (msi_sp_sync_pace) only starts write-back: it sweeps no unit (no wait
   for the disk in the program's malloc); the maintenance task's next pass does. */
static void test_pace_does_not_sweep(void **state) {
  (void)state;
  unsigned char *warm = beyond_memory();
  size_t len = UNITS * SP_UNIT;
  unsigned char *b = hg_block(len);
  memset(b, 4, len);
  sp_class_t *k = &sp.cls[__builtin_ctzll(len)];
  size_t u0 = (size_t)((uintptr_t)b - k->start) / SP_UNIT, swept = 0;
  atomic_store(&sp.last_sync_ns, 0); /* a pass is due */
  msi_sp_sync_pace();
  for (size_t u = 0; u < UNITS; u++) swept += atomic_load(&k->behind[u0 + u]) != 0;
  assert_int_equal(swept, 0);
  for (unsigned i = 1; i <= SP_FRONT_SWEEPS + 2; i++) tick(i * 50);
  for (size_t u = 0; u < UNITS; u++) swept += atomic_load(&k->behind[u0 + u]) == 2;
  assert_int_equal(swept, UNITS); /* the maintenance task's sweeps: every unit, the last one included */
  assert_int_equal(b[len - 1], 4);
  msi_spill_free(b);
  msi_spill_free(warm);
  bud.cg.limit = limit_found;
}

/* the pages of [p, p + len) in the page cache (mincore: a file mapping's pages are counted whether mapped or not) */
static size_t cached_pages(const void *p, size_t len) {
  unsigned char vec[SP_UNIT / 4096];
  assert_true(len <= sizeof vec * 4096);
  assert_int_equal(mincore((void *)p, len, vec), 0);
  size_t n = 0;
  for (size_t i = 0; i < len / 4096; i++) n += vec[i] & 1;
  return n;
}

/* A block smaller than its slot (5 MiB in an 8 MiB slot: units 0 to 2 hold it, unit 3 lies past its end), filled:
   the sweeps take every unit of it, its last one (the block's end, half written) included, and evict it; the unit
   past its end stays unjudged. Taken as a fill's front (its next unit, past the block's end, is never touched),
   the last unit would keep its write-back started every sweep and stay cached. */
static void test_last_unit_is_block_end(void **state) {
  (void)state;
  unsigned char *warm = beyond_memory();
  size_t len = 5 * MiB;
  unsigned char *b = msi_spill_malloc(len, 0, false);
  assert_non_null(b);
  sp_class_t *k = &sp.cls[ceil_log2(len)];
  assert_int_equal((size_t)1 << (k - sp.cls), 8 * MiB);
  size_t u0 = (size_t)((uintptr_t)b - k->start) / SP_UNIT;
  memset(b, 5, len);
  for (unsigned i = 1; i <= SP_FRONT_SWEEPS + 2; i++) tick(i * 50);
  for (size_t u = 0; u < 3; u++) assert_int_equal(atomic_load(&k->behind[u0 + u]), 2);
  assert_int_equal(atomic_load(&k->behind[u0 + 3]), 0);
  size_t n = cached_pages(b + 2 * SP_UNIT, SP_UNIT);
  print_message("pages of the block's last unit cached after the sweeps: %zu of 512\n", n);
  assert_true(n < 128); /* evicted (cached whole: 512) */
  assert_true(flag(b + len - 4096, "nh"));
  assert_int_equal(b[0], 5);
  assert_int_equal(b[len - 1], 5);
  msi_spill_free(b);
  msi_spill_free(warm);
  bud.cg.limit = limit_found;
}

/* the race tests' block: freed and its slot given to a new block (advised MADV_HUGEPAGE, as numpy does) by the
   sweep's hook at the point race_waiting names (false: the sweep has judged a unit of the block, not acted yet;
   true: it has advised and marked the unit and waits for its write-back); no assertion here (a failed one would
   leave the pass running) */
static unsigned char *race_old, *race_new;
static size_t race_len;
static bool race_waiting;
static void reuse_slot(sp_class_t *k, size_t off, bool waiting) {
  if (waiting != race_waiting || k->start + off < (uintptr_t)race_old || k->start + off >= (uintptr_t)race_old + race_len)
    return;
  msi_sp_sweep_hook = NULL;
  msi_spill_free(race_old);
  race_new = msi_spill_malloc(race_len, 0, false);
  if (race_new) madvise(race_new, race_len, MADV_HUGEPAGE);
}

/* The sweep judges a unit without spill's lock, and waits for its write-back without it; the program frees the
   unit's block and a new block takes its slot (advised MADV_HUGEPAGE by the program) at either moment: the new
   block keeps the program's advice and its units stay unjudged (not marked swept), and once filled they are swept
   as any block's. */
static void sweep_slot_reused(bool waiting) {
  unsigned char *warm = beyond_memory();
  race_len = 4 * SP_UNIT;
  race_old = msi_spill_malloc(race_len, 0, false);
  assert_non_null(race_old);
  memset(race_old, 6, race_len);
  sp_class_t *k = &sp.cls[ceil_log2(race_len)];
  size_t u0 = (size_t)((uintptr_t)race_old - k->start) / SP_UNIT;
  race_new = NULL;
  race_waiting = waiting;
  msi_sp_sweep_hook = reuse_slot;
  tick(50);
  msi_sp_sweep_hook = NULL;
  assert_ptr_equal(race_new, race_old); /* the freed slot, reused */
  unsigned char *b = race_new;
  for (size_t u = 0; u < 4; u++) {
    assert_true(flag(b + u * SP_UNIT, "hg") && flag(b + u * SP_UNIT + SP_UNIT - 4096, "hg"));
    assert_int_equal(atomic_load(&k->behind[u0 + u]), 0);
  }
  assert_int_equal(b[0], 0);
  memset(b, 7, race_len);
  for (unsigned i = 2; i <= SP_FRONT_SWEEPS + 3; i++) tick(i * 50);
  for (size_t u = 0; u < 4; u++) assert_int_equal(atomic_load(&k->behind[u0 + u]), 2);
  assert_true(flag(b, "nh") && flag(b + race_len - 4096, "nh"));
  for (size_t i = 0; i < race_len; i += 4096) assert_int_equal(b[i], 7);
  msi_spill_free(b);
  msi_spill_free(warm);
  bud.cg.limit = limit_found;
}
static void test_sweep_slot_reused_judged(void **state) {
  (void)state;
  sweep_slot_reused(false);
}
static void test_sweep_slot_reused_waiting(void **state) {
  (void)state;
  sweep_slot_reused(true);
}

/* the sweeps' order of work over the block of test_evicted_before_sweep: the units whose write-back they waited for
   so far, and for each unit of the block how many there were when a sweep first judged it */
static uintptr_t order_block;
static size_t order_waits, order_seen[64];
static void order_hook(sp_class_t *k, size_t off, bool waiting) {
  size_t u = (size_t)(k->start + off - order_block) / SP_UNIT;
  if (k->start + off < order_block || u >= 64) return;
  if (waiting) order_waits++;
  else if (order_seen[u] == SIZE_MAX) order_seen[u] = order_waits;
}

/* A block the program advised MADV_HUGEPAGE, filled, then one maintenance pass: its first sweep waits for the
   write-back of 32 MiB (16 units) and advises the rest of what the fill has moved past MADV_NOHUGEPAGE (and unmaps
   it) at once, without waiting, so when reclaim evicts those units before a later sweep does, each fault there
   reads 4 KiB from the file, not a 2 MiB folio (read here after evicting units as reclaim would: unmapped,
   written back, dropped). */
static void test_evicted_before_sweep(void **state) {
  (void)state;
  unsigned char *warm = beyond_memory();
  size_t units = 64, len = units * SP_UNIT, first = 40, n = 20;
  unsigned char *b = hg_block(len);
  memset(b, 8, len);
  sp_class_t *k = &sp.cls[ceil_log2(len)];
  size_t off = (size_t)((uintptr_t)b - k->start);
  order_block = (uintptr_t)b;
  order_waits = 0;
  for (size_t u = 0; u < units; u++) order_seen[u] = SIZE_MAX;
  msi_sp_sweep_hook = order_hook;
  tick(50);
  msi_sp_sweep_hook = NULL;
  for (size_t u = 16; u < units - 1; u++) assert_int_equal(order_seen[u], 16); /* in the first sweep */
  if (read_bytes() == 0 && access("/proc/self/io", R_OK) != 0)
    ms_skip_refused(errno, "this kernel keeps no per-process I/O accounting (/proc/self/io read_bytes)");
  for (size_t u = first; u < first + n; u++) assert_true(flag(b + u * SP_UNIT, "nh"));
  assert_int_equal(madvise(b + first * SP_UNIT, n * SP_UNIT, MADV_DONTNEED), 0); /* as reclaim: unmapped, */
  int fd = atomic_load(&sp.fd);
  off_t fo = (off_t)file_off(k, off + first * SP_UNIT);
  assert_int_equal(sync_file_range(fd, fo, (off_t)(n * SP_UNIT), SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                   SYNC_FILE_RANGE_WAIT_AFTER), 0); /* written back, */
  assert_int_equal(posix_fadvise(fd, fo, (off_t)(n * SP_UNIT), POSIX_FADV_DONTNEED), 0); /* dropped */
  size_t cached = cached_pages(b + first * SP_UNIT, SP_UNIT);
  unsigned long long r0 = read_bytes();
  unsigned sum = 0;
  for (size_t u = first; u < first + n; u++) sum += b[u * SP_UNIT + 4096 * 7];
  unsigned long long r1 = read_bytes();
  print_message("bytes read for one byte in each of %zu evicted units: %llu (pages of the first still cached before: %zu)\n",
                n, r1 - r0, cached);
  assert_int_equal(sum, 8 * n);
  assert_true(r1 - r0 <= (unsigned long long)n * 64 * 1024); /* 4 KiB a unit (16 pages: generous); 2 MiB folios: 512 */
  msi_spill_free(b);
  msi_spill_free(warm);
  bud.cg.limit = limit_found;
}

/* A block the program advised MADV_HUGEPAGE and touched every other unit, swept: each touched unit (its next
   unit untouched, as a fill's front) is swept once it has stayed so SP_FRONT_SWEEPS sweeps, and evicted, so a 4 KiB write into each dirties
   about 4 KiB, not its 2 MiB folio (16 writes: 32 MiB with the folios left cached). */
static void test_sparse_block_swept(void **state) {
  (void)state;
  unsigned char *warm = beyond_memory();
  size_t len = UNITS * SP_UNIT;
  unsigned char *b = hg_block(len);
  for (size_t u = 0; u < UNITS; u += 2) memset(b + u * SP_UNIT, 3, SP_UNIT);
  if (ms_test_smaps_kb(b, "FilePmdMapped") == 0)
    ms_skip_refused(0, "the spill file's filesystem gives this kernel's page cache no 2 MiB folios: none to leave cached");
  for (unsigned i = 1; i <= SP_FRONT_SWEEPS + 2; i++) tick(i * 50);
  sp_class_t *k = &sp.cls[ceil_log2(len)];
  size_t u0 = (size_t)((uintptr_t)b - k->start) / SP_UNIT, cached = 0;
  for (size_t u = 0; u < UNITS; u++) assert_int_equal(atomic_load(&k->behind[u0 + u]), u % 2 ? 0 : 2);
  for (size_t u = 0; u < UNITS; u += 2) cached += cached_pages(b + u * SP_UNIT, SP_UNIT);
  unsigned long long w0 = write_bytes();
  for (size_t u = 0; u < UNITS; u += 2) b[u * SP_UNIT + 4096 * 9] = 4;
  unsigned long long w1 = write_bytes();
  print_message("sparse block: touched pages cached after the sweeps %zu of %d; 16 writes of 4 KiB dirtied %llu bytes\n",
                cached, UNITS / 2 * 512, w1 - w0);
  assert_true(cached < UNITS / 2 * 128);
  assert_true(w1 - w0 <= (unsigned long long)UNITS / 2 * 64 * 1024); /* 16 pages a write: generous */
  for (size_t u = 0; u < UNITS; u++) assert_int_equal(b[u * SP_UNIT + 4096 * 9], u % 2 ? 0 : 4);
  msi_spill_free(b);
  msi_spill_free(warm);
  bud.cg.limit = limit_found;
}

/* major page faults of this process so far (getrusage) */
static long major_faults(void) {
  struct rusage ru;
  assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
  return ru.ru_majflt;
}

/* A fill that stays within one unit across sweeps: a 4-unit block the program advised MADV_HUGEPAGE, filled to
   1.5 units, three sweeps, then the rest of unit 1 written. The sweeps take unit 0 (moved past) and leave unit 1,
   the fill's front, cached (its written half at least) and unswept, so the rest of the fill faults no page from
   the file (swept, its folio written back with the unwritten half and evicted: 256 major faults, 1 MiB read);
   once the fill touches unit 2, the next sweep takes unit 1. */
static void test_front_kept_while_filled(void **state) {
  (void)state;
  unsigned char *warm = beyond_memory();
  size_t len = 4 * SP_UNIT;
  unsigned char *b = hg_block(len);
  sp_class_t *k = &sp.cls[ceil_log2(len)];
  size_t u0 = (size_t)((uintptr_t)b - k->start) / SP_UNIT;
  memset(b, 9, SP_UNIT + SP_UNIT / 2);
  for (unsigned i = 1; i <= 3; i++) tick(i * 50);
  assert_int_equal(atomic_load(&k->behind[u0]), 2);
  assert_true(atomic_load(&k->behind[u0 + 1]) >= SP_BEHIND_FRONT); /* the front, its write-back started */
  size_t cached = cached_pages(b + SP_UNIT, SP_UNIT);
  assert_true(cached >= 256);
  long f0 = major_faults();
  unsigned long long r0 = read_bytes();
  memset(b + SP_UNIT + SP_UNIT / 2, 9, SP_UNIT / 2); /* the rest of unit 1 */
  long f1 = major_faults();
  unsigned long long r1 = read_bytes();
  print_message("front unit after 3 sweeps: %zu of 512 pages cached; the rest of its fill: %ld major faults, %llu bytes "
                "read\n", cached, f1 - f0, r1 - r0);
  assert_true(f1 - f0 < 16); /* swept mid-fill: 256 */
  assert_true(r1 - r0 < 64 * 1024); /* swept mid-fill: 1 MiB */
  for (unsigned i = 4; i <= 5; i++) tick(i * 50);
  assert_true(atomic_load(&k->behind[u0 + 1]) >= SP_BEHIND_FRONT); /* still the front: unit 2 untouched */
  b[2 * SP_UNIT] = 9; /* the fill moves past it */
  tick(300);
  assert_int_equal(atomic_load(&k->behind[u0 + 1]), 2);
  assert_true(flag(b + 2 * SP_UNIT - 4096, "nh") && flag(b + 3 * SP_UNIT, "hg"));
  for (size_t i = 0; i < 2 * SP_UNIT; i += 4096) assert_int_equal(b[i], 9);
  msi_spill_free(b);
  msi_spill_free(warm);
  bud.cg.limit = limit_found;
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_advice_after_madvise),
                                     cmocka_unit_test(test_random_write_amplification),
                                     cmocka_unit_test(test_sparse_block_mappings),
                                     cmocka_unit_test(test_pace_does_not_sweep),
                                     cmocka_unit_test(test_last_unit_is_block_end),
                                     cmocka_unit_test(test_sweep_slot_reused_judged),
                                     cmocka_unit_test(test_sweep_slot_reused_waiting),
                                     cmocka_unit_test(test_evicted_before_sweep),
                                     cmocka_unit_test(test_sparse_block_swept),
                                     cmocka_unit_test(test_front_kept_while_filled)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
