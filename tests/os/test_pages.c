/* Page layer (ms_pages_*): every function, its failure paths through fault injection, bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "ms_test.h"
#include "os.h"

static size_t ps;

static int setup(void **state) {
  (void)state;
  ps = ms_page_size();
  for (int i = 0; i < MS_FAULT_OP_COUNT; i++) ms_fault_inject((ms_fault_op_t)i, 0, 0);
  return 0;
}

static void page_sizes(void **state) {
  (void)state;
  long sc = sysconf(_SC_PAGESIZE);
  assert_int_equal(ms_page_size(), (size_t)sc);
  assert_int_equal(ms_huge_page_size(MS_PAGE_BASE), (size_t)sc);
  size_t h2 = ms_huge_page_size(MS_PAGE_HUGE_2M), h1 = ms_huge_page_size(MS_PAGE_HUGE_1G);
  assert_true(h2 == 0 || h2 == 2u << 20);
  assert_true(h1 == 0 || h1 == 1u << 30);
  errno = 0;
  assert_int_equal(ms_huge_page_size((ms_page_kind_t)99), 0);
  assert_int_equal(errno, EINVAL);
}

static void reserve_commit_release(void **state) {
  (void)state;
  ms_pages_t r;
  assert_int_equal(ms_pages_reserve(10 * ps + 1, 0, 0, -1, &r), 0);
  assert_non_null(r.addr);
  assert_int_equal(r.size, 11 * ps);
  assert_int_equal(r.kind, MS_PAGE_BASE);
  assert_int_equal(r.fallback, 0);
  assert_int_equal(ms_pages_commit(r.addr, 2 * ps), 0);
  memset(r.addr, 7, 2 * ps);
  assert_int_equal(((unsigned char *)r.addr)[ps], 7);
  assert_int_equal(ms_pages_reset(r.addr, 2 * ps), 0);      /* lazily: contents unspecified */
  ((char *)r.addr)[0] = 1;                                   /* still accessible */
  assert_int_equal(ms_pages_decommit(r.addr, 2 * ps), 0);
  assert_int_equal(ms_pages_commit(r.addr, ps), 0);
  assert_int_equal(((char *)r.addr)[0], 0);                  /* decommitted pages come back as zero */
  assert_int_equal(ms_pages_populate(r.addr, ps), 0);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

