/* SPDX-License-Identifier: MIT */
/* internal.h: what every memspace source file shares. Never installed.
   Internal non-static names use the prefix msi_; public ones ms_ (exported with MS_API). */
#ifndef MSI_INTERNAL_H
#define MSI_INTERNAL_H

#include "memspace.h"
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MSI_LIKELY(x) __builtin_expect(!!(x), 1)
#define MSI_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MSI_NOINLINE __attribute__((noinline))
#define MSI_COLD __attribute__((cold))
/* On a function no short-lived process runs (an error's report, a feature off by default): cold, as MSI_COLD, but
   placed with the ordinary code rather than in .text.unlikely, which the linker puts at the start of the text with
   the start-up code and the hot code: the fork handlers and the first allocation (MSI_COLD) run in every short
   process, and what it runs lies in one stretch of the text (MSI_HOT_TEXT, test_startup) that this code would
   only lengthen */
#define MSI_RARE __attribute__((cold, section(".text.rare")))
#define MSI_UNUSED __attribute__((unused))
#define MSI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MSI_CACHE_LINE 64
#define MSI_KiB ((size_t)1024)
#define MSI_MiB (MSI_KiB * 1024)
#define MSI_GiB (MSI_MiB * 1024)

/* copies n bytes between objects that do not overlap: memmove, not memcpy, whose symbol in the C library has a
   version of its own (GLIBC_2.14 on x86-64: every other function the library calls has the base version there),
   one more version for the dynamic loader to check in every process (test_startup). glibc serves both from one
   routine. A constant n is inlined by clang as memcpy's is, by GCC only for 1, 2, 4, 8 and 16 bytes (other sizes
   call memmove: no path where that matters copies a constant size). The empty asm hides where d and s point: a
   compiler that proves the two apart (a local buffer) makes a memmove a memcpy call again. */
static inline void *msi_memcpy(void *d, const void *s, size_t n) {
  __asm__("" : "+r"(d), "+r"(s));
  return __builtin_memmove(d, s, n);
}
static inline bool msi_is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }
static inline uintptr_t msi_align_up(uintptr_t x, size_t a) { return (x + (a - 1)) & ~(uintptr_t)(a - 1); }
static inline uintptr_t msi_align_down(uintptr_t x, size_t a) { return x & ~(uintptr_t)(a - 1); }
/* size rounded up to a multiple of a (power of two); 0 on overflow */
static inline uint64_t msi_add_sat(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }
static inline size_t msi_round_up(size_t x, size_t a) { return x > SIZE_MAX - (a - 1) ? 0 : (x + a - 1) & ~(a - 1); }

/* ---- options (src/core/options.c): the table in options.def ---- */
void msi_options_init(void);                   /* reads the environment once; idempotent, allocation-free */
/* the library constructor: the C library has set environ (options.c reads them then if an earlier allocation,
   before environ was set, could not) */
void msi_options_environ_final(void);
bool msi_options_read(void);                   /* the options were read from the environment */
/* true when the option's variable was set to an invalid value (reported, default kept) */
bool msi_option_invalid(ms_option_t o);
/* For the environment variable `name` (its first `len` bytes): -2 when it is no unknown MEMSPACE_* variable (not
   MEMSPACE_*, an option's name, or a script's own variable), else the option whose name is within 3 edits of it
   ("did you mean"), or -1. */
int msi_option_suggest(const char *name, size_t len);
/* a variable's text read as the library reads it for option o (not a string option): 0 and the value, else EINVAL
   or ERANGE (the library then keeps the default) */
int msi_option_parse(ms_option_t o, const char *text, long long *value);
/* true when the option was given a valid value (its variable, or ms_option_set), even one equal to the default */
bool msi_option_given(ms_option_t o);
/* MEMSPACE_HUGE_PAGES given as 0 (its variable, or ms_option_set): no huge pages for spaces and DMA, where unset
   means the best size */
