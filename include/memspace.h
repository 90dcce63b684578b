/* SPDX-License-Identifier: MIT */
/// @file memspace.h
/// The one public header of memspace: a C11 memory-management library for Linux.
///
/// Parts: options and messages, statistics, the page layer (`ms_pages_*`) with a double-buffered frame
/// allocator (`ms_frame_*`), the thread-caching heap (`ms_malloc` ...), deterministic spaces (`ms_space_*`),
/// file-backed spill (`ms_spill_*`) and DMA buffers (`ms_dma_*`). Every call sets `errno` on failure.
/// Names in this header are stable: see docs/contract.md for the parts external users rely on.
#ifndef MEMSPACE_H
#define MEMSPACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Version of this header, as ms_version() gives the library's: a program compares the two to see that it runs
/// with the library it was compiled against.
#define MEMSPACE_VERSION_MAJOR 0 ///< a change here breaks callers (docs/contract.md is only ever extended)
#define MEMSPACE_VERSION_MINOR 1 ///< additions that keep every earlier promise
#define MEMSPACE_VERSION_PATCH 0 ///< fixes

/// The one export macro: every public symbol carries it; everything else is hidden. MS_MALLOC_ATTR,
/// MS_ALLOC_SIZE and MS_ALLOC_SIZE2 tell GCC and clang that a call returns fresh memory of the size given by
/// those arguments; with other compilers all four are empty.
#if defined(__GNUC__)
#define MS_API __attribute__((visibility("default")))
#define MS_MALLOC_ATTR __attribute__((malloc))
#define MS_ALLOC_SIZE(n) __attribute__((alloc_size(n)))
#define MS_ALLOC_SIZE2(n, m) __attribute__((alloc_size(n, m)))
#else
#define MS_API
#define MS_MALLOC_ATTR
#define MS_ALLOC_SIZE(n)
#define MS_ALLOC_SIZE2(n, m)
#endif

/// Library version as MAJOR*10000 + MINOR*100 + PATCH. Thread-safe, O(1), never fails.
MS_API int ms_version(void);

/* ------------------------------------------------------------------------------------------------------------ */
/* Options: one table, mapped to MEMSPACE_* environment variables (sizes take K/M/G/T suffixes)                */
/* ------------------------------------------------------------------------------------------------------------ */

/// Every runtime option. The environment variable is `MEMSPACE_` followed by the name in capitals.
typedef enum ms_option_e {
  MS_OPTION_CACHE = 0,        ///< heap cache preset: 0 unlimited, 1 performance (default), 2 size, 3 none
  MS_OPTION_PURGE_DELAY,      ///< ms of idleness before free heap memory returns to the OS; -1 never
  MS_OPTION_SPACE_INITIAL,    ///< bytes; non-zero: malloc is served by one deterministic space
  MS_OPTION_SPACE_EXPAND,     ///< bytes; expand step of that space, 0 = fixed size
  MS_OPTION_SPACE_AT,         ///< 0 start, 1 firstalloc
  MS_OPTION_SPACE_INHERIT,    ///< 1: children keep the space settings
  MS_OPTION_SPILL_THRESHOLD,  ///< bytes; 0 = spill off; -1 = auto (blocks of 1 MiB and more once the memory budget runs short)
  MS_OPTION_SPILL_DIR,        ///< string option (read with ms_option_get_string)
  MS_OPTION_HUGE_PAGES,       ///< bytes: 0, 2M or 1G
  MS_OPTION_SECURE,           ///< 1: secure-mode checks where the build has them
  MS_OPTION_SHOW_STATS,       ///< 1: print statistics to stderr at exit
  MS_OPTION_VERBOSE,          ///< 1: report decisions and fallbacks on stderr
  MS_OPTION_FRAME_IDLE,       ///< ms without a flip or an alloc after which a frame allocator gives its pages back
  MS_OPTION_STATS_FORMAT,     ///< statistics at exit: 0 text, 1 json
  MS_OPTION_STATS_FILE,       ///< string option: file for the statistics at exit (%p: the pid, else .PID appended)
  MS_OPTION_COUNT
} ms_option_t;

/// Current value of an option (read from the environment on first use). Thread-safe, O(1).
/// Returns 0 with errno EINVAL for an unknown option.
MS_API long long ms_option_get(ms_option_t option);
/// String value of a string option (MS_OPTION_SPILL_DIR) or NULL when unset (errno untouched); NULL + EINVAL
/// for an unknown option or one that is not a string. Thread-safe, O(1).
MS_API const char *ms_option_get_string(ms_option_t option);
/// Overrides an option for the rest of the process, from the next call that reads it: the spill threshold and
/// the process-space size route the next allocations (blocks already made stay with their owner; a process space,
/// once made, keeps the size and expand step it was made with); the cache preset applies its limits at once and
/// the caches hand back what they hold (O(cached spans and slots) then); the secure checks, the purge delay,
/// verbosity and exit statistics apply from the next call that reads them; the huge-page size and the frame idle
/// time apply to spaces, frames and DMA buffers created afterwards; whether children inherit the process space's
/// settings (SPACE_INHERIT) is decided when that space is made, at start for the environment's settings, so setting
/// it later changes nothing. Thread-safe (atomic store).
/// Returns 0, or EINVAL (errno set too) for an unknown option, a string option or a value out of range.
MS_API int ms_option_set(ms_option_t option, long long value);
/// The option's environment variable name, e.g. "MEMSPACE_CACHE"; NULL + EINVAL for an unknown option. O(1).
MS_API const char *ms_option_name(ms_option_t option);
/// Parses a size with an optional K/M/G/T suffix (any case; powers of 1024, optionally followed by "iB" or
/// "B").
/// Returns 0 and stores the value, or EINVAL (syntax, NULL) / ERANGE (overflow), also stored in errno.
/// Allocation-free, thread-safe.
MS_API int ms_parse_size(const char *text, size_t *value);

/* ------------------------------------------------------------------------------------------------------------ */
/* Statistics: one namespace all parts register into                                                           */
/* ------------------------------------------------------------------------------------------------------------ */

/// Layout of ms_stats_t: its version and the lengths of its per-class arrays.
#define MS_STATS_VERSION 3            ///< ms_stats_t.version; 2: heap_class_more (the heap has 96 size classes;
                                      ///< version 1 had 64); 3: os_probes, heap_mapped_peak_bytes,
                                      ///< process_peak_rss_bytes (taken from reserved: the size and
                                      ///< heap_class_more's offset do not change)
#define MS_STATS_SIZE_CLASSES 64      ///< entries in heap_class: the heap's size classes 0-63
#define MS_STATS_SIZE_CLASSES_MORE 64 ///< entries in heap_class_more: classes 64 and up (zero past the last)

/// One heap size class's counters.
typedef struct ms_stats_class_s {
  size_t block_size;     ///< bytes per block in this class
  uint64_t allocated;    ///< blocks currently handed out
  uint64_t cached;       ///< free blocks held in thread and global caches
  uint64_t mapped;       ///< blocks' worth of memory carved from spans
  uint64_t returned;     ///< spans of this class given back to the OS
} ms_stats_class_t;

