/* startup_prog none|one|dense|faults|entry: a program that allocates nothing, or makes one malloc and one free
   (test_startup.sh); dense: one malloc and free of 200,000 bytes (a large block of the dense sizes); faults: the
   same malloc and free, printing the minor page faults they took (the heap's
   start-up: its first segment, its own variables); entry: the minor page faults taken before main (the dynamic
   loader and the constructors); forkpages OFFSET SIZE: one malloc and free, then a fork; the child prints how many
   of the pages at [OFFSET, OFFSET + SIZE) of the preloaded libmemspace are in its page table after the fork
   handlers ran (a page the child read or wrote; the parent never touched them); pages OFFSET SIZE [BYTES]: one malloc
   and free (then a block of BYTES written and freed), then how many of those pages are in the process's page table */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
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
