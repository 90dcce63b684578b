/* SPDX-License-Identifier: MIT */
/* spill.c: file-backed allocations (route.h msi_spill_*, public ms_spill_*): the entry points, start-up and the
   reservation, statistics. Design in docs/spill.md; the other files of src/spill in spill_internal.h.

   Layout. One virtual range is reserved up front (PROT_NONE, MAP_NORESERVE) and cut into one region per size
   class: class c (slot size 2^c, c from the page shift up) owns region i = c - min_shift, of RS bytes, at
   base + i*RS (base aligned to RS, so every slot is aligned to its size). All classes share ONE sparse file,
   created with O_TMPFILE (or created and unlinked at once) and sized with ftruncate (file_open). A region is
   mapped MAP_SHARED from its start in chunks (64 MiB, or one slot when larger): each chunk takes the file's next
   unused extent when it is first mapped (class_map, file_off), so the file's size is what the classes use, and
   RLIMIT_FSIZE or the filesystem's largest file bound the spilled total, not each class. Slot k of class c
   lives at address start + k*2^c, inside one chunk. Chunks mapped one after another from consecutive file
   extents merge into one mapping, so 100,000 blocks cost a few dozen mappings, and the process holds one
   descriptor while it holds spilled blocks.
   - allocation: pop a free slot of the class (or bump), fallocate(mode 0) the 2 MiB granules the block may
     dirty (SP_FOLIO_MAX): the disk space is reserved now (ENOSPC -> NULL + ENOMEM, never a SIGBUS later); the
     pages read as zero (calloc is free).
   - free: punch a hole over the slot, or its granule when the last block there goes (disk space and page cache
     released, the process's page table entries zapped; beside live blocks the slot keeps its blocks: cleared in
     place on ext4, else marked stale) and push the slot on the class's free stack.
   - realloc within the slot: fallocate the tail's granules or drop the tail (no copy, no remap). Beyond the slot: a slot of the
     next-but-one class (2x headroom, so repeated growth rarely moves) filled by copy_file_range (reflinked on
     xfs/btrfs, an in-kernel copy on ext4: the program's memory is not touched), then the old slot is freed.
   - ownership: one subtraction and compare against the reserved range: no lock, no lookup.
   - metadata: per class an array of slot sizes and a free stack in anonymous NORESERVE memory (touched lazily).
   - write-back: a maintenance task (and allocation pacing) starts writeback of dirty pages with
     sync_file_range(SYNC_FILE_RANGE_WRITE), so reclaim finds clean pages instead of stalling; beyond memory each
     range is unmapped first (MADV_DONTNEED: no TLB-flush IPI per page written back).
   - fork: a child handler maps every region again MAP_PRIVATE|MAP_FIXED from the same file: the child's writes
     stay its own; the parent waits in its handler until the child has done so. Below each region's `floor`
     (the extent mapped at fork) blocks are inherited: the child never punches or grows them in the parent's
     file. New blocks in the child go above the floor, in a new file.
   - descriptor: opened at the first spilled block, moved to a high number (close-on-exec), closed again (and
     every region given back to the reservation) when the last spilled block is freed, for the first few times.
     The program owns its descriptor table: it may close spill's number or open or dup2 another file onto it.
     Spill checks the number still holds its file (st_dev and st_ino, file_owned) before every use, and never
     touches a number that does not: the file is then given up (file_lost) and its blocks frozen below the
     floor, where they need no descriptor (free punches through the mapping with MADV_REMOVE; a forked child
     copies them into private memory). New blocks go to a new file above the floor. */
#include "spill_internal.h"

sp_state_t msi_spill_state;

MSI_STARTUP_TEXT size_t msi_spill_threshold(void) {
  long long t = msi_opt(MS_OPTION_SPILL_THRESHOLD);
  return t > 0 ? (size_t)t : t == MSI_SPILL_AUTO ? MSI_SPILL_AUTO_MIN : 0;
}

bool msi_spill_owns(const void *p) {
  uintptr_t rel;
  return msi_sp_in_range(p, &rel);
}

/* The class of a block of `need` bytes (a page multiple) aligned to `alignment` (0 or a power of two): the
   smallest slot size holding both, or 0 when it is beyond the largest class (the caller falls back to RAM). Every
   comparison is between exponents, so a size or alignment near 2^64 never becomes a shift by 64. */
