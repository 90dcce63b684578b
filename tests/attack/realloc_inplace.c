/* realloc_inplace: a small block resized within its usable size (to that size, or shrunk by a quarter) stays where
   it is, whatever mode routes the process's allocations (run by CTest under memspace run, heap and spill modes).
   Exit 1 naming the first size whose block moved. */
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
  puts("ok");
  return 0;
}
