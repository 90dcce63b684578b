/* fuzz_space: random sequences of every space call on a space configured from the input (ms_space_create with
   random sizes, expand steps and flags, or ms_space_create_in on caller memory), with ms_space_check after
   every step, ms_space_walk and ms_space_info cross-checked against the blocks the fuzzer holds, injected
   page-layer faults, and every byte written verified. */
#include "fuzz_common.h"
#include "memspace.h"


static ms_space_t *sp;
static bool zeroing;
static _Alignas(4096) uint8_t caller_memory[1 << 20];

static void check(const char *when) {
  int r = ms_space_check(sp);
  if (r != 0) FAIL("ms_space_check failed (%d) after %s", r, when);
}

typedef struct { size_t used_blocks, used_bytes, free_blocks, found; const uint8_t *want; size_t want_size; } walk_t;
static int visit(const void *block, size_t size, int used, void *arg) {
  walk_t *w = arg;
  if (used) {
    w->used_blocks++;
    w->used_bytes += size;
    if ((const uint8_t *)block == w->want) { w->found++; if (size < w->want_size) w->found += 100; }
  } else {
    w->free_blocks++;
  }
  return 0;
}

static void cross_check(int i) {
  size_t live = 0, live_bytes = 0;
  for (int k = 0; k < SLOTS; k++)
    if (slots[k].p) live++, live_bytes += slots[k].size;
  walk_t w = {0, 0, 0, 0, slots[i].p, slots[i].size};
  int r = ms_space_walk(sp, visit, &w);
  if (r != 0) FAIL("ms_space_walk returned %d", r);
  if (w.used_blocks != live) FAIL("walk saw %zu used blocks, %zu are live", w.used_blocks, live);
  if (w.used_bytes < live_bytes) FAIL("walk saw %zu used bytes < %zu requested", w.used_bytes, live_bytes);
  if (slots[i].p && w.found != 1) FAIL("walk did not see block %p once with its size (%zu)", (void *)slots[i].p, w.found);
  ms_space_info_t info;
  if (ms_space_info(sp, &info) != 0) FAIL("ms_space_info failed");
  if (info.used < live_bytes) FAIL("info.used %zu < %zu live bytes", info.used, live_bytes);
  if (info.used > info.size || info.free > info.size) FAIL("info used %zu free %zu > size %zu", info.used, info.free, info.size);
  if (info.largest_free_block > info.free) FAIL("largest free block %zu > free %zu", info.largest_free_block, info.free);
  if (info.peak_used < info.used) FAIL("peak %zu < used %zu", info.peak_used, info.used);
}

/* a NULL result: ENOMEM (full) is always possible in a space; EINVAL only for size 0 */
static void null_ok(const char *call, size_t size, int err) {
  if (size == 0 && err == EINVAL) return;
  if (err != ENOMEM) FAIL("%s(%zu) returned NULL with errno %d", call, size, err);
}

static void take(int i, uint8_t *p, size_t size, uint8_t seed, size_t align, bool zero) {
  size_t bad;
  if (align && ((uintptr_t)p & (align - 1))) FAIL("block %p not aligned to %zu", (void *)p, align);
  if (((uintptr_t)p & 15) != 0) FAIL("block %p not 16-byte aligned", (void *)p);
  if (ms_space_usable_size(sp, p) < size) FAIL("usable size %zu < %zu", ms_space_usable_size(sp, p), size);
  if ((zero || zeroing) && !fz_zero(p, size, &bad)) FAIL("block of %zu bytes not zeroed at %zu", size, bad);
  slots[i].p = p;
  slots[i].size = size;
  slots[i].seed = seed;
  fz_fill(p, 0, size, seed);
}

static void drop(int i) {
  verify(i, "free");
  ms_space_free(sp, slots[i].p);
  slots[i].p = NULL;
}