bool msi_huge_pages_off(void);
/* Defined (non-zero) by the memspace tool only (hidden weak: 0 everywhere else). The tool carries its own copy of
   the library, but the MEMSPACE_* variables are meant for the program it runs: its copy reports no invalid value
   (the program does, once: docs/contract.md §3) and ignores the modes that would change its own malloc or output (space,
   spill, statistics at exit), so the process space is not created in the tool, nor are the space variables
   cleared before `memspace run` execs the program. Validity is still recorded (msi_option_invalid). */
extern const int msi_tool_process __attribute__((weak, visibility("hidden")));
#define MSI_TOOL_PROCESS (&msi_tool_process != NULL && msi_tool_process)
extern _Atomic long long msi_option_values[MS_OPTION_COUNT];
static inline long long msi_opt(ms_option_t o) {
  return atomic_load_explicit(&msi_option_values[o], memory_order_relaxed);
}
/* applies an option ms_option_set changed to the parts that read it once (src/core/route.c): the cache preset, the
   secure checks, the routing of spill and the process space */
void msi_option_changed(ms_option_t o);
/* " NAME=value" for the cache preset and every option not at its default (MEMSPACE_VERBOSE's start line) */
size_t msi_options_describe(char *buf, size_t cap);
/* value of environment variable `name` straight from environ (no allocation), NULL when unset */
const char *msi_getenv(const char *name);
/* removes variables from environ in place (no allocation): used to stop children inheriting settings */
void msi_unsetenv(const char *name);

/* ---- messages (src/core/msg.c): formatted with a tiny allocation-free printf, written with write(2) ----
   Supported: %s %c %d %i %u %x %p %zu %zd %zx %ld %lu %lx %lld %llu %llx %% with optional width/'-'/'0'. */
size_t msi_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap);
size_t msi_snprintf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* writes all of text (errno kept); 0, or the error that stopped it (EIO for a write of nothing) */
int msi_write_fd(int fd, const char *text, size_t len);
void msi_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* only with MEMSPACE_VERBOSE=1 */
void msi_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void msi_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* msi_error on descriptor fd (the statistics at exit: stderr, or its copy once the program closed it) */
void msi_error_to(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* prints once per call site: pass a static flag */
#define MSI_WARN_ONCE(...) do { static atomic_flag once_ = ATOMIC_FLAG_INIT; \
    if (!atomic_flag_test_and_set(&once_)) msi_warning(__VA_ARGS__); } while (0)
_Noreturn void msi_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "EBADF: bad file descriptor": the name and meaning of an errno value, allocation-free (static text) */
const char *msi_strerror(int e);
/* msi_strerror's text, or "error code N" for a value its table lacks, formatted into buf only then: for a
   message's %s (MSI_ERRNO). No allocation, no lock, no shared buffer (strerror has all three for some values) */
const char *msi_errtext(int e, char *buf, size_t cap);
#define MSI_ERRNO(e) msi_errtext((e), (char[32]){0}, 32)
/* n bytes in the largest unit it holds one of (bytes, KiB, MiB, GiB, TiB), with a tenth when not whole (cut, not
   rounded): "512 bytes", "1.5 KiB", "3 MiB", so a size below a unit never reads as 0 of it (MSI_SIZE) */
const char *msi_sizetext(unsigned long long n, char *buf, size_t cap);
/* s as messages show an argument (control bytes as \xNN, UTF-8 text as it is), cut to fit buf; returns buf */
const char *msi_escape(const char *s, char *buf, size_t cap);
#define MSI_SIZE(n) msi_sizetext((n), (char[24]){0}, 24)

/* ---- statistics registry (src/core/stats.c): each part registers a source once ---- */
typedef struct msi_stats_writer_s msi_stats_writer_t;  /* text/JSON sink used by print callbacks */
/* Every printed line is in src/internal/stats.def: the core prints the section's lines with an ms_stats_t field
   (from one snapshot of every get), then calls print for the section's lines without one. */