/// A snapshot of every part's counters. Pass sizeof(ms_stats_t): an older caller gets the prefix it knows.
typedef struct ms_stats_s {
  size_t size;                  ///< filled in: bytes written
  uint32_t version;             ///< MS_STATS_VERSION
  /* page layer */
  uint64_t os_reserved_bytes;   ///< address space reserved and not released
  uint64_t os_committed_bytes;  ///< bytes made readable/writable less those decommitted or released, counted
                                ///< per call: a commit or decommit of pages already so counts them again, the
                                ///< count kept within 0 and each reservation's size (docs/stats.md)
  uint64_t os_reset_bytes;      ///< lazily reset bytes (may still show in RSS as LazyFree)
  uint64_t os_locked_bytes;     ///< mlocked bytes
  uint64_t os_hugetlb_bytes;    ///< bytes backed by the hugetlb pool (not RSS, never "returned")
  uint64_t os_thp_bytes;        ///< bytes advised for transparent huge pages and not released
  uint64_t os_huge_fallbacks;   ///< huge page requests that fell back to a smaller page
  uint64_t os_calls;            ///< system calls made by the page layer
  uint64_t os_failures;         ///< system calls that failed (injected faults included, os_probes excluded)
  /* heap */
  uint64_t heap_allocated_bytes;  ///< bytes handed out (usable sizes)
  uint64_t heap_mapped_bytes;     ///< bytes the heap holds from the page layer
  uint64_t heap_cached_bytes;     ///< free bytes held in thread and global caches
  uint64_t heap_returned_bytes;   ///< bytes given back to the OS since start
  uint64_t heap_large_bytes;      ///< bytes in large (page-layer) blocks
  uint64_t heap_threads;          ///< live thread caches
  uint64_t heap_purges;           ///< purge passes run
  ms_stats_class_t heap_class[MS_STATS_SIZE_CLASSES];
  /* spaces */
  uint64_t space_count;         ///< live spaces
  uint64_t space_bytes;         ///< bytes owned by spaces
  uint64_t space_used_bytes;    ///< bytes in use in spaces
  uint64_t space_oom;           ///< failed space allocations
  uint64_t space_expands;       ///< expansions
  /* spill */
  uint64_t spill_blocks;        ///< live spilled blocks
  uint64_t spill_bytes;         ///< bytes of live spilled blocks
  uint64_t spill_disk_bytes;    ///< bytes reserved on disk
  uint64_t spill_resident_bytes;///< spilled bytes resident in RAM (sampled)
  uint64_t spill_fallbacks;     ///< spill requests served from RAM instead
  /* dma */
  uint64_t dma_buffers;         ///< live DMA buffers
  uint64_t dma_pinned_bytes;    ///< bytes pinned for DMA
  uint64_t dma_huge_bytes;      ///< of which on huge pages
  /* version 3 */
  uint64_t os_probes;           ///< of os_calls: calls that ask the kernel something and are expected to fail
                                ///< (the heap's mremap probes); never counted in os_failures
  uint64_t heap_mapped_peak_bytes; ///< the most heap_mapped_bytes has been (segments + committed large blocks)
  uint64_t process_peak_rss_bytes; ///< peak resident set of the process (getrusage ru_maxrss)
  uint64_t reserved[29];        ///< zeros: later versions take their fields from here
  ms_stats_class_t heap_class_more[MS_STATS_SIZE_CLASSES_MORE]; ///< size classes from 64 (version 2: a version-1
                                                                ///< caller's size ends before it)
} ms_stats_t;

/// Size class `i`'s counters in a snapshot (heap_class or heap_class_more); i < MS_STATS_SIZE_CLASSES +
/// MS_STATS_SIZE_CLASSES_MORE. An entry past what the library filled in (`stats->size`: an older library writes
/// no heap_class_more) reads as zeros. O(1), no locking, pure.
static inline const ms_stats_class_t *ms_stats_class(const ms_stats_t *stats, unsigned i) {
  static const ms_stats_class_t none = {0, 0, 0, 0, 0};
  /* (the entry's end as an offset, without a cast: the header compiles cleanly as C++ under -Wold-style-cast) */
  size_t end = i < MS_STATS_SIZE_CLASSES
                   ? offsetof(ms_stats_t, heap_class) + (i + 1) * sizeof(ms_stats_class_t)
                   : offsetof(ms_stats_t, heap_class_more) + (i - MS_STATS_SIZE_CLASSES + 1) * sizeof(ms_stats_class_t);
  const ms_stats_class_t *c =
      i < MS_STATS_SIZE_CLASSES ? &stats->heap_class[i] : &stats->heap_class_more[i - MS_STATS_SIZE_CLASSES];
  return end <= stats->size ? c : &none;
}

/// Fills `stats` with a snapshot (at most `size` bytes). Thread-safe; counters are read without stopping
/// threads, so sums may be a few operations apart. O(threads + classes + the heap's mapped memory / 64 KiB): the
/// heap tallies its span table, one entry per 64 KiB chunk; once spill is in use, plus O(pages spill has mapped),
/// whose residency it samples (mincore). Returns 0 or EINVAL (NULL, size too small), also stored in errno.
MS_API int ms_stats_get(ms_stats_t *stats, size_t size);

/// Output callback for printing: receives NUL-terminated chunks.
typedef void ms_output_fn(const char *text, void *arg);
#define MS_STATS_JSON 1u  ///< print JSON instead of text
/// Prints the statistics of every part in use (the process, the page layer and the heap always; spaces, spill,
/// DMA and frames once used) through `out` (NULL: stderr), headed by the library version, the pid and the
/// program name. docs/stats.md explains each line. Text values are printed whole, in as many chunks as they
/// need; in JSON numbers are numbers, text values escaped strings (bytes that are not valid UTF-8 replaced by
/// U+FFFD). `out` runs with no lock of the library held: it may call the library itself (malloc, ms_space_*, ms_dma_*, even
/// ms_stats_print). Allocation-free, thread-safe.
MS_API void ms_stats_print(ms_output_fn *out, void *arg, unsigned flags);

/* ------------------------------------------------------------------------------------------------------------ */
/* Page layer                                                                                                   */
/* ------------------------------------------------------------------------------------------------------------ */

/// Kinds of page that can back a range.
typedef enum ms_page_kind_e {
  MS_PAGE_BASE = 0,     ///< the base page (read at run time: 4 KiB on x86-64)
  MS_PAGE_THP = 1,      ///< base pages advised for transparent huge pages (2 MiB when the kernel finds them)
  MS_PAGE_HUGE_2M = 2,  ///< hugetlb 2 MiB pages
  MS_PAGE_HUGE_1G = 3   ///< hugetlb 1 GiB pages
} ms_page_kind_t;

#define MS_PAGES_COMMIT 0x01u      ///< commit at reserve time (read/write)
#define MS_PAGES_POPULATE 0x02u    ///< pre-fault the pages (implies MS_PAGES_COMMIT)
#define MS_PAGES_LOCK 0x04u        ///< mlock the pages (implies MS_PAGES_COMMIT; RLIMIT_MEMLOCK applies)
#define MS_PAGES_HUGE_2M 0x08u     ///< try hugetlb 2 MiB pages
#define MS_PAGES_HUGE_1G 0x10u     ///< try hugetlb 1 GiB pages (then 2 MiB if also set)
#define MS_PAGES_THP 0x20u         ///< advise transparent huge pages (also the fallback of hugetlb)
#define MS_PAGES_NO_FALLBACK 0x40u ///< fail with ENOMEM instead of falling back to a smaller page

