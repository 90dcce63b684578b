/* SPDX-License-Identifier: MIT */
/* os.h: the whole platform contract. Every system call memspace makes goes through these wrappers (one file
   per OS implements them: src/os/linux.c). Each wrapper retries on EINTR, counts itself in the page-layer
   stats, honours fault injection (ms_fault_inject) and returns like the system call (-1/MAP_FAILED + errno). */
#ifndef MSI_OS_H
#define MSI_OS_H
#include "internal.h"
#include <sys/types.h>

/* Inside a reservation made with MSI_OS_RESERVE_COUNT_FIXED (at most 4 such: spill's), a MAP_FIXED mapping is
   counted in os_committed_bytes: a commit (file chunks, anonymous memory), a decommit with PROT_NONE; a private
   mapping of a file there (a forked child's copy of committed chunks) replaces committed bytes, uncounted. */
void *msi_os_mmap(void *addr, size_t size, int prot, int flags, int fd, off_t offset);
int msi_os_munmap(void *addr, size_t size);
void *msi_os_mremap(void *old, size_t old_size, size_t new_size, int flags, void *new_addr);
/* mremap in place (no flags) as a question to the kernel, expected to fail: counted in the calls and the probes,
   never in the failures, errno kept; no fault injection (an injected failure would change the answer, not test a
   path) */
void *msi_os_mremap_probe(void *old, size_t old_size, size_t new_size);
int msi_os_mprotect(void *addr, size_t size, int prot);
int msi_os_madvise(void *addr, size_t size, int advice);
int msi_os_mlock(const void *addr, size_t size);
int msi_os_munlock(const void *addr, size_t size);
int msi_os_fallocate(int fd, int mode, off_t offset, off_t len);
long msi_os_mbind(void *addr, size_t size, int node);   /* MPOL_BIND to one node through the raw syscall */
/* 0 when [addr, addr+size) is entirely mapped (any protection), else -1 + ENOMEM. No fault injection. */
int msi_os_mapped(void *addr, size_t size);
/* 0 when [addr, addr+size) (page-aligned start) is mapped writable, its pages faulted in as a write would (a
   private page copied); else -1 + EFAULT (PROT_NONE, read-only, a write would fault) or ENOMEM (a hole). Before Linux 5.14: as
   msi_os_mapped (any protection). No fault injection. */
int msi_os_writable(void *addr, size_t size);
/* the lock's futex (process-private): wait while *addr == val; wake up to n waiters. Not counted (a contended
   lock's slow path stays as short as the bare system call; os_calls counts memory and file calls) and no fault
   injection. */
void msi_os_futex_wait(_Atomic int *addr, int val);
/* as msi_os_futex_wait for at most `ms` milliseconds (0: no limit); returns early on a wake-up, a signal or a
   spurious wake-up: the caller checks its condition again */
void msi_os_futex_wait_ms(_Atomic int *addr, int val, unsigned ms);
void msi_os_futex_wake(_Atomic int *addr, int n);
/* a full memory barrier on every thread of this process (membarrier PRIVATE_EXPEDITED, registered on first
   use); -1 when the kernel has none: callers then wait a little instead */
/* from here on, a thread stops reading files once it is under a seccomp filter that was not there at the first
   call (linux.c) */
void msi_os_reads_watch(void);
int msi_os_membarrier(void);
/* files (spill): fallocate faults also reach msi_os_ftruncate and msi_os_copy_file_range (disk space) */
struct statfs;
struct rlimit;
int msi_os_open(const char *path, int flags, unsigned mode);
int msi_os_close(int fd);
/* a close-on-exec duplicate of fd numbered at least min_fd (fcntl F_DUPFD_CLOEXEC); -1 + errno */
int msi_os_dup_high(int fd, int min_fd);
int msi_os_pipe(int fds[2]);                           /* pipe2(O_CLOEXEC); -1 + errno */
/* whether fd's other end is gone (poll without waiting: POLLHUP, POLLERR or POLLNVAL) */
bool msi_os_hung_up(int fd);
ssize_t msi_os_read(int fd, void *buf, size_t len);
ssize_t msi_os_pread(int fd, void *buf, size_t len, off_t offset);
/* write(2) once, retried on EINTR (messages: callers loop over short writes); no fault injection */
ssize_t msi_os_write(int fd, const void *buf, size_t len);
bool msi_os_read_ull(const char *path, unsigned long long *v); /* the decimal number a small file starts with (sysfs, procfs) */
int msi_os_unlink(const char *path);
/* the current directory's absolute path in buf (NUL-terminated): its length, or -1 + errno (ERANGE: buf too small;
   ENOENT: a directory outside the process's root, whose path the kernel gives relative) */
