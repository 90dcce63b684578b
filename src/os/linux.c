/* SPDX-License-Identifier: MIT */
/* linux.c: the platform contract of os.h for Linux. Every wrapper retries on EINTR, counts the call and
   honours fault injection. Facts about the machine are read once from /proc and /sys without stdio. */
#include "os.h"
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <poll.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

MSI_START_BSS msi_os_counters_t msi_os_counters;

/* ---- fault injection ---- */
static _Atomic unsigned long fault_nth[MS_FAULT_OP_COUNT];
static _Atomic int fault_err[MS_FAULT_OP_COUNT];
MSI_START_DATA static _Atomic int fault_armed; /* read by every call: not alone on a .bss page */

void ms_fault_inject(ms_fault_op_t op, unsigned long nth, int err) {
  if ((unsigned)op >= MS_FAULT_OP_COUNT) return;
  atomic_store(&fault_err[op], err ? err : ENOMEM);
  atomic_store(&fault_nth[op], nth);
  int any = 0;
  for (int i = 0; i < MS_FAULT_OP_COUNT; i++) any |= atomic_load(&fault_nth[i]) != 0;
  atomic_store(&fault_armed, any);
}

MSI_HOT_TEXT bool msi_fault_hit(ms_fault_op_t op, int *err) {
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

/* the errno of an injected failure: a negative err (ms_fault_inject) fails with its absolute value */
static inline int fault_errno(int err) { return err < 0 ? -err : err; }

#define COUNT_CALL() atomic_fetch_add_explicit(&msi_os_counters.calls, 1, memory_order_relaxed)
#define COUNT_FAIL() atomic_fetch_add_explicit(&msi_os_counters.failures, 1, memory_order_relaxed)
#define INJECT(op, failval)                                                                                     \
  do {                                                                                                         \
    int err_;                                                                                                  \
    if (MSI_UNLIKELY(msi_fault_hit(op, &err_))) { COUNT_FAIL(); errno = fault_errno(err_); return failval; }  \
  } while (0)

/* the reservations whose fixed mappings are counted commits (MSI_OS_RESERVE_COUNT_FIXED), written once each */
#define COUNTED_MAX 4
static struct { _Atomic uintptr_t start, end; } counted[COUNTED_MAX];
MSI_START_BSS static _Atomic unsigned ncounted;

static void count_fixed(uintptr_t a, size_t size, int prot, int flags, int fd) {
  for (unsigned i = 0; i < COUNTED_MAX; i++) {
    uintptr_t end = atomic_load_explicit(&counted[i].end, memory_order_acquire);
    if (!end || a < atomic_load_explicit(&counted[i].start, memory_order_relaxed) || a + size > end) continue;
    if (prot == PROT_NONE) msi_os_count_decommit(size);
    else if (!(fd >= 0 && (flags & MAP_PRIVATE))) msi_os_count_commit(size);
    return;
  }
}

/* a reservation made with MSI_OS_RESERVE_COUNT_FIXED (none beyond COUNTED_MAX: uncounted then); no lock (a
   fork never copies one held): a slot is claimed, then published by its end */
static void count_fixed_add(uintptr_t start, size_t size) {
  unsigned i = atomic_fetch_add(&ncounted, 1);
  if (i >= COUNTED_MAX) return;
  atomic_store_explicit(&counted[i].start, start, memory_order_relaxed);
  atomic_store_explicit(&counted[i].end, start + size, memory_order_release);
}

/* an injected failure of mmap or mremap: a negative error (ms_fault_inject) also unmaps a fixed target first, as
   a kernel before 6.12 (mmap) or 6.17 (mremap) does when commit accounting refuses the new mapping */
static void *mmap_fault(int err, void *target, size_t size, bool fixed) {
  COUNT_FAIL();
  if (err < 0 && fixed) munmap(target, size);
  errno = fault_errno(err);
  return MAP_FAILED;
}

MSI_HOT_TEXT void *msi_os_mmap(void *addr, size_t size, int prot, int flags, int fd, off_t offset) {
  int ferr;
  if (MSI_UNLIKELY(msi_fault_hit(MS_FAULT_MMAP, &ferr))) return mmap_fault(ferr, addr, size, flags & MAP_FIXED);
  COUNT_CALL();
  void *p;
  do p = mmap(addr, size, prot, flags, fd, offset); while (p == MAP_FAILED && errno == EINTR);
  if (p == MAP_FAILED) COUNT_FAIL();
  else if (MSI_UNLIKELY(flags & MAP_FIXED) && atomic_load_explicit(&ncounted, memory_order_relaxed))
    count_fixed((uintptr_t)p, size, prot, flags, fd);
  return p;
}

/* ---- commits outside the page layer ---- */
void msi_os_count_decommit(size_t bytes) {
  uint64_t cur = atomic_load_explicit(&msi_os_counters.committed, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&msi_os_counters.committed, &cur, cur > bytes ? cur - bytes : 0,
                                                memory_order_relaxed, memory_order_relaxed)) {}
}
void *msi_os_commit_map(void *addr, size_t size, int prot, int flags, int fd, off_t offset) {
  void *p = msi_os_mmap(addr, size, prot, flags, fd, offset);
  if (p != MAP_FAILED) msi_os_count_commit(size);
  return p;
}
int msi_os_purge(void *addr, size_t size) {
  msi_os_count_decommit(size);
  return msi_os_madvise(addr, size, MADV_DONTNEED);
}

