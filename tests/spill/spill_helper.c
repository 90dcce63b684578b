/* SPDX-License-Identifier: MIT */
/* spill_helper: one scenario per invocation (the spill state is per process and read from the environment at
   start), run by test_spill and the script tests. With USE_MALLOC=1 it uses the plain malloc family (the
   library preloaded routes it to spill), else the internal/public spill API directly.
   Prints "ok ..." and exits 0 on success; "FAIL ..." and exits 1 otherwise. */
#ifdef SPILL_HELPER_SHARED
#include "memspace.h"
#else
#include "route.h"
#endif
#include "ms_test.h"
#include <dirent.h>
#include <malloc.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FAIL(...) do { printf("FAIL "); printf(__VA_ARGS__); printf("\n"); exit(1); } while (0)
static int use_malloc;
#pragma weak ms_malloc

#ifdef SPILL_HELPER_SHARED /* linked with libmemspace.so: only the public API */
#define msi_spill_malloc(n, a, z) ms_spill_alloc(n)
#define msi_spill_free(p) ms_spill_free(p)
#define msi_spill_realloc(p, n) realloc(p, n)
#endif
static void *s_alloc(size_t n) { return use_malloc ? malloc(n) : msi_spill_malloc(n, 0, false); }
static void *s_realloc(void *p, size_t n) { return use_malloc ? realloc(p, n) : msi_spill_realloc(p, n); }
static void s_free(void *p) { if (use_malloc) free(p); else ms_spill_free(p); } /* (a block may be in RAM) */
static void *s_calloc(size_t n) { return use_malloc ? calloc(1, n) : msi_spill_malloc(n, 0, true); }

static size_t count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = 0;
  int c;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}
static size_t count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  size_t n = 0;
  if (!d) return 0;
  while (readdir(d)) n++;
  closedir(d);
  return n - 2;
}
static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i += 512) p[i] = (unsigned char)(seed + i / 512);
}
static int check(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i += 512) if (p[i] != (unsigned char)(seed + i / 512)) return 0;
  return 1;
}

static int mode_dir(void) { /* reports what happened to one spilled request */
  errno = 0;
  void *p = msi_spill_malloc(8 << 20, 0, false);
  if (p) { printf("spilled\n"); msi_spill_free(p); return 0; }
  printf(errno == 0 ? "fallback\n" : "error %d\n", errno);
  return 0;
}

/* RLIMIT_FSIZE of 1 MB set before anything spilled (ulimit -f 1000): blocks whose file extent the limit leaves
   no room for stay in RAM (the direct API answers NULL + errno 0, the fallback; malloc serves them from RAM),
   never ENOMEM (a limit is not a full disk: glibc succeeds) and never SIGXFSZ */
static int mode_fsize(void) {
  struct rlimit rl = {1024000, 1024000};
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0) FAIL("setrlimit: %s", strerror(errno));
  size_t sizes[] = {3000000, 8 << 20, 256 << 10};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    errno = 0;
    unsigned char *p = s_alloc(sizes[i]);
    if (!p && (use_malloc || errno != 0)) FAIL("%zu bytes under RLIMIT_FSIZE of 1 MB: %s", sizes[i], strerror(errno));
    if (p) {
      memset(p, 1, sizes[i]);
      s_free(p);
    }
  }
  /* the public call: from RAM (the heap's ms_malloc, when linked in: not in a sanitizer build of this helper) */
  unsigned char *r = ms_malloc ? ms_spill_alloc(3000000) : NULL;
  if (ms_malloc && (!r || ms_spill_is(r))) FAIL("ms_spill_alloc under RLIMIT_FSIZE: %s", r ? "spilled" : strerror(errno));
  if (r) memset(r, 1, 3000000);
  ms_spill_free(r);
  printf("ok fsize: blocks beyond the file-size limit stay in RAM, no ENOMEM, no SIGXFSZ\n");
  return 0;
}

/* RLIMIT_FSIZE lowered at run time, below a spilled block's file offset: realloc moving the block (an in-kernel
   copy into the spill file, which checks the limit and raises SIGXFSZ beyond it) must still succeed, contents
   kept, and a new block must not raise SIGXFSZ either */
static int mode_fsizelow(void) {
  size_t n = 3 << 20;
  unsigned char *p = s_alloc(n);
  if (!p) FAIL("alloc: %s", strerror(errno));
  fill(p, n, 4);
  unsigned char *t = s_alloc(100 << 20); /* the class realloc moves p into (2x headroom): mapped already */
  if (!t) FAIL("alloc: %s", strerror(errno));
  s_free(t);
  struct rlimit rl = {1 << 20, 1 << 20};
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0) FAIL("setrlimit: %s", strerror(errno));
  unsigned char *q = s_realloc(p, 40 << 20);
  if (!q) FAIL("realloc after RLIMIT_FSIZE was lowered: %s", strerror(errno));
  if (!check(q, n, 4)) FAIL("contents lost in realloc");
  memset(q + n, 2, (40 << 20) - n);
  unsigned char *r = s_alloc(5 << 20);
  if (r) memset(r, 3, 5 << 20);
  s_free(r);
  s_free(q);
  printf("ok fsizelow: realloc beyond a lowered RLIMIT_FSIZE, no SIGXFSZ\n");
  return 0;
}

/* the descriptor of spill's file: a link to DIR/... "(deleted)" (unlinked at creation) other than `except`;
   -1 when none */
static int spill_fd(int except) {
  const char *dir = getenv("MEMSPACE_SPILL_DIR") ? getenv("MEMSPACE_SPILL_DIR") : "/var/tmp";
  for (int fd = 3; fd < 1024; fd++) {
    char link[64], target[512];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0 || fd == except) continue;
    target[n] = 0;
    if (!strncmp(target, dir, strlen(dir)) && strstr(target, "(deleted)")) return fd;
  }
  return -1;
}

/* the program's own file (path) holds `n` bytes of 'Q', open on every descriptor in [lo, hi] */
static void own_file_intact(const char *path, size_t n, int lo, int hi, const char *when) {
  for (int fd = lo; fd <= hi; fd++)
    if (fcntl(fd, F_GETFD) < 0) FAIL("%s: the program's descriptor %d was closed", when, fd);
  int fd = open(path, O_RDONLY);
  if (fd < 0) FAIL("%s: open %s: %s", when, path, strerror(errno));
  static char buf[1 << 16];
  size_t total = 0;
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < r; i++)
      if (buf[i] != 'Q') FAIL("%s: the program's file was changed at offset %zu", when, total + (size_t)i);
    total += (size_t)r;
  }
  close(fd);
  if (total != n) FAIL("%s: the program's file holds %zu bytes, not %zu", when, total, n);
}

/* The program takes spill's descriptor numbers away while spilled blocks live, under RLIMIT_NOFILE 20 (spill's
   number is then low): first it dup2s a file of its own onto spill's descriptor, then, after new blocks went to a
   new file, it closes every descriptor above 2 (a daemon's close-all loop, os.closerange) and opens its file
   again on the lowest numbers, spill's old ones among them. Spill must never read, write, punch, truncate or
   close them: the program's file keeps its bytes and descriptors; the spilled blocks keep their data through
   free, realloc, new blocks and fork (the child's writes stay the child's). */
