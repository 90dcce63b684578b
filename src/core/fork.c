/* SPDX-License-Identifier: MIT */
/* fork.c: the library's one pthread_atfork registration. prepare takes every lock of the library in one fixed
   order; parent releases them and child resets them, in the reverse order. A lock the order puts earlier is never
   waited for by a thread that holds a later one, so prepare cannot deadlock with a running operation, and the child
   finds every lock free and every structure whole.

   Lock order (outermost first; docs/design.md "Lock order" holds the same table):
   | # | part       | locks, in order                                  | why here                                         |
   |---|------------|--------------------------------------------------|--------------------------------------------------|
   | 1 | proc_space | proc_lock (creating the process space)           | held across ms_space_create: takes 2 and 7       |
   | 2 | spaces     | registry_lock, then each live thread-safe space's | a space's lock is held across ms_pages_* (7);     |
   |   |            | mutex (the process space among them)             | no code holds a space's lock and takes the       |
   |   |            |                                                  | registry's or another space's                    |
   | 3 | spill      | sp_lock (+ the parent/child pipe)                | under it spill takes no other part's lock; its   |
   |   |            |                                                  | parent waits for the child's private copies      |
   | 4 | heap       | init_lock, heaps_lock, each thread cache's lock, | the heap's own nesting (heap_fork.c, large.c);   |
   |   |            | global_lock, seg_lock, large classes, direct     | under them it takes no other part's lock         |
   | 5 | dma        | pin_lock, reg_lock, each buffer's lock,          | dma.c's order; each of them is held across       |
   |   |            | desc_lock                                        | ms_pages_* (7)                                   |
   | 6 | frame      | list_lock                                        | a reclaim holds it across ms_pages_reset (7)     |
   | 7 | pages      | range_lock (the reservation table)               | taken under 1, 2, 5, 6; takes nothing            |
   | 8 | maint      | task_lock                                        | a leaf: held only to add a task                  |
   | 9 | stats      | source_lock                                      | a leaf: held only to add a source                |
   Parts 3 and 4 nest with nothing else; they sit where a thread already inside spill or the heap finishes without
   waiting for a later part. Not covered: a user space's lock when the space is not thread-safe (it has none), and
   the exit-time statistics lock (held while the process exits).

   Registration: once, from the library constructor (init.c) and from each part's first use (a constructor of
   another library may allocate before ours runs), always outside the parts' locks. glibc's pthread_atfork keeps
   its first handlers in static storage; a C library whose pthread_atfork allocates (musl) calls back into this
   library's malloc, which finds the registration under way in this thread and goes on (no self-wait). Registered
   first, these handlers run after every later registration's prepare (which may allocate) and before every later
   registration's parent and child handlers (which may allocate too). */
#include "internal.h"
#include <pthread.h>

typedef void msi_fork_hook_t(msi_fork_phase_t phase, bool locking);
#define MSI_FORK_ENTRY(part) msi_fork_##part,
static msi_fork_hook_t *const hooks[] = {MSI_FORK_PARTS(MSI_FORK_ENTRY)};
#undef MSI_FORK_ENTRY
#define NHOOKS (sizeof hooks / sizeof hooks[0])

MSI_START_BSS static bool fork_unlocked; /* this fork's prepare found one thread (written before the fork, only when it changes) */

MSI_COLD static void fork_prepare(void) {
  msi_set_flag(&fork_unlocked, msi_single_threaded());
  for (size_t i = 0; i < NHOOKS; i++) hooks[i](MSI_FORK_PREPARE, !fork_unlocked);
}
MSI_COLD static void fork_parent(void) {
  for (size_t i = NHOOKS; i-- > 0;) hooks[i](MSI_FORK_PARENT, !fork_unlocked);
}
MSI_COLD static void fork_child(void) {
  for (size_t i = NHOOKS; i-- > 0;) hooks[i](MSI_FORK_CHILD, !fork_unlocked);
}

/* glibc's pthread_atfork is a stub from libc_nonshared.a, linked at the end of the library's text, that calls
   __register_atfork with the object's handle: called directly, the constructor touches no text page but its own */
#ifdef __GLIBC__
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void), void *);
extern void *__dso_handle __attribute__((weak, visibility("hidden")));
#define FORK_REGISTER(p, a, c) __register_atfork(p, a, c, &__dso_handle ? __dso_handle : NULL)
#else
#define FORK_REGISTER(p, a, c) pthread_atfork(p, a, c)
#endif

MSI_START_DATA static _Atomic int reg_state;        /* 0 not registered, 1 being registered, 2 registered */
MSI_START_DATA static _Atomic uintptr_t reg_thread; /* the thread registering (msi_self_tag: no libc lookup) */
MSI_STARTUP_TEXT void msi_fork_register(void) {
  if (MSI_LIKELY(atomic_load_explicit(&reg_state, memory_order_acquire) == 2)) return;
  int expect = 0;
  if (atomic_compare_exchange_strong(&reg_state, &expect, 1)) {
    atomic_store(&reg_thread, msi_self_tag());
    FORK_REGISTER(fork_prepare, fork_parent, fork_child);
    atomic_store_explicit(&reg_state, 2, memory_order_release);
    return;
  }
  /* another thread is registering: wait, unless it is this thread (an allocation inside pthread_atfork) */
  while (atomic_load_explicit(&reg_state, memory_order_acquire) != 2 &&
         atomic_load(&reg_thread) != msi_self_tag())
    msi_cpu_relax();
}