long msi_os_getcwd(char *buf, size_t size);
int msi_os_ftruncate(int fd, off_t size);
int msi_os_fstatfs(int fd, struct statfs *st);
long long msi_os_fstat_blocks(int fd);                  /* bytes allocated on disk (st_blocks*512), -1 + errno */
/* the identity of the file open as fd (st_dev, st_ino) and, when bytes is not NULL, its bytes on disk; -1 + errno */
int msi_os_fstat_id(int fd, unsigned long long *dev, unsigned long long *ino, long long *bytes);
int msi_os_sync_file_range(int fd, off_t offset, off_t len, unsigned flags);
int msi_os_sched_idle(bool idle);                       /* the calling thread: SCHED_IDLE or SCHED_BATCH; -1 + errno */
bool msi_os_seccomp_filtered(void);                     /* prctl(PR_GET_SECCOMP) is not 0: a seccomp sandbox (or refused) */
bool msi_os_sched_batch(void);                          /* the calling thread: SCHED_OTHER becomes SCHED_BATCH; true if it runs that */
bool msi_os_sched_idle_reversible(void);                /* the calling thread may return from SCHED_IDLE (CAP_SYS_NICE, RLIMIT_NICE) */
bool msi_os_has_cap(int cap); /* capability `cap` (below 32) in the thread's effective set (capget) */
bool msi_os_may_lock(size_t bytes); /* mlock of `bytes` fits RLIMIT_MEMLOCK, or CAP_IPC_LOCK lifts the limit */
void msi_os_yield(void);                                 /* sched_yield: a thread waiting for this CPU runs first */
unsigned msi_os_cpu_count(void);                        /* CPUs the process may run on (its affinity mask; 1 if refused) */
ssize_t msi_os_copy_file_range(int fd_in, off_t off_in, int fd_out, off_t off_out, size_t len);
int msi_os_getrlimit(int resource, struct rlimit *rl);
int msi_os_mincore(void *addr, size_t size, unsigned char *vec);
/* lseek(fd, off, SEEK_DATA): the first offset at or after off that holds data (written blocks, or page-cache pages
   over a hole or an unwritten extent on ext4 and xfs); -1 + errno (ENXIO: none up to the end of the file) */
long long msi_os_seek_data(int fd, long long off);
/* posix_fadvise(fd, off, len, advice) as the system call: 0, or -1 + errno */
int msi_os_fadvise(int fd, off_t off, off_t len, int advice);
struct rusage;
int msi_os_getrusage(struct rusage *ru);                /* RUSAGE_SELF; -1 + errno */
int msi_os_getpid(void);
int msi_os_fd_open(int fd);                             /* 1 when fd is an open descriptor (fcntl F_GETFD), else 0 */
int msi_os_fd_cloexec(int fd);                          /* 1 when fd is open and close-on-exec (F_GETFD), else 0 */
int msi_os_set_blocking(int fd);                        /* O_NONBLOCK cleared; -1 + errno */
void msi_os_signal_take(int sig);                      /* a pending blocked signal taken back, without waiting */
int msi_os_stderr_copy(void); /* a copy of stderr at descriptor 100 or above (close-on-exec), or -1 */
/* a write record lock over the whole file open as fd: lock waits for it (F_SETLKW, resumed after a signal),
   !lock releases it (F_SETLK); -1 + errno */
int msi_os_lock_file(int fd, bool lock);
void msi_os_sleep_ms(unsigned ms);                      /* one nanosleep: returns early when a signal arrives */