/* ---- address space reserved with back-off ---- */
/* maps `size` bytes at a start aligned to `align` (natural: the alignment the kernel gives anyway); NULL + errno */
MSI_STARTUP_TEXT static void *map_aligned(msi_os_reservation_t *r, size_t size, size_t align, size_t natural) {
  int prot = r->prot, flags = r->map_flags ? r->map_flags : MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  size_t total = size + (align > natural ? align - natural : 0);
  if (total < size) { errno = ENOMEM; return NULL; }
  void *p = msi_os_mmap((void *)r->hint, total, prot, flags, -1, 0);
  if (p == MAP_FAILED) return NULL;
  uintptr_t start = msi_align_up((uintptr_t)p, align);
  if ((start + size) >> 48) { /* asked for no address above 2^47: never here, but the heap relies on it */
    msi_os_munmap(p, total);
    errno = ENOMEM;
    return NULL;
  }
  size_t head = start - (uintptr_t)p, tail = total - head - size;
  r->map = p, r->map_size = total;
  if (!(r->flags & MSI_OS_RESERVE_KEEP_SLACK)) {
    if (head) msi_os_munmap(p, head);
    if (tail) msi_os_munmap((void *)(start + size), tail);
    r->map = (void *)start, r->map_size = size;
  }
  return (void *)start;
}

MSI_STARTUP_TEXT int msi_os_reserve(msi_os_reservation_t *r) {
  size_t ps = msi_os_page_size(), unit = r->unit > ps ? r->unit : ps;
  size_t natural = (r->map_flags & MAP_HUGETLB) ? unit : ps;
  bool halve = r->flags & MSI_OS_RESERVE_HALVE_ALIGN;
  size_t size = msi_round_up(r->want, unit), min = r->min ? msi_round_up(r->min, unit) : size;
  size_t align = r->align > unit ? r->align : unit, min_align = r->min_align ? r->min_align : align;
  size_t budget = r->budget ? r->budget : SIZE_MAX;
  if (min_align < unit) min_align = unit;
  if (!size || !min || (r->align && !msi_is_pow2(r->align)) || !msi_is_pow2(min_align)) {
    errno = size && min ? EINVAL : ENOMEM;
    return errno;
  }
  if (min > size) min = size;
  int err = ENOMEM;
  for (;;) {
    bool last = size <= min;
    size_t need = size + (halve ? align : 0);
    if ((need >= size && need <= budget) || (last && !(r->flags & MSI_OS_RESERVE_STRICT))) {
      for (;;) {
        void *p = map_aligned(r, size, align, natural);
        if (p) {
          r->addr = p, r->size = size, r->got_align = align;
          if (r->flags & MSI_OS_RESERVE_COUNT_FIXED) count_fixed_add((uintptr_t)p, size);
          return 0;
        }
        err = errno;
        if (halve || align <= min_align) break;
        align = min_align; /* the same size with less slack, and so for the smaller ones */
      }
    }
    if (last) break;
    size_t next;
    if (halve) {
      if (align > unit) align /= 2;
      next = size / 2 - ((r->flags & MSI_OS_RESERVE_DROP_UNIT) && size / 2 > align ? align : 0);
      next = msi_align_down(next, align);
    } else {
      next = msi_round_up(min + (size - min) / 2, unit);
    }
    size = next > min && next < size ? next : min;
  }
  r->addr = NULL, r->size = 0;
  errno = err;
  return err;
}

void *msi_os_mremap(void *old, size_t old_size, size_t new_size, int flags, void *new_addr) {
  int ferr;
  if (MSI_UNLIKELY(msi_fault_hit(MS_FAULT_MMAP, &ferr)))
    return mmap_fault(ferr, new_addr, new_size, flags & MREMAP_FIXED);
  COUNT_CALL();
  void *p;
  do p = mremap(old, old_size, new_size, flags, new_addr); while (p == MAP_FAILED && errno == EINTR);
  if (p == MAP_FAILED) COUNT_FAIL();
  return p;
}

