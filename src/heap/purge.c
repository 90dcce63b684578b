/* SPDX-License-Identifier: MIT */
/* purge.c: the purge passes (the maintenance thread's periodic one, the forced one under memory pressure, the
   single-threaded one from the allocation path) that give cached spans and idle chunks back to the kernel, and
   the release of idle segments when a mapping is refused. */
#include "heap_internal.h"

MSI_START_BSS static _Atomic uint32_t last_purge_ms;

static void purge_task_run(uint64_t now_ns);

/* The global cache beyond a quarter of the spans serving a class (at least GLOBAL_KEEP_MIN) goes back at each
   purge pass, oldest first, without waiting out the purge delay: dead threads' spans arrive there in bulk (a
   thread's empty spans at its exit, its heap's once other threads freed their blocks), and a program that
   replaces its threads (a server's pool, larson, mstress) would keep a second generation of spans cached beside
   the one in use. The newest are kept (the cache is newest first): the spans a new thread takes next. */
#define GLOBAL_KEEP_MIN (16 * MSI_HEAP_CHUNK)
/* With the maintenance thread the spans in use are tallied (msi_heap_spans_tally: every span descriptor of every
   segment, the owners' hot lines among them, read at each pass: a line its owner writes at its next malloc or free then
   comes back from this core's cache). A pass that finds the global cache as the last tally left it (no span put in or
   taken since: msi_heap_global_hold.ops) keeps that tally's `keep` instead: spans then arrive in bulk only through the
   cache, and those it holds still go after the purge delay. Under global_lock */
static struct { uint32_t ops; bool valid; size_t keep; } keep_memo;
static msi_span_t *list_cut_excess(msi_span_list_t *l, size_t keep) {
  msi_span_t *s = l->head, *prev = NULL;
  size_t kept = 0;
  while (s && kept < keep) { prev = s; s = s->next; kept++; }
  if (!s) return NULL;
  if (prev) prev->next = NULL;
  else l->head = NULL;
  l->count = kept;
  return s;
}
static bool purge_task_busy(void);
msi_maint_task_t msi_heap_purge_task = {"heap-purge", 100, purge_task_run, purge_task_busy};

/* what has aged; force: all the spans and segments' free chunks (force_large: and the cached large slots) */
/* forced passes begun (msi_heap_orphan_span_take: one that began while an orphan was held off the list missed it) */
_Atomic uint64_t msi_heap_forced_passes;
/* passes under way: a pass holds what it takes off the lists another pass walks (spans
   cut from a cache, chunks being dropped: seg->purging, segments being given back: seg_pending_*) until it ends,
   and the other pass leaves those alone */