/* system files (/proc, /sys, cgroup files), read without stdio or allocation */
/* the whole file (up to cap-1 bytes) into buf, NUL-terminated: its length, or -1 + errno (buf then "") */
ssize_t msi_os_read_file(const char *path, char *buf, size_t cap);
/* the decimal number after `key` at a line start of text ("key value" or "key: value"); false when absent */
bool msi_os_text_value(const char *text, const char *key, uint64_t *v);
/* a decimal number at s (false: none); one past 2^64 - 1 reads as UINT64_MAX, never as what it wraps to */
bool msi_os_parse_dec(const char *s, uint64_t *v);
/* as msi_os_text_value, for a figure in kB (/proc/meminfo's): in bytes, one past 2^64 - 1 read as UINT64_MAX */
bool msi_os_text_kb(const char *text, const char *key, uint64_t *bytes);
/* a /proc/meminfo field in bytes (its kB times 1024); without a readable /proc/meminfo, sysinfo(2)'s figure
   (msi_os_sysinfo_value); false when absent */
bool msi_os_meminfo(const char *key, uint64_t *bytes);
/* MemTotal, MemFree, MemAvailable (free + buffers: sysinfo has no page-cache figure), SwapTotal or SwapFree in
   bytes from sysinfo(2); false for another key or when the call fails */
bool msi_os_sysinfo_value(const char *key, uint64_t *bytes);
/* a larger file (smaps) line by line through a caller-owned buffer: open, next (the line, truncated to fit,
   without its newline, in r->line; false at the end), close */
typedef struct {
  int fd;
  size_t len, pos;
  bool eof;
  char buf[4096];
  char line[512];
} msi_os_lines_t;
bool msi_os_lines_open(msi_os_lines_t *r, const char *path);
bool msi_os_lines_next(msi_os_lines_t *r);
void msi_os_lines_close(msi_os_lines_t *r);
/* for /proc lines: the number at s (base 10, or 16 in lower case) into *v; the first character after it */
const char *msi_os_parse_u64(const char *s, unsigned base, uint64_t *v); /* (saturating, as msi_os_parse_dec) */
/* for a /proc/self/smaps "VmFlags:" line: whether it holds the two-letter flag f ("lo", "dc", "ht") */
bool msi_os_vmflag(const char *line, const char *f);
/* one mapping of /proc/self/smaps as msi_os_smaps_walk reports it */
typedef struct {
  uintptr_t start, end; /* its bounds */
  bool writable;
  size_t page;          /* KernelPageSize in bytes; 0 when the kernel does not say */
  const char *vmflags;  /* its "VmFlags:" line, for msi_os_vmflag */
} msi_os_mapping_t;
/* Calls fn, in address order, for each mapping of /proc/self/smaps that ends after `from` and after the last one
   reported, up to the first that starts at or after `to`, until fn returns false; fn sees a mapping once its
   VmFlags line (its last field) is read. Allocation-free. 0, or errno when the file cannot be opened. */
int msi_os_smaps_walk(uintptr_t from, uintptr_t to, bool (*fn)(const msi_os_mapping_t *m, void *arg), void *arg);
/* The cgroup memory budget: the smallest of `ram` and the memory limits of the cgroup named in `proc_cgroup`
   (the text of /proc/self/cgroup) and its ancestors, under the cgroup mount root `sysfs` (normally
   /sys/fs/cgroup): v1 memory.limit_in_bytes, else v2 memory.max and memory.high (mounted at the root or,
   hybrid, at unified/); values of 2^62 and more (v1's "unlimited") are no limit. version: 1 or 2 when a memory
   controller is visible for the cgroup, else 0; cgroup: its path there. stat_path: the limiting cgroup's
   memory.stat ("" when none limits below ram: /proc/meminfo, in kB), and its dirty and anonymous keys. Reads
   files only; separate for tests. */
typedef struct {
  uint64_t limit;
  int version;
  char cgroup[1024];
  char stat_path[4096];
  const char *dirty_key, *anon_key;
} msi_os_cgroup_t;
void msi_os_cgroup_find(const char *sysfs, const char *proc_cgroup, uint64_t ram, msi_os_cgroup_t *out);
/* msi_os_cgroup_find for this process (/proc/self/cgroup under /sys/fs/cgroup) */
void msi_os_cgroup_budget(uint64_t ram, msi_os_cgroup_t *out);
/* the path of the file `name` in the limiting cgroup's directory (beside its memory.stat) in out; false (out "")
   when no cgroup limits the process or the path does not fit */
bool msi_os_cgroup_file(const msi_os_cgroup_t *cg, const char *name, char *out, size_t size);