/// What a reservation obtained.
typedef struct ms_pages_s {
  void *addr;              ///< start (aligned as asked and to page_size)
  size_t size;             ///< bytes, a multiple of page_size
  size_t page_size;        ///< page size actually obtained
  ms_page_kind_t kind;     ///< kind actually obtained
  unsigned flags;          ///< flags that took effect
  int numa_node;           ///< node bound to, or -1
  int fallback;            ///< 1 when a requested huge page size could not be had
} ms_pages_t;

/// The base page size, read at run time. Thread-safe, O(1).
MS_API size_t ms_page_size(void);
/// Size of the huge page of `kind` on this machine, or 0 when the kernel has none (0 + EINVAL for an unknown
/// kind). O(1) after first call.
MS_API size_t ms_huge_page_size(ms_page_kind_t kind);

/// Reserves `size` bytes of address space aligned to `alignment` (a power of two, 0 = page), committed when
/// MS_PAGES_COMMIT is given; huge pages per flags with reported fallback; bound to `numa_node` (-1 none).
/// Hugetlb ranges are always committed (never MAP_NORESERVE). Thread-safe; a few system calls.
/// Returns 0 and fills `out`, or an errno value, also stored in errno: EINVAL (size 0, bad alignment, NULL out,
/// a NUMA node the machine lacks, a flag not defined above), ENOMEM (no memory,
/// no huge pages with MS_PAGES_NO_FALLBACK, overflow, the lock of MS_PAGES_LOCK above a non-zero RLIMIT_MEMLOCK),
/// EPERM (MS_PAGES_LOCK with RLIMIT_MEMLOCK 0, without CAP_IPC_LOCK), EAGAIN (some pages could not be locked).
/// MS_PAGES_POPULATE and MS_PAGES_LOCK on base pages (THP included) fault in every page, which the kernel never
/// refuses (its OOM killer ends this process or another one instead): they are refused with ENOMEM before any
/// page is touched when the size exceeds the room left at that moment, the smaller of the machine's
/// MemAvailable + SwapFree and the memory cgroup's limit less its working set (usage less inactive page cache)
/// plus free swap where the cgroup may swap; swap is left out with MS_PAGES_LOCK. Said under MEMSPACE_VERBOSE.
/// Memory others take after that look is not counted. ms_pages_populate and ms_pages_lock on a range of the
/// caller's make no such look.
/// Any number of reservations may be live: each one's page size is recorded (ENOMEM when that record cannot grow).
/// ms_pages_commit, _decommit, _reset and _release change the caller's reservations only, never the memory of
/// the library's spaces, frame allocators or DMA buffers (ENOMEM, left to its owner); ms_pages_unlock refuses
/// (ENOMEM) the pages the library locked (a DMA buffer, a MS_SPACE_LOCKED space). ms_pages_populate, _lock and
/// _bind take any memory of the caller's, blocks the library gave it included.
MS_API int ms_pages_reserve(size_t size, size_t alignment, unsigned flags, int numa_node, ms_pages_t *out);
/// Makes [addr, addr+size) readable and writable (size rounded up to the page). Range must be page-aligned
/// inside a reservation. Returns 0 or an errno value, also stored in errno: EINVAL (NULL, unaligned, size 0,
/// wrapping), ENOMEM (a hole: outside or beyond a reservation, also when other memory is mapped there: only
/// ms_pages_reserve ranges are changed). One mprotect; no page is touched.
MS_API int ms_pages_commit(void *addr, size_t size);
/// Gives the pages back and makes the range inaccessible (MADV_DONTNEED + PROT_NONE; hugetlb ranges stay
/// accessible). Contents are lost: committed again, the range reads as zero. Returns 0 or an errno value
/// (EINVAL, also for locked pages, which the kernel does not take back: nothing changes, ms_pages_unlock first;
/// ENOMEM for a range not inside reservations: a hole or other memory, left untouched). Two system
/// calls; about 0.3 us per resident 4 KiB page. Thread-safe.
MS_API int ms_pages_decommit(void *addr, size_t size);
/// Lazy reset: the kernel may take the pages back when it needs memory (MADV_FREE, else MADV_DONTNEED).
/// The range stays accessible and is NOT promised to read as zero afterwards; until the kernel takes them the
/// pages still count in RSS (as LazyFree). Returns 0 or an errno value (EINVAL, also for locked pages, and
/// ENOMEM for a range not inside reservations, as for ms_pages_decommit). Thread-safe.
MS_API int ms_pages_reset(void *addr, size_t size);
/// Pre-faults [addr, addr+size) (MADV_POPULATE_WRITE; before Linux 5.14 mlock + munlock). Never touches the
/// memory itself: an uncommitted range gives EINVAL (or ENOMEM), a hole ENOMEM, never a crash. Never changes
/// what is locked: before Linux 5.14 the munlock leaves out the parts of the range that were locked (mlock by the
/// caller, a DMA buffer), read from /proc/self/status and /proc/self/smaps; when they cannot be read, the range
/// is not pre-faulted and the open's errno is returned. Thread-safe.
MS_API int ms_pages_populate(void *addr, size_t size);
/// mlock the range. Returns 0 or an errno value, also stored in errno: what the kernel's mlock gives without
/// CAP_IPC_LOCK: ENOMEM above a non-zero RLIMIT_MEMLOCK (or a hole), EPERM when RLIMIT_MEMLOCK is 0, EAGAIN when
/// some pages could not be locked; reported under MEMSPACE_VERBOSE with the limit. EINVAL bad range. Thread-safe.
MS_API int ms_pages_lock(void *addr, size_t size);
/// munlock the range (pages stay resident). Returns 0 or an errno value (EINVAL bad range, ENOMEM hole, or a
/// range with pages the library locked: a DMA buffer's, a locked space's; nothing is unlocked).
MS_API int ms_pages_unlock(void *addr, size_t size);
/// Binds the range to NUMA node `node` with the mbind system call. Returns 0 or an errno value (EINVAL: no
/// such node; ENOSYS: no NUMA support; EFAULT: part of the range is not mapped). Failure is also reported
/// under MEMSPACE_VERBOSE.
MS_API int ms_pages_bind(void *addr, size_t size, int node);
/// Releases a reservation (or a whole-page part of one: hugetlb parts are whole huge pages, size rounded up;
/// each part rounds to its own range's page, so a base-page range next to a hugetlb one loses only what is asked;
/// a THP range's page is the base page, whatever its page_size says)
/// back to the OS (hugetlb pages go back to the pool); the statistics lose what the part held (committed,
/// locked). Returns 0 or an errno value: EINVAL bad range (or not at a huge page's start in a hugetlb range),
/// ENOMEM when part of the range is not a live reservation (released twice, foreign memory: left mapped).
/// Thread-safe; two system calls.
MS_API int ms_pages_release(void *addr, size_t size);

/// The system calls ms_fault_inject can make fail (mmap and mremap, madvise, mprotect, fallocate, mlock).
typedef enum ms_fault_op_e { MS_FAULT_MMAP = 0, MS_FAULT_MADVISE, MS_FAULT_MPROTECT, MS_FAULT_FALLOCATE,
                             MS_FAULT_MLOCK, MS_FAULT_OP_COUNT } ms_fault_op_t;
