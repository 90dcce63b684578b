/* SPDX-License-Identifier: MIT */
/* writeback.c: fault advice and write-back passes (the maintenance task and allocation pacing) */
#include "spill_internal.h"

/* Under the lock. Fault advice follows whether the spilled data fits (spilled + anonymous bytes <= 3/4 of the
   budget, as for write-back): while it does, a write fault on a fresh block gets a large page-cache folio (ext4
   with large folios, Linux 6.16+), so there are few faults (see advise_range). Once it does not, every mapping
   is advised MADV_RANDOM and MADV_NOHUGEPAGE (a fault reads one page, not 2 MiB or the read-around window, so
   random reads beyond memory read only what they touch); back under half the budget, the advice of data that
   fits again. */
/* While the data fits, the classes of 2 MiB slots and up are advised MADV_HUGEPAGE and MADV_RANDOM: a fault reads
   exactly one 2 MiB folio (zeroed page cache, one fault per 2 MiB), where the default advice read around it the
   device's whole read-ahead window and a huge-page mapping two folios ahead: fills of data that fits are faster
   and steadier (docs/spill.md). A program touching a huge spilled block sparsely makes 2 MiB resident per touch instead
   of up to 8 MiB (clean zeroed page cache). Where huge pages are refused (a kernel without THP) the class keeps
   the default advice (MADV_RANDOM alone would fault 4 KiB at a time: much slower fills). Beyond memory every class
   is MADV_RANDOM and MADV_NOHUGEPAGE from its mapping on. A program's own MADV_HUGEPAGE on its block (numpy gives
   it every array of 4 MiB or more, right after the malloc) stands until the program has written past it: nothing
   re-advises a unit at or after the front of the program's writes, so such a fill faults 2 MiB folios, and a
   fill without it 4 KiB pages (a fill's front is swept once the fill moved past it, or after about a second: a
   fill slower than that faults the rest of that unit from the file, 4 KiB major faults). Behind the fill the
   write-back advises the touched units 4 KiB folios, unmaps them and evicts them once written back
   (behind_sweep): they fault again at their next touch. */
void msi_sp_advise_range(const sp_class_t *k, uintptr_t start, size_t len, bool random) {
  if (random) {
    msi_os_madvise((void *)start, len, MADV_RANDOM);
    msi_os_madvise((void *)start, len, MADV_NOHUGEPAGE);
  } else if (!small_class((unsigned)(k - sp.cls))) {
    bool huge = msi_os_madvise((void *)start, len, MADV_HUGEPAGE) == 0;
    msi_os_madvise((void *)start, len, huge ? MADV_RANDOM : MADV_NORMAL);
  } else {
    msi_os_madvise((void *)start, len, few_blocks(k) ? MADV_RANDOM : MADV_NORMAL);
  }
}
static void advise_all(bool random) {
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) {
    sp_class_t *k = &sp.cls[c];
    size_t m = atomic_load_explicit(&k->mapped, memory_order_relaxed);
    if (m) msi_sp_advise_range(k, k->start, m, random);
    if (!small_class(c)) msi_sp_behind_clear(k, 0, m);
  }
  sp.random_adv = random;
  atomic_fetch_add_explicit(&sp.advice_switches, 1, memory_order_relaxed);
}
void msi_sp_advise_update(void) {
  uint64_t need = atomic_load_explicit(&sp.bytes, memory_order_relaxed) + atomic_load_explicit(&bud.anon, memory_order_relaxed);
  if (!sp.random_adv && need > msi_sp_fit_bytes()) advise_all(true);
  else if (sp.random_adv && need < bud.cg.limit / 2) advise_all(false);
}
/* Starts write-back of [off, off + len) of class k (within its mapped extent). Writing back a page that is still
   mapped write-protects it (folio_mkclean) with a TLB flush on the program's CPU: an IPI per 4 KiB page, costly
   in a VM (most of a CPU beyond memory). So there (unmap: the data does not fit) each 2 MiB unit
   is first unmapped from the program with MADV_DONTNEED, which on a shared file mapping drops only the page-table
   entries (dirty bits move to the page cache, nothing is lost or evicted) with one flush for the unit, and
   written back right after, before the program can map many of its pages again (with a larger unit a sequential
   fill writes into it while it is written back, and the IPIs come back); a
   page the program touches again costs a minor fault. (The mappings are MADV_RANDOM then, so reclaim ignores
   their accessed bits anyway.) Never below the floor (there the mapping is a forked child's private copy:
   MADV_DONTNEED would drop its data). The unmap runs at the pass's normal priority (it holds the address space's
   lock for reading); the write-back proper in pieces of SP_WB_PIECE: each call returns to user space, where a
   kernel without preemption (PREEMPT_NONE, common on servers and VMs) can hand the CPU to a woken interactive
   process (a call over a clean piece is cheap), and after a piece that wrote something, and after each unmap,
   the thread yields (msi_maint_yield): a process that was already waiting for this CPU would otherwise wait for
   the next tick behind a large unmap and the idle-priority calls after it. */