static int mode_closeall(void) {
  struct rlimit rl = {20, 20};
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) FAIL("setrlimit: %s", strerror(errno));
  size_t na = 64 << 10, nb = 1 << 20, nc = 4 << 20, nd = 2 << 20, ne = 1 << 20, own_n = 4 << 20;
  unsigned char *a = s_alloc(na), *b = s_alloc(nb), *c = s_alloc(nc);
  if (!a || !b || !c || !ms_spill_is(a) || !ms_spill_is(c)) FAIL("alloc: %s", strerror(errno));
  fill(a, na, 1);
  fill(b, nb, 2);
  fill(c, nc, 3);
  int sfd = spill_fd(-1);
  if (sfd < 0) FAIL("no spill descriptor found");
  char path[] = "/var/tmp/memspace-closeall-XXXXXX";
  int own = mkstemp(path);
  if (own < 0) FAIL("mkstemp: %s", strerror(errno));
  static char q[1 << 16];
  memset(q, 'Q', sizeof q);
  for (size_t done = 0; done < own_n; done += sizeof q)
    if (write(own, q, sizeof q) != (ssize_t)sizeof q) FAIL("write: %s", strerror(errno));
  if (dup2(own, sfd) != sfd) FAIL("dup2: %s", strerror(errno)); /* the program's file on spill's number */
  s_free(a);                                                     /* spill punched it here */
  unsigned char *d = s_alloc(nd);                                /* a new file */
  if (!d || !ms_spill_is(d)) FAIL("alloc after dup2: %s", d ? "not spilled" : strerror(errno));
  fill(d, nd, 4);
  own_file_intact(path, own_n, sfd, sfd, "after dup2 onto spill's descriptor");
  int sfd2 = spill_fd(-1);
  for (int fd = 3; fd < 20; fd++) close(fd); /* the close-all loop */
  int hi = 2;
  while (hi < 12) {
    int fd = open(path, O_RDWR);
    if (fd < 0) FAIL("open: %s", strerror(errno));
    hi = fd;
  }
  if (sfd2 >= 0 && sfd2 > hi) { if (dup2(3, sfd2) != sfd2) FAIL("dup2: %s", strerror(errno)); }
  if (!check(b, nb, 2) || !check(c, nc, 3) || !check(d, nd, 4)) FAIL("spilled data lost after the close-all loop");
  s_free(b);
  s_free(d);
  unsigned char *c2 = s_realloc(c, 3 << 20); /* shrinks in place */
  if (c2 != c || !check(c, 3 << 20, 3)) FAIL("realloc in place after the close-all loop");
  c = s_realloc(c, 10 << 20); /* moves */
  if (!c || !check(c, 3 << 20, 3)) FAIL("realloc (move) after the close-all loop: %s", c ? "contents" : strerror(errno));
  nc = 10 << 20;
  fill(c, nc, 3);
  unsigned char *e = s_alloc(ne);
  if (!e) FAIL("alloc after the close-all loop: %s", strerror(errno));
  fill(e, ne, 5);
  unsigned char *f = s_alloc(ne); /* a block in the file that is lost next, frozen in the child */
  if (!f) FAIL("alloc: %s", strerror(errno));
  fill(f, ne, 6);
  pid_t pid = fork();
  if (pid < 0) FAIL("fork: %s", strerror(errno));
  if (pid == 0) {
    if (!check(c, nc, 3) || !check(e, ne, 5) || !check(f, ne, 6)) _exit(2);
    fill(c, nc, 7);
    fill(e, ne, 8);
    fill(f, ne, 9);
    if (!check(c, nc, 7) || !check(e, ne, 8)) _exit(3);
    unsigned char *g = s_alloc(ne);
    if (!g) _exit(4);
    fill(g, ne, 10);
    s_free(g);
    s_free(e);
    _exit(0);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) FAIL("child status %#x", st);
  if (!check(c, nc, 3) || !check(e, ne, 5) || !check(f, ne, 6)) FAIL("the child's writes reached the parent");
  own_file_intact(path, own_n, 3, hi, "after the close-all loop");
  s_free(c);
  s_free(e);
  s_free(f);
  own_file_intact(path, own_n, 3, hi, "after the last free");
  unlink(path);
  printf("ok closeall: the program's file and descriptors untouched, spilled data and fork semantics kept\n");
  return 0;
}

/* files the program can still open (closed again at once) */
static int openable(void) {
  int n = 0, fds[64];
  while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0) n++;
  for (int i = 0; i < n; i++) close(fds[i]);
  return n;
}

/* Under RLIMIT_NOFILE 20, one spilled block in each class from 4 KiB to 32 MiB: spill holds at most two
   descriptors (what the program can open drops by two at most), and a fork meanwhile works */
static int mode_fdbudget(void) {
  struct rlimit rl = {20, 20};
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) FAIL("setrlimit: %s", strerror(errno));
  int before = openable();
  static unsigned char *b[16];
  int n = 0;
  for (size_t size = 4096; size <= (32u << 20); size *= 2, n++) {
    b[n] = s_alloc(size);
    if (!b[n] || !ms_spill_is(b[n])) FAIL("%zu bytes: %s", size, b[n] ? "not spilled" : strerror(errno));
    memset(b[n], n + 1, size);
  }
  int opened = openable();
  if (opened < before - 2) FAIL("the program could open %d files beside %d spilled blocks, %d before", opened, n, before);
  pid_t pid = fork();
  if (pid == 0) _exit(b[n - 1][0] == n ? 0 : 1);
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) FAIL("fork: status %#x", st);
  for (int i = 0; i < n; i++) s_free(b[i]);
  printf("ok fdbudget: %d spilled blocks, the program could open %d more files (%d before)\n", n, opened, before);
  return 0;
}

static int mode_hold(void) {
  size_t n = 64 << 20;
  unsigned char *p = s_alloc(n);
  if (!p) FAIL("alloc: %s", strerror(errno));
  memset(p, 0x5a, n);
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}

static int mode_full(void) {
  enum { MAXB = 4096 };
  static unsigned char *b[MAXB];
  size_t n = 1 << 20, count = 0;
  while (count < MAXB) {
    errno = 0;
    b[count] = s_alloc(n);
    if (!b[count]) break;
    if (use_malloc && !ms_spill_is(b[count])) FAIL("block %zu not spilled", count);
    memset(b[count], (int)(count & 0xff), n);
    count++;
  }
  if (count == MAXB) FAIL("the disk never filled");
  if (errno != ENOMEM) FAIL("errno %d after %zu blocks, expected ENOMEM", errno, count);
  for (size_t i = 0; i < count; i++)
    for (size_t j = 0; j < n; j += 4096)
      if (b[i][j] != (unsigned char)(i & 0xff)) FAIL("block %zu corrupted", i);
  s_free(b[0]);
  b[0] = s_alloc(n);
  if (!b[0]) FAIL("allocation after a free failed: %s", strerror(errno));
  memset(b[0], 0, n);
  for (size_t i = 0; i < count; i++) s_free(b[i]);
  printf("ok full: %zu MiB then ENOMEM, data intact\n", count);
  return 0;
}

/* Blocks that do not fill their slot (200 KB in 256 KiB slots, 1.1 MB in 2 MiB slots, 18 MB in 32 MiB slots:
   the rest of the slot is a hole), allocated without a write until the disk is full, then every byte written: a write never meets a block
   of the file that was not reserved (a large page-cache folio over a hole would ask ext4 for more space at the
   write fault: SIGBUS on a full disk). With FILLER, the rest of the disk is then filled by another file first. */
/* another file takes every free block of the disk */
static void fill_disk(const char *filler) {
  int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) FAIL("filler: %s", strerror(errno));
  static char chunk[1 << 16];
  while (write(fd, chunk, sizeof chunk) > 0) {}
  while (write(fd, chunk, 4096) > 0) {}
  fsync(fd);
  close(fd);
}

/* written back and dropped: the next touch of a page reads it in again, in a folio of the kernel's choosing */
static void drop_caches(void) {
  sync();
  int dc = open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (dc >= 0) { if (write(dc, "3", 1) < 0) {} close(dc); }
}

/* Blocks short of their slot allocated until ENOMEM, then (after FILLER, another file, took the rest of the disk)
   written: with HUGE each right after advising it MADV_HUGEPAGE (2 MiB page-cache folios over its neighbours'
   slots, as a program may do), else as they are. No SIGBUS, every byte kept. */
static int mode_fullholes(const char *filler, bool huge) {
  enum { MAXB = 4096 };
  static unsigned char *b[MAXB];
  static size_t len[MAXB];
  size_t count = 0;
  while (count < MAXB) {
    len[count] = count % 8 == 7 ? 18000000 : count % 4 == 3 ? 1100000 : 204800;
    errno = 0;
    b[count] = s_alloc(len[count]);
    if (!b[count]) break;
    count++;
  }
  if (count == MAXB) FAIL("the disk never filled");
  if (errno != ENOMEM) FAIL("errno %d after %zu blocks, expected ENOMEM", errno, count);
  if (filler) fill_disk(filler);
  for (size_t i = 0; i < count; i++) {
    if (huge && madvise(b[i], len[i], MADV_HUGEPAGE) != 0) FAIL("madvise: %s", strerror(errno));
    memset(b[i], (int)(i & 0xff) | 1, len[i]);
  }
  for (size_t i = 0; i < count; i++)
    for (size_t j = 0; j < len[i]; j += 4096)
      if (b[i][j] != ((unsigned char)(i & 0xff) | 1) || b[i][len[i] - 1] != ((unsigned char)(i & 0xff) | 1))
        FAIL("block %zu corrupted", i);
  for (size_t i = 0; i < count; i++) s_free(b[i]);
  if (filler) unlink(filler);
  printf("ok fullholes: %zu blocks then ENOMEM, every byte written%s%s\n", count, filler ? " after the disk filled" : "",
         huge ? ", each just advised MADV_HUGEPAGE" : "");
  return 0;
}

/* Blocks of 200 KB (8 slots of 256 KiB per 2 MiB granule) allocated until ENOMEM and written; then, while a
   child appends to FILLER whenever the disk has room, all but one block per granule are freed (beside a live
   block: never a punch, else the writer takes the space and the granule keeps a hole); the page cache is
   dropped and each survivor, advised MADV_HUGEPAGE, is rewritten (a 2 MiB folio over the whole granule: SIGBUS
   if it has a hole). Then calloc reuses the freed slots: they must read as zero. */
