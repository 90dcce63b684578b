/* SPDX-License-Identifier: MIT */
/* spill.c: file-backed allocations (route.h msi_spill_*, public ms_spill_*). Design in docs/spill.md.

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
static bool small_class(unsigned c);

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
  size_t nfree;
  size_t live;                 /* live blocks */
} sp_class_t;

#define sp_lock (msi_fork_page.spill) /* internal.h: msi_fork_page_t */
static struct {
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
  _Atomic uint64_t alloc_gen;  /* blocks allocated so far (advise_refresh) */
  _Atomic uint64_t advice_switches;
} sp;

static void advise_range(const sp_class_t *k, uintptr_t start, size_t len, bool random);
static size_t own_first_slot(const sp_class_t *k, unsigned c);
static bool few_blocks(const sp_class_t *k);
static bool small_class(unsigned c) { return ((size_t)1 << c) < SP_FOLIO_MAX; }
static void advise_update(void);

/* the file offset of offset `off` of class k's region (mapped: below k->mapped); a slot never spans two chunks */
static size_t file_off(const sp_class_t *k, size_t off) {
  return k->cfile[off >> k->chunk_shift] + (off & (((size_t)1 << k->chunk_shift) - 1));
}

size_t msi_spill_threshold(void) {
  long long t = msi_opt(MS_OPTION_SPILL_THRESHOLD);
  return t > 0 ? (size_t)t : 0;
}

bool msi_spill_owns(const void *p) {
  return (uintptr_t)p - atomic_load_explicit(&sp.base, memory_order_relaxed) <
         atomic_load_explicit(&sp.span, memory_order_relaxed);
}

/* 0..64: 64 for x above 2^63 (never used as a shift count: see class_for) */
static unsigned ceil_log2(size_t x) { return x <= 1 ? 0 : (unsigned)(64 - __builtin_clzll((unsigned long long)(x - 1))); }

/* The class of a block of `need` bytes (a page multiple) aligned to `alignment` (0 or a power of two): the
   smallest slot size holding both, or 0 when it is beyond the largest class (the caller falls back to RAM). Every
   comparison is between exponents, so a size or alignment near 2^64 never becomes a shift by 64. */
static unsigned class_for(size_t need, size_t alignment) {
  unsigned c = ceil_log2(need), ca = ceil_log2(alignment);
  if (c < sp.min_shift) c = sp.min_shift;
  if (ca > c) c = ca;
  return c <= sp.max_shift ? c : 0;
}

/* ---- start-up: directory, filesystem, reservation ---- */

static const char *fs_name(unsigned long t) {
  switch (t) {
    case FS_EXT4: return "ext4";
    case FS_XFS: return "xfs";
    case FS_BTRFS: return "btrfs";
    case FS_TMPFS: return "tmpfs";
    case FS_RAMFS: return "ramfs";
    default: return "other";
  }
}

/* Spill's descriptor is moved to a number >= SP_FD_MARK (or 64 under the RLIMIT_NOFILE soft limit when that is
   lower, at least half the limit), close-on-exec: the lowest free numbers stay the program's (a child that lists
   or expects its descriptors, like CPython's test_close_fds, sees none of ours). Refused (EMFILE): kept as is. */
#define SP_FD_MARK 1000
static long fd_mark(void) {
  long mark = SP_FD_MARK;
  struct rlimit rl;
  if (msi_os_getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < SP_FD_MARK + 64) {
    long lim = (long)rl.rlim_cur;
    mark = lim - 64 > lim / 2 ? lim - 64 : lim / 2;
  }
  return mark;
}
static int fd_high(int fd) {
  long mark = fd_mark();
  if (fd >= mark) return fd;
  int h = msi_os_dup_high(fd, (int)mark);
  if (h < 0) return fd;
  msi_os_close(fd);
  return h;
}

/* The descriptor table starts with 64 entries; the first descriptor numbered SP_FD_MARK grows it, and once the
   process has a second thread the kernel then waits for a whole RCU grace period (expand_fdtable's
   synchronize_rcu): 7-19 ms on the project's VM, inside the first spilled malloc (numpy's first 512 MiB array took
   0.057 s plain). The table never shrinks (but a forked child's starts from its highest open descriptor), so where
   spill is configured the constructor and the fork child handler grow it while the process has one thread (a
   copy of descriptor 0, 1 or 2 numbered at the mark, closed at once: ~10 us). Not in a library loaded by dlopen
   into a threaded process: the constructor itself would wait the grace period (13-27 ms) whether or not it ever
   spills. With 0-2 all closed, the constructor opens "/" with O_PATH (no permission, security-module or fanotify
   check); the fork child never opens anything (a sandboxed program may forbid it). */
static void fd_table_grow(bool in_fork_child) {
  if (!msi_spill_threshold() || (!in_fork_child && !msi_single_threaded() && msi_proc_threads() != 1)) return;
  long mark = fd_mark();
  if (mark <= 2) return;
  int h = -1;
  for (int fd = 0; fd <= 2 && h < 0; fd++) h = msi_os_dup_high(fd, (int)mark);
  if (h < 0 && !in_fork_child) {
    int fd = msi_os_open("/", O_PATH | O_CLOEXEC, 0);
    if (fd >= 0 && fd < mark) h = msi_os_dup_high(fd, (int)mark);
    if (fd >= 0) msi_os_close(fd);
  }
  if (h >= 0) msi_os_close(h);
}

/* a new unlinked file in dir: O_TMPFILE, else create + unlink at once; close-on-exec, numbered high (fd_high).
   -1 + errno. */
static int open_unlinked(const char *dir) {
  int fd = msi_os_open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd_high(fd);
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return -1;
  static _Atomic unsigned counter;
  char path[PATH_MAX];
  for (int tries = 0; tries < 100; tries++) {
    msi_snprintf(path, sizeof path, "%s/.memspace-spill-%llx-%u", dir, (unsigned long long)msi_now_ns(), atomic_fetch_add(&counter, 1));
    fd = msi_os_open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) {
      msi_os_unlink(path);
      return fd_high(fd);
    }
    if (errno != EEXIST) return -1;
  }
  return -1;
}

/* 0 when dir is usable (fills sp.fs_type), else an errno value with the reason already printed
   (when `report`) */