static void reserve_committed_aligned(void **state) {
  (void)state;
  ms_pages_t r;
  size_t align = 4u << 20;
  assert_int_equal(ms_pages_reserve(3 * ps, align, MS_PAGES_COMMIT, -1, &r), 0);
  assert_int_equal((uintptr_t)r.addr % align, 0);
  memset(r.addr, 1, 3 * ps);
  ms_stats_t st;
  assert_int_equal(ms_stats_get(&st, sizeof st), 0);
  assert_true(st.os_reserved_bytes >= r.size);
  assert_true(st.os_committed_bytes >= r.size);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

#define MLOCK_REAL (!MS_TEST_MLOCK_NOOP) /* ms_test.h */

static void reserve_populate_lock(void **state) {
  (void)state;
  ms_pages_t r;
  /* POPULATE implies commit; pages are resident at once */
  assert_int_equal(ms_pages_reserve(4 * ps, 0, MS_PAGES_POPULATE, -1, &r), 0);
  unsigned char vec[4];
  assert_int_equal(mincore(r.addr, 4 * ps, vec), 0);
  for (int i = 0; i < 4; i++) assert_true(vec[i] & 1);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
  /* LOCK of a small range fits the default RLIMIT_MEMLOCK */
  int e = ms_pages_reserve(2 * ps, 0, MS_PAGES_LOCK, -1, &r);
  if (e == 0) { /* the kernel's view of the mapping (VmFlags lo), where mlock is real (not under a sanitizer) */
    assert_true(r.flags & MS_PAGES_LOCK);
    assert_int_equal(ms_test_vm_flag(r.addr, "lo"), MLOCK_REAL);
    assert_int_equal(ms_pages_unlock(r.addr, r.size), 0);
    assert_int_equal(ms_test_vm_flag(r.addr, "lo"), 0);
    assert_int_equal(ms_pages_lock(r.addr, r.size), 0);
    assert_int_equal(ms_test_vm_flag((char *)r.addr + ps, "lo"), MLOCK_REAL);
    assert_int_equal(ms_pages_unlock(r.addr, r.size), 0);
    assert_int_equal(ms_test_vm_flag(r.addr, "lo"), 0);
    assert_int_equal(ms_pages_release(r.addr, r.size), 0);
  } else {
    assert_true(e == ENOMEM || e == EPERM || e == EAGAIN);
  }
}

/* THP (a program of its own in CTest, test_pages_thp: a kernel that refuses the advice skips this case alone): the
   range carries the kernel's huge-page advice (VmFlags hg). A kernel without THP, or one that refuses
   madvise(MADV_HUGEPAGE) (built without it, a seccomp filter), skips with its reason: the library then falls back
   to base pages (fault_madvise_mprotect checks that). The probe goes through the OS layer, so that
   `test_pages --thp-refused` (thp_refusal_skips) injects the refusal. */
static int thp_inject; /* an errno the probe's madvise fails with (--thp-refused), or 0 */
static void thp_advice(void **state) {
  (void)state;
  size_t h = ms_huge_page_size(MS_PAGE_THP);
  if (!h) ms_skip_refused(0, "the kernel has no transparent huge pages (or THP is \"never\")");
  void *probe = mmap(NULL, h, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(probe != MAP_FAILED);
  if (thp_inject) ms_fault_inject(MS_FAULT_MADVISE, 1, thp_inject);
  int e = msi_os_madvise(probe, h, MADV_HUGEPAGE) == 0 ? 0 : errno;
  munmap(probe, h);
  if (e) ms_skip_refused(e, "madvise(MADV_HUGEPAGE)");
  ms_pages_t r;
  assert_int_equal(ms_pages_reserve(2 * h, h, MS_PAGES_COMMIT | MS_PAGES_THP, -1, &r), 0);
  assert_int_equal(r.kind, MS_PAGE_THP);
  assert_int_equal(ms_test_vm_flag(r.addr, "hg"), 1);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

/* thp_advice refused (an injected EINVAL): skipped with the kernel's reason, exit 77, not failed */
static const char *self;
static void thp_refusal_skips(void **state) {
  (void)state;
  char cmd[4200], out[8192];
  snprintf(cmd, sizeof cmd, "'%s' --thp-refused 2>&1", self);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = 0;
  int st = pclose(f);
  const char *want = ms_huge_page_size(MS_PAGE_THP) ? "MS_SKIP refused: madvise(MADV_HUGEPAGE): Invalid argument"
                                                     : "MS_SKIP refused: the kernel has no transparent huge pages";
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 77 || !strstr(out, want))
    fail_msg("thp_advice refused by the kernel: status %#x, not a skip saying \"%s\":\n%s", st, want, out);
}

/* MS_PAGES_POPULATE or MS_PAGES_LOCK on more than the machine holds (RAM + swap, four times over) is refused with
   ENOMEM before a page is faulted in: the kernel would take it page by page until its OOM killer ran. madvise
   and mlock fail by fault injection meanwhile, so a library that would fault the pages in gets EIO from its
   first call instead of the OOM killer; the injections still pending afterwards show that no call was made */
static void populate_beyond_memory_refused(void **state) {
  (void)state;
  struct sysinfo si;
  assert_int_equal(sysinfo(&si), 0);
  uint64_t machine = ((uint64_t)si.totalram + si.totalswap) * (si.mem_unit ? si.mem_unit : 1);
  size_t size = (size_t)(machine * 4 + ps - 1) / ps * ps;
  const unsigned flags[] = {MS_PAGES_POPULATE, MS_PAGES_LOCK, MS_PAGES_POPULATE | MS_PAGES_LOCK};
  ms_stats_t before, after;
  ms_stats_get(&before, sizeof before);
  for (unsigned i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    ms_fault_inject(MS_FAULT_MADVISE, 1, EIO);
    ms_fault_inject(MS_FAULT_MLOCK, 1, EIO);
    ms_pages_t p;
    errno = 0;
    int r = ms_pages_reserve(size, 0, flags[i], -1, &p);
    ms_fault_inject(MS_FAULT_MLOCK, 0, 0);
    printf("flags %#x, %zu bytes: %s\n", flags[i], size, strerror(r));
    assert_int_equal(r, ENOMEM);
    assert_int_equal(errno, ENOMEM);
    /* the madvise injection is still pending: one page pre-faults into it */
    assert_int_equal(ms_pages_reserve(ps, 0, MS_PAGES_POPULATE, -1, &p), EIO);
    ms_fault_inject(MS_FAULT_MADVISE, 0, 0);
  }
  ms_stats_get(&after, sizeof after);
  assert_int_equal(after.os_reserved_bytes, before.os_reserved_bytes);
  assert_int_equal(after.os_committed_bytes, before.os_committed_bytes);
  /* what fits is not refused */
  ms_pages_t p;
  assert_int_equal(ms_pages_reserve(16 * ps, 0, MS_PAGES_POPULATE, -1, &p), 0);
  assert_int_equal(ms_pages_release(p.addr, p.size), 0);
}

static void bad_input(void **state) {
  (void)state;
  ms_pages_t r;
  errno = 0;
  assert_int_equal(ms_pages_reserve(0, 0, 0, -1, &r), EINVAL);
  assert_int_equal(errno, EINVAL);
  assert_int_equal(ms_pages_reserve(ps, 0, 0, -1, NULL), EINVAL);
  assert_int_equal(ms_pages_reserve(ps, 3, 0, -1, &r), EINVAL);        /* alignment not a power of two */
  assert_int_equal(ms_pages_reserve(ps, 0, 0, 4096, &r), EINVAL);      /* no such node */
  assert_int_equal(ms_pages_reserve(ps, 0, 0, -2, &r), EINVAL);
  /* overflow near SIZE_MAX */
  assert_int_equal(ms_pages_reserve(SIZE_MAX, 0, 0, -1, &r), ENOMEM);
  assert_int_equal(ms_pages_reserve(SIZE_MAX - ps, 0, 0, -1, &r), ENOMEM);
  assert_int_equal(ms_pages_reserve(SIZE_MAX / 2, 0, MS_PAGES_COMMIT, -1, &r), ENOMEM);
  assert_int_not_equal(ms_pages_reserve(ps, (size_t)1 << 62, 0, -1, &r), 0);
  assert_int_equal(ms_pages_reserve(SIZE_MAX - 10, 0, MS_PAGES_THP, -1, &r), ENOMEM);
  /* NULL, unaligned, size 0, wrapping ranges */
  assert_int_equal(ms_pages_reserve(4 * ps, 0, 0, -1, &r), 0);
  char *a = r.addr;
  assert_int_equal(ms_pages_commit(NULL, ps), EINVAL);
  assert_int_equal(ms_pages_commit(a + 1, ps), EINVAL);
  assert_int_equal(ms_pages_commit(a, 0), EINVAL);
  assert_int_equal(ms_pages_commit(a, SIZE_MAX), EINVAL);
  assert_int_equal(ms_pages_decommit(a + 1, ps), EINVAL);
  assert_int_equal(ms_pages_reset(a, 0), EINVAL);
  assert_int_equal(ms_pages_populate(NULL, ps), EINVAL);
  assert_int_equal(ms_pages_lock(a + 8, ps), EINVAL);
  assert_int_equal(ms_pages_unlock(a, 0), EINVAL);
  assert_int_equal(ms_pages_bind(a, ps, -1), EINVAL);
  assert_int_equal(ms_pages_bind(a, ps, 4096), EINVAL);
  assert_int_equal(ms_pages_release(a + 1, ps), EINVAL);
  assert_int_equal(ms_pages_release(a, SIZE_MAX - 1), EINVAL);
  /* populate of an uncommitted (PROT_NONE) range is an error, never a crash */
  assert_int_not_equal(ms_pages_populate(a, ps), 0);
  assert_int_equal(ms_pages_release(a, r.size), 0);
}

static void foreign_and_beyond(void **state) {
  (void)state;
  ms_pages_t r;
  /* a reservation followed by a hole: commit beyond the reservation fails with ENOMEM */
  assert_int_equal(ms_pages_reserve(4 * ps, 0, 0, -1, &r), 0);
  char *a = r.addr;
  assert_int_equal(ms_pages_release(a + 3 * ps, ps), 0);    /* punch the last page: now a hole */
  assert_int_equal(ms_pages_commit(a, 4 * ps), ENOMEM);
  assert_int_equal(ms_pages_commit(a + 3 * ps, ps), ENOMEM);
  assert_int_equal(ms_pages_decommit(a + 3 * ps, ps), ENOMEM);
  assert_int_equal(ms_pages_reset(a + 3 * ps, ps), ENOMEM);
  assert_int_equal(ms_pages_populate(a + 3 * ps, ps), ENOMEM);
  /* releasing a range that is not mapped (foreign: nothing there any more) is reported */
  assert_int_equal(ms_pages_release(a + 3 * ps, ps), ENOMEM);
  assert_int_equal(ms_pages_release(a, 4 * ps), ENOMEM);
  assert_int_equal(ms_pages_release(a, 3 * ps), 0);
  assert_int_equal(ms_pages_commit(a, ps), ENOMEM);          /* released: nothing left */
}

/* binding checked with the kernel (get_mempolicy): the range's policy is MPOL_BIND to node 0 alone and a touched
   page is on node 0; a kernel without NUMA (ENOSYS) skips with its reason */
static void numa_bind(void **state) {
  (void)state;
  ms_pages_t r;
  int e = ms_pages_reserve(2 * ps, 0, MS_PAGES_COMMIT, 0, &r);
  assert_int_equal(e, 0);
  int mode = -1;
  unsigned long mask[16] = {0};
  if (r.numa_node == -1) {
    assert_int_equal(ms_pages_bind(r.addr, r.size, 0), ENOSYS);
    ms_pages_release(r.addr, r.size);
    ms_skip_refused(ENOSYS, "the kernel refuses mbind");
  }
  assert_int_equal(r.numa_node, 0);
  assert_int_equal(syscall(SYS_get_mempolicy, &mode, mask, 8 * sizeof mask, r.addr, 2ul /* MPOL_F_ADDR */), 0);
  assert_int_equal(mode, 2 /* MPOL_BIND */);
  assert_int_equal(mask[0], 1ul);
  ((char *)r.addr)[ps] = 1;
  int node = -1;
  assert_int_equal(syscall(SYS_get_mempolicy, &node, NULL, 0ul, (char *)r.addr + ps, 3ul /* F_NODE | F_ADDR */), 0);
  assert_int_equal(node, 0);
  /* ms_pages_bind on a range reserved without a node */
  ms_pages_t u;
  assert_int_equal(ms_pages_reserve(2 * ps, 0, MS_PAGES_COMMIT, -1, &u), 0);
  assert_int_equal(syscall(SYS_get_mempolicy, &mode, mask, 8 * sizeof mask, u.addr, 2ul), 0);
  assert_int_equal(mode, 0 /* MPOL_DEFAULT */);
  assert_int_equal(ms_pages_bind(u.addr, u.size, 0), 0);
  assert_int_equal(syscall(SYS_get_mempolicy, &mode, mask, 8 * sizeof mask, u.addr, 2ul), 0);
  assert_int_equal(mode, 2);
  assert_int_equal(ms_pages_release(u.addr, u.size), 0);
  /* a range that is no longer mapped: EFAULT (the header's promise), never a crash */
  assert_int_equal(ms_pages_bind(u.addr, u.size, 0), EFAULT);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

static void fault_mmap(void **state) {
  (void)state;
  ms_pages_t r;
  ms_stats_t before, after;
  ms_stats_get(&before, sizeof before);
  ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
  errno = 0;
  assert_int_equal(ms_pages_reserve(ps, 0, 0, -1, &r), ENOMEM);
  assert_int_equal(errno, ENOMEM);
  ms_stats_get(&after, sizeof after);
  assert_true(after.os_failures > before.os_failures);
  /* the second call after arming with nth=2 fails, the first succeeds */
  ms_fault_inject(MS_FAULT_MMAP, 2, EAGAIN);
  assert_int_equal(ms_pages_reserve(ps, 0, 0, -1, &r), 0);
  ms_pages_t r2;
  assert_int_equal(ms_pages_reserve(ps, 0, 0, -1, &r2), EAGAIN);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
  /* aligned reservation (over-map and trim) failing */
  ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
  assert_int_equal(ms_pages_reserve(ps, 1u << 22, MS_PAGES_COMMIT, -1, &r), ENOMEM);
  /* hugetlb request failing: falls back (reported) or fails with NO_FALLBACK */
  ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
  assert_int_equal(ms_pages_reserve(ps, 0, MS_PAGES_HUGE_2M | MS_PAGES_NO_FALLBACK, -1, &r), ENOMEM);
  ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
  assert_int_equal(ms_pages_reserve(ps, 0, MS_PAGES_HUGE_2M, -1, &r), 0);
  assert_int_equal(r.fallback, 1);
  assert_true(r.kind == MS_PAGE_THP || r.kind == MS_PAGE_BASE);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

static void fault_madvise_mprotect(void **state) {
  (void)state;
  ms_pages_t r;
  assert_int_equal(ms_pages_reserve(4 * ps, 0, 0, -1, &r), 0);
  ms_fault_inject(MS_FAULT_MPROTECT, 1, ENOMEM);
  errno = 0;
  assert_int_equal(ms_pages_commit(r.addr, ps), ENOMEM);
  assert_int_equal(errno, ENOMEM);
  assert_int_equal(ms_pages_commit(r.addr, 4 * ps), 0);
  memset(r.addr, 3, 4 * ps);
  ms_fault_inject(MS_FAULT_MADVISE, 1, EAGAIN);
  assert_int_equal(ms_pages_reset(r.addr, ps), EAGAIN);
  ms_fault_inject(MS_FAULT_MADVISE, 1, EAGAIN);
  assert_int_equal(ms_pages_decommit(r.addr, ps), EAGAIN);
  assert_int_equal(((char *)r.addr)[0], 3);           /* nothing happened */
  ms_fault_inject(MS_FAULT_MPROTECT, 1, ENOMEM);      /* second step of decommit */
  assert_int_equal(ms_pages_decommit(r.addr, ps), ENOMEM);
  ms_fault_inject(MS_FAULT_MADVISE, 1, ENOMEM);
  assert_int_equal(ms_pages_populate(r.addr, ps), ENOMEM);
  /* a negative error for an operation other than mmap: the same as its absolute value (ms_fault_inject) */
  ms_fault_inject(MS_FAULT_MADVISE, 1, -EAGAIN);
  assert_int_equal(ms_pages_reset(r.addr, ps), EAGAIN);
  assert_int_equal(errno, EAGAIN);
  /* THP advice failing: the reservation still works, with the fallback reported */
  ms_pages_t t;
  if (ms_huge_page_size(MS_PAGE_THP)) {
    ms_fault_inject(MS_FAULT_MADVISE, 1, EINVAL);
    assert_int_equal(ms_pages_reserve(ps, 0, MS_PAGES_THP, -1, &t), 0);
    assert_int_equal(t.kind, MS_PAGE_BASE);
    assert_int_equal(t.fallback, 1);
    assert_int_equal(ms_pages_release(t.addr, t.size), 0);
  }
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

static void fault_mlock(void **state) {
  (void)state;
  ms_pages_t r;
  ms_fault_inject(MS_FAULT_MLOCK, 1, EPERM);
  errno = 0;
  assert_int_equal(ms_pages_reserve(ps, 0, MS_PAGES_LOCK, -1, &r), EPERM);
  assert_int_equal(errno, EPERM);
  assert_int_equal(ms_pages_reserve(ps, 0, MS_PAGES_COMMIT, -1, &r), 0);
  ms_fault_inject(MS_FAULT_MLOCK, 1, ENOMEM);
  assert_int_equal(ms_pages_lock(r.addr, ps), ENOMEM);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

/* drops CAP_IPC_LOCK from the effective set so RLIMIT_MEMLOCK applies even to root */
static void drop_ipc_lock(void) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  if (syscall(SYS_capget, &h, d) != 0) return;
  d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
  syscall(SYS_capset, &h, d);
}


/* pre-faulting as before Linux 5.14 (mlock + munlock, msi_os_populate_write_hide) leaves the locks the caller had
   taken in the range: the munlock skips them. Pages 2-3 and every fourth page from 8 are the caller's (more runs
   without a lock than one smaps pass takes); every page is resident afterwards, only the caller's are locked */
static void populate_fallback_keeps_locks(void **state) {
  (void)state;
  enum { PAGES = 80 };
  char *m = mmap(NULL, PAGES * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  bool mine[PAGES] = {false};
  mine[2] = mine[3] = true;
  for (int i = 8; i < PAGES; i += 4) mine[i] = true;
  for (int i = 0; i < PAGES; i++)
    if (mine[i] && mlock(m + i * ps, ps) != 0) {
      int e = errno;
      munmap(m, PAGES * ps);
      ms_skip_refused(e, "mlock of a page");
    }
  msi_os_populate_write_hide(true);
  int r = ms_pages_populate(m, PAGES * ps);
  msi_os_populate_write_hide(false);
  assert_int_equal(r, 0);
  unsigned char vec[PAGES];
  assert_int_equal(mincore(m, PAGES * ps, vec), 0);
  for (int i = 0; i < PAGES && MLOCK_REAL; i++) { /* a sanitizer's mlock is a no-op: nothing to see there */
    assert_true(vec[i] & 1);
    assert_int_equal(ms_test_vm_flag(m + i * ps, "lo"), mine[i]);
  }
  /* a hole and PROT_NONE are refused as with MADV_POPULATE_WRITE's kernel, and nothing is locked after */
  assert_int_equal(munmap(m + (PAGES - 1) * ps, ps), 0);
  assert_int_equal(mprotect(m + 5 * ps, ps, PROT_NONE), 0);
  msi_os_populate_write_hide(true);
  if (MLOCK_REAL) assert_int_equal(ms_pages_populate(m + 4 * ps, 4 * ps), ENOMEM); /* mlock's answer on PROT_NONE */
  assert_int_equal(ms_pages_populate(m + (PAGES - 2) * ps, 2 * ps), ENOMEM);
  msi_os_populate_write_hide(false);
  assert_int_equal(ms_test_vm_flag(m + 4 * ps, "lo"), 0);
  assert_int_equal(ms_test_vm_flag(m + 6 * ps, "lo"), 0);
  assert_int_equal(ms_test_vm_flag(m + 2 * ps, "lo"), MLOCK_REAL);
  munmap(m, PAGES * ps);
  /* nothing locked in the process (VmLck 0): the whole range is locked and unlocked at once */
  m = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  msi_os_populate_write_hide(true);
  assert_int_equal(ms_pages_populate(m, 4 * ps), 0);
  msi_os_populate_write_hide(false);
  assert_int_equal(mincore(m, 4 * ps, vec), 0);
  for (int i = 0; i < 4 && MLOCK_REAL; i++) assert_true(vec[i] & 1);
  assert_int_equal(ms_test_vm_flag(m, "lo"), 0);
  munmap(m, 4 * ps);
}

/* in a forked child: an ordinary user (uid 65534 without capabilities when run as root, which bypasses
   RLIMIT_MEMLOCK through CAP_IPC_LOCK), then RLIMIT_MEMLOCK lowered to `limit` */
static void become_ordinary_user(size_t limit) {
  if (geteuid() == 0) {
    if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
      drop_ipc_lock(); /* refused (a user namespace): drop the capability instead */
  }
  struct rlimit rl = {limit, limit};
  if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) _exit(3);
}

/* decommit and reset of locked pages fail with EINVAL and change nothing (the kernel refuses MADV_DONTNEED and
   MADV_FREE on locked pages): the contents, the lock and the statistics stay; after ms_pages_unlock both work */
static void locked_decommit_refused(void **state) {
  (void)state;
  if (!MLOCK_REAL) ms_skip_refused(0, MS_TEST_MLOCK_NOOP_WHY);
  ms_pages_t r;
  int e = ms_pages_reserve(2 * ps, 0, MS_PAGES_LOCK, -1, &r);
  if (e) ms_skip_refused(e, "ms_pages_reserve(MS_PAGES_LOCK)");
  memset(r.addr, 7, 2 * ps);
  ms_stats_t a, b;
  assert_int_equal(ms_stats_get(&a, sizeof a), 0);
  errno = 0;
  assert_int_equal(ms_pages_decommit(r.addr, ps), EINVAL);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(ms_pages_reset(r.addr, 2 * ps), EINVAL);
  assert_int_equal(errno, EINVAL);
  assert_int_equal(((unsigned char *)r.addr)[0], 7); /* still committed, contents kept */
  assert_int_equal(((unsigned char *)r.addr)[2 * ps - 1], 7);
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_locked_bytes, a.os_locked_bytes);
  assert_int_equal(b.os_committed_bytes, a.os_committed_bytes);
  assert_int_equal(ms_pages_unlock(r.addr, r.size), 0);
  assert_int_equal(ms_pages_reset(r.addr, ps), 0);
  assert_int_equal(ms_pages_decommit(r.addr, ps), 0);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
}

/* what a refused lock returns, as the header says: the kernel's mlock gives ENOMEM above a non-zero
   RLIMIT_MEMLOCK and EPERM when the limit is 0 */
static void mlock_above_limit(void **state) {
  (void)state;
  if (!MLOCK_REAL) ms_skip_refused(0, MS_TEST_MLOCK_NOOP_WHY);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    become_ordinary_user(ps * 4);
    ms_pages_t r;
    if (ms_pages_reserve(64 * ps, 0, MS_PAGES_LOCK, -1, &r) != ENOMEM || errno != ENOMEM) _exit(1);
    if (ms_pages_reserve(64 * ps, 0, MS_PAGES_COMMIT, -1, &r) != 0) _exit(2);
    if (ms_pages_lock(r.addr, r.size) != ENOMEM || errno != ENOMEM) _exit(4);
    if (ms_pages_lock(r.addr, ps) != 0) _exit(5); /* within the limit */
    struct rlimit zero = {0, 0};
    if (setrlimit(RLIMIT_MEMLOCK, &zero) != 0) _exit(3);
    ms_pages_t z;
    if (ms_pages_reserve(ps, 0, MS_PAGES_LOCK, -1, &z) != EPERM || errno != EPERM) _exit(6);
    if (ms_pages_lock((char *)r.addr + ps, ps) != EPERM) _exit(7);
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* releasing a locked range lowers os_locked_bytes; releasing a never-committed range leaves
   os_committed_bytes to the ranges that hold it */
static void stats_release_what_is_held(void **state) {
  (void)state;
  ms_stats_t a, b;
  assert_int_equal(ms_stats_get(&a, sizeof a), 0);
  ms_pages_t l;
  assert_int_equal(ms_pages_reserve(16 * ps, 0, MS_PAGES_LOCK, -1, &l), 0);
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_locked_bytes, a.os_locked_bytes + 16 * ps);
  assert_int_equal(ms_pages_release(l.addr, l.size), 0);
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_locked_bytes, a.os_locked_bytes);
  assert_int_equal(b.os_committed_bytes, a.os_committed_bytes);
  /* a 64 MiB reservation never committed, beside a committed one */
  ms_pages_t big, held;
  assert_int_equal(ms_pages_reserve(64u << 20, 0, 0, -1, &big), 0);
  assert_int_equal(ms_pages_reserve(64u << 20, 0, MS_PAGES_COMMIT, -1, &held), 0);
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_committed_bytes, a.os_committed_bytes + held.size);
  assert_int_equal(ms_pages_release(big.addr, big.size), 0);
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_committed_bytes, a.os_committed_bytes + held.size);
  /* a part committed then released: only that part was counted */
  assert_int_equal(ms_pages_reserve(8 * ps, 0, 0, -1, &big), 0);
  assert_int_equal(ms_pages_commit(big.addr, 2 * ps), 0);
  assert_int_equal(ms_pages_lock(big.addr, ps), 0);
  assert_int_equal(ms_pages_release(big.addr, big.size), 0);
  assert_int_equal(ms_pages_release(held.addr, held.size), 0);
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_committed_bytes, a.os_committed_bytes);
  assert_int_equal(b.os_locked_bytes, a.os_locked_bytes);
  assert_int_equal(b.os_reserved_bytes, a.os_reserved_bytes);
}

