/* signal_space_stats: mallinfo2 in a signal handler that interrupts the creation or destruction of a space: a timer
   signal every 20 us while the main thread creates spaces in its own buffer and destroys them, each handler calling
   mallinfo2 (as a program's watchdog or profiler does). The handler that lands while the thread holds the spaces'
   registry lock must count no space instead of waiting for itself: the library's re-entry check would abort, and in
   the instructions between the lock's taking and its holder's record the wait would never end (the alarm ends it
   then). foreign: each handler first frees a block of the C library's malloc (taken before the timer starts, as a
   plugin's block reaches the program's free), whose check looks for a space owning it under the same registry
   lock (tried only): that look-up, nested in the interrupted hold, must leave the hold's mark set for the mallinfo2
   after it. Exit 0: every handler returned; a signal: the abort (SIGABRT) or the hang (SIGALRM). */
#include <dlfcn.h>
#include <malloc.h>
#include <memspace.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t hits;
#define FOREIGN 60000
static void *foreign[FOREIGN]; /* blocks of the C library's malloc, freed one by each handler (foreign mode) */
static volatile sig_atomic_t foreign_n;
static void handler(int sig) {
  (void)sig;
  if (foreign_n > 0) free(foreign[--foreign_n]);
  struct mallinfo2 m = mallinfo2();
  (void)m;
  hits++;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "foreign") == 0) {
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *(*libc_malloc)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "malloc") : NULL;
    if (!libc_malloc || libc_malloc == malloc) { fprintf(stderr, "no C library malloc\n"); return 2; }
    for (int i = 0; i < FOREIGN; i++)
      if (!(foreign[i] = libc_malloc(16))) return 2;
    foreign_n = FOREIGN;
  }
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
  struct itimerspec every = {{0, 20000}, {0, 20000}};
  alarm(50);
  if (timer_settime(t, 0, &every, NULL) != 0) return 2;
  static char buf[256 << 10] __attribute__((aligned(4096)));
  long n = 0;
  for (; n < 1000000 && hits < 50000; n++) {
    ms_space_t *s = ms_space_create_in(buf, sizeof buf, 0);
    if (!s) { perror("ms_space_create_in"); return 2; }
    ms_space_destroy(s);
  }
  struct itimerspec off = {{0, 0}, {0, 0}};
  timer_settime(t, 0, &off, NULL);
  printf("%ld spaces created and destroyed, mallinfo2 in %d handlers\n", n, (int)hits);
  return 0;
}