static void pause_ms(long ms) { struct timespec t = {ms / 1000, (ms % 1000) * 1000000L}; nanosleep(&t, NULL); }
/* waits (a minute at most) until the writer's count of refused writes passes `seen` */
static void wait_refused(_Atomic unsigned long *refused, unsigned long seen) {
  for (int i = 0; i < 6000 && *refused <= seen; i++) pause_ms(10);
  if (*refused <= seen) FAIL("the writer never met a full disk");
}
/* free bytes (root's reserve included) of the filesystem holding path's directory */
static unsigned long long free_bytes(const char *path) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  struct statvfs st;
  return statvfs(dir, &st) == 0 ? (unsigned long long)st.f_bfree * st.f_frsize : 0;
}
static int mode_stalefree(const char *filler) {
  enum { MAXB = 8192, N = 204800 };
  static unsigned char *b[MAXB];
  size_t count = 0;
  while (count < MAXB && (b[count] = s_alloc(N)) != NULL) memset(b[count], (int)(count & 0x7f) | 1, N), count++;
  if (count == MAXB) FAIL("the disk never filled");
  /* the writer counts the writes the full disk refused: once the count moves after a point, every block free at
     that point was taken (conditions, not pauses) */
  _Atomic unsigned long *refused = mmap(NULL, sizeof *refused, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (refused == MAP_FAILED) FAIL("mmap: %s", strerror(errno));
  *refused = 0;
  pid_t w = fork();
  if (w == 0) {
    static char chunk[4096];
    int fd = open(filler, O_WRONLY | O_CREAT | O_APPEND, 0600);
    for (;;) if (write(fd, chunk, sizeof chunk) < 0) ++*refused; /* takes any block freed, at once */
  }
  wait_refused(refused, 0);
  size_t freed = 0;
  uintptr_t kept = 0;
  for (size_t i = 0; i < count; i++) {
    if (((uintptr_t)b[i] >> 21) != kept) { kept = (uintptr_t)b[i] >> 21; continue; } /* its granule's survivor */
    s_free(b[i]);
    b[i] = NULL;
    freed++;
  }
  wait_refused(refused, *refused); /* the writer met a full disk after the frees: it took anything they gave back */
  kill(w, SIGKILL);
  waitpid(w, NULL, 0);
  drop_caches();
  size_t live = 0;
  for (size_t i = 0; i < count; i++) {
    if (!b[i]) continue;
    if (madvise(b[i], N, MADV_HUGEPAGE) != 0) FAIL("madvise: %s", strerror(errno));
    for (size_t j = 0; j < N; j++)
      if (b[i][j] != ((unsigned char)(i & 0x7f) | 1)) FAIL("block %zu corrupted at %zu", i, j);
    memset(b[i], 0x55, N);
    live++;
  }
  struct stat fst;
  if (stat(filler, &fst) != 0) FAIL("stat %s: %s", filler, strerror(errno));
  struct statvfs before;
  if (statvfs(filler, &before) != 0) FAIL("statvfs: %s", strerror(errno));
  unlink(filler);
  sync();
  /* xfs gives an unlinked file's space back in the background: wait until it is back */
  unsigned long long want = (unsigned long long)before.f_bfree * before.f_frsize + (unsigned long long)fst.st_blocks * 512;
  for (int i = 0; i < 6000 && free_bytes(filler) + (1 << 20) < want; i++) pause_ms(10);
  size_t reused = 0;
  for (size_t k = 0; k < freed; k++) {
    unsigned char *z = s_calloc(N);
    if (!z) break;
    for (size_t j = 0; j < N; j += 512) if (z[j]) FAIL("calloc'd block %p reads %d at %zu", (void *)z, z[j], j);
    memset(z, 1, N);
    reused++;
  }
  printf("ok stalefree: %zu blocks, %zu freed beside live ones while the disk filled, %zu rewritten as huge pages, "
         "%zu reused by calloc as zero\n", count, freed, live, reused);
  return 0;
}

/* A 128 KiB block beside a live neighbour in one granule grows by realloc into another class, FILLER takes the
   disk, the page cache is dropped, and the moved block is written. On xfs and btrfs an in-kernel copy
   (copy_file_range) reflinks: had the old slot stayed behind sharing the extents, that write would need new
   blocks: SIGBUS. */
static int mode_movefull(const char *filler) {
  size_t n = 128 << 10;
  unsigned char *a = s_alloc(n), *b = s_alloc(n);
  if (!a || !b) FAIL("alloc: %s", strerror(errno));
  memset(a, 1, n);
  memset(b, 2, n);
  msync(a, n, MS_SYNC);
  msync(b, n, MS_SYNC);
  unsigned char *m = s_realloc(a, 200 << 10);
  if (!m) FAIL("realloc: %s", strerror(errno));
  sync();
  fill_disk(filler);
  drop_caches();
  for (size_t j = 0; j < n; j++) if (m[j] != 1) FAIL("moved block corrupted at %zu", j);
  memset(m, 9, 200 << 10);
  msync(m, 200 << 10, MS_SYNC);
  for (size_t j = 0; j < n; j++) if (b[j] != 2) FAIL("neighbour corrupted at %zu", j);
  unlink(filler);
  s_free(m);
  s_free(b);
  printf("ok movefull: a block moved by realloc beside a live neighbour, written after the disk filled\n");
  return 0;
}

/* A 40 MiB block (over the 16 MiB a forked child copies at once, so the child reads the parent's file for most
   of it) shrunk in place to 20 MiB while a forked child lives (the tail stays for the child), FILLER takes the
   disk, and the block grows back in place to 60 MiB: the refused growth (ENOMEM) must not punch the kept tail,
   which the child then reads as zeros. The child checks every page of its inherited block. */
static int mode_forktail(const char *filler) {
  size_t mb = (size_t)1 << 20;
  unsigned char *a = s_alloc(40 * mb);
  if (!a) FAIL("alloc: %s", strerror(errno));
  memset(a, 'A', 40 * mb);
  int go[2];
  if (pipe(go)) FAIL("pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0) FAIL("fork: %s", strerror(errno));
  if (pid == 0) {
    char c;
    if (read(go[0], &c, 1) != 1) _exit(2);
    size_t changed = 0;
    for (size_t i = 0; i < 40 * mb; i += 4096) changed += a[i] != 'A';
    if (changed) printf("FAIL forktail: %zu of %zu pages of the child's inherited block changed\n", changed, 40 * mb / 4096);
    _exit(changed != 0);
  }
  unsigned char *s = s_realloc(a, 20 * mb);
  if (s != a) FAIL("the shrink moved the block");
  fill_disk(filler);
  errno = 0;
  unsigned char *g = s_realloc(s, 60 * mb);
  if (g) FAIL("a growth of 40 MiB on a full disk succeeded");
  if (errno != ENOMEM) FAIL("growth on a full disk: errno %d, expected ENOMEM", errno);
  if (write(go[1], "x", 1) != 1) FAIL("pipe write");
  int st;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) FAIL("the child's block changed (status %#x)", st);
  for (size_t i = 0; i < 20 * mb; i++) if (s[i] != 'A') FAIL("the parent's block changed at %zu", i);
  unlink(filler);
  s_free(s);
  printf("ok forktail: a growth refused on a full disk left a forked child's kept tail as it was\n");
  return 0;
}

/* The fork child cannot map the parent's file privately (the first mmap in the child refused, as strict
   overcommit refuses a large writable private mapping): the blocks it inherited must not stay writable through
   the parent's shared mapping, nor be made writable again (mprotect fails with EACCES: the mapping comes from a
   read-only descriptor). The child reads the parent's bytes and its write faults (SIGSEGV); the parent's
   block keeps every byte. Run with the maintenance thread off (MEMSPACE_PURGE_DELAY=-1): no other thread's mmap
   takes the injected failure. With `sandbox` the program first installs a seccomp filter that kills it for any
   open (SIGSYS), as a program sandboxing itself after spill started: the child's handler opens nothing, and its
   inherited blocks are read-only in place (mprotect; it could make them writable again itself). */
static int mode_forkro(bool sandbox) {
  size_t n = 4 << 20;
  unsigned char *a = s_alloc(n);
  if (!a || !ms_spill_is(a)) FAIL("alloc: %s", strerror(errno));
  memset(a, 'P', n);
  if (sandbox && ms_test_forbid_open(SECCOMP_RET_TRAP)) FAIL("seccomp filter: %s", strerror(errno));
  ms_fault_inject(MS_FAULT_MMAP, 1, ENOMEM);
  pid_t pid = fork();
  if (pid == 0) {
    ms_fault_inject(MS_FAULT_MMAP, 0, 0);
    if (a[0] != 'P' || a[n - 1] != 'P') _exit(3);
    if (sandbox) {
      ((volatile unsigned char *)a)[n / 2] = 'C';
      _exit(0);
    }
    /* nor writable again: the read-only mapping comes from a read-only descriptor (mprotect: EACCES) */
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    void *pg = (void *)(((uintptr_t)a + n / 2) & ~(ps - 1));
    if (mprotect(pg, ps, PROT_READ | PROT_WRITE) == 0) _exit(4); /* (its write would reach the parent) */
    if (errno != EACCES) _exit(5);
    ((volatile unsigned char *)a)[n / 2] = 'C';
    _exit(0);
  }
  ms_fault_inject(MS_FAULT_MMAP, 0, 0);
  if (pid < 0) FAIL("fork: %s", strerror(errno));
  int st;
  if (waitpid(pid, &st, 0) != pid) FAIL("waitpid");
  for (size_t i = 0; i < n; i++) if (a[i] != 'P') FAIL("the child's write reached the parent's block at %zu", i);
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) FAIL("the child was killed by the sandbox (SIGSYS): it opened a file");
  if (WIFEXITED(st) && WEXITSTATUS(st) == 3) FAIL("the child did not read the parent's bytes");
  if (WIFEXITED(st) && WEXITSTATUS(st) == 4) FAIL("the child made its read-only block writable again (mprotect)");
  if (WIFEXITED(st) && WEXITSTATUS(st) == 5) FAIL("the child's mprotect to writable failed, but not with EACCES");
  s_free(a);
  printf("ok forkro%s: the child could not map privately; its write %s, the parent's block intact\n",
         sandbox ? " sandboxed" : "", WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV ? "faulted" : "went elsewhere");
  return 0;
}

