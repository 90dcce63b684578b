/* Standard error is a pipe whose reader has gone (`prog 2>&1 | head -1` once head has exited, a log collector that
   died); the program itself never writes there. A memspace warning during the run or its statistics at exit must
   not kill it with SIGPIPE: prints "alive" after its allocations and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  int p[2];
  if (pipe(p) != 0 || close(p[0]) != 0 || dup2(p[1], 2) != 2) return 2;
  close(p[1]);
  for (int i = 0; i < 4; i++) { /* blocks spill takes (or refuses with a warning) */
    char *b = malloc((size_t)1 << 20);
    if (!b) return 3;
    memset(b, i, (size_t)1 << 20);
    free(b);
  }
  printf("alive\n");
  return 0;
}