_Atomic unsigned msi_heap_purges_running;
/* those of msi_heap_purges_running this thread runs (as msi_heap_orphans_held_here) */
_Thread_local unsigned msi_heap_purges_here;
static void purge_pass(uint64_t now_ms_in, bool force, bool force_large);
static void purge(uint64_t now_ms_in, bool force, bool force_large) {
  if (msi_opt(MS_OPTION_PURGE_DELAY) < 0 && !force) return;
  if (force) atomic_fetch_add_explicit(&msi_heap_forced_passes, 1, memory_order_acq_rel);
  msi_heap_purges_here++;
  atomic_fetch_add_explicit(&msi_heap_purges_running, 1, memory_order_relaxed);
  purge_pass(now_ms_in, force, force_large);
  atomic_fetch_sub_explicit(&msi_heap_purges_running, 1, memory_order_release);
  msi_heap_purges_here--;
}
static void purge_pass(uint64_t now_ms_in, bool force, bool force_large) {
  long long d = msi_opt(MS_OPTION_PURGE_DELAY);
  uint32_t now = (uint32_t)now_ms_in, delay = d < 0 ? 0 : (uint32_t)d;
  /* memory idle for `delay` ms is back with the OS by then: take what will reach it before the next pass */
  delay = delay > msi_heap_purge_task.period_ms ? delay - msi_heap_purge_task.period_ms : 0;
  atomic_store_explicit(&last_purge_ms, now, memory_order_relaxed);
  atomic_fetch_add_explicit(&msi_heap_counters.purges, 1, memory_order_relaxed);
  msi_heap_orphans_collect(force, now, delay);
  for (msi_heap_t *h = atomic_load_explicit(&msi_heap_all, memory_order_acquire); h; h = h->next_all) {
    if (force) msi_lock(&h->cache_lock);
    else if (!msi_trylock(&h->cache_lock)) continue;
    msi_span_t *old[MSI_HEAP_MAX_SPAN_CHUNKS + 1];
    uint32_t hold = msi_heap_cache_hold(&h->hold, now, delay);
    unsigned cut = 0;
    for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
      old[n] = msi_heap_list_cut_old(&h->cache[n], now, hold, force);
      cut |= (old[n] != NULL) << n;
    }
    msi_heap_hold_cut(&h->hold, cut, now, force);
    msi_unlock(&h->cache_lock);
    for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) msi_heap_release_chain(old[n]);
  }
  msi_span_t *old[MSI_HEAP_MAX_SPAN_CHUNKS + 1], *excess[MSI_HEAP_MAX_SPAN_CHUNKS + 1] = {NULL};
  size_t cached = 0, keep = SIZE_MAX;
  msi_lock(&global_lock); /* (the counts only say whether to look further: the tally below takes other locks) */
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) cached += msi_heap_global_cache[n].count * n * MSI_HEAP_CHUNK;
  uint32_t ops = msi_heap_global_hold.ops;
  bool memo = keep_memo.valid && keep_memo.ops == ops;
  size_t memo_keep = keep_memo.keep;
  msi_unlock(&global_lock);
  bool tallied = false;
  if (cached > GLOBAL_KEEP_MIN) { /* the spans in use: counted without the maintenance thread, else tallied */
    uint64_t idle, active = (uint64_t)atomic_load_explicit(&msi_heap_active_spans, memory_order_relaxed);
    bool maint = msi_maint_running();
    if (maint && memo) {
      keep = memo_keep;
    } else {
      if (maint) msi_heap_spans_tally(NULL, &idle, &active);
      keep = active / 4 > GLOBAL_KEEP_MIN ? (size_t)(active / 4) : GLOBAL_KEEP_MIN;
      tallied = maint;
    }
  }
  msi_lock(&global_lock);
  if (tallied) keep_memo.ops = ops, keep_memo.keep = keep, keep_memo.valid = true;
  uint32_t hold = msi_heap_cache_hold(&msi_heap_global_hold, now, delay);
  unsigned cut = 0;
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
    old[n] = msi_heap_list_cut_old(&msi_heap_global_cache[n], now, hold, force);
    cut |= (old[n] != NULL) << n;
    excess[n] = list_cut_excess(&msi_heap_global_cache[n], keep / ((size_t)n * MSI_HEAP_CHUNK));
  }
  msi_heap_hold_cut(&msi_heap_global_hold, cut, now, force);
  msi_unlock(&global_lock);
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++) {
    msi_heap_release_chain(old[n]);
    /* idle since the delay ago: msi_heap_segments_purge takes them */
    for (msi_span_t *s = excess[n], *next; s; s = next) {
      next = s->next;
      msi_heap_segment_release_span(s, false, now - delay);
    }
  }
  msi_heap_segments_purge(now, delay, force);
  msi_heap_segments_reclaim(msi_heap_seg_keep());
  msi_large_purge(now, delay, force_large);
}
/* force (memory pressure, ms_heap_collect(1)): every thread's spare spans first, so they go back with the rest */
void msi_heap_purge(uint64_t now_ms, bool force) {
  if (force)
    for (msi_heap_t *h = atomic_load_explicit(&msi_heap_all, memory_order_acquire); h; h = h->next_all) msi_heap_take_spares(h, false);
  purge(now_ms, force, force);
}

/* ms_heap_collect(1): all of it back on return. A forced pass that another pass (the maintenance thread's) overlaps
   leaves what that pass holds to it (purge_pass), and that pass, preempted mid-way (it runs SCHED_BATCH or SCHED_IDLE:
   on a loaded machine for many ms), would give it back only after the call returned, up to every idle segment of a
   burst of threads that exited. So the call waits for the passes under way to end, and passes again when one overlapped
   its own (another pass began meanwhile, or was under way at its start): a few rounds at most (the maintenance thread
   passes every msi_heap_purge_task.period_ms), each one's overlapping passes waited out. A pass of the calling thread's
   own (a signal handler's call that interrupted it) is not waited for: it ends after the handler returns. */
