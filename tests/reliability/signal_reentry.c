/* signal_reentry: a signal handler calling malloc and free while the thread it interrupted is inside the allocator
   (issue #25). Neither call is async-signal-safe: glibc corrupts its heap there and aborts on an assertion. memspace
   must never be weaker: the handler's call either works (harmless) or is reported, one memspace message and
   SIGABRT; never a hang (a thread waiting for a lock it holds itself).
   Deterministic: this program defines mmap, munmap, mprotect, madvise and mremap (exported, -rdynamic), so the
   preloaded library's calls of them come here;
   while main allocates blocks of 1-8 MiB and small ones (memspace maps memory for some, holding a lock), each such
   call raises SIGUSR1, whose handler allocates and frees a block of 1 MiB and a small one. glibc's
   malloc calls its internal mmap, never these: under glibc the handler never runs (harmless).
   Exit 0: harmless (the handler ran or not); SIGABRT: detected (the test script checks the message); a hang ends
   with SIGALRM after 60 s (a failure). Prints how often the handler ran. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t armed, in_handler, fired, handled;

static long fire(long r) {
  if (armed && !in_handler) {
    fired++;
    raise(SIGUSR1); /* delivered before raise returns: inside the allocator's call */
  }
  return r;
}
#define EXPORT __attribute__((visibility("default"))) /* the build's default is hidden */
EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  return (void *)fire(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}
EXPORT int munmap(void *addr, size_t len) { return (int)fire(syscall(SYS_munmap, addr, len)); }
EXPORT int mprotect(void *addr, size_t len, int prot) { return (int)fire(syscall(SYS_mprotect, addr, len, prot)); }
EXPORT int madvise(void *addr, size_t len, int advice) { return (int)fire(syscall(SYS_madvise, addr, len, advice)); }
EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  void *to = flags & MREMAP_FIXED ? va_arg(ap, void *) : NULL;
  va_end(ap);
  return (void *)fire(syscall(SYS_mremap, old, old_len, new_len, flags, to));
}

static void handler(int sig) {
  (void)sig;
  in_handler = 1;
  char *p = malloc((size_t)1 << 20);
  if (p) p[0] = 1;
  free(p);
  p = malloc(100);
  if (p) p[0] = 1;
  free(p);
  handled++;
  in_handler = 0;
}

int main(void) {
  alarm(60);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigaction(SIGUSR1, &sa, NULL);
  static char *keep[64];
  armed = 1;
  for (int i = 0; i < 64; i++) keep[i] = malloc((size_t)1 << 20 << (i % 4));
  for (int i = 0; i < 64; i++) free(keep[i]);
  for (int i = 0; i < 64; i++) keep[i] = malloc((size_t)(i + 1) * 100);
  armed = 0;
  for (int i = 0; i < 64; i++) free(keep[i]);
  printf("handler ran %d times of %d\n", (int)handled, (int)fired);
  return 0;
}