/// Fault injection, for tests: the `nth` (1-based) next call of `op` fails with `err`; nth 0 disables.
/// MS_FAULT_MMAP with a negative `err` fails with -err and, for a fixed target (MAP_FIXED, MREMAP_FIXED), unmaps
/// the target first, as kernels before 6.12 (mmap) and 6.17 (mremap) do when commit accounting refuses it; for the
/// other operations a negative `err` is the same as -err.
/// Thread-safe. Production code pays one relaxed load per system call.
MS_API void ms_fault_inject(ms_fault_op_t op, unsigned long nth, int err);

/* ------------------------------------------------------------------------------------------------------------ */
/* Double-buffered frame allocator                                                                             */
/* ------------------------------------------------------------------------------------------------------------ */

/// A double-buffered frame allocator: two virtual ranges used alternately. Objects allocated in frame k stay
/// valid during frame k+1 and die at the end of it (the flip that starts frame k+2 reuses their range).
/// Idleness (no flip and no alloc for idle_ms, or ms_frame_idle) gives both ranges' pages back and DISCARDS
/// the contents of both frames: after it, memory from earlier allocations reads as zero (it stays mapped).
/// A frame that keeps allocating is never idle, however long it lasts. Idleness is noticed by the shared
/// maintenance thread when the program runs a second thread, else by the owner's next flip (see ms_frame_flip).
/// One thread owns a frame allocator (alloc/flip/idle are not thread-safe); the shared maintenance thread may
/// reclaim an idle one concurrently, which the owner's next call notices. docs/pages.md has the measurements.
typedef struct ms_frame_s ms_frame_t;
/// What a flip does to the range that was used one frame earlier (the range the next frame reuses).
typedef enum ms_frame_policy_e {
  MS_FRAME_KEEP_IDLE = 0, ///< default: keep pages while frames run; MADV_DONTNEED both ranges after idle_ms
  MS_FRAME_KEEP,          ///< keep pages forever (no idle reclaim; holds up to 2 ranges of RSS)
  MS_FRAME_RESET,         ///< lazy reset (MADV_FREE) every flip: RSS stays, counted as LazyFree
  MS_FRAME_DECOMMIT,      ///< MADV_DONTNEED every flip (range stays accessible; every page faults again)
  MS_FRAME_RELEASE,       ///< unmap and map again (mmap MAP_FIXED over the range) every flip
  MS_FRAME_HUGE,          ///< THP-backed ranges, MADV_DONTNEED every flip (hugetlb with MEMSPACE_HUGE_PAGES)
  MS_FRAME_POLICY_COUNT
} ms_frame_policy_t;
/// Configuration of ms_frame_create. Zero-initialise it, then set range_size (and policy).
typedef struct ms_frame_config_s {
  size_t range_size;          ///< bytes per range (each of the two); rounded up to the page (2 MiB for HUGE)
  ms_frame_policy_t policy;   ///< what a flip does; MS_FRAME_KEEP_IDLE (0) is the default
  int idle_ms;                ///< idleness before both ranges are given back (every policy but KEEP);
                              ///< 0 = MEMSPACE_FRAME_IDLE (default 500); -1 = never
  uint64_t reserved[4];       ///< must be zero
} ms_frame_config_t;
/// Creates a frame allocator with two ranges of `range_size` (address space reserved, pages committed lazily
/// by first touch). Thread-safe. NULL + errno: EINVAL (NULL config, size 0, bad policy, idle_ms below -1,
/// non-zero reserved),
/// ENOMEM (no address space, size overflow).
MS_API ms_frame_t *ms_frame_create(const ms_frame_config_t *config);
/// Bump-allocates `size` bytes from the current range; `alignment` a power of two (0 = 16). O(1), no system
/// call. NULL + errno: ENOMEM when the range is full (nothing changes), EINVAL for size 0, a bad alignment or
/// a NULL frame. Owner thread only.
MS_API void *ms_frame_alloc(ms_frame_t *frame, size_t size, size_t alignment);
/// Ends a frame: switches ranges and applies the policy to the range used one frame earlier, which the new
/// frame then uses. When the previous flip is older than idle_ms and no alloc happened since (and the maintenance
/// thread has not already reclaimed the ranges), both are given back first; when the frame allocated and lasted
/// longer than idle_ms, MS_FRAME_KEEP_IDLE gives back the range used one frame earlier only (the frame just ended
/// stays valid through the next). Cost: policy dependent (docs/pages.md). Owner thread only;
/// NULL is ignored. A failing system call falls back to MADV_DONTNEED (reported under MEMSPACE_VERBOSE).
MS_API void ms_frame_flip(ms_frame_t *frame);
/// Gives back both ranges' pages now (what idleness does; contents of both frames are discarded). Returns the
/// bytes given back (0 for NULL). Owner thread only. Cost: about 0.3 us per resident 4 KiB page.
MS_API size_t ms_frame_idle(ms_frame_t *frame);
/// Bytes allocated in the current frame (alignment padding included); 0 for NULL. O(1).
MS_API size_t ms_frame_used(const ms_frame_t *frame);
/// Frees both ranges. NULL is ignored. Owner thread only; waits for a running idle reclaim.
MS_API void ms_frame_destroy(ms_frame_t *frame);

/* ------------------------------------------------------------------------------------------------------------ */
/* Heap: the thread-caching general-purpose allocator (what LD_PRELOAD makes malloc)                           */
/* ------------------------------------------------------------------------------------------------------------ */

/// malloc: 16-byte aligned for every size. Thread-safe, lock-free fast path. NULL + ENOMEM on failure.
MS_API MS_MALLOC_ATTR MS_ALLOC_SIZE(1) void *ms_malloc(size_t size);
/// calloc with overflow check (NULL + ENOMEM on overflow).
MS_API MS_MALLOC_ATTR MS_ALLOC_SIZE2(1, 2) void *ms_calloc(size_t count, size_t size);
/// realloc: in place where the size class or the page layer allows; large blocks move with mremap.
MS_API MS_ALLOC_SIZE(2) void *ms_realloc(void *ptr, size_t size);
/// free; NULL is ignored. Double and invalid frees inside memspace's ranges are detected where the build allows.
MS_API void ms_free(void *ptr);
/// Aligned allocation: any power-of-two alignment. NULL + EINVAL for a bad alignment, ENOMEM when out of memory.
MS_API MS_MALLOC_ATTR MS_ALLOC_SIZE(2) void *ms_aligned_alloc(size_t alignment, size_t size);
/// Usable size of a block (>= requested); 0 for NULL. O(1).
MS_API size_t ms_usable_size(const void *ptr);
/// Returns free memory to the OS: the calling thread's cache and the global cache (force != 0: all of it now).
MS_API void ms_heap_collect(int force);
/// 1 when `ptr` lies inside memory the malloc family manages: the heap, the process space
/// (MEMSPACE_SPACE_INITIAL) or spill; 0 for the memory of an ms_space_create / ms_space_create_in space, a frame
/// allocator, a DMA buffer or an ms_pages_reserve range, which the malloc family's free and realloc do not take.
/// O(1), lock-free.
MS_API int ms_is_ours(const void *ptr);

/* ------------------------------------------------------------------------------------------------------------ */
/* Deterministic spaces (docs/contract.md §4)                                                                  */
/* ------------------------------------------------------------------------------------------------------------ */