static bool make_space(fz_in_t *in) {
  uint8_t a = fz_u8(in), b = fz_u8(in), c = fz_u8(in);
  unsigned flags = (b & 1 ? MS_SPACE_ZERO : 0) | (b & 2 ? MS_SPACE_THREAD_SAFE : 0);
  zeroing = flags & MS_SPACE_ZERO;
  if (a % 4 == 0) {
    size_t off = (size_t)(c % 64) * 16, len = (sizeof caller_memory - off) >> (b >> 5);
    errno = 0;
    sp = ms_space_create_in(caller_memory + off, len, flags);
    if (!sp) {
      if (errno != EINVAL && errno != ENOMEM) FAIL("ms_space_create_in(%zu) NULL with errno %d", len, errno);
      return false;
    }
    return true;
  }
  ms_space_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.initial_size = (size_t)4096 << (a % 9);               /* 4 KiB .. 1 MiB */
  cfg.expand_size = b & 4 ? (size_t)16384 << ((b >> 3) % 7) : 0;
  cfg.at = c & 1 ? MS_SPACE_AT_FIRSTALLOC : MS_SPACE_AT_START;
  cfg.flags = flags;
  cfg.numa_node = -1;
  cfg.name = "fuzz";
  errno = 0;
  sp = ms_space_create(&cfg);
  if (!sp) {
    if (errno != EINVAL && errno != ENOMEM) FAIL("ms_space_create(%zu) NULL with errno %d", cfg.initial_size, errno);
    return false;
  }
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_in_t in = {data, size};
  if (!make_space(&in)) return 0;
  check("create");
  int steps = 0;
  while (fz_more(&in) && steps++ < 300) {
    uint8_t op = fz_u8(&in);
    int i = fz_u8(&in) % SLOTS;
    uint8_t seed = (uint8_t)(op ^ (uint8_t)steps);
    const char *what = "?";
    switch (op % 14) {
    case 0: case 1: { /* malloc */
      size_t n = fz_size(&in, (size_t)1 << 20);
      if (slots[i].p) drop(i);
      errno = 0;
      uint8_t *p = ms_space_malloc(sp, n);
      what = "malloc";
      if (!p) { null_ok("ms_space_malloc", n, errno); break; }
      if (n == 0) FAIL("ms_space_malloc(0) did not fail with EINVAL");
      take(i, p, n, seed, 0, false);
      break;
    }
    case 2: { /* calloc */
      size_t count = fz_u8(&in) % 32 + 1, n = fz_size(&in, (size_t)1 << 14);
      if (slots[i].p) drop(i);
      errno = 0;
      uint8_t *p = ms_space_calloc(sp, count, n);
      what = "calloc";
      if (!p) { null_ok("ms_space_calloc", count * n, errno); break; }
      take(i, p, count * n, seed, 0, true);
      break;
    }
    case 3: case 4: { /* realloc (NULL = malloc, 0 = free) */
      size_t n = fz_size(&in, (size_t)1 << 20);
      verify(i, "realloc");
      errno = 0;
      uint8_t *p = ms_space_realloc(sp, slots[i].p, n);
      what = "realloc";
      if (n == 0 && slots[i].p) { slots[i].p = NULL; break; } /* size 0 frees */
      if (!p) { null_ok("ms_space_realloc", n, errno); verify(i, "failed realloc"); break; }
      size_t keep = slots[i].p ? (slots[i].size < n ? slots[i].size : n) : 0, bad;
      if (keep && !fz_check(p, 0, keep, slots[i].seed, &bad))
        FAIL("ms_space_realloc(%zu -> %zu) lost byte %zu", slots[i].size, n, bad);
      if (ms_space_usable_size(sp, p) < n) FAIL("usable size < %zu after realloc", n);
      if (!slots[i].p) slots[i].seed = seed;
      slots[i].p = p;
      slots[i].size = n;
      fz_fill(p, keep, n, slots[i].seed);
      break;
    }
    case 5: case 6: /* free */
      what = "free";
      if (slots[i].p) drop(i);
      else ms_space_free(sp, NULL);
      break;
    case 7: { /* aligned_alloc, with bad alignments too */
      uint8_t a = fz_u8(&in);
      size_t n = fz_size(&in, (size_t)1 << 18);
      if (slots[i].p) drop(i);
      what = "aligned_alloc";
      if (a & 0x80) {
        size_t badal = (size_t)(a & 0x7f) * 2 + 3;
        errno = 0;
        void *p = ms_space_aligned_alloc(sp, badal, n ? n : 1);
        if (p || errno != EINVAL) FAIL("ms_space_aligned_alloc(%zu) = %p errno %d, wanted EINVAL", badal, p, errno);
        break;
      }
      size_t align = (size_t)1 << (a % 17);
      errno = 0;
      uint8_t *p = ms_space_aligned_alloc(sp, align, n);
      if (!p) { null_ok("ms_space_aligned_alloc", n, errno); break; }
      take(i, p, n, seed, align, false);
      break;
    }
    case 8: /* usable size: all of it belongs to the caller */
      what = "usable_size";
      if (slots[i].p) {
        size_t u = ms_space_usable_size(sp, slots[i].p);
        if (u < slots[i].size) FAIL("usable size %zu < %zu", u, slots[i].size);
        fz_fill(slots[i].p, slots[i].size, u, slots[i].seed);
        slots[i].size = u;
      }
      break;
    case 9: { /* expand */
      size_t n = (size_t)(fz_u8(&in) % 64 + 1) * 16384;
      int r = ms_space_expand(sp, n);
      what = "expand";
      if (r != 0 && r != ENOMEM && r != EINVAL && r != EPERM) FAIL("ms_space_expand(%zu) = %d", n, r);
      break;
    }
    case 10: /* shrink */
      what = "shrink";
      ms_space_shrink(sp);
      verify_all("shrink");
      break;
    case 11: { /* overflowing and impossible requests */
      what = "impossible";
      errno = 0;
      if (ms_space_calloc(sp, SIZE_MAX / 2 + 1, 2) || errno != ENOMEM) FAIL("calloc overflow not refused");
      errno = 0;
      if (ms_space_malloc(sp, SIZE_MAX - fz_u8(&in)) || errno != ENOMEM) FAIL("ms_space_malloc(SIZE_MAX) not refused");
      errno = 0;
      if (ms_space_malloc(NULL, 16) || errno != EINVAL) FAIL("ms_space_malloc(NULL space) not EINVAL");
      if (slots[i].p) {
        errno = 0;
        if (ms_space_realloc(sp, slots[i].p, SIZE_MAX - 64) || errno != ENOMEM) FAIL("huge realloc not refused");
        verify(i, "refused realloc");
      }
      break;
    }
    case 12: { /* a page-layer fault during the next calls */
      uint8_t f = fz_u8(&in);
      ms_fault_inject((ms_fault_op_t)(f % 4), (unsigned long)(f >> 2) % 4 + 1, ENOMEM);
      what = "fault";
      break;
    }
    case 13:
      what = "verify";
      verify_all("verify");
      break;
    }
    check(what);
    if (op & 0x80) cross_check(i);
  }
  cross_check(0);
  verify_all("end of input");
  for (int f = 0; f < MS_FAULT_OP_COUNT; f++) ms_fault_inject((ms_fault_op_t)f, 0, 0);
  /* free half the blocks one by one, the rest with the space */
  for (int i = 0; i < SLOTS; i += 2)
    if (slots[i].p) drop(i);
  check("frees");
  ms_space_destroy(sp);
  sp = NULL;
  memset(slots, 0, sizeof slots);
  return 0;
}