void msi_heap_purge_all(void) {
  for (int round = 0;; round++) {
    uint64_t pass = atomic_load_explicit(&msi_heap_counters.purges, memory_order_relaxed);
    bool alone = atomic_load_explicit(&msi_heap_purges_running, memory_order_acquire) == msi_heap_purges_here;
    msi_heap_purge(msi_heap_now_ms(), true);
    alone = alone && atomic_load_explicit(&msi_heap_counters.purges, memory_order_relaxed) == pass + 1;
    while (atomic_load_explicit(&msi_heap_purges_running, memory_order_acquire) > msi_heap_purges_here) msi_os_sleep_ms(1);
    if (alone || round == 3) return;
  }
}

/* A refused commit (RLIMIT_DATA, vm.overcommit_memory=2: both charge every read-write private mapping, resident
   or not, so idle segments spend the limit as live ones do): the caches go back (the calling thread's, the
   orphans', the global ones, forced) and every idle segment is released whole, none kept mapped (segments_release
   maps them read-only: no charge), and so are the large blocks' cached slots and the dense slot sizes with no
   block in use (msi_large_release_free). Another size then finds the room a freed one left, as glibc's coalesced
   free memory gives it. True when a segment or a large slot's mapping went back meanwhile (by this pass or
   another thread's; a cached slot that another thread's new block took gives nothing back), or another thread's
   pass ended meanwhile: the caller tries again. A request larger than all of that (the segments mapped, the large slots
   cached or taken) could not fit in what the pass gives back: no pass (a program halving a refused size until it
   fits keeps its caches). One pass at a time (the others wait for it, then try
   again); a pass that released nothing makes the next ones wait ten times its length (at most 100 ms), so a
   program taking NULL in a loop spends at most about a tenth of its time in them, unless large blocks were freed
   meanwhile (the large cache holds more than at the window's start) or small blocks' spans went back to their
   segments (the program filled the limit, freed, and asks for another size at once: a pass preempted for long on a
   loaded machine would otherwise leave it NULL for the window's 100 ms). */
MSI_COLD_BSS _Atomic int msi_heap_release_running;
MSI_COLD_BSS _Atomic uint64_t msi_heap_release_quiet_until; /* msi_now_ns: no pass before (the last released nothing) */
MSI_COLD_BSS static _Atomic uint64_t release_quiet_cached; /* msi_large_cached_bytes when that window began */
MSI_COLD_BSS static _Atomic uint64_t release_quiet_returned; /* spans_returned when that window began */
static _Thread_local bool release_here; /* this thread's pass is under way (a signal handler allocating in it) */
#define RELEASE_QUIET_MAX_NS 100000000u /* (a pass stopped or preempted for long: its quiet window stays short) */
/* spans given back to their segments so far (msi_heap_returned_spans): grows as frees empty spans */
static uint64_t spans_returned(void) {
  uint64_t n = 0;
  for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++)
    n += atomic_load_explicit(&msi_heap_returned_spans[c], memory_order_relaxed);
  return n;
}
MSI_RARE bool msi_heap_release_idle(size_t want) {
  if (!msi_heap_ready_seen() || release_here ||
      want > atomic_load_explicit(&msi_heap_counters.segments, memory_order_relaxed) * MSI_HEAP_SEG_SIZE +
                 msi_large_held_bytes())
    return false;
  int saved = errno;
  msi_heap_thread_collect(true); /* (the caller's own empty spans: a pass of another thread's leaves them) */
  uint64_t t0 = msi_now_ns();
  if (t0 < atomic_load_explicit(&msi_heap_release_quiet_until, memory_order_relaxed) &&
      msi_large_cached_bytes() <= atomic_load_explicit(&release_quiet_cached, memory_order_relaxed) &&
      spans_returned() <= atomic_load_explicit(&release_quiet_returned, memory_order_relaxed)) {
    errno = saved;
    return false;
  }
  int idle = 0;
  if (!atomic_compare_exchange_strong(&msi_heap_release_running, &idle, 1)) {
    while (atomic_load_explicit(&msi_heap_release_running, memory_order_acquire)) msi_os_yield();
    errno = saved;
    return true; /* (another thread's pass ended: what it released may fit) */
  }
  release_here = true;
  msi_lock(&seg_lock);
  size_t before = msi_heap_seg_released_n;
  msi_unlock(&seg_lock);
  uint64_t dropped = msi_large_dropped_bytes();
  msi_heap_thread_collect(true);
  msi_heap_orphans_flush();
  msi_heap_purge(msi_heap_now_ms(), true);
  msi_heap_segments_reclaim(0);
  bool released = msi_large_release_free() > 0 || msi_large_dropped_bytes() > dropped;
  msi_lock(&seg_lock);
  released = released || msi_heap_seg_released_n > before;
  msi_unlock(&seg_lock);
  if (!released) {
    uint64_t t1 = msi_now_ns(), d = 10 * (t1 - t0);
    atomic_store_explicit(&release_quiet_cached, msi_large_cached_bytes(), memory_order_relaxed);
    atomic_store_explicit(&release_quiet_returned, spans_returned(), memory_order_relaxed);
    atomic_store_explicit(&msi_heap_release_quiet_until, t1 + (d < RELEASE_QUIET_MAX_NS ? d : RELEASE_QUIET_MAX_NS),
                          memory_order_relaxed);
  }
  release_here = false;
  atomic_store_explicit(&msi_heap_release_running, 0, memory_order_release);
  errno = saved;
  return released;
}

