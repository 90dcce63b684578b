/* SPDX-License-Identifier: MIT */
/* fork.c: the fork handlers: the parent waits until the child has made its spilled memory private */
#include "spill_internal.h"

/* ---- fork ----
   fork.c's hook (part 3 of the lock order: under sp_lock spill takes no other part's lock). fork.c registers its
   handlers before spill's lock is first taken (msi_fork_register: from the constructor and from initialisation),
   so a fork never copies that lock held: prepare takes it (waiting for an initialisation or allocation in another
   thread to finish), parent releases it, child re-creates it. The scratch locks of the statistics (vec_lock,
   buf_lock: never waited for while holding another) are re-created in the child. */
MSI_START_DATA _Atomic bool msi_sp_used; /* (spill_internal.h) read by every fork: not alone on a .bss page */
msi_lock_t msi_sp_vec_lock = MSI_LOCK_INIT; /* resident_bytes' mincore vector */
msi_lock_t msi_sp_buf_lock = MSI_LOCK_INIT; /* sample's read buffer */
/* The parent waits in its handler until the child's handler has made the child's view private (fork_child):
   otherwise the parent, returning from fork first, keeps writing its spilled blocks (an interpreter's stacks,
   a vector header) and freeing them (holes read as zeros) through the still-shared mapping, and the child
   copies a half-changed state (R's mclapply workers with a 1 MiB threshold crash so). The child closes the
   pipe's write end when done; its death or a failed fork closes it as well. */
static int fork_sync[2] = {-1, -1};
static bool any_shared(void) { /* a region the child must make private */
  if (atomic_load(&sp.state) != 1) return false;
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++)
    if (atomic_load(&sp.cls[c].mapped) > sp.cls[c].shared_from) return true;
  return false;
}
/* no pipe; written only when there was one (after a fork every page written again is a fault: msi_set_flag) */
static void fork_sync_clear(void) {
  if (fork_sync[0] != -1 || fork_sync[1] != -1) fork_sync[0] = fork_sync[1] = -1;
}

/* ---- fork generations ----
   A child that inherits spill's shared mappings (made private, fork_child) still reads the page cache of the
   parent's file for every page it has not written. So while such a child may still read them, the parent neither
   punches the file ranges of blocks it frees nor gives their slots to new blocks: msi_sp_slot_free marks them
   deferred with the generation they wait for, and they are released once no child of it is left.
   A generation is a pipe: every child forked into it inherits the write end (close-on-exec: an exec, after which
   the child no longer has the mappings, closes it, as does its exit; a grandchild inherits it too, which is
   right), and the parent keeps the read end, which reports a hang-up once every holder is gone. While open, the
   parent holds the write end too and later forks join the generation; reap seals it (closes the parent's write
   end) when no sealed one is pending, so at most two generations live: three descriptors. A child that closes the
   descriptor (closefrom) counts as gone. No pipe (a descriptor limit): the parent frees at once, as without fork
   tracking. Generations are numbered in order; a sealed one's hang-up releases every block waiting for it or an
   older one. */
typedef struct {
  int r, w;                     /* read end, write end (the open generation only) */
  unsigned long long dev, ino;  /* the pipe's identity: never closing a descriptor the program put on the number */
  uint32_t seq;
} fork_gen_t;
static fork_gen_t gen_open = {-1, -1, 0, 0, 0}, gen_sealed = {-1, -1, 0, 0, 0};
static uint32_t gen_last; /* generations numbered so far */
static _Atomic bool gen_any; /* a generation lives (read without the lock by the maintenance task) */

static void gen_close(const fork_gen_t *g, int fd) {
  unsigned long long dev, ino;
  if (fd >= 0 && msi_os_fstat_id(fd, &dev, &ino, NULL) == 0 && dev == g->dev && ino == g->ino) msi_os_close(fd);
}

/* under the lock: the generation a block freed now waits for, 0 when no forked child may hold the mappings */
uint32_t msi_sp_fork_wait(void) {
  return gen_open.r >= 0 ? gen_open.seq : gen_sealed.r >= 0 ? gen_sealed.seq : 0;
}

/* deferred blocks wait for a generation (the maintenance task reaps) */
bool msi_sp_fork_pending(void) {
  return atomic_load_explicit(&gen_any, memory_order_relaxed) && atomic_load_explicit(&sp.deferred, memory_order_relaxed);
}

/* under the lock: the sealed generation's hang-up releases its deferred blocks; the open one is sealed when no
   sealed one is pending */
