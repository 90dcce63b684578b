/* Option parsing and messages never allocate: this program defines its own malloc family (forwarding to
   glibc's __libc_* functions) that fails and counts while `failing` is set, then parses a bad and good
   environment and prints a warning. Built from src/core/options.c and msg.c alone (not under sanitizers). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

/* options.c hands changed options to the parts; none is linked here */
void msi_option_changed(ms_option_t o) { (void)o; }
/* msg.c writes through the OS layer (src/os/linux.c), not linked here */
ssize_t msi_os_write(int fd, const void *buf, size_t len);
ssize_t msi_os_write(int fd, const void *buf, size_t len) { return write(fd, buf, len); }
void msi_os_signal_take(int sig);
void msi_os_signal_take(int sig) { (void)sig; }
int msi_os_fd_cloexec(int fd);
int msi_os_fd_cloexec(int fd) { (void)fd; return 0; }
long msi_os_getcwd(char *buf, size_t size);
long msi_os_getcwd(char *buf, size_t size) { long n = syscall(SYS_getcwd, buf, size); return n > 0 ? n - 1 : -1; }

static volatile int failing;
static volatile int calls;

void *malloc(size_t n) {
  if (failing) { calls++; errno = ENOMEM; return NULL; }
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  if (failing) { calls++; errno = ENOMEM; return NULL; }
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  if (failing) { calls++; errno = ENOMEM; return NULL; }
  return __libc_realloc(p, n);
}
void *aligned_alloc(size_t a, size_t n) {
  if (failing) { calls++; errno = ENOMEM; return NULL; }
  return __libc_memalign(a, n);
}
int posix_memalign(void **r, size_t a, size_t n) {
  if (failing) { calls++; return ENOMEM; }
  *r = __libc_memalign(a, n);
  return *r ? 0 : ENOMEM;
}
void free(void *p) { __libc_free(p); }

int main(void) {
  setenv("MEMSPACE_CACHE", "bogus", 1);
  setenv("MEMSPACE_SPILL_THRESHOLD", "64K", 1);
  setenv("MEMSPACE_SPILL_DIR", "tmp ", 1); /* relative, with a trailing space: made "/tmp" from the start directory */
  if (chdir("/") != 0) return 1;
  setenv("MEMSPACE_PURGE_DELAY", "250", 1);
  failing = 1;
  msi_options_init();
  long long cache = ms_option_get(MS_OPTION_CACHE), thr = ms_option_get(MS_OPTION_SPILL_THRESHOLD);
  long long delay = ms_option_get(MS_OPTION_PURGE_DELAY);
  const char *dir = ms_option_get_string(MS_OPTION_SPILL_DIR);
  size_t v;
  int r = ms_parse_size("3GiB", &v);
  char buf[128];
  msi_snprintf(buf, sizeof buf, "%s %zu %lld", "x", (size_t)5, -3LL);
  msi_warning("a warning written while malloc fails: %d", 1);
  int c = calls;
  failing = 0;
  int ok = c == 0 && cache == 1 && thr == 65536 && delay == 250 && dir && strcmp(dir, "/tmp") == 0 && r == 0 &&
           v == 3ull << 30 && strcmp(buf, "x 5 -3") == 0;
  printf("malloc calls while failing: %d; cache=%lld threshold=%lld delay=%lld dir=%s -> %s\n", c, cache, thr,
         delay, dir ? dir : "(null)", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