typedef struct msi_stats_source_s {
  const char *name;                                    /* section: "pages", "heap", "spaces", ... */
  void (*get)(ms_stats_t *stats);                      /* adds its counters */
  void (*print)(msi_stats_writer_t *w);                /* optional: its stats.def lines without a field */
  bool (*used)(void);                                  /* optional: false while the part was never used (its
                                                          section is then not printed); NULL: always printed */
} msi_stats_source_t;
void msi_stats_register(const msi_stats_source_t *source); /* idempotent; at most 16 sources */
/* print helpers usable from a source's print callback: a named integer field */
void msi_stats_field(msi_stats_writer_t *w, const char *name, unsigned long long value, const char *unit);
void msi_stats_text(msi_stats_writer_t *w, const char *name, const char *value);
/* the snapshot of every source's get that the lines are printed from: a print callback reads its figures there
   rather than taking a second ms_stats_t on the stack (5.6 KiB; malloc_stats runs on threads of PTHREAD_STACK_MIN) */
const ms_stats_t *msi_stats_snapshot(const msi_stats_writer_t *w);
/* n numeric lines of the current section, stats.def's rows `first` to `last` in table order (names and units from
   the table), valued values[0..n-1]: a part's counters without an ms_stats_t field print as one run. Rows that
   are not such a run (a row added between them) print nothing and one error. */
void msi_stats_run(msi_stats_writer_t *w, const char *first, const char *last, unsigned n,
                   const unsigned long long values[]);
/* several named numbers on one line: `name  k1 v1 k2 v2 ...` in text, {"k1": v1, ...} in JSON */
void msi_stats_numbers(msi_stats_writer_t *w, const char *name, unsigned n, const char *const keys[],
                       const unsigned long long values[]);
/* the statistics block at exit (MEMSPACE_SHOW_STATS): built in a static buffer and written whole, to stderr (fd)
   or to MEMSPACE_STATS_FILE with the pid in its name */
void msi_stats_exit_print(int fd);

/* ---- maintenance thread (src/core/maint.c): one thread shared by every part ----
   A task runs every period_ms while it has work: busy() true (NULL: always). While no task has (and no release
   task has anything for a look at memory pressure, below), after a few such rounds, the thread sleeps on a futex
   (without a timeout while every other thread has a heap: maint.c alone), so an idle process pays no wake-ups; a part that creates work for a later run (memory cached, a frame active, a
   spilled block) calls msi_maint_wake or msi_maint_kick after publishing it, and busy() must then see it (the
   sleeping side fences with membarrier: the waking side needs no fence). The thread starts lazily, only once
   msi_maint_kick() is called from a process that runs a second thread, never when MEMSPACE_PURGE_DELAY is -1; it
   is re-created lazily in a forked child. Tasks and busy() must not allocate through malloc; busy() is called
   from the maintenance thread only, takes no lock it may wait long for, and may run at any time. */
typedef struct msi_maint_task_s {
  const char *name;
  unsigned period_ms;
  void (*run)(uint64_t now_ns);
  bool (*busy)(void);
} msi_maint_task_t;
void msi_maint_register(const msi_maint_task_t *task);   /* idempotent; at most 8 tasks */
/* "there is work": wakes the thread (one relaxed load while it is awake), or starts it if allowed (that
   allocates: never while holding a lock) */
void msi_maint_kick(void);
/* "there may be work": wakes the thread if it sleeps, never starts it: one relaxed load while it is awake or
   absent, no allocation, callable with any lock held */
void msi_maint_wake(void);
/* thread_heap.c: threads with a heap whose exit kicks the maintenance thread (the heap's thread-exit destructor; 0 when
   that destructor could not be set up), so while every other thread of the process has one, the thread sleeps
   without a limit and still ends promptly after the program's last thread (maint.c alone) */
uint64_t msi_heap_threads_live(void);
/* maint.c: how long the sleeping maintenance thread may wait before it looks whether it is alone, from the
   process's thread count, whether the main thread has ended and msi_heap_threads_live: 0 (no limit) while every
   other thread has a heap and one is left, a short wait when none is left, else *interval (doubling, capped) */