void msi_sp_fork_reap(void) {
  if (!atomic_load_explicit(&gen_any, memory_order_relaxed)) return;
  for (int round = 0; round < 2; round++) {
    if (gen_sealed.r < 0) {
      if (gen_open.r < 0) break;
      gen_close(&gen_open, gen_open.w);
      gen_sealed = gen_open;
      gen_sealed.w = -1;
      gen_open.r = gen_open.w = -1;
    }
    if (!msi_os_hung_up(gen_sealed.r)) break;
    gen_close(&gen_sealed, gen_sealed.r);
    gen_sealed.r = -1;
    msi_sp_release_deferred(gen_sealed.seq);
  }
  atomic_store_explicit(&gen_any, gen_open.r >= 0 || gen_sealed.r >= 0, memory_order_relaxed);
}

/* prepare, under the lock, when the child will inherit shared mappings: the child joins the open generation */
static void gen_join(void) {
  if (gen_open.r >= 0) return;
  int fds[2];
  if (gen_last == UINT32_MAX || msi_os_pipe(fds) != 0) {
    msi_verbose("spill: no pipe to follow forked children (%s): the parent frees its spilled blocks at once, and a "
                "child still reading one sees the change", MSI_ERRNO(errno));
    return;
  }
  fork_gen_t g = {msi_sp_fd_high(fds[0]), msi_sp_fd_high(fds[1]), 0, 0, ++gen_last}; /* the low numbers stay the program's */
  if (msi_os_fstat_id(g.r, &g.dev, &g.ino, NULL) != 0) {
    msi_os_close(g.r);
    msi_os_close(g.w);
    return;
  }
  gen_open = g;
  atomic_store_explicit(&gen_any, true, memory_order_relaxed);
}

/* the child: its generation's write end stays open (untracked: it tells the parent the child lives); the read ends
   go, and the parent's deferred blocks are not the child's to release */
static void gen_child(void) {
  if (gen_open.r >= 0) msi_os_close(gen_open.r);
  if (gen_sealed.r >= 0) msi_os_close(gen_sealed.r);
  /* each variable is written only when it changes: every fork child of a program that never spills runs this,
     and a write to a page of spill's .bss (never touched in the parent) costs the child a page fault */
  if (gen_open.r != -1 || gen_open.w != -1 || gen_sealed.r != -1) gen_open.r = gen_open.w = gen_sealed.r = -1;
  if (atomic_load_explicit(&gen_any, memory_order_relaxed)) atomic_store_explicit(&gen_any, false, memory_order_relaxed);
  for (unsigned c = sp.min_shift; c <= sp.max_shift && c < SP_MAX_CLASSES; c++)
    if (sp.cls[c].ndefer) msi_sp_drop_deferred(&sp.cls[c]);
  if (atomic_load_explicit(&sp.deferred, memory_order_relaxed)) atomic_store_explicit(&sp.deferred, 0, memory_order_relaxed);
}

MSI_COLD static void fork_prepare(bool locking) {
  if (locking) msi_lock(&sp_lock);
  bool shared = atomic_load(&msi_sp_used) && any_shared();
  if (shared) gen_join();
  if (!shared || msi_os_pipe(fork_sync) != 0) fork_sync_clear();
}
MSI_COLD static void fork_parent(bool locking) {
  if (fork_sync[1] >= 0) {
    msi_os_close(fork_sync[1]);
    char b;
    while (msi_os_read(fork_sync[0], &b, 1) > 0) {}
    msi_os_close(fork_sync[0]);
    fork_sync[0] = fork_sync[1] = -1;
  }
  if (locking) msi_unlock(&sp_lock);
}
static void fork_sync_done(void) {
  if (fork_sync[1] >= 0) msi_os_close(fork_sync[1]);
  fork_sync_clear();
}
/* A private file mapping still shows the parent's later writes to pages the child has not written. That is
   fatal for memory the parent keeps changing: an interpreter's stack in a small spilled block, or the header at
   the start of a large vector (R's garbage collector links and marks it). So the child copies now (one write per
   page: copy on write) every page of blocks up to 16 MiB while the total stays under budget/16, and the first
   page of every other block. */
static uint64_t snapshot_copied; /* bytes copied in this fork (the handler runs single-threaded) */
static void snapshot_blocks(sp_class_t *k, unsigned c, size_t from, size_t to) { /* the blocks in [from, to) */
  size_t ps = msi_os_page_size();
  for (size_t slot = from >> c; slot < (to >> c) && slot < k->next; slot++) {
    size_t n = k->meta[slot];
    if (!n) continue;
    volatile unsigned char *b = (volatile unsigned char *)(k->start + (slot << c));
    size_t upto = ps;
    if (n <= ((size_t)16 << 20) && snapshot_copied + n <= msi_sp_snapshot_cap()) upto = n;
    for (size_t off = 0; off < upto; off += ps) b[off] = b[off];
    snapshot_copied += upto;
  }
}