#define SP_WB_PIECE ((size_t)256 << 10)
#define SP_WB_CHECK ((size_t)32 << 20)
#define SP_WB_YIELD_NS 20000
static void headroom_check(void);
/* starts write-back of [off, off + len) of class k's region, chunk by chunk; never below the floor (a forked
   child's private copy, or a lost file: no chunk of the current file) */
static void sync_piece(const sp_class_t *k, int fd, size_t off, size_t len) {
  size_t floor = k->floor;
  if (off + len <= floor) return;
  if (off < floor) {
    len -= floor - off;
    off = floor;
  }
  while (len) {
    size_t in_chunk = ((size_t)1 << k->chunk_shift) - (off & (((size_t)1 << k->chunk_shift) - 1));
    size_t n = len < in_chunk ? len : in_chunk;
    msi_os_sync_file_range(fd, (off_t)file_off(k, off), (off_t)n, SYNC_FILE_RANGE_WRITE);
    off += n;
    len -= n;
  }
}
/* whether the program has touched the unit at `a` of class k's region: the file holds data there (written blocks,
   or page-cache pages over the reserved, unwritten extents). *data caches where the file next holds data (region
   offset, rounded down to a unit) for the units after it, so a run of untouched units costs one lseek; call it
   for increasing `a`. A refused lseek answers false (the unit keeps its advice), and so does a descriptor that is
   no longer spill's file (the program put a file of its own on its number: its offset is not ours to move), with
   *lost set. */
static bool unit_touched(const sp_class_t *k, int fd, size_t a, size_t *data, bool *lost) {
  if (a >= *data) { /* within a's chunk (consecutive file offsets) */
    if (!msi_sp_file_is_ours(fd)) {
      *lost = true;
      return false;
    }
    size_t chunk = (size_t)1 << k->chunk_shift, cend = (a & ~(chunk - 1)) + chunk;
    long long fo = (long long)file_off(k, a), d = msi_os_seek_data(fd, fo);
    *data = (d < 0 ? cend : (size_t)(d - fo) < cend - a ? a + (size_t)(d - fo) : cend) & ~(SP_UNIT - 1);
  }
  return a >= *data;
}
/* A sweep waits for at most this much write-back; the units left wait for the next sweep. */
#define SP_SWEEP_WAIT ((size_t)32 << 20)
/* a wait for write-back failed (the sweep's or the write-behind's): said once. The error is the file's (errseq:
   the first wait on the descriptor after it reports it, whatever range it waits for), so the message names no
   block. */
