/* realloc_inplace: a small block resized within its usable size (to that size, or shrunk by a quarter) stays where
   it is, and a block grown by small steps moves only now and then, whatever mode routes the process's allocations
   (realloc_modes.sh runs it under memspace run in heap and spill modes). Exit 1 saying which. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  for (size_t s = 1; s <= 4096; s += s < 64 ? 1 : s / 8) {
    char *p = malloc(s);
    if (!p) return 2;
    size_t u = malloc_usable_size(p);
    memset(p, 0x5a, u);
    char *q = realloc(p, u);
    if (q != p) { printf("FAIL: realloc(p, %zu), its usable size (malloc %zu), moved the block\n", u, s); return 1; }
    char *r = realloc(q, u - u / 4);
    if (r != q) { printf("FAIL: realloc(p, %zu) of a block of %zu usable bytes moved it\n", u - u / 4, u); return 1; }
    for (size_t i = 0; i < u - u / 4; i++)
      if (r[i] != 0x5a) { printf("FAIL: byte %zu changed\n", i); return 1; }
    free(r);
  }
  /* a block grown by 16-byte steps to 200000 bytes (a string appended to): moved at class changes only, with
     room to grow (the heap's extra eighth); the count goes on stdout for realloc_modes.sh to compare the modes */
  char *g = malloc(16);
  size_t moves = 0;
  for (size_t s = 32; s <= 200000; s += 16) {
    char *n = realloc(g, s);
    if (!n) return 2;
    moves += n != g;
    g = n;
    g[s - 1] = 1;
  }
  free(g);
  printf("moves %zu\n", moves);
  return 0;
}