/* [a, b) of class k's region (slot boundaries), still shared with a file spill lost (file_lost: the program closed
   or replaced its descriptor), becomes the child's private memory: its live blocks are copied into anonymous
   memory moved over the range. The price of a lost descriptor: the blocks' bytes in RAM in the child. false +
   errno (sp.fail_op says what failed). */
static bool copy_private(sp_class_t *k, unsigned c, size_t a, size_t b) {
  void *tmp = msi_os_mmap(NULL, b - a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (tmp == MAP_FAILED) { sp.fail_op = "mapping memory for a private copy"; return false; }
  for (size_t slot = a >> c; slot < (b >> c) && slot < k->next; slot++)
    if (k->meta[slot]) msi_memcpy((char *)tmp + ((slot << c) - a), (const void *)(k->start + (slot << c)), k->meta[slot]);
  if (msi_os_mremap(tmp, b - a, b - a, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)(k->start + a)) == MAP_FAILED) {
    int e = errno;
    msi_os_munmap(tmp, b - a);
    errno = e;
    sp.fail_op = "moving the private copy over the blocks";
    return false;
  }
  return true;
}

/* [from, m) of class k's region stays the parent's data in the child (a private mapping or copy was refused):
   no chunk of it may stay writable, nor be made writable again. A chunk of the current file, [split, m), is
   mapped again shared read-only from `fd`, a read-only descriptor of the file (ro_descriptor), so that an
   mprotect of the child's asking for PROT_WRITE fails (EACCES); where that is refused, or without one, the chunk
   becomes read-only in place (mprotect: the inherited mapping, from the parent's read-write descriptor, could be
   made writable again), else mapped again from `fd` (-1 when the descriptor is not ours; a shared mapping is
   never charged to the commit limit); failing that (a refused MAP_FIXED mmap or mremap unmaps its target first on
   older kernels: a hole, and mprotect fails with ENOMEM on one), or in a lost file's range that mprotect could not
   seal, it becomes inaccessible (PROT_NONE, anonymous: never charged). Should even that fail the child cannot keep
   the parent's data safe from its writes, and it aborts. Whatever is read-only reads the page cache of the
   parent's file: every later write of the parent shows in it. true: all read-only; false: some chunk is
   inaccessible. */
static bool remap_ro(sp_class_t *k, size_t o, size_t end, int fd) {
  return msi_os_mmap((void *)(k->start + o), end - o, PROT_READ, MAP_SHARED | MAP_FIXED, fd, (off_t)file_off(k, o)) !=
         MAP_FAILED;
}
static bool seal_shared(sp_class_t *k, size_t from, size_t split, size_t m, int fd, bool fd_ro) {
  bool all_ro = true;
  size_t chunk = (size_t)1 << k->chunk_shift;
  for (size_t o = from; o < m;) {
    size_t end = msi_align_down(o, chunk) + chunk;
    if (o < split && end > split) end = split; /* the lost file's and the current file's chunks apart */
    if (end > m) end = m;
    void *p = (void *)(k->start + o);
    bool remap = fd >= 0 && o >= split;
    if (!(remap && fd_ro && remap_ro(k, o, end, fd)) && msi_os_mprotect(p, end - o, PROT_READ) != 0 &&
        !(remap && !fd_ro && remap_ro(k, o, end, fd))) {
      all_ro = false;
      if (msi_os_mmap(p, end - o, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) ==
          MAP_FAILED)
        msi_fatal("spill: fork child could neither make its inherited spilled memory private nor read-only (%s): "
                  "its writes would reach the parent", MSI_ERRNO(errno));
    }
    o = end;
  }
  return all_ro;
}
/* the spill file on fd opened again read-only (its /proc/self/fd entry): what the child maps from it can never be
   made writable; -1 when refused (no /proc, a sandbox) or when the entry is another file (a /proc that is not this
   process's), errno unchanged. Under a seccomp filter it opens nothing: the filter may kill the child for it */
static int ro_descriptor(int fd) {
  if (msi_os_seccomp_filtered()) return -1;
  char path[40];
  msi_snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  int saved = errno, ro = msi_os_open(path, O_RDONLY | O_CLOEXEC, 0);
  if (ro >= 0 && !msi_sp_file_is_ours(ro)) {
    msi_os_close(ro);
    ro = -1;
  }
  errno = saved;
  return ro;
}