/* The fork child maps the first 64 MiB chunk of the 4 MiB blocks' region privately, then its mapping of the
   second is refused (the second mmap in the child); with `hole` the refused mapping also unmaps that chunk first,
   as kernels before 6.12 do. The blocks span three chunks. After the fork the parent rewrites block 0 ('Q'): the
   child, whose block 0 lies in the private chunk and was copied at fork, reads 'P'. The blocks of the refused
   chunk and of the one after it read the parent's bytes, and the child's write into the third chunk faults and
   never reaches the parent. Run with MEMSPACE_PURGE_DELAY=-1 (as forkro). */
static int mode_forkfall(bool hole) {
  const char *name = hole ? "forkseal" : "forksnap";
  size_t n = 4 << 20, chunk = (size_t)64 << 20;
  unsigned char *b[64];
  int nb = 0;
  for (; nb < 64; nb++) {
    b[nb] = s_alloc(n);
    if (!b[nb] || !ms_spill_is(b[nb])) FAIL("alloc: %s", strerror(errno));
    if ((uintptr_t)b[nb] / chunk >= (uintptr_t)b[0] / chunk + 2) break;
  }
  if (nb == 64) FAIL("64 blocks of 4 MiB do not reach a third chunk");
  unsigned char *last = b[nb], *mid = b[nb / 2];
  if ((uintptr_t)mid / chunk != (uintptr_t)b[0] / chunk + 1) FAIL("block %d is not in the second chunk", nb / 2);
  memset(b[0], 'P', n);
  mid[0] = last[0] = 'P';
  int go[2], back[2];
  if (pipe(go) || pipe(back)) FAIL("pipe: %s", strerror(errno));
  ms_fault_inject(MS_FAULT_MMAP, 2, hole ? -ENOMEM : ENOMEM);
  pid_t pid = fork();
  if (pid == 0) {
    ms_fault_inject(MS_FAULT_MMAP, 0, 0);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(2);
    char seen = 'P'; /* block 0 as the child reads it, told the parent before the write that faults */
    for (size_t i = 0; i < n; i++) if (b[0][i] != 'P') seen = (char)b[0][i];
    if (write(back[1], &seen, 1) != 1) _exit(2);
    /* EFAULT, not a fault, where the second chunk is a hole: the child goes on to its write */
    if (write(back[1], mid, 1) != 1 && write(back[1], "-", 1) != 1) _exit(2);
    if (last[0] != 'P') _exit(3);
    if (mprotect(last, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE) == 0) _exit(4); /* (nor writable again) */
    ((volatile unsigned char *)last)[0] = 'C';
    _exit(0);
  }
  ms_fault_inject(MS_FAULT_MMAP, 0, 0);
  if (pid < 0) FAIL("fork: %s", strerror(errno));
  close(back[1]); /* a child dead before reporting: the parent reads the end of the pipe */
  memset(b[0], 'Q', n);
  if (write(go[1], "x", 1) != 1) FAIL("pipe write");
  int st;
  if (waitpid(pid, &st, 0) != pid) FAIL("waitpid");
  if (last[0] != 'P') FAIL("%s: the child's write reached the parent's block", name);
  char seen = 0;
  if (read(back[0], &seen, 1) != 1) FAIL("%s: the child did not report block 0 (status %#x)", name, st);
  if (seen != 'P') FAIL("%s: the child read the parent's write after the fork in block 0 ('%c')", name, seen);
  if (read(back[0], &seen, 1) != 1 || seen != 'P') FAIL("%s: the child could not read the refused chunk's block", name);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 3) FAIL("%s: the child did not read the parent's bytes", name);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 4) FAIL("%s: the child made its read-only block writable again (mprotect)", name);
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) FAIL("%s: the child's write did not fault (status %#x)", name, st);
  close(back[0]);
  close(go[0]);
  close(go[1]);
  for (int i = 0; i <= nb; i++) s_free(b[i]);
  printf("ok %s: block 0 kept the fork's bytes in the child, the rest read-only\n", name);
  return 0;
}

/* The program closes spill's descriptor, so the fork child copies its blocks into anonymous memory and moves
   the copy over them (mremap); the move is refused after unmapping its target, as kernels before 6.17 do. With
   no descriptor to map the hole again, the child's handler makes it inaccessible: the child reads EFAULT there,
   its write faults, the parent's block keeps every byte. */
static int mode_forklost(void) {
  size_t n = 4 << 20;
  unsigned char *a = s_alloc(n);
  if (!a || !ms_spill_is(a)) FAIL("alloc: %s", strerror(errno));
  memset(a, 'P', n);
  int sfd = spill_fd(-1);
  if (sfd < 0) FAIL("no spill descriptor found");
  close(sfd);
  int back[2];
  if (pipe(back)) FAIL("pipe: %s", strerror(errno));
  ms_fault_inject(MS_FAULT_MMAP, 2, -ENOMEM); /* the copy's mmap, then its mremap */
  pid_t pid = fork();
  if (pid == 0) {
    ms_fault_inject(MS_FAULT_MMAP, 0, 0);
    if (write(back[1], a, 1) != 1 && write(back[1], "-", 1) != 1) _exit(2);
    /* a hole left in spill's reservation would take the program's next mapping: the range stays mapped */
    void *q = mmap(a, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (write(back[1], q == (void *)a ? "h" : "m", 1) != 1) _exit(2);
    ((volatile unsigned char *)a)[0] = 'C';
    _exit(0);
  }
  ms_fault_inject(MS_FAULT_MMAP, 0, 0);
  if (pid < 0) FAIL("fork: %s", strerror(errno));
  close(back[1]);
  int st;
  if (waitpid(pid, &st, 0) != pid) FAIL("waitpid");
  for (size_t i = 0; i < n; i++) if (a[i] != 'P') FAIL("forklost: the child's write reached the parent's block at %zu", i);
  char seen = 0;
  char mapped = 0;
  if (read(back[0], &seen, 1) != 1 || read(back[0], &mapped, 1) != 1) FAIL("forklost: the child did not report (status %#x)", st);
  if (mapped != 'm') FAIL("forklost: the refused move left a hole in the child's spill region");
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) FAIL("forklost: the child's write did not fault (status %#x)", st);
  close(back[0]);
  s_free(a);
  printf("ok forklost: the refused move left the child's block %s, the parent's block intact\n",
         seen == '-' ? "inaccessible" : "readable");
  return 0;
}

/* A spilled block of `mib` MiB (its slot, one chunk of the file, larger than RAM + swap: spill_fork_huge picks
   the size): a forked child maps it privately (the kernel's default overcommit heuristic refuses a writable
   private mapping larger than RAM + swap unless MAP_NORESERVE), reads the parent's bytes and writes its own,
   which the parent never sees. */
static int mode_forkbig(size_t mib) {
  size_t n = mib << 20;
  unsigned char *a = s_alloc(n);
  if (!a || !ms_spill_is(a)) FAIL("alloc of %zu MiB: %s", mib, strerror(errno));
  a[n / 2] = 'P';
  pid_t pid = fork();
  if (pid == 0) {
    if (a[n / 2] != 'P') _exit(3);
    a[n / 2] = 'C';
    a[n - 1] = 'C';
    _exit(a[n / 2] == 'C' ? 0 : 4);
  }
  if (pid < 0) FAIL("fork: %s", strerror(errno));
  int st;
  if (waitpid(pid, &st, 0) != pid) FAIL("waitpid");
  if (a[n / 2] != 'P' || a[n - 1] != 0) FAIL("the child's writes reached the parent's block");
  if (!WIFEXITED(st) || WEXITSTATUS(st)) FAIL("the child failed (status %#x)", st);
  s_free(a);
  printf("ok forkbig: %zu MiB, the child's writes its own\n", mib);
  return 0;
}

/* Blocks of 4 MiB + 4 KiB (8 MiB slots, 6 MiB reserved each) allocated until ENOMEM, then each grown in place to
   8 MiB until a growth is refused: growth keeps the free-space margin new blocks keep (max(1/64 of the
   filesystem, 4 MiB) of what unprivileged users may use: ext4 needs free blocks to convert the reserved extents
   when they are written). Then every byte written and read back. */
