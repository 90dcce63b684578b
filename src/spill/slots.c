/* SPDX-License-Identifier: MIT */
/* slots.c: classes and slots: mapping the regions from the file, reserving disk per granule, slot allocation,
   free (punch or clear in place), blocks below the floor, giving everything back when the last block goes */
#include "spill_internal.h"

/* class setup under the lock: the file, the metadata. false + errno, sp.fail_op. */
static bool class_open(sp_class_t *k, unsigned c) {
  if (!msi_sp_file_owned() && !msi_sp_file_open()) return false;
  if (!k->meta) {
    size_t slots = class_slots(c), chunks = k->ext >> k->chunk_shift;
    size_t stale_at = chunks * sizeof(size_t) + slots * (2 * sizeof(size_t) + 2 * sizeof(uint32_t));
    void *m = msi_os_mmap(NULL, stale_at + slots + k->ext / SP_UNIT, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) { sp.fail_op = "mapping the slot table"; return false; }
    k->cfile = m;
    k->meta = k->cfile + chunks;
    k->dneed = k->meta + slots;
    k->stack = (uint32_t *)(k->dneed + slots);
    k->dseq = k->stack + slots;
    k->stale = (uint8_t *)(k->dseq + slots);
    k->behind = (_Atomic unsigned char *)(k->stale + slots);
  }
  return true;
}

/* Under the lock: the region is mapped at least up to `end` bytes from its start, each new chunk from the file's
   next unused extent. false + errno: 0 when the file has no room left (its size, or an RLIMIT_FSIZE the program
   lowered since: the block stays in RAM), sp.fail_op. */
bool msi_sp_class_map(sp_class_t *k, size_t end) {
  size_t m = atomic_load_explicit(&k->mapped, memory_order_relaxed), chunk = (size_t)1 << k->chunk_shift;
  if (end <= m) return true;
  size_t want = msi_round_up(end, SP_MAP_STEP);
  if (want == 0 || want > k->ext) want = k->ext;
  want = msi_round_up(want, chunk);
  /* MAP_FIXED only inside spill's own reservation, never elsewhere (a class index gone wrong would map at 0) */
  uintptr_t base = atomic_load_explicit(&sp.base, memory_order_relaxed);
  if (k->start < base || want > ((size_t)1 << sp.rs_shift) ||
      k->start - base > atomic_load_explicit(&sp.span, memory_order_relaxed) - ((size_t)1 << sp.rs_shift)) {
    errno = EINVAL;
    sp.fail_op = "mapping outside the reservation (refused)";
    return false;
  }
  size_t limit = sp.file_size;
  struct rlimit rl;
  if (msi_os_getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < limit)
    limit = (size_t)rl.rlim_cur;
  for (; m < want; m += chunk) {
    if (sp.file_next > limit || limit - sp.file_next < chunk) { errno = 0; break; }
    if (msi_os_mmap((void *)(k->start + m), chunk, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, sp.fd,
                    (off_t)sp.file_next) == MAP_FAILED) {
      sp.fail_op = "mapping the spill file";
      break;
    }
    msi_sp_advise_range(k, k->start + m, chunk, sp.random_adv); /* see advise_update */
    k->cfile[m >> k->chunk_shift] = sp.file_next;
    sp.file_next += chunk;
    atomic_store_explicit(&k->mapped, m + chunk, memory_order_release);
  }
  return end <= m;
}

/* bytes from a slot's start that its block of `n` bytes holds reserved on disk (small classes: the whole slot,
   inside a granule reserved while the block lives) */
size_t msi_sp_slot_reserved(unsigned c, size_t n) {
  return small_class(c) ? (size_t)1 << c : msi_round_up(n, SP_FOLIO_MAX);
}

/* class c < SP_FOLIO_MAX: the first slot of `slot`'s granule */
static size_t granule_first(unsigned c, size_t slot) { return slot & ~((SP_FOLIO_MAX >> c) - 1); }

/* under the lock, class c < SP_FOLIO_MAX: whether a block other than `slot`'s lives in its granule (a deferred
   one counts: a forked child may still read it) */