unsigned msi_maint_alone_wait(long threads, bool leader_zombie, uint64_t heaps_live, unsigned *interval);
bool msi_maint_running(void);
void msi_maint_note_thread(void);                        /* call when a second thread is seen allocating */
/* From a task, around system calls that burn CPU for background work while holding none of our locks (spill's
   write-back): true puts the maintenance thread under SCHED_IDLE, so any other runnable thread of the machine
   preempts it at once; false (before taking a lock again) restores SCHED_BATCH, the thread's policy otherwise (a
   fair share, but its wake-ups never preempt a running thread). Never while holding a lock: an idle-priority
   thread holding one would stall every thread waiting for it on a busy machine. No-op outside the maintenance
   thread, and where the thread could not come back (not SCHED_OTHER or SCHED_BATCH to begin with, or neither
   CAP_SYS_NICE nor an RLIMIT_NICE of 20: Linux treats SCHED_IDLE as nice 20). Going idle does not hand the CPU
   to a thread already waiting for it: msi_maint_yield does. Returns whether the thread runs at the asked
   priority now: false after false when leaving SCHED_IDLE was refused (the thread stays idle: a caller about to
   take a lock takes none). */
bool msi_maint_set_idle(bool idle);
/* From a task, between the pieces of long background work: a thread already waiting for this CPU gets it now.
   Linux re-picks the running thread at a wake-up or a tick (up to 4-10 ms), not when a policy changes or a slice
   is spent, and a kernel without preemption never inside a system call: an interactive process preempted for a
   moment (by a kernel thread) could then wait for the whole of the thread's next calls. No-op outside the
   maintenance thread; costs one system call when nothing waits. */
void msi_maint_yield(void);
long msi_proc_threads(void); /* threads of this process (/proc/self/stat, no allocation); 0 when unreadable */
/* Memory pressure (maint.c). While the maintenance thread runs, it looks every 25 ms at the memory cgroup that
   limits the process (msi_os_cgroup_budget; its limit read again every second) and every 100 ms at the machine's
   memory stall (/proc/pressure/memory). Pressure: the cgroup's usage (v1 memory.usage_in_bytes, v2 memory.current)
   within a fifth of its limit (v1 memory.limit_in_bytes, v2 memory.max or memory.high), or some task stalled on
   memory for at least 1% of the time since the last look while the machine is short of memory (MemAvailable
   below a tenth of MemTotal: the machine's stall also counts tasks of other cgroups reclaiming at their own
   limits, with gigabytes free); once found, it lasts while each look finds the usage
   at least 1 MiB below the last one (a drain: what was freed after a release goes back at the next look). Each look that finds pressure runs every release task
   (msi_maint_on_pressure: every cache of a part back to the OS, whatever its age; at most 4, idempotent)
   at once (not after the purge delay) and counts in msi_maint_pressure_epoch; msi_maint_pressure is 1 while it
   lasts. The allocation slow paths read both with one relaxed load. msi_pressure_look is one look from the files
   named (tests pass their own).
   The looks are made only while a release task has something for them (its busy(): the heap's caches, its
   spans set aside while memory is tight, or its footprint changed since the last round); otherwise the thread
   sleeps and makes none.
   Without the maintenance thread (a single-threaded program) the heap's slow paths look instead, through
   msi_maint_pressure_poll: the cgroup only, at most every 25 ms, and only while the heap holds enough to matter
   (purge.c msi_heap_maybe_purge), so a small or short-lived program never opens a file from malloc. True when
   that look found pressure (the release tasks have run). */
extern _Atomic uint32_t msi_maint_pressure, msi_maint_pressure_epoch;
/* Nonzero while a forced purge may come for the heap's spans: the heap then sets an emptied current span aside
   where a forced purge can take it from any thread (span.c spare_put), at a cost on loops that empty a span every
   turn; at zero it keeps the span current, out of every purge's reach. MSI_TIGHT_MEMORY's bits say memory is
   tight (the statistics' `memory` line, the exit's flush); the others only that a limit exists or may exist, so
   the span an idle thread emptied before any look saw its cgroup tight still goes back under pressure */
