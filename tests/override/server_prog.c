/* SPDX-License-Identifier: MIT */
/* server_prog: patterns of long-running servers (nginx, postgres, redis, memcached) that programs run under
   `memspace run` meet, one per argument; run preloaded by test_server_patterns.sh, which reads what it prints.
   title: the process title as setproctitle writes it (nginx's ngx_init_setproctitle, postgres's ps_status.c,
          redis's setproctitle.c): environ moved to copies, then the original argv and environment strings
          cleared and the title written over them; a block past the spill threshold follows, and the descriptors
          of deleted files (spill's) opened since it started are printed as `spill-file PATH`.
   drop:  a daemon that drops its privileges once started (memcached -u, nginx's workers, postgres): run with a
          locked process space (MEMSPACE_SPACE_INITIAL, AT=start) as root, it gives up root (setuid to nobody,
          which takes CAP_IPC_LOCK away) or, run by another user, lowers RLIMIT_MEMLOCK, then allocates past the
          initial size; prints `allocated N of M` and `locked-before KB`. Exit 77 when nothing was locked at
          start (the kernel refused the lock: nothing to drop). */
#include <dirent.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* descriptors open before the pattern ran (inherited ones: a test runner's log) are not printed */
#define MAX_FD 65536
static unsigned char open_before[MAX_FD];

/* record (the descriptors open now) or print the deleted files opened since */
static int deleted_files(int record) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return perror("opendir /proc/self/fd"), 1;
  struct dirent *e;
  char path[300], link[4096];
  while ((e = readdir(d))) {
    int fd = atoi(e->d_name);
    if (fd < 0 || fd >= MAX_FD || open_before[fd]) continue;
    if (record) { open_before[fd] = 1; continue; }
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0) continue;
    link[n] = 0;
    if (strstr(link, " (deleted)")) printf("spill-file %s\n", link);
  }
  closedir(d);
  return 0;
}

static int title(char **argv) {
  if (deleted_files(1)) return 1;
  char *area = argv[0], *end = argv[0];
  for (int i = 0; argv[i]; i++)
    if (argv[i] == end) end = argv[i] + strlen(argv[i]) + 1;
  int n = 0;
  while (environ[n]) n++;
  char **moved = malloc((size_t)(n + 1) * sizeof *moved);
  if (!moved) return perror("malloc"), 1;
  for (int i = 0; i < n; i++) {
    if (environ[i] == end) end = environ[i] + strlen(environ[i]) + 1;
    moved[i] = strdup(environ[i]);
  }
  moved[n] = NULL;
  environ = moved;
  memset(area, 0, (size_t)(end - area));
  snprintf(area, (size_t)(end - area), "server: worker process");
  volatile char *big = malloc(1 << 20);
  if (!big) return perror("malloc"), 1;
  big[0] = 1, big[(1 << 20) - 1] = 2;
  int r = deleted_files(0);
  free((void *)big);
  return r;
}

/* VmLck of /proc/self/status in KiB, -1 when unreadable */
static long locked_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmLck: %ld", &kb) == 1) break;
  fclose(f);
  return kb;
}

static int drop(void) {
  long before = locked_kb();
  printf("locked-before %ld\n", before);
  if (before <= 0) return fflush(stdout), 77;
  if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return perror("setuid"), 1;
  struct rlimit rl = {4096, 4096};
  if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) return perror("setrlimit"), 1;
  enum { N = 32, SIZE = 1 << 20 };
  int got = 0;
  for (int i = 0; i < N; i++) {
    volatile char *p = malloc(SIZE);
    if (!p) break;
    p[0] = 1, p[SIZE - 1] = 1;
    got++;
  }
  printf("allocated %d of %d\n", got, N);
  long after = locked_kb();
  printf("locked-after %ld\n", after);
  if (after < before) printf("lost-lock %ld kB\n", before - after); /* what was locked at start stays locked */
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: server_prog title|drop\n"), 2;
  if (strcmp(argv[1], "title") == 0) return title(argv);
  if (strcmp(argv[1], "drop") == 0) return drop();
  fprintf(stderr, "server_prog: unknown pattern %s\n", argv[1]);
  return 2;
}
