/* SPDX-License-Identifier: MIT */
/* linux.c: the platform contract of os.h for Linux. Every wrapper retries on EINTR, counts the call and
   honours fault injection. Facts about the machine are read once from /proc and /sys without stdio. */
#include "os.h"
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

msi_os_counters_t msi_os_counters;

/* ---- fault injection ---- */
static _Atomic unsigned long fault_nth[MS_FAULT_OP_COUNT];
static _Atomic int fault_err[MS_FAULT_OP_COUNT];
static _Atomic int fault_armed;

void ms_fault_inject(ms_fault_op_t op, unsigned long nth, int err) {
  if ((unsigned)op >= MS_FAULT_OP_COUNT) return;
  atomic_store(&fault_err[op], err ? err : ENOMEM);
  atomic_store(&fault_nth[op], nth);
  int any = 0;
  for (int i = 0; i < MS_FAULT_OP_COUNT; i++) any |= atomic_load(&fault_nth[i]) != 0;
  atomic_store(&fault_armed, any);
}

bool msi_fault_hit(ms_fault_op_t op, int *err) {
  if (MSI_LIKELY(!atomic_load_explicit(&fault_armed, memory_order_relaxed))) return false;
  if ((unsigned)op >= MS_FAULT_OP_COUNT) return false; /* wrappers without an injection point */
  unsigned long n = atomic_load(&fault_nth[op]);
  while (n != 0) {
    if (atomic_compare_exchange_weak(&fault_nth[op], &n, n - 1)) {
      if (n == 1) { *err = atomic_load(&fault_err[op]); return true; }
      return false;
    }
  }
  return false;
}

#define COUNT_CALL() atomic_fetch_add_explicit(&msi_os_counters.calls, 1, memory_order_relaxed)
#define COUNT_FAIL() atomic_fetch_add_explicit(&msi_os_counters.failures, 1, memory_order_relaxed)
#define INJECT(op, failval)                                                                                     \
  do {                                                                                                         \
    int err_;                                                                                                  \
    if (MSI_UNLIKELY(msi_fault_hit(op, &err_))) { COUNT_FAIL(); errno = err_; return failval; }                \
  } while (0)

void *msi_os_mmap(void *addr, size_t size, int prot, int flags, int fd, off_t offset) {
  INJECT(MS_FAULT_MMAP, MAP_FAILED);
  COUNT_CALL();
  void *p;
  do p = mmap(addr, size, prot, flags, fd, offset); while (p == MAP_FAILED && errno == EINTR);
  if (p == MAP_FAILED) COUNT_FAIL();
  return p;
}

void *msi_os_mremap(void *old, size_t old_size, size_t new_size, int flags, void *new_addr) {
  INJECT(MS_FAULT_MMAP, MAP_FAILED);
  COUNT_CALL();
  void *p;
  do p = mremap(old, old_size, new_size, flags, new_addr); while (p == MAP_FAILED && errno == EINTR);
  if (p == MAP_FAILED) COUNT_FAIL();
  return p;
}

#define RETRY_INT(op, expr)                                                                                     \
  do {                                                                                                         \
    INJECT(op, -1);                                                                                            \
    COUNT_CALL();                                                                                              \
    int r_;                                                                                                    \
    do r_ = (expr); while (r_ == -1 && errno == EINTR);                                                        \
    if (r_ == -1) COUNT_FAIL();                                                                                \
    return r_;                                                                                                 \
  } while (0)

int msi_os_munmap(void *addr, size_t size) {
  COUNT_CALL();
  int r = munmap(addr, size);
  if (r) COUNT_FAIL();
  return r;
}
int msi_os_mprotect(void *addr, size_t size, int prot) { RETRY_INT(MS_FAULT_MPROTECT, mprotect(addr, size, prot)); }
int msi_os_madvise(void *addr, size_t size, int advice) { RETRY_INT(MS_FAULT_MADVISE, madvise(addr, size, advice)); }
int msi_os_mlock(const void *addr, size_t size) { RETRY_INT(MS_FAULT_MLOCK, mlock(addr, size)); }
int msi_os_munlock(const void *addr, size_t size) {
  COUNT_CALL();
  return munlock(addr, size);
}
int msi_os_fallocate(int fd, int mode, off_t offset, off_t len) {
  RETRY_INT(MS_FAULT_FALLOCATE, fallocate(fd, mode, offset, len));
}