/// Deterministic spaces: many independent memory spaces with an O(1) allocator for real-time code
/// (docs/spaces.md). Each space is a binary buddy system whose metadata lives outside the blocks, in a compact
/// side area (free bitmaps per block order, an allocation map of one nibble per 16 B and one byte per 2 KiB,
/// a cache of freed blocks up to 64 KiB), so malloc and free never read or write the data area and a heap
/// overflow cannot corrupt the allocator. Blocks are powers of two from 16 B, aligned to their size (up to the
/// data range's own alignment, see ms_space_aligned_alloc); no per-block header.
///
/// THE GUARANTEE. While a space has room (a free block of the requested order or larger exists, in the bitmaps
/// or the block cache), ms_space_malloc, ms_space_free, ms_space_calloc (not counting the zeroing) and
/// ms_space_aligned_alloc take a bounded number of steps (below), make no system call and touch a bounded number
/// of cache lines (at most ~2 per block order of the space plus 4); they take no page fault when the space was
/// created MS_SPACE_AT_START (or has made its first allocation with MS_SPACE_AT_FIRSTALLOC) and is backed by
/// hugetlb pages, or, with 4 KiB pages, when it is MS_SPACE_LOCKED and the kernel neither compacts locked pages
/// (vm.compact_unevictable_allowed=0) nor balances NUMA (kernel.numa_balancing=0): `memspace info` shows both;
/// and the process has not forked since (copy-on-write), and a thread-safe space's lock is uncontended
/// (priority-inheriting, so a low-priority holder is boosted instead of stalling a real-time thread). A locked
/// space locks and pre-faults all the metadata these calls touch (bitmaps, allocation map, block-cache stacks).
/// Conditions outside the guarantee: expansion when full (counted in expand_count and reported), first-allocation
/// commit, ms_space_expand, ms_space_shrink, create/destroy, check and walk.
///
/// STEP COUNTS. Let L = log2(space reserve / 16) (the number of block orders, at most 42) and D <= 7 the depth
/// of a free bitmap (64-way; D <= 6 for reserves up to 1 TiB). malloc: a cache hit is ~10 operations; otherwise
/// one ctz on the order mask (or on the cache's order mask), at most D loads to find the lowest free block, then
/// at most L splits of at most D word updates each: at most L*(D+1)+D+10 word operations, no loop over blocks.
/// free: one map read, then a cache push, or at most L merges (bit test + clear of at most D words each) and
/// one set; a full cache first evicts one block (one such merge chain). A request that finds no block at all
/// returns the cache (at most 256 blocks) to the buddy system before expanding or failing: bounded, and only
/// when the space is full.
///
/// THREAD SAFETY. A space is not thread-safe unless created with MS_SPACE_THREAD_SAFE (a PTHREAD_PRIO_INHERIT
/// mutex around every call). Different spaces are independent: no global lock on any allocation path (destroy,
/// check, walk, info, expand and shrink look the handle up under a global spinlock held for the lookup only).
///
/// HANDLES. destroy, check, walk, info, expand and shrink look the handle up among the live spaces (hashed,
/// never dereferenced first): a destroyed or never-created handle is reported naming it and the call fails
/// with EINVAL (destroy ignores it; fatal in debug/secure builds and with MEMSPACE_SECURE=1). The allocation
/// calls (malloc, calloc, aligned_alloc, realloc, free, usable_size) do not look it up: a destroyed
/// ms_space_create_in space is detected by them too (its header stays in the caller's memory with its magic
/// cleared) as long as the caller has not reused that memory; on a destroyed ms_space_create space (its memory
/// is unmapped) they are undefined behaviour (typically SIGSEGV). A handle whose address a newer space has
/// taken is that newer space.
#define MS_SPACE_LOCKED 0x1u       ///< mlock the space's memory (and its metadata)
#define MS_SPACE_ZERO 0x2u         ///< zero every usable byte of a block on allocation and realloc growth (O(block))
#define MS_SPACE_THREAD_SAFE 0x4u  ///< a priority-inheriting lock around every call
#define MS_SPACE_HUGE_PAGES 0x8u   ///< back with huge pages: 2 MiB, 1 GiB first under MEMSPACE_HUGE_PAGES=1G, none
                                   ///< (base pages) under MEMSPACE_HUGE_PAGES=0 (or the option set to 0), the
                                   ///< operator's switch; that and a fallback reported under MEMSPACE_VERBOSE;
                                   ///< fixed size, committed at creation (MS_SPACE_AT_FIRSTALLOC has no effect:
                                   ///< hugetlb pages are taken when mapped)

/// An opaque memory space (ms_space_create); one thread at a time unless MS_SPACE_THREAD_SAFE.
typedef struct ms_space_s ms_space_t;
/// When a space's initial memory is taken from the OS: at creation, or at its first allocation.
typedef enum { MS_SPACE_AT_START = 0, MS_SPACE_AT_FIRSTALLOC = 1 } ms_space_at_t;
/// What ms_space_create builds: sizes, when, flags, NUMA node, name. Zero-initialise it (reserved must be zero).
typedef struct ms_space_config_s {
  size_t initial_size;   /* bytes reserved (and committed when at == MS_SPACE_AT_START, or MS_SPACE_HUGE_PAGES) */
  size_t expand_size;    /* growth step in bytes; 0 = fixed size */
  ms_space_at_t at;      /* when the initial memory is taken from the OS */
  unsigned flags;        /* MS_SPACE_LOCKED, MS_SPACE_ZERO, MS_SPACE_THREAD_SAFE, MS_SPACE_HUGE_PAGES */
  int numa_node;         /* -1 = no preference */
  const char *name;      /* shown in stats and messages; may be NULL; copied (first 63 bytes): may be a temporary */
  uint64_t reserved[4];  /* must be zero: room to grow without breaking callers */
} ms_space_config_t;
/// A space's sizes and counters, filled by ms_space_info (O(1): kept up to date by every call).
typedef struct ms_space_info_s {
  size_t size, used, free, peak_used, largest_free_block, free_blocks;
  uint64_t allocs, frees, oom_count, expand_count;
  uint64_t reserved[4];
} ms_space_info_t;