/* many reservations at once (more than any fixed table would hold), released in pieces: middle, ends */
static void many_ranges(void **state) {
  (void)state;
  enum { N = 600 };
  static ms_pages_t r[N];
  ms_stats_t a, b;
  assert_int_equal(ms_stats_get(&a, sizeof a), 0);
  for (int i = 0; i < N; i++) assert_int_equal(ms_pages_reserve(4 * ps, 0, i % 2 ? MS_PAGES_COMMIT : 0, -1, &r[i]), 0);
  for (int i = 0; i < N; i++) {
    char *p = r[i].addr;
    assert_int_equal(ms_pages_release(p + ps, ps), 0);     /* a middle page: the range splits */
    assert_int_equal(ms_pages_release(p, ps), 0);
    assert_int_equal(ms_pages_release(p + 3 * ps, ps), 0);
    assert_int_equal(ms_pages_release(p + 2 * ps, ps), 0);
  }
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_reserved_bytes, a.os_reserved_bytes);
  assert_int_equal(b.os_committed_bytes, a.os_committed_bytes);
}

static void stats_counters(void **state) {
  (void)state;
  ms_stats_t a, b;
  assert_int_equal(ms_stats_get(&a, sizeof a), 0);
  ms_pages_t r;
  assert_int_equal(ms_pages_reserve(8 * ps, 0, MS_PAGES_COMMIT, -1, &r), 0);
  assert_int_equal(ms_pages_reset(r.addr, 8 * ps), 0);
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_true(b.os_reserved_bytes >= a.os_reserved_bytes + 8 * ps);
  assert_true(b.os_reset_bytes >= a.os_reset_bytes + 8 * ps);
  assert_true(b.os_calls > a.os_calls);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0);
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_reserved_bytes, a.os_reserved_bytes);
}