MSI_RARE static void wait_error(int err) {
  static _Atomic int told;
  if (!atomic_exchange(&told, 1))
    msi_warning("spill: writing spilled data back to its file failed (%s): a spilled block may have lost data (the "
                "error is the file's, its block unknown)", MSI_ERRNO(err));
}
/* Beyond memory, behind the program's writes (classes from SP_FOLIO_MAX up): each 2 MiB unit the program has
   touched and moved past is unmapped, written back (waited for) and evicted (POSIX_FADV_DONTNEED), once per block
   (`behind` 2), and the block from its start to that unit is advised MADV_NOHUGEPAGE. The program may have advised
   its block MADV_HUGEPAGE, so that its fill faulted 2 MiB folios: a huge-page mapping reads a 2 MiB folio at every
   fault after an eviction, and a 2 MiB folio left in the page cache is dirtied whole by a later 4 KiB write and
   written back whole. From then on those units fault 4 KiB pages from the page cache or the file. The advice is
   one range per block, so a block touched sparsely stays two mappings (VMAs) however many of its units were swept
   (one per unit would reach vm.max_map_count with large sparse arrays); untouched units before the last swept
   one lose the program's advice with it, units after it keep theirs (advise_range). A touched unit followed by
   an untouched one of its block (the front of a fill, which the program may be writing now, or a touched unit of
   a sparse block) and a block's last unit (the block's end), when first seen touched, only have their write-back
   started (`behind` SP_BEHIND_FRONT and the sweep's number), and are swept once the next unit of their block is
   touched (the fill moved past), or once they have stayed a front for SP_FRONT_SWEEPS sweeps (about 1 s: a sparse
   block's touched units, a block's end, are not left cached with their 2 MiB folios for ever). writeback_range
   may unmap them meanwhile: their pages fault back from the page cache (minor faults). Swept mid-fill, a unit's
   folio is written back with its unwritten part (zeros) and evicted, and the fill's writes after it fault its
   pages back from the file, 4 KiB major faults (disk reads); a fill that stays 1 s within one unit pays that.
   Cheap where nothing changed: one lseek(SEEK_DATA) per run of untouched units and per front, none for units
   done. At the start of every maintenance pass and every SP_WB_CHECK bytes of a long one (at most every period),
   each sweep waiting for at most SP_SWEEP_WAIT of write-back, so a short pass keeps the program's other maintenance
   (heap purges, the pressure response) waiting little behind the disk. The units it moved past beyond that are
   advised MADV_NOHUGEPAGE and unmapped in the same sweep, without a wait (`behind` 4), and evicted where already
   clean, at that sweep, and whole at the later sweep that has the room to wait for them: a fill runs far ahead of
   the sweeps, and reclaim evicts its written-back units meanwhile; with the program's advice left on such a
   unit, each fault of the program's reads there read a 2 MiB folio (20 to 100 times the bytes of 4 KiB faults at
   3x a cgroup's memory, numpy). A failed wait is reported once, and the unit whose wait reported it gets no
   POSIX_FADV_DONTNEED from that wait (the kernel marked its pages clean: reclaim may drop them). That is no
   promise for the unit that failed: the error is the file's, so it can surface at a later unit's wait, or at the
   write-behind's, and the unit that failed may have been evicted, by an earlier wait or, swept without a wait
   (`behind` 4), by the POSIX_FADV_DONTNEED of its clean pages then. The sweep holds no lock while it judges a
   unit or waits: the unit's mark and advice are set under the lock (sweep_lock), and a unit whose slot a new
   block took while its write-back was waited for keeps the new block's mark (0, unjudged).
   Keeps errno. */
void (*msi_sp_sweep_hook)(sp_class_t *k, size_t off, bool waiting);
/* The sweep judges a unit without spill's lock, and marks and advises it under the lock (tried: a busy lock leaves
   the unit to a later sweep), at normal priority (an idle-priority thread holding it would stall the program on a
   busy machine), once no new block took a slot or advice switched since the judgement began (sp.behind_gen, set
   by msi_sp_behind_clear under the lock): else the sweep's MADV_NOHUGEPAGE would override the advice the new
   block's slot was given (spill's, or the program's own right after its malloc), and its mark would count the
   new block's unit as swept. false: not locked (also while the thread could not leave idle priority). */