/// Creates a space: reserves address space for initial_size plus room for expansions (63 steps of
/// expand_size, at most 64 GiB; a fixed space: room to grow to 4x by ms_space_expand) and ~5% of that for
/// metadata; with MS_SPACE_AT_START commits, pre-faults and (MS_SPACE_LOCKED) locks the initial size now, with
/// MS_SPACE_AT_FIRSTALLOC at the first allocation (a refused commit there is retried at the next allocation
/// that finds no block). Locking comes before pre-faulting, so a refused lock costs no memory. Sizes are
/// rounded up to the page size. Thread-safe; a few system calls (the machine's limits are read at the first
/// creation). NULL + errno: EINVAL (NULL config, initial_size 0, unknown flag or `at`, reserved not zero,
/// numa_node < -1, an expand_size above the room reserved for expansions, which no expansion could ever take:
/// 64 GiB, less when initial_size is within 64 GiB of the largest space, 64 TiB), ENOMEM (no memory, size overflow, or more than the machine can back: initial_size above
/// RAM + swap, RAM alone when MS_SPACE_LOCKED, or the cgroup's memory limit (+ swap unlocked), refused up front
/// with one line naming the limit), EPERM (lock refused: above RLIMIT_MEMLOCK without CAP_IPC_LOCK; mlock's
/// own ENOMEM is reported as EPERM so that ENOMEM always means memory), EAGAIN (some pages could not be locked).
MS_API ms_space_t *ms_space_create(const ms_space_config_t *config);
/// Creates a fixed-size space inside the caller's memory (which must outlive it): the space's struct, its
/// metadata (~5%) and the data area all live in [memory, memory+size); nothing is mapped. Flags: LOCKED
/// (mlocks the pages of the range; ms_space_destroy munlocks them, also pages the caller had locked: mlock
/// does not nest), ZERO, THREAD_SAFE. Blocks are aligned to 16, and to 4 KiB at most when the memory is.
/// Thread-safe, O(size + live spaces) (it zeroes the metadata, ~5% of size). NULL + errno EINVAL (NULL, too small,
/// bad flags, memory overlapping a live space's struct or metadata, e.g. the same memory given twice without a
/// destroy, at any offset: reported naming that space), EPERM/EAGAIN (lock refused, as for ms_space_create).
MS_API ms_space_t *ms_space_create_in(void *memory, size_t size, unsigned flags);
/// Destroys a space and every block in it (unmaps its memory; for ms_space_create_in nothing is unmapped and
/// the range it locked is unlocked). NULL is ignored; a handle that is not a live space (destroyed twice) is
/// reported and ignored, errno EINVAL (see HANDLES). Not to be called concurrently with other calls on the
/// same space.
MS_API void ms_space_destroy(ms_space_t *space);
/// O(1) allocation, 16-byte aligned; the block is the next power of two >= size (at least 16 B). Steps: see
/// STEP COUNTS above. NULL + ENOMEM when full (after trying to expand), EINVAL for size 0, a NULL space or a
/// destroyed one (see HANDLES); ENOMEM is counted in oom_count and said under MEMSPACE_VERBOSE naming the space at
/// its 1st, 2nd, 4th, 8th... failure (allocation-free; so for every allocation call of a space).
MS_API void *ms_space_malloc(ms_space_t *space, size_t size);
/// O(1) calloc (zeroing costs O(size): the requested bytes, or the whole block with MS_SPACE_ZERO);
/// overflow-checked (NULL + ENOMEM). Count or size 0: NULL + EINVAL.
MS_API void *ms_space_calloc(ms_space_t *space, size_t count, size_t size);
/// O(1) aligned allocation: a block of order max(log2 size, log2 alignment) is aligned to its size. alignment
/// a power of two and size > 0 (else NULL + EINVAL); larger than the data area's own alignment: NULL + ENOMEM. A created
/// space's data area is aligned to its largest block, at most 1 GiB (2 MiB when RLIMIT_AS leaves no room for
/// the slack; huge-page spaces at least 2 MiB), so every alignment up to min(that, the space size) succeeds while a free
/// block of that order exists; caller memory: 16 B to 4 KiB.
MS_API void *ms_space_aligned_alloc(ms_space_t *space, size_t alignment, size_t size);
/// O(1) in place when the neighbour allows: shrinking always is (the upper halves are freed); growing is when
/// the block is the lower buddy and the buddies up to the new order are free; else malloc+copy+free.
/// realloc(NULL) = malloc; size 0 frees and returns NULL. With MS_SPACE_ZERO the bytes beyond the old block are
/// zeroed up to the new usable size. On failure NULL + errno and the block is unchanged: ENOMEM, EINVAL for a
/// pointer that is not an allocated block (reported as for free, "realloc of a freed block" for a freed one).
MS_API void *ms_space_realloc(ms_space_t *space, void *ptr, size_t size);
/// O(1) free; NULL is ignored. Foreign pointers, interior pointers (any address inside a block but its first
/// byte) and double frees are always detected (the allocation map is outside the blocks): reported naming the
/// pointer and ignored (errno EINVAL); fatal (abort) in debug/secure builds and with MEMSPACE_SECURE=1.
MS_API void ms_space_free(ms_space_t *space, void *ptr);
/// Usable size of a block of this space (its power-of-two size); 0 for NULL or a pointer that is not the start
/// of an allocated block of this space (interior pointers included). O(1).
MS_API size_t ms_space_usable_size(const ms_space_t *space, const void *ptr);
/// Grows the space by at least `bytes` (a new region, committed, pre-faulted and locked like the initial one;
/// a free expansion region is reused first). On an MS_SPACE_AT_FIRSTALLOC space before its first allocation it
/// commits the initial size first (else the first allocations would take the expansion, and a later one would
/// commit the initial size). Counted in expand_count. Not deterministic (system calls).
/// Returns 0 or an errno value, also stored in errno: EINVAL (bytes 0, not a live space), ENOMEM (no reserved
/// room left: 63 regions or the reserve is used; spaces in caller memory and huge-page spaces cannot grow; or
/// more than the machine can back, as for ms_space_create), EPERM/EAGAIN (lock refused).
MS_API int ms_space_expand(ms_space_t *space, size_t bytes);
/// Gives back whole expansions that are free (decommitted; the address range stays reserved for later
/// expansions); also returns the block cache to the buddy system. Returns bytes given back; 0 with errno
/// EINVAL for NULL or a handle that is not a live space. O(regions x log(size)) plus system calls.
MS_API size_t ms_space_shrink(ms_space_t *space);
/// Fills `info`: size (committed bytes), used (bytes in allocated blocks), free = size - used, peak_used,
/// largest_free_block, free_blocks (cached blocks included), allocs, frees, oom_count, expand_count.
/// O(1) (plus the hashed handle lookup). Returns 0 or EINVAL (NULL info, not a live space), also in errno.
MS_API int ms_space_info(const ms_space_t *space, ms_space_info_t *info);
/// Verifies every invariant (bitmap summaries, order mask, every granule in exactly one block, no unmerged free
/// buddies, allocation map and cache lists consistent, counters); 0 when all hold, else EFAULT with a message
/// (or EINVAL for NULL or a handle that is not a live space); the error is also stored in errno. O(size/16).
/// It trusts the space's own struct (its region table and pointers to the metadata): damage there is undefined.
MS_API int ms_space_check(const ms_space_t *space);
/// Visits every block in address order (used = 1 for allocated blocks); stops when `visit` returns non-zero
/// (returned). O(blocks x orders). `visit` must not call into the same space. EINVAL for NULL arguments or a
/// handle that is not a live space, EFAULT when the blocks do not tile the space (a granule in no block, a block
/// past its region's end; reported; ms_space_check finds the other inconsistencies); both also stored in errno.
MS_API int ms_space_walk(const ms_space_t *space,
                         int (*visit)(const void *block, size_t size, int used, void *arg), void *arg);

/* ------------------------------------------------------------------------------------------------------------ */
/* Spill: file-backed allocations                                                                               */
/* ------------------------------------------------------------------------------------------------------------ */