static void purge_task_run(uint64_t now_ns) { msi_heap_purge(now_ns / 1000000u, false); }
/* memory pressure (maint.c): every cache (threads', global, free chunks, large slots) back to the OS now */
static void purge_on_pressure(uint64_t now_ns) { msi_heap_purge(now_ns / 1000000u, true); }
/* The maintenance thread's questions (maint.c plan). The purge has work while anything is cached that a pass gives back
   after the delay: a span in a thread's or the global cache, a segment's resident free chunk, a cached large slot, an
   orphaned heap kept whole at its thread's exit (flushed by a later pass, heap_keep_at_exit), or blocks other threads
   freed into an orphaned heap (collected by the pass). Each of these wakes a sleeping thread where it begins
   (msi_heap_span_cache_put, msi_heap_segment_release_span, large.c cache_put, msi_heap_thread_exit's kick, the remote
   free that queues a span on an orphan). Relaxed loads (heaps_lock for the orphan list): a pass decides under the
   locks. */
static bool purge_task_busy(void) {
  for (msi_heap_t *h = atomic_load_explicit(&msi_heap_all, memory_order_acquire); h; h = h->next_all)
    for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++)
      if (atomic_load_explicit(&h->cache[n].head, memory_order_relaxed)) return true;
  if (atomic_load_explicit(&msi_heap_orphans, memory_order_relaxed)) {
    bool remote = false;
    msi_lock(&heaps_lock);
    for (msi_heap_t *h = msi_heap_orphans; h && !remote; h = h->next_orphan)
      remote = h->intact || atomic_load_explicit(&h->remote, memory_order_relaxed) != NULL ||
               /* (msi_heap_orphans_collect reclaims after the delay) */
               (h->idle_seen && !h->reclaimed) || h->minis_idle_seen;
    msi_unlock(&heaps_lock);
    if (remote) return true;
  }
  for (unsigned n = 1; n <= MSI_HEAP_MAX_SPAN_CHUNKS; n++)
    if (atomic_load_explicit(&msi_heap_global_cache[n].head, memory_order_relaxed)) return true;
  uintptr_t top = atomic_load_explicit(&msi_heap_g.small_top, memory_order_acquire);
  for (uintptr_t off = 0; off < top; off += MSI_HEAP_SEG_SIZE)
    if (MSI_SEEN(((msi_segment_t *)(msi_heap_g.base + off))->dirty_mask)) return true;
  return msi_large_cached_bytes() != 0;
}
/* A look at memory pressure has something to take while the purge has work, or while memory is tight and a
   thread has a span set aside (spare_put: only a forced purge takes it), and something to find while the
   committed bytes changed since the last round (the heap grew: a look at the cgroup says whether memory is tight
   now; each growth wakes a sleeping thread, msi_heap_segment_alloc_span and large.c count_commit). Otherwise the thread
   sleeps and makes no look: current and spare spans stay with their threads until these take a slow path. */