static bool granule_shared(const sp_class_t *k, unsigned c, size_t slot) {
  size_t per = SP_FOLIO_MAX >> c, first = granule_first(c, slot);
  for (size_t s = first; s < first + per && s < k->next; s++)
    if (s != slot && (k->meta[s] || k->dseq[s])) return true;
  return false;
}

/* under the lock: the file range [*off, *off + *len) a new block of `need` bytes in `slot` must reserve on disk
   (see SP_FOLIO_MAX); *len is 0 when a live neighbour's granule already holds it */
void msi_sp_reservation(const sp_class_t *k, unsigned c, size_t slot, size_t need, size_t *off, size_t *len) {
  if (!small_class(c)) {
    *off = slot << c;
    *len = msi_sp_slot_reserved(c, need);
    return;
  }
  *off = granule_first(c, slot) << c;
  *len = granule_shared(k, c, slot) ? 0 : SP_FOLIO_MAX; /* (inside one chunk: chunks are granule multiples) */
}

/* under the lock, the file owned (file_owned): gives [off, off + len) of class k's extent back to the filesystem
   (clipped to the extent); false + errno */
bool msi_sp_punch(const sp_class_t *k, size_t off, size_t len) {
  size_t m = atomic_load_explicit(&k->mapped, memory_order_relaxed);
  if (len > m - off) len = m - off;
  return msi_os_fallocate(sp.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)file_off(k, off), (off_t)len) == 0;
}

/* clears [off, off + len) of class k's file in place: its pages and contents go (it reads as zero again), its disk
   blocks stay. Only ext4 does that (FALLOC_FL_ZERO_RANGE converts the extents to unwritten, and succeeds on a
   full disk); xfs and btrfs punch and allocate again, and a full disk between the two leaves a hole where a
   live neighbour's folio may need the blocks (SP_FOLIO_MAX). false: left as it is. */
bool msi_sp_clear_in_place(const sp_class_t *k, size_t off, size_t len) {
  return sp.fs_type == FS_EXT4 &&
         msi_os_fallocate(sp.fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)file_off(k, off), (off_t)len) == 0;
}

/* under the lock: a slot of class c holding `need` bytes reserved on disk (reading as zero if `zero`); 0 + errno
   on failure: ENOSPC for a full disk (or quota), 0 when the class's extent is used up (the block stays in RAM),
   another errno for a refusal (sp.fail_op says what failed; the block stays in RAM). An ENOMEM from mmap (RLIMIT_AS
   reached, vm.max_map_count) is such a refusal, not a full disk. */
uintptr_t msi_sp_slot_alloc(unsigned c, size_t need, bool zero) {
  sp_class_t *k = &sp.cls[c];
  if (!class_open(k, c)) { errno = errno ? errno : EIO; return 0; }
  msi_sp_fork_reap(); /* slots freed while a forked child may have read them come back once no such child is left */
  size_t slot;
  bool popped = false;
  if (k->nfree) {
    slot = k->stack[--k->nfree];
    popped = true;
  } else {
    slot = k->next;
    if (((slot + 1) << c) > k->ext) { /* the slot count: RAM */
      sp.fail_op = "the address space reserved for its size class is used up";
      errno = 0;
      return 0;
    }
  }
  size_t off = slot << c, roff, rlen;
  msi_sp_reservation(k, c, slot, need, &roff, &rlen);
  if (!msi_sp_disk_room(sp.fd, rlen)) {
    if (popped) k->stack[k->nfree++] = (uint32_t)slot;
    atomic_fetch_add(&sp.enospc, 1);
    errno = ENOSPC;
    return 0;
  }
  bool mapped = msi_sp_class_map(k, off + ((size_t)1 << c));
  if (!mapped || (rlen && msi_os_fallocate(sp.fd, 0, (off_t)file_off(k, roff), (off_t)rlen) != 0)) {
    int e = errno;
    if (msi_sp_disk_full(e)) atomic_fetch_add(&sp.enospc, 1);
    if (mapped) sp.fail_op = "reserving disk space (fallocate)";
    /* a failed fallocate may have reserved part of the range: give it back */
    if (mapped && rlen) msi_sp_punch(k, roff, rlen);
    if (popped) k->stack[k->nfree++] = (uint32_t)slot;
    errno = msi_sp_disk_full(e) ? ENOSPC : e; /* (0: the file has no room left, class_map) */
    return 0;
  }
  if (!popped) {
    bool few = few_blocks(k);
    k->next = slot + 1;
    k->stale[slot] = 0;
    k->dseq[slot] = 0;
    if (few && !few_blocks(k) && !sp.random_adv) /* the class's default advice from now on */
      msi_sp_advise_range(k, k->start, atomic_load_explicit(&k->mapped, memory_order_relaxed), false);
  } else if (zero && k->stale[slot]) {
    memset((void *)(k->start + off), 0, need); /* left as it was at its free (clear_in_place) */
  }
  if (popped && !small_class(c)) /* spill's advice again, not the last block's (the program's, or behind_sweep's) */
    msi_sp_advise_range(k, k->start + off, (size_t)1 << c, sp.random_adv);
  if (!small_class(c)) msi_sp_behind_clear(k, off, (size_t)1 << c);
  k->meta[slot] = need;
  k->live++;
  atomic_fetch_add_explicit(&sp.blocks, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&sp.bytes, need, memory_order_relaxed);
  msi_sp_advise_update();
  msi_maint_wake(); /* a spilled block: its pages need write-back while it lives (writeback.c maint_busy) */
  return k->start + off;
}