int msi_os_open(const char *path, int flags, unsigned mode) { RETRY_INT(MS_FAULT_OP_COUNT, open(path, flags, mode)); }
int msi_os_close(int fd) {
  COUNT_CALL();
  return close(fd); /* never retried: the descriptor is gone even on EINTR */
}
int msi_os_dup_high(int fd, int min_fd) { RETRY_INT(MS_FAULT_OP_COUNT, fcntl(fd, F_DUPFD_CLOEXEC, min_fd)); }
int msi_os_pipe(int fds[2]) { RETRY_INT(MS_FAULT_OP_COUNT, pipe2(fds, O_CLOEXEC)); }
ssize_t msi_os_read(int fd, void *buf, size_t len) {
  COUNT_CALL();
  ssize_t r;
  do r = read(fd, buf, len); while (r < 0 && errno == EINTR);
  if (r < 0) COUNT_FAIL();
  return r;
}
int msi_os_unlink(const char *path) { RETRY_INT(MS_FAULT_OP_COUNT, unlink(path)); }
int msi_os_ftruncate(int fd, off_t size) { RETRY_INT(MS_FAULT_FALLOCATE, ftruncate(fd, size)); }
int msi_os_fstatfs(int fd, struct statfs *st) { RETRY_INT(MS_FAULT_OP_COUNT, fstatfs(fd, st)); }
long long msi_os_fstat_blocks(int fd) {
  struct stat st;
  COUNT_CALL();
  if (fstat(fd, &st) != 0) { COUNT_FAIL(); return -1; }
  return (long long)st.st_blocks * 512;
}
int msi_os_sync_file_range(int fd, off_t offset, off_t len, unsigned flags) {
  RETRY_INT(MS_FAULT_OP_COUNT, sync_file_range(fd, offset, len, flags));
}
/* The maintenance thread's policies: SCHED_BATCH (a fair share of the CPU, but its wake-ups never preempt a running
   thread, so an interactive process keeps the CPU it woke up for) and SCHED_IDLE around write-back. */
int msi_os_sched_idle(bool idle) {
  struct sched_param param = {0};
  RETRY_INT(MS_FAULT_OP_COUNT, sched_setscheduler(0, idle ? SCHED_IDLE : SCHED_BATCH, &param));
}
bool msi_os_sched_batch(void) {
  struct sched_param param = {0};
  int policy = sched_getscheduler(0);
  if (policy == SCHED_OTHER && sched_setscheduler(0, SCHED_BATCH, &param) == 0) policy = SCHED_BATCH;
  return policy == SCHED_BATCH; /* a policy chosen by the user (real-time, idle) stays */
}
/* Linux treats SCHED_IDLE as nice 20: going back to SCHED_BATCH needs CAP_SYS_NICE or an RLIMIT_NICE that
   allows the thread's nice value (the default limit, 0, does not), else SCHED_IDLE is a one-way street. */
bool msi_os_sched_idle_reversible(void) {
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, 0);
  if (errno) return false;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NICE, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)(20 - nice)))
    return true;
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct caps[2];
  return syscall(SYS_capget, &hdr, caps) == 0 && (caps[0].effective >> CAP_SYS_NICE) & 1;
}
void msi_os_yield(void) { sched_yield(); }
ssize_t msi_os_copy_file_range(int fd_in, off_t off_in, int fd_out, off_t off_out, size_t len) {
  INJECT(MS_FAULT_FALLOCATE, -1);
  COUNT_CALL();
  ssize_t r;
  do r = copy_file_range(fd_in, &off_in, fd_out, &off_out, len, 0); while (r < 0 && errno == EINTR);
  if (r < 0) COUNT_FAIL();
  return r;
}
int msi_os_getrlimit(int resource, struct rlimit *rl) { RETRY_INT(MS_FAULT_OP_COUNT, getrlimit(resource, rl)); }
int msi_os_mincore(void *addr, size_t size, unsigned char *vec) { RETRY_INT(MS_FAULT_OP_COUNT, mincore(addr, size, vec)); }

