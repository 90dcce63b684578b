/* SPDX-License-Identifier: MIT */
/* spill_internal.h: what the files of src/spill share (never installed). The design is in spill.c's opening
   comment and docs/spill.md; the files:
     spill.c      the entry points (route.h msi_spill_*, public ms_spill_*), start-up and the reservation, statistics
     files.c      the spill directory, the spill file (open, size, ownership checks), the descriptor's number, disk room
     slots.c      classes and slots: mapping, disk reservation, alloc, free, punch, emptying
     fork.c       the fork handlers (the child's private view)
     writeback.c  fault advice, write-back passes, the maintenance task
     budget.c     the memory budget (cgroup or RAM) and its samples
   State: `sp` (the reservation, classes, file, counters) and `bud` (the budget and the write-back passes), both
   short names for the one object each file shares. Lock: sp_lock (msi_fork_page.spill). */
#ifndef MSI_SPILL_INTERNAL_H
#define MSI_SPILL_INTERNAL_H
#include "os.h"
#include "route.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <unistd.h>

#define SP_MAX_CLASSES 40
#define SP_MAX_SLOTS ((size_t)1 << 21)   /* slots per class (metadata arrays are sized for this) */
#define SP_MAP_STEP ((size_t)64 << 20)   /* mappings grow by at least this much (they merge anyway) */
#define SP_SYNC_PERIOD_NS 50000000ull    /* write-back pacing from allocations */
/* The largest page-cache folio (PMD size: Linux caps page-cache folios there, ext4 too). A write fault on a
   shared file mapping makes the filesystem reserve every block of the folio written (ext4's page_mkwrite), and
   folios may be that large by default (readahead grows them; a program's own MADV_HUGEPAGE asks for 2 MiB), so
   every folio a block's pages may share must lie in space reserved on disk: else a full disk answers the write
   with SIGBUS (and a fuller one gives more space than reserved). Folios are aligned to their size, so disk space
   is reserved in whole SP_FOLIO_MAX granules of the file: a block of a class from SP_FOLIO_MAX up reserves the
   granules it covers (under 2 MiB more than the block: at most 1/8 of blocks over 16 MiB); in smaller classes a
   granule holds several slots and is reserved while any of them is live (its first block fallocates it whole,
   its last one punches it). Nothing ever punches inside a granule that still holds a live block: a block freed
   beside live ones is cleared in place on ext4 (FALLOC_FL_ZERO_RANGE converts its extents to unwritten: pages
   and contents go, blocks stay), and elsewhere left as it is (xfs and btrfs do ZERO_RANGE as a punch and a new
   allocation, which a full disk fails between the two, leaving a hole): the slot is marked stale, and a calloc
   that reuses it clears it by writing. The price is disk, not memory: up to one granule per live block. The
   granule is the PMD size (hpage_pmd_size: 2 MiB on x86-64, larger on some arm64 and ppc64 kernels). */
#define SP_FOLIO_MAX (sp.granule)
/* the write-back's unit (writeback.c): a chunk holds whole units (chunks are granule multiples) */
#define SP_UNIT ((size_t)2 << 20)

#define FS_EXT4 0xEF53
#define FS_XFS 0x58465342
#define FS_BTRFS 0x9123683E
#define FS_TMPFS 0x01021994
#define FS_RAMFS 0x858458F6

typedef struct sp_class_s {
  uintptr_t start;             /* region start */
  size_t ext;                  /* bytes of the region slots may use (class_slots) */
  unsigned chunk_shift;        /* the region is mapped in chunks of 2^chunk_shift bytes */
  size_t *cfile;               /* chunk -> its file offset (valid below `mapped`) */
  _Atomic size_t mapped;       /* bytes of the region mapped (from start) */
  size_t next;                 /* bump: next never-used slot */
  size_t floor;                /* frozen below: blocks inherited at fork, or in a file spill lost (file_lost);
                                  never reused, never reserved, punched or grown through a descriptor */
  size_t shared_from;          /* below: a forked child's private copy; from here up MAP_SHARED (own file, or a
                                  lost one below the floor) */
  size_t *meta;                /* slot -> block bytes (page multiple), 0 = free */
  uint32_t *stack;             /* free slots */
  uint8_t *stale;              /* slot -> 1 when a free slot's contents may not read as zero (see SP_FOLIO_MAX) */
  _Atomic unsigned char *behind; /* SP_UNIT -> 2 once the write-back beyond memory swept it (advised 4 KiB
                                  folios, unmapped, evicted; kept cached after a write-back error), 3 while the
                                  sweep waits for its write-back, 4 once advised and unmapped, until a sweep waits
                                  for it, SP_BEHIND_FRONT + a sweep's number (mod 128) while a fill's front or a
                                  block's last unit waits for a later sweep (writeback.c behind_sweep); cleared at
                                  each new block and advice switch.
                                  Classes from SP_FOLIO_MAX up only */
  uint32_t *dseq;              /* slot -> the fork generation a freed block waits for (fork.c), 0 = none */
  size_t *dneed;               /* slot -> a deferred block's bytes */
  size_t ndefer;               /* deferred slots */
  size_t nfree;
  size_t live;                 /* live blocks */
} sp_class_t;
/* behind: a fill's front or a block's last unit, first seen by the sweep numbered by the low 7 bits */
#define SP_BEHIND_FRONT 128u
/* behind_sweep takes a front unit once its block's next unit is touched, or once it has stayed a front this many
   sweeps (about 1 s: a sweep about every period, 50 ms; less than 128) */