static uint64_t release_seen_committed; /* (the maintenance thread's) */
static bool release_task_busy(void) {
  uint64_t committed = atomic_load_explicit(&msi_os_counters.committed, memory_order_relaxed);
  bool changed = committed != release_seen_committed;
  release_seen_committed = committed;
  if (changed || purge_task_busy()) return true;
  if (!(atomic_load_explicit(&msi_maint_tight, memory_order_relaxed) & MSI_TIGHT_LOOK)) return false;
  for (msi_heap_t *h = atomic_load_explicit(&msi_heap_all, memory_order_acquire); h; h = h->next_all)
    for (unsigned c = 0; c < MSI_HEAP_CLASSES; c++)
      if (atomic_load_explicit(&h->spare[c], memory_order_relaxed)) return true;
  return false;
}
const msi_maint_task_t msi_heap_release_task = {"heap-release", 0, purge_on_pressure, release_task_busy};

/* Under memory pressure a thread gives back its classes' empty current spans (kept for the next block of their
   class otherwise) and its spares: the maintenance thread cannot take a current span, since its owner allocates
   from it without a lock (it takes the spares: msi_heap_take_spares). Checked by the slow paths
   (msi_heap_maybe_purge): one relaxed load and a thread-local comparison. */
static __thread uint32_t pressure_seen;
static inline void pressure_check(void) {
  uint32_t e = atomic_load_explicit(&msi_maint_pressure_epoch, memory_order_relaxed);
  if (MSI_LIKELY(e == pressure_seen)) return;
  pressure_seen = e;
  msi_heap_t *h = msi_tls_heap;
  if (h != MSI_EMPTY_HEAP) msi_heap_release_current(h);
}

/* bytes of idle spans: cached, or free chunks resident in their segment (msi_heap_note_idle) */
MSI_START_BSS _Atomic int64_t msi_heap_idle_spans, msi_heap_active_spans;

/* A single-threaded program's cached large slots may hold as many bytes as the rest of its heap (its spans serving a
   class and large blocks in use), between ST_LARGE_MIN and ST_LARGE_MAX; past it the pages of the longest-cached go
   back (msi_large_trim), down to 3/4 of it. Counted from the heap's own figures, not the resident size: reading that
   (/proc/self/statm) on a free would kill a sandboxed program that forbids open() (test_heap_unit:
   large_blocks_in_a_sandbox), so blocks in use count by their size, touched or not. Measured only when the cache rose a
   step above the lowest it was since the last measurement, when the large blocks in use fell a step below the most they
   were since, or after a purge of the spans (force): most frees read three atomics. */
#define ST_LARGE_MAX (4 * MSI_HEAP_ST_PURGE_BYTES)
#define ST_LARGE_STEP (MSI_HEAP_ST_PURGE_BYTES / 2)
_Atomic uint64_t msi_heap_st_large_check = ST_LARGE_MIN;
MSI_START_BSS _Atomic uint64_t msi_heap_st_large_live;
MSI_HOT_TEXT static void st_large_budget(bool force) {
  uint64_t cached = msi_large_dirty_bytes(), check = atomic_load_explicit(&msi_heap_st_large_check, memory_order_relaxed);
  uint64_t live = msi_large_live_bytes(), top = atomic_load_explicit(&msi_heap_st_large_live, memory_order_relaxed);
  if (live > top) atomic_store_explicit(&msi_heap_st_large_live, live, memory_order_relaxed); /* the most held since */
  if (live + ST_LARGE_STEP < top) {
    force = true; /* the program holds less: its budget shrinks (the cache may not grow: its limits) */
  } else if (!force && cached + ST_LARGE_STEP < check) { /* lower again: measure after a rise from here */
    atomic_store_explicit(&msi_heap_st_large_check, cached + ST_LARGE_STEP, memory_order_relaxed);
    return;
  }
  if (!force && cached <= check) return;
  atomic_store_explicit(&msi_heap_st_large_live, live, memory_order_relaxed);
  int64_t spans = atomic_load_explicit(&msi_heap_active_spans, memory_order_relaxed);
  uint64_t rest = (spans > 0 ? (uint64_t)spans : 0) + live;
  uint64_t keep = rest < ST_LARGE_MIN ? ST_LARGE_MIN : rest > ST_LARGE_MAX ? ST_LARGE_MAX : rest;
  if (cached > keep) msi_large_trim(keep / 4 * 3);
  atomic_store_explicit(&msi_heap_st_large_check, msi_large_dirty_bytes() + ST_LARGE_STEP, memory_order_relaxed);
}