/* facts read at run time, cached */
size_t msi_os_page_size(void);
size_t msi_os_huge_size(ms_page_kind_t kind);   /* 0 when the kernel has no such page */
#define MSI_OS_NUMA_MAX 1024                     /* node ids checked below this */
bool msi_os_numa_node_ok(int node);             /* node is online (ids may have gaps) */
/* "0,2-3" (sysfs node list) into one bit per node; false when the text is not such a list */
bool msi_os_numa_parse(const char *text, uint64_t mask[MSI_OS_NUMA_MAX / 64]);
bool msi_os_has_madv_free(void);
bool msi_os_has_populate_write(void);    /* MADV_POPULATE_WRITE (Linux 5.14) */
/* tests: msi_os_has_populate_write answers no (hide), as before Linux 5.14, or asks the kernel again (!hide) */
void msi_os_populate_write_hide(bool hide);
size_t msi_os_vm_size(void);             /* bytes of address space mapped now (VmSize); 0: unknown. Reads /proc */
size_t msi_os_as_limit(void);            /* RLIMIT_AS now, SIZE_MAX when unlimited. One system call */
/* the address space one part may reserve under RLIMIT_AS: the limit divided by `share` (spill and each space take
   a quarter), SIZE_MAX when unlimited. One system call */
size_t msi_os_as_share(unsigned share);

/* ---- address space reserved with back-off (the heap's regions, spill's classes, a space's data range, the page
   layer's mappings) ----
   msi_os_reserve maps the largest candidate the kernel and the budget allow, largest first:
   - candidate 0 is `want` bytes (rounded up to `unit`) at a start aligned to `align`;
   - next: with MSI_OS_RESERVE_HALVE_ALIGN the alignment halves with the size (a region as large as its alignment:
     the heap's slots, spill's classes) and MSI_OS_RESERVE_DROP_UNIT gives up one unit of the new alignment more
     (spill: one class fewer per halving); otherwise half the room above `min` goes;
   - a candidate refused with an alignment above `min_align` is tried again at `min_align` (less slack), which the
     later ones keep;
   - a candidate counts against `budget` (RLIMIT_AS's share for the part: msi_os_as_share(n), or less) with one
     alignment unit of slack when the alignment halves with it, else by its size; one over the budget is skipped,
     except `min` (tried last, over the budget too unless MSI_OS_RESERVE_STRICT).
   The start is aligned by mapping `size + align - natural` bytes (natural: the huge page with MAP_HUGETLB, else
   the page) and trimming both ends (MSI_OS_RESERVE_KEEP_SLACK: the slack stays mapped, map/map_size say where,
   one system call instead of three: the heap gives it back only under a lowered RLIMIT_AS). A reservation never
   ends above 2^48 (the heap packs addresses in 48 bits; the kernel places a mapping without a hint below that).
   Cold path (start-up, space creation). 0, or an errno (errno set too): the last refusal's. */
enum {
  MSI_OS_RESERVE_HALVE_ALIGN = 1u << 0,
  MSI_OS_RESERVE_DROP_UNIT = 1u << 1,
  MSI_OS_RESERVE_STRICT = 1u << 2,
  MSI_OS_RESERVE_KEEP_SLACK = 1u << 3,
  MSI_OS_RESERVE_COUNT_FIXED = 1u << 4, /* see msi_os_mmap below (spill's classes) */
};
typedef struct msi_os_reservation_s {
  size_t want, min;       /* in: sizes (bytes); min 0: want only */
  size_t align, min_align; /* in: powers of two (0: the page; min_align 0: align) */
  size_t budget;          /* in: 0: none */
  size_t unit;            /* in: sizes are multiples of it (0: the page; MAP_HUGETLB: the huge page) */
  unsigned flags;         /* in: MSI_OS_RESERVE_* */
  int prot, map_flags;    /* in: 0, 0: PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE (nothing committed) */
  uintptr_t hint;         /* in: where the mapping should start (aligned to `align`), or 0: the kernel's choice. A
                             hint only: a range taken there is placed as without it */
  void *addr;             /* out: the aligned start */
  size_t size, got_align; /* out: bytes from addr; addr's alignment asked for */
  void *map;              /* out: the whole mapping (addr unless KEEP_SLACK) */
  size_t map_size;
} msi_os_reservation_t;
int msi_os_reserve(msi_os_reservation_t *r);