static bool sweep_lock(uint64_t gen) {
  if (!msi_maint_set_idle(false)) return false; /* leaving SCHED_IDLE refused: the thread stays idle */
  if (msi_trylock(&sp_lock)) {
    if (atomic_load_explicit(&sp.behind_gen, memory_order_relaxed) == gen) return true;
    msi_unlock(&sp_lock);
  }
  msi_maint_set_idle(bud.idle);
  return false;
}
static void sweep_unlock(void) {
  msi_unlock(&sp_lock);
  msi_maint_set_idle(bud.idle);
}
static void behind_sweep(int fd, bool force) {
  static uint64_t last_ns;
  static unsigned sweeps; /* this sweep's number: a front's mark holds the one that first saw it */
  uint64_t now = msi_now_ns();
  if (!force && now - last_ns < SP_SYNC_PERIOD_NS) return;
  last_ns = now;
  sweeps++;
  int e = errno;
  size_t waited = 0;
  bool lost = false;
  for (unsigned c = sp.min_shift; c <= sp.max_shift && !lost; c++) {
    sp_class_t *k = &sp.cls[c];
    size_t m = atomic_load_explicit(&k->mapped, memory_order_acquire), data = 0, slot = (size_t)1 << c;
    size_t lo = msi_round_up(k->floor, SP_UNIT);
    if (small_class(c) || m == 0) continue;
    for (size_t a = lo; a + SP_UNIT <= m && !lost; a += SP_UNIT) {
      bool evict = waited < SP_SWEEP_WAIT; /* else the unit is only advised */
      uint64_t gen = atomic_load_explicit(&sp.behind_gen, memory_order_acquire); /* before the judgement */
      _Atomic unsigned char *st = &k->behind[a / SP_UNIT];
      unsigned char v = atomic_load_explicit(st, memory_order_relaxed);
      bool marked = v >= SP_BEHIND_FRONT; /* a front since sweep v - SP_BEHIND_FRONT (mod 128) */
      if (v == 2 || v == 3 || ((v == 4 || marked) && !evict)) continue; /* (4: evicted at its wait) */
      if (v == 0 && !unit_touched(k, fd, a, &data, &lost)) continue;
      size_t s0 = a & ~(slot - 1), next = a + SP_UNIT;
      off_t fo = (off_t)file_off(k, a);
      size_t bend = s0 + msi_round_up(__atomic_load_n(&k->meta[s0 >> c], __ATOMIC_RELAXED), SP_UNIT);
      bool last = next >= bend || next == s0 + slot || next + SP_UNIT > m; /* (the block's end, not its slot's) */
      bool front = (v == 0 || marked) && (last || !unit_touched(k, fd, next, &data, &lost));
      if (lost) break;
      if (front && marked) { /* still a front: swept once it has been one for SP_FRONT_SWEEPS sweeps */
        if (((sweeps - v) & 127) < SP_FRONT_SWEEPS) continue;
        front = false;
      }
      if (front && !evict) continue;
      if (msi_sp_sweep_hook) msi_sp_sweep_hook(k, a, false);
      if (!sweep_lock(gen)) { /* busy, or the unit was given to a new block since: judged at a later sweep */
        data = 0;
        continue;
      }
      if (front) { /* first seen as a fill's front or a block's last unit: swept later (above) */
        atomic_store_explicit(st, (unsigned char)(SP_BEHIND_FRONT | (sweeps & 127)), memory_order_relaxed);
        sweep_unlock();
        msi_os_sync_file_range(fd, fo, (off_t)SP_UNIT, SYNC_FILE_RANGE_WRITE);
        continue;
      }
      s0 = s0 > lo ? s0 : lo;
      msi_os_madvise((void *)(k->start + s0), next - s0, MADV_NOHUGEPAGE); /* one range: merges with the last */
      msi_os_madvise((void *)(k->start + a), SP_UNIT, MADV_DONTNEED);
      if (!evict) { /* advised and unmapped, evicted where already clean (no wait): the sweep that waits, the rest */
        atomic_store_explicit(st, 4, memory_order_relaxed);
        sweep_unlock();
        msi_os_fadvise(fd, fo, (off_t)SP_UNIT, POSIX_FADV_DONTNEED);
        continue;
      }
      atomic_store_explicit(st, 3, memory_order_relaxed); /* being swept: a new block's slot clears it (0) */
      sweep_unlock();
      if (msi_sp_sweep_hook) msi_sp_sweep_hook(k, a, true);
      int r = msi_os_sync_file_range(fd, fo, (off_t)SP_UNIT,
                                     SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
      waited += SP_UNIT;
      if (r == 0) msi_os_fadvise(fd, fo, (off_t)SP_UNIT, POSIX_FADV_DONTNEED);
      else wait_error(errno);
      unsigned char sweeping = 3;
      atomic_compare_exchange_strong_explicit(st, &sweeping, 2, memory_order_relaxed, memory_order_relaxed);
    }
  }
  errno = e;
}

static void writeback_range(sp_class_t *k, int fd, size_t off, size_t len, bool unmap, bool sweep) {
  for (size_t done = 0; done < len; done += SP_UNIT) {
    size_t a = off + done, n = len - done < SP_UNIT ? len - done : SP_UNIT, lo = a > k->floor ? a : k->floor;
    if (unmap && lo < a + n) {
      msi_maint_set_idle(false);
      msi_os_madvise((void *)(k->start + lo), a + n - lo, MADV_DONTNEED);
      msi_maint_set_idle(bud.idle);
      msi_maint_yield();
    }
    for (size_t p = 0; p < n; p += SP_WB_PIECE) {
      uint64_t t0 = msi_now_ns();
      sync_piece(k, fd, a + p, n - p < SP_WB_PIECE ? n - p : SP_WB_PIECE);
      if (msi_now_ns() - t0 > SP_WB_YIELD_NS) msi_maint_yield(); /* the piece had dirty pages: someone may wait */
    }
    if ((done + n) % SP_WB_CHECK == 0 || done + n == len) {
      if (sweep) behind_sweep(fd, false);
      headroom_check(); /* (itself at most every 50 ms) */
    }
  }
}

/* The running pass's priority: idle, or normal once the cgroup's headroom runs out (counted once per pass). */
static void pass_priority(bool idle) {
  if (!idle && bud.idle) atomic_fetch_add_explicit(&bud.urgent_syncs, 1, memory_order_relaxed);
  msi_maint_set_idle(bud.idle = idle);
  msi_maint_yield(); /* going idle: a thread that waits already would otherwise wait for the next tick */
}

/* During a long pass at idle priority (a busy machine gives it little CPU): every 50 ms, back to normal priority
   once the cgroup's headroom runs out, as at the start of a pass. */
static void headroom_check(void) {
  uint64_t now = msi_now_ns(), dirty, anon;
  if (now - bud.recheck_ns < SP_SYNC_PERIOD_NS) return;
  bud.recheck_ns = now;
  msi_sp_sample(&dirty, &anon);
  if (msi_sp_headroom_low(dirty, anon)) pass_priority(false);
}

static void writeback_pass(bool maint);
/* maint: in the maintenance thread (the behind sweep runs, waiting for write-back); in the allocating thread
   (msi_sp_sync_pace) the pass only starts write-back */
static void writeback_all(bool maint) {
  if (atomic_load_explicit(&sp.state, memory_order_acquire) != 1) return;
  if (atomic_exchange(&bud.busy, 1)) return; /* another thread is at it (seq_cst: see class_close) */
  writeback_pass(maint);
  atomic_store_explicit(&bud.busy, 0, memory_order_release);
}
static _Atomic int wb_busy; /* a write-behind is using the descriptor (see msi_sp_write_behind) */
/* a pass or a write-behind is running: msi_sp_empty keeps the file open */
bool msi_sp_writeback_running(void) { return atomic_load(&bud.busy) != 0 || atomic_load(&wb_busy) != 0; }

static void writeback_pass(bool maint) {
  uint64_t dirty, anon;
  msi_sp_sample(&dirty, &anon);
  bud.recheck_ns = msi_now_ns();
  bool fits = atomic_load_explicit(&sp.bytes, memory_order_relaxed) + anon <= msi_sp_fit_bytes();
  /* beyond memory: every region once dirty pages pass the cap, or a quarter of the page cache the anonymous
     memory leaves (under auto the program's RAM blocks hold 3/4 of the budget: the cap alone is half of it) */
  uint64_t cache = bud.cg.limit > anon ? bud.cg.limit - anon : 0;
  bool all = fits ? msi_sp_headroom_low(dirty, anon) : dirty >= bud.dirty_cap || dirty >= cache / 4;
  if (all) atomic_fetch_add_explicit(&bud.full_syncs, 1, memory_order_relaxed);
  else if (fits) return; /* rewritten pages stay dirty: no write fault after each write-back, no disk write */
  /* Writing back a mapped page write-protects it with a TLB flush on the program's CPU (an IPI per page): beyond
     memory this takes most of a CPU. In the maintenance thread it runs at idle priority, so it yields to the
     program and to interactive processes, unless the cgroup's headroom runs out (dirty and anonymous bytes past
     3/4 of the budget). (No lock of ours is held here.) */
  int fd = atomic_load(&sp.fd); /* (seq_cst with the busy flag: see spill_empty) */
  if (fd < 0 || !msi_sp_file_is_ours(fd)) return; /* none, or lost: the next locked use finds it (file_lost) */
  bud.idle = true;
  pass_priority(!msi_sp_headroom_low(dirty, anon));
  if (!fits && maint) behind_sweep(fd, true);
  size_t ps = msi_os_page_size();
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) {
    sp_class_t *k = &sp.cls[c];
    size_t m = atomic_load_explicit(&k->mapped, memory_order_acquire);
    if (m == 0) continue;
    if (all) {
      writeback_range(k, fd, 0, m, !fits, !fits && maint);
      continue;
    }
    size_t step = msi_round_up(m / 16 ? m / 16 : ps, ps), pos = bud.rr[c] < m ? bud.rr[c] : 0;
    if (step > m - pos) step = m - pos; /* never past the mapped extent: beyond it lies the next class's region */
    writeback_range(k, fd, pos, step, !fits, !fits && maint);
    bud.rr[c] = pos + step;
  }
  msi_maint_set_idle(false);
  atomic_fetch_add_explicit(&sp.syncs, 1, memory_order_relaxed);
}

