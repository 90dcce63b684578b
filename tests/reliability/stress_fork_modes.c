/* stress_fork_modes MODE FORKS SECONDS: fork storms in one allocation mode (heap, secure, spill, space).
   THREADS workers allocate, reallocate and free small and large blocks without pause, one more thread calls
   ms_space_* (spaces created, expanded, checked, shrunk and destroyed), ms_pages_* and ms_dma_*, and another
   one ms_space_info, malloc and free on a shared thread-safe space, while the
   main thread forks up to FORKS times (stopping early after SECONDS). Every child allocates, checks and frees in
   each part (malloc from two threads, the inherited blocks, the shared space, a new space, pages, a DMA buffer)
   and exits 0. The parent waits for each child with a deadline: a child still running then holds a lock copied
   held across fork (a deadlock), is killed and fails the test. The verdict counts failed children only: how
   many forks fit in SECONDS changes the coverage, never the result.
   The mode's environment (MEMSPACE_SECURE=1; MEMSPACE_SPILL_THRESHOLD=64K with a fresh spill directory;
   MEMSPACE_SPACE_INITIAL=256M MEMSPACE_SPACE_EXPAND=64M) is set here and the program executes itself again, so
   the library reads it at start. Run under `memspace run` (malloc served by memspace). */
#include "stress_common.h"
#include <errno.h>
#include <memspace.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define THREADS 3
#define CHILD_DEADLINE_S 60 /* far beyond any child's work on a loaded machine: only a deadlock reaches it */

static atomic_int stop;
static atomic_long ops, api_ops;
static ms_space_t *shared; /* thread-safe; the api thread allocates and frees in it without pause */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* a block of `n` bytes with the blk_* pattern (stress_common.h) */
static void *pattern_new(size_t n, uint64_t *s) {
  unsigned char *p = malloc(n);
  if (!p) DIE("malloc(%zu) failed", n);
  return blk_fill(p, n, s);
}
/* realloc to n bytes: the block checked first, patterned afresh after */
static void *pattern_realloc(void *p, size_t n, uint64_t *s) {
  blk_check(p);
  unsigned char *q = realloc(p, n);
  if (!q) DIE("realloc(%zu) failed", n);
  return blk_fill(q, n, s);
}
/* a thread-safe space of `size` bytes growing by `expand` */
static ms_space_t *space_new(size_t size, size_t expand, const char *name) {
  ms_space_config_t c;
  memset(&c, 0, sizeof c);
  c.initial_size = size;
  c.expand_size = expand;
  c.flags = MS_SPACE_THREAD_SAFE;
  c.numa_node = -1;
  c.name = name;
  return ms_space_create(&c);
}
/* small (16-272), medium (up to 8 KiB), large (64-200 KB: spilled with a 64K threshold) */
static size_t mixed_size(uint64_t *s) {
  uint64_t r = rnd_next(s);
  switch (r & 7) {
  case 0: return 65536 + (size_t)(r >> 8) % 130000;
  case 1: return 16 + (size_t)(r >> 8) % 8192;
  default: return 16 + (size_t)(r >> 8) % 256;
  }
}

static void churn(uint64_t *s, void **held, int n, long rounds, atomic_int *until) {
  for (long k = 0; rounds < 0 || k < rounds; k++) {
    if (until && atomic_load(until)) break;
    int i = (int)(rnd_next(s) % (uint64_t)n);
    if (held[i] && (rnd_next(s) & 3) == 0) held[i] = pattern_realloc(held[i], mixed_size(s), s);
    else {
      if (held[i]) blk_free(held[i]);
      held[i] = pattern_new(mixed_size(s), s);
    }
    if (!until) continue;
    atomic_fetch_add(&ops, 1);
  }
}

static void *worker(void *arg) {
  uint64_t s = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  void *held[64] = {0};
  churn(&s, held, 64, -1, &stop);
  for (int i = 0; i < 64; i++) if (held[i]) blk_free(held[i]);
  return NULL;
}

