/* signal_space_stats: the statistics of a signal handler (a program's watchdog or profiler) that interrupts the
   library on its own thread inside a part whose statistics take a lock: a timer signal at a fixed period while the
   main thread works in a loop. The handler that lands while its thread holds such a lock must neither wait for
   itself (the library's re-entry check would abort, and in the instructions between the lock's taking and its
   holder's record the wait would never end: the alarm ends it then) nor count wrong.
   (no mode): spaces created in the program's own buffer and destroyed, mallinfo2 every 20 us in the handler,
   50,000 times: the spaces' registry lock. foreign: the same, each handler first freeing a block of the C
   library's malloc (taken before the timer starts, as a plugin's block reaches the program's free), whose check
   looks for a space owning it under the same registry lock (tried only): that look-up, nested in the interrupted
   hold, must leave the hold's mark set for the mallinfo2 after it.
   spill: the main thread calls mallinfo2 in a loop with a block of 4 MiB spilled (MEMSPACE_SPILL_THRESHOLD=1M in
   the test's environment), the handler every 3 ms: spill's resident-page count, which the handler's mallinfo2 runs
   again. direct: under an RLIMIT_AS of 4 GiB set before the first block, blocks of 300,000,000 B are mapped on their
   own (direct.c), one malloc'd and freed in a loop, mallinfo2 every 200 us: that table's lock. dma: DMA buffers of
   8 KiB (base pages) allocated and freed in a loop, and ms_dma_info, ms_dma_verify and ms_dma_phys on a kept buffer
   of 1 MiB, malloc_stats every 200 us (standard error sent to /dev/null meanwhile), whose DMA section lists the
   buffers under the lock of their registry and reads each one's segments under its own. 300 handler calls each.
   Exit 0: every handler returned; a signal: the abort (SIGABRT) or the hang (SIGALRM, at 50 s). */
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <memspace.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum { SPACES, FOREIGN_FREE, SPILL, DIRECT, DMA };
static int mode;
static volatile sig_atomic_t hits;
#define FOREIGN 60000
static void *foreign[FOREIGN]; /* blocks of the C library's malloc, freed one by each handler (foreign mode) */
static volatile sig_atomic_t foreign_n;
static ms_dma_buffer_t *kept; /* dma: the buffer the loop reads (its own lock) */
static void handler(int sig) {
  (void)sig;
  if (foreign_n > 0) free(foreign[--foreign_n]);
  if (mode == DMA) {
    malloc_stats();
  } else {
    struct mallinfo2 m = mallinfo2();
    (void)m;
  }
  hits++;
}

/* one round of the main thread's work; false: refused (the test cannot run) */
static bool work(size_t big) {
  static char buf[256 << 10] __attribute__((aligned(4096)));
  if (mode == SPILL) {
    struct mallinfo2 m = mallinfo2();
    (void)m;
  } else if (mode == DIRECT) {
    char *p = malloc(big);
    if (!p) return false;
    p[0] = 1;
    free(p);
  } else if (mode == DMA) {
    ms_dma_config_t cfg = {.page_size = 4096, .numa_node = -1};
    ms_dma_buffer_t *b = ms_dma_alloc(8192, &cfg);
    if (!b) return false;
    ms_dma_free(b);
    ms_dma_info_t info;
    size_t moved;
    uint64_t phys;
    if (ms_dma_info(kept, &info) != 0) return false;
    (void)ms_dma_verify(kept, &moved); /* (refused without the right to read physical addresses: called all the same) */
    (void)ms_dma_phys(kept, 0, &phys);
  } else {
    ms_space_t *s = ms_space_create_in(buf, sizeof buf, 0);
    if (!s) return false;
    ms_space_destroy(s);
  }
  return true;
}

int main(int argc, char **argv) {
  static const char *const names[] = {"spaces", "foreign", "spill", "direct", "dma"};
  for (int i = 1; i < 5; i++)
    if (argc > 1 && strcmp(argv[1], names[i]) == 0) mode = i;
  int err = -1;
  size_t big = mode == DIRECT ? 300000000 : (size_t)4 << 20;
  if (mode == FOREIGN_FREE) {
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *(*libc_malloc)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "malloc") : NULL;
    if (!libc_malloc || libc_malloc == malloc) { fprintf(stderr, "no C library malloc\n"); return 2; }
    for (int i = 0; i < FOREIGN; i++)
      if (!(foreign[i] = libc_malloc(16))) return 2;
    foreign_n = FOREIGN;
  } else if (mode == DIRECT) {
    struct rlimit rl = {(rlim_t)4 << 30, (rlim_t)4 << 30};
    if (setrlimit(RLIMIT_AS, &rl) != 0) { perror("setrlimit"); return 2; }
  } else if (mode == DMA) {
    ms_dma_config_t cfg = {.page_size = 4096, .numa_node = -1};
    if (!(kept = ms_dma_alloc(1 << 20, &cfg))) { perror("ms_dma_alloc"); return 2; }
    int null = open("/dev/null", O_WRONLY);
    if (null < 0 || (err = dup(2)) < 0 || dup2(null, 2) < 0) return 2;
    close(null);
  }
  char *keep = mode == SPILL || mode == DIRECT ? malloc(big) : NULL; /* (spill: the block spilled) */
  if (keep) memset(keep, 1, big);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGUSR1, &sa, NULL) != 0) return 2;
  timer_t t;
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGUSR1;
  if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0) return 2;
  long ns = mode == SPILL ? 3000000 : mode >= DIRECT ? 200000 : 20000, most = mode <= FOREIGN_FREE ? 50000 : 300;
  struct itimerspec every = {{0, ns}, {0, ns}};
  alarm(50);
  if (timer_settime(t, 0, &every, NULL) != 0) return 2;
  long n = 0;
  for (; n < 1000000 && hits < most; n++)
    if (!work(big)) { perror(names[mode]); return 2; }
  struct itimerspec off = {{0, 0}, {0, 0}};
  timer_settime(t, 0, &off, NULL);
  if (err >= 0) dup2(err, 2);
  printf("%s: %ld rounds, %s in %d handlers\n", names[mode], n, mode == DMA ? "malloc_stats" : "mallinfo2", (int)hits);
  free(keep);
  if (kept) ms_dma_free(kept);
  return 0;
}