/* os_committed_bytes is a count per call, kept within each reservation's size (docs/stats.md): committing pages
   already committed counts them again up to that size, decommitting pages not committed subtracts them again */
static void stats_commit_counts_per_call(void **state) {
  (void)state;
  ms_stats_t a, b;
  ms_pages_t r;
  assert_int_equal(ms_stats_get(&a, sizeof a), 0);
  assert_int_equal(ms_pages_reserve(4 * ps, 0, 0, -1, &r), 0);
  char *p = r.addr;
  assert_int_equal(ms_pages_commit(p, 2 * ps), 0);
  assert_int_equal(ms_pages_commit(p, 2 * ps), 0); /* the same pages again: counted again */
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_committed_bytes - a.os_committed_bytes, 4 * ps);
  assert_int_equal(ms_pages_commit(p, 4 * ps), 0); /* never above the reservation's size */
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_committed_bytes - a.os_committed_bytes, 4 * ps);
  assert_int_equal(ms_pages_decommit(p, ps), 0);
  assert_int_equal(ms_pages_decommit(p, 2 * ps), 0); /* page 0 again: subtracted again */
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_committed_bytes - a.os_committed_bytes, ps);
  assert_int_equal(ms_pages_release(r.addr, r.size), 0); /* subtracts what the reservation held, no more */
  assert_int_equal(ms_stats_get(&b, sizeof b), 0);
  assert_int_equal(b.os_committed_bytes, a.os_committed_bytes);
}

