/* Prints the address of a small block: run under LD_PRELOAD by test_region_place (built without PIE, so the
   program's own address is the same in every run). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  void *p = malloc(100);
  printf("%p\n", p);
  free(p);
  return 0;
}
