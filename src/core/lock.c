/* SPDX-License-Identifier: MIT */
/* lock.c: the slow paths of msi_lock (a three-state futex lock: 0 free, 1 held, 2 held with waiters). */
#include "internal.h"
#include "os.h"
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define MSI_HAVE_SINGLE_THREADED 1
#endif
#endif

__thread char msi_thread_tag;

/* this thread holds the lock it is about to wait for: it can never be released */
MSI_RARE _Noreturn void msi_lock_self_wait(void) {
  msi_error("malloc, free or another memspace call entered again while this thread was inside memspace, holding "
            "its lock (a signal handler calling the allocator, which is not async-signal-safe); aborting");
  abort();
}

void msi_lock_slow(msi_lock_t *l) {
  if (MSI_UNLIKELY(atomic_load_explicit(&l->holder, memory_order_relaxed) == msi_self_tag())) msi_lock_self_wait();
  for (int spin = 0; spin < 100; spin++) {
    int expected = 0;
    if (atomic_load_explicit(&l->state, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_weak_explicit(&l->state, &expected, 1, memory_order_acquire, memory_order_relaxed))
      return;
    msi_cpu_relax();
  }
  while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0) msi_os_futex_wait(&l->state, 2);
}

void msi_unlock_slow(msi_lock_t *l) { msi_os_futex_wake(&l->state, 1); }

MSI_FORK_BSS _Alignas(64) msi_fork_page_t msi_fork_page; /* zero: every lock free (MSI_LOCK_INIT); internal.h: its place */

MSI_HOT_TEXT bool msi_single_threaded(void) {
#ifdef MSI_HAVE_SINGLE_THREADED
  return __libc_single_threaded;
#else
  return false;
#endif
}

