/* aslimit_prog: lowers RLIMIT_AS below the process's address space after a first large block (under a spill
   threshold of 64 KiB spill has reserved terabytes of address space by then, so every new mapping is refused with
   ENOMEM), then asks for blocks of new sizes. Each answer is a block or NULL with ENOMEM, never a crash; the first
   block stays readable and freeable. With the argument `fill` (run under `ulimit -v`) it allocates blocks of 1 MiB
   until one is refused (NULL with ENOMEM) instead. The script around it checks what stderr says about the
   refusals. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int fill(void) {
  static void *keep[8192];
  int n = 0;
  for (; n < 8192; n++) {
    errno = 0;
    if (!(keep[n] = malloc(1 << 20))) break;
    memset(keep[n], 1, 4096);
  }
  int e = errno;
  printf("%d blocks of 1 MiB, then errno %d\n", n, e);
  for (int i = 0; i < n; i++) free(keep[i]);
  return n < 8192 && e != ENOMEM;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "fill") == 0) return fill();
  unsigned char *first = malloc(1 << 20);
  if (!first) { printf("FAIL: the first block: errno %d\n", errno); return 1; }
  memset(first, 0x5a, 1 << 20);
  struct rlimit rl = {64u << 20, RLIM_INFINITY};
  if (getrlimit(RLIMIT_AS, &rl) != 0) { perror("getrlimit"); return 1; }
  rl.rlim_cur = 64u << 20;
  if (setrlimit(RLIMIT_AS, &rl) != 0) { perror("setrlimit"); return 1; }
  int failed = 0, nulls = 0;
  size_t sizes[] = {4u << 20, 16u << 20, 3u << 20, 1u << 20, 256u << 10};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    errno = 0;
    void *p = malloc(sizes[i]);
    if (p) {
      memset(p, 1, sizes[i]);
      free(p);
    } else if (errno != ENOMEM) {
      printf("FAIL: malloc(%zu): NULL with errno %d, not ENOMEM\n", sizes[i], errno);
      failed = 1;
    } else {
      nulls++;
    }
  }
  for (size_t i = 0; i < (1u << 20); i++)
    if (first[i] != 0x5a) { printf("FAIL: the first block changed at %zu\n", i); failed = 1; break; }
  free(first);
  printf("%d of 5 blocks refused\n", nulls);
  return failed;
}