/* Without the maintenance thread nothing else watches the cgroup: the slow paths look (maint.c
   msi_maint_pressure_poll, at most every 25 ms) while the heap holds ST_PRESSURE_MIN or more (its spans and large
   blocks, cached or not): less is not worth a look, and a small or short-lived program (a shell's commands, a
   sandbox forbidding open()) never opens a file from malloc. Pressure found: every cache went back (the release
   task), and this thread's empty current spans go too, straight back with them (into the caches they would wait
   for the next look that finds pressure, or the purge delay). */
#define ST_PRESSURE_MIN (MSI_HEAP_ST_PURGE_BYTES / 4)
/* (the poll has its own rate limit: this only spares the sums) */
MSI_START_BSS static _Atomic uint64_t st_pressure_next;
static void st_pressure(uint64_t now_ns) {
  if (now_ns < atomic_load_explicit(&st_pressure_next, memory_order_relaxed)) return;
  atomic_store_explicit(&st_pressure_next, now_ns + 25000000u, memory_order_relaxed);
  int64_t spans = atomic_load_explicit(&msi_heap_idle_spans, memory_order_relaxed) +
                  atomic_load_explicit(&msi_heap_active_spans, memory_order_relaxed);
  uint64_t held = spans > 0 ? (uint64_t)spans : 0;
  if (held < ST_PRESSURE_MIN) held += msi_large_live_bytes() + msi_large_dirty_bytes();
  if (held < ST_PRESSURE_MIN || !msi_maint_pressure_poll(now_ns)) return;
  pressure_check();
  msi_heap_purge(now_ns / 1000000u, true);
}

/* From the malloc/free slow paths: a single-threaded program has no maintenance thread (one would make
   unshare(CLONE_NEWUSER) fail), so nothing would purge while it sleeps. It purges here once the delay has passed
   since the last purge, and at once, as glibc returns big frees:
   - every span cache and free chunk when they hold MSI_HEAP_ST_PURGE_BYTES (counted net: spans reused count
     back: counting every span retired since the last purge, a program growing strings by realloc, whose blocks
     leave their spans for the next class, would purge again and again and fault every page in afresh);
   - the longest-cached large slots past the budget of st_large_budget().
   Large slots do not go with the spans: a program replacing blocks as big as those it holds (mimalloc-bench's
   malloc-large: 20 live of 5-25 MiB) would be purged every few frees and fault each new block in afresh. A budget
   that follows what the rest of the heap holds keeps the slots a program reuses, and lets one that holds little
   keep little. */
MSI_HOT_TEXT void msi_heap_maybe_purge(void) {
  pressure_check();
  long long d = msi_opt(MS_OPTION_PURGE_DELAY);
  if (d < 0 || msi_maint_running()) return;
  /* Nothing idle (no span cached, no free chunk resident, no cached large slot holding pages) and too little held
     for the pressure look: a pass would take nothing, and the clock is not read (a short-lived program's first
     read of the vDSO's data page is a page fault) */
  int64_t idle = atomic_load_explicit(&msi_heap_idle_spans, memory_order_relaxed);
  if (idle <= 0 && msi_large_dirty_bytes() == 0 &&
      (uint64_t)atomic_load_explicit(&msi_heap_active_spans, memory_order_relaxed) + msi_large_live_bytes() < ST_PRESSURE_MIN) {
    st_large_budget(false);
    return;
  }
  uint64_t now_ns = msi_now_ns();
  st_pressure(now_ns);
  uint32_t now = (uint32_t)(now_ns / 1000000u);
  bool spans = idle >= (int64_t)MSI_HEAP_ST_PURGE_BYTES;
  st_large_budget(false);
  /* the delay counts from the first look with something idle (0: none yet) */
  uint32_t last = atomic_load_explicit(&last_purge_ms, memory_order_relaxed);
  if (!last) atomic_compare_exchange_strong_explicit(&last_purge_ms, &last, now | 1, memory_order_relaxed, memory_order_relaxed);
  /* (signed: a pass stamped later than this thread's clock reading, by another thread or a test's own clock, is
     recent) */
  if (!spans && (int32_t)(now - atomic_load_explicit(&last_purge_ms, memory_order_relaxed)) < (int32_t)(d < 10 ? 10 : d)) return;
  purge(now, spans, false);
  if (spans) st_large_budget(true); /* the program holds less now */
}