static int probe_dir(const char *dir, bool report) {
  int fd = open_unlinked(dir);
  if (fd < 0) {
    int e = errno;
    if (report)
      msi_warning("spill directory %s (MEMSPACE_SPILL_DIR, else $TMPDIR, else /var/tmp) is not usable (%s): "
                  "spilled allocations stay in RAM", dir,
                  e == ENOENT ? "missing" : e == ENOTDIR ? "not a directory" :
                  e == EACCES || e == EROFS ? "not writable" :
                  e == EPERM ? "creating a file not permitted (a sandbox?)" : msi_strerror(e));
    return e ? e : EIO;
  }
  struct statfs st;
  int r = 0;
  if (msi_os_fstatfs(fd, &st) != 0) {
    r = errno;
    if (report) msi_warning("spill directory %s: statfs failed (%s): spilled allocations stay in RAM", dir, msi_strerror(r));
  } else {
    sp.fs_type = (unsigned long)st.f_type;
    if (sp.fs_type == FS_TMPFS || sp.fs_type == FS_RAMFS) {
      r = EXDEV;
      if (report)
        msi_warning("spill directory %s is on %s (it would spill into RAM or swap): refused, spilled allocations "
                    "stay in RAM", dir, fs_name(sp.fs_type));
    } else if ((msi_os_fallocate(fd, 0, 0, (off_t)msi_os_page_size()) != 0 && errno != ENOSPC && errno != EDQUOT) ||
               msi_os_fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)msi_os_page_size()) != 0) {
      /* (a disk that is full now is accepted: allocations then answer ENOMEM) */
      r = errno ? errno : EOPNOTSUPP;
      if (report)
        msi_warning("spill directory %s: the filesystem cannot reserve or release disk space (fallocate: %s): "
                    "refused, spilled allocations stay in RAM", dir, msi_strerror(r));
    } else if (sp.fs_type != FS_EXT4 && sp.fs_type != FS_XFS && sp.fs_type != FS_BTRFS && report) {
      msi_warning("spill directory %s: filesystem type 0x%lx may not truly reserve blocks with fallocate: a full "
                  "disk may raise SIGBUS (ext4 and xfs guarantee it)", dir, sp.fs_type);
    }
  }
  msi_os_close(fd);
  return r;
}

static bool choose_dir(void) {
  const char *explicit_dir = ms_option_get_string(MS_OPTION_SPILL_DIR);
  if (explicit_dir && explicit_dir[0]) {
    msi_snprintf(sp.dir, sizeof sp.dir, "%s", explicit_dir);
    return probe_dir(sp.dir, true) == 0;
  }
  const char *tmp = msi_getenv("TMPDIR");
  if (tmp && tmp[0]) {
    msi_snprintf(sp.dir, sizeof sp.dir, "%s", tmp);
    int r = probe_dir(sp.dir, false);
    if (r == 0) return true;
    msi_verbose("spill: $TMPDIR=%s is not usable for spill (%s); trying /var/tmp", tmp, msi_strerror(r));
  }
  msi_snprintf(sp.dir, sizeof sp.dir, "%s", "/var/tmp");
  return probe_dir(sp.dir, true) == 0;
}

/* ---- fork ----
   fork.c's hook (part 3 of the lock order: under sp_lock spill takes no other part's lock). fork.c registers its
   handlers before spill's lock is first taken (msi_fork_register: from the constructor and from initialisation),
   so a fork never copies that lock held: prepare takes it (waiting for an initialisation or allocation in another
   thread to finish), parent releases it, child re-creates it. The scratch locks of the statistics (vec_lock,
   buf_lock: never waited for while holding another) are re-created in the child. */
static msi_lock_t vec_lock = MSI_LOCK_INIT; /* resident_bytes' mincore vector */
static msi_lock_t buf_lock = MSI_LOCK_INIT; /* sample's read buffer */
/* The parent waits in its handler until the child's handler has made the child's view private (fork_child):
   otherwise the parent, returning from fork first, keeps writing its spilled blocks (an interpreter's stacks,
   a vector header) and freeing them (holes read as zeros) through the still-shared mapping, and the child
   copies a half-changed state. (R's mclapply workers crashed so with a 1 MiB threshold.) The child closes the
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
MSI_COLD static void fork_prepare(bool locking) {
  if (locking) msi_lock(&sp_lock);
  if (!any_shared() || msi_os_pipe(fork_sync) != 0) fork_sync_clear();
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
static uint64_t snapshot_cap(void);
static void snapshot_blocks(sp_class_t *k, unsigned c, size_t from) { /* the blocks from offset `from` up */
  size_t ps = msi_os_page_size();
  for (size_t slot = from >> c; slot < k->next; slot++) {
    size_t n = k->meta[slot];
    if (!n) continue;
    volatile unsigned char *b = (volatile unsigned char *)(k->start + (slot << c));
    size_t upto = ps;
    if (n <= ((size_t)16 << 20) && snapshot_copied + n <= snapshot_cap()) upto = n;
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
    if (k->meta[slot]) memcpy((char *)tmp + ((slot << c) - a), (const void *)(k->start + (slot << c)), k->meta[slot]);
  if (msi_os_mremap(tmp, b - a, b - a, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)(k->start + a)) == MAP_FAILED) {
    int e = errno;
    msi_os_munmap(tmp, b - a);
    errno = e;
    sp.fail_op = "moving the private copy over the blocks";
    return false;
  }
  return true;
}

static bool file_is_ours(int fd);
static void writeback_reset_child(void);
MSI_COLD static void fork_child(void) {
  fd_table_grow(true); /* the child's table starts from its highest descriptor (the child has one thread) */
  msi_lock_reset(&vec_lock);
  msi_lock_reset(&buf_lock);
  if (fork_sync[0] >= 0) msi_os_close(fork_sync[0]);
  if (atomic_load(&sp.state) != 1) { /* never used (or unusable): nothing is mapped */
    fork_sync_done();
    msi_lock_reset(&sp_lock);
    return;
  }
  atomic_store(&sp.in_child, 1);
  writeback_reset_child();
  snapshot_copied = 0;
  /* the descriptor may no longer hold spill's file (the program closed or replaced it): then it is not ours to
     map or close, and the shared blocks are copied instead */
  int fd = atomic_load(&sp.fd);
  bool own = fd >= 0 && file_is_ours(fd);
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) {
    sp_class_t *k = &sp.cls[c];
    size_t m = atomic_load(&k->mapped);
    if (m <= k->shared_from) continue; /* unused, or private already (from an earlier fork) */
    /* [shared_from, split): a file spill lost (frozen); [split, m): the current file */
    size_t split = k->floor > m ? m : k->floor > k->shared_from ? k->floor : k->shared_from;
    bool ok = split == k->shared_from || copy_private(k, c, k->shared_from, split);
    if (ok && m > split && own) {
      for (size_t o = split, chunk = (size_t)1 << k->chunk_shift; ok && o < m; o = msi_align_down(o, chunk) + chunk) {
        size_t n = msi_align_down(o, chunk) + chunk - o;
        if (msi_os_mmap((void *)(k->start + o), n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
                        (off_t)file_off(k, o)) == MAP_FAILED) {
          sp.fail_op = "mapping the file privately";
          ok = false;
        }
      }
      if (ok) {
        advise_range(k, k->start + split, m - split, sp.random_adv);
        snapshot_blocks(k, c, split);
      }
    } else if (ok && m > split) {
      ok = copy_private(k, c, split, m);
    }
    if (!ok)
      msi_error("spill: fork child could not make its spilled memory private (%s: %s): its writes reach the "
                "parent", sp.fail_op, msi_strerror(errno));
    if (msi_round_up(m, SP_FOLIO_MAX) > k->floor) /* the child's granules never share one with inherited blocks */
      k->floor = msi_round_up(m, SP_FOLIO_MAX);
    k->shared_from = k->floor;
    size_t above = own_first_slot(k, c);
    if (k->next < above) k->next = above;
    k->nfree = 0; /* free slots below the floor belong to the parent's file */
  }
  if (own) msi_os_close(fd); /* new blocks go to a file of the child's own, above the inherited extent */
  atomic_store(&sp.fd, -1);
  fork_sync_done(); /* the parent may go on */
  msi_lock_reset(&sp_lock);
}

