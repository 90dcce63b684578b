/* SPDX-License-Identifier: MIT */
/* proc_space.c: the process space (route.h, docs/contract.md §3): with MEMSPACE_SPACE_INITIAL set, the whole malloc
   family is served by one thread-safe deterministic space (priority-inheriting lock), created at library
   start for MEMSPACE_SPACE_AT=start (committed, pre-faulted, locked; a refused lock is reported and the space
   runs unlocked) or reserved at start and committed at the first allocation for `firstalloc`.
   The space reserves its whole virtual range (initial size + room for 63 expansions) up front, so
   msi_proc_space_owns is one lock-free range check. Unless MEMSPACE_SPACE_INHERIT=1 the MEMSPACE_SPACE_*
   variables are removed from environ after reading, so child processes do not inherit a locked space. */
#include "route.h"
#include "space_internal.h"
#include "os.h"
#include <errno.h>
#include <sys/resource.h>
#include <string.h>

static ms_space_t *_Atomic proc_space;
static _Atomic uintptr_t proc_lo;
static _Atomic size_t proc_span;
static _Atomic int proc_state; /* 0 not tried, 1 ready, 2 failed */
static msi_lock_t proc_lock = MSI_LOCK_INIT;

static void clear_environment(void) {
  if (msi_opt(MS_OPTION_SPACE_INHERIT)) return;
  msi_unsetenv("MEMSPACE_SPACE_INITIAL");
  msi_unsetenv("MEMSPACE_SPACE_EXPAND");
  msi_unsetenv("MEMSPACE_SPACE_AT");
  msi_unsetenv("MEMSPACE_SPACE_INHERIT");
}

/* fork.c's hook (part 1 of the lock order): proc_lock is held across ms_space_create, which takes the registry's
   lock (part 2) and the page layer's (part 7). The space's own lock is part 2's (space.c). */
MSI_COLD void msi_fork_proc_space(msi_fork_phase_t phase, bool locking) {
  if (!locking) return;
  if (phase == MSI_FORK_PREPARE) msi_lock(&proc_lock);
  else if (phase == MSI_FORK_PARENT) msi_unlock(&proc_lock);
  else msi_lock_reset(&proc_lock);
}

