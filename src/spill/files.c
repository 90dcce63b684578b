/* SPDX-License-Identifier: MIT */
/* files.c: the spill directory (choice and probe), the spill file (open, size, the checks that its descriptor
   still holds it), the descriptor's number, the room left on disk */
#include "spill_internal.h"

/* ---- start-up: directory, filesystem, reservation ---- */

const char *msi_sp_fs_name(unsigned long t) {
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
int msi_sp_fd_high(int fd) {
  long mark = fd_mark();
  if (fd >= mark) return fd;
  int h = msi_os_dup_high(fd, (int)mark);
  if (h < 0) return fd;
  msi_os_close(fd);
  return h;
}

/* The descriptor table starts with 64 entries; the first descriptor numbered SP_FD_MARK grows it, and once the
   process has a second thread the kernel then waits for a whole RCU grace period (expand_fdtable's
   synchronize_rcu, milliseconds), inside the first spilled malloc. The table never shrinks (but a forked child's starts from its highest open descriptor), so where
   spill is configured the constructor and the fork child handler grow it while the process has one thread (a
   copy of descriptor 0, 1 or 2 numbered at the mark, closed at once). Not in a library loaded by dlopen
   into a threaded process: the constructor itself would wait the grace period whether or not it ever
   spills. With 0-2 all closed, the constructor opens "/" with O_PATH (no permission, security-module or fanotify
   check); the fork child opens nothing here (a sandboxed program may forbid it). */
MSI_STARTUP_TEXT void msi_sp_fd_table_grow(bool in_fork_child) {
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
  if (fd >= 0) return msi_sp_fd_high(fd);
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return -1;
  static _Atomic unsigned counter;
  char path[PATH_MAX];
  for (int tries = 0; tries < 100; tries++) {
    msi_snprintf(path, sizeof path, "%s/.memspace-spill-%llx-%u", dir, (unsigned long long)msi_now_ns(), atomic_fetch_add(&counter, 1));
    fd = msi_os_open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) {
      msi_os_unlink(path);
      return msi_sp_fd_high(fd);
    }
    if (errno != EEXIST) return -1;
  }
  return -1;
}

/* Whether this process reports the spill directory's problems as warnings: the settings are inherited, so every
   process of a many-process program (a shell script, make) would print the same line. `memspace run` checks the
   directory itself before it starts the program (msi_spill_dir_report: once per tree, as the tree starts) and
   exports MEMSPACE_RUN_PID, the pid of the program it runs: under that marker the processes of the tree say it
   only under MEMSPACE_VERBOSE, each when spill is first needed. Without the marker (a plain LD_PRELOAD) every
   process that needs spill warns. The program itself (the marker's pid) warns, unless the tool checked the
   directory (MEMSPACE_RUN_SPILL_CHECKED names the same pid): a run without a spill setting does not check, and
   the program may turn spill on itself (ms_option_set). */
static bool report_always; /* msi_spill_dir_report (the tool) */
static bool tree_top(void) {
  if (report_always) return true;
  const char *v = msi_getenv("MEMSPACE_RUN_PID"), *d;
  if (!v || !*v) return true;
  for (d = v; *d >= '0' && *d <= '9'; d++) {}
  if (*d) return true; /* a value that is not a pid: no marker */
  const char *checked = msi_getenv("MEMSPACE_RUN_SPILL_CHECKED");
  if (checked && strcmp(checked, v) == 0) return false; /* the tool said it for the tree */
  unsigned long long pid = 0;
  for (d = v; *d; d++) pid = pid * 10 + (unsigned)(*d - '0');
  return pid == (unsigned long long)msi_os_getpid(); /* (a problem only: the check found one) */
}
#define DIR_WARNING(...)                                                                                        \
  do {                                                                                                          \
    if (tree_top()) msi_warning(__VA_ARGS__);                                                                   \
    else msi_verbose(__VA_ARGS__);                                                                              \
  } while (0)

/* 0 when dir is usable (fills sp.fs_type), else an errno value with the reason already printed
   (when `report`; see tree_top) */