long msi_os_mbind(void *addr, size_t size, int node) {
  if (node < 0 || node >= 1024) { errno = EINVAL; return -1; }
  unsigned long mask[1024 / (8 * sizeof(unsigned long))];
  memset(mask, 0, sizeof mask);
  mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
  COUNT_CALL();
  long r = syscall(SYS_mbind, addr, size, 2 /* MPOL_BIND */, mask, (unsigned long)node + 2, 0u);
  if (r) COUNT_FAIL();
  return r;
}

/* ---- facts read once ---- */
bool msi_os_read_ull(const char *path, unsigned long long *value) {
  int fd;
  do fd = open(path, O_RDONLY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
  if (fd < 0) return false;
  char buf[64];
  ssize_t n;
  do n = read(fd, buf, sizeof buf - 1); while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  unsigned long long v = 0;
  const char *s = buf;
  if (*s < '0' || *s > '9') return false;
  for (; *s >= '0' && *s <= '9'; s++) v = v * 10 + (unsigned)(*s - '0');
  *value = v;
  return true;
}

/* the address space the process has mapped (VmSize, which RLIMIT_AS limits): /proc/self/statm's first number, in
   pages; 0 when unreadable. No allocation. */
size_t msi_os_vm_size(void) {
  unsigned long long pages;
  return msi_os_read_ull("/proc/self/statm", &pages) ? (size_t)pages * msi_os_page_size() : 0;
}

/* the kernel's limit on a process's mappings (vm.max_map_count); the kernel's default when unreadable */
unsigned long msi_os_max_map_count(void) {
  unsigned long long v;
  return msi_os_read_ull("/proc/sys/vm/max_map_count", &v) && v > 0 ? (unsigned long)v : 65530;
}

/* RLIMIT_AS's soft limit in bytes, SIZE_MAX when unlimited (or unreadable) */
size_t msi_os_as_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > SIZE_MAX) return SIZE_MAX;
  return (size_t)rl.rlim_cur;
}

/* true when /sys/kernel/mm/transparent_hugepage/enabled selects [never] */
static bool thp_never(void) {
  int fd;
  do fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
  if (fd < 0) return false;
  char buf[128];
  ssize_t n;
  do n = read(fd, buf, sizeof buf - 1); while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  return strstr(buf, "[never]") != NULL;
}

size_t msi_os_page_size(void) {
  static _Atomic size_t cached;
  size_t p = atomic_load_explicit(&cached, memory_order_relaxed);
  if (MSI_UNLIKELY(p == 0)) {
    long v = sysconf(_SC_PAGESIZE);
    p = v > 0 ? (size_t)v : 4096;
    atomic_store_explicit(&cached, p, memory_order_relaxed);
  }
  return p;
}

size_t msi_os_huge_size(ms_page_kind_t kind) {
  static _Atomic size_t cached[4] = {0, 0, 0, 0};
  static _Atomic int done[4];
  if ((unsigned)kind > MS_PAGE_HUGE_1G) return 0;
  if (kind == MS_PAGE_BASE) return msi_os_page_size();
  if (atomic_load(&done[kind])) return atomic_load(&cached[kind]);
  size_t size = 0;
  unsigned long long v;
  if (kind == MS_PAGE_THP) {
    /* THP exists unless the kernel lacks it or the mode is "never" (then MADV_HUGEPAGE does nothing) */
    if (msi_os_read_ull("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", &v) && !thp_never()) size = (size_t)v;
  } else {
    const char *dir = kind == MS_PAGE_HUGE_2M ? "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
                                              : "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages";
    if (access(dir, F_OK) == 0) size = kind == MS_PAGE_HUGE_2M ? 2 * MSI_MiB : MSI_GiB;
  }
  atomic_store(&cached[kind], size);
  atomic_store(&done[kind], 1);
  return size;
}

int msi_os_numa_nodes(void) {
  static _Atomic int cached;
  int n = atomic_load(&cached);
  if (n) return n;
  char path[64];
  for (n = 0; n < 1024; n++) {
    msi_snprintf(path, sizeof path, "/sys/devices/system/node/node%d", n);
    if (access(path, F_OK) != 0) break;
  }
  if (n == 0) n = 1;
  atomic_store(&cached, n);
  return n;
}