/* one round of the public API outside malloc: spaces, pages, DMA; `who` names the caller in messages */
static void api_round(uint64_t *s, const char *who) {
  ms_space_info_t info;
  void *b[8];
  for (int i = 0; i < 8; i++) {
    b[i] = ms_space_malloc(shared, 16 + (size_t)(rnd_next(s) % 4000));
    if (!b[i]) DIE("%s: ms_space_malloc in the shared space failed (errno %d)", who, errno);
    memset(b[i], 0x5a, 16);
  }
  if (ms_space_info(shared, &info) != 0) DIE("%s: ms_space_info(shared) failed (errno %d)", who, errno);
  for (int i = 0; i < 8; i++) ms_space_free(shared, b[i]);

  ms_space_t *sp = space_new(1 << 20, 1 << 20, "fork-storm");
  if (!sp) DIE("%s: ms_space_create failed (errno %d)", who, errno);
  void *p = ms_space_malloc(sp, 1000);
  if (!p) DIE("%s: ms_space_malloc failed", who);
  if (ms_space_expand(sp, 1 << 20) != 0) DIE("%s: ms_space_expand failed (errno %d)", who, errno);
  if (ms_space_check(sp) != 0 || ms_space_info(sp, &info) != 0) DIE("%s: new space inconsistent", who);
  ms_space_free(sp, p);
  ms_space_shrink(sp);
  ms_space_destroy(sp);

  ms_pages_t pg;
  if (ms_pages_reserve(1 << 16, 0, MS_PAGES_COMMIT, -1, &pg) != 0) DIE("%s: ms_pages_reserve failed", who);
  memset(pg.addr, 1, 4096);
  if (ms_pages_release(pg.addr, pg.size) != 0) DIE("%s: ms_pages_release failed", who);

  ms_dma_buffer_t *d = ms_dma_alloc(4096, NULL); /* NULL when mlock is refused (RLIMIT_MEMLOCK): still a path */
  if (d) {
    size_t count;
    memset(ms_dma_addr(d), 2, 4096);
    (void)ms_dma_segments(d, &count); /* NULL without /proc/self/pagemap: still the buffer's lock */
    ms_dma_free(d);
  }
}

static void *api_thread(void *arg) {
  uint64_t s = (uintptr_t)arg;
  while (!atomic_load(&stop)) {
    api_round(&s, "parent api thread");
    atomic_fetch_add(&api_ops, 1);
  }
  return NULL;
}

/* the shared space's info and blocks without pause: its lock and the space registry's lock are often held */
static void *info_thread(void *arg) {
  (void)arg;
  ms_space_info_t info;
  while (!atomic_load(&stop)) {
    if (ms_space_info(shared, &info) != 0) DIE("parent info thread: ms_space_info(shared) failed (errno %d)", errno);
    void *p = ms_space_malloc(shared, 64);
    if (!p) DIE("parent info thread: ms_space_malloc in the shared space failed (errno %d)", errno);
    ms_space_free(shared, p);
  }
  return NULL;
}

static void *child_thread(void *arg) {
  uint64_t s = (uintptr_t)arg;
  void *held[32] = {0};
  churn(&s, held, 32, 100, NULL);
  for (int i = 0; i < 32; i++) if (held[i]) blk_free(held[i]);
  return NULL;
}

static void child(int n, void **inherited, int ninherited) {
  uint64_t s = (uint64_t)n * 7919 + 3;
  for (int i = 0; i < ninherited; i++) blk_check(inherited[i]); /* the main thread's blocks, from before fork */
  void *held[64] = {0};
  churn(&s, held, 64, 100, NULL);
  pthread_t t;
  if (pthread_create(&t, NULL, child_thread, (void *)(uintptr_t)(n + 11)) != 0) DIE("child: pthread_create");
  api_round(&s, "child");
  pthread_join(t, NULL);
  if (ms_space_check(shared) != 0) DIE("child: the inherited shared space is inconsistent");
  for (int i = 0; i < 64; i++) if (held[i]) blk_free(held[i]);
  for (int i = 0; i < ninherited; i++) blk_free(inherited[i]);
  exit(0);
}

