/* fuzz_heap: random sequences of every heap call (ms_malloc, ms_calloc, ms_realloc, ms_free, ms_aligned_alloc,
   ms_usable_size, ms_heap_collect, ms_is_ours), with injected page-layer faults, checking every byte written.
   Each live block holds a pattern derived from its seed; it is verified before every free and realloc, after
   every step for the block touched, and for all blocks at the end of an input. */
#include "fuzz_common.h"
#include "memspace.h"
#include "os.h"

#define LARGE_MAX ((size_t)4 << 20)

static bool fault_armed;
static uint64_t failures_before;

/* system calls the page layer saw fail so far (injected faults included); read from the counters directly:
   ms_stats_get reports them only when pages.c is linked in, which a static link without ms_pages_* skips */
static uint64_t os_failures(void) { return atomic_load(&msi_os_counters.failures); }

/* call before each allocating call: remembers the failure count when a fault is armed */
static void before(void) { errno = 0; if (fault_armed) failures_before = os_failures(); }

/* a NULL result is right only for an impossible size or while a fault is armed, with ENOMEM */
static void null_ok(const char *call, size_t size, int err) {
  if (err != ENOMEM) FAIL("%s(%zu) returned NULL with errno %d, not ENOMEM", call, size, err);
  if (size > LARGE_MAX * 2) return;
  if (!fault_armed) FAIL("%s(%zu) returned NULL without a fault", call, size);
  if (os_failures() == failures_before) FAIL("%s(%zu) returned NULL but no system call failed in it", call, size);
}

static void take(int i, void *p, size_t size, uint8_t seed, size_t align) {
  if (align && ((uintptr_t)p & (align - 1))) FAIL("block %p not aligned to %zu", p, align);
  if (((uintptr_t)p & 15) != 0) FAIL("block %p not 16-byte aligned", p);
  if (size && ms_usable_size(p) < size) FAIL("usable size %zu < %zu", ms_usable_size(p), size);
  if (!ms_is_ours(p)) FAIL("ms_is_ours(%p) == 0 for a live block", p);
  slots[i].p = p;
  slots[i].size = size;
  slots[i].seed = seed;
  fz_fill(p, 0, size, seed);
}

