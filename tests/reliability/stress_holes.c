/* stress_holes SECONDS: two threads grow 1 MiB blocks by realloc to 3 and 6 MiB (the allocator moves them to bigger
   slots, the second time a block of two mappings)
   while another maps and unmaps small anonymous ranges with mmap(NULL) itself (as glibc does for a thread's
   stack) and checks that what it wrote there stays. An allocator that leaves a moment's hole in its reserved
   address space (a move with mremap, reserved again just after) lets such a mapping land in the hole and then
   replaces it: the check sees zeros, or the thread dies on an inaccessible page. Plain malloc: run it under
   `memspace run` or any other allocator. */
#include "stress_common.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

static atomic_int stop;
static atomic_long moves, maps;

static void *grower(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    char *p = malloc(1 << 20);
    if (!p) DIE("malloc(1 MiB) failed");
    memset(p, 7, 1 << 20);
    char *q = realloc(p, 3 << 20);
    if (!q) DIE("realloc(3 MiB) failed");
    if (q[0] != 7 || q[(1 << 20) - 1] != 7) DIE("realloc lost the block's bytes");
    q[(3 << 20) - 1] = 8;
    char *r = realloc(q, 6 << 20); /* a block moved before is several mappings: moved in pieces */
    if (!r) DIE("realloc(6 MiB) failed");
    if (r[0] != 7 || r[(1 << 20) - 1] != 7 || r[(3 << 20) - 1] != 8) DIE("realloc lost the block's bytes");
    free(r);
    atomic_fetch_add(&moves, 1);
  }
  return NULL;
}

static void *mapper(void *arg) {
  (void)arg;
  const size_t n = 256 << 10;
  while (!atomic_load(&stop)) {
    volatile unsigned char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) DIE("mmap failed");
    for (size_t i = 0; i < n; i += 4096) m[i] = 0x5a;
    for (int round = 0; round < 3; round++, sched_yield()) /* let the growers run while it is held */
      for (size_t i = 0; i < n; i += 4096)
        if (m[i] != 0x5a) DIE("a mapping of our own at %p was replaced (byte %zu reads %d)", (void *)m, i, m[i]);
    munmap((void *)m, n);
    atomic_fetch_add(&maps, 1);
  }
  return NULL;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3;
  pthread_t t[3];
  pthread_create(&t[0], NULL, grower, NULL);
  pthread_create(&t[1], NULL, grower, NULL);
  pthread_create(&t[2], NULL, mapper, NULL);
  struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
  atomic_store(&stop, 1);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  printf("stress_holes: %ld moves, %ld mappings checked\n", atomic_load(&moves), atomic_load(&maps));
  return 0;
}