extern _Atomic uint32_t msi_maint_tight;
#define MSI_TIGHT_LOOK 1u   /* the last look found pressure or the cgroup's usage at half its limit or more */
#define MSI_TIGHT_TEST 2u   /* a test holds memory tight */
#define MSI_TIGHT_LIMIT 4u  /* a cgroup limits the process's memory (the last reading of the limit) */
#define MSI_TIGHT_UNSEEN 8u /* a second thread allocates and no look has read the cgroup's limit yet */
#define MSI_TIGHT_MEMORY (MSI_TIGHT_LOOK | MSI_TIGHT_TEST)
void msi_maint_on_pressure(const msi_maint_task_t *release); /* its run(); its period is not used */
typedef struct {
  uint64_t limit;             /* the cgroup's limit in bytes; 0: no cgroup look */
  uint64_t used;              /* the usage the last look read */
  bool under;                 /* the last look found pressure */
  bool tight;                 /* the last look found pressure or the usage at half the limit or more */
  uint64_t psi_total, psi_ns; /* the stall total (us) and time of the last stall look; psi_ns 0: none yet */
  char usage[4200];           /* the limiting cgroup's usage file */
  char psi[64];               /* a PSI file ("some avg10=... total=US" first); "" none */
  char meminfo[64];           /* the machine's meminfo, read when the stall passes 1%; "" or unreadable: the stall alone */
} msi_pressure_t;
void msi_pressure_init(msi_pressure_t *p, uint64_t limit, const char *usage_path, const char *psi_path,
                       const char *meminfo_path);
bool msi_pressure_look(msi_pressure_t *p, uint64_t now_ns, bool psi_due);
bool msi_maint_pressure_poll(uint64_t now_ns); /* (msi_now_ns) */

/* ---- time ---- */
uint64_t msi_now_ns(void);  /* CLOCK_MONOTONIC */
uint32_t msi_now_coarse_ms(void); /* CLOCK_MONOTONIC_COARSE in ms: at most a tick behind, never ahead */

static inline void msi_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* ---- a small lock (futex-based, no allocation, fork-reset by owner code) ----
   It records its holder (the address of a thread-local byte), so that a thread about to wait for a lock it holds
   itself is reported and aborts instead of hanging for ever: a signal handler calling malloc or free while the
   thread it interrupted was inside the allocator (neither is async-signal-safe; glibc corrupts its heap there) */
extern __thread char msi_thread_tag;
static inline uintptr_t msi_self_tag(void) { return (uintptr_t)&msi_thread_tag; }
typedef struct { _Atomic int state; _Atomic uintptr_t holder; } msi_lock_t;
#define MSI_LOCK_INIT { 0, 0 }
void msi_lock_slow(msi_lock_t *l);
void msi_unlock_slow(msi_lock_t *l);
_Noreturn void msi_lock_self_wait(void); /* the report and abort (also for a space's mutex: EDEADLK) */
static inline void msi_lock(msi_lock_t *l) {
  int expected = 0;
  if (MSI_UNLIKELY(!atomic_compare_exchange_strong_explicit(&l->state, &expected, 1, memory_order_acquire,
                                                            memory_order_relaxed)))
    msi_lock_slow(l);
  atomic_store_explicit(&l->holder, msi_self_tag(), memory_order_relaxed);
}
static inline bool msi_trylock(msi_lock_t *l) {
  int expected = 0;
  if (!atomic_compare_exchange_strong_explicit(&l->state, &expected, 1, memory_order_acquire, memory_order_relaxed))
    return false;
  atomic_store_explicit(&l->holder, msi_self_tag(), memory_order_relaxed);
  return true;
}
static inline void msi_unlock(msi_lock_t *l) {
  atomic_store_explicit(&l->holder, 0, memory_order_relaxed);
  if (MSI_UNLIKELY(atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2)) msi_unlock_slow(l);
}
/* a registry of `max` pointers (maintenance tasks, stats sources): `item` appended under `lock` unless present or
   full; `count` (atomic) is stored after the entry, so a reader loading it sees the entries below it */