#define SP_FRONT_SWEEPS 20u

#define sp_lock (msi_fork_page.spill) /* internal.h: msi_fork_page_t */

typedef struct {
  _Atomic int state;           /* 0 untried, 1 ready, 2 unusable */
  _Atomic int in_child;        /* forked child (statistics only) */
  _Atomic uintptr_t base;      /* reserved range [base, base + span) */
  _Atomic size_t span;
  unsigned rs_shift, min_shift, max_shift;
  size_t granule;              /* SP_FOLIO_MAX */
  sp_class_t cls[SP_MAX_CLASSES];
  _Atomic int fd;              /* the spill file, -1 when none (atomic: write-back passes read it unlocked) */
  _Atomic unsigned long long dev, ino; /* its identity (file_owned; the write-back pass reads it unlocked) */
  size_t file_span;            /* the classes' extents end to end: the file's size when nothing limits it */
  size_t file_size;            /* its size (ftruncate) */
  size_t file_next;            /* the first file offset no chunk uses yet */
  unsigned closes;             /* times the file was closed on becoming empty (spill_empty) */
  const char *fail_op;         /* what failed, for the fallback warning (under the lock) */
  char dir[PATH_MAX];
  unsigned long fs_type;
  _Atomic uint64_t blocks, bytes, fallbacks, syncs, moves, enospc;
  _Atomic uint64_t last_sync_ns;
  bool random_adv;             /* mappings advised MADV_RANDOM + MADV_NOHUGEPAGE (the data outgrew memory), else
                                  the advice of data that fits (advise_range) */
  _Atomic uint64_t advice_switches;
  _Atomic uint64_t deferred;   /* bytes of blocks freed while a forked child may still read them (fork.c) */
  _Atomic uint64_t behind_gen; /* msi_sp_behind_clear's calls (under the lock; writeback.c sweep_lock) */
  _Atomic uint64_t maint_passes; /* runs of the maintenance task (tests wait for them instead of sleeping) */
} sp_state_t;
extern sp_state_t msi_spill_state; /* spill.c */
#define sp msi_spill_state

/* p's offset in the reserved range, and whether it lies there. base is published before span (release), so a
   thread that sees the span sees the base: a free racing spill's first initialisation never measures a pointer
   against base 0 (a low address, such as a non-PIE program's brk heap, taken for spill's) */
static inline bool msi_sp_in_range(const void *p, uintptr_t *rel) {
  size_t span = atomic_load_explicit(&sp.span, memory_order_acquire);
  *rel = (uintptr_t)p - atomic_load_explicit(&sp.base, memory_order_relaxed);
  return *rel < span;
}

static inline bool small_class(unsigned c) { return ((size_t)1 << c) < SP_FOLIO_MAX; }
/* the units [off, off + len) of class k's region are the write-back's to judge anew (writeback.c behind_sweep):
   only units set are written, so a page never set stays untouched */
static inline void msi_sp_behind_clear(sp_class_t *k, size_t off, size_t len) {
  atomic_fetch_add_explicit(&sp.behind_gen, 1, memory_order_release); /* a sweep's judgement under way is void */
  for (size_t u = off / SP_UNIT; u < (off + len) / SP_UNIT; u++)
    if (atomic_load_explicit(&k->behind[u], memory_order_relaxed))
      atomic_store_explicit(&k->behind[u], 0, memory_order_relaxed);
}

