/* SPDX-License-Identifier: MIT */
/* heap_fork.c: the heap's part of fork (fork.c's hook, part 4 of the lock order): its locks taken before, released
   in the parent, reset in the child, with the child's counters and held work set right. */
#include "heap_internal.h"

/* A child of a multithreaded parent has no maintenance thread: the single-threaded purge's counters, not kept
   while that thread ran, are counted afresh from the spans (a child reusing spans its parent cached uncounted would
   take the counter below zero and keep everything it frees). O(segments); the child holds every lock. */
static void span_counts_recount(void) {
  uint64_t idle, active;
  msi_heap_spans_tally(NULL, &idle, &active);
  atomic_store_explicit(&msi_heap_idle_spans, (int64_t)idle, memory_order_relaxed);
  atomic_store_explicit(&msi_heap_active_spans, (int64_t)active, memory_order_relaxed);
  atomic_store_explicit(&msi_heap_st_large_check, ST_LARGE_MIN, memory_order_relaxed);
  atomic_store_explicit(&msi_heap_st_large_live, 0, memory_order_relaxed);
}

/* fork.c's hook (part 4 of the lock order): init_lock, the thread heaps' list, each thread cache, the global span
   cache, segments, then large.c's classes and the direct blocks; released and reset in the reverse order */
MSI_COLD void msi_fork_heap(msi_fork_phase_t phase, bool locking) {
  if (!locking) return; /* the parent had one thread: no lock held, the thread count unchanged */
  if (phase == MSI_FORK_PREPARE) {
    msi_lock(&init_lock);
    msi_lock(&heaps_lock);
    /* orphans another thread holds off the list (msi_heap_orphans_collect's list, msi_heap_orphan_span_take's orphan:
       heaps_lock not held while it works on them) would be lost to the child with their spans: waited for, as a lock
       is. The holder takes no lock held by now (the earlier parts' and init_lock: the heap takes none of them there),
       so its hold ends; yields first, then sleeps of 1 ms (a real-time thread forking leaves the holder its CPU), for
       at most a second: a holder stopped in a signal handler that waits for this fork (its own fork, a lock the prepare
       holds) would hang both, and a child without that orphan only leaks its spans. A hold of this thread's own (a fork
       from a signal handler that interrupted it) cannot end first: it resumes after the fork in both processes, the
       child's count kept for it (below). Meanwhile the list is kept aside, and so are the orphans put back or made
       (threads exiting) during each wait, so that no new hold begins (threads taking spans one after another would keep
       the count up). */
    if (msi_heap_orphans_held_elsewhere()) {
      msi_heap_t *aside = msi_heap_orphans;
      msi_heap_orphans = NULL;
      for (int i = 0; msi_heap_orphans_held_elsewhere() && i < 1100; i++) {
        msi_unlock(&heaps_lock);
        if (i < 100) msi_os_yield();
        else msi_os_sleep_ms(1);
        msi_lock(&heaps_lock);
        if (msi_heap_orphans) { /* put back or made during the wait: aside too, ahead of the rest */
          msi_heap_t *last = msi_heap_orphans;
          while (last->next_orphan) last = last->next_orphan;
          last->next_orphan = aside;
          aside = msi_heap_orphans;
          msi_heap_orphans = NULL;
        }
      }
      msi_heap_orphans = aside;
    }
    for (msi_heap_t *h = atomic_load(&msi_heap_all); h; h = h->next_all) msi_lock(&h->cache_lock);
    msi_lock(&global_lock);
    msi_lock(&seg_lock);
    msi_large_lock_all();
  } else if (phase == MSI_FORK_PARENT) {
    msi_large_unlock_all(false);
    msi_unlock(&seg_lock);
    msi_unlock(&global_lock);
    for (msi_heap_t *h = atomic_load(&msi_heap_all); h; h = h->next_all) msi_unlock(&h->cache_lock);
    msi_unlock(&heaps_lock);
    msi_unlock(&init_lock);
  } else {
    /* init_lock was held: the heap is set up (2) or was never started (0) */
    if (atomic_load_explicit(&msi_heap_init_state, memory_order_relaxed) == 2 && msi_heap_g.ready) span_counts_recount();
    msi_large_unlock_all(true);
    msi_lock_reset(&seg_lock);
    msi_lock_reset(&global_lock);
    for (msi_heap_t *h = atomic_load(&msi_heap_all); h; h = h->next_all) {
      msi_lock_reset(&h->cache_lock);
      /* its thread is not the child's */
      if (h != msi_tls_heap && !atomic_load_explicit(&h->gone, memory_order_relaxed))
        atomic_store_explicit(&h->gone, true, memory_order_relaxed);
    }
    /* the blocks the parent's other threads had chained for remote spans stay out of use in the child (at most
       MSI_HEAP_RSLOTS chains of MSI_HEAP_RBYTES each a thread, in spans that stay in use): such a thread took no
       lock, so the fork may have copied its chain half written (a new span with the old head), and a push of it
       would corrupt a span */
    for (msi_heap_t *h = atomic_load(&msi_heap_all); h; h = h->next_all) {
      if (h == msi_tls_heap || h->rb == msi_heap_rchains_none) continue;
      for (unsigned i = 0; i < MSI_HEAP_RSLOTS; i++) /* (each slot: its bit in rb_open may not be written yet) */
        if (h->rb[i].span) h->rb[i].span = NULL; /* (written only if set: a page copied at fork) */
      if (h->rb_open) h->rb_open = 0;
    }
    msi_lock_reset(&heaps_lock);
    msi_lock_reset(&init_lock);
    /* (a pass of another thread's: not the child's) */
    atomic_store_explicit(&msi_heap_release_running, 0, memory_order_relaxed);
    atomic_store_explicit(&msi_heap_release_quiet_until, 0, memory_order_relaxed);
    /* (another thread's pass held segments) */
    if (msi_heap_seg_pending_n && !msi_heap_reclaim_here) msi_heap_reclaim_pending_finish();
    if (msi_heap_seg_purging_n) msi_heap_purge_pending_finish();   /* (or chunks) */
    /* (this thread's holds end there) */
    if (msi_heap_orphans_busy != msi_heap_orphans_held_here) msi_heap_orphans_busy = msi_heap_orphans_held_here;
    /* (the parent's passes: their held work finished above, but for a pass of this thread's own, interrupted by
       the handler that forked, which resumes in the child, finishes its work and counts itself out) */
    if (msi_heap_purges_running != msi_heap_purges_here) msi_heap_purges_running = msi_heap_purges_here;
    uint64_t live = msi_tls_heap != MSI_EMPTY_HEAP; /* written only when it changes: a write is a page copy */
    if (msi_heap_counters.threads_live != live) msi_heap_counters.threads_live = live;
  }
}

