/* Page-layer promises of include/memspace.h (tests/contract/promises.tsv): ms_pages_reserve(MS_PAGES_LOCK) and
   ms_pages_lock give ENOMEM above a non-zero RLIMIT_MEMLOCK and EPERM at 0; ms_pages_unlock gives ENOMEM for a
   hole; ms_dma_alloc's buffer reads as zero. The first two are skipped in the sanitizer builds, whose runtimes make
   mlock and munlock succeed whatever the limit and the range (ms_test.h MS_TEST_MLOCK_NOOP). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "memspace.h"
#include "ms_test.h"

/* ---- ms_pages_reserve (MS_PAGES_LOCK) and ms_pages_lock: ENOMEM above a non-zero RLIMIT_MEMLOCK, EPERM at 0 ---- */

/* in a child, as an ordinary user (root's CAP_IPC_LOCK ignores the limit); exit 0, 77 (could not drop root)
   or a code naming the broken promise */
static int pages_lock_child(void) {
  if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                         setresuid(65534, 65534, 65534) != 0)) {
    fprintf(stderr, "cannot become an ordinary user: %s\n", strerror(errno));
    return 77;
  }
  size_t ps = ms_page_size();
  const rlim_t limits[2] = {16 * ps, 0};
  for (int i = 0; i < 2; i++) {
    rlim_t lim = limits[i];
    struct rlimit rl = {lim, lim};
    if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
      if (lim) continue; /* a hard limit below 16 pages: only the limit 0 can be set */
      return 2;
    }
    int want = lim ? ENOMEM : EPERM;
    ms_pages_t p;
    errno = 0;
    int e = ms_pages_reserve(64 * ps, 0, MS_PAGES_LOCK, -1, &p);
    if (e != want || errno != want) {
      fprintf(stderr, "limit %zu: locked reserve gave %d (errno %d), not %d\n", (size_t)lim, e, errno, want);
      return 3;
    }
    if (ms_pages_reserve(64 * ps, 0, MS_PAGES_COMMIT, -1, &p)) return 4;
    errno = 0;
    e = ms_pages_lock(p.addr, p.size);
    if (e != want || errno != want) {
      fprintf(stderr, "limit %zu: ms_pages_lock gave %d (errno %d), not %d\n", (size_t)lim, e, errno, want);
      return 5;
    }
    if (ms_pages_release(p.addr, p.size)) return 6;
  }
  return 0;
}

static void pages_lock_refusals(void **state) {
  (void)state;
  if (MS_TEST_MLOCK_NOOP) ms_skip_refused(0, MS_TEST_MLOCK_NOOP_WHY);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(pages_lock_child());
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  if (WEXITSTATUS(st) == 77) ms_skip_refused(EPERM, "setresuid to nobody refused");
  assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- ms_pages_unlock: ENOMEM for a hole (part of the range no longer mapped) ---- */
static void unlock_hole_is_enomem(void **state) {
  (void)state;
  if (MS_TEST_MLOCK_NOOP) ms_skip_refused(0, MS_TEST_MLOCK_NOOP_WHY);
  size_t ps = ms_page_size();
  ms_pages_t p;
  assert_int_equal(ms_pages_reserve(4 * ps, 0, MS_PAGES_COMMIT, -1, &p), 0);
  char *a = p.addr;
  assert_int_equal(ms_pages_release(a + 2 * ps, 2 * ps), 0);
  errno = 0;
  assert_int_equal(ms_pages_unlock(a, 4 * ps), ENOMEM);
  assert_int_equal(errno, ENOMEM);
  assert_int_equal(ms_pages_unlock(a, 2 * ps), 0);
  assert_int_equal(ms_pages_release(a, 2 * ps), 0);
}

/* ---- ms_dma_alloc: the buffer reads as zero ---- */
static void dma_alloc_reads_zero(void **state) {
  (void)state;
  size_t size = 64 * 1024;
  ms_dma_config_t c;
  memset(&c, 0, sizeof c);
  c.page_size = ms_page_size(); /* base pages: no huge-page pool needed */
  c.numa_node = -1;
  ms_dma_buffer_t *b = ms_dma_alloc(size, &c);
  if (!b && (errno == EPERM || errno == ENOMEM || errno == EAGAIN)) ms_skip_refused(errno, "mlock of 64 KiB");
  assert_non_null(b);
  const unsigned char *p = ms_dma_addr(b);
  assert_non_null(p);
  for (size_t i = 0; i < size; i++)
    if (p[i]) fail_msg("byte %zu of a new buffer is %u", i, p[i]);
  ms_dma_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(pages_lock_refusals),
      cmocka_unit_test(unlock_hole_is_enomem),
      cmocka_unit_test(dma_alloc_reads_zero),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