static int probe_dir(const char *dir, bool report) {
  int fd = open_unlinked(dir);
  if (fd < 0) {
    int e = errno;
    bool exists = false; /* ENOENT also when the directory is there but takes no files (/proc) */
    if (e == ENOENT && report) {
      int d = msi_os_open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
      if ((exists = d >= 0)) msi_os_close(d);
    }
    if (report)
      DIR_WARNING("spill directory %s (MEMSPACE_SPILL_DIR, else $TMPDIR, else /var/tmp) is not usable (%s): "
                  "spilled allocations stay in RAM", dir,
                  e == ENOENT ? (exists ? "no file can be created there" : "missing") :
                  e == ENOTDIR ? "not a directory" :
                  e == EACCES || e == EROFS ? "not writable" :
                  e == EPERM ? "creating a file not permitted (a sandbox?)" : MSI_ERRNO(e));
    return e ? e : EIO;
  }
  struct statfs st;
  int r = 0;
  if (msi_os_fstatfs(fd, &st) != 0) {
    r = errno;
    if (report) DIR_WARNING("spill directory %s: statfs failed (%s): spilled allocations stay in RAM", dir, MSI_ERRNO(r));
  } else {
    sp.fs_type = (unsigned long)st.f_type;
    if (sp.fs_type == FS_TMPFS || sp.fs_type == FS_RAMFS) {
      r = EXDEV;
      if (report)
        DIR_WARNING("spill directory %s is on %s (it would spill into RAM or swap): refused, spilled allocations "
                    "stay in RAM", dir, msi_sp_fs_name(sp.fs_type));
    } else if ((msi_os_fallocate(fd, 0, 0, (off_t)msi_os_page_size()) != 0 && errno != ENOSPC && errno != EDQUOT) ||
               msi_os_fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)msi_os_page_size()) != 0) {
      /* (a disk that is full now is accepted: allocations then answer ENOMEM) */
      r = errno ? errno : EOPNOTSUPP;
      if (report)
        DIR_WARNING("spill directory %s: the filesystem cannot reserve or release disk space (fallocate: %s): "
                    "refused, spilled allocations stay in RAM", dir, MSI_ERRNO(r));
    } else if (sp.fs_type != FS_EXT4 && sp.fs_type != FS_XFS && sp.fs_type != FS_BTRFS && report) {
      DIR_WARNING("spill directory %s: filesystem type 0x%lx may not truly reserve blocks with fallocate: a full "
                  "disk may raise SIGBUS (ext4 and xfs guarantee it)", dir, sp.fs_type);
    }
  }
  msi_os_close(fd);
  return r;
}

/* the directory spill uses: `explicit_dir` (MEMSPACE_SPILL_DIR; NULL or "": none given), else $TMPDIR when usable,
   else /var/tmp; written to sp.dir, false when unusable (reported: tree_top) */
static bool choose_dir_from(const char *explicit_dir) {
  if (explicit_dir && explicit_dir[0]) {
    msi_snprintf(sp.dir, sizeof sp.dir, "%s", explicit_dir);
    return probe_dir(sp.dir, true) == 0;
  }
  const char *tmp = msi_getenv("TMPDIR");
  if (tmp && tmp[0]) {
    msi_snprintf(sp.dir, sizeof sp.dir, "%s", tmp);
    int r = probe_dir(sp.dir, false);
    if (r == 0) return true;
    msi_verbose("spill: $TMPDIR=%s is not usable for spill (%s); trying /var/tmp", tmp,
                r == EXDEV ? "in RAM: tmpfs or ramfs" : MSI_ERRNO(r)); /* (EXDEV: probe_dir's "in RAM") */
  }
  msi_snprintf(sp.dir, sizeof sp.dir, "%s", "/var/tmp");
  return probe_dir(sp.dir, true) == 0;
}

bool msi_sp_choose_dir(void) {
  return choose_dir_from(ms_option_get_string(MS_OPTION_SPILL_DIR));
}

/* `memspace run` (tools/run.c), before it starts the program: checks the spill directory the program will use
   (`dir`: its MEMSPACE_SPILL_DIR, NULL or "" for the default) and warns when it is unusable, whatever the
   marker of an enclosing run says; true when usable. Creates and removes one unlinked file. */
bool msi_spill_dir_report(const char *dir) {
  report_always = true;
  bool ok = choose_dir_from(dir);
  report_always = false;
  return ok;
}

/* whether descriptor fd (>= 0) holds spill's file: the program may have closed the number, and opened or dup2'ed
   another file onto it */