MSI_COLD void msi_fork_spill(msi_fork_phase_t phase, bool locking) {
  if (phase == MSI_FORK_PREPARE) fork_prepare(locking);
  else if (phase == MSI_FORK_PARENT) fork_parent(locking);
  else fork_child(); /* whatever the thread count: the child's spilled memory becomes private */
}

static void writeback_all(void);
static void budget_init(void);
static void advise_refresh(void);
static void maint_run(uint64_t now_ns) {
  (void)now_ns;
  writeback_all();
  if (msi_trylock(&sp_lock)) { /* the anonymous memory changes without spilled allocations */
    advise_update();
    msi_unlock(&sp_lock);
  }
  advise_refresh();
}
static const msi_maint_task_t sp_maint = {"spill-writeback", 50, maint_run};

static void stats_get(ms_stats_t *s);
static void stats_print(msi_stats_writer_t *w);
static bool stats_used(void);
static const msi_stats_source_t sp_stats = {"spill", stats_get, stats_print, stats_used};

/* the spill directory's check made at start (-1: not made, spill was off then), so it is reported once */
static int start_dir_verdict = -1;

__attribute__((constructor)) static void sp_register(void) {
  msi_stats_register(&sp_stats);
  msi_fork_register();
  fd_table_grow(false);
  /* a spill directory that cannot be used is reported as the program starts, not at its first large block */
  if (msi_spill_threshold()) start_dir_verdict = choose_dir();
}

/* the largest page-cache folio (SP_FOLIO_MAX): the PMD size, at least 2 MiB */
static size_t pmd_size(void) {
  unsigned long long v;
  if (msi_os_read_ull("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", &v) && v > ((unsigned long long)2 << 20) &&
      msi_is_pow2((size_t)v) && v <= ((unsigned long long)1 << 30))
    return (size_t)v;
  return (size_t)2 << 20;
}


/* slots of class c: its region's, at most SP_MAX_SLOTS (the metadata arrays' size) */
static size_t class_slots(unsigned c) {
  size_t slots = ((size_t)1 << sp.rs_shift) >> c;
  return slots < SP_MAX_SLOTS ? slots : SP_MAX_SLOTS;
}

/* once per process: true when spill is usable. Reports the reason once otherwise. */
static MSI_NOINLINE bool sp_init_slow(void) {
  msi_init();
  msi_fork_register(); /* before the lock is first taken: a fork never copies it held */
  msi_lock(&sp_lock);
  int st = atomic_load(&sp.state);
  if (st != 0) {
    msi_unlock(&sp_lock);
    return st == 1;
  }
  bool ok = start_dir_verdict >= 0 ? start_dir_verdict == 1 : choose_dir();
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
                  (res.min + ((size_t)1 << 24)) >> 20, msi_strerror(errno));
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
      atomic_store(&sp.span, span);
      atomic_store(&sp.base, b);
      msi_verbose("spill: directory %s (%s), %zu GiB of address space reserved, classes 2^%u..2^%u", sp.dir,
                  fs_name(sp.fs_type), span >> 30, sp.min_shift, sp.max_shift);
    }
  }
  if (ok) budget_init();
  atomic_store(&sp.state, ok ? 1 : 2);
  msi_unlock(&sp_lock);
  if (ok) {
    msi_maint_register(&sp_maint);
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

/* whether descriptor fd (>= 0) holds spill's file: the program may have closed the number, and opened or dup2'ed
   another file onto it */
static bool file_is_ours(int fd) {
  unsigned long long dev, ino;
  return msi_os_fstat_id(fd, &dev, &ino, NULL) == 0 && dev == atomic_load(&sp.dev) && ino == atomic_load(&sp.ino);
}

/* Under the lock: the program closed spill's descriptor or put another file on its number. The number is left
   alone (never closed, read, written or punched again), the blocks in the lost file stay valid through their
   mappings and are frozen below each class's floor (like blocks inherited at fork: never reused; free gives
   their disk back through the mapping, MADV_REMOVE); new blocks go to a new file, above the floor. */
static void class_freeze(sp_class_t *k, unsigned c) {
  size_t m = atomic_load_explicit(&k->mapped, memory_order_relaxed);
  if (msi_round_up(m, SP_FOLIO_MAX) <= k->floor) return;
  k->floor = msi_round_up(m, SP_FOLIO_MAX); /* granules of a new file never hold a frozen block */
  size_t above = own_first_slot(k, c);
  if (k->next < above) k->next = above;
  k->nfree = 0;
}
static void file_lost(int fd) {
  MSI_WARN_ONCE("spill: the program closed spill's descriptor %d or opened another file on that number: spill "
                "leaves it alone; spilled blocks stay valid, new ones go to a new file", fd);
  atomic_store(&sp.fd, -1);
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) class_freeze(&sp.cls[c], c);
}

/* under the lock: whether spill has its file open on sp.fd, checked before every use of the descriptor; a lost
   one is given up (file_lost) */
static bool file_owned(void) {
  int fd = atomic_load_explicit(&sp.fd, memory_order_relaxed);
  if (fd < 0) return false;
  if (file_is_ours(fd)) return true;
  file_lost(fd);
  return false;
}

/* Under the lock: opens the spill file (at the first spilled block, and after a loss) and sizes it: the classes'
   extents end to end, within RLIMIT_FSIZE (beyond it ftruncate raises SIGXFSZ) and the filesystem's largest file
   (ftruncate's EFBIG: halved until it fits). Blocks beyond its size stay in RAM (class_map). false + errno,
   sp.fail_op. */
static bool file_open(void) {
  size_t ps = msi_os_page_size(), size = sp.file_span;
  struct rlimit rl;
  if (msi_os_getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < size)
    size = msi_align_down((uintptr_t)rl.rlim_cur, ps);
  if (size == 0) { sp.fail_op = "sizing the spill file (RLIMIT_FSIZE)"; errno = EFBIG; return false; }
  int fd = open_unlinked(sp.dir);
  if (fd < 0) { sp.fail_op = "creating a file"; return false; }
  int r;
  unsigned long long dev = 0, ino = 0;
  while ((r = msi_os_ftruncate(fd, (off_t)size)) != 0 && errno == EFBIG && size > SP_MAP_STEP)
    size = msi_align_down(size / 2, ps);
  if (r != 0 || msi_os_fstat_id(fd, &dev, &ino, NULL) != 0) {
    int e = errno;
    msi_os_close(fd);
    errno = e;
    sp.fail_op = r ? "sizing the spill file (ftruncate)" : "fstat of the spill file";
    return false;
  }
  atomic_store(&sp.dev, dev);
  atomic_store(&sp.ino, ino);
  sp.file_size = size;
  sp.file_next = 0;
  atomic_store(&sp.fd, fd);
  msi_verbose("spill: file created in %s (fd %d, %zu MiB sparse)", sp.dir, fd, size >> 20);
  return true;
}

