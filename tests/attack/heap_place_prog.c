/* heap_place_prog: prints the address of the process's first small block (attack_heap_place runs it many times:
   the addresses must differ as ASLR's do, not take one of a few hundred values). With the argument `limit` it then
   lowers RLIMIT_AS to 256 MiB and allocates 64 MiB of 100-byte blocks, which must all succeed: the address space
   reserved around the random start (the segments skipped) goes back when the limit is lowered
   (attack_heap_place_limit) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int main(int argc, char **argv) {
  void *p = malloc(32);
  printf("%lx\n", (unsigned long)(uintptr_t)p);
  free(p);
  if (!p) return 1;
  if (argc < 2 || strcmp(argv[1], "limit")) return 0;
  free(malloc(3u << 20)); /* the large-block table mapped */
  struct rlimit rl = {256u << 20, 256u << 20};
  if (setrlimit(RLIMIT_AS, &rl) != 0) return perror("setrlimit"), 1;
  for (size_t n = 0; n < (64u << 20) / 100; n++)
    if (!malloc(100)) {
      fprintf(stderr, "malloc(100) number %zu failed under RLIMIT_AS lowered to 256 MiB\n", n);
      return 1;
    }
  return 0;
}