static void drop(int i) {
  verify(i, "free");
  ms_free(slots[i].p);
  slots[i].p = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_in_t in = {data, size};
  int steps = 0;
  while (fz_more(&in) && steps++ < 400) {
    uint8_t op = fz_u8(&in);
    int i = fz_u8(&in) % SLOTS;
    uint8_t seed = (uint8_t)(op ^ (uint8_t)steps);
    switch (op % 13) {
    case 0: case 1: { /* malloc */
      size_t n = fz_size(&in, LARGE_MAX);
      if (slots[i].p) drop(i);
      before();
      void *p = ms_malloc(n);
      if (!p) { if (n) null_ok("ms_malloc", n, errno); break; }
      take(i, p, n, seed, 0);
      break;
    }
    case 2: { /* calloc */
      size_t count = fz_u8(&in) % 64 + 1, n = fz_size(&in, LARGE_MAX / 64);
      if (slots[i].p) drop(i);
      before();
      uint8_t *p = ms_calloc(count, n);
      if (!p) { if (n) null_ok("ms_calloc", count * n, errno); break; }
      size_t bad;
      if (!fz_zero(p, count * n, &bad)) FAIL("ms_calloc(%zu, %zu) byte %zu not zero", count, n, bad);
      take(i, p, count * n, seed, 0);
      break;
    }
    case 3: case 4: { /* realloc, also of NULL */
      size_t n = fz_size(&in, LARGE_MAX);
      if (n == 0) n = 1; /* realloc(p, 0) differs between libcs: not part of the contract */
      verify(i, "realloc");
      before();
      uint8_t *p = ms_realloc(slots[i].p, n);
      if (!p) { null_ok("ms_realloc", n, errno); verify(i, "failed realloc"); break; }
      size_t keep = slots[i].p ? (slots[i].size < n ? slots[i].size : n) : 0, bad;
      if (keep && !fz_check(p, 0, keep, slots[i].seed, &bad))
        FAIL("ms_realloc(%zu -> %zu) lost byte %zu", slots[i].size, n, bad);
      if (ms_usable_size(p) < n) FAIL("usable size %zu < %zu after realloc", ms_usable_size(p), n);
      slots[i].p = p;
      slots[i].size = n;
      fz_fill(p, keep, n, slots[i].seed);
      break;
    }
    case 5: case 6: /* free */
      if (slots[i].p) drop(i);
      else ms_free(NULL);
      break;
    case 7: { /* aligned_alloc: powers of two up to 4 MiB, and bad alignments */
      uint8_t a = fz_u8(&in);
      size_t n = fz_size(&in, LARGE_MAX);
      if (slots[i].p) drop(i);
      if (a & 0x80) {
        size_t badal = (size_t)(a & 0x7f) * 2 + 3; /* odd, > 1: never a power of two */
        errno = 0;
        void *p = ms_aligned_alloc(badal, n ? n : 1);
        if (p || errno != EINVAL) FAIL("ms_aligned_alloc(%zu, %zu) = %p errno %d, wanted NULL EINVAL", badal, n, p, errno);
        break;
      }
      size_t align = (size_t)1 << (a % 23);
      before();
      void *p = ms_aligned_alloc(align, n);
      if (!p) { if (n) null_ok("ms_aligned_alloc", n, errno); break; }
      take(i, p, n, seed, align);
      break;
    }
    case 8: /* usable size: the whole of it is the caller's */
      if (ms_usable_size(NULL) != 0) FAIL("ms_usable_size(NULL) != 0");
      if (slots[i].p) {
        size_t u = ms_usable_size(slots[i].p);
        if (u < slots[i].size) FAIL("usable size shrank to %zu < %zu", u, slots[i].size);
        if (u <= 2 * LARGE_MAX) { fz_fill(slots[i].p, slots[i].size, u, slots[i].seed); slots[i].size = u; }
      }
      break;
    case 9: /* collect */
      ms_heap_collect(op & 0x40);
      verify_all("collect");
      break;
    case 10: { /* impossible sizes: NULL + ENOMEM, never a crash */
      size_t huge = SIZE_MAX - (fz_u8(&in) * (size_t)4096);
      errno = 0;
      if (ms_malloc(huge) || errno != ENOMEM) FAIL("ms_malloc(%zu) did not fail with ENOMEM", huge);
      errno = 0;
      if (ms_calloc(SIZE_MAX / 2 + 1 + fz_u8(&in), 2) || errno != ENOMEM) FAIL("ms_calloc overflow not refused");
      errno = 0;
      if (ms_aligned_alloc(64, huge) || errno != ENOMEM) FAIL("ms_aligned_alloc(64, %zu) did not fail", huge);
      if (slots[i].p) {
        errno = 0;
        if (ms_realloc(slots[i].p, huge) || errno != ENOMEM) FAIL("ms_realloc(p, %zu) did not fail", huge);
        verify(i, "refused realloc");
      }
      break;
    }
    case 11: { /* arm a page-layer fault: the next calls may fail with ENOMEM, nothing may break */
      uint8_t f = fz_u8(&in);
      ms_fault_inject((ms_fault_op_t)(f % 3), (unsigned long)(f >> 2) % 8 + 1, ENOMEM);
      fault_armed = true;
      break;
    }
    case 12: /* verify everything, and is_ours on a foreign pointer */
      verify_all("verify");
      if (ms_is_ours(&in)) FAIL("ms_is_ours(stack address) != 0");
      break;
    }
  }
  verify_all("end of input");
  for (int i = 0; i < SLOTS; i++)
    if (slots[i].p) drop(i);
  for (int f = 0; f < MS_FAULT_OP_COUNT; f++) ms_fault_inject((ms_fault_op_t)f, 0, 0);
  fault_armed = false;
  return 0;
}