bool msi_os_has_madv_free(void) {
  static _Atomic int state; /* 0 unknown, 1 yes, 2 no */
  int s = atomic_load(&state);
  if (s) return s == 1;
  size_t ps = msi_os_page_size();
  void *p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  bool ok = p != MAP_FAILED && madvise(p, ps, MADV_FREE) == 0;
  if (p != MAP_FAILED) munmap(p, ps);
  atomic_store(&state, ok ? 1 : 2);
  return ok;
}

int msi_os_mapped(void *addr, size_t size) {
  /* MADV_NORMAL changes nothing on our ranges (we never set SEQ/RANDOM) but fails with ENOMEM on a hole */
  COUNT_CALL();
  int r = madvise(addr, size, MADV_NORMAL);
  if (r) COUNT_FAIL();
  return r;
}

#ifndef MEMBARRIER_CMD_PRIVATE_EXPEDITED
#define MEMBARRIER_CMD_PRIVATE_EXPEDITED (1 << 3)
#define MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)
#endif

int msi_os_membarrier(void) {
#ifdef SYS_membarrier
  static _Atomic int state; /* 0 unknown, 1 registered, 2 unavailable */
  int s = atomic_load_explicit(&state, memory_order_relaxed);
  if (s == 2) return -1;
  if (s == 0) {
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) {
      atomic_store(&state, 2);
      return -1;
    }
    atomic_store(&state, 1);
  }
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return 0;
  /* a forked child may have lost the registration: register again once */
  if (errno == EPERM && syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
      syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
    return 0;
  return -1;
#else
  return -1;
#endif
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
bool msi_os_has_populate_write(void) {
  static _Atomic int state; /* 0 unknown, 1 yes, 2 no (kernel before 5.14) */
  int s = atomic_load(&state);
  if (s) return s == 1;
  size_t ps = msi_os_page_size();
  void *p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  bool ok = p != MAP_FAILED && madvise(p, ps, MADV_POPULATE_WRITE) == 0;
  if (p != MAP_FAILED) munmap(p, ps);
  atomic_store(&state, ok ? 1 : 2);
  return ok;
}

/* ---- statistics: registered here, beside the counters, so that every link making a system call has them ---- */
static void pages_get(ms_stats_t *s) {
  s->os_reserved_bytes = atomic_load(&msi_os_counters.reserved);
  s->os_committed_bytes = atomic_load(&msi_os_counters.committed);
  s->os_reset_bytes = atomic_load(&msi_os_counters.reset);
  s->os_locked_bytes = atomic_load(&msi_os_counters.locked);
  s->os_hugetlb_bytes = atomic_load(&msi_os_counters.hugetlb);
  s->os_thp_bytes = atomic_load(&msi_os_counters.thp);
  s->os_huge_fallbacks = atomic_load(&msi_os_counters.huge_fallbacks);
  s->os_calls = atomic_load(&msi_os_counters.calls);
  s->os_failures = atomic_load(&msi_os_counters.failures);
}

static void pages_print(msi_stats_writer_t *w) {
  ms_stats_t s;
  memset(&s, 0, sizeof s);
  pages_get(&s);
  msi_stats_field(w, "page_size", msi_os_page_size(), "bytes");
  msi_stats_field(w, "reserved", s.os_reserved_bytes, "bytes");
  msi_stats_field(w, "committed", s.os_committed_bytes, "bytes");
  msi_stats_field(w, "reset_lazy", s.os_reset_bytes, "bytes");
  msi_stats_field(w, "locked", s.os_locked_bytes, "bytes");
  msi_stats_field(w, "hugetlb", s.os_hugetlb_bytes, "bytes");
  msi_stats_field(w, "thp_advised", s.os_thp_bytes, "bytes");
  msi_stats_field(w, "huge_fallbacks", s.os_huge_fallbacks, "");
  msi_stats_field(w, "syscalls", s.os_calls, "");
  msi_stats_field(w, "syscall_failures", s.os_failures, "");
}

static const msi_stats_source_t pages_source = {"pages", pages_get, pages_print};
__attribute__((constructor(102))) static void pages_register(void) { msi_stats_register(&pages_source); }