/* class setup under the lock: the file, the metadata. false + errno, sp.fail_op. */
static bool class_open(sp_class_t *k, unsigned c) {
  if (!file_owned() && !file_open()) return false;
  if (!k->meta) {
    size_t slots = class_slots(c), chunks = k->ext >> k->chunk_shift;
    void *m = msi_os_mmap(NULL, chunks * sizeof(size_t) + slots * (sizeof(size_t) + sizeof(uint32_t) + 1),
                          PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) { sp.fail_op = "mapping the slot table"; return false; }
    k->cfile = m;
    k->meta = k->cfile + chunks;
    k->stack = (uint32_t *)(k->meta + slots);
    k->stale = (uint8_t *)(k->stack + slots);
  }
  return true;
}

/* Under the lock: the region is mapped at least up to `end` bytes from its start, each new chunk from the file's
   next unused extent. false + errno: 0 when the file has no room left (its size, or an RLIMIT_FSIZE the program
   lowered since: the block stays in RAM), sp.fail_op. */
static bool class_map(sp_class_t *k, size_t end) {
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
    advise_range(k, k->start + m, chunk, sp.random_adv); /* see advise_update */
    k->cfile[m >> k->chunk_shift] = sp.file_next;
    sp.file_next += chunk;
    atomic_store_explicit(&k->mapped, m + chunk, memory_order_release);
  }
  return end <= m;
}

/* Leaves a margin of free space (what unprivileged users may use, minus max(1/64 of the filesystem, 4 MiB)):
   ext4 needs free blocks to convert reserved (unwritten) extents when pages are written, and a filesystem
   filled to the last block by fallocate (root may even use the reserved blocks) answers that write with SIGBUS. */
static bool disk_room(int fd, size_t need) {
  struct statfs st;
  if (msi_os_fstatfs(fd, &st) != 0) return true; /* fallocate decides */
  unsigned long long bs = (unsigned long long)st.f_bsize, avail = (unsigned long long)st.f_bavail * bs;
  unsigned long long margin = (unsigned long long)st.f_blocks * bs / 64;
  if (margin < (4ull << 20)) margin = 4ull << 20;
  return avail >= margin && avail - margin >= need;
}

/* a full disk (or quota) is the caller's ENOMEM; any other refusal (EFBIG from RLIMIT_FSIZE, EIO, a sandbox...)
   is not about the block: it stays in RAM */
static bool disk_full(int e) { return e == ENOSPC || e == EDQUOT; }

/* bytes from a slot's start that its block of `n` bytes holds reserved on disk (small classes: the whole slot,
   inside a granule reserved while the block lives) */
static size_t slot_reserved(unsigned c, size_t n) {
  return small_class(c) ? (size_t)1 << c : msi_round_up(n, SP_FOLIO_MAX);
}

/* class c < SP_FOLIO_MAX: the first slot of `slot`'s granule */
static size_t granule_first(unsigned c, size_t slot) { return slot & ~((SP_FOLIO_MAX >> c) - 1); }

/* under the lock, class c < SP_FOLIO_MAX: whether a block other than `slot`'s lives in its granule */
static bool granule_shared(const sp_class_t *k, unsigned c, size_t slot) {
  size_t per = SP_FOLIO_MAX >> c, first = granule_first(c, slot);
  for (size_t s = first; s < first + per && s < k->next; s++)
    if (s != slot && k->meta[s]) return true;
  return false;
}

/* under the lock: the file range [*off, *off + *len) a new block of `need` bytes in `slot` must reserve on disk
   (see SP_FOLIO_MAX); *len is 0 when a live neighbour's granule already holds it */
static void reservation(const sp_class_t *k, unsigned c, size_t slot, size_t need, size_t *off, size_t *len) {
  if (!small_class(c)) {
    *off = slot << c;
    *len = slot_reserved(c, need);
    return;
  }
  *off = granule_first(c, slot) << c;
  *len = granule_shared(k, c, slot) ? 0 : SP_FOLIO_MAX; /* (inside one chunk: chunks are granule multiples) */
}

/* under the lock, the file owned (file_owned): gives [off, off + len) of class k's extent back to the filesystem
   (clipped to the extent); false + errno */
static bool punch(const sp_class_t *k, size_t off, size_t len) {
  size_t m = atomic_load_explicit(&k->mapped, memory_order_relaxed);
  if (len > m - off) len = m - off;
  return msi_os_fallocate(sp.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)file_off(k, off), (off_t)len) == 0;
}

/* clears [off, off + len) of class k's file in place: its pages and contents go (it reads as zero again), its disk
   blocks stay. Only ext4 does that (FALLOC_FL_ZERO_RANGE converts the extents to unwritten, and succeeds on a
   full disk); xfs and btrfs punch and allocate again, and a full disk between the two leaves a hole where a
   live neighbour's folio may need the blocks (SP_FOLIO_MAX). false: left as it is. */
static bool clear_in_place(const sp_class_t *k, size_t off, size_t len) {
  return sp.fs_type == FS_EXT4 &&
         msi_os_fallocate(sp.fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)file_off(k, off), (off_t)len) == 0;
}

/* under the lock: a slot of class c holding `need` bytes reserved on disk (reading as zero if `zero`); 0 + errno
   on failure: ENOMEM for a full disk, 0 when the class's extent is used up (the block stays in RAM), another
   errno for a refusal (sp.fail_op says what failed; the block stays in RAM) */
