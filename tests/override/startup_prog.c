/* startup_prog none|one|dense|faults|entry: a program that allocates nothing, or makes one malloc and one free
   (test_startup.sh); dense: one malloc and free of 200,000 bytes (a large block of the dense sizes); faults: the
   same malloc and free, printing the minor page faults they took (the heap's
   start-up: its first segment, its own variables); entry: the minor page faults taken before main (the dynamic
   loader and the constructors); forkpages OFFSET SIZE: one malloc and free, then a fork; the child prints how many
   of the pages at [OFFSET, OFFSET + SIZE) of the preloaded libmemspace are in its page table after the fork
   handlers ran (a page the child read or wrote; the parent never touched them); pages OFFSET SIZE [BYTES]: one malloc
   and free (then a block of BYTES written and freed), then how many of those pages are in the process's page table;
   forkfaults N [malloc]: one malloc and free, then N children in turn, each forked and ending at once with _exit
   (malloc: after one malloc and free of its own), and the minor page faults a child took, the mean over the N
   (rounded). The address space is laid out without randomisation (the program runs itself again so, unless
   refused), so that a run's count is the same each time: with randomisation the stack and the libraries' pages
   fall differently in each run, a fault more or less; forkwrites OFFSET SIZE: one malloc and free, then a fork; the
   child prints how many of the pages at [OFFSET, OFFSET + SIZE) of the preloaded libmemspace the child or the parent
   wrote since the fork, once the parent's handlers ran (a page written by either is a copy of its own, mapped once:
   /proc/self/pagemap's "exclusively mapped" bit; -1 when that bit is not shown: a page the child writes itself
   must show it) */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static long minflt(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : -1;
}

/* present pages of [base + off, base + off + size), base the preloaded libmemspace's first mapping; -1 unknown */
static int present_pages(unsigned long off, unsigned long size) {
  FILE *m = fopen("/proc/self/maps", "r");
  char line[512];
  unsigned long base = 0, lo, hi, foff;
  while (m && !base && fgets(line, sizeof line, m))
    if (strstr(line, "libmemspace") && sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &foff) == 3 && foff == 0) base = lo;
  if (m) fclose(m);
  int fd = open("/proc/self/pagemap", O_RDONLY);
  if (!base || fd < 0) return -1;
  long pg = sysconf(_SC_PAGESIZE);
  int n = 0;
  for (unsigned long a = (base + off) / pg; a <= (base + off + size - 1) / pg; a++) {
    uint64_t e;
    if (pread(fd, &e, sizeof e, (off_t)(a * sizeof e)) != sizeof e) n = -1;
    else if (n >= 0 && (e >> 63)) n++;
  }
  close(fd);
  return n;
}

/* written by the forkwrites child: the known page whose copy must show as exclusively mapped */
static volatile char own_page[2 * 4096];

/* pages of [first, first + n pages) mapped once (pagemap bit 56), with no allocation (the child of forkwrites reads
   them after its fork: a malloc would write the heap's pages); -1 unknown */
static int exclusive_pages(int fd, unsigned long first, unsigned long n, long pg) {
  int count = 0;
  for (unsigned long a = first / pg; a < first / pg + n; a++) {
    uint64_t e;
    if (pread(fd, &e, sizeof e, (off_t)(a * sizeof e)) != sizeof e) return -1;
    count += (e >> 63) && (e >> 56 & 1);
  }
  return count;
}