void *msi_os_mremap_probe(void *old, size_t old_size, size_t new_size) {
  COUNT_CALL();
  atomic_fetch_add_explicit(&msi_os_counters.probes, 1, memory_order_relaxed);
  void *p;
  int saved = errno; /* a probe: its refusal is an answer, not an error the caller's errno should show */
  do p = mremap(old, old_size, new_size, 0); while (p == MAP_FAILED && errno == EINTR);
  errno = saved;
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

MSI_HOT_TEXT int msi_os_munmap(void *addr, size_t size) {
  COUNT_CALL();
  int r = munmap(addr, size);
  if (r) COUNT_FAIL();
  return r;
}
int msi_os_mprotect(void *addr, size_t size, int prot) { RETRY_INT(MS_FAULT_MPROTECT, mprotect(addr, size, prot)); }
MSI_HOT_TEXT int msi_os_madvise(void *addr, size_t size, int advice) { RETRY_INT(MS_FAULT_MADVISE, madvise(addr, size, advice)); }
int msi_os_mlock(const void *addr, size_t size) { RETRY_INT(MS_FAULT_MLOCK, mlock(addr, size)); }
int msi_os_munlock(const void *addr, size_t size) {
  COUNT_CALL();
  return munlock(addr, size);
}
/* The calls that are POSIX cancellation points (open, close, read, pread, write, fallocate, sync_file_range) go
   to the kernel through syscall(), which is none: a thread with a pending pthread_cancel request must not be
   cancelled inside malloc or free, holding a lock (spill's, taken around its file calls) that the other threads
   then wait for forever. glibc's own malloc uses its non-cancelling calls for the same reason. */
#define NOCANCEL(...) ((int)syscall(__VA_ARGS__))
int msi_os_fallocate(int fd, int mode, off_t offset, off_t len) {
  RETRY_INT(MS_FAULT_FALLOCATE, NOCANCEL(SYS_fallocate, fd, mode, offset, len));
}

MSI_HOT_TEXT int msi_os_open(const char *path, int flags, unsigned mode) {
  RETRY_INT(MS_FAULT_OP_COUNT, NOCANCEL(SYS_openat, AT_FDCWD, path, flags, mode));
}
int msi_os_close(int fd) {
  COUNT_CALL();
  return NOCANCEL(SYS_close, fd); /* never retried: the descriptor is gone even on EINTR */
}
int msi_os_dup_high(int fd, int min_fd) { RETRY_INT(MS_FAULT_OP_COUNT, fcntl(fd, F_DUPFD_CLOEXEC, min_fd)); }
/* pipe2, fstat and copy_file_range through syscall() too: each libc wrapper of a newer glibc version (2.9, 2.33,
   2.27) would add a version the dynamic loader checks against the C library's in every process that loads
   memspace, spill's or not */
int msi_os_pipe(int fds[2]) { RETRY_INT(MS_FAULT_OP_COUNT, NOCANCEL(SYS_pipe2, fds, O_CLOEXEC)); }
/* ppoll through syscall(): glibc's poll is a cancellation point, and spill looks under its lock */
bool msi_os_hung_up(int fd) {
  COUNT_CALL();
  struct pollfd p = {.fd = fd, .events = 0, .revents = 0};
  struct timespec zero = {0, 0};
  int r;
  do r = NOCANCEL(SYS_ppoll, &p, 1, &zero, NULL, (size_t)_NSIG / 8); while (r < 0 && errno == EINTR);
  if (r < 0) COUNT_FAIL();
  return r > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}
MSI_HOT_TEXT ssize_t msi_os_read(int fd, void *buf, size_t len) {
  COUNT_CALL();
  ssize_t r;
  do r = syscall(SYS_read, fd, buf, len); while (r < 0 && errno == EINTR);
  if (r < 0) COUNT_FAIL();
  return r;
}
ssize_t msi_os_pread(int fd, void *buf, size_t len, off_t offset) {
  COUNT_CALL();
  ssize_t r;
  do r = syscall(SYS_pread64, fd, buf, len, offset); while (r < 0 && errno == EINTR);
  if (r < 0) COUNT_FAIL();
  return r;
}
ssize_t msi_os_write(int fd, const void *buf, size_t len) {
  COUNT_CALL();
  ssize_t r;
  do r = syscall(SYS_write, fd, buf, len); while (r < 0 && errno == EINTR);
  if (r < 0) COUNT_FAIL();
  return r;
}
int msi_os_unlink(const char *path) { RETRY_INT(MS_FAULT_OP_COUNT, unlink(path)); }
long msi_os_getcwd(char *buf, size_t size) {
  COUNT_CALL();
  long n = syscall(SYS_getcwd, buf, size); /* (the length with its NUL) */
  if (n > 0 && buf[0] != '/') { errno = ENOENT; return -1; }
  return n > 0 ? n - 1 : -1;
}
int msi_os_ftruncate(int fd, off_t size) { RETRY_INT(MS_FAULT_FALLOCATE, ftruncate(fd, size)); }
int msi_os_fstatfs(int fd, struct statfs *st) { RETRY_INT(MS_FAULT_OP_COUNT, fstatfs(fd, st)); }
/* (the kernel's struct stat is the C library's on x86_64, aarch64 and riscv64; elsewhere the C library converts) */
#if defined(SYS_fstat) && (defined(__x86_64__) || defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64))
#define FSTAT(fd, st) NOCANCEL(SYS_fstat, fd, st)
#else
#define FSTAT(fd, st) fstat(fd, st)
#endif
long long msi_os_fstat_blocks(int fd) {
  struct stat st;
  COUNT_CALL();
  if (FSTAT(fd, &st) != 0) { COUNT_FAIL(); return -1; }
  return (long long)st.st_blocks * 512;
}
int msi_os_fstat_id(int fd, unsigned long long *dev, unsigned long long *ino, long long *bytes) {
  struct stat st;
  COUNT_CALL();
  if (FSTAT(fd, &st) != 0) { COUNT_FAIL(); return -1; }
  *dev = (unsigned long long)st.st_dev;
  *ino = (unsigned long long)st.st_ino;
  if (bytes) *bytes = (long long)st.st_blocks * 512;
  return 0;
}
int msi_os_sync_file_range(int fd, off_t offset, off_t len, unsigned flags) {
  RETRY_INT(MS_FAULT_OP_COUNT, NOCANCEL(SYS_sync_file_range, fd, offset, len, flags));
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
/* capability `cap` (below 32) in this thread's effective set: capget, which needs no /proc */
bool msi_os_has_cap(int cap) {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {{0}};
  return syscall(SYS_capget, &hdr, caps) == 0 && (caps[0].effective >> cap) & 1;
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
  return msi_os_has_cap(CAP_SYS_NICE);
}
bool msi_os_may_lock(size_t bytes) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= bytes) return true;
  return msi_os_has_cap(CAP_IPC_LOCK);
}
void msi_os_yield(void) { sched_yield(); }
/* through syscall(): no file read (sysconf reads /sys, which a sandbox may forbid), no libc symbol bound for it */
unsigned msi_os_cpu_count(void) {
  uint64_t mask[16] = {0};
  long n = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
  unsigned c = 0;
  for (long i = 0; i < n / 8; i++) /* (no __builtin_popcountll: libgcc's helper without popcnt, heap.h) */
    for (uint64_t m = mask[i]; m; m &= m - 1) c++;
  return c ? c : 1;
}
/* a seccomp filter (a sandbox) may kill the process for a system call it forbids: open() included. Through
   syscall(), which the heap's start-up has bound already: no lookup of prctl by the dynamic loader in the first
   allocation (the seccomp watch starts there) */