MSI_NOINLINE MSI_RARE static ms_space_t *proc_create(void) {
  msi_init();
  msi_fork_register(); /* fork.c: before proc_lock is first taken */
  msi_lock(&proc_lock);
  ms_space_t *s = atomic_load_explicit(&proc_space, memory_order_acquire);
  if (s || atomic_load(&proc_state) == 2) { msi_unlock(&proc_lock); return s; }
  long long initial = msi_opt(MS_OPTION_SPACE_INITIAL);
  if (initial <= 0) { atomic_store(&proc_state, 2); msi_unlock(&proc_lock); return NULL; }
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = (size_t)initial;
  c.expand_size = (size_t)msi_opt(MS_OPTION_SPACE_EXPAND);
  c.at = msi_opt(MS_OPTION_SPACE_AT) == 1 ? MS_SPACE_AT_FIRSTALLOC : MS_SPACE_AT_START;
  c.flags = MS_SPACE_THREAD_SAFE | MS_SPACE_LOCKED;
  if (msi_opt(MS_OPTION_HUGE_PAGES) > 0) c.flags |= MS_SPACE_HUGE_PAGES;
  c.numa_node = -1;
  c.name = "process";
  /* a size the machine cannot back is refused with one line (pre-faulting it would get the program OOM-killed
     without a word); one it can back only unlocked (swap) runs unlocked */
  char why[160];
  bool huge = c.flags & MS_SPACE_HUGE_PAGES;
  if (!huge && msi_space_backing(c.initial_size, false, why, sizeof why)) {
    msi_error("process space: a space of %zu bytes (MEMSPACE_SPACE_INITIAL) cannot be backed: %s; malloc fails "
              "with ENOMEM", c.initial_size, why);
    atomic_store(&proc_state, 2);
    clear_environment();
    msi_unlock(&proc_lock);
    return NULL;
  }
  if (!huge && msi_space_backing(c.initial_size, true, why, sizeof why)) {
    c.flags &= ~MS_SPACE_LOCKED;
    msi_warning("process space: %zu bytes cannot be locked: %s; the space runs unlocked and may take page faults",
                c.initial_size, why);
  }
  /* a step the space could never take (ms_space_create: EINVAL) is an invalid value: said, the default used */
  size_t max = msi_space_expand_max(c.initial_size);
  if (c.expand_size > max) {
    msi_warning("MEMSPACE_SPACE_EXPAND=%zu: above the largest expand step a space of %zu bytes can take (%zu bytes); "
                "using the default 0 (fixed size)", c.expand_size, c.initial_size, max);
    c.expand_size = 0;
  }
  /* at firstalloc the lock comes with the first allocation's commit: a refused one fails that allocation and
     every later one (the commit stays pending). Refused up front, the space runs unlocked, as at start */
  struct rlimit lim;
  if (!huge && (c.flags & MS_SPACE_LOCKED) && c.at == MS_SPACE_AT_FIRSTALLOC && !msi_os_may_lock(c.initial_size) &&
      msi_os_getrlimit(RLIMIT_MEMLOCK, &lim) == 0) {
    c.flags &= ~MS_SPACE_LOCKED;
    msi_warning("process space: locking %zu bytes would be refused: RLIMIT_MEMLOCK is %llu bytes (raise it or run "
                "with CAP_IPC_LOCK); the space runs unlocked and may take page faults", c.initial_size,
                (unsigned long long)lim.rlim_cur);
  }
  s = ms_space_create(&c);
  if (!s && (c.flags & MS_SPACE_LOCKED) && (errno == EPERM || errno == EAGAIN)) {
    int e = errno;
    struct rlimit rl;
    c.flags &= ~MS_SPACE_LOCKED;
    s = ms_space_create(&c);
    if (s && msi_os_getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      msi_warning("process space: locking %zu bytes was refused (%s): RLIMIT_MEMLOCK is %llu bytes (raise it "
                  "or run with CAP_IPC_LOCK); the space runs unlocked and may take page faults", c.initial_size,
                  MSI_ERRNO(e), (unsigned long long)rl.rlim_cur);
    else if (s)
      msi_warning("process space: locking %zu bytes was refused (%s); the space runs unlocked and may take "
                  "page faults", c.initial_size, MSI_ERRNO(e));
  }
  if (!s) {
    msi_error("process space: cannot create a space of %zu bytes (%s); malloc fails with ENOMEM",
              c.initial_size, MSI_ERRNO(errno));
    atomic_store(&proc_state, 2);
  } else {
    uintptr_t lo;
    size_t span;
    msi_space_lock_optional(s);
    msi_space_range(s, &lo, &span);
    atomic_store_explicit(&proc_lo, lo, memory_order_relaxed);
    atomic_store_explicit(&proc_span, span, memory_order_release);
    atomic_store_explicit(&proc_space, s, memory_order_release);
    atomic_store(&proc_state, 1);
    ms_space_info_t info;
    if (huge && c.expand_size && ms_space_info(s, &info) == 0) /* ms_space_create: a huge-page space is fixed */
      msi_warning("process space: MEMSPACE_SPACE_EXPAND=%zu has no effect with MEMSPACE_HUGE_PAGES: a space on huge "
                  "pages keeps its size (%zu bytes) and malloc fails with ENOMEM when it is full", c.expand_size,
                  info.size);
    msi_verbose("process space: %zu bytes%s, expand %zu, at %s", c.initial_size,
                (c.flags & MS_SPACE_LOCKED) ? " locked" : "", c.expand_size,
                c.at == MS_SPACE_AT_START ? "start" : "firstalloc");
  }
  clear_environment();
  msi_unlock(&proc_lock);
  return s;
}

static inline ms_space_t *proc_get(void) {
  ms_space_t *s = atomic_load_explicit(&proc_space, memory_order_acquire);
  return MSI_LIKELY(s != NULL) ? s : proc_create();
}

/* library start: create the space now when it is wanted (for `start` it is committed and locked here) */
MSI_STARTUP_TEXT __attribute__((constructor(110))) static void proc_space_init(void) {
  msi_init();
  if (msi_opt(MS_OPTION_SPACE_INITIAL) > 0) proc_get();
}

bool msi_proc_space_owns(const void *p) {
  size_t span = atomic_load_explicit(&proc_span, memory_order_acquire); /* published after proc_lo */
  return (uintptr_t)p - atomic_load_explicit(&proc_lo, memory_order_relaxed) < span;
}

void *msi_proc_space_malloc(size_t size, size_t alignment, bool zero) {
  ms_space_t *s = proc_get();
  if (MSI_UNLIKELY(!s)) { errno = ENOMEM; return NULL; }
  if (size == 0) size = 1;
  void *p;
  if (alignment > 16) p = ms_space_aligned_alloc(s, alignment, size);
  else if (zero) p = ms_space_calloc(s, 1, size);
  else p = ms_space_malloc(s, size);
  if (p && zero && alignment > 16) memset(p, 0, size);
  if (!p && errno != EINVAL) errno = ENOMEM;
  return p;
}

void msi_proc_space_free(void *p) {
  ms_space_t *s = atomic_load_explicit(&proc_space, memory_order_acquire);
  if (s && p) ms_space_free(s, p);
}

size_t msi_proc_space_usable_size(const void *p) {
  ms_space_t *s = atomic_load_explicit(&proc_space, memory_order_acquire);
  return s ? ms_space_usable_size(s, p) : 0;
}

void *msi_proc_space_realloc(void *p, size_t size) {
  ms_space_t *s = proc_get();
  if (MSI_UNLIKELY(!s)) { errno = ENOMEM; return NULL; }
  if (size == 0) size = 1;
  void *q = ms_space_realloc(s, p, size);
  if (!q && errno != EINVAL) errno = ENOMEM;
  return q;
}

bool msi_proc_space_info(ms_space_info_t *info) {
  ms_space_t *s = atomic_load_explicit(&proc_space, memory_order_acquire);
  return s && ms_space_info(s, info) == 0;
}

/* for tests and stats: the process space, or NULL */
ms_space_t *msi_proc_space_get(void) { return atomic_load_explicit(&proc_space, memory_order_acquire); }
