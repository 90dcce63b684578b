/* SPDX-License-Identifier: MIT */
/* frame.c: the double-buffered frame allocator (ms_frame_*). Two ranges used alternately; a flip switches
   ranges and applies the policy to the range that the previous frame used (it is dead by then and the next
   frame reuses it). Idle reclaim (every policy but KEEP) gives both ranges back after idle_ms without a flip
   or an alloc: done by a task on the shared maintenance thread, which sees allocations as changes of `top`. The
   owner's flip cannot tell when the last alloc happened (alloc reads no clock), so it reclaims both ranges only
   when no alloc happened since a flip older than idle_ms; after a frame that allocated and lasted longer, it
   gives back the dead range alone (the frame just ended stays valid through the next one).

   Concurrency with the maintenance thread (asymmetric Dekker): the owner first publishes activity (a new
   `top` on alloc, a new `epoch` on flip/idle) with a relaxed store, then reads `state` after a compiler
   barrier. The maintenance thread moves `state` ACTIVE -> RECLAIM, then runs membarrier (a full barrier on
   every thread; when the kernel has none it waits 2 ms instead) and only then re-reads the activity: if the
   owner moved, it backs off; if not, any later owner call sees RECLAIM and waits for IDLE. The owner's fast
   path is therefore a plain store and a plain load. */
#include "os.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { ST_ACTIVE = 0, ST_RECLAIM = 1, ST_IDLE = 2 };

struct ms_frame_s {
  /* owner-side, hot */
  _Atomic size_t top;         /* bytes used in the current range */
  _Atomic unsigned cur;       /* current range, 0 or 1 */
  _Atomic int state;          /* ST_* */
  _Atomic uint64_t epoch;     /* bumped by every flip and idle call */
  uintptr_t base[2];
  size_t limit[2];            /* usable bytes of each range: range_size, 0 if a failed remap lost it */
  size_t range_size;
  ms_frame_policy_t policy;
  uint64_t idle_ns;           /* UINT64_MAX: never */
  uint64_t last_flip_ns;      /* owner only */
  _Atomic size_t hw[2];       /* bytes of each range possibly resident (high-water mark since its last reset) */
  size_t unit;                /* rounding of resets: the page size of the ranges */
  ms_pages_t pages[2];
  ms_pages_t self;            /* the page holding this struct */
  /* maintenance-side (under list_lock) */
  struct ms_frame_s *next, *prev;
  uint64_t m_epoch, m_since_ns;
  size_t m_top;
  /* counters */
  _Atomic uint64_t flips, reclaims, reclaimed_bytes, fallbacks;
};

/* every live frame allocator, for the maintenance task */
static msi_lock_t list_lock = MSI_LOCK_INIT;
static ms_frame_t *list_head;
static _Atomic uint64_t total_frames, total_flips, total_reclaims, total_reclaimed, total_fallbacks;

#define RLX memory_order_relaxed
#define LOAD(x) atomic_load_explicit(&(x), RLX)
#define STORE(x, v) atomic_store_explicit(&(x), (v), RLX)
#define BUMP(x, v) atomic_fetch_add_explicit(&(x), (uint64_t)(v), RLX)


/* fork.c's hook (part 6 of the lock order): the maintenance thread holds list_lock during a reclaim, across
   ms_pages_reset; taken around fork so the child's copy is consistent and free */
MSI_COLD void msi_fork_frame(msi_fork_phase_t phase, bool locking) {
  if (!locking) return;
  if (phase == MSI_FORK_PREPARE) msi_lock(&list_lock);
  else if (phase == MSI_FORK_PARENT) msi_unlock(&list_lock);
  else msi_lock_reset(&list_lock);
}
/* the task has work while a frame allocator with an idle time is active (not reclaimed yet): one becomes active
   at its creation and when its owner comes back after a reclaim, and each wakes a sleeping maintenance thread */
static bool frame_busy(void) {
  bool busy = false;
  msi_lock(&list_lock);
  for (ms_frame_t *f = list_head; f && !busy; f = f->next)
    busy = f->idle_ns != UINT64_MAX && LOAD(f->state) == ST_ACTIVE;
  msi_unlock(&list_lock);
  return busy;
}
static const msi_maint_task_t frame_task = {"frame-idle", 100, msi_frame_maint_run, frame_busy};

static size_t round_unit(const ms_frame_t *f, size_t bytes) {
  size_t r = msi_round_up(bytes, f->unit);
  return r > f->range_size || r == 0 ? f->range_size : r;
}