/* class and slot of an owned pointer; false when p is not a block start */
bool msi_sp_locate(const void *p, unsigned *c, size_t *slot) {
  uintptr_t rel;
  if (!msi_sp_in_range(p, &rel)) return false;
  unsigned cc = sp.min_shift + (unsigned)(rel >> sp.rs_shift);
  uintptr_t off = rel & (((uintptr_t)1 << sp.rs_shift) - 1);
  if (off & (((uintptr_t)1 << cc) - 1)) return false;
  *c = cc;
  *slot = off >> cc;
  return sp.cls[cc].meta != NULL && *slot < sp.cls[cc].next;
}

/* Under the lock, when the last spilled block was just freed: every region goes back to the reservation and the
   file is closed, so a process holds a spill descriptor only while it holds spilled blocks (a short-lived
   program that spilled a few temporaries, like a child listing its descriptors, shows none). A process that
   empties again and again (a loop allocating and freeing one block) keeps its file after SP_MAX_CLOSES closes:
   each reopen costs a file creation and a few system calls. With no file of its own (a forked child before its
   first block, or after a loss) the regions go back all the same: the frozen ones hold no block either. */
#define SP_MAX_CLOSES 8
void msi_sp_empty(void) {
  int fd = atomic_load(&sp.fd);
  bool own = fd >= 0 && msi_sp_file_owned();
  if (own && sp.closes >= SP_MAX_CLOSES) return;
  if (own) atomic_store(&sp.fd, -1); /* seq_cst with the pass's flag: a pass (no lock) reads -1 or is seen here */
  if (msi_sp_writeback_running()) {
    if (own) atomic_store(&sp.fd, fd); /* keep the file: the pass may be using it */
    return;
  }
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) {
    sp_class_t *k = &sp.cls[c];
    size_t m = atomic_load_explicit(&k->mapped, memory_order_relaxed);
    if (!m) continue;
    if (msi_os_mmap((void *)k->start, m, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) ==
        MAP_FAILED) {
      msi_sp_class_freeze(k, c); /* still mapped: frozen, as a lost file's extent */
      continue;
    }
    atomic_store_explicit(&k->mapped, 0, memory_order_release);
    msi_sp_drop_deferred(k); /* a forked child keeps its own mapping of the file, which the close does not touch */
    k->next = k->nfree = k->floor = k->shared_from = 0;
  }
  if (own) {
    msi_os_close(fd); /* the last reference to the unlinked file: its disk space goes */
    sp.closes++;
  }
}

/* Under the lock: a block below the floor (inherited at fork, or in a lost file) is never reused, and gives back
   what it holds through its mapping, never through a descriptor: a forked child's private copy its memory
   (MADV_DONTNEED), a block of a lost file its disk (MADV_REMOVE punches the file through a shared mapping; in a
   small class only once no live block shares its granule, see SP_FOLIO_MAX). */