/* the file offset of offset `off` of class k's region (mapped: below k->mapped); a slot never spans two chunks */
static inline size_t file_off(const sp_class_t *k, size_t off) {
  return k->cfile[off >> k->chunk_shift] + (off & (((size_t)1 << k->chunk_shift) - 1));
}

/* slots of class c: its region's, at most SP_MAX_SLOTS (the metadata arrays' size) */
static inline size_t class_slots(unsigned c) {
  size_t slots = ((size_t)1 << sp.rs_shift) >> c;
  return slots < SP_MAX_SLOTS ? slots : SP_MAX_SLOTS;
}

/* 0..64: 64 for x above 2^63 (never used as a shift count: see class_for) */
static inline unsigned ceil_log2(size_t x) { return x <= 1 ? 0 : (unsigned)(64 - __builtin_clzll((unsigned long long)(x - 1))); }

/* While the data fits, a small class's first SP_FEW_BLOCKS slots are advised like beyond memory too: the first
   fault of a lone small block would otherwise have the kernel read around it, zeroing the device's whole
   read-ahead window of page cache (megabytes: a short program with a low threshold pays for it); from the class's
   next block on, the read-around's large folios serve the neighbouring blocks (many small blocks fill several
   times faster than with 4 KiB folios). */
static inline size_t own_first_slot(const sp_class_t *k, unsigned c) { /* above the blocks inherited at fork */
  return (k->floor + ((size_t)1 << c) - 1) >> c;
}
#define SP_FEW_BLOCKS 8
static inline bool few_blocks(const sp_class_t *k) {
  unsigned c = (unsigned)(k - sp.cls);
  return small_class(c) && k->next <= own_first_slot(k, c) + SP_FEW_BLOCKS;
}

typedef struct {
  msi_os_cgroup_t cg;             /* limit, and where its dirty and anonymous bytes are read (msi_os_cgroup_budget) */
  uint64_t dirty_cap;
  _Atomic uint64_t anon, dirty;   /* anonymous and dirty bytes at the last good sample */
  _Atomic int busy;               /* a write-back pass is running (one at a time: rr, and class_close waits) */
  uint64_t recheck_ns;            /* last headroom check of the running pass */
  bool idle;                      /* the running pass writes back at idle priority */
  size_t rr[SP_MAX_CLASSES];      /* round-robin position per class */
  _Atomic uint64_t full_syncs, urgent_syncs; /* passes over every region; passes at normal priority */
} sp_budget_t;
extern sp_budget_t msi_spill_budget; /* budget.c */
#define bud msi_spill_budget

/* ---- shared between the files ---- */
/* files.c */
const char *msi_sp_fs_name(unsigned long t);
void msi_sp_fd_table_grow(bool in_fork_child);
int msi_sp_fd_high(int fd); /* fd moved to spill's high numbers (close-on-exec); fd itself when refused */
bool msi_sp_choose_dir(void);
bool msi_sp_file_is_ours(int fd);
void msi_sp_class_freeze(sp_class_t *k, unsigned c);
void msi_sp_file_lost(int fd);
bool msi_sp_file_owned(void);
bool msi_sp_file_open(void);
bool msi_sp_disk_room(int fd, size_t need);
bool msi_sp_disk_full(int e);
MSI_RARE void msi_sp_report_disk_full(size_t need);
/* slots.c */
bool msi_sp_class_map(sp_class_t *k, size_t end);
size_t msi_sp_slot_reserved(unsigned c, size_t n);
void msi_sp_reservation(const sp_class_t *k, unsigned c, size_t slot, size_t need, size_t *off, size_t *len);
bool msi_sp_punch(const sp_class_t *k, size_t off, size_t len);
bool msi_sp_clear_in_place(const sp_class_t *k, size_t off, size_t len);
uintptr_t msi_sp_slot_alloc(unsigned c, size_t need, bool zero);
bool msi_sp_locate(const void *p, unsigned *c, size_t *slot);
void msi_sp_empty(void);
void msi_sp_slot_free(unsigned c, size_t slot);
void msi_sp_release_deferred(uint32_t done);
void msi_sp_drop_deferred(sp_class_t *k);
/* fork.c */
/* set (once) when the process first uses spill in any way: a block or its set-up, the budget, the auto mode's
   set-up or samples, the statistics' residency; before each of them takes a lock of spill's. Until then a fork of
   a process with one thread has nothing of spill's to reset, and its handlers read none of spill's .bss: every
   fork child of a program that never spills (a shell's subshell) would take a page fault per page read (fork.c) */