/* waits for `pid` until the deadline; a child still running then is killed: false */
static bool wait_child(pid_t pid, int f) {
  double deadline = now_s() + CHILD_DEADLINE_S;
  for (;;) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return true;
      fprintf(stderr, "child %d failed: %s %d\n", f, WIFSIGNALED(st) ? "signal" : "exit",
              WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
      return false;
    }
    if (r < 0 && errno != EINTR) { perror("waitpid"); return false; }
    if (now_s() > deadline) {
      fprintf(stderr, "child %d still running after %d s (a lock held across fork): killed\n", f, CHILD_DEADLINE_S);
      kill(pid, SIGKILL);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
      return false;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

static char spill_dir[256];

/* sets the mode's environment and executes this program again; returns only on failure */
static int reexec(const char *mode, char **argv) {
  if (strcmp(mode, "heap") == 0) {
  } else if (strcmp(mode, "secure") == 0) {
    setenv("MEMSPACE_SECURE", "1", 1);
  } else if (strcmp(mode, "spill") == 0) {
    const char *tmp = getenv("TMPDIR");
    snprintf(spill_dir, sizeof spill_dir, "%s/memspace-fork-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(spill_dir)) { perror("mkdtemp"); return 1; }
    setenv("MEMSPACE_SPILL_THRESHOLD", "64K", 1);
    setenv("MEMSPACE_SPILL_DIR", spill_dir, 1);
  } else if (strcmp(mode, "space") == 0) {
    setenv("MEMSPACE_SPACE_INITIAL", "256M", 1);
    setenv("MEMSPACE_SPACE_EXPAND", "64M", 1);
  } else {
    fprintf(stderr, "unknown mode %s (heap, secure, spill, space)\n", mode);
    return 2;
  }
  setenv("STRESS_FORK_MODES_SET", mode, 1);
  pid_t pid = fork(); /* the run happens in a child, so the spill directory is removed after it */
  if (pid == 0) {
    execv("/proc/self/exe", argv);
    perror("execv");
    _exit(1);
  }
  int st = 1;
  while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  if (spill_dir[0]) rmdir(spill_dir); /* spill's files are unlinked as they are made */
  return pid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: stress_fork_modes MODE FORKS SECONDS\n"); return 2; }
  const char *mode = argv[1];
  if (!getenv("STRESS_FORK_MODES_SET")) return reexec(mode, argv);
  int forks = atoi(argv[2]);
  double seconds = atof(argv[3]);

  shared = space_new(4 << 20, 0, "fork-shared");
  if (!shared) DIE("ms_space_create(shared) failed (errno %d)", errno);

  uint64_t s = 12345;
  void *inherited[16];
  for (int i = 0; i < 16; i++) inherited[i] = pattern_new(mixed_size(&s), &s);

  pthread_t th[THREADS + 2];
  for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1));
  pthread_create(&th[THREADS], NULL, api_thread, (void *)(uintptr_t)777);
  pthread_create(&th[THREADS + 1], NULL, info_thread, NULL);
  int bad = 0, done = 0;
  double end = now_s() + seconds;
  for (int f = 0; f < forks && now_s() < end; f++) {
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); bad++; break; }
    if (pid == 0) child(f, inherited, 16);
    done++;
    if (!wait_child(pid, f) && ++bad > 3) break;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i <= THREADS + 1; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 16; i++) blk_free(inherited[i]);
  if (ms_space_check(shared) != 0) { fprintf(stderr, "the shared space is inconsistent\n"); bad++; }
  ms_space_destroy(shared);
  printf("stress_fork_modes %s: %d forks with %d allocating threads (%ld operations, %ld api rounds): %d failed\n",
         mode, done, THREADS, atomic_load(&ops), atomic_load(&api_ops), bad);
  return bad || done == 0 ? 1 : 0;
}