static uintptr_t slot_alloc(unsigned c, size_t need, bool zero) {
  sp_class_t *k = &sp.cls[c];
  if (!class_open(k, c)) { errno = errno ? errno : EIO; return 0; }
  size_t slot;
  bool popped = false;
  if (k->nfree) {
    slot = k->stack[--k->nfree];
    popped = true;
  } else {
    slot = k->next;
    if (((slot + 1) << c) > k->ext) { errno = 0; return 0; } /* the slot count: RAM */
  }
  size_t off = slot << c, roff, rlen;
  reservation(k, c, slot, need, &roff, &rlen);
  if (!disk_room(sp.fd, rlen)) {
    if (popped) k->stack[k->nfree++] = (uint32_t)slot;
    atomic_fetch_add(&sp.enospc, 1);
    errno = ENOMEM;
    return 0;
  }
  bool mapped = class_map(k, off + ((size_t)1 << c));
  if (!mapped || (rlen && msi_os_fallocate(sp.fd, 0, (off_t)file_off(k, roff), (off_t)rlen) != 0)) {
    int e = errno;
    if (disk_full(e)) atomic_fetch_add(&sp.enospc, 1);
    if (mapped) sp.fail_op = "reserving disk space (fallocate)";
    /* a failed fallocate may have reserved part of the range: give it back */
    if (mapped && rlen) punch(k, roff, rlen);
    if (popped) k->stack[k->nfree++] = (uint32_t)slot;
    errno = disk_full(e) ? ENOMEM : e; /* (0: the file has no room left, class_map) */
    return 0;
  }
  if (!popped) {
    bool few = few_blocks(k);
    k->next = slot + 1;
    k->stale[slot] = 0;
    if (few && !few_blocks(k) && !sp.random_adv) /* the class's default advice from now on */
      advise_range(k, k->start, atomic_load_explicit(&k->mapped, memory_order_relaxed), false);
  } else if (zero && k->stale[slot]) {
    memset((void *)(k->start + off), 0, need); /* left as it was at its free (clear_in_place) */
  }
  k->meta[slot] = need;
  k->live++;
  atomic_fetch_add_explicit(&sp.blocks, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&sp.bytes, need, memory_order_relaxed);
  atomic_fetch_add_explicit(&sp.alloc_gen, 1, memory_order_relaxed);
  advise_update();
  return k->start + off;
}

/* class and slot of an owned pointer; false when p is not a block start */
static bool locate(const void *p, unsigned *c, size_t *slot) {
  uintptr_t rel = (uintptr_t)p - atomic_load_explicit(&sp.base, memory_order_relaxed);
  if (rel >= atomic_load_explicit(&sp.span, memory_order_relaxed)) return false;
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
static bool writeback_running(void);
static void spill_empty(void) {
  int fd = atomic_load(&sp.fd);
  bool own = fd >= 0 && file_owned();
  if (own && sp.closes >= SP_MAX_CLOSES) return;
  if (own) atomic_store(&sp.fd, -1); /* seq_cst with the pass's flag: a pass (no lock) reads -1 or is seen here */
  if (writeback_running()) {
    if (own) atomic_store(&sp.fd, fd); /* keep the file: the pass may be using it */
    return;
  }
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) {
    sp_class_t *k = &sp.cls[c];
    size_t m = atomic_load_explicit(&k->mapped, memory_order_relaxed);
    if (!m) continue;
    if (msi_os_mmap((void *)k->start, m, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) ==
        MAP_FAILED) {
      class_freeze(k, c); /* still mapped: frozen, as a lost file's extent */
      continue;
    }
    atomic_store_explicit(&k->mapped, 0, memory_order_release);
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

/* under the lock: releases a slot (disk and page cache at once) */
static void slot_free(unsigned c, size_t slot) {
  sp_class_t *k = &sp.cls[c];
  size_t need = k->meta[slot];
  size_t off = slot << c;
  k->meta[slot] = 0;
  k->live--;
  atomic_fetch_sub_explicit(&sp.blocks, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&sp.bytes, need, memory_order_relaxed);
  advise_update();
  if (atomic_load_explicit(&sp.blocks, memory_order_relaxed) == 0) {
    spill_empty();
    if (atomic_load_explicit(&k->mapped, memory_order_relaxed) == 0) return;
  }
  if (off < k->floor || !file_owned()) { /* frozen, or the file was just found lost (file_lost) */
    frozen_free(k, c, slot, need);
    return;
  }
  bool ok = true;
  if (small_class(c) && granule_shared(k, c, slot)) {
    k->stale[slot] = !clear_in_place(k, off, (size_t)1 << c); /* never a punch beside live blocks */
  } else if (small_class(c)) {
    size_t per = SP_FOLIO_MAX >> c, first = granule_first(c, slot);
    ok = punch(k, first << c, SP_FOLIO_MAX);
    for (size_t s = first; ok && s < first + per && s < k->next; s++) k->stale[s] = 0;
  } else {
    ok = punch(k, off, (size_t)1 << c);
  }
  if (!ok) {
    MSI_WARN_ONCE("spill: giving a freed block's disk space back failed (fallocate: %s): its slot is not reused",
                  msi_strerror(errno));
    return;
  }
  k->stack[k->nfree++] = (uint32_t)slot;
}

static void sp_sync_pace(void) {
  uint64_t now = msi_now_ns();
  uint64_t last = atomic_load_explicit(&sp.last_sync_ns, memory_order_relaxed);
  if (now - last < SP_SYNC_PERIOD_NS) return;
  if (!atomic_compare_exchange_strong(&sp.last_sync_ns, &last, now)) return;
  writeback_all();
}

/* a block refused for lack of disk space: said once, with the directory and its free space, so a program's
   MemoryError has a reason on stderr */
static MSI_COLD void report_disk_full(size_t need) {
  static atomic_flag once = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&once)) return;
  struct statfs st;
  int fd = atomic_load(&sp.fd);
  unsigned long long avail = fd >= 0 && file_is_ours(fd) && msi_os_fstatfs(fd, &st) == 0 ? (unsigned long long)st.f_bavail * st.f_bsize : 0;
  msi_warning("spill: the disk of %s is full (%llu MiB free, %zu MiB asked for): allocations that would be spilled "
              "fail with ENOMEM; free space there or choose another MEMSPACE_SPILL_DIR", sp.dir, avail >> 20, need >> 20);
}

void *msi_spill_malloc(size_t size, size_t alignment, bool zero) {
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
  uintptr_t p = slot_alloc(c, need, zero);
  int e = errno;
  const char *op = sp.fail_op;
  msi_unlock(&sp_lock);
  sp_sync_pace();
  if (!p && e != ENOMEM) { /* not a full disk: RAM (a limit, a sandbox forbidding open, a lost directory...) */
    if (e == EFBIG) msi_verbose("spill: %s: %s: such allocations stay in RAM", op, msi_strerror(e));
    else if (e) MSI_WARN_ONCE("spill: %s in %s failed (%s): such allocations stay in RAM", op, sp.dir, msi_strerror(e));
    atomic_fetch_add_explicit(&sp.fallbacks, 1, memory_order_relaxed);
    e = 0;
  }
  if (!p && e == ENOMEM) report_disk_full(need);
  if (!p) { errno = e; return NULL; }
  return (void *)p;
}

/* misuse of a pointer into spill's range (a double free, a pointer inside a block): the heap's answer
   (msi_heap_bad_pointer), a message naming the pointer and abort. Called with the lock released. A slot's
   start that holds no block is taken for a freed block (its class may have been emptied and reset since). */
static _Noreturn MSI_COLD MSI_NOINLINE void bad_pointer(const void *p, const char *freed, const char *invalid) {
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
  if (!locate(p, &c, &slot) || sp.cls[c].meta[slot] == 0) {
    msi_unlock(&sp_lock);
    bad_pointer(p, "free(): double free", "free(): invalid pointer");
  }
  slot_free(c, slot);
  msi_unlock(&sp_lock);
}