MSI_HOT_TEXT bool msi_os_seccomp_filtered(void) { return syscall(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0) != 0; }
ssize_t msi_os_copy_file_range(int fd_in, off_t off_in, int fd_out, off_t off_out, size_t len) {
  INJECT(MS_FAULT_FALLOCATE, -1);
  COUNT_CALL();
  ssize_t r;
  int64_t in = off_in, out = off_out; /* (the kernel's loff_t, whatever off_t is) */
  do r = syscall(SYS_copy_file_range, fd_in, &in, fd_out, &out, len, 0u); while (r < 0 && errno == EINTR);
  if (r < 0) COUNT_FAIL();
  return r;
}
/* (MSI_COLD: a short process with a block of a dense large size reads RLIMIT_DATA, large.c charged()) */
MSI_COLD int msi_os_getrlimit(int resource, struct rlimit *rl) { RETRY_INT(MS_FAULT_OP_COUNT, getrlimit(resource, rl)); }
int msi_os_mincore(void *addr, size_t size, unsigned char *vec) { RETRY_INT(MS_FAULT_OP_COUNT, mincore(addr, size, vec)); }
long long msi_os_seek_data(int fd, long long off) {
  INJECT(MS_FAULT_OP_COUNT, -1);
  COUNT_CALL();
  long long r = (long long)syscall(SYS_lseek, fd, off, SEEK_DATA); /* (no libc wrapper: one symbol fewer to bind) */
  if (r == -1) COUNT_FAIL();
  return r;
}
int msi_os_fadvise(int fd, off_t off, off_t len, int advice) {
  RETRY_INT(MS_FAULT_OP_COUNT, (int)syscall(SYS_fadvise64, fd, off, len, advice));
}
/* questions about the process asked only for messages and statistics (the pid, whether stderr is open, the peak
   RSS) and the statistics' copy of stderr: not counted, so that the `syscalls` line is the work memspace does for the program, the same whether
   statistics are shown or not */
int msi_os_getrusage(struct rusage *ru) { return getrusage(RUSAGE_SELF, ru); }
int msi_os_getpid(void) { return (int)getpid(); }
int msi_os_fd_open(int fd) { return fcntl(fd, F_GETFD) != -1; } /* a closed fd is an answer, not a failure */
int msi_os_fd_cloexec(int fd) {
  int f = fcntl(fd, F_GETFD);
  return f != -1 && (f & FD_CLOEXEC);
}
void msi_os_signal_take(int sig) {
  sigset_t set;
  struct timespec zero = {0, 0};
  sigemptyset(&set);
  sigaddset(&set, sig);
  syscall(SYS_rt_sigtimedwait, &set, NULL, &zero, (size_t)_NSIG / 8); /* not glibc's: a cancellation point */
}
int msi_os_set_blocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl == -1 ? -1 : fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}
int msi_os_stderr_copy(void) { return fcntl(2, F_DUPFD_CLOEXEC, 100); } /* for the statistics at exit */
int msi_os_lock_file(int fd, bool lock) {
  struct flock fl = {.l_type = lock ? F_WRLCK : F_UNLCK, .l_whence = SEEK_SET};
  /* (syscall(): fcntl with F_SETLKW is a cancellation point, and exit handlers may run in any thread) */
  RETRY_INT(MS_FAULT_OP_COUNT, NOCANCEL(SYS_fcntl, fd, lock ? F_SETLKW : F_SETLK, &fl));
}
/* a wait, like the futex and yield wrappers: not counted (the maintenance thread's sleeps would swamp the count) */
void msi_os_sleep_ms(unsigned ms) { /* errno kept: a signal's EINTR is no caller's failure */
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  int saved = errno;
  nanosleep(&ts, NULL);
  errno = saved;
}
/* the vDSO's clock: no system call, not counted */
MSI_HOT_TEXT uint64_t msi_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* CLOCK_MONOTONIC as of the last timer tick, in milliseconds (wraps after 49 days): the vDSO reads it without the
   time-stamp counter */
MSI_HOT_TEXT uint32_t msi_now_coarse_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint32_t)((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
}

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

/* ---- system files: whole small files into a caller buffer, larger ones line by line; no stdio, no allocation ---- */
/* Reading files under a seccomp filter, once a part that reads files in the background or on large allocations
   has started (msi_os_reads_watch: the maintenance thread, spill, the fork child of a threaded program). A filter
   already there then (a container's, inherited across exec; or one the program installed before) let the process
   come this far and stays as it is: reads go on. One that comes later is the program sandboxing itself (a browser's renderer; with
   SECCOMP_FILTER_FLAG_TSYNC, as libseccomp's TSYNC attribute sets, it filters every thread, the maintenance thread
   too), and it may kill the process for an open(): a thread under such a filter reads no file from then on (EPERM,
   as a refusing filter answers; the callers treat the file as unreadable). One question (prctl: a filter is the
   thread's) per read while no filter was there at the start; a filter installed between the question and the
   open is not seen. Before that start no question is asked (nothing added to a small program's first malloc). */
MSI_START_BSS static _Atomic int reads_watch; /* 0 not watching, 1 no filter at the start, 2 filtered then */
static _Thread_local bool reads_late;
MSI_STARTUP_TEXT void msi_os_reads_watch(void) {
  if (atomic_load_explicit(&reads_watch, memory_order_relaxed)) return;
  int expected = 0;
  atomic_compare_exchange_strong(&reads_watch, &expected, msi_os_seccomp_filtered() ? 2 : 1);
}
static bool reads_refused(void) {
  if (atomic_load_explicit(&reads_watch, memory_order_relaxed) != 1) return false;
  if (!reads_late && msi_os_seccomp_filtered()) reads_late = true;
  return reads_late;
}
MSI_HOT_TEXT static int open_ro(const char *path) {
  if (reads_refused()) {
    errno = EPERM;
    return -1;
  }
  return msi_os_open(path, O_RDONLY | O_CLOEXEC, 0);
}

ssize_t msi_os_read_file(const char *path, char *buf, size_t cap) {
  if (cap) buf[0] = 0;
  int fd = open_ro(path);
  if (fd < 0) return -1;
  size_t len = 0;
  ssize_t n = 0;
  while (len + 1 < cap && (n = msi_os_read(fd, buf + len, cap - 1 - len)) > 0) len += (size_t)n;
  int err = errno;
  msi_os_close(fd);
  if (cap) buf[len] = 0;
  if (n < 0 && len == 0) { errno = err; return -1; }
  return (ssize_t)len;
}

bool msi_os_parse_dec(const char *s, uint64_t *v) {
  if (*s < '0' || *s > '9') return false;
  msi_os_parse_u64(s, 10, v);
  return true;
}

bool msi_os_text_value(const char *text, const char *key, uint64_t *v) {
  size_t kl = strlen(key);
  for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    if (strncmp(l, key, kl) == 0 && (l[kl] == ' ' || l[kl] == ':')) {
      const char *s = l + kl + 1;
      while (*s == ' ') s++;
      return msi_os_parse_dec(s, v);
    }
  }
  return false;
}