/* The page layer for the library's own parts (spaces, frame allocators, DMA buffers): the public calls without
   their refusal of internal ranges, which msi_pages_reserve and msi_pages_reserve_exact make (the public calls
   refuse them with ENOMEM: a program's ms_pages_release of a DMA buffer's address would unpin and unmap it under
   its owner). Hidden: the library's own calls and function pointers bind at link time, not through a symbol
   lookup at start-up or a PLT entry */
int msi_pages_commit(void *addr, size_t size);
int msi_pages_decommit(void *addr, size_t size);
int msi_pages_reset(void *addr, size_t size);
int msi_pages_populate(void *addr, size_t size);
int msi_pages_lock(void *addr, size_t size);
int msi_pages_unlock(void *addr, size_t size);
int msi_pages_bind(void *addr, size_t size, int node);
int msi_pages_release(void *addr, size_t size);
/* ms_pages_reserve of an internal range */
int msi_pages_reserve_exact(size_t size, size_t alignment, unsigned flags, int numa_node, ms_pages_t *out);
/* ms_pages_reserve of an internal range with back-off (msi_os_reserve): `size` bytes, else down to `min` (halving
   the room above it), first aligned to `alignment`, after a refusal to `min_align`; out->size says what was
   reserved. Hugetlb flags take `size` alone. A space's data range. */
int msi_pages_reserve(size_t size, size_t min, size_t alignment, size_t min_align, unsigned flags, int numa_node,
                      ms_pages_t *out);

/* The huge page fallback, 1 GiB -> 2 MiB -> the base page (ms_pages_reserve, DMA buffers): tries the page sizes
   pages[0..n) in order (largest first) with try_one (0, or an errno: ENOENT the kernel has no such page, ENOMEM
   the pool is short) until one works; each refusal before the last is a fallback, counted in huge_fallbacks and
   said under MEMSPACE_VERBOSE ("WHO: 2 MiB pages for N bytes unavailable (the pool has too few free pages, free
   F); falling back to 4 KiB pages"). The index that worked, or -1 with *err the last refusal's errno (not
   reported: the caller says why it fails). */
typedef int (*msi_pages_try_fn)(size_t page, void *arg);
int msi_pages_fallback(const char *who, size_t bytes, const size_t *pages, int n, msi_pages_try_fn try_one,
                       void *arg, int *err);
const char *msi_pages_name(size_t page);       /* "1 GiB", "2 MiB", "4 KiB"... for messages */
long long msi_pages_huge_free(size_t page);    /* free pages in the hugetlb pool of that size; -1 unknown */
const char *msi_pages_unavailable(int err);    /* a refusal's reason for messages */

/* Commits outside the page layer, counted in os_committed_bytes without a system call of their own: the heap's
   fixed mappings (segments, large slots), its direct blocks and purges. The page layer counts its own. */
void msi_os_count_decommit(size_t bytes);  /* (msi_os_count_commit: inline, beside the counters below) */
/* msi_os_mmap counted as a commit on success */
void *msi_os_commit_map(void *addr, size_t size, int prot, int flags, int fd, off_t offset);
/* madvise(MADV_DONTNEED) counted as a decommit (the pages go back, the range stays mapped; refused, the caller
   treats the pages as given back all the same, and so does the count) */
int msi_os_purge(void *addr, size_t size);

/* page-layer counters (atomics, read by stats) */
typedef struct msi_os_counters_s {
  _Atomic uint64_t reserved, committed, reset, locked, hugetlb, thp, huge_fallbacks, calls, failures;
  _Atomic uint64_t probes; /* of calls: msi_os_mremap_probe */
} msi_os_counters_t;
extern msi_os_counters_t msi_os_counters;
/* a commit counted outside the page layer (see msi_os_count_decommit); inline: the heap's span allocation */
static inline void msi_os_count_commit(size_t bytes) {
  atomic_fetch_add_explicit(&msi_os_counters.committed, bytes, memory_order_relaxed);
}

/* the frame allocator (frame.c) with the clock as a parameter, so tests drive idleness deterministically:
   ms_frame_flip at time `now_ns`, and one pass of the maintenance task at `now_ns` (CLOCK_MONOTONIC) */
void msi_frame_flip_at(ms_frame_t *frame, uint64_t now_ns);
void msi_frame_maint_run(uint64_t now_ns);

/* fault injection: true when this call of `op` must fail; *err receives the errno to return */
bool msi_fault_hit(ms_fault_op_t op, int *err);
#endif