#define MSI_REGISTER_ONCE(array, max, count, lock, item)                                                      \
  do {                                                                                                        \
    msi_lock(lock);                                                                                           \
    int n_ = atomic_load(count);                                                                              \
    bool present_ = false;                                                                                    \
    for (int i_ = 0; i_ < n_; i_++) present_ |= (array)[i_] == (item);                                        \
    if (!present_ && n_ < (max)) {                                                                            \
      (array)[n_] = (item);                                                                                   \
      atomic_store(count, n_ + 1);                                                                            \
    }                                                                                                         \
    msi_unlock(lock);                                                                                         \
  } while (0)
/* in a forked child: the lock free again. Writes only a held lock: after fork each page written is a copy */
static inline void msi_lock_reset(msi_lock_t *l) {
  if (atomic_load_explicit(&l->state, memory_order_relaxed)) {
    atomic_store_explicit(&l->holder, 0, memory_order_relaxed);
    atomic_store_explicit(&l->state, 0, memory_order_relaxed);
  }
}

/* The locks that the heap's and the maintenance thread's fork handlers take, and the flag a forked child sets, in
   one block that never straddles a page (src/core/lock.c). The link puts it at the start of .bss, on the page
   of .data's end, which the dynamic loader writes anyway (it clears the rest of that page for .bss): the heap's
   start-up, which takes its locks, writes no page for it. Aligned to a cache line, not to its size (which would
   give it a page of its own after padding). test_startup checks with nm that it lies on that page, whole. After fork() every page a handler writes is a
   copy-on-write fault, in the parent (its unlocks) and in the child (its resets): spread over the parts' own
   variables they would cost about as many faults a fork as glibc's whole fork and exit; here one in each. The locks taken often (the heap's span paths, each large slot size's)
   sit in cache lines of their own. */
#define MSI_FORK_LARGE_LOCKS 24
typedef struct { _Alignas(64) msi_lock_t lock; } msi_lone_lock_t; /* a lock alone in its cache line */
typedef struct msi_fork_page_s {
  _Alignas(64) msi_lock_t heap_global; /* span_cache.c: the global span cache */
  _Alignas(64) msi_lock_t heap_seg;    /* segment.c: segments */
  _Alignas(64) msi_lock_t heap_heaps;  /* thread_heap.c: the list of thread heaps */
  msi_lock_t heap_init, direct, maint_tasks, spill;
  _Atomic int forked;                  /* maint.c: this process is a forked child */
  msi_lone_lock_t large[MSI_FORK_LARGE_LOCKS]; /* large.c: one per large slot size */
} msi_fork_page_t;
_Static_assert(sizeof(msi_fork_page_t) <= 2048, "the fork page stays small: it shares the page of .data's end");
extern _Alignas(64) msi_fork_page_t msi_fork_page; /* MSI_FORK_BSS */
/* true when the process surely has one thread (glibc >= 2.32's __libc_single_threaded, which glibc's own fork
   reads to skip malloc's locks); false when unknown. Fork handlers then take no lock: no other thread can hold
   one, and nothing is left to release or reset, so neither parent nor child writes a page for them. The handlers
   are MSI_COLD: grouped in .text.unlikely, a child takes one instruction fault for them, not one per file.
   fork.c asks in prepare and passes the answer to parent and child (a child's glibc need not say the same). */
bool msi_single_threaded(void);
/* *flag = value, written only when it changes: after a fork, the parent's first write to each page takes a fault
   (the page was write-protected for the child), at every fork */
static inline void msi_set_flag(bool *flag, bool value) {
  if (*flag != value) *flag = value;
}