bool msi_os_text_kb(const char *text, const char *key, uint64_t *bytes) {
  uint64_t kb;
  if (!msi_os_text_value(text, key, &kb)) return false;
  *bytes = kb > UINT64_MAX / 1024 ? UINT64_MAX : kb * 1024;
  return true;
}

bool msi_os_meminfo(const char *key, uint64_t *bytes) {
  char buf[8192];
  if (msi_os_read_file("/proc/meminfo", buf, sizeof buf) <= 0) return msi_os_sysinfo_value(key, bytes);
  return msi_os_text_kb(buf, key, bytes);
}

/* sysinfo(2) needs no /proc (a chroot, a container without it). It has no page-cache figure, so MemAvailable
   is its lower bound: free and buffer memory, the page cache left out. */
bool msi_os_sysinfo_value(const char *key, uint64_t *bytes) {
  struct sysinfo si;
  if (syscall(SYS_sysinfo, &si) != 0) return false;
  uint64_t unit = si.mem_unit ? si.mem_unit : 1, v;
  if (!strcmp(key, "MemTotal")) v = si.totalram;
  else if (!strcmp(key, "MemFree")) v = si.freeram;
  else if (!strcmp(key, "MemAvailable")) v = (uint64_t)si.freeram + si.bufferram;
  else if (!strcmp(key, "SwapTotal")) v = si.totalswap;
  else if (!strcmp(key, "SwapFree")) v = si.freeswap;
  else return false;
  *bytes = v * unit;
  return true;
}

/* a number file of /proc or /sys gives its whole text in one read: open, read, close (no read of the end) */
MSI_HOT_TEXT bool msi_os_read_ull(const char *path, unsigned long long *value) {
  char buf[64];
  uint64_t v;
  int fd = open_ro(path);
  if (fd < 0) return false;
  ssize_t n = msi_os_read(fd, buf, sizeof buf - 1);
  msi_os_close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  if (!msi_os_parse_dec(buf, &v)) return false;
  *value = v;
  return true;
}

bool msi_os_lines_open(msi_os_lines_t *r, const char *path) {
  r->len = r->pos = 0, r->eof = false, r->line[0] = 0;
  r->fd = open_ro(path);
  return r->fd >= 0;
}

bool msi_os_lines_next(msi_os_lines_t *r) {
  size_t n = 0;
  for (;;) {
    if (r->pos == r->len) {
      if (r->eof) break;
      ssize_t got = msi_os_read(r->fd, r->buf, sizeof r->buf);
      if (got <= 0) { r->eof = true; break; }
      r->len = (size_t)got, r->pos = 0;
    }
    char c = r->buf[r->pos++];
    if (c == '\n') { r->line[n] = 0; return true; }
    if (n + 1 < sizeof r->line) r->line[n++] = c;
  }
  r->line[n] = 0;
  return n > 0;
}

void msi_os_lines_close(msi_os_lines_t *r) {
  if (r->fd >= 0) msi_os_close(r->fd);
  r->fd = -1;
}

MSI_HOT_TEXT const char *msi_os_parse_u64(const char *s, unsigned base, uint64_t *v) {
  uint64_t x = 0;
  for (;; s++) {
    unsigned d = *s >= '0' && *s <= '9' ? (unsigned)(*s - '0') : *s >= 'a' && *s <= 'f' ? (unsigned)(*s - 'a' + 10) : 99;
    if (d >= base) break;
    x = x > (UINT64_MAX - d) / base ? UINT64_MAX : x * base + d; /* (past 2^64 - 1: the most, not what it wraps to) */
  }
  *v = x;
  return s;
}
bool msi_os_vmflag(const char *line, const char *f) {
  for (const char *p = strchr(line, ':'); p && *p;) {
    while (*p == ' ' || *p == ':') p++;
    const char *t = p;
    while (*p && *p != ' ') p++;
    if (p - t == 2 && t[0] == f[0] && t[1] == f[1]) return true;
  }
  return false;
}