static int mode_growmargin(const char *dir) {
  enum { MAXB = 1024 };
  static unsigned char *b[MAXB];
  static size_t len[MAXB];
  size_t count = 0, grown = 0, small = (4 << 20) + 4096, big = 8 << 20;
  while (count < MAXB && (b[count] = s_alloc(small))) len[count++] = small;
  if (count == MAXB || errno != ENOMEM) FAIL("%zu blocks, errno %d: expected ENOMEM on a full disk", count, errno);
  for (size_t i = 0; i < count; i++) {
    errno = 0;
    unsigned char *q = s_realloc(b[i], big);
    if (!q) {
      if (errno != ENOMEM) FAIL("a refused growth: errno %d, expected ENOMEM", errno);
      break;
    }
    if (q != b[i]) FAIL("a growth within the slot moved the block");
    len[i] = big;
    grown++;
  }
  struct statvfs st;
  if (statvfs(dir, &st) != 0) FAIL("statvfs: %s", strerror(errno));
  unsigned long long avail = (unsigned long long)st.f_bavail * st.f_frsize;
  unsigned long long margin = (unsigned long long)st.f_blocks * st.f_frsize / 64;
  if (margin < (4ull << 20)) margin = 4ull << 20;
  if (grown == count) FAIL("every block grew: the disk never filled");
  if (avail < margin) FAIL("growth took the margin: %llu KiB free for users, the margin is %llu KiB", avail >> 10, margin >> 10);
  for (size_t i = 0; i < count; i++) memset(b[i], (int)(i + 1), len[i]);
  for (size_t i = 0; i < count; i++)
    for (size_t j = 0; j < len[i]; j += 4096) if (b[i][j] != (unsigned char)(i + 1)) FAIL("block %zu byte %zu", i, j);
  for (size_t i = 0; i < count; i++) s_free(b[i]);
  printf("ok growmargin: %zu blocks, %zu grown in place, %llu KiB left free (margin %llu KiB), every byte kept\n",
         count, grown, avail >> 10, margin >> 10);
  return 0;
}

static int mode_fork(void) {
  size_t n = 16 << 20;
  unsigned char *p = s_alloc(n);
  if (!p) FAIL("alloc: %s", strerror(errno));
  memset(p, 1, n);
  /* a block of up to 16 MiB is copied into the child at fork, whatever its slot: one grown by realloc sits in
     a 32 MiB slot. The child must not see the parent's later writes to it. */
  size_t vn = 10 << 20;
  unsigned char *v = s_alloc(6 << 20);
  if (!v || !(v = s_realloc(v, vn))) FAIL("alloc/realloc: %s", strerror(errno));
  memset(v, 1, vn);
  int go[2];
  if (pipe(go)) FAIL("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    char b;
    if (read(go[0], &b, 1) != 1) _exit(8);                         /* the parent has rewritten v */
    for (size_t i = 0; i < vn; i += 4096) if (v[i] != 1) _exit(7);
    for (size_t i = 0; i < n; i += 4096) if (p[i] != 1) _exit(2);  /* child reads the parent's data */
    memset(p, 2, n);                                                 /* and writes its own copy */
    for (size_t i = 0; i < n; i += 4096) if (p[i] != 2) _exit(3);
    unsigned char *q = s_alloc(n);                                  /* new spilled blocks in the child */
    if (!q || !ms_spill_is(q)) _exit(4);
    memset(q, 3, n);
    unsigned char *r = s_realloc(p, 2 * n);                          /* an inherited block grows: a copy */
    if (!r) _exit(5);
    for (size_t i = 0; i < n; i += 4096) if (r[i] != 2) _exit(6);
    p = r;
    s_free(q);
    s_free(p);                                                       /* must not touch the parent's file */
    _exit(0);
  }
  memset(v, 9, vn);
  if (write(go[1], "x", 1) != 1) FAIL("pipe write");
  int status;
  waitpid(pid, &status, 0);
  s_free(v);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("child status %d", status);
  for (size_t i = 0; i < n; i++) if (p[i] != 1) FAIL("the child's write reached the parent at %zu", i);
  s_free(p);
  printf("ok fork: child's writes stayed in the child\n");
  return 0;
}

/* The parent frees spilled blocks a forked child still reads, and allocates new ones of the same size filled
   with other bytes, and shrinks one: the child must read the inherited blocks' bytes (neither a hole nor the new
   blocks' data). Blocks of 24 MiB: the child handler copies only their first page. Once the child is gone the
   parent's next spill call releases the deferred blocks: their slots serve new blocks again. */
static unsigned long long stat_value(const char *key);
static int mode_forkhole(void) {
  size_t n = 24 << 20, ps = 4096;
  unsigned char *a[4], *b[2];
  for (int i = 0; i < 4; i++) {
    if (!(a[i] = s_alloc(n)) || !ms_spill_is(a[i])) FAIL("alloc: %s", strerror(errno));
    memset(a[i], i + 1, n);
  }
  int go[2];
  if (pipe(go)) FAIL("pipe");
  pid_t pid = fork();
  if (pid < 0) FAIL("fork: %s", strerror(errno));
  if (pid == 0) {
    char c;
    close(go[1]);
    if (read(go[0], &c, 1) != 1) _exit(8); /* the parent has freed, allocated and shrunk */
    for (int i = 0; i < 3; i++)
      for (size_t o = 0; o < n; o += ps)
        if (a[i][o] != i + 1 || a[i][o + ps - 1] != i + 1) _exit(10 + i);
    _exit(0);
  }
  close(go[0]);
  unsigned char *a0 = a[0], *a1 = a[1];
  s_free(a[0]);
  s_free(a[1]);
  for (int i = 0; i < 2; i++) {
    if (!(b[i] = s_alloc(n)) || !ms_spill_is(b[i])) FAIL("alloc after fork: %s", strerror(errno));
    memset(b[i], 0x55, n);
  }
  if (s_realloc(a[2], 4 << 20) != a[2]) FAIL("realloc did not shrink in place");
  unsigned long long deferred = stat_value("spill_fork_deferred");
  if (write(go[1], "x", 1) != 1) FAIL("pipe write");
  int status;
  if (waitpid(pid, &status, 0) != pid) FAIL("waitpid");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    FAIL("the child read changed inherited blocks (status %d: block %d)", status, WEXITSTATUS(status) - 10);
  if (deferred < 2 * (unsigned long long)n) FAIL("spill_fork_deferred %llu while the child lived", deferred);
  s_free(b[0]); /* the child is gone: this call releases the deferred blocks */
  if (stat_value("spill_fork_deferred") != 0) FAIL("blocks still deferred after the child's exit");
  unsigned char *c0 = s_alloc(n), *c1 = s_alloc(n);
  if (!c0 || !c1) FAIL("alloc after the child: %s", strerror(errno));
  if (!((c0 == a0 || c0 == a1 || c0 == b[0]) && (c1 == a0 || c1 == a1 || c1 == b[0])))
    FAIL("released slots not reused (%p %p; freed %p %p %p)", (void *)c0, (void *)c1, (void *)a0, (void *)a1, (void *)b[0]);
  for (size_t o = 0; o < n; o += ps) if (c0[o] || c1[o]) FAIL("a reused slot does not read as zero");
  s_free(c0);
  s_free(c1);
  s_free(b[1]);
  s_free(a[2]);
  s_free(a[3]);
  printf("ok forkhole: the child read the blocks the parent freed, replaced and shrank (%llu bytes deferred)\n",
         deferred);
  return 0;
}

static int mode_many(size_t count) {
  unsigned char **b = calloc(count, sizeof *b);
  size_t maps0 = count_lines("/proc/self/maps"), fds0 = count_fds();
  for (size_t i = 0; i < count; i++) {
    b[i] = s_alloc(4096 + (i % 3) * 4096);
    if (!b[i]) FAIL("block %zu: %s", i, strerror(errno));
    if (!ms_spill_is(b[i])) FAIL("block %zu not spilled", i);
    b[i][0] = (unsigned char)i;
  }
  size_t maps = count_lines("/proc/self/maps"), fds = count_fds();
  for (size_t i = 0; i < count; i++) if (b[i][0] != (unsigned char)i) FAIL("block %zu corrupted", i);
  for (size_t i = 0; i < count; i += 2) s_free(b[i]);  /* every other one: holes everywhere */
  size_t maps2 = count_lines("/proc/self/maps");
  for (size_t i = 1; i < count; i += 2) s_free(b[i]);
  free(b);
  if (maps > maps0 + 200 || maps2 > maps0 + 200) FAIL("mappings grew from %zu to %zu/%zu", maps0, maps, maps2);
  if (fds > fds0 + 40) FAIL("descriptors grew from %zu to %zu", fds0, fds);
  printf("ok many: %zu blocks, mappings %zu -> %zu (after freeing half: %zu), descriptors %zu -> %zu\n", count,
         maps0, maps, maps2, fds0, fds);
  return 0;
}