size_t msi_spill_usable_size(const void *p) {
  unsigned c;
  size_t slot;
  if (!p || !locate(p, &c, &slot)) return 0;
  return sp.cls[c].meta[slot];
}

#pragma weak ms_malloc
#pragma weak ms_free

void *msi_spill_realloc(void *p, size_t size) {
  unsigned c;
  size_t slot;
  if (size > PTRDIFF_MAX) { errno = ENOMEM; return NULL; }
  size_t need = msi_round_up(size ? size : 1, msi_os_page_size());
  if (!msi_spill_owns(p)) { errno = EINVAL; return NULL; }
  msi_lock(&sp_lock);
  if (!locate(p, &c, &slot) || sp.cls[c].meta[slot] == 0) {
    msi_unlock(&sp_lock);
    bad_pointer(p, "realloc(): pointer already freed", "realloc(): invalid pointer");
  }
  sp_class_t *k = &sp.cls[c];
  size_t cur = k->meta[slot], off = slot << c;
  file_owned(); /* a lost file freezes its blocks (file_lost) before `child` is decided */
  bool child = off < k->floor; /* frozen (inherited at fork, or a lost file): never changed through a descriptor */
  if (need <= ((size_t)1 << c) && !(child && need > cur)) { /* in place: no copy, no remap */
    size_t rcur = slot_reserved(c, cur), rneed = slot_reserved(c, need);
    if (rneed > rcur) {
      if (child || msi_os_fallocate(sp.fd, 0, (off_t)file_off(k, off + rcur), (off_t)(rneed - rcur)) != 0) {
        int e = ENOMEM;
        if (!child) punch(k, off + rcur, rneed - rcur);
        msi_unlock(&sp_lock);
        errno = e;
        return NULL;
      }
    } else if (need < cur && child) {
      msi_os_madvise((void *)(k->start + off + need), cur - need, MADV_DONTNEED);
    } else if (need < cur) { /* the tail's pages go; disk blocks beyond the block's granules too */
      if (rneed < rcur) punch(k, off + rneed, rcur - rneed);
      size_t kept = cur < rneed ? cur : rneed;
      if (kept > need) clear_in_place(k, off + need, kept - need); /* else left as it is (never punched) */
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
  uintptr_t q = nc ? slot_alloc(nc, need, false) : 0;
  if (!q && (!nc || errno != ENOMEM)) { /* beyond the largest class, or refused but not for disk space: RAM */
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
  if (done < cur) memcpy((void *)(q + done), (const char *)p + done, cur - done);
  atomic_fetch_add_explicit(&sp.moves, 1, memory_order_relaxed);
  slot_free(c, slot);
  msi_unlock(&sp_lock);
  return (void *)q;
}

/* ---- memory budget and write-back ----
   The budget is the smallest of RAM and the memory limits of our cgroup and its ancestors (v1
   memory.limit_in_bytes; v2 memory.max and memory.high). `stat_path` is the memory.stat of the cgroup holding
   that limit (hierarchical: its other members count too), or "" for /proc/meminfo when no cgroup limits us
   below RAM. Every tick (maintenance task, 50 ms, or an allocation at most every 50 ms) samples its dirty and
   anonymous bytes and decides:
   - the spilled data fits (spilled bytes + anonymous memory <= 3/4 of the budget): no write-back. Rewritten
     pages stay dirty and cost no fault, fresh blocks fault in large folios (advise_range), as plain memory
     does in huge pages. Only when dirty and anonymous bytes together pass 3/4 of the budget (other processes of the
     cgroup spilling as well) is every region written back, so that reclaim never meets only dirty pages (with
     cgroup v1 it cannot write them back itself, and would OOM-kill);
   - the data does not fit: dirty spilled pages are kept under budget/8 (above: write-back of every region), and
     otherwise the next 1/16 of each region is written back round-robin, so no page stays dirty longer than about
     a second and reclaim finds clean pages instead of stalling. */
static struct {
  msi_os_cgroup_t cg;             /* limit, and where its dirty and anonymous bytes are read (msi_os_cgroup_budget) */
  uint64_t dirty_cap;
  _Atomic uint64_t anon, dirty;   /* anonymous and dirty bytes at the last good sample */
  _Atomic int busy;               /* a write-back pass is running (one at a time: rr, and class_close waits) */
  uint64_t recheck_ns;            /* last headroom check of the running pass */
  bool idle;                      /* the running pass writes back at idle priority */
  size_t rr[SP_MAX_CLASSES];      /* round-robin position per class */
  _Atomic uint64_t full_syncs, urgent_syncs; /* passes over every region; passes at normal priority */
} bud;

static uint64_t fit_bytes(void) { return bud.cg.limit / 4 * 3; }

/* Dirty and anonymous bytes of the budget's cgroup (or of the machine), kept in bud; a failed read (busy,
   unreadable) keeps the previous values. */
static void sample(uint64_t *dirty, uint64_t *anon) {
  static char buf[8192];
  uint64_t d, a;
  if (msi_trylock(&buf_lock)) {
    bool ok = msi_os_read_file(bud.cg.stat_path[0] ? bud.cg.stat_path : "/proc/meminfo", buf, sizeof buf) > 0 &&
              msi_os_text_value(buf, bud.cg.dirty_key, &d) && msi_os_text_value(buf, bud.cg.anon_key, &a);
    msi_unlock(&buf_lock);
    if (ok && !bud.cg.stat_path[0]) d *= 1024, a *= 1024; /* meminfo: kB */
    if (ok) {
      atomic_store_explicit(&bud.dirty, d, memory_order_relaxed);
      atomic_store_explicit(&bud.anon, a, memory_order_relaxed);
    }
  }
  *dirty = atomic_load_explicit(&bud.dirty, memory_order_relaxed);
  *anon = atomic_load_explicit(&bud.anon, memory_order_relaxed);
}

/* the cgroup's headroom runs out: dirty and anonymous bytes, which reclaim cannot free at once, past 3/4 */
static bool headroom_low(uint64_t dirty, uint64_t anon) { return dirty + anon >= fit_bytes(); }

static void budget_init(void) {
  uint64_t ram;
  if (!msi_os_meminfo("MemTotal", &ram)) ram = UINT64_MAX;
  msi_os_cgroup_budget(ram, &bud.cg);
  uint64_t limit = bud.cg.limit;
  bud.dirty_cap = limit / 8 > (8ull << 20) ? limit / 8 : (8ull << 20);
  uint64_t dirty, anon;
  sample(&dirty, &anon);
  msi_verbose("spill: memory budget %llu MiB (%s); write-back starts once spilled data and anonymous memory pass "
              "%llu MiB, then dirty spilled pages are kept under %llu MiB",
              (unsigned long long)(limit >> 20), bud.cg.stat_path[0] ? bud.cg.stat_path : "RAM",
              (unsigned long long)(fit_bytes() >> 20), (unsigned long long)(bud.dirty_cap >> 20));
}

static uint64_t snapshot_cap(void) { return bud.cg.limit / 16; }

/* Under the lock. Fault advice follows whether the spilled data fits (spilled + anonymous bytes <= 3/4 of the
   budget, as for write-back): while it does, a write fault on a fresh block gets a large page-cache folio (ext4
   with large folios, Linux 6.16+), so there are few faults (see advise_range). Once it does not, every mapping
   is advised MADV_RANDOM and MADV_NOHUGEPAGE (a fault reads one page, not 2 MiB or the read-around window:
   random reads beyond memory ran 2-7x faster than a plain file mapping); back under half the budget, the
   advice of data that fits again. */
/* While the data fits, a small class's first SP_FEW_BLOCKS slots are advised like beyond memory too: the first
   fault of a lone small block would otherwise have the kernel read around it, zeroing the device's whole
   read-ahead window of page cache (megabytes: a short program with a low threshold pays for it); from the class's
   next block on, the read-around's large folios serve the neighbouring blocks (many small blocks fill several
   times faster than with 4 KiB folios). */
static size_t own_first_slot(const sp_class_t *k, unsigned c) { /* above the blocks inherited at fork */
  return (k->floor + ((size_t)1 << c) - 1) >> c;
}
#define SP_FEW_BLOCKS 8
static bool few_blocks(const sp_class_t *k) {
  unsigned c = (unsigned)(k - sp.cls);
  return small_class(c) && k->next <= own_first_slot(k, c) + SP_FEW_BLOCKS;
}
/* While the data fits, the classes of 2 MiB slots and up are advised MADV_HUGEPAGE and MADV_RANDOM: a fault reads
   exactly one 2 MiB folio (zeroed page cache, one fault per 2 MiB), where the default advice read around it the
   device's whole read-ahead window and a huge-page mapping two folios ahead: fills of data that fits are faster
   and steadier (docs/spill.md). A program touching a huge spilled block sparsely makes 2 MiB resident per touch instead
   of up to 8 MiB (clean zeroed page cache). Where huge pages are refused (a kernel without THP) the class keeps
   the default advice (MADV_RANDOM alone would fault 4 KiB at a time: much slower fills). Beyond memory every class
   is MADV_RANDOM and MADV_NOHUGEPAGE (see advise_refresh). */
static void advise_range(const sp_class_t *k, uintptr_t start, size_t len, bool random) {
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
    size_t m = atomic_load_explicit(&sp.cls[c].mapped, memory_order_relaxed);
    if (m) advise_range(&sp.cls[c], sp.cls[c].start, m, random);
  }
  sp.random_adv = random;
  atomic_fetch_add_explicit(&sp.advice_switches, 1, memory_order_relaxed);
}
static void advise_update(void) {
  uint64_t need = atomic_load_explicit(&sp.bytes, memory_order_relaxed) + atomic_load_explicit(&bud.anon, memory_order_relaxed);
  if (!sp.random_adv && need > fit_bytes()) advise_all(true);
  else if (sp.random_adv && need < bud.cg.limit / 2) advise_all(false);
}
/* From the maintenance task (50 ms): beyond memory, MADV_NOHUGEPAGE again over the mappings
   after new blocks, since the program may have advised its block MADV_HUGEPAGE itself (numpy does for every
   array of 4 MiB or more), and a huge-page file mapping reads a 2 MiB folio on every fault, even under
   MADV_RANDOM: an order of magnitude fewer random reads per second beyond memory. */
static void advise_refresh(void) { /* maintenance thread only: at the two ticks after an allocation */
  static uint64_t seen;
  static int pending;
  uint64_t gen = atomic_load_explicit(&sp.alloc_gen, memory_order_relaxed);
  if (gen != seen) {
    seen = gen;
    pending = 2; /* the program's madvise follows its malloc: the first tick may come in between */
  }
  if (!pending || !msi_trylock(&sp_lock)) return;
  if (sp.random_adv) advise_all(true);
  pending--;
  msi_unlock(&sp_lock);
}

/* Starts write-back of [off, off + len) of class k (within its mapped extent). Writing back a page that is still
   mapped write-protects it (folio_mkclean) with a TLB flush on the program's CPU: an IPI per 4 KiB page, ~5-15 us
   each in a VM, which took most of a CPU beyond memory. So there (unmap: the data does not fit) each 2 MiB unit
   is first unmapped from the program with MADV_DONTNEED, which on a shared file mapping drops only the page-table
   entries (dirty bits move to the page cache, nothing is lost or evicted) with one flush for the unit, and
   written back right after, before the program can map many of its pages again (with 32 MiB unmapped at once a
   sequential fill wrote into the chunk while it was written back: half the thread's CPU went to IPIs again); a
   page the program touches again costs a minor fault. (The mappings are MADV_RANDOM then, so reclaim ignores
   their accessed bits anyway.) Never below the floor (there the mapping is a forked child's private copy:
   MADV_DONTNEED would drop its data). The unmap runs at the pass's normal priority (it holds the address space's
   lock for reading); the write-back proper in pieces of SP_WB_PIECE: each call returns to user space, where a
   kernel without preemption (PREEMPT_NONE, common on servers and VMs) can hand the CPU to a woken interactive
   process (a call over a clean piece costs ~0.8 us: 3 ms per GiB), and after a piece that wrote something, and
   after each unmap, the thread yields (msi_maint_yield): a process that was already waiting for this CPU would
   otherwise wait for the next tick (the 10-ms probe of `memspace bench spill` waited 1-2 ms behind a 32 MiB
   unmap and the idle-priority calls after it). */
#define SP_WB_PIECE ((size_t)256 << 10)
#define SP_WB_UNIT ((size_t)2 << 20)
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
static void writeback_range(sp_class_t *k, int fd, size_t off, size_t len, bool unmap) {
  for (size_t done = 0; done < len; done += SP_WB_UNIT) {
    size_t a = off + done, n = len - done < SP_WB_UNIT ? len - done : SP_WB_UNIT, lo = a > k->floor ? a : k->floor;
    if (unmap && lo < a + n) {
      msi_maint_idle(false);
      msi_os_madvise((void *)(k->start + lo), a + n - lo, MADV_DONTNEED);
      msi_maint_idle(bud.idle);
      msi_maint_yield();
    }
    for (size_t p = 0; p < n; p += SP_WB_PIECE) {
      uint64_t t0 = msi_now_ns();
      sync_piece(k, fd, a + p, n - p < SP_WB_PIECE ? n - p : SP_WB_PIECE);
      if (msi_now_ns() - t0 > SP_WB_YIELD_NS) msi_maint_yield(); /* the piece had dirty pages: someone may wait */
    }
    if ((done + n) % SP_WB_CHECK == 0 || done + n == len) headroom_check(); /* (itself at most every 50 ms) */
  }
}

/* The running pass's priority: idle, or normal once the cgroup's headroom runs out (counted once per pass). */
static void pass_priority(bool idle) {
  if (!idle && bud.idle) atomic_fetch_add_explicit(&bud.urgent_syncs, 1, memory_order_relaxed);
  msi_maint_idle(bud.idle = idle);
  msi_maint_yield(); /* going idle: a thread that waits already would otherwise wait for the next tick */
}

/* During a long pass at idle priority (a busy machine gives it little CPU): every 50 ms, back to normal priority
   once the cgroup's headroom runs out, as at the start of a pass. */
static void headroom_check(void) {
  uint64_t now = msi_now_ns(), dirty, anon;
  if (now - bud.recheck_ns < SP_SYNC_PERIOD_NS) return;
  bud.recheck_ns = now;
  sample(&dirty, &anon);
  if (headroom_low(dirty, anon)) pass_priority(false);
}

static void writeback_pass(void);
static void writeback_all(void) {
  if (atomic_load_explicit(&sp.state, memory_order_acquire) != 1) return;
  if (atomic_exchange(&bud.busy, 1)) return; /* another thread is at it (seq_cst: see class_close) */
  writeback_pass();
  atomic_store_explicit(&bud.busy, 0, memory_order_release);
}
static bool writeback_running(void) { return atomic_load(&bud.busy) != 0; }
/* a pass running in the parent's maintenance thread at fork did not come along: the child's passes must run */
static void writeback_reset_child(void) { atomic_store(&bud.busy, 0); }

static void writeback_pass(void) {
  uint64_t dirty, anon;
  sample(&dirty, &anon);
  bud.recheck_ns = msi_now_ns();
  bool fits = atomic_load_explicit(&sp.bytes, memory_order_relaxed) + anon <= fit_bytes();
  bool all = fits ? headroom_low(dirty, anon) : dirty >= bud.dirty_cap;
  if (all) atomic_fetch_add_explicit(&bud.full_syncs, 1, memory_order_relaxed);
  else if (fits) return; /* rewritten pages stay dirty: no write fault after each write-back, no disk write */
  /* Writing back a mapped page write-protects it with a TLB flush on the program's CPU (an IPI per page): beyond
     memory this takes most of a CPU. In the maintenance thread it runs at idle priority, so it yields to the
     program and to interactive processes, unless the cgroup's headroom runs out (dirty and anonymous bytes past
     3/4 of the budget). (No lock of ours is held here.) */
  int fd = atomic_load(&sp.fd); /* (seq_cst with the busy flag: see spill_empty) */
  if (fd < 0 || !file_is_ours(fd)) return; /* none, or lost: the next locked use finds it (file_lost) */
  bud.idle = true;
  pass_priority(!headroom_low(dirty, anon));
  size_t ps = msi_os_page_size();
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) {
    sp_class_t *k = &sp.cls[c];
    size_t m = atomic_load_explicit(&k->mapped, memory_order_acquire);
    if (m == 0) continue;
    if (all) {
      writeback_range(k, fd, 0, m, !fits);
      continue;
    }
    size_t step = msi_round_up(m / 16 ? m / 16 : ps, ps), pos = bud.rr[c] < m ? bud.rr[c] : 0;
    if (step > m - pos) step = m - pos; /* never past the mapped extent: beyond it lies the next class's region */
    writeback_range(k, fd, pos, step, !fits);
    bud.rr[c] = pos + step;
  }
  msi_maint_idle(false);
  atomic_fetch_add_explicit(&sp.syncs, 1, memory_order_relaxed);
}

/* ---- public API ---- */

void *ms_spill_alloc(size_t size) {
  void *p = msi_spill_malloc(size, 0, true);
  if (p || errno != 0) return p;
  /* no usable directory (reported once): the block comes from RAM */
  if (ms_malloc) return ms_malloc(size);
  errno = ENOMEM;
  return NULL;
}

void ms_spill_free(void *ptr) {
  if (!ptr) return;
  if (msi_spill_owns(ptr)) msi_spill_free(ptr);
  else if (ms_free) ms_free(ptr);
}

int ms_spill_is(const void *ptr) {
  uintptr_t rel = (uintptr_t)ptr - atomic_load_explicit(&sp.base, memory_order_relaxed);
  if (rel >= atomic_load_explicit(&sp.span, memory_order_relaxed)) return 0;
  unsigned c = sp.min_shift + (unsigned)(rel >> sp.rs_shift);
  uintptr_t off = rel & (((uintptr_t)1 << sp.rs_shift) - 1);
  size_t slot = off >> c;
  const sp_class_t *k = &sp.cls[c];
  if (!k->meta || slot >= k->next) return 0;
  return (off & (((uintptr_t)1 << c) - 1)) < k->meta[slot];
}

/* ---- statistics ---- */
/* like ms_spill_is, reads the slots' sizes without the lock: a sample */
static uint64_t resident_bytes(void) {
  static unsigned char vec[4096];
  size_t ps = msi_os_page_size();
  uint64_t total = 0;
  msi_lock(&vec_lock);
  for (unsigned c = sp.min_shift; c <= sp.max_shift && atomic_load(&sp.state) == 1; c++) {
    sp_class_t *k = &sp.cls[c];
    size_t m = atomic_load(&k->mapped);
    for (size_t off = 0; off < m; off += sizeof vec * ps) {
      size_t len = m - off < sizeof vec * ps ? m - off : sizeof vec * ps;
      if (msi_os_mincore((void *)(k->start + off), len, vec) != 0) break;
      /* pages of live blocks only: readahead also caches (clean, zero) pages past a block's end in its slot */
      for (size_t i = 0; i < len / ps; i++) {
        size_t at = off + i * ps, slot = at >> c;
        total += (vec[i] & 1) && slot < k->next && at - (slot << c) < k->meta[slot];
      }
    }
  }
  msi_unlock(&vec_lock);
  return total * ps;
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
  msi_stats_text(w, "spill_state", st == 1 ? "ready" : st == 2 ? "unusable (RAM fallback)" : "unused");
  if (st == 1) {
    msi_stats_text(w, "spill_dir", sp.dir);
    msi_stats_text(w, "spill_filesystem", fs_name(sp.fs_type));
    msi_stats_field(w, "spill_files", atomic_load(&sp.fd) >= 0, "");
  }
  msi_stats_field(w, "spill_moves", atomic_load(&sp.moves), "");
  msi_stats_field(w, "spill_writebacks", atomic_load(&sp.syncs), "");
  msi_stats_field(w, "spill_writebacks_full", atomic_load(&bud.full_syncs), "");
  msi_stats_field(w, "spill_writebacks_urgent", atomic_load(&bud.urgent_syncs), "");
  msi_stats_field(w, "spill_advice_switches", atomic_load(&sp.advice_switches), "");
  if (st == 1) {
    msi_stats_field(w, "spill_memory_budget", bud.cg.limit, "bytes");
    msi_stats_field(w, "spill_dirty_cap", bud.dirty_cap, "bytes");
  }
  msi_stats_field(w, "spill_disk_full", atomic_load(&sp.enospc), "");
}