int msi_os_smaps_walk(uintptr_t from, uintptr_t to, bool (*fn)(const msi_os_mapping_t *m, void *arg), void *arg) {
  msi_os_lines_t r;
  if (!msi_os_lines_open(&r, "/proc/self/smaps")) return errno ? errno : EIO;
  msi_os_mapping_t m = {0, 0, false, 0, NULL};
  bool in = false; /* the lines read belong to a mapping fn is to see */
  while (msi_os_lines_next(&r)) {
    char c = r.line[0];
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) { /* a mapping's first line; its fields start upper case */
      uint64_t vs, ve;
      const char *p = msi_os_parse_u64(r.line, 16, &vs);
      if (*p != '-') continue;
      p = msi_os_parse_u64(p + 1, 16, &ve);
      if (vs >= to) break;
      in = ve > from;
      m = (msi_os_mapping_t){(uintptr_t)vs, (uintptr_t)ve, p[0] == ' ' && p[1] && p[2] == 'w', 0, NULL};
    } else if (in && strncmp(r.line, "KernelPageSize:", 15) == 0) {
      const char *p = r.line + 15;
      while (*p == ' ') p++;
      uint64_t kb;
      msi_os_parse_u64(p, 10, &kb);
      m.page = kb > SIZE_MAX / 1024 ? SIZE_MAX : (size_t)kb * 1024;
    } else if (in && strncmp(r.line, "VmFlags:", 8) == 0) {
      m.vmflags = r.line, in = false;
      if (!fn(&m, arg)) break;
      from = m.end; /* a mapping the file shows again (read in chunks while the mappings change) is skipped */
    }
  }
  msi_os_lines_close(&r);
  return 0;
}

/* ---- the cgroup memory budget ---- */
/* These run on whichever thread first needs the budget (spill's first block, a space's first lock): one path buffer
   on the stack, the cgroup paths read in place in the text of /proc/self/cgroup, which msi_os_cgroup_budget reads
   into out->stat_path (the caller's storage), so that a thread of PTHREAD_STACK_MIN (about 12 KiB usable) has room */

/* dst = a b dir[0..n) "/" file, cut to cap */
static void cgroup_join(char *dst, size_t cap, const char *a, const char *b, const char *dir, size_t n, const char *file) {
  size_t len = msi_snprintf(dst, cap, "%s%s", a, b);
  if (len >= cap) return;
  if (n > cap - 1 - len) n = cap - 1 - len;
  msi_memcpy(dst + len, dir, n);
  msi_snprintf(dst + len + n, cap - len - n, "/%s", file);
}

/* The smallest limit of the cgroup dir[0..n) (below the mount `sysfs``sub`) and its ancestors, from the files
   named: lowers *limit and sets *limiting to the length of the limiting cgroup's path when one is below it. `path`:
   scratch of PATH_MAX + 64 bytes. */
static void cgroup_walk(const char *sysfs, const char *sub, const char *dir, size_t n, const char *const *files,
                        unsigned nfiles, uint64_t *limit, size_t *limiting, char *path) {
  for (;;) {
    for (unsigned f = 0; f < nfiles; f++) {
      char val[64];
      uint64_t v;
      cgroup_join(path, PATH_MAX + 64, sysfs, sub, dir, n, files[f]);
      if (msi_os_read_file(path, val, sizeof val) > 0 && msi_os_parse_dec(val, &v) && v < *limit && v < (1ull << 62))
        *limit = v, *limiting = n;
    }
    size_t slash = n; /* the parent: up to the last '/', "/" itself for a child of the root */
    while (slash > 0 && dir[slash - 1] != '/') slash--;
    if (slash == 0 || (slash == 1 && n == 1)) break;
    n = slash == 1 ? 1 : slash - 1;
  }
}

typedef struct {
  const char *at;
  size_t len;
} cgroup_span_t;

/* from /proc/self/cgroup's lines "ID:CONTROLLERS:PATH": the v1 memory controller's path and the v2 one's (len 0:
   none), pointing into text */
static void cgroup_paths(const char *text, cgroup_span_t *v1, cgroup_span_t *v2) {
  *v1 = *v2 = (cgroup_span_t){"", 0};
  for (const char *l = text; l && *l;) {
    const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l);
    const char *c1 = memchr(l, ':', (size_t)(end - l)), *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
    if (c2) {
      cgroup_span_t path = {c2 + 1, (size_t)(end - c2 - 1)};
      if (path.len >= PATH_MAX) path.len = PATH_MAX - 1;
      if (c1 == l + 1 && l[0] == '0' && c2 == c1 + 1) *v2 = path;
      for (const char *t = c1 + 1; t < c2;) {
        size_t n = strcspn(t, ",:");
        if (n == 6 && strncmp(t, "memory", 6) == 0) *v1 = path;
        t += n + (t[n] == ',');
      }
    }
    l = nl ? nl + 1 : NULL;
  }
}