static void frozen_free(sp_class_t *k, unsigned c, size_t slot, size_t need) {
  size_t off = slot << c, len = (size_t)1 << c, m = atomic_load_explicit(&k->mapped, memory_order_relaxed);
  if (off < k->shared_from) {
    msi_os_madvise((void *)(k->start + off), need, MADV_DONTNEED);
    return;
  }
  if (small_class(c)) {
    if (granule_shared(k, c, slot)) return;
    off = granule_first(c, slot) << c;
    len = SP_FOLIO_MAX;
  }
  if (off + len > m) len = m - off;
  msi_os_madvise((void *)(k->start + off), len, MADV_REMOVE); /* (refused: the disk goes with the mapping) */
}

/* under the lock: gives a free slot's disk and page cache back, and the slot for reuse */
static void slot_release(sp_class_t *k, unsigned c, size_t slot, size_t need) {
  size_t off = slot << c;
  if (off < k->floor || !msi_sp_file_owned()) { /* frozen, or the file was just found lost (file_lost) */
    frozen_free(k, c, slot, need);
    return;
  }
  bool ok = true;
  if (small_class(c) && granule_shared(k, c, slot)) {
    k->stale[slot] = !msi_sp_clear_in_place(k, off, (size_t)1 << c); /* never a punch beside live blocks */
  } else if (small_class(c)) {
    size_t per = SP_FOLIO_MAX >> c, first = granule_first(c, slot);
    ok = msi_sp_punch(k, first << c, SP_FOLIO_MAX);
    for (size_t s = first; ok && s < first + per && s < k->next; s++) k->stale[s] = 0;
  } else {
    ok = msi_sp_punch(k, off, (size_t)1 << c);
  }
  if (!ok) {
    MSI_WARN_ONCE("spill: giving a freed block's disk space back failed (fallocate: %s): its slot is not reused",
                  MSI_ERRNO(errno));
    return;
  }
  k->stack[k->nfree++] = (uint32_t)slot;
}

/* under the lock: releases a slot (disk and page cache at once), or, while a forked child that shares the file may
   still read the block, marks it deferred (fork.c): a punch or a new block there would show in the child */
void msi_sp_slot_free(unsigned c, size_t slot) {
  sp_class_t *k = &sp.cls[c];
  msi_sp_fork_reap(); /* (while the block still counts as live: a released neighbour never punches its granule) */
  size_t need = k->meta[slot];
  size_t off = slot << c;
  k->meta[slot] = 0;
  k->live--;
  atomic_fetch_sub_explicit(&sp.blocks, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&sp.bytes, need, memory_order_relaxed);
  msi_sp_advise_update();
  if (atomic_load_explicit(&sp.blocks, memory_order_relaxed) == 0) {
    msi_sp_empty();
    if (atomic_load_explicit(&k->mapped, memory_order_relaxed) == 0) return;
  }
  uint32_t wait = off >= k->shared_from ? msi_sp_fork_wait() : 0; /* (below: this process's private copy) */
  if (wait) {
    k->dseq[slot] = wait;
    k->dneed[slot] = need;
    k->ndefer++;
    atomic_fetch_add_explicit(&sp.deferred, need, memory_order_relaxed);
    return;
  }
  slot_release(k, c, slot, need);
}

/* under the lock: the deferred slots whose fork generation is `done` or older are released */
void msi_sp_release_deferred(uint32_t done) {
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) {
    sp_class_t *k = &sp.cls[c];
    for (size_t s = 0; k->ndefer && s < k->next; s++) {
      if (!k->dseq[s] || k->dseq[s] > done) continue;
      k->dseq[s] = 0;
      k->ndefer--;
      atomic_fetch_sub_explicit(&sp.deferred, k->dneed[s], memory_order_relaxed);
      slot_release(k, c, s, k->dneed[s]);
    }
  }
}

/* under the lock: class k forgets its deferred slots (its region goes, or a forked child's copy of the marks) */
void msi_sp_drop_deferred(sp_class_t *k) {
  for (size_t s = 0; k->ndefer && s < k->next; s++) {
    if (!k->dseq[s]) continue;
    k->dseq[s] = 0;
    k->ndefer--;
    atomic_fetch_sub_explicit(&sp.deferred, k->dneed[s], memory_order_relaxed);
  }
}