/* gives back the first `bytes` of range i; returns bytes given back (0 when nothing or on failure) */
static size_t drop_range(ms_frame_t *f, unsigned i, size_t bytes) {
  if (!bytes) return 0;
  bytes = round_unit(f, bytes);
  if (msi_os_madvise((void *)f->base[i], bytes, MADV_DONTNEED) != 0) {
    BUMP(f->fallbacks, 1);
    BUMP(total_fallbacks, 1);
    msi_verbose("frame: MADV_DONTNEED of %zu bytes failed (%s); pages kept", bytes, MSI_ERRNO(errno));
    return 0;
  }
  STORE(f->hw[i], 0);
  return bytes;
}

static size_t reclaim_both(ms_frame_t *f) {
  size_t cur_top = LOAD(f->top);
  unsigned cur = LOAD(f->cur);
  if (cur_top > LOAD(f->hw[cur])) STORE(f->hw[cur], cur_top);
  size_t n = drop_range(f, 0, LOAD(f->hw[0])) + drop_range(f, 1, LOAD(f->hw[1]));
  if (n) {
    BUMP(f->reclaims, 1);
    BUMP(f->reclaimed_bytes, n);
    BUMP(total_reclaims, 1);
    BUMP(total_reclaimed, n);
  }
  return n;
}

/* the owner's slow path: the state is not ACTIVE (the maintenance thread reclaims or has reclaimed) */
MSI_NOINLINE static void owner_wait_active(ms_frame_t *f) {
  for (;;) {
    int s = atomic_load_explicit(&f->state, memory_order_acquire);
    if (s == ST_ACTIVE) return;
    if (s == ST_IDLE) {
      if (atomic_compare_exchange_strong(&f->state, &s, ST_ACTIVE)) {
        if (f->idle_ns != UINT64_MAX) msi_maint_wake(); /* active again: the task watches it */
        return;
      }
      continue;
    }
    sched_yield(); /* a reclaim takes a few ms at most */
  }
}

/* after publishing activity: make sure no reclaim runs (see the header comment) */
static inline void owner_check(ms_frame_t *f) {
  atomic_signal_fence(memory_order_seq_cst);
  if (MSI_UNLIKELY(LOAD(f->state) != ST_ACTIVE)) owner_wait_active(f);
}

ms_frame_t *ms_frame_create(const ms_frame_config_t *config) {
  msi_init();
  if (!config || config->range_size == 0 || (unsigned)config->policy >= MS_FRAME_POLICY_COUNT ||
      config->idle_ms < -1) {
    errno = EINVAL;
    return NULL;
  }
  for (size_t i = 0; i < MSI_ARRAY_LEN(config->reserved); i++)
    if (config->reserved[i]) { errno = EINVAL; return NULL; }
  ms_pages_t self;
  int r = msi_pages_reserve_exact(sizeof(ms_frame_t), 0, MS_PAGES_COMMIT, -1, &self);
  if (r) { errno = r; return NULL; }
  ms_frame_t *f = self.addr;
  memset(f, 0, sizeof *f);
  f->self = self;
  f->policy = config->policy;
  long long idle = config->idle_ms ? config->idle_ms : msi_opt(MS_OPTION_FRAME_IDLE);
  f->idle_ns = idle < 0 || f->policy == MS_FRAME_KEEP ? UINT64_MAX : (uint64_t)idle * 1000000ull;
  unsigned flags = MS_PAGES_COMMIT;
  if (f->policy == MS_FRAME_HUGE) {
    long long hp = msi_opt(MS_OPTION_HUGE_PAGES);
    flags |= MS_PAGES_THP;
    if (hp >= (long long)MSI_GiB) flags |= MS_PAGES_HUGE_1G | MS_PAGES_HUGE_2M;
    else if (hp >= (long long)(2 * MSI_MiB)) flags |= MS_PAGES_HUGE_2M;
  }
  for (int i = 0; i < 2; i++) {
    r = msi_pages_reserve_exact(config->range_size, 0, flags, -1, &f->pages[i]);
    if (r) {
      if (i) msi_pages_release(f->pages[0].addr, f->pages[0].size);
      msi_pages_release(self.addr, self.size);
      errno = r;
      return NULL;
    }
    f->base[i] = (uintptr_t)f->pages[i].addr;
  }
  /* both ranges got the same kind (same flags); a hugetlb pair might differ if the pool ran dry in between */
  f->range_size = f->pages[0].size < f->pages[1].size ? f->pages[0].size : f->pages[1].size;
  f->limit[0] = f->limit[1] = f->range_size;
  f->unit = f->pages[0].page_size > f->pages[1].page_size ? f->pages[0].page_size : f->pages[1].page_size;
  if (f->unit < ms_page_size()) f->unit = ms_page_size();
  f->last_flip_ns = msi_now_ns();
  f->m_since_ns = f->last_flip_ns;
  msi_fork_register(); /* fork.c */
  msi_lock(&list_lock);
  f->next = list_head;
  if (list_head) list_head->prev = f;
  list_head = f;
  msi_unlock(&list_lock);
  BUMP(total_frames, 1);
  if (f->idle_ns != UINT64_MAX) {
    msi_maint_register(&frame_task);
    msi_maint_wake();
  }
  msi_verbose("frame: two ranges of %zu bytes (%s pages), policy %d", f->range_size,
              f->pages[0].kind == MS_PAGE_BASE ? "base" : f->pages[0].kind == MS_PAGE_THP ? "thp" : "hugetlb",
              (int)f->policy);
  return f;
}

