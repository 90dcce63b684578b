/* Large heap blocks (slots of 2 MiB and more) and transparent huge pages: the heap gives them no huge-page advice
   of its own (only the dense slots of 64 KiB-1 MiB are advised MADV_NOHUGEPAGE, see large.c dense_map), so a
   program that advises its block MADV_HUGEPAGE (numpy does for every array of 4 MiB or more) gets huge pages as
   with glibc's mmap'd blocks: the block's mapping carries the program's advice and is THP-eligible, also after a
   realloc moved it to a larger slot and when a freed slot is reused. Under MEMSPACE_SPILL_THRESHOLD=auto such
   blocks stay in the heap while the data fits (docs/spill.md, auto), so this is what auto's fill meets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "heap.h"

#define MIB ((size_t)1 << 20)

/* the THP mode of this machine ("always", "madvise", "never"; "" when the kernel has no THP) */
static const char *thp_mode(char *buf, size_t size) {
  buf[0] = 0;
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return buf;
  char line[128];
  if (fgets(line, sizeof line, f)) {
    char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
    if (a && b && (size_t)(b - a) < size) {
      memcpy(buf, a + 1, (size_t)(b - a - 1));
      buf[b - a - 1] = 0;
    }
  }
  fclose(f);
  return buf;
}

/* smaps' field `key` (e.g. "THPeligible:", "AnonHugePages:") of the mapping holding p; -1 when absent */
static long smaps_field(const void *p, const char *key) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  int in = 0;
  long v = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      if (in) break;
      in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    } else if (in && !strncmp(line, key, strlen(key))) {
      v = strtol(line + strlen(key), NULL, 10);
    }
  }
  fclose(f);
  return v;
}

/* advises [p, p + n) MADV_HUGEPAGE from the first page boundary after p, as numpy does, and writes every page */
static void advise_and_fill(char *p, size_t n) {
  size_t ps = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = ((uintptr_t)p + ps) & ~(uintptr_t)(ps - 1);
  assert_int_equal(madvise((void *)a, (uintptr_t)p + n - a, MADV_HUGEPAGE), 0);
  memset(p, 1, n);
}

/* the mapping at q (inside a block the program advised) is THP-eligible and carries no MADV_NOHUGEPAGE */
static void assert_eligible(const char *q, const char *what) {
  int nh = ms_test_vm_flag(q, "nh"), hg = ms_test_vm_flag(q, "hg");
  long eligible = smaps_field(q, "THPeligible:");
  print_message("%s: VmFlags hg %d nh %d, THPeligible %ld, AnonHugePages %ld kB\n", what, hg, nh, eligible,
                smaps_field(q, "AnonHugePages:"));
  assert_int_equal(nh, 0);
  assert_int_equal(hg, 1);
  if (eligible >= 0) assert_int_equal(eligible, 1); /* (kernels before 5.x print no THPeligible) */
}

static void skip_without_thp(void) {
  char mode[32];
  if (!thp_mode(mode, sizeof mode)[0]) ms_skip_refused(0, "this kernel has no transparent huge pages (no /sys/kernel/mm/transparent_hugepage/enabled)");
  if (!strcmp(mode, "never")) ms_skip_refused(0, "transparent huge pages are off on this machine (enabled: never)");
}

/* an 8 MiB and a 64 MiB block advised by the program: eligible, and with THP on they get huge pages */
static void advised_block_is_eligible(void **state) {
  (void)state;
  skip_without_thp();
  size_t sizes[] = {8 * MIB, 64 * MIB + 100};
  for (unsigned i = 0; i < 2; i++) {
    char *p = ms_malloc(sizes[i]);
    assert_non_null(p);
    if (!msi_heap_in_large(p)) { /* a reservation cut down (RLIMIT_AS, a sanitizer): a mapping of its own */
      ms_free(p);
      ms_skip_refused(0, "no slot area (a small reservation): large blocks are mapped on their own");
    }
    advise_and_fill(p, sizes[i]);
    assert_eligible(p + sizes[i] / 2, sizes[i] > 8 * MIB ? "64 MiB block" : "8 MiB block");
    ms_free(p);
  }
}

/* a realloc that moves the block to a larger slot (mremap) keeps the program's advice; a freed slot taken again by
   a new block of the same size class gets no advice of the heap's either */
static void advice_kept_by_realloc_and_reuse(void **state) {
  (void)state;
  skip_without_thp();
  char *p = ms_malloc(6 * MIB);
  assert_non_null(p);
  if (!msi_heap_in_large(p)) {
    ms_free(p);
    ms_skip_refused(0, "no slot area (a small reservation): large blocks are mapped on their own");
  }
  advise_and_fill(p, 6 * MIB);
  char *q = ms_realloc(p, 40 * MIB); /* 8 MiB slot -> 64 MiB slot */
  assert_non_null(q);
  assert_int_equal(q[6 * MIB - 1], 1);
  assert_eligible(q + 4 * MIB, "moved by realloc");
  ms_free(q);
  char *r = ms_malloc(40 * MIB); /* the freed 64 MiB slot (cached) or a fresh one */
  assert_non_null(r);
  advise_and_fill(r, 40 * MIB);
  assert_eligible(r + 20 * MIB, "reused slot");
  ms_free(r);
}

int main(void) {
  const struct CMUnitTest all[] = {
      cmocka_unit_test(advised_block_is_eligible),
      cmocka_unit_test(advice_kept_by_realloc_and_reuse),
  };
  return cmocka_run_group_tests(all, NULL, NULL);
}