extern _Atomic bool msi_sp_used;
static inline void msi_sp_mark_used(void) {
  if (!atomic_load_explicit(&msi_sp_used, memory_order_relaxed)) atomic_store(&msi_sp_used, true);
}
extern msi_lock_t msi_sp_vec_lock, msi_sp_buf_lock; /* scratch locks: resident_bytes' mincore vector, sample's buffer */
uint32_t msi_sp_fork_wait(void);
void msi_sp_fork_reap(void);
bool msi_sp_fork_pending(void);
/* writeback.c */
extern const msi_maint_task_t msi_sp_maint;
void msi_sp_advise_range(const sp_class_t *k, uintptr_t start, size_t len, bool random);
void msi_sp_advise_update(void);
bool msi_sp_writeback_running(void);
void msi_sp_writeback_reset_child(void);
void msi_sp_sync_pace(void);
void msi_sp_write_behind(uintptr_t addr, size_t off, size_t len, bool beyond);
/* tests only (NULL otherwise): called by behind_sweep with the unit at region offset `off` of class k it judged to
   sweep or to mark as a block's last unit, before it takes the lock to act on it (writeback.c sweep_lock; waiting
   false), and once it has advised and marked a unit to sweep, before it waits for its write-back (waiting true) */
extern void (*msi_sp_sweep_hook)(sp_class_t *k, size_t off, bool waiting);
uint64_t msi_sp_write_behind_blocks(void);
uint64_t msi_sp_write_behind_waits(void);
/* budget.c */
uint64_t msi_sp_fit_bytes(void);
void msi_sp_sample(uint64_t *dirty, uint64_t *anon);
bool msi_sp_headroom_low(uint64_t dirty, uint64_t anon);
void msi_sp_budget_find(void);
void msi_sp_budget_init(void);
uint64_t msi_sp_snapshot_cap(void);
/* auto (budget.c): one sample of what counts against the budget (msi_sp_auto_read) */
typedef struct {
  uint64_t limit;      /* the budget (the cgroup's limit, else RAM) */
  uint64_t used;       /* the cgroup's anonymous + shmem + dirty + writeback bytes (no cgroup: limit - avail) */
  uint64_t avail;      /* the machine's MemAvailable + SwapFree (UINT64_MAX: unreadable) */
  unsigned pressure;   /* /proc/pressure/memory some avg10, whole percent */
  unsigned cg_pressure; /* the cgroup's own (v2 memory.pressure some avg10; 0 when absent) */
  bool ok;             /* the counted bytes were readable */
} msi_sp_auto_sample_t;
enum { MSI_SP_AUTO_BUDGET = 1, MSI_SP_AUTO_MACHINE, MSI_SP_AUTO_PRESSURE }; /* why spilling began */
/* (takes auto's lock: its file buffer is static, and the maintenance thread samples too) */
void msi_sp_auto_read(const msi_os_cgroup_t *cg, const char *meminfo, const char *pressure, msi_sp_auto_sample_t *s);
uint64_t msi_sp_auto_room(const msi_sp_auto_sample_t *s);
uint64_t msi_sp_auto_cg_room(const msi_sp_auto_sample_t *s);
/* what a decision looks at: rooms in bytes (UINT64_MAX: no limit), pressures in percent */
typedef struct {
  uint64_t budget, cg_room, machine_room;
  unsigned pressure, cg_pressure; /* the machine's, the cgroup's own */
  bool spilling;
} msi_sp_auto_view_t;
bool msi_sp_auto_decide(const msi_sp_auto_view_t *v, uint64_t block, int *reason);
bool msi_sp_auto_stale(const msi_sp_auto_view_t *v, uint64_t block, uint64_t step, uint64_t age_ns);
uint64_t msi_sp_auto_samples(void); /* samples taken (the statistics' spill_auto_samples) */
void msi_sp_auto_set_files(const char *meminfo, const char *pressure); /* tests: fake machine files */
const char *msi_sp_auto_reason_name(int r);
void msi_sp_auto_init(void);
void msi_sp_auto_tick(uint64_t now);
bool msi_sp_auto_due(void); /* blocks asked about since the last tick's sample: msi_sp_auto_tick has work */
void msi_sp_auto_fork_child(void);
void msi_sp_auto_freed(size_t bytes);
void msi_sp_auto_stats(msi_stats_writer_t *w);
#endif