/* ---- write-behind: the allocating thread writes back the blocks it filled ----
   Beyond memory, a program of many mid-size blocks (a Python dict of 1 MiB bytearrays, an R list of vectors)
   fills each one right after its malloc, faster than the maintenance task's passes reach the new blocks (they
   walk every region, at idle priority, every 50 ms). With cgroup v1 reclaim cannot write dirty file pages
   itself, and a cgroup whose page cache is all dirty is OOM-killed. So the allocating thread writes back each
   block of at most twice the write-behind window (the window: budget/16, at least 4 MiB) at its next spilled
   malloc (by then the program has filled it): unmapped first (MADV_DONTNEED: one TLB flush, see
   writeback_range), then sync_file_range(SYNC_FILE_RANGE_WRITE). Once the blocks submitted and not yet waited
   for pass the window, it waits for the oldest one's write-back to complete, as the kernel's own dirty
   throttling (balance_dirty_pages) would do were the cgroup's dirty pages counted against a limit of their own
   (v1 has none): the program fills new blocks no faster than the disk takes them, and the cgroup's dirty and
   in-flight spilled pages stay under a block plus the window (3/16 of the budget: under auto the page cache has
   a quarter). Larger blocks are left to the passes, whose full write-back starts earlier when the anonymous
   memory leaves little page cache (writeback_pass). While the data fits nothing of this runs. */