void msi_os_cgroup_find(const char *sysfs, const char *proc_cgroup, uint64_t ram, msi_os_cgroup_t *out) {
  static const char *const v1_files[] = {"memory.limit_in_bytes"};
  static const char *const v2_files[] = {"memory.max", "memory.high"};
  static const char *const v2_subs[] = {"", "/unified"};
  char path[PATH_MAX + 64], buf[64];
  cgroup_span_t v1, v2;
  cgroup_paths(proc_cgroup, &v1, &v2); /* (proc_cgroup may be out->stat_path: written last) */
  const char *sub = NULL;
  cgroup_span_t dir = {"", 0};
  uint64_t limit = ram;
  size_t limiting = SIZE_MAX;
  out->version = 0;
  out->dirty_key = "Dirty";
  out->anon_key = "AnonPages";
  cgroup_join(path, sizeof path, sysfs, "/memory", v1.at, v1.len, "memory.stat");
  if (v1.len && msi_os_read_file(path, buf, sizeof buf) > 0) {
    out->version = 1, sub = "/memory", dir = v1;
    cgroup_walk(sysfs, sub, dir.at, dir.len, v1_files, 1, &limit, &limiting, path);
    if (limiting != SIZE_MAX) out->dirty_key = "total_dirty", out->anon_key = "total_rss";
  }
  for (unsigned r = 0; !out->version && v2.len && r < 2; r++) {
    cgroup_join(path, sizeof path, sysfs, v2_subs[r], v2.at, v2.len, "memory.stat");
    if (msi_os_read_file(path, buf, sizeof buf) <= 0) continue;
    out->version = 2, sub = v2_subs[r], dir = v2;
    cgroup_walk(sysfs, sub, dir.at, dir.len, v2_files, 2, &limit, &limiting, path);
    if (limiting != SIZE_MAX) out->dirty_key = "file_dirty", out->anon_key = "anon";
  }
  path[0] = 0;
  if (limiting != SIZE_MAX) cgroup_join(path, sizeof path, sysfs, sub, dir.at, limiting, "memory.stat");
  size_t n = dir.len < sizeof out->cgroup - 1 ? dir.len : sizeof out->cgroup - 1;
  msi_memcpy(out->cgroup, dir.at, n); /* (a different field from the text, which may be in stat_path) */
  out->cgroup[n] = 0;
  msi_snprintf(out->stat_path, sizeof out->stat_path, "%s", path);
  out->limit = limit;
}

void msi_os_cgroup_budget(uint64_t ram, msi_os_cgroup_t *out) {
  _Static_assert(sizeof out->stat_path >= 4096, "room for /proc/self/cgroup");
  if (msi_os_read_file("/proc/self/cgroup", out->stat_path, sizeof out->stat_path) <= 0) out->stat_path[0] = 0;
  msi_os_cgroup_find("/sys/fs/cgroup", out->stat_path, ram, out);
}

bool msi_os_cgroup_file(const msi_os_cgroup_t *cg, const char *name, char *out, size_t size) {
  const char *slash = strrchr(cg->stat_path, '/');
  size_t n = slash ? (size_t)(slash - cg->stat_path) + 1 : 0, m = strlen(name);
  out[0] = 0;
  if (!slash || n + m >= size) return false;
  msi_memcpy(out, cg->stat_path, n);
  msi_memcpy(out + n, name, m + 1);
  return true;
}

/* ---- facts read once ---- */
/* the address space the process has mapped (VmSize, which RLIMIT_AS limits): /proc/self/statm's first number, in
   pages; 0 when unreadable. No allocation. */
size_t msi_os_vm_size(void) {
  unsigned long long pages;
  return msi_os_read_ull("/proc/self/statm", &pages) ? (size_t)pages * msi_os_page_size() : 0;
}

/* RLIMIT_AS's soft limit in bytes, SIZE_MAX when unlimited (or unreadable). prlimit64 through syscall(), the
   system call glibc's getrlimit makes: every allocating process binds syscall() anyway (NOCANCEL below), and a
   lazily bound libc function costs its first caller a symbol lookup through the loaded libraries */