int main(int argc, char **argv) {
  self = argv[0];
  if (argc > 1 && (strcmp(argv[1], "--thp") == 0 || strcmp(argv[1], "--thp-refused") == 0)) {
    thp_inject = strcmp(argv[1], "--thp-refused") == 0 ? EINVAL : 0;
    const struct CMUnitTest thp[] = {cmocka_unit_test_setup(thp_advice, setup)};
    return cmocka_run_group_tests(thp, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(page_sizes, setup),
      cmocka_unit_test_setup(reserve_commit_release, setup),
      cmocka_unit_test_setup(reserve_committed_aligned, setup),
      cmocka_unit_test_setup(reserve_populate_lock, setup),
      cmocka_unit_test_setup(locked_decommit_refused, setup),
      cmocka_unit_test_setup(populate_beyond_memory_refused, setup),
      cmocka_unit_test_setup(bad_input, setup),
      cmocka_unit_test_setup(foreign_and_beyond, setup),
      cmocka_unit_test_setup(numa_bind, setup),
      cmocka_unit_test_setup(fault_mmap, setup),
      cmocka_unit_test_setup(fault_madvise_mprotect, setup),
      cmocka_unit_test_setup(fault_mlock, setup),
      cmocka_unit_test_setup(populate_fallback_keeps_locks, setup),
      cmocka_unit_test_setup(mlock_above_limit, setup),
      cmocka_unit_test_setup(stats_counters, setup),
      cmocka_unit_test_setup(stats_release_what_is_held, setup),
      cmocka_unit_test_setup(stats_commit_counts_per_call, setup),
      cmocka_unit_test_setup(many_ranges, setup),
      cmocka_unit_test_setup(thp_refusal_skips, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