bool msi_sp_file_is_ours(int fd) {
  unsigned long long dev, ino;
  return msi_os_fstat_id(fd, &dev, &ino, NULL) == 0 && dev == atomic_load(&sp.dev) && ino == atomic_load(&sp.ino);
}

/* Under the lock: the program closed spill's descriptor or put another file on its number. The number is left
   alone (never closed, read, written or punched again), the blocks in the lost file stay valid through their
   mappings and are frozen below each class's floor (like blocks inherited at fork: never reused; free gives
   their disk back through the mapping, MADV_REMOVE); new blocks go to a new file, above the floor. */
void msi_sp_class_freeze(sp_class_t *k, unsigned c) {
  size_t m = atomic_load_explicit(&k->mapped, memory_order_relaxed);
  if (msi_round_up(m, SP_FOLIO_MAX) <= k->floor) return;
  k->floor = msi_round_up(m, SP_FOLIO_MAX); /* granules of a new file never hold a frozen block */
  size_t above = own_first_slot(k, c);
  if (k->next < above) k->next = above;
  k->nfree = 0;
}
void msi_sp_file_lost(int fd) {
  MSI_WARN_ONCE("spill: the program closed spill's descriptor %d or opened another file on that number: spill "
                "leaves it alone; spilled blocks stay valid, new ones go to a new file", fd);
  atomic_store(&sp.fd, -1);
  for (unsigned c = sp.min_shift; c <= sp.max_shift; c++) msi_sp_class_freeze(&sp.cls[c], c);
}

/* under the lock: whether spill has its file open on sp.fd, checked before every use of the descriptor; a lost
   one is given up (file_lost) */
bool msi_sp_file_owned(void) {
  int fd = atomic_load_explicit(&sp.fd, memory_order_relaxed);
  if (fd < 0) return false;
  if (msi_sp_file_is_ours(fd)) return true;
  msi_sp_file_lost(fd);
  return false;
}

/* Under the lock: opens the spill file (at the first spilled block, and after a loss) and sizes it: the classes'
   extents end to end, within RLIMIT_FSIZE (beyond it ftruncate raises SIGXFSZ) and the filesystem's largest file
   (ftruncate's EFBIG: halved until it fits). Blocks beyond its size stay in RAM (class_map). false + errno,
   sp.fail_op. */
bool msi_sp_file_open(void) {
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

/* Leaves a margin of free space (what unprivileged users may use, minus max(1/64 of the filesystem, 4 MiB)):
   ext4 needs free blocks to convert reserved (unwritten) extents when pages are written, and a filesystem
   filled to the last block by fallocate (root may even use the reserved blocks) answers that write with SIGBUS. */
bool msi_sp_disk_room(int fd, size_t need) {
  struct statfs st;
  if (msi_os_fstatfs(fd, &st) != 0) return true; /* fallocate decides */
  unsigned long long bs = (unsigned long long)st.f_bsize, avail = (unsigned long long)st.f_bavail * bs;
  unsigned long long margin = (unsigned long long)st.f_blocks * bs / 64;
  if (margin < (4ull << 20)) margin = 4ull << 20;
  return avail >= margin && avail - margin >= need;
}

/* a full disk (or quota) is the caller's ENOMEM; any other refusal (EFBIG from RLIMIT_FSIZE, EIO, a sandbox...)
   is not about the block: it stays in RAM */
bool msi_sp_disk_full(int e) { return e == ENOSPC || e == EDQUOT; }

/* a block refused for lack of disk space: said once, with the directory and its free space, so a program's
   MemoryError has a reason on stderr */
MSI_RARE void msi_sp_report_disk_full(size_t need) {
  static atomic_flag once = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&once)) return;
  struct statfs st;
  int fd = atomic_load(&sp.fd);
  unsigned long long avail = fd >= 0 && msi_sp_file_is_ours(fd) && msi_os_fstatfs(fd, &st) == 0 ? (unsigned long long)st.f_bavail * st.f_bsize : 0;
  msi_warning("spill: the disk of %s is full (%s free, %s asked for): allocations that would be spilled fail with "
              "ENOMEM; free space there or choose another MEMSPACE_SPILL_DIR", sp.dir, MSI_SIZE(avail), MSI_SIZE(need));
}