MSI_STARTUP_TEXT size_t msi_os_as_limit(void) {
  struct rlimit rl;
  _Static_assert(sizeof rl == 2 * sizeof(uint64_t) && sizeof rl.rlim_cur == sizeof(uint64_t), "struct rlimit64");
  if (syscall(SYS_prlimit64, 0, RLIMIT_AS, NULL, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > SIZE_MAX)
    return SIZE_MAX;
  return (size_t)rl.rlim_cur;
}

size_t msi_os_as_share(unsigned share) {
  size_t limit = msi_os_as_limit();
  return limit == SIZE_MAX || share == 0 ? limit : limit / share;
}

/* true when /sys/kernel/mm/transparent_hugepage/enabled selects [never] */
static bool thp_never(void) {
  char buf[128];
  return msi_os_read_file("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) > 0 &&
         strstr(buf, "[never]") != NULL;
}

MSI_HOT_TEXT size_t msi_os_page_size(void) {
  MSI_START_DATA static _Atomic size_t cached; /* read, then written, by every allocating process */
  size_t p = atomic_load_explicit(&cached, memory_order_relaxed);
  if (MSI_UNLIKELY(p == 0)) {
    unsigned long v = getauxval(AT_PAGESZ); /* (sysconf's source, and no lookup of a libc function more) */
    p = v ? (size_t)v : 4096;
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

/* The online NUMA nodes: /sys/devices/system/node/online lists them as ranges ("0", "0-3", "0,2-3"); node ids
   need not be contiguous (a node taken offline, memory-only nodes), so a node is checked against the list, not
   against a count. Ids below MSI_OS_NUMA_MAX; node 0 alone when the file is unreadable (no NUMA support). */
bool msi_os_numa_parse(const char *text, uint64_t mask[MSI_OS_NUMA_MAX / 64]) {
  memset(mask, 0, MSI_OS_NUMA_MAX / 8);
  bool any = false;
  for (const char *p = text; *p && *p != '\n';) {
    unsigned lo = 0, hi;
    if (*p < '0' || *p > '9') return false;
    for (; *p >= '0' && *p <= '9'; p++) lo = lo < MSI_OS_NUMA_MAX ? lo * 10 + (unsigned)(*p - '0') : lo;
    hi = lo;
    if (*p == '-') {
      if (*++p < '0' || *p > '9') return false;
      for (hi = 0; *p >= '0' && *p <= '9'; p++) hi = hi < MSI_OS_NUMA_MAX ? hi * 10 + (unsigned)(*p - '0') : hi;
    }
    for (unsigned n = lo; n <= hi && n < MSI_OS_NUMA_MAX; n++) mask[n / 64] |= 1ull << (n % 64), any = true;
    if (*p == ',') p++;
    else if (*p && *p != '\n') return false;
  }
  return any;
}

bool msi_os_numa_node_ok(int node) {
  static _Atomic uint64_t online[MSI_OS_NUMA_MAX / 64]; /* (atomic: a racing first reader may still store) */
  static _Atomic int state; /* 0 not read, 1 read */
  if (node < 0 || node >= MSI_OS_NUMA_MAX) return false;
  if (!atomic_load_explicit(&state, memory_order_acquire)) {
    char text[512];
    uint64_t m[MSI_OS_NUMA_MAX / 64];
    ssize_t n = msi_os_read_file("/sys/devices/system/node/online", text, sizeof text);
    if (n <= 0 || (size_t)n >= sizeof text || (text[n] = 0, !msi_os_numa_parse(text, m))) {
      memset(m, 0, sizeof m);
      m[0] = 1; /* node 0 */
    }
    for (size_t i = 0; i < MSI_OS_NUMA_MAX / 64; i++) /* racing threads store the same */
      atomic_store_explicit(&online[i], m[i], memory_order_relaxed);
    atomic_store_explicit(&state, 1, memory_order_release);
  }
  return (atomic_load_explicit(&online[node / 64], memory_order_relaxed) >> (node % 64)) & 1;
}

/* whether the kernel takes madvise `advice` on a fresh page, asked once; *state: 0 unknown, 1 yes, 2 no */
static bool madvise_known(_Atomic int *state, int advice) {
  int s = atomic_load(state);
  if (s) return s == 1;
  size_t ps = msi_os_page_size();
  void *p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  bool ok = p != MAP_FAILED && madvise(p, ps, advice) == 0;
  if (p != MAP_FAILED) munmap(p, ps);
  atomic_store(state, ok ? 1 : 2);
  return ok;
}

bool msi_os_has_madv_free(void) {
  static _Atomic int state;
  return madvise_known(&state, MADV_FREE);
}

int msi_os_mapped(void *addr, size_t size) {
  /* MADV_NORMAL changes nothing on our ranges (we never set SEQ/RANDOM) but fails with ENOMEM on a hole */
  COUNT_CALL();
  int r = madvise(addr, size, MADV_NORMAL);
  if (r) COUNT_FAIL();
  return r;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
int msi_os_writable(void *addr, size_t size) {
  /* MADV_POPULATE_WRITE faults the pages in as a write would; it fails with EINVAL on memory without write
     permission (PROT_NONE, read-only; also before Linux 5.14, which msi_os_has_populate_write tells apart), with
     EFAULT where the write would fault (SIGBUS, SIGSEGV) and ENOMEM on a hole. Any other answer (EPERM from a
     sandbox that filters madvise by its advice, ENOMEM or EAGAIN from a fault-in refused under memory pressure,
     EINTR, EHWPOISON) says nothing about the pages: msi_os_mapped decides then, as it does before Linux 5.14 */
  COUNT_CALL();
  if (madvise(addr, size, MADV_POPULATE_WRITE) == 0) return 0;
  int e = errno;
  COUNT_FAIL();
  if ((e == EINVAL && !msi_os_has_populate_write()) || (e != EINVAL && e != EFAULT)) return msi_os_mapped(addr, size);
  errno = e == EINVAL ? EFAULT : e;
  return -1;
}

void msi_os_futex_wait_ms(_Atomic int *addr, int val, unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  syscall(SYS_futex, (int *)addr, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, val, ms ? &ts : NULL, NULL, 0);
}
void msi_os_futex_wait(_Atomic int *addr, int val) { msi_os_futex_wait_ms(addr, val, 0); }
void msi_os_futex_wake(_Atomic int *addr, int n) {
  syscall(SYS_futex, (int *)addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
}

#ifndef MEMBARRIER_CMD_PRIVATE_EXPEDITED
#define MEMBARRIER_CMD_PRIVATE_EXPEDITED (1 << 3)
#define MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)
#endif

/* Never under a seccomp filter (a sandbox may kill the process for a call it does not know; one installed with
   TSYNC filters the maintenance thread, the caller, too): the callers then fall back to a bounded wait. Filters
   are never lifted: unavailable from then on. */
int msi_os_membarrier(void) {
#ifdef SYS_membarrier
  static _Atomic int state; /* 0 unknown, 1 registered, 2 unavailable */
  int s = atomic_load_explicit(&state, memory_order_relaxed);
  if (s == 2) return -1;
  if (msi_os_seccomp_filtered()) {
    atomic_store(&state, 2);
    return -1;
  }
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

static _Atomic int populate_state; /* madvise_known's; no: a kernel before 5.14 */
bool msi_os_has_populate_write(void) { return madvise_known(&populate_state, MADV_POPULATE_WRITE); }
void msi_os_populate_write_hide(bool hide) { atomic_store(&populate_state, hide ? 2 : 0); }

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
  s->os_probes = atomic_load(&msi_os_counters.probes);
}

/* the lines without a field (the others are printed by the core from stats.def) */
static void pages_print(msi_stats_writer_t *w) { msi_stats_field(w, "page_size", msi_os_page_size(), "bytes"); }

static const msi_stats_source_t pages_source = {"pages", pages_get, pages_print, NULL};
MSI_STARTUP_TEXT __attribute__((constructor(102))) static void pages_register(void) { msi_stats_register(&pages_source); }

/* The shared library's DT_FINI (CMakeLists.txt: -Wl,-fini=msi_fini), which the dynamic loader calls at exit:
   nothing to do, as the C runtime's _fini (destructors run from .fini_array). _fini lies alone at the far end of
   the text, a page each process would fault in at exit for it; this one lies with the start-up code. */
MSI_STARTUP_TEXT void msi_fini(void);
MSI_STARTUP_TEXT void msi_fini(void) {}
