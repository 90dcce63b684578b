/* datalimit_prog: under RLIMIT_DATA (which, like vm.overcommit_memory=2, charges every read-write private mapping,
   resident or not) a program fills the limit with small blocks, frees every one of them, then asks for a block of
   another size: it must get it, as glibc gives it from the freed memory. The heap kept the freed segments mapped
   read-write (cached, then purged with MADV_DONTNEED, still charged), so every later mapping was refused and the
   program, holding nothing, got NULL + ENOMEM for good. Exit 0: served; 1: refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int main(void) {
  struct rlimit rl = {16u << 20, 16u << 20};
  if (setrlimit(RLIMIT_DATA, &rl) != 0) { perror("setrlimit"); return 2; }
  void *prev = NULL;
  size_t n = 0;
  for (void **p; (p = malloc(16)) != NULL; n++) { *p = prev; prev = p; }
  while (prev) { void *next = *(void **)prev; free(prev); prev = next; }
  char *mid = malloc(40000), *big = malloc(4u << 20);
  printf("%zu blocks of 16 B freed; then malloc(40000) %p, malloc(4 MiB) %p\n", n, (void *)mid, (void *)big);
  if (!mid || !big) return 1;
  memset(mid, 1, 40000);
  memset(big, 2, 4u << 20);
  free(mid);
  free(big);
  return 0;
}