#define WB_QUEUE 64
typedef struct { uintptr_t addr; size_t off, len; } wb_block_t;
static struct {
  msi_lock_t lock;           /* trylock: a thread that finds it busy leaves its block to the passes */
  wb_block_t last;           /* the newest block (len 0: none), not yet submitted: the program fills it now */
  wb_block_t q[WB_QUEUE];    /* submitted, not yet waited for (oldest first from head) */
  unsigned head, n;
  size_t pending;            /* bytes in q */
  _Atomic uint64_t blocks, waits; /* blocks written behind; waits for a block's write-back (throttling) */
} wb = {.lock = MSI_LOCK_INIT};

static size_t wb_window(void) { return bud.cg.limit / 16 > (4ull << 20) ? bud.cg.limit / 16 : (4ull << 20); }

void msi_sp_write_behind(uintptr_t addr, size_t off, size_t len, bool beyond) {
  if (!msi_trylock(&wb.lock)) return;
  wb_block_t prev = wb.last;
  wb.last = (wb_block_t){addr, off, beyond && len <= 2 * wb_window() ? len : 0};
  atomic_store(&wb_busy, 1); /* seq_cst with msi_sp_empty's store of -1: it sees the flag or this sees -1 */
  int fd = atomic_load(&sp.fd);
  if (!beyond || fd < 0 || !msi_sp_file_is_ours(fd)) { /* fits (or no file of ours): nothing to write */
    wb.head = wb.n = 0;
    wb.pending = 0;
    atomic_store_explicit(&wb_busy, 0, memory_order_release);
    msi_unlock(&wb.lock);
    return;
  }
  if (prev.len) {
    msi_os_madvise((void *)prev.addr, prev.len, MADV_DONTNEED);
    msi_os_sync_file_range(fd, (off_t)prev.off, (off_t)prev.len, SYNC_FILE_RANGE_WRITE);
    if (wb.n == WB_QUEUE) { /* (blocks far below the window: the oldest is forgotten, not waited for) */
      wb.pending -= wb.q[wb.head].len;
      wb.head = (wb.head + 1) % WB_QUEUE;
      wb.n--;
    }
    wb.q[(wb.head + wb.n++) % WB_QUEUE] = prev;
    wb.pending += prev.len;
    atomic_fetch_add_explicit(&wb.blocks, 1, memory_order_relaxed);
  }
  while (wb.n && wb.pending > wb_window()) {
    wb_block_t o = wb.q[wb.head];
    wb.head = (wb.head + 1) % WB_QUEUE;
    wb.n--;
    wb.pending -= o.len;
    if (msi_os_sync_file_range(fd, (off_t)o.off, (off_t)o.len,
                               SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0)
      wait_error(errno); /* (else the file's error would be taken here unseen: no later wait reports it) */
    atomic_fetch_add_explicit(&wb.waits, 1, memory_order_relaxed);
  }
  atomic_store_explicit(&wb_busy, 0, memory_order_release);
  msi_unlock(&wb.lock);
}
uint64_t msi_sp_write_behind_blocks(void) { return atomic_load_explicit(&wb.blocks, memory_order_relaxed); }
uint64_t msi_sp_write_behind_waits(void) { return atomic_load_explicit(&wb.waits, memory_order_relaxed); }
/* a pass running in the parent's maintenance thread at fork did not come along: the child's passes must run */
void msi_sp_writeback_reset_child(void) {
  atomic_store(&bud.busy, 0);
  msi_lock_reset(&wb.lock); /* the parent's blocks are not the child's to write back */
  atomic_store(&wb_busy, 0);
  wb.last.len = 0;
  wb.head = wb.n = 0;
  wb.pending = 0;
}

void msi_sp_sync_pace(void) {
  uint64_t now = msi_now_ns();
  uint64_t last = atomic_load_explicit(&sp.last_sync_ns, memory_order_relaxed);
  if (now - last < SP_SYNC_PERIOD_NS) return;
  if (!atomic_compare_exchange_strong(&sp.last_sync_ns, &last, now)) return;
  writeback_all(false);
}

static void maint_run(uint64_t now_ns) {
  msi_sp_auto_tick(now_ns);
  atomic_fetch_add_explicit(&sp.maint_passes, 1, memory_order_relaxed);
  if (msi_sp_fork_pending() && msi_trylock(&sp_lock)) { /* blocks freed while a forked child could read them */
    msi_sp_fork_reap();
    msi_unlock(&sp_lock);
  }
  writeback_all(true);
  if (msi_trylock(&sp_lock)) { /* the anonymous memory changes without spilled allocations */
    msi_sp_advise_update();
    msi_unlock(&sp_lock);
  }
}
/* work while spilled blocks live (the program dirties their pages without a call: each pass samples), and for
   the auto mode's tick after blocks were asked about; a sleeping maintenance thread wakes at a spilled block's
   allocation (slots.c) and at an auto-mode question (budget.c) */
static bool maint_busy(void) {
  return atomic_load_explicit(&sp.state, memory_order_acquire) == 1 &&
         (atomic_load_explicit(&sp.blocks, memory_order_relaxed) != 0 || msi_sp_auto_due() || msi_sp_fork_pending());
}
const msi_maint_task_t msi_sp_maint = {"spill-writeback", 50, maint_run, maint_busy};