/* the preloaded libmemspace's first mapping's address, read with no allocation; 0 unknown */
static unsigned long lib_base_raw(void) {
  static char buf[1 << 16];
  int fd = open("/proc/self/maps", O_RDONLY);
  ssize_t n = 0, r;
  while (fd >= 0 && n < (ssize_t)sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - (size_t)n)) > 0) n += r;
  if (fd >= 0) close(fd);
  buf[n > 0 ? n : 0] = 0;
  for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    char *end = strchr(line, '\n');
    if (end) *end = 0;
    unsigned long lo, foff;
    if (strstr(line, "libmemspace") && sscanf(line, "%lx-%*x %*s %lx", &lo, &foff) == 2 && foff == 0) return lo;
    if (end) *end = '\n';
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  if (strcmp(mode, "optimised") == 0) { /* 1 when compiled with optimisation, as the library is (the same flags) */
#ifdef __OPTIMIZE__
    puts("1");
#else
    puts("0");
#endif
    return 0;
  }
  if (strcmp(mode, "entry") == 0) { /* the minor faults of the start-up, to main's first line */
    printf("%ld\n", minflt());
    return 0;
  }
  if (strcmp(mode, "forkpages") == 0 && argc > 3) {
    char *volatile p = malloc(100);
    free(p);
    pid_t pid = fork();
    if (pid == 0) {
      printf("%d\n", present_pages(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0)));
      fflush(stdout);
      _exit(0);
    }
    int st;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  if (strcmp(mode, "forkfaults") == 0 && argc > 2) {
    int pers = personality(0xffffffff);
    if (pers != -1 && !(pers & ADDR_NO_RANDOMIZE) && personality((unsigned long)pers | ADDR_NO_RANDOMIZE) != -1)
      execv("/proc/self/exe", argv);
    if (pers == -1 || !(personality(0xffffffff) & ADDR_NO_RANDOMIZE)) { /* refused: a count with randomisation moves by 1 */
      printf("refused\n");
      return 0;
    }
    long n = strtol(argv[2], NULL, 0);
    bool child_malloc = argc > 3 && strcmp(argv[3], "malloc") == 0;
    char *volatile p = malloc(100);
    free(p);
    for (long i = 0; i < n; i++) {
      pid_t pid = fork();
      if (pid == 0) {
        if (child_malloc) {
          char *volatile q = malloc(100);
          free(q);
        }
        _exit(0);
      }
      int st;
      if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) return 1;
    }
    struct rusage ru;
    if (n <= 0 || getrusage(RUSAGE_CHILDREN, &ru) != 0) return 1;
    printf("%ld\n", (ru.ru_minflt + n / 2) / n);
    return 0;
  }
  if (strcmp(mode, "forkwrites") == 0 && argc > 3) {
    char *volatile p = malloc(100);
    free(p);
    int go[2];
    if (pipe(go) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      char c;
      if (read(go[0], &c, 1) != 1) _exit(1); /* the parent's handlers ran */
      long pg = sysconf(_SC_PAGESIZE);
      unsigned long base = lib_base_raw();
      int fd = open("/proc/self/pagemap", O_RDONLY);
      own_page[pg] = 1; /* a page of its own: shown exclusively mapped, or the bit is not shown */
      unsigned long own = ((unsigned long)own_page + (unsigned long)pg) / (unsigned long)pg * (unsigned long)pg;
      int n = base && fd >= 0 && exclusive_pages(fd, own, 1, pg) == 1
                  ? exclusive_pages(fd, base + strtoul(argv[2], NULL, 0), (strtoul(argv[3], NULL, 0) + (unsigned long)pg - 1) / (unsigned long)pg + 1, pg)
                  : -1;
      char out[32];
      int len = snprintf(out, sizeof out, "%d\n", n);
      _exit(write(1, out, (size_t)len) == len ? 0 : 1);
    }
    if (pid > 0 && write(go[1], "g", 1) != 1) return 1;
    int st;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  if (strcmp(mode, "pages") == 0 && argc > 3) { /* one malloc and free: the pages of the range present after them */
    char *volatile p = malloc(100);
    free(p);
    if (argc > 4) { /* then a block of that size, written and freed */
      if (!(p = malloc(strtoul(argv[4], NULL, 0)))) return 1;
      p[0] = 1;
      free(p);
    }
    printf("%d\n", present_pages(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0)));
    return 0;
  }
  if (strcmp(mode, "dense") == 0) {
    char *volatile p = malloc(200000);
    if (!p) return 1;
    p[0] = 1;
    free(p);
  }
  if (strcmp(mode, "one") == 0 || strcmp(mode, "faults") == 0) {
    long before = minflt();
    char *volatile p = malloc(100);
    if (!p) return 1;
    free(p);
    long after = minflt();
    if (strcmp(mode, "faults") == 0) printf("%ld\n", after - before);
  }
  return 0;
}