static unsigned class_for(size_t need, size_t alignment) {
  unsigned c = ceil_log2(need), ca = ceil_log2(alignment);
  if (c < sp.min_shift) c = sp.min_shift;
  if (ca > c) c = ca;
  return c <= sp.max_shift ? c : 0;
}

static void stats_get(ms_stats_t *s);
static void stats_print(msi_stats_writer_t *w);
static bool stats_used(void);
static const msi_stats_source_t sp_stats = {"spill", stats_get, stats_print, stats_used};

/* The constructor reads no file: the directory is checked when spill is first needed (sp_init_slow), auto's budget
   read at the first large block (msi_sp_auto_init). It grows
   the descriptor table while the process has one thread (msi_sp_fd_table_grow: two system calls, no file; the
   fork child handler too), the one piece of start-up work kept: a threaded process (numpy's BLAS threads) would
   otherwise wait an RCU grace period, milliseconds, inside its first spilled malloc. */
MSI_STARTUP_TEXT __attribute__((constructor)) static void sp_register(void) {
  msi_stats_register(&sp_stats);
  msi_fork_register();
  msi_sp_fd_table_grow(false);
}

/* the largest page-cache folio (SP_FOLIO_MAX): the PMD size, at least 2 MiB */
static size_t pmd_size(void) {
  unsigned long long v;
  if (msi_os_read_ull("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", &v) && v > ((unsigned long long)2 << 20) &&
      msi_is_pow2((size_t)v) && v <= ((unsigned long long)1 << 30))
    return (size_t)v;
  return (size_t)2 << 20;
}

/* once per process: true when spill is usable. Reports the reason once otherwise. */
static MSI_NOINLINE bool sp_init_slow(void) {
  msi_sp_mark_used();
  msi_init();
  msi_fork_register(); /* before the lock is first taken: a fork never copies it held */
  msi_lock(&sp_lock);
  int st = atomic_load(&sp.state);
  if (st != 0) {
    msi_unlock(&sp_lock);
    return st == 1;
  }
  /* The directory is checked here, when spill is first needed (the first block at or above a fixed threshold;
     under auto the first block sent to spill), never at start: a library loaded into every process of a shell
     script or a build must not create files in its constructor for a program that may never spill. Under auto a
     block that stays in RAM does not check it either: the probe (a file created, fallocate, a hole punched, the
     file closed) waits for the filesystem's journal while other processes write, which a program whose data fits
     would pay in its first large allocation. `memspace run` checks the directory before it starts the program, so
     an unusable one is still reported once per process tree as the tree starts (msi_spill_dir_report). */
  bool ok = msi_sp_choose_dir();
  if (ok) {
    size_t ps = msi_os_page_size();
    sp.granule = pmd_size();
    sp.min_shift = ceil_log2(ps);
    /* Under RLIMIT_AS (ulimit -v, as batch systems set it) the reservation counts against the limit: it takes at
       most a quarter of it (regions of 2^39 bytes down to 2^24, one class fewer per halving since the largest class
       is half a region; at 2^24 blocks above 8 MiB stay in RAM). Fixed mappings there count as commits. */
    unsigned ms = sp.min_shift;
    msi_os_reservation_t res = {.want = (size_t)(39 - ms) << 39, .min = (size_t)(24 - ms) << 24,
                                .align = (size_t)1 << 39, .budget = msi_os_as_share(4),
                                .flags = MSI_OS_RESERVE_HALVE_ALIGN | MSI_OS_RESERVE_DROP_UNIT |
                                         MSI_OS_RESERVE_COUNT_FIXED};
    if (msi_os_reserve(&res) != 0) {
      msi_warning("spill: cannot reserve address space (mmap of %zu MiB: %s): spilled allocations stay in RAM",
                  (res.min + ((size_t)1 << 24)) >> 20, MSI_ERRNO(errno));
      ok = false;
    } else {
      sp.rs_shift = (unsigned)__builtin_ctzll(res.got_align);
      sp.max_shift = sp.rs_shift - 1;
      if (sp.max_shift - sp.min_shift + 1 > SP_MAX_CLASSES) sp.max_shift = sp.min_shift + SP_MAX_CLASSES - 1;
      uintptr_t b = (uintptr_t)res.addr;
      size_t span = res.size;
      atomic_store(&sp.fd, -1);
      sp.file_span = 0;
      for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) {
        sp_class_t *k = &sp.cls[c];
        k->start = b + ((uintptr_t)(c - sp.min_shift) << sp.rs_shift);
        k->ext = class_slots(c) << c;
        /* a chunk holds whole slots and whole granules (reservations and punches never cross into another
           chunk's file extent); a region smaller than a granule (a huge PMD under a tight RLIMIT_AS) holds none */
        size_t chunk = k->ext < SP_MAP_STEP ? k->ext : SP_MAP_STEP;
        if (chunk < ((size_t)1 << c)) chunk = (size_t)1 << c;
        if (chunk < sp.granule) chunk = sp.granule;
        if (chunk > k->ext) k->ext = 0;
        k->chunk_shift = ceil_log2(chunk);
        sp.file_span += k->ext;
      }
      atomic_store_explicit(&sp.base, b, memory_order_relaxed);
      atomic_store_explicit(&sp.span, span, memory_order_release); /* after base: msi_sp_in_range */
      msi_verbose("spill: directory %s (%s), %zu GiB of address space reserved, classes 2^%u..2^%u", sp.dir,
                  msi_sp_fs_name(sp.fs_type), span >> 30, sp.min_shift, sp.max_shift);
    }
  }
  if (ok) msi_os_reads_watch(); /* spill samples the memory budget from its allocations: never under a later sandbox */
  if (ok) msi_sp_budget_init();
  atomic_store(&sp.state, ok ? 1 : 2);
  msi_unlock(&sp_lock);
  if (ok) {
    msi_maint_register(&msi_sp_maint);
    /* spilled data needs write-back even in a single-threaded program: allow the shared maintenance thread */
    msi_maint_note_thread();
    msi_maint_kick();
  }
  return ok;
}