/* a number field of /proc/self/status ("FDSize:"), -1 when missing */
static long status_field(const char *name) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, name, strlen(name))) v = atol(line + strlen(name));
  if (f) fclose(f);
  return v;
}

/* open descriptors other than the listing's own, as a bit set of the first 4096 numbers; returns how many */
static size_t list_fds(unsigned char set[4096]) {
  memset(set, 0, 4096);
  DIR *d = opendir("/proc/self/fd");
  if (!d) FAIL("opendir /proc/self/fd: %s", strerror(errno));
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd == dirfd(d) || fd >= 4096) continue;
    set[fd] = 1;
    n++;
  }
  closedir(d);
  return n;
}

/* spill's descriptors: none before the first spilled allocation (EXPECT_FDS="0,1,2" checks the exact set at
   start), then only numbers >= the high mark (1000, or 64 under a lower RLIMIT_NOFILE), close-on-exec, and none
   again once the last spilled block is freed */
static int mode_fds(void) {
  static unsigned char a[4096], b[4096];
  list_fds(a);
  const char *expect = getenv("EXPECT_FDS");
  if (expect) {
    unsigned char want[4096] = {0};
    for (const char *t = expect; *t;) {
      want[atoi(t) & 4095] = 1;
      t += strcspn(t, ",");
      t += *t == ',';
    }
    for (int fd = 0; fd < 4096; fd++)
      if (a[fd] != want[fd]) FAIL("descriptor %d %s at start (expected %s)", fd, a[fd] ? "open" : "missing", expect);
  }
  struct rlimit rl;
  long mark = 1000;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur - 64 < mark)
    mark = (long)rl.rlim_cur - 64;
  /* with a threshold set, the constructor grew the descriptor table past the mark while the process had one
     thread, so the first spilled block pays no RCU grace period (expand_fdtable) for its high descriptor */
  long fdsize = status_field("FDSize:");
  if (getenv("MEMSPACE_SPILL_THRESHOLD") && fdsize >= 0 && fdsize <= mark)
    FAIL("descriptor table of %ld entries at start: not grown past the mark %ld", fdsize, mark);
  /* a forked child's table starts from its highest open descriptor: the fork handler grows it again */
  pid_t child = fork();
  if (child == 0) _exit(getenv("MEMSPACE_SPILL_THRESHOLD") && fdsize >= 0 && status_field("FDSize:") <= mark ? 1 : 0);
  int st = 0;
  if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    FAIL("a forked child's descriptor table was not grown past the mark %ld", mark);
  void *small = malloc(1000);
  free(small);
  list_fds(b);
  if (memcmp(a, b, sizeof a)) FAIL("descriptors changed before anything was spilled");
  size_t n = 8 << 20;
  unsigned char *p = s_alloc(n);
  if (!p || !ms_spill_is(p)) FAIL("8 MiB not spilled: %s", strerror(errno));
  memset(p, 7, n);
  list_fds(b);
  int added = 0;
  for (int fd = 0; fd < 4096; fd++) {
    if (!b[fd] || a[fd]) continue;
    if (fd < mark) FAIL("spill took descriptor %d, below the high mark %ld", fd, mark);
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0 || !(fl & FD_CLOEXEC)) FAIL("spill descriptor %d is not close-on-exec", fd);
    added++;
  }
  if (!added) FAIL("no spill descriptor found after spilling");
  s_free(p);
  list_fds(b); /* the last spilled block is gone: so is the file */
  if (memcmp(a, b, sizeof a)) FAIL("a spill descriptor stayed open after the last spilled block was freed");
  printf("ok fds: none before spilling, %d after, all >= %ld and close-on-exec, none after the last free\n", added,
         mark);
  return 0;
}

static int mode_realloc(void) {
  size_t sizes[] = {3 << 20, 5 << 20, 9 << 20, 2 << 20, 40 << 20, 100 << 20, 7 << 20, 300 << 20, 1 << 20};
  size_t cur = sizes[0];
  unsigned char *p = s_alloc(cur);
  if (!p) FAIL("alloc: %s", strerror(errno));
  fill(p, cur, 1);
  for (size_t s = 1; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s], keep = n < cur ? n : cur;
    unsigned char *q = s_realloc(p, n);
    if (!q) FAIL("realloc to %zu: %s", n, strerror(errno));
    if (!ms_spill_is(q)) FAIL("realloc to %zu left spill", n);
    if (!check(q, keep, 1)) FAIL("contents lost in realloc %zu -> %zu", cur, n);
    for (size_t i = keep; i < n; i += 4096) if (!use_malloc && q[i] != 0) FAIL("grown part not zero");
    fill(q, n, 1);
    p = q;
    cur = n;
  }
  if (use_malloc) { /* across the threshold (1 MiB in the tests) both ways */
    unsigned char *q = realloc(p, 256 << 10);
    if (!q || ms_spill_is(q) || !check(q, 256 << 10, 1)) FAIL("realloc below the threshold");
    p = realloc(q, 8 << 20);
    if (!p || !ms_spill_is(p) || !check(p, 256 << 10, 1)) FAIL("realloc above the threshold");
  }
  s_free(p);
  printf("ok realloc: contents kept up and down\n");
  return 0;
}

/* malloc with a 4 KiB threshold: a small block realloc'd up by small steps under the threshold stays in RAM
   (realloc's headroom for blocks growing by small steps must not take a request over the threshold), and one
   realloc'd to the threshold spills */
static int mode_smallgrow(void) {
  unsigned char *p = malloc(3000);
  if (!p) FAIL("malloc");
  memset(p, 5, 3000);
  for (size_t n = 3100; n < 4096; n += 100) {
    unsigned char *q = realloc(p, n);
    if (!q) FAIL("realloc to %zu: %s", n, strerror(errno));
    if (ms_spill_is(q)) FAIL("realloc to %zu (under the threshold) spilled", n);
    if (q[0] != 5 || q[2999] != 5) FAIL("contents lost at %zu", n);
    p = q;
  }
  unsigned char *q = realloc(p, 4096);
  if (!q || !ms_spill_is(q) || q[0] != 5) FAIL("realloc to the threshold did not spill");
  free(q);
  printf("ok smallgrow: under the threshold in RAM, at it spilled\n");
  return 0;
}

/* under RLIMIT_AS of 4 GB (set by the caller; malloc with a 1 MiB threshold): blocks spill (the reservation fits
   in a quarter of the limit), a block beyond the largest class stays in RAM, and a spilled block grown past it
   moves to RAM with its contents */
static int mode_aslimit(void) {
  unsigned char *p = malloc(4 << 20), *big = malloc(64 << 20);
  if (!p || !big) FAIL("malloc under ulimit -v 4 GB: %s", strerror(errno));
  fill(p, 4 << 20, 3); /* (written before ms_spill_is reads through the pointer: GCC's -Wmaybe-uninitialized) */
  fill(big, 64 << 20, 4);
  if (!ms_spill_is(p)) FAIL("a 4 MiB block under ulimit -v 4 GB was not spilled");
  if (ms_spill_is(big)) FAIL("a 64 MiB block beyond the reduced classes was spilled");
  unsigned char *q = realloc(p, 100 << 20);
  if (!q || ms_spill_is(q) || !check(q, 4 << 20, 3)) FAIL("realloc past the largest class");
  if (!check(big, 64 << 20, 4)) FAIL("the RAM block's contents");
  free(q);
  free(big);
  printf("ok aslimit: spill under ulimit -v, larger blocks in RAM\n");
  return 0;
}

/* every value of nb blocks of per words is i * per + j, plus 1 in the first nplus blocks */
static void verify(uint64_t **b, size_t nb, size_t per, size_t nplus) {
  for (size_t i = 0; i < nb; i++)
    for (size_t j = 0; j < per; j++) if (b[i][j] != i * per + j + (i < nplus)) FAIL("value %zu/%zu wrong", i, j);
}
static void free_all(uint64_t **b, size_t nb) {
  for (size_t i = 0; i < nb; i++) s_free(b[i]);
  free(b);
}

static int mode_big(size_t mib) { /* holds mib MiB in 64 MiB blocks and verifies every value */
  size_t nb = (mib + 63) / 64, per = (64 << 20) / sizeof(uint64_t);
  uint64_t **b = calloc(nb, sizeof *b);
  for (size_t i = 0; i < nb; i++) {
    b[i] = s_alloc(64 << 20);
    if (!b[i]) FAIL("block %zu: %s", i, strerror(errno));
    for (size_t j = 0; j < per; j++) b[i][j] = i * per + j;
  }
  verify(b, nb, per, 0);
  free_all(b, nb);
  printf("ok big: %zu MiB held and verified\n", nb * 64);
  return 0;
}