/* ---- fork (src/core/fork.c) ----
   One pthread_atfork triple, registered once, calls one hook per part in the lock order of fork.c (docs/design.md,
   "Lock order"): prepare in that order, parent and child in the reverse order. No part calls pthread_atfork.
   `locking` is false when prepare found one thread (msi_single_threaded): no other thread can hold a lock, so a
   hook then takes, releases and resets none and writes no page for them; the value prepare saw is passed to
   parent and child. Work a child needs whatever the thread count (spill's private copies, the maintenance
   thread's state) runs in any case. */
typedef enum { MSI_FORK_PREPARE, MSI_FORK_PARENT, MSI_FORK_CHILD } msi_fork_phase_t;
/* registers the triple (idempotent, lock-free after the first call; safe when pthread_atfork allocates).
   Called from the library constructor and from each part's first use, before that part's locks are first taken. */
void msi_fork_register(void);
/* the parts' hooks, in lock order (outermost first) */
#define MSI_FORK_PARTS(X) X(proc_space) X(spaces) X(spill) X(heap) X(dma) X(frame) X(pages) X(maint) X(stats)
#define MSI_FORK_DECLARE(part) void msi_fork_##part(msi_fork_phase_t phase, bool locking);
MSI_FORK_PARTS(MSI_FORK_DECLARE)
#undef MSI_FORK_DECLARE

/* ---- library start-up (src/core/init.c) ---- */
/* On a small variable every process (or every allocating one) reads first and writes at start-up: placed in
   .data, whose last page the dynamic loader has written already (it clears the start of .bss there), instead of a
   .bss page that a read and a write fault in (the zero page first, then its copy). Keep the total small: .data
   past that page would be a page more to copy. */
#define MSI_START_DATA __attribute__((section(".data")))
/* On a zero-initialised variable that a short process's start-up, first allocations, fork or exit read or write
   (the heap's state and first heap, the OS layer's counters, the maintenance registry): placed together after the
   fork page (MSI_FORK_BSS), at the start of .bss (cmake/layout.ld), so that all of them lie on the page of .data's
   end, which the loader writes anyway, and the one page after it: spread through .bss between variables no short
   process touches, they took a fresh page more, a fault more in every process that allocates (test_startup
   counts the first malloc's faults and the library's writable pages it leaves present: the relocated page, the
   page of .data's end and one more). Keep the total within the page after .data's. */
#define MSI_START_BSS __attribute__((section(".bss.msi_start")))
/* the fork page's own section: first in .bss (cmake/layout.ld), on the page of .data's end */
#define MSI_FORK_BSS __attribute__((section(".bss.msi_fork")))
/* On a large zero-initialised array that a short-lived process never touches (buffers for exit statistics, caches
   filled later): placed after .bss (x86-64's .lbss, in the same writable segment), so that the small variables the
   start-up does touch share a few pages instead of being spread across .bss between such arrays. */
#if defined(__x86_64__)
#define MSI_COLD_BSS __attribute__((section(".lbss")))
#else
#define MSI_COLD_BSS
#endif
/* On a function every process runs at start-up: placed with the constructors in .text.startup, at the start of the
   library's text, so that start-up faults in one window of the kernel's fault-around (64 KiB of text) rather than
   one per window its functions are spread over. The constructors and destructors carry it too: gcc puts them in
   .text.startup by itself, clang leaves them in .text. */
#define MSI_STARTUP_TEXT __attribute__((section(".text.startup")))
/* On a function a short-lived process runs after start-up (the malloc family and the front door, the heap's slow
   paths that its first blocks take, the OS layer's calls they make): placed in .text.hot, which the linker puts
   right after .text.startup (GNU ld's default script: cold code, start-up code, hot code, then the rest). What a
   process of a millisecond runs, from the constructors to exit, then lies in one stretch of about 40 KiB at the
   start of the text: one or two windows of the kernel's fault-around where it spread over three or four of the
   library's 196 KiB, in every process and again in every fork child (test_startup checks the stretch). */
#define MSI_HOT_TEXT __attribute__((section(".text.hot")))
void msi_init(void);          /* idempotent; safe before libc is fully up */
extern _Atomic int msi_initialized; /* MSI_START_DATA */

#endif
