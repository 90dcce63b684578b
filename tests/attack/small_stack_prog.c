/* small_stack_prog: every call of the malloc family and glibc's control calls on a thread whose stack is
   PTHREAD_STACK_MIN (16 KiB, of which glibc's descriptor and TLS take a few: about 12 KiB usable), one thread per
   call, as under glibc: small, large and huge blocks, a block past the address space, realloc across every size
   range up and down, the aligned forms, calloc, the first allocation of a thread, frees of another thread's blocks,
   mallinfo2, malloc_info, malloc_stats. A call that needs more stack than that kills the process with SIGSEGV.
   First, a signal handler on an alternate stack of 8 KiB (the classic SIGSTKSZ; the signal frame takes up to 3.5 KiB
   of it with AVX-512's state), a guard page below it, calls mallinfo2 and malloc/free, as crash handlers
   do (none of them is async-signal-safe, but glibc's run there: mallinfo2 took 5.6 KiB).
   With the argument `exit`, the last small thread calls exit(0) (the statistics at exit, MEMSPACE_SHOW_STATS, are
   then printed on it). Prints "ok" at the end. */
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

static void *remote;
static int bad;

static void fail(const char *what) {
  printf("FAIL: %s\n", what);
  bad = 1;
}

static void *call(void *arg) {
  int op = (int)(intptr_t)arg;
  void *p = NULL;
  switch (op) {
  case 0: /* the thread's first allocations: its heap is made here */
    p = malloc(16);
    if (!p) fail("malloc(16)");
    free(p);
    break;
  case 1:
    for (size_t s = 16; s <= ((size_t)300 << 20); s *= 5) {
      if (!(p = malloc(s))) fail("malloc");
      else memset(p, 1, s < 4096 ? s : 4096);
      free(p);
    }
    break;
  case 2: /* past the address space: NULL, no crash */
    p = malloc((size_t)1 << 46);
    if (p) free(p);
    p = malloc(SIZE_MAX / 2);
    if (p) fail("malloc(SIZE_MAX / 2) succeeded");
    break;
  case 3: /* realloc through every size range, up and down */
    p = malloc(10);
    for (size_t s = 10; s < ((size_t)64 << 20); s *= 3) {
      void *q = realloc(p, s);
      if (!q) { fail("realloc up"); break; }
      p = q;
    }
    for (size_t s = (size_t)64 << 20; s > 10; s /= 3) {
      void *q = realloc(p, s);
      if (!q) { fail("realloc down"); break; }
      p = q;
    }
    free(p);
    break;
  case 4:
    if (posix_memalign(&p, (size_t)1 << 21, (size_t)1 << 21)) fail("posix_memalign");
    free(p);
    if (!(p = aligned_alloc(4096, 8192))) fail("aligned_alloc");
    free(p);
    if (!(p = memalign(3000, 100))) fail("memalign");
    free(p);
    if (!(p = valloc(100))) fail("valloc");
    free(p);
    if (!(p = pvalloc(100))) fail("pvalloc");
    free(p);
    break;
  case 5:
    if (!(p = calloc(1, (size_t)1 << 28))) fail("calloc");
    free(p);
    break;
  case 6: /* another thread's block */
    free(remote);
    break;
  case 7: {
    struct mallinfo2 m = mallinfo2();
    if (m.uordblks + m.hblkhd == 0) fail("mallinfo2: nothing allocated");
    break;
  }
  case 8: {
    FILE *f = fopen("/dev/null", "w");
    if (!f || malloc_info(0, f) != 0) fail("malloc_info");
    if (f) fclose(f);
    break;
  }
  case 9:
    malloc_stats();
    break;
  case 10:
    malloc_trim(0);
    break;
  }
  return NULL;
}

static void on_signal(int sig) {
  (void)sig;
  struct mallinfo2 m = mallinfo2();
  if (m.uordblks + m.hblkhd == 0) fail("mallinfo2 in the handler: nothing allocated");
  void *p = malloc(100);
  free(p);
}

static int alt_stack_calls(void) {
  size_t guard = 65536, size = 8192;
  char *m = mmap(NULL, guard + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED || mprotect(m, guard, PROT_NONE) != 0) return 2;
  stack_t ss = {.ss_sp = m + guard, .ss_size = size}, old;
  struct sigaction sa, prev;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_ONSTACK;
  if (sigaltstack(&ss, &old) != 0 || sigaction(SIGUSR1, &sa, &prev) != 0) return 2;
  raise(SIGUSR1);
  sigaction(SIGUSR1, &prev, NULL);
  sigaltstack(&old, NULL);
  munmap(m, guard + size);
  return 0;
}

static void *exit_thread(void *arg) {
  (void)arg;
  exit(bad);
}

int main(int argc, char **argv) {
  int do_exit = argc > 1 && strcmp(argv[1], "exit") == 0;
  void *live = malloc(1000); /* (something for mallinfo2 to count) */
  if (alt_stack_calls()) return 2;
  pthread_attr_t at;
  pthread_attr_init(&at);
  if (pthread_attr_setstacksize(&at, PTHREAD_STACK_MIN)) return 2;
  for (int op = 0; op <= 10; op++) {
    remote = malloc(200);
    pthread_t t;
    if (pthread_create(&t, &at, call, (void *)(intptr_t)op)) return 2;
    pthread_join(t, NULL);
  }
  free(live);
  printf("%s\n", bad ? "failed" : "ok");
  fflush(stdout);
  if (do_exit) {
    pthread_t t;
    if (pthread_create(&t, &at, exit_thread, NULL)) return 2;
    pthread_join(t, NULL);
  }
  return bad;
}