static void to_stdout(const char *text, void *arg) { (void)arg; fputs(text, stdout); }
/* the value of a statistics line (docs/stats.md), from ms_stats_print's text */
typedef struct { char text[16384]; size_t len; } stats_buf_t;
static void to_buf(const char *text, void *arg) {
  stats_buf_t *b = arg;
  size_t n = strlen(text);
  if (b->len + n < sizeof b->text) memcpy(b->text + b->len, text, n + 1), b->len += n;
}
static unsigned long long stat_value(const char *key) {
  static stats_buf_t b;
  b.len = 0;
  b.text[0] = 0;
  ms_stats_print(to_buf, &b, 0);
  for (const char *p = b.text; (p = strstr(p, key)) != NULL; p += strlen(key))
    if (p[-1] == ' ' && p[strlen(key)] == ' ') return strtoull(p + strlen(key), NULL, 10);
  return 0;
}
/* Waits until spill's maintenance task has run `n` more times (a condition, not a guess at its period; a minute
   at most, on a machine however loaded) */
static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}
static void wait_passes(unsigned n) {
  unsigned long long until = stat_value("spill_maint_passes") + n;
  for (double end = now_s() + 60; stat_value("spill_maint_passes") < until && now_s() < end;) pause_ms(10);
  if (stat_value("spill_maint_passes") < until) FAIL("spill's maintenance task did not run %u times in a minute", n);
}

/* write-back policy (docs/spill.md): fit_mib spilled, written twice with pauses (maintenance ticks run), then
   statistics; then more blocks up to total_mib (beyond the cgroup's memory), every value verified, statistics */
static int mode_fits(size_t fit_mib, size_t total_mib) {
  size_t nb = (total_mib + 15) / 16, nfit = (fit_mib + 15) / 16, per = (16 << 20) / sizeof(uint64_t);
  uint64_t **b = calloc(nb, sizeof *b);
  if (!b) FAIL("calloc");
  for (int round = 0; round < 2; round++) {
    for (size_t i = 0; i < nfit; i++) {
      if (!b[i] && !(b[i] = s_alloc(16 << 20))) FAIL("block %zu: %s", i, strerror(errno));
      for (size_t j = 0; j < per; j++) b[i][j] = i * per + j + round;
    }
    wait_passes(3); /* write-back would have started by then, had it been going to */
  }
  printf("phase fits\n");
  ms_stats_print(to_stdout, NULL, 0);
  for (size_t i = 0; i < nb; i++) {
    if (!b[i] && !(b[i] = s_alloc(16 << 20))) FAIL("block %zu: %s", i, strerror(errno));
    for (size_t j = 0; j < per; j++) b[i][j] = i * per + j + (i < nfit);
  }
  verify(b, nb, per, nfit);
  printf("phase beyond\n");
  ms_stats_print(to_stdout, NULL, 0);
  free_all(b, nb);
  printf("ok fits: %zu MiB, then %zu MiB held and verified\n", nfit * 16, nb * 16);
  return 0;
}

/* scheduling policy of the maintenance thread (/proc/self/task/TID/stat field 41), -1 when there is none */
static int maint_policy(void) {
  DIR *d = opendir("/proc/self/task");
  int policy = -1;
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *end = strrchr(buf, ')');
    if (!strstr(buf, "(memspace-maint)") || !end) continue;
    int field = 3;
    for (char *t = strtok(end + 2, " "); t; t = strtok(NULL, " "), field++)
      if (field == 41) policy = atoi(t);
  }
  if (d) closedir(d);
  return policy;
}

/* fork, then write-back in the child: the child rewrites a block inherited from the parent (private copies of
   the parent's file pages, below the floor of their size class), then spills mib MiB of its own beyond the cgroup's memory (write-back passes run in the
   child) and checks that its private copies survived; the parent's block keeps the parent's values */
static int mode_forkbeyond(size_t mib) {
  size_t n = 16 << 20, /* the size of the child's blocks: one size class, one file, the floor inside it */ nb = (mib + 15) / 16, per = (16 << 20) / sizeof(uint64_t);
  unsigned char *a = s_alloc(n);
  if (!a) FAIL("alloc: %s", strerror(errno));
  fill(a, n, 1);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) FAIL("fork: %s", strerror(errno));
  if (pid == 0) {
    if (!check(a, n, 1)) FAIL("child: the parent's values");
    fill(a, n, 2);
    uint64_t **b = calloc(nb, sizeof *b);
    if (!b) FAIL("calloc");
    for (size_t i = 0; i < nb; i++) {
      if (!(b[i] = s_alloc(16 << 20))) FAIL("child: block %zu: %s", i, strerror(errno));
      for (size_t j = 0; j < per; j++) b[i][j] = i * per + j;
    }
    verify(b, nb, per, 0); /* (the write-back passes ran during the allocations: spill_writebacks, checked by the script) */
    if (!check(a, n, 2)) FAIL("child: its own copy of the inherited block was lost");
    printf("phase child\n");
    ms_stats_print(to_stdout, NULL, 0);
    fflush(stdout);
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("child status %d", status);
  if (!check(a, n, 1)) FAIL("the child's writes reached the parent");
  s_free(a);
  printf("ok forkbeyond: the child held %zu MiB beyond memory, both views intact\n", nb * 16);
  return 0;
}

/* spills mib MiB beyond the cgroup's memory (write-back at work), then reports the maintenance thread's
   policy after each of the next 20 runs of the maintenance task: without CAP_SYS_NICE it must never be
   SCHED_IDLE (no way back), and otherwise it runs SCHED_BATCH (its wake-ups never preempt an interactive
   process) */
/* -1: the thread is not there (yet): it names itself once its policy is set */
static void tally_policy(int *policy, int *idle_seen, int *other_seen) {
  int p = maint_policy();
  if (p == -1) return;
  if ((*policy = p) == SCHED_IDLE) ++*idle_seen;
  else if (*policy != SCHED_BATCH) ++*other_seen;
}
static int mode_maintpolicy(size_t mib) {
  size_t nb = (mib + 15) / 16, per = (16 << 20) / sizeof(uint64_t);
  uint64_t **b = calloc(nb, sizeof *b);
  if (!b) FAIL("calloc");
  int idle_seen = 0, other_seen = 0, policy = -1;
  for (size_t i = 0; i < nb; i++) {
    if (!(b[i] = s_alloc(16 << 20))) FAIL("block %zu: %s", i, strerror(errno));
    for (size_t j = 0; j < per; j++) b[i][j] = i * per + j;
    tally_policy(&policy, &idle_seen, &other_seen);
  }
  for (int k = 0; k < 20; k++) {
    wait_passes(1);
    tally_policy(&policy, &idle_seen, &other_seen);
  }
  verify(b, nb, per, 0);
  free_all(b, nb);
  printf("maint_policy=%d idle_seen=%d other_seen=%d\nok maintpolicy: %zu MiB held and verified\n", policy, idle_seen, other_seen, nb * 16);
  return 0;
}

/* MEMSPACE_SPILL_THRESHOLD=auto, preloaded (the plain malloc family), in a cgroup of limit_mib MiB. Allocates
   `count` 1 MiB blocks, each written: they stay in RAM while the cgroup's counted memory stays under 3/4 of the
   limit, then every later one is spilled (no flapping while they are held); all are verified. Then everything is
   freed and the heap's cache given back (malloc_trim): the next blocks come back to RAM (the free of a spilled
   block makes the next large block take a fresh sample). Prints where spilling began. */
static size_t auto_fill(unsigned char **b, size_t count, size_t *spilled, size_t *flaps) {
  size_t first = SIZE_MAX;
  *spilled = *flaps = 0;
  for (size_t i = 0; i < count; i++) {
    if (!(b[i] = malloc(1 << 20))) FAIL("block %zu: %s", i, strerror(errno));
    fill(b[i], 1 << 20, (unsigned)i);
    bool sp = ms_spill_is(b[i]);
    if (sp && first == SIZE_MAX) first = i;
    if (!sp && first != SIZE_MAX) ++*flaps;
    *spilled += sp;
  }
  for (size_t i = 0; i < count; i++)
    if (!check(b[i], 1 << 20, (unsigned)i)) FAIL("block %zu lost its values", i);
  return first;
}
static int mode_auto(size_t limit_mib, size_t count) {
  unsigned char **b = calloc(count, sizeof *b);
  if (!b) FAIL("calloc");
  size_t spilled, flaps, first = auto_fill(b, count, &spilled, &flaps);
  printf("auto: first spilled block %zu, %zu of %zu spilled, %zu back in RAM while held\n", first, spilled, count, flaps);
  if (first == SIZE_MAX || first < limit_mib / 4 || first > limit_mib * 3 / 4)
    FAIL("spilling began at block %zu: expected between 1/4 and 3/4 of the %zu MiB limit", first, limit_mib);
  if (flaps) FAIL("%zu blocks went back to RAM while the memory was still held", flaps);
  printf("phase spilling\n");
  ms_stats_print(to_stdout, NULL, 0);
  for (size_t i = 0; i < count; i++) free(b[i]);
  malloc_trim(0);
  size_t again = limit_mib / 8;
  first = auto_fill(b, again, &spilled, &flaps);
  printf("auto: after the frees, %zu of %zu blocks spilled\n", spilled, again);
  if (spilled) FAIL("after everything was freed, %zu of %zu new blocks were spilled (RAM expected)", spilled, again);
  printf("phase back\n");
  ms_stats_print(to_stdout, NULL, 0);
  /* realloc counts its growth: a little stays in RAM, growing past the budget moves the block to spill */
  unsigned char *g = realloc(b[0], 2 << 20);
  if (!g || ms_spill_is(g)) FAIL("a block grown by 1 MiB with room to spare left RAM (%p)", (void *)g);
  b[0] = g;
  if (!(g = realloc(b[0], limit_mib << 20))) FAIL("realloc to %zu MiB: %s", limit_mib, strerror(errno));
  if (!ms_spill_is(g)) FAIL("a block grown past the budget stayed in RAM");
  if (!check(g, 1 << 20, 0)) FAIL("the block moved to spill lost its values");
  b[0] = g;
  printf("auto: realloc: +1 MiB in RAM, to %zu MiB in spill\n", limit_mib);
  for (size_t i = 0; i < again; i++) free(b[i]);
  free(b);
  printf("ok auto: both directions\n");
  return 0;
}

