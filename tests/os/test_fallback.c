/* SPDX-License-Identifier: MIT */
/* test_fallback: the one 1 GiB -> 2 MiB -> base page fallback (msi_pages_fallback) of the page layer and DMA
   buffers is never silent: each step is counted in os_huge_fallbacks and printed under MEMSPACE_VERBOSE. The
   first huge page mapping is refused by fault injection, so the test does not depend on the machine's pools. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "ms_test.h"

static uint64_t fallbacks(void) {
  ms_stats_t st;
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  return st.os_huge_fallbacks;
}

/* runs fn with stderr going to a file and MEMSPACE_VERBOSE on; the messages into buf */
static void capture(void (*fn)(void *), void *arg, char *buf, size_t cap) {
  char path[] = "/tmp/ms_fallback_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  ms_option_set(MS_OPTION_VERBOSE, 1);
  fn(arg);
  ms_option_set(MS_OPTION_VERBOSE, 0);
  dup2(saved, 2);
  close(saved);
  ssize_t n = pread(fd, buf, cap - 1, 0);
  buf[n > 0 ? n : 0] = 0;
  close(fd);
}

static void dma_1g(void *arg) {
  ms_dma_config_t c = {MSI_GiB, -1, 0, {0, 0, 0, 0}};
  ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM); /* the first huge page mapping tried is refused */
  *(ms_dma_buffer_t **)arg = ms_dma_alloc(4 << 20, &c);
  ms_fault_inject(MS_FAULT_MMAP, 0, 0);
}

static void dma_buffer(void **state) {
  (void)state;
  uint64_t before = fallbacks();
  ms_dma_buffer_t *b = NULL;
  char out[8192];
  capture(dma_1g, &b, out, sizeof out);
  if (!b) ms_skip_refused(errno, "no DMA buffer of 4 MiB here (RLIMIT_MEMLOCK?)");
  assert_true(ms_dma_page_size(b) < MSI_GiB);
  ms_dma_free(b);
  assert_true(fallbacks() > before);
  assert_non_null(strstr(out, "dma: 1 GiB pages for 4194304 bytes unavailable ("));
  assert_non_null(strstr(out, "; falling back to "));
}

static void pages_2m(void *arg) {
  ms_pages_t *r = arg;
  ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
  assert_int_equal(ms_pages_reserve(4 << 20, 0, MS_PAGES_HUGE_2M, -1, r), 0);
  ms_fault_inject(MS_FAULT_MMAP, 0, 0);
}

static void pages_reserve(void **state) {
  (void)state;
  if (!ms_huge_page_size(MS_PAGE_HUGE_2M)) ms_skip_refused(ENOENT, "the kernel has no 2 MiB hugetlb pages");
  uint64_t before = fallbacks();
  ms_pages_t r;
  char out[8192];
  capture(pages_2m, &r, out, sizeof out);
  assert_true(r.fallback);
  assert_true(r.kind != MS_PAGE_HUGE_2M);
  assert_true(fallbacks() > before);
  assert_non_null(strstr(out, "pages: 2 MiB pages for 4194304 bytes unavailable (the pool has too few free pages"));
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(dma_buffer), cmocka_unit_test(pages_reserve)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