void *ms_frame_alloc(ms_frame_t *f, size_t size, size_t alignment) {
  if (MSI_UNLIKELY(!f || size == 0)) { errno = EINVAL; return NULL; }
  if (alignment == 0) alignment = 16;
  else if (MSI_UNLIKELY(!msi_is_pow2(alignment))) { errno = EINVAL; return NULL; }
  unsigned r = LOAD(f->cur);
  uintptr_t base = f->base[r];
  size_t top = LOAD(f->top), limit = f->limit[r];
  uintptr_t cur = base + top;
  uintptr_t p = (cur + (alignment - 1)) & ~(uintptr_t)(alignment - 1);
  if (MSI_UNLIKELY(p < cur || p - base > limit || size > limit - (p - base))) {
    errno = ENOMEM;
    return NULL;
  }
  STORE(f->top, (size_t)(p - base) + size);
  owner_check(f);
  return (void *)p;
}

size_t ms_frame_used(const ms_frame_t *f) { return f ? atomic_load_explicit(&f->top, RLX) : 0; }

/* applies the per-flip policy to range i (dead: used one frame earlier) */
static void apply_policy(ms_frame_t *f, unsigned i) {
  size_t bytes = LOAD(f->hw[i]);
  if (!bytes) return;
  bytes = round_unit(f, bytes);
  void *addr = (void *)f->base[i];
  switch (f->policy) {
  case MS_FRAME_KEEP_IDLE:
  case MS_FRAME_KEEP:
  case MS_FRAME_POLICY_COUNT:
    return;
  case MS_FRAME_RESET:
    /* pages stay resident (LazyFree) until the kernel needs them: hw is kept for the idle reclaim */
    if (msi_pages_reset(addr, bytes) == 0) return;
    break;
  case MS_FRAME_DECOMMIT:
  case MS_FRAME_HUGE:
    if (msi_os_madvise(addr, bytes, MADV_DONTNEED) == 0) { STORE(f->hw[i], 0); return; }
    break;
  case MS_FRAME_RELEASE: {
    /* a fresh mapping over the same addresses: the kernel unmaps the old pages and maps new ones */
    void *p = msi_os_mmap(addr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (p == addr) { STORE(f->hw[i], 0); return; }
    break;
  }
  }
  /* the policy's call failed: fall back to MADV_DONTNEED (keeps the range usable), reported */
  BUMP(f->fallbacks, 1);
  BUMP(total_fallbacks, 1);
  msi_verbose("frame: policy %d failed on %zu bytes (%s); using MADV_DONTNEED", (int)f->policy, bytes,
              MSI_ERRNO(errno));
  if (msi_os_madvise(addr, bytes, MADV_DONTNEED) == 0) {
    STORE(f->hw[i], 0);
  } else if (msi_os_mapped(addr, bytes) != 0) {
    /* a failed MAP_FIXED may leave a hole (older kernels): map it again, else stop using this range */
    void *p = msi_os_mmap(addr, bytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != addr) {
      int e = p == MAP_FAILED ? errno : EEXIST; /* mapped elsewhere: the hole was taken meanwhile */
      if (p != MAP_FAILED) msi_os_munmap(p, bytes);
      f->limit[i] = 0;
      msi_warning("frame: a range of %zu bytes was lost (%s); allocations from it fail with ENOMEM", bytes,
                  MSI_ERRNO(e));
    }
  }
}

void msi_frame_flip_at(ms_frame_t *f, uint64_t now) {
  if (!f) return;
  STORE(f->epoch, LOAD(f->epoch) + 1);
  owner_check(f);
  unsigned cur = LOAD(f->cur), next = cur ^ 1u;
  size_t top = LOAD(f->top);
  if (top > LOAD(f->hw[cur])) STORE(f->hw[cur], top);
  bool long_frame = f->idle_ns != UINT64_MAX && now - f->last_flip_ns >= f->idle_ns && now >= f->last_flip_ns;
  if (MSI_UNLIKELY(long_frame && top == 0)) {
    /* no flip and no alloc for idle_ms, not reclaimed by the maintenance thread (single-threaded program, or it
       was off): both ranges now */
    reclaim_both(f);
  } else if (MSI_UNLIKELY(long_frame) && f->policy == MS_FRAME_KEEP_IDLE) {
    /* a long frame that allocated: its objects stay valid through the next frame; the dead range goes back */
    size_t n = drop_range(f, next, LOAD(f->hw[next]));
    BUMP(f->reclaimed_bytes, n);
    BUMP(total_reclaimed, n);
  } else {
    apply_policy(f, next);
  }
  STORE(f->cur, next);
  STORE(f->top, 0);
  f->last_flip_ns = now;
  BUMP(f->flips, 1);
  BUMP(total_flips, 1);
  if (f->idle_ns != UINT64_MAX) msi_maint_kick();
}

void ms_frame_flip(ms_frame_t *f) {
  if (f) msi_frame_flip_at(f, msi_now_ns());
}

size_t ms_frame_idle(ms_frame_t *f) {
  if (!f) return 0;
  STORE(f->epoch, LOAD(f->epoch) + 1);
  owner_check(f);
  size_t n = reclaim_both(f);
  int expected = ST_ACTIVE;
  atomic_compare_exchange_strong(&f->state, &expected, ST_IDLE); /* the maintenance task has nothing to do */
  return n;
}

void ms_frame_destroy(ms_frame_t *f) {
  if (!f) return;
  msi_lock(&list_lock); /* a running reclaim holds it: wait for it */
  if (f->prev) f->prev->next = f->next;
  else list_head = f->next;
  if (f->next) f->next->prev = f->prev;
  msi_unlock(&list_lock);
  msi_pages_release(f->pages[0].addr, f->pages[0].size);
  msi_pages_release(f->pages[1].addr, f->pages[1].size);
  BUMP(total_frames, (uint64_t)-1);
  ms_pages_t self = f->self;
  msi_pages_release(self.addr, self.size);
}

/* ---- the maintenance task: reclaims frame allocators idle for idle_ms ---- */
void msi_frame_maint_run(uint64_t now) {
  msi_lock(&list_lock);
  for (ms_frame_t *f = list_head; f; f = f->next) {
    if (f->idle_ns == UINT64_MAX || LOAD(f->state) != ST_ACTIVE) continue;
    uint64_t e = LOAD(f->epoch);
    size_t t = LOAD(f->top);
    if (e != f->m_epoch || t != f->m_top) {
      f->m_epoch = e, f->m_top = t, f->m_since_ns = now;
      continue;
    }
    if (now < f->m_since_ns || now - f->m_since_ns < f->idle_ns) continue;
    int expected = ST_ACTIVE;
    if (!atomic_compare_exchange_strong(&f->state, &expected, ST_RECLAIM)) continue;
    if (msi_os_membarrier() != 0) {
      struct timespec ts = {0, 2000000}; /* stands in for the barrier: resumed after a signal */
      while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    }
    if (LOAD(f->epoch) != e || LOAD(f->top) != t) { /* the owner came back in time */
      atomic_store_explicit(&f->state, ST_ACTIVE, memory_order_release);
      continue;
    }
    size_t n = reclaim_both(f);
    atomic_store_explicit(&f->state, ST_IDLE, memory_order_release);
    if (n) msi_verbose("frame: idle for %llu ms: gave back %zu bytes", (unsigned long long)(f->idle_ns / 1000000), n);
  }
  msi_unlock(&list_lock);
}

/* ---- statistics: printed in their own section ---- */
static void frame_print(msi_stats_writer_t *w) {
  msi_stats_field(w, "frame_allocators", LOAD(total_frames), "");
  msi_stats_field(w, "frame_flips", LOAD(total_flips), "");
  msi_stats_field(w, "frame_idle_reclaims", LOAD(total_reclaims), "");
  msi_stats_field(w, "frame_idle_reclaimed", LOAD(total_reclaimed), "bytes");
  msi_stats_field(w, "frame_policy_fallbacks", LOAD(total_fallbacks), "");
}
/* the section once a frame allocator was made */
static bool frame_used(void) { return LOAD(total_frames) || LOAD(total_flips); }
static const msi_stats_source_t frame_source = {"frames", NULL, frame_print, frame_used};
MSI_STARTUP_TEXT __attribute__((constructor(103))) static void frame_register(void) { msi_stats_register(&frame_source); }