/// Allocates `size` bytes backed by a file in MEMSPACE_SPILL_DIR (disk space reserved now). NULL + ENOMEM when
/// the disk cannot hold it or `size` exceeds PTRDIFF_MAX; when spill cannot take it for another reason (no usable
/// directory, RLIMIT_FSIZE, a refused system call) the block comes from RAM (a warning names the reason once).
MS_API void *ms_spill_alloc(size_t size);
/// Frees a block from ms_spill_alloc (or any spilled block); releases its disk space at once, with two
/// exceptions (docs/spill.md): a block under 2 MiB shares a 2 MiB granule of disk, which goes with the last live
/// block in it; and while a child forked after the block's allocation lives (until it exits or execs), the
/// block's disk and bytes stay for the child to read. A block that ms_spill_alloc served from RAM, like any
/// other heap block, is freed as ms_free frees it. NULL is ignored; a spilled block freed twice, or a pointer
/// inside one, aborts with a message naming the pointer (as the heap).
MS_API void ms_spill_free(void *ptr);
/// 1 when `ptr` is inside a spilled block. O(1), lock-free.
MS_API int ms_spill_is(const void *ptr);

/* ------------------------------------------------------------------------------------------------------------ */
/* DMA buffers (docs/contract.md §5)                                                                           */
/* ------------------------------------------------------------------------------------------------------------ */

/// DMA buffers for user-space drivers and data-acquisition loops: pinned memory, its physical layout as a
/// scatter/gather list, and a streaming copy to fill it. docs/dma.md has the details.
///
/// What a physical address is worth (read this before handing one to a device):
/// - It is the CPU's view, read from /proc/self/pagemap. Behind an IOMMU a device needs IOMMU (bus) addresses,
///   which only a kernel path gives (VFIO, a driver calling pin_user_pages, udmabuf/dma-buf).
/// - Reading it needs CAP_SYS_ADMIN: without it the kernel reports PFN 0; every call that needs a physical
///   address then fails with EPERM and one message saying so. Allocation, pinning and writing still work.
/// - Buffers on hugetlb pages (2 MiB, 1 GiB) are never swapped and never moved by compaction: their list stays
///   valid for the buffer's life. It is NOT stable against memory offlining (hot-unplug) or an explicit migration
///   (move_pages, migrate_pages, cpuset or NUMA-balancing changes on hugetlb where the kernel supports it).
/// - Buffers on 4 KiB pages, and registered memory that is not entirely hugetlb, are *movable*: mlock keeps them
///   in RAM but compaction may still move them (a compaction can move most of an mlocked range).
///   ms_dma_movable() says so; ms_dma_verify() re-translates and compares. Do not give their addresses to a
///   device that writes while the kernel might compact, unless a kernel driver pins them for you.
/// - Every buffer is marked MADV_DONTFORK: a forked child does not inherit it, so a fork never makes the
///   parent's next write land on a copied page while a device writes the old one. (The child must not touch it.)
#define MS_DMA_CONTIGUOUS 0x1u   ///< one physical run or fail: succeeds when one page (a huge page) holds the buffer
#define MS_DMA_NO_FALLBACK 0x2u  ///< fail (ENOMEM) instead of falling back to a smaller page size; with page_size
                                 ///< 0: a huge page of some size (1 GiB, else 2 MiB), never base pages

/// An opaque pinned buffer (ms_dma_alloc, ms_dma_register); thread-safe to read, freed once by ms_dma_free.
/// A freed handle used again (a second ms_dma_free, any accessor) is detected while its descriptor waits for
/// reuse (at least 64 later frees): ms_dma_free reports it naming the handle, the others fail as for NULL, all
/// with errno EINVAL. After that reuse, and for a pointer that never was a handle, the behaviour is undefined.
typedef struct ms_dma_buffer_s ms_dma_buffer_t;
/// One physically contiguous run of a buffer: bus/physical address and length in bytes.
typedef struct ms_dma_segment_s { uint64_t phys; size_t length; } ms_dma_segment_t; /* one contiguous run */
/// What ms_dma_alloc asks for: page size, NUMA node, flags. Zero-initialise it (reserved must be zero).
typedef struct ms_dma_config_s {
  size_t page_size;      /* 0 = best available (1 GiB, then 2 MiB, then 4 KiB), or an exact size */
  int numa_node;         /* -1 = no preference */
  unsigned flags;        /* MS_DMA_CONTIGUOUS (one physical run or fail), MS_DMA_NO_FALLBACK */
  uint64_t reserved[4];  /* must be zero */
} ms_dma_config_t;