static inline bool sp_ready(void) {
  int st = atomic_load_explicit(&sp.state, memory_order_acquire);
  if (MSI_LIKELY(st == 1)) return true;
  if (st == 2) return false;
  return sp_init_slow();
}

void *msi_spill_malloc(size_t size, size_t alignment, bool zero) {
  int e0 = errno; /* a block served leaves the program's errno as it was (the write-back's calls set theirs) */
  if (size > PTRDIFF_MAX) { errno = ENOMEM; return NULL; } /* no object is larger (and the page round-up wraps) */
  if (alignment && !msi_is_pow2(alignment)) { errno = EINVAL; return NULL; }
  if (!sp_ready()) {
    atomic_fetch_add_explicit(&sp.fallbacks, 1, memory_order_relaxed);
    errno = 0;
    return NULL;
  }
  size_t need = msi_round_up(size ? size : 1, msi_os_page_size());
  unsigned c = class_for(need, alignment);
  if (!c) { /* beyond the largest class (a reservation reduced by RLIMIT_AS): RAM */
    atomic_fetch_add_explicit(&sp.fallbacks, 1, memory_order_relaxed);
    errno = 0;
    return NULL;
  }
  msi_lock(&sp_lock);
  sp.fail_op = "";
  uintptr_t p = msi_sp_slot_alloc(c, need, zero);
  int e = errno;
  const char *op = sp.fail_op;
  size_t off = p ? file_off(&sp.cls[c], p - sp.cls[c].start) : 0;
  bool beyond = sp.random_adv;
  msi_unlock(&sp_lock);
  if (p) msi_sp_write_behind(p, off, need, beyond);
  msi_sp_sync_pace();
  if (!p && e != ENOSPC) { /* not a full disk: RAM (a limit, a sandbox forbidding open, a lost directory...) */
    if (e == EFBIG || e == 0) { /* the file-size limit (or the filesystem's largest file): said once (the header) */
      struct rlimit rl;
      if (e == 0 && *op) /* the class's slots (a reservation reduced by RLIMIT_AS, to a quarter of the limit) */
        MSI_WARN_ONCE("spill: no room for a block of %zu bytes (%s%s): such allocations stay in RAM", need, op,
                      msi_os_getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                          ? ", RLIMIT_AS limiting the reservation to a quarter of it"
                          : "");
      else if (msi_os_getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        MSI_WARN_ONCE("spill: no room in the spill file for a block of %zu bytes (RLIMIT_FSIZE is %llu bytes): such "
                      "allocations stay in RAM", need, (unsigned long long)rl.rlim_cur);
      else
        MSI_WARN_ONCE("spill: no room in the spill file for a block of %zu bytes (%s): such allocations stay in RAM",
                      need, e ? op : "the filesystem's largest file");
    } else {
      MSI_WARN_ONCE("spill: %s in %s failed (%s): such allocations stay in RAM", op, sp.dir, MSI_ERRNO(e));
    }
    atomic_fetch_add_explicit(&sp.fallbacks, 1, memory_order_relaxed);
    e = 0;
  }
  if (!p && e == ENOSPC) {
    msi_sp_report_disk_full(need);
    e = ENOMEM;
  }
  errno = p ? e0 : e;
  return (void *)p;
}

/* misuse of a pointer into spill's range (a double free, a pointer inside a block): the heap's answer
   (msi_heap_bad_pointer), a message naming the pointer and abort. Called with the lock released. A slot's
   start that holds no block is taken for a freed block (its class may have been emptied and reset since). */
static _Noreturn MSI_RARE MSI_NOINLINE void bad_pointer(const void *p, const char *freed, const char *invalid) {
  uintptr_t rel = (uintptr_t)p - atomic_load_explicit(&sp.base, memory_order_relaxed);
  unsigned c = sp.min_shift + (unsigned)(rel >> sp.rs_shift);
  bool slot_start = (rel & ((((uintptr_t)1 << sp.rs_shift) - 1) & (((uintptr_t)1 << c) - 1))) == 0;
  msi_error("%s: %p (memspace spill); aborting", slot_start ? freed : invalid, p);
  abort();
}

void msi_spill_free(void *p) {
  unsigned c;
  size_t slot;
  if (!p) return;
  msi_lock(&sp_lock);
  if (!msi_sp_locate(p, &c, &slot) || sp.cls[c].meta[slot] == 0) {
    msi_unlock(&sp_lock);
    bad_pointer(p, "free(): double free", "free(): invalid pointer");
  }
  size_t bytes = sp.cls[c].meta[slot];
  msi_sp_slot_free(c, slot);
  msi_unlock(&sp_lock);
  msi_sp_auto_freed(bytes);
}

size_t msi_spill_usable_size(const void *p) {
  unsigned c;
  size_t slot;
  if (!p || !msi_sp_locate(p, &c, &slot)) return 0;
  return sp.cls[c].meta[slot];
}

void *msi_spill_realloc(void *p, size_t size) {
  unsigned c;
  size_t slot;
  if (size > PTRDIFF_MAX) { errno = ENOMEM; return NULL; }
  size_t need = msi_round_up(size ? size : 1, msi_os_page_size());
  if (!msi_spill_owns(p)) { errno = EINVAL; return NULL; }
  msi_lock(&sp_lock);
  if (!msi_sp_locate(p, &c, &slot) || sp.cls[c].meta[slot] == 0) {
    msi_unlock(&sp_lock);
    bad_pointer(p, "realloc(): pointer already freed", "realloc(): invalid pointer");
  }
  sp_class_t *k = &sp.cls[c];
  size_t cur = k->meta[slot], off = slot << c;
  msi_sp_file_owned(); /* a lost file freezes its blocks (file_lost) before `child` is decided */
  bool child = off < k->floor; /* frozen (inherited at fork, or a lost file): never changed through a descriptor */
  if (need <= ((size_t)1 << c) && !(child && need > cur)) { /* in place: no copy, no remap */
    size_t rcur = msi_sp_slot_reserved(c, cur), rneed = msi_sp_slot_reserved(c, need);
    if (rneed > rcur) {
      /* the free-space margin holds for growth as for new blocks (msi_sp_disk_room) */
      bool room = !child && msi_sp_disk_room(sp.fd, rneed - rcur);
      if (!child && !room) atomic_fetch_add(&sp.enospc, 1);
      if (!room || msi_os_fallocate(sp.fd, 0, (off_t)file_off(k, off + rcur), (off_t)(rneed - rcur)) != 0) {
        int e = ENOMEM;
        /* what a failed fallocate reserved goes back, unless a forked child may still read the range: a shrink
           while such a child lives keeps the tail (below), and a punch would turn the child's bytes into zeros;
           the reservation then goes with the block */
        if (room && !msi_sp_fork_wait()) msi_sp_punch(k, off + rcur, rneed - rcur);
        msi_unlock(&sp_lock);
        errno = e;
        return NULL;
      }
    } else if (need < cur && child) {
      msi_os_madvise((void *)(k->start + off + need), cur - need, MADV_DONTNEED);
    } else if (need < cur && msi_sp_fork_wait()) {
      /* a forked child may still read the tail: it stays as it is (its disk goes with the block) */
    } else if (need < cur) { /* the tail's pages go; disk blocks beyond the block's granules too */
      if (rneed < rcur) msi_sp_punch(k, off + rneed, rcur - rneed);
      size_t kept = cur < rneed ? cur : rneed;
      if (kept > need) msi_sp_clear_in_place(k, off + need, kept - need); /* else left as it is (never punched) */
    }
    k->meta[slot] = need;
    if (need >= cur) atomic_fetch_add_explicit(&sp.bytes, need - cur, memory_order_relaxed);
    else atomic_fetch_sub_explicit(&sp.bytes, cur - need, memory_order_relaxed);
    msi_unlock(&sp_lock);
    return p;
  }
  /* beyond the slot: a slot with 2x headroom, filled inside the kernel */
  unsigned nc = class_for(need, 0);
  if (nc && need > ((size_t)1 << c) && nc < sp.max_shift) nc++; /* 2x headroom */
  uintptr_t q = nc ? msi_sp_slot_alloc(nc, need, false) : 0;
  if (!q && (!nc || errno != ENOSPC)) { /* beyond the largest class, or refused but not for disk space: RAM */
    msi_unlock(&sp_lock);
    errno = 0; /* the front door moves the block (route.c) */
    return NULL;
  }
  if (!q) { msi_unlock(&sp_lock); errno = ENOMEM; return NULL; }
  sp_class_t *nk = &sp.cls[nc];
  size_t noff = q - nk->start, done = 0;
  child = off < k->floor; /* (slot_alloc may have found the file lost) */
  /* copy_file_range reflinks on xfs and btrfs: a small block's old slot may stay behind, unpunched and sharing
     the extents (clear_in_place), and the moved block's first write would then need new blocks (SIGBUS on a full
     disk). Small blocks are copied in memory instead. copy_file_range checks RLIMIT_FSIZE (which the program may
     have lowered since the file was sized) and raises SIGXFSZ beyond it: memcpy then. */
  struct rlimit rl;
  bool within = msi_os_getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
                (rl.rlim_cur == RLIM_INFINITY || file_off(nk, noff) + cur <= rl.rlim_cur);
  while (!child && within && !small_class(c) && done < cur) {
    ssize_t n = msi_os_copy_file_range(sp.fd, (off_t)file_off(k, off + done), sp.fd, (off_t)file_off(nk, noff + done),
                                       cur - done);
    if (n <= 0) break;
    done += (size_t)n;
  }
  /* no copy_file_range here, or the child's private copy */
  if (done < cur) msi_memcpy((void *)(q + done), (const char *)p + done, cur - done);
  atomic_fetch_add_explicit(&sp.moves, 1, memory_order_relaxed);
  msi_sp_slot_free(c, slot);
  msi_unlock(&sp_lock);
  return (void *)q;
}

/* ---- public API ---- */

void *ms_spill_alloc(size_t size) {
  void *p = msi_spill_malloc(size, 0, true);
  if (p || errno != 0) return p;
  /* no usable directory (reported once): the block comes from RAM */
  return msi_malloc(size);
}

void ms_spill_free(void *ptr) {
  if (!ptr) return;
  if (msi_spill_owns(ptr)) msi_spill_free(ptr);
  else msi_free(ptr);
}

int ms_spill_is(const void *ptr) {
  uintptr_t rel;
  if (!msi_sp_in_range(ptr, &rel)) return 0;
  unsigned c = sp.min_shift + (unsigned)(rel >> sp.rs_shift);
  uintptr_t off = rel & (((uintptr_t)1 << sp.rs_shift) - 1);
  size_t slot = off >> c;
  const sp_class_t *k = &sp.cls[c];
  if (!k->meta || slot >= k->next) return 0;
  return (off & (((uintptr_t)1 << c) - 1)) < k->meta[slot];
}

/* ---- statistics ---- */
/* the resident pages of live blocks, counted with mincore into `vec` (`cap` pages a call) over each region's slots
   taken so far (its bump: the mapped extent past it holds no block); like ms_spill_is, reads the slots' sizes
   without the lock: a sample */
static uint64_t resident_scan(unsigned char *vec, size_t cap) {
  size_t ps = msi_os_page_size();
  uint64_t total = 0;
  for (unsigned c = sp.min_shift; c <= sp.max_shift && atomic_load(&sp.state) == 1; c++) {
    sp_class_t *k = &sp.cls[c];
    size_t m = atomic_load(&k->mapped), used = __atomic_load_n(&k->next, __ATOMIC_RELAXED) << c;
    if (used < m) m = used;
    for (size_t off = 0; off < m; off += cap * ps) {
      size_t len = m - off < cap * ps ? m - off : cap * ps;
      if (msi_os_mincore((void *)(k->start + off), len, vec) != 0) break;
      /* pages of live blocks only: readahead also caches (clean, zero) pages past a block's end in its slot */
      for (size_t i = 0; i < len / ps; i++) {
        size_t at = off + i * ps, slot = at >> c;
        total += (vec[i] & 1) && slot < k->next && at - (slot << c) < k->meta[slot];
      }
    }
  }
  return total * ps;
}
/* The vector is a static one that one call at a time takes (tried, never waited for): a call that finds it taken,
   by another thread or by the one a signal handler's statistics (mallinfo2, malloc_stats) interrupted on this
   thread, counts with a small one on its stack (more mincore calls, the same count). */
static uint64_t resident_bytes(void) {
  static unsigned char vec[4096];
  msi_sp_mark_used();
  if (!msi_trylock(&msi_sp_vec_lock)) {
    unsigned char small[64];
    return resident_scan(small, sizeof small);
  }
  uint64_t total = resident_scan(vec, sizeof vec);
  msi_unlock(&msi_sp_vec_lock);
  return total;
}

static uint64_t disk_bytes(void) {
  uint64_t total = 0;
  if (atomic_load(&sp.state) != 1) return 0;
  int fd = atomic_load(&sp.fd);
  unsigned long long dev, ino;
  long long b = 0;
  /* the current file's blocks (never another file put on its number; a lost file's are not counted) */
  if (fd >= 0 && msi_os_fstat_id(fd, &dev, &ino, &b) == 0 && dev == atomic_load(&sp.dev) &&
      ino == atomic_load(&sp.ino) && b > 0)
    total = (uint64_t)b;
  return total;
}

/* the section once spill is on (a threshold) or was asked for (its state set at the first request) */
static bool stats_used(void) { return atomic_load(&sp.state) != 0 || msi_spill_threshold() != 0; }

static void stats_get(ms_stats_t *s) {
  s->spill_blocks += atomic_load(&sp.blocks);
  s->spill_bytes += atomic_load(&sp.bytes);
  s->spill_disk_bytes += disk_bytes();
  s->spill_resident_bytes += resident_bytes();
  s->spill_fallbacks += atomic_load(&sp.fallbacks);
}

/* the lines without a field (stats.def; the core prints the others) */
static void stats_print(msi_stats_writer_t *w) {
  int st = atomic_load(&sp.state);
  msi_stats_field(w, "spill_threshold", msi_spill_threshold(), "bytes");
  msi_sp_auto_stats(w);
  msi_stats_text(w, "spill_state", st == 1 ? "ready" : st == 2 ? "unusable (RAM fallback)" : "unused");
  if (st == 1) {
    msi_stats_text(w, "spill_dir", sp.dir);
    msi_stats_text(w, "spill_filesystem", msi_sp_fs_name(sp.fs_type));
    msi_stats_field(w, "spill_files", atomic_load(&sp.fd) >= 0, "");
  }
  /* stats.def's rows spill_moves .. spill_maint_passes, then (ready) spill_memory_budget, spill_dirty_cap */
  const unsigned long long run[] = {atomic_load(&sp.moves), atomic_load(&sp.syncs), atomic_load(&bud.full_syncs),
                                    atomic_load(&bud.urgent_syncs), atomic_load(&sp.advice_switches),
                                    atomic_load(&sp.maint_passes), bud.cg.limit, bud.dirty_cap};
  if (st == 1) msi_stats_run(w, "spill_moves", "spill_dirty_cap", MSI_ARRAY_LEN(run), run);
  else msi_stats_run(w, "spill_moves", "spill_maint_passes", MSI_ARRAY_LEN(run) - 2, run);
  msi_stats_field(w, "spill_disk_full", atomic_load(&sp.enospc), "");
  msi_stats_field(w, "spill_write_behind", msi_sp_write_behind_blocks(), "");
  msi_stats_field(w, "spill_write_behind_waits", msi_sp_write_behind_waits(), "");
  msi_stats_field(w, "spill_fork_deferred", atomic_load(&sp.deferred), "bytes");
}
