/* The mappings of the dense large slots (64 KiB-1 MiB): the first MiB of each slot size's sub-region is mapped
   without MADV_NOHUGEPAGE (one system call for a program's first blocks of a size, not two), the rest with it,
   and no mapping without the advice can hold a 2 MiB huge page (no 2 MiB-aligned 2 MiB range lies inside it).
   The first test runs first in a fresh process: its slot is the first of its size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "ms_test.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "heap.h"
#include "os.h"

#define HUGE_2M ((uintptr_t)2 << 20)

/* the first block of a dense size (after the heap's start-up): the slot table's mapping and the slot's, no
   madvise */
static void first_dense_block_one_call(void **state) {
  (void)state;
  void *warm = ms_malloc(100); /* the heap's start-up: reservation, first segment */
  assert_non_null(warm);
  void *other = ms_malloc(300000); /* another dense size: the process's one read of RLIMIT_DATA (large.c charged()) */
  assert_non_null(other);
  uint64_t before = atomic_load(&msi_os_counters.calls);
  char *p = ms_malloc(40000);
  assert_non_null(p);
  uint64_t calls = atomic_load(&msi_os_counters.calls) - before;
  memset(p, 1, 40000);
  if (!msi_heap_in_large(p) || msi_heap_g.sub_shift < 21) { /* a reservation cut down (RLIMIT_AS, a sanitizer) */
    ms_free(p);
    ms_free(other);
    ms_free(warm);
    ms_skip_refused(0, "no slot area of 2 MiB sub-regions (a small reservation): every dense mapping is advised");
  }
  print_message("system calls of the first 40000-byte block: %llu\n", (unsigned long long)calls);
  assert_true(calls <= 2);
  assert_int_equal(ms_test_vm_flag(p, "nh"), 0);
  ms_free(p);
  ms_free(other);
  ms_free(warm);
}

/* blocks past the first MiB of their size's sub-region: advised; every mapping of the slot area without the advice
   holds no 2 MiB-aligned 2 MiB range */
static void no_huge_page_without_advice(void **state) {
  (void)state;
  enum { N64 = 80, N1M = 4 };
  char *a[N64], *b[N1M];
  for (int i = 0; i < N64; i++) { assert_non_null(a[i] = ms_malloc(40000)); memset(a[i], 1, 40000); }
  for (int i = 0; i < N1M; i++) { assert_non_null(b[i] = ms_malloc(600000)); memset(b[i], 2, 600000); }
  if (!msi_heap_in_large(a[0])) {
    for (int i = 0; i < N64; i++) ms_free(a[i]);
    for (int i = 0; i < N1M; i++) ms_free(b[i]);
    ms_skip_refused(0, "no slot area (a small RLIMIT_AS): blocks are mapped on their own");
  }
  if (msi_heap_in_large(a[N64 - 1])) assert_int_equal(ms_test_vm_flag(a[N64 - 1], "nh"), 1); /* 5 MiB in */
  if (msi_heap_in_large(b[N1M - 1])) assert_int_equal(ms_test_vm_flag(b[N1M - 1], "nh"), 1);
  FILE *f = fopen("/proc/self/smaps", "r");
  assert_non_null(f);
  char line[512];
  unsigned long lo = 0, hi = 0;
  bool in = false;
  int plain = 0, advised = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long l, h;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s ", &l, &h, perms) == 3 && strchr(line, '-') < strchr(line, ' ')) {
      lo = l, hi = h;
      in = lo >= msi_heap_g.large_base && hi <= msi_heap_g.large_base + msi_heap_g.large_size && perms[1] == 'w';
    } else if (in && !strncmp(line, "VmFlags:", 8)) {
      bool nh = strstr(line, " nh") != NULL;
      advised += nh;
      plain += !nh;
      if (!nh) {
        uintptr_t first = ((uintptr_t)lo + HUGE_2M - 1) & ~(HUGE_2M - 1);
        if (first + HUGE_2M <= hi) fail_msg("the mapping %lx-%lx has no MADV_NOHUGEPAGE and holds 2 MiB at %lx", lo, hi,
                                            (unsigned long)first);
      }
      in = false;
    }
  }
  fclose(f);
  print_message("writable mappings in the slot area: %d without the advice, %d with it\n", plain, advised);
  for (int i = 0; i < N64; i++) ms_free(a[i]);
  for (int i = 0; i < N1M; i++) ms_free(b[i]);
}

int main(void) {
  const struct CMUnitTest all[] = {
      cmocka_unit_test(first_dense_block_one_call), /* first: no large block exists yet */
      cmocka_unit_test(no_huge_page_without_advice),
  };
  return cmocka_run_group_tests(all, NULL, NULL);
}