MSI_COLD static void fork_child(void) {
  msi_sp_fd_table_grow(true); /* the child's table starts from its highest descriptor (the child has one thread) */
  msi_lock_reset(&msi_sp_vec_lock);
  msi_lock_reset(&msi_sp_buf_lock);
  msi_sp_auto_fork_child();
  gen_child();
  if (fork_sync[0] >= 0) msi_os_close(fork_sync[0]);
  if (atomic_load(&sp.state) != 1) { /* never used (or unusable): nothing is mapped */
    fork_sync_done();
    msi_lock_reset(&sp_lock);
    return;
  }
  atomic_store(&sp.in_child, 1);
  msi_sp_writeback_reset_child();
  snapshot_copied = 0;
  /* the descriptor may no longer hold spill's file (the program closed or replaced it): then it is not ours to
     map or close, and the shared blocks are copied instead */
  int fd = atomic_load(&sp.fd);
  bool own = fd >= 0 && msi_sp_file_is_ours(fd);
  int ro_fd = -2; /* a read-only descriptor of the file, opened at the first class to seal (-1: refused) */
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) {
    sp_class_t *k = &sp.cls[c];
    size_t m = atomic_load(&k->mapped);
    if (m <= k->shared_from) continue; /* unused, or private already (from an earlier fork) */
    /* [shared_from, split): a file spill lost (frozen); [split, m): the current file */
    size_t split = k->floor > m ? m : k->floor > k->shared_from ? k->floor : k->shared_from;
    size_t shared = k->shared_from; /* [shared, m) is still the parent's shared mapping: all private once m */
    if (split == k->shared_from || copy_private(k, c, k->shared_from, split)) shared = split;
    if (shared == split && m > split && own) {
      /* MAP_NORESERVE: a writable private mapping is charged to the commit limit whole, and the kernel's default
         heuristic refuses one larger than RAM + swap (a chunk holding a spilled block larger than memory, which
         is what spill is for); the child's copies are charged as it writes them, as anonymous memory */
      for (size_t o = split, chunk = (size_t)1 << k->chunk_shift; o < m; o = msi_align_down(o, chunk) + chunk) {
        size_t n = msi_align_down(o, chunk) + chunk - o;
        if (msi_os_mmap((void *)(k->start + o), n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE,
                        fd, (off_t)file_off(k, o)) == MAP_FAILED) {
          sp.fail_op = "mapping the file privately";
          break;
        }
        shared = o + n < m ? o + n : m;
      }
      /* the chunks mapped privately before a refusal are the child's like all of them otherwise: the same advice
         and copy, so their small blocks keep the bytes of the fork */
      if (shared > split) {
        int e = errno;
        msi_sp_advise_range(k, k->start + split, shared - split, sp.random_adv);
        snapshot_blocks(k, c, split, shared);
        errno = e;
      }
    } else if (shared == split && m > split && copy_private(k, c, split, m)) {
      shared = m;
    }
    if (shared < m) {
      /* (strict overcommit, vm.overcommit_memory=2, ignores MAP_NORESERVE) What is still shared stays the
         parent's data: read-only here (seal_shared), so a write of the child faults instead of changing the
         parent's blocks */
      int e = errno;
      if (own && ro_fd == -2) ro_fd = ro_descriptor(fd);
      bool ro = seal_shared(k, shared, split, m, !own ? -1 : ro_fd >= 0 ? ro_fd : fd, ro_fd >= 0);
      msi_error("spill: fork child could not make %zu MiB of its spilled memory private (%s: %s): those inherited "
                "blocks are %s in it (a write faults) and show the parent's later writes", (m - shared) >> 20,
                sp.fail_op, MSI_ERRNO(e), ro ? "read-only" : "read-only or inaccessible");
    }
    if (msi_round_up(m, SP_FOLIO_MAX) > k->floor) /* the child's granules never share one with inherited blocks */
      k->floor = msi_round_up(m, SP_FOLIO_MAX);
    k->shared_from = k->floor;
    size_t above = own_first_slot(k, c);
    if (k->next < above) k->next = above;
    k->nfree = 0; /* free slots below the floor belong to the parent's file */
  }
  if (own) msi_os_close(fd); /* new blocks go to a file of the child's own, above the inherited extent */
  if (ro_fd >= 0) msi_os_close(ro_fd); /* (its mappings keep the file) */
  atomic_store(&sp.fd, -1);
  fork_sync_done(); /* the parent may go on */
  msi_lock_reset(&sp_lock);
}

MSI_COLD void msi_fork_spill(msi_fork_phase_t phase, bool locking) {
  if (phase == MSI_FORK_PREPARE) fork_prepare(locking);
  else if (phase == MSI_FORK_PARENT) fork_parent(locking);
  /* whatever the thread count the child's spilled memory becomes private; with one thread (prepare took no lock)
     and spill never used, no lock of spill's was taken and nothing is mapped, shared or deferred: nothing to do */
  else if (locking || atomic_load(&msi_sp_used) || msi_spill_threshold()) fork_child();
}