/// Allocates a pinned buffer of `size` bytes (config NULL: best page size, no NUMA preference, no flags).
/// Pages: `page_size` 0 tries 1 GiB pages (when the buffer exceeds 512 MiB, so rounding wastes under half, or
/// when MS_DMA_CONTIGUOUS needs one), then 2 MiB, then the base page; MEMSPACE_HUGE_PAGES=2M caps that choice,
/// MEMSPACE_HUGE_PAGES=0 (set) makes it the base page.
/// An exact size (base, 2 MiB, 1 GiB) is tried first, then the smaller ones (reported under MEMSPACE_VERBOSE,
/// in stats and in ms_dma_info) unless MS_DMA_NO_FALLBACK; a size the kernel lacks counts as an empty pool. Hugetlb pages come from the pool reserved at
/// allocation time (never MAP_NORESERVE) and are pre-faulted, not mlocked (RLIMIT_MEMLOCK does not apply);
/// base pages are mlocked and populated. Memory is bound to `numa_node` when >= 0. The buffer starts
/// aligned to its page size and reads as zero.
/// Thread-safe. Cost: the system calls plus the kernel zeroing every page (0.1-0.2 s per GiB on 2 MiB pages).
/// NULL + errno: EINVAL (size 0, reserved fields not zero, unknown flags, a NUMA node the machine lacks, a page
/// size other than the base page, 2 MiB or 1 GiB, or
/// MS_DMA_CONTIGUOUS when no single page can hold the buffer: the message names why), ENOMEM (size overflow,
/// out of memory, no huge pages with MS_DMA_NO_FALLBACK or MS_DMA_CONTIGUOUS), what mlock gives without
/// CAP_IPC_LOCK: ENOMEM above a non-zero RLIMIT_MEMLOCK, EPERM when it is 0, EAGAIN (the message names the
/// limit), EIO (MS_DMA_CONTIGUOUS and the layout cannot be confirmed: a read of /proc/self/pagemap failed with
/// EIO or came back short; or, never expected, the buffer was found in more than one physical run).
MS_API ms_dma_buffer_t *ms_dma_alloc(size_t size, const ms_dma_config_t *config);
/// Pins and describes memory the program already has (`config` may be NULL; its page_size must be 0 or the
/// memory's page size; numa_node is ignored: existing pages are not moved). `memory` and `size` must be
/// aligned to the memory's page size (EINVAL otherwise: rounding would pin and mark MADV_DONTFORK the
/// neighbours sharing those pages, e.g. other heap blocks a forked child needs). The range is pre-faulted for
/// writing, mlocked (unless hugetlb or already locked) and marked MADV_DONTFORK. Registered memory is movable
/// unless every page is hugetlb. The memory must stay mapped until ms_dma_free. Thread-safe; O(mappings).
/// NULL + errno: EINVAL (NULL, size 0, unaligned, bad config), EFAULT (part of the range is not mapped or not
/// writable; the message names the first such address), ENOMEM/EPERM/EAGAIN (mlock refused, as ms_dma_alloc:
/// the message names RLIMIT_MEMLOCK). A registration that fails undoes its own mlock and MADV_DONTFORK on the
/// parts that had neither before, and nothing else (the caller's own, and those of live buffers, stay).
/// Registrations may overlap (memory inside a registered or allocated buffer): a part stays locked and
/// MADV_DONTFORK while any buffer covering it lives. With MS_DMA_CONTIGUOUS: EINVAL when the memory is in more than
/// one physical run, EPERM when that cannot be read (no CAP_SYS_ADMIN) unless the memory is one page, which is
/// contiguous by construction (as for ms_dma_alloc).
MS_API ms_dma_buffer_t *ms_dma_register(void *memory, size_t size, const ms_dma_config_t *config);
/// Frees an allocated buffer, or unregisters registered memory (munlock and MADV_DOFORK where memspace set
/// them and no other live buffer covers the pages; the memory stays mapped and keeps its contents; a range the
/// caller had partly mlocked, or partly marked MADV_DONTFORK, stays so on all of it: mlock does not nest, and
/// undoing it would undo the caller's own). NULL is
/// ignored; a freed handle is reported (message naming it, errno EINVAL; see ms_dma_buffer_t). An allocated
/// buffer that memory registered with ms_dma_register lies in is freed as any other (the handle is gone), but
/// while such a registration lives its pages stay mapped and pinned (counted in the statistics), so that the
/// registration's list never names pages the kernel gave back: they are released when the last registration
/// inside them is freed.
/// Thread-safe against other buffers; the buffer must not be used concurrently, except that of two frees of one
/// handle racing, one frees it and the other is refused as a freed handle.
MS_API void ms_dma_free(ms_dma_buffer_t *buffer);
/// Start of the buffer (NULL + EINVAL for NULL or a freed handle). O(1), thread-safe.
MS_API void *ms_dma_addr(const ms_dma_buffer_t *buffer);
/// Size asked for (the list covers exactly [0, size)); 0 + EINVAL for NULL or a freed handle. O(1), thread-safe.
MS_API size_t ms_dma_size(const ms_dma_buffer_t *buffer);
/// The page size actually obtained; 0 + EINVAL for NULL or a freed handle. O(1), thread-safe.
MS_API size_t ms_dma_page_size(const ms_dma_buffer_t *buffer);
/// Scatter/gather list: physical address and length of each physically contiguous run, in buffer order,
/// adjacent pages coalesced, lengths summing to ms_dma_size. Built on first call from one bulk read of
/// /proc/self/pagemap (one entry per huge page on hugetlb), then kept; the array lives as long as the buffer
/// (ms_dma_verify may update it in place). `count` receives the number of entries (0 on failure).
/// Thread-safe (an internal lock serialises building). O(pages) the first time (plus the page layer's record of
/// the list's memory: O(live reservations)), O(1) after.
/// NULL + errno: EPERM without CAP_SYS_ADMIN (PFN 0 seen, one message says so), EFAULT (a page not present),
/// EINVAL (NULL buffer), ENOMEM, EMFILE (no file descriptor left to open /proc/self/pagemap: nothing about
/// privilege; any other refused open gives its own errno). A failed call leaves the list unbuilt: the next one tries
/// again.
MS_API const ms_dma_segment_t *ms_dma_segments(const ms_dma_buffer_t *buffer, size_t *count);
/// Physical address of the byte at `offset` (< ms_dma_size). O(log segments) once the list is built.
/// Returns 0, or an errno value, also stored in errno: EINVAL (NULL, offset out of range), EPERM (no
/// CAP_SYS_ADMIN), EFAULT, ENOMEM, EMFILE (as ms_dma_segments). Thread-safe.
MS_API int ms_dma_phys(const ms_dma_buffer_t *buffer, size_t offset, uint64_t *phys);
/// Streaming copy of `length` bytes from `src` into the buffer at `offset`: non-temporal stores (AVX2, else
/// SSE2, chosen at run time) for the cache-line-aligned middle, regular stores for head and tail, and a store
/// fence before return, so the data is globally visible when it returns; plain memcpy (ordered, no fence) for
/// copies under 2 KiB, where the fence costs more than it saves, and on other architectures. For memory the CPU
/// will not read back soon. Thread-safe for disjoint ranges, no lock, no system call. A range outside the
/// buffer (or NULL) writes nothing and sets errno EINVAL. Many small events: ms_dma_stream + ms_dma_fence.
MS_API void ms_dma_write(ms_dma_buffer_t *buffer, size_t offset, const void *src, size_t length);

/// As ms_dma_write but without the fence (memcpy below 256 bytes): for a run of events, followed by ONE
/// ms_dma_fence() before the device is told (doorbell, write pointer). Until that fence the device may see
/// older contents. Thread-safe for disjoint ranges; the fence orders the calling thread's stores only.
MS_API void ms_dma_stream(ms_dma_buffer_t *buffer, size_t offset, const void *src, size_t length);
/// The unfenced streaming copy behind ms_dma_stream, for any destination (e.g. a device's view of a buffer found
/// through its own mapping). `dst` and `src` must not overlap. Thread-safe. Follow with ms_dma_fence().
MS_API void ms_dma_copy(void *dst, const void *src, size_t length);
/// Store fence (sfence on x86-64): every earlier ms_dma_stream / ms_dma_copy of this thread is globally visible
/// when it returns. O(outstanding stores).
MS_API void ms_dma_fence(void);
/// 1 when the buffer's physical pages may move while it lives (base pages, registered memory not entirely on
/// hugetlb), 0 when hugetlb-backed (stable against compaction; see the guarantees above), -1 + EINVAL for NULL.
/// O(1), thread-safe.
MS_API int ms_dma_movable(const ms_dma_buffer_t *buffer);
/// Re-translate and compare: reads pagemap again and compares with the list. Returns 0 when every byte is
/// where the list says, ESTALE when some moved (the list is then updated in place and `moved_bytes` receives
/// how many bytes changed physical address), or EPERM / EFAULT / EINVAL / ENOMEM / EMFILE as ms_dma_segments; a
/// non-zero value is also stored in errno.
/// `moved_bytes` may be NULL. Thread-safe (serialised with ms_dma_segments). O(pages) (plus the page layer's record
/// of a scratch list: O(live reservations)).
MS_API int ms_dma_verify(ms_dma_buffer_t *buffer, size_t *moved_bytes);

/// What one buffer is (ms_dma_info).
typedef struct ms_dma_info_s {
  void *addr;              ///< start
  size_t size;             ///< bytes asked for
  size_t mapped_size;      ///< bytes pinned (size rounded up to the page size)
  size_t page_size;        ///< page size obtained
  size_t segments;         ///< entries in the list, 0 while not built (or not readable)
  size_t largest_segment;  ///< bytes in the largest run, 0 while not built
  int numa_node;           ///< node bound to, or -1
  int registered;          ///< 1 for ms_dma_register memory
  int movable;             ///< as ms_dma_movable
  int fallback;            ///< 1 when a larger page size was asked for and not obtained
  uint64_t reserved[4];
} ms_dma_info_t;
/// Fills `info`. Returns 0, or EINVAL (NULL buffer or info, a freed handle), also stored in errno. O(1),
/// thread-safe.
MS_API int ms_dma_info(const ms_dma_buffer_t *buffer, ms_dma_info_t *info);

#ifdef __cplusplus
}
#endif
#endif /* MEMSPACE_H */