/* auto in a forked child: the parent holds half the limit in RAM, the child's own blocks then spill once the
   cgroup (parent and child together) passes 3/4 of it: after about a quarter of the limit, not three quarters */
static int mode_autofork(size_t limit_mib) {
  size_t held = limit_mib / 2, count = limit_mib;
  unsigned char **p = calloc(held, sizeof *p), **b = calloc(count, sizeof *b);
  if (!p || !b) FAIL("calloc");
  size_t spilled, flaps;
  if (auto_fill(p, held, &spilled, &flaps) != SIZE_MAX) FAIL("the parent's %zu MiB should fit in RAM", held);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) FAIL("fork: %s", strerror(errno));
  if (pid == 0) {
    size_t first = auto_fill(b, count, &spilled, &flaps);
    printf("autofork: the child's first spilled block %zu, %zu of %zu spilled\n", first, spilled, count);
    if (first == SIZE_MAX || first > limit_mib * 3 / 8)
      FAIL("the child spilled from block %zu: the parent's %zu MiB were not counted", first, held);
    if (flaps) FAIL("%zu blocks went back to RAM while held", flaps);
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("child status %d", status);
  for (size_t i = 0; i < held; i++)
    if (!check(p[i], 1 << 20, (unsigned)i)) FAIL("parent block %zu changed", i);
  printf("ok autofork\n");
  return 0;
}

/* the dirty and write-back bytes of this process's memory cgroup (v1 total_dirty + total_writeback, v2
   file_dirty + file_writeback), from /proc/self/cgroup; SIZE_MAX when unreadable */
static size_t cgroup_dirty(void) {
  static char path[600];
  static const char *k1 = "total_dirty ", *k2 = "total_writeback ";
  if (!path[0]) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
      char *nl = strchr(line, '\n'), *c = strstr(line, ":memory:");
      if (nl) *nl = 0;
      if (c) snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.stat", c + 8);
      else if (!path[0] && !strncmp(line, "0::", 3)) {
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.stat", line + 3);
        k1 = "file_dirty ", k2 = "file_writeback ";
      }
    }
    if (f) fclose(f);
  }
  FILE *f = fopen(path, "r");
  char line[256];
  size_t total = 0, found = 0;
  while (f && fgets(line, sizeof line, f)) {
    if (!strncmp(line, k1, strlen(k1))) total += strtoull(line + strlen(k1), NULL, 10), found++;
    if (!strncmp(line, k2, strlen(k2))) total += strtoull(line + strlen(k2), NULL, 10), found++;
  }
  if (f) fclose(f);
  return found == 2 ? total : SIZE_MAX;
}

/* auto beyond memory with many blocks of block_mib MiB (1: a Python dict of bytearrays; up to budget/8), each
   filled right after its malloc: after every spilled malloc past the first 16 MiB, the cgroup's dirty +
   write-back bytes stay under the write-behind window (budget/16, at least 4 MiB) plus 4 MiB: each block is written back at the next spilled malloc, and the
   program waits for the oldest once the window is full. Without it they would grow to the dirty cap and past it (the
   maintenance task's passes reach new blocks too late), and a cgroup whose page cache is all dirty is OOM-killed
   under v1. All blocks are verified; the statistics follow "phase beyond". */
static int mode_automid(size_t limit_mib, size_t count, size_t block_mib) {
  unsigned char **b = calloc(count, sizeof *b);
  if (!b) FAIL("calloc");
  size_t window = (limit_mib / 16 > 4 ? limit_mib / 16 : 4) << 20, bound = window + (4 << 20), worst = 0, spilled = 0;
  size_t bs = block_mib << 20;
  for (size_t i = 0; i < count; i++) {
    if (!(b[i] = malloc(bs))) FAIL("block %zu: %s", i, strerror(errno));
    if (ms_spill_is(b[i]) && ++spilled > 16 / block_mib) {
      size_t d = cgroup_dirty();
      if (d == SIZE_MAX) FAIL("cannot read the cgroup's memory.stat");
      if (d > worst) worst = d;
    }
    fill(b[i], bs, (unsigned)i);
  }
  for (size_t i = 0; i < count; i++)
    if (!check(b[i], bs, (unsigned)i)) FAIL("block %zu lost its values", i);
  printf("automid: %zu of %zu blocks of %zu MiB spilled; dirty + write-back after a spilled malloc at most %zu KiB (bound %zu KiB)\n",
         spilled, count, block_mib, worst >> 10, bound >> 10);
  if (spilled < count / 2) FAIL("only %zu of %zu blocks spilled", spilled, count);
  if (worst > bound) FAIL("the cgroup's dirty + write-back bytes reached %zu KiB", worst >> 10);
  printf("phase beyond\n");
  ms_stats_print(to_stdout, NULL, 0);
  for (size_t i = 0; i < count; i++) free(b[i]);
  free(b);
  printf("ok automid\n");
  return 0;
}

int main(int argc, char **argv) {
  use_malloc = getenv("USE_MALLOC") && atoi(getenv("USE_MALLOC"));
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 2) { fprintf(stderr, "usage: spill_helper dir|fsize|hold|full|fork|many N|realloc|fds\n"); return 2; }
  const char *m = argv[1];
  if (!strcmp(m, "dir")) return mode_dir();
  if (!strcmp(m, "fsize")) return mode_fsize();
  if (!strcmp(m, "fsizelow")) return mode_fsizelow();
  if (!strcmp(m, "closeall")) return mode_closeall();
  if (!strcmp(m, "fdbudget")) return mode_fdbudget();
  if (!strcmp(m, "hold")) return mode_hold();
  if (!strcmp(m, "full")) return mode_full();
  if (!strcmp(m, "fullholes")) return mode_fullholes(argc > 2 ? argv[2] : NULL, argc > 3 && !strcmp(argv[3], "huge"));
  if (!strcmp(m, "fork")) return mode_fork();
  if (!strcmp(m, "forkhole")) return mode_forkhole();
  if (!strcmp(m, "forkro")) return mode_forkro(false);
  if (!strcmp(m, "forkro_sandbox")) return mode_forkro(true);
  if (!strcmp(m, "forksnap")) return mode_forkfall(false);
  if (!strcmp(m, "forkseal")) return mode_forkfall(true);
  if (!strcmp(m, "forklost")) return mode_forklost();
  if (!strcmp(m, "growmargin") && argc > 2) return mode_growmargin(argv[2]);
  if (!strcmp(m, "forkbig") && argc > 2) return mode_forkbig(strtoul(argv[2], NULL, 10));
  if (!strcmp(m, "stalefree") && argc > 2) return mode_stalefree(argv[2]);
  if (!strcmp(m, "movefull") && argc > 2) return mode_movefull(argv[2]);
  if (!strcmp(m, "forktail") && argc > 2) return mode_forktail(argv[2]);
  if (!strcmp(m, "many")) return mode_many(argc > 2 ? strtoul(argv[2], NULL, 10) : 100000);
  if (!strcmp(m, "realloc")) return mode_realloc();
  if (!strcmp(m, "smallgrow")) return mode_smallgrow();
  if (!strcmp(m, "fds")) return mode_fds();
  if (!strcmp(m, "aslimit")) return mode_aslimit();
  if (!strcmp(m, "big")) return mode_big(argc > 2 ? strtoul(argv[2], NULL, 10) : 256);
  if (!strcmp(m, "forkbeyond")) return mode_forkbeyond(argc > 2 ? strtoul(argv[2], NULL, 10) : 384);
  if (!strcmp(m, "maintpolicy")) return mode_maintpolicy(argc > 2 ? strtoul(argv[2], NULL, 10) : 192);
  if (!strcmp(m, "auto") && argc > 3) return mode_auto(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10));
  if (!strcmp(m, "automid") && argc > 4)
    return mode_automid(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10));
  if (!strcmp(m, "autofork") && argc > 2) return mode_autofork(strtoul(argv[2], NULL, 10));
  if (!strcmp(m, "fits") && argc > 3) return mode_fits(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10));
  fprintf(stderr, "unknown mode %s\n", m);
  return 2;
}
