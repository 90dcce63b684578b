/* direct_interior: free or realloc of a pointer inside a large block mapped on its own (issue #25). Under
   RLIMIT_AS the heap maps blocks over 8 MiB on their own (src/heap/direct.c); a pointer 8 KiB into one is no
   part's, and the C library's free takes the 16 bytes before it for a chunk header: planted here (an mmapped
   chunk reaching back to the block's start), glibc's free unmapped the block's first pages without a word and the
   program faulted later. memspace must report it: one message naming the pointer, SIGABRT
   (tests/reliability/expect_outcome.sh checks it).
   Usage: direct_interior free|realloc. It sets RLIMIT_AS to 4 GB and runs itself again (the library reads the
   limit at start-up). Prints "pointer 0x..." on stderr. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv) {
  alarm(60);
  if (argc < 3) {
    struct rlimit rl = {4000000000ul, 4000000000ul};
    if (setrlimit(RLIMIT_AS, &rl) != 0) { perror("setrlimit"); return 1; }
    execl("/proc/self/exe", argv[0], argc > 1 ? argv[1] : "free", "limited", (char *)NULL);
    perror("exec");
    return 1;
  }
  size_t n = (size_t)9 << 20;
  char *p = malloc(n), *p2 = malloc(n);
  if (!p || !p2) { printf("malloc failed\n"); return 1; }
  memset(p, 1, n);
  char *q = p + 8192;
  ((uintptr_t *)q)[-2] = 8192 - 16; /* glibc's prev_size: back to the block's start */
  ((uintptr_t *)q)[-1] = 16 | 2;    /* glibc's size word: 16 bytes, mmapped */
  fprintf(stderr, "pointer %p\n", (void *)q);
  if (!strcmp(argv[1], "realloc")) {
    char *r = realloc(q, 100);
    printf("realloc returned %p\n", (void *)r);
  } else {
    free(q);
  }
  printf("returned; the block's first byte: %d\n", p[0]);
  free(p);
  free(p2);
  return 0;
}
